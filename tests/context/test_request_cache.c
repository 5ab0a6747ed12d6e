/* Tests for the request cache (src/context/request_cache.c): a conversation
 * whose OpenAI requests are built again after every kind of change gives,
 * byte for byte, the request a fresh copy of it (no cache) gives; and the
 * cache holds entries, dropping those of messages that are gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
