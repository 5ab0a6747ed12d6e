/*
 * test_store_client.c - a stored session's client tools (ac_session_options.client_tools)
 * come back with it: reopened from its snapshot (taken at rest after its first turn, so its
 * spawn event is not applied again), the model is still offered them and a call of one is
 * still handed to the caller and answered; the journal replays with the same tools offered.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "context/conversation.h"
#include "io/loop.h"

static const char *turns = "{\"tool_calls\":[{\"id\":\"a1\",\"name\":\"lookup\",\"arguments\":\"{"
                           "\\\"q\\\":\\\"x\\\"}\"}]}\n"
                           "{\"content\":\"first\"}\n"
                           "{\"tool_calls\":[{\"id\":\"a2\",\"name\":\"lookup\",\"arguments\":\"{"
                           "\\\"q\\\":\\\"y\\\"}\"}]}\n"
                           "{\"content\":\"second\"}\n";

typedef struct caller {
    ac_session *s;
    char id[32];
    int n;
} caller;

static void on_call(void *ud, ac_session *s, const char *call_id, const char *name,
                    const char *arguments)
{
    caller *c = ud;
    (void)name;
    (void)arguments;
    c->s = s;
    snprintf(c->id, sizeof c->id, "%s", call_id);
    c->n++;
}

/* Runs a turn whose model calls lookup once, answered with text. */
static void turn(ac_loop *loop, ac_session *s, caller *c, const char *text, const char *answer)
{
    int before = c->n;
    ac_session_set_client_calls(s, on_call, c);
    ac_session_send(s, "go");
    for (int i = 0; i < 500 && c->n == before; i++)
        ac_loop_run_once(loop, 10);
    assert_int_equal(c->n, before + 1);
    assert_int_equal(ac_session_answer_call(s, c->id, 1, text), AC_OK);
    for (int i = 0; i < 500 && !ac_session_settled(s); i++)
        ac_loop_run_once(loop, 10);
    assert_true(ac_session_settled(s));
    assert_string_equal(ac_session_answer(s), answer);
    const ac_tool_call *call = ac_conv_tool_call(ac_session_conv(s), c->id);
    assert_non_null(call);
    assert_string_equal(call->result, text);
}

static void test_back_from_snapshot(void **state)
{
    (void)state;
    ac_error err = {0};
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_store_options so;
    memset(&so, 0, sizeof so);
    so.snapshot_every = 1;
    ac_store *st = ac_store_open(":memory:", &so, &err);
    assert_non_null(st);
    ac_session_options o = {0};
    o.client_tools = "[{\"name\": \"lookup\", \"parameters\": {\"type\": \"object\"}}]";
    ac_session *s = ac_store_session_opts(st, e, "k", 0, &o, &err);
    assert_non_null(s);
    caller c = {0};
    turn(loop, s, &c, "found x", "first");
    ac_session_free(s);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "k", &info, &err), AC_OK);
    assert_true(info.snapshot_seq > 1); /* reopened from a snapshot, not from its spawn */
    s = ac_store_session(st, e, "k", AC_STORE_MUST_EXIST, &err);
    assert_non_null(s);
    turn(loop, s, &c, "found y", "second");
    assert_string_equal(c.id, "a2");
    ac_session_free(s);
    ac_store_close(st);
    ac_engine_free(e);
    for (int i = 0; i < 5 && ac_loop_pending(loop); i++)
        ac_loop_run_once(loop, 10);
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_back_from_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
