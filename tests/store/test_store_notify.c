/*
 * test_store_notify.c - the wake-up connections of two processes' worth (two ac_notify on one
 * loop) on a PostgreSQL store (AGENTC_TEST_PG; a schema of its own each run): lines sent in a
 * burst arrive at the other, each session's last event number, in at most one notifying commit
 * per 10 ms interval; lines more than a payload holds are split, none lost; one's own lines do
 * not come back; the inbox: a request put for a holder is taken by it once, answered and read
 * back, a withdrawn one is never taken, a taken one cannot be withdrawn. A session freed while
 * the group's commit of it is in flight does not wait for it (its last commit is the next
 * group's). On a loop that serves, a call finding the store's connection lost fails at once,
 * the connection made again in the background, and the statements run waiting are counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "agentc/agentc.h"
#include "agentc/metrics.h"
#include "agentc/store.h"
#include "io/loop.h"
#include "store/store_ahead.h"
#include "store/store_int.h"
#include "store/store_notify.h"
#include "store/store_pg.h"
#include "store/store_writer.h"
#include "../support/test_tmpdir.h"
#include "../support/test_store_where.h"

#define SESSIONS 50

typedef struct seen {
    uint64_t last[SESSIONS]; /* per session, the last event number told */
    int holders;             /* 'i' lines */
    int others;              /* lines of another kind */
} seen;

static void on_line(void *ud, char kind, const char *a, const char *b)
{
    seen *s = ud;
    if (kind == 'e' && a[0] == 's') {
        int k = atoi(a + 1);
        uint64_t n = strtoull(b, NULL, 10);
        if (k >= 0 && k < SESSIONS && n > s->last[k])
            s->last[k] = n;
    } else if (kind == 'i') {
        s->holders++;
    } else if (kind != '*' && kind != '!') {
        s->others++;
    }
}

static ac_loop *loop;
static ac_notify *na, *nb;
static seen sa, sb;
static char where[1024];

static void run_until(int (*done)(void), int max_ms)
{
    int64_t end = ac_loop_now_ms(loop) + max_ms;
    while (!done() && ac_loop_now_ms(loop) < end)
        ac_loop_run_once(loop, 5);
}

static int both_ready(void)
{
    return ac_notify_ready(na) && ac_notify_ready(nb);
}

static int setup(void **state)
{
    (void)state;
    test_store_where(where, sizeof where, "notify");
    ac_error err = {0};
    ac_store *st = ac_store_open(where, NULL, &err); /* the schema, with its inbox */
    if (!st)
        fail_msg("store %s: %s", where, err.text);
    ac_store_close(st);
    loop = ac_loop_new();
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    na = ac_notify_open(loop, where, on_line, &sa, &err);
    nb = ac_notify_open(loop, where, on_line, &sb, &err);
    assert_non_null(na);
    assert_non_null(nb);
    run_until(both_ready, 10000);
    assert_true(both_ready());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ac_notify_free(na);
    ac_notify_free(nb);
    ac_loop_free(loop);
    return 0;
}

/* ---- a burst of commits told ---- */

static int ticks;
static uint64_t burst_timer;

static void on_tick(void *ud)
{
    (void)ud;
    char id[16], n[24];
    ticks++;
    for (int k = 0; k < SESSIONS; k += 5) { /* ten sessions a tick commit an event each */
        snprintf(id, sizeof id, "s%d", (k + ticks) % SESSIONS);
        snprintf(n, sizeof n, "%d", ticks);
        ac_notify_send(na, 'e', id, n);
    }
    burst_timer = ticks < 200 ? ac_loop_timer(loop, 1, on_tick, NULL) : 0;
}

static int all_told(void)
{
    for (int k = 0; k < SESSIONS; k++)
        if (sb.last[k] < 196)
            return 0;
    return !burst_timer;
}

/* The value of the series named (with its labels) in Prometheus text, 0 when absent. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return 0;
}

static void test_burst_coalesced(void **state)
{
    (void)state;
    ac_metrics *ma = ac_metrics_new(), *mb = ac_metrics_new();
    ac_notify_set_metrics(na, ma);
    ac_notify_set_metrics(nb, mb);
    int64_t t0 = ac_loop_now_ms(loop);
    uint64_t before = ac_notify_batches(na, NULL), queued;
    ac_notify_batches(na, &queued);
    burst_timer = ac_loop_timer(loop, 1, on_tick, NULL);
    run_until(all_told, 15000);
    int64_t ms = ac_loop_now_ms(loop) - t0;
    uint64_t lines, batches = ac_notify_batches(na, &lines) - before;
    assert_int_equal(ticks, 200);
    assert_true(all_told()); /* every session's last event reached the other */
    /* at most one notifying commit per interval (the first at once) */
    if (batches > (uint64_t)(ms / AC_NOTIFY_INTERVAL_MS + 2))
        fail_msg("%llu notifying commits in %lld ms", (unsigned long long)batches, (long long)ms);
    assert_true(batches < lines / 5); /* 2000 lines told in far fewer commits */
    for (int k = 0; k < SESSIONS; k++)
        assert_int_equal(sa.last[k], 0); /* one's own lines do not come back */
    assert_int_equal(sb.others, 0);
    /* GET /metrics's counts: the notifying commits, the lines sent or coalesced, and the
     * notifications the other received (one per commit here: each under a payload) */
    char *ta = ac_metrics_render(ma, 0), *tb = ac_metrics_render(mb, 0);
    assert_non_null(ta);
    assert_non_null(tb);
    double sent = metric(ta, "agentc_store_notifications_total{direction=\"sent\"}");
    assert_true(sent == (double)batches);
    assert_true(metric(ta, "agentc_store_notify_lines_total{outcome=\"sent\"}") +
                    metric(ta, "agentc_store_notify_lines_total{outcome=\"coalesced\"}") ==
                (double)(lines - queued));
    assert_true(metric(ta, "agentc_store_notify_lines_total{outcome=\"coalesced\"}") > 0);
    double got = metric(tb, "agentc_store_notifications_total{direction=\"received\"}");
    assert_true(got > 0 && got <= sent); /* the last may be on its way still */
    assert_true(metric(ta, "agentc_store_notifications_total{direction=\"received\"}") == 0);
    free(ta);
    free(tb);
    ac_notify_set_metrics(na, NULL);
    ac_notify_set_metrics(nb, NULL);
    ac_metrics_free(ma);
    ac_metrics_free(mb);
}

static int thousand(void)
{
    return sb.holders >= 1000;
}

static void test_payloads_split(void **state)
{
    (void)state;
    char name[128];
    for (int i = 0; i < 1000; i++) { /* about 100 KB of lines: a dozen payloads */
        snprintf(name, sizeof name, "%0100d", i);
        ac_notify_send(na, 'i', name, NULL);
    }
    run_until(thousand, 10000);
    assert_int_equal(sb.holders, 1000);
}

/* ---- the inbox ---- */

typedef struct fwd {
    int64_t id;
    int state, status, told;
    char reply[64];
} fwd;

static void on_id(void *ud, int64_t id, const char *error)
{
    fwd *f = ud;
    (void)error;
    f->id = id;
    f->told++;
}

static void on_answer(void *ud, int state, int status, const char *reply)
{
    fwd *f = ud;
    f->state = state;
    f->status = status;
    snprintf(f->reply, sizeof f->reply, "%s", reply ? reply : "");
    f->told++;
}

static int taken, take_ended;

static void on_take(void *ud, const ac_inbox_msg *m)
{
    (void)ud;
    if (!m) {
        take_ended++;
        return;
    }
    taken++;
    assert_string_equal(m->session, "o/s1");
    assert_string_equal(m->route, "/messages");
    assert_string_equal(m->body, "{\"content\": \"hi\"}");
    ac_inbox_answer(na, m->id, 202, "{\"accepted\": \"started\"}");
}

static fwd *waiting;
static int told_twice(void)
{
    return waiting->told >= 2;
}
static int told_once(void)
{
    return waiting->told >= 1;
}
static int take_done(void)
{
    return take_ended > 0;
}

static void test_inbox(void **state)
{
    (void)state;
    ac_inbox_msg m = {0, "o/s1", "o", "POST", "/messages", "{\"content\": \"hi\"}"};
    fwd f = {0};
    waiting = &f;
    assert_int_equal(ac_inbox_put(nb, &m, "holder A", on_id, &f), 0);
    run_until(told_once, 5000);
    assert_true(f.id > 0);
    assert_int_equal(ac_inbox_take(na, "holder A", on_take, NULL), 0);
    run_until(take_done, 5000);
    assert_int_equal(taken, 1);
    assert_int_equal(ac_inbox_withdraw(nb, f.id, on_answer, &f), 0); /* too late: taken */
    run_until(told_twice, 5000);
    assert_int_equal(f.state, AC_INBOX_TAKEN);
    for (int i = 0; i < 100 && f.state != AC_INBOX_DONE; i++) { /* the answer's UPDATE is on
                                                                    the other connection */
        f.told = 1;
        assert_int_equal(ac_inbox_poll(nb, f.id, on_answer, &f), 0);
        run_until(told_twice, 5000);
        ac_loop_run_once(loop, 10);
    }
    assert_int_equal(f.state, AC_INBOX_DONE);
    assert_int_equal(f.status, 202);
    assert_string_equal(f.reply, "{\"accepted\": \"started\"}");
    /* withdrawn before the holder looks: never taken */
    fwd g = {0};
    waiting = &g;
    assert_int_equal(ac_inbox_put(nb, &m, "holder A", on_id, &g), 0);
    run_until(told_once, 5000);
    assert_int_equal(ac_inbox_withdraw(nb, g.id, on_answer, &g), 0);
    run_until(told_twice, 5000);
    assert_int_equal(g.state, AC_INBOX_WITHDRAWN);
    take_ended = 0;
    assert_int_equal(ac_inbox_take(na, "holder A", on_take, NULL), 0);
    run_until(take_done, 5000);
    assert_int_equal(taken, 1);
}

/* ---- the loop's reads and its heartbeat (store_pg_loop.c), on the wake-up connection ---- */

typedef struct reads {
    int told, rc, rows;
    char text[512];
    ac_store_session_info info;
} reads;

static reads *pending;
static int told_done(void)
{
    return pending->told > 0;
}

static void done_rc(void *ud, int rc, const char *error)
{
    reads *r = ud;
    (void)error;
    r->rc = rc;
    r->told++;
}

static void got_info(void *ud, int rc, const ac_store_session_info *info, const char *error)
{
    reads *r = ud;
    (void)error;
    r->rc = rc;
    if (info)
        r->info = *info;
    r->told++;
}

static int got_event(void *ud, const ac_store_event *e)
{
    reads *r = ud;
    size_t k = strlen(r->text);
    snprintf(r->text + k, sizeof r->text - k, "%llu:%s;", (unsigned long long)e->n, e->ev);
    r->rows++;
    return 0;
}

static int got_claim(void *ud, const ac_store_session_info *info)
{
    reads *r = ud;
    size_t k = strlen(r->text);
    snprintf(r->text + k, sizeof r->text - k, "%s:%s@%lld;", info->id, info->holder,
             (long long)info->attempt);
    r->rows++;
    return 0;
}

static void wait_told(reads *r)
{
    pending = r;
    run_until(told_done, 10000);
    assert_int_equal(r->told, 1);
}

/* A session left mid-turn by a holder that is gone (its lock never held). */
static void left_mid_turn(ac_store *st, const char *id)
{
    ac_error err;
    assert_int_equal(st->ops->create(st, id, "h", NULL, "gone-holder", 60000, &err), AC_OK);
    ac_store_event evs[3] = {{1, 1, "spawn", "{}", NULL},
                             {2, 2, "user_message", "{}", NULL},
                             {3, 3, "llm.request", "{}", NULL}};
    ac_store_commit c = {.id = id,
                         .holder = "gone-holder",
                         .attempt = 1,
                         .lease_ms = 60000,
                         .evs = evs,
                         .n_evs = 3,
                         .status = "running",
                         .at_rest = 0};
    assert_int_equal(st->ops->commit(st, &c, &err), AC_OK);
}

/* A session's row, its journal after N, the heartbeat, the claim and the list, read on the wake-up
 * connection as the ones the store's own connection reads. */
static void test_loop_reads(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "worker-R", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    left_mid_turn(st, "r1");
    assert_int_equal(ac_store_worker_join(st, "127.0.0.1:1", &err), AC_OK);
    reads r = {0};
    assert_int_equal(ac_notify_info(na, "r1", got_info, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_int_equal(r.info.events, 3);
    assert_string_equal(r.info.holder, ""); /* its holder's lock is nobody's: gone */
    assert_int_equal(r.info.attempt, 1);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_info(na, "nosuch", got_info, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_ENOENT);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_events(na, "r1", 1, got_event, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_string_equal(r.text, "2:user_message;3:llm.request;");
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_beat(na, "worker-R", done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_claim(na, "worker-R", 10, 1, 60000, got_claim, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_string_equal(r.text, "r1:gone-holder@2;"); /* taken from it: attempt 2 */
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "r1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "worker-R"); /* its connection holds worker-R's lock */
    assert_int_equal(info.attempt, 2);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_claim(na, "worker-R", 10, 0, 60000, got_claim, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rows, 0); /* its own: not claimed again */
    assert_int_equal(st->ops->create(st, "r2", "h", NULL, "gone-holder", 60000, &err), AC_OK);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_list(na, got_claim, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_true(strstr(r.text, "r2:@") != NULL); /* every row, its holder gone: "" */
    assert_true(strstr(r.text, "r1:worker-R@2;") != NULL);
    assert_int_equal(r.rows, 2);
    ac_store_worker_leave(st, NULL);
    ac_store_close(st);
}

static void done_text(void *ud, int rc, const char *error)
{
    reads *r = ud;
    r->rc = rc;
    snprintf(r->text, sizeof r->text, "%s", error ? error : "");
    r->told++;
}

static void on_sql(void *ud, const struct pg_result *res, const char *error)
{
    reads *r = ud;
    (void)error;
    r->rc = res ? AC_OK : AC_EIO;
    r->told++;
}

static void run_sql(ac_notify *nt, const char *sql)
{
    reads r = {0};
    assert_int_equal(ac_notify_query(nt, sql, 0, NULL, 0, on_sql, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
}

/* A session's row made, a lease given up and a session removed on the wake-up connection, each
 * one statement fenced as the store's own connection's: by the holder's lease and attempt. */
static void test_loop_writes(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "worker-W", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    reads r = {0};
    assert_int_equal(ac_notify_create(na, "w1", "h", "{}", "worker-W", 60000, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "w1", &info, &err), AC_OK);
    assert_string_equal(info.holder, "worker-W");
    assert_int_equal(info.attempt, 1);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_create(na, "w1", "h", "{}", "worker-W", 60000, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_EINVAL);
    assert_true(strstr(r.text, "already has a session 'w1'") != NULL);
    ac_store_event evs[1] = {{1, 1, "spawn", "{}", NULL}};
    ac_store_commit c = {.id = "w1",
                         .holder = "worker-W",
                         .attempt = 1,
                         .lease_ms = 60000,
                         .evs = evs,
                         .n_evs = 1,
                         .status = "idle",
                         .at_rest = 1};
    assert_int_equal(st->ops->commit(st, &c, &err), AC_OK);
    /* another holder while worker-W's lease runs, worker-W with an older attempt: refused */
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_rm(na, "w1", "worker-X", 0, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_EBUSY);
    assert_true(strstr(r.text, "in use by worker-W (its lease runs") != NULL);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_rm(na, "w1", "worker-W", 7, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_EBUSY);
    assert_true(strstr(r.text, "taken over") != NULL);
    /* the row being written by another transaction: busy, not waited for */
    run_sql(nb, "BEGIN");
    run_sql(nb, "SELECT 1 FROM sessions WHERE id = 'w1' FOR UPDATE");
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_rm(na, "w1", "worker-W", 1, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_EBUSY);
    assert_true(strstr(r.text, "being written by it now") != NULL);
    run_sql(nb, "ROLLBACK");
    assert_int_equal(ac_store_info(st, "w1", &info, &err), AC_OK); /* nothing removed */
    assert_int_equal(info.events, 1);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_rm(na, "w1", "worker-W", 1, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_int_equal(ac_store_info(st, "w1", &info, &err), AC_STORE_ENOENT);
    reads ev = {0};
    assert_int_equal(ac_store_events(st, "w1", 0, got_event, &ev, &err), AC_OK);
    assert_int_equal(ev.rows, 0); /* its journal went with it */
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_rm(na, "w1", "worker-W", 1, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_ENOENT);
    /* a release by an older attempt changes nothing; by the lease's own, the lease is free */
    assert_int_equal(ac_notify_create(na, "w2", "h", "{}", "worker-W", 60000, NULL, NULL), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_release(na, "w2", "worker-W", 2, done_text, &r), 0);
    wait_told(&r); /* statements run in order: the create went first */
    assert_int_equal(r.rc, AC_OK);
    assert_int_equal(ac_store_info(st, "w2", &info, &err), AC_OK);
    assert_string_equal(info.holder, "worker-W");
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_release(na, "w2", "worker-W", 1, done_text, &r), 0);
    wait_told(&r);
    assert_int_equal(ac_store_info(st, "w2", &info, &err), AC_OK);
    assert_string_equal(info.holder, "");
    ac_store_close(st);
}

static void got_lease(void *ud, int rc, int64_t attempt, const char *error)
{
    reads *r = ud;
    r->rc = rc;
    r->rows = (int)attempt;
    snprintf(r->text, sizeof r->text, "%s", error ? error : "");
    r->told++;
}

/* A stored session's lease taken on the wake-up connection as loading it takes it: refused
 * while another live holder's lease runs or the row is being written, its attempt counted. */
static void test_loop_lease(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "worker-W", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    assert_int_equal(st->ops->create(st, "l1", "h", NULL, "worker-W", 60000, &err), AC_OK);
    left_mid_turn(st, "l2"); /* its holder gone */
    reads r = {0};
    assert_int_equal(ac_notify_acquire(na, "l1", "worker-X", 60000, got_lease, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_EBUSY);
    assert_true(strstr(r.text, "in use by worker-W (its lease runs") != NULL);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_acquire(na, "l1", "worker-W", 60000, got_lease, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_int_equal(r.rows, 2);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_acquire(na, "l2", "worker-X", 60000, got_lease, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    assert_int_equal(r.rows, 2);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "l2", &info, &err), AC_OK);
    assert_int_equal(info.attempt, 2); /* the gone holder's commits are fenced from now on */
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_acquire(na, "nosuch", "worker-W", 60000, got_lease, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_ENOENT);
    run_sql(nb, "BEGIN");
    run_sql(nb, "SELECT 1 FROM sessions WHERE id = 'l1' FOR UPDATE");
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_acquire(na, "l1", "worker-W", 60000, got_lease, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_EBUSY);
    assert_true(strstr(r.text, "being written by it now") != NULL);
    run_sql(nb, "ROLLBACK");
    ac_store_close(st);
}

/* ---- a session's rows read ahead of its loading ---- */

static int text_of(void *ud, const ac_store_event *e)
{
    reads *r = ud;
    snprintf(r->text + strlen(r->text), sizeof r->text - strlen(r->text), "%llu:%s:%s:%s;",
             (unsigned long long)e->n, e->ev, e->data ? e->data : "-", e->steps ? e->steps : "-");
    return 0;
}

static int call_of(void *ud, const char *id, const char *name, int64_t started, int64_t finished,
                   int ok)
{
    reads *r = ud;
    snprintf(r->text + strlen(r->text), sizeof r->text - strlen(r->text), "%s:%s:%d:%d:%d;", id,
             name, started > 0, finished > 0, ok);
    return 0;
}

/* What the session's loading reads, told as text by st's operations now. */
static void reads_of(ac_store *st, const char *id, reads *r)
{
    ac_error err;
    ac_store_session_info info;
    memset(r, 0, sizeof *r);
    assert_int_equal(st->ops->info(st, id, &info, &err), AC_OK);
    char *agent = NULL, *body = NULL;
    uint64_t n = 0;
    assert_int_equal(st->ops->agent(st, id, &agent, &err), AC_OK);
    assert_int_equal(st->ops->snapshot_get(st, id, UINT64_MAX, &n, &body, &err), AC_OK);
    snprintf(r->text, sizeof r->text, "%s %llu %s|%s|%llu:%s|", info.id,
             (unsigned long long)info.events, info.status, agent ? agent : "-",
             (unsigned long long)n, body ? body : "-");
    free(agent);
    free(body);
    assert_int_equal(st->ops->events(st, id, n, text_of, r, &err), AC_OK);
    assert_int_equal(st->ops->tool_calls(st, id, call_of, r, &err), AC_OK);
}

/* A session with a snapshot, events after it and tool calls: its rows read ahead on the wake-up
 * connection answer every read its loading makes as the store itself does, with no statement
 * (the journal from the snapshot's own event on: the last record a load at rest under another
 * spec reads); a claimed lease is answered as held. */
static void test_ahead(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "worker-A", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    assert_int_equal(st->ops->create(st, "a1", "h", NULL, "worker-A", 60000, &err), AC_OK);
    ac_store_event evs[4] = {{1, 1, "spawn", "{}", NULL},
                             {2, 2, "user_message", "{\"text\": \"hi\"}", NULL},
                             {3, 3, "llm.request", NULL, "[1]"},
                             {4, 4, "llm.completed", "{}", NULL}};
    const char *started[] = {"c1", "c2"}, *names[] = {"calc", "fetch"}, *fin[] = {"c1"};
    int fin_ok[] = {1};
    ac_store_commit c = {.id = "a1",
                         .holder = "worker-A",
                         .attempt = 1,
                         .lease_ms = 60000,
                         .evs = evs,
                         .n_evs = 2,
                         .status = "running",
                         .snapshot = "{\"s\": 1}",
                         .snapshot_n = 2,
                         .started = started,
                         .started_names = names,
                         .n_started = 2,
                         .agent = "{\"name\": \"x\"}"};
    assert_int_equal(st->ops->commit(st, &c, &err), AC_OK);
    ac_store_commit c2 = {.id = "a1",
                          .holder = "worker-A",
                          .attempt = 1,
                          .lease_ms = 60000,
                          .evs = evs + 2,
                          .n_evs = 2,
                          .status = "running",
                          .finished = fin,
                          .finished_ok = fin_ok,
                          .n_finished = 1};
    assert_int_equal(st->ops->commit(st, &c2, &err), AC_OK);
    reads want, got, r = {0};
    reads_of(st, "a1", &want);
    assert_non_null(strstr(want.text, "2:{\"s\": 1}|3:llm.request"));    /* after the snapshot */
    assert_non_null(strstr(want.text, "c1:calc:1:1:1;c2:fetch:1:0:0;")); /* both calls */
    ac_store_ahead *a = ac_store_ahead_new("a1", 7);
    assert_int_equal(ac_notify_ahead(na, a, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_OK);
    const ac_store_ops *own = st->ops;
    ac_store_ahead_begin(st, a);
    assert_true(ac_store_ahead_has(st, "a1"));
    assert_false(ac_store_ahead_has(st, "other"));
    reads_of(st, "a1", &got);
    int64_t attempt = 0;
    assert_int_equal(st->ops->lease_acquire(st, "a1", "worker-A", 60000, &attempt, &err), AC_OK);
    assert_int_equal(attempt, 7);                    /* the claim's */
    assert_int_equal(ac_store_ahead_answered(a), 6); /* no statement sent */
    /* the snapshot's own event on (a load at rest under another spec reads it): answered */
    assert_int_equal(st->ops->events(st, "a1", 1, text_of, &r, &err), AC_OK);
    assert_int_equal(ac_store_ahead_answered(a), 7);
    assert_non_null(strstr(r.text, "2:user_message:{\"text\": \"hi\"}:-;3:llm.request"));
    assert_int_equal(st->ops->events(st, "a1", 0, text_of, &r, &err), AC_OK); /* older: asked */
    assert_int_equal(ac_store_ahead_answered(a), 7);
    ac_store_ahead_end(st);
    assert_ptr_equal(st->ops, own);
    assert_string_equal(got.text, want.text);
    ac_store_ahead_free(a);
    a = ac_store_ahead_new("nosuch", 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(ac_notify_ahead(na, a, done_rc, &r), 0);
    wait_told(&r);
    assert_int_equal(r.rc, AC_STORE_ENOENT);
    ac_store_ahead_free(a);
    ac_store_close(st);
}

static reads *killed;
static void on_kill(void *ud, const struct pg_result *res, const char *error)
{
    (void)res, (void)error;
    ((reads *)ud)->told++;
}

static void on_slow(void *ud, const struct pg_result *res, const char *error)
{
    reads *r = ud;
    r->rc = res ? AC_OK : AC_EIO;
    snprintf(r->text, sizeof r->text, "%s", error ? error : "");
    r->told++;
}

static int other_told(void)
{
    return killed->told > 0;
}

/* A read under way when its connection is lost is sent again on the next connection (told
 * once, with its rows); a statement that may not run twice is told it failed. */
static void test_read_again(void **state)
{
    (void)state;
    static const char *const KILL =
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        "'agentc-listen' AND pid <> pg_backend_pid() AND query LIKE 'SELECT pg_sleep%'";
    for (int again = 1; again >= 0; again--) {
        reads r = {0}, k = {0};
        assert_int_equal(ac_notify_query(nb, "SELECT pg_sleep(0.5), 1", 0, NULL,
                                         again ? AC_NOTIFY_AGAIN : 0, on_slow, &r),
                         0);
        int64_t until = ac_loop_now_ms(loop) + 150;
        while (ac_loop_now_ms(loop) < until) /* the sleep under way */
            ac_loop_run_once(loop, 5);
        killed = &k;
        assert_int_equal(ac_notify_query(na, KILL, 0, NULL, 0, on_kill, &k), 0);
        run_until(other_told, 5000);
        wait_told(&r);
        if (again)
            assert_int_equal(r.rc, AC_OK);
        else
            assert_int_equal(r.rc, AC_EIO);
        run_until(both_ready, 10000); /* connected again */
        assert_true(both_ready());
    }
}

static void on_count(void *ud, const struct pg_result *res, const char *error)
{
    reads *r = ud;
    (void)error;
    r->rows = res && PQntuples(res) ? atoi(PQgetvalue(res, 0, 0)) : -1;
    r->told++;
}

/* The count sql reads, on the first wake-up connection. */
static int locks_of(const char *sql)
{
    reads c = {0};
    assert_int_equal(ac_notify_query(na, sql, 0, NULL, 0, on_count, &c), 0);
    wait_told(&c);
    return c.rows;
}

/* The store's connection, dropped by the server while idle, is made again on the loop by
 * ac_store_tend (its holder's lock back), without a call that waits. */
static void test_tend(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "holder-T", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    static const char *const LOCKS =
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
        "AND classid::bigint = 1634160196 AND objid::bigint = (hashtext('holder-T')::bigint & "
        "4294967295)";
    static const char *const KILL =
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        "'agentc' AND pid <> pg_backend_pid()";
    assert_int_equal(locks_of(LOCKS), 1);
    reads k = {0};
    killed = &k;
    assert_int_equal(ac_notify_query(na, KILL, 0, NULL, 0, on_kill, &k), 0);
    run_until(other_told, 5000);
    int locks = 1;
    for (int i = 0; i < 100 && locks != 0; i++) /* the lock goes with its backend */
        locks = locks_of(LOCKS);
    assert_int_equal(locks, 0);
    int64_t until = ac_loop_now_ms(loop) + 15000; /* a bound in time: a loaded machine is slow */
    while (locks != 1 && ac_loop_now_ms(loop) < until) {
        ac_store_tend(st, loop); /* the first finds it lost; the others: under way, or alive */
        locks = locks_of(LOCKS); /* the loop runs meanwhile */
    }
    assert_int_equal(locks, 1);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "nosuch", &info, &err), AC_STORE_ENOENT);
    ac_store_close(st);
}

/* The metric's value of kind in m's text, or -1 when it has none. */
static double blocking(ac_metrics *m, const char *kind)
{
    char *text = ac_metrics_render(m, 0), key[128];
    snprintf(key, sizeof key, "agentc_store_blocking_statements_total{kind=\"%s\"} ", kind);
    const char *at = text ? strstr(text, key) : NULL;
    double v = at ? strtod(at + strlen(key), NULL) : -1;
    free(text);
    return v;
}

/* On a loop that serves (ac_store_serve_on), a call that finds the store's connection lost
 * fails at once, the connection made again in the background (none made waiting), and works
 * again once it is; each statement run waiting is counted. */
static void test_serve_on(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "holder-S", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    ac_metrics *m = ac_metrics_new();
    assert_non_null(m);
    ac_store_serve_on(st, loop, m);
    assert_true(blocking(m, "statement") == 0 && blocking(m, "connect") == 0);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "nosuch", &info, &err), AC_STORE_ENOENT);
    assert_true(blocking(m, "statement") == 1);
    static const char *const LOCKS =
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
        "AND classid::bigint = 1634160196 AND objid::bigint = (hashtext('holder-S')::bigint & "
        "4294967295)";
    static const char *const KILL =
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        "'agentc' AND pid <> pg_backend_pid()";
    reads k = {0};
    killed = &k;
    assert_int_equal(ac_notify_query(na, KILL, 0, NULL, 0, on_kill, &k), 0);
    run_until(other_told, 5000);
    int locks = 1;
    for (int i = 0; i < 100 && locks != 0; i++) /* the lock goes with its backend */
        locks = locks_of(LOCKS);
    assert_int_equal(locks, 0);
    /* found lost by its statement: failed at once, made again in the background */
    assert_int_equal(ac_store_info(st, "nosuch", &info, &err), AC_EIO);
    assert_non_null(strstr(err.text, "made again in the background"));
    assert_int_equal(((pg_store *)st)->tend.state != 0, 1);
    int rc = AC_EIO;
    for (int i = 0; i < 250 && rc == AC_EIO; i++) {
        ac_loop_run_once(loop, 20);
        rc = ac_store_info(st, "nosuch", &info, &err); /* meanwhile: at once, no statement */
    }
    assert_int_equal(rc, AC_STORE_ENOENT);
    assert_int_equal(locks_of(LOCKS), 1); /* its holder's lock back with it */
    assert_true(blocking(m, "connect") == 0);
    assert_true(blocking(m, "statement") == 3); /* before, the one that found it lost, after */
    ac_store_close(st);
    ac_metrics_free(m);
}

static int commit_done;
static void on_committed(void *ud)
{
    (void)ud;
    commit_done = 1;
}
static int committed(void)
{
    return commit_done;
}

/* A group commit on the loop that finds the store's connection lost makes it again in the
 * background and is sent once it is: commit_start returns before the server has the new
 * connection, and the commit is written. */
static void test_commit_reconnects(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "holder-C", .lease_ms = 60000};
    ac_error err;
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    assert_int_equal(st->ops->create(st, "c1", "h", NULL, "holder-C", 60000, &err), AC_OK);
    static const char *const OURS = "SELECT count(*) FROM pg_stat_activity WHERE "
                                    "application_name = 'agentc' AND pid <> pg_backend_pid()";
    reads k = {0};
    killed = &k;
    assert_int_equal(ac_notify_query(na,
                                     "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                     "WHERE application_name = 'agentc'",
                                     0, NULL, 0, on_kill, &k),
                     0);
    run_until(other_told, 5000);
    int n = 1;
    for (int i = 0; i < 100 && n != 0; i++)
        n = locks_of(OURS);
    assert_int_equal(n, 0);
    ac_store_event e = {1, 1, "spawn", "{}", NULL};
    ac_store_commit c = {.id = "c1",
                         .holder = "holder-C",
                         .attempt = 1,
                         .lease_ms = 60000,
                         .evs = &e,
                         .n_evs = 1,
                         .status = "idle",
                         .at_rest = 1};
    int rcs[1], rc = -1;
    ac_error errs[1];
    commit_done = 0;
    st->ops->commit_start(st, loop, &c, 1, rcs, errs, &rc, on_committed, NULL);
    assert_false(commit_done);
    /* its first statements find the connection lost (or commit_start did, the server's end
     * read already): the commit waits for it, made again on the loop, never by waiting */
    pg_store *s = (pg_store *)st;
    int waited = 0;
    for (int i = 0; i < 1000 && !commit_done && !waited; i++) {
        waited = s->job.waiting && s->tend.state;
        if (!waited)
            ac_loop_run_once(loop, 5);
    }
    assert_true(waited);
    run_until(committed, 10000);
    assert_true(commit_done);
    assert_int_equal(rc, AC_OK);
    assert_int_equal(rcs[0], AC_OK);
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "c1", &info, &err), AC_OK);
    assert_int_equal(info.events, 1);
    ac_store_close(st);
}

static ac_store *flight_st;
static int group_idle(void)
{
    struct ac_store_group *g = flight_st->group;
    return !g || (!g->busy && !g->n);
}
static int group_busy(void)
{
    return flight_st->group && flight_st->group->busy;
}

/* A session freed while the group's commit of it is in flight does not wait for it: its last
 * commit (the lease given up) is the next group's, its writer freed by it; the row has every
 * event and no holder. */
static void test_freed_in_flight(void **state)
{
    (void)state;
    ac_store_options o = {.holder = "holder-F", .lease_ms = 60000};
    ac_error err = {0};
    ac_store *st = ac_store_open(where, &o, &err);
    assert_non_null(st);
    flight_st = st;
    ac_engine_config cfg = {0};
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"answer one\"}\n";
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e)
        fail_msg("engine: %s", err.text);
    ac_session *s = ac_store_session(st, e, "f1", AC_STORE_GROUPED, &err);
    if (!s)
        fail_msg("%s", err.text);
    assert_true(ac_session_send(s, "first") >= 0);
    for (int i = 0; i < 2000 && !(ac_session_settled(s) && group_idle()); i++)
        ac_loop_run_once(loop, 5);
    assert_true(ac_session_settled(s));
    ac_session_free(s); /* its last commit: the group's */
    run_until(group_idle, 10000);
    assert_true(group_idle());
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "f1", &info, &err), AC_OK);
    uint64_t events = info.events;

    /* loaded at rest: its first commit is the group's; freed while it is in flight */
    s = ac_store_session(st, e, "f1", AC_STORE_GROUPED | AC_STORE_MUST_EXIST, &err);
    if (!s)
        fail_msg("%s", err.text);
    int64_t attempt = ac_store_session_attempt(s);
    run_until(group_busy, 10000);
    assert_true(group_busy());
    ac_session_free(s);
    assert_true(group_busy());         /* not waited for */
    assert_int_equal(st->group->n, 1); /* its last commit, next */
    run_until(group_idle, 10000);
    assert_true(group_idle());
    assert_int_equal(ac_store_info(st, "f1", &info, &err), AC_OK);
    assert_string_equal(info.holder, ""); /* given up by the last commit */
    assert_int_equal(info.attempt, attempt);
    assert_true(info.events == events);
    assert_true(info.at_rest);
    assert_string_equal(info.status, "idle");
    ac_engine_free(e);
    ac_store_close(st);
}

int main(void)
{
    if (!test_store_pg()) {
        fprintf(stderr, "store_notify: AGENTC_TEST_PG names no database\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_burst_coalesced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_payloads_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inbox, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_lease, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tend, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_reconnects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_in_flight, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
