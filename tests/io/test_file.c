/* Whole-stream and whole-file reads with a cap (io/file.h): an empty stream, data of exactly
 * the cap, one byte over it (refused, not cut), data over many read chunks, a folder, and a
 * file that is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"

/* A temporary stream holding n bytes of a repeating pattern. */
static FILE *stream_of(size_t n)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    rewind(f);
    return f;
}

static void test_empty(void **state)
{
    (void)state;
    FILE *f = stream_of(0);
    size_t len = 99;
    char *s = ac_read_stream(f, 10, &len);
    assert_non_null(s);
    assert_int_equal(len, 0);
    assert_string_equal(s, "");
    free(s);
    fclose(f);
}

/* Exactly the cap is read whole; one byte more is EFBIG. */
static void test_cap(void **state)
{
    (void)state;
    FILE *f = stream_of(10000);
    size_t len = 0;
    char *s = ac_read_stream(f, 10000, &len);
    assert_non_null(s);
    assert_int_equal(len, 10000);
    assert_int_equal(strlen(s), 10000);
    assert_int_equal(s[9999], 'a' + 9999 % 26);
    free(s);
    fclose(f);
    f = stream_of(10001);
    errno = 0;
    assert_null(ac_read_stream(f, 10000, NULL));
    assert_int_equal(errno, EFBIG);
    fclose(f);
}

/* Many read chunks: every byte arrives in order. */
static void test_large(void **state)
{
    (void)state;
    size_t n = 300000;
    FILE *f = stream_of(n);
    size_t len = 0;
    char *s = ac_read_stream(f, (size_t)1 << 20, &len);
    assert_non_null(s);
    assert_int_equal(len, n);
    for (size_t i = 0; i < n; i += 4099)
        assert_int_equal(s[i], 'a' + (int)(i % 26));
    assert_int_equal(s[n], 0);
    free(s);
    fclose(f);
}

static void test_file_errors(void **state)
{
    (void)state;
    errno = 0;
    assert_null(ac_read_file("/nonexistent/agentc-file", 100, NULL));
    assert_int_equal(errno, ENOENT);
    errno = 0;
    assert_null(ac_read_file("/", 100, NULL));
    assert_int_equal(errno, EISDIR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
