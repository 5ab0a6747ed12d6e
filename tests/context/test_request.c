/* Tests of the provider request bodies: exact JSON for a small conversation
 * (compared as parsed JSON), tool results in call order, pending calls,
 * window/floor handling that never splits a call from its result, role
 * merging for Anthropic, tool filtering and option handling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "context/request.h"
#include "context/request_cache.h"

static json_t *parse(const char *s)
{
    json_error_t e;
    json_t *j = json_loads(s, JSON_ALLOW_NUL, &e);
    if (!j)
        fail_msg("bad JSON (%s) in: %s", e.text, s);
    return j;
}

static void assert_json_equal(const char *got, const char *want)
{
    json_t *g = parse(got), *w = parse(want);
    if (!json_equal(g, w)) {
        char *gs = json_dumps(g, JSON_INDENT(1) | JSON_SORT_KEYS);
        char *ws = json_dumps(w, JSON_INDENT(1) | JSON_SORT_KEYS);
        print_error("got:\n%s\nwant:\n%s\n", gs, ws);
        free(gs);
        free(ws);
        fail();
    }
    json_decref(g);
    json_decref(w);
}

static char *openai(const ac_conv *c, const ac_request_opts *o)
{
    char err[128] = "";
    char *s = ac_request_openai(c, o, err, sizeof err);
    if (!s)
        fail_msg("openai: %s", err);
    return s;
}

static char *anthropic(const ac_conv *c, const ac_request_opts *o)
{
    char err[128] = "";
    char *s = ac_request_anthropic(c, o, err, sizeof err);
    if (!s)
        fail_msg("anthropic: %s", err);
    return s;
}

/* system, user, assistant with three calls whose results arrive in reverse
 * order (one a failure), a final answer and a user reply. */
static ac_conv *small(void)
{
    ac_conv *c = ac_conv_new();
    ac_conv_add_tool_def(c, "read", "Read a file",
                         "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}");
    ac_conv_add_tool_def(c, "grep", "Search", "{\"type\":\"object\"}");
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "Be brief.", 1);
    ac_conv_add_message(c, AC_ROLE_USER, "Look at a and b", 2);
    ac_tool_call_in calls[] = {{"r1", "read", "{\"path\":\"a\"}", 0},
                               {"r2", "read", "{\"path\":\"b\"}", 0},
                               {"g1", "grep", "oops", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "Reading.", "hidden thoughts", calls, 3, 3),
                     AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "g1", 0, "bad json", 4), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "r2", 1, "B", 5), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "r1", 1, "A", 6), AC_CONV_OK);
    ac_conv_add_message(c, AC_ROLE_ASSISTANT, "A and B.", 7);
    ac_conv_add_message(c, AC_ROLE_USER, "thanks", 8);
    return c;
}

static void test_openai_exact(void **state)
{
    (void)state;
    ac_conv *c = small();
    ac_request_opts o = {.model = "gpt-x", .stream = 1};
    char *got = openai(c, &o);
    assert_json_equal(
        got, "{\"model\":\"gpt-x\",\"messages\":["
             "{\"role\":\"system\",\"content\":\"Be brief.\"},"
             "{\"role\":\"user\",\"content\":\"Look at a and b\"},"
             "{\"role\":\"assistant\",\"content\":\"Reading.\",\"tool_calls\":["
             "{\"id\":\"r1\",\"type\":\"function\",\"function\":{\"name\":\"read\","
             "\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}},"
             "{\"id\":\"r2\",\"type\":\"function\",\"function\":{\"name\":\"read\","
             "\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"}},"
             "{\"id\":\"g1\",\"type\":\"function\",\"function\":{\"name\":\"grep\","
             "\"arguments\":\"oops\"}}]},"
             "{\"role\":\"tool\",\"tool_call_id\":\"r1\",\"content\":\"A\"},"
             "{\"role\":\"tool\",\"tool_call_id\":\"r2\",\"content\":\"B\"},"
             "{\"role\":\"tool\",\"tool_call_id\":\"g1\",\"content\":\"Error: bad json\"},"
             "{\"role\":\"assistant\",\"content\":\"A and B.\"},"
             "{\"role\":\"user\",\"content\":\"thanks\"}],"
             "\"stream\":true,\"stream_options\":{\"include_usage\":true},"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\","
             "\"description\":\"Read a file\",\"parameters\":{\"type\":\"object\",\"properties\":"
             "{\"path\":{\"type\":\"string\"}}}}},"
             "{\"type\":\"function\",\"function\":{\"name\":\"grep\",\"description\":\"Search\","
             "\"parameters\":{\"type\":\"object\"}}}]}");
    /* Same conversation, same bytes. */
    char *again = openai(c, &o);
    assert_string_equal(got, again);
    free(again);
    free(got);
    ac_conv_free(c);
}

static void test_anthropic_exact(void **state)
{
    (void)state;
    ac_conv *c = small();
    ac_request_opts o = {.model = "claude-x", .stream = 1};
    char *got = anthropic(c, &o);
    assert_json_equal(
        got,
        "{\"model\":\"claude-x\",\"max_tokens\":4096,\"stream\":true,\"system\":\"Be brief.\","
        "\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Look at a and b\"}]},"
        "{\"role\":\"assistant\",\"content\":["
        "{\"type\":\"text\",\"text\":\"Reading.\"},"
        "{\"type\":\"tool_use\",\"id\":\"r1\",\"name\":\"read\",\"input\":{\"path\":\"a\"}},"
        "{\"type\":\"tool_use\",\"id\":\"r2\",\"name\":\"read\",\"input\":{\"path\":\"b\"}},"
        "{\"type\":\"tool_use\",\"id\":\"g1\",\"name\":\"grep\","
        "\"input\":{\"_raw_arguments\":\"oops\"}}]},"
        "{\"role\":\"user\",\"content\":["
        "{\"type\":\"tool_result\",\"tool_use_id\":\"r1\",\"content\":\"A\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"r2\",\"content\":\"B\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"g1\",\"content\":\"bad json\","
        "\"is_error\":true}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"A and B.\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"thanks\"}]}],"
        "\"tools\":[{\"name\":\"read\",\"description\":\"Read a file\",\"input_schema\":"
        "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}},"
        "{\"name\":\"grep\",\"description\":\"Search\",\"input_schema\":{\"type\":\"object\"}}]}");
    free(got);
    ac_conv_free(c);
}

/* Structured output: OpenAI gets response_format with the schema; Anthropic gets the schema as
 * an instruction after the system text (alone when there is none). */
static void test_output_schema(void **state)
{
    (void)state;
    ac_conv *c = small();
    const char *schema = "{\"type\":\"object\",\"required\":[\"n\"]}";
    ac_request_opts o = {.model = "gpt-x", .stream = 0, .output_schema = schema};
    char *got = openai(c, &o);
    json_t *j = json_loads(got, 0, NULL);
    assert_non_null(j);
    char *rf = json_dumps(json_object_get(j, "response_format"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(rf,
                        "{\"json_schema\":{\"name\":\"output\",\"schema\":{\"required\":[\"n\"],"
                        "\"type\":\"object\"},\"strict\":false},\"type\":\"json_schema\"}");
    free(rf);
    json_decref(j);
    free(got);
    o.model = "claude-x";
    got = anthropic(c, &o);
    j = json_loads(got, 0, NULL);
    assert_null(json_object_get(j, "response_format"));
    assert_string_equal(json_string_value(json_object_get(j, "system")),
                        "Be brief.\n\nReply with only a JSON value, no other text, that matches "
                        "this JSON Schema:\n{\"type\":\"object\",\"required\":[\"n\"]}");
    json_decref(j);
    free(got);
    ac_conv_free(c);
    c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_USER, "hi", 1);
    got = anthropic(c, &o);
    j = json_loads(got, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "system")),
                        "Reply with only a JSON value, no other text, that matches this JSON "
                        "Schema:\n{\"type\":\"object\",\"required\":[\"n\"]}");
    json_decref(j);
    free(got);
    ac_conv_free(c);
}

/* Anthropic thinking blocks go back first in their assistant message, with
 * their signatures, only when the request enables thinking; max_tokens is
 * raised above the budget; OpenAI requests never carry them. */
static void test_anthropic_thinking(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    assert_non_null(ac_conv_add_message(c, AC_ROLE_USER, "weather in Paris?", 1));
    ac_tool_call_in call = {"t1", "get_weather", "{\"city\":\"Paris\"}", 0};
    assert_int_equal(ac_conv_add_assistant(c, "Checking.", "I need the weather.", &call, 1, 2),
                     AC_CONV_OK);
    const char *blocks = "[{\"type\":\"redacted_thinking\",\"data\":\"EmwK\"},"
                         "{\"type\":\"thinking\",\"thinking\":\"I need the weather.\","
                         "\"signature\":\"EuYB\"}]";
    assert_int_equal(ac_conv_set_thinking(c, 1, blocks), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "t1", 1, "18 C", 3), AC_CONV_OK);
    /* refused: not an array, not an assistant message, no such message */
    assert_int_equal(ac_conv_set_thinking(c, 1, "{\"type\":\"thinking\"}"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_set_thinking(c, 1, "[unclosed"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_set_thinking(c, 0, "[]"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_set_thinking(c, 9, "[]"), AC_CONV_ENOTFOUND);
    assert_string_equal(ac_conv_message(c, 1)->thinking, blocks);

    ac_request_opts o = {.model = "claude-x", .thinking_budget = 8000};
    char *got = anthropic(c, &o);
    assert_json_equal(
        got, "{\"model\":\"claude-x\",\"max_tokens\":12096,\"stream\":false,"
             "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":8000},"
             "\"messages\":["
             "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"weather in Paris?\"}]},"
             "{\"role\":\"assistant\",\"content\":["
             "{\"type\":\"redacted_thinking\",\"data\":\"EmwK\"},"
             "{\"type\":\"thinking\",\"thinking\":\"I need the weather.\",\"signature\":\"EuYB\"},"
             "{\"type\":\"text\",\"text\":\"Checking.\"},"
             "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"get_weather\","
             "\"input\":{\"city\":\"Paris\"}}]},"
             "{\"role\":\"user\",\"content\":["
             "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"18 C\"}]}]}");
    free(got);
    /* a max_tokens above the budget is kept */
    o.max_tokens = 20000;
    got = anthropic(c, &o);
    json_t *j = parse(got);
    assert_int_equal(json_integer_value(json_object_get(j, "max_tokens")), 20000);
    json_decref(j);
    free(got);
    /* thinking off: no config, no blocks */
    o.thinking_budget = 0;
    o.max_tokens = 0;
    got = anthropic(c, &o);
    assert_null(strstr(got, "thinking"));
    assert_null(strstr(got, "EuYB"));
    free(got);
    /* OpenAI: never */
    o.thinking_budget = 8000;
    got = openai(c, &o);
    assert_null(strstr(got, "thinking"));
    assert_null(strstr(got, "EuYB"));
    free(got);
    ac_conv_free(c);
}

/* With thinking on, internal rounds the engine adds after a load_tool_calls
 * result (no thinking of their own) join that round, so the tool loop's last
 * assistant message starts with the model's thinking; thinking text holding
 * U+0000 survives; the new message gets its thinking even when a clock step
 * puts it before the end. */
static void test_anthropic_thinking_internal_rounds(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    assert_non_null(ac_conv_add_message(c, AC_ROLE_USER, "use the old result", 1));
    const char *think = "[{\"type\":\"thinking\",\"thinking\":\"a\\u0000b\",\"signature\":\"S1\"}]";
    ac_tool_call_in load = {"L1", "load_tool_calls", "{\"ids\":[\"old\"]}", 1};
    assert_int_equal(ac_conv_add_assistant_thinking(c, "", NULL, think, &load, 1, 2), AC_CONV_OK);
    assert_string_equal(ac_conv_message(c, 1)->thinking, think);
    assert_int_equal(ac_conv_set_tool_result(c, "L1", 1, "loaded: old", 3), AC_CONV_OK);
    ac_tool_call_in copy = {"old", "read", "{\"path\":\"x\"}", 1};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, &copy, 1, 3), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "old", 1, "X", 3), AC_CONV_OK);

    ac_request_opts o = {.model = "claude-x", .thinking_budget = 2000};
    char *got = anthropic(c, &o);
    assert_json_equal(
        got,
        "{\"model\":\"claude-x\",\"max_tokens\":4096,\"stream\":false,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2000},"
        "\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"use the old result\"}]},"
        "{\"role\":\"assistant\",\"content\":["
        "{\"type\":\"thinking\",\"thinking\":\"a\\u0000b\",\"signature\":\"S1\"},"
        "{\"type\":\"tool_use\",\"id\":\"L1\",\"name\":\"load_tool_calls\","
        "\"input\":{\"ids\":[\"old\"]}},"
        "{\"type\":\"tool_use\",\"id\":\"old\",\"name\":\"read\",\"input\":{\"path\":\"x\"}}]},"
        "{\"role\":\"user\",\"content\":["
        "{\"type\":\"tool_result\",\"tool_use_id\":\"L1\",\"content\":\"loaded: old\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"old\",\"content\":\"X\"}]}]}");
    free(got);
    /* thinking off: the rounds stay as they are */
    o.thinking_budget = 0;
    got = anthropic(c, &o);
    json_t *j = parse(got);
    assert_int_equal(json_array_size(json_object_get(j, "messages")), 5);
    json_decref(j);
    free(got);
    /* the largest budget still leaves max_tokens above it */
    o.thinking_budget = INT_MAX;
    got = anthropic(c, &o);
    j = parse(got);
    json_int_t mt = json_integer_value(json_object_get(j, "max_tokens"));
    json_int_t bt =
        json_integer_value(json_object_get(json_object_get(j, "thinking"), "budget_tokens"));
    assert_true(mt > bt);
    json_decref(j);
    free(got);

    /* a turn stamped earlier than the last message lands before it, and its
     * thinking goes with it, not onto the last message */
    ac_tool_call_in late = {"t9", "read", "{}", 0};
    assert_int_equal(
        ac_conv_add_assistant_thinking(c, "done", NULL, "[{\"type\":\"x\"}]", &late, 1, 0),
        AC_CONV_OK);
    size_t found = 0;
    for (size_t i = 0; i < ac_conv_message_count(c); i++) {
        const ac_message *m = ac_conv_message(c, i);
        if (m->thinking && strcmp(m->thinking, "[{\"type\":\"x\"}]") == 0) {
            assert_string_equal(m->content, "done");
            found++;
        }
    }
    assert_int_equal(found, 1);
    for (size_t i = 0; i < ac_conv_message_count(c); i++) { /* the load turn keeps its own */
        const ac_message *m = ac_conv_message(c, i);
        if (m->n_tool_calls && strcmp(m->tool_call_ids[0], "L1") == 0)
            assert_string_equal(m->thinking, think);
    }
    assert_int_equal(ac_conv_add_assistant_thinking(c, "x", NULL, "{}", NULL, 0, 9),
                     AC_CONV_EINVAL);
    ac_conv_free(c);
}

/* Checks OpenAI ordering: every assistant's tool_calls are followed by
 * exactly their tool messages, in order; no other tool message appears.
 * Returns the number of tool messages. */
static size_t check_openai_pairs(const char *body)
{
    json_t *root = parse(body);
    json_t *msgs = json_object_get(root, "messages");
    size_t n = json_array_size(msgs), tools = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        assert_string_not_equal(role, "tool"); /* only reached through a call */
        json_t *calls = json_object_get(m, "tool_calls");
        for (size_t k = 0; k < json_array_size(calls); k++) {
            json_t *t = json_array_get(msgs, i + 1 + k);
            assert_non_null(t);
            assert_string_equal(json_string_value(json_object_get(t, "role")), "tool");
            assert_string_equal(json_string_value(json_object_get(t, "tool_call_id")),
                                json_string_value(json_object_get(json_array_get(calls, k), "id")));
            tools++;
        }
        i += json_array_size(calls);
    }
    json_decref(root);
    return tools;
}

/* Checks Anthropic shape: roles alternate, the first is user, and every
 * assistant tool_use is answered first thing in the next user message. */
static void check_anthropic_pairs(const char *body)
{
    json_t *root = parse(body);
    json_t *msgs = json_object_get(root, "messages");
    const char *prev = NULL;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (prev)
            assert_string_not_equal(prev, role);
        else
            assert_string_equal(role, "user");
        prev = role;
        json_t *blocks = json_object_get(m, "content");
        assert_true(json_array_size(blocks) > 0);
        size_t uses = 0;
        for (size_t k = 0; k < json_array_size(blocks); k++) {
            json_t *b = json_array_get(blocks, k);
            if (strcmp(json_string_value(json_object_get(b, "type")), "tool_use") != 0)
                continue;
            json_t *next = json_object_get(json_array_get(msgs, i + 1), "content");
            json_t *res = json_array_get(next, uses++);
            assert_non_null(res);
            assert_string_equal(json_string_value(json_object_get(res, "type")), "tool_result");
            assert_string_equal(json_string_value(json_object_get(res, "tool_use_id")),
                                json_string_value(json_object_get(b, "id")));
        }
    }
    json_decref(root);
}

static void test_results_in_call_order(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_USER, "go", 1);
    ac_tool_call_in calls[5];
    char ids[5][8];
    for (int i = 0; i < 5; i++) {
        snprintf(ids[i], sizeof ids[i], "k%d", i);
        calls[i] = (ac_tool_call_in){ids[i], "t", "{}", 0};
    }
    ac_conv_add_assistant(c, "", NULL, calls, 5, 2);
    int order[5] = {3, 0, 4, 2, 1};
    for (int i = 0; i < 5; i++) {
        char content[16];
        snprintf(content, sizeof content, "res-%d", order[i]);
        assert_int_equal(ac_conv_set_tool_result(c, ids[order[i]], 1, content, 3 + i), AC_CONV_OK);
    }
    ac_request_opts o = {.model = "m"};
    char *body = openai(c, &o);
    assert_int_equal(check_openai_pairs(body), 5);
    json_t *root = parse(body);
    json_t *msgs = json_object_get(root, "messages");
    assert_true(json_is_null(json_object_get(json_array_get(msgs, 1), "content")));
    for (int i = 0; i < 5; i++) {
        json_t *t = json_array_get(msgs, 2 + (size_t)i);
        char want[16];
        snprintf(want, sizeof want, "res-%d", i);
        assert_string_equal(json_string_value(json_object_get(t, "content")), want);
    }
    json_decref(root);
    free(body);
    body = anthropic(c, &o);
    check_anthropic_pairs(body);
    free(body);
    ac_conv_free(c);
}

static void test_pending_calls_left_out(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_USER, "go", 1);
    ac_tool_call_in calls[] = {{"done", "t", "{}", 0}, {"wait", "t", "{}", 0}};
    ac_conv_add_assistant(c, "", NULL, calls, 2, 2);
    ac_conv_set_tool_result(c, "done", 1, "ok", 3);
    ac_tool_call_in only[] = {{"w2", "t", "{}", 0}};
    ac_conv_add_assistant(c, "", NULL, only, 1, 4); /* nothing sendable: dropped */
    ac_request_opts o = {.model = "m"};
    char *body = openai(c, &o);
    assert_int_equal(check_openai_pairs(body), 1);
    assert_null(strstr(body, "\"wait\""));
    assert_null(strstr(body, "w2"));
    json_t *root = parse(body);
    assert_int_equal(json_array_size(json_object_get(root, "messages")), 3);
    json_decref(root);
    free(body);
    body = anthropic(c, &o);
    check_anthropic_pairs(body);
    assert_null(strstr(body, "\"wait\""));
    free(body);
    ac_conv_free(c);
}

/* Many rounds of: user, assistant(2 calls), 2 tool results, assistant. */
static ac_conv *rounds(int n)
{
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "sys", 0);
    int64_t t = 1;
    for (int r = 0; r < n; r++) {
        char text[32], a[16], b[16];
        snprintf(text, sizeof text, "question %d", r);
        ac_conv_add_message(c, AC_ROLE_USER, text, t++);
        snprintf(a, sizeof a, "a%d", r);
        snprintf(b, sizeof b, "b%d", r);
        ac_tool_call_in calls[] = {{a, "t", "{}", 0}, {b, "t", "{}", 0}};
        ac_conv_add_assistant(c, "", NULL, calls, 2, t++);
        ac_conv_set_tool_result(c, b, 1, "B", t++);
        ac_conv_set_tool_result(c, a, 1, "A", t++);
        snprintf(text, sizeof text, "answer %d", r);
        ac_conv_add_message(c, AC_ROLE_ASSISTANT, text, t++);
    }
    return c;
}

static void test_window_never_splits(void **state)
{
    (void)state;
    ac_conv *c = rounds(6); /* 1 + 6*5 = 31 messages */
    ac_request_opts o = {.model = "m"};
    for (size_t w = 1; w <= 32; w++) {
        for (size_t floor = 0; floor <= ac_conv_message_count(c); floor += 3) {
            ac_conv_set_window(c, w);
            ac_conv_set_floor(c, floor);
            char *body = openai(c, &o);
            check_openai_pairs(body);
            json_t *root = parse(body);
            json_t *msgs = json_object_get(root, "messages");
            /* The system message is always first. */
            assert_string_equal(
                json_string_value(json_object_get(json_array_get(msgs, 0), "content")), "sys");
            json_decref(root);
            free(body);
            body = anthropic(c, &o);
            check_anthropic_pairs(body);
            assert_non_null(strstr(body, "\"system\":\"sys\""));
            free(body);
        }
    }
    /* Window 3 ends in round 5's "answer": A, B and the answer are visible;
     * the call is pulled in, and the first user message is kept. */
    ac_conv_set_floor(c, 0);
    ac_conv_set_window(c, 3);
    char *body = openai(c, &o);
    json_t *root = parse(body);
    json_t *msgs = json_object_get(root, "messages");
    assert_int_equal(json_array_size(msgs), 6); /* sys, question 0, asst, 2 tools, answer 5 */
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")),
                        "question 0");
    assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 5), "content")),
                        "answer 5");
    json_decref(root);
    free(body);
    ac_conv_free(c);
}

static void test_anthropic_merging_and_inputs(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "one", 1);
    ac_conv_add_message(c, AC_ROLE_USER, "first", 2);
    ac_conv_add_message(c, AC_ROLE_USER, "second", 3);
    ac_conv_add_message(c, AC_ROLE_USER, "", 4); /* empty: left out */
    ac_tool_call_in calls[] = {{"e", "t", "", 0}, {"s", "t", "  ", 0}, {"a", "t", "[1]", 0}};
    ac_conv_add_assistant(c, "", NULL, calls, 3, 5);
    ac_conv_set_tool_result(c, "e", 1, "E", 6);
    ac_conv_set_tool_result(c, "s", 1, "S", 7);
    ac_conv_set_tool_result(c, "a", 0, "A", 8);
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "two", 9);
    ac_conv_add_message(c, AC_ROLE_USER, "after", 10);
    ac_request_opts o = {.model = "m", .max_tokens = 77};
    char *body = anthropic(c, &o);
    check_anthropic_pairs(body);
    assert_json_equal(
        body,
        "{\"model\":\"m\",\"max_tokens\":77,\"stream\":false,\"system\":\"one\\n\\ntwo\","
        "\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"first\"},"
        "{\"type\":\"text\",\"text\":\"second\"}]},"
        "{\"role\":\"assistant\",\"content\":["
        "{\"type\":\"tool_use\",\"id\":\"e\",\"name\":\"t\",\"input\":{}},"
        "{\"type\":\"tool_use\",\"id\":\"s\",\"name\":\"t\",\"input\":{}},"
        "{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"t\","
        "\"input\":{\"_raw_arguments\":\"[1]\"}}]},"
        "{\"role\":\"user\",\"content\":["
        "{\"type\":\"tool_result\",\"tool_use_id\":\"e\",\"content\":\"E\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"s\",\"content\":\"S\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"a\",\"content\":\"A\",\"is_error\":true},"
        "{\"type\":\"text\",\"text\":\"after\"}]}]}");
    free(body);
    ac_conv_free(c);
}

static void test_cleared_and_options(void **state)
{
    (void)state;
    ac_conv *c = small();
    /* Clear the failed result: the marker is sent without the prefix. */
    size_t gi = (size_t)-1;
    for (size_t i = 0; i < ac_conv_message_count(c); i++) {
        const ac_message *m = ac_conv_message(c, i);
        if (m->tool_call_id && strcmp(m->tool_call_id, "g1") == 0)
            gi = i;
    }
    assert_int_equal(ac_conv_clear_tool_result(c, gi, "[cleared]", 100), AC_CONV_OK);
    const char *only_read[] = {"read", NULL};
    ac_request_opts o = {
        .model = "m", .stream = 0, .max_tokens = 100, .tool_names_allowed = only_read};
    char *body = openai(c, &o);
    json_t *root = parse(body);
    assert_true(json_is_false(json_object_get(root, "stream")));
    assert_null(json_object_get(root, "stream_options"));
    assert_int_equal(json_integer_value(json_object_get(root, "max_tokens")), 100);
    json_t *tools = json_object_get(root, "tools");
    assert_int_equal(json_array_size(tools), 1);
    assert_non_null(strstr(body, "\"content\":\"[cleared]\""));
    assert_null(strstr(body, "bad json"));
    json_decref(root);
    free(body);

    const char *none[] = {"nothing", NULL};
    o.tool_names_allowed = none;
    body = openai(c, &o);
    root = parse(body);
    assert_null(json_object_get(root, "tools"));
    assert_int_equal(json_integer_value(json_object_get(root, "max_tokens")), 100);
    json_decref(root);
    free(body);
    body = anthropic(c, &o);
    root = parse(body);
    assert_null(json_object_get(root, "tools"));
    assert_int_equal(json_integer_value(json_object_get(root, "max_tokens")), 100);
    json_decref(root);
    free(body);

    char err[64] = "";
    ac_request_opts nomodel = {0};
    assert_null(ac_request_openai(c, &nomodel, err, sizeof err));
    assert_string_equal(err, "request: no model given");
    err[0] = 0;
    assert_null(ac_request_anthropic(c, NULL, err, sizeof err));
    assert_string_equal(err, "request: no model given");

    /* An empty conversation still gives a well-formed body. */
    ac_conv *e = ac_conv_new();
    o.tool_names_allowed = NULL;
    body = openai(e, &o);
    root = parse(body);
    assert_int_equal(json_array_size(json_object_get(root, "messages")), 0);
    json_decref(root);
    free(body);
    ac_conv_free(e);
    ac_conv_free(c);
}

/* ---- request settings ---- */

static ac_conv *one_tool(int with_tools)
{
    ac_conv *c = ac_conv_new();
    if (with_tools) {
        ac_conv_add_tool_def(c, "read", "Read", "{\"type\":\"object\"}");
        ac_conv_add_tool_def(c, "grep", "Search", "{\"type\":\"object\"}");
    }
    ac_conv_add_message(c, AC_ROLE_USER, "hi", 1);
    return c;
}

#define OA_TOOLS                                                                                   \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"read\",\"description\":\"Read\","  \
    "\"parameters\":{\"type\":\"object\"}}},{\"type\":\"function\",\"function\":{\"name\":"        \
    "\"grep\",\"description\":\"Search\",\"parameters\":{\"type\":\"object\"}}}]"
#define AN_TOOLS                                                                                   \
    "\"tools\":[{\"name\":\"read\",\"description\":\"Read\",\"input_schema\":{\"type\":"           \
    "\"object\"}},{\"name\":\"grep\",\"description\":\"Search\",\"input_schema\":{\"type\":"       \
    "\"object\"}}]"
#define OA_HEAD "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define AN_HEAD "{\"model\":\"m\",\"max_tokens\":4096,\"stream\":false"
#define AN_MSGS                                                                                    \
    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]"

static void check_bodies(int with_tools, const ac_request_settings *st, const char *want_openai,
                         const char *want_anthropic)
{
    ac_conv *c = one_tool(with_tools);
    ac_request_opts o = {.model = "m", .settings = st};
    char *body = openai(c, &o);
    assert_string_equal(body, want_openai);
    free(body);
    body = anthropic(c, &o);
    assert_string_equal(body, want_anthropic);
    free(body);
    ac_conv_free(c);
}

static void test_settings_sampling(void **state)
{
    (void)state;
    const char *stop[] = {"END", "STOP", NULL};
    ac_request_settings st = {
        .has_temperature = true, .temperature = 0.7, .has_top_p = true, .top_p = 0.9, .stop = stop};
    check_bodies(0, &st,
                 OA_HEAD ",\"temperature\":0.7,\"top_p\":0.9,\"stop\":[\"END\",\"STOP\"],"
                         "\"stream\":false}",
                 AN_HEAD ",\"temperature\":0.7,\"top_p\":0.9,\"stop_sequences\":[\"END\","
                         "\"STOP\"]," AN_MSGS "}");
    /* OpenAI only: seed and reasoning_effort */
    ac_request_settings oa = {.has_seed = true, .seed = -42, .reasoning_effort = "low"};
    ac_conv *c = one_tool(0);
    ac_request_opts o = {.model = "m", .settings = &oa};
    char *body = openai(c, &o);
    assert_string_equal(body,
                        OA_HEAD ",\"seed\":-42,\"reasoning_effort\":\"low\",\"stream\":false}");
    free(body);
    ac_conv_free(c);
    /* temperature 0 is sent; an empty stop list is not */
    const char *nostop[] = {NULL};
    ac_request_settings zero = {.has_temperature = true, .temperature = 0, .stop = nostop};
    check_bodies(0, &zero, OA_HEAD ",\"temperature\":0.0,\"stream\":false}",
                 AN_HEAD ",\"temperature\":0.0," AN_MSGS "}");
}

static void test_settings_tool_choice(void **state)
{
    (void)state;
    ac_request_settings st = {.tool_choice = "read"};
    check_bodies(
        1, &st,
        OA_HEAD ",\"stream\":false," OA_TOOLS
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"read\"}}}",
        AN_HEAD "," AN_MSGS "," AN_TOOLS ",\"tool_choice\":{\"type\":\"tool\",\"name\":\"read\"}}");
    st.tool_choice = "none";
    check_bodies(1, &st, OA_HEAD ",\"stream\":false," OA_TOOLS ",\"tool_choice\":\"none\"}",
                 AN_HEAD "," AN_MSGS "," AN_TOOLS ",\"tool_choice\":{\"type\":\"none\"}}");
    st.tool_choice = "required";
    check_bodies(1, &st, OA_HEAD ",\"stream\":false," OA_TOOLS ",\"tool_choice\":\"required\"}",
                 AN_HEAD "," AN_MSGS "," AN_TOOLS ",\"tool_choice\":{\"type\":\"any\"}}");
    st.tool_choice = "auto";
    st.parallel_tool_calls = -1;
    check_bodies(1, &st,
                 OA_HEAD ",\"stream\":false," OA_TOOLS
                         ",\"tool_choice\":\"auto\",\"parallel_tool_calls\":false}",
                 AN_HEAD
                 "," AN_MSGS "," AN_TOOLS
                 ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}");
    /* parallel alone: Anthropic carries it in an auto tool_choice */
    ac_request_settings par = {.parallel_tool_calls = 1};
    check_bodies(1, &par, OA_HEAD ",\"stream\":false," OA_TOOLS ",\"parallel_tool_calls\":true}",
                 AN_HEAD
                 "," AN_MSGS "," AN_TOOLS
                 ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":false}}");
    /* one tool and no parallel calls */
    ac_request_settings one = {.tool_choice = "grep", .parallel_tool_calls = -1};
    check_bodies(
        1, &one,
        OA_HEAD ",\"stream\":false," OA_TOOLS
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"grep\"}},"
                "\"parallel_tool_calls\":false}",
        AN_HEAD "," AN_MSGS "," AN_TOOLS ",\"tool_choice\":{\"type\":\"tool\",\"name\":\"grep\","
                "\"disable_parallel_tool_use\":true}}");
    /* none has no parallel switch at Anthropic */
    ac_request_settings none = {.tool_choice = "none", .parallel_tool_calls = -1};
    check_bodies(1, &none,
                 OA_HEAD ",\"stream\":false," OA_TOOLS
                         ",\"tool_choice\":\"none\",\"parallel_tool_calls\":false}",
                 AN_HEAD "," AN_MSGS "," AN_TOOLS ",\"tool_choice\":{\"type\":\"none\"}}");
    /* no tools offered: the tool settings are not sent */
    ac_request_settings req = {.tool_choice = "required", .parallel_tool_calls = -1};
    check_bodies(0, &req, OA_HEAD ",\"stream\":false}", AN_HEAD "," AN_MSGS "}");

    /* a name that is not offered is refused when the request is built */
    ac_conv *c = one_tool(1);
    const char *only_read[] = {"read", NULL};
    ac_request_settings bad = {.tool_choice = "grep"};
    ac_request_opts o = {.model = "m", .settings = &bad, .tool_names_allowed = only_read};
    char err[256] = "";
    assert_null(ac_request_openai(c, &o, err, sizeof err));
    assert_string_equal(err, "tool_choice 'grep' is not a tool offered to the model (auto, none, "
                             "required, or the name of a configured tool)");
    err[0] = 0;
    bad.tool_choice = "write";
    o.tool_names_allowed = NULL;
    assert_null(ac_request_anthropic(c, &o, err, sizeof err));
    assert_non_null(strstr(err, "tool_choice 'write' is not a tool offered"));
    ac_conv_free(c);
    c = one_tool(0);
    err[0] = 0;
    assert_null(ac_request_openai(c, &o, err, sizeof err));
    assert_non_null(strstr(err, "tool_choice 'write' is not a tool offered"));
    ac_conv_free(c);
}

static void test_settings_passthrough(void **state)
{
    (void)state;
    ac_request_settings st = {.has_temperature = true,
                              .temperature = 0.5,
                              .request_json = "{\"temperature\":1,\"user\":\"u1\","
                                              "\"metadata\":{\"k\":[1,2.5]}}"};
    /* merged last: a field agentc sets is replaced in place, others are appended */
    check_bodies(0, &st,
                 OA_HEAD ",\"temperature\":1,\"stream\":false,\"user\":\"u1\","
                         "\"metadata\":{\"k\":[1,2.5]}}",
                 AN_HEAD ",\"temperature\":1," AN_MSGS ",\"user\":\"u1\","
                         "\"metadata\":{\"k\":[1,2.5]}}");
    ac_request_settings mt = {.request_json = "{\"max_tokens\":7,\"top_k\":3}"};
    check_bodies(0, &mt, OA_HEAD ",\"stream\":false,\"max_tokens\":7,\"top_k\":3}",
                 "{\"model\":\"m\",\"max_tokens\":7,\"stream\":false," AN_MSGS ",\"top_k\":3}");
}

static void check_refused(const ac_request_settings *st, int anthropic, const char *want)
{
    char err[512] = "";
    assert_int_equal(ac_request_settings_check(st, anthropic, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
}

static void test_settings_check(void **state)
{
    (void)state;
    assert_int_equal(ac_request_settings_check(NULL, 1, NULL, 0), 0);
    const char *stop[] = {"x", NULL};
    ac_request_settings ok = {.has_temperature = true,
                              .temperature = 1,
                              .has_top_p = true,
                              .top_p = 1,
                              .stop = stop,
                              .tool_choice = "read",
                              .parallel_tool_calls = -1,
                              .request_json = "{\"top_k\":5}"};
    assert_int_equal(ac_request_settings_check(&ok, 1, NULL, 0), 0);
    ok.temperature = 2;
    ok.has_seed = true;
    ok.reasoning_effort = "high";
    assert_int_equal(ac_request_settings_check(&ok, 0, NULL, 0), 0);

    ac_request_settings t = {.has_temperature = true, .temperature = 2.5};
    check_refused(&t, 0, "temperature 2.5 is out of range: OpenAI takes 0 to 2");
    t.temperature = 1.5;
    check_refused(&t, 1, "temperature 1.5 is out of range: Anthropic takes 0 to 1");
    t.temperature = -0.1;
    check_refused(&t, 0, "temperature -0.1 is out of range");
    ac_request_settings p = {.has_top_p = true, .top_p = 1.01};
    check_refused(&p, 0, "top_p 1.01 is out of range: 0 to 1");
    const char *empty[] = {"a", "", NULL};
    ac_request_settings s = {.stop = empty};
    check_refused(&s, 1, "stop sequence #2 is empty");
    ac_request_settings seed = {.has_seed = true, .seed = 1};
    check_refused(&seed, 1, "seed is not a setting Anthropic has (OpenAI only)");
    ac_request_settings eff = {.reasoning_effort = "low"};
    check_refused(&eff, 1, "reasoning_effort is not a setting Anthropic has");
    eff.reasoning_effort = "max";
    check_refused(&eff, 0, "reasoning_effort 'max' is not one of");
    ac_request_settings tc = {.tool_choice = ""};
    check_refused(&tc, 0, "tool_choice is empty");
    ac_request_settings par = {.parallel_tool_calls = 2};
    check_refused(&par, 0, "parallel_tool_calls must be");
    const char *bad_json[][2] = {
        {"{\"messages\":[]}", "request JSON may not set \"messages\""},
        {"{\"a\":1,\"tools\":[]}", "request JSON may not set \"tools\""},
        {"{\"stream\":false}", "request JSON may not set \"stream\""},
        {"{\"stream_options\":{}}", "request JSON may not set \"stream_options\""},
        {"{\"system\":\"x\"}", "request JSON may not set \"system\""},
        {"[1]", "request JSON must be a JSON object"},
        {"{\"a\":", "request JSON is not valid JSON"},
        {"{\"a\":1,\"a\":2}", "request JSON is not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        ac_request_settings j = {.request_json = bad_json[i][0]};
        check_refused(&j, 0, bad_json[i][1]);
        check_refused(&j, 1, bad_json[i][1]);
    }

    /* the copy owns its strings */
    ac_request_settings *d = ac_request_settings_dup(&ok);
    assert_non_null(d);
    assert_ptr_not_equal(d->stop, ok.stop);
    assert_string_equal(d->stop[0], "x");
    assert_null(d->stop[1]);
    assert_string_equal(d->tool_choice, "read");
    assert_string_equal(d->reasoning_effort, "high");
    assert_string_equal(d->request_json, "{\"top_k\":5}");
    assert_true(d->has_seed && d->parallel_tool_calls == -1);
    ac_request_settings_free(d);
    d = ac_request_settings_dup(NULL);
    assert_non_null(d);
    ac_request_settings_free(d);
}

/* Namespaced tools ("prefix::tool") go on the wire as "prefix__tool", in the offered tools, the
 * history's calls and tool_choice, for both APIs; the offer callback drops or rewrites tools. */
static int offer_fn(void *ud, const char *name, json_t **schema)
{
    (*(int *)ud)++;
    if (!strcmp(name, "plane::edit"))
        return 0;
    if (!strcmp(name, "plane::login")) {
        if (!schema)
            return 2; /* called again with the schema */
        json_object_set_new(*schema, "x-seen", json_true());
    }
    return 1;
}

static void test_namespaced_wire_names(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_tool_def(c, "plane::login", "Log in", "{\"type\":\"object\"}");
    ac_conv_add_tool_def(c, "plane::edit", "Edit", "{\"type\":\"object\"}");
    ac_conv_add_tool_def(c, "plain", "Plain", "{\"type\":\"object\"}");
    ac_conv_add_message(c, AC_ROLE_USER, "go", 1);
    ac_tool_call_in calls[] = {{"c1", "plane::login", "{}", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, calls, 1, 2), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "c1", 1, "in", 3), AC_CONV_OK);
    int asked = 0;
    ac_request_settings st = {0};
    st.tool_choice = "plane::login";
    ac_request_opts o = {
        .model = "m", .tool_offer = offer_fn, .tool_offer_ud = &asked, .settings = &st};
    char *a = openai(c, &o);
    assert_int_equal(asked, 4); /* plane::login twice: with no schema, then with it */
    json_t *j = parse(a);
    json_t *tools = json_object_get(j, "tools");
    assert_int_equal(json_array_size(tools), 2);
    json_t *f0 = json_object_get(json_array_get(tools, 0), "function");
    assert_string_equal(json_string_value(json_object_get(f0, "name")), "plane__login");
    assert_true(json_is_true(json_object_get(json_object_get(f0, "parameters"), "x-seen")));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(tools, 1), "function"), "name")),
                        "plain");
    json_t *asst = json_array_get(json_object_get(j, "messages"), 1);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(asst, "tool_calls"), 0), "function"),
            "name")),
        "plane__login");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(j, "tool_choice"), "function"), "name")),
        "plane__login");
    json_decref(j);
    free(a);
    char *b = anthropic(c, &o);
    j = parse(b);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "tools"), 0), "name")),
        "plane__login");
    json_t *content = json_object_get(json_array_get(json_object_get(j, "messages"), 1), "content");
    assert_string_equal(json_string_value(json_object_get(json_array_get(content, 0), "name")),
                        "plane__login");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "tool_choice"), "name")),
        "plane__login");
    json_decref(j);
    free(b);
    ac_conv_free(c);
}

/* ---- the body's bytes against jansson's ---- */

/* n bytes of random UTF-8 (controls, quotes, every sequence length), NUL-terminated */
static void random_text(char *out, size_t cap)
{
    size_t n = 0, len = (size_t)rand() % (cap - 5);
    while (n < len) {
        unsigned r = (unsigned)rand(), cp;
        switch (r % 5) {
        case 0:
            cp = 1 + r % 0x7f;
            break;
        case 1:
            cp = 0x80 + r % 0x780;
            break;
        case 2:
            cp = 0x800 + r % 0xF800;
            break;
        case 3:
            cp = 0x10000 + r % 0x100000;
            break;
        default:
            cp = "\"\\\n\t/\x7f\x01"[r % 7];
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 'x';
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xE0 | (cp >> 12));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | (cp >> 18));
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[n] = 0;
}

#define REF_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* Rounds of a user's text, an assistant's text and two calls (one failing), their results and
 * an answer; the body is compared, byte for byte, with the one jansson wrote for it, short
 * (serialized whole) and long (from the cache), with and without a note, max_tokens and
 * streaming. */
static void test_openai_bytes_as_jansson(void **state)
{
    (void)state;
    srand(5);
    char t[8][96];
    for (int iter = 0; iter < 120; iter++) {
        ac_conv *c = ac_conv_new();
        json_t *msgs = json_array();
        random_text(t[0], sizeof t[0]);
        ac_conv_add_message(c, AC_ROLE_SYSTEM, t[0], 1);
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", t[0]));
        for (int round = 0; round < 1 + iter % 4; round++) {
            for (int k = 1; k < 8; k++)
                random_text(t[k], sizeof t[k]);
            if (iter % 5 == 0)
                t[2][0] = 0; /* an assistant with calls and no text: content null */
            char id1[32], id2[32];
            snprintf(id1, sizeof id1, "call_%d_a", round);
            snprintf(id2, sizeof id2, "call_%d_b", round);
            int64_t ms = 10 * round;
            ac_conv_add_message(c, AC_ROLE_USER, t[1], ms + 2);
            ac_tool_call_in in[2] = {{id1, "calc", t[3], 0}, {id2, "calc", t[4], 0}};
            assert_int_equal(ac_conv_add_assistant(c, t[2], NULL, in, 2, ms + 3), AC_CONV_OK);
            assert_int_equal(ac_conv_set_tool_result(c, id1, 1, t[5], ms + 4), AC_CONV_OK);
            assert_int_equal(ac_conv_set_tool_result(c, id2, 0, t[6], ms + 5), AC_CONV_OK);
            ac_conv_add_message(c, AC_ROLE_ASSISTANT, t[7], ms + 6);
            char err[300];
            snprintf(err, sizeof err, "Error: %s", t[6]);
            json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "user", "content", t[1]));
            json_array_append_new(
                msgs,
                json_pack("{s:s, s:o, s:[{s:s, s:s, s:{s:s, s:s}}, {s:s, s:s, s:{s:s, "
                          "s:s}}]}",
                          "role", "assistant", "content", *t[2] ? json_string(t[2]) : json_null(),
                          "tool_calls", "id", id1, "type", "function", "function", "name", "calc",
                          "arguments", t[3], "id", id2, "type", "function", "function", "name",
                          "calc", "arguments", t[4]));
            json_array_append_new(msgs, json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                                                  id1, "content", t[5]));
            json_array_append_new(msgs, json_pack("{s:s, s:s, s:s}", "role", "tool", "tool_call_id",
                                                  id2, "content", err));
            json_array_append_new(msgs,
                                  json_pack("{s:s, s:s}", "role", "assistant", "content", t[7]));
        }
        random_text(t[0], sizeof t[0]);
        ac_request_opts o = {.model = "m\xc3\xa9",
                             .stream = iter % 2,
                             .max_tokens = iter % 3 ? 0 : 77,
                             .context_note = iter % 4 ? NULL : t[0]};
        json_t *root = json_pack("{s:s, s:O}", "model", o.model, "messages", msgs);
        if (o.context_note)
            json_array_append_new(json_object_get(root, "messages"),
                                  json_pack("{s:s, s:s}", "role", "system", "content", t[0]));
        if (o.max_tokens)
            json_object_set_new(root, "max_tokens", json_integer(77));
        json_object_set_new(root, "stream", json_boolean(o.stream));
        if (o.stream)
            json_object_set_new(root, "stream_options", json_pack("{s:b}", "include_usage", 1));
        char *want = json_dumps(root, REF_FLAGS);
        for (int again = 0; again < 2; again++) { /* the second from the cache when long */
            char err[256] = "";
            char *got = ac_request_openai(c, &o, err, sizeof err);
            assert_non_null(got);
            assert_string_equal(got, want);
            free(got);
        }
        /* with a setting (a JSON value spliced after the messages): the same messages */
        ac_request_settings st = {.has_seed = true, .seed = 9};
        o.settings = &st;
        json_object_set_new(root, "seed", json_integer(9));
        json_t *tail = json_deep_copy(root);
        json_object_del(root, "stream");
        json_object_del(root, "stream_options");
        json_object_set(root, "stream", json_object_get(tail, "stream"));
        if (o.stream)
            json_object_set(root, "stream_options", json_object_get(tail, "stream_options"));
        json_decref(tail);
        free(want);
        want = json_dumps(root, REF_FLAGS);
        char err[256] = "";
        char *got = ac_request_openai(c, &o, err, sizeof err);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
        free(want);
        json_decref(root);
        json_decref(msgs);
        ac_conv_free(c);
    }
}

/* An offer callback for the members test: drops "drop", adds an enum to "kit::pick". */
static int members_offer(void *ud, const char *name, json_t **schema)
{
    (void)ud;
    if (!strcmp(name, "drop"))
        return 0;
    if (strcmp(name, "kit::pick") != 0)
        return 1;
    if (!schema)
        return 2;
    json_object_set_new(*schema, "enum", json_pack("[s,s]", "a", "b\xc3\xa9"));
    return 1;
}

/* The members after the messages (max_tokens, the output schema, sampling, seed, effort,
 * stream, tools, tool_choice, parallel calls) written by the compact writer: the bytes and
 * errors of the JSON value's path, which an empty pass-through takes. */
static void test_openai_members_as_jansson(void **state)
{
    (void)state;
    srand(11);
    static const char *const schemas[] = {
        "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}},\"required\":[\"q\"]}",
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"minimum\":0.5,"
        "\"maximum\":1e3,\"multipleOf\":0.1}}}",
        "{\"type\":\"object\",\"x\":\"caf\\u00e9 \\\"q\\\" \\\\ \\/ \\u0001\",\"e\":-12,"
        "\"f\":true,\"g\":null,\"h\":[],\"i\":{}}",
        "{ \"type\" : \"object\", \"properties\" : { \"a\" : { \"type\" : \"array\", \"items\" : "
        "{ \"type\" : \"integer\", \"minimum\": -3 } } } }",
        "{\"type\":\"object\",\"properties\":{\"e1\":{\"type\":\"string\",\"default\":\"1e5\"}}}"};
    static const char *const outputs[] = {
        NULL,
        "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\",\"multipleOf\":0.01}}}",
        " { \"a\" : [1, 2.5e10, \"\\u00e9\", 0.1] } ",
        "not json",
        "5",
        "{\"k\":\"\\/\"}"};
    static const char *const names[] = {"calc", "kit::pick", "drop", "kit::other", "w\xc3\xa9"};
    static const char *const choices[] = {NULL,   "auto",      "none", "required",
                                          "calc", "kit::pick", "drop", "absent"};
    static const char *const efforts[] = {NULL, "low", "xhigh"};
    static const double reals[] = {
        0, 1, 0.1, 0.7, 1.0 / 3, 2, 1e-7, 123456789.125, 0.30000000000000004};
    char desc[5][64], stops[3][48];
    for (int iter = 0; iter < 400; iter++) {
        ac_conv *c = ac_conv_new();
        ac_conv_add_message(c, AC_ROLE_USER, "hi", 1);
        int n_tools = rand() % 6;
        for (int k = 0; k < n_tools; k++) {
            random_text(desc[k], sizeof desc[k]);
            ac_conv_add_tool_def(c, names[k], desc[k], schemas[rand() % 5]);
        }
        const char *stop[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0, n = rand() % 4; k < n; k++) {
            random_text(stops[k], sizeof stops[k]);
            stop[k] = stops[k];
        }
        ac_request_settings st = {0};
        st.has_temperature = rand() % 2;
        st.temperature = reals[rand() % 9];
        st.has_top_p = rand() % 3 == 0;
        st.top_p = reals[rand() % 9];
        st.stop = rand() % 2 ? stop : NULL;
        st.has_seed = rand() % 2;
        st.seed = (int64_t)rand() - RAND_MAX / 2;
        st.tool_choice = choices[rand() % 8];
        st.parallel_tool_calls = rand() % 3 - 1;
        st.reasoning_effort = efforts[rand() % 3];
        ac_request_opts o = {.model = "m",
                             .stream = rand() % 2,
                             .max_tokens = rand() % 2 ? 0 : 100,
                             .output_schema = outputs[rand() % 6],
                             .tool_offer = rand() % 2 ? members_offer : NULL,
                             .settings = rand() % 8 ? &st : NULL};
        char err1[256] = "", err2[256] = "";
        char *got = ac_request_openai(c, &o, err1, sizeof err1);
        ac_request_settings pass = {0};
        if (o.settings)
            pass = st;
        pass.request_json = "{}";
        o.settings = &pass;
        char *want = ac_request_openai(c, &o, err2, sizeof err2);
        if (!want) {
            assert_null(got);
            assert_string_equal(err1, err2);
        } else {
            assert_non_null(got);
            assert_string_equal(got, want);
        }
        free(got);
        free(want);
        ac_conv_free(c);
    }
}

/* A random conversation for the Anthropic comparison (iteration iter). */
static ac_conv *random_anthropic_conv(int iter)
{
    static const char *const args[] = {
        "{\"q\":\"caf\xc3\xa9\",\"n\":0.1,\"big\":1e300,\"a\":[1,{\"b\":null}]}",
        "  \n ",
        "not json {",
        "[1,2]",
        "{\"k\":1,\"k\":2}",
        "{\"s\":\"\\u0000\\/x\"}",
        ""};
    static const char *const thinks[] = {
        NULL, "[{\"type\":\"thinking\",\"thinking\":\"a\\u0000b\",\"signature\":\"S1\"}]",
        "[{\"type\":\"redacted_thinking\",\"data\":\"RW1\"},{\"type\":\"thinking\",\"thinking\":"
        "\"t\",\"signature\":\"\"}]",
        "[]"};
    static const char *const names[] = {"calc", "kit::pick", "drop", "w\xc3\xa9"};
    char t[6][64];
    ac_conv *c = ac_conv_new();
    int n_tools = rand() % 5;
    for (int k = 0; k < n_tools; k++) {
        random_text(t[0], sizeof t[0]);
        ac_conv_add_tool_def(c, names[k], t[0],
                             k % 2 ? "{\"type\":\"object\",\"properties\":{\"n\":{\"minimum\":"
                                     "0.5}}}"
                                   : "{\"type\":\"object\"}");
    }
    if (rand() % 3 == 0) {
        random_text(t[0], sizeof t[0]);
        ac_conv_add_message(c, AC_ROLE_SYSTEM, t[0], 1);
    }
    int rounds = 1 + rand() % (iter % 7 == 0 ? 12 : 4);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 6; k++)
            random_text(t[k], sizeof t[k]);
        int64_t ms = 10 * r + 2;
        if (r || rand() % 4)
            ac_conv_add_message(c, AC_ROLE_USER, rand() % 5 ? t[0] : "", ms);
        char id1[32], id2[32];
        snprintf(id1, sizeof id1, "c%d_a", r);
        snprintf(id2, sizeof id2, "c%d_b", r);
        int internal = rand() % 4 == 0;
        ac_tool_call_in in[2] = {{id1, names[rand() % 4], args[rand() % 7], internal},
                                 {id2, "calc", args[rand() % 7], internal}};
        size_t n_calls = (size_t)(rand() % 3);
        const char *think = thinks[rand() % 4];
        assert_int_equal(ac_conv_add_assistant_thinking(c, rand() % 3 ? t[1] : "", NULL, think, in,
                                                        n_calls, ms + 1),
                         AC_CONV_OK);
        if (n_calls > 0)
            ac_conv_set_tool_result(c, id1, rand() % 2, t[2], ms + 2);
        if (n_calls > 1 && rand() % 4)
            ac_conv_set_tool_result(c, id2, rand() % 2, t[3], ms + 3);
    }
    return c;
}

/* The Anthropic body by the compact writer against the JSON value's whole build (which an
 * empty pass-through takes): random conversations of texts, calls (arguments an object, blank,
 * not JSON, an array, with reals, with duplicate keys), failed results, thinking (with U+0000),
 * internal rounds, an assistant speaking first, system messages; tools, the offer callback,
 * settings, the output schema and the note; the bytes and the errors, new and from the cache. */
static void test_anthropic_bytes_as_jansson(void **state)
{
    (void)state;
    srand(13);
    static const char *const choices[] = {NULL,   "auto",      "none",  "required",
                                          "calc", "kit::pick", "absent"};
    char note[64], stops[2][32];
    for (int iter = 0; iter < 300; iter++) {
        ac_conv *c = random_anthropic_conv(iter);
        const char *stop[3] = {NULL, NULL, NULL};
        for (int k = 0, n = rand() % 3; k < n; k++) {
            random_text(stops[k], sizeof stops[k]);
            stop[k] = stops[k];
        }
        ac_request_settings st = {0};
        st.has_temperature = rand() % 2;
        st.temperature = (double)(rand() % 1000) / 999;
        st.has_top_p = rand() % 3 == 0;
        st.top_p = 0.1;
        st.stop = rand() % 2 ? stop : NULL;
        st.tool_choice = choices[rand() % 7];
        st.parallel_tool_calls = rand() % 3 - 1;
        random_text(note, sizeof note);
        ac_request_opts o = {.model = "claude",
                             .stream = rand() % 2,
                             .max_tokens = rand() % 2 ? 0 : 100,
                             .thinking_budget = rand() % 2 ? 0 : 2000,
                             .output_schema = rand() % 4 ? NULL : "{\"type\":\"object\"}",
                             .context_note = rand() % 3 ? NULL : note,
                             .tool_offer = rand() % 2 ? members_offer : NULL,
                             .settings = rand() % 6 ? &st : NULL};
        ac_request_settings pass = {0};
        if (o.settings)
            pass = st;
        pass.request_json = "{}";
        ac_request_opts ref = o;
        ref.settings = &pass;
        char e0[256] = "";
        char *want = ac_request__anthropic(c, &ref, 0, e0, sizeof e0);
        for (int use_cache = 0; use_cache < 3; use_cache++) { /* whole, new, from the cache */
            char e1[256] = "";
            char *got = ac_request__anthropic(c, &o, use_cache > 0, e1, sizeof e1);
            if (!want) {
                assert_null(got);
                assert_string_equal(e1, e0);
            } else {
                assert_non_null(got);
                assert_string_equal(got, want);
            }
            free(got);
        }
        free(want);
        ac_conv_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_exact),
        cmocka_unit_test(test_anthropic_exact),
        cmocka_unit_test(test_output_schema),
        cmocka_unit_test(test_anthropic_thinking),
        cmocka_unit_test(test_anthropic_thinking_internal_rounds),
        cmocka_unit_test(test_results_in_call_order),
        cmocka_unit_test(test_pending_calls_left_out),
        cmocka_unit_test(test_window_never_splits),
        cmocka_unit_test(test_anthropic_merging_and_inputs),
        cmocka_unit_test(test_cleared_and_options),
        cmocka_unit_test(test_openai_members_as_jansson),
        cmocka_unit_test(test_anthropic_bytes_as_jansson),
        cmocka_unit_test(test_settings_sampling),
        cmocka_unit_test(test_settings_tool_choice),
        cmocka_unit_test(test_settings_passthrough),
        cmocka_unit_test(test_namespaced_wire_names),
        cmocka_unit_test(test_settings_check),
        cmocka_unit_test(test_openai_bytes_as_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
