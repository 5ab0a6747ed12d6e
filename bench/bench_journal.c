/* bench_journal.c - client CPU per streamed delta with and without a session journal.
 *
 * One session per round trip sends "hi" to the OpenAI-compatible provider against the loopback
 * scripted server (tests/support/test_httpd, in-process threads, as bench_roundtrip uses it);
 * the canned answer streams DELTAS content deltas. Runs alternate journaled (a fresh
 * journal file per round trip, JOURNAL path) and unjournaled round trips, REPS of each.
 *
 * CPU is the CPU clock (user + sys) of the thread that runs the loop (the server's threads are
 * excluded; they do the same work for both). The process CPU clock (server
 * included) is printed too. Per delta = round-trip CPU / DELTAS (the fixed per-round-trip cost,
 * ~70 us, is under 0.02 us per delta at 5,000 deltas).
 *
 *   bench_journal [DELTAS [REPS [JOURNAL [CHUNK]]]]
 *   defaults 5000, 15, /tmp/agentc-bench-journal.jsonl, 0 (CHUNK > 0: chunked transfer of
 *   CHUNK-byte pieces, so the client reads it in more, smaller callbacks)
 *
 * Prints, per mode: min / median / max us per delta over the REPS round trips, and one
 * machine-readable line "RESULT mode min med max self_med" for scripts.
 * BENCH_MODE=0 or 1 runs only the unjournaled or the journaled round trips; built with
 * -DBENCH_CALLGRIND, the measured round trips are wrapped in CALLGRIND_TOGGLE_COLLECT (run
 * under valgrind --tool=callgrind --collect-atstart=no for instructions per delta). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "agentc/agentc.h"
#include "bench_args.h"
#include "test_httpd.h"
static ac_error g_err;
#ifdef BENCH_CALLGRIND
#include <valgrind/callgrind.h>
#endif

/* CPU time in us. who: RUSAGE_THREAD or RUSAGE_SELF. Read with clock_gettime on the thread /
 * process CPU clocks rather than getrusage(): on Linux getrusage() of a running thread omits
 * the time since it was last scheduled in (up to a tick, ~4 ms), which is a large part of one
 * round trip here; the CPU clocks include it. Same quantity (user + sys). */
static double ru_us(int who)
{
    struct timespec ts;
    clock_gettime(who == RUSAGE_THREAD ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static char *make_answer(int deltas, size_t *len, char **expect)
{
    static const char head[] =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n";
    static const char d1[] = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":"
                             "[{\"index\":0,\"delta\":{\"content\":\"";
    static const char d2[] = "\"},\"finish_reason\":null}]}\n\n";
    static const char tail[] =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
        "\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,"
        "\"completion_tokens\":3}}\n\ndata: [DONE]\n\n";
    size_t cap = sizeof head + (size_t)deltas * (sizeof d1 + sizeof d2 + 16) + sizeof tail;
    char *b = malloc(cap), *x = malloc((size_t)deltas * 16 + 1);
    size_t n = 0, xn = 0;
    n += (size_t)snprintf(b + n, cap - n, "%s", head);
    for (int i = 0; i < deltas; i++) {
        char tok[16];
        int k = snprintf(tok, sizeof tok, "w%d ", i % 1000);
        n += (size_t)snprintf(b + n, cap - n, "%s%s%s", d1, tok, d2);
        memcpy(x + xn, tok, (size_t)k);
        xn += (size_t)k;
    }
    n += (size_t)snprintf(b + n, cap - n, "%s", tail);
    x[xn] = 0;
    *len = n;
    *expect = x;
    return b;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int deltas = argc > 1 ? (int)bench_arg(argv[1], 1, 10000000, "DELTAS") : 5000;
    int reps = argc > 2 ? (int)bench_arg(argv[2], 1, 100000, "REPS") : 15;
    const char *jpath = argc > 3 ? argv[3] : "/tmp/agentc-bench-journal.jsonl";
    size_t chunk = argc > 4 ? (size_t)bench_arg(argv[4], 0, 1 << 20, "CHUNK") : 0;
    if (deltas < 1 || reps < 1)
        return 2;
    size_t alen;
    char *expect;
    char *answer = make_answer(deltas, &alen, &expect);

    ac_httpd *h = ac_httpd_start();
    ac_loop *loop = ac_loop_new();
    if (!h || !loop)
        return 1;
    char base[96];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", ac_httpd_port(h));
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
    ac_engine *e = ac_engine_new(&cfg, &g_err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", g_err.text);
        return 1;
    }

    double *cpu[2], *self[2];
    long jbytes = 0;
    for (int m = 0; m < 2; m++) {
        cpu[m] = calloc((size_t)reps, sizeof(double));
        self[m] = calloc((size_t)reps, sizeof(double));
    }
    /* 2 warm-up round trips per mode, then reps measured; modes alternate. */
    for (int i = -2; i < reps; i++) {
        for (int m = 0; m < 2; m++) { /* m = 0 unjournaled, 1 journaled */
            int mm = (i & 1) ? 1 - m : m;
            const char *only = getenv("BENCH_MODE");
            if (only && bench_arg(only, 0, 1, "BENCH_MODE") != mm)
                continue;
#ifdef BENCH_CALLGRIND
            if (i >= 0) CALLGRIND_TOGGLE_COLLECT;
#endif
            ac_httpd_resp r = AC_HTTPD_RESP_INIT;
            r.headers = "Content-Type: text/event-stream\r\n";
            r.body = answer;
            r.body_len = alen;
            r.chunk_size = chunk;
            ac_httpd_push(h, &r);
            double c0 = ru_us(RUSAGE_THREAD), s0 = ru_us(RUSAGE_SELF);
            ac_session *s = ac_session_new(e, "bench", mm ? jpath : NULL, &g_err);
            if (!s || ac_session_send(s, "hi") < 0) {
                fprintf(stderr, "session: %s\n", s ? "send failed" : g_err.text);
                return 1;
            }
            while (!ac_session_settled(s))
                ac_loop_run_once(loop, 1000);
            int ok = strcmp(ac_session_answer(s), expect) == 0;
            if (!ok)
                fprintf(stderr, "unexpected answer (%zu bytes; %s)\n", strlen(ac_session_answer(s)),
                        ac_session_error(s) ? ac_session_error(s) : "");
            ac_session_free(s); /* closes (flushes) the journal: counted */
#ifdef BENCH_CALLGRIND
            if (i >= 0) CALLGRIND_TOGGLE_COLLECT;
#endif
            double c1 = ru_us(RUSAGE_THREAD), s1 = ru_us(RUSAGE_SELF);
            if (!ok)
                return 1;
            if (i >= 0) {
                cpu[mm][i] = (c1 - c0) / deltas;
                self[mm][i] = (s1 - s0) / deltas;
            }
            if (mm && i == 0) {
                struct stat st;
                if (stat(jpath, &st) == 0)
                    jbytes = (long)st.st_size;
            }
        }
    }
    static const char *const name[2] = {"unjournaled", "journaled"};
    double med[2];
    printf("%d deltas per round trip (answer %zu bytes%s), %d round trips per mode; "
           "journal %ld bytes\n",
           deltas, alen, chunk ? ", chunked" : "", reps, jbytes);
    for (int m = 0; m < 2; m++) {
        qsort(cpu[m], (size_t)reps, sizeof(double), cmp);
        qsort(self[m], (size_t)reps, sizeof(double), cmp);
        med[m] = cpu[m][reps / 2];
        printf("  %-12s thread CPU per delta  min %.3f  med %.3f  max %.3f us   "
               "(process med %.3f us)\n",
               name[m], cpu[m][0], med[m], cpu[m][reps - 1], self[m][reps / 2]);
        printf("RESULT %s %.4f %.4f %.4f %.4f\n", name[m], cpu[m][0], med[m], cpu[m][reps - 1],
               self[m][reps / 2]);
    }
    printf("  journal cost per delta (med journaled - med unjournaled): %.3f us (x%.2f)\n",
           med[1] - med[0], med[1] / med[0]);
    printf("RESULT jcost %.4f\n", med[1] - med[0]);
    ac_engine_free(e);
    ac_loop_free(loop);
    ac_httpd_stop(h);
    free(answer);
    free(expect);
    return 0;
}
