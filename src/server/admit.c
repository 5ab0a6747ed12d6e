/*
 * admit.c - which requests `agentc serve` hears at all, before any token: the Host a
 * request names (DNS rebinding), the Origin a browser sends and the type of a POST's body
 * (a page on another origin driving the server with simple requests).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "server_int.h"

/* Splits "NAME[:PORT]" or "[V6][:PORT]" (len bytes): the name's length, and the port (-1
 * when none is given, -2 when it is not a port). */
static size_t split_host(const char *h, size_t len, long *port)
{
    size_t nl = len;
    if (h[0] == '[') {
        const char *e = memchr(h, ']', len);
        nl = e ? (size_t)(e - h) + 1 : len;
    } else {
        const char *c = memchr(h, ':', len);
        nl = c ? (size_t)(c - h) : len;
    }
    *port = -1;
    if (nl < len) {
        if (h[nl] != ':' || nl + 1 == len || len - nl > 6)
            *port = -2;
        else {
            char buf[8];
            memcpy(buf, h + nl + 1, len - nl - 1);
            buf[len - nl - 1] = 0;
            char *end;
            *port = strtol(buf, &end, 10);
            if (*end || *port < 0 || *port > 65535)
                *port = -2;
        }
    }
    return nl;
}

static int name_is(const char *name, size_t nl, const char *want)
{
    return strlen(want) == nl && !strncasecmp(name, want, nl);
}

/* An IP address written out: no DNS name can rebind it. */
static int ip_literal(const char *name, size_t nl)
{
    char buf[64];
    if (nl < 2 || nl >= sizeof buf)
        return 0;
    unsigned char a[16];
    if (name[0] == '[' && name[nl - 1] == ']') {
        memcpy(buf, name + 1, nl - 2);
        buf[nl - 2] = 0;
        return inet_pton(AF_INET6, buf, a) == 1;
    }
    memcpy(buf, name, nl);
    buf[nl] = 0;
    return inet_pton(AF_INET, buf, a) == 1;
}

/* Whether "NAME[:PORT]" (len bytes) is one of the server's names: an IP address, localhost
 * or the --listen host on the bound port (no port: 80), or an --allowed-hosts entry (a
 * NAME on any port, a NAME:PORT on that one). */
static int host_allowed(const srv *sv, const char *h, size_t len)
{
    long port;
    size_t nl = split_host(h, len, &port);
    if (!nl || port == -2)
        return 0;
    long want = sv->port;
    if ((port == -1 ? 80 : port) == want &&
        (ip_literal(h, nl) || name_is(h, nl, "localhost") || name_is(h, nl, sv->listen_host)))
        return 1;
    for (const char *a = sv->cfg->allowed_hosts; a && *a;) {
        size_t al = strcspn(a, ",");
        long aport;
        size_t anl = split_host(a, al, &aport);
        if (anl == nl && !strncasecmp(a, h, nl) && (aport == -1 || aport == port))
            return 1;
        a += al + (a[al] == ',');
    }
    return 0;
}

/* Whether an Origin header names the server: http(s)://HOST with HOST one of its names. */
static int origin_allowed(const srv *sv, const char *o)
{
    const char *h = !strncasecmp(o, "http://", 7)    ? o + 7
                    : !strncasecmp(o, "https://", 8) ? o + 8
                                                     : NULL;
    return h && *h && !strchr(h, '/') && host_allowed(sv, h, strlen(h));
}

/* Whether a POST's body is declared JSON: application/json, parameters aside. No type is
 * accepted only without a body (curl -X POST). */
static int json_body(struct MHD_Connection *c)
{
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (!t) {
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
        return !te && (!cl || !strcmp(cl, "0"));
    }
    while (*t == ' ')
        t++;
    size_t n = strcspn(t, "; \t");
    return n == 16 && !strncasecmp(t, "application/json", 16);
}

/* Counts the Content-Length headers and whether they differ. */
struct lengths {
    unsigned n;
    int differ;
    const char *first;
};
static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    struct lengths *l = cls;
    (void)kind;
    if (strcasecmp(key, "Content-Length"))
        return MHD_YES;
    if (l->n++ == 0)
        l->first = value;
    else if (strcmp(l->first, value ? value : ""))
        l->differ = 1;
    return MHD_YES;
}

/* A body framed two ways (two Content-Lengths that differ, or a Content-Length with a
 * Transfer-Encoding) is read one way here and maybe the other by a proxy in front: refused. */
static int framing_ambiguous(struct MHD_Connection *c)
{
    struct lengths l = {0, 0, ""};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, &l);
    return l.differ ||
           (l.n && MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding"));
}

int srv_admit(srv *sv, struct MHD_Connection *c, const char *method, enum MHD_Result *ret)
{
    if (framing_ambiguous(c)) {
        *ret = srv_reply_error(c, 400, "ambiguous_framing",
                               "a request has one Content-Length, or a Transfer-Encoding, "
                               "not both nor two that differ");
        return -1;
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (host && !host_allowed(sv, host, strlen(host))) {
        char shown[80];
        snprintf(shown, sizeof shown, "%s", host);
        for (char *q = shown; *q; q++)
            if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
                *q = '?';
        *ret = srv_reply_error(c, 421, "unknown_host",
                               "this server does not answer to the host '%s'; "
                               "start it with --allowed-hosts %s to allow it",
                               shown, shown);
        return -1;
    }
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin && !origin_allowed(sv, origin)) {
        *ret = srv_reply_error(c, 403, "cross_origin",
                               "requests from pages of another origin are refused");
        return -1;
    }
    if (!strcmp(method, "POST") && !json_body(c)) {
        *ret = srv_reply_error(c, 415, "unsupported_media_type",
                               "a POST's body must be sent as Content-Type: application/json");
        return -1;
    }
    return 0;
}

/* ---- the request deadline: headers and body within --client-timeout ---- */

/* At the connection limit a request has this long (ms), not --client-timeout: clients that
 * trickle their requests would otherwise keep every other client out for the whole
 * --client-timeout, and again as soon as they reconnect. */
#define SRV_SHED_MS 1000

struct srv_conn {
    struct srv_conn *prev, *next;
    struct MHD_Connection *c;
    int64_t since_ms; /* accepted, or its previous request answered (keep-alive) */
    int answered;     /* its request is read (it may stream for long): no deadline */
};

void srv_admit_notify(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_ConnectionNotificationCode code)
{
    srv *sv = cls;
    srv_conn *k = *ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        k = calloc(1, sizeof *k);
        if (!k)
            return; /* unwatched: MHD's idle timeout still holds */
        k->c = c;
        k->since_ms = ac_loop_now_ms(sv->loop);
        k->next = sv->conns;
        if (k->next)
            k->next->prev = k;
        sv->conns = k;
        sv->n_conns++;
        *ctx = k;
    } else if (k) {
        if (k->prev)
            k->prev->next = k->next;
        else
            sv->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        sv->n_conns--;
        free(k);
        *ctx = NULL;
    }
}

static srv_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

void srv_admit_answered(srv *sv, struct MHD_Connection *c, int answered)
{
    srv_conn *k = conn_of(c);
    if (!k)
        return;
    k->answered = answered;
    if (!answered)
        k->since_ms = ac_loop_now_ms(sv->loop);
}

void srv_admit_sweep(srv *sv)
{
    int64_t now = ac_loop_now_ms(sv->loop);
    int64_t limit = (int64_t)sv->cfg->header_timeout_s * 1000;
    if (now - sv->swept_ms < SRV_SWEEP_MS && now >= sv->swept_ms)
        return;
    sv->swept_ms = now;
    if (sv->n_conns >= sv->cfg->max_connections && limit > SRV_SHED_MS)
        limit = SRV_SHED_MS;
    for (srv_conn *k = sv->conns; k; k = k->next) {
        if (k->answered || now - k->since_ms < limit)
            continue;
        const union MHD_ConnectionInfo *i =
            MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (i)
            shutdown(i->connect_fd, SHUT_RDWR); /* MHD reads its end and closes it */
        k->answered = 1;
    }
}
