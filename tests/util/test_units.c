/* Tests of src/util/units.c: duration, size and time parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "util/units.h"

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long long ms;
    } ok[] = {{"500ms", 500},    {"0ms", 0},       {"10s", 10000},
              {"10m", 600000},   {"2h", 7200000},  {"1s", 1000},
              {"007s", 7000},    {"90m", 5400000}, {"9223372036854775807ms", INT64_MAX},
              {"7d", 604800000}, {"0d", 0}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        long long v = -1;
        assert_int_equal(ac_parse_duration_ms(ok[i].text, &v), 0);
        assert_int_equal(v, ok[i].ms);
    }
    static const char *const bad[] = {"",
                                      "10",
                                      "-5s",
                                      "+5s",
                                      "5 s",
                                      " 5s",
                                      "5s ",
                                      "5S",
                                      "5sec",
                                      "1.5s",
                                      "s",
                                      "ms",
                                      "5D",
                                      "5w",
                                      "106751991167301d",
                                      "5hs",
                                      "9223372036854775808ms",
                                      "9223372036854776s",
                                      "99999999999999999999999h",
                                      "0x10s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long long v = 42;
        if (ac_parse_duration_ms(bad[i], &v) == 0)
            fail_msg("\"%s\" was accepted as %lld ms", bad[i], v);
        assert_int_equal(v, 42); /* untouched on error */
    }
    long long v;
    assert_int_equal(ac_parse_duration_ms(NULL, &v), -1);
    assert_int_equal(ac_parse_duration_ms("1s", NULL), -1);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        unsigned long long bytes;
    } ok[] = {{"0B", 0},         {"512B", 512},           {"1KB", 1000},
              {"1MB", 1000000},  {"2GB", 2000000000ull},  {"1KiB", 1024},
              {"1MiB", 1048576}, {"3GiB", 3221225472ull}, {"18446744073709551615B", UINT64_MAX}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t v = 7;
        assert_int_equal(ac_parse_size(ok[i].text, &v), 0);
        assert_true(v == ok[i].bytes);
    }
    static const char *const bad[] = {"",
                                      "1",
                                      "-1B",
                                      "1 KB",
                                      "1kb",
                                      "1K",
                                      "1M",
                                      "1.5MB",
                                      "MB",
                                      "1TB",
                                      "1KIB",
                                      "1B ",
                                      "18446744073709551616B",
                                      "18446744073709552KB",
                                      "99999999999999999GiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 7;
        if (ac_parse_size(bad[i], &v) == 0)
            fail_msg("\"%s\" was accepted as %zu bytes", bad[i], v);
        assert_int_equal(v, 7);
    }
}

/* The error codes tell a missing or unknown unit from a number too large. */
static void test_error_codes(void **state)
{
    (void)state;
    long long v;
    assert_int_equal(ac_parse_duration_ms("", &v), AC_UNITS_EINVAL);
    assert_int_equal(ac_parse_duration_ms("s", &v), AC_UNITS_EINVAL);
    assert_int_equal(ac_parse_duration_ms("10", &v), AC_UNITS_EUNIT);
    assert_int_equal(ac_parse_duration_ms("10sec", &v), AC_UNITS_EUNIT);
    assert_int_equal(ac_parse_duration_ms("99999999999999999999999q", &v), AC_UNITS_EUNIT);
    assert_int_equal(ac_parse_duration_ms("9223372036854775807h", &v), AC_UNITS_ERANGE);
    assert_int_equal(ac_parse_duration_ms("99999999999999999999999ms", &v), AC_UNITS_ERANGE);
    size_t z;
    assert_int_equal(ac_parse_size("5kb", &z), AC_UNITS_EUNIT);
}

static void test_times(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ms;
    } ok[] = {
        {"0", 0},
        {"1700000000000", 1700000000000LL},
        {"1970-01-01", 0},
        {"2026-11-03", 1793664000000LL},
        {"2026-11-03T14:05", 1793664000000LL + (14 * 60 + 5) * 60000LL},
        {"2026-11-03 14:05:09", 1793664000000LL + ((14 * 60 + 5) * 60 + 9) * 1000LL},
        {"2026-11-03T14:05:09.5Z", 1793664000000LL + ((14 * 60 + 5) * 60 + 9) * 1000LL + 500},
        {"2026-11-03T14:05:09.123456Z", 1793664000000LL + ((14 * 60 + 5) * 60 + 9) * 1000LL + 123},
        {"2026-11-03T14:05:09+02:00", 1793664000000LL + ((12 * 60 + 5) * 60 + 9) * 1000LL},
        {"2026-11-03T14:05:09-01:30", 1793664000000LL + ((15 * 60 + 35) * 60 + 9) * 1000LL},
        {"2026-11-03Z", 1793664000000LL},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        if (ac_parse_time(ok[i].text, &v) != AC_UNITS_OK)
            fail_msg("\"%s\" was refused", ok[i].text);
        if (v != ok[i].ms)
            fail_msg("\"%s\": %lld, want %lld", ok[i].text, (long long)v, (long long)ok[i].ms);
    }
    static const char *const bad[] = {"",
                                      "yesterday",
                                      "2026-11",
                                      "2026-13-01",
                                      "2026-00-10",
                                      "2026-11-32",
                                      "2026-11-03T",
                                      "2026-11-03T25:00",
                                      "2026-11-03T14:60",
                                      "2026-11-03T14:05:61",
                                      "2026-11-03T14:05:09+2",
                                      "2026-11-03T14:05:09 UTC",
                                      "2026-11-03x",
                                      "1234567890123456789" /* 19 digits */};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v = 42;
        if (ac_parse_time(bad[i], &v) == AC_UNITS_OK)
            fail_msg("\"%s\" was accepted as %lld", bad[i], (long long)v);
        assert_int_equal(v, 42);
    }
    int64_t v;
    assert_int_equal(ac_parse_time(NULL, &v), AC_UNITS_EINVAL);
    assert_int_equal(ac_parse_time("0", NULL), AC_UNITS_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
