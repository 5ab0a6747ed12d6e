/*
 * http_provider.c - the HTTP LLM providers: OpenAI-compatible Chat Completions
 * and Anthropic Messages, streamed over the event loop's shared libcurl multi.
 *
 * One call is one POST. Its body is built from the session's conversation
 * (context/request.h); the response body goes straight from curl's write
 * callback into an ac_stream (never stored whole), whose sink turns each
 * delta into an llm.delta event. The end of the transfer becomes llm.completed
 * or llm.failed with a failure class and a retryable flag; the backoff and the
 * retry decision belong to the spec.
 *
 * Events go to the session's queue (ac_session_enqueue), which applies them
 * only after curl has returned: no dispatch, and so no cancel, ever runs
 * inside one of curl's callbacks. A cancel removes the transfer and frees the
 * call at once, and the session drops what the call queued and was not
 * applied yet.
 *
 * Stall timeout: ac_http_set_stall_timeout() (a loop timer), with the
 * events of the stream (and the bytes of an error body) as progress, so SSE
 * keep-alive comments do not hold a call open; curl's LOW_SPEED_* options
 * average over seconds and react late. The whole call has a deadline too
 * (call_timeout, CURLOPT_TIMEOUT_MS).
 *
 * Ownership: the provider owns its calls; a call owns its easy handle, request
 * body, stream and error-body buffer. The API key is copied into the shared
 * request headers and never written into a message, an event or a log: every
 * failure message is scrubbed of it. The loop must outlive the provider.
 */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include "agentc/agentc.h"
#include "context/request.h"
#include "io/http.h"
#include "io/loop.h"
#include "llm/provider.h"
#include "llm/stream.h"
#include "session/sink.h"
#include "util/secrets.h"
#include "util/toolname.h"
#include "util/utf8.h"

#define HP_OPENAI_DEFAULT_BASE "https://api.openai.com/v1"
#define HP_ANTHROPIC_DEFAULT_BASE "https://api.anthropic.com"
#define HP_ANTHROPIC_VERSION "2023-06-01"
#define HP_ERROR_BODY_CAP ((size_t)64 << 10) /* kept of a non-2xx body */
/* libcurl's receive buffer per transfer (its default is 16 KiB; 1 KiB is its least).
 * Streamed events are small; a small buffer packs into the heap with the rest of the
 * call's state, where 16 KiB costs about 4 KB of resident memory per call in flight
 * (bench_inflight: 1,000 calls 33.9 -> 31.0 MB at 2 KiB, 30.6 -> 29.8 MB at 1 KiB). A
 * stream of 450 KB costs about 4% more CPU read 1 KiB at a time than 2 KiB. */
#define HP_RECV_BUFFER 1024L
#define HP_SNIPPET_CAP 300 /* body text quoted in a message */
#define HP_MESSAGE_CAP 1024
#define HP_RETRY_AFTER_MAX_MS ((int64_t)24 * 3600 * 1000)

typedef struct hp_provider hp_provider;

typedef struct hp_call {
    hp_provider *p;
    uint64_t id;
    uint32_t slot;
    ac_session *s;
    const ac_conv *conv; /* of a session call: maps tools' wire names back (util/toolname.h) */
    CURL *easy;
    uint64_t xfer;   /* transfer id while lent to the loop, else 0 */
    uint16_t origin; /* of the llm_request effect: passed with every event queued */
    char *body;      /* request body (curl reads it in place); freed once sent and answered */
    struct curl_slist *own_headers; /* the provider's headers and a traceparent, when traced */
    size_t body_len;
    ac_stream *st;
    int started;   /* llm.started posted */
    int abort_rc;  /* AC_STREAM_ERR_* that made the write callback abort */
    int finish_rc; /* ac_stream_finish() of a 2xx body that ended */
    int json_type; /* the response's Content-Type is application/json */
    int json_body; /* a 2xx JSON body: kept like an error body, not streamed */
    long status;
    char reason[64];
    int64_t retry_after_ms; /* -1: none */
    char *errbody;          /* non-2xx or 2xx JSON body, at most HP_ERROR_BODY_CAP */
    size_t errlen;
    int64_t connect_ms, stall_ms, call_ms;
    ac_llm_done_fn done; /* one-off completion: reported here, nothing posted */
    void *done_ud;
    char errbuf[CURL_ERROR_SIZE];
} hp_call;

struct hp_provider {
    ac_provider base; /* first: the engine holds an ac_provider * */
    ac_engine *e;
    ac_loop *loop;
    int kind;
    int tls; /* https:// base URL: HTTP/2 can be negotiated */
    ac_wire wire;
    char *url;   /* what curl is given */
    char *shown; /* url for messages: userinfo redacted */
    char *model;
    ac_request_settings *settings; /* the engine's request settings (a copy), or NULL */
    char *key;
    char **secrets; /* key, header values, URL userinfo (util/secrets.h) */
    struct curl_slist *headers;
    /* finished easy handles, reset and kept for the next calls: creating one
     * costs more than a small request's whole parse */
    CURL *easy_pool[64];
    int n_easy_pool;
    /* finished calls, their stream reset (its buffers kept) for the next calls */
    hp_call *call_pool[16];
    int n_call_pool;
    int closing;
    uint16_t ev_started, ev_delta, ev_completed, ev_failed;
    /* calls by slot; id = generation << 32 | (slot + 1) */
    hp_call **slots;
    uint32_t n_slots, cap_slots;
    uint32_t *free_slots;
    uint32_t n_free;
    uint32_t gen;
};

/* ---- small helpers ---- */

static char *hp_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static char *hp_memmem(char *hay, size_t n, const char *needle, size_t k)
{
    for (size_t i = 0; k && i + k <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0)
            return hay + i;
    return NULL;
}

/* Replaces every occurrence of key in buf[0..len) with "[redacted]", keeping at most
 * cap - 1 bytes and a terminating NUL. Returns the new length. Without memory for the
 * rewrite, the key's bytes are overwritten with '*' in place. */
static size_t hp_scrub_mem(char *buf, size_t len, size_t cap, const char *key)
{
    static const char mask[] = "[redacted]";
    const size_t ml = sizeof mask - 1;
    size_t kl = key ? strlen(key) : 0;
    if (kl == 0 || len < kl || cap == 0)
        return len;
    if (!hp_memmem(buf, len, key, kl))
        return len;
    char *out = malloc(cap);
    if (!out) {
        char *at;
        while ((at = hp_memmem(buf, len, key, kl)) != NULL)
            memset(at, '*', kl);
        return len;
    }
    size_t o = 0, i = 0;
    while (i < len && o + 1 < cap) {
        if (i + kl <= len && memcmp(buf + i, key, kl) == 0) {
            size_t take = ml < cap - 1 - o ? ml : cap - 1 - o;
            memcpy(out + o, mask, take);
            o += take;
            i += kl;
        } else {
            out[o++] = buf[i++];
        }
    }
    memcpy(buf, out, o);
    buf[o] = '\0';
    free(out);
    return o;
}

/* Masks with '*' what is left of a key that a cut went through: any run of
 * 8 or more bytes equal to the key's start. */
static void hp_scrub_partial(char *buf, size_t len, const char *key)
{
    size_t kl = key ? strlen(key) : 0;
    if (kl < 8)
        return;
    for (size_t i = 0; i + 8 <= len; i++) {
        size_t m = 0;
        while (m < kl && i + m < len && buf[i + m] == key[m])
            m++;
        if (m >= 8) {
            memset(buf + i, '*', m);
            i += m - 1;
        }
    }
}

/* Every whole secret becomes "[redacted]"; a secret cut short by a length
 * limit somewhere upstream is masked too. Returns the new length. */
static size_t hp_scrub_all(char *buf, size_t len, size_t cap, char *const *secrets)
{
    for (char *const *k = secrets; k && *k; k++)
        len = hp_scrub_mem(buf, len, cap, *k);
    for (char *const *k = secrets; k && *k; k++)
        hp_scrub_partial(buf, len, *k);
    return len;
}

static void hp_scrub(char *msg, size_t cap, char *const *secrets)
{
    hp_scrub_all(msg, strlen(msg), cap, secrets);
}

/* Copies printable text of s into out, whitespace runs collapsed, at most cap - 1 bytes. */
static void hp_snippet(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    int space = 0;
    for (size_t i = 0; i < n && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c)) {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < cap)
            out[o++] = ' ';
        space = 0;
        out[o++] = (c >= 0x20 && c != 0x7f) ? (char)c : '?';
    }
    out[o] = '\0';
}

static int64_t hp_parse_retry_after(const char *v, int millis)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (!*v)
        return -1;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end != v && !errno && !isfinite(d))
        return -1; /* "nan", "inf": no delay can be made of them */
    if (end != v && !errno) {
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end)
            return -1;
        if (d < 0)
            d = 0;
        double ms = millis ? d : d * 1000.0;
        if (ms > (double)HP_RETRY_AFTER_MAX_MS)
            ms = (double)HP_RETRY_AFTER_MAX_MS;
        return (int64_t)ms;
    }
    if (millis)
        return -1;
    time_t at = curl_getdate(v, NULL);
    if (at == (time_t)-1)
        return -1;
    time_t now = time(NULL);
    if (at <= now)
        return 0;
    int64_t ms = (int64_t)(at - now) * 1000;
    return ms > HP_RETRY_AFTER_MAX_MS ? HP_RETRY_AFTER_MAX_MS : ms;
}

/* ---- call table ---- */

static hp_call *hp_lookup(hp_provider *p, uint64_t id)
{
    uint32_t low = (uint32_t)(id & 0xffffffffu);
    if (low == 0 || low > p->n_slots)
        return NULL;
    hp_call *c = p->slots[low - 1];
    return c && c->id == id ? c : NULL;
}

static int hp_slot_take(hp_provider *p, hp_call *c)
{
    uint32_t slot;
    if (p->n_free) {
        slot = p->free_slots[--p->n_free];
    } else {
        if (p->n_slots == p->cap_slots) {
            if (p->cap_slots >= 0x7fffffffu)
                return -1;
            uint32_t cap = p->cap_slots ? p->cap_slots * 2 : 16;
            hp_call **ns = realloc(p->slots, cap * sizeof *ns);
            if (!ns)
                return -1;
            p->slots = ns;
            uint32_t *nf = realloc(p->free_slots, cap * sizeof *nf);
            if (!nf)
                return -1;
            p->free_slots = nf;
            p->cap_slots = cap;
        }
        slot = p->n_slots++;
    }
    p->slots[slot] = c;
    c->slot = slot;
    if (++p->gen == 0)
        p->gen = 1;
    c->id = ((uint64_t)p->gen << 32) | (uint64_t)(slot + 1);
    return 0;
}

/* Frees a call whose transfer is no longer lent to the loop. */
static void hp_call_free(hp_call *c)
{
    if (!c)
        return;
    hp_provider *p = c->p;
    if (c->id) {
        p->slots[c->slot] = NULL;
        p->free_slots[p->n_free++] = c->slot;
    }
    if (c->easy) {
        if (!p->closing && p->n_easy_pool < (int)(sizeof p->easy_pool / sizeof p->easy_pool[0])) {
            curl_easy_reset(c->easy);
            p->easy_pool[p->n_easy_pool++] = c->easy;
        } else {
            curl_easy_cleanup(c->easy);
        }
    }
    curl_slist_free_all(c->own_headers);
    free(c->body);
    free(c->errbody);
    if (c->st && !p->closing &&
        p->n_call_pool < (int)(sizeof p->call_pool / sizeof p->call_pool[0])) {
        ac_stream_reset(c->st, NULL);
        p->call_pool[p->n_call_pool++] = c;
        return;
    }
    ac_stream_free(c->st);
    free(c);
}

/* A zeroed call, from the pool (its stream kept) or new; NULL when out of memory. */
static hp_call *hp_call_new(hp_provider *p)
{
    if (!p->n_call_pool)
        return calloc(1, sizeof(hp_call));
    hp_call *c = p->call_pool[--p->n_call_pool];
    ac_stream *st = c->st;
    memset(c, 0, sizeof *c);
    c->st = st;
    return c;
}

/* ---- posting ---- */

/* ---- stream sink: one llm.delta per delta ---- */

/* A delta of text, reasoning or refusal: queued typed, its bytes copied once (the event
 * queued most often: no JSON is made for it, session/payload.h). */
static void hp_delta(hp_call *c, enum ac_delta_kind kind, const char *s, size_t n)
{
    if (!c->done)
        ac_session_enqueue_delta(c->s, c->p->ev_delta, (int)kind, s, n, c->origin);
}

static void hp_on_text(void *ud, const char *s, size_t n)
{
    hp_delta(ud, AC_DELTA_TEXT, s, n);
}

static void hp_on_reasoning(void *ud, const char *s, size_t n)
{
    hp_delta(ud, AC_DELTA_REASONING, s, n);
}

static void hp_on_refusal(void *ud, const char *s, size_t n)
{
    hp_delta(ud, AC_DELTA_REFUSAL, s, n);
}

static int hp_known_tool(void *conv, const char *display)
{
    return ac_conv_find_tool_def(conv, display) != NULL;
}

/* name, or the display name "prefix::tool" of the wire name "prefix__tool" in buf. */
static const char *hp_tool_name(const hp_call *c, const char *name, char *buf, size_t cap)
{
    if (c->conv && name && strstr(name, "__") &&
        ac_toolname_from_wire(name, hp_known_tool, (void *)c->conv, buf, cap) == 1)
        return buf;
    return name;
}

static void hp_on_tool(void *ud, int index, const char *id, const char *name, const char *args,
                       size_t n)
{
    hp_call *c = ud;
    char display[160];
    name = hp_tool_name(c, name, display, sizeof display);
    if (!c->done) /* typed, as the other deltas */
        ac_session_enqueue_tool_delta(c->s, c->p->ev_delta, index, id, name, args, n, c->origin);
}

/* The call's stream parser, made when the answer's first bytes come, not when the call
 * starts: a call waiting for its answer holds none (docs/design.md, memory in flight).
 * NULL when out of memory. */
static ac_stream *hp_stream(hp_call *c)
{
    if (!c->st) {
        ac_stream_sink sink = {c, hp_on_text, hp_on_reasoning, hp_on_refusal, hp_on_tool};
        c->st = ac_stream_new(c->p->wire, &sink, 0);
    }
    return c->st;
}

/* ---- curl callbacks ---- */

static int hp_is_2xx(long status)
{
    return status >= 200 && status < 300;
}

static size_t hp_on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
    hp_call *c = ud;
    size_t n = size * nmemb;
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        /* a new response (after 100 Continue, for instance): start over */
        c->retry_after_ms = -1;
        c->reason[0] = '\0';
        c->json_type = 0;
        const char *sp = memchr(ptr, ' ', n);
        if (sp)
            sp = memchr(sp + 1, ' ', n - (size_t)(sp + 1 - ptr));
        if (sp) {
            size_t rl = n - (size_t)(sp + 1 - ptr);
            while (rl && (sp[rl] == '\r' || sp[rl] == '\n'))
                rl--;
            hp_snippet(sp + 1, rl, c->reason, sizeof c->reason);
        }
        return n;
    }
    const char *colon = memchr(ptr, ':', n);
    if (!colon)
        return n;
    size_t nl = (size_t)(colon - ptr);
    if (nl == 12 && strncasecmp(ptr, "content-type", 12) == 0) {
        const char *v = colon + 1;
        size_t vl = n - nl - 1;
        while (vl && (*v == ' ' || *v == '\t')) {
            v++;
            vl--;
        }
        c->json_type = vl >= 16 && strncasecmp(v, "application/json", 16) == 0;
        return n;
    }
    int ms = nl == 14 && strncasecmp(ptr, "retry-after-ms", 14) == 0;
    if (ms || (nl == 11 && strncasecmp(ptr, "retry-after", 11) == 0)) {
        char v[128];
        size_t vl = n - nl - 1;
        if (vl >= sizeof v)
            vl = sizeof v - 1;
        memcpy(v, colon + 1, vl);
        v[vl] = '\0';
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            v[--vl] = '\0';
        int64_t r = hp_parse_retry_after(v, ms);
        /* retry-after-ms is more precise: it wins over retry-after */
        if (r >= 0 && (ms || c->retry_after_ms < 0))
            c->retry_after_ms = r;
    }
    return n;
}

/* The request body is not needed once it is all sent and the final
 * response's body has begun: libcurl re-sends a body only on a redirect
 * (not followed here), for an authentication round or when a reused
 * connection dies before any answer. A long conversation's body is the
 * largest thing a call in flight holds. */
static void hp_drop_body(hp_call *c)
{
    curl_off_t sent = 0;
    if (c->body && curl_easy_getinfo(c->easy, CURLINFO_SIZE_UPLOAD_T, &sent) == CURLE_OK &&
        sent >= 0 && (size_t)sent >= c->body_len) {
        free(c->body);
        c->body = NULL;
    }
}

static size_t hp_on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    hp_call *c = ud;
    size_t n = size * nmemb;
    if (!c->status) {
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
        c->json_body = hp_is_2xx(c->status) && c->json_type;
    }
    if (c->body)
        hp_drop_body(c);
    if (!hp_is_2xx(c->status) || c->json_body) {
        ac_http_progress(c->p->loop, c->xfer);
        size_t room = HP_ERROR_BODY_CAP - c->errlen;
        size_t take = n < room ? n : room;
        if (take) {
            if (!c->errbody && !(c->errbody = malloc(HP_ERROR_BODY_CAP + 1)))
                return n; /* the message falls back to the status line */
            memcpy(c->errbody + c->errlen, ptr, take);
            c->errlen += take;
            c->errbody[c->errlen] = '\0';
        }
        return n;
    }
    if (!c->started) {
        c->started = 1;
        if (!c->done) /* {}: queued typed, no JSON made */
            ac_session_enqueue_empty(c->s, c->p->ev_started, c->origin);
    }
    if (!hp_stream(c)) {
        c->abort_rc = AC_STREAM_ERR_NOMEM;
        return 0;
    }
    size_t events = ac_stream_events(c->st);
    int rc = ac_stream_feed(c->st, ptr, n);
    /* Only a real event is progress for the stall check: keep-alive comments are not. */
    if (ac_stream_events(c->st) != events)
        ac_http_progress(c->p->loop, c->xfer);
    if (rc != AC_STREAM_OK) {
        c->abort_rc = rc;
        return 0;
    }
    return n;
}

/* ---- the end of a call ---- */

/* Builds the message of a non-2xx response from its body: the shapes used by OpenAI
 * ({"error": {"message", "type", "code"}}), Anthropic ({"type": "error", "error": {...}}),
 * and common servers ({"error": "text"}, {"message"}, {"detail"}, [{"error": ...}]). */
/* *quota: the account is out of credit (retrying cannot help); *transient: a rate limit or an
 * overloaded server said so in the body (retrying later can). */
static int hp_error_detail(hp_call *c, char *detail, size_t cap, int *quota, int *transient)
{
    int found = 0;
    detail[0] = '\0';
    *quota = 0;
    if (transient)
        *transient = 0;
    if (c->errlen) {
        /* the body cap may cut a secret: hp_scrub_all masks the rest of it too */
        c->errlen = hp_scrub_all(c->errbody, c->errlen, HP_ERROR_BODY_CAP + 1, c->p->secrets);
    }
    json_t *root = c->errlen ? json_loadb(c->errbody, c->errlen, 0, NULL) : NULL;
    json_t *obj = root;
    if (json_is_array(obj))
        obj = json_array_get(obj, 0);
    if (json_is_object(obj)) {
        json_t *err = json_object_get(obj, "error");
        const char *msg = NULL, *type = NULL, *code = NULL;
        if (json_is_object(err)) {
            msg = json_string_value(json_object_get(err, "message"));
            type = json_string_value(json_object_get(err, "type"));
            code = json_string_value(json_object_get(err, "code"));
            if (!type && json_is_string(json_object_get(err, "status")))
                type = json_string_value(json_object_get(err, "status"));
        } else if (json_is_string(err)) {
            msg = json_string_value(err);
        }
        if (!msg)
            msg = json_string_value(json_object_get(obj, "message"));
        if (!msg)
            msg = json_string_value(json_object_get(obj, "detail"));
        if (msg) {
            char m[HP_SNIPPET_CAP + 1];
            hp_snippet(msg, strlen(msg), m, sizeof m);
            const char *tag = type && *type ? type : code && *code ? code : NULL;
            if (tag)
                snprintf(detail, cap, "%s (%.40s)", m, tag);
            else
                snprintf(detail, cap, "%s", m);
            found = 1;
        }
        if ((type && strcmp(type, "insufficient_quota") == 0) ||
            (code && strcmp(code, "insufficient_quota") == 0))
            *quota = 1;
        else if (transient)
            for (int k = 0; k < 2; k++) {
                const char *t = k ? code : type;
                if (t && (strstr(t, "rate_limit") || strstr(t, "overloaded")))
                    *transient = 1;
            }
    }
    json_decref(root);
    return found;
}

static void hp_http_message(hp_call *c, char *out, size_t cap, int *quota)
{
    char detail[HP_SNIPPET_CAP + 64];
    if (!hp_error_detail(c, detail, sizeof detail, quota, NULL) && c->errlen)
        hp_snippet(c->errbody, c->errlen, detail,
                   sizeof detail < HP_SNIPPET_CAP + 1 ? sizeof detail : HP_SNIPPET_CAP + 1);
    if (!detail[0])
        snprintf(detail, sizeof detail, "%s", c->reason[0] ? c->reason : "(empty response)");
    snprintf(out, cap, "HTTP %ld from %s: %s", c->status, c->p->shown, detail);
}

static int hp_status_retryable(long status)
{
    if (status == 408 || status == 429)
        return 1;
    return status >= 500 && status != 501 && status != 505;
}

/* What hp_classify found: the failure's class, whether a retry may help and
 * when, and the message. */
typedef struct hp_verdict {
    const char *cls;
    int retry;
    int64_t retry_after;
    char msg[HP_MESSAGE_CAP];
} hp_verdict;

/* A 2xx JSON document where an event stream was asked for. */
static void hp_classify_json_body(hp_call *c, const char *url, hp_verdict *v)
{
    int quota, transient;
    char detail[HP_SNIPPET_CAP + 64];
    v->cls = "protocol";
    if (hp_error_detail(c, detail, sizeof detail, &quota, &transient)) {
        snprintf(v->msg, sizeof v->msg, "error from %s: %s", url, detail);
        if (transient) { /* a rate limit or overload sent as HTTP 200: like a 429 / 529 */
            v->cls = "http";
            v->retry = 1;
            v->retry_after = c->retry_after_ms;
        }
    } else
        snprintf(v->msg, sizeof v->msg,
                 "expected an event stream from %s, got application/json (does the server "
                 "support streaming?)",
                 url);
}

static void hp_classify_connect(hp_call *c, const char *url, const char *cerr, hp_verdict *v)
{
    long os_errno = 0;
    curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &os_errno);
    v->cls = "connect";
    v->retry = 1;
    if (os_errno == EMFILE || os_errno == ENFILE) { /* not the server's fault */
        struct rlimit rl;
        long lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (long)rl.rlim_cur : -1;
        snprintf(v->msg, sizeof v->msg,
                 "cannot connect to %s: too many open files (this process may have %ld; "
                 "raise ulimit -n or lower the concurrency)",
                 url, lim);
    } else {
        snprintf(v->msg, sizeof v->msg, "cannot connect to %s: %s", url, cerr);
    }
}

/* Which timeout: the whole call's, name resolution, connecting, or a stall. */
static void hp_classify_timeout(hp_call *c, const char *url, hp_verdict *v)
{
    curl_off_t conn = 0;
    curl_off_t total = 0;
    curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &conn);
    curl_easy_getinfo(c->easy, CURLINFO_TOTAL_TIME_T, &total);
    v->retry = 1;
    if (c->call_ms > 0 && total / 1000 >= c->call_ms) {
        v->cls = "timeout";
        snprintf(v->msg, sizeof v->msg, "no complete answer from %s within %lld ms (call_timeout)",
                 url, (long long)c->call_ms);
    } else if (conn == 0 && strncmp(c->errbuf, "Resolving timed out", 19) == 0) {
        /* the connect timeout covers name resolution too */
        v->cls = "dns";
        snprintf(v->msg, sizeof v->msg, "resolving the host of %s timed out after %lld ms", url,
                 (long long)c->connect_ms);
    } else if (conn == 0) {
        v->cls = "timeout";
        snprintf(v->msg, sizeof v->msg, "connecting to %s timed out after %lld ms", url,
                 (long long)c->connect_ms);
    } else {
        v->cls = "stall";
        snprintf(v->msg, sizeof v->msg, "no data from %s for %lld ms", url, (long long)c->stall_ms);
    }
}

/* A transfer libcurl ended with an error. */
static void hp_classify_curl(hp_call *c, CURLcode rc, const char *url, hp_verdict *v)
{
    const char *cerr = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        v->cls = "dns";
        v->retry = 1;
        snprintf(v->msg, sizeof v->msg, "cannot resolve the host of %s: %s", url, cerr);
        break;
    case CURLE_COULDNT_CONNECT:
        hp_classify_connect(c, url, cerr, v);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        hp_classify_timeout(c, url, v);
        break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        v->retry = 1;
        v->cls = c->started ? "stream" : "connect";
        snprintf(v->msg, sizeof v->msg, "%s %s: %s",
                 c->started ? "connection lost while streaming from" : "connection failed to", url,
                 cerr);
        break;
    case CURLE_OUT_OF_MEMORY:
        /* curl says "Out of memory" for a response header past its size limit too */
        v->cls = "protocol";
        snprintf(v->msg, sizeof v->msg,
                 "request to %s failed: %s (libcurl reports this for a response header "
                 "larger than its limit, %d KB, as well as for a real lack of memory)",
                 url, cerr, CURL_MAX_HTTP_HEADER / 1024);
        break;
    default:
        v->cls = "connect";
        snprintf(v->msg, sizeof v->msg, "request to %s failed: %s", url, cerr);
        break;
    }
}

/* 2xx and the body ended: what did the stream say? */
static void hp_classify_stream_end(hp_call *c, const char *url, hp_verdict *v)
{
    int frc = c->finish_rc;
    const ac_stream_turn *t = ac_stream_turn_get(c->st);
    if (frc == AC_STREAM_ERR_PROVIDER) {
        v->cls = "stream";
        v->retry = t->error_retryable || ac_stream_error_retryable(c->st);
        char m[HP_SNIPPET_CAP + 1];
        const char *em = t->error_message ? t->error_message : ac_stream_error(c->st);
        hp_snippet(em, strlen(em), m, sizeof m);
        if (t->error_type)
            snprintf(v->msg, sizeof v->msg, "error from %s: %s (%.40s)", url, m, t->error_type);
        else
            snprintf(v->msg, sizeof v->msg, "error from %s: %s", url, m);
    } else if (frc == AC_STREAM_ERR_TRUNCATED) {
        v->cls = "stream";
        v->retry = 1;
        snprintf(v->msg, sizeof v->msg, "the response stream from %s ended without its terminator",
                 url);
    } else {
        v->cls = frc == AC_STREAM_ERR_NOMEM ? "stream" : "protocol";
        snprintf(v->msg, sizeof v->msg, "bad response stream from %s: %s", url,
                 ac_stream_error(c->st));
    }
}

/* Classifies a transfer that did not end in a readable 2xx stream: the llm.failed verdict in
 * *out (c->status its status). */
static void hp_classify(hp_call *c, CURLcode rc, hp_verdict *out)
{
    const char *url = c->p->shown;
    hp_verdict v = {.cls = "connect", .retry = 0, .retry_after = -1};
    long status = c->status;
    if (!status)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    c->status = status;
    if (status && !hp_is_2xx(status)) {
        int quota;
        hp_http_message(c, v.msg, sizeof v.msg, &quota);
        v.cls = "http";
        v.retry = hp_status_retryable(status) && !quota;
        v.retry_after = c->retry_after_ms;
    } else if (c->json_body) {
        hp_classify_json_body(c, url, &v);
    } else if (c->abort_rc != 0) {
        /* the write callback stopped on a stream error */
        const char *se = ac_stream_error(c->st);
        v.cls = c->abort_rc == AC_STREAM_ERR_NOMEM ? "stream" : "protocol";
        snprintf(v.msg, sizeof v.msg, "bad response stream from %s: %s", url,
                 se && *se ? se : "unreadable stream");
    } else if (rc != CURLE_OK) {
        hp_classify_curl(c, rc, url, &v);
    } else {
        hp_classify_stream_end(c, url, &v);
    }
    hp_scrub(v.msg, sizeof v.msg, c->p->secrets);
    *out = v;
}

/* A token count from the call's options, within int. */
static int hp_clamp_int(int64_t v)
{
    return v < 0 ? 0 : v > INT_MAX ? INT_MAX : (int)v;
}

/* The model's reply as the stream assembled it: views into the stream; the calls in *calls,
 * malloc'ed with their display names after them, and the thinking blocks in *blocks (NULL when
 * none). 0, or -1 when out of memory. */
static int hp_completed(hp_call *c, ac_completion *r, ac_payload_call **calls,
                        ac_payload_thinking **blocks)
{
    const ac_stream_turn *t = ac_stream_turn_get(c->st);
    size_t n = t->n_tool_calls, nb = t->n_thinking_blocks;
    *calls = n ? malloc(n * (sizeof **calls + 160)) : NULL;
    *blocks = nb ? malloc(nb * sizeof **blocks) : NULL;
    if ((n && !*calls) || (nb && !*blocks))
        return -1;
    *r = (ac_completion){.content = t->text,
                         .content_n = t->text_len,
                         .reasoning = t->reasoning,
                         .reasoning_n = t->reasoning_len,
                         .refusal = t->refusal,
                         .refusal_n = t->refusal_len,
                         .calls = *calls,
                         .n_calls = n,
                         .finish_reason = t->finish_reason,
                         .has_usage = 1,
                         .input = t->input_tokens,
                         .output = t->output_tokens,
                         .cached = t->cached_tokens,
                         .cache_write = t->cache_write_tokens,
                         .reasoning_tokens = t->reasoning_tokens,
                         .response_id = t->response_id,
                         .response_model = t->response_model,
                         .blocks = *blocks,
                         .n_blocks = nb};
    char(*display)[160] = n ? (char(*)[160])(*calls + n) : NULL;
    for (size_t i = 0; i < n; i++) {
        const ac_tool_call_acc *tc = &t->tool_calls[i];
        /* "prefix__tool" is recorded (and journaled) as the tool "prefix::tool" */
        const char *name = hp_tool_name(c, tc->name, display[i], sizeof display[i]);
        (*calls)[i] = (ac_payload_call){.id = tc->id,
                                        .id_n = strlen(tc->id),
                                        .name = name,
                                        .name_n = strlen(name),
                                        .arguments = tc->arguments,
                                        .arguments_n = tc->arguments_len};
    }
    /* Anthropic thinking blocks, in the shape they are sent back in */
    for (size_t i = 0; i < nb; i++) {
        const ac_thinking_block *b = &t->thinking_blocks[i];
        (*blocks)[i] = b->data ? (ac_payload_thinking){.data = b->data, .data_n = strlen(b->data)}
                               : (ac_payload_thinking){.thinking = b->thinking,
                                                       .thinking_n = b->thinking_len,
                                                       .signature = b->signature,
                                                       .signature_n = strlen(b->signature)};
    }
    return 0;
}

/* Queues the reply as a typed llm.completed (no JSON made). */
static void hp_post_completed(hp_call *c, ac_session *s, uint16_t ev, uint16_t origin)
{
    ac_completion r;
    ac_payload_call *calls;
    ac_payload_thinking *blocks;
    if (hp_completed(c, &r, &calls, &blocks) == 0)
        ac_session_enqueue_completion(s, ev, &r, origin);
    else /* out of memory: the event still comes, without its reply */
        ac_session_enqueue(s, ev, NULL, 0, origin);
    free(calls);
    free(blocks);
}

static void hp_fail_start(hp_provider *p, ac_session *s, uint16_t origin, const char *cls,
                          const char *fmt, ...);

/* A call ended with no memory to read its answer: failed like one that cannot start. */
static void hp_fail_oom(hp_call *c)
{
    hp_provider *p = c->p;
    ac_session *s = c->s;
    uint16_t origin = c->origin;
    ac_llm_done_fn done = c->done;
    void *done_ud = c->done_ud;
    hp_call_free(c);
    if (done)
        done(done_ud, 0, "out of memory");
    else
        hp_fail_start(p, s, origin, "stream", "out of memory reading the answer of %s", p->shown);
}

static void hp_on_done(void *ud, CURL *easy, CURLcode rc)
{
    hp_call *c = ud;
    (void)easy;
    c->xfer = 0;
    if (!hp_stream(c)) { /* an answer without a body has an empty stream */
        hp_fail_oom(c);
        return;
    }
    hp_verdict v;
    int ok = 0;
    if (!c->status)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
    c->finish_rc = AC_STREAM_ERR_TRUNCATED;
    /* a connection that drops after the stream's terminator lost nothing:
     * the turn is complete, not something to retry */
    int dropped_after_end =
        (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING) &&
        ac_stream_turn_get(c->st)->terminated;
    int streamed = (rc == CURLE_OK || dropped_after_end) && c->abort_rc == 0 &&
                   hp_is_2xx(c->status) && !c->json_body;
    if (streamed)
        c->finish_rc = ac_stream_finish(c->st);
    if (streamed && c->finish_rc == AC_STREAM_OK)
        ok = 1;
    else
        hp_classify(c, rc, &v);
    hp_provider *p = c->p;
    ac_session *s = c->s;
    if (c->done) {
        ac_llm_done_fn done = c->done;
        void *done_ud = c->done_ud;
        const ac_stream_turn *t = ac_stream_turn_get(c->st);
        char *copy = ok ? ac_utf8_repair(t->text, t->text_len, AC_UTF8_KEEP_NUL, NULL)
                        : ac_utf8_repair(v.msg, strlen(v.msg), AC_UTF8_KEEP_NUL, NULL);
        hp_call_free(c);
        done(done_ud, ok, copy ? copy : "");
        free(copy);
        return;
    }
    uint16_t origin = c->origin;
    long status = c->status;
    if (ok) /* the stream's buffers hold the reply until it is queued */
        hp_post_completed(c, s, p->ev_completed, origin);
    hp_call_free(c);
    if (!ok)
        ac_session_enqueue_failure(s, p->ev_failed, v.cls, status, v.retry, v.retry_after, v.msg,
                                   origin);
}

/* ---- the provider interface ---- */

/* A call that cannot start fails through the queue like any other (raised: the start
 * handler runs inside a dispatch). */
static void hp_fail_start(hp_provider *p, ac_session *s, uint16_t origin, const char *cls,
                          const char *fmt, ...)
{
    char msg[HP_MESSAGE_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hp_scrub(msg, sizeof msg, p->secrets);
    ac_session_enqueue_failure(s, p->ev_failed, cls, 0, 0, -1, msg, origin);
}

/* The request body of call c: the conversation with the call's options (a
 * summary, done set, is asked without tools, thinking or output schema).
 * NULL with err filled when it cannot be built. */
static char *hp_body(hp_provider *p, const ac_conv *conv, const ac_llm_call_opts *opts, int summary,
                     char *err, size_t errcap)
{
    ac_request_opts ro = {0};
    ro.model = p->model;
    ro.stream = 1;
    ro.max_tokens = hp_clamp_int(opts ? opts->max_tokens : 0);
    /* extended thinking for the turns of the conversation, not for summaries */
    ro.thinking_budget = summary ? 0 : hp_clamp_int(opts ? opts->thinking_budget : 0);
    /* structured output for the turns of the conversation, not for summaries */
    ro.output_schema = summary || !opts ? NULL : opts->output_schema;
    if (!summary && opts) {
        ro.tool_offer = opts->tool_offer;
        ro.tool_offer_ud = opts->tool_offer_ud;
    }
    ro.context_note = summary || !opts ? NULL : opts->context_note;
    /* a summary is asked of a conversation without tools: no tool settings */
    ac_request_settings st = {0};
    if (p->settings) {
        st = *p->settings;
        if (summary) {
            st.tool_choice = NULL;
            st.parallel_tool_calls = 0;
        }
        ro.settings = &st;
    }
    err[0] = '\0';
    return p->kind == AC_PROVIDER_ANTHROPIC ? ac_request_anthropic(conv, &ro, err, errcap)
                                            : ac_request_openai(conv, &ro, err, errcap);
}

/* The call's headers: the provider's, and a traceparent when the session is traced (a copy
 * of the list, the call's own). */
static struct curl_slist *hp_headers(hp_provider *p, hp_call *c)
{
    char tp[80] = "traceparent: ";
    if (!c->s || !ac_session_traceparent(c->s, tp + 13, sizeof tp - 13))
        return p->headers;
    curl_slist_free_all(c->own_headers);
    c->own_headers = NULL;
    for (const struct curl_slist *l = p->headers; l; l = l->next) {
        struct curl_slist *n = curl_slist_append(c->own_headers, l->data);
        if (!n) {
            curl_slist_free_all(c->own_headers);
            c->own_headers = NULL;
            return p->headers;
        }
        c->own_headers = n;
    }
    struct curl_slist *n = curl_slist_append(c->own_headers, tp);
    if (n)
        c->own_headers = n;
    return c->own_headers;
}

/* The transfer's options: URL, body, headers, buffers, timeouts, callbacks. */
static void hp_setopts(hp_provider *p, hp_call *c)
{
    CURL *h = c->easy;
    curl_easy_setopt(h, CURLOPT_URL, p->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
    c->body_len = strlen(c->body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hp_headers(p, c));
    curl_easy_setopt(h, CURLOPT_USERAGENT, "agentc/" AGENTC_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, HP_RECV_BUFFER);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    /* PIPEWAIT makes a new transfer wait for a busy connection to the same host
     * in case it turns out to multiplex. HTTP/2 is only negotiated over TLS
     * (2TLS, ALPN), so over http:// no connection ever multiplexes: waiting
     * would only serialise the calls (libcurl 7.88 waits for each whole
     * response when the server sends Connection: close). */
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, p->tls ? 1L : 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (c->connect_ms > 0)
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_ms);
    if (c->call_ms > 0) /* the whole call: connect, headers, body */
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->call_ms);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, hp_on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hp_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
}

/* A session call (done NULL: events posted to s) or a one-off completion
 * of `conv` (done set: failures to start return 0 and post nothing). */
static uint64_t hp_begin(hp_provider *p, ac_session *s, const ac_conv *conv,
                         const ac_llm_call_opts *opts, ac_llm_done_fn done, void *ud)
{
    char err[256];
    uint16_t origin = opts ? opts->origin : 0;
    hp_call *c = hp_call_new(p);
    if (c)
        c->p = p;
    if (!c || hp_slot_take(p, c) != 0) {
        if (c)
            hp_call_free(c);
        if (!done)
            hp_fail_start(p, s, origin, "protocol", "out of memory starting a call to %s",
                          p->shown);
        return 0;
    }
    c->p = p;
    c->s = s;
    c->conv = done ? NULL : conv;
    c->origin = origin;
    c->done = done;
    c->done_ud = ud;
    c->retry_after_ms = -1;
    c->connect_ms = opts ? opts->connect_timeout_ms : 0;
    c->stall_ms = opts ? opts->stall_timeout_ms : 0;
    c->call_ms = opts ? opts->call_timeout_ms : 0;
    c->body = hp_body(p, conv, opts, done != NULL, err, sizeof err);
    if (!c->body) {
        if (!done)
            hp_fail_start(p, s, origin, "protocol", "cannot build the request to %s: %s", p->shown,
                          err[0] ? err : "out of memory");
        goto fail;
    }
    if (c->st) { /* a kept call's stream: its sink is this call's (else made at the answer) */
        ac_stream_sink sink = {c, hp_on_text, hp_on_reasoning, hp_on_refusal, hp_on_tool};
        ac_stream_reset(c->st, &sink);
    }
    c->easy = p->n_easy_pool ? p->easy_pool[--p->n_easy_pool] : curl_easy_init();
    if (!c->easy) {
        if (!done)
            hp_fail_start(p, s, origin, "protocol", "out of memory starting a call to %s",
                          p->shown);
        goto fail;
    }
    hp_setopts(p, c);
    c->xfer = ac_http_start(p->loop, c->easy, hp_on_done, c);
    if (!c->xfer) {
        if (!done)
            hp_fail_start(p, s, origin, "connect", "cannot start the request to %s", p->shown);
        goto fail;
    }
    if (c->stall_ms > 0) {
        ac_http_set_stall_timeout(p->loop, c->xfer, c->stall_ms);
        ac_http_report_progress(p->loop, c->xfer); /* events and error bytes, see hp_on_write */
    }
    return c->id;
fail:
    hp_call_free(c);
    return 0;
}

static uint64_t hp_start(ac_provider *base, ac_session *s, const ac_llm_call_opts *opts)
{
    return hp_begin((hp_provider *)base, s, ac_session_conv(s), opts, NULL, NULL);
}

static uint64_t hp_complete(ac_provider *base, ac_session *s, const ac_conv *conv,
                            const ac_llm_call_opts *opts, ac_llm_done_fn done, void *ud)
{
    if (!done || !conv)
        return 0;
    return hp_begin((hp_provider *)base, s, conv, opts, done, ud);
}

static void hp_cancel(ac_provider *base, uint64_t id)
{
    hp_provider *p = (hp_provider *)base;
    hp_call *c = hp_lookup(p, id);
    if (!c)
        return;
    if (c->xfer && ac_http_cancel(p->loop, c->xfer) == AC_HTTP_CANCEL_REFUSED)
        return; /* inside curl, which the session's queue rules out: kept rather than freed */
    c->xfer = 0;
    hp_call_free(c);
}

static void hp_free(ac_provider *base)
{
    hp_provider *p = (hp_provider *)base;
    if (!p)
        return;
    p->closing = 1;
    while (p->n_easy_pool)
        curl_easy_cleanup(p->easy_pool[--p->n_easy_pool]);
    while (p->n_call_pool) {
        hp_call *c = p->call_pool[--p->n_call_pool];
        ac_stream_free(c->st);
        free(c);
    }
    for (uint32_t i = 0; i < p->n_slots; i++) {
        hp_call *c = p->slots[i];
        if (!c)
            continue;
        if (c->xfer)
            ac_http_cancel(p->loop, c->xfer);
        c->xfer = 0;
        hp_call_free(c);
    }
    free(p->slots);
    free(p->free_slots);
    curl_slist_free_all(p->headers);
    if (p->key) {
        volatile char *k = p->key;
        for (size_t i = 0; k[i]; i++)
            k[i] = 0;
    }
    free(p->key);
    ac_secrets_free(p->secrets);
    free(p->url);
    free(p->shown);
    free(p->model);
    ac_request_settings_free(p->settings);
    free(p);
}

static int hp_add_header(hp_provider *p, const char *line)
{
    struct curl_slist *n = curl_slist_append(p->headers, line);
    if (!n)
        return -1;
    p->headers = n;
    return 0;
}

/* What the provider needs from the engine and the configuration, checked;
 * the base URL (the option, the environment's, or the default), or NULL
 * with err filled. */
static const char *hp_check_config(ac_engine *e, int kind, const ac_engine_config *cfg,
                                   const char *pname, char *err, size_t errcap)
{
    if (!ac_engine_loop(e)) {
        snprintf(err, errcap, "the %s provider needs an event loop", pname);
        return NULL;
    }
    if (!cfg->model || !*cfg->model) {
        snprintf(err, errcap, "the %s provider needs a model name (--model or AGENTC_MODEL)",
                 pname);
        return NULL;
    }
    int64_t budget = ac_engine_param_int(e, "thinking_budget", 0);
    if (kind == AC_PROVIDER_ANTHROPIC && budget > 0 && budget < 1024) {
        snprintf(err, errcap,
                 "thinking_budget %lld is below Anthropic's minimum of 1024 tokens (0 turns "
                 "thinking off)",
                 (long long)budget);
        return NULL;
    }
    if (ac_request_settings_check(cfg->request, kind == AC_PROVIDER_ANTHROPIC, err, errcap))
        return NULL;
    const char *base = cfg->base_url && *cfg->base_url ? cfg->base_url : NULL;
    const char *env = kind == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
    if (!base && getenv(env) && *getenv(env))
        base = getenv(env);
    if (!base)
        base = kind == AC_PROVIDER_ANTHROPIC ? HP_ANTHROPIC_DEFAULT_BASE : HP_OPENAI_DEFAULT_BASE;
    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0) {
        char *shown = ac_url_redact_userinfo(base);
        snprintf(err, errcap, "bad %s base URL '%.200s': expected http:// or https://", pname,
                 shown ? shown : "(unprintable)");
        free(shown);
        return NULL;
    }
    if (ac_http_global_init() != 0) {
        snprintf(err, errcap, "libcurl failed to initialize");
        return NULL;
    }
    return base;
}

/* The endpoint's URL (and its form with the credentials hidden). 0, or -1. */
static int hp_set_url(hp_provider *p, const char *base)
{
    p->tls = strncmp(base, "https://", 8) == 0;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    const char *path = p->kind == AC_PROVIDER_ANTHROPIC ? "/v1/messages" : "/chat/completions";
    size_t ul = bl + strlen(path) + 1;
    if (!(p->url = malloc(ul)))
        return -1;
    memcpy(p->url, base, bl);
    memcpy(p->url + bl, path, strlen(path) + 1);
    return (p->shown = ac_url_redact_userinfo(p->url)) ? 0 : -1;
}

/* The headers every request sends: content types, the key, the API version,
 * the extra ones. 0; -1 out of memory; -2 a bad header or key (err says). */
static int hp_set_headers(hp_provider *p, const ac_engine_config *cfg, const char *pname, char *err,
                          size_t errcap)
{
    if (p->key && strpbrk(p->key, "\r\n")) {
        snprintf(err, errcap, "the %s API key contains a line break", pname);
        return -2;
    }
    if (hp_add_header(p, "Content-Type: application/json") ||
        hp_add_header(p, "Accept: text/event-stream") || hp_add_header(p, "Expect:"))
        return -1;
    int anthropic = p->kind == AC_PROVIDER_ANTHROPIC;
    if (p->key) {
        size_t ll = strlen(p->key) + 32;
        char *line = malloc(ll);
        if (!line)
            return -1;
        snprintf(line, ll, "%s%s", anthropic ? "x-api-key: " : "Authorization: Bearer ", p->key);
        int rc = hp_add_header(p, line);
        memset(line, 0, ll);
        free(line);
        if (rc)
            return -1;
    }
    if (anthropic && hp_add_header(p, "anthropic-version: " HP_ANTHROPIC_VERSION))
        return -1;
    for (const char *const *h = cfg->headers; h && *h; h++) {
        /* the header is not quoted back: it may hold a credential */
        if (!strchr(*h, ':') || **h == ':' || strpbrk(*h, "\r\n")) {
            snprintf(err, errcap, "bad extra header #%d: expected 'Name: value' on one line",
                     (int)(h - cfg->headers) + 1);
            return -2;
        }
        if (hp_add_header(p, *h))
            return -1;
    }
    return 0;
}

ac_provider *ac_provider_http_new(ac_engine *e, int kind, const ac_engine_config *cfg, char *err,
                                  size_t errcap)
{
    const char *pname = kind == AC_PROVIDER_ANTHROPIC ? "Anthropic" : "OpenAI-compatible";
    if (kind != AC_PROVIDER_OPENAI && kind != AC_PROVIDER_ANTHROPIC) {
        snprintf(err, errcap, "unknown HTTP provider kind %d", kind);
        return NULL;
    }
    const char *base = hp_check_config(e, kind, cfg, pname, err, errcap);
    if (!base)
        return NULL;
    hp_provider *p = calloc(1, sizeof *p);
    if (!p)
        goto nomem;
    p->base.name = kind == AC_PROVIDER_ANTHROPIC ? "anthropic" : "openai";
    p->base.start = hp_start;
    p->base.complete = hp_complete;
    p->base.cancel = hp_cancel;
    p->base.free = hp_free;
    p->e = e;
    p->loop = ac_engine_loop(e);
    p->kind = kind;
    p->wire = kind == AC_PROVIDER_ANTHROPIC ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI;
    p->ev_started = ac_engine_event_index(e, "llm.started");
    p->ev_delta = ac_engine_event_index(e, "llm.delta");
    p->ev_completed = ac_engine_event_index(e, "llm.completed");
    p->ev_failed = ac_engine_event_index(e, "llm.failed");
    if (p->ev_started == AC_FSM_NONE || p->ev_delta == AC_FSM_NONE ||
        p->ev_completed == AC_FSM_NONE || p->ev_failed == AC_FSM_NONE) {
        snprintf(err, errcap,
                 "the spec lacks the events llm.started, llm.delta, llm.completed and "
                 "llm.failed the %s provider posts",
                 pname);
        goto fail;
    }
    if (hp_set_url(p, base) ||
        !(p->secrets = ac_secrets_collect(cfg->api_key, base, cfg->headers)) ||
        !(p->model = hp_strdup(cfg->model)) ||
        (cfg->request && !(p->settings = ac_request_settings_dup(cfg->request))) ||
        (cfg->api_key && *cfg->api_key && !(p->key = hp_strdup(cfg->api_key))))
        goto nomem;
    int hr = hp_set_headers(p, cfg, pname, err, errcap);
    if (hr == -1)
        goto nomem;
    if (hr)
        goto fail;
    return &p->base;
nomem:
    snprintf(err, errcap, "out of memory");
fail:
    hp_free(p ? &p->base : NULL);
    return NULL;
}
