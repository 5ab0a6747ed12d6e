/* The scripted loopback HTTP server for tests: an accept thread and one blocking thread per
 * connection. Waits (delays, stalls, reads) poll a stop pipe too, so ac_httpd_stop() is
 * prompt. */
#define _GNU_SOURCE /* accept4, pipe2 */
#include "test_httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HTTPD_MAX_HEADER (64 * 1024)
#define HTTPD_MAX_BODY (64 * 1024 * 1024)

typedef struct httpd_req {
    char *method, *path, *headers, *body;
    size_t body_len;
} httpd_req;

typedef struct httpd_conn {
    ac_httpd *h;
    pthread_t thr;
    int fd; /* -1 once the thread closed it; guarded by h->mu */
} httpd_conn;

struct ac_httpd {
    int lfd;
    int port;
    int stop_pipe[2];
    pthread_t accept_thr;
    pthread_mutex_t mu;
    ac_httpd_resp *resps; /* queued copies; body and headers owned */
    size_t resp_head, resp_len, resp_cap;
    httpd_req *reqs;
    size_t req_len, req_cap;
    httpd_conn **conns;
    size_t conn_len, conn_cap;
};

/* ---- small helpers --------------------------------------------------------------------- */

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int grow(void **arr, size_t *cap, size_t len, size_t elem)
{
    if (len < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *na = realloc(*arr, ncap * elem);
    if (!na)
        return -1;
    *arr = na;
    *cap = ncap;
    return 0;
}

/* Waits up to ms for fd to be readable (fd < 0: just wait). Returns 1 readable, 0 timeout,
 * -1 server stopping. */
static int wait_fd(ac_httpd *h, int fd, int ms)
{
    struct pollfd p[2] = {{.fd = h->stop_pipe[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    for (;;) {
        int rc = poll(p, fd >= 0 ? 2 : 1, ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || (p[0].revents & POLLIN))
            return -1;
        if (rc == 0)
            return 0;
        return 1;
    }
}

static int send_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

const char *ac_httpd_header_value(const char *headers, const char *name, char *buf, size_t cap)
{
    size_t nlen = strlen(name);
    const char *line = headers;
    while (line && *line) {
        const char *eol = strstr(line, "\r\n");
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        if (llen > nlen && line[nlen] == ':' && strncasecmp(line, name, nlen) == 0) {
            const char *v = line + nlen + 1, *end = line + llen;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
            size_t vlen = (size_t)(end - v);
            if (cap == 0)
                return buf;
            if (vlen > cap - 1)
                vlen = cap - 1;
            memcpy(buf, v, vlen);
            buf[vlen] = '\0';
            return buf;
        }
        line = eol ? eol + 2 : NULL;
    }
    return NULL;
}

static const char *reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 413:
        return "Payload Too Large";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Status";
    }
}

/* ---- request reading ------------------------------------------------------------------- */

/* A connection's input buffer: bytes past the current request stay for the next one. */
typedef struct inbuf {
    char *data;
    size_t len, cap;
} inbuf;

/* Reads more bytes; 1 got some, 0 EOF/error/stop. */
static int fill(ac_httpd *h, int fd, inbuf *in, size_t limit)
{
    if (in->len >= limit)
        return 0;
    if (in->cap - in->len < 4096) {
        size_t ncap = in->cap ? in->cap * 2 : 8192;
        char *nd = realloc(in->data, ncap);
        if (!nd)
            return 0;
        in->data = nd;
        in->cap = ncap;
    }
    for (;;) {
        int w = wait_fd(h, fd, -1);
        if (w < 0)
            return 0;
        ssize_t n = recv(fd, in->data + in->len, in->cap - in->len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        in->len += (size_t)n;
        return 1;
    }
}

static void consume(inbuf *in, size_t n)
{
    memmove(in->data, in->data + n, in->len - n);
    in->len -= n;
}

static char *find_crlf(inbuf *in, size_t from)
{
    for (size_t i = from; i + 1 < in->len; i++)
        if (in->data[i] == '\r' && in->data[i + 1] == '\n')
            return in->data + i;
    return NULL;
}

/* Appends exactly n body bytes to *body. 0 on success. */
static int read_exact(ac_httpd *h, int fd, inbuf *in, char **body, size_t *blen, size_t n)
{
    if (*blen + n > HTTPD_MAX_BODY)
        return -1;
    char *nb = realloc(*body, *blen + n + 1);
    if (!nb)
        return -1;
    *body = nb;
    while (n > 0) {
        if (in->len == 0 && !fill(h, fd, in, HTTPD_MAX_BODY))
            return -1;
        size_t take = in->len < n ? in->len : n;
        memcpy(*body + *blen, in->data, take);
        *blen += take;
        consume(in, take);
        n -= take;
    }
    (*body)[*blen] = '\0';
    return 0;
}

static int read_chunked(ac_httpd *h, int fd, inbuf *in, char **body, size_t *blen)
{
    for (;;) {
        char *eol;
        while ((eol = find_crlf(in, 0)) == NULL)
            if (!fill(h, fd, in, HTTPD_MAX_HEADER))
                return -1;
        unsigned long size = strtoul(in->data, NULL, 16);
        consume(in, (size_t)(eol - in->data) + 2);
        if (size > HTTPD_MAX_BODY)
            return -1;
        if (size == 0) {
            /* Trailers until the blank line. */
            for (;;) {
                while ((eol = find_crlf(in, 0)) == NULL)
                    if (!fill(h, fd, in, HTTPD_MAX_HEADER))
                        return -1;
                size_t l = (size_t)(eol - in->data);
                consume(in, l + 2);
                if (l == 0)
                    return 0;
            }
        }
        if (read_exact(h, fd, in, body, blen, (size_t)size) != 0)
            return -1;
        char *crlf = NULL;
        size_t skip = 0;
        if (read_exact(h, fd, in, &crlf, &skip, 2) != 0) {
            free(crlf);
            return -1;
        }
        free(crlf);
    }
}

/* Reads one request into req. 1 ok, 0 connection done (EOF or stop), -1 bad request. */
static int read_request(ac_httpd *h, int fd, inbuf *in, httpd_req *req)
{
    memset(req, 0, sizeof *req);
    char *end;
    for (;;) {
        end = NULL;
        for (size_t i = 0; i + 3 < in->len; i++) {
            if (memcmp(in->data + i, "\r\n\r\n", 4) == 0) {
                end = in->data + i;
                break;
            }
        }
        if (end)
            break;
        if (in->len >= HTTPD_MAX_HEADER)
            return -1;
        if (!fill(h, fd, in, HTTPD_MAX_HEADER))
            return 0;
    }
    size_t head_len = (size_t)(end - in->data);
    char *line_end = find_crlf(in, 0);
    char *sp1 = memchr(in->data, ' ', (size_t)(line_end - in->data));
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
    if (!sp1 || !sp2)
        return -1;
    req->method = dup_range(in->data, (size_t)(sp1 - in->data));
    req->path = dup_range(sp1 + 1, (size_t)(sp2 - sp1 - 1));
    /* Header lines including their CRLFs, up to the blank line. */
    size_t hstart = (size_t)(line_end - in->data) + 2;
    req->headers = hstart <= head_len + 2 ? dup_range(in->data + hstart, head_len + 2 - hstart)
                                          : dup_range("", 0);
    consume(in, head_len + 4);
    if (!req->method || !req->path || !req->headers)
        return -1;

    char val[64];
    if (ac_httpd_header_value(req->headers, "Expect", val, sizeof val) &&
        strcasecmp(val, "100-continue") == 0) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (send_all(fd, cont, sizeof cont - 1) != 0)
            return 0;
    }
    req->body = dup_range("", 0);
    if (!req->body)
        return -1;
    if (ac_httpd_header_value(req->headers, "Transfer-Encoding", val, sizeof val) &&
        strcasecmp(val, "chunked") == 0)
        return read_chunked(h, fd, in, &req->body, &req->body_len) == 0 ? 1 : -1;
    if (ac_httpd_header_value(req->headers, "Content-Length", val, sizeof val)) {
        char *e;
        unsigned long long cl = strtoull(val, &e, 10);
        if (e == val || *e || cl > HTTPD_MAX_BODY)
            return -1;
        return read_exact(h, fd, in, &req->body, &req->body_len, (size_t)cl) == 0 ? 1 : -1;
    }
    return 1;
}

static void req_free(httpd_req *r)
{
    free(r->method);
    free(r->path);
    free(r->headers);
    free(r->body);
}

/* ---- responses ------------------------------------------------------------------------- */

static void resp_free(ac_httpd_resp *r)
{
    free((char *)r->headers);
    free((char *)r->body);
}

/* Takes the next scripted response (the caller frees it), or a 500 if none is queued. */
static ac_httpd_resp next_resp(ac_httpd *h)
{
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    pthread_mutex_lock(&h->mu);
    if (h->resp_head < h->resp_len) {
        r = h->resps[h->resp_head++];
        pthread_mutex_unlock(&h->mu);
        return r;
    }
    pthread_mutex_unlock(&h->mu);
    static const char msg[] = "no scripted response";
    r.status = 500;
    r.headers = dup_range("Content-Type: text/plain\r\n", 26);
    r.body = dup_range(msg, sizeof msg - 1);
    r.body_len = sizeof msg - 1;
    return r;
}

/* Sends body bytes [from, to) in the response's framing; -1 on error or stop. */
static int send_body(ac_httpd *h, int fd, const ac_httpd_resp *r, size_t from, size_t to)
{
    if (r->chunk_size == 0)
        return send_all(fd, r->body + from, to - from);
    for (size_t off = from; off < to;) {
        size_t n = to - off < r->chunk_size ? to - off : r->chunk_size;
        char hdr[32];
        int hl = snprintf(hdr, sizeof hdr, "%zx\r\n", n);
        if (send_all(fd, hdr, (size_t)hl) != 0 || send_all(fd, r->body + off, n) != 0 ||
            send_all(fd, "\r\n", 2) != 0)
            return -1;
        off += n;
        if (off < to && r->chunk_delay_ms > 0 && wait_fd(h, -1, r->chunk_delay_ms) < 0)
            return -1;
    }
    return 0;
}

/* The stall after the body: silence, or SSE keep-alive comments; -1 on error or stop. */
static int stall(ac_httpd *h, int fd, const ac_httpd_resp *r)
{
    if (r->keepalive_ms <= 0)
        return wait_fd(h, -1, r->stall_ms) < 0 ? -1 : 0;
    static const char ka[] = ": keep-alive\n\n";
    for (int left = r->stall_ms; left > 0; left -= r->keepalive_ms) {
        if (wait_fd(h, -1, left < r->keepalive_ms ? left : r->keepalive_ms) < 0)
            return -1;
        char hdr[32];
        int hl = snprintf(hdr, sizeof hdr, "%zx\r\n", sizeof ka - 1);
        if (r->chunk_size > 0 && send_all(fd, hdr, (size_t)hl) != 0)
            return -1;
        if (send_all(fd, ka, sizeof ka - 1) != 0)
            return -1;
        if (r->chunk_size > 0 && send_all(fd, "\r\n", 2) != 0)
            return -1;
    }
    return 0;
}

/* 1 keep the connection, 0 close it. */
static int send_response(ac_httpd *h, int fd, const ac_httpd_resp *r, int client_close)
{
    int status = r->status ? r->status : 200;
    char head[512];
    int n;
    if (r->chunk_size == 0)
        n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s", status,
                     reason(status), r->body_len, client_close ? "Connection: close\r\n" : "");
    else
        n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nTransfer-Encoding: chunked\r\n%s",
                     status, reason(status), client_close ? "Connection: close\r\n" : "");
    if (send_all(fd, head, (size_t)n) != 0)
        return 0;
    if (r->headers && send_all(fd, r->headers, strlen(r->headers)) != 0)
        return 0;
    if (send_all(fd, "\r\n", 2) != 0)
        return 0;

    size_t upto = r->body_len;
    int disconnect = r->disconnect_after >= 0;
    if (disconnect && (size_t)r->disconnect_after < upto)
        upto = (size_t)r->disconnect_after;
    if (send_body(h, fd, r, 0, upto) != 0)
        return 0;
    if (r->stall_ms > 0 && stall(h, fd, r) < 0)
        return 0;
    if (disconnect)
        return 0;
    if (r->chunk_size > 0 && send_all(fd, "0\r\n\r\n", 5) != 0)
        return 0;
    return !client_close;
}

/* ---- threads --------------------------------------------------------------------------- */

static void *conn_main(void *arg)
{
    httpd_conn *c = arg;
    ac_httpd *h = c->h;
    int fd = c->fd;
    inbuf in = {0};
    for (;;) {
        httpd_req req;
        int rc = read_request(h, fd, &in, &req);
        if (rc <= 0) {
            if (rc < 0) {
                static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                          "Connection: close\r\n\r\n";
                send_all(fd, bad, sizeof bad - 1);
            }
            req_free(&req);
            break;
        }
        char val[32];
        int client_close = ac_httpd_header_value(req.headers, "Connection", val, sizeof val) &&
                           strcasecmp(val, "close") == 0;
        pthread_mutex_lock(&h->mu);
        int stored = grow((void **)&h->reqs, &h->req_cap, h->req_len, sizeof *h->reqs) == 0;
        if (stored)
            h->reqs[h->req_len++] = req;
        pthread_mutex_unlock(&h->mu);
        if (!stored)
            req_free(&req);
        ac_httpd_resp r = next_resp(h);
        int keep = send_response(h, fd, &r, client_close);
        resp_free(&r);
        if (!keep)
            break;
    }
    free(in.data);
    pthread_mutex_lock(&h->mu);
    c->fd = -1;
    close(fd);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    ac_httpd *h = arg;
    for (;;) {
        if (wait_fd(h, h->lfd, -1) < 0)
            break;
        int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        httpd_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->h = h;
        c->fd = fd;
        pthread_mutex_lock(&h->mu);
        int ok = grow((void **)&h->conns, &h->conn_cap, h->conn_len, sizeof *h->conns) == 0 &&
                 pthread_create(&c->thr, NULL, conn_main, c) == 0;
        if (ok)
            h->conns[h->conn_len++] = c;
        pthread_mutex_unlock(&h->mu);
        if (!ok) {
            close(fd);
            free(c);
        }
    }
    return NULL;
}

ac_httpd *ac_httpd_start(void)
{
    ac_httpd *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->lfd = -1;
    h->stop_pipe[0] = h->stop_pipe[1] = -1;
    pthread_mutex_init(&h->mu, NULL);
    if (pipe2(h->stop_pipe, O_CLOEXEC) != 0)
        goto fail;
    h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (h->lfd < 0)
        goto fail;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    socklen_t sl = sizeof sa;
    if (bind(h->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(h->lfd, 256) != 0 ||
        getsockname(h->lfd, (struct sockaddr *)&sa, &sl) != 0)
        goto fail;
    h->port = ntohs(sa.sin_port);
    if (pthread_create(&h->accept_thr, NULL, accept_main, h) != 0)
        goto fail;
    return h;
fail:
    if (h->lfd >= 0)
        close(h->lfd);
    if (h->stop_pipe[0] >= 0) {
        close(h->stop_pipe[0]);
        close(h->stop_pipe[1]);
    }
    pthread_mutex_destroy(&h->mu);
    free(h);
    return NULL;
}

int ac_httpd_port(ac_httpd *h)
{
    return h->port;
}

void ac_httpd_stop(ac_httpd *h)
{
    if (!h)
        return;
    char c = 1;
    ssize_t w = write(h->stop_pipe[1], &c, 1); /* never drained: every wait sees it */
    (void)w;
    pthread_join(h->accept_thr, NULL);
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->conn_len; i++)
        if (h->conns[i]->fd >= 0)
            shutdown(h->conns[i]->fd, SHUT_RDWR); /* unblocks a send to a stuck client */
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < h->conn_len; i++) {
        pthread_join(h->conns[i]->thr, NULL);
        free(h->conns[i]);
    }
    free(h->conns);
    for (size_t i = 0; i < h->req_len; i++)
        req_free(&h->reqs[i]);
    free(h->reqs);
    for (size_t i = h->resp_head; i < h->resp_len; i++)
        resp_free(&h->resps[i]);
    free(h->resps);
    close(h->lfd);
    close(h->stop_pipe[0]);
    close(h->stop_pipe[1]);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

void ac_httpd_push(ac_httpd *h, const ac_httpd_resp *r)
{
    ac_httpd_resp c = *r;
    c.headers = r->headers ? dup_range(r->headers, strlen(r->headers)) : NULL;
    c.body = dup_range(r->body ? r->body : "", r->body ? r->body_len : 0);
    if (!r->body)
        c.body_len = 0;
    pthread_mutex_lock(&h->mu);
    if (grow((void **)&h->resps, &h->resp_cap, h->resp_len, sizeof *h->resps) == 0)
        h->resps[h->resp_len++] = c;
    else
        resp_free(&c);
    pthread_mutex_unlock(&h->mu);
}

void ac_httpd_push_simple(ac_httpd *h, int status, const char *headers, const char *body)
{
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.status = status;
    r.headers = headers;
    r.body = body;
    r.body_len = body ? strlen(body) : 0;
    ac_httpd_push(h, &r);
}

size_t ac_httpd_request_count(ac_httpd *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->req_len;
    pthread_mutex_unlock(&h->mu);
    return n;
}

size_t ac_httpd_connections(ac_httpd *h)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->conn_len;
    pthread_mutex_unlock(&h->mu);
    return n;
}

int ac_httpd_request(ac_httpd *h, size_t i, char **method, char **path, char **headers, char **body,
                     size_t *body_len)
{
    pthread_mutex_lock(&h->mu);
    if (i >= h->req_len) {
        pthread_mutex_unlock(&h->mu);
        return -1;
    }
    const httpd_req *r = &h->reqs[i];
    if (method)
        *method = dup_range(r->method, strlen(r->method));
    if (path)
        *path = dup_range(r->path, strlen(r->path));
    if (headers)
        *headers = dup_range(r->headers, strlen(r->headers));
    if (body)
        *body = dup_range(r->body, r->body_len);
    if (body_len)
        *body_len = r->body_len;
    pthread_mutex_unlock(&h->mu);
    return 0;
}
