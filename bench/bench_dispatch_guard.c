/*
 * bench_dispatch_guard.c - part of bench_dispatch: the cost of a comparison
 * guard (spec language v2, compiled when the engine binds the spec) against
 * the C guard that makes the same test, through the dispatcher on a real
 * engine and session. A separate file: bench_dispatch.c defines its own
 * session type for the table-versus-switch part.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/agentc.h"
#include "agentc/fsm.h"
#include "session/session_int.h" /* the engine's binding */
#include "spec.h"                /* compiling the specs below */

int bench_guard(long rounds);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* ---- comparison guards against C guards -------------------------------------
 * One internal transition `A on tick [GUARD] / touch` on a real engine and
 * session (the guard reads the session's conversation), dispatched ROUNDS
 * times: with no guard, with the C guard retries_left, and with the
 * comparison `turn.retries < max_retries` that does the same test. */
static const char *const guard_specs[3] = {
    "param max_retries = 3\noutside event tick, stop\naction touch\n"
    "machine m {\n initial A\n terminal Z\n A on tick / touch\n A -> Z on stop\n}\n",
    "param max_retries = 3\noutside event tick, stop\nguard retries_left\naction touch\n"
    "machine m {\n initial A\n terminal Z\n A on tick [retries_left] / touch\n A -> Z on stop\n}\n",
    "param max_retries = 3\noutside event tick, stop\naction touch\n"
    "machine m {\n initial A\n terminal Z\n A on tick [turn.retries < max_retries] / touch\n"
    " A -> Z on stop\n}\n"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int bench_guard(long rounds)
{
    enum { RUNS = 9 };
    double ns[3][RUNS];
    ac_fsm_tables *tabs[3] = {0};
    ac_engine *eng[3] = {0};
    ac_session *ses[3] = {0};
    ac_fsm fs[3];
    for (int k = 0; k < 3; k++) {
        ac_spec *sp = ac_spec_parse("guard_bench.fsm", guard_specs[k], strlen(guard_specs[k]));
        if (!sp || sp->n_errors || ac_spec_check(sp) || !(tabs[k] = ac_spec_lower(sp, "g.fsm"))) {
            fprintf(stderr, "guard bench: spec %d does not compile\n", k);
            return 1;
        }
        ac_spec_free(sp);
        ac_engine_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.provider = AC_PROVIDER_SCRIPT;
        cfg.script_text = "{\"content\":\"x\"}\n";
        cfg.tables = tabs[k];
        ac_error err = {0};
        eng[k] = ac_engine_new(&cfg, &err);
        ses[k] = eng[k] ? ac_session_new(eng[k], "g", NULL, &err) : NULL;
        if (!ses[k]) {
            fprintf(stderr, "guard bench: %s\n", err.text);
            return 1;
        }
        ac_event ev = {0, 0, NULL};
        ac_fsm_init(&fs[k], &eng[k]->binding, ses[k], NULL, NULL);
        ac_fsm_start(&fs[k], &ev);
    }
    ac_event tick = {1, 0, NULL};
    for (int r = 0; r < RUNS; r++)
        for (int k = 0; k < 3; k++) { /* the three alternate: noise hits each alike */
            double t0 = now();
            for (long i = 0; i < rounds; i++)
                ac_fsm_dispatch(&fs[k], &tick);
            ns[k][r] = (now() - t0) * 1e9 / (double)rounds;
        }
    static const char *const names[3] = {"no guard", "C guard retries_left",
                                         "comparison turn.retries < max_retries"};
    printf("internal transition on a real session, %ld dispatches per run, %d runs (ns per "
           "dispatch, min / median / max)\n",
           rounds, RUNS);
    double med[3];
    for (int k = 0; k < 3; k++) {
        qsort(ns[k], RUNS, sizeof ns[k][0], cmp_double);
        med[k] = ns[k][RUNS / 2];
        printf("  %-40s %6.2f / %6.2f / %6.2f\n", names[k], ns[k][0], med[k], ns[k][RUNS - 1]);
    }
    printf("  guard cost over no guard (median): C %.2f ns, comparison %.2f ns; comparison / C "
           "dispatch time: %.2fx\n",
           med[1] - med[0], med[2] - med[0], med[2] / med[1]);
    for (int k = 0; k < 3; k++) {
        ac_fsm_stop(&fs[k], &tick);
        ac_session_free(ses[k]);
        ac_engine_free(eng[k]);
        ac_spec_tables_free(tabs[k]);
    }
    return 0;
}
