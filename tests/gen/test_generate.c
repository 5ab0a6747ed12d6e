/*
 * test_generate.c - tables made by the agentc_generate() CMake function
 * from tests/gen/golden/tiny.fsm, compiled and linked like an embedder's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tiny_fsm.h"

static void test_tables_match_the_spec(void **state)
{
    (void)state;
    const ac_fsm_tables *t = &tiny_fsm;
    assert_string_equal(t->spec_path, "tests/gen/golden/tiny.fsm");
    assert_string_equal(t->hash, TINY_SPEC_HASH);
    assert_int_equal(t->n_machines, TINY_M__COUNT);
    assert_int_equal(t->n_states, TINY_S__COUNT);
    assert_int_equal(t->n_events, TINY_E__COUNT);
    assert_string_equal(t->states[TINY_S_TINY_OFF].name, "OFF");
    assert_int_equal(t->machines[TINY_M_TINY].initial, TINY_S_TINY_OFF);
    assert_true(t->states[TINY_S_TINY_ON].terminal);
    assert_false(t->states[TINY_S_TINY_OFF].terminal);

    /* OFF -> ON on go / hello */
    const ac_fsm_state *off = &t->states[TINY_S_TINY_OFF];
    assert_int_equal(off->n_transitions, 1);
    const ac_fsm_transition *tr = &t->transitions[off->first_transition];
    assert_int_equal(tr->event, TINY_E_GO);
    assert_int_equal(tr->target, TINY_S_TINY_ON);
    assert_int_equal(tr->guard, AC_FSM_NONE);
    assert_int_equal(t->lists[tr->actions], 1);
    assert_int_equal(t->lists[tr->actions + 1], TINY_A_HELLO);
    assert_string_equal(t->action_names[TINY_A_HELLO], "hello");
    assert_string_equal(t->event_names[TINY_E_GO], "go");
    /* the empty list and OFF's action list; no guards, so one AC_G_END */
    assert_int_equal(t->n_lists, 3);
    assert_int_equal(t->n_guard_code, 1);
    assert_int_equal(t->guard_code[0], AC_G_END);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tables_match_the_spec)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
