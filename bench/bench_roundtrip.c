/* Client CPU time per LLM round trip on loopback, as a ratio to a bare libcurl baseline
 * measured in the same run. Not a test: it prints figures and asserts nothing about time.
 *
 * agentc: a real engine and session send "hi" to the OpenAI-compatible provider, which builds
 * the request from the conversation, runs it through the loop's shared multi against the
 * loopback scripted server (tests/support/test_httpd), scans and assembles the SSE answer and
 * posts the events to the session, until the session settles. A fresh session per round trip,
 * so the conversation stays one turn long.
 * baseline: one reused curl easy handle POSTs the same request bytes to the same server and
 * reads the same canned answer with curl_easy_perform() (keep-alive, one connection).
 *
 * Only this thread's CPU is counted (CLOCK_THREAD_CPUTIME_ID): the server runs in its own
 * threads. Wall time is printed for information. The two alternate over RUNS runs; the
 * figures are min/median/max over the runs, the ratio the per-run ratio.
 *
 * Allocations: malloc, calloc and realloc are interposed and counted on this thread (not in
 * sanitizer builds, whose runtimes own them), per round trip for both clients, and per
 * streamed delta from the difference between a 3-delta and a 203-delta answer.
 *
 *   bench_roundtrip [N [RUNS]]   (default 2000 round trips, 7 runs) */
#include <curl/curl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "agentc/agentc.h"
#include "io/loop.h"
#include "test_httpd.h"

/* ---- allocation counter ---- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 0
#else
#define COUNT_ALLOCS 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t k);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);
#endif
static __thread int counting;
static __thread unsigned long long n_allocs;

#if COUNT_ALLOCS
void *malloc(size_t n)
{
    n_allocs += (unsigned)counting;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t k)
{
    n_allocs += (unsigned)counting;
    return __libc_calloc(n, k);
}

void *realloc(void *p, size_t n)
{
    n_allocs += (unsigned)counting;
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

static const char answer[] =
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"content\":\", world.\"},\"finish_reason\":null}]}\n\n"
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,"
    "\"completion_tokens\":3}}\n\n"
    "data: [DONE]\n\n";

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The answer with 200 more content deltas of "x" (for allocations per delta). */
#define LONG_EXTRA 200
static char *long_answer;
static size_t long_len;

static void make_long_answer(void)
{
    static const char delta[] = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\","
                                "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},"
                                "\"finish_reason\":null}]}\n\n";
    /* after the first two events (role, "Hello") */
    const char *cut = strstr(answer, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\","
                                     "\"choices\":[{\"index\":0,\"delta\":{\"content\":\", world.\"}");
    size_t head = (size_t)(cut - answer);
    long_len = sizeof answer - 1 + LONG_EXTRA * (sizeof delta - 1);
    long_answer = malloc(long_len + 1);
    if (!long_answer)
        exit(1);
    memcpy(long_answer, answer, head);
    for (int i = 0; i < LONG_EXTRA; i++)
        memcpy(long_answer + head + (size_t)i * (sizeof delta - 1), delta, sizeof delta - 1);
    memcpy(long_answer + head + LONG_EXTRA * (sizeof delta - 1), cut, sizeof answer - 1 - head);
    long_answer[long_len] = '\0';
}

static void push_body(ac_httpd *h, int n, const char *body, size_t len)
{
    for (int i = 0; i < n; i++) {
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.headers = "Content-Type: text/event-stream\r\n";
        r.body = body;
        r.body_len = len;
        ac_httpd_push(h, &r);
    }
}

static void push_answers(ac_httpd *h, int n)
{
    push_body(h, n, answer, sizeof answer - 1);
}

static const char *expected_answer = "Hello, world.";

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

typedef struct mmm {
    double min, med, max;
} mmm;

static mmm summarize(double *v, int n)
{
    double s[64];
    memcpy(s, v, (size_t)n * sizeof *v);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    mmm r = {s[0], n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s[n - 1]};
    return r;
}

static int session_round_trips(ac_engine *e, ac_loop *loop, int n, const char *what);

/* Separate entry points so a profiler can select the short round trips
 * (callgrind --toggle-collect=agentc_round_trips) apart from the long ones. */
__attribute__((noinline)) static int agentc_round_trips(ac_engine *e, ac_loop *loop, int n)
{
    return session_round_trips(e, loop, n, "");
}

__attribute__((noinline)) static int agentc_long_round_trips(ac_engine *e, ac_loop *loop, int n)
{
    return session_round_trips(e, loop, n, "long ");
}

static int session_round_trips(ac_engine *e, ac_loop *loop, int n, const char *what)
{
    ac_error err = {0};
    for (int i = 0; i < n; i++) {
        ac_session *s = ac_session_new(e, "bench", NULL, &err);
        if (!s || ac_session_send(s, "hi") < 0) {
            fprintf(stderr, "session: %s\n", s ? "send failed" : err.text);
            ac_session_free(s);
            return -1;
        }
        while (!ac_session_settled(s))
            ac_loop_run_once(loop, 1000);
        if (strncmp(ac_session_answer(s), "Hello", 5) != 0 ||
            strlen(ac_session_answer(s)) != strlen(expected_answer)) {
            fprintf(stderr, "%sround trip %d: unexpected answer '%s' (%s)\n", what, i,
                    ac_session_answer(s),
                    ac_session_error(s) ? ac_session_error(s) : "");
            ac_session_free(s);
            return -1;
        }
        ac_session_free(s);
    }
    return 0;
}

static size_t sink(char *p, size_t size, size_t nmemb, void *ud)
{
    (void)p;
    *(size_t *)ud += size * nmemb;
    return size * nmemb;
}

static size_t expected_bytes = sizeof answer - 1;

__attribute__((noinline)) static int curl_round_trips(const char *url, const char *body, size_t len, int n)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = curl_slist_append(hd, "Accept: text/event-stream");
    hd = curl_slist_append(hd, "Authorization: Bearer sk-bench");
    hd = curl_slist_append(hd, "Expect:");
    size_t got = 0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &got);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        got = 0;
        if (curl_easy_perform(h) != CURLE_OK || got != expected_bytes)
            rc = -1;
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return rc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)bench_arg(argv[1], 1, 10000000, "round trips") : 2000;
    int runs = argc > 2 ? (int)bench_arg(argv[2], 1, 64, "runs") : 7;
    ac_httpd *h = ac_httpd_start();
    ac_loop *loop = ac_loop_new();
    if (!h || !loop) {
        fprintf(stderr, "cannot start the server or the loop\n");
        return 1;
    }
    char base[96], url[128];
    ac_error err;
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", ac_httpd_port(h));
    snprintf(url, sizeof url, "%s/chat/completions", base);
    static const char *const params[] = {"backoff_initial=10ms", NULL};
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = base;
    cfg.api_key = "sk-bench";
    cfg.model = "bench-model";
    cfg.params = params;
    cfg.seed = 1;
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", err.text);
        return 1;
    }

    /* Warm-up: connection, caches; and the request bytes for the baseline. */
    int warm = n / 10 < 50 ? 50 : n / 10;
    push_answers(h, warm);
    if (agentc_round_trips(e, loop, warm) != 0)
        return 1;
    char *body = NULL;
    size_t blen = 0;
    if (ac_httpd_request(h, 0, NULL, NULL, NULL, &body, &blen) != 0)
        return 1;
    push_answers(h, warm);
    if (curl_round_trips(url, body, blen, warm) != 0)
        return 1;

    /* allocations per round trip (both clients) and per delta (agentc) */
    int na = 200;
    push_answers(h, na);
    counting = 1;
    n_allocs = 0;
    if (agentc_round_trips(e, loop, na) != 0)
        return 1;
    double alloc_a = (double)n_allocs / na;
    counting = 0;
    push_answers(h, na);
    counting = 1;
    n_allocs = 0;
    if (curl_round_trips(url, body, blen, na) != 0)
        return 1;
    double alloc_b = (double)n_allocs / na;
    counting = 0;
    make_long_answer();
    push_body(h, na, long_answer, long_len);
    static char long_text[16 + LONG_EXTRA];
    snprintf(long_text, sizeof long_text, "Hello%*s, world.", LONG_EXTRA, "");
    expected_answer = long_text;
    counting = 1;
    n_allocs = 0;
    if (agentc_long_round_trips(e, loop, na) != 0)
        return 1;
    double alloc_long = (double)n_allocs / na;
    counting = 0;
    expected_answer = "Hello, world.";

    double ca[64], cb[64], ratio[64], wa[64], wb[64];
    for (int run = 0; run < runs; run++) {
        push_answers(h, n);
        double w0 = wall_us(), c0 = thread_cpu_us();
        if (agentc_round_trips(e, loop, n) != 0)
            return 1;
        ca[run] = (thread_cpu_us() - c0) / n;
        wa[run] = (wall_us() - w0) / n;
        push_answers(h, n);
        w0 = wall_us();
        c0 = thread_cpu_us();
        if (curl_round_trips(url, body, blen, n) != 0)
            return 1;
        cb[run] = (thread_cpu_us() - c0) / n;
        wb[run] = (wall_us() - w0) / n;
        ratio[run] = ca[run] / cb[run];
    }
    mmm a = summarize(ca, runs), b = summarize(cb, runs), r = summarize(ratio, runs);
    mmm wam = summarize(wa, runs), wbm = summarize(wb, runs);
    printf("round trips: %d per run, %d runs (min / median / max); request %zu bytes, answer %zu "
           "bytes\n",
           n, runs, blen, sizeof answer - 1);
    printf("  bare libcurl easy POST   %6.1f / %6.1f / %6.1f us CPU  (median %6.1f us wall)\n",
           b.min, b.med, b.max, wbm.med);
    printf("  agentc engine+session    %6.1f / %6.1f / %6.1f us CPU  (median %6.1f us wall)\n",
           a.min, a.med, a.max, wam.med);
    printf("  ratio agentc / baseline  %6.2f / %6.2f / %6.2f        (per run)\n", r.min, r.med,
           r.max);
    if (COUNT_ALLOCS) {
        printf("  allocations per round trip: agentc %.1f, bare libcurl %.1f\n", alloc_a, alloc_b);
        printf("  allocations per streamed delta (agentc): %.2f\n",
               (alloc_long - alloc_a) / LONG_EXTRA);
    }
    /* agentc keeps one connection; each baseline run opens one for its own easy handle */
    printf("  connections accepted     %zu (1 + %d expected)\n", ac_httpd_connections(h), runs + 2);
    free(long_answer);
    free(body);
    ac_engine_free(e);
    ac_loop_free(loop);
    ac_httpd_stop(h);
    return 0;
}
