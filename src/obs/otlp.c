/*
 * otlp.c - the OTLP/HTTP JSON exporter: a bounded queue of ended spans, batched POSTs on the
 * loop's curl multi (io/http.h), Retry-After, drops counted, a bounded flush at shutdown.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/version.h"
#include "io/http.h"
#include "io/loop.h"
#include "obs/obs.h"
#include "obs/span.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/json_text.h"

#define POOL 256        /* blank spans kept for new ones */
#define INTERN_CAP 8192 /* texts interned (ac_tracer_intern), half of them at most */

/* A batch's export document: the text, and the spans in it */
typedef struct batch {
    ac_buf text;
    size_t spans;
} batch;

struct ac_tracer {
    ac_loop *loop;
    char *url;
    struct curl_slist *headers;
    json_t *resource; /* {"attributes": [...]} */
    int capture;
    char *prefix; /* the export document up to its spans */
    size_t prefix_n;
    size_t queue_max, batch_max;
    int64_t delay_ms, timeout_ms;
    uint64_t dropped, exported, bytes;
    int64_t longest_us; /* the longest export step (a span's text, or starting a POST) */
    uint64_t timer;
    int timer_now;         /* it is a 0 ms timer (for a POST), not a delay's */
    int64_t not_before_ms; /* Retry-After: no POST before this (loop clock) */
    ac_buf open;           /* the batch being filled: each span's text as it ends */
    size_t open_n;         /* spans in it */
    int64_t open_ms;       /* when its first span came (loop clock) */
    batch *ready;          /* whole batches waiting for their POST, oldest first */
    size_t nready, readycap, ready_spans;
    CURL *easy;   /* the one handle of every POST (its connection kept alive) */
    batch flight; /* the POST under way (flight.text.p NULL: none) */
    ac_buf spare; /* the last POST's text, emptied: the next batch's room */
    uint64_t xfer;
    size_t span_bytes;   /* of a span in the last batch, and a margin (a guess before one) */
    ac_span *pool[POOL]; /* blank spans: their memory kept */
    size_t npool;
    char **interned; /* ac_tracer_intern's texts, an open-addressing set of INTERN_CAP */
    size_t ninterned;
};

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* the loop's own time, not the machine's load */
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void step_took(ac_tracer *t, int64_t t0)
{
    int64_t took = now_us() - t0;
    if (took > t->longest_us)
        t->longest_us = took;
}

/* The batch being filled is whole: it waits for its POST. */
static void seal(ac_tracer *t)
{
    if (!t->open_n)
        return;
    batch b = {t->open, t->open_n};
    memset(&t->open, 0, sizeof t->open);
    t->open_n = 0;
    ac_buf_addstr(&b.text, "]}]}]}");
    t->span_bytes = b.text.n / b.spans + b.text.n / b.spans / 8;
    if (b.text.failed || (t->nready == t->readycap && ac_grow((void **)&t->ready, &t->readycap,
                                                              t->nready + 1, sizeof *t->ready))) {
        ac_buf_free(&b.text);
        t->dropped += b.spans;
        return;
    }
    t->ready[t->nready++] = b;
    t->ready_spans += b.spans;
}

static void on_timer(void *ud);
static void on_done(void *ud, CURL *easy, CURLcode rc);

/* The timer: at once when a batch waits and no POST is under way (never before a Retry-After),
 * else after delay_ms when a batch is being filled. */
static void schedule(ac_tracer *t)
{
    int64_t delay = -1;
    if (t->nready && !t->flight.text.p) {
        int64_t wait = t->not_before_ms - ac_loop_now_ms(t->loop);
        delay = wait > 0 ? wait : 0;
    } else if (t->open_n) {
        delay = t->open_ms + t->delay_ms - ac_loop_now_ms(t->loop);
        delay = delay > 0 ? delay : 0;
    }
    if (delay == 0 && t->timer && !t->timer_now) { /* a delay's timer: now instead */
        ac_loop_cancel_timer(t->loop, t->timer);
        t->timer = 0;
    }
    if (delay >= 0 && !t->timer) {
        t->timer = ac_loop_timer(t->loop, delay, on_timer, t);
        t->timer_now = delay == 0;
    }
}

/* The oldest waiting batch's POST on the loop's multi (outside curl's callbacks). */
static void start_post(ac_tracer *t)
{
    if (t->flight.text.p || !t->nready || ac_loop_now_ms(t->loop) < t->not_before_ms)
        return;
    int64_t t0 = now_us();
    t->flight = t->ready[0];
    memmove(t->ready, t->ready + 1, --t->nready * sizeof *t->ready);
    t->ready_spans -= t->flight.spans;
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->flight.text.p);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)t->flight.text.n);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long)t->timeout_ms);
    curl_easy_setopt(t->easy, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(t->timeout_ms < 10000 ? t->timeout_ms : 10000));
    if (!(t->xfer = ac_http_start(t->loop, t->easy, on_done, t))) {
        t->dropped += t->flight.spans;
        ac_buf_free(&t->flight.text);
        t->flight.spans = 0;
    }
    step_took(t, t0);
}

static void on_timer(void *ud)
{
    ac_tracer *t = ud;
    t->timer = 0;
    if (t->open_n && ac_loop_now_ms(t->loop) - t->open_ms >= t->delay_ms)
        seal(t); /* the delay is up: what was filled goes */
    start_post(t);
    schedule(t);
}

static void on_done(void *ud, CURL *easy, CURLcode rc)
{
    ac_tracer *t = ud;
    long status = 0;
    curl_off_t retry = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &retry);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
        t->exported += t->flight.spans;
        t->bytes += t->flight.text.n;
    } else
        t->dropped += t->flight.spans;
    if ((status == 429 || status == 503) && retry > 0)
        t->not_before_ms = ac_loop_now_ms(t->loop) + (int64_t)(retry > 3600 ? 3600 : retry) * 1000;
    t->xfer = 0;
    if (t->spare.p)
        ac_buf_free(&t->flight.text);
    else { /* kept for the next batch: no new pages to fault in */
        t->spare = t->flight.text;
        ac_buf_clear(&t->spare);
    }
    memset(&t->flight, 0, sizeof t->flight);
    schedule(t);
}

ac_span *ac_tracer_blank(ac_tracer *t)
{
    return t && t->npool ? t->pool[--t->npool] : NULL;
}

void ac_tracer_recycle(ac_tracer *t, ac_span *span)
{
    if (t && t->npool < POOL && ac_span_clear(span))
        t->pool[t->npool++] = span;
    else
        ac_span_free(span);
}

void ac_tracer_add(ac_tracer *t, ac_span *span)
{
    if (!t || !span || t->open_n + t->ready_spans >= t->queue_max) {
        if (t && span)
            t->dropped++;
        ac_tracer_recycle(t, span);
        return;
    }
    int64_t t0 = now_us();
    if (!t->open_n) { /* room for the whole batch at once, by the last one's bytes per span */
        t->open_ms = ac_loop_now_ms(t->loop);
        t->open = t->spare;
        memset(&t->spare, 0, sizeof t->spare);
        if (!t->open.p)
            ac_buf_init(&t->open, AC_BUF_MAX);
        ac_buf_reserve(&t->open, t->prefix_n + 16 + t->batch_max * (t->span_bytes + 64));
        ac_buf_add(&t->open, t->prefix, t->prefix_n);
    } else
        ac_buf_add(&t->open, ",", 1);
    ac_span_put(&t->open, span);
    ac_tracer_recycle(t, span);
    t->open_n++;
    if (t->open_n >= t->batch_max)
        seal(t);
    step_took(t, t0);
    schedule(t);
}

const char *ac_tracer_intern(ac_tracer *t, const char *s, size_t n)
{
    if (!t || !s)
        return NULL;
    if (!t->interned && !(t->interned = calloc(INTERN_CAP, sizeof *t->interned)))
        return NULL;
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    size_t at = (size_t)(h & (INTERN_CAP - 1));
    for (char *k; (k = t->interned[at]); at = (at + 1) & (INTERN_CAP - 1))
        if (!strncmp(k, s, n) && !k[n])
            return k;
    if (t->ninterned >= INTERN_CAP / 2)
        return NULL;
    char *k = malloc(n + 1);
    if (!k)
        return NULL;
    memcpy(k, s, n);
    k[n] = 0;
    t->ninterned++;
    return t->interned[at] = k;
}

int ac_tracer_capture(const ac_tracer *t)
{
    return t && t->capture;
}

uint64_t ac_tracer_dropped(const ac_tracer *t)
{
    return t ? t->dropped : 0;
}

uint64_t ac_tracer_exported(const ac_tracer *t)
{
    return t ? t->exported : 0;
}

static json_t *kv_str(const char *key, const char *v)
{
    return json_pack("{s:s, s:{s:s}}", "key", key, "value", "stringValue", v);
}

/* service.name and the "k=v,k2=v2" attributes as an OTLP resource. */
static json_t *resource_of(const char *service, const char *attrs)
{
    json_t *a = json_array();
    json_array_append_new(a, kv_str("service.name", service && *service ? service : "agentc"));
    json_array_append_new(a, kv_str("telemetry.sdk.name", "agentc"));
    json_array_append_new(a, kv_str("telemetry.sdk.language", "c"));
    json_array_append_new(a, kv_str("telemetry.sdk.version", AGENTC_VERSION));
    for (const char *p = attrs; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq && eq > p) {
            char key[256], val[1024];
            snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof val, "%.*s", (int)(p + len - eq - 1), eq + 1);
            if (strcmp(key, "service.name") != 0)
                json_array_append_new(a, kv_str(key, val));
        }
        p = end ? end + 1 : NULL;
    }
    return json_pack("{s:o}", "attributes", a);
}

/* The export document's text before its spans. */
static char *prefix_of(const json_t *resource)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_addstr(&b, "{\"resourceSpans\":[{\"resource\":");
    ac_json_put(&b, resource, 0);
    ac_buf_printf(&b,
                  ",\"scopeSpans\":[{\"scope\":{\"name\":\"agentc\",\"version\":\"%s\"},"
                  "\"spans\":[",
                  AGENTC_VERSION);
    return ac_buf_take(&b, NULL);
}

static int fail(ac_error *err, int code, const char *text)
{
    if (err) {
        memset(err, 0, sizeof *err);
        err->code = code;
        snprintf(err->text, sizeof err->text, "%s", text);
    }
    return -1;
}

ac_tracer *ac_tracer_new(ac_loop *loop, const ac_tracer_config *cfg, ac_error *err)
{
    if (!loop || !cfg || !cfg->url || strncmp(cfg->url, "http", 4) != 0) {
        fail(err, AC_EINVAL, "tracing needs a loop and an http:// or https:// URL");
        return NULL;
    }
    ac_tracer *t = calloc(1, sizeof *t);
    size_t qmax = cfg->queue_max > 0 ? (size_t)cfg->queue_max : 2048;
    if (!t || !(t->url = strdup(cfg->url)) ||
        !(t->resource = resource_of(cfg->service_name, cfg->resource_attributes)) ||
        !(t->prefix = prefix_of(t->resource)) || !(t->easy = curl_easy_init())) {
        ac_tracer_shutdown(t, 0);
        fail(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    t->loop = loop;
    t->capture = cfg->capture_content;
    t->queue_max = qmax;
    t->batch_max = cfg->batch_max > 0 ? (size_t)cfg->batch_max : 512;
    t->delay_ms = cfg->delay_ms > 0 ? cfg->delay_ms : 5000;
    t->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
    t->headers = curl_slist_append(NULL, "Content-Type: application/json");
    for (const char *const *h = cfg->headers; h && *h; h++)
        t->headers = curl_slist_append(t->headers, *h);
    t->headers = curl_slist_append(t->headers, "Expect:");
    t->prefix_n = strlen(t->prefix);
    t->span_bytes = 2048;
    curl_easy_setopt(t->easy, CURLOPT_URL, t->url);
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024); /* a batch in few writes */
    if (err)
        memset(err, 0, sizeof *err);
    return t;
}

void ac_tracer_shutdown(ac_tracer *t, int64_t bound_ms)
{
    ac_tracer_shutdown_stats(t, bound_ms, NULL);
}

void ac_tracer_shutdown_stats(ac_tracer *t, int64_t bound_ms, ac_tracer_stats *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!t)
        return;
    if (t->timer)
        ac_loop_cancel_timer(t->loop, t->timer);
    t->timer = 0;
    seal(t);
    if (bound_ms > 0) {
        int64_t end = ac_loop_now_ms(t->loop) + bound_ms;
        t->not_before_ms = 0; /* the last word: sent now or never */
        t->timeout_ms = bound_ms;
        while (ac_loop_now_ms(t->loop) < end && (t->flight.text.p || t->nready)) {
            start_post(t);
            if (t->timer)
                ac_loop_cancel_timer(t->loop, t->timer);
            t->timer = 0;
            int64_t left = end - ac_loop_now_ms(t->loop);
            if (!t->flight.text.p || left <= 0)
                break;
            ac_loop_run_once(t->loop, (int)(left < 50 ? left : 50));
        }
    }
    if (t->flight.text.p) {
        ac_http_cancel(t->loop, t->xfer);
        t->dropped += t->flight.spans;
    }
    t->dropped += t->ready_spans;
    if (out)
        *out = (ac_tracer_stats){t->exported, t->dropped, t->bytes, t->longest_us};
    for (size_t i = 0; i < t->nready; i++)
        ac_buf_free(&t->ready[i].text);
    free(t->ready);
    ac_buf_free(&t->flight.text);
    ac_buf_free(&t->spare);
    ac_buf_free(&t->open);
    if (t->easy)
        curl_easy_cleanup(t->easy);
    while (t->npool)
        ac_span_free(t->pool[--t->npool]);
    for (size_t i = 0; t->interned && i < INTERN_CAP; i++)
        free(t->interned[i]);
    free(t->interned);
    free(t->prefix);
    curl_slist_free_all(t->headers);
    json_decref(t->resource);
    free(t->url);
    free(t);
}
