/*
 * store_pg.c - the PostgreSQL backend of the store (store_int.h), with libpq.
 *
 * One connection per open store. Its tables live in one schema of the database,
 * named by the URI's "schema" key (default "agentc"); agentc's own keys are taken
 * out of the URI before libpq sees it (libpq refuses keys it does not know). The
 * schema is versioned in its table meta and created or migrated on open in one
 * transaction under an advisory lock; a newer schema is refused.
 *
 * Times are the database's: NOW below is the server's clock_timestamp() in ms.
 * A lease is claimed with SELECT ... FOR UPDATE SKIP LOCKED (a row another
 * transaction writes is busy, never waited for), and every write of a session
 * goes through its row's UPDATE, fenced by its holder in the WHERE clause: a
 * holder whose lease another took writes nothing. Each statement is prepared
 * once per connection (named by its place in the cache).
 *
 * A holder's lock: each open store's connection holds a shared advisory lock keyed by a hash
 * of its holder name, which the server drops when the connection ends (the process died, the
 * network went): a lease whose holder's lock nobody holds is free before it ends (ALIVE).
 *
 * The password of the URI is never shown: the store's path (in every error) is
 * the URI without it, and libpq's own messages do not carry it.
 *
 * Commits are sent without waiting, on the loop (store_pg_commit.c); a connection found lost
 * by a worker's heartbeat is made again in the background (store_pg_tend.c); what the loop
 * reads on its own goes on the wake-up connection (store_pg_loop.c). The other calls wait
 * for the server (synchronous libpq, bounded by the connect timeout and statement_timeout set
 * on open), after a commit in flight has its results: opening a store, the CLI's commands
 * (one call each, no loop to keep), and what a request of `agentc serve` reads or writes in
 * its handler (a session loaded, listed, removed, forked; a lease taken).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "store_pg.h"

#define CACHE PG_CACHE
/* The connections other than this one that hold the lock of the holder named $1. */
#define OTHERS_OF_1                                                                                \
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "      \
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "             \
    "AND classid::bigint = 1634160196 AND pid <> pg_backend_pid() "                                \
    "AND objid::bigint = (hashtext($1)::bigint & 4294967295)"

static PGconn *CONN(ac_store *st)
{
    return ((pg_store *)st)->conn;
}

const char *ac_pg_msg(PGconn *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", c ? PQerrorMessage(c) : "out of memory");
    for (char *p = buf; *p; p++)
        if (*p == '\n')
            *p = *(p + 1) ? ' ' : 0;
    return buf;
}

int ac_pg_fail(ac_store *st, ac_error *err, const char *what)
{
    char m[600];
    ac_store_err(err, AC_EIO, "store '%s': %s: %s", st->path, what,
                 ac_pg_msg(CONN(st), m, sizeof m));
    return AC_EIO;
}

static int setup_conn(pg_store *s, ac_error *err);

/* A connection lost (the server restarted, the network): connected again, with the
 * statements to prepare again. */
static int reconnect(pg_store *s, ac_error *err)
{
    memset(s->sql, 0, sizeof s->sql);
    s->in_tx = 0;
    ac_store_blocked(&s->base, "connect", "PQreset", "connecting again");
    PQreset(s->conn);
    if (PQstatus(s->conn) != CONNECTION_OK)
        return ac_pg_fail(&s->base, err, "connecting again");
    s->stale = 0;
    return setup_conn(s, err);
}

int ac_pg_ready(pg_store *s, ac_error *err)
{
    ac_pg_tend_stop(s);
    return s->stale || PQstatus(s->conn) != CONNECTION_OK ? reconnect(s, err) : AC_OK;
}

/* On the loop the store serves from (ac_store_serve_on), a connection lost is never made
 * again waiting: it is made in the background (or is being made already) and the call fails
 * at once, as when the database cannot be reached. NULL with err. */
static PGresult *not_waited(pg_store *s, ac_error *err, const char *what)
{
    if (!s->tend.state && !s->in_tx)
        ac_pg_tend_start(s, s->base.serving, NULL);
    ac_store_err(err, AC_EIO,
                 "store '%s': %s: the connection to the database is lost (made again in the "
                 "background)",
                 s->base.path, what);
    return NULL;
}

/* sql prepared on its first use (by the address of its text), run with a's parameters: the
 * result, or NULL. */
static PGresult *exec_once(pg_store *s, const char *sql, const pargs *a)
{
    int k = 0;
    while (k < CACHE && s->sql[k] && s->sql[k] != sql)
        k++;
    int n = a ? a->n : 0;
    const char *const *v = a ? a->v : NULL;
    if (k == CACHE)
        return PQexecParams(s->conn, sql, n, NULL, v, NULL, NULL, 0);
    char name[16];
    snprintf(name, sizeof name, "q%d", k);
    if (!s->sql[k]) {
        PGresult *p = PQprepare(s->conn, name, sql, n, NULL);
        int ok = PQresultStatus(p) == PGRES_COMMAND_OK;
        PQclear(p);
        if (!ok)
            return NULL;
        s->sql[k] = sql;
    }
    return PQexecPrepared(s->conn, name, n, v, NULL, NULL, 0);
}

static int res_ok(const PGresult *r)
{
    ExecStatusType t = PQresultStatus(r);
    return r && (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK);
}

/* Runs sql (a string literal) with a's parameters: the result, or NULL with err filled. A
 * connection lost (the server restarted) is made again before a transaction, never inside
 * one (what it wrote is gone: the operation fails); on the loop the store serves from, in the
 * background, the operation failing at once (not_waited). */
PGresult *ac_pg_q(ac_store *st, const char *sql, const pargs *a, ac_error *err, const char *what)
{
    pg_store *s = (pg_store *)st;
    int serving = st->serving != NULL;
    if (serving && s->job.state == 1 && s->job.waiting)
        return not_waited(s, err, what); /* a commit waits for the connection made again */
    ac_pg_job_drain(s); /* a commit in flight has the connection until its results are in */
    if (serving && s->tend.state)
        return not_waited(s, err, what);
    ac_pg_tend_stop(s); /* made again here, waiting, if it was being made in the background */
    if (!strcmp(sql, "BEGIN"))
        s->in_tx = 0;      /* a BEGIN that failed left none */
    int fresh = !s->in_tx; /* may connect again */
    if (s->stale || PQstatus(s->conn) != CONNECTION_OK) {
        if (fresh && serving)
            return not_waited(s, err, what);
        if (!fresh || reconnect(s, err) != AC_OK) {
            if (!fresh)
                ac_pg_fail(st, err, what);
            return NULL;
        }
    }
    if (!strcmp(sql, "BEGIN") || !strcmp(sql, "COMMIT"))
        s->in_tx = sql[0] == 'B';
    ac_store_blocked(st, "statement", sql, what);
    PGresult *r = exec_once(s, sql, a);
    if (!res_ok(r) && fresh && PQstatus(s->conn) != CONNECTION_OK) {
        PQclear(r); /* the connection was found lost by this statement: once again */
        if (serving)
            return not_waited(s, err, what);
        if (reconnect(s, err) != AC_OK)
            return NULL;
        ac_store_blocked(st, "statement", sql, what);
        r = exec_once(s, sql, a);
    }
    if (res_ok(r))
        return r;
    PQclear(r);
    ac_pg_fail(st, err, what);
    return NULL;
}

/* A statement without rows: AC_OK or AC_EIO; *changed the rows it wrote. */
static int run(ac_store *st, const char *sql, const pargs *a, int *changed, ac_error *err,
               const char *what)
{
    PGresult *r = ac_pg_q(st, sql, a, err, what);
    if (!r)
        return AC_EIO;
    if (changed) { /* "" for a statement that reports no count */
        char *end;
        long k = strtol(PQcmdTuples(r), &end, 10);
        *changed = end != PQcmdTuples(r) && k >= 0 && k <= INT_MAX ? (int)k : 0;
    }
    PQclear(r);
    return AC_OK;
}

void ac_pg_rollback(ac_store *st)
{
    ((pg_store *)st)->in_tx = 0;
    ac_store_blocked(st, "statement", "ROLLBACK", "rolling back");
    PQclear(PQexec(CONN(st), "ROLLBACK"));
}

static int no_session(ac_store *st, const char *id, ac_error *err)
{
    ac_store_err(err, AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path, id);
    return AC_STORE_ENOENT;
}

static int oom(ac_error *err)
{
    ac_store_err(err, AC_ENOMEM, "out of memory");
    return AC_ENOMEM;
}

static long long ival(const PGresult *r, int row, int c)
{
    return strtoll(PQgetvalue(r, row, c), NULL, 10);
}

static const char *nval(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) ? NULL : PQgetvalue(r, row, c);
}

static void pg_close(ac_store *st)
{
    pg_store *s = (pg_store *)st;
    if (s->conn)
        ac_pg_job_cancel(s);
    ac_pg_tend_stop(s);
    PQfinish(s->conn);
    free(s->conninfo);
    free(st->path);
    free(st);
}

#define INFO_COLS PG_INFO_COLS

void ac_pg_fill_info(const PGresult *r, int i, ac_store_session_info *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", PQgetvalue(r, i, 0));
    snprintf(o->spec_hash, sizeof o->spec_hash, "%s", PQgetvalue(r, i, 1));
    snprintf(o->status, sizeof o->status, "%s", PQgetvalue(r, i, 2));
    o->at_rest = (int)ival(r, i, 3);
    o->created_ms = ival(r, i, 4);
    o->updated_ms = ival(r, i, 5);
    o->events = (uint64_t)ival(r, i, 6);
    o->snapshot_seq = (uint64_t)ival(r, i, 7);
    long long until = ival(r, i, 9), now = ival(r, i, 11);
    if (until > now && !strcmp(PQgetvalue(r, i, 12), "t")) {
        snprintf(o->holder, sizeof o->holder, "%s", PQgetvalue(r, i, 8));
        o->lease_expires_ms = until;
    }
    snprintf(o->title, sizeof o->title, "%s", PQgetvalue(r, i, 10));
    o->attempt = ival(r, i, 13);
}

void ac_pg_claimed(const PGresult *r, int i, ac_store_session_info *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", PQgetvalue(r, i, 0));
    o->created_ms = ival(r, i, 1);
    snprintf(o->holder, sizeof o->holder, "%s", PQgetvalue(r, i, 2));
    o->attempt = ival(r, i, 3);
}

static int pg_info(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    PGresult *r = ac_pg_q(st, "SELECT " INFO_COLS " FROM sessions WHERE id = $1", &a, err,
                          "reading a session");
    if (!r)
        return AC_EIO;
    int found = PQntuples(r) > 0;
    if (found)
        ac_pg_fill_info(r, 0, out);
    PQclear(r);
    return found ? AC_OK : no_session(st, id, err);
}

static int pg_list(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err)
{
    PGresult *r = ac_pg_q(st, PG_LIST_SQL, NULL, err, "listing sessions");
    if (!r)
        return AC_EIO;
    for (int i = 0; i < PQntuples(r); i++) {
        ac_store_session_info info;
        ac_pg_fill_info(r, i, &info);
        if (fn(ud, &info))
            break;
    }
    PQclear(r);
    return AC_OK;
}

/* Inside a transaction: locks the session's row (a row another transaction writes is busy,
 * not waited for) and says whether holder may write it: AC_OK, AC_STORE_EBUSY naming the
 * other holder, AC_STORE_ENOENT, or AC_EIO. */
static int lease_check(ac_store *st, const char *id, const char *holder, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    PGresult *r =
        ac_pg_q(st,
                "SELECT holder, lease_until, " NOW ", " ALIVE " FROM sessions WHERE id = $1 "
                "FOR UPDATE SKIP LOCKED",
                &a, err, "reading a lease");
    if (!r)
        return AC_EIO;
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = ac_pg_q(st, "SELECT holder FROM sessions WHERE id = $1", &a, err, "reading a lease");
        if (!r)
            return AC_EIO;
        int exists = PQntuples(r) > 0;
        if (exists)
            ac_store_err(err, AC_STORE_EBUSY,
                         "session '%s' is in use by %s (being written by it now)", id,
                         PQgetvalue(r, 0, 0));
        PQclear(r);
        return exists ? AC_STORE_EBUSY : no_session(st, id, err);
    }
    const char *h = PQgetvalue(r, 0, 0);
    long long until = ival(r, 0, 1), now = ival(r, 0, 2);
    int ok = until <= now || !*h || (holder && !strcmp(h, holder)) ||
             strcmp(PQgetvalue(r, 0, 3), "t") != 0; /* its holder is gone */
    if (!ok)
        ac_store_err(err, AC_STORE_EBUSY,
                     "session '%s' is in use by %s (its lease runs %lld s more, renewed while "
                     "that holder runs; it ends at once when its connection closes)",
                     id, h, (until - now + 999) / 1000);
    PQclear(r);
    return ok ? AC_OK : AC_STORE_EBUSY;
}

/* The INSERT of a new session row: AC_OK, AC_EINVAL when it exists (nothing written, the
 * transaction still good), or AC_EIO. */
static int insert_row(ac_store *st, const char *id, const char *spec_hash, const char *params,
                      const char *holder, int64_t lease_ms, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, spec_hash);
    p_s(&a, params ? params : "{}");
    p_s(&a, holder);
    p_i(&a, lease_ms);
    int changed = 0;
    int rc = run(st, PG_CREATE_SQL, &a, &changed, err, "creating a session");
    if (rc == AC_OK && !changed) {
        ac_store_err(err, AC_EINVAL, "store '%s' already has a session '%s'", st->path, id);
        return AC_EINVAL;
    }
    return rc;
}

static int pg_create(ac_store *st, const char *id, const char *spec_hash, const char *params,
                     const char *holder, int64_t lease_ms, ac_error *err)
{
    return insert_row(st, id, spec_hash, params, holder, lease_ms, err);
}

/* One statement of a transaction, rolled back when it fails. */
static int tx(ac_store *st, const char *sql, const pargs *a, ac_error *err, const char *what)
{
    int rc = run(st, sql, a, NULL, err, what);
    if (rc != AC_OK)
        ac_pg_rollback(st);
    return rc;
}

/* Inside a transaction, the row locked: AC_OK while the session's row has attempt (0: any),
 * else AC_STORE_EBUSY (fenced: its lease was taken since that attempt), or AC_EIO. */
static int attempt_check(ac_store *st, const char *id, const char *holder, int64_t attempt,
                         ac_error *err)
{
    if (attempt <= 0)
        return AC_OK;
    pargs a = {0};
    p_s(&a, id);
    PGresult *r =
        ac_pg_q(st, "SELECT attempt FROM sessions WHERE id = $1", &a, err, "reading a lease");
    if (!r)
        return AC_EIO;
    int ok = PQntuples(r) > 0 && ival(r, 0, 0) == attempt;
    PQclear(r);
    ac_store_commit c = {.id = id, .holder = holder, .attempt = attempt};
    return ok ? AC_OK : ac_store_fenced(st, &c, err);
}

static int pg_rm(ac_store *st, const char *id, const char *holder, int64_t attempt, ac_error *err)
{
    int rc = tx(st, "BEGIN", NULL, err, "removing a session");
    if (rc != AC_OK)
        return rc;
    if ((rc = lease_check(st, id, holder, err)) != AC_OK ||
        (rc = attempt_check(st, id, holder, attempt, err)) != AC_OK) {
        ac_pg_rollback(st);
        return rc;
    }
    static const char *const del[] = {
        "DELETE FROM events WHERE session = $1", "DELETE FROM notes WHERE session = $1",
        "DELETE FROM snapshots WHERE session = $1", "DELETE FROM tool_calls WHERE session = $1",
        "DELETE FROM sessions WHERE id = $1"};
    pargs a = {0};
    p_s(&a, id);
    for (size_t i = 0; i < sizeof del / sizeof del[0]; i++)
        if ((rc = tx(st, del[i], &a, err, "removing a session")) != AC_OK)
            return rc;
    return tx(st, "COMMIT", NULL, err, "removing a session");
}

/* Calls fn for rows of r as events (columns n, t_ms, ev, data, steps). */
static int rows_as_events(PGresult *r, ac_store_event_fn fn, void *ud)
{
    int out = AC_OK;
    for (int i = 0; !out && i < PQntuples(r); i++) {
        ac_store_event e = {(uint64_t)ival(r, i, 0), ival(r, i, 1), PQgetvalue(r, i, 2),
                            nval(r, i, 3), PQnfields(r) > 4 ? nval(r, i, 4) : NULL};
        out = fn(ud, &e);
    }
    PQclear(r);
    return out;
}

static int pg_events(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                     ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    p_i(&a, after > INT64_MAX ? INT64_MAX : (long long)after);
    PGresult *r = ac_pg_q(st, PG_EVENTS_SQL, &a, err, "reading the journal");
    return r ? rows_as_events(r, fn, ud) : AC_EIO;
}

static int pg_notes(ac_store *st, const char *id, ac_store_event_fn fn, void *ud, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    PGresult *r = ac_pg_q(st,
                          "SELECT after, t_ms, kind, body FROM notes WHERE session = $1 "
                          "ORDER BY after, id",
                          &a, err, "reading notes");
    return r ? rows_as_events(r, fn, ud) : AC_EIO;
}

/* The first column of the first row of sql run with a: *out malloc'd (NULL: no row or a
 * NULL); *found whether there was a row; *n the second column when n. */
static int get_text(ac_store *st, const char *sql, const pargs *a, char **out, int *found,
                    uint64_t *n, ac_error *err, const char *what)
{
    *out = NULL;
    PGresult *r = ac_pg_q(st, sql, a, err, what);
    if (!r)
        return AC_EIO;
    *found = PQntuples(r) > 0;
    const char *v = *found ? nval(r, 0, 0) : NULL;
    if (*found && n)
        *n = (uint64_t)ival(r, 0, 1);
    int bad = v && !(*out = strdup(v));
    PQclear(r);
    return bad ? oom(err) : AC_OK;
}

static int pg_params(ac_store *st, const char *id, char **out, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    int found = 0;
    int rc = get_text(st, "SELECT params FROM sessions WHERE id = $1", &a, out, &found, NULL, err,
                      "reading a session");
    return rc == AC_OK && !found ? no_session(st, id, err) : rc;
}

static int pg_agent(ac_store *st, const char *id, char **out, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    int found = 0;
    int rc = get_text(st, "SELECT agent FROM sessions WHERE id = $1", &a, out, &found, NULL, err,
                      "reading a session");
    return rc == AC_OK && !found ? no_session(st, id, err) : rc;
}

static int pg_snapshot_get(ac_store *st, const char *id, uint64_t upto, uint64_t *n, char **body,
                           ac_error *err)
{
    *n = 0;
    pargs a = {0};
    p_s(&a, id);
    p_i(&a, upto > INT64_MAX ? INT64_MAX : (long long)upto);
    int found = 0;
    return get_text(st, PG_SNAPSHOT_SQL, &a, body, &found, n, err, "reading a snapshot");
}

static int pg_tool_calls(ac_store *st, const char *id, ac_store_call_fn fn, void *ud, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    PGresult *r = ac_pg_q(st, PG_TOOL_CALLS_SQL, &a, err, "reading tool calls");
    if (!r)
        return AC_EIO;
    for (int i = 0; i < PQntuples(r); i++)
        if (fn(ud, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), ival(r, i, 2), ival(r, i, 3),
               (int)ival(r, i, 4)))
            break;
    PQclear(r);
    return AC_OK;
}

static int pg_snapshots(ac_store *st, const char *id, ac_store_snap_fn fn, void *ud, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    PGresult *r = ac_pg_q(st, "SELECT n, body, kept FROM snapshots WHERE session = $1 ORDER BY n",
                          &a, err, "reading snapshots");
    if (!r)
        return AC_EIO;
    for (int i = 0; i < PQntuples(r); i++)
        if (fn(ud, (uint64_t)ival(r, i, 0), PQgetvalue(r, i, 1), (int)ival(r, i, 2)))
            break;
    PQclear(r);
    return AC_OK;
}

static int pg_lease_acquire(ac_store *st, const char *id, const char *holder, int64_t lease_ms,
                            int64_t *attempt, ac_error *err)
{
    int rc = run(st, "BEGIN", NULL, NULL, err, "taking a lease");
    if (rc != AC_OK)
        return rc;
    if ((rc = lease_check(st, id, holder, err)) != AC_OK) {
        ac_pg_rollback(st);
        return rc;
    }
    pargs a = {0};
    p_s(&a, holder);
    p_i(&a, lease_ms);
    p_s(&a, id);
    PGresult *r = ac_pg_q(st,
                          "UPDATE sessions SET holder = $1, lease_until = " NOW " + $2, "
                          "attempt = attempt + 1 WHERE id = $3 RETURNING attempt",
                          &a, err, "taking a lease");
    if (!r) {
        ac_pg_rollback(st);
        return AC_EIO;
    }
    if (attempt && PQntuples(r) == 1)
        *attempt = ival(r, 0, 0);
    PQclear(r);
    return tx(st, "COMMIT", NULL, err, "taking a lease");
}

static int pg_lease_release(ac_store *st, const char *id, const char *holder, int64_t attempt,
                            ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    p_s(&a, holder);
    p_i(&a, attempt);
    return run(st, PG_RELEASE_SQL, &a, NULL, err, "releasing a lease");
}

static int pg_note(ac_store *st, const char *id, uint64_t n, int64_t t_ms, const char *kind,
                   const char *body, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    p_i(&a, (long long)n);
    p_i(&a, t_ms);
    p_s(&a, kind);
    p_s(&a, body);
    return run(st, "INSERT INTO notes(session, after, t_ms, kind, body) VALUES($1, $2, $3, $4, $5)",
               &a, NULL, err, "writing a note");
}

static int pg_forget(ac_store *st, const char *id, uint64_t upto, ac_error *err)
{
    pargs a = {0};
    p_s(&a, id);
    p_i(&a, upto > INT64_MAX ? INT64_MAX : (long long)upto);
    return run(st, "DELETE FROM events WHERE session = $1 AND n <= $2", &a, NULL, err,
               "dropping old events");
}

void ac_pg_fork_args(const ac_store_fork_row *f, pargs *a)
{
    p_s(a, f->to);
    p_s(a, f->from);
    p_i(a, (long long)f->upto);
    p_s(a, f->spec_hash);
    p_s(a, f->status);
    p_i(a, f->at_rest);
    p_s(a, f->agent);
    p_s(a, f->snapshot);
    p_i(a, f->t_ms);
    p_s(a, f->note);
}

/* One statement (PG_FORK_SQL, its own transaction): what it made, or why it made nothing. */
static int pg_fork(ac_store *st, const ac_store_fork_row *f, ac_error *err)
{
    pargs a = {0};
    ac_pg_fork_args(f, &a);
    PGresult *r = ac_pg_q(st, PG_FORK_SQL, &a, err, "forking a session");
    if (!r)
        return AC_EIO;
    int made = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "1") == 0;
    int from = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") == 0;
    PQclear(r);
    if (made)
        return AC_OK;
    if (!from)
        return no_session(st, f->from, err);
    ac_store_err(err, AC_EINVAL, "store '%s' already has a session '%s'", st->path, f->to);
    return AC_EINVAL;
}

/* ---- workers (store.h): a row each, the claim of what a gone worker left ---- */

static int pg_worker_join(ac_store *st, const char *listen, ac_error *err)
{
    pargs a = {0};
    p_s(&a, st->holder);
    PGresult *r = ac_pg_q(st, OTHERS_OF_1, &a, err, "joining as a worker");
    if (!r)
        return AC_EIO;
    long long others = ival(r, 0, 0);
    PQclear(r);
    if (others > 0) {
        ac_store_err(err, AC_STORE_EBUSY,
                     "store '%s': a live worker runs as '%s' already (worker ids are unique)",
                     st->path, st->holder);
        return AC_STORE_EBUSY;
    }
    p_s(&a, listen);
    p_i(&a, st->lease_ms);
    int rc = run(st, "DELETE FROM workers WHERE heartbeat_ms < " NOW " - 3600000", NULL, NULL, err,
                 "joining as a worker");
    if (rc == AC_OK)
        rc = run(st,
                 "INSERT INTO workers(id, listen, lease_ms, started_ms, heartbeat_ms) "
                 "VALUES($1, $2, $3, " NOW ", " NOW ") ON CONFLICT(id) DO UPDATE SET "
                 "listen = $2, lease_ms = $3, started_ms = " NOW ", heartbeat_ms = " NOW,
                 &a, NULL, err, "joining as a worker");
    return rc;
}

static int pg_worker_beat(ac_store *st, ac_error *err)
{
    pargs a = {0};
    p_s(&a, st->holder);
    return run(st, PG_BEAT_SQL, &a, NULL, err, "renewing its worker");
}

static int pg_worker_leave(ac_store *st, ac_error *err)
{
    pargs a = {0};
    p_s(&a, st->holder);
    return run(st, "DELETE FROM workers WHERE id = $1", &a, NULL, err, "leaving as a worker");
}

static int pg_workers(ac_store *st, ac_store_worker_fn fn, void *ud, ac_error *err)
{
    pargs a = {0};
    p_s(&a, st->holder);
    PGresult *r =
        ac_pg_q(st,
                "SELECT id, listen, started_ms, heartbeat_ms, (SELECT count(*) FROM "
                "sessions WHERE sessions.holder = w.id AND lease_until > " NOW "), "
                "heartbeat_ms + lease_ms > " NOW " AND (SELECT " ALIVE " FROM (SELECT w.id "
                "AS holder) h) FROM workers w ORDER BY id <> $1, id",
                &a, err, "listing workers");
    if (!r)
        return AC_EIO;
    for (int i = 0; i < PQntuples(r); i++) {
        ac_store_worker w;
        memset(&w, 0, sizeof w);
        snprintf(w.id, sizeof w.id, "%s", PQgetvalue(r, i, 0));
        snprintf(w.listen, sizeof w.listen, "%s", PQgetvalue(r, i, 1));
        w.started_ms = ival(r, i, 2);
        w.heartbeat_ms = ival(r, i, 3);
        w.sessions = (uint64_t)ival(r, i, 4);
        w.alive = !strcmp(PQgetvalue(r, i, 5), "t");
        if (fn(ud, &w))
            break;
    }
    PQclear(r);
    return AC_OK;
}

static int pg_claim(ac_store *st, size_t max, int mine, int64_t lease_ms, ac_store_list_fn fn,
                    void *ud, ac_error *err)
{
    pargs a = {0};
    p_s(&a, st->holder);
    p_i(&a, mine);
    p_i(&a, max > 1000000 ? 1000000 : (long long)max);
    p_i(&a, lease_ms);
    PGresult *r = ac_pg_q(st, PG_CLAIM_SQL, &a, err, "claiming sessions");
    if (!r)
        return AC_EIO;
    for (int i = 0; i < PQntuples(r); i++) {
        ac_store_session_info info;
        ac_pg_claimed(r, i, &info);
        if (fn(ud, &info))
            break;
    }
    PQclear(r);
    return AC_OK;
}

static const ac_store_ops PG_OPS = {
    "postgresql",
    pg_close,
    pg_create,
    pg_info,
    pg_list,
    pg_rm,
    ac_pg_commit,
    pg_events,
    pg_params,
    pg_snapshot_get,
    pg_tool_calls,
    pg_lease_acquire,
    pg_lease_release,
    pg_note,
    pg_notes,
    ac_pg_commit_many,
    pg_forget,
    pg_agent,
    pg_fork,
    pg_worker_join,
    pg_worker_beat,
    pg_worker_leave,
    pg_workers,
    pg_claim,
    ac_pg_commit_start,
    ac_pg_commit_wait,
    pg_snapshots,
    ac_pg_tend,
};

/* Takes agentc's keys out of the URI's query (kept: libpq's). *schema the value of
 * "schema" (default "agentc"); AC_EINVAL for a name that is not [A-Za-z0-9_]. */
int ac_store_pg_split_uri(const char *uri, char **conninfo, char *schema, size_t cap, ac_error *err)
{
    snprintf(schema, cap, "agentc");
    size_t len = strlen(uri);
    char *out = malloc(len + 1);
    if (!out)
        return oom(err);
    const char *q = strchr(uri, '?');
    size_t base = q ? (size_t)(q - uri) : len;
    memcpy(out, uri, base);
    size_t o = base;
    for (const char *p = q ? q + 1 : NULL; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 7 && !strncmp(p, "schema=", 7)) {
            snprintf(schema, cap, "%.*s", (int)(n - 7), p + 7);
        } else if (n) {
            out[o] = o == base ? '?' : '&';
            o++;
            memcpy(out + o, p, n);
            o += n;
        }
        p = end ? end + 1 : NULL;
    }
    out[o] = 0;
    *conninfo = out;
    if (!*schema || strspn(schema, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(schema)) {
        ac_store_err(err, AC_EINVAL,
                     "the store URI's schema must be lower-case letters, digits and _");
        free(out);
        *conninfo = NULL;
        return AC_EINVAL;
    }
    return AC_OK;
}

/* The URI shown in messages: without its password (user:PASSWORD@ becomes user@) and without
 * its query (libpq keys may carry one too: password=...). */
static char *shown_uri(const char *uri)
{
    char *s = strdup(uri);
    if (!s)
        return NULL;
    char *q = strchr(s, '?');
    if (q)
        *q = 0;
    char *scheme = strstr(s, "://");
    char *at = scheme ? strchr(scheme + 3, '@') : NULL;
    char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
    if (at && colon && colon < at)
        memmove(colon, at, strlen(at) + 1);
    return s;
}

int ac_store_is_pg_uri(const char *path)
{
    return path && (!strncmp(path, "postgresql://", 13) || !strncmp(path, "postgres://", 11));
}

/* The server's notices ("schema exists, skipping") are not the user's business. */
static void quiet(void *ud, const char *msg)
{
    (void)ud, (void)msg;
}

/* Connects with a bounded wait: connect_timeout unless the URI sets one. */
static int connect_db(pg_store *s, ac_error *err)
{
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {s->conninfo, "10", "agentc", NULL};
    s->conn = PQconnectdbParams(keys, vals, 1);
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(s->conn, quiet, NULL);
        return AC_OK;
    }
    char m[600];
    ac_store_err(err, AC_EIO, "cannot open store '%s': %s", s->base.path,
                 ac_pg_msg(s->conn, m, sizeof m));
    return AC_EIO;
}

/* What each connection is set up with: statements bounded, the store's schema first. */
static int setup_conn(pg_store *s, ac_error *err)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SET statement_timeout = %lld; SET idle_in_transaction_session_timeout = %lld; "
             "SET search_path TO \"%s\"",
             s->timeout_ms, s->idle_tx_ms, s->schema);
    if (ac_pg_exec_text(s, sql, err, "setting it up") != AC_OK)
        return AC_EIO;
    const char *v[1] = {s->base.holder};
    /* its holder's lock, and the lock of the schema version it runs (store_pg_schema.c) */
    PGresult *r =
        PQexecParams(s->conn,
                     "SELECT pg_advisory_lock_shared(1634160196, hashtext($1)), "
                     "pg_advisory_lock_shared(" PG_VERSION_LOCK ", " PG_SCHEMA_VERSION_S ")",
                     1, NULL, v, NULL, NULL, 0);
    int ok = res_ok(r);
    PQclear(r);
    return ok ? AC_OK : ac_pg_fail(&s->base, err, "taking its holder's lock");
}

/* Connects, sets up and migrates waiting for the server (bounded by connect_timeout and
 * statement_timeout): a store is opened before any loop serves with it (serve's start, the
 * CLI's commands), so nothing waits behind it; a migration that waits for older workers must
 * finish before this worker serves anyway. */
int ac_store_pg_open(const char *uri, const ac_store_options *opt, const char *holder,
                     ac_store **out, ac_error *err)
{
    *out = NULL;
    pg_store *s = calloc(1, sizeof *s);
    if (!s || !(s->base.path = shown_uri(uri))) {
        free(s);
        return oom(err);
    }
    s->base.ops = &PG_OPS;
    snprintf(s->base.holder, sizeof s->base.holder, "%s", holder);
    int rc = ac_store_pg_split_uri(uri, &s->conninfo, s->schema, sizeof s->schema, err);
    if (rc == AC_OK)
        rc = connect_db(s, err);
    s->timeout_ms = opt && opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 30000;
    /* A commit spans round trips (store_pg_commit.c): a worker stopped between two (SIGSTOP, a
     * frozen machine) would keep its transaction open and the session's row locked, and the
     * survivors' claims (FOR UPDATE SKIP LOCKED) would skip it for as long as it stays
     * stopped. The server ends a transaction idle that long (a lease, at least 3 s): its
     * locks go, the session is claimed once its lease lapsed, and the stopped worker finds
     * its connection gone and its commit failed (nothing of it written). */
    long long lease = opt && opt->lease_ms > 0 ? opt->lease_ms : 30000;
    s->idle_tx_ms = lease > 3000 ? lease : 3000;
    if (rc == AC_OK)
        rc = setup_conn(s, err);
    if (rc == AC_OK)
        rc = ac_pg_migrate(s, err);
    if (rc != AC_OK) {
        pg_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return AC_OK;
}
