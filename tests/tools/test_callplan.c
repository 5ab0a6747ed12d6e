/*
 * test_callplan.c - the scheduler of a turn's calls: calls start in order
 * when nothing they wait for is running, a wait holds a call back until the
 * other ends, skip_if_failed reports the failed call, cycles are found (each
 * call on one with the shortest way round) and stop waiting, and calls that
 * wait on a cycle start once it has ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "session/callplan.h"

static void test_order_and_waits(void **st)
{
    (void)st;
    ac_callplan *p = ac_callplan_new(4);
    assert_non_null(p);
    assert_int_equal(ac_callplan_wait(p, 1, 0, 0), 0); /* 1 waits for 0 */
    assert_int_equal(ac_callplan_wait(p, 3, 1, 1), 0); /* 3 waits for 1, skipped if it fails */
    assert_int_equal(ac_callplan_wait(p, 3, 1, 0), 0); /* repeated: kept once, skip stays */
    assert_int_equal(ac_callplan_wait(p, 2, 2, 0), 0); /* on itself: ignored */
    assert_int_equal(ac_callplan_wait(p, 9, 0, 0), -1);
    assert_true(ac_callplan_waits(p, 1, 0));
    assert_false(ac_callplan_waits(p, 0, 1));
    assert_int_equal(ac_callplan_check(p, NULL, NULL), 0);
    size_t dep;
    assert_int_equal(ac_callplan_next(p, &dep), 0);
    assert_int_equal(ac_callplan_next(p, &dep), 2);  /* independent: starts alongside 0 */
    assert_int_equal(ac_callplan_next(p, &dep), -1); /* 1 and 3 wait */
    ac_callplan_done(p, 0, 1);
    assert_int_equal(ac_callplan_next(p, &dep), 1);
    assert_int_equal(dep, (size_t)-1);
    assert_int_equal(ac_callplan_next(p, &dep), -1);
    ac_callplan_done(p, 1, 0); /* 1 fails: 3 must not run */
    assert_int_equal(ac_callplan_next(p, &dep), 3);
    assert_int_equal(dep, 1);
    assert_int_equal(ac_callplan_next(p, &dep), -1);
    ac_callplan_free(p);
}

typedef struct seen {
    size_t n;
    size_t call[8], len[8], cycle[8][8];
} seen;

static void on_cycle(void *ud, size_t call, const size_t *cycle, size_t len)
{
    seen *s = ud;
    s->call[s->n] = call;
    s->len[s->n] = len;
    memcpy(s->cycle[s->n], cycle, len * sizeof *cycle);
    s->n++;
}

static void test_cycles(void **st)
{
    (void)st;
    /* 0 -> 1 -> 2 -> 0 (each waits for the next), 3 waits for 1, 4 alone, 5 <-> 6 */
    ac_callplan *p = ac_callplan_new(7);
    ac_callplan_wait(p, 0, 1, 0);
    ac_callplan_wait(p, 1, 2, 0);
    ac_callplan_wait(p, 2, 0, 0);
    ac_callplan_wait(p, 3, 1, 0);
    ac_callplan_wait(p, 5, 6, 0);
    ac_callplan_wait(p, 6, 5, 0);
    seen s;
    memset(&s, 0, sizeof s);
    assert_int_equal(ac_callplan_check(p, on_cycle, &s), 5);
    assert_int_equal(s.n, 5);
    size_t want0[] = {0, 1, 2};
    assert_int_equal(s.call[0], 0);
    assert_int_equal(s.len[0], 3);
    assert_memory_equal(s.cycle[0], want0, sizeof want0);
    size_t want2[] = {2, 0, 1};
    assert_int_equal(s.call[2], 2);
    assert_memory_equal(s.cycle[2], want2, sizeof want2);
    size_t want5[] = {5, 6};
    assert_int_equal(s.call[3], 5);
    assert_int_equal(s.len[3], 2);
    assert_memory_equal(s.cycle[3], want5, sizeof want5);
    /* cycle members wait for nothing now; 3 still waits for 1 */
    size_t dep;
    assert_int_equal(ac_callplan_next(p, &dep), 0);
    assert_int_equal(ac_callplan_next(p, &dep), 1);
    assert_int_equal(ac_callplan_next(p, &dep), 2);
    assert_int_equal(ac_callplan_next(p, &dep), 4);
    assert_int_equal(ac_callplan_next(p, &dep), 5);
    assert_int_equal(ac_callplan_next(p, &dep), 6);
    assert_int_equal(ac_callplan_next(p, &dep), -1);
    ac_callplan_done(p, 1, 0);
    assert_int_equal(ac_callplan_next(p, &dep), 3);
    assert_int_equal(dep, (size_t)-1); /* a plain wait: it runs anyway */
    ac_callplan_free(p);
}

static void test_long_chain(void **st)
{
    (void)st;
    /* 2,000 calls each waiting for the previous: no recursion limit, one at a time */
    enum { N = 2000 };
    ac_callplan *p = ac_callplan_new(N);
    for (size_t i = 1; i < N; i++)
        ac_callplan_wait(p, i, i - 1, 1);
    ac_callplan_wait(p, 0, N - 1, 0); /* closes one big cycle */
    assert_int_equal(ac_callplan_check(p, NULL, NULL), N);
    ac_callplan_free(p);
    p = ac_callplan_new(N);
    for (size_t i = 1; i < N; i++)
        ac_callplan_wait(p, i, i - 1, 1);
    assert_int_equal(ac_callplan_check(p, NULL, NULL), 0);
    size_t dep;
    for (long i = 0; i < N; i++) {
        assert_int_equal(ac_callplan_next(p, &dep), i);
        assert_int_equal(ac_callplan_next(p, &dep), -1);
        ac_callplan_done(p, (size_t)i, 1);
    }
    ac_callplan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_waits),
        cmocka_unit_test(test_cycles),
        cmocka_unit_test(test_long_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
