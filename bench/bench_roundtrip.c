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
 * threads. Wall time is printed for information.
 *
 *   bench_roundtrip [N]   (default 2000) */
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

static void push_answers(ac_httpd *h, int n)
{
    for (int i = 0; i < n; i++) {
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.headers = "Content-Type: text/event-stream\r\n";
        r.body = answer;
        r.body_len = sizeof answer - 1;
        ac_httpd_push(h, &r);
    }
}

static int agentc_round_trips(ac_engine *e, ac_loop *loop, int n)
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
        if (strcmp(ac_session_answer(s), "Hello, world.") != 0) {
            fprintf(stderr, "round trip %d: unexpected answer '%s' (%s)\n", i, ac_session_answer(s),
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

static int curl_round_trips(const char *url, const char *body, size_t len, int n)
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
        if (curl_easy_perform(h) != CURLE_OK || got != sizeof answer - 1)
            rc = -1;
    }
    curl_slist_free_all(hd);
    curl_easy_cleanup(h);
    return rc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)bench_arg(argv[1], 1, 10000000, "round trips") : 2000;
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

    double best_a = 1e30, best_b = 1e30, wall_a = 0, wall_b = 0;
    for (int run = 0; run < 3; run++) {
        push_answers(h, n);
        double w0 = wall_us(), c0 = thread_cpu_us();
        if (agentc_round_trips(e, loop, n) != 0)
            return 1;
        double ca = (thread_cpu_us() - c0) / n, wa = (wall_us() - w0) / n;
        push_answers(h, n);
        w0 = wall_us();
        c0 = thread_cpu_us();
        if (curl_round_trips(url, body, blen, n) != 0)
            return 1;
        double cb = (thread_cpu_us() - c0) / n, wb = (wall_us() - w0) / n;
        if (ca < best_a) {
            best_a = ca;
            wall_a = wa;
        }
        if (cb < best_b) {
            best_b = cb;
            wall_b = wb;
        }
    }
    printf("round trips: %d per run, best of 3 runs; request %zu bytes, answer %zu bytes\n", n,
           blen, sizeof answer - 1);
    printf("  bare libcurl easy POST   %8.1f us CPU  (%8.1f us wall)\n", best_b, wall_b);
    printf("  agentc engine+session    %8.1f us CPU  (%8.1f us wall)\n", best_a, wall_a);
    printf("  agentc's own part        %8.1f us CPU  (agentc - baseline)\n", best_a - best_b);
    printf("  ratio agentc / baseline  %8.2f\n", best_a / best_b);
    /* agentc keeps one connection; each baseline run opens one for its own easy handle */
    printf("  connections accepted     %zu (1 + 4 expected)\n", ac_httpd_connections(h));
    free(body);
    ac_engine_free(e);
    ac_loop_free(loop);
    ac_httpd_stop(h);
    return 0;
}
