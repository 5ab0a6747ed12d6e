/* Tests of the conversation's JSON form: byte-identical round trips of a rich
 * conversation, and clear errors (never crashes) for malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "context/tokens.h"

/* A conversation using every feature: unicode, empty strings, a huge string,
 * reasoning, failures, pending calls, internal rounds, cleared results,
 * summaries, tools, window, floor and counters. */
static ac_conv *rich(size_t huge_len)
{
    ac_conv *c = ac_conv_new();
    assert_int_equal(ac_conv_add_tool_def(c, "read", "Read a file \xe2\x80\x94 fast",
                                          "{\"type\":\"object\",\"properties\":{\"path\":{"
                                          "\"type\":\"string\",\"minLength\":1}},"
                                          "\"required\":[\"path\"],\"x\":0.1}"),
                     AC_CONV_OK);
    assert_int_equal(ac_conv_add_tool_def(c, "noop", "", "{}"), AC_CONV_OK);
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "You are terse.", 1000);
    ac_conv_add_message(c, AC_ROLE_USER, "", 1001);
    ac_conv_add_message(c, AC_ROLE_USER,
                        "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80 \"q\" \\ \n\t\x01",
                        1002);
    ac_tool_call_in calls[] = {{"c1", "read", "{\"path\":\"a\xc3\xa9\"}", 0},
                               {"c2", "read", "not json", 0},
                               {"c3", "noop", "", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "Let me look.", "I should read a", calls, 3, 1003),
                     AC_CONV_OK);
    assert_int_equal(ac_conv_set_thinking(c, ac_conv_message_count(c) - 1,
                                          "[{\"type\":\"thinking\",\"thinking\":\"I should "
                                          "read a\",\"signature\":\"Eq\\u00e9/+=\"}]"),
                     AC_CONV_OK);
    char *huge = malloc(huge_len + 1);
    for (size_t i = 0; i < huge_len; i++)
        huge[i] = (char)('a' + i % 26);
    huge[huge_len] = 0;
    assert_int_equal(ac_conv_set_tool_result(c, "c2", 0, "bad arguments", 1004), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "c1", 1, huge, 1005), AC_CONV_OK);
    free(huge);
    ac_tool_call_in internal = {"i1", "load_history", "{\"n\":2}", 1};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, &internal, 1, 1006), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "i1", 1, "", 1007), AC_CONV_OK);
    assert_int_equal(ac_conv_clear_tool_result(c, 7, "[result cleared]", 1008), AC_CONV_OK);
    ac_message_in sum = {AC_ROLE_USER, "Summary: the user said hello.", AC_MSG_SUMMARY};
    assert_int_equal(ac_conv_replace_range(c, 1, 3, &sum, 1, 1009), AC_CONV_OK);
    ac_conv_set_window(c, 12);
    assert_int_equal(ac_conv_set_floor(c, 1), AC_CONV_OK);
    ac_conv_set_iteration(c, 3);
    ac_conv_set_retries(c, 1);
    ac_conv_set_last_llm_call_ms(c, 1003);
    ac_conv_add_usage(c, 1234, 56);
    ac_request_opts o = {.model = "m"};
    ac_tokens_begin_request(c, &o);
    ac_tokens_calibrate(c, 999);
    ac_tokens_begin_request(c, &o);
    return c;
}

static void test_round_trip_identical(void **state)
{
    (void)state;
    ac_conv *c = rich(3u << 20);
    char *a = ac_conv_to_json(c);
    assert_non_null(a);
    char err[256];
    ac_conv *d = ac_conv_from_json(a, err, sizeof err);
    if (!d)
        fail_msg("reload: %s", err);
    char *b = ac_conv_to_json(d);
    assert_non_null(b);
    assert_int_equal(strlen(a), strlen(b));
    assert_true(strcmp(a, b) == 0);

    /* The reloaded conversation behaves the same. */
    assert_int_equal(ac_conv_message_count(d), ac_conv_message_count(c));
    for (size_t i = 0; i < ac_conv_message_count(c); i++) {
        const ac_message *x = ac_conv_message(c, i), *y = ac_conv_message(d, i);
        assert_string_equal(x->id, y->id);
        assert_int_equal(x->role, y->role);
        assert_int_equal(x->flags, y->flags);
        assert_string_equal(x->content, y->content);
        if (x->thinking || y->thinking)
            assert_string_equal(x->thinking, y->thinking);
    }
    assert_non_null(strstr(a, "\"thinking\":\"[{"));
    assert_string_equal(ac_conv_tool_call(d, "c1")->result, ac_conv_tool_call(c, "c1")->result);
    assert_int_equal(ac_conv_tool_call(d, "c3")->state, AC_CALL_NONE);
    assert_int_equal(ac_conv_iter_pending(d), 1);
    assert_int_equal(ac_tokens_scale_milli(d), ac_tokens_scale_milli(c));
    assert_int_equal(ac_conv_floor(d), 1);
    assert_int_equal(ac_conv_window(d), 12);
    /* New ids continue the sequence. */
    const char *id1 = ac_conv_add_message(c, AC_ROLE_USER, "x", 2000);
    const char *id2 = ac_conv_add_message(d, AC_ROLE_USER, "x", 2000);
    assert_string_equal(id1, id2);
    ac_tool_call_in nc = {NULL, "noop", "", 0};
    ac_conv_add_assistant(c, "", NULL, &nc, 1, 2001);
    ac_conv_add_assistant(d, "", NULL, &nc, 1, 2001);
    char *a2 = ac_conv_to_json(c), *b2 = ac_conv_to_json(d);
    assert_string_equal(a2, b2);
    free(a2);
    free(b2);

    free(a);
    free(b);
    ac_conv_free(c);
    ac_conv_free(d);
}

static void test_empty_round_trip(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    char *a = ac_conv_to_json(c);
    char err[128];
    ac_conv *d = ac_conv_from_json(a, err, sizeof err);
    assert_non_null(d);
    char *b = ac_conv_to_json(d);
    assert_string_equal(a, b);
    free(a);
    free(b);
    ac_conv_free(c);
    ac_conv_free(d);
}

/* A small valid document the malformed cases are derived from. */
static const char *BASE =
    "{\"version\":1,\"next_msg\":4,\"next_call\":0,\"window\":0,\"floor\":0,\"iteration\":0,"
    "\"retries\":0,\"last_llm_call_ms\":0,"
    "\"usage\":{\"input\":0,\"output\":0,\"last_input\":0},"
    "\"calibration\":{\"last_raw\":0,\"scale_milli\":1000,\"samples\":0},"
    "\"tools\":[{\"name\":\"t\",\"description\":\"d\",\"parameters\":{}}],"
    "\"tool_calls\":[{\"id\":\"c1\",\"name\":\"t\",\"arguments\":\"{}\",\"called_at\":2,"
    "\"state\":\"success\",\"result\":\"R\",\"received_at\":3}],"
    "\"messages\":[{\"id\":\"m1\",\"role\":\"user\",\"created_at\":1,\"updated_at\":1,"
    "\"content\":\"hi\"},"
    "{\"id\":\"m2\",\"role\":\"assistant\",\"created_at\":2,\"updated_at\":2,\"content\":\"\","
    "\"tool_calls\":[\"c1\"]},"
    "{\"id\":\"m3\",\"role\":\"tool\",\"created_at\":3,\"updated_at\":3,\"tool_call_id\":\"c1\"}],"
    "\"iteration_calls\":[\"c1\"]}";

/* BASE with the first occurrence of `from` replaced by `to`. */
static char *mutate(const char *from, const char *to)
{
    const char *p = strstr(BASE, from);
    assert_non_null(p);
    size_t pre = (size_t)(p - BASE), fl = strlen(from), tl = strlen(to);
    size_t n = strlen(BASE) - fl + tl;
    char *s = malloc(n + 1);
    memcpy(s, BASE, pre);
    memcpy(s + pre, to, tl);
    memcpy(s + pre + tl, p + fl, strlen(p + fl) + 1);
    return s;
}

static void test_base_is_valid(void **state)
{
    (void)state;
    char err[256];
    ac_conv *c = ac_conv_from_json(BASE, err, sizeof err);
    if (!c)
        fail_msg("%s", err);
    char *s = ac_conv_to_json(c);
    assert_string_equal(s, BASE);
    free(s);
    ac_conv_free(c);
}

struct bad_case {
    const char *from, *to, *expect;
};

static const struct bad_case bad_cases[] = {
    {"\"version\":1", "\"version\":2", "unsupported version"},
    {"\"version\":1,", "", "version: missing"},
    {"\"version\":1", "\"version\":\"1\"", "expected an integer"},
    {"\"next_msg\":4", "\"next_msg\":-1", "out of range"},
    {"\"next_msg\":4", "\"next_msg\":2", "ahead of next_msg"},
    {"\"window\":0", "\"window\":1.5", "window: expected an integer"},
    {"\"floor\":0", "\"floor\":4", "floor: 4 is out of range"},
    {"\"retries\":0,", "\"retries\":0,\"extra\":1,", "unknown key \"extra\""},
    {"\"usage\":{\"input\":0", "\"usage\":{\"input\":null", "usage.input"},
    {"\"usage\":{\"input\":0,\"output\":0,\"last_input\":0}", "\"usage\":[]",
     "usage: expected an object"},
    {"\"scale_milli\":1000", "\"scale_milli\":0", "scale_milli: 0 is out of range"},
    {"\"tools\":[", "\"tools\":[1,", "tools[0]: expected an object"},
    {"\"parameters\":{}", "\"parameters\":[]", "tools[0].parameters: expected an object"},
    {"\"description\":\"d\",", "", "tools[0].description: missing"},
    {"\"tools\":[{\"name\":\"t\"", "\"tools\":[{\"name\":\"t\",\"name\":\"u\"", "duplicate"},
    {"\"tool_calls\":[{\"id\":\"c1\"", "\"tool_calls\":[{\"id\":\"\"", "must not be empty"},
    {"\"state\":\"success\"", "\"state\":\"done\"", "unknown state \"done\""},
    {"\"result\":\"R\",", "", "tool_calls[0].result: missing"},
    {"\"state\":\"success\"", "\"state\":\"none\"", "without a result has result"},
    {"\"arguments\":\"{}\"", "\"arguments\":{}", "arguments: expected a string"},
    {"\"role\":\"user\"", "\"role\":\"bot\"", "unknown role \"bot\""},
    {"\"role\":\"user\"", "\"role\":7", "role: expected a string"},
    {"\"content\":\"hi\"", "\"content\":\"h\\u0000i\"", "NUL"},
    {"\"content\":\"hi\"", "\"content\":null", "content: expected a string"},
    {",\"content\":\"hi\"", "", "messages[0].content: missing"},
    {"\"id\":\"m2\"", "\"id\":\"m1\"", "duplicate message id"},
    {"\"created_at\":2,\"updated_at\":2", "\"created_at\":0,\"updated_at\":2", "time order"},
    {"\"tool_calls\":[\"c1\"]", "\"tool_calls\":[\"c9\"]", "unknown tool call \"c9\""},
    {"\"tool_calls\":[\"c1\"]", "\"tool_calls\":[]", "non-empty array"},
    {"\"tool_calls\":[\"c1\"]", "\"tool_calls\":[1]", "tool_calls[0]: expected a string"},
    {"\"tool_call_id\":\"c1\"", "\"tool_call_id\":\"c9\"", "names no tool call"},
    {",\"tool_call_id\":\"c1\"", "", "tool_call_id: missing"},
    {"\"content\":\"\",\"tool_calls\":[\"c1\"]", "\"content\":\"\"",
     "answers a call no message issued"},
    {"\"role\":\"user\",\"created_at\":1,\"updated_at\":1,\"content\":\"hi\"",
     "\"role\":\"user\",\"created_at\":1,\"updated_at\":1,\"content\":\"hi\",\"reasoning\":\"r\"",
     "only assistant messages"},
    {"\"role\":\"user\",\"created_at\":1,\"updated_at\":1,\"content\":\"hi\"",
     "\"role\":\"user\",\"created_at\":1,\"updated_at\":1,\"content\":\"hi\",\"thinking\":\"[]\"",
     "only assistant messages"},
    {"\"content\":\"\",\"tool_calls\"", "\"content\":\"\",\"thinking\":\"{}\",\"tool_calls\"",
     "thinking: not the text of a JSON array"},
    {"\"content\":\"\",\"tool_calls\"", "\"content\":\"\",\"thinking\":[],\"tool_calls\"",
     "thinking: expected a string"},
    {"\"tool_call_id\":\"c1\"}", "\"tool_call_id\":\"c1\",\"content\":\"x\"}",
     "not cleared has no content"},
    {"\"content\":\"hi\"", "\"content\":\"hi\",\"cleared\":true", "only tool messages"},
    {"\"content\":\"hi\"", "\"content\":\"hi\",\"summary\":false", "expected true"},
    {"\"iteration_calls\":[\"c1\"]", "\"iteration_calls\":[\"zz\"]", "unknown tool call \"zz\""},
    {"\"iteration_calls\":[\"c1\"]", "\"iteration_calls\":{}",
     "iteration_calls: expected an array"},
    {"\"messages\":[", "\"messages\":[null,", "messages[0]: expected an object"},
    {"{\"version\"", "[{\"version\"", "1:"},
    {"\"iteration_calls\":[\"c1\"]}", "\"iteration_calls\":[\"c1\"]", "1:"},
};

static void test_malformed_inputs(void **state)
{
    (void)state;
    size_t n = sizeof bad_cases / sizeof bad_cases[0];
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        char *doc = mutate(bad_cases[i].from, bad_cases[i].to);
        char err[256] = "untouched";
        ac_conv *c = ac_conv_from_json(doc, err, sizeof err);
        if (c || !strstr(err, bad_cases[i].expect))
            fail_msg("case %zu: got %s, error \"%s\", expected \"%s\"", i, c ? "success" : "NULL",
                     err, bad_cases[i].expect);
        free(doc);
    }
    char err[64];
    assert_null(ac_conv_from_json(NULL, err, sizeof err));
    assert_null(ac_conv_from_json("", err, sizeof err));
    assert_null(ac_conv_from_json("42", err, sizeof err));
    assert_non_null(strstr(err, "1:"));
    assert_null(ac_conv_from_json("[]", err, sizeof err));
    assert_string_equal(err, "(root): expected an object");
    assert_null(ac_conv_from_json("{}", NULL, 0)); /* no error buffer: still no crash */
    char tiny[8];
    assert_null(ac_conv_from_json("{}", tiny, sizeof tiny));
    assert_int_equal(strlen(tiny), sizeof tiny - 1); /* truncated, terminated */
}

static void test_truncations_and_flips(void **state)
{
    (void)state;
    ac_conv *c = rich(100);
    char *good = ac_conv_to_json(c);
    ac_conv_free(c);
    size_t len = strlen(good);
    char *buf = malloc(len + 1);
    char err[256];
    /* Every proper prefix is rejected. */
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(buf, good, cut);
        buf[cut] = 0;
        err[0] = 0;
        assert_null(ac_conv_from_json(buf, err, sizeof err));
        assert_true(err[0] != 0);
    }
    /* Deterministic byte changes: each either loads and then round-trips
     * stably, or fails with a message. */
    uint32_t seed = 12345;
    size_t loaded = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, good, len + 1);
        seed = seed * 1103515245u + 12345u;
        size_t pos = (seed >> 8) % len;
        seed = seed * 1103515245u + 12345u;
        static const char alphabet[] = "0123456789\"{}[],:-tfnxe\\ ";
        buf[pos] = alphabet[(seed >> 8) % (sizeof alphabet - 1)];
        err[0] = 0;
        ac_conv *d = ac_conv_from_json(buf, err, sizeof err);
        if (!d) {
            assert_true(err[0] != 0);
            continue;
        }
        loaded++;
        char *a = ac_conv_to_json(d);
        ac_conv *e = ac_conv_from_json(a, err, sizeof err);
        assert_non_null(e);
        char *b = ac_conv_to_json(e);
        assert_string_equal(a, b);
        free(a);
        free(b);
        ac_conv_free(d);
        ac_conv_free(e);
    }
    printf("# %zu of 3000 changed documents still loaded\n", loaded);
    free(buf);
    free(good);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_identical),  cmocka_unit_test(test_empty_round_trip),
        cmocka_unit_test(test_base_is_valid),         cmocka_unit_test(test_malformed_inputs),
        cmocka_unit_test(test_truncations_and_flips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
