/*
 * test_store_group.c - what the loop turn's group commit carries (store.h): a session opened
 * with AC_STORE_GROUPED is in the store after the loop turn that created it, not before, and
 * its last commit (the lease given up) joins the group, or ac_store_close; opening it again
 * in the same turn sees everything; a tool call runs after its started record is committed
 * (another handle on the file sees the record while the tool runs). A session loaded at rest
 * with AC_STORE_GROUPED gives its first commit to the group (a task waiting for it runs after
 * the loop turn; without, it commits at once), and ac_store_session_events says the event its
 * row names. And a store of schema
 * version 1 opens as the current version with its sessions intact; one written by the
 * release of schema version 2 with `agentc serve --db` (tests/store/fixtures) is migrated to
 * version 3 (the server's own tables dropped, its session intact); a newer one is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "io/loop.h"
#include "../support/test_tmpdir.h"

static const char *turns = "{\"tool_calls\":[{\"id\":\"k1\",\"name\":\"probe\","
                           "\"arguments\":\"{}\"}]}\n"
                           "{\"content\":\"answer one\"}\n"
                           "{\"content\":\"answer two\"}\n";

typedef struct rig {
    ac_loop *loop;
    ac_engine *e;
    char path[512];
    int seen; /* the probe tool found its started record committed */
} rig;

/* The tool: reads the store through its own connection while it runs. */
static void probe(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)args;
    rig *r = ud;
    sqlite3 *db;
    sqlite3_stmt *q = NULL;
    if (sqlite3_open_v2(r->path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM tool_calls WHERE call_id = 'k1'", -1, &q,
                           NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        r->seen = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    ac_tool_call_complete(h, 1, "probed");
}

static void rig_open(rig *r, const char *name)
{
    ac_error err = {0};
    snprintf(r->path, sizeof r->path, "%s/%s", tmpdir, name);
    r->seen = -1;
    r->loop = ac_loop_new();
    assert_non_null(r->loop);
    ac_engine_config cfg = {0};
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
    assert_int_equal(ac_engine_add_callback_tool(r->e, "probe", "reads the store",
                                                 "{\"type\":\"object\"}", probe, r, &err),
                     0);
}

static void rig_close(rig *r)
{
    ac_engine_free(r->e);
    ac_loop_free(r->loop);
}

static void settle(rig *r, ac_session *s)
{
    for (int i = 0; i < 2000 && !ac_session_settled(s); i++)
        ac_loop_run_once(r->loop, 20);
    assert_true(ac_session_settled(s));
}

static ac_store *open_store(const char *path)
{
    ac_error err;
    ac_store *st = ac_store_open(path, NULL, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    return st;
}

static void test_grouped_create_and_close(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "group.db");
    ac_store *st = open_store(r.path);
    ac_store *other = open_store(r.path); /* another process's view of the file */
    ac_error err;
    ac_store_session_info info;
    ac_session *s = ac_store_session(st, r.e, "g1", AC_STORE_GROUPED, &err);
    if (!s)
        fail_msg("%s", err.text);
    /* not in the store before the loop turns */
    assert_int_equal(ac_store_info(other, "g1", &info, &err), AC_STORE_ENOENT);
    ac_loop_run_once(r.loop, 1);
    assert_int_equal(ac_store_info(other, "g1", &info, &err), AC_OK);
    assert_true(info.events >= 1); /* spawn, in the same commit */

    assert_true(ac_session_send(s, "first") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "answer one");
    assert_int_equal(r.seen, 1); /* the call's record was committed before it ran */

    /* freed: its last commit waits for the group; opened again at once, it sees it */
    ac_session_free(s);
    s = ac_store_session(st, r.e, "g1", AC_STORE_GROUPED | AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_int_equal(ac_session_message_count(s), 4); /* user, call, result, answer */
    assert_true(ac_session_send(s, "second") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "answer two");
    ac_session_free(s);
    /* the last commit and the lease: held until the group commits or the store closes */
    ac_store_close(st);
    assert_int_equal(ac_store_info(other, "g1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "");
    assert_true(info.at_rest);
    assert_string_equal(info.status, "idle");
    uint64_t events = info.events;
    rig_close(&r);

    /* everything is there: a fresh load has both turns */
    rig_open(&r, "group.db");
    st = open_store(r.path);
    s = ac_store_session(st, r.e, "g1", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_int_equal(ac_session_message_count(s), 6);
    ac_session_free(s);
    assert_int_equal(ac_store_info(other, "g1", &info, &err), AC_OK);
    assert_true(info.events == events);
    ac_store_close(st);
    ac_store_close(other);
    rig_close(&r);
}

static void durable(void *ud)
{
    (*(int *)ud)++;
}

static void test_grouped_load_at_rest(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "rest.db");
    ac_store *st = open_store(r.path);
    ac_store *other = open_store(r.path);
    ac_error err;
    ac_store_session_info info;
    ac_session *s = ac_store_session(st, r.e, "r1", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_true(ac_session_send(s, "first") >= 0);
    settle(&r, s);
    ac_session_free(s);
    assert_int_equal(ac_store_info(other, "r1", &info, &err), AC_OK);
    uint64_t events = info.events;
    assert_true(events > 1);

    int ran = 0;
    ac_loop_task t = {durable, &ran, NULL, 0};
    s = ac_store_session(st, r.e, "r1", AC_STORE_MUST_EXIST, &err); /* alone, at once */
    if (!s)
        fail_msg("%s", err.text);
    assert_int_equal(ac_store_session_events(s), events);
    assert_int_equal(ac_store_when_durable(s, &t), 0);
    ac_session_free(s);
    s = ac_store_session(st, r.e, "r1", AC_STORE_GROUPED | AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_int_equal(ac_store_session_events(s), events);
    assert_int_equal(ac_store_when_durable(s, &t), 1); /* the group's, not made yet */
    for (int i = 0; i < 50 && !ran; i++)
        ac_loop_run_once(r.loop, 10);
    assert_int_equal(ran, 1);
    assert_int_equal(ac_store_info(other, "r1", &info, &err), AC_OK);
    assert_true(info.events == ac_store_session_events(s));
    assert_int_equal(ac_store_session_events(NULL), 0);
    ac_session_free(s);
    ac_store_close(st);
    ac_store_close(other);
    rig_close(&r);
}

static void test_schema_1_opens(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "v1.db");
    ac_store *st = open_store(r.path);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "old", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_true(ac_session_send(s, "first") >= 0);
    settle(&r, s);
    ac_session_free(s);
    char *before = ac_store_session_json(st, r.e, "old", &err);
    assert_non_null(before);
    ac_store_close(st);

    /* the events table as version 1 kept it */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(r.path, &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(
        db,
        "BEGIN; CREATE TABLE v1(session TEXT NOT NULL, n INTEGER NOT NULL, t_ms INTEGER NOT "
        "NULL, ev TEXT NOT NULL, data TEXT, steps TEXT, PRIMARY KEY(session, n)) WITHOUT ROWID;"
        "INSERT INTO v1 SELECT session, n, t_ms, ev, data, steps FROM events;"
        "DROP TABLE events; ALTER TABLE v1 RENAME TO events;"
        /* and the tables as version 3 kept them (no agents, one snapshot a session) */
        "ALTER TABLE sessions DROP COLUMN agent; ALTER TABLE sessions DROP COLUMN attempt;"
        "CREATE TABLE s3(session TEXT PRIMARY KEY, n INTEGER NOT NULL, body TEXT NOT NULL);"
        "INSERT INTO s3 SELECT session, n, body FROM snapshots; DROP TABLE snapshots;"
        "ALTER TABLE s3 RENAME TO snapshots; PRAGMA user_version = 1; COMMIT;",
        NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("%s", msg);
    sqlite3_close(db);

    st = open_store(r.path);
    char *after = ac_store_session_json(st, r.e, "old", &err);
    assert_non_null(after);
    assert_string_equal(after, before);
    ac_store_close(st);
    assert_int_equal(sqlite3_open(r.path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 5);
    sqlite3_finalize(q);
    sqlite3_close(db);
    free(before);
    free(after);
    rig_close(&r);
}

/* The fixture's SQL, run into a new file at path. */
static void load_fixture(const char *path)
{
    FILE *f = fopen("tests/store/fixtures/store_v2_serve.sql", "r");
    assert_non_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_true(n > 0 && n < sizeof text - 1);
    text[n] = 0;
    sqlite3 *db;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("fixture: %s", msg);
    sqlite3_close(db);
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

static void test_schema_2_serve_migrates(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "v2.db");
    load_fixture(r.path);
    assert_int_equal(query_int(r.path, "PRAGMA user_version"), 2);
    assert_int_equal(query_int(r.path, "SELECT count(*) FROM serve_events"), 15);
    ac_store *st = open_store(r.path);
    assert_int_equal(query_int(r.path, "PRAGMA user_version"), 5);
    assert_int_equal(query_int(r.path, "SELECT count(*) FROM sqlite_master WHERE name LIKE "
                                       "'serve_%'"),
                     0);
    /* version 4: a session stored before has no agent; its snapshots are kept by (session, n) */
    assert_int_equal(query_int(r.path, "SELECT count(*) FROM sessions WHERE agent IS NULL"), 1);
    assert_int_equal(query_int(r.path, "SELECT count(*) FROM pragma_table_info('snapshots') "
                                       "WHERE name = 'kept'"),
                     1);
    /* version 5: each session's lease counts its takings (its fencing token), from 1 */
    assert_int_equal(query_int(r.path, "SELECT attempt FROM sessions WHERE id = 'local/s1'"), 1);
    /* the session: its owner and public id in its id, its system prompt in its spawn event */
    ac_error err;
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "local/s1", &info, &err), AC_OK);
    assert_int_equal(info.events, 6);
    assert_string_equal(info.title, "hello");
    char *json = ac_store_session_json(st, r.e, "local/s1", &err);
    if (!json)
        fail_msg("%s", err.text);
    assert_non_null(strstr(json, "answer in one line"));
    assert_non_null(strstr(json, "hello from v2"));
    free(json);
    /* it goes on under this release */
    memset(&err, 0x55, sizeof err);
    assert_null(ac_store_agent(st, "local/s1", 0, &err));
    assert_int_equal(err.code, AC_OK);
    ac_session *s = ac_store_session(st, r.e, "local/s1", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_null(ac_session_agent(s));
    assert_true(ac_session_send(s, "again") >= 0);
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "answer one");
    ac_session_free(s);
    ac_store_close(st);
    rig_close(&r);

    /* a newer schema is refused with a message, the file left as it was */
    rig_open(&r, "v2.db");
    char *msg = NULL;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(r.path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 6", NULL, NULL, &msg), SQLITE_OK);
    sqlite3_close(db);
    assert_null(ac_store_open(r.path, NULL, &err));
    assert_int_equal(err.code, AC_EIO);
    assert_non_null(strstr(err.text, "schema version 6, newer than this agentc reads (5)"));
    assert_int_equal(query_int(r.path, "PRAGMA user_version"), 6);
    rig_close(&r);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(test_tmpdir_make("agentc_store_group"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grouped_create_and_close),
        cmocka_unit_test(test_grouped_load_at_rest),
        cmocka_unit_test(test_schema_1_opens),
        cmocka_unit_test(test_schema_2_serve_migrates),
    };
    return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
