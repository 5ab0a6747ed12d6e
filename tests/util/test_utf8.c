/* Tests of src/util/utf8.c: validation and repair of UTF-8. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

#define FFFD "\xEF\xBF\xBD"

static void test_seq_len(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t n, len;
    } cases[] = {
        {"a", 1, 1},
        {"\0", 1, 1},               /* NUL is well-formed */
        {"\xC2\x80", 2, 2},         /* U+0080 */
        {"\xDF\xBF", 2, 2},         /* U+07FF */
        {"\xE0\xA0\x80", 3, 3},     /* U+0800 */
        {"\xE2\x82\xAC", 3, 3},     /* euro sign */
        {"\xED\x9F\xBF", 3, 3},     /* U+D7FF */
        {"\xEE\x80\x80", 3, 3},     /* U+E000 */
        {"\xEF\xBF\xBF", 3, 3},     /* U+FFFF */
        {"\xF0\x90\x80\x80", 4, 4}, /* U+10000 */
        {"\xF4\x8F\xBF\xBF", 4, 4}, /* U+10FFFF */
        {"\xC0\x80", 2, 0},         /* overlong NUL */
        {"\xC1\xBF", 2, 0},         /* overlong */
        {"\xE0\x9F\xBF", 3, 0},     /* overlong */
        {"\xF0\x8F\xBF\xBF", 4, 0}, /* overlong */
        {"\xED\xA0\x80", 3, 0},     /* surrogate U+D800 */
        {"\xED\xBF\xBF", 3, 0},     /* surrogate U+DFFF */
        {"\xF4\x90\x80\x80", 4, 0}, /* U+110000 */
        {"\xF5\x80\x80\x80", 4, 0}, /* lead byte never used */
        {"\xFF", 1, 0},
        {"\x80", 1, 0},         /* lone continuation byte */
        {"\xC3(", 2, 0},        /* missing continuation byte */
        {"\xE2\x82", 2, 0},     /* cut short by the length */
        {"\xE2\x82\xAC", 2, 0}, /* the length bounds the read */
        {"a", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (ac_utf8_seq_len(cases[i].s, cases[i].n) != cases[i].len)
            fail_msg("case %zu: got %zu, want %zu", i, ac_utf8_seq_len(cases[i].s, cases[i].n),
                     cases[i].len);
}

static void test_valid_len(void **state)
{
    (void)state;
    assert_int_equal(ac_utf8_valid_len(NULL, 0), 0);
    assert_int_equal(ac_utf8_valid_len("plain", 5), 5);
    assert_int_equal(ac_utf8_valid_len("a\0b", 3), 3);
    assert_int_equal(ac_utf8_valid_len("ok\xE2\x82\xAC!", 6), 6);
    assert_int_equal(ac_utf8_valid_len("ok\xE2\x82\xAC!", 4), 2); /* cut inside a sequence */
    assert_int_equal(ac_utf8_valid_len("ab\xFF"
                                       "cd",
                                       5),
                     2);
    assert_int_equal(ac_utf8_valid_len("\xED\xA0\x80", 3), 0);
}

/* Repairs s[0..n) and compares with want[0..want_n). */
static void check_repair(const char *s, size_t n, unsigned flags, const char *want, size_t want_n)
{
    size_t len = 12345;
    char *r = ac_utf8_repair(s, n, flags, &len);
    assert_non_null(r);
    assert_int_equal(len, want_n);
    assert_memory_equal(r, want, want_n);
    assert_int_equal(r[len], 0);
    assert_int_equal(ac_utf8_valid_len(r, len), len);
    free(r);
}

static void test_repair(void **state)
{
    (void)state;
    check_repair("", 0, 0, "", 0);
    check_repair(NULL, 0, 0, "", 0);
    check_repair("caf\xC3\xA9", 5, 0, "caf\xC3\xA9", 5);
    /* each bad byte becomes one U+FFFD */
    check_repair("ok\xff\xc3(end\xe2\x82\xac", 11, 0, "ok" FFFD FFFD "(end\xe2\x82\xac", 15);
    check_repair("a\xED\xA0\x80"
                 "b",
                 5, 0, "a" FFFD FFFD FFFD "b", 11);
    check_repair("\xC0\x80", 2, 0, FFFD FFFD, 6);
    check_repair("\xF4\x90\x80\x80", 4, 0, FFFD FFFD FFFD FFFD, 12);
    check_repair("x\xE2\x82", 3, 0, "x" FFFD FFFD, 7); /* truncated at the end */
    /* NUL kept or replaced */
    check_repair("a\0b", 3, AC_UTF8_KEEP_NUL, "a\0b", 3);
    check_repair("a\0b", 3, AC_UTF8_REPLACE_NUL, "a" FFFD "b", 5);
    check_repair("\0\xFF", 2, AC_UTF8_REPLACE_NUL, FFFD FFFD, 6);
    /* the length bounds the read: bytes after n are not looked at */
    check_repair("ab\xFF", 2, 0, "ab", 2);
    /* out_len may be NULL */
    char *r = ac_utf8_repair("\xFF", 1, 0, NULL);
    assert_non_null(r);
    assert_string_equal(r, FFFD);
    free(r);
}

/* Every 1- and 2-byte input repairs to valid UTF-8, and valid input is copied unchanged. */
static void test_repair_exhaustive(void **state)
{
    (void)state;
    char in[2];
    for (unsigned a = 0; a < 256; a++) {
        for (unsigned b = 0; b < 256; b++) {
            in[0] = (char)a;
            in[1] = (char)b;
            size_t len;
            char *r = ac_utf8_repair(in, 2, AC_UTF8_REPLACE_NUL, &len);
            assert_non_null(r);
            assert_int_equal(ac_utf8_valid_len(r, len), len);
            assert_null(memchr(r, 0, len));
            if (a && b && ac_utf8_valid_len(in, 2) == 2) {
                assert_int_equal(len, 2);
                assert_memory_equal(r, in, 2);
            }
            free(r);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_len),
        cmocka_unit_test(test_valid_len),
        cmocka_unit_test(test_repair),
        cmocka_unit_test(test_repair_exhaustive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
