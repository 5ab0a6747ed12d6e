/*
 * test_dispatch_noalloc.c - dispatch allocates no memory.
 *
 * malloc, calloc, realloc and free are wrapped at link time
 * (-Wl,--wrap=...), so every allocation made by the dispatcher's object
 * code is counted. The built-in tables are driven through all three
 * machines (invoke, arrival events, bubbling, internal transitions,
 * eventless steps, unhandled events) with the counter armed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_fsm.h"
#include "agentc/fsm.h"
#include "fsm/plan.h"

static volatile int armed; /* volatile: malloc is assumed not to read globals */
static volatile unsigned long allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
    allocations += armed;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t m)
{
    allocations += armed;
    return __real_calloc(n, m);
}
void *__wrap_realloc(void *p, size_t n)
{
    allocations += armed;
    return __real_realloc(p, n);
}

struct ac_session {
    unsigned long calls;
    int guard_value;
};

static bool guard(ac_session *s, const ac_event *ev)
{
    (void)ev;
    s->calls++;
    return s->guard_value;
}
static void action(ac_session *s, const ac_event *ev)
{
    (void)ev;
    s->calls++;
}
static void effect(ac_session *s, uint16_t use, int start, const ac_event *ev)
{
    (void)use;
    (void)start;
    (void)ev;
    s->calls++;
}
static unsigned long traced;
static void on_trace(void *ud, const ac_trace_rec *r)
{
    (void)ud;
    (void)r;
    traced++;
}

static void drive(const ac_fsm_binding *b, int with_trace)
{
    const ac_fsm_tables *t = b->t;
    static const char *const script[] = {"spawn",        "user_message",
                                         "llm.started",  "llm.delta",
                                         "llm.delta",    "llm.delta",
                                         "ping",         "llm.completed",
                                         "user_message", "pause",
                                         "resume",       "cancel",
                                         "ping",         NULL};
    struct ac_session ctx = {0, 0};
    ac_fsm f;
    ac_event ev = {0, 1000, NULL};
    for (int round = 0; round < 200; round++) {
        ctx.guard_value = round & 1;
        ac_fsm_init(&f, b, &ctx, with_trace ? on_trace : NULL, NULL);
        ac_fsm_start(&f, &ev);
        for (const char *const *e = script; *e; e++) {
            for (uint16_t i = 1; i < t->n_events; i++)
                if (strcmp(t->event_names[i], *e) == 0)
                    ev.type = i;
            ac_fsm_dispatch(&f, &ev);
        }
        ac_fsm_stop(&f, &ev);
    }
    assert_true(ctx.calls > 0);
}

static void test_no_allocation(void **state)
{
    (void)state;
    const ac_fsm_tables *t = &agent_fsm;
    ac_guard_fn *guards = calloc(t->n_guards, sizeof *guards);
    ac_action_fn *actions = calloc(t->n_actions, sizeof *actions);
    for (uint16_t i = 0; i < t->n_guards; i++)
        guards[i] = guard;
    for (uint16_t i = 0; i < t->n_actions; i++)
        actions[i] = action;
    ac_fsm_plan *scan_plan = ac_fsm_plan_new_scan(t), *plan = ac_fsm_plan_new(t);
    assert_non_null(scan_plan);
    assert_non_null(plan);
    ac_fsm_binding scan = {t, guards, actions, effect, scan_plan};
    ac_fsm_binding indexed = {t, guards, actions, effect, plan};

    /* the counter works: an allocation while armed is seen */
    armed = 1;
    void *volatile probe = malloc(16);
    armed = 0;
    assert_int_equal(allocations, 1);
    free(probe);
    allocations = 0;

    armed = 1;
    drive(&scan, 0);
    drive(&scan, 1);
    drive(&indexed, 1);
    drive(&indexed, 0);
    armed = 0;
    assert_true(traced > 1000);
    assert_int_equal(allocations, 0);
    free(guards);
    free(actions);
    ac_fsm_plan_free(scan_plan);
    ac_fsm_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_no_allocation)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
