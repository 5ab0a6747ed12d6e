/*
 * diff_driver.c - see diff_driver.h.
 *
 * Each run folds every guard, action and effect call (with its index, the
 * event and start/stop) and every dispatch result into a hash. Guards
 * answer from a generator seeded per run, so runs that make the same calls
 * get the same answers. After every event the five hashes, call counts and
 * active states must be equal; the first difference is reported with the
 * step and the event.
 */
#include <stdio.h>
#include <string.h>

#include "diff_driver.h"
#include "fsm/plan.h"
#include "ref_dispatch.h"

struct ac_session {
    uint64_t hash, rng;
    unsigned long calls;
};

static void fold(ac_session *s, uint64_t v)
{
    s->hash = (s->hash ^ v) * 1099511628211ull;
    s->calls++;
}

static uint64_t next_rand(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

#define H(i)                                                                                       \
    static bool g##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        fold(s, 0x100u + (i) + ((uint64_t)ev->type << 16));                                        \
        return next_rand(&s->rng) % 3 == 0;                                                        \
    }                                                                                              \
    static void a##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        fold(s, 0x200u + (i) + ((uint64_t)ev->type << 16));                                        \
    }
/* clang-format off */
#define H8(i) H(i##0) H(i##1) H(i##2) H(i##3) H(i##4) H(i##5) H(i##6) H(i##7)
H8(0) H8(1) H8(2) H8(3) H8(4) H8(5) H8(6) H8(7)
#define L8(p, i) p##i##0, p##i##1, p##i##2, p##i##3, p##i##4, p##i##5, p##i##6, p##i##7
static const ac_guard_fn guard_fns[DIFF_MAX_HANDLERS] = {
    L8(g, 0), L8(g, 1), L8(g, 2), L8(g, 3), L8(g, 4), L8(g, 5), L8(g, 6), L8(g, 7)};
static const ac_action_fn action_fns[DIFF_MAX_HANDLERS] = {
    L8(a, 0), L8(a, 1), L8(a, 2), L8(a, 3), L8(a, 4), L8(a, 5), L8(a, 6), L8(a, 7)};
/* clang-format on */

static void effect(ac_session *s, uint16_t use, int start, const ac_event *ev)
{
    fold(s, 0x300u + use + ((uint64_t)start << 20) + (ev ? (uint64_t)ev->type << 24 : 0));
}

static void on_trace(void *ud, const ac_trace_rec *r)
{
    (void)ud;
    (void)r;
}

enum { N_REAL = 4 };

typedef struct runner {
    ac_session s;
    ac_fsm f;
    const ac_fsm_binding *b;
    int traced;
} runner;

static void real_restart(runner *r, const ac_event *ev)
{
    ac_fsm_stop(&r->f, ev);
    ac_fsm_init(&r->f, r->b, &r->s, r->traced ? on_trace : NULL, NULL);
    fold(&r->s, 0x400u + (uint64_t)(ac_fsm_start(&r->f, ev) + 7));
}

static int fail_at(char *msg, size_t cap, int step, uint16_t event, int config, const char *what)
{
    static const char *const names[N_REAL] = {"dense index, traced", "dense index, untraced",
                                              "row scan, traced", "row scan, untraced"};
    snprintf(msg, cap, "step %d (event %u): %s: %s differ from the reference", step, event,
             names[config], what);
    return 0;
}

int diff_run(const ac_fsm_tables *t, uint64_t seed, int steps, diff_stats *stats, char *msg,
             size_t cap)
{
    return diff_run_tampered(t, seed, steps, stats, msg, cap, NULL);
}

int diff_run_tampered(const ac_fsm_tables *t, uint64_t seed, int steps, diff_stats *stats,
                      char *msg, size_t cap, void (*tamper)(struct ac_fsm_plan *dense))
{
    if (t->n_guards > DIFF_MAX_HANDLERS || t->n_actions > DIFF_MAX_HANDLERS) {
        snprintf(msg, cap, "skipped: more than %d guards or actions", DIFF_MAX_HANDLERS);
        return -1;
    }
    ac_fsm_plan *dense = ac_fsm_plan_new(t), *scan = ac_fsm_plan_new_scan(t);
    ref_fsm ref;
    ac_session rs = {14695981039346656037ull, seed ^ 0x9e3779b97f4a7c15ull, 0};
    if (!dense || !scan || ref_fsm_init(&ref, t, guard_fns, action_fns, effect, &rs)) {
        ac_fsm_plan_free(dense);
        ac_fsm_plan_free(scan);
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    if (tamper)
        tamper(dense);
    ac_fsm_binding bd = {t, guard_fns, action_fns, effect, dense};
    ac_fsm_binding bs = {t, guard_fns, action_fns, effect, scan};
    runner run[N_REAL];
    for (int k = 0; k < N_REAL; k++) {
        run[k].s = rs;
        run[k].b = k < 2 ? &bd : &bs;
        run[k].traced = !(k & 1);
        ac_fsm_init(&run[k].f, run[k].b, &run[k].s, run[k].traced ? on_trace : NULL, NULL);
    }
    ac_event ev = {0, 1000, NULL};
    fold(&rs, 0x400u + (uint64_t)(ref_fsm_start(&ref, &ev) + 7));
    for (int k = 0; k < N_REAL; k++)
        fold(&run[k].s, 0x400u + (uint64_t)(ac_fsm_start(&run[k].f, &ev) + 7));
    uint64_t pick = seed;
    int ok = 1;
    unsigned long restarts = 0;
    for (int step = 0; step < steps && ok; step++) {
        /* mostly an event some active state has a row for, so the machines
         * get deep; otherwise any event, the eventless slot and one past the
         * last included: what nobody handles must be unhandled everywhere */
        ev.type = (uint16_t)(next_rand(&pick) % (t->n_events + 1u));
        if (ref.depth && next_rand(&pick) % 4 != 0) {
            /* the deepest level most of the time: the root's rows end it */
            unsigned level =
                next_rand(&pick) % 4 ? ref.depth - 1u : (unsigned)(next_rand(&pick) % ref.depth);
            const ac_fsm_state *st = &t->states[ref.state[level]];
            if (st->n_transitions) {
                const ac_fsm_transition *tr =
                    &t->transitions[st->first_transition + next_rand(&pick) % st->n_transitions];
                /* rows that end the root (cancel and the like) would keep
                 * every run short: most of the time they are passed over */
                int ends =
                    level == 0 && tr->kind == AC_TR_EXTERNAL && t->states[tr->target].terminal;
                if (tr->event != AC_FSM_EVENTLESS && (!ends || next_rand(&pick) % 8 == 0))
                    ev.type = tr->event;
            }
        }
        ev.time_ms += 10;
        fold(&rs, 0x500u + (uint64_t)(ref_fsm_dispatch(&ref, &ev) + 7));
        for (int k = 0; k < N_REAL; k++)
            fold(&run[k].s, 0x500u + (uint64_t)(ac_fsm_dispatch(&run[k].f, &ev) + 7));
        for (int k = 0; k < N_REAL && ok; k++) {
            if (run[k].s.calls != rs.calls || run[k].s.hash != rs.hash)
                ok = fail_at(msg, cap, step, ev.type, k, "the handler calls");
            else if (run[k].f.depth != ref.depth ||
                     memcmp(run[k].f.state, ref.state, ref.depth * sizeof ref.state[0]) != 0)
                ok = fail_at(msg, cap, step, ev.type, k, "the active states");
        }
        /* keep every machine busy: restart once the root has ended or failed */
        if (ok && (ref.error || (ref.depth && t->states[ref.state[0]].terminal))) {
            restarts++;
            ref_fsm_stop(&ref, &ev);
            ref.error = 0;
            ref.qn = ref.qh = 0;
            ref.n_carry = ref.n_pending = 0;
            ref.unstarted = AC_FSM_NONE;
            fold(&rs, 0x400u + (uint64_t)(ref_fsm_start(&ref, &ev) + 7));
            for (int k = 0; k < N_REAL; k++)
                real_restart(&run[k], &ev);
        }
    }
    for (int k = 0; k < N_REAL; k++)
        ac_fsm_stop(&run[k].f, &ev);
    ref_fsm_stop(&ref, &ev);
    if (stats) {
        stats->calls += rs.calls;
        stats->restarts += restarts;
    }
    ref_fsm_free(&ref);
    ac_fsm_plan_free(dense);
    ac_fsm_plan_free(scan);
    return ok;
}
