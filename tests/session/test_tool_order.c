/*
 * test_tool_order.c - the order of a turn's calls (session/tool_order.h) and
 * the names of namespaced tools (util/toolname.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "session/tool_order.h"
#include "util/toolname.h"

/* calls 0..4: 0, 2, 4 are one toolkit's pipeline; 1 and 3 independent */
static void test_pipeline_and_parallel(void **st)
{
    (void)st;
    ac_tool_order *o = ac_tool_order_new(5);
    assert_non_null(o);
    assert_int_equal(ac_tool_order_after(o, 2, 0, 1), 0);
    assert_int_equal(ac_tool_order_after(o, 4, 2, 1), 0);
    assert_int_equal(ac_tool_order_after(o, 4, 4, 1), -1);
    assert_int_equal(ac_tool_order_after(o, 9, 0, 1), -1);
    size_t because = 99;
    assert_int_equal(ac_tool_order_next_skipped(o, &because), AC_ORDER_NONE);
    assert_int_equal(ac_tool_order_next_ready(o), 0);
    assert_int_equal(ac_tool_order_next_ready(o), 1);
    assert_int_equal(ac_tool_order_next_ready(o), 3);
    assert_int_equal(ac_tool_order_next_ready(o), AC_ORDER_NONE); /* 2 waits for 0 */
    ac_tool_order_done(o, 0, 1);
    assert_int_equal(ac_tool_order_next_ready(o), 2);
    ac_tool_order_done(o, 2, 0); /* fails: 4 is skipped, because of 2 */
    assert_int_equal(ac_tool_order_next_ready(o), AC_ORDER_NONE);
    assert_int_equal(ac_tool_order_next_skipped(o, &because), 4);
    assert_int_equal(because, 2);
    assert_int_equal(ac_tool_order_next_skipped(o, &because), AC_ORDER_NONE);
    ac_tool_order_done(o, 4, 0); /* nothing for a skipped call */
    ac_tool_order_free(o);
}

/* a skip carries the first failure down the chain; an edge without skip runs anyway */
static void test_skip_chain(void **st)
{
    (void)st;
    ac_tool_order *o = ac_tool_order_new(4);
    ac_tool_order_after(o, 1, 0, 1);
    ac_tool_order_after(o, 2, 1, 1);
    ac_tool_order_after(o, 3, 0, 0);
    assert_int_equal(ac_tool_order_next_ready(o), 0);
    ac_tool_order_done(o, 0, 0);
    size_t because = 99;
    assert_int_equal(ac_tool_order_next_skipped(o, &because), 1);
    assert_int_equal(because, 0);
    assert_int_equal(ac_tool_order_next_skipped(o, &because), 2);
    assert_int_equal(because, 0);
    assert_int_equal(ac_tool_order_next_ready(o), 3);
    ac_tool_order_free(o);
}

static void test_names(void **st)
{
    (void)st;
    char out[200], why[300];
    assert_int_equal(ac_toolname_compose("plane", "login", out, sizeof out, why, sizeof why), 0);
    assert_string_equal(out, "plane::login");
    assert_int_equal(ac_toolname_to_wire(out, out, sizeof out), 0);
    assert_string_equal(out, "plane__login");
    assert_int_equal(ac_toolname_compose("a__b", "t", out, sizeof out, why, sizeof why), -1);
    assert_int_equal(ac_toolname_compose("_a", "t", out, sizeof out, why, sizeof why), -1);
    assert_int_equal(ac_toolname_compose("a", "t:x", out, sizeof out, why, sizeof why), -1);
    char longp[40], longt[40];
    memset(longp, 'p', 31);
    longp[31] = 0;
    memset(longt, 't', 32);
    longt[32] = 0; /* 31 + 2 + 32 = 65 */
    assert_int_equal(ac_toolname_compose(longp, longt, out, sizeof out, why, sizeof why), -1);
    assert_non_null(strstr(why, "65 characters: the providers accept at most 64"));
    longt[31] = 0; /* 64: fine */
    assert_int_equal(ac_toolname_compose(longp, longt, out, sizeof out, why, sizeof why), 0);
    size_t plen;
    assert_string_equal(ac_toolname_split("plane::edit", &plen), "edit");
    assert_int_equal(plen, 5);
    assert_null(ac_toolname_split("plain", &plen));
}

static int known(void *ud, const char *display)
{
    (void)ud;
    return !strcmp(display, "plane::select_project");
}

static void test_from_wire(void **st)
{
    (void)st;
    char out[100];
    assert_int_equal(ac_toolname_from_wire("plane__select_project", known, NULL, out, sizeof out),
                     1);
    assert_string_equal(out, "plane::select_project");
    assert_int_equal(ac_toolname_from_wire("other__x", known, NULL, out, sizeof out), 0);
    assert_string_equal(out, "other__x");
    assert_int_equal(ac_toolname_from_wire("__x", known, NULL, out, sizeof out), 0);
    assert_int_equal(ac_toolname_from_wire("plane__select_project", known, NULL, out, 5), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_and_parallel),
        cmocka_unit_test(test_skip_chain),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_from_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
