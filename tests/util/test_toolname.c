/*
 * test_toolname.c - the display and wire names of namespaced tools
 * (util/toolname.h): "prefix::tool" and "prefix__tool", the 64-character
 * limit, and mapping wire names back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "util/toolname.h"

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
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_from_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
