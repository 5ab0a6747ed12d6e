/*
 * test_tools_internal.c - the internal context tools (builtin:context)
 * driven by scripted turns: search_tool_calls finds older calls,
 * expand_context grows the window the next request shows, load_tool_calls
 * brings an old result back as a tool-call round, and none of them is
 * recorded as an ordinary call that search would return.
 */
#include "session_rig.h"

typedef struct capture {
    json_t *requests; /* the request body of every LLM call, in order */
} capture;

static void on_trace(void *ud, ac_session *s, const ac_trace_rec *rec)
{
    capture *c = ud;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    if (rec->kind == AC_TRACE_TRANSITION && strcmp(t->states[rec->to].name, "CALLING") == 0)
        json_array_append_new(c->requests, rig_request(ac_session_conv(s)));
}

#define CALC(id, expr)                                                                             \
    "{\"tool_calls\":[{\"id\":\"" id "\",\"name\":\"calculator\",\"arguments\":"                   \
    "\"{\\\"expression\\\":\\\"" expr "\\\"}\"}]}\n"

static const char *turns = CALC("c1", "2+3") "{\"content\":\"five\"}\n" CALC(
    "c2",
    "7*6") "{\"content\":\"forty-two\"}\n"
           "{\"tool_calls\":[{\"id\":\"s1\",\"name\":\"search_tool_calls\",\"arguments\":"
           "\"{\\\"text\\\":\\\"7*6\\\"}\"}]}\n"
           "{\"tool_calls\":[{\"id\":\"x1\",\"name\":\"expand_context\",\"arguments\":\"{}\"}]}\n"
           "{\"tool_calls\":[{\"id\":\"l1\",\"name\":\"load_tool_calls\",\"arguments\":"
           "\"{\\\"ids\\\":[\\\"c1\\\",\\\"nope\\\"]}\"}]}\n"
           "{\"tool_calls\":[{\"id\":\"s2\",\"name\":\"search_tool_calls\",\"arguments\":"
           "\"{\\\"from\\\":\\\"2000-01-01T00:00:00Z\\\",\\\"limit\\\":10}\"}]}\n"
           "{\"content\":\"done\"}\n";

static size_t n_messages(json_t *req)
{
    return json_array_size(json_object_get(req, "messages"));
}

static int has_call(json_t *req, const char *id)
{
    char *t = json_dumps(req, JSON_COMPACT);
    char pat[80];
    snprintf(pat, sizeof pat, "\"tool_call_id\":\"%s\"", id);
    int r = strstr(t, pat) != NULL;
    free(t);
    return r;
}

static void test_context_tools(void **state)
{
    (void)state;
    capture cap = {json_array()};
    ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = &cap;
    out.trace = on_trace;
    const char *params[] = {"context_window=4", "context_step=3", NULL};
    const char *tools[] = {"builtin:calculator", "builtin:context", NULL};
    rig r;
    rig_open(&r, turns, params, tools, &out);
    ac_session_send(r.s, "2+3?");
    rig_settle(&r);
    ac_session_send(r.s, "7*6?");
    rig_settle(&r);
    ac_session_send(r.s, "look back");
    rig_settle(&r);
    assert_string_equal(ac_session_answer(r.s), "done");
    ac_conv *conv = ac_session_conv(r.s);
    assert_int_equal(json_array_size(cap.requests), 9);
    for (size_t i = 0; i < 9; i++) {
        const char *bad = rig_openai_valid(json_array_get(cap.requests, i));
        if (bad)
            fail_msg("request %zu: %s", i + 1, bad);
    }

    /* request 5 (the search): window 4, c1's round is out of view */
    json_t *r5 = json_array_get(cap.requests, 4);
    assert_false(has_call(r5, "c1"));
    assert_int_equal(n_messages(r5), 5);

    /* search found c2 only */
    const char *res = rig_result(&r, "s1", 1);
    assert_non_null(strstr(res, "\"id\":\"c2\""));
    assert_null(strstr(res, "\"id\":\"c1\""));
    assert_non_null(strstr(res, "\"result\":\"42\""));
    assert_non_null(strstr(res, "\"called_at\":\""));

    /* expand: window 4 -> 7; request 7 shows more than request 6 */
    assert_int_equal(ac_conv_window(conv), 7);
    res = rig_result(&r, "x1", 1);
    assert_non_null(strstr(res, "from 4 to 7"));
    json_t *r6 = json_array_get(cap.requests, 5), *r7 = json_array_get(cap.requests, 6);
    assert_true(n_messages(r7) > n_messages(r6) + 2);
    assert_true(has_call(r7, "c2"));
    assert_false(has_call(r7, "c1"));

    /* load: c1's full result comes back as a round the model can read */
    res = rig_result(&r, "l1", 1);
    assert_non_null(strstr(res, "c1"));
    assert_non_null(strstr(res, "nope: unknown call id"));
    json_t *r8 = json_array_get(cap.requests, 7);
    json_t *msgs = json_object_get(r8, "messages");
    int found = 0;
    for (size_t i = 1; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        if (strcmp(json_string_value(json_object_get(m, "role")), "tool") != 0 ||
            strcmp(json_string_value(json_object_get(m, "content")), "5") != 0)
            continue;
        json_t *prev = json_array_get(msgs, i - 1);
        json_t *fn =
            json_object_get(json_array_get(json_object_get(prev, "tool_calls"), 0), "function");
        assert_string_equal(json_string_value(json_object_get(fn, "name")), "calculator");
        assert_non_null(strstr(json_string_value(json_object_get(fn, "arguments")), "2+3"));
        found = 1;
    }
    assert_true(found);

    /* internal calls are recorded flagged and never found by search */
    static const char *const internal[] = {"s1", "x1", "l1", "s2"};
    for (size_t i = 0; i < 4; i++)
        assert_true(ac_conv_tool_call(conv, internal[i])->internal);
    assert_false(ac_conv_tool_call(conv, "c1")->internal);
    ac_call_query q;
    memset(&q, 0, sizeof q);
    const ac_tool_call *hits[16];
    assert_int_equal(ac_conv_search_calls(conv, &q, hits, 16), 2);
    res = rig_result(&r, "s2", 1);
    assert_non_null(strstr(res, "\"matches\":2"));
    assert_null(strstr(res, "search_tool_calls"));
    assert_null(strstr(res, "load_tool_calls"));
    json_decref(cap.requests);
    rig_close(&r);
}

static void test_expand_whole_window(void **state)
{
    (void)state;
    const char *tools[] = {"builtin:context", NULL};
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"x\",\"name\":\"expand_context\","
             "\"arguments\":\"{\\\"by\\\":5}\"}]}\n"
             "{\"tool_calls\":[{\"id\":\"bad\",\"name\":\"search_tool_calls\","
             "\"arguments\":\"{\\\"from\\\":\\\"last tuesday\\\"}\"}]}\n"
             "{\"content\":\"ok\"}\n",
             NULL, tools, NULL);
    ac_session_send(r.s, "more");
    rig_settle(&r);
    assert_int_equal(ac_conv_window(ac_session_conv(r.s)), 0);
    assert_non_null(strstr(rig_result(&r, "x", 1), "already visible"));
    assert_non_null(strstr(rig_result(&r, "bad", 0), "ISO 8601"));
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_tools),
        cmocka_unit_test(test_expand_whole_window),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
