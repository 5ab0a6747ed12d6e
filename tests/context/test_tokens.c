/* Tests of the token estimate: per-message and per-request sums, window
 * awareness, tool filtering, and calibration against reported usage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "context/tokens.h"

static int64_t ceil4(size_t n)
{
    return (int64_t)((n + 3) / 4);
}

static void test_message_estimate(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    char text[401];
    memset(text, 'x', 400);
    text[400] = 0;
    ac_conv_add_message(c, AC_ROLE_USER, text, 1);
    ac_conv_add_message(c, AC_ROLE_USER, "", 2);
    ac_conv_add_message(c, AC_ROLE_USER, "abcde", 3);
    assert_int_equal(ac_tokens_message(c, 0), AC_TOKENS_PER_MESSAGE + 100);
    assert_int_equal(ac_tokens_message(c, 1), AC_TOKENS_PER_MESSAGE);
    assert_int_equal(ac_tokens_message(c, 2), AC_TOKENS_PER_MESSAGE + 2);
    assert_int_equal(ac_tokens_message(c, 3), 0);
    /* An assistant message counts its calls' names and arguments. */
    ac_tool_call_in call = {"c", "read", "{\"path\":\"/etc/hosts\"}", 0};
    ac_conv_add_assistant(c, "ok", NULL, &call, 1, 4);
    assert_int_equal(ac_tokens_message(c, 3), AC_TOKENS_PER_MESSAGE + ceil4(2) +
                                                  AC_TOKENS_PER_CALL +
                                                  ceil4(strlen("read") + strlen(call.arguments)));
    ac_conv_free(c);
}

static void test_request_estimate_follows_window_and_tools(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    const char *schema = "{\"type\":\"object\"}";
    ac_conv_add_tool_def(c, "alpha", "first tool", schema);
    ac_conv_add_tool_def(c, "beta", "second", schema);
    for (int i = 0; i < 10; i++)
        ac_conv_add_message(c, i % 2 ? AC_ROLE_ASSISTANT : AC_ROLE_USER, "twelve bytes", i);

    int64_t msgs = 0;
    for (size_t i = 0; i < 10; i++)
        msgs += ac_tokens_message(c, i);
    int64_t alpha =
        AC_TOKENS_PER_TOOL + ceil4(strlen("alpha") + strlen("first tool") + strlen(schema));
    int64_t beta = AC_TOKENS_PER_TOOL + ceil4(strlen("beta") + strlen("second") + strlen(schema));
    assert_int_equal(ac_tokens_request_raw(c, NULL), AC_TOKENS_PER_REQUEST + msgs + alpha + beta);

    const char *only[] = {"beta", NULL};
    ac_request_opts o = {.model = "m", .tool_names_allowed = only};
    assert_int_equal(ac_tokens_request_raw(c, &o), AC_TOKENS_PER_REQUEST + msgs + beta);

    /* A window of 4 keeps the first user message plus the last four. */
    ac_conv_set_window(c, 4);
    int64_t windowed = ac_tokens_request_raw(c, &o);
    assert_int_equal(windowed, AC_TOKENS_PER_REQUEST + ac_tokens_message(c, 0) +
                                   4 * ac_tokens_message(c, 9) + beta);
    assert_true(windowed < AC_TOKENS_PER_REQUEST + msgs + beta);
    /* Uncalibrated: the estimate is the raw count. */
    assert_int_equal(ac_tokens_estimate(c, &o), windowed);
    ac_conv_free(c);
}

static void test_calibration(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    char text[4001];
    memset(text, 'y', 4000);
    text[4000] = 0;
    ac_conv_add_message(c, AC_ROLE_USER, text, 1);
    ac_request_opts o = {.model = "m"};
    assert_int_equal(ac_tokens_scale_milli(c), 1000);

    /* No request noted yet: nothing to calibrate against. */
    ac_tokens_calibrate(c, 5000);
    assert_int_equal(ac_tokens_scale_milli(c), 1000);

    int64_t raw = ac_tokens_request_raw(c, &o);
    assert_int_equal(ac_tokens_begin_request(c, &o), raw);
    ac_tokens_calibrate(c, raw * 2); /* provider counts twice as many */
    assert_int_equal(ac_tokens_scale_milli(c), 2000);
    assert_int_equal(ac_tokens_estimate(c, &o), raw * 2);
    /* The remembered estimate is used once. */
    ac_tokens_calibrate(c, raw * 3);
    assert_int_equal(ac_tokens_scale_milli(c), 2000);

    /* Later samples are averaged with the previous scale. */
    int64_t est = ac_tokens_begin_request(c, &o);
    assert_int_equal(est, raw * 2);
    ac_tokens_calibrate(c, raw); /* observed 1.0 */
    assert_int_equal(ac_tokens_scale_milli(c), 1500);
    assert_int_equal(ac_tokens_estimate(c, &o), (raw * 1500 + 500) / 1000);

    /* Outliers are clamped before averaging. */
    ac_tokens_begin_request(c, &o);
    ac_tokens_calibrate(c, raw * 100);
    assert_int_equal(ac_tokens_scale_milli(c), (1500 + AC_TOKENS_SCALE_MAX + 1) / 2);
    ac_tokens_begin_request(c, &o);
    ac_tokens_calibrate(c, 1);
    assert_true(ac_tokens_scale_milli(c) >= AC_TOKENS_SCALE_MIN);
    ac_tokens_begin_request(c, &o);
    ac_tokens_calibrate(c, -5); /* ignored */
    ac_tokens_calibrate(c, 0);
    int64_t kept = ac_tokens_scale_milli(c);

    /* Calibration is part of the conversation's saved state. */
    char *json = ac_conv_to_json(c);
    char err[128];
    ac_conv *d = ac_conv_from_json(json, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(ac_tokens_scale_milli(d), kept);
    assert_int_equal(ac_tokens_estimate(d, &o), ac_tokens_estimate(c, &o));
    /* ...including the pending estimate: both calibrate identically. */
    ac_tokens_calibrate(c, raw);
    ac_tokens_calibrate(d, raw);
    assert_int_equal(ac_tokens_scale_milli(d), ac_tokens_scale_milli(c));
    free(json);
    ac_conv_free(d);
    ac_conv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_message_estimate),
        cmocka_unit_test(test_request_estimate_follows_window_and_tools),
        cmocka_unit_test(test_calibration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
