/* Tests for duration and size parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "tools/units.h"

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long long ms;
    } ok[] = {{"500ms", 500},  {"0ms", 0},       {"10s", 10000},
              {"10m", 600000}, {"2h", 7200000},  {"1s", 1000},
              {"007s", 7000},  {"90m", 5400000}, {"9223372036854775807ms", INT64_MAX}};
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
                                      "5d",
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
