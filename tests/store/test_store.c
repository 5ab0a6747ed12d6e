/*
 * test_store.c - the SQLite store through agentc/store.h: the file (0600, foreign and
 * corrupt files refused untouched), stored sessions continued across store handles,
 * snapshot + journal tail equal to a full replay byte for byte, leases between two
 * holders (and expiry), a size-capped store that fills up, and paths that cannot be
 * written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "io/loop.h"
#include "store/store_writer.h"
#include "../support/test_tmpdir.h"
#include "../support/test_store_where.h"

char *ac_store_session_json_full(ac_store *st, ac_engine *e, const char *id, ac_error *err);

static const char *turns = "{\"content\":\"answer one\"}\n"
                           "{\"tool_calls\":[{\"id\":\"k1\",\"name\":\"calculator\","
                           "\"arguments\":\"{\\\"expression\\\":\\\"6 * 7\\\"}\"}]}\n"
                           "{\"content\":\"answer two: 42\"}\n"
                           "{\"content\":\"answer three\"}\n"
                           "{\"content\":\"answer four\"}\n"
                           "{\"content\":\"answer five\"}\n"
                           "{\"content\":\"answer six\"}\n";

typedef struct rig {
    ac_loop *loop;
    ac_engine *e;
} rig;

static void rig_open(rig *r)
{
    ac_error err = {0};
    r->loop = ac_loop_new();
    assert_non_null(r->loop);
    ac_engine_config cfg = {0};
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.seed = 7;
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
    assert_int_equal(ac_engine_add_tools(r->e, "builtin:calculator", &err), 0);
}

static void rig_close(rig *r)
{
    ac_engine_free(r->e);
    assert_int_equal(ac_loop_pending(r->loop), 0);
    ac_loop_free(r->loop);
}

static void settle(rig *r, ac_session *s)
{
    for (int i = 0; i < 2000 && !ac_session_settled(s); i++)
        ac_loop_run_once(r->loop, 20);
    assert_true(ac_session_settled(s));
    for (int i = 0; i < 5; i++) /* the end-of-turn commit timer */
        ac_loop_run_once(r->loop, 1);
    /* a commit on the loop (PostgreSQL) is done when its results came */
    struct ac_store_group *g = ac_session_store(s) ? ac_session_store(s)->group : NULL;
    for (int i = 0; i < 500 && g && (g->busy || g->n); i++)
        ac_loop_run_once(r->loop, 10);
    ac_loop_run_once(r->loop, 0); /* and its tasks ran */
}

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

static ac_store *open_store(const char *path, const char *holder, int64_t lease_ms,
                            uint64_t snap_every, int64_t max_bytes)
{
    ac_store_options o = {0};
    o.holder = holder;
    o.lease_ms = lease_ms;
    o.snapshot_every = snap_every;
    o.max_bytes = max_bytes;
    ac_error err;
    ac_store *st = ac_store_open(path, &o, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    return st;
}

static void test_file_mode_and_foreign_files(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "mode.db");
    ac_store *st = open_store(path, NULL, 0, 0, 0);
    ac_store_close(st);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    st = open_store(path, NULL, 0, 0, 0); /* a store opens again */
    ac_store_close(st);

    /* not a database: refused, left as it was */
    path_of(path, sizeof path, "text.db");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    const char junk[] = "this is not a database, it is a text file of some length......\n";
    for (int i = 0; i < 100; i++)
        fputs(junk, f);
    fclose(f);
    ac_error err;
    assert_null(ac_store_open(path, NULL, &err));
    assert_non_null(strstr(err.text, "not an agentc store"));
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, (off_t)(100 * strlen(junk)));

    /* a database of something else: refused, its table kept */
    path_of(path, sizeof path, "other.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    assert_null(ac_store_open(path, NULL, &err));
    assert_non_null(strstr(err.text, "something else"));
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT x FROM t", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    sqlite3_finalize(q);
    sqlite3_close(db);

    /* a store whose pages were damaged: a clear error, not a crash */
    path_of(path, sizeof path, "damaged.db");
    st = open_store(path, NULL, 0, 0, 0);
    ac_store_close(st);
    f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 0, SEEK_SET);
    fputs("garbage garbage garbage garbage garbage garbage garbage", f);
    fclose(f);
    assert_null(ac_store_open(path, NULL, &err));
    assert_non_null(strstr(err.text, "store"));

    /* a directory that cannot be created */
    assert_null(ac_store_open("/proc/self/no/such/dir/x.db", NULL, &err));
    assert_int_equal(err.code, AC_EIO);
    assert_non_null(strstr(err.text, "cannot create the directory"));
}

/* The application id of the SQLite file at path, -1 when it is not one. */
static long long app_id(const char *path)
{
    sqlite3 *db;
    long long id = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            id = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(db);
    return id;
}

/* A relative path that starts with "file:" is a file of that name, not an SQLite URI (that
 * would open another file, or memory, than the one created and locked). */
static void test_path_like_a_uri(void **state)
{
    (void)state;
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(tmpdir), 0);
    ac_error err;
    ac_store *st = ac_store_open("file:mem.db?mode=memory", NULL, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    ac_store_close(st);
    assert_true(app_id("./file:mem.db?mode=memory") > 0);
    st = open_store("plain.db", NULL, 0, 0, 0);
    ac_store_close(st);
    st = ac_store_open("file:plain.db", NULL, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    ac_store_close(st);
    assert_true(app_id("./file:plain.db") > 0);
    assert_int_equal(access("file:plain.db-holders", F_OK), 0);
    assert_int_equal(chdir(cwd), 0);
}

static void turn(rig *r, ac_session *s, const char *text)
{
    assert_true(ac_session_send(s, text) >= 0);
    settle(r, s);
}

static void test_continue_and_snapshot_equals_replay(void **state)
{
    (void)state;
    char path[512];
    test_store_where(path, sizeof path, "turns.db");
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 0, 8, 0);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "chat", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_ptr_equal(ac_session_store(s), st);
    turn(&r, s, "first");
    assert_string_equal(ac_session_answer(s), "answer one");
    turn(&r, s, "second");
    assert_string_equal(ac_session_answer(s), "answer two: 42");
    ac_session_free(s);
    rig_close(&r);
    ac_store_close(st);

    /* another process, later: the same conversation goes on, the script where it was */
    rig_open(&r);
    st = open_store(path, NULL, 0, 8, 0);
    s = ac_store_session(st, r.e, "chat", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_false(ac_store_session_resumed(s));
    assert_int_equal(ac_session_message_count(s), 6); /* u a, u a(call) tool a */
    turn(&r, s, "third");
    assert_string_equal(ac_session_answer(s), "answer three");
    turn(&r, s, "fourth");
    turn(&r, s, "fifth");
    assert_string_equal(ac_session_answer(s), "answer five");
    ac_session_free(s);

    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "chat", &info, &err), AC_OK);
    assert_true(info.at_rest);
    assert_true(info.snapshot_seq > 0);
    assert_true(info.snapshot_seq < info.events); /* a tail after the snapshot */
    assert_string_equal(info.title, "first");
    char *snap = ac_store_session_json(st, r.e, "chat", &err);
    char *full = ac_store_session_json_full(st, r.e, "chat", &err);
    assert_non_null(snap);
    assert_non_null(full);
    assert_string_equal(snap, full);
    assert_non_null(strstr(snap, "answer five"));
    free(snap);
    free(full);

    /* unknown ids */
    assert_null(ac_store_session(st, r.e, "nope", AC_STORE_MUST_EXIST, &err));
    assert_int_equal(err.code, AC_STORE_ENOENT);
    assert_int_equal(ac_store_info(st, "nope", &info, &err), AC_STORE_ENOENT);

    /* export: a journal with a header, events and steps; rm removes everything */
    char out[512];
    path_of(out, sizeof out, "chat.jsonl");
    assert_int_equal(ac_store_export(st, "chat", out, &err), AC_OK);
    struct stat sb;
    assert_int_equal(stat(out, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(ac_store_export(st, "chat", out, &err), AC_EIO); /* never overwritten */
    assert_int_equal(ac_store_rm(st, "chat", &err), AC_OK);
    assert_int_equal(ac_store_info(st, "chat", &info, &err), AC_STORE_ENOENT);
    ac_store_close(st);
    rig_close(&r);
}

/* An end-of-turn reply waits for the turn's commit: at the turn's end (the output's
 * finished) its events are not durable yet; the task handed to ac_store_when_durable runs
 * once they are, on the loop; one cancelled never runs. */
typedef struct durable_probe {
    ac_store *st;
    int taken, ran;
    uint64_t seq_at_end, stored_at_task;
    ac_loop_task task, other;
} durable_probe;

static durable_probe *probe_now;

static void probe_task(void *ud)
{
    durable_probe *p = ud;
    ac_store_session_info info;
    ac_error err;
    assert_int_equal(p->st->ops->info(p->st, "dur", &info, &err), AC_OK);
    p->stored_at_task = info.events;
    p->ran++;
}

static void never_task(void *ud)
{
    (void)ud;
    fail_msg("a cancelled task ran");
}

static void probe_finished(void *ud, ac_session *s)
{
    (void)ud;
    durable_probe *p = probe_now;
    ac_store_session_info info;
    ac_error err;
    assert_int_equal(p->st->ops->info(p->st, "dur", &info, &err), AC_OK);
    p->seq_at_end = info.events;
    p->task = (ac_loop_task){probe_task, p, NULL, 0};
    p->other = (ac_loop_task){never_task, p, NULL, 0};
    p->taken = ac_store_when_durable(s, &p->task);
    if (ac_store_when_durable(s, &p->other))
        ac_store_when_durable_cancel(s, &p->other);
}

static void test_when_durable(void **state)
{
    (void)state;
    rig r;
    r.loop = ac_loop_new();
    static ac_output out = {0};
    out.finished = probe_finished;
    ac_engine_config cfg = {0};
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.output = &out;
    ac_error err;
    r.e = ac_engine_new(&cfg, &err);
    assert_non_null(r.e);
    char path[1024];
    test_store_where(path, sizeof path, "durable.db");
    ac_store *st = open_store(path, "holder-D", 60000, 0, 0);
    durable_probe p = {st, 0, 0, 0, 0, {0}, {0}};
    probe_now = &p;
    ac_session *s = ac_store_session(st, r.e, "dur", 0, &err);
    assert_non_null(s);
    ac_session_send(s, "hello");
    settle(&r, s);
    assert_int_equal(p.taken, 1); /* the turn's last events were still buffered */
    assert_int_equal(p.ran, 1);
    ac_store_session_info info;
    assert_int_equal(st->ops->info(st, "dur", &info, &err), AC_OK);
    assert_true(p.seq_at_end < info.events);
    assert_int_equal(p.stored_at_task, info.events); /* all durable when the task ran */
    ac_session_free(s);
    ac_store_close(st);
    rig_close(&r);
}

static void test_leases(void **state)
{
    (void)state;
    char path[512];
    test_store_where(path, sizeof path, "lease.db");
    rig r;
    rig_open(&r);
    ac_store *a = open_store(path, "holder-A", 60000, 0, 0);
    ac_store *b = open_store(path, "holder-B", 60000, 0, 0);
    ac_error err;
    ac_session *sa = ac_store_session(a, r.e, "shared", 0, &err);
    assert_non_null(sa);
    assert_null(ac_store_session(b, r.e, "shared", 0, &err));
    assert_int_equal(err.code, AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "holder-A"));
    assert_int_equal(ac_store_rm(b, "shared", &err), AC_STORE_EBUSY);
    ac_session_free(sa); /* releases */
    ac_session *sb = ac_store_session(b, r.e, "shared", 0, &err);
    if (!sb)
        fail_msg("%s", err.text);
    ac_session_free(sb);
    ac_store_close(a);
    ac_store_close(b);

    /* a live holder renews its lease while it waits: still refused after several leases */
    a = open_store(path, "holder-A", 600, 0, 0);
    b = open_store(path, "holder-B", 60000, 0, 0);
    sa = ac_store_session(a, r.e, "renewed", 0, &err);
    assert_non_null(sa);
    for (int i = 0; i < 100; i++)
        ac_loop_run_once(r.loop, 20); /* about 2 s: three leases */
    assert_null(ac_store_session(b, r.e, "renewed", 0, &err));
    assert_int_equal(err.code, AC_STORE_EBUSY);
    ac_session_free(sa);
    ac_store_close(a);
    ac_store_close(b);

    /* a lease that expired (its holder stopped renewing) is taken; the old holder's next
     * commit then fails instead of writing over the new one's */
    a = open_store(path, "holder-A", 100, 0, 0);
    b = open_store(path, "holder-B", 60000, 0, 0);
    sa = ac_store_session(a, r.e, "shared", 0, &err);
    assert_non_null(sa);
    usleep(250 * 1000);
    sb = ac_store_session(b, r.e, "shared", 0, &err);
    if (!sb)
        fail_msg("%s", err.text);
    ac_session_send(sa, "late");
    settle(&r, sa);
    assert_string_equal(ac_session_status_name(ac_session_status(sa)), "ended");
    assert_non_null(strstr(ac_session_error(sa), "holder-B"));
    ac_session_free(sa);
    ac_session_free(sb);
    ac_store_close(a);
    ac_store_close(b);
    rig_close(&r);
}

static void test_full_store(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "full.db");
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 0, 1000000, 96 * 1024);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "big", 0, &err);
    assert_non_null(s);
    static char big[8192];
    memset(big, 'x', sizeof big - 1);
    int turns_ok = 0;
    for (int i = 0; i < 40 && ac_session_status(s) != AC_SESSION_ENDED; i++) {
        ac_session_send(s, big);
        settle(&r, s);
        if (ac_session_status(s) != AC_SESSION_ENDED)
            turns_ok++;
    }
    assert_int_equal(ac_session_status(s), AC_SESSION_ENDED);
    assert_non_null(strstr(ac_session_error(s), "full"));
    assert_true(turns_ok >= 1);
    ac_session_free(s);
    ac_store_close(st);
    /* what was committed is there, whole */
    st = open_store(path, NULL, 0, 0, 0);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "big", &info, &err), AC_OK);
    assert_true(info.events >= 3);
    char *j = ac_store_session_json(st, r.e, "big", &err);
    if (!j)
        fail_msg("%s", err.text);
    free(j);
    ac_store_close(st);
    rig_close(&r);
}

/* A process that created a session and stopped before its first commit left a row without
 * events: the next open makes the session anew, and it runs. */
static void test_created_then_killed(void **state)
{
    (void)state;
    char path[512];
    path_of(path, sizeof path, "empty.db");
    ac_store *st = open_store(path, NULL, 0, 0, 0);
    ac_store_close(st);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO sessions(id, spec_hash, created_ms, updated_ms, "
                                  "holder, lease_until) VALUES('e', 'x', 1, 1, 'agentc 1@gone', 1)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    rig r;
    rig_open(&r);
    st = open_store(path, NULL, 0, 0, 0);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "e", 0, &err);
    if (!s)
        fail_msg("%s", err.text);
    turn(&r, s, "hello");
    assert_string_equal(ac_session_answer(s), "answer one");
    ac_session_free(s);
    ac_store_close(st);
    rig_close(&r);
}

typedef struct poster {
    ac_session *s;
} poster;

static void *post_thread(void *ud)
{
    poster *p = ud;
    ac_session_post_threadsafe(p->s, "user_message", json_pack("{s:s}", "text", "from a thread"),
                               0);
    return NULL;
}

/* ac_session_post_threadsafe on a stored session: the event is applied on the loop thread,
 * committed, and there after a reload. */
static void test_threadsafe_post(void **state)
{
    (void)state;
    char path[512];
    test_store_where(path, sizeof path, "thread.db");
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 0, 0, 0);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "t", 0, &err);
    assert_non_null(s);
    poster p = {s};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, post_thread, &p), 0);
    pthread_join(th, NULL);
    for (int i = 0; i < 200 && strcmp(ac_session_answer(s), "answer one") != 0; i++)
        ac_loop_run_once(r.loop, 20);
    settle(&r, s);
    assert_string_equal(ac_session_answer(s), "answer one");
    ac_session_free(s);
    char *j = ac_store_session_json(st, r.e, "t", &err);
    assert_non_null(j);
    assert_non_null(strstr(j, "from a thread"));
    free(j);
    ac_store_close(st);
    rig_close(&r);
}

typedef struct takeover {
    ac_store *st;
    ac_engine *e;
    ac_session *s;
    ac_error err;
} takeover;

static void take_over(void *ud)
{
    takeover *t = ud;
    t->s = ac_store_session(t->st, t->e, "slow", 0, &t->err);
}

/* A session stopped in TOOL_EXECUTING (its holder stopped renewing: a process that hangs, or
 * died on another host) is taken over from inside a loop callback (as a server would): the call
 * started without a result is answered "interrupted" and not run again; the turn finishes. */
static void test_takeover_mid_tool_in_callback(void **state)
{
    (void)state;
    char path[512], tools[512], log[512];
    test_store_where(path, sizeof path, "takeover.db");
    path_of(tools, sizeof tools, "slow_tools.json");
    path_of(log, sizeof log, "slow.log");
    FILE *f = fopen(tools, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"tools\": [{\"name\": \"slow\", \"description\": \"slow\", \"command\": [\"sh\", "
            "\"-c\", \"cat >/dev/null; echo run >>'%s'; sleep 3; echo done\"]}]}\n",
            log);
    fclose(f);
    static const char *slow_turns =
        "{\"tool_calls\":[{\"id\":\"s1\",\"name\":\"slow\",\"arguments\":\"{}\"}]}\n"
        "{\"content\":\"after the tool\"}\n";
    ac_error err;
    /* A runs on loop a_loop, which stops turning once its tool runs (a hung process that
     * renews nothing); B takes over on its own loop */
    ac_loop *a_loop = ac_loop_new(), *loop = ac_loop_new();
    ac_engine_config cfg = {0};
    cfg.loop = a_loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = slow_turns;
    ac_engine *ea = ac_engine_new(&cfg, &err);
    assert_non_null(ea);
    assert_int_equal(ac_engine_add_tools(ea, tools, &err), 0);
    cfg.loop = loop;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    assert_int_equal(ac_engine_add_tools(e, tools, &err), 0);
    ac_store *a = open_store(path, "holder-A", 150, 0, 0);
    ac_session *sa = ac_store_session(a, ea, "slow", 0, &err);
    assert_non_null(sa);
    ac_session_send(sa, "go");
    for (int i = 0; i < 200; i++) {
        const char *st = ac_session_state(sa, "process");
        if (st && !strcmp(st, "TOOL_EXECUTING") && access(log, F_OK) == 0)
            break;
        ac_loop_run_once(a_loop, 10);
    }
    assert_int_equal(access(log, F_OK), 0);
    usleep(400 * 1000); /* A renews nothing meanwhile: its lease expires */
    takeover t = {open_store(path, "holder-B", 60000, 0, 0), e, NULL, {0}};
    ac_loop_timer(loop, 0, take_over, &t);
    for (int i = 0; i < 100 && !t.s && !t.err.text[0]; i++)
        ac_loop_run_once(loop, 10);
    if (!t.s)
        fail_msg("take over: %s", t.err.text);
    assert_true(ac_store_session_resumed(t.s));
    for (int i = 0; i < 500 && strcmp(ac_session_answer(t.s), "after the tool") != 0; i++)
        ac_loop_run_once(loop, 10);
    assert_string_equal(ac_session_answer(t.s), "after the tool");
    char *j = ac_session_to_json(t.s);
    assert_non_null(strstr(j, "interrupted: the tool may or may not have completed"));
    free(j);
    ac_session_free(t.s);
    ac_session_free(sa); /* its tool is killed; its lease was lost */
    ac_store_close(t.st);
    ac_store_close(a);
    ac_engine_free(e);
    ac_engine_free(ea);
    ac_loop_free(loop);
    ac_loop_free(a_loop);
    f = fopen(log, "r");
    char line[64];
    int runs = 0;
    while (f && fgets(line, sizeof line, f))
        runs++;
    if (f)
        fclose(f);
    assert_int_equal(runs, 1); /* never run again */
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(test_tmpdir_make("agentc_store"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_continue_and_snapshot_equals_replay),
        cmocka_unit_test(test_leases),
        cmocka_unit_test(test_when_durable),
        cmocka_unit_test(test_threadsafe_post),
        cmocka_unit_test(test_takeover_mid_tool_in_callback),
        /* SQLite's files only */
        cmocka_unit_test(test_file_mode_and_foreign_files),
        cmocka_unit_test(test_path_like_a_uri),
        cmocka_unit_test(test_full_store),
        cmocka_unit_test(test_created_then_killed),
    };
    /* with AGENTC_TEST_PG (store_sqlite_pg): the tests of any backend, against PostgreSQL */
    size_t n = test_store_pg() ? 4 : sizeof tests / sizeof tests[0];
    return _cmocka_run_group_tests("store", tests, n, setup, test_tmpdir_teardown);
}
