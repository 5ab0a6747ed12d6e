/*
 * test_tools_callback.c - C callback tools completed from another thread:
 * a completion after a delay reaches the model; a call abandoned by a
 * cancel and completed afterwards is ignored safely. Many tools: each is found by
 * name once the registry's index has grown, a name given twice is refused, and so is
 * a name the model would see as another's.
 */
#include <pthread.h>

#include "session_rig.h"

typedef struct later {
    pthread_t th;
    int started;
    int delay_ms;
    ac_tool_call_handle *h;
    char args[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go; /* 0: wait for the test's go when delay_ms < 0 */
} later;

static void *complete_thread(void *ud)
{
    later *l = ud;
    if (l->delay_ms >= 0) {
        usleep((useconds_t)l->delay_ms * 1000);
    } else {
        pthread_mutex_lock(&l->mu);
        while (!l->go)
            pthread_cond_wait(&l->cv, &l->mu);
        pthread_mutex_unlock(&l->mu);
    }
    char out[400];
    snprintf(out, sizeof out, "echo from a thread: %s", l->args);
    ac_tool_call_complete(l->h, 1, out);
    return NULL;
}

static void threaded_tool(void *ud, const char *arguments, ac_tool_call_handle *call)
{
    later *l = ud;
    l->h = call;
    snprintf(l->args, sizeof l->args, "%s", arguments);
    assert_int_equal(pthread_create(&l->th, NULL, complete_thread, l), 0);
    l->started = 1;
}

static const char *turns = "{\"tool_calls\":[{\"id\":\"cb1\",\"name\":\"echo_later\","
                           "\"arguments\":\"{\\\"word\\\":\\\"hello\\\"}\"}]}\n"
                           "{\"content\":\"heard it\"}\n";

static void open_with_tool(rig *r, later *l)
{
    ac_error err = {0};
    rig_open(r, turns, NULL, NULL, NULL);
    assert_int_equal(ac_engine_add_callback_tool(
                         r->e, "echo_later", "echoes later",
                         "{\"type\":\"object\",\"properties\":{\"word\":{\"type\":\"string\"}}}",
                         threaded_tool, l, &err),
                     0);
    /* the session was created before the tool: make a new one that offers it */
    ac_session_free(r->s);
    r->s = ac_session_new(r->e, "s2", NULL, &err);
    assert_non_null(r->s);
}

static void test_completion_from_thread(void **state)
{
    (void)state;
    later l;
    memset(&l, 0, sizeof l);
    l.delay_ms = 150;
    rig r;
    open_with_tool(&r, &l);
    double t0 = rig_now();
    ac_session_send(r.s, "say it");
    rig_settle(&r);
    assert_true(l.started);
    pthread_join(l.th, NULL);
    assert_true(rig_now() - t0 >= 0.14);
    assert_string_equal(ac_session_answer(r.s), "heard it");
    const char *res = rig_result(&r, "cb1", 1);
    assert_non_null(strstr(res, "echo from a thread"));
    assert_non_null(strstr(res, "hello"));
    rig_close(&r);
}

static void test_cancel_then_late_completion(void **state)
{
    (void)state;
    later l;
    memset(&l, 0, sizeof l);
    l.delay_ms = -1;
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    rig r;
    open_with_tool(&r, &l);
    ac_session_send(r.s, "say it");
    for (int i = 0; i < 200 && !l.started; i++)
        ac_loop_run_once(r.loop, 10);
    assert_true(l.started);
    assert_string_equal(ac_session_state(r.s, "process"), "TOOL_EXECUTING");
    ac_session_cancel(r.s);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(r.s, NULL)), "cancelled");
    /* now the late completion */
    pthread_mutex_lock(&l.mu);
    l.go = 1;
    pthread_cond_signal(&l.cv);
    pthread_mutex_unlock(&l.mu);
    pthread_join(l.th, NULL);
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(r.loop, 10);
    assert_string_equal(ac_session_state(r.s, "session"), "Cancelled");
    const ac_tool_call *c = ac_conv_tool_call(ac_session_conv(r.s), "cb1");
    assert_non_null(c);
    assert_int_equal(c->state, AC_CALL_NONE); /* the late result was not recorded */
    rig_close(&r);
    pthread_mutex_destroy(&l.mu);
    pthread_cond_destroy(&l.cv);
}

/* The session is freed while the call is pending; the completion comes after. */
static void test_free_then_late_completion(void **state)
{
    (void)state;
    later l;
    memset(&l, 0, sizeof l);
    l.delay_ms = -1;
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    rig r;
    open_with_tool(&r, &l);
    ac_session_send(r.s, "say it");
    for (int i = 0; i < 200 && !l.started; i++)
        ac_loop_run_once(r.loop, 10);
    assert_true(l.started);
    ac_session_free(r.s);
    r.s = NULL;
    pthread_mutex_lock(&l.mu);
    l.go = 1;
    pthread_cond_signal(&l.cv);
    pthread_mutex_unlock(&l.mu);
    pthread_join(l.th, NULL);
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(r.loop, 10);
    rig_close(&r);
    pthread_mutex_destroy(&l.mu);
    pthread_cond_destroy(&l.cv);
}

/* The session, the engine and the loop are all freed while the call is
 * pending; the worker completes after that (the header: late completions of
 * abandoned calls are ignored). Was a heap use-after-free of the loop. */
static void test_loop_freed_then_late_completion(void **state)
{
    (void)state;
    later l;
    memset(&l, 0, sizeof l);
    l.delay_ms = -1;
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    rig r;
    open_with_tool(&r, &l);
    ac_session_send(r.s, "say it");
    for (int i = 0; i < 200 && !l.started; i++)
        ac_loop_run_once(r.loop, 10);
    assert_true(l.started);
    rig_close(&r); /* frees the session, the engine and the loop */
    pthread_mutex_lock(&l.mu);
    l.go = 1;
    pthread_cond_signal(&l.cv);
    pthread_mutex_unlock(&l.mu);
    pthread_join(l.th, NULL);
    pthread_mutex_destroy(&l.mu);
    pthread_cond_destroy(&l.cv);
}

static void answer_now(void *ud, const char *arguments, ac_tool_call_handle *call)
{
    (void)arguments;
    ++*(int *)ud;
    ac_tool_call_complete(call, 1, "answered");
}

static void test_many_tools(void **state)
{
    (void)state;
    enum { N = 3000 };
    int ran = 0;
    ac_error err = {0};
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"m1\",\"name\":\"many2999\",\"arguments\":\"{}\"},"
             "{\"id\":\"m2\",\"name\":\"many0\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"done\"}\n",
             NULL, NULL, NULL);
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "many%d", i);
        assert_int_equal(ac_engine_add_callback_tool(r.e, name, "d", NULL, answer_now, &ran, &err),
                         0);
    }
    assert_int_equal(
        ac_engine_add_callback_tool(r.e, "many1234", "d", NULL, answer_now, &ran, &err), -1);
    assert_non_null(strstr(err.text, "tool 'many1234' is defined twice"));
    assert_int_equal(ac_engine_add_callback_tool(r.e, "kit::t", "d", NULL, answer_now, &ran, &err),
                     0);
    assert_int_equal(ac_engine_add_callback_tool(r.e, "kit__t", "d", NULL, answer_now, &ran, &err),
                     -1);
    assert_non_null(strstr(err.text, "the model would see 'kit::t' under the same name"));
    ac_session_free(r.s);
    r.s = ac_session_new(r.e, "many", NULL, &err);
    assert_non_null(r.s);
    ac_session_send(r.s, "call two");
    rig_settle(&r);
    assert_int_equal(ran, 2);
    assert_string_equal(rig_result(&r, "m1", 1), "answered");
    assert_string_equal(ac_session_answer(r.s), "done");
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completion_from_thread),
        cmocka_unit_test(test_cancel_then_late_completion),
        cmocka_unit_test(test_free_then_late_completion),
        cmocka_unit_test(test_loop_freed_then_late_completion),
        cmocka_unit_test(test_many_tools),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
