/*
 * test_store_lease.c - the store interface's promises (store_int.h): a group commit
 * scopes one session's failure to that session (a row that conflicts with its events,
 * injected through another connection: the other sessions of the same transaction are
 * committed); leases are timed by the database's clock (SQLite's clock moved through a
 * VFS that shifts it; the caller's clock unchanged); holders are "agentc RANDOM:PID@HOST";
 * a holder whose lease runs is alive, one whose process ended (a zombie: kill(pid, 0)
 * still succeeds) frees its sessions at once.
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "io/loop.h"
#include "../support/test_tmpdir.h"

/* ---- a VFS whose clock is the default one shifted by skew_ms ---- */
static sqlite3_vfs shim, *real_vfs;
static sqlite3_int64 skew_ms;

static int shim_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
    (void)v;
    int rc = real_vfs->xCurrentTimeInt64(real_vfs, t);
    *t += skew_ms;
    return rc;
}

static int shim_time(sqlite3_vfs *v, double *t)
{
    (void)v;
    int rc = real_vfs->xCurrentTime(real_vfs, t);
    *t += (double)skew_ms / 86400000.0;
    return rc;
}

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
    cfg.script_text = "{\"content\":\"one\"}\n{\"content\":\"two\"}\n{\"content\":\"three\"}\n";
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
}

static void rig_close(rig *r)
{
    ac_engine_free(r->e);
    ac_loop_free(r->loop);
}

static void turns(rig *r, int n)
{
    for (int i = 0; i < n; i++)
        ac_loop_run_once(r->loop, 1);
}

static ac_store *open_store(const char *path, const char *holder, int64_t lease_ms)
{
    ac_store_options o = {0};
    o.holder = holder;
    o.lease_ms = lease_ms;
    ac_error err;
    ac_store *st = ac_store_open(path, &o, &err);
    if (!st)
        fail_msg("store: %s", err.text);
    return st;
}

static uint64_t events_of(ac_store *st, const char *id)
{
    ac_store_session_info info;
    ac_error err;
    assert_int_equal(ac_store_info(st, id, &info, &err), AC_OK);
    return info.events;
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_exec(db, text, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", text, msg);
    sqlite3_close(db);
}

static int64_t sql_int(const char *path, const char *text)
{
    sqlite3 *db;
    sqlite3_stmt *q = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, text, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* Three sessions commit in one loop turn; the middle one's events conflict with a row put
 * there by another connection: it fails alone, the other two are committed. */
static void test_group_failure_is_one_sessions(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/group.db", tmpdir);
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 60000);
    ac_error err;
    const char *ids[3] = {"a", "b", "c"};
    ac_session *s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = ac_store_session(st, r.e, ids[i], 0, &err);
        if (!s[i])
            fail_msg("%s", err.text);
    }
    turns(&r, 3);
    uint64_t before[3];
    for (int i = 0; i < 3; i++)
        before[i] = events_of(st, ids[i]);
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            ac_session_post(s[i], "user_message", json_pack("{s:s}", "text", "hello"), 0), AC_OK);
    /* the next event of "b" is already there: its commit's INSERT fails on the index */
    char text[256];
    snprintf(text, sizeof text,
             "INSERT INTO events(session, n, t_ms, ev) VALUES('b', %llu, 0, 'injected')",
             (unsigned long long)before[1] + 1);
    sql(path, text);
    ac_loop_run_once(r.loop, 1); /* the group commit of the three */
    assert_true(events_of(st, "a") > before[0]);
    assert_true(events_of(st, "c") > before[2]);
    assert_int_equal(events_of(st, "b"), before[1]); /* its row rolled back with it */
    snprintf(text, sizeof text, "SELECT count(*) FROM events WHERE session = 'b' AND n > %llu",
             (unsigned long long)before[1]);
    assert_int_equal(sql_int(path, text), 1); /* the injected row only */
    turns(&r, 50);
    assert_string_equal(ac_session_answer(s[0]), "one");
    assert_non_null(ac_session_error(s[1])); /* the store's error, the session's alone */
    for (int i = 0; i < 3; i++)
        ac_session_free(s[i]);
    ac_store_close(st);
    rig_close(&r);
}

/* The lease's expiry is written and judged in the database's time. */
static void test_lease_by_database_clock(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/clock.db", tmpdir);
    rig r;
    rig_open(&r);
    skew_ms = 3600000; /* the database's clock an hour ahead of ours */
    ac_store *a = open_store(path, "holder-A", 60000);
    ac_error err;
    ac_session *sa = ac_store_session(a, r.e, "k", 0, &err);
    if (!sa)
        fail_msg("%s", err.text);
    turns(&r, 3);
    int64_t ahead = sql_int(path, "SELECT lease_until FROM sessions") - ac_wall_now_ms();
    assert_true(ahead > 3600000 + 60000 - 5000 && ahead < 3600000 + 60000 + 5000);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(a, "k", &info, &err), AC_OK);
    assert_string_equal(info.holder, "holder-A");

    /* another holder: refused while the database says the lease runs */
    ac_store *b = open_store(path, "holder-B", 60000);
    assert_null(ac_store_session(b, r.e, "k", 0, &err));
    assert_int_equal(err.code, AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "holder-A"));
    /* the database's clock passes the lease's end (ours does not move): it is free */
    skew_ms += 61000;
    assert_int_equal(ac_store_info(b, "k", &info, &err), AC_OK);
    assert_string_equal(info.holder, "");
    ac_session *sb = ac_store_session(b, r.e, "k", AC_STORE_MUST_EXIST, &err);
    if (!sb)
        fail_msg("%s", err.text);
    ac_session_free(sb);
    ac_session_free(sa); /* its last commit finds the lease lost: nothing written */
    skew_ms = 0;
    ac_store_close(a);
    ac_store_close(b);
    rig_close(&r);
}

/* The child: opens the store with its own holder name, creates "z", signals, waits. */
static void child(const char *path, int ready_fd, int hold_fd)
{
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 60000);
    ac_error err;
    ac_session *s = ac_store_session(st, r.e, "z", 0, &err);
    if (!s)
        _exit(2);
    turns(&r, 5);
    char c = 'r';
    if (write(ready_fd, &c, 1) != 1)
        _exit(3);
    (void)!read(hold_fd, &c, 1); /* until killed */
    _exit(0);
}

/* A live holder keeps its session; once its process is gone (not reaped: a zombie, as in a
 * container without an init process) the session is taken at once. */
static void test_gone_holder(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/gone.db", tmpdir);
    int ready[2], hold[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(hold), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        child(path, ready[1], hold[0]);
    struct pollfd p = {ready[0], POLLIN, 0};
    assert_int_equal(poll(&p, 1, 10000), 1);
    rig r;
    rig_open(&r);
    ac_store *st = open_store(path, NULL, 60000);
    ac_store_session_info info;
    ac_error err;
    assert_int_equal(ac_store_info(st, "z", &info, &err), AC_OK);
    /* the child's holder: "agentc RANDOM:PID@HOST", not ours */
    char prefix[64];
    snprintf(prefix, sizeof prefix, ":%ld@", (long)pid);
    assert_non_null(strstr(info.holder, prefix));
    assert_int_equal(strncmp(info.holder, "agentc ", 7), 0);
    assert_int_equal(strspn(info.holder + 7, "0123456789abcdef"), 16);
    assert_null(ac_store_session(st, r.e, "z", 0, &err));
    assert_int_equal(err.code, AC_STORE_EBUSY);

    kill(pid, SIGKILL);
    /* the kernel drops its lock as it exits: the session shows no holder, its lease free */
    for (int i = 0; i < 200 && info.holder[0]; i++) {
        usleep(10000);
        assert_int_equal(ac_store_info(st, "z", &info, &err), AC_OK);
    }
    assert_string_equal(info.holder, "");
    ac_session *s = ac_store_session(st, r.e, "z", AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("the dead holder's session stayed busy: %s", err.text);
    assert_int_equal(kill(pid, 0), 0); /* a zombie: a PID check would call it alive */
    assert_int_equal(ac_store_info(st, "z", &info, &err), AC_OK);
    assert_string_not_equal(info.holder, prefix);
    assert_null(strstr(info.holder, prefix));
    ac_session_free(s);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    close(ready[0]), close(ready[1]), close(hold[0]), close(hold[1]);
    ac_store_close(st);
    rig_close(&r);
}

static int setup(void **state)
{
    (void)state;
    real_vfs = sqlite3_vfs_find(NULL);
    shim = *real_vfs;
    shim.zName = "skewed";
    shim.xCurrentTime = shim_time;
    shim.xCurrentTimeInt64 = shim_time64;
    assert_int_equal(sqlite3_vfs_register(&shim, 1), SQLITE_OK);
    assert_non_null(test_tmpdir_make("agentc_store_lease"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_failure_is_one_sessions),
        cmocka_unit_test(test_lease_by_database_clock),
        cmocka_unit_test(test_gone_holder),
    };
    return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
