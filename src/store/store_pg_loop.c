/*
 * store_pg_loop.c - what the event loop asks of a PostgreSQL store on its own (store_notify.h:
 * the heartbeat, the claim, a journal's new events, a session's row, the list, the workers'
 * rows) and the writes a request makes outside a session's commit (a session's row made,
 * removed, a lease given up), as statements of the wake-up connection (ac_notify_query): sent
 * without waiting, their rows read when the loop finds the socket readable. The SQL is the store's
 * own (store_pg.h), the rows read as its synchronous calls read them.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_ahead.h"
#include "store_notify.h"
#include "store_pg.h"

typedef struct call {
    ac_notify_done_fn done;
    ac_notify_info_fn info;
    ac_store_list_fn each_row;
    ac_store_event_fn each_event;
    ac_store_worker_fn each_worker;
    void *ud;
} call;

static call *call_new(void *ud)
{
    call *c = calloc(1, sizeof *c);
    if (c)
        c->ud = ud;
    return c;
}

static int queue(ac_notify *nt, call *c, const char *sql, const pargs *a, int flags,
                 ac_notify_query_fn fn)
{
    if (!c || ac_notify_query(nt, sql, a->n, a->v, flags, fn, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static void on_done(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    if (c->done)
        c->done(c->ud, r ? AC_OK : AC_EIO, r ? NULL : error);
    free(c);
}

int ac_notify_beat(ac_notify *nt, const char *holder, ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c)
        c->done = done;
    pargs a = {0};
    p_s(&a, holder);
    return queue(nt, c, PG_BEAT_SQL, &a, 0, on_done);
}

/* Sent again once on the next connection when the connection is lost under it: a release
 * made while the database restarts still happens. */
int ac_notify_release(ac_notify *nt, const char *id, const char *holder, int64_t attempt,
                      ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c)
        c->done = done;
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, holder);
    p_i(&a, attempt);
    return queue(nt, c, PG_RELEASE_SQL, &a, AC_NOTIFY_AGAIN, on_done);
}

static void on_claimed(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    for (int i = 0; r && i < PQntuples(r); i++) {
        ac_store_session_info info;
        ac_pg_claimed(r, i, &info);
        if (c->each_row(c->ud, &info))
            break;
    }
    on_done(c, r, error);
}

int ac_notify_claim(ac_notify *nt, const char *holder, size_t max, int mine, int64_t lease_ms,
                    ac_store_list_fn each, ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c) {
        c->each_row = each;
        c->done = done;
    }
    pargs a = {0};
    p_s(&a, holder);
    p_i(&a, mine);
    p_i(&a, max > 1000000 ? 1000000 : (long long)max);
    p_i(&a, lease_ms);
    return queue(nt, c, PG_CLAIM_SQL, &a, 0, on_claimed);
}

static void on_events(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    for (int i = 0; r && i < PQntuples(r); i++) {
        ac_store_event e = {strtoull(PQgetvalue(r, i, 0), NULL, 10),
                            strtoll(PQgetvalue(r, i, 1), NULL, 10), PQgetvalue(r, i, 2),
                            PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
                            PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4)};
        if (c->each_event(c->ud, &e))
            break;
    }
    on_done(c, r, error);
}

int ac_notify_events(ac_notify *nt, const char *id, uint64_t after, ac_store_event_fn each,
                     ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c) {
        c->each_event = each;
        c->done = done;
    }
    pargs a = {0};
    p_s(&a, id);
    p_i(&a, after > INT64_MAX ? INT64_MAX : (long long)after);
    return queue(nt, c, PG_EVENTS_SQL, &a, AC_NOTIFY_AGAIN, on_events);
}

static void on_info(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    ac_store_session_info info;
    memset(&info, 0, sizeof info);
    int rc = !r ? AC_EIO : PQntuples(r) ? AC_OK : AC_STORE_ENOENT;
    if (rc == AC_OK)
        ac_pg_fill_info(r, 0, &info);
    c->info(c->ud, rc, rc == AC_EIO ? NULL : &info, rc == AC_EIO ? error : NULL);
    free(c);
}

int ac_notify_info(ac_notify *nt, const char *id, ac_notify_info_fn fn, void *ud)
{
    call *c = call_new(ud);
    if (c)
        c->info = fn;
    pargs a = {0};
    p_s(&a, id);
    return queue(nt, c, "SELECT " PG_INFO_COLS " FROM sessions WHERE id = $1", &a, AC_NOTIFY_AGAIN,
                 on_info);
}

static void on_listed(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    for (int i = 0; r && i < PQntuples(r); i++) {
        ac_store_session_info info;
        ac_pg_fill_info(r, i, &info);
        if (c->each_row(c->ud, &info))
            break;
    }
    on_done(c, r, error);
}

int ac_notify_list(ac_notify *nt, ac_store_list_fn each, ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c) {
        c->each_row = each;
        c->done = done;
    }
    pargs a = {0};
    return queue(nt, c, PG_LIST_SQL, &a, AC_NOTIFY_AGAIN, on_listed);
}

static void on_workers(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    for (int i = 0; r && i < PQntuples(r); i++) {
        ac_store_worker w;
        ac_pg_fill_worker(r, i, &w);
        if (c->each_worker(c->ud, &w))
            break;
    }
    on_done(c, r, error);
}

int ac_notify_workers(ac_notify *nt, const char *holder, ac_store_worker_fn each,
                      ac_notify_done_fn done, void *ud)
{
    call *c = call_new(ud);
    if (c) {
        c->each_worker = each;
        c->done = done;
    }
    pargs a = {0};
    p_s(&a, holder);
    return queue(nt, c, PG_WORKERS_SQL, &a, AC_NOTIFY_AGAIN, on_workers);
}

/* ---- the writes a request of `serve` makes outside a session's commit ---- */

typedef struct wcall {
    ac_notify_done_fn done;
    ac_notify_lease_fn leased;
    void *ud;
    char id[256];
    char holder[128]; /* the one writing (a removal's) */
} wcall;

static int wqueue(ac_notify *nt, const char *id, const char *holder, ac_notify_done_fn done,
                  void *ud, const char *sql, const pargs *a, int flags, ac_notify_query_fn fn)
{
    wcall *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->done = done;
    c->ud = ud;
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->holder, sizeof c->holder, "%s", holder);
    if (ac_notify_query(nt, sql, a->n, a->v, flags, fn, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static void wdone(wcall *c, int rc, const char *error)
{
    if (c->done)
        c->done(c->ud, rc, rc == AC_OK ? NULL : error);
    free(c);
}

static void on_created(void *ud, const PGresult *r, const char *error)
{
    wcall *c = ud;
    char why[400];
    if (r && strcmp(PQcmdTuples((PGresult *)r), "1") != 0) {
        snprintf(why, sizeof why, "the store already has a session '%s'", c->id);
        wdone(c, AC_EINVAL, why);
        return;
    }
    wdone(c, r ? AC_OK : AC_EIO, error);
}

int ac_notify_create(ac_notify *nt, const char *id, const char *spec_hash, const char *params,
                     const char *holder, int64_t lease_ms, ac_notify_done_fn done, void *ud)
{
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, spec_hash);
    p_s(&a, params ? params : "{}");
    p_s(&a, holder);
    p_i(&a, lease_ms);
    return wqueue(nt, id, holder, done, ud, PG_CREATE_SQL, &a, 0, on_created);
}

/* Why a removal (PG_RM_SQL's row) removed nothing, in why: the rc. */
static int rm_refused(const PGresult *r, const wcall *c, char *why, size_t cap)
{
    const char *id = c->id;
    if (PQgetisnull(r, 0, 5)) {
        if (PQgetisnull(r, 0, 6)) {
            snprintf(why, cap, "no session '%s'", id);
            return AC_STORE_ENOENT;
        }
        snprintf(why, cap, "session '%s' is in use by %s (being written by it now)", id,
                 PQgetvalue(r, 0, 6));
        return AC_STORE_EBUSY;
    }
    const char *h = PQgetvalue(r, 0, 1);
    long long until = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    long long now = strtoll(PQgetvalue(r, 0, 3), NULL, 10);
    if (until > now && *h && strcmp(h, c->holder) != 0 && strcmp(PQgetvalue(r, 0, 4), "t") == 0)
        snprintf(why, cap,
                 "session '%s' is in use by %s (its lease runs %lld s more, renewed while that "
                 "holder runs; it ends at once when its connection closes)",
                 id, h, (until - now + 999) / 1000);
    else
        snprintf(why, cap,
                 "session '%s' was taken over: a later taking of its lease (attempt %s) holds "
                 "it, so this writer writes nothing",
                 id, PQgetvalue(r, 0, 5));
    return AC_STORE_EBUSY;
}

static void on_removed(void *ud, const PGresult *r, const char *error)
{
    wcall *c = ud;
    if (!r || PQntuples(r) != 1) {
        wdone(c, AC_EIO, r ? "the removal gave no answer" : error);
        return;
    }
    if (strcmp(PQgetvalue(r, 0, 0), "1") == 0) {
        wdone(c, AC_OK, NULL);
        return;
    }
    char why[600];
    int rc = rm_refused(r, c, why, sizeof why);
    wdone(c, rc, why);
}

int ac_notify_rm(ac_notify *nt, const char *id, const char *holder, int64_t attempt,
                 ac_notify_done_fn done, void *ud)
{
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, holder);
    p_i(&a, attempt);
    return wqueue(nt, id, holder, done, ud, PG_RM_SQL, &a, 0, on_removed);
}

static void on_acquired(void *ud, const PGresult *r, const char *error)
{
    wcall *c = ud;
    char why[600];
    int64_t attempt = 0;
    int rc = AC_EIO;
    if (r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        attempt = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        rc = AC_OK;
    } else if (r && PQntuples(r) == 1) {
        rc = rm_refused(r, c, why, sizeof why);
        error = why;
    } else if (r) {
        error = "the taking of the lease gave no answer";
    }
    c->leased(c->ud, rc, attempt, rc == AC_OK ? NULL : error);
    free(c);
}

int ac_notify_acquire(ac_notify *nt, const char *id, const char *holder, int64_t lease_ms,
                      ac_notify_lease_fn fn, void *ud)
{
    wcall *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->leased = fn;
    c->ud = ud;
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->holder, sizeof c->holder, "%s", holder);
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, holder);
    p_i(&a, lease_ms);
    if (ac_notify_query(nt, PG_ACQUIRE_SQL, a.n, a.v, 0, on_acquired, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static void on_forked(void *ud, const PGresult *r, const char *error)
{
    wcall *c = ud;
    char why[400];
    if (!r || PQntuples(r) != 1) {
        wdone(c, AC_EIO, r ? "the fork gave no answer" : error);
        return;
    }
    if (strcmp(PQgetvalue(r, 0, 0), "1") == 0) {
        wdone(c, AC_OK, NULL);
        return;
    }
    int from = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    snprintf(why, sizeof why, from ? "the store already has a session '%s'" : "no session '%s'",
             from ? c->id : c->holder);
    wdone(c, from ? AC_EINVAL : AC_STORE_ENOENT, why);
}

int ac_notify_fork(ac_notify *nt, const ac_store_fork_row *f, ac_notify_done_fn done, void *ud)
{
    pargs a = {0};
    ac_pg_fork_args(f, &a);
    return wqueue(nt, f->to, f->from, done, ud, PG_FORK_SQL, &a, 0, on_forked);
}

/* ---- a session's rows read ahead of its loading ---- */

typedef struct ahead_read {
    ac_store_ahead *a;
    int left; /* statements not answered yet */
    int rc;
    char error[256];
    ac_notify_done_fn done;
    void *ud;
} ahead_read;

/* One statement answered (r NULL: failed, said by error; bad: its rows could not be kept). */
static void ahead_step(ahead_read *t, const PGresult *r, const char *error, int bad)
{
    if (t->rc == AC_OK && (!r || bad)) {
        t->rc = r ? AC_ENOMEM : AC_EIO;
        snprintf(t->error, sizeof t->error, "%s", r ? "out of memory" : error ? error : "");
    }
    if (--t->left == 0) {
        t->done(t->ud, t->rc, t->rc == AC_OK || t->rc == AC_STORE_ENOENT ? NULL : t->error);
        free(t);
    }
}

static void on_ahead_row(void *ud, const PGresult *r, const char *error)
{
    ahead_read *t = ud;
    int bad = 0;
    if (r && !PQntuples(r) && t->rc == AC_OK)
        t->rc = AC_STORE_ENOENT;
    else if (r && PQntuples(r)) {
        ac_store_session_info info;
        ac_pg_fill_info(r, 0, &info);
        bad = ac_store_ahead_row(
            t->a, &info,
            PQgetisnull(r, 0, PQnfields(r) - 1) ? NULL : PQgetvalue(r, 0, PQnfields(r) - 1));
    }
    ahead_step(t, r, error, bad);
}

static void on_ahead_snapshot(void *ud, const PGresult *r, const char *error)
{
    ahead_read *t = ud;
    int bad =
        r && PQntuples(r) && !PQgetisnull(r, 0, 0) &&
        ac_store_ahead_snapshot(t->a, strtoull(PQgetvalue(r, 0, 1), NULL, 10), PQgetvalue(r, 0, 0));
    ahead_step(t, r, error, bad);
}

static void on_ahead_events(void *ud, const PGresult *r, const char *error)
{
    ahead_read *t = ud;
    int bad = 0;
    for (int i = 0; r && !bad && i < PQntuples(r); i++) {
        ac_store_event e = {strtoull(PQgetvalue(r, i, 0), NULL, 10),
                            strtoll(PQgetvalue(r, i, 1), NULL, 10), PQgetvalue(r, i, 2),
                            PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
                            PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4)};
        bad = ac_store_ahead_event(t->a, &e);
    }
    ahead_step(t, r, error, bad);
}

static void on_ahead_calls(void *ud, const PGresult *r, const char *error)
{
    ahead_read *t = ud;
    int bad = 0;
    for (int i = 0; r && !bad && i < PQntuples(r); i++)
        bad = ac_store_ahead_call(
            t->a, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), strtoll(PQgetvalue(r, i, 2), NULL, 10),
            strtoll(PQgetvalue(r, i, 3), NULL, 10), (int)strtol(PQgetvalue(r, i, 4), NULL, 10));
    ahead_step(t, r, error, bad);
}

/* The statements i of sql (n of them) queued, each told to fns[i]. */
static int ahead_queue(ac_notify *nt, ac_store_ahead *a, const char *const *sql,
                       const ac_notify_query_fn *fns, int n, ac_notify_done_fn done, void *ud)
{
    ahead_read *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    t->a = a;
    t->done = done;
    t->ud = ud;
    t->left = n;
    for (int i = 0; i < n; i++) {
        pargs p = {0};
        p_s(&p, ac_store_ahead_id(a));
        if (fns[i] == on_ahead_snapshot)
            p_i(&p, INT64_MAX);
        if (ac_notify_query(nt, sql[i], p.n, p.v, AC_NOTIFY_AGAIN, fns[i], t) != 0) {
            t->left -= n - i; /* those not queued */
            t->rc = AC_ENOMEM;
            snprintf(t->error, sizeof t->error, "out of memory");
            if (t->left == 0) {
                free(t);
                return -1;
            }
            return 0; /* done told when those queued are answered */
        }
    }
    return 0;
}

#define AHEAD_ROW_SQL "SELECT " PG_INFO_COLS ", agent FROM sessions WHERE id = $1"

int ac_notify_ahead(ac_notify *nt, ac_store_ahead *a, ac_notify_done_fn done, void *ud)
{
    static const char *const sql[4] = {
        AHEAD_ROW_SQL,
        PG_SNAPSHOT_SQL,
        "SELECT n, t_ms, ev, data, steps FROM events WHERE session = $1 AND n >= COALESCE(("
        "SELECT max(n) FROM snapshots WHERE session = $1), 0) ORDER BY n",
        PG_TOOL_CALLS_SQL,
    };
    static const ac_notify_query_fn fns[4] = {on_ahead_row, on_ahead_snapshot, on_ahead_events,
                                              on_ahead_calls};
    return ahead_queue(nt, a, sql, fns, 4, done, ud);
}

int ac_notify_ahead_journal(ac_notify *nt, ac_store_ahead *a, ac_notify_done_fn done, void *ud)
{
    static const char *const sql[2] = {
        AHEAD_ROW_SQL,
        "SELECT n, t_ms, ev, data, steps FROM events WHERE session = $1 ORDER BY n",
    };
    static const ac_notify_query_fn fns[2] = {on_ahead_row, on_ahead_events};
    return ahead_queue(nt, a, sql, fns, 2, done, ud);
}
