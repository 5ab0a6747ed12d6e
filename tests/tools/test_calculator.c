/* Tests for the built-in exact calculator: exact results, formatting,
 * errors with positions, limits, and a randomized cross-check of integer
 * expressions against 128-bit arithmetic. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/calculator.h"

static void expect(const char *expr, const char *want)
{
    char out[256], err[256] = "";
    if (ac_calc_eval(expr, out, sizeof out, err, sizeof err) != 0)
        fail_msg("\"%s\" failed: %s", expr, err);
    if (strcmp(out, want) != 0)
        fail_msg("\"%s\" = \"%s\", want \"%s\"", expr, out, want);
}

static void expect_error(const char *expr, const char *want_substring)
{
    char out[256] = "x", err[256] = "";
    if (ac_calc_eval(expr, out, sizeof out, err, sizeof err) == 0)
        fail_msg("\"%s\" succeeded with %s", expr, out);
    if (!strstr(err, want_substring))
        fail_msg("\"%s\": error \"%s\" lacks \"%s\"", expr, err, want_substring);
    assert_string_equal(out, "");
}

static void test_exact_results(void **state)
{
    (void)state;
    expect("0.1 + 0.2", "0.3");
    expect("17*23", "391");
    expect("1 - 0.9", "0.1");
    expect("0.1 * 3", "0.3");
    expect("1/4", "0.25");
    expect("-1/8", "-0.125");
    expect("3/2*2", "3");
    expect("2+3*4", "14");
    expect("(2+3)*4", "20");
    expect("10-4-3", "3");
    expect("64/4/2", "8");
    expect("-(-(3))", "3");
    expect("+-+-5", "5");
    expect("- 5 * - 5", "25");
    expect(".5 + 3.", "3.5");
    expect("0.50", "0.5");
    expect("007", "7");
    expect("0", "0");
    expect("-0", "0");
    expect("0 * -1", "0");
    expect("1.10 - 0.10", "1");
    expect("  \t12 \n", "12");
    expect("99999999999999999999 * 99999999999999999999",
           "9999999999999999999800000000000000000001");
    expect("340282366920938463463374607431768211456 / 18446744073709551616",
           "18446744073709551616");
    expect("123456789012345678901234567890 - 123456789012345678901234567891", "-1");
    expect("1/1024", "0.0009765625");
    expect("0.000001 * 0.000001", "0.000000000001");
    expect("1/3", "1/3 (\xE2\x89\x88 0.333333333333)");
    expect("2/3", "2/3 (\xE2\x89\x88 0.666666666667)");
    expect("-22/7", "-22/7 (\xE2\x89\x88 -3.142857142857)");
    expect("1/3 + 1/6", "0.5");
    expect("1/3 * 3", "1");
    expect("(1/3)*(3/7)", "1/7 (\xE2\x89\x88 0.142857142857)");
    expect("1/7000000000000", "1/7000000000000 (\xE2\x89\x88 1.42857142857e-13)");
    expect("10/6", "5/3 (\xE2\x89\x88 1.666666666667)");
}

static void test_modulo(void **state)
{
    (void)state;
    expect("17 % 5", "2");
    expect("-7 % 2", "-1");
    expect("7 % -2", "1");
    expect("-7 % -2", "-1");
    expect("5.5 % 2", "1.5");
    expect("1 % 0.3", "0.1");
    expect("(1/3) % (1/4)", "1/12 (\xE2\x89\x88 0.083333333333)");
    expect("6 % 3", "0");
    expect("2 % 5", "2");
    expect("10 % 3 * 2", "2");
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("(1+2))", "unexpected ')' at column 6");
    expect_error("1 + (2 * 3))", "unexpected ')' at column 12");
    expect_error("1 +", "unexpected end of input at column 4");
    expect_error("", "empty expression");
    expect_error("   ", "empty expression");
    expect_error("1 / 0", "division by zero at column 3");
    expect_error("1 / (0.5 - 1/2)", "division by zero at column 3");
    expect_error("5 % 0", "modulo by zero at column 3");
    expect_error("2 3", "unexpected '3' at column 3");
    expect_error("1.2.3", "unexpected '.' at column 4");
    expect_error(".", "unexpected '.' at column 1");
    expect_error("(1+2", "missing ')' for '(' at column 1");
    expect_error("abc", "unexpected 'a' at column 1");
    expect_error("2 ^ 3", "unexpected '^' at column 3");
    expect_error("1e5", "unexpected 'e' at column 2");
    expect_error("\xC3\xA9", "unexpected byte 0xC3 at column 1");
    expect_error("*2", "unexpected '*' at column 1");
    char out[8], err[128];
    assert_int_equal(ac_calc_eval(NULL, out, sizeof out, err, sizeof err), -1);
    assert_int_equal(ac_calc_eval("1", NULL, 0, err, sizeof err), -1);
    /* a result that does not fit is an error, not a truncation */
    assert_int_equal(ac_calc_eval("123456789", out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "too long"));
    assert_int_equal(ac_calc_eval("1234567", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "1234567");
    /* NULL err is allowed */
    assert_int_equal(ac_calc_eval("1/0", out, sizeof out, NULL, 0), -1);
}

static void test_limits(void **state)
{
    (void)state;
    size_t n = AC_CALC_MAX_INPUT + 10;
    char *big = malloc(n + 1);
    char *out = malloc(16384);
    char err[256];
    assert_non_null(big);
    assert_non_null(out);

    memset(big, '1', n);
    big[n] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), -1);
    assert_non_null(strstr(err, "expression too long"));

    /* deep nesting: refused with a message, never a stack overflow */
    size_t depth = AC_CALC_MAX_DEPTH + 5;
    for (size_t i = 0; i < depth; i++)
        big[i] = '(';
    big[depth] = '1';
    for (size_t i = 0; i < depth; i++)
        big[depth + 1 + i] = ')';
    big[2 * depth + 1] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested too deeply"));
    memset(big, '-', 4000);
    big[4000] = '1';
    big[4001] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), -1);
    assert_non_null(strstr(err, "nested too deeply"));

    /* a nesting within the limit works */
    size_t ok = AC_CALC_MAX_DEPTH / 2 - 2;
    for (size_t i = 0; i < ok; i++)
        big[i] = '(';
    big[ok] = '7';
    for (size_t i = 0; i < ok; i++)
        big[ok + 1 + i] = ')';
    big[2 * ok + 1] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), 0);
    assert_string_equal(out, "7");

    /* (10^1000 - 1)^4 = 4000 digits, exact: it starts 999...96 and ends ...0001 */
    size_t o = 0;
    for (int i = 0; i < 4; i++) {
        if (i)
            big[o++] = '*';
        memset(big + o, '9', 1000);
        o += 1000;
    }
    big[o] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), 0);
    assert_int_equal(strlen(out), 4000);
    assert_memory_equal(out + 996, "9996", 4);
    assert_string_equal(out + 3996, "0001");
    assert_int_equal(ac_calc_eval(big, out, 100, err, sizeof err), -1);
    assert_non_null(strstr(err, "result too long"));

    /* 1/65536^k terminates but needs 16k decimals: past the digit cap */
    o = 0;
    big[o++] = '1';
    while (o + 6 < AC_CALC_MAX_INPUT) {
        memcpy(big + o, "/65536", 6);
        o += 6;
    }
    big[o] = 0;
    assert_int_equal(ac_calc_eval(big, out, 16384, err, sizeof err), -1);
    assert_non_null(strstr(err, "number too large"));
    free(big);
    free(out);
}

/* Random integer expressions cross-checked against __int128 evaluation. */
typedef struct gen {
    uint64_t s;
    char buf[512];
    size_t n;
} gen;

static uint32_t rnd(gen *g)
{
    g->s = g->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g->s >> 33);
}

static void emit(gen *g, const char *s)
{
    size_t n = strlen(s);
    memcpy(g->buf + g->n, s, n);
    g->n += n;
    g->buf[g->n] = 0;
}

/* Builds an expression and returns its value (values stay far from overflow). */
static __int128 gen_expr(gen *g, int depth)
{
    if (depth == 0 || rnd(g) % 3 == 0) {
        char t[32];
        int v = (int)(rnd(g) % 2000) - 1000;
        snprintf(t, sizeof t, v < 0 ? "(%d)" : "%d", v);
        emit(g, t);
        return v;
    }
    emit(g, "(");
    __int128 a = gen_expr(g, depth - 1);
    int op = (int)(rnd(g) % 3);
    emit(g, op == 0 ? " + " : (op == 1 ? " - " : " * "));
    __int128 b = gen_expr(g, depth - 1);
    emit(g, ")");
    return op == 0 ? a + b : (op == 1 ? a - b : a * b);
}

static void i128_to_str(__int128 v, char *buf)
{
    char tmp[64];
    int n = 0, neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    int o = 0;
    if (neg)
        buf[o++] = '-';
    while (n)
        buf[o++] = tmp[--n];
    buf[o] = 0;
}

static void test_random_cross_check(void **state)
{
    (void)state;
    gen g = {.s = 12345};
    for (int i = 0; i < 2000; i++) {
        g.n = 0;
        g.buf[0] = 0;
        __int128 want = gen_expr(&g, 4);
        char ws[64], out[128], err[128];
        i128_to_str(want, ws);
        if (ac_calc_eval(g.buf, out, sizeof out, err, sizeof err) != 0)
            fail_msg("%s failed: %s", g.buf, err);
        if (strcmp(out, ws) != 0)
            fail_msg("%s = %s, want %s", g.buf, out, ws);
    }
    /* division identities: (a / b) * b - a == 0 and a - b * trunc(a/b) == a % b */
    for (int i = 0; i < 500; i++) {
        char e[256], out[256], err[128];
        long long a = (long long)(rnd(&g) % 2000000) - 1000000;
        long long b = (long long)(rnd(&g) % 1999) - 999;
        if (b == 0)
            b = 7;
        snprintf(e, sizeof e, "(%lld / %lld) * %lld - %lld", a, b, b, a);
        assert_int_equal(ac_calc_eval(e, out, sizeof out, err, sizeof err), 0);
        assert_string_equal(out, "0");
        snprintf(e, sizeof e, "(%lld) %% (%lld)", a, b);
        assert_int_equal(ac_calc_eval(e, out, sizeof out, err, sizeof err), 0);
        char want[32];
        snprintf(want, sizeof want, "%lld", a % b);
        assert_string_equal(out, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_results),
        cmocka_unit_test(test_modulo),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_random_cross_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
