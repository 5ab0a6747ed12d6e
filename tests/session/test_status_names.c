/*
 * test_status_names.c - every code of enum ac_status has its own name in
 * ac_strerror. The codes are read from include/agentc/agentc.h itself, so a
 * code added to the enum without a name fails here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentc/agentc.h"

#define MAX_CODES 64

typedef struct code {
    char name[64];
    int value;
} code;

/* The members of enum ac_status as written in the header: "AC_X = N,". */
static size_t read_codes(code *out, size_t cap)
{
    FILE *f = fopen("include/agentc/agentc.h", "r");
    assert_non_null(f);
    char line[512];
    int in_enum = 0;
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "typedef enum ac_status {"))
            in_enum = 1;
        else if (in_enum && strstr(line, "} ac_status;"))
            break;
        else if (in_enum) {
            char name[64];
            int value;
            if (sscanf(line, " %63[A-Z_] = %d", name, &value) == 2) {
                assert_true(n < cap);
                snprintf(out[n].name, sizeof out[n].name, "%s", name);
                out[n++].value = value;
            }
        }
    }
    fclose(f);
    return n;
}

static void every_code_is_named(void **state)
{
    (void)state;
    code c[MAX_CODES];
    size_t n = read_codes(c, MAX_CODES);
    assert_true(n >= 13); /* AC_OK ... AC_ESPEC_CHANGED when this test was written */
    const char *unknown = ac_strerror(12345);
    assert_string_equal(unknown, "unknown status");
    for (size_t i = 0; i < n; i++) {
        const char *name = ac_strerror(c[i].value);
        if (!strcmp(name, unknown))
            fail_msg("%s (%d) has no name in ac_strerror", c[i].name, c[i].value);
        for (size_t k = 0; k < i; k++) {
            if (c[k].value == c[i].value)
                fail_msg("%s and %s share the number %d", c[k].name, c[i].name, c[i].value);
            if (!strcmp(ac_strerror(c[k].value), name))
                fail_msg("%s and %s share the name \"%s\"", c[k].name, c[i].name, name);
        }
    }
}

/* The store's codes are in the enum; their old numbers name nothing. */
static void store_codes_joined(void **state)
{
    (void)state;
    assert_int_equal(AC_ENOENT, -8);
    assert_int_equal(AC_EBUSY, -9);
    assert_int_equal(AC_ESPEC_CHANGED, -10);
    assert_string_equal(ac_strerror(AC_EBUSY), "in use by another holder");
    for (int v = -102; v <= -100; v++)
        assert_string_equal(ac_strerror(v), "unknown status");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_is_named),
        cmocka_unit_test(store_codes_joined),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
