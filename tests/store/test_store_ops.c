/*
 * test_store_ops.c - the store interface's conformance suite (store_int.h), the same file
 * for every backend: SQLite (a file in a scratch folder) by default, PostgreSQL when
 * AGENTC_TEST_PG names a database URI (each run in a schema of its own). Every operation's
 * contract; a group commit's failure scoped to its session (a lease another holder has, a
 * row to create that exists, an event that conflicts: the database's error inside the
 * transaction); leases ended by the database's clock; a zombie writer (its lease expired
 * and taken by another holder) writes nothing; a holder whose process is stopped past its
 * lease (SIGSTOP) finds its writes refused when it resumes, the session intact; a holder
 * killed (kill -9) loses its lease at once; workers join, are listed and leave; the sessions
 * a gone worker left mid-turn are claimed, never by two claimers at once. The asynchronous
 * commit (commit_start): its completion a task of the loop (PostgreSQL) or at once (SQLite),
 * commits done in the order started, a failed member alone, and (PostgreSQL) the database
 * restarted mid-commit: a clear error for every member, nothing half-written, the next commit
 * connected again. A store copied into another of the other backend and back reads as the
 * original. (PostgreSQL) A migration waits for the leases of older holders, bounded.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "store/store_int.h"
#include "io/loop.h"
#include "../support/test_tmpdir.h"
#include "../support/test_store_where.h"

static char where[1024]; /* the store every test opens */

static ac_store *open_as(const char *holder, int64_t lease_ms)
{
    ac_store_options o = {0};
    o.holder = holder;
    o.lease_ms = lease_ms;
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    if (!st)
        fail_msg("store %s: %s", where, err.text);
    return st;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static ac_store_commit commit_of(const char *id, const char *holder, const ac_store_event *evs,
                                 size_t n)
{
    ac_store_commit c = {0};
    c.id = id;
    c.holder = holder;
    c.attempt = 1; /* the creator's */
    c.lease_ms = 60000;
    c.evs = evs;
    c.n_evs = n;
    c.status = "idle";
    c.at_rest = 1;
    return c;
}

static uint64_t events_of(ac_store *st, const char *id)
{
    ac_store_session_info info;
    ac_error err;
    assert_int_equal(st->ops->info(st, id, &info, &err), AC_OK);
    return info.events;
}

typedef struct seen {
    int n;
    char text[4096];
} seen;

static int see_event(void *ud, const ac_store_event *e)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%llu:%s:%s:%s;", (unsigned long long)e->n, e->ev,
             e->data ? e->data : "NULL", e->steps ? e->steps : "NULL");
    s->n++;
    return 0;
}

static int see_call(void *ud, const char *id, const char *name, int64_t started, int64_t finished,
                    int ok)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%s:%s:%d:%d;", id, name, started > 0,
             finished > 0 ? ok : -1);
    s->n++;
    return 0;
}

static int see_row(void *ud, const ac_store_session_info *info)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%s;", info->id);
    s->n++;
    return 0;
}

/* create, info, list, params, agent, commit (events, late steps, tool calls, snapshot,
 * title, agent), events, snapshot_get, tool_calls, note, notes, forget, fork, rm. */
static void test_every_op(void **state)
{
    (void)state;
    ac_store *st = open_as("holder-A", 60000);
    const ac_store_ops *o = st->ops;
    ac_error err;
    assert_int_equal(o->create(st, "s", "hash1", "{\"p\":1}", "holder-A", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "s", "hash1", NULL, "holder-A", 60000, &err), AC_EINVAL);
    ac_store_session_info info;
    assert_int_equal(o->info(st, "s", &info, &err), AC_OK);
    assert_string_equal(info.spec_hash, "hash1");
    assert_string_equal(info.holder, "holder-A");
    assert_true(info.lease_expires_ms >= info.updated_ms + 59000);
    assert_int_equal(o->info(st, "none", &info, &err), AC_STORE_ENOENT);
    char *txt = NULL;
    assert_int_equal(o->params(st, "s", &txt, &err), AC_OK);
    assert_string_equal(txt, "{\"p\":1}");
    free(txt);
    assert_int_equal(o->params(st, "none", &txt, &err), AC_STORE_ENOENT);
    assert_int_equal(o->agent(st, "s", &txt, &err), AC_OK);
    assert_null(txt);

    ac_store_event evs[3] = {{1, 10, "spawn", "{\"a\":\"é\"}", NULL},
                             {2, 20, "user_message", NULL, "[1]"},
                             {3, 30, "done", "{}", NULL}};
    ac_store_event late = {1, 0, NULL, NULL, "[\"late\"]"};
    const char *started[] = {"c1", "c2"}, *names[] = {"sh", "read"};
    ac_store_commit c = commit_of("s", "holder-A", evs, 3);
    c.late = &late;
    c.n_late = 1;
    c.started = started;
    c.started_names = names;
    c.n_started = 2;
    c.title = "a title";
    c.agent = "{\"name\":\"x\"}";
    c.snapshot = "{\"snap\":2}";
    c.snapshot_n = 2;
    assert_int_equal(o->commit(st, &c, &err), AC_OK);
    const char *fin[] = {"c1"};
    int fin_ok[] = {1};
    ac_store_commit c2 = commit_of("s", "holder-A", NULL, 0);
    c2.finished = fin;
    c2.finished_ok = fin_ok;
    c2.n_finished = 1;
    assert_int_equal(o->commit(st, &c2, &err), AC_OK);

    seen s = {0};
    assert_int_equal(o->events(st, "s", 1, see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "2:user_message:NULL:[1];3:done:{}:NULL;");
    memset(&s, 0, sizeof s);
    assert_int_equal(o->events(st, "s", 0, see_event, &s, &err), AC_OK);
    assert_int_equal(s.n, 3);
    assert_non_null(strstr(s.text, "1:spawn:{\"a\":\"é\"}:[\"late\"];"));
    assert_int_equal(o->info(st, "s", &info, &err), AC_OK);
    assert_int_equal(info.events, 3);
    assert_int_equal(info.snapshot_seq, 2);
    assert_string_equal(info.title, "a title");
    assert_int_equal(o->agent(st, "s", &txt, &err), AC_OK);
    assert_string_equal(txt, "{\"name\":\"x\"}");
    free(txt);
    uint64_t n = 0;
    assert_int_equal(o->snapshot_get(st, "s", UINT64_MAX, &n, &txt, &err), AC_OK);
    assert_int_equal(n, 2);
    assert_string_equal(txt, "{\"snap\":2}");
    free(txt);
    assert_int_equal(o->snapshot_get(st, "s", 1, &n, &txt, &err), AC_OK);
    assert_null(txt);
    memset(&s, 0, sizeof s);
    assert_int_equal(o->tool_calls(st, "s", see_call, &s, &err), AC_OK);
    assert_string_equal(s.text, "c1:sh:1:1;c2:read:1:-1;");

    assert_int_equal(o->note(st, "s", 3, 40, "spec_changed", "{\"k\":1}", &err), AC_OK);
    memset(&s, 0, sizeof s);
    assert_int_equal(o->notes(st, "s", see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "3:spec_changed:{\"k\":1}:NULL;");

    sleep_ms(5); /* the fork's row is the most recently updated */
    ac_store_fork_row f = {"s", "t", 2, "hash1", "idle", 1, NULL, "{\"snap\":\"t\"}", 50, "{}"};
    assert_int_equal(o->fork(st, &f, &err), AC_OK);
    assert_int_equal(o->fork(st, &f, &err), AC_EINVAL);
    ac_store_fork_row g = f;
    g.from = "none";
    g.to = "u";
    assert_int_equal(o->fork(st, &g, &err), AC_STORE_ENOENT);
    assert_int_equal(o->info(st, "u", &info, &err), AC_STORE_ENOENT);
    assert_int_equal(events_of(st, "t"), 2);
    assert_int_equal(o->info(st, "t", &info, &err), AC_OK);
    assert_string_equal(info.holder, "");
    memset(&s, 0, sizeof s);
    assert_int_equal(o->notes(st, "t", see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "2:forked_from:{}:NULL;");

    assert_int_equal(o->forget(st, "s", 2, &err), AC_OK);
    memset(&s, 0, sizeof s);
    assert_int_equal(o->events(st, "s", 0, see_event, &s, &err), AC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(events_of(st, "s"), 3); /* the row's count unchanged */

    memset(&s, 0, sizeof s);
    assert_int_equal(o->list(st, see_row, &s, &err), AC_OK);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.text, "t;s;"); /* most recently updated first */
    assert_int_equal(o->rm(st, "s", "holder-A", 0, &err), AC_OK);
    assert_int_equal(o->rm(st, "s", "holder-A", 0, &err), AC_STORE_ENOENT);
    assert_int_equal(o->rm(st, "t", "holder-A", 0, &err), AC_OK);
    ac_store_close(st);
}

typedef struct kept {
    const ac_store_event *want;
    size_t n, seen;
} kept;

static int same_event(void *ud, const ac_store_event *e)
{
    kept *k = ud;
    assert_true(k->seen < k->n);
    const ac_store_event *w = &k->want[k->seen++];
    assert_int_equal(e->n, w->n);
    assert_int_equal(e->t_ms, w->t_ms);
    assert_string_equal(e->ev, w->ev);
    if (w->data)
        assert_string_equal(e->data, w->data);
    else
        assert_null(e->data);
    if (w->steps)
        assert_string_equal(e->steps, w->steps);
    else
        assert_null(e->steps);
    return 0;
}

/* The events of one commit come back byte for byte: quotes, backslashes, braces, commas, the
 * text "NULL" and an empty text told apart from no data, other scripts. */
static void test_event_text_kept(void **state)
{
    (void)state;
    ac_store *st = open_as("holder-A", 60000);
    ac_error err;
    assert_int_equal(st->ops->create(st, "x", "h", NULL, "holder-A", 60000, &err), AC_OK);
    ac_store_event evs[] = {
        {1, -5, "a\"b", "{\"q\":\"a\\\"b\\\\c,{}\"}", "[\"\\\\\"]"},
        {2, 0, "NULL", "NULL", ""},
        {3, 9007199254740993LL, "e", "", NULL},
        {4, 1, "{x,y}", NULL, "\"NULL\""},
        {5, 2, "\u00e9\u4e2d\U0001f600", "  spaces  ", " "},
    };
    ac_store_commit c = commit_of("x", "holder-A", evs, 5);
    assert_int_equal(st->ops->commit(st, &c, &err), AC_OK);
    kept k = {evs, 5, 0};
    assert_int_equal(st->ops->events(st, "x", 0, same_event, &k, &err), AC_OK);
    assert_int_equal(k.seen, 5);
    ac_store_close(st);
}

/* Four sessions commit in one transaction; three fail, each alone: one whose lease another
 * holder has, one to create that exists, one whose events conflict with a stored one (the
 * database's error inside the transaction: on PostgreSQL it aborts the transaction but for
 * the savepoint). The fourth is committed. */
static void test_group_failure_scope(void **state)
{
    (void)state;
    ac_store *st = open_as("holder-A", 60000);
    ac_store *other = open_as("holder-B", 60000); /* holder-B is alive */
    const ac_store_ops *o = st->ops;
    ac_error err;
    assert_int_equal(o->create(st, "ga", "h", NULL, "holder-A", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "gb", "h", NULL, "holder-B", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "gc", "h", NULL, "holder-A", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "gd", "h", NULL, "holder-A", 60000, &err), AC_OK);
    ac_store_event one = {1, 1, "spawn", "{}", NULL};
    ac_store_commit first = commit_of("gd", "holder-A", &one, 1);
    assert_int_equal(o->commit(st, &first, &err), AC_OK);

    ac_store_event ev1[2] = {{1, 1, "spawn", "{}", NULL}, {2, 2, "user_message", "{}", NULL}};
    ac_store_commit c[4] = {
        commit_of("ga", "holder-A", ev1, 2), commit_of("gb", "holder-A", ev1, 2),
        commit_of("gc", "holder-A", ev1, 2), commit_of("gd", "holder-A", ev1, 2)};
    c[2].create = 1; /* it exists */
    c[2].create_hash = "h";
    int rcs[4] = {-1, -1, -1, -1};
    ac_error errs[4];
    assert_int_equal(o->commit_many(st, c, 4, rcs, errs), AC_OK);
    assert_int_equal(rcs[0], AC_OK);
    assert_int_equal(rcs[1], AC_STORE_EBUSY);
    assert_non_null(strstr(errs[1].text, "holder-B"));
    assert_int_equal(rcs[2], AC_EINVAL);
    assert_int_equal(rcs[3], AC_EIO); /* event 1 is there */
    assert_int_equal(events_of(st, "ga"), 2);
    assert_int_equal(events_of(st, "gb"), 0);
    assert_int_equal(events_of(st, "gc"), 0);
    assert_int_equal(events_of(st, "gd"), 1); /* its row rolled back with its events */
    ac_store_session_info info;
    assert_int_equal(o->info(st, "gd", &info, &err), AC_OK);
    assert_string_equal(info.status, "idle");
    /* the store goes on: the next commit of the failed one works */
    ac_store_event ev2 = {2, 2, "user_message", "{}", NULL};
    ac_store_commit next = commit_of("gd", "holder-A", &ev2, 1);
    assert_int_equal(o->commit(st, &next, &err), AC_OK);
    assert_int_equal(events_of(st, "gd"), 2);
    ac_store_close(other);
    ac_store_close(st);
}

/* A lease's length is counted by the database from its own now: the expiry it reports is
 * its update time plus the length; it ends when the database says so. */
static void test_lease_expiry(void **state)
{
    (void)state;
    ac_store *a = open_as("holder-A", 1500), *b = open_as("holder-B", 60000);
    ac_error err;
    assert_int_equal(a->ops->create(a, "l", "h", NULL, "holder-A", 1500, &err), AC_OK);
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "l", &info, &err), AC_OK);
    assert_string_equal(info.holder, "holder-A");
    int64_t len = info.lease_expires_ms - info.updated_ms;
    assert_true(len >= 1490 && len <= 1600);
    assert_int_equal(b->ops->lease_acquire(b, "l", "holder-B", 60000, NULL, &err), AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "holder-A"));
    for (int i = 0; i < 250 && info.holder[0]; i++) { /* 5 s at most */
        sleep_ms(20);
        assert_int_equal(b->ops->info(b, "l", &info, &err), AC_OK);
    }
    assert_string_equal(info.holder, "");
    assert_int_equal(b->ops->lease_acquire(b, "l", "holder-B", 60000, NULL, &err), AC_OK);
    assert_int_equal(a->ops->lease_acquire(a, "l", "holder-A", 1500, NULL, &err), AC_STORE_EBUSY);
    assert_int_equal(b->ops->lease_release(b, "l", "holder-B", 0, &err), AC_OK);
    assert_int_equal(a->ops->lease_acquire(a, "l", "holder-A", 1500, NULL, &err), AC_OK);
    ac_store_close(a);
    ac_store_close(b);
}

/* A holder whose lease expired and was taken writes nothing: not its events, not its row,
 * not its release; the new holder's writes go on. */
static void test_zombie_writer(void **state)
{
    (void)state;
    ac_store *a = open_as("holder-A", 200), *b = open_as("holder-B", 60000);
    ac_error err;
    assert_int_equal(a->ops->create(a, "z", "h", NULL, "holder-A", 200, &err), AC_OK);
    ac_store_event e1 = {1, 1, "spawn", "{}", NULL};
    ac_store_commit c = commit_of("z", "holder-A", &e1, 1);
    c.lease_ms = 200;
    assert_int_equal(a->ops->commit(a, &c, &err), AC_OK);
    sleep_ms(400);
    int64_t taken = 0;
    assert_int_equal(b->ops->lease_acquire(b, "z", "holder-B", 60000, &taken, &err), AC_OK);
    assert_int_equal(taken, 2);
    /* the new holder wrote event 2 already: the zombie's event 2 would conflict, and its
     * commit still says whose lease it is */
    ac_store_event e2b = {2, 3, "user_message", "{}", NULL};
    ac_store_commit ok = commit_of("z", "holder-B", &e2b, 1);
    ok.attempt = taken;
    assert_int_equal(b->ops->commit(b, &ok, &err), AC_OK);
    ac_store_event e2 = {2, 2, "zombie", "{}", NULL};
    ac_store_commit late = commit_of("z", "holder-A", &e2, 1);
    late.status = "failed";
    late.release = 1;
    assert_int_equal(a->ops->commit(a, &late, &err), AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "holder-B"));
    int rc = -1;
    ac_error errs[1];
    assert_int_equal(a->ops->commit_many(a, &late, 1, &rc, errs), AC_OK);
    assert_int_equal(rc, AC_STORE_EBUSY);
    assert_int_equal(a->ops->rm(a, "z", "holder-A", 0, &err), AC_STORE_EBUSY);
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "z", &info, &err), AC_OK);
    assert_int_equal(info.events, 2);
    assert_string_equal(info.holder, "holder-B");
    assert_string_equal(info.status, "idle");
    seen s = {0};
    assert_int_equal(b->ops->events(b, "z", 0, see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "1:spawn:{}:NULL;2:user_message:{}:NULL;");
    ac_store_close(a);
    ac_store_close(b);
}

/* The child: holds "p" with a short lease, then (stopped and continued by the parent)
 * commits an event: exits 0 when its write was refused, 1 when it went through. */
static void stopped_child(int ready_fd)
{
    ac_store *st = open_as("holder-P", 300);
    ac_error err;
    if (st->ops->create(st, "p", "h", NULL, "holder-P", 300, &err) != AC_OK)
        _exit(2);
    char k = 'r';
    if (write(ready_fd, &k, 1) != 1)
        _exit(3);
    raise(SIGSTOP); /* the parent lets the lease pass, takes it, continues us */
    ac_store_event e = {1, 1, "zombie", "{}", NULL};
    ac_store_commit c = commit_of("p", "holder-P", &e, 1);
    int rc = st->ops->commit(st, &c, &err);
    ac_store_close(st);
    _exit(rc == AC_STORE_EBUSY ? 0 : 1);
}

/* A process stopped (SIGSTOP) past its lease, its session taken meanwhile: resumed, its
 * write is refused and the session is as the new holder left it. */
static void test_stopped_process(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        stopped_child(ready[1]);
    char k;
    assert_int_equal(read(ready[0], &k, 1), 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    sleep_ms(500);
    ac_store *b = open_as("holder-B", 60000);
    ac_error err;
    assert_int_equal(b->ops->lease_acquire(b, "p", "holder-B", 60000, NULL, &err), AC_OK);
    kill(pid, SIGCONT);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(events_of(b, "p"), 0);
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "p", &info, &err), AC_OK);
    assert_string_equal(info.holder, "holder-B");
    close(ready[0]), close(ready[1]);
    ac_store_close(b);
}

/* The child: holds "f" as holder-P (attempt 1), then (stopped, its holder name taken by
 * another process meanwhile, and continued) commits an event, one in a group commit,
 * releases the lease, removes the session and releases it as a claim not loaded does: exits
 * 0 when all were refused, 1 when any went through. */
static void fenced_child(int ready_fd)
{
    ac_store *st = open_as("holder-P", 60000);
    ac_error err;
    if (st->ops->create(st, "f", "h", NULL, "holder-P", 60000, &err) != AC_OK)
        _exit(2);
    char k = 'r';
    if (write(ready_fd, &k, 1) != 1)
        _exit(3);
    raise(SIGSTOP); /* the parent takes "f" under the same holder name, continues us */
    ac_store_event e = {2, 9, "zombie", "{}", NULL};
    ac_store_commit c = commit_of("f", "holder-P", &e, 1);
    c.release = 1;
    int rc = st->ops->commit(st, &c, &err), one = -1;
    int fenced = rc == AC_STORE_EBUSY && strstr(err.text, "taken over");
    ac_error errs[1];
    fenced =
        fenced && st->ops->commit_many(st, &c, 1, &one, errs) == AC_OK && one == AC_STORE_EBUSY;
    fenced = fenced && st->ops->lease_release(st, "f", "holder-P", 1, &err) == AC_OK;
    fenced = fenced && st->ops->rm(st, "f", "holder-P", 1, &err) == AC_STORE_EBUSY &&
             strstr(err.text, "taken over");
    fenced = fenced && ac_store_release(st, "f", 1, &err) == AC_OK;
    ac_store_close(st);
    _exit(fenced ? 0 : 1);
}

/* A worker id reused: a process stopped while its successor, under the same holder name,
 * took its session (a later attempt). Resumed, the first writes nothing (its commit, its part
 * of a group commit, its release, its removal); the session is as the successor left it, its lease
 * held. */
static void test_fenced_attempt(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        fenced_child(ready[1]);
    char k;
    assert_int_equal(read(ready[0], &k, 1), 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, WUNTRACED), pid);
    assert_true(WIFSTOPPED(status));
    ac_store *b = open_as("holder-P", 60000);
    ac_error err;
    int64_t taken = 0;
    assert_int_equal(b->ops->lease_acquire(b, "f", "holder-P", 60000, &taken, &err), AC_OK);
    assert_int_equal(taken, 2);
    ac_store_event e1 = {1, 1, "spawn", "{}", NULL};
    ac_store_commit c = commit_of("f", "holder-P", &e1, 1);
    c.attempt = taken;
    c.status = "running";
    c.at_rest = 0;
    assert_int_equal(b->ops->commit(b, &c, &err), AC_OK);
    kill(pid, SIGCONT);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    seen s = {0};
    assert_int_equal(b->ops->events(b, "f", 0, see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "1:spawn:{}:NULL;");
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "f", &info, &err), AC_OK);
    assert_string_equal(info.holder, "holder-P");
    assert_string_equal(info.status, "running");
    assert_int_equal(info.events, 1);
    ac_store_event e2 = {2, 2, "user_message", "{}", NULL};
    ac_store_commit next = commit_of("f", "holder-P", &e2, 1);
    next.attempt = taken;
    assert_int_equal(b->ops->commit(b, &next, &err), AC_OK);
    close(ready[0]), close(ready[1]);
    ac_store_close(b);
}

/* The child: holds "g" with a long lease and waits to be killed. */
static void gone_child(int ready_fd)
{
    ac_store *st = open_as("holder-G", 600000);
    ac_error err;
    if (st->ops->create(st, "g", "h", NULL, "holder-G", 600000, &err) != AC_OK)
        _exit(2);
    char k = 'r';
    if (write(ready_fd, &k, 1) != 1)
        _exit(3);
    pause();
    _exit(0);
}

/* A holder whose process died (kill -9) loses its lease at once, long before it ends: the
 * backend knows by a lock the system drops with the process (its file lock, its connection). */
static void test_gone_holder(void **state)
{
    (void)state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        gone_child(ready[1]);
    char k;
    assert_int_equal(read(ready[0], &k, 1), 1);
    ac_store *b = open_as("holder-B", 60000);
    ac_error err;
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "g", &info, &err), AC_OK);
    assert_string_equal(info.holder, "holder-G");
    assert_int_equal(b->ops->lease_acquire(b, "g", "holder-B", 60000, NULL, &err), AC_STORE_EBUSY);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    for (int i = 0; i < 250 && info.holder[0]; i++) { /* 5 s at most */
        sleep_ms(20);
        assert_int_equal(b->ops->info(b, "g", &info, &err), AC_OK);
    }
    assert_string_equal(info.holder, "");
    assert_int_equal(b->ops->lease_acquire(b, "g", "holder-B", 60000, NULL, &err), AC_OK);
    close(ready[0]), close(ready[1]);
    ac_store_close(b);
}

/* ---- workers and claims ---- */

/* A session of holder's, stopped mid-turn (at_rest 0) or at rest. */
static void held(ac_store *st, const char *id, const char *holder, int64_t lease_ms, int at_rest)
{
    ac_error err;
    assert_int_equal(st->ops->create(st, id, "h", NULL, holder, lease_ms, &err), AC_OK);
    ac_store_event ev = {1, 1, "user_message", "{}", "[]"};
    ac_store_commit c = commit_of(id, holder, &ev, 1);
    c.lease_ms = lease_ms;
    c.at_rest = at_rest;
    c.status = at_rest ? "idle" : "running";
    assert_int_equal(st->ops->commit(st, &c, &err), AC_OK);
}

/* A claimed session: its id and the holder it was taken from. */
static int see_from(void *ud, const ac_store_session_info *info)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%s:%s;", info->id, info->holder);
    s->n++;
    return 0;
}

static int see_attempt(void *ud, const ac_store_session_info *info)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%s@%lld;", info->id, (long long)info->attempt);
    s->n++;
    return 0;
}

static int see_worker(void *ud, const ac_store_worker *w)
{
    seen *s = ud;
    size_t k = strlen(s->text);
    snprintf(s->text + k, sizeof s->text - k, "%s:%s:%llu:%d;", w->id, w->listen,
             (unsigned long long)w->sessions, w->alive);
    s->n++;
    return 0;
}

/* A worker's lease ends (it stalls); another claims its session and stalls in turn, its lease
 * ending too. The first, going on, writes nothing: its attempt is an older one, though no
 * lease runs. So the next claim takes the session from the second, never again from the
 * first, and only one worker resumes it from each. */
static void test_lapsed_twice(void **state)
{
    (void)state;
    ac_store *a = open_as("worker-A", 300), *b = open_as("worker-B", 300);
    ac_store *c = open_as("worker-C", 60000);
    ac_error err;
    held(a, "lx", "worker-A", 300, 0);
    sleep_ms(400);
    seen s = {0};
    assert_int_equal(ac_store_claim(b, 100, 0, see_from, &s, &err), AC_OK);
    assert_non_null(strstr(s.text, "lx:worker-A;")); /* and what others left */
    sleep_ms(400);                                   /* worker-B's lease of it ends as well */
    ac_store_event ev = {2, 2, "assistant_message", "{}", "[]"};
    ac_store_commit late = commit_of("lx", "worker-A", &ev, 1);
    late.lease_ms = 300;
    late.status = "running";
    late.at_rest = 0;
    assert_int_equal(a->ops->commit(a, &late, &err), AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "taken over"));
    memset(&s, 0, sizeof s);
    assert_int_equal(ac_store_claim(c, 100, 0, see_from, &s, &err), AC_OK);
    assert_non_null(strstr(s.text, "lx:worker-B;")); /* and what others left */
    assert_int_equal(events_of(c, "lx"), 1);
    ac_store_close(a);
    ac_store_close(b);
    ac_store_close(c);
}

/* Workers join (one per SQLite file, any number on PostgreSQL, never two live under one id),
 * are listed with the leases they hold, and leave; the sessions a worker left mid-turn are
 * claimed by another once its lease ends (not those at rest, not while it runs). */
static void test_workers_claim(void **state)
{
    (void)state;
    int pg = ac_store_is_pg_uri(where);
    ac_store *a = open_as("worker-A", 1000), *b = open_as("worker-B", 60000);
    ac_error err;
    assert_int_equal(ac_store_worker_join(a, "127.0.0.1:1", &err), AC_OK);
    int rc = ac_store_worker_join(b, "127.0.0.1:2", &err);
    assert_int_equal(rc, pg ? AC_OK : AC_STORE_EBUSY);
    if (!pg)
        assert_non_null(strstr(err.text, "another agentc serve"));
    ac_store *a2 = open_as("worker-A", 1000);
    if (pg) { /* a second live process under worker-A's id */
        assert_int_equal(ac_store_worker_join(a2, "127.0.0.1:3", &err), AC_STORE_EBUSY);
        assert_non_null(strstr(err.text, "'worker-A'"));
    }
    ac_store_close(a2);
    held(a, "w1", "worker-A", 1000, 0);
    held(a, "w2", "worker-A", 1000, 0);
    held(a, "w3", "worker-A", 1000, 1);
    seen s = {0};
    assert_int_equal(ac_store_workers(a, see_worker, &s, &err), AC_OK);
    assert_string_equal(s.text, pg ? "worker-A:127.0.0.1:1:3:1;worker-B:127.0.0.1:2:0:1;"
                                   : "worker-A:127.0.0.1:1:3:1;");
    memset(&s, 0, sizeof s);
    assert_int_equal(ac_store_claim(b, 100, 0, see_row, &s, &err), AC_OK);
    assert_int_equal(s.n, 0); /* worker-A runs them */
    sleep_ms(1100);           /* its leases end */
    assert_int_equal(ac_store_claim(b, 1, 0, see_attempt, &s, &err), AC_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(ac_store_claim(b, 100, 0, see_from, &s, &err), AC_OK);
    assert_int_equal(s.n, 2); /* w3 at rest stays */
    /* the claim's attempt: created (1), taken from worker-A (2) */
    assert_true(!strcmp(s.text, "w1@2;w2:worker-A;") || !strcmp(s.text, "w2@2;w1:worker-A;"));
    ac_store_session_info info;
    assert_int_equal(b->ops->info(b, "w1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "worker-B");
    assert_int_equal(info.attempt, 2);
    /* a claim not loaded is released with its attempt; an older one's release writes nothing */
    assert_int_equal(ac_store_release(b, "w1", 1, &err), AC_OK);
    assert_int_equal(b->ops->info(b, "w1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "worker-B");
    assert_int_equal(ac_store_release(b, "w1", 2, &err), AC_OK);
    assert_int_equal(b->ops->info(b, "w1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "");
    assert_int_equal(ac_store_claim(b, 100, 1, see_row, &s, &err), AC_OK); /* taken again */
    memset(&s, 0, sizeof s);
    assert_int_equal(ac_store_claim(a, 100, 1, see_row, &s, &err), AC_OK);
    assert_int_equal(s.n, 0); /* worker-B's now, running */
    assert_int_equal(ac_store_worker_beat(a, &err), AC_OK);
    assert_int_equal(ac_store_worker_leave(a, &err), AC_OK);
    memset(&s, 0, sizeof s);
    assert_int_equal(ac_store_workers(a, see_worker, &s, &err), AC_OK);
    assert_string_equal(s.text, pg ? "worker-B:127.0.0.1:2:2:1;" : "");
    ac_store_close(a);
    ac_store_close(b);
}

/* A holder's lock is its schema's: a worker id of one schema is another worker than the same
 * id in another schema of the database; both join, and a session of the one gone is free
 * while the other runs. */
static void test_schemas_apart(void **state)
{
    (void)state;
    if (!test_store_pg())
        return; /* SQLite: a file each */
    char other[1024];
    test_store_where(other, sizeof other, "apart.db");
    ac_store_options o = {.holder = "worker-S", .lease_ms = 60000};
    ac_error err;
    ac_store *b = ac_store_open(other, &o, &err);
    assert_non_null(b);
    ac_store *a = open_as("worker-S", 60000), *c = open_as("worker-C", 60000);
    assert_int_equal(ac_store_worker_join(b, "127.0.0.1:1", &err), AC_OK);
    assert_int_equal(ac_store_worker_join(a, "127.0.0.1:2", &err), AC_OK);
    held(a, "sx", "worker-S", 60000, 0);
    seen s = {0};
    assert_int_equal(ac_store_claim(c, 100, 0, see_from, &s, &err), AC_OK);
    assert_null(strstr(s.text, "sx:")); /* worker-S runs it here */
    ac_store_close(a);                  /* gone from this schema, alive in the other */
    memset(&s, 0, sizeof s);
    for (int i = 0; i < 250 && !strstr(s.text, "sx:"); i++) { /* 5 s at most */
        sleep_ms(20);
        assert_int_equal(ac_store_claim(c, 100, 0, see_from, &s, &err), AC_OK);
    }
    assert_non_null(strstr(s.text, "sx:worker-S;"));
    assert_int_equal(ac_store_worker_leave(b, &err), AC_OK);
    ac_store_close(b);
    ac_store_close(c);
}

/* Claims of processes at once never take the same session (FOR UPDATE SKIP LOCKED on
 * PostgreSQL, one writer on SQLite): each child claims what it can of 20 orphaned sessions
 * and writes their ids; each of the 20 is claimed by one of them. */
static void claim_child(int go_fd, int end_fd, int out_fd, const char *holder)
{
    ac_store *st = open_as(holder, 60000);
    char k;
    if (read(go_fd, &k, 1) != 1)
        _exit(2);
    seen s = {0};
    ac_error err;
    if (ac_store_claim(st, 100, 0, see_row, &s, &err) != AC_OK)
        _exit(3);
    if (write(out_fd, s.text, strlen(s.text) + 1) < 0)
        _exit(4);
    if (read(end_fd, &k, 1) != 1) /* alive (its leases held) until both claimed */
        _exit(5);
    ac_store_close(st);
    _exit(0);
}

static void test_claims_at_once(void **state)
{
    (void)state;
    ac_store *a = open_as("worker-O", 60000);
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof id, "o%02d", i);
        held(a, id, "worker-O", 60000, 0);
    }
    ac_store_close(a); /* gone: its lock with it */
    int go[2], end[2], out[2][2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(end), 0);
    pid_t pids[2];
    for (int c = 0; c < 2; c++) {
        assert_int_equal(pipe(out[c]), 0);
        pids[c] = fork();
        assert_true(pids[c] >= 0);
        if (pids[c] == 0)
            claim_child(go[0], end[0], out[c][1], c ? "worker-Q" : "worker-P");
    }
    sleep_ms(300); /* both opened */
    assert_int_equal(write(go[1], "gg", 2), 2);
    char got[2][600] = {{0}};
    for (int c = 0; c < 2; c++)
        assert_true(read(out[c][0], got[c], sizeof got[c] - 1) > 0);
    assert_int_equal(write(end[1], "ee", 2), 2);
    for (int c = 0; c < 2; c++) {
        int status;
        assert_int_equal(waitpid(pids[c], &status, 0), pids[c]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(out[c][0]), close(out[c][1]);
    }
    for (int i = 0; i < 20; i++) { /* each by one of them (others left earlier may be there) */
        char id[16];
        snprintf(id, sizeof id, "o%02d;", i);
        assert_true((strstr(got[0], id) != NULL) != (strstr(got[1], id) != NULL));
    }
    close(go[0]), close(go[1]), close(end[0]), close(end[1]);
}

/* ---- the asynchronous commit ---- */

typedef struct dones {
    int order[8];
    int n;
} dones;

typedef struct done_of {
    dones *d;
    int k;
} done_of;

static void note_done(void *ud)
{
    done_of *o = ud;
    o->d->order[o->d->n++] = o->k;
}

static void run_until(ac_loop *loop, const dones *d, int n)
{
    for (int i = 0; i < 1000 && d->n < n; i++)
        ac_loop_run_once(loop, 10);
    assert_int_equal(d->n, n);
}

/* Started on a loop: done comes from a task of the loop (at once for a backend that commits
 * at once), rcs as commit_many gives them; a second commit started meanwhile is done after the
 * first; a member whose lease another holds fails alone. */
static void test_async_commit(void **state)
{
    (void)state;
    ac_store *st = open_as("holder-A", 60000);
    ac_store *other = open_as("holder-B", 60000);
    const ac_store_ops *o = st->ops;
    ac_error err;
    assert_int_equal(o->create(st, "aa", "h", NULL, "holder-A", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "ab", "h", NULL, "holder-B", 60000, &err), AC_OK);
    ac_loop *loop = ac_loop_new();
    ac_store_event ev[2] = {{1, 1, "spawn", "{}", NULL}, {2, 2, "user_message", "{\"t\":1}", NULL}};
    ac_store_commit c[2] = {commit_of("aa", "holder-A", ev, 1), commit_of("ab", "holder-A", ev, 1)};
    int rcs[2] = {-1, -1}, rc = -1;
    ac_error errs[2];
    dones d = {{0}, 0};
    done_of d1 = {&d, 1}, d2 = {&d, 2};
    o->commit_start(st, loop, c, 2, rcs, errs, &rc, note_done, &d1);
    if (o->commit_wait) /* on the loop: nothing is done before the loop turns */
        assert_int_equal(d.n, 0);
    ac_store_commit c2 = commit_of("aa", "holder-A", ev + 1, 1);
    int rcs2 = -1, rc2 = -1;
    ac_error errs2;
    o->commit_start(st, loop, &c2, 1, &rcs2, &errs2, &rc2, note_done, &d2);
    run_until(loop, &d, 2);
    assert_int_equal(d.order[0], 1);
    assert_int_equal(d.order[1], 2);
    assert_int_equal(rc, AC_OK);
    assert_int_equal(rcs[0], AC_OK);
    assert_int_equal(rcs[1], AC_STORE_EBUSY); /* alone */
    assert_non_null(strstr(errs[1].text, "holder-B"));
    assert_int_equal(rc2, AC_OK);
    assert_int_equal(rcs2, AC_OK);
    assert_int_equal(events_of(st, "aa"), 2);
    assert_int_equal(events_of(st, "ab"), 0);
    seen s = {0};
    assert_int_equal(o->events(st, "aa", 0, see_event, &s, &err), AC_OK);
    assert_string_equal(s.text, "1:spawn:{}:NULL;2:user_message:{\"t\":1}:NULL;");
    /* a read while a commit is in flight waits for it, and sees it */
    ac_store_event ev3 = {3, 3, "x", NULL, NULL};
    ac_store_commit c3 = commit_of("aa", "holder-A", &ev3, 1);
    done_of d3 = {&d, 3};
    o->commit_start(st, loop, &c3, 1, &rcs2, &errs2, &rc2, note_done, &d3);
    assert_int_equal(events_of(st, "aa"), 3);
    run_until(loop, &d, 3);
    assert_int_equal(rcs2, AC_OK);
    assert_int_equal(ac_loop_pending(loop), 0); /* no watch or timer left */
    ac_loop_free(loop);
    ac_store_close(other);
    ac_store_close(st);
}

/* PostgreSQL: the server restarts while a group's commit waits on a row another connection
 * locked. Every member fails with a clear error, nothing of it is written, and the next
 * commit connects again and works; restarted between two commits, the next one goes
 * through (sent again on a new connection). */
static void test_restart_mid_commit(void **state)
{
    (void)state;
    const char *dir = getenv("AGENTC_TEST_PG_DIR"), *port = getenv("AGENTC_TEST_PG_PORT");
    if (!test_store_pg() || !dir || !port)
        return; /* SQLite: no server to restart */
    ac_store *st = open_as("holder-A", 60000);
    const ac_store_ops *o = st->ops;
    ac_error err;
    assert_int_equal(o->create(st, "ra", "h", NULL, "holder-A", 60000, &err), AC_OK);
    assert_int_equal(o->create(st, "rb", "h", NULL, "holder-A", 60000, &err), AC_OK);
    const char *schema = strstr(where, "schema=") + 7;
    char conninfo[512], sql[256];
    snprintf(conninfo, sizeof conninfo, "%.*s", (int)(strchr(where, '?') - where), where);
    PGconn *lock = PQconnectdb(conninfo);
    assert_int_equal(PQstatus(lock), CONNECTION_OK);
    snprintf(sql, sizeof sql, "BEGIN; SELECT 1 FROM \"%s\".sessions WHERE id = 'rb' FOR UPDATE",
             schema);
    PQclear(PQexec(lock, sql));
    ac_loop *loop = ac_loop_new();
    ac_store_event ev[1] = {{1, 1, "spawn", "{}", NULL}};
    ac_store_commit c[2] = {commit_of("ra", "holder-A", ev, 1), commit_of("rb", "holder-A", ev, 1)};
    int rcs[2] = {-1, -1}, rc = -1;
    ac_error errs[2];
    dones d = {{0}, 0};
    done_of d1 = {&d, 1};
    o->commit_start(st, loop, c, 2, rcs, errs, &rc, note_done, &d1);
    for (int i = 0; i < 30; i++) /* "ra" written, "rb" waits for the row */
        ac_loop_run_once(loop, 10);
    assert_int_equal(d.n, 0);
    /* the store's backend, waiting for the row, ended first: a restart alone ends the lock's
     * holder too, and the row freed in between could let the commit reach its COMMIT */
    int ended = 0; /* the store's one backend, once it waits for the row (bounded: 5 s) */
    for (int i = 0; i < 500 && !ended; i++) {
        PGresult *t = PQexec(lock, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
        ended = PQntuples(t) == 1 && !strcmp(PQgetvalue(t, 0, 0), "t");
        PQclear(t);
        if (!ended)
            ac_loop_run_once(loop, 10);
    }
    assert_true(ended);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "bash tests/store/pg_cluster.sh restart %s %s", dir, port);
    assert_int_equal(system(cmd), 0);
    run_until(loop, &d, 1);
    assert_int_equal(rc, AC_EIO);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rcs[i], AC_EIO);
        if (!strstr(errs[i].text, "connection was lost") ||
            !strstr(errs[i].text, "nothing of this commit was written"))
            fail_msg("not said clearly: %s", errs[i].text);
        assert_null(strstr(errs[i].text, "agentc-test-pw"));
    }
    PQfinish(lock);
    assert_int_equal(events_of(st, "ra"), 0); /* nothing half-written */
    assert_int_equal(events_of(st, "rb"), 0);
    o->commit_start(st, loop, c, 2, rcs, errs, &rc, note_done, &d1);
    run_until(loop, &d, 2);
    assert_int_equal(rc, AC_OK);
    assert_int_equal(rcs[0], AC_OK);
    assert_int_equal(rcs[1], AC_OK);
    assert_int_equal(events_of(st, "rb"), 1);
    /* restarted between two commits: the next one connects again and goes through */
    assert_int_equal(system(cmd), 0);
    ac_store_event ev2[1] = {{2, 2, "user_message", "{}", NULL}};
    c[0] = commit_of("ra", "holder-A", ev2, 1);
    c[1] = commit_of("rb", "holder-A", ev2, 1);
    o->commit_start(st, loop, c, 2, rcs, errs, &rc, note_done, &d1);
    run_until(loop, &d, 3);
    if (rc != AC_OK)
        fail_msg("%s", errs[0].text);
    assert_int_equal(rcs[0], AC_OK);
    assert_int_equal(events_of(st, "rb"), 2);
    ac_loop_free(loop);
    ac_store_close(st);
}

/* ---- a store copied into another ---- */

/* Everything ops read of the session, as one text. */
static int snap_text(void *ud, uint64_t n, const char *body, int keep)
{
    seen *s = ud;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "S%llu:%s:%d;", (unsigned long long)n, body,
             keep);
    return 0;
}

static int call_text(void *ud, const char *id, const char *name, int64_t started, int64_t finished,
                     int ok)
{
    seen *s = ud;
    size_t len = strlen(s->text);
    snprintf(s->text + len, sizeof s->text - len, "C%s:%s:%d:%d;", id, name, finished >= started,
             ok);
    return 0;
}

static void session_text(ac_store *st, const char *id, seen *out)
{
    ac_error err;
    memset(out, 0, sizeof *out);
    ac_store_session_info i;
    assert_int_equal(st->ops->info(st, id, &i, &err), AC_OK);
    char *params = NULL, *agent = NULL;
    assert_int_equal(st->ops->params(st, id, &params, &err), AC_OK);
    assert_int_equal(st->ops->agent(st, id, &agent, &err), AC_OK);
    snprintf(out->text, sizeof out->text, "%s|%s|%d|%llu|%llu|%s|%s|%s|%s|", i.spec_hash, i.status,
             i.at_rest, (unsigned long long)i.events, (unsigned long long)i.snapshot_seq, i.title,
             i.holder, params, agent ? agent : "-");
    free(params), free(agent);
    assert_int_equal(st->ops->events(st, id, 0, see_event, out, &err), AC_OK);
    assert_int_equal(st->ops->notes(st, id, see_event, out, &err), AC_OK);
    assert_int_equal(st->ops->snapshots(st, id, snap_text, out, &err), AC_OK);
    assert_int_equal(st->ops->tool_calls(st, id, call_text, out, &err), AC_OK);
}

/* A session with all a store keeps copied to an SQLite file and from it to a store of this
 * backend: both copies read as the original; an existing id refused without force. */
static void test_copy(void **state)
{
    (void)state;
    ac_store *st = open_as("holder-A", 60000);
    const ac_store_ops *o = st->ops;
    ac_error err;
    assert_int_equal(o->create(st, "cp", "h1", "{\"spec\":\"x\"}", "holder-A", 60000, &err), AC_OK);
    ac_store_event ev[3] = {{1, 10, "spawn", "{\"a\":\"\\\"q\\\\\"}", "[1]"},
                            {2, 11, "user_message", NULL, NULL},
                            {3, 12, "x", "{}", "[\"s\"]"}};
    ac_store_commit c = commit_of("cp", "holder-A", ev, 2);
    const char *started[] = {"k1", "k2"}, *names[] = {"t::one", "two"};
    c.started = started, c.started_names = names, c.n_started = 2;
    c.snapshot = "{\"kept\":1}", c.snapshot_n = 1, c.snapshot_keep = 1;
    c.agent = "{\"name\":\"a\"}";
    assert_int_equal(o->commit(st, &c, &err), AC_OK);
    ac_store_commit c2 = commit_of("cp", "holder-A", ev + 2, 1);
    const char *fin[] = {"k1"};
    int fin_ok[] = {1};
    c2.finished = fin, c2.finished_ok = fin_ok, c2.n_finished = 1;
    c2.snapshot = "{\"latest\":3}", c2.snapshot_n = 3;
    c2.title = "a title", c2.spec_hash = "h2", c2.status = "paused", c2.at_rest = 0;
    c2.release = 1;
    assert_int_equal(o->commit(st, &c2, &err), AC_OK);
    assert_int_equal(o->note(st, "cp", 2, 99, "spec_changed", "{\"n\":1}", &err), AC_OK);
    seen want, got;
    session_text(st, "cp", &want);
    assert_non_null(strstr(want.text, "S1:{\"kept\":1}:1;S3:{\"latest\":3}:0;"));

    char file[1024], back[1024];
    snprintf(file, sizeof file, "%s/copy.db", tmpdir);
    test_store_where(back, sizeof back, "copyback.db");
    ac_store *mid = ac_store_open(file, NULL, &err);
    assert_non_null(mid);
    ac_store_copy_stats n;
    assert_int_equal(ac_store_copy(st, mid, "cp", 0, NULL, NULL, &n, &err), AC_OK);
    assert_int_equal(n.sessions, 1);
    assert_int_equal(n.events, 3);
    assert_int_equal(n.snapshots, 2);
    assert_int_equal(n.notes, 1);
    assert_int_equal(n.tool_calls, 2);
    session_text(mid, "cp", &got);
    assert_string_equal(got.text, want.text);
    assert_int_equal(ac_store_copy(st, mid, "cp", 0, NULL, NULL, &n, &err), AC_EINVAL);
    assert_non_null(strstr(err.text, "already has a session 'cp'"));
    assert_int_equal(ac_store_copy(st, mid, "cp", 1, NULL, NULL, &n, &err), AC_OK);
    session_text(mid, "cp", &got);
    assert_string_equal(got.text, want.text);
    ac_store *out = ac_store_open(back, NULL, &err);
    assert_non_null(out);
    assert_int_equal(ac_store_copy(mid, out, NULL, 0, NULL, NULL, &n, &err), AC_OK);
    session_text(out, "cp", &got);
    assert_string_equal(got.text, want.text);
    assert_int_equal(ac_store_copy(mid, out, "nope", 0, NULL, NULL, &n, &err), AC_STORE_ENOENT);
    assert_int_equal(ac_store_copy(out, out, NULL, 1, NULL, NULL, &n, &err), AC_EINVAL);
    ac_store_close(out);
    ac_store_close(mid);
    ac_store_close(st);
}

/* ---- schema versions (PostgreSQL) ---- */

static void raw(PGconn *c, const char *fmt, const char *schema)
{
    char sql[512];
    snprintf(sql, sizeof sql, fmt, schema, schema);
    PGresult *r = PQexec(c, sql);
    ExecStatusType t = PQresultStatus(r);
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static ac_store *open_bounded(const char *at, const char *holder, int64_t wait_ms, ac_error *err)
{
    ac_store_options o = {0};
    o.holder = holder;
    o.busy_timeout_ms = wait_ms;
    return ac_store_open(at, &o, err);
}

/* A rolling upgrade: a database of version 1 whose session an older agentc holds (its
 * connection says no version) is not migrated until that lease ends: refused past the bound
 * naming the session and holder, nothing changed; migrated once the lease ends meanwhile;
 * a lease of a holder of this version does not hold a migration back. */
static void test_schema_upgrade(void **state)
{
    (void)state;
    if (!test_store_pg())
        return; /* SQLite: one process per file, no rolling upgrade */
    char at[1024];
    test_store_where(at, sizeof at, "upgrade.db");
    const char *schema = strstr(at, "schema=") + 7;
    ac_error err;
    ac_store *st = open_bounded(at, "holder-new", 5000, &err);
    assert_non_null(st);
    assert_int_equal(st->ops->create(st, "u1", "h", NULL, "holder-new", 60000, &err), AC_OK);
    assert_int_equal(st->ops->create(st, "u2", "h", NULL, "holder-new", 60000, &err), AC_OK);
    char conninfo[512];
    snprintf(conninfo, sizeof conninfo, "%.*s", (int)(strchr(at, '?') - at), at);
    PGconn *old = PQconnectdb(conninfo);
    assert_int_equal(PQstatus(old), CONNECTION_OK);
    raw(old, "SELECT pg_advisory_lock_shared(1634160196, hashtext('old-holder'))%.0s%.0s", "");
    raw(old,
        "UPDATE \"%s\".sessions SET holder = 'old-holder', lease_until = "
        "(extract(epoch from clock_timestamp()) * 1000)::bigint + 60000 WHERE id = 'u1'",
        schema);
    raw(old,
        "UPDATE \"%s\".meta SET value = 4 WHERE key = 'version'; ALTER TABLE "
        "\"%s\".sessions DROP COLUMN attempt",
        schema);
    ac_store *late = open_bounded(at, "holder-late", 300, &err);
    assert_null(late);
    assert_int_equal(err.code, AC_STORE_EBUSY);
    assert_non_null(strstr(err.text, "from version 4 to 5"));
    assert_non_null(strstr(err.text, "session 'u1' is held by old-holder"));
    assert_null(strstr(err.text, "agentc-test-pw"));
    PGresult *r = PQexec(old, "SELECT 1"); /* nothing changed */
    PQclear(r);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT value FROM \"%s\".meta WHERE key = 'version'", schema);
    r = PQexec(old, sql);
    assert_string_equal(PQgetvalue(r, 0, 0), "4");
    PQclear(r);
    /* the old lease ends in 1 s: a migration waiting up to 5 s goes through */
    raw(old,
        "UPDATE \"%s\".sessions SET lease_until = "
        "(extract(epoch from clock_timestamp()) * 1000)::bigint + 1000 WHERE id = 'u1'%.0s",
        schema);
    late = open_bounded(at, "holder-late", 5000, &err);
    if (!late)
        fail_msg("%s", err.text);
    r = PQexec(old, sql);
    assert_string_equal(PQgetvalue(r, 0, 0), "5");
    PQclear(r);
    /* a holder of this version (st, still holding u2) does not hold a migration back */
    raw(old,
        "UPDATE \"%s\".meta SET value = 4 WHERE key = 'version'; ALTER TABLE "
        "\"%s\".sessions DROP COLUMN attempt",
        schema);
    ac_store *again = open_bounded(at, "holder-again", 300, &err);
    if (!again)
        fail_msg("%s", err.text);
    ac_store_close(again);
    ac_store_close(late);
    ac_store_close(st);
    PQfinish(old);
}

static int setup(void **state)
{
    (void)state;
    assert_non_null(test_tmpdir_make("agentc_store_ops"));
    test_store_where(where, sizeof where, "ops.db");
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_op),
        cmocka_unit_test(test_event_text_kept),
        cmocka_unit_test(test_group_failure_scope),
        cmocka_unit_test(test_lease_expiry),
        cmocka_unit_test(test_zombie_writer),
        cmocka_unit_test(test_stopped_process),
        cmocka_unit_test(test_fenced_attempt),
        cmocka_unit_test(test_gone_holder),
        cmocka_unit_test(test_workers_claim),
        cmocka_unit_test(test_schemas_apart),
        cmocka_unit_test(test_claims_at_once),
        cmocka_unit_test(test_lapsed_twice),
        cmocka_unit_test(test_async_commit),
        cmocka_unit_test(test_restart_mid_commit),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_schema_upgrade),
    };
    return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
