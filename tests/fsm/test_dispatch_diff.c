/*
 * test_dispatch_diff.c - the dispatcher's shortcuts change nothing.
 *
 * The built-in spec is driven with random events and random guard results
 * under four configurations: the plan's dense index or a row scan, each
 * traced (every step goes the general way) and untraced (the one-call path
 * for internal transitions and the straight path for simple external ones).
 * Every guard, action and effect call is folded into a hash, and the four
 * runs of each seed must give the same hash, the same call count and the
 * same final states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_fsm.h"
#include "agentc/fsm.h"
#include "fsm/plan.h"

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

#define N_HANDLERS 64
static ac_guard_fn guard_fns[N_HANDLERS];
static ac_action_fn action_fns[N_HANDLERS];

#define H(i)                                                                                       \
    static bool g##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        fold(s, 0x100u + i + ((uint64_t)ev->type << 16));                                          \
        return next_rand(&s->rng) % 3 == 0;                                                        \
    }                                                                                              \
    static void a##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        fold(s, 0x200u + i + ((uint64_t)ev->type << 16));                                          \
    }
H(0) H(1) H(2) H(3) H(4) H(5) H(6) H(7) H(8) H(9) H(10) H(11) H(12) H(13) H(14) H(15) H(16) H(17)
    H(18) H(19) H(20) H(21) H(22) H(23) H(24) H(25) H(26) H(27) H(28) H(29) H(30) H(31)

static void effect(ac_session *s, uint16_t use, int start, const ac_event *ev)
{
    (void)ev;
    fold(s, 0x300u + use + ((uint64_t)start << 20));
}

static void on_trace(void *ud, const ac_trace_rec *r)
{
    (void)ud;
    (void)r;
}

static void bind_all(void)
{
    ac_guard_fn g[] = {g0,  g1,  g2,  g3,  g4,  g5,  g6,  g7,  g8,  g9,  g10,
                       g11, g12, g13, g14, g15, g16, g17, g18, g19, g20, g21,
                       g22, g23, g24, g25, g26, g27, g28, g29, g30, g31};
    ac_action_fn a[] = {a0,  a1,  a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,  a10,
                        a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21,
                        a22, a23, a24, a25, a26, a27, a28, a29, a30, a31};
    for (int i = 0; i < 32; i++) {
        guard_fns[i] = g[i];
        action_fns[i] = a[i];
    }
}

typedef struct outcome {
    uint64_t hash;
    unsigned long calls;
    uint16_t states[AC_FSM_MAX_DEPTH];
    uint8_t depth;
    int last_rc;
} outcome;

/* One run: restarts whenever the session machine ends, so long runs keep
 * exercising every machine. */
static outcome run(const ac_fsm_binding *b, int traced, uint64_t seed, int steps)
{
    const ac_fsm_tables *t = b->t;
    ac_session s = {14695981039346656037ull, seed ^ 0x9e3779b97f4a7c15ull, 0};
    uint64_t pick = seed;
    ac_fsm f;
    ac_event ev = {0, 1000, NULL};
    ac_fsm_init(&f, b, &s, traced ? on_trace : NULL, NULL);
    ac_fsm_start(&f, &ev);
    outcome o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < steps; i++) {
        /* any event: unhandled ones must be unhandled in every configuration */
        ev.type = (uint16_t)(1 + next_rand(&pick) % (t->n_events - 1u));
        o.last_rc = ac_fsm_dispatch(&f, &ev);
        fold(&s, (uint64_t)(o.last_rc + 7));
        if (f.depth && t->states[f.state[0]].terminal) {
            ac_fsm_stop(&f, &ev);
            ac_fsm_init(&f, b, &s, traced ? on_trace : NULL, NULL);
            ac_fsm_start(&f, &ev);
        }
    }
    o.hash = s.hash;
    o.calls = s.calls;
    o.depth = f.depth;
    memcpy(o.states, f.state, f.depth * sizeof f.state[0]);
    ac_fsm_stop(&f, &ev);
    return o;
}

static void test_configurations_agree(void **state)
{
    (void)state;
    const ac_fsm_tables *t = &agent_fsm;
    assert_true(t->n_guards <= 32 && t->n_actions <= 32);
    bind_all();
    ac_fsm_plan *dense = ac_fsm_plan_new(t), *scan = ac_fsm_plan_new_scan(t);
    assert_non_null(dense);
    assert_non_null(scan);
    assert_non_null(dense->fast);
    assert_null(scan->fast);
    ac_fsm_binding bd = {t, guard_fns, action_fns, effect, dense};
    ac_fsm_binding bs = {t, guard_fns, action_fns, effect, scan};
    unsigned long total = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        outcome ref = run(&bs, 1, seed, 400);
        const outcome others[3] = {run(&bs, 0, seed, 400), run(&bd, 1, seed, 400),
                                   run(&bd, 0, seed, 400)};
        for (int k = 0; k < 3; k++) {
            if (others[k].hash != ref.hash || others[k].calls != ref.calls)
                fail_msg("seed %lu, configuration %d: %lu calls (hash %016llx), the traced row "
                         "scan made %lu (hash %016llx)",
                         (unsigned long)seed, k + 1, others[k].calls,
                         (unsigned long long)others[k].hash, ref.calls,
                         (unsigned long long)ref.hash);
            assert_int_equal(others[k].depth, ref.depth);
            assert_memory_equal(others[k].states, ref.states, ref.depth * sizeof ref.states[0]);
            assert_int_equal(others[k].last_rc, ref.last_rc);
        }
        total += ref.calls;
    }
    /* the runs did something: on average several handler calls per event */
    assert_true(total > 300ul * 400ul);
    ac_fsm_plan_free(dense);
    ac_fsm_plan_free(scan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_configurations_agree)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
