/*
 * test_store_facts.c - the spec's facts are a snapshot part: a stored session
 * rebuilt from a snapshot and the journal after it judges guards on facts
 * (state.time, llm.status) as a full replay does. The snapshot is taken after
 * an event carrying an HTTP status, in a state entered before it; the guards
 * that read them run after the snapshot, live and in the tail's replay. Without
 * the facts part, or without the dispatcher's entry count in the fsm part, the
 * rebuilt session stays in Idle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "io/loop.h"
#include "spec.h"
#include "../support/test_tmpdir.h"
#include "../support/test_store_where.h"

char *ac_store_session_json_full(ac_store *st, ac_engine *e, const char *id, ac_error *err);

static const char *facts_spec =
    "param patience = 1s\nparam context_window = 0\n"
    "event spawn, user_message\noutside event probe, late, hot\n"
    "action init_session, append_user_message, finish_interaction\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done\n"
    "    state Idle, Late, Hot\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle on probe\n"
    "    Idle -> Late on late [state.time >= patience]\n"
    "    Idle on late\n"
    "    Late -> Hot on hot [llm.status == 503]\n"
    "    Late on hot\n"
    "    Hot -> Done on user_message / append_user_message, finish_interaction\n"
    "}\n";

static ac_fsm_tables *compile(void)
{
    ac_spec *spec = ac_spec_parse("facts.fsm", facts_spec, strlen(facts_spec));
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors)
        ac_spec_print_diags(spec, stderr);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "facts.fsm");
    assert_non_null(t);
    ac_spec_free(spec);
    return t;
}

static ac_store *open_store(const char *path, uint64_t snapshot_every)
{
    ac_store_options o = {0};
    o.snapshot_every = snapshot_every;
    ac_error err;
    ac_store *st = ac_store_open(path, &o, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    return st;
}

static void turns(ac_loop *loop)
{
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(loop, 1);
}

static void test_snapshot_tail_equals_replay_on_facts(void **state)
{
    (void)state;
    char path[512];
    test_store_where(path, sizeof path, "facts.db");
    ac_fsm_tables *t = compile();
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg = {0};
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "";
    cfg.tables = t;
    ac_error err;
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e)
        fail_msg("engine: %s", err.text);

    /* a snapshot at every settle: the last one after probe (event 2), in Idle */
    ac_store *st = open_store(path, 1);
    ac_session *s = ac_store_session(st, e, "f", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    int64_t t0 = ac_wall_now_ms() + 100; /* after spawn, which entered Idle */
    assert_int_equal(ac_session_post(s, "probe", json_pack("{s:i}", "status", 503), t0), AC_OK);
    turns(loop);
    ac_session_free(s);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "f", &info, &err), AC_OK);
    assert_int_equal(info.snapshot_seq, 2);
    ac_store_close(st);

    /* rebuilt from that snapshot; no more snapshots: the guards read the facts it kept */
    st = open_store(path, 1000);
    s = ac_store_session(st, e, "f", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_string_equal(ac_session_state(s, "s"), "Idle");
    /* an event that stays in Idle: it was entered before the snapshot, not now (the
     * dispatcher's entry count came back with it) */
    ac_session_post(s, "probe", NULL, t0 + 4500);
    assert_string_equal(ac_session_state(s, "s"), "Idle");
    ac_session_post(s, "late", NULL, t0 + 5000); /* Idle entered > 1 s before */
    assert_string_equal(ac_session_state(s, "s"), "Late");
    ac_session_post(s, "hot", NULL, t0 + 5001); /* the last status seen: 503 */
    assert_string_equal(ac_session_state(s, "s"), "Hot");
    turns(loop);
    ac_session_free(s);
    assert_int_equal(ac_store_info(st, "f", &info, &err), AC_OK);
    assert_int_equal(info.snapshot_seq, 2);
    assert_int_equal(info.events, 5);

    /* snapshot (event 2) + the tail (probe, late, hot) gives what the whole journal gives */
    char *tail = ac_store_session_json(st, e, "f", &err);
    char *full = ac_store_session_json_full(st, e, "f", &err);
    assert_non_null(tail);
    assert_non_null(full);
    assert_non_null(strstr(full, "\"Hot\""));
    assert_string_equal(tail, full);
    free(tail);
    free(full);
    ac_store_close(st);
    ac_engine_free(e);
    ac_loop_free(loop);
    ac_spec_tables_free(t);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(test_tmpdir_make("agentc_store_facts"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_tail_equals_replay_on_facts),
    };
    return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
