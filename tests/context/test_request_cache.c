/* Tests for the request cache (src/context/request_cache.c): a conversation
 * whose OpenAI or Anthropic requests are built again after every kind of
 * change gives,
 * byte for byte, the request a fresh copy of it (no cache) gives; and the
 * cache holds entries, dropping those of messages that are gone, and none for a system
 * message (its text is the conversation's: one copy of a prompt, not two). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "context/conv_internal.h"
#include "context/request.h"
#include "context/request_cache.h"

static int n_checks;

/* The live conversation's request equals a fresh copy's. */
static void check(ac_conv *c, const char *what)
{
    ac_request_opts o = {0};
    o.model = "m";
    o.stream = 1;
    char err[256];
    char *live = ac_request_openai(c, &o, err, sizeof err);
    assert_non_null(live);
    char *js = ac_conv_to_json(c);
    assert_non_null(js);
    ac_conv *copy = ac_conv_from_json(js, err, sizeof err);
    assert_non_null(copy);
    char *fresh = ac_request_openai(copy, &o, err, sizeof err);
    assert_non_null(fresh);
    if (strcmp(live, fresh) != 0)
        fail_msg("%s: cached request differs\n--- cached\n%s\n--- fresh\n%s", what, live, fresh);
    /* and built twice, all from the cache, the same again */
    char *again = ac_request_openai(c, &o, err, sizeof err);
    assert_string_equal(again, live);
    free(again);
    free(live);
    free(fresh);
    free(js);
    ac_conv_free(copy);
    n_checks++;
}

static size_t index_of_tool_message(const ac_conv *c, const char *call_id)
{
    for (size_t i = 0; i < ac_conv_message_count(c); i++) {
        const ac_message *m = ac_conv_message(c, i);
        if (m->role == AC_ROLE_TOOL && strcmp(m->tool_call_id, call_id) == 0)
            return i;
    }
    fail_msg("no tool message for %s", call_id);
    return 0;
}

static void test_every_change(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    assert_non_null(c);
    int64_t t = 1000;
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "Be brief.", t++);
    /* long enough to be cached (AC_REQCACHE_MIN_MESSAGES) */
    for (int i = 0; i < AC_REQCACHE_MIN_MESSAGES; i++)
        ac_conv_add_message(c, i % 2 ? AC_ROLE_ASSISTANT : AC_ROLE_USER, i % 2 ? "ok" : "go on",
                            t++);
    ac_conv_add_message(c, AC_ROLE_USER, "What is in a.txt and b.txt? \"quoted\" \xc3\xa9", t++);
    check(c, "first request");
    assert_true(ac_reqcache_count(c->reqcache) >= 2);

    ac_tool_call_in calls[2] = {{"c1", "read", "{\"p\":\"a.txt\"}", 0},
                                {"c2", "read", "{\"p\":\"b.txt\"}", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, calls, 2, t++), AC_CONV_OK);
    check(c, "calls without results");
    assert_int_equal(ac_conv_set_tool_result(c, "c1", 1, "alpha", t++), AC_CONV_OK);
    check(c, "one result");
    assert_int_equal(ac_conv_set_tool_result(c, "c2", 0, "no such file", t++), AC_CONV_OK);
    check(c, "a failure");
    ac_conv_add_message(c, AC_ROLE_ASSISTANT, "a.txt says alpha.", t++);
    check(c, "answer");

    size_t m1 = index_of_tool_message(c, "c1");
    int64_t same = t++;
    assert_int_equal(ac_conv_clear_tool_result(c, m1, "[cleared A]", same), AC_CONV_OK);
    check(c, "cleared");
    assert_int_equal(ac_conv_restore_tool_result(c, m1, same), AC_CONV_OK);
    check(c, "restored");
    /* same time, a marker of the same length: its memory may be the last one's */
    assert_int_equal(ac_conv_clear_tool_result(c, m1, "[cleared B]", same), AC_CONV_OK);
    check(c, "cleared again");
    size_t m2 = index_of_tool_message(c, "c2");
    assert_int_equal(ac_conv_clear_tool_result(c, m2, "[gone]", same), AC_CONV_OK);
    check(c, "failure cleared");

    /* a message older than the last lands in the middle */
    ac_conv_add_message(c, AC_ROLE_USER, "late arrival", 1003);
    check(c, "inserted in time order");

    ac_message_in sum = {AC_ROLE_USER, "Summary: the user asked about two files.", AC_MSG_SUMMARY};
    assert_int_equal(ac_conv_replace_range(c, 0, 3, &sum, 1, t++), AC_CONV_OK);
    check(c, "compacted");
    assert_int_equal(ac_conv_set_floor(c, 1), AC_CONV_OK);
    check(c, "floor moved");

    /* many calls in one message: past the signature's size, built every time */
    ac_tool_call_in many[20];
    char ids[20][16];
    for (int i = 0; i < 20; i++) {
        snprintf(ids[i], sizeof ids[i], "k%d", i);
        many[i] = (ac_tool_call_in){ids[i], "read", "{}", 0};
    }
    assert_int_equal(ac_conv_add_assistant(c, "many", NULL, many, 20, t++), AC_CONV_OK);
    for (int i = 0; i < 20; i += 2)
        ac_conv_set_tool_result(c, ids[i], 1, "ok", t++);
    check(c, "twenty calls, half answered");

    size_t before = ac_reqcache_count(c->reqcache);
    assert_int_equal(ac_conv_replace_range(c, 0, ac_conv_message_count(c), &sum, 1, t++),
                     AC_CONV_OK);
    check(c, "all replaced: short, serialized whole");
    assert_true(before >= AC_REQCACHE_MIN_MESSAGES);
    assert_int_equal(ac_reqcache_count(c->reqcache), 0);
    ac_conv_free(c);
    assert_int_equal(n_checks, 14);
}

/* The Anthropic request of the live conversation, built from its cache, is
 * byte for byte the request built whole (every message serialized anew) and
 * the one a fresh copy builds from a cold cache, under two sets of options:
 * plain, and thinking on with a system text, a context note, an output
 * schema, tools and a pass-through holding "messages" keys of its own. */
static int n_anth;

static void check_one(ac_conv *c, const ac_request_opts *o, const char *what)
{
    char err[256];
    char *live = ac_request_anthropic(c, o, err, sizeof err);
    assert_non_null(live);
    char *whole = ac_request__anthropic(c, o, 0, err, sizeof err);
    assert_non_null(whole);
    if (strcmp(live, whole) != 0)
        fail_msg("%s (thinking %d): cached request differs\n--- cached\n%s\n--- whole\n%s", what,
                 o->thinking_budget, live, whole);
    char *again = ac_request_anthropic(c, o, err, sizeof err);
    assert_string_equal(again, live);
    char *js = ac_conv_to_json(c);
    ac_conv *copy = ac_conv_from_json(js, err, sizeof err);
    assert_non_null(copy);
    char *fresh = ac_request_anthropic(copy, o, err, sizeof err);
    assert_non_null(fresh);
    assert_string_equal(fresh, live);
    free(fresh);
    ac_conv_free(copy);
    free(js);
    free(again);
    free(whole);
    free(live);
}

static int thinking_on; /* which options the scenario is built with */

static void check_anth(ac_conv *c, const char *what)
{
    ac_request_opts plain = {.model = "claude-x", .stream = 1};
    static const char *const stop[] = {"\"messages\":[]", NULL};
    ac_request_settings st = {.has_temperature = true,
                              .temperature = 0.5,
                              .stop = stop,
                              .tool_choice = "read",
                              .parallel_tool_calls = -1,
                              .request_json =
                                  "{\"metadata\":{\"messages\":[],\"user_id\":\"u\\\"\"},"
                                  "\"max_tokens\":9000}"};
    ac_request_opts full = {.model = "claude-x",
                            .thinking_budget = 2048,
                            .output_schema = "{\"type\":\"object\"}",
                            .context_note = "State: \"messages\":[] so far",
                            .settings = &st};
    check_one(c, thinking_on ? &full : &plain, what);
    n_anth++;
}

/* Switching options between requests: each build drops the other's entries. */
static void check_alternating(ac_conv *c)
{
    int was = thinking_on;
    for (int i = 0; i < 3; i++) {
        thinking_on = !thinking_on;
        check_anth(c, "options switched");
    }
    thinking_on = was;
}

static void add_call(ac_conv *c, const char *thinking, const char *content, const char *id,
                     const char *name, const char *args, int internal, int64_t t)
{
    ac_tool_call_in call = {id, name, args, internal};
    assert_int_equal(ac_conv_add_assistant_thinking(c, content, NULL, thinking, &call, 1, t),
                     AC_CONV_OK);
}

static void anthropic_grown(void)
{
    n_anth = 0;
    ac_conv *c = ac_conv_new();
    int64_t t = 1000;
    assert_int_equal(
        ac_conv_add_tool_def(c, "read", "Reads a file: \"messages\":[]", "{\"type\":\"object\"}"),
        AC_CONV_OK);
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "Be brief. \"messages\":[]", t++);
    check_anth(c, "system only");
    /* step by step across the size from which requests are cached */
    for (int i = 0; i < AC_REQCACHE_MIN_MESSAGES + 2; i++) {
        ac_conv_add_message(c, i % 3 == 2 ? AC_ROLE_ASSISTANT : AC_ROLE_USER,
                            i == 4 ? "" : "go on \\ \"q\" \xc3\xa9 \x01", t++);
        check_anth(c, "plain turns, two users in a row merged, an empty one left out");
    }
    const char *think = "[{\"type\":\"thinking\",\"thinking\":\"a\\u0000b\",\"signature\":\"S1\"}]";
    ac_tool_call_in two[2] = {{"c1", "read", "{\"p\":\"a\"}", 0}, {"c2", "read", "not json", 0}};
    assert_int_equal(ac_conv_add_assistant_thinking(c, "", NULL, think, two, 2, t++), AC_CONV_OK);
    check_anth(c, "calls without results");
    assert_int_equal(ac_conv_set_tool_result(c, "c2", 0, "bad arguments", t++), AC_CONV_OK);
    check_anth(c, "the second result first, a failure");
    assert_int_equal(ac_conv_set_tool_result(c, "c1", 1, "alpha", t++), AC_CONV_OK);
    check_anth(c, "both results");
    /* an internal round joins the round before it when thinking is on */
    add_call(c, think, "", "L1", "load_tool_calls", "{\"ids\":[\"old\"]}", 1, t++);
    assert_int_equal(ac_conv_set_tool_result(c, "L1", 1, "loaded: old", t++), AC_CONV_OK);
    check_anth(c, "load round");
    add_call(c, NULL, "", "old", "read", "{\"path\":\"x\"}", 1, t++);
    check_anth(c, "internal round without result");
    assert_int_equal(ac_conv_set_tool_result(c, "old", 1, "X", t++), AC_CONV_OK);
    check_anth(c, "internal round joined");
    ac_conv_add_message(c, AC_ROLE_ASSISTANT, "a says alpha.", t++);
    check_anth(c, "answer");
    check_alternating(c);

    size_t m1 = index_of_tool_message(c, "c1");
    int64_t same = t++;
    assert_int_equal(ac_conv_clear_tool_result(c, m1, "[cleared A]", same), AC_CONV_OK);
    check_anth(c, "cleared");
    assert_int_equal(ac_conv_restore_tool_result(c, m1, same), AC_CONV_OK);
    check_anth(c, "restored");
    assert_int_equal(ac_conv_clear_tool_result(c, m1, "[cleared B]", same), AC_CONV_OK);
    check_anth(c, "cleared again, same time, same length");
    size_t m2 = index_of_tool_message(c, "c2");
    assert_int_equal(ac_conv_clear_tool_result(c, m2, "[gone]", same), AC_CONV_OK);
    check_anth(c, "failure cleared");

    /* thinking replaced twice between two requests: the second text may sit
     * where the first did */
    size_t ai = 0;
    for (size_t i = 0; i < ac_conv_message_count(c); i++)
        if (ac_conv_message(c, i)->thinking)
            ai = i;
    assert_int_equal(ac_conv_set_thinking(c, ai, "[{\"type\":\"thinking\",\"thinking\":\"v1\"}]"),
                     AC_CONV_OK);
    assert_int_equal(ac_conv_set_thinking(c, ai, "[{\"type\":\"thinking\",\"thinking\":\"v2\"}]"),
                     AC_CONV_OK);
    check_anth(c, "thinking replaced");
    assert_int_equal(ac_conv_set_thinking(c, ai, NULL), AC_CONV_OK);
    check_anth(c, "thinking removed");

    ac_conv_add_message(c, AC_ROLE_USER, "late arrival", 1003);
    check_anth(c, "inserted in time order");

    /* a turn, then its rollback: the turn's messages removed from the end */
    size_t before = ac_conv_message_count(c);
    ac_conv_add_message(c, AC_ROLE_USER, "read b", t++);
    add_call(c, NULL, "reading", "r1", "read", "{\"p\":\"b\"}", 0, t++);
    check_anth(c, "turn in flight");
    assert_int_equal(ac_conv_set_tool_result(c, "r1", 1, "beta", t++), AC_CONV_OK);
    check_anth(c, "turn with result");
    assert_int_equal(ac_conv_replace_range(c, before, ac_conv_message_count(c), NULL, 0, t++),
                     AC_CONV_OK);
    check_anth(c, "rolled back");
    ac_conv_add_message(c, AC_ROLE_USER, "read b again", t++);
    check_anth(c, "after the rollback");

    ac_message_in sum = {AC_ROLE_USER, "Summary: files a and b.", AC_MSG_SUMMARY};
    assert_int_equal(ac_conv_replace_range(c, 1, 6, &sum, 1, t++), AC_CONV_OK);
    check_anth(c, "compacted");
    assert_int_equal(ac_conv_set_floor(c, 2), AC_CONV_OK);
    check_anth(c, "floor moved");
    /* a window starting at an assistant message: the omitted-text user first */
    for (size_t w = 9; w <= 12; w++) {
        ac_conv_set_window(c, w);
        check_anth(c, "window");
    }
    ac_conv_set_window(c, 0);

    ac_tool_call_in many[20];
    char ids[20][16];
    for (int i = 0; i < 20; i++) {
        snprintf(ids[i], sizeof ids[i], "k%d", i);
        many[i] = (ac_tool_call_in){ids[i], "read", "{}", 0};
    }
    assert_int_equal(ac_conv_add_assistant_thinking(c, "many", NULL, think, many, 20, t++),
                     AC_CONV_OK);
    for (int i = 0; i < 20; i += 2)
        ac_conv_set_tool_result(c, ids[i], i % 4 == 0, "ok", t++);
    check_anth(c, "twenty calls, half answered");
    assert_true(ac_reqcache_count(c->reqcache) >= AC_REQCACHE_MIN_MESSAGES);

    assert_int_equal(ac_conv_replace_range(c, 0, ac_conv_message_count(c), &sum, 1, t++),
                     AC_CONV_OK);
    check_anth(c, "all replaced: short, serialized whole");
    assert_int_equal(ac_reqcache_count(c->reqcache), 0);
    ac_conv_free(c);
    assert_int_equal(n_anth, 40);
}

static void test_system_not_cached(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    assert_non_null(c);
    size_t big = 1 << 20;
    char *prompt = malloc(big + 1);
    assert_non_null(prompt);
    memset(prompt, 'p', big);
    prompt[big] = 0;
    int64_t t = 1000;
    ac_conv_add_message(c, AC_ROLE_SYSTEM, prompt, t++);
    size_t n = AC_REQCACHE_MIN_MESSAGES + 1;
    for (size_t i = 0; i < n; i++)
        ac_conv_add_message(c, i % 2 ? AC_ROLE_ASSISTANT : AC_ROLE_USER, i % 2 ? "ok" : "go on",
                            t++);
    check(c, "a long conversation with a 1 MB system prompt");
    assert_int_equal(ac_reqcache_count(c->reqcache), n);
    ac_conv_add_message(c, AC_ROLE_USER, "one more", t++);
    check(c, "a message more");
    assert_int_equal(ac_reqcache_count(c->reqcache), n + 1);
    free(prompt);
    ac_conv_free(c);
}

static void test_anthropic_grown_plain(void **state)
{
    (void)state;
    thinking_on = 0;
    anthropic_grown();
}

static void test_anthropic_grown_thinking(void **state)
{
    (void)state;
    thinking_on = 1;
    anthropic_grown();
}

/* The context note (a State's summary) goes last in OpenAI's messages, whether
 * the messages are serialized whole (short) or from the cache (long): the
 * request's messages are the ones without the note, then the note. */
static void test_openai_context_note(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    for (int64_t i = 0; i < 2 * AC_REQCACHE_MIN_MESSAGES; i++) {
        ac_conv_add_message(c, i % 2 ? AC_ROLE_ASSISTANT : AC_ROLE_USER, "hi \"messages\":[]",
                            1000 + i);
        ac_request_opts plain = {.model = "m", .stream = 1};
        ac_request_opts noted = plain;
        noted.context_note = "State: {\"n\": 1}";
        char err[256] = "";
        char *a = ac_request_openai(c, &plain, err, sizeof err);
        char *b = ac_request_openai(c, &noted, err, sizeof err);
        if (!a || !b)
            fail_msg("%lld messages: %s", (long long)i + 1, err);
        json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
        assert_non_null(ja);
        assert_non_null(jb);
        json_t *ma = json_object_get(ja, "messages"), *mb = json_object_get(jb, "messages");
        assert_int_equal(json_array_size(mb), json_array_size(ma) + 1);
        json_t *want = json_pack("{s:s, s:s}", "role", "system", "content", noted.context_note);
        assert_true(json_equal(json_array_get(mb, json_array_size(ma)), want));
        json_array_remove(mb, json_array_size(ma));
        assert_true(json_equal(ja, jb));
        json_decref(want);
        json_decref(ja);
        json_decref(jb);
        free(a);
        free(b);
    }
    ac_conv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_change),
        cmocka_unit_test(test_system_not_cached),
        cmocka_unit_test(test_anthropic_grown_plain),
        cmocka_unit_test(test_anthropic_grown_thinking),
        cmocka_unit_test(test_openai_context_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
