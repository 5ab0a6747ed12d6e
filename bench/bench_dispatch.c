/*
 * bench_dispatch.c - events per second through the process machine's
 * generated tables, against a hand-written switch implementation of the
 * same machine, measured in the same run; and the memory of idle sessions.
 *
 * The cycle driven: IDLE -> CALLING (eventless), llm.started -> STREAMING,
 * N x llm.delta (internal), llm.completed -> SUCCESS; then the machine is
 * restarted. Handlers are trivial counters in both implementations.
 *
 *   bench_dispatch [ROUNDS [DELTAS]]   (defaults 200000 and 20)
 * BENCH_NO_SESSIONS=1 skips the idle-session part; BENCH_ONLY=table or
 * BENCH_ONLY=switch runs one side (for profiling).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_fsm.h"
#include "bench_args.h"
#include "agentc/agentc.h"
#include "agentc/fsm.h"
#include "io/loop.h"

struct ac_session {
    unsigned long actions, guards;
};

__attribute__((noinline)) static bool g_false(ac_session *s, const ac_event *ev)
{
    (void)ev;
    s->guards++;
    return false;
}
__attribute__((noinline)) static void a_count(ac_session *s, const ac_event *ev)
{
    (void)ev;
    s->actions++;
}
__attribute__((noinline)) static void effect(ac_session *s, uint16_t use, int start,
                                             const ac_event *ev)
{
    (void)use;
    (void)start;
    (void)ev;
    s->actions++;
}

int bench_guard(long rounds); /* bench_dispatch_guard.c */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The same machine written by hand as a switch, calling the same handler
 * functions the tables bind (handlers are separate C functions either way). */
enum { H_IDLE, H_CALLING, H_STREAMING, H_TOOLS, H_RETRYING, H_SUCCESS, H_ERROR };
__attribute__((noinline)) static int hand_dispatch(int st, int ev, struct ac_session *s)
{
    ac_event e = {(uint16_t)ev, 0, NULL};
    switch (st) {
    case H_CALLING:
        if (ev == AGENT_E_LLM_STARTED) {
            effect(s, 0, 0, &e);
            a_count(s, &e); /* mark_streaming */
            effect(s, 0, 1, &e);
            return H_STREAMING;
        }
        return st;
    case H_STREAMING:
        if (ev == AGENT_E_LLM_DELTA) {
            a_count(s, &e); /* append_delta */
            return st;
        }
        if (ev == AGENT_E_LLM_COMPLETED) {
            if (g_false(s, &e)) { /* has_tool_calls */
                effect(s, 0, 0, &e);
                a_count(s, &e);
                effect(s, 1, 1, &e);
                return H_TOOLS;
            }
            effect(s, 0, 0, &e);
            a_count(s, &e); /* record_assistant */
            return H_SUCCESS;
        }
        return st;
    default:
        return st;
    }
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? bench_arg(argv[1], 1, 1000000000L, "rounds") : 200000;
    /* streamed deltas per LLM call: internal transitions between the two
     * external ones (a real answer streams tens to thousands) */
    int deltas = argc > 2 ? (int)bench_arg(argv[2], 0, 100000, "deltas") : 20;
    const ac_fsm_tables *t = &agent_fsm;
    /* bind every guard to "false" and every action to a counter */
    ac_guard_fn *guards = calloc(t->n_guards + 1u, sizeof *guards);
    ac_action_fn *actions = calloc(t->n_actions + 1u, sizeof *actions);
    for (uint16_t i = 0; i < t->n_guards; i++)
        guards[i] = g_false;
    for (uint16_t i = 0; i < t->n_actions; i++)
        actions[i] = a_count;
    /* a binding whose root is the process machine */
    ac_fsm_tables proc = *t;
    proc.root = AGENT_M_PROCESS;
    ac_fsm_plan *plan = ac_fsm_plan_new(t);
    if (!plan) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    ac_fsm_binding b = {&proc, guards, actions, effect, plan};
    struct ac_session ctx = {0, 0};
    ac_fsm f;
    ac_event ev = {0, 0, NULL};
    double best_table = 1e9, best_hand = 1e9;
    unsigned long events = 0;
    /* BENCH_ONLY=table or BENCH_ONLY=switch runs one side (for profiling) */
    const char *only = getenv("BENCH_ONLY");
    int run_table = !only || strcmp(only, "switch") != 0;
    int run_hand = !only || strcmp(only, "table") != 0;
    /* the two sides alternate, REPS times each, and the best run of each
     * counts: a shared machine's noise only ever slows a run down */
    enum { REPS = 11 };
    for (int rep = 0; rep < REPS; rep++) {
        events = 0;
        double t0 = now();
        for (long r = 0; r < rounds && run_table; r++) {
            ac_fsm_init(&f, &b, &ctx, NULL, NULL);
            ac_fsm_start(&f, &ev);
            ev.type = AGENT_E_LLM_STARTED;
            ac_fsm_dispatch(&f, &ev);
            ev.type = AGENT_E_LLM_DELTA;
            for (int d = 0; d < deltas; d++)
                ac_fsm_dispatch(&f, &ev);
            ev.type = AGENT_E_LLM_COMPLETED;
            ac_fsm_dispatch(&f, &ev);
            events += (unsigned long)deltas + 2;
        }
        double dt = now() - t0;
        if (dt < best_table)
            best_table = dt;
        t0 = now();
        volatile int sink = 0;
        volatile int e_started = AGENT_E_LLM_STARTED, e_delta = AGENT_E_LLM_DELTA,
                     e_completed = AGENT_E_LLM_COMPLETED;
        for (long r = 0; r < rounds && run_hand; r++) {
            int st = H_IDLE;
            a_count(&ctx, &ev); /* begin_call */
            effect(&ctx, 0, 1, &ev);
            st = H_CALLING;
            st = hand_dispatch(st, e_started, &ctx);
            for (int d = 0; d < deltas; d++)
                st = hand_dispatch(st, e_delta, &ctx);
            st = hand_dispatch(st, e_completed, &ctx);
            sink += st;
        }
        dt = now() - t0;
        if (dt < best_hand)
            best_hand = dt;
    }
    double table_rate = (double)events / best_table, hand_rate = (double)events / best_hand;
    printf("process machine, %d deltas per call, %lu events per run, best of %d\n", deltas, events,
           REPS);
    printf("  table dispatch : %8.1f M events/s\n", table_rate / 1e6);
    printf("  hand switch    : %8.1f M events/s\n", hand_rate / 1e6);
    printf("  table time / switch time: %.2fx\n", hand_rate / table_rate);
    printf("  sizeof(ac_fsm) = %zu bytes (dispatcher state per session)\n", sizeof(ac_fsm));

    free(guards);
    free(actions);
    ac_fsm_plan_free(plan);
    if (bench_guard(rounds * (deltas + 2L) / 4 + 1)) /* bench_dispatch_guard.c */
        return 1;
    if (getenv("BENCH_NO_SESSIONS")) /* dispatch figures only (for profiling) */
        return 0;

    /* idle sessions on a real engine (scripted provider, no journal) */
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"x\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    FILE *fs = fopen("/proc/self/statm", "r");
    long pages0 = 0, pages1 = 0, dummy;
    if (fs && fscanf(fs, "%ld %ld", &dummy, &pages0) != 2)
        pages0 = 0;
    if (fs)
        fclose(fs);
    enum { N = 10000 };
    ac_session **ss = calloc(N, sizeof *ss);
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "s%d", i);
        ss[i] = ac_session_new(e, id, NULL, &err);
    }
    fs = fopen("/proc/self/statm", "r");
    if (fs && fscanf(fs, "%ld %ld", &dummy, &pages1) != 2)
        pages1 = 0;
    if (fs)
        fclose(fs);
    printf("10,000 idle sessions: %.1f MB resident growth, %.0f bytes per session\n",
           (double)(pages1 - pages0) * 4096 / 1e6, (double)(pages1 - pages0) * 4096 / N);
    for (int i = 0; i < N; i++)
        ac_session_free(ss[i]);
    free(ss);
    ac_engine_free(e);
    ac_loop_free(loop);
    return 0;
}
