/*
 * test_store_agent.c - a stored session remembers its agent and never re-judges its past:
 * the agent given at creation comes back from the store and from the session; a change at
 * rest is one journal record (agent.changed), takes a snapshot that is kept, and a session
 * opened on the new agent's engine rebuilds from there, so the gallery's tool budget
 * (examples/specs/tool_budget.fsm) lowered after a turn of 3 tool calls does not fail that
 * turn again; a change is refused mid-argument (not JSON); ac_store_agent at an event gives
 * the agent as it was then; a fork at the end of a turn has the events up to there, its agent
 * then, its origin, and goes on alone; a fork mid-turn is refused; without a store, the record
 * in a journal file replays and checks, and a replay goes on under the new agent's engine; the
 * snapshot of an agent change that changes the spec stays kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "spec.h"
#include "io/loop.h"
#include "../support/test_tmpdir.h"
#include "../support/test_store_where.h"

/* turn 1: three tool calls then an answer; turn 2: an answer; turn 3: an answer */
static const char *script =
    "{\"tool_calls\":["
    "{\"id\":\"c1\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"1+1\\\"}\"},"
    "{\"id\":\"c2\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"2+2\\\"}\"},"
    "{\"id\":\"c3\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"3+3\\\"}\"}"
    "]}\n"
    "{\"content\":\"sums done\"}\n"
    "{\"content\":\"hi\"}\n"
    "{\"content\":\"third\"}\n";

static const char *AGENT3 = "{\"name\":\"default\",\"params\":{\"max_tool_calls\":\"3\"}}";
static const char *AGENT2 = "{\"name\":\"default\",\"params\":{\"max_tool_calls\":\"2\"}}";

typedef struct rig {
    ac_loop *loop;
    ac_fsm_tables *t;
    ac_store *st;
} rig;

static ac_engine *engine(rig *r, const char *max_tool_calls)
{
    char param[64];
    snprintf(param, sizeof param, "max_tool_calls=%s", max_tool_calls);
    const char *params[] = {param, NULL};
    ac_engine_config cfg = {0};
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    cfg.tables = r->t;
    cfg.params = params;
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e)
        fail_msg("engine: %s", err.text);
    assert_int_equal(ac_engine_add_tools(e, "builtin:calculator", &err), 0);
    return e;
}

static void durable(void *ud)
{
    *(int *)ud = 1;
}

/* The session at rest and what it buffered committed (on PostgreSQL a group commit in flight
 * when the turn ended carries part of it, the next group the rest: read before that, the
 * session's row says fewer events). */
static void settle(rig *r, ac_session *s)
{
    for (int i = 0; i < 2000 && !ac_session_settled(s); i++)
        ac_loop_run_once(r->loop, 20);
    assert_true(ac_session_settled(s));
    int done = 0;
    ac_loop_task t = {durable, &done, NULL, 0};
    int waits = ac_store_when_durable(s, &t);
    for (int i = 0; waits == 1 && i < 2000 && !done; i++)
        ac_loop_run_once(r->loop, 20);
    ac_store_when_durable_cancel(s, &t);
    assert_true(waits == 0 || done);
}

static void rig_open(rig *r, const char *name)
{
    r->loop = ac_loop_new();
    ac_spec *spec = ac_spec_load("examples/specs/tool_budget.fsm");
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    assert_int_equal(spec->n_errors, 0);
    r->t = ac_spec_lower(spec, "examples/specs/tool_budget.fsm");
    assert_non_null(r->t);
    ac_spec_free(spec);
    char path[4200];
    test_store_where(path, sizeof path, name);
    ac_error err;
    r->st = ac_store_open(path, NULL, &err);
    if (!r->st)
        fail_msg("store: %s", err.text);
}

static void rig_close(rig *r)
{
    ac_store_close(r->st);
    ac_spec_tables_free(r->t);
    ac_loop_free(r->loop);
}

typedef struct found {
    uint64_t n;
    char data[512];
} found;

static int find_change(void *ud, const ac_store_event *ev)
{
    found *f = ud;
    if (!strcmp(ev->ev, AC_AGENT_CHANGED)) {
        f->n = ev->n;
        snprintf(f->data, sizeof f->data, "%s", ev->data ? ev->data : "");
    }
    return 0;
}

static void assert_agent(rig *r, const char *id, uint64_t at, const char *want)
{
    ac_error err;
    char *a = ac_store_agent(r->st, id, at, &err);
    if (!a)
        fail_msg("no agent for %s at %llu: %s", id, (unsigned long long)at, err.text);
    assert_string_equal(a, want);
    free(a);
}

/* Turn 1 under max_tool_calls = 3 (three calls), the agent changed to 2 at rest: returns the
 * number of turn 1's last event. */
static uint64_t turn_one_then_change(rig *r)
{
    ac_engine *e3 = engine(r, "3");
    ac_session_options o = {0};
    o.agent = AGENT3;
    ac_error err;
    ac_session *s = ac_store_session_opts(r->st, e3, "t", 0, &o, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_string_equal(ac_session_agent(s), AGENT3);
    assert_true(ac_session_send(s, "add three sums") >= 0);
    settle(r, s);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "idle");
    assert_string_equal(ac_session_answer(s), "sums done");
    assert_agent(r, "t", 0, AGENT3);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(r->st, "t", &info, &err), AC_OK);
    uint64_t end1 = info.events;
    /* refused: not JSON of the kinds asked */
    assert_int_equal(ac_session_change_agent(s, "option", NULL, "not json"), AC_EINVAL);
    assert_int_equal(ac_session_change_agent(s, "option", "{}", AGENT2), AC_EINVAL);
    assert_int_equal(ac_session_change_agent(s, "option", "[\"params.max_tool_calls\"]", AGENT2),
                     AC_OK);
    assert_string_equal(ac_session_agent(s), AGENT2);
    ac_session_free(s);
    ac_engine_free(e3);
    return end1;
}

static void test_never_rejudged(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "agent.db");
    uint64_t end1 = turn_one_then_change(&r);
    ac_error err;
    /* the change: one record after turn 1, with a kept snapshot there */
    found f = {0};
    assert_int_equal(ac_store_events(r.st, "t", 0, find_change, &f, &err), AC_OK);
    assert_int_equal(f.n, end1 + 1);
    json_t *d = json_loads(f.data, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(d, "reason")), "option");
    assert_string_equal(json_string_value(json_array_get(json_object_get(d, "what"), 0)),
                        "params.max_tool_calls");
    json_decref(d);
    uint64_t sn = 0;
    char *snap = ac_store_snapshot(r.st, "t", &sn, &err);
    assert_non_null(snap);
    assert_int_equal(sn, end1 + 1);
    free(snap);
    assert_agent(&r, "t", 0, AGENT2);
    assert_agent(&r, "t", end1, AGENT3);
    assert_agent(&r, "t", end1 + 1, AGENT2);

    /* turn 2 on the new agent's engine: turn 1 is not judged again under max 2 */
    ac_engine *e2 = engine(&r, "2");
    ac_session *s = ac_store_session(r.st, e2, "t", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_false(ac_store_session_resumed(s));
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "idle");
    assert_string_equal(ac_session_agent(s), AGENT2);
    assert_true(ac_session_send(s, "just say hi") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "idle");
    assert_string_equal(ac_session_answer(s), "hi");
    ac_session_free(s);
    /* and again: nothing resumed, nothing run */
    ac_store_session_info before, after;
    assert_int_equal(ac_store_info(r.st, "t", &before, &err), AC_OK);
    s = ac_store_session(r.st, e2, "t", AC_STORE_MUST_EXIST, &err);
    assert_non_null(s);
    assert_false(ac_store_session_resumed(s));
    ac_session_free(s);
    assert_int_equal(ac_store_info(r.st, "t", &after, &err), AC_OK);
    assert_int_equal(after.events, before.events);
    assert_string_equal(after.status, "idle");
    ac_engine_free(e2);
    rig_close(&r);
}

static void test_fork(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "fork.db");
    uint64_t end1 = turn_one_then_change(&r);
    ac_error err;
    ac_engine *e2 = engine(&r, "2");
    ac_session *s = ac_store_session(r.st, e2, "t", AC_STORE_MUST_EXIST, &err);
    assert_non_null(s);
    assert_true(ac_session_send(s, "just say hi") >= 0);
    settle(&r, s);
    ac_session_free(s);
    /* the fork at the end of turn 1: its agent then, its events up to there */
    ac_engine *e3 = engine(&r, "3");
    assert_int_equal(ac_store_fork(r.st, e3, "t", 3, 1, "mid", &err), AC_EINVAL);
    assert_non_null(strstr(err.text, "not at rest"));
    if (ac_store_fork(r.st, e3, "t", end1, 1, "f", &err) != AC_OK)
        fail_msg("fork at %llu: %s", (unsigned long long)end1, err.text);
    assert_int_equal(ac_store_fork(r.st, e3, "t", end1, 1, "f", &err), AC_EINVAL);
    assert_int_equal(ac_store_fork(r.st, e3, "nope", end1, 1, "g", &err), AC_STORE_ENOENT);
    assert_agent(&r, "f", 0, AGENT3);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(r.st, "f", &info, &err), AC_OK);
    assert_int_equal(info.events, end1);
    assert_string_equal(info.status, "idle");
    s = ac_store_session(r.st, e3, "f", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_false(ac_store_session_resumed(s));
    char *js = ac_session_to_json(s);
    assert_non_null(strstr(js, "sums done"));
    assert_null(strstr(js, "just say hi")); /* turn 2 is the original's alone */
    free(js);
    assert_true(ac_session_send(s, "another") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "idle");
    ac_session_free(s);
    ac_store_session_info orig;
    assert_int_equal(ac_store_info(r.st, "t", &orig, &err), AC_OK);
    assert_int_equal(ac_store_info(r.st, "f", &info, &err), AC_OK);
    assert_true(info.events > end1);
    assert_true(orig.events > end1 + 1);
    ac_engine_free(e3);
    ac_engine_free(e2);
    rig_close(&r);
}

/* Where a turn ended, read from the journal, is where the live session counted it: a message
 * sent mid-turn starts the next turn as the first ends (the session leaves its turn state and
 * enters it again: two turns, no rest between). */
static void test_turn_end_as_live(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "turns.db");
    ac_engine *e3 = engine(&r, "3");
    ac_error err;
    ac_session *s = ac_store_session(r.st, e3, "q", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_true(ac_session_send(s, "add three sums") >= 0);
    assert_true(ac_session_send(s, "just say hi") >= 0); /* queued: the turn runs */
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "hi");
    ac_session_stats stats;
    ac_session_get_stats(s, &stats);
    assert_int_equal(stats.turns_ended, 2);
    ac_session_free(s);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(r.st, "q", &info, &err), AC_OK);
    uint64_t at1 = 0, at2 = 0, at3 = 0;
    assert_int_equal(ac_store_turn_end(r.st, e3, "q", 1, &at1, &err), AC_OK);
    assert_int_equal(ac_store_turn_end(r.st, e3, "q", 2, &at2, &err), AC_OK);
    assert_true(at1 > 1 && at1 < at2 && at2 <= info.events);
    assert_int_equal(ac_store_turn_end(r.st, e3, "q", 3, &at3, &err), AC_EINVAL);
    assert_non_null(strstr(err.text, "has 2 finished turns"));
    ac_engine_free(e3);
    rig_close(&r);
}

typedef struct switched {
    ac_engine *to;
    char agent[256];
    int calls;
} switched;

static ac_engine *switch_to(void *ud, const char *agent)
{
    switched *w = ud;
    w->calls++;
    snprintf(w->agent, sizeof w->agent, "%s", agent ? agent : "");
    return w->to;
}

/* Without a store: the record in a journal file (an event line and its empty steps line),
 * replayed and checked; a replayer given ac_session_replay_agents goes on under the engine of
 * the new agent. */
static void test_journal_file(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "unused.db");
    char path[4200];
    snprintf(path, sizeof path, "%s/j.jsonl", tmpdir);
    ac_engine *e3 = engine(&r, "3");
    ac_session_options o = {0};
    o.journal_path = path;
    o.agent = AGENT3;
    ac_error err;
    ac_session *s = ac_session_new_opts(e3, "j", &o, &err);
    assert_non_null(s);
    assert_true(ac_session_send(s, "add three sums") >= 0);
    settle(&r, s);
    assert_int_equal(ac_session_change_agent(s, "handoff", "[\"params.max_tool_calls\"]", AGENT2),
                     AC_OK);
    ac_session_free(s);
    ac_replay_result res;
    ac_session *rs = NULL;
    assert_int_equal(ac_session_replay(e3, path, AC_REPLAY_CHECK, &res, &rs), AC_REPLAY_MATCH);
    assert_string_equal(ac_session_agent(rs), AGENT2);
    ac_session_free(rs);
    ac_engine *e2 = engine(&r, "2");
    switched w = {e2, "", 0};
    assert_int_equal(ac_session_replay_agents(e3, path, AC_REPLAY_CHECK, switch_to, &w, &res, &rs),
                     AC_REPLAY_MATCH);
    assert_int_equal(w.calls, 1);
    assert_string_equal(w.agent, AGENT2);
    assert_ptr_equal(ac_session_engine(rs), e2);
    assert_string_equal(ac_session_status_name(ac_session_status(rs)), "idle");
    assert_string_equal(ac_session_answer(rs), "sums done");
    ac_session_free(rs);
    ac_engine_free(e2);
    ac_engine_free(e3);
    rig_close(&r);
}

/* The spec of tool_budget.fsm with its budget's default at 2 (another spec hash). */
static ac_fsm_tables *edited_spec(void)
{
    FILE *f = fopen("examples/specs/tool_budget.fsm", "r");
    assert_non_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *p = strstr(text, "param max_tool_calls     = 3");
    assert_non_null(p);
    p[strlen("param max_tool_calls     = ")] = '2';
    ac_spec *spec = ac_spec_parse("budget2.fsm", text, strlen(text));
    assert_non_null(spec);
    ac_spec_check(spec);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "budget2.fsm");
    ac_spec_free(spec);
    assert_non_null(t);
    return t;
}

static long long query_int(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    long long v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* An agent change that also changes the spec: reopened under the new spec, the session takes
 * a snapshot at the same event (the spec change's), which stays kept, and later snapshots
 * (one at every settle here) replace only the latest. */
static void test_kept_across_spec_change(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "kept.db");
    ac_store_close(r.st);
    char path[4200];
    snprintf(path, sizeof path, "%s/kept.db", tmpdir);
    ac_store_options so = {0};
    so.snapshot_every = 1;
    ac_error err;
    r.st = ac_store_open(path, &so, &err);
    assert_non_null(r.st);
    uint64_t end1 = turn_one_then_change(&r);
    ac_fsm_tables *t2 = edited_spec();
    ac_fsm_tables *t1 = r.t;
    r.t = t2;
    ac_engine *e2 = engine(&r, "2");
    ac_session *s = ac_store_session(r.st, e2, "t", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_true(ac_session_send(s, "just say hi") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "hi");
    ac_session_free(s);
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM snapshots WHERE session = 't' AND n = %llu AND kept = 1",
             (unsigned long long)end1 + 1);
    assert_int_equal(query_int(path, sql), 1);
    /* the spec change: one record, an agent change naming the spec (the agent unchanged),
     * its snapshot kept too; no note */
    found f = {0};
    assert_int_equal(ac_store_events(r.st, "t", 0, find_change, &f, &err), AC_OK);
    assert_int_equal(f.n, end1 + 2);
    json_t *d = json_loads(f.data, 0, NULL);
    assert_non_null(d);
    json_t *what = json_pack("[s]", "spec");
    assert_true(json_equal(json_object_get(d, "what"), what));
    json_decref(what);
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "spec"), "to")),
                        t2->hash);
    assert_null(json_object_get(d, "agent"));
    json_decref(d);
    assert_agent(&r, "t", 0, AGENT2);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM snapshots WHERE session = 't' AND n = %llu AND kept = 1",
             (unsigned long long)end1 + 2);
    assert_int_equal(query_int(path, sql), 1);
    assert_int_equal(query_int(path, "SELECT count(*) FROM snapshots WHERE session = 't'"), 3);
    assert_int_equal(query_int(path, "SELECT count(*) FROM notes WHERE session = 't'"), 0);
    /* a caller that records the spec change itself (its agent names the spec): the store
     * records no second one */
    s = ac_store_session(r.st, e2, "t", AC_STORE_MUST_EXIST, &err);
    assert_non_null(s);
    assert_int_equal(ac_session_change_agent(s, "option", "[\"spec\"]", AGENT3), AC_OK);
    ac_session_free(s);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(r.st, "t", &info, &err), AC_OK);
    uint64_t changed = info.events;
    r.t = t1;
    ac_engine *e3 = engine(&r, "3");
    s = ac_store_session(r.st, e3, "t", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    ac_session_free(s);
    assert_int_equal(ac_store_info(r.st, "t", &info, &err), AC_OK);
    assert_int_equal(info.events, changed);
    memset(&f, 0, sizeof f);
    assert_int_equal(ac_store_events(r.st, "t", 0, find_change, &f, &err), AC_OK);
    assert_int_equal(f.n, changed);
    ac_engine_free(e3);
    ac_engine_free(e2);
    ac_spec_tables_free(t2);
    rig_close(&r);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(test_tmpdir_make("agentc_store_agent"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_rejudged),
        cmocka_unit_test(test_fork),
        cmocka_unit_test(test_turn_end_as_live),
        cmocka_unit_test(test_journal_file),
        /* reads the SQLite file */
        cmocka_unit_test(test_kept_across_spec_change),
    };
    /* with AGENTC_TEST_PG (store_agent_pg): the tests of any backend, against PostgreSQL */
    size_t n = test_store_pg() ? 4 : sizeof tests / sizeof tests[0];
    return _cmocka_run_group_tests("store_agent", tests, n, setup, test_tmpdir_teardown);
}
