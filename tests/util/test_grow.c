/* Tests of src/util/grow.c: room in a growable array. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* Pushing one by one: the items stay, the capacity doubles, new room is zeroed. */
static void test_push(void **state)
{
    (void)state;
    int *v = NULL;
    size_t n = 0, cap = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(ac_grow((void **)&v, &cap, n + 1, sizeof *v), 0);
        assert_true(cap >= n + 1);
        assert_int_equal(v[n], 0); /* zeroed */
        v[n++] = i;
    }
    assert_int_equal(cap, 1024); /* 8, 16, ... 1024 */
    for (int i = 0; i < 1000; i++)
        assert_int_equal(v[i], i);
    assert_int_equal(v[1023], 0);
    free(v);
}

/* A jump past double the capacity, and a request already satisfied. */
static void test_reserve(void **state)
{
    (void)state;
    char *v = NULL;
    size_t cap = 0;
    assert_int_equal(ac_grow((void **)&v, &cap, 100, 1), 0);
    assert_int_equal(cap, 128);
    memset(v, 'x', 100);
    char *same = v;
    assert_int_equal(ac_grow((void **)&v, &cap, 128, 1), 0);
    assert_ptr_equal(v, same);
    assert_int_equal(cap, 128);
    assert_int_equal(ac_grow((void **)&v, &cap, 129, 1), 0);
    assert_int_equal(cap, 256);
    assert_int_equal(v[99], 'x');
    assert_int_equal(v[200], 0);
    free(v);
}

/* A size that overflows fails and leaves the array as it was. */
static void test_overflow(void **state)
{
    (void)state;
    long *v = NULL;
    size_t cap = 0;
    assert_int_equal(ac_grow((void **)&v, &cap, 4, sizeof *v), 0);
    long *before = v;
    assert_int_equal(ac_grow((void **)&v, &cap, SIZE_MAX / 4, sizeof *v), -1);
    assert_int_equal(ac_grow((void **)&v, &cap, SIZE_MAX, 1), -1);
    assert_ptr_equal(v, before);
    assert_int_equal(cap, 8);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
