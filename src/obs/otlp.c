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
#include "util/json_text.h"

#define SLICE 32        /* spans a batch's text takes per turn of the loop: no long stall */
#define INTERN_CAP 8192 /* texts interned (ac_tracer_intern), half of them at most */

struct ac_tracer {
    ac_loop *loop;
    char *url;
    struct curl_slist *headers;
    json_t *resource; /* {"attributes": [...]} */
    int capture;
    ac_span **q; /* ended spans, a ring of queue_max: oldest at qhead */
    size_t qhead, qn;
    char *prefix; /* the export document up to its spans */
    size_t queue_max, batch_max;
    int64_t delay_ms, timeout_ms;
    uint64_t dropped, exported, bytes;
    int64_t longest_us; /* the longest export step (export_now) */
    uint64_t timer;
    int64_t not_before_ms; /* Retry-After: no POST before this (loop clock) */
    CURL *easy;            /* the POST under way, NULL when none */
    char *body;
    size_t in_flight; /* spans in it, or in the batch being built */
    ac_buf text;      /* the batch being built, a slice of spans per turn of the loop */
    int building;
    size_t want;       /* spans the batch being built takes */
    size_t span_bytes; /* of a span in the last batch's text, and a margin */
    uint64_t xfer;
    char **interned; /* ac_tracer_intern's texts, an open-addressing set of INTERN_CAP */
    size_t ninterned;
};

static void export_now(ac_tracer *t);

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
    (void)p;
    (void)ud;
    return size * n;
}

static void on_timer(void *ud)
{
    ac_tracer *t = ud;
    t->timer = 0;
    export_now(t);
}

/* The next POST: at once (delay 0) when a batch is full, else after delay_ms; never before a
 * Retry-After. */
static void schedule(ac_tracer *t, int64_t delay)
{
    if (t->easy || t->timer || (!t->qn && !t->building))
        return;
    int64_t wait = t->not_before_ms - ac_loop_now_ms(t->loop);
    if (t->building)
        delay = 0; /* the next slice */
    else if (wait > delay)
        delay = wait;
    t->timer = ac_loop_timer(t->loop, delay, on_timer, t);
}

static void on_done(void *ud, CURL *easy, CURLcode rc)
{
    ac_tracer *t = ud;
    long status = 0;
    curl_off_t retry = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &retry);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
        t->exported += t->in_flight;
        t->bytes += t->body ? strlen(t->body) : 0;
    } else
        t->dropped += t->in_flight;
    if ((status == 429 || status == 503) && retry > 0)
        t->not_before_ms = ac_loop_now_ms(t->loop) + (int64_t)(retry > 3600 ? 3600 : retry) * 1000;
    curl_easy_cleanup(easy);
    t->easy = NULL;
    t->xfer = 0;
    t->in_flight = 0;
    free(t->body);
    t->body = NULL;
    schedule(t, t->qn >= t->batch_max ? 0 : t->delay_ms);
}

/* {"resourceSpans": [{"resource", "scopeSpans": [{"scope", "spans"}]}]} of the queue's first
 * batch_max spans, which leave the queue, built SLICE spans at a time: 1 when the text is whole,
 * 0 when more is to come (the next turn of the loop). */
static int build_slice(ac_tracer *t)
{
    if (!t->building) {
        ac_buf_init(&t->text, AC_BUF_MAX);
        t->building = 1;
        t->want = t->qn < t->batch_max ? t->qn : t->batch_max;
        t->in_flight = 0;
        /* room for the whole text at once, by the last batch's bytes per span: no copy of a
         * growing megabyte in one slice */
        ac_buf_reserve(&t->text, strlen(t->prefix) + 16 + t->want * (t->span_bytes + 64));
        ac_buf_addstr(&t->text, t->prefix);
    }
    for (size_t k = 0; k < SLICE && t->in_flight < t->want && t->qn; k++) {
        ac_span **slot = &t->q[t->qhead];
        if (t->in_flight++)
            ac_buf_add(&t->text, ",", 1);
        ac_span_put(&t->text, *slot);
        ac_span_free(*slot);
        *slot = NULL;
        t->qhead = (t->qhead + 1) % t->queue_max;
        t->qn--;
    }
    if (t->in_flight < t->want && t->qn)
        return 0;
    ac_buf_addstr(&t->text, "]}]}]}");
    t->building = 0;
    if (t->in_flight)
        t->span_bytes = t->text.n / t->in_flight + t->text.n / t->in_flight / 8;
    return 1;
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* the loop's own time, not the machine's load */
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void start_post(ac_tracer *t);

/* A slice of the batch's text, and its POST once whole; each step's time on the loop
 * measured */
static void export_now(ac_tracer *t)
{
    if (t->easy || (!t->building && (!t->qn || ac_loop_now_ms(t->loop) < t->not_before_ms))) {
        schedule(t, t->delay_ms);
        return;
    }
    int64_t t0 = now_us();
    if (build_slice(t))
        start_post(t);
    else
        schedule(t, 0);
    int64_t took = now_us() - t0;
    if (took > t->longest_us)
        t->longest_us = took;
}

static void start_post(ac_tracer *t)
{
    size_t n = t->in_flight;
    char *body = ac_buf_take(&t->text, NULL);
    CURL *h = body ? curl_easy_init() : NULL;
    if (!h) {
        free(body);
        t->dropped += n;
        t->in_flight = 0;
        return;
    }
    curl_easy_setopt(h, CURLOPT_URL, t->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)t->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(t->timeout_ms < 10000 ? t->timeout_ms : 10000));
    t->easy = h;
    t->body = body;
    t->in_flight = n;
    if (!(t->xfer = ac_http_start(t->loop, h, on_done, t))) {
        curl_easy_cleanup(h);
        t->easy = NULL;
        free(body);
        t->body = NULL;
        t->dropped += n;
        t->in_flight = 0;
    }
}

void ac_tracer_add(ac_tracer *t, ac_span *span)
{
    if (!t || !span || t->qn >= t->queue_max) {
        if (t && span)
            t->dropped++;
        ac_span_free(span);
        return;
    }
    t->q[(t->qhead + t->qn++) % t->queue_max] = span;
    schedule(t, t->qn >= t->batch_max ? 0 : t->delay_ms);
    if (t->timer && t->qn >= t->batch_max && !t->easy) {
        ac_loop_cancel_timer(t->loop, t->timer);
        t->timer = 0;
        schedule(t, 0);
    }
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
    if (!t || !(t->url = strdup(cfg->url)) || !(t->q = calloc(qmax, sizeof *t->q)) ||
        !(t->resource = resource_of(cfg->service_name, cfg->resource_attributes)) ||
        !(t->prefix = prefix_of(t->resource))) {
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
    if (bound_ms > 0) {
        int64_t end = ac_loop_now_ms(t->loop) + bound_ms;
        t->not_before_ms = 0; /* the last word: sent now or never */
        t->timeout_ms = bound_ms;
        while (ac_loop_now_ms(t->loop) < end && (t->easy || t->qn || t->building)) {
            if (!t->easy)
                export_now(t);
            if (t->timer)
                ac_loop_cancel_timer(t->loop, t->timer);
            t->timer = 0;
            if (t->building)
                continue; /* the rest of the batch's text */
            int64_t left = end - ac_loop_now_ms(t->loop);
            if (!t->easy || left <= 0)
                break;
            ac_loop_run_once(t->loop, (int)(left < 50 ? left : 50));
        }
    }
    if (t->easy) {
        ac_http_cancel(t->loop, t->xfer);
        curl_easy_cleanup(t->easy);
        t->dropped += t->in_flight;
    }
    if (t->building) {
        ac_buf_free(&t->text);
        t->dropped += t->in_flight;
    }
    t->dropped += t->qn;
    if (out)
        *out = (ac_tracer_stats){t->exported, t->dropped, t->bytes, t->longest_us};
    for (size_t i = 0; t->q && i < t->qn; i++)
        ac_span_free(t->q[(t->qhead + i) % t->queue_max]);
    free(t->q);
    for (size_t i = 0; t->interned && i < INTERN_CAP; i++)
        free(t->interned[i]);
    free(t->interned);
    free(t->prefix);
    free(t->body);
    curl_slist_free_all(t->headers);
    json_decref(t->resource);
    free(t->url);
    free(t);
}
