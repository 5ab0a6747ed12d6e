/*
 * test_httpd_main.c - agentc_test_httpd, a standalone loopback server that
 * speaks the OpenAI chat completions protocol (streaming), for CLI tests and
 * benchmarks that run the real agentc binary.
 *
 *   agentc_test_httpd --port-file F [--mode calc | --script DIR] [--log FILE]
 *                     [--latency MS] [--close] [--unique-ids]
 *
 * Listens on 127.0.0.1 (a free port), writes the port to F (atomically), and
 * serves until killed. One thread per connection, keep-alive unless --close.
 *
 * Hostile and slow servers:
 *   --latency MS  every chat completions request waits MS before its response
 *                 headers go out (a slow model);
 *   --close       every response says `Connection: close` and the connection is
 *                 closed after it (servers and proxies without keep-alive).
 * --unique-ids gives each response its own id (chatcmpl-N) instead of chatcmpl-test, as real
 * servers do (clients that merge messages by id, as LangGraph.js does, need it).
 *
 * --mode calc answers from the request itself, so any number of sessions can
 * run against one server:
 *   - the arithmetic expressions of the first user message (runs of digits,
 *     spaces, + - * / ( ) . with at least one operator) are asked one by one
 *     as `calculator` tool calls, one per LLM call (the call id carries
 *     the expression's index, so the sequence survives compaction);
 *   - then it answers "The answer is <last tool result>." as text;
 *   - FAIL401 in the prompt: a 401 JSON error;
 *   - FAIL503: a 503 the first time a prompt is seen, then the normal answer;
 *   - SLOW: a text answer streamed one word per 100 ms (for Ctrl-C tests);
 *   - TOOLSLEEP: a call to the tool `sleeper` first;
 *   - THINK: reasoning deltas (reasoning_content) before the content;
 *   - ECHOHDR: a 401 JSON error whose message quotes every request header
 *     (servers that echo credentials back);
 *   - DELEGATE[a:TASK|b:TASK]: calls of the sub-agent tools agent__a and agent__b at once
 *     ({"task": TASK}; "*": the prompt itself), then "The answer is RA; RB." (asked again when
 *     the last result says a pause interrupted the call);
 *   - TRANSFER[x] in the last user message: a call of transfer_to_x, unless the system prompt
 *     is "You are x.": then "x answers: MESSAGE";
 *   - a system prompt beginning "You are a guardrail" (a guardrail that is a sub-agent):
 *     {"pass": false, "reason": "a secret"} when the last user message holds "secret", else
 *     {"pass": true, "reason": "clean"}.
 * --script DIR serves the files of DIR (sorted by name) in turn, one per
 * request (chat completions, or Anthropic's /v1/messages), cycling: a name like `02-503.json` sets
 * the status (default 200);
 * `.sse` files go out as text/event-stream, others as application/json.
 * --log FILE appends one JSON line per request: method, path, headers, body.
 *
 * It is also the HTTP side of an OTLP collector: a POST to a path holding /v1/traces is logged
 * and answered 200 {} (--otlp-status N another status, --otlp-retry-after S with a Retry-After,
 * --otlp-latency MS after a wait).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADER (64 * 1024)
#define MAX_BODY (16 * 1024 * 1024)
#define MAX_SEEN 100000

/* ---- server-wide state ------------------------------------------------------------------ */

typedef struct script_file {
    char *body;
    size_t len;
    int status;
    int sse;
} script_file;

static struct {
    int calc;
    script_file *files;
    size_t n_files, next_file;
    FILE *log;
    char **seen; /* FAIL503 prompts already failed once */
    size_t n_seen;
    unsigned long long call_seq;
    int latency_ms; /* --latency */
    int close;      /* --close */
    int unique_ids; /* --unique-ids */
    unsigned long long response_seq;
    /* OTLP collector side: POST .../v1/traces */
    int otlp_status;      /* --otlp-status (default 200) */
    int otlp_retry_after; /* --otlp-retry-after S: a Retry-After header */
    int otlp_latency_ms;  /* --otlp-latency MS before answering */
    pthread_mutex_t mu;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- growing byte buffer (capped) ------------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static int buf_add(buf *b, const void *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->len + n + 1)
            nc *= 2;
        if (nc > (size_t)MAX_BODY * 2)
            return -1;
        char *np = realloc(b->p, nc);
        if (!np)
            return -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

static int buf_str(buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

static void buf_consume(buf *b, size_t n)
{
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
    if (b->p)
        b->p[b->len] = 0;
}

/* ---- socket helpers --------------------------------------------------------------------- */

static int send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

static int fill(int fd, buf *in)
{
    char tmp[16384];
    for (;;) {
        ssize_t n = recv(fd, tmp, sizeof tmp, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        return buf_add(in, tmp, (size_t)n) == 0;
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Case-insensitive header lookup in "Name: value\r\n" lines; copies the trimmed value. */
static const char *header_value(const char *hdrs, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    for (const char *l = hdrs; l && *l;) {
        const char *eol = strstr(l, "\r\n");
        size_t ll = eol ? (size_t)(eol - l) : strlen(l);
        if (ll > nl && l[nl] == ':' && !strncasecmp(l, name, nl)) {
            const char *v = l + nl + 1, *e = l + ll;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            size_t vl = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
            memcpy(out, v, vl);
            out[vl] = 0;
            return out;
        }
        l = eol ? eol + 2 : NULL;
    }
    return NULL;
}

/* ---- request reading -------------------------------------------------------------------- */

typedef struct request {
    char *method, *path, *headers;
    buf body;
} request;

static void request_free(request *r)
{
    free(r->method);
    free(r->path);
    free(r->headers);
    free(r->body.p);
    memset(r, 0, sizeof *r);
}

/* 1 got a request, 0 connection closed, -1 bad request. */
static int read_request(int fd, buf *in, request *r)
{
    memset(r, 0, sizeof *r);
    char *end;
    while (!(end = in->p ? strstr(in->p, "\r\n\r\n") : NULL)) {
        if (in->len > MAX_HEADER)
            return -1;
        if (!fill(fd, in))
            return 0;
    }
    size_t head = (size_t)(end - in->p);
    char *eol = strstr(in->p, "\r\n");
    char *sp1 = memchr(in->p, ' ', (size_t)(eol - in->p));
    char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2)
        return -1;
    r->method = strndup(in->p, (size_t)(sp1 - in->p));
    r->path = strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
    r->headers = strndup(eol + 2, head + 2 - (size_t)(eol + 2 - in->p));
    buf_consume(in, head + 4);
    if (!r->method || !r->path || !r->headers)
        return -1;
    char v[64];
    if (header_value(r->headers, "Expect", v, sizeof v) && !strcasecmp(v, "100-continue") &&
        send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) != 0)
        return 0;
    if (header_value(r->headers, "Transfer-Encoding", v, sizeof v) && !strcasecmp(v, "chunked")) {
        for (;;) {
            char *ce;
            while (!(ce = in->p ? strstr(in->p, "\r\n") : NULL))
                if (in->len > MAX_HEADER || !fill(fd, in))
                    return -1;
            unsigned long sz = strtoul(in->p, NULL, 16);
            buf_consume(in, (size_t)(ce - in->p) + 2);
            if (sz > MAX_BODY || r->body.len + sz > MAX_BODY)
                return -1;
            while (in->len < sz + 2)
                if (!fill(fd, in))
                    return -1;
            if (sz == 0) { /* no trailers expected */
                buf_consume(in, 2);
                return 1;
            }
            if (buf_add(&r->body, in->p, sz) != 0)
                return -1;
            buf_consume(in, sz + 2);
        }
    }
    unsigned long long cl = 0;
    if (header_value(r->headers, "Content-Length", v, sizeof v)) {
        char *e;
        cl = strtoull(v, &e, 10);
        if (e == v || *e || cl > MAX_BODY)
            return -1;
    }
    while (in->len < cl)
        if (!fill(fd, in))
            return -1;
    if (buf_add(&r->body, in->p ? in->p : "", (size_t)cl) != 0)
        return -1;
    buf_consume(in, (size_t)cl);
    return 1;
}

static void log_request(const request *r)
{
    if (!g.log)
        return;
    json_t *h = json_object();
    for (const char *l = r->headers; l && *l;) {
        const char *eol = strstr(l, "\r\n");
        size_t ll = eol ? (size_t)(eol - l) : strlen(l);
        const char *colon = memchr(l, ':', ll);
        if (colon) {
            char name[256];
            size_t nl =
                (size_t)(colon - l) < sizeof name - 1 ? (size_t)(colon - l) : sizeof name - 1;
            for (size_t i = 0; i < nl; i++)
                name[i] = (char)(l[i] >= 'A' && l[i] <= 'Z' ? l[i] + 32 : l[i]);
            name[nl] = 0;
            const char *val = colon + 1;
            while (val < l + ll && *val == ' ')
                val++;
            json_object_set_new(h, name, json_stringn(val, (size_t)(l + ll - val)));
        }
        l = eol ? eol + 2 : NULL;
    }
    json_t *body = json_loadb(r->body.p ? r->body.p : "", r->body.len, 0, NULL);
    if (!body)
        body = json_stringn(r->body.p ? r->body.p : "", r->body.len);
    json_t *o = json_pack("{s:s, s:s, s:o, s:o}", "method", r->method, "path", r->path, "headers",
                          h, "body", body ? body : json_null());
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s) {
        pthread_mutex_lock(&g.mu);
        fprintf(g.log, "%s\n", s);
        fflush(g.log);
        pthread_mutex_unlock(&g.mu);
        free(s);
    }
}

/* ---- responses ---------------------------------------------------------------------------- */

static int send_plain(int fd, int status, const char *ctype, const char *extra, const char *body,
                      size_t len)
{
    char head[512];
    const char *reason = status == 200   ? "OK"
                         : status == 400 ? "Bad Request"
                         : status == 401 ? "Unauthorized"
                         : status == 404 ? "Not Found"
                         : status == 503 ? "Service Unavailable"
                                         : "Status";
    int n = snprintf(
        head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
        status, reason, ctype, len, g.close ? "Connection: close\r\n" : "", extra ? extra : "");
    return send_all(fd, head, (size_t)n) || send_all(fd, body, len) ? -1 : 0;
}

static int send_chunk(int fd, const char *s, size_t n)
{
    char hdr[32];
    int hl = snprintf(hdr, sizeof hdr, "%zx\r\n", n);
    return send_all(fd, hdr, (size_t)hl) || send_all(fd, s, n) || send_all(fd, "\r\n", 2) ? -1 : 0;
}

static int send_sse_head(int fd)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
    return send_all(fd, head, sizeof head - 1) ||
                   send_all(fd, g.close ? "Connection: close\r\n\r\n" : "\r\n", g.close ? 21 : 2)
               ? -1
               : 0;
}

/* The id of the response this thread is writing (one thread per connection). */
static _Thread_local char response_id[32] = "chatcmpl-test";

/* Appends one `data: {chunk}` event with the given delta (stolen) and finish reason. */
static void sse_delta(buf *b, json_t *delta, const char *finish)
{
    json_t *o = json_pack("{s:s, s:s, s:[{s:i, s:o, s:s?}]}", "id", response_id, "object",
                          "chat.completion.chunk", "choices", "index", 0, "delta", delta,
                          "finish_reason", finish);
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s) {
        buf_str(b, "data: ");
        buf_str(b, s);
        buf_str(b, "\n\n");
        free(s);
    }
}

static void sse_end(buf *b, int in_tokens, int out_tokens)
{
    char u[256];
    snprintf(u, sizeof u,
             "data: {\"id\":\"%s\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,"
             "\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
             response_id, in_tokens, out_tokens, in_tokens + out_tokens);
    buf_str(b, u);
}

/* Copies the arithmetic expressions of text into out (up to max), each malloc'd. */
static size_t find_expressions(const char *text, char **out, size_t max)
{
    static const char set[] = "0123456789+-*/(). ";
    size_t n = 0;
    for (const char *p = text; *p && n < max;) {
        size_t run = strspn(p, set);
        if (!run) {
            p++;
            continue;
        }
        if (p > text && *p != ' ' &&
            ((p[-1] >= '0' && p[-1] <= '9') || (p[-1] >= 'a' && p[-1] <= 'z') ||
             (p[-1] >= 'A' && p[-1] <= 'Z') || p[-1] == '_')) {
            p += run; /* digits inside a word (FAIL503) */
            continue;
        }
        const char *a = p, *e = p + run;
        while (a < e && *a == ' ')
            a++;
        while (e > a && (e[-1] == ' ' || e[-1] == '.'))
            e--;
        int digit = 0, op = 0;
        for (const char *q = a; q < e; q++) {
            digit |= *q >= '0' && *q <= '9';
            op |= *q == '+' || *q == '*' || *q == '/' || (*q == '-' && q > a);
        }
        if (digit && op)
            out[n++] = strndup(a, (size_t)(e - a));
        p += run;
    }
    return n;
}

static int approx_tokens(const request *r)
{
    return (int)(r->body.len / 4) + 1;
}

/* DELEGATE[name:task|name:task] in the prompt: the first call asks each agent at once (tool
 * agent__NAME with {"task": TASK}; "*" as the task: the prompt itself, for recursion). */
static void delegate_calls(buf *b, const char *prompt)
{
    const char *p = strstr(prompt, "DELEGATE[") + 9, *end = strchr(p, ']');
    pthread_mutex_lock(&g.mu);
    unsigned long long seq = ++g.call_seq;
    pthread_mutex_unlock(&g.mu);
    for (int k = 0; end && p < end; k++) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        bar = bar ? bar : end;
        const char *colon = memchr(p, ':', (size_t)(bar - p));
        if (!colon)
            break;
        char name[80], id[64];
        snprintf(name, sizeof name, "agent__%.*s", (int)(colon - p), p);
        snprintf(id, sizeof id, "dlg_%llu_%d", seq, k);
        char *task = bar - colon == 2 && colon[1] == '*'
                         ? strdup(prompt)
                         : strndup(colon + 1, (size_t)(bar - colon - 1));
        json_t *args = json_pack("{s:s}", "task", task ? task : "");
        char *a = json_dumps(args, JSON_COMPACT);
        sse_delta(b,
                  json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", k, "id",
                            id, "type", "function", "function", "name", name, "arguments",
                            a ? a : "{}"),
                  NULL);
        free(a);
        free(task);
        json_decref(args);
        p = bar + 1;
    }
    sse_delta(b, json_object(), "tool_calls");
}

/* A tool result a pause interrupted: the calls are asked again. */
static int is_paused_result(const json_t *m)
{
    const char *c = json_string_value(json_object_get(m, "content"));
    if (c && !strncmp(c, "Error: ", 7))
        c += 7;
    return c && !strncmp(c, "interrupted: the session was paused", 35);
}

/* The results of the last round of tool calls, "; "-joined: "The answer is R1; R2." */
static void delegate_answer(buf *b, const json_t *msgs)
{
    size_t n = json_array_size(msgs), from = n;
    while (from > 0 && !json_object_get(json_array_get(msgs, from - 1), "tool_calls"))
        from--;
    buf t = {0};
    buf_str(&t, "The answer is ");
    for (size_t i = from; i < n; i++) {
        const json_t *m = json_array_get(msgs, i);
        const char *c = json_string_value(json_object_get(m, "content"));
        if (i > from)
            buf_str(&t, "; ");
        buf_str(&t, c ? c : "");
    }
    buf_str(&t, ".");
    sse_delta(b, json_pack("{s:s}", "content", t.p ? t.p : ""), NULL);
    sse_delta(b, json_object(), "stop");
    free(t.p);
}

/* TRANSFER[x] in the last user message: an agent whose system prompt is not "You are x."
 * calls transfer_to_x; agent x answers "x answers: MESSAGE" (anyone else after a transfer
 * result: "NOT TRANSFERRED"). */
static void transfer_answer(buf *b, const char *last_user, const char *system,
                            const char *last_role)
{
    const char *p = strstr(last_user, "TRANSFER[") + 9, *end = strchr(p, ']');
    char name[64], want[96];
    snprintf(name, sizeof name, "%.*s", end ? (int)(end - p) : 0, p);
    snprintf(want, sizeof want, "You are %s.", name);
    int is_x = system && !strcmp(system, want);
    if (!is_x && last_role && !strcmp(last_role, "user")) {
        char fn[96], id[64];
        snprintf(fn, sizeof fn, "transfer_to_%s", name);
        pthread_mutex_lock(&g.mu);
        snprintf(id, sizeof id, "xfer_%llu", ++g.call_seq);
        pthread_mutex_unlock(&g.mu);
        sse_delta(b,
                  json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", 0, "id",
                            id, "type", "function", "function", "name", fn, "arguments", "{}"),
                  NULL);
        sse_delta(b, json_object(), "tool_calls");
        return;
    }
    char text[1200];
    snprintf(text, sizeof text, is_x ? "%s answers: %s" : "NOT TRANSFERRED%.0s%.0s", name,
             last_user);
    sse_delta(b, json_pack("{s:s}", "content", text), NULL);
    sse_delta(b, json_object(), "stop");
}

/* Answers one chat completion request in calc mode. 0 keep the connection, -1 close. */
static int calc_answer(int fd, const request *r)
{
    json_t *root = json_loadb(r->body.p ? r->body.p : "", r->body.len, 0, NULL);
    json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs) || !json_array_size(msgs)) {
        static const char e[] = "{\"error\":{\"message\":\"expected a JSON body with messages\","
                                "\"type\":\"invalid_request_error\"}}";
        json_decref(root);
        return send_plain(fd, 400, "application/json", NULL, e, sizeof e - 1);
    }
    const char *prompt = "", *last_user = NULL, *system = NULL;
    size_t n_tool_results = 0, next_expr = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && !strcmp(role, "user") && !*prompt)
            prompt = json_string_value(json_object_get(m, "content"))
                         ? json_string_value(json_object_get(m, "content"))
                         : "";
        if (role && !strcmp(role, "tool"))
            n_tool_results++;
        if (role && !strcmp(role, "user"))
            last_user = json_string_value(json_object_get(m, "content"));
        if (role && !strcmp(role, "system") && !system)
            system = json_string_value(json_object_get(m, "content"));
        /* calculator call ids carry the expression index, so the count survives compaction */
        const char *cid = json_string_value(
            json_object_get(json_array_get(json_object_get(m, "tool_calls"), 0), "id"));
        const char *us = cid && !strncmp(cid, "calc_", 5) ? strrchr(cid, '_') : NULL;
        if (us)
            next_expr = (size_t)strtoul(us + 1, NULL, 10) + 1;
    }
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    const char *last_role = json_string_value(json_object_get(last, "role"));
    int rc = 0;
    buf b = {0};
    if (strstr(prompt, "FAIL401")) {
        static const char e[] = "{\"error\":{\"message\":\"Incorrect API key provided (FAIL401)\","
                                "\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}";
        rc = send_plain(fd, 401, "application/json", NULL, e, sizeof e - 1);
        goto done;
    }
    if (strstr(prompt, "FAIL503")) {
        int first = 1;
        pthread_mutex_lock(&g.mu);
        for (size_t k = 0; k < g.n_seen && first; k++)
            first = strcmp(g.seen[k], prompt) != 0;
        if (first && g.n_seen < MAX_SEEN) {
            char **ns = realloc(g.seen, (g.n_seen + 1) * sizeof *ns);
            if (ns) {
                g.seen = ns;
                g.seen[g.n_seen++] = strdup(prompt);
            }
        }
        pthread_mutex_unlock(&g.mu);
        if (first) {
            static const char e[] = "{\"error\":{\"message\":\"overloaded (FAIL503)\","
                                    "\"type\":\"server_error\"}}";
            rc = send_plain(fd, 503, "application/json", "Retry-After-Ms: 20\r\n", e, sizeof e - 1);
            goto done;
        }
    }
    if (strstr(prompt, "ECHOHDR")) {
        json_t *e = json_pack("{s:{s:s, s:s}}", "error", "message", r->headers ? r->headers : "",
                              "type", "invalid_request_error");
        char *es = json_dumps(e, JSON_COMPACT);
        json_decref(e);
        rc = es ? send_plain(fd, 401, "application/json", NULL, es, strlen(es)) : -1;
        free(es);
        goto done;
    }
    if (send_sse_head(fd) != 0) {
        rc = -1;
        goto done;
    }
    if (g.unique_ids) {
        pthread_mutex_lock(&g.mu);
        unsigned long long rseq = ++g.response_seq;
        pthread_mutex_unlock(&g.mu);
        snprintf(response_id, sizeof response_id, "chatcmpl-%llu", rseq);
    }
    sse_delta(&b, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL);
    if (strstr(prompt, "THINK") && last_role && !strcmp(last_role, "user"))
        for (int k = 0; k < 3; k++)
            sse_delta(&b, json_pack("{s:s}", "reasoning_content", k ? " it through." : "Think"),
                      NULL);
    if (strstr(prompt, "SLOW")) {
        /* one word per chunk, 100 ms apart */
        if (send_chunk(fd, b.p, b.len) != 0) {
            rc = -1;
            goto done;
        }
        b.len = 0;
        for (int k = 0; k < 100; k++) {
            char w[32];
            snprintf(w, sizeof w, "%sword%d", k ? " " : "", k + 1);
            sse_delta(&b, json_pack("{s:s}", "content", w), NULL);
            if (send_chunk(fd, b.p, b.len) != 0) {
                rc = -1;
                goto done;
            }
            b.len = 0;
            sleep_ms(100);
        }
        sse_delta(&b, json_object(), "stop");
    } else if (system && !strncmp(system, "You are a guardrail", 19)) {
        const char *v = last_user && strstr(last_user, "secret")
                            ? "{\"pass\": false, \"reason\": \"a secret\"}"
                            : "{\"pass\": true, \"reason\": \"clean\"}";
        sse_delta(&b, json_pack("{s:s}", "content", v), NULL);
        sse_delta(&b, json_object(), "stop");
    } else if (last_user && strstr(last_user, "TRANSFER[")) {
        transfer_answer(&b, last_user, system, last_role);
    } else if (strstr(prompt, "DELEGATE[") && last_role &&
               (!strcmp(last_role, "user") || is_paused_result(last))) {
        delegate_calls(&b, prompt);
    } else if (strstr(prompt, "DELEGATE[")) {
        delegate_answer(&b, msgs);
    } else if (strstr(prompt, "TOOLSLEEP") && n_tool_results == 0) {
        sse_delta(&b,
                  json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "tool_calls", "index", 0, "id",
                            "call_sleep", "type", "function", "function", "name", "sleeper",
                            "arguments", "{}"),
                  NULL);
        sse_delta(&b, json_object(), "tool_calls");
    } else {
        char *exprs[16];
        size_t ne = find_expressions(prompt, exprs, 16);
        if (next_expr < ne) {
            char id[64];
            pthread_mutex_lock(&g.mu);
            unsigned long long seq = ++g.call_seq;
            pthread_mutex_unlock(&g.mu);
            snprintf(id, sizeof id, "calc_%llu_%zu", seq, next_expr);
            json_t *args = json_pack("{s:s}", "expression", exprs[next_expr]);
            char *a = json_dumps(args, JSON_COMPACT);
            json_decref(args);
            /* the arguments arrive in two fragments, as real servers send them */
            size_t al = a ? strlen(a) : 0, half = al / 2;
            sse_delta(&b,
                      json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s%}}]}", "tool_calls", "index", 0,
                                "id", id, "type", "function", "function", "name", "calculator",
                                "arguments", a ? a : "", half),
                      NULL);
            sse_delta(&b,
                      json_pack("{s:[{s:i, s:{s:s}}]}", "tool_calls", "index", 0, "function",
                                "arguments", a ? a + half : ""),
                      NULL);
            free(a);
            sse_delta(&b, json_object(), "tool_calls");
        } else {
            const char *result = "nothing to compute";
            if (last_role && !strcmp(last_role, "tool"))
                result = json_string_value(json_object_get(last, "content"))
                             ? json_string_value(json_object_get(last, "content"))
                             : "";
            char text[1024];
            snprintf(text, sizeof text, "The answer is %s.", result);
            /* the text in two deltas */
            size_t tl = strlen(text), half = tl / 2;
            sse_delta(&b, json_pack("{s:s%}", "content", text, half), NULL);
            sse_delta(&b, json_pack("{s:s}", "content", text + half), NULL);
            sse_delta(&b, json_object(), "stop");
        }
        for (size_t k = 0; k < ne; k++)
            free(exprs[k]);
    }
    sse_end(&b, approx_tokens(r), 10);
    rc = send_chunk(fd, b.p, b.len) || send_all(fd, "0\r\n\r\n", 5) ? -1 : 0;
done:
    free(b.p);
    json_decref(root);
    return rc;
}

static int script_answer(int fd)
{
    pthread_mutex_lock(&g.mu);
    script_file *f = &g.files[g.next_file++ % g.n_files];
    pthread_mutex_unlock(&g.mu);
    return send_plain(fd, f->status, f->sse ? "text/event-stream" : "application/json", NULL,
                      f->body, f->len);
}

/* The collector's answer to an OTLP/HTTP export (the request is in the log). */
static int otlp_answer(int fd)
{
    if (g.otlp_latency_ms > 0)
        sleep_ms(g.otlp_latency_ms);
    int status = g.otlp_status ? g.otlp_status : 200;
    char extra[64] = "";
    if (g.otlp_retry_after > 0)
        snprintf(extra, sizeof extra, "Retry-After: %d\r\n", g.otlp_retry_after);
    return send_plain(fd, status, "application/json", extra[0] ? extra : NULL, "{}", 2);
}

/* ---- threads ------------------------------------------------------------------------------ */

static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    buf in = {0};
    for (;;) {
        request r;
        int rc = read_request(fd, &in, &r);
        if (rc < 0) {
            static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                      "Connection: close\r\n\r\n";
            send_all(fd, bad, sizeof bad - 1);
        }
        if (rc <= 0) {
            request_free(&r);
            break;
        }
        log_request(&r);
        char v[32];
        int close_after =
            header_value(r.headers, "Connection", v, sizeof v) && !strcasecmp(v, "close");
        int sent;
        if (!strcmp(r.method, "POST") && strstr(r.path, "/v1/traces")) {
            sent = otlp_answer(fd);
        } else if (strcmp(r.method, "POST") != 0 || (!strstr(r.path, "/chat/completions") &&
                                                     (g.calc || !strstr(r.path, "/v1/messages")))) {
            static const char nf[] = "{\"error\":{\"message\":\"not found\"}}";
            sent = send_plain(fd, 404, "application/json", NULL, nf, sizeof nf - 1);
        } else {
            if (g.latency_ms > 0)
                sleep_ms(g.latency_ms);
            sent = g.calc ? calc_answer(fd, &r) : script_answer(fd);
        }
        request_free(&r);
        if (sent != 0 || close_after || g.close)
            break;
    }
    free(in.p);
    close(fd);
    return NULL;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int load_script(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "agentc_test_httpd: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char *names[1024];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 1024)
        if (de->d_name[0] != '.')
            names[n++] = strdup(de->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    g.files = calloc(n ? n : 1, sizeof *g.files);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        buf b = {0};
        char tmp[8192];
        size_t r;
        while (f && (r = fread(tmp, 1, sizeof tmp, f)) > 0)
            if (buf_add(&b, tmp, r) != 0)
                break;
        if (f)
            fclose(f);
        script_file *sf = &g.files[g.n_files++];
        sf->body = b.p ? b.p : strdup("");
        sf->len = b.len;
        const char *dash = strchr(names[i], '-');
        sf->status = dash && atoi(dash + 1) >= 100 ? atoi(dash + 1) : 200;
        size_t nl = strlen(names[i]);
        sf->sse = nl > 4 && !strcmp(names[i] + nl - 4, ".sse");
        free(names[i]);
    }
    if (!g.n_files) {
        fprintf(stderr, "agentc_test_httpd: %s has no response files\n", dir);
        return -1;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: agentc_test_httpd --port-file F [--mode calc | --script DIR] "
                    "[--log FILE] [--latency MS] [--close] [--unique-ids] [--otlp-status N] "
                    "[--otlp-retry-after S] [--otlp-latency MS]\n");
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *script = NULL, *log = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--port-file"))
            port_file = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--script"))
            script = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--log"))
            log = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--latency"))
            g.latency_ms = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--otlp-status"))
            g.otlp_status = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--otlp-retry-after"))
            g.otlp_retry_after = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--otlp-latency"))
            g.otlp_latency_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--close"))
            g.close = 1;
        else if (!strcmp(argv[i], "--unique-ids"))
            g.unique_ids = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--mode")) {
            if (strcmp(argv[++i], "calc") != 0) {
                fprintf(stderr, "agentc_test_httpd: unknown mode '%s' (calc)\n", argv[i]);
                return 2;
            }
            g.calc = 1;
        } else {
            usage();
            return 2;
        }
    }
    if (!port_file || (!script && !g.calc) || (script && g.calc)) {
        usage();
        return 2;
    }
    if (script && load_script(script) != 0)
        return 1;
    if (log && !(g.log = fopen(log, "a"))) {
        fprintf(stderr, "agentc_test_httpd: cannot open %s: %s\n", log, strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1024) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        fprintf(stderr, "agentc_test_httpd: cannot listen: %s\n", strerror(errno));
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (!pf || fprintf(pf, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(pf) != 0 ||
        rename(tmp, port_file) != 0) {
        fprintf(stderr, "agentc_test_httpd: cannot write %s: %s\n", port_file, strerror(errno));
        return 1;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
                if (errno == EMFILE || errno == ENFILE)
                    sleep_ms(10);
                continue;
            }
            fprintf(stderr, "agentc_test_httpd: accept: %s\n", strerror(errno));
            return 1;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pthread_t t;
        if (pthread_create(&t, &attr, conn_main, (void *)(intptr_t)fd) != 0)
            close(fd);
    }
}
