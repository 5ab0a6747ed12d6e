/*
 * test_tools_client.c - a session's client tools (ac_session_options.client_tools): offered
 * with the engine's tools, a call of one handed to the session's client-call function and
 * answered later by ac_session_answer_call while the engine's own calls of the same answer
 * run; the answer reaches the model; a second answer, an unknown id: AC_ENOENT; without a
 * function the call fails at once; a name of the engine's tools or a malformed list is
 * refused; more client calls than max_parallel_tools all wait at once.
 */
#include "session_rig.h"

typedef struct seen {
    int n;
    char ids[8][32];
    char names[8][32];
    char args[8][128];
} seen;

static void on_call(void *ud, ac_session *s, const char *call_id, const char *name,
                    const char *arguments)
{
    (void)s;
    seen *w = ud;
    assert_true(w->n < 8);
    snprintf(w->ids[w->n], sizeof w->ids[0], "%s", call_id);
    snprintf(w->names[w->n], sizeof w->names[0], "%s", name);
    snprintf(w->args[w->n], sizeof w->args[0], "%s", arguments);
    w->n++;
}

static const char *lookup =
    "[{\"name\": \"lookup\", \"description\": \"the client's\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"q\": {\"type\": \"string\"}}, \"required\": [\"q\"]}}]";

static const char *turns =
    "{\"tool_calls\":[{\"id\":\"k1\",\"name\":\"lookup\",\"arguments\":\"{\\\"q\\\":\\\"x\\\"}\"},"
    "{\"id\":\"k2\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"6*7\\\"}\"},"
    "{\"id\":\"k3\",\"name\":\"lookup\",\"arguments\":\"{\\\"q\\\":\\\"y\\\"}\"}]}\n"
    "{\"content\":\"done\"}\n";

static ac_session *client_session(rig *r, const char *tools, ac_error *err)
{
    ac_session_options o = {0};
    o.client_tools = tools;
    return ac_session_new_opts(r->e, "c1", &o, err);
}

static void run_until(rig *r, int (*cond)(rig *r, void *ud), void *ud)
{
    for (int i = 0; i < 500 && !cond(r, ud); i++)
        ac_loop_run_once(r->loop, 10);
    assert_true(cond(r, ud));
}

static int two_calls(rig *r, void *ud)
{
    (void)r;
    return ((seen *)ud)->n == 2;
}

static int calc_done(rig *r, void *ud)
{
    (void)ud;
    const ac_tool_call *c = ac_conv_tool_call(ac_session_conv(r->s), "k2");
    return c && c->state == AC_CALL_SUCCESS;
}

static void test_answered_later(void **state)
{
    (void)state;
    const char *params[] = {"max_parallel_tools=1", NULL};
    const char *tools[] = {"builtin:calculator", NULL};
    rig r;
    ac_error err = {0};
    seen w = {0};
    rig_open(&r, turns, params, tools, NULL);
    ac_session_free(r.s);
    r.s = client_session(&r, lookup, &err);
    assert_non_null(r.s);
    ac_session_set_client_calls(r.s, on_call, &w);
    ac_session_send(r.s, "go");
    /* both client calls wait at once, though one call runs at a time; the calculator ran */
    run_until(&r, two_calls, &w);
    run_until(&r, calc_done, NULL);
    assert_string_equal(w.ids[0], "k1");
    assert_string_equal(w.names[1], "lookup");
    assert_string_equal(w.args[1], "{\"q\":\"y\"}");
    for (int i = 0; i < 20; i++)
        ac_loop_run_once(r.loop, 5);
    assert_true(ac_session_in_turn(r.s)); /* it waits */
    assert_int_equal(ac_session_answer_call(r.s, "k9", 1, "no"), AC_ENOENT);
    assert_int_equal(ac_session_answer_call(r.s, "k1", 1, "found x"), AC_OK);
    assert_int_equal(ac_session_answer_call(r.s, "k1", 1, "again"), AC_ENOENT);
    assert_int_equal(ac_session_answer_call(r.s, "k3", 0, "the client failed"), AC_OK);
    rig_settle(&r);
    assert_string_equal(ac_session_answer(r.s), "done");
    const ac_tool_call *k1 = ac_conv_tool_call(ac_session_conv(r.s), "k1");
    const ac_tool_call *k3 = ac_conv_tool_call(ac_session_conv(r.s), "k3");
    assert_int_equal(k1->state, AC_CALL_SUCCESS);
    assert_string_equal(k1->result, "found x");
    assert_int_equal(k3->state, AC_CALL_FAILURE);
    /* the model was offered both kinds */
    json_t *req = rig_request(ac_session_conv(r.s));
    assert_int_equal(json_array_size(json_object_get(req, "tools")), 2);
    json_decref(req);
    rig_close(&r);
}

static void test_no_function(void **state)
{
    (void)state;
    const char *tools[] = {"builtin:calculator", NULL};
    rig r;
    ac_error err = {0};
    rig_open(&r, turns, NULL, tools, NULL);
    ac_session_free(r.s);
    r.s = client_session(&r, lookup, &err);
    assert_non_null(r.s);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    const ac_tool_call *k1 = ac_conv_tool_call(ac_session_conv(r.s), "k1");
    assert_int_equal(k1->state, AC_CALL_FAILURE);
    assert_non_null(strstr(k1->result, "no client answers"));
    rig_close(&r);
}

/* arguments that do not fit the client tool's parameters never reach the client */
static void test_bad_arguments(void **state)
{
    (void)state;
    rig r;
    ac_error err = {0};
    seen w = {0};
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"b1\",\"name\":\"lookup\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"ok\"}\n",
             NULL, NULL, NULL);
    ac_session_free(r.s);
    r.s = client_session(&r, lookup, &err);
    assert_non_null(r.s);
    ac_session_set_client_calls(r.s, on_call, &w);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    assert_int_equal(w.n, 0);
    const ac_tool_call *b1 = ac_conv_tool_call(ac_session_conv(r.s), "b1");
    assert_int_equal(b1->state, AC_CALL_FAILURE);
    assert_non_null(strstr(b1->result, "invalid arguments"));
    rig_close(&r);
}

static void test_refused(void **state)
{
    (void)state;
    const char *tools[] = {"builtin:calculator", NULL};
    rig r;
    ac_error err = {0};
    rig_open(&r, turns, NULL, tools, NULL);
    assert_null(client_session(&r, "[{\"name\": \"calculator\"}]", &err));
    assert_int_equal(err.code, AC_EINVAL);
    assert_non_null(strstr(err.text, "the client tool 'calculator' has the name"));
    assert_null(client_session(&r, "[{\"name\": \"a b\"}]", &err));
    assert_null(client_session(&r, "{\"name\": \"x\"}", &err));
    assert_null(client_session(&r, "[{\"name\": \"x\"}, {\"name\": \"x\"}]", &err));
    assert_non_null(strstr(err.text, "twice"));
    assert_null(client_session(&r, "[{\"name\": \"x\", \"parameters\": 3}]", &err));
    char many[8192] = "[";
    for (int i = 0; i < 129; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s{\"name\": \"t%d\"}",
                 i ? "," : "", i);
    strcat(many, "]");
    assert_null(client_session(&r, many, &err));
    assert_non_null(strstr(err.text, "at most 128"));
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answered_later),
        cmocka_unit_test(test_no_function),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
