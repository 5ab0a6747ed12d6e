/* test_store_json.c - the store's JSON writer (src/store/store_json.c) writes what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes, byte for byte, for every kind of
 * value events carry; reals go to jansson. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store_json.h"
#include "util/json_text.h"

static void same_as_jansson(json_t *v)
{
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    char *got = ac_store_json_text(v);
    assert_non_null(want);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(want);
    free(got);
    json_decref(v);
}

static void test_kinds(void **state)
{
    (void)state;
    same_as_jansson(json_object());
    same_as_jansson(json_array());
    same_as_jansson(json_string(""));
    same_as_jansson(json_integer(0));
    same_as_jansson(json_integer(INT64_MIN));
    same_as_jansson(json_integer(INT64_MAX));
    /* written digit by digit (ac_json_put_int): each length and sign */
    for (int64_t k = 1; k > 0 && k < INT64_MAX / 10; k *= 10) {
        same_as_jansson(json_integer(k));
        same_as_jansson(json_integer(k - 1));
        same_as_jansson(json_integer(-k));
        same_as_jansson(json_integer(1 - k));
    }
    same_as_jansson(json_integer(INT64_MIN + 1));
    same_as_jansson(json_true());
    same_as_jansson(json_false());
    same_as_jansson(json_null());
    same_as_jansson(json_real(0.1)); /* jansson's */
    same_as_jansson(json_pack("{s:s, s:i, s:b, s:n, s:[i, s, {s:f}], s:{}}", "text", "hi", "n", 3,
                              "ok", 1, "none", "list", 1, "two", "r", 2.5, "empty"));
}

static void test_escapes(void **state)
{
    (void)state;
    char all[0x80];
    for (int i = 1; i < 0x80; i++)
        all[i - 1] = (char)i;
    all[0x7f] = 0;
    same_as_jansson(json_string(all));
    same_as_jansson(json_stringn("a\0b", 3)); /* a NUL inside */
    same_as_jansson(json_string("\xc3\xa9t\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80 / \\ \""));
    same_as_jansson(json_pack("{s:s}", "quote\"key\n", "v"));
    /* insertion order kept, as jansson keeps it */
    json_t *o = json_object();
    json_object_set_new(o, "z", json_integer(1));
    json_object_set_new(o, "a", json_integer(2));
    json_object_set_new(o, "m", json_pack("[{s:s}]", "x", "\t"));
    same_as_jansson(o);
}

static void test_deep(void **state)
{
    (void)state;
    json_t *v = json_integer(1);
    for (int i = 0; i < 200; i++) /* deeper than the writer goes: jansson's answer */
        v = json_pack("[o]", v);
    same_as_jansson(v);
}

/* With AC_JSON_REALS (the spans' exporter) the writer writes reals itself, as jansson does. */
static void test_reals(void **state)
{
    (void)state;
    double reals[] = {0.1, 2.0, -0.0, 1e300, 123456789.125, -3.5e-12};
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++) {
        json_t *v = json_pack("{s:[f]}", "r", reals[i]);
        char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        ac_buf b;
        ac_buf_init(&b, AC_BUF_MAX);
        ac_json_put(&b, v, AC_JSON_REALS);
        char *got = ac_buf_take(&b, NULL);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(want);
        free(got);
        ac_buf_init(&b, AC_BUF_MAX);
        ac_json_put(&b, v, 0); /* without: the caller's fallback */
        assert_null(ac_buf_take(&b, NULL));
        json_decref(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_deep),
        cmocka_unit_test(test_reals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
