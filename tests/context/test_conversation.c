/* Tests of the conversation data model: messages in time order, tool call
 * records and results, search, tool definitions, compaction helpers, the
 * visible window, and the memory an idle conversation takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
/* From the sanitizer runtime (its header is not always installed). */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}
#endif

#define NPOS ((size_t)-1)

static void test_empty_conversation_is_small(void **state)
{
    (void)state;
    enum { N = 1000 };
    static ac_conv *convs[N];
    size_t before = heap_in_use();
    for (int i = 0; i < N; i++) {
        convs[i] = ac_conv_new();
        assert_non_null(convs[i]);
    }
    size_t after = heap_in_use();
    if (after <= before) { /* an allocator that mallinfo2 does not see (valgrind) */
        for (int i = 0; i < N; i++)
            ac_conv_free(convs[i]);
        printf("# idle conversation: heap accounting unavailable here, not measured\n");
        skip();
    }
    size_t per = (after - before) / N;
    printf("# idle conversation: %zu bytes\n", per);
    assert_true(per > 0);
    assert_true(per < 1024);
    for (int i = 0; i < N; i++)
        ac_conv_free(convs[i]);
    ac_conv_free(NULL);
}

static void test_messages_sorted_stable(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    const char *a = ac_conv_add_message(c, AC_ROLE_USER, "a", 100);
    const char *b = ac_conv_add_message(c, AC_ROLE_USER, "b", 300);
    const char *d = ac_conv_add_message(c, AC_ROLE_USER, "d", 200); /* older: goes between */
    const char *e = ac_conv_add_message(c, AC_ROLE_USER, "e", 200); /* same time: after d */
    assert_string_equal(a, "m1");
    assert_string_equal(b, "m2");
    assert_string_equal(d, "m3");
    assert_string_equal(e, "m4");
    const char *want[] = {"a", "d", "e", "b"};
    assert_int_equal(ac_conv_message_count(c), 4);
    for (size_t i = 0; i < 4; i++) {
        const ac_message *m = ac_conv_message(c, i);
        assert_string_equal(m->content, want[i]);
        if (i)
            assert_true(ac_conv_message(c, i - 1)->created_at_ms <= m->created_at_ms);
    }
    assert_null(ac_conv_message(c, 4));
    assert_int_equal(ac_conv_find_message(c, "m3"), 1);
    assert_int_equal(ac_conv_find_message(c, "m99"), NPOS);
    /* Tool messages only through results; NULL content refused. */
    assert_null(ac_conv_add_message(c, AC_ROLE_TOOL, "x", 400));
    assert_null(ac_conv_add_message(c, AC_ROLE_USER, NULL, 400));
    assert_null(ac_conv_add_message_flags(c, AC_ROLE_USER, "x", AC_MSG_CLEARED, 400));
    assert_int_equal(ac_conv_message_count(c), 4);
    ac_conv_free(c);
}

static void test_message_below_floor_moves_floor(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_USER, "a", 100);
    ac_conv_add_message(c, AC_ROLE_USER, "b", 200);
    assert_int_equal(ac_conv_set_floor(c, 1), AC_CONV_OK);
    assert_int_equal(ac_conv_set_floor(c, 3), AC_CONV_EINVAL);
    ac_conv_add_message(c, AC_ROLE_USER, "old", 50);
    assert_int_equal(ac_conv_floor(c), 2);
    assert_string_equal(ac_conv_message(c, ac_conv_floor(c))->content, "b");
    ac_conv_free(c);
}

static void test_tool_calls_and_results(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_USER, "go", 1000);
    ac_tool_call_in calls[] = {
        {"c1", "read", "{\"path\":\"a\"}", 0},
        {"c2", "grep", "{\"q\":\"x\"}", 0},
        {NULL, "ls", NULL, 0},
    };
    assert_int_equal(ac_conv_add_assistant(c, NULL, "thinking", calls, 3, 2000), AC_CONV_OK);
    const ac_message *am = ac_conv_message(c, 1);
    assert_int_equal(am->role, AC_ROLE_ASSISTANT);
    assert_string_equal(am->content, "");
    assert_string_equal(am->reasoning, "thinking");
    assert_int_equal(am->n_tool_calls, 3);
    assert_string_equal(am->tool_call_ids[0], "c1");
    assert_string_equal(am->tool_call_ids[1], "c2");
    assert_string_equal(am->tool_call_ids[2], "call_1"); /* generated */
    assert_int_equal(am->flags & AC_MSG_INTERNAL, 0);

    const ac_tool_call *r = ac_conv_tool_call(c, "c2");
    assert_non_null(r);
    assert_string_equal(r->name, "grep");
    assert_int_equal(r->state, AC_CALL_NONE);
    assert_null(r->result);
    assert_int_equal(r->called_at_ms, 2000);
    assert_string_equal(ac_conv_tool_call(c, "call_1")->arguments, "");
    assert_null(ac_conv_tool_call(c, "nope"));

    assert_int_equal(ac_conv_iter_call_count(c), 3);
    assert_string_equal(ac_conv_iter_call(c, 2), "call_1");
    assert_int_equal(ac_conv_iter_pending(c), 3);

    /* Results arrive in another order. */
    assert_int_equal(ac_conv_set_tool_result(c, "c2", 0, "no such pattern", 2500), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, "c1", 1, "file a", 2600), AC_CONV_OK);
    assert_int_equal(ac_conv_iter_pending(c), 1);
    assert_int_equal(ac_conv_set_tool_result(c, "c2", 1, "again", 2700), AC_CONV_EDUP);
    assert_int_equal(ac_conv_set_tool_result(c, "zz", 1, "x", 2700), AC_CONV_ENOTFOUND);
    r = ac_conv_tool_call(c, "c2");
    assert_int_equal(r->state, AC_CALL_FAILURE);
    assert_string_equal(r->result, "no such pattern");
    assert_int_equal(r->received_at_ms, 2500);
    assert_int_equal(ac_conv_tool_call(c, "c1")->state, AC_CALL_SUCCESS);

    assert_int_equal(ac_conv_message_count(c), 4);
    const ac_message *tm = ac_conv_message(c, 2);
    assert_int_equal(tm->role, AC_ROLE_TOOL);
    assert_string_equal(tm->tool_call_id, "c2");
    assert_string_equal(tm->content, "no such pattern");
    assert_string_equal(ac_conv_message(c, 3)->tool_call_id, "c1");

    /* Reused and missing ids become unique; the message lists final ids. */
    ac_tool_call_in again[] = {{"c1", "read", "{}", 0}, {"c1", "read", "{}", 0}, {"", "x", "", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "more", NULL, again, 3, 3000), AC_CONV_OK);
    am = ac_conv_message(c, 4);
    assert_string_equal(am->tool_call_ids[0], "c1_2");
    assert_string_equal(am->tool_call_ids[1], "c1_3");
    assert_string_equal(am->tool_call_ids[2], "call_4");
    for (size_t i = 0; i < 3; i++)
        assert_non_null(ac_conv_tool_call(c, am->tool_call_ids[i]));
    assert_int_equal(ac_conv_tool_call_count(c), 6);
    assert_string_equal(ac_conv_tool_call_at(c, 5)->id, "call_4");
    assert_null(ac_conv_tool_call_at(c, 6));

    /* A bad call leaves everything unchanged. */
    ac_tool_call_in bad[] = {{"ok", "t", "", 0}, {"b", "", "", 0}};
    size_t nm = ac_conv_message_count(c), nc = ac_conv_tool_call_count(c);
    assert_int_equal(ac_conv_add_assistant(c, "x", NULL, bad, 2, 4000), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_message_count(c), nm);
    assert_int_equal(ac_conv_tool_call_count(c), nc);
    assert_null(ac_conv_tool_call(c, "ok"));

    ac_conv_next_iteration(c);
    assert_int_equal(ac_conv_iter_call_count(c), 0);
    assert_int_equal(ac_conv_iteration(c), 1);
    ac_conv_free(c);
}

static void test_many_calls_lookup(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    char id[32], args[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(id, sizeof id, "id-%d", i);
        snprintf(args, sizeof args, "{\"n\":%d}", i);
        ac_tool_call_in in = {id, "t", args, 0};
        assert_int_equal(ac_conv_add_assistant(c, "", NULL, &in, 1, i), AC_CONV_OK);
    }
    for (int i = 0; i < 3000; i += 7) {
        snprintf(id, sizeof id, "id-%d", i);
        snprintf(args, sizeof args, "{\"n\":%d}", i);
        const ac_tool_call *r = ac_conv_tool_call(c, id);
        assert_non_null(r);
        assert_string_equal(r->arguments, args);
    }
    assert_null(ac_conv_tool_call(c, "id-3000"));
    ac_conv_free(c);
}

static void test_internal_calls(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_tool_call_in in[] = {{"i1", "load_history", "{}", 1}};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, in, 1, 10), AC_CONV_OK);
    assert_true(ac_conv_message(c, 0)->flags & AC_MSG_INTERNAL);
    assert_int_equal(ac_conv_set_tool_result(c, "i1", 1, "older stuff", 11), AC_CONV_OK);
    assert_true(ac_conv_message(c, 1)->flags & AC_MSG_INTERNAL);
    ac_tool_call_in mixed[] = {{"i2", "load_history", "{}", 1}, {"e1", "read", "{}", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, mixed, 2, 12), AC_CONV_OK);
    assert_int_equal(ac_conv_message(c, 2)->flags & AC_MSG_INTERNAL, 0);
    /* Search does not see internal calls. */
    const ac_tool_call *out[4];
    assert_int_equal(ac_conv_search_calls(c, NULL, out, 4), 1);
    assert_string_equal(out[0]->id, "e1");
    ac_conv_free(c);
}

static void test_invalid_utf8_is_replaced(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_tool_call_in in = {"c", "t", "", 0};
    ac_conv_add_assistant(c, "", NULL, &in, 1, 1);
    assert_int_equal(ac_conv_set_tool_result(c, "c", 1, "ok\xff\xc3(end\xe2\x82\xac", 2),
                     AC_CONV_OK);
    assert_string_equal(ac_conv_tool_call(c, "c")->result,
                        "ok\xEF\xBF\xBD\xEF\xBF\xBD(end\xe2\x82\xac");
    ac_conv_add_message(c, AC_ROLE_USER, "\xed\xa0\x80", 3); /* a surrogate */
    assert_string_equal(ac_conv_message(c, 2)->content, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    ac_conv_free(c);
}

static void test_search(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_tool_call_in a[] = {{"a", "read", "{\"path\":\"src/main.c\"}", 0},
                           {"b", "grep", "{\"q\":\"TODO\"}", 0}};
    ac_conv_add_assistant(c, "", NULL, a, 2, 1000);
    ac_conv_set_tool_result(c, "a", 1, "int main(void)", 1001);
    ac_conv_set_tool_result(c, "b", 1, "src/x.c:3: TODO fix", 1002);
    ac_tool_call_in b[] = {{"c", "read", "{\"path\":\"README\"}", 0}};
    ac_conv_add_assistant(c, "", NULL, b, 1, 2000);

    const ac_tool_call *out[8];
    ac_call_query q = {.name = "read"};
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 2);
    assert_string_equal(out[0]->id, "c"); /* newest first */
    assert_string_equal(out[1]->id, "a");

    q = (ac_call_query){.text = "main"}; /* in args of a and result of a */
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 1);
    assert_string_equal(out[0]->id, "a");
    q = (ac_call_query){.text = "TODO"}; /* in args and result of b */
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 1);
    q = (ac_call_query){.text = "int main"}; /* only in a result */
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 1);
    q = (ac_call_query){.from_ms = 1500};
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 1);
    assert_string_equal(out[0]->id, "c");
    q = (ac_call_query){.to_ms = 1000};
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 2);
    q = (ac_call_query){.name = "read", .to_ms = 1999};
    assert_int_equal(ac_conv_search_calls(c, &q, out, 8), 1);
    q = (ac_call_query){.skip = 1};
    assert_int_equal(ac_conv_search_calls(c, &q, out, 1), 2);
    assert_string_equal(out[0]->id, "b");
    q = (ac_call_query){0};
    assert_int_equal(ac_conv_search_calls(c, &q, NULL, 0), 3); /* count only */
    ac_conv_free(c);
}

static void test_tool_defs(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    assert_int_equal(ac_conv_add_tool_def(c, "read", "Read a file",
                                          "{ \"type\" : \"object\", \"properties\": {} }"),
                     AC_CONV_OK);
    assert_string_equal(ac_conv_tool_def(c, 0)->schema_json,
                        "{\"type\":\"object\",\"properties\":{}}");
    assert_int_equal(ac_conv_add_tool_def(c, "bad", "", "[1]"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_add_tool_def(c, "bad", "", "{"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_add_tool_def(c, "", "", "{}"), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_add_tool_def(c, "read", "Read it", "{}"), AC_CONV_OK);
    assert_int_equal(ac_conv_tool_def_count(c), 1);
    assert_string_equal(ac_conv_find_tool_def(c, "read")->description, "Read it");
    assert_null(ac_conv_find_tool_def(c, "bad"));
    ac_conv_free(c);
}

/* user, assistant(call x), tool(x), assistant text, user, assistant(call y), tool(y) */
static ac_conv *sample_with_calls(void)
{
    ac_conv *c = ac_conv_new();
    ac_conv_add_message(c, AC_ROLE_SYSTEM, "sys", 0);
    ac_conv_add_message(c, AC_ROLE_USER, "task", 1);
    ac_tool_call_in x = {"x", "read", "{}", 0}, y = {"y", "read", "{}", 0};
    ac_conv_add_assistant(c, "", NULL, &x, 1, 2);
    ac_conv_set_tool_result(c, "x", 1, "X", 3);
    ac_conv_add_message(c, AC_ROLE_ASSISTANT, "done x", 4);
    ac_conv_add_message(c, AC_ROLE_USER, "next", 5);
    ac_conv_add_assistant(c, "", NULL, &y, 1, 6);
    ac_conv_set_tool_result(c, "y", 1, "Y", 7);
    return c;
}

static void test_replace_range(void **state)
{
    (void)state;
    ac_conv *c = sample_with_calls();
    assert_int_equal(ac_conv_message_count(c), 8);
    ac_message_in sum = {AC_ROLE_USER, "summary of x", AC_MSG_SUMMARY};
    /* [2,3) holds the call but not its result; [3,5) the result but not the call. */
    assert_int_equal(ac_conv_replace_range(c, 2, 3, &sum, 1, 100), AC_CONV_ESPLIT);
    assert_int_equal(ac_conv_replace_range(c, 3, 5, &sum, 1, 100), AC_CONV_ESPLIT);
    assert_int_equal(ac_conv_replace_range(c, 5, 2, &sum, 1, 100), AC_CONV_EINVAL);
    ac_message_in toolrole = {AC_ROLE_TOOL, "x", 0};
    assert_int_equal(ac_conv_replace_range(c, 1, 5, &toolrole, 1, 100), AC_CONV_EINVAL);
    assert_int_equal(ac_conv_message_count(c), 8);

    assert_int_equal(ac_conv_set_floor(c, 6), AC_CONV_OK);
    assert_int_equal(ac_conv_replace_range(c, 1, 5, &sum, 1, 100), AC_CONV_OK);
    assert_int_equal(ac_conv_message_count(c), 5);
    const ac_message *m = ac_conv_message(c, 1);
    assert_string_equal(m->content, "summary of x");
    assert_true(m->flags & AC_MSG_SUMMARY);
    assert_string_equal(m->id, "m9");
    assert_int_equal(m->created_at_ms, 1); /* takes the first replaced message's time */
    assert_int_equal(m->updated_at_ms, 100);
    assert_int_equal(ac_conv_floor(c), 3); /* was 6, four removed, one added */
    assert_string_equal(ac_conv_message(c, 2)->content, "next");
    /* The record stays findable. */
    assert_int_equal(ac_conv_tool_call(c, "x")->state, AC_CALL_SUCCESS);
    /* A floor inside the range moves to its start. */
    assert_int_equal(ac_conv_replace_range(c, 2, 5, NULL, 0, 101), AC_CONV_OK);
    assert_int_equal(ac_conv_floor(c), 2);
    assert_int_equal(ac_conv_message_count(c), 2);
    ac_conv_free(c);
}

static void test_clear_and_restore(void **state)
{
    (void)state;
    ac_conv *c = sample_with_calls();
    assert_int_equal(ac_conv_clear_tool_result(c, 1, "[cleared]", 50), AC_CONV_ENOTFOUND);
    assert_int_equal(ac_conv_clear_tool_result(c, 3, "[cleared]", 50), AC_CONV_OK);
    const ac_message *m = ac_conv_message(c, 3);
    assert_string_equal(m->content, "[cleared]");
    assert_true(m->flags & AC_MSG_CLEARED);
    assert_int_equal(m->updated_at_ms, 50);
    assert_string_equal(ac_conv_tool_call(c, "x")->result, "X");
    assert_int_equal(ac_conv_clear_tool_result(c, 3, "[gone]", 51), AC_CONV_OK);
    assert_string_equal(m->content, "[gone]");
    assert_int_equal(ac_conv_restore_tool_result(c, 3, 52), AC_CONV_OK);
    assert_string_equal(m->content, "X");
    assert_int_equal(m->flags & AC_MSG_CLEARED, 0);
    ac_conv_free(c);
}

static size_t *visible(const ac_conv *c, size_t *n)
{
    size_t *idx;
    assert_int_equal(ac_conv_visible(c, &idx, n), AC_CONV_OK);
    return idx;
}

static void test_visible_window(void **state)
{
    (void)state;
    ac_conv *c = sample_with_calls();
    size_t n, *idx = visible(c, &n);
    assert_int_equal(n, 8); /* everything */
    free(idx);

    /* Window 1 would show only tool(y): extends back to its call, keeps the
     * system message and the first user message. */
    ac_conv_set_window(c, 1);
    idx = visible(c, &n);
    size_t want1[] = {0, 1, 6, 7};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], want1[i]);
    free(idx);

    /* Window 4: messages 4..7. */
    ac_conv_set_window(c, 4);
    idx = visible(c, &n);
    size_t want4[] = {0, 1, 4, 5, 6, 7};
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], want4[i]);
    free(idx);

    /* Window 5 starts at tool(x): pulled back to its call at 2. */
    ac_conv_set_window(c, 5);
    idx = visible(c, &n);
    size_t want5[] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], want5[i]);
    free(idx);

    /* Floor 3 (after the call x): tool(x) is orphaned and left out; the first
     * user message after the floor is kept; system always. */
    ac_conv_set_window(c, 0);
    ac_conv_set_floor(c, 3);
    idx = visible(c, &n);
    size_t wantf[] = {0, 4, 5, 6, 7};
    assert_int_equal(n, 5);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], wantf[i]);
    free(idx);

    ac_conv_set_window(c, 1);
    idx = visible(c, &n);
    size_t wantfw[] = {0, 5, 6, 7};
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(idx[i], wantfw[i]);
    free(idx);

    ac_conv *e = ac_conv_new();
    idx = visible(e, &n);
    assert_int_equal(n, 0);
    assert_null(idx);
    ac_conv_free(e);
    ac_conv_free(c);
}

static void test_counters(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_conv_set_last_llm_call_ms(c, 1234);
    ac_conv_set_retries(c, 2);
    ac_conv_set_iteration(c, 5);
    ac_conv_add_usage(c, 100, 20);
    ac_conv_add_usage(c, 150, 30);
    ac_conv_add_usage(c, -1, -1);
    assert_int_equal(ac_conv_last_llm_call_ms(c), 1234);
    assert_int_equal(ac_conv_retries(c), 2);
    assert_int_equal(ac_conv_iteration(c), 5);
    assert_int_equal(ac_conv_usage_input(c), 250);
    assert_int_equal(ac_conv_usage_output(c), 50);
    assert_int_equal(ac_conv_last_input_tokens(c), 150);
    assert_string_equal(ac_role_name(AC_ROLE_TOOL), "tool");
    ac_role r;
    assert_int_equal(ac_role_parse("assistant", &r), 0);
    assert_int_equal(r, AC_ROLE_ASSISTANT);
    assert_int_equal(ac_role_parse("bot", &r), -1);
    assert_string_equal(ac_conv_strerror(AC_CONV_ESPLIT),
                        "edit would separate a tool call from its result");
    ac_conv_free(c);
}

/* Call ids that differ only in invalid bytes (stored as U+FFFD) still get
 * distinct ids, so each call can be answered and the conversation reloads. */
static void test_call_ids_with_invalid_bytes(void **state)
{
    (void)state;
    ac_conv *c = ac_conv_new();
    ac_tool_call_in calls[] = {{"\xff", "t", "{}", 0}, {"\xfe", "t", "{}", 0}};
    assert_int_equal(ac_conv_add_assistant(c, "", NULL, calls, 2, 1), AC_CONV_OK);
    const ac_message *m = ac_conv_message(c, 0);
    assert_int_equal(m->n_tool_calls, 2);
    assert_string_not_equal(m->tool_call_ids[0], m->tool_call_ids[1]);
    assert_int_equal(ac_conv_set_tool_result(c, m->tool_call_ids[0], 1, "a", 2), AC_CONV_OK);
    assert_int_equal(ac_conv_set_tool_result(c, m->tool_call_ids[1], 1, "b", 2), AC_CONV_OK);
    char *text = ac_conv_to_json(c);
    char err[256];
    ac_conv *d = ac_conv_from_json(text, err, sizeof err);
    if (!d)
        fail_msg("reload: %s", err);
    ac_conv_free(d);
    free(text);
    ac_conv_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_conversation_is_small),
        cmocka_unit_test(test_messages_sorted_stable),
        cmocka_unit_test(test_message_below_floor_moves_floor),
        cmocka_unit_test(test_tool_calls_and_results),
        cmocka_unit_test(test_many_calls_lookup),
        cmocka_unit_test(test_internal_calls),
        cmocka_unit_test(test_invalid_utf8_is_replaced),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_tool_defs),
        cmocka_unit_test(test_replace_range),
        cmocka_unit_test(test_clear_and_restore),
        cmocka_unit_test(test_visible_window),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_call_ids_with_invalid_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
