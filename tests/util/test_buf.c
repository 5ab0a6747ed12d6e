/* Tests of src/util/buf.c: the capped string buffer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

static void test_append_and_take(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    assert_null(b.p);
    assert_int_equal(ac_buf_addstr(&b, "abc"), 0);
    assert_int_equal(ac_buf_add(&b, "de\0f", 4), 0); /* NUL bytes are kept */
    assert_int_equal(ac_buf_printf(&b, "-%d-%s", 42, "x"), 0);
    assert_int_equal(b.n, 12);
    assert_memory_equal(b.p, "abcde\0f-42-x", 12);
    assert_int_equal(b.p[b.n], 0);
    size_t len = 0;
    char *s = ac_buf_take(&b, &len);
    assert_int_equal(len, 12);
    assert_memory_equal(s, "abcde\0f-42-x", 12);
    free(s);
    assert_null(b.p); /* emptied, ready again */
    assert_int_equal(b.n, 0);
    assert_int_equal(b.max, AC_BUF_MAX);
}

static void test_empty_take(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, 16);
    size_t len = 7;
    char *s = ac_buf_take(&b, &len);
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
    assert_int_equal(ac_buf_add(&b, NULL, 0), 0);
    assert_non_null(b.p);
    assert_string_equal(b.p, "");
    ac_buf_free(&b);
}

/* Many small appends: the text is the whole of them, in order. */
static void test_growth(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(ac_buf_printf(&b, "%04d", i % 10000), 0);
    assert_int_equal(b.n, 40000);
    assert_true(b.cap > b.n);
    assert_memory_equal(b.p + 4 * 1234, "1234", 4);
    assert_memory_equal(b.p + 4 * 9999, "9999", 4);
    ac_buf_free(&b);
}

/* The cap: the append that would pass it fails the buffer; what came before is kept. */
static void test_cap(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, 8);
    assert_int_equal(ac_buf_addstr(&b, "12345678"), 0); /* exactly max */
    assert_int_equal(b.n, 8);
    assert_true(b.cap <= 9); /* never more than max and the terminator */
    assert_int_equal(ac_buf_add(&b, "9", 1), -1);
    assert_true(b.failed);
    assert_string_equal(b.p, "12345678");
    assert_int_equal(ac_buf_addstr(&b, ""), -1); /* failed stays failed */
    assert_null(ac_buf_take(&b, NULL));
    assert_null(b.p);
    assert_false(b.failed); /* take empties it: usable again */
    assert_int_equal(ac_buf_printf(&b, "%s", "123456789"), -1);
    assert_int_equal(b.n, 0);
    ac_buf_free(&b);
}

/* reserve and commit: writing in place, as a JSON writer escaping a string does. */
static void test_reserve_commit(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, 100);
    assert_int_equal(ac_buf_addstr(&b, "ab"), 0);
    assert_int_equal(ac_buf_reserve(&b, 50), 0);
    assert_true(b.cap >= b.n + 51);
    memcpy(b.p + b.n, "xyz", 3);
    ac_buf_commit(&b, 3);
    assert_string_equal(b.p, "abxyz");
    assert_int_equal(ac_buf_reserve(&b, 96), -1); /* 5 + 96 > 100 */
    assert_true(b.failed);
    ac_buf_free(&b);
    assert_false(b.failed);
    assert_int_equal(ac_buf_reserve(&b, 100), 0);
    ac_buf_fail(&b);
    assert_int_equal(ac_buf_addstr(&b, "a"), -1);
    ac_buf_free(&b);
}

/* clear: the text goes, the memory stays for the next one; a failed buffer is usable again. */
static void test_clear(void **state)
{
    (void)state;
    ac_buf b;
    ac_buf_init(&b, 8);
    assert_int_equal(ac_buf_addstr(&b, "12345678"), 0);
    char *mem = b.p;
    assert_int_equal(ac_buf_add(&b, "9", 1), -1);
    ac_buf_clear(&b);
    assert_false(b.failed);
    assert_int_equal(b.n, 0);
    assert_ptr_equal(b.p, mem);
    assert_string_equal(b.p, "");
    assert_int_equal(ac_buf_addstr(&b, "abc"), 0);
    assert_ptr_equal(b.p, mem);
    assert_string_equal(b.p, "abc");
    ac_buf_free(&b);
    ac_buf_clear(&b); /* an empty buffer: nothing to keep */
    assert_null(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_take), cmocka_unit_test(test_empty_take),
        cmocka_unit_test(test_growth),          cmocka_unit_test(test_cap),
        cmocka_unit_test(test_reserve_commit),  cmocka_unit_test(test_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
