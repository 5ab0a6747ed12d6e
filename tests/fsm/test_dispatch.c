/*
 * test_dispatch.c - the dispatcher's ordering rules, checked by logging every
 * guard, action and effect call of small specs compiled in-process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentc/fsm.h"
#include "fsm/plan.h"
#include "spec.h"

/* Every test runs twice: with the plan's dense (state, event) index, and
 * with a plan that scans each state's rows (what an oversized spec gets). */
static int use_scan;

#define MAX_H 16

struct ac_session {
    char log[4096];
    size_t len;
    const ac_fsm_tables *t;
    int guard_true[MAX_H];
    int guard_calls;
    int errors, unhandled, ignored;
    const char *last_error;
};

static void logf_(ac_session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(ac_session *s, const char *fmt, ...)
{
    if (s->len >= sizeof s->log - 1)
        return;
    if (s->len)
        s->log[s->len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->log + s->len, sizeof s->log - s->len, fmt, ap);
    va_end(ap);
    if (k > 0)
        s->len += (size_t)k < sizeof s->log - s->len ? (size_t)k : sizeof s->log - s->len - 1;
}

static void clear_log(ac_session *s)
{
    s->len = 0;
    s->log[0] = 0;
}

static bool guard_at(ac_session *s, int i)
{
    s->guard_calls++;
    logf_(s, "?%s", s->t->guard_names[i]);
    return s->guard_true[i] != 0;
}
static void action_at(ac_session *s, int i)
{
    logf_(s, "%s", s->t->action_names[i]);
}

#define G(i)                                                                                       \
    static bool g##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        (void)ev;                                                                                  \
        return guard_at(s, i);                                                                     \
    }
#define A(i)                                                                                       \
    static void a##i(ac_session *s, const ac_event *ev)                                            \
    {                                                                                              \
        (void)ev;                                                                                  \
        action_at(s, i);                                                                           \
    }
/* clang-format off */
G(0) G(1) G(2) G(3) G(4) G(5) G(6) G(7)
A(0) A(1) A(2) A(3) A(4) A(5) A(6) A(7) A(8) A(9) A(10) A(11) A(12) A(13) A(14) A(15)
static const ac_guard_fn guard_fns[] = {g0, g1, g2, g3, g4, g5, g6, g7};
static ac_action_fn action_fns_mut[] = {a0, a1, a2,  a3,  a4,  a5,  a6,  a7,
                                        a8, a9, a10, a11, a12, a13, a14, a15};
static const ac_action_fn *const action_fns = action_fns_mut;
/* clang-format on */

static void effect_fn(ac_session *s, uint16_t use, int start, const ac_event *ev)
{
    (void)ev;
    logf_(s, "%s:%s", start ? "start" : "stop", s->t->effect_names[s->t->effect_uses[use].effect]);
}

static void on_trace(void *ud, const ac_trace_rec *r)
{
    ac_session *s = ud;
    if (r->kind == AC_TRACE_ERROR) {
        s->errors++;
        s->last_error = r->message;
    } else if (r->kind == AC_TRACE_UNHANDLED) {
        s->unhandled++;
    } else if (r->kind == AC_TRACE_IGNORED) {
        s->ignored++;
    }
}

typedef struct rig {
    ac_spec *spec;
    ac_fsm_tables *t;
    ac_fsm_plan *plan;
    ac_fsm_binding b;
    ac_fsm fsm;
    ac_session s;
} rig;

static rig *rig_new(const char *text)
{
    rig *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->spec = ac_spec_parse("t.fsm", text, strlen(text));
    assert_non_null(r->spec);
    if (r->spec->n_errors == 0)
        ac_spec_check(r->spec);
    if (r->spec->n_errors)
        ac_spec_print_diags(r->spec, stderr);
    assert_int_equal(r->spec->n_errors, 0);
    r->t = ac_spec_lower(r->spec, "t.fsm");
    assert_non_null(r->t);
    assert_true(r->t->n_guards <= 8);
    assert_true(r->t->n_actions <= 16);
    r->b.t = r->t;
    r->b.guards = guard_fns;
    r->b.actions = action_fns;
    r->b.effect = effect_fn;
    r->plan = use_scan ? ac_fsm_plan_new_scan(r->t) : ac_fsm_plan_new(r->t);
    assert_non_null(r->plan);
    r->b.plan = r->plan;
    r->s.t = r->t;
    ac_fsm_init(&r->fsm, &r->b, &r->s, on_trace, &r->s);
    return r;
}

static void rig_free(rig *r)
{
    ac_fsm_plan_free(r->plan);
    ac_spec_tables_free(r->t);
    ac_spec_free(r->spec);
    free(r);
}

static uint16_t idx_of(const char *const *names, uint16_t n, const char *name)
{
    for (uint16_t i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0)
            return i;
    fail_msg("no such name '%s'", name);
    return AC_FSM_NONE;
}

static void set_guard(rig *r, const char *name, int v)
{
    r->s.guard_true[idx_of(r->t->guard_names, r->t->n_guards, name)] = v;
}

static int start(rig *r)
{
    ac_event ev = {0, 1000, NULL};
    return ac_fsm_start(&r->fsm, &ev);
}

static int send(rig *r, const char *event)
{
    ac_event ev = {idx_of(r->t->event_names, r->t->n_events, event), 2000, NULL};
    return ac_fsm_dispatch(&r->fsm, &ev);
}

static const char *state_of(rig *r, const char *machine)
{
    for (uint16_t m = 0; m < r->t->n_machines; m++)
        if (strcmp(r->t->machines[m].name, machine) == 0) {
            uint16_t st = ac_fsm_state_of(&r->fsm, m);
            return st == AC_FSM_NONE ? "-" : r->t->states[st].name;
        }
    return "?";
}

/* Guards are tried in declared order; the first that holds wins. */
static void test_guard_order(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\nguard a, b, c\naction ta, tb, tc\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S, X, Y, Z\n"
                     " S -> X on go [a] / ta\n S -> Y on go [b] / tb\n S -> Z on go [c] / tc\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    set_guard(r, "b", 1);
    set_guard(r, "c", 1);
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?a ?b tb");
    assert_string_equal(state_of(r, "m"), "Y");
    rig_free(r);
}

/* Exit actions, then transition actions, then entry actions. */
static void test_action_order(void **state)
{
    (void)state;
    rig *r =
        rig_new("outside event quit\noutside event go\naction x1, x2, t1, t2, e1, e2\n"
                "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S { exit x1, x2 }\n"
                " state T { enter e1, e2 }\n S -> T on go / t1, t2\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "x1 x2 t1 t2 e1 e2");
    assert_string_equal(state_of(r, "m"), "T");
    rig_free(r);
}

/* An internal transition runs its actions only. */
static void test_internal(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\naction x, t, e\neffect fx\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S { enter e "
                     "exit x effect fx }\n"
                     " S on go / t\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "e start:fx");
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "t");
    assert_string_equal(state_of(r, "m"), "S");
    rig_free(r);
}

/* An eventless transition is taken as soon as its state is entered. */
static void test_eventless(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\naction e1, t1, e2\neffect f1, f2\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S\n"
                     " state A { enter e1 }\n state B { enter e2 effect f2 }\n"
                     " S -> A on go\n A -> B / t1\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "e1 t1 e2 start:f2");
    assert_string_equal(state_of(r, "m"), "B");
    rig_free(r);
}

/* A guarded eventless cycle stops at the microstep bound with an error. */
static void test_eventless_bound(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\nguard g\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S, A, B\n"
                     " S -> A on go\n A -> B [g]\n B -> A [g]\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    set_guard(r, "g", 1);
    assert_int_equal(send(r, "go"), AC_FSM_FAILED);
    assert_int_equal(r->s.errors, 1);
    assert_non_null(r->s.last_error);
    assert_non_null(strstr(r->s.last_error, "64"));
    /* 64 steps taken, the 65th guard evaluation is refused */
    assert_int_equal(r->s.guard_calls, AC_FSM_MAX_MICROSTEPS + 1);
    /* a failed machine takes no more events */
    assert_int_equal(send(r, "go"), AC_FSM_FAILED);
    rig_free(r);
}

static const char *invoke_spec =
    "outside event quit, go, leave, inner, extra\n"
    "action pe, px, ce, cx, dx, toC, toP, onDone, onExtra\n"
    "effect pf, cf, df\n"
    "machine p {\n initial Idle\n terminal Q\n * -> Q on quit\n state Idle, Out\n"
    " state Run { enter pe exit px effect pf invoke c }\n"
    " Idle -> Run on go\n Run -> Out on leave\n Run -> Out on c.END / onDone\n"
    " Run on extra / onExtra\n}\n"
    "machine c {\n initial A\n terminal END\n"
    " state A { enter ce exit cx effect cf invoke d }\n"
    " A -> END on inner / toC\n}\n"
    "machine d {\n initial D\n terminal Q\n * -> Q on quit\n state D { exit dx effect df }\n}\n";

/* Entering an invoking state starts the child; leaving stops it, deepest first. */
static void test_invoke_start_stop(void **state)
{
    (void)state;
    rig *r = rig_new(invoke_spec);
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "pe start:pf ce start:cf start:df");
    assert_string_equal(state_of(r, "c"), "A");
    assert_string_equal(state_of(r, "d"), "D");
    clear_log(&r->s);
    assert_int_equal(send(r, "leave"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "dx stop:df cx stop:cf px stop:pf");
    assert_string_equal(state_of(r, "p"), "Out");
    assert_string_equal(state_of(r, "c"), "-");
    assert_string_equal(state_of(r, "d"), "-");
    rig_free(r);
}

/* A child's terminal state posts MACHINE.STATE to the parent; an event the
 * child does not handle bubbles up; a terminal state takes no events. */
static void test_invoke_arrival_bubble(void **state)
{
    (void)state;
    rig *r = rig_new(invoke_spec);
    assert_int_equal(start(r), AC_FSM_HANDLED);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    clear_log(&r->s);
    /* handled by no state of d or c: bubbles to p (internal) */
    assert_int_equal(send(r, "extra"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "onExtra");
    assert_string_equal(state_of(r, "c"), "A");
    clear_log(&r->s);
    assert_int_equal(send(r, "inner"), AC_FSM_HANDLED);
    /* the child's step completes, then the parent takes c.END: exit, then actions */
    assert_string_equal(r->s.log, "dx stop:df cx stop:cf toC px stop:pf onDone");
    assert_string_equal(state_of(r, "p"), "Out");
    assert_int_equal(r->s.unhandled, 0);
    rig_free(r);
}

static void test_terminal_takes_nothing(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go, again\naction t\n"
                     "machine m {\n initial S\n terminal E\n state S\n"
                     " S -> E on go\n * -> S on again / t\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(state_of(r, "m"), "E");
    clear_log(&r->s);
    assert_int_equal(send(r, "again"), AC_FSM_UNHANDLED);
    assert_string_equal(r->s.log, "");
    assert_string_equal(state_of(r, "m"), "E");
    assert_int_equal(r->s.unhandled, 1);
    rig_free(r);
}

/* Unhandled: traced, nothing changes. Ignore: consumed silently. */
static void test_unhandled_and_ignore(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go, stray, quiet\naction x, e\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S { enter e "
                     "exit x }\n state T\n"
                     " S -> T on go\n S ignore quiet\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "stray"), AC_FSM_UNHANDLED);
    assert_int_equal(r->s.unhandled, 1);
    assert_string_equal(r->s.log, "");
    assert_string_equal(state_of(r, "m"), "S");
    assert_int_equal(send(r, "quiet"), AC_FSM_HANDLED);
    assert_int_equal(r->s.ignored, 1);
    assert_int_equal(r->s.unhandled, 1);
    assert_string_equal(r->s.log, "");
    assert_string_equal(state_of(r, "m"), "S");
    rig_free(r);
}

/* The same effect use in source and target keeps running; a self-transition
 * restarts the state's effects. */
static void test_effect_continuity(void **state)
{
    (void)state;
    rig *r =
        rig_new("outside event quit\nparam p1 = 1\nparam p2 = 2\noutside event go, self, other\neffect req, aux\n"
                "machine m {\n initial A\n terminal Q\n * -> Q on quit\n"
                " state A { effect req(p1) }\n state B { effect req(p1) effect aux }\n"
                " state C { effect req(p2) }\n"
                " A -> B on go\n B -> B on self\n B -> C on other\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "start:req");
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "start:aux");
    clear_log(&r->s);
    assert_int_equal(send(r, "self"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "stop:req stop:aux start:req start:aux");
    clear_log(&r->s);
    /* different params: a different use, so stop then start */
    assert_int_equal(send(r, "other"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "stop:req stop:aux start:req");
    rig_free(r);
}

/* Untraced, an unguarded single-action internal transition of the deepest
 * state is one call; anything else still goes the general way: a guarded
 * row of the same event, rows of a parent (bubbling), a child's own row
 * before its parent's, unhandled events. */
static void test_fast_path(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event tick, tock, go, back, fin, hop\nguard g\n"
                     "action t1, t2, t3, px, ph\n"
                     "machine p {\n initial P\n terminal Q\n * -> Q on quit\n"
                     " state P { invoke c }\n P on tock / px\n P on tick / px\n P on hop / ph\n}\n"
                     "machine c {\n initial A\n terminal Z\n state A, B\n"
                     " A on tick / t1\n A -> B on go\n B on tick [g] / t2\n B on tick / t3\n"
                     " B -> A on back\n A -> Z on fin\n B -> A on hop [g] / t1\n}\n");
    ac_fsm_init(&r->fsm, &r->b, &r->s, NULL, NULL); /* untraced */
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "tick"), AC_FSM_HANDLED);
    assert_int_equal(send(r, "tick"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "t1 t1"); /* the child's row, not the parent's */
    clear_log(&r->s);
    assert_int_equal(send(r, "tock"), AC_FSM_HANDLED); /* bubbles to p */
    assert_string_equal(r->s.log, "px");
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_int_equal(send(r, "tick"), AC_FSM_HANDLED); /* guarded: g is false */
    set_guard(r, "g", 1);
    assert_int_equal(send(r, "tick"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?g t3 ?g t2");
    assert_string_equal(state_of(r, "c"), "B");
    /* a guarded straight row whose guard fails: the event bubbles to p, and
     * the guard is asked once */
    clear_log(&r->s);
    set_guard(r, "g", 0);
    assert_int_equal(send(r, "hop"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?g ph");
    assert_string_equal(state_of(r, "c"), "B");
    clear_log(&r->s);
    set_guard(r, "g", 1);
    assert_int_equal(send(r, "hop"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?g t1");
    assert_string_equal(state_of(r, "c"), "A");
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "back"), AC_FSM_HANDLED);
    assert_int_equal(send(r, "tick"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "t1");
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_int_equal(send(r, "back"), AC_FSM_HANDLED);
    assert_int_equal(send(r, "quit"), AC_FSM_HANDLED);
    /* stopped machine: nothing runs, not even the fast path */
    clear_log(&r->s);
    assert_int_equal(send(r, "tick"), AC_FSM_UNHANDLED);
    assert_string_equal(r->s.log, "");
    ac_event ev = {0, 3000, NULL};
    ac_fsm_stop(&r->fsm, &ev);
    assert_int_equal(send(r, "tick"), AC_FSM_FAILED);
    assert_string_equal(r->s.log, "");
    rig_free(r);
}

/* An effect both states declare is handed over once per use: with two
 * equal uses in the target and one in the source, one keeps running and
 * the other starts; leaving through an eventless step stops the one that
 * was handed over. */
static void test_effect_handover_eventless(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\nparam p1 = 1\noutside event go\nguard g\neffect req, aux\n"
                     "machine m {\n initial A\n terminal Q\n * -> Q on quit\n"
                     " state A { effect req(p1) }\n state B { effect req(p1) effect aux }\n"
                     " state C { effect aux }\n"
                     " A -> B on go\n B -> C [g]\n C -> A on go\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    clear_log(&r->s);
    set_guard(r, "g", 1);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    /* B is left at once: req (handed over by A) stops, aux never started
     * in B and starts in C */
    assert_string_equal(r->s.log, "?g stop:req start:aux");
    assert_string_equal(state_of(r, "m"), "C");
    clear_log(&r->s);
    set_guard(r, "g", 0);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "stop:aux start:req");
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?g start:aux");
    rig_free(r);
}

/* A state left by an eventless step before its effects start: the uses
 * handed over to it stop after its exit actions (the documented order). */
static void test_eventless_exit_order(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\nguard g\naction xb\neffect req\n"
                     "machine m {\n initial A\n terminal Q, Z\n * -> Q on quit\n"
                     " state A { effect req }\n state B { exit xb effect req }\n"
                     " A -> B on go\n B -> Z [g]\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    set_guard(r, "g", 1);
    clear_log(&r->s);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "?g xb stop:req");
    rig_free(r);
}

/* After the eventless bound fails, stopping the machine stops no effect that
 * never started. */
static void test_eventless_bound_then_stop(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\nguard g\neffect ea, eb\n"
                     "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S\n"
                     " state A { effect ea }\n state B { effect eb }\n"
                     " S -> A on go\n A -> B [g]\n B -> A [g]\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    set_guard(r, "g", 1);
    assert_int_equal(send(r, "go"), AC_FSM_FAILED);
    assert_int_equal(r->s.errors, 1);
    clear_log(&r->s);
    ac_event ev = {0, 3000, NULL};
    ac_fsm_stop(&r->fsm, &ev);
    assert_null(strstr(r->s.log, "stop:"));
    rig_free(r);
}

/* A handler calling the dispatcher on its own machine is refused: the
 * machine fails (reported), nothing runs out of place, and it can still be
 * stopped. */
static rig *reentry_rig;
static int reentry_what; /* 0: dispatch, 1: stop, 2: start */
static void reenter(ac_session *s, const ac_event *ev)
{
    (void)s;
    ac_event inner = {ev->type, ev->time_ms, NULL};
    int rc = reentry_what == 0   ? ac_fsm_dispatch(&reentry_rig->fsm, &inner)
             : reentry_what == 2 ? ac_fsm_start(&reentry_rig->fsm, &inner)
                                 : (ac_fsm_stop(&reentry_rig->fsm, &inner), AC_FSM_FAILED);
    assert_int_equal(rc, AC_FSM_FAILED);
}

static void test_reentry_refused(void **state)
{
    (void)state;
    for (reentry_what = 0; reentry_what < 3; reentry_what++) {
        for (int traced = 0; traced < 2; traced++) {
            rig *r = rig_new("outside event quit\noutside event go, tick\naction a\n"
                             "machine m {\n initial A\n terminal Q\n * -> Q on quit\n state A, B\n"
                             " A -> B on go / a\n B on tick / a\n B -> A on go\n}\n");
            action_fns_mut[0] = reenter; /* the action "a" */
            reentry_rig = r;
            ac_fsm_init(&r->fsm, &r->b, &r->s, traced ? on_trace : NULL, &r->s);
            assert_int_equal(start(r), AC_FSM_HANDLED);
            assert_int_equal(send(r, "go"), AC_FSM_FAILED);
            assert_true(r->fsm.error);
            if (traced)
                assert_int_equal(r->s.errors, 1);
            /* failed: nothing more runs, not even the one-call path */
            assert_int_equal(send(r, "tick"), AC_FSM_FAILED);
            assert_int_equal(send(r, "go"), AC_FSM_FAILED);
            ac_event ev = {0, 3000, NULL};
            ac_fsm_stop(&r->fsm, &ev);
            assert_int_equal(r->fsm.depth, 0);
            action_fns_mut[0] = a0;
            rig_free(r);
        }
    }
}

/* Arrival events work whatever the length of the machine and state names. */
static void test_arrival_long_names(void **state)
{
    (void)state;
    char m[301], t[301], spec[2048];
    memset(m, 'm', 300);
    memset(t, 'T', 300);
    m[300] = t[300] = 0;
    snprintf(spec, sizeof spec,
             "outside event quit\noutside event go, finish\naction done\n"
             "machine p {\n initial P\n terminal Q, END\n * -> Q on quit\n"
             " state RUN { invoke %s }\n P -> RUN on go\n RUN -> END on %s.%s / done\n}\n"
             "machine %s {\n initial W\n terminal %s\n W -> %s on finish\n}\n",
             m, m, t, m, t, t);
    rig *r = rig_new(spec);
    assert_int_equal(start(r), AC_FSM_HANDLED);
    assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    clear_log(&r->s);
    assert_int_equal(send(r, "finish"), AC_FSM_HANDLED);
    assert_string_equal(r->s.log, "done");
    assert_string_equal(state_of(r, "p"), "END");
    rig_free(r);
}

/* A binding without its plan: the machine never starts, nothing runs. */
static void test_no_plan(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\naction e\n"
                     "machine m {\n initial S\n terminal Q\n state S { enter e }\n"
                     " S -> Q on quit\n}\n");
    r->b.plan = NULL;
    ac_fsm_init(&r->fsm, &r->b, &r->s, NULL, NULL);
    assert_int_equal(start(r), AC_FSM_FAILED);
    assert_int_equal(send(r, "quit"), AC_FSM_FAILED);
    assert_string_equal(r->s.log, "");
    rig_free(r);
}

/* 1e5 dispatches through a small cycle. Whether dispatch allocates is not
 * checked here (no allocator hook); this only proves it runs steady. */
static void test_many_dispatches(void **state)
{
    (void)state;
    rig *r = rig_new("outside event quit\noutside event go\nguard g\naction t\n"
                     "machine m {\n initial A\n terminal Q\n * -> Q on quit\n state A, B\n"
                     " A -> B on go [g] / t\n B -> A on go\n}\n");
    assert_int_equal(start(r), AC_FSM_HANDLED);
    set_guard(r, "g", 1);
    for (int i = 0; i < 100000; i++) {
        clear_log(&r->s);
        assert_int_equal(send(r, "go"), AC_FSM_HANDLED);
    }
    assert_string_equal(state_of(r, "m"), "A");
    assert_int_equal(r->s.guard_calls, 50000);
    assert_int_equal(r->s.errors + r->s.unhandled, 0);
    rig_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_order),
        cmocka_unit_test(test_action_order),
        cmocka_unit_test(test_internal),
        cmocka_unit_test(test_eventless),
        cmocka_unit_test(test_eventless_bound),
        cmocka_unit_test(test_invoke_start_stop),
        cmocka_unit_test(test_invoke_arrival_bubble),
        cmocka_unit_test(test_terminal_takes_nothing),
        cmocka_unit_test(test_unhandled_and_ignore),
        cmocka_unit_test(test_effect_continuity),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_effect_handover_eventless),
        cmocka_unit_test(test_eventless_exit_order),
        cmocka_unit_test(test_eventless_bound_then_stop),
        cmocka_unit_test(test_reentry_refused),
        cmocka_unit_test(test_arrival_long_names),
        cmocka_unit_test(test_no_plan),
        cmocka_unit_test(test_many_dispatches),
    };
    int failed = cmocka_run_group_tests_name("indexed", tests, NULL, NULL);
    use_scan = 1;
    failed += cmocka_run_group_tests_name("scanned", tests, NULL, NULL);
    return failed;
}
