/* The Streamable HTTP transport of the MCP client: every message is POSTed to
 * the server's endpoint through libcurl on the loop (io/http.h); the answer is
 * 202 (a notification or response was accepted), one JSON message, or an SSE
 * stream of messages (src/llm/sse.rl scans it) that ends with the answer.
 * The Mcp-Session-Id the server gives at the handshake is sent back with every
 * request, and MCP-Protocol-Version once negotiated. A 404 for a request that
 * carried a session id means the session expired: the transport reports itself
 * closed, and the client starts a new session (a new handshake) on the next
 * call - that is the reconnection. Other HTTP errors answer the request they
 * belong to with a JSON-RPC error. Once a session is set up, a GET opens the stream on which
 * the server sends requests and notifications of its own (opened again when it ends, unless the
 * server refuses it); a POST whose SSE stream ends before its answer is resumed by a GET with
 * Last-Event-ID after the server's retry time. Header values are never put in messages. */
#define _GNU_SOURCE /* strcasestr */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/http.h"
#include "llm/sse.h"
#include "mcp/mcp_transport.h"
#include "util/buf.h"

typedef struct http_tr http_tr;

typedef struct hreq {
    struct hreq *next;
    http_tr *t;
    CURL *easy;
    struct curl_slist *hdrs;
    char *body;
    json_t *id; /* the request's id (NULL: a notification or response) */
    uint64_t xfer;
    ac_buf resp; /* a plain JSON answer, capped at AC_MCP_MAX_MESSAGE */
    ac_sse *sse;
    int sse_mode, decided;
    int had_session;
    int answered;         /* a message with our id came back */
    int is_get;           /* a GET of the event stream (standalone, or resuming a POST's) */
    int resumes;          /* resumptions so far of the stream of this request */
    char last_id[128];    /* the last SSE event id seen (for Last-Event-ID) */
    uint64_t timer;       /* a resumption waiting for its retry time */
    char traceparent[64]; /* sent as a header, "" none */
} hreq;

typedef struct qmsg {
    struct qmsg *next;
    char *data;
    char traceparent[64];
} qmsg;

struct http_tr {
    mcp_transport base;
    ac_loop *loop;
    mcp_inbox in;
    char *url;
    char **headers;
    int64_t timeout_ms;
    char session[256];
    char version[16];
    qmsg *q, *qtail;
    uint64_t flush_timer;
    hreq *reqs;
};

/* The transport has ended (its last report is queued): nothing more is read or reported. */
static int ended(const http_tr *t)
{
    return mcp_inbox_ended(&t->in);
}

static void deliver_text(hreq *r, const char *data, size_t len)
{
    http_tr *t = r->t;
    if (ended(t))
        return;
    json_error_t je; /* a NUL in a string is taken: a tool name with one is left out */
    json_t *m = json_loadb(data, len, JSON_ALLOW_NUL, &je);
    if (!m) {
        char shown[90], why[160];
        ac_mcp_printable(data, len < 80 ? len : 80, shown, sizeof shown);
        snprintf(why, sizeof why, "answered with %s (\"%s\")",
                 json_error_code(&je) == json_error_stack_overflow
                     ? "a message nested too deeply"
                     : "something that is not JSON-RPC",
                 shown);
        mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
        return;
    }
    size_t n = json_is_array(m) ? json_array_size(m) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *one = json_is_array(m) ? json_array_get(m, i) : m;
        if (r->id && json_equal(json_object_get(one, "id"), r->id) &&
            !json_object_get(one, "method"))
            r->answered = 1;
    }
    mcp_inbox_push(&t->in, m);
    json_decref(m);
}

static int on_sse(void *ud, const ac_sse_event *ev)
{
    hreq *r = ud;
    if (ev->id_len && ev->id_len < sizeof r->last_id)
        memcpy(r->last_id, ev->id, ev->id_len + 1);
    if (ev->data_len && (!strcmp(ev->event, "message") || !ev->event_len))
        deliver_text(r, ev->data, ev->data_len);
    return ended(r->t);
}

static size_t on_header(char *b, size_t size, size_t n, void *ud)
{
    hreq *r = ud;
    size_t len = size * n;
    if (len > 15 && !strncasecmp(b, "Mcp-Session-Id:", 15)) {
        size_t i = 15, e = len;
        while (i < e && (b[i] == ' ' || b[i] == '\t'))
            i++;
        while (e > i && (b[e - 1] == '\r' || b[e - 1] == '\n' || b[e - 1] == ' '))
            e--;
        if (e - i < sizeof r->t->session) {
            memcpy(r->t->session, b + i, e - i);
            r->t->session[e - i] = 0;
        }
    }
    if (len > 13 && !strncasecmp(b, "Content-Type:", 13)) {
        r->sse_mode = strstr(b, "text/event-stream") != NULL;
        r->decided = 1;
    }
    return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *ud)
{
    hreq *r = ud;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    if (r->sse_mode && status / 100 == 2) {
        if (!r->sse && !(r->sse = ac_sse_new(0, AC_MCP_MAX_MESSAGE, on_sse, NULL, r)))
            return 0;
        int rc = ac_sse_feed(r->sse, b, len);
        return rc == AC_SSE_OK ? len : 0;
    }
    return ac_buf_add(&r->resp, b, len) == 0 ? len : 0;
}

static void req_free(hreq *r)
{
    if (r->timer)
        ac_loop_cancel_timer(r->t->loop, r->timer);
    if (r->easy)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->hdrs);
    ac_sse_free(r->sse);
    json_decref(r->id);
    free(r->body);
    ac_buf_free(&r->resp);
    free(r);
}

static void req_unlink(hreq *r)
{
    for (hreq **p = &r->t->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

/* Answers the request r carried with a JSON-RPC error (the client fails that call). */
static void answer_error(hreq *r, const char *text)
{
    if (!r->id || r->answered || ended(r->t))
        return;
    json_t *m = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", r->id, "error",
                          "code", -32000, "message", text);
    mcp_inbox_push(&r->t->in, m);
    json_decref(m);
}

static int launch(http_tr *t, hreq *r);

/* After retry ms, a GET carries on where stream r stopped (Last-Event-ID), for the answer to
 * r's request, or (standalone, no id) for what the server sends on its own. */
static void resume_fire(void *ud)
{
    hreq *r = ud;
    http_tr *t = r->t;
    r->timer = 0;
    req_unlink(r);
    if (ended(t) || launch(t, r) < 0) {
        if (!ended(t))
            answer_error(r, "could not resume the HTTP stream");
        req_free(r);
    }
}

/* A request of t with nothing sent yet; NULL when out of memory. */
static hreq *req_new(http_tr *t)
{
    hreq *r = calloc(1, sizeof *r);
    if (r) {
        r->t = t;
        ac_buf_init(&r->resp, AC_MCP_MAX_MESSAGE);
    }
    return r;
}

static void resume_later(http_tr *t, const hreq *from, long long retry_ms)
{
    hreq *g = req_new(t);
    if (!g)
        return;
    g->is_get = 1;
    g->id = from && from->id ? json_incref(from->id) : NULL;
    g->resumes = from ? from->resumes + 1 : 0;
    if (from)
        memcpy(g->last_id, from->last_id, sizeof g->last_id);
    g->timer = ac_loop_timer(t->loop, retry_ms, resume_fire, g);
    g->next = t->reqs; /* listed, so ht_free finds it */
    t->reqs = g;
}

static void on_done(void *ud, CURL *easy, CURLcode rc)
{
    hreq *r = ud;
    http_tr *t = r->t;
    (void)easy;
    r->xfer = 0;
    req_unlink(r);
    long status = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    long long retry = r->sse ? ac_sse_retry_ms(r->sse) : -1;
    char why[300];
    if (ended(t)) {
        /* nothing more is reported */
    } else if (r->is_get && !r->id) {
        /* the standalone stream: open again while the server keeps it (not on 405 & co) */
        if (status / 100 == 2 && r->sse_mode)
            resume_later(t, r, retry >= 0 ? retry : 1000);
    } else if (rc != CURLE_OK && !(r->answered && rc == CURLE_WRITE_ERROR)) {
        snprintf(why, sizeof why, "cannot be reached over HTTP: %s", curl_easy_strerror(rc));
        if (status == 0)
            mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
        else {
            answer_error(r, why);
        }
    } else if (r->had_session && (status == 404 || (status == 400 && r->resp.p &&
                                                    strcasestr(r->resp.p, "session")))) {
        /* 404 is what the spec says; the reference servers answer 400 "No valid session ID" */
        t->session[0] = 0;
        mcp_inbox_end(&t->in, MCP_INBOX_EXPIRED, NULL);
    } else if (status / 100 != 2) {
        char shown[120];
        ac_mcp_printable(r->resp.p ? r->resp.p : "", r->resp.n < 100 ? r->resp.n : 100, shown,
                         sizeof shown);
        snprintf(why, sizeof why, "answered HTTP %ld%s%s", status, shown[0] ? ": " : "", shown);
        answer_error(r, why);
    } else if (!r->sse_mode && r->resp.n) {
        deliver_text(r, r->resp.p, r->resp.n);
    } else if (r->sse_mode && r->id && !r->answered && r->last_id[0] && r->resumes < 3) {
        /* the stream closed before the answer: resume it after the server's retry time */
        resume_later(t, r, retry >= 0 ? retry : 1000);
        r->answered = 1; /* the resumed stream answers */
    }
    if (!ended(t) && r->id && !r->answered && status / 100 == 2 && rc == CURLE_OK)
        answer_error(r, "the HTTP answer ended without a JSON-RPC response");
    req_free(r);
}

/* Sets r up (POST of r->body, or GET of the event stream) and starts it. */
static int launch(http_tr *t, hreq *r)
{
    char h[400];
    r->hdrs = curl_slist_append(NULL, r->is_get ? "Accept: text/event-stream"
                                                : "Accept: application/json, text/event-stream");
    if (!r->is_get)
        r->hdrs = curl_slist_append(r->hdrs, "Content-Type: application/json");
    if (t->session[0]) {
        snprintf(h, sizeof h, "Mcp-Session-Id: %s", t->session);
        r->hdrs = curl_slist_append(r->hdrs, h);
        r->had_session = 1;
    }
    if (t->version[0]) {
        snprintf(h, sizeof h, "MCP-Protocol-Version: %s", t->version);
        r->hdrs = curl_slist_append(r->hdrs, h);
    }
    if (r->last_id[0]) {
        snprintf(h, sizeof h, "Last-Event-ID: %s", r->last_id);
        r->hdrs = curl_slist_append(r->hdrs, h);
    }
    if (r->traceparent[0]) { /* a traced session's call */
        snprintf(h, sizeof h, "traceparent: %s", r->traceparent);
        r->hdrs = curl_slist_append(r->hdrs, h);
    }
    for (char **p = t->headers; p && *p; p++)
        r->hdrs = curl_slist_append(r->hdrs, *p);
    r->easy = curl_easy_init();
    if (!r->easy || !r->hdrs)
        return -1;
    curl_easy_setopt(r->easy, CURLOPT_URL, t->url);
    if (r->is_get) {
        curl_easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(r->easy, CURLOPT_POST, 1L);
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
        /* a backstop: the client times calls out itself, this only ends a stream left open */
        curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)(t->timeout_ms + 5000));
    }
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(t->timeout_ms < 10000 ? t->timeout_ms : 10000));
    r->xfer = ac_http_start(t->loop, r->easy, on_done, r);
    if (!r->xfer)
        return -1;
    r->next = t->reqs;
    t->reqs = r;
    return 0;
}

static int start_req(http_tr *t, char *data, const char *traceparent)
{
    hreq *r = req_new(t);
    if (!r) {
        free(data);
        return -1;
    }
    r->body = data;
    memcpy(r->traceparent, traceparent, sizeof r->traceparent);
    json_t *m = json_loads(data, 0, NULL);
    json_t *id = json_object_get(m, "id");
    if (id && json_object_get(m, "method"))
        r->id = json_incref(id);
    json_decref(m);
    if (launch(t, r) < 0) {
        req_free(r);
        return -1;
    }
    return 0;
}

static void flush(void *ud)
{
    http_tr *t = ud;
    t->flush_timer = 0;
    while (t->q && !ended(t)) {
        qmsg *m = t->q;
        t->q = m->next;
        if (!t->q)
            t->qtail = NULL;
        char *data = m->data, tp[sizeof m->traceparent];
        memcpy(tp, m->traceparent, sizeof tp);
        free(m);
        if (start_req(t, data, tp) < 0)
            mcp_inbox_end(&t->in, MCP_INBOX_CLOSED,
                          "could not start an HTTP request (out of memory)");
    }
}

static int ht_send(mcp_transport *base, const char *data, size_t len, char *err, size_t errcap)
{
    http_tr *t = (http_tr *)base;
    if (ended(t)) {
        snprintf(err, errcap, "the HTTP session is closed");
        return -1;
    }
    qmsg *m = calloc(1, sizeof *m);
    char *d = malloc(len + 1);
    if (!m || !d) {
        free(m);
        free(d);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    memcpy(d, data, len);
    d[len] = 0;
    m->data = d;
    memcpy(m->traceparent, base->traceparent, sizeof m->traceparent);
    if (t->qtail)
        t->qtail->next = m;
    else
        t->q = m;
    t->qtail = m;
    /* never inside curl: requests start from a timer */
    if (!t->flush_timer)
        t->flush_timer = ac_loop_timer(t->loop, 0, flush, t);
    return 0;
}

static void ht_set_version(mcp_transport *base, const char *v)
{
    http_tr *t = (http_tr *)base;
    snprintf(t->version, sizeof t->version, "%s", v);
    if (t->session[0]) /* the handshake is done: listen to what the server sends on its own */
        resume_later(t, NULL, 0);
}

/* Ends the server's session (DELETE with its id, at most 500 ms), never waiting for it. */
static void delete_session(http_tr *t)
{
    CURL *e = curl_easy_init();
    if (!e)
        return;
    char h[300];
    snprintf(h, sizeof h, "Mcp-Session-Id: %s", t->session);
    struct curl_slist *hd = curl_slist_append(NULL, h);
    for (char **p = t->headers; p && *p; p++)
        hd = curl_slist_append(hd, *p);
    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 500L);
    ac_http_send_and_forget(t->loop, e, hd);
}

static void ht_free(mcp_transport *base)
{
    http_tr *t = (http_tr *)base;
    if (!t)
        return;
    if (t->flush_timer)
        ac_loop_cancel_timer(t->loop, t->flush_timer);
    while (t->reqs) {
        hreq *r = t->reqs;
        t->reqs = r->next;
        if (r->xfer)
            ac_http_cancel(t->loop, r->xfer);
        req_free(r);
    }
    while (t->q) {
        qmsg *m = t->q;
        t->q = m->next;
        free(m->data);
        free(m);
    }
    if (t->session[0])
        delete_session(t);
    mcp_inbox_clear(&t->in);
    for (char **p = t->headers; p && *p; p++)
        free(*p);
    free(t->headers);
    free(t->url);
    free(t);
}

mcp_transport *ac_mcp_http_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                               char *err, size_t errcap)
{
    http_tr *t = calloc(1, sizeof *t);
    if (!t || ac_http_global_init() != 0) {
        free(t);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    t->base.send = ht_send;
    t->base.set_version = ht_set_version;
    t->base.free = ht_free;
    t->loop = loop;
    if (mcp_inbox_init(&t->in, loop, cb) < 0) {
        free(t);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    t->timeout_ms = cfg->timeout_ms;
    t->url = strdup(cfg->url);
    size_t n = 0;
    while (cfg->headers && cfg->headers[n])
        n++;
    t->headers = calloc(n + 1, sizeof *t->headers);
    int oom = !t->url || !t->headers;
    for (size_t i = 0; !oom && i < n; i++)
        oom = !(t->headers[i] = strdup(cfg->headers[i]));
    if (oom) {
        ht_free(&t->base);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    return &t->base;
}
