/*
 * store_pg_commit.c - the PostgreSQL backend's commits (store_int.h: commit,
 * commit_many, commit_start, commit_wait): a group of sessions' commits written
 * in one transaction, each session's part in a savepoint, sent without waiting
 * on a non-blocking connection in pipeline mode. On a loop, the loop watches the
 * connection's socket and the result is a task of the loop's (never a call from
 * inside the reading); without one, the caller's wait polls the socket.
 *
 * Round trips: one per session's part and one for COMMIT. A part is one pipeline
 * (what settles the part before it: RELEASE or ROLLBACK TO its savepoint, or BEGIN
 * for the first; then SAVEPOINT, its statements and a sync), read whole before the
 * next is sent: its result decides whether it stays. A part whose session row was
 * not written (another holder's lease, a row to create that exists) is rolled
 * back, and its lease read to say why, in a pipeline of its own. Statements after
 * a failed one in a part are skipped by the server (pipeline mode), and whatever
 * a part wrote before it failed goes with its savepoint.
 *
 * Bounds: each pipeline waits at most the statement timeout plus 5 s (a timer on
 * the loop, poll's timeout without one); past it the connection is given up and
 * made again by the next operation. A connection lost mid-commit fails the whole
 * commit: nothing of it was written (the transaction died with the connection),
 * unless it was lost while COMMIT was under way, which the error says.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_pg.h"
#include "util/buf.h"

enum { PH_PART, PH_WHY, PH_END, PH_ABORT };
enum { K_BEGIN, K_RELEASE, K_ROLLBACK, K_NONE }; /* what comes before the next part */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void job_io(pg_store *s);
static void job_timeout(void *ud);
static int job_begin(pg_store *s);
static int job_start(pg_store *s);

static void send_failed(pg_store *s)
{
    if (!s->job.msg[0])
        ac_pg_msg(s->conn, s->job.msg, sizeof s->job.msg);
}

/* One statement into the pipeline (sent when the pipeline is flushed): the number of its
 * result. One with parameters is prepared on its first use, in the same pipeline, in the
 * connection's cache of statements (by the address of its text, as the other operations'
 * are); a prepare that fails or is skipped leaves its place empty again (take). */
static int put(pg_store *s, const char *sql, const pargs *a)
{
    pg_job *j = &s->job;
    int k = 0;
    while (a && k < PG_CACHE && s->sql[k] && s->sql[k] != sql)
        k++;
    if (!a || k == PG_CACHE ||
        (!s->sql[k] && j->n_prep == (int)(sizeof j->prep / sizeof j->prep[0]))) {
        if (!PQsendQueryParams(s->conn, sql, a ? a->n : 0, NULL, a ? a->v : NULL, NULL, NULL, 0))
            send_failed(s);
        return j->m++;
    }
    char name[16];
    snprintf(name, sizeof name, "q%d", k);
    if (!s->sql[k]) {
        if (!PQsendPrepare(s->conn, name, sql, a->n, NULL))
            send_failed(s);
        s->sql[k] = sql;
        j->prep[j->n_prep][0] = j->m++;
        j->prep[j->n_prep++][1] = k;
    }
    if (!PQsendQueryPrepared(s->conn, name, a->n, a->v, NULL, NULL, 0))
        send_failed(s);
    return j->m++;
}

/* The pipeline begins: nothing read of it yet. */
static void open_pipe(pg_store *s, int phase)
{
    pg_job *j = &s->job;
    j->phase = phase;
    j->m = j->got = j->got_one = j->n_prep = 0;
    j->ins = j->row = j->why = j->fail_at = -1;
    j->changed_ins = j->changed_row = -1;
    j->msg[0] = 0;
}

/* What settles the part before (or BEGIN), then the sync: the pipeline is on its way. */
static void prefix(pg_store *s)
{
    static const char *const SQL[] = {"BEGIN", "RELEASE SAVEPOINT one",
                                      "ROLLBACK TO SAVEPOINT one"};
    int k = s->job.keep;
    if (k != K_NONE)
        put(s, SQL[k], NULL);
    if (k == K_ROLLBACK)
        put(s, SQL[K_RELEASE], NULL);
}

static void close_pipe(pg_store *s)
{
    pg_job *j = &s->job;
    if (!PQpipelineSync(s->conn) && !j->msg[0])
        ac_pg_msg(s->conn, j->msg, sizeof j->msg);
    j->deadline = mono_ms() + s->timeout_ms + 5000;
    if (j->loop) {
        ac_loop_cancel_timer(j->loop, j->timer);
        j->timer = ac_loop_timer(j->loop, s->timeout_ms + 5000, job_timeout, s);
        int f = PQflush(s->conn);
        ac_loop_watch_events(j->loop, j->watch, AC_LOOP_READ | (f == 1 ? AC_LOOP_WRITE : 0));
    }
}

/* ---- a session's statements ---- */

/* The session row, fenced by its holder and attempt (no row changed: the lease is another's,
 * or was taken again since this holder's attempt). */
static void put_row(pg_store *s, const ac_store_commit *c)
{
    pargs a = {0};
    p_s(&a, c->status ? c->status : "running");
    p_i(&a, c->at_rest);
    p_i(&a, c->n_evs ? (long long)c->evs[c->n_evs - 1].n : 0);
    p_s(&a, c->release ? "" : c->holder);
    p_i(&a, c->release ? -1 : c->lease_ms);
    p_s(&a, c->title);
    p_s(&a, c->spec_hash);
    p_i(&a, c->snapshot ? (long long)c->snapshot_n : 0);
    p_s(&a, c->agent);
    p_s(&a, c->id);
    p_s(&a, c->holder);
    p_i(&a, c->attempt);
    s->job.row = put(s,
                     "UPDATE sessions SET status = $1, at_rest = $2, updated_ms = " NOW ", "
                     "events = greatest(events, $3), holder = $4, "
                     "lease_until = CASE WHEN $5::bigint < 0 THEN 0 ELSE " NOW " + $5 END, "
                     "title = coalesce($6, title), spec_hash = coalesce($7, spec_hash), "
                     "snapshot_seq = CASE WHEN $8::bigint > 0 THEN $8 ELSE snapshot_seq END, "
                     "agent = coalesce($9, agent) "
                     "WHERE id = $10 AND (lease_until <= " NOW " OR holder = '' OR holder = $11) "
                     "AND attempt = $12",
                     &a);
}

static void put_create(pg_store *s, const ac_store_commit *c)
{
    pargs a = {0};
    p_s(&a, c->id);
    p_s(&a, c->create_hash);
    p_s(&a, c->create_params ? c->create_params : "{}");
    p_s(&a, c->holder);
    p_i(&a, c->lease_ms);
    s->job.ins = put(s, PG_CREATE_SQL, &a);
}

/* Appends v to an array literal being built in b: "v" with " and \\ escaped, or NULL. */
static void arr_text(ac_buf *b, const char *v)
{
    if (b->n > 1)
        ac_buf_add(b, ",", 1);
    if (!v) {
        ac_buf_addstr(b, "NULL");
        return;
    }
    ac_buf_add(b, "\"", 1);
    for (const char *p = v; *p; p++) {
        size_t run = strcspn(p, "\"\\");
        ac_buf_add(b, p, run);
        p += run;
        if (!*p)
            break;
        ac_buf_add(b, "\\", 1);
        ac_buf_add(b, p, 1);
    }
    ac_buf_add(b, "\"", 1);
}

/* The events of a commit in one statement (arrays of their columns, unnested). */
static void put_events(pg_store *s, const ac_store_commit *c)
{
    if (!c->n_evs)
        return;
    ac_buf col[5];
    for (int k = 0; k < 5; k++) {
        ac_buf_init(&col[k], AC_BUF_MAX);
        ac_buf_add(&col[k], "{", 1);
    }
    for (size_t i = 0; i < c->n_evs; i++) {
        const ac_store_event *e = &c->evs[i];
        ac_buf_printf(&col[0], "%s%llu", i ? "," : "", (unsigned long long)e->n);
        ac_buf_printf(&col[1], "%s%lld", i ? "," : "", (long long)e->t_ms);
        arr_text(&col[2], e->ev);
        arr_text(&col[3], e->data);
        arr_text(&col[4], e->steps);
    }
    pargs a = {0};
    p_s(&a, c->id);
    int bad = 0;
    for (int k = 0; k < 5; k++) {
        bad |= ac_buf_add(&col[k], "}", 1) != 0;
        p_s(&a, col[k].p);
    }
    if (bad) /* a statement that fails: the part fails, saying why */
        put(s, "SELECT 'out of memory'::int", NULL);
    else
        put(s,
            "INSERT INTO events(session, n, t_ms, ev, data, steps) SELECT $1::text, * "
            "FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[])",
            &a);
    for (int k = 0; k < 5; k++)
        ac_buf_free(&col[k]);
}

static void put_calls(pg_store *s, const ac_store_commit *c)
{
    for (size_t i = 0; i < c->n_late; i++) {
        pargs a = {0};
        p_s(&a, c->late[i].steps);
        p_s(&a, c->id);
        p_i(&a, (long long)c->late[i].n);
        put(s, "UPDATE events SET steps = $1 WHERE session = $2 AND n = $3", &a);
    }
    for (size_t i = 0; i < c->n_finished; i++) {
        pargs a = {0};
        p_i(&a, c->finished_ok[i]);
        p_s(&a, c->id);
        p_s(&a, c->finished[i]);
        put(s,
            "UPDATE tool_calls SET finished_ms = " NOW ", ok = $1 "
            "WHERE session = $2 AND call_id = $3",
            &a);
    }
    for (size_t i = 0; i < c->n_started; i++) {
        pargs a = {0};
        p_s(&a, c->id);
        p_s(&a, c->started[i]);
        p_s(&a, c->started_names[i]);
        put(s,
            "INSERT INTO tool_calls(session, call_id, name, started_ms) "
            "VALUES($1, $2, $3, " NOW ") ON CONFLICT DO NOTHING",
            &a);
    }
}

/* A new snapshot replaces the latest unless that one is kept; one taken again at a kept
 * one's event stays kept. */
static void put_snapshot(pg_store *s, const ac_store_commit *c)
{
    if (!c->snapshot)
        return;
    pargs a = {0};
    p_s(&a, c->id);
    put(s, "DELETE FROM snapshots WHERE session = $1 AND kept = 0", &a);
    p_i(&a, (long long)c->snapshot_n);
    p_s(&a, c->snapshot);
    p_i(&a, c->snapshot_keep);
    put(s,
        "INSERT INTO snapshots(session, n, body, kept) VALUES($1, $2, $3, $4) "
        "ON CONFLICT(session, n) DO UPDATE SET body = excluded.body, "
        "kept = greatest(snapshots.kept, excluded.kept)",
        &a);
}

/* ---- the pipelines ---- */

static void send_part(pg_store *s)
{
    pg_job *j = &s->job;
    const ac_store_commit *c = &j->c[j->i];
    open_pipe(s, PH_PART);
    prefix(s);
    put(s, "SAVEPOINT one", NULL);
    j->body = j->m;
    if (c->create)
        put_create(s, c);
    put_row(s, c);
    put_events(s, c);
    put_calls(s, c);
    put_snapshot(s, c);
    close_pipe(s);
}

/* The part's row was not written: rolled back, and its lease read to say why. */
static void send_why(pg_store *s)
{
    pg_job *j = &s->job;
    open_pipe(s, PH_WHY);
    j->keep = K_ROLLBACK;
    prefix(s);
    pargs a = {0};
    p_s(&a, j->c[j->i].id);
    j->why =
        put(s, "SELECT holder, lease_until, " NOW ", " ALIVE " FROM sessions WHERE id = $1", &a);
    close_pipe(s);
}

static void send_end(pg_store *s, int phase)
{
    open_pipe(s, phase);
    if (phase == PH_END)
        prefix(s);
    put(s, phase == PH_END ? "COMMIT" : "ROLLBACK", NULL);
    close_pipe(s);
    s->job.commit_sent = phase == PH_END && !s->job.msg[0];
}

/* The job has its results: the connection back to blocking, done to run. */
static void job_complete(pg_store *s)
{
    pg_job *j = &s->job;
    if (PQpipelineStatus(s->conn) != PQ_PIPELINE_OFF && !PQexitPipelineMode(s->conn))
        s->stale = 1; /* results left unread: the connection is not used again */
    PQsetnonblocking(s->conn, 0);
    PQclear(j->lease);
    j->lease = NULL;
    if (j->loop) {
        ac_loop_unwatch(j->loop, j->watch);
        ac_loop_cancel_timer(j->loop, j->timer);
        j->watch = j->timer = 0;
    }
    j->state = 2;
    if (j->loop && j->done)
        ac_loop_defer(j->loop, &j->task);
}

/* The transaction failed (why: its text): every commit fails with it, nothing written. */
static void fail_all(pg_store *s, const char *why, int alive)
{
    pg_job *j = &s->job;
    for (size_t i = 0; i < j->n; i++)
        ac_store_err(&j->errs[i], AC_EIO, "store '%s': committing: %s", s->base.path, why);
    *j->rc = AC_EIO;
    for (size_t i = 0; i < j->n; i++)
        j->rcs[i] = AC_EIO;
    if (alive && PQstatus(s->conn) == CONNECTION_OK && !s->stale && j->phase != PH_ABORT) {
        send_end(s, PH_ABORT);
        return;
    }
    job_complete(s);
}

/* The lease read after a part's row was not written: why. */
static void part_refused(pg_store *s)
{
    pg_job *j = &s->job;
    const ac_store_commit *c = &j->c[j->i];
    ac_error *e = &j->errs[j->i];
    PGresult *r = j->lease;
    if (!r || PQntuples(r) == 0) {
        ac_store_err(e, j->rcs[j->i] = AC_STORE_ENOENT, "store '%s' has no session '%s'",
                     s->base.path, c->id);
        return;
    }
    const char *h = PQgetvalue(r, 0, 0);
    long long until = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    long long now = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    if (until > now && *h && strcmp(h, c->holder) != 0 && !strcmp(PQgetvalue(r, 0, 3), "t"))
        ac_store_err(e, j->rcs[j->i] = AC_STORE_EBUSY,
                     "session '%s' is in use by %s (its lease runs %lld s more, renewed while "
                     "that holder runs; it ends at once when its connection closes)",
                     c->id, h, (until - now + 999) / 1000);
    else if (until > now && *h && strcmp(h, c->holder) != 0)
        ac_store_err(e, j->rcs[j->i] = AC_STORE_EBUSY,
                     "session '%s' is in use by %s (being written by it now)", c->id, h);
    else /* its holder's, or free: taken again since this writer's attempt */
        j->rcs[j->i] = ac_store_fenced(&s->base, c, e);
}

/* A part's pipeline read whole: it stays, fails alone, or fails the transaction. */
static void part_read(pg_store *s)
{
    pg_job *j = &s->job;
    const ac_store_commit *c = &j->c[j->i];
    if (j->fail_at >= 0 && j->fail_at < j->body) {
        fail_all(s, j->msg, 1);
        return;
    }
    j->keep = K_ROLLBACK;
    /* the row first: a statement after a row not written may fail for that reason (events a
     * lease's new holder wrote), and then the lease says why */
    if (j->fail_at >= 0 && j->fail_at <= j->row) {
        ac_store_err(&j->errs[j->i], j->rcs[j->i] = AC_EIO, "store '%s': committing: %s",
                     s->base.path, j->msg);
    } else if (j->ins >= 0 && j->changed_ins == 0) {
        ac_store_err(&j->errs[j->i], j->rcs[j->i] = AC_EINVAL,
                     "store '%s' already has a session '%s'", s->base.path, c->id);
    } else if (j->changed_row == 0) {
        send_why(s);
        return;
    } else if (j->fail_at >= 0) {
        ac_store_err(&j->errs[j->i], j->rcs[j->i] = AC_EIO, "store '%s': committing: %s",
                     s->base.path, j->msg);
    } else {
        j->keep = K_RELEASE;
    }
    if (++j->i < j->n)
        send_part(s);
    else
        send_end(s, PH_END);
}

/* A pipeline's sync came: the next step. */
static void step(pg_store *s)
{
    pg_job *j = &s->job;
    switch (j->phase) {
    case PH_PART:
        part_read(s);
        return;
    case PH_WHY:
        if (j->fail_at >= 0) {
            fail_all(s, j->msg, 1);
            return;
        }
        part_refused(s);
        j->keep = K_NONE;
        if (++j->i < j->n)
            send_part(s);
        else
            send_end(s, PH_END);
        return;
    case PH_END:
        if (j->fail_at >= 0) {
            fail_all(s, j->msg, 1);
            return;
        }
        *j->rc = AC_OK;
        job_complete(s);
        return;
    default: /* PH_ABORT: rolled back (or not: the server drops it with the connection) */
        job_complete(s);
    }
}

/* One result of the statement being read. */
static void take(pg_store *s, PGresult *r)
{
    pg_job *j = &s->job;
    ExecStatusType t = PQresultStatus(r);
    if (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK) {
        j->answered = 1; /* the server's (libpq makes an error of a lost connection) */
        char *end;
        long k = strtol(PQcmdTuples(r), &end, 10);
        k = end != PQcmdTuples(r) ? k : 0;
        if (j->got == j->ins)
            j->changed_ins = k;
        if (j->got == j->row)
            j->changed_row = k;
        if (j->got == j->why && !j->lease) {
            j->lease = r;
            return;
        }
    } else {
        for (int i = 0; i < j->n_prep; i++) /* not prepared: prepared again next time */
            if (j->prep[i][0] == j->got)
                s->sql[j->prep[i][1]] = NULL;
    }
    if (t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK && j->fail_at < 0) {
        j->fail_at = j->got;
        if (t != PGRES_PIPELINE_ABORTED) {
            snprintf(j->msg, sizeof j->msg, "%s", PQresultErrorMessage(r));
            for (char *p = j->msg; *p; p++)
                if (*p == '\n')
                    *p = p[1] ? ' ' : 0;
        }
    }
    PQclear(r);
}

/* The connection was lost. Found lost before any answer came (the server restarted between two
 * commits, say), the group is sent again, once, on a connection made again: nothing of it can
 * have been written. Else the group fails (before COMMIT was sent, nothing of it was
 * written). */
static void lost(pg_store *s)
{
    pg_job *j = &s->job;
    char m[600];
    s->stale = 1;
    int before_commit = j->phase == PH_PART || j->phase == PH_WHY || !j->commit_sent;
    if (before_commit && !j->retried && !j->answered) {
        j->retried = 1;
        if (j->loop)
            ac_loop_unwatch(j->loop, j->watch);
        j->watch = 0;
        PQclear(j->lease);
        j->lease = NULL;
        if (job_start(s) == 0 && !j->msg[0])
            return;
    }
    snprintf(m, sizeof m, "the connection was lost (%s); %s", ac_pg_msg(s->conn, j->msg, 300),
             before_commit ? "nothing of this commit was written"
                           : "the commit may or may not have been written: read the session "
                             "again");
    fail_all(s, m, 0);
}

/* The socket is ready (or polled): what is to send is sent, the results read as they come. */
static void job_io(pg_store *s)
{
    pg_job *j = &s->job;
    int f = PQflush(s->conn);
    if (f < 0 || !PQconsumeInput(s->conn) || PQstatus(s->conn) != CONNECTION_OK) {
        lost(s);
        return;
    }
    if (j->loop)
        ac_loop_watch_events(j->loop, j->watch, AC_LOOP_READ | (f == 1 ? AC_LOOP_WRITE : 0));
    while (j->state == 1 && !PQisBusy(s->conn)) {
        PGresult *r = PQgetResult(s->conn);
        if (!r) {
            if (!j->got_one)
                break; /* nothing more now */
            j->got++;
            j->got_one = 0;
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            j->got_one = 0;
            step(s);
            if (j->state == 1 && j->msg[0] && PQstatus(s->conn) != CONNECTION_OK) {
                lost(s); /* the next pipeline could not be sent */
                return;
            }
            continue;
        }
        j->got_one = 1;
        take(s, r);
    }
}

static void job_ready(void *ud, int fd, int revents)
{
    (void)fd, (void)revents;
    job_io(ud);
}

static void job_timeout(void *ud)
{
    pg_store *s = ud;
    char m[160];
    s->job.timer = 0;
    s->stale = 1;
    snprintf(m, sizeof m, "no answer from the database within %lld ms", s->timeout_ms + 5000);
    fail_all(s, m, 0);
}

static void run_done(void *ud)
{
    pg_store *s = ud;
    if (s->job.state != 2)
        return;
    s->job.state = 0;
    s->job.done(s->job.ud);
}

/* The job (re)starts on the connection: made again when it was lost, non-blocking and in
 * pipeline mode, its socket watched, the first part sent. 0, or -1 with j->msg. */
static int job_begin(pg_store *s)
{
    pg_job *j = &s->job;
    j->i = 0;
    j->keep = K_BEGIN;
    for (size_t i = 0; i < j->n; i++) {
        j->rcs[i] = AC_OK;
        memset(&j->errs[i], 0, sizeof j->errs[i]);
    }
    ac_error e;
    if (ac_pg_ready(s, &e) != AC_OK) {
        snprintf(j->msg, sizeof j->msg, "%s", e.text);
        return -1;
    }
    if (PQsetnonblocking(s->conn, 1) != 0 || !PQenterPipelineMode(s->conn)) {
        ac_pg_msg(s->conn, j->msg, sizeof j->msg);
        return -1;
    }
    if (j->loop &&
        !(j->watch = ac_loop_watch_fd(j->loop, PQsocket(s->conn), AC_LOOP_READ, job_ready, s))) {
        snprintf(j->msg, sizeof j->msg, "out of memory");
        return -1;
    }
    send_part(s);
    return 0;
}

/* The job begun now (its connection made again first, waiting, when it was lost): its first
 * part sent, or the job failed. */
static void job_go(pg_store *s)
{
    pg_job *j = &s->job;
    if (job_begin(s) != 0) {
        char m[sizeof j->msg];
        snprintf(m, sizeof m, "%s", j->msg);
        fail_all(s, m, 0);
    } else if (j->msg[0]) { /* a statement could not be queued: the connection is gone */
        lost(s);
    }
}

/* The connection made again in the background, or not (then the commit fails, saying why:
 * the server does not answer; the next commit connects again). */
static void job_conn_ready(pg_store *s, int ok)
{
    pg_job *j = &s->job;
    if (!j->waiting)
        return; /* a caller that waits took the job over */
    j->waiting = 0;
    if (j->state != 1)
        return;
    if (ok) {
        job_go(s);
        return;
    }
    char m[sizeof j->msg + 40];
    snprintf(m, sizeof m, "connecting again: %s", ac_pg_msg(s->conn, j->msg, sizeof j->msg));
    fail_all(s, m, 0);
}

/* On a loop, a connection found lost is made again without waiting and the job begins once
 * it is; else the job begins now (job_begin connects, waiting). 0, or -1 with j->msg. */
static int job_start(pg_store *s)
{
    pg_job *j = &s->job;
    if (j->loop && (s->stale || PQstatus(s->conn) != CONNECTION_OK)) {
        j->waiting = 1;
        j->msg[0] = 0; /* what the lost connection said is said again if it matters */
        if (ac_pg_tend_start(s, j->loop, job_conn_ready))
            return 0;
        j->waiting = 0;
    }
    return job_begin(s);
}

void ac_pg_commit_start(ac_store *st, ac_loop *loop, const ac_store_commit *c, size_t n, int *rcs,
                        ac_error *errs, int *rc, void (*done)(void *ud), void *ud)
{
    pg_store *s = (pg_store *)st;
    ac_pg_commit_wait(st); /* one at a time */
    pg_job *j = &s->job;
    *j = (pg_job){.state = 1,
                  .loop = loop,
                  .c = c,
                  .n = n,
                  .rcs = rcs,
                  .rc = rc,
                  .errs = errs,
                  .done = done,
                  .ud = ud};
    j->task.fn = run_done;
    j->task.ud = s;
    if (job_start(s) != 0) {
        char m[sizeof j->msg];
        snprintf(m, sizeof m, "%s", j->msg);
        fail_all(s, m, 0);
    } else if (j->msg[0]) { /* a statement could not be queued: the connection is gone */
        lost(s);
    }
}

/* Until the job has its results: the socket polled, each wait bounded. */
void ac_pg_job_drain(pg_store *s)
{
    pg_job *j = &s->job;
    if (j->state == 1) /* on the loop the store serves from: counted */
        ac_store_blocked(&s->base, "commit", "COMMIT", "waiting for a commit in flight");
    if (j->state == 1 && j->waiting) { /* its connection: made here, waiting */
        j->waiting = 0;
        ac_pg_tend_stop(s);
        job_go(s);
    }
    while (j->state == 1) {
        int f = PQflush(s->conn);
        struct pollfd p = {PQsocket(s->conn), (short)(POLLIN | (f == 1 ? POLLOUT : 0)), 0};
        int64_t left = j->deadline - mono_ms();
        int r = left > 0 ? poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) : 0;
        if (r == 0) {
            job_timeout(s);
            break;
        }
        if (r < 0 && errno != EINTR) {
            lost(s);
            break;
        }
        job_io(s);
    }
}

void ac_pg_commit_wait(ac_store *st)
{
    pg_store *s = (pg_store *)st;
    ac_pg_job_drain(s);
    if (s->job.state == 2) {
        if (s->job.loop)
            ac_loop_undefer(s->job.loop, &s->job.task);
        s->job.state = 0;
        if (s->job.done)
            s->job.done(s->job.ud);
    }
}

void ac_pg_job_cancel(pg_store *s)
{
    ac_pg_job_drain(s);
    if (s->job.state == 2 && s->job.loop)
        ac_loop_undefer(s->job.loop, &s->job.task);
    s->job.state = 0;
}

int ac_pg_commit_many(ac_store *st, const ac_store_commit *c, size_t n, int *rcs, ac_error *errs)
{
    int rc = AC_EIO;
    ac_pg_commit_start(st, NULL, c, n, rcs, errs, &rc, NULL, NULL);
    ac_pg_commit_wait(st);
    return rc;
}

int ac_pg_commit(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    int rcs[1];
    ac_error errs[1];
    int rc = ac_pg_commit_many(st, c, 1, rcs, errs);
    if (rc == AC_OK)
        rc = rcs[0];
    if (err)
        *err = errs[0];
    return rc;
}
