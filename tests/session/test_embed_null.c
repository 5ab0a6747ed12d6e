/*
 * test_embed_null.c - the public entry points given NULL arguments return an
 * error (AC_EINVAL, -1, NULL, 0) or do nothing; none of them crashes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "agentc/agentc.h"

static const char *script = "{\"content\":\"hi\"}\n";

static void noop_tool(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    (void)args;
    ac_tool_call_complete(h, 1, "ok");
}

static void test_engine_null(void **state)
{
    (void)state;
    ac_error err;
    memset(&err, 0, sizeof err);
    assert_null(ac_engine_new(NULL, &err));
    assert_int_equal(err.code, AC_EINVAL);
    assert_null(ac_engine_new(NULL, NULL));
    ac_engine_free(NULL);
    assert_null(ac_engine_tables(NULL));
    assert_null(ac_engine_loop(NULL));
    assert_int_equal(ac_engine_param_int(NULL, "max_retries", 7), 7);
    assert_string_equal(ac_engine_param_str(NULL, "compaction", "d"), "d");
    memset(&err, 0, sizeof err);
    assert_int_equal(ac_engine_add_tools(NULL, "builtin:calculator", &err), -1);
    assert_int_equal(err.code, AC_EINVAL);
    memset(&err, 0, sizeof err);
    assert_int_equal(ac_engine_add_callback_tool(NULL, "t", "d", NULL, noop_tool, NULL, &err), -1);
    assert_int_equal(err.code, AC_EINVAL);
    memset(&err, 0, sizeof err);
    assert_null(ac_session_new(NULL, "x", NULL, &err));
    assert_int_equal(err.code, AC_EINVAL);
    ac_tool_call_complete(NULL, 1, "x");

    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    assert_int_equal(ac_engine_param_int(e, NULL, 7), 7);
    assert_string_equal(ac_engine_param_str(e, NULL, "d"), "d");
    memset(&err, 0, sizeof err);
    assert_int_equal(ac_engine_add_tools(e, NULL, &err), -1);
    assert_int_equal(err.code, AC_EINVAL);
    memset(&err, 0, sizeof err);
    assert_int_equal(ac_engine_add_callback_tool(e, NULL, "d", NULL, noop_tool, NULL, &err), -1);
    assert_int_equal(err.code, AC_EINVAL);
    memset(&err, 0, sizeof err);
    assert_int_equal(ac_engine_add_callback_tool(e, "t", "d", NULL, NULL, NULL, &err), -1);
    assert_int_equal(err.code, AC_EINVAL);
    ac_replay_result rr;
    assert_int_not_equal(ac_session_replay(NULL, "j", 0, &rr, NULL), 0);
    assert_int_not_equal(ac_session_replay(e, NULL, 0, &rr, NULL), 0);
    assert_int_not_equal(ac_session_replay(e, "j", 0, NULL, NULL), 0);
    ac_engine_free(e);
}

static void test_session_null(void **state)
{
    (void)state;
    ac_session_free(NULL);
    assert_null(ac_session_id(NULL));
    assert_null(ac_session_engine(NULL));
    assert_null(ac_session_conv(NULL));
    assert_null(ac_session_fsm(NULL));
    assert_null(ac_session_userdata(NULL));
    ac_session_set_userdata(NULL, NULL);
    assert_int_equal(ac_session_post(NULL, "ping", NULL, 0), AC_EINVAL);
    assert_int_equal(ac_session_post_threadsafe(NULL, "ping", NULL, 0), AC_EINVAL);
    assert_int_equal(ac_session_send(NULL, "hi"), AC_EINVAL);
    assert_int_equal(ac_session_cancel(NULL), AC_EINVAL);
    assert_null(ac_session_state(NULL, "session"));
    assert_true(ac_session_settled(NULL));
    assert_true(ac_session_ended(NULL));
    (void)ac_session_status(NULL);
    assert_string_equal(ac_session_answer(NULL), "");
    assert_null(ac_session_error(NULL));
    assert_string_equal(ac_session_partial(NULL), "");
    ac_session_stats st;
    memset(&st, 0xff, sizeof st);
    ac_session_get_stats(NULL, &st);
    assert_int_equal(st.iterations, 0);
    assert_int_equal(st.tool_calls, 0);
    assert_null(ac_session_to_json(NULL));
    assert_int_equal(ac_session_pending_tool_calls(NULL, NULL, 0), 0);
    assert_null(ac_session_tool_call_name(NULL, "x", NULL));
    assert_int_equal(ac_session_fail_tool_call(NULL, "x", "e", 0), -1);
    assert_int_equal(ac_session_message_count(NULL), 0);
    assert_null(ac_session_message(NULL, 0, NULL));
    assert_non_null(ac_session_status_name((enum ac_session_status)99));

    /* a live session, NULL in the other arguments */
    ac_error err;
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_session *s = ac_session_new(e, NULL, NULL, &err);
    assert_non_null(s);
    assert_int_equal(ac_session_post(s, NULL, NULL, 0), AC_EINVAL);
    assert_int_equal(ac_session_post_threadsafe(s, NULL, NULL, 0), AC_EINVAL);
    assert_int_equal(ac_session_send(s, NULL), AC_EINVAL);
    assert_null(ac_session_state(s, NULL));
    ac_session_get_stats(s, NULL);
    assert_null(ac_session_tool_call_name(s, NULL, NULL));
    assert_int_not_equal(ac_session_fail_tool_call(s, NULL, NULL, 0), AC_OK);
    assert_null(ac_session_message(s, 999, NULL));
    assert_int_equal(ac_session_pending_tool_calls(s, NULL, 5), 0);
    ac_session_free(s);
    ac_engine_free(e);
}

static void test_loop_null(void **state)
{
    (void)state;
    ac_loop_free(NULL);
    assert_int_equal(ac_loop_run_once(NULL, 0), -1);
    ac_loop_run(NULL);
    ac_loop_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_null),
        cmocka_unit_test(test_session_null),
        cmocka_unit_test(test_loop_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
