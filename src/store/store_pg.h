/*
 * store_pg.h - what the files of the PostgreSQL backend share: the open store (its
 * connection and the commit in flight on it), statements' parameters, and the SQL
 * pieces every statement of a session's lease uses.
 */
#ifndef AGENTC_STORE_PG_H
#define AGENTC_STORE_PG_H

#include <libpq-fe.h>
#include <stdio.h>

#include "io/loop.h"
#include "store_int.h"

#define PG_CACHE 48
#define NOW "(extract(epoch from clock_timestamp()) * 1000)::bigint"
/* A holder's lock: each open store's connection holds (PG_HOLDER_LOCK, hashtext("SCHEMA.HOLDER"))
 * shared, keyed by its schema and holder (a w1 of two schemas of one database are two holders),
 * and (PG_HOLDER_LOCK_V1, hashtext(HOLDER)) shared, the key an agentc from before read. */
#define PG_HOLDER_LOCK "1634160198"
#define PG_HOLDER_LOCK_V1 "1634160196"
/* SQL: the pids of the connections that hold the lock of the holder named by the SQL text who
 * in the search path's schema: its key, or the key alone of an agentc from before (a connection
 * holding no lock of PG_HOLDER_LOCK). One scan of pg_locks, no nested one (whose cost estimate
 * would call for JIT compiling, slower than the statement). */
#define PG_HOLDER_PIDS(who)                                                                        \
    "SELECT h.pid FROM pg_locks h WHERE h.locktype = 'advisory' AND h.granted "                    \
    "AND h.objsubid = 2 "                                                                          \
    "AND h.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "           \
    "AND h.classid::bigint IN (" PG_HOLDER_LOCK ", " PG_HOLDER_LOCK_V1 ") GROUP BY h.pid "         \
    "HAVING bool_or(h.classid::bigint = " PG_HOLDER_LOCK " AND h.objid::bigint = "                 \
    "(hashtext(current_schema() || '.' || " who ")::bigint & 4294967295)) OR "                     \
    "(bool_or(h.classid::bigint = " PG_HOLDER_LOCK_V1 " AND h.objid::bigint = "                    \
    "(hashtext(" who ")::bigint & 4294967295)) AND "                                               \
    "NOT bool_or(h.classid::bigint = " PG_HOLDER_LOCK "))"
/* SQL: true while a connection holds the lock of the holder named by the column holder */
#define ALIVE "EXISTS(" PG_HOLDER_PIDS("holder") ")"
/* SQL: what a connection takes (key: the SQL text of "SCHEMA.HOLDER", who: of HOLDER): both keys
 * of its holder's lock, and the lock of the schema version it runs (store_pg_schema.c) */
#define PG_LOCKS_SQL(key, who)                                                                     \
    "SELECT pg_advisory_lock_shared(" PG_HOLDER_LOCK ", hashtext(" key ")), "                      \
    "pg_advisory_lock_shared(" PG_HOLDER_LOCK_V1 ", hashtext(" who ")), "                          \
    "pg_advisory_lock_shared(" PG_VERSION_LOCK ", " PG_SCHEMA_VERSION_S ")"

/* The columns of a session's row as ac_pg_fill_info reads them. */
#define PG_INFO_COLS                                                                               \
    "id, spec_hash, status, at_rest, created_ms, updated_ms, events, snapshot_seq, holder, "       \
    "lease_until, title, " NOW ", " ALIVE ", attempt"
/* The claim ($1 the holder, $2 mine, $3 at most, $4 the lease): the sessions stopped mid-turn
 * whose holder is gone, leased to $1 (the attempt of each taken from another counted one
 * more), rows (id, created_ms, the holder it was taken from, attempt). */
#define PG_CLAIM_SQL                                                                               \
    "WITH c AS (SELECT id, holder AS was FROM sessions WHERE at_rest = 0 AND (holder = '' OR "     \
    "lease_until <= " NOW " OR NOT " ALIVE " OR ($2::int = 1 AND holder = $1)) "                   \
    "AND ($2::int = 1 OR holder <> $1) ORDER BY updated_ms, id LIMIT $3 "                          \
    "FOR UPDATE SKIP LOCKED) UPDATE sessions s SET holder = $1, lease_until = " NOW " + $4, "      \
    "attempt = s.attempt + (c.was <> $1)::int FROM c WHERE s.id = c.id "                           \
    "RETURNING s.id, s.created_ms, c.was, s.attempt"
#define PG_BEAT_SQL "UPDATE workers SET heartbeat_ms = " NOW " WHERE id = $1"
/* A lease given up by its holder ($2), fenced by its attempt ($3; 0: any). */
#define PG_RELEASE_SQL                                                                             \
    "UPDATE sessions SET holder = '', lease_until = 0 WHERE id = $1 AND holder = $2 "              \
    "AND ($3::bigint = 0 OR attempt = $3)"
#define PG_EVENTS_SQL                                                                              \
    "SELECT n, t_ms, ev, data, steps FROM events WHERE session = $1 AND n > $2 ORDER BY n"

/* A new session's row ($1 the id, $2 its spec's hash, $3 its params, $4 the holder, $5 the
 * lease): nothing written when it exists. */
#define PG_CREATE_SQL                                                                              \
    "INSERT INTO sessions(id, spec_hash, params, status, at_rest, created_ms, updated_ms, "        \
    "holder, lease_until) VALUES($1, $2, $3, 'idle', 1, " NOW ", " NOW ", $4, " NOW " + $5) "      \
    "ON CONFLICT(id) DO NOTHING"
/* A session removed in one statement ($1 the id, $2 the holder removing it, $3 the attempt of
 * its lease, 0: any), as rm does in a transaction: only while no other live holder's lease
 * runs, the row is not being written and has that attempt. One row: the rows removed (0 or
 * 1), then what decided (the row's holder, lease_until, now, alive, attempt: NULL when the
 * row was locked or is absent) and the holder read without the lock (NULL: no such row). */
#define PG_RM_SQL                                                                                  \
    "WITH s AS (SELECT id, holder, lease_until, attempt, " NOW " AS t_now, " ALIVE " AS alive "    \
    "FROM sessions WHERE id = $1 FOR UPDATE SKIP LOCKED), "                                        \
    "ok AS (SELECT id FROM s WHERE (lease_until <= t_now OR holder = '' OR holder = $2 OR NOT "    \
    "alive) AND ($3::bigint <= 0 OR attempt = $3)), "                                              \
    "e AS (DELETE FROM events WHERE session IN (SELECT id FROM ok)), "                             \
    "n AS (DELETE FROM notes WHERE session IN (SELECT id FROM ok)), "                              \
    "p AS (DELETE FROM snapshots WHERE session IN (SELECT id FROM ok)), "                          \
    "t AS (DELETE FROM tool_calls WHERE session IN (SELECT id FROM ok)), "                         \
    "d AS (DELETE FROM sessions WHERE id IN (SELECT id FROM ok) RETURNING id) "                    \
    "SELECT (SELECT count(*) FROM d), s.holder, s.lease_until, s.t_now, s.alive, s.attempt, "      \
    "(SELECT holder FROM sessions WHERE id = $1) FROM (SELECT 1) AS one LEFT JOIN s ON true"

/* A session's lease taken in one statement ($1 the id, $2 the holder, $3 the lease), as
 * lease_acquire does in a transaction: only while no other live holder's lease runs and the
 * row is not being written, its attempt counted one more. One row: the attempt taken (NULL:
 * not taken), then PG_RM_SQL's columns 2 to 7 (what decided). */
#define PG_ACQUIRE_SQL                                                                             \
    "WITH s AS (SELECT id, holder, lease_until, attempt, " NOW " AS t_now, " ALIVE " AS alive "    \
    "FROM sessions WHERE id = $1 FOR UPDATE SKIP LOCKED), "                                        \
    "u AS (UPDATE sessions x SET holder = $2, lease_until = " NOW " + $3, attempt = x.attempt + "  \
    "1 FROM s WHERE x.id = s.id AND (s.lease_until <= s.t_now OR s.holder = '' OR s.holder = $2 "  \
    "OR NOT s.alive) RETURNING x.attempt) "                                                        \
    "SELECT (SELECT attempt FROM u), s.holder, s.lease_until, s.t_now, s.alive, s.attempt, "       \
    "(SELECT holder FROM sessions WHERE id = $1) FROM (SELECT 1) AS one LEFT JOIN s ON true"

/* A fork in one statement ($1 the new id, $2 the original, $3 its last event, $4 the spec's
 * hash, $5 the status, $6 at rest, $7 the agent, $8 the snapshot at $3, $9 the note's time,
 * $10 the note): the new row made from the original's (nothing when it exists or the original
 * does not), its journal up to $3, its notes and kept snapshots before, the snapshot at $3 and
 * the note "forked_from". One row: the rows made (0 or 1), whether the original exists. */
#define PG_FORK_SQL                                                                                \
    "WITH s AS (INSERT INTO sessions(id, spec_hash, params, status, at_rest, created_ms, "         \
    "updated_ms, events, snapshot_seq, title, agent) SELECT $1::text, $4::text, params, "          \
    "$5::text, $6::int, " NOW ", " NOW ", $3::bigint, $3::bigint, title, $7::text FROM sessions "  \
    "WHERE id = $2::text ON CONFLICT(id) DO NOTHING RETURNING id), "                               \
    "e AS (INSERT INTO events(session, n, t_ms, ev, data, steps) SELECT s.id, v.n, v.t_ms, v.ev, " \
    "v.data, v.steps FROM events v, s WHERE v.session = $2::text AND v.n <= $3::bigint "           \
    "ORDER BY v.n), "                                                                              \
    "o AS (INSERT INTO notes(session, after, t_ms, kind, body) SELECT s.id, v.after, v.t_ms, "     \
    "v.kind, v.body FROM notes v, s WHERE v.session = $2::text AND v.after < $3::bigint "          \
    "ORDER BY v.after, v.id), "                                                                    \
    "k AS (INSERT INTO snapshots(session, n, body, kept) SELECT s.id, v.n, v.body, 1 FROM "        \
    "snapshots v, s WHERE v.session = $2::text AND v.kept = 1 AND v.n < $3::bigint), "             \
    "p AS (INSERT INTO snapshots(session, n, body, kept) SELECT s.id, $3::bigint, $8::text, 1 "    \
    "FROM s), "                                                                                    \
    "f AS (INSERT INTO notes(session, after, t_ms, kind, body) SELECT s.id, $3::bigint, "          \
    "$9::bigint, 'forked_from', $10::text FROM s) "                                                \
    "SELECT (SELECT count(*) FROM s), EXISTS(SELECT 1 FROM sessions WHERE id = $2::text)"

/* A session's latest snapshot at or before $2 (rows: body, n). */
#define PG_SNAPSHOT_SQL                                                                            \
    "SELECT body, n FROM snapshots WHERE session = $1 AND n <= $2 ORDER BY n DESC LIMIT 1"
/* A session's tool calls (rows: call_id, name, started_ms, finished_ms, ok). */
#define PG_TOOL_CALLS_SQL                                                                          \
    "SELECT call_id, name, started_ms, finished_ms, ok FROM tool_calls WHERE session = $1 "        \
    "ORDER BY started_ms, call_id"
/* Every session's row, the newest first (ac_store_list's order). */
#define PG_LIST_SQL "SELECT " PG_INFO_COLS " FROM sessions ORDER BY updated_ms DESC, id"
/* Every worker's row, this one ($1) first (ac_store_workers' order; rows as ac_pg_fill_worker
 * reads them). */
#define PG_WORKERS_SQL                                                                             \
    "SELECT id, listen, started_ms, heartbeat_ms, (SELECT count(*) FROM sessions WHERE "           \
    "sessions.holder = w.id AND lease_until > " NOW "), heartbeat_ms + lease_ms > " NOW            \
    " AND (SELECT " ALIVE " FROM (SELECT w.id AS holder) h) FROM workers w ORDER BY id <> $1, id"
/* Row i of a result of PG_WORKERS_SQL into *w. */
void ac_pg_fill_worker(const PGresult *r, int i, ac_store_worker *w);
/* Row i of a result of PG_INFO_COLS into *o (holder "" when its lease ended or its holder's
 * connection is gone). */
void ac_pg_fill_info(const PGresult *r, int i, ac_store_session_info *o);
/* Row i of a claim's result (PG_CLAIM_SQL) into *o. */
void ac_pg_claimed(const PGresult *r, int i, ac_store_session_info *o);

/* The group commit on the connection (store_pg_commit.c): sent without waiting, its results
 * read as they come, one pipeline at a time. */
typedef struct pg_job {
    int state; /* 0 none, 1 running (its results to read), 2 complete (done not run yet) */
    ac_loop *loop;
    uint64_t watch, timer;
    ac_loop_task task; /* runs done on the loop */
    int64_t deadline;  /* of the pipeline sent (monotonic ms) */
    const ac_store_commit *c;
    size_t n;
    int *rcs, *rc;
    ac_error *errs;
    void (*done)(void *ud);
    void *ud;
    size_t i;        /* the session's part sent */
    int phase;       /* what the pipeline sent is (store_pg_commit.c) */
    int keep;        /* what comes before the next part */
    int retried;     /* sent again once: the connection was found lost before any answer */
    int answered;    /* a result of it was read */
    int commit_sent; /* its COMMIT went out: lost then, the outcome is unknown */
    int waiting;     /* for its connection, made again in the background (store_pg_tend.c) */
    /* the pipeline sent: its statements, the results read and what they said */
    int m, got, got_one, body, ins, row, why, fail_at;
    int prep[16][2], n_prep; /* statements prepared in it: result number, place in the cache */
    long changed_ins, changed_row;
    char msg[512];
    PGresult *lease;
} pg_job;

typedef struct pg_store {
    struct ac_store base;
    PGconn *conn;
    char *conninfo; /* the URI as libpq takes it (with its password: never shown) */
    char schema[64];
    long long timeout_ms;      /* statement_timeout */
    long long idle_tx_ms;      /* idle_in_transaction_session_timeout: see ac_store_pg_open */
    int in_tx;                 /* between BEGIN and COMMIT or ROLLBACK */
    int stale;                 /* a commit gave the connection up: made again before use */
    const char *sql[PG_CACHE]; /* prepared statements, by the address of their text */
    pg_job job;
    struct {            /* the connection made again in the background (store_pg_tend.c) */
        int state;      /* 0 none, 1 PQresetPoll, 2 its setup sent */
        int failed, fd; /* a setup statement failed; the socket watched */
        ac_loop *loop;
        uint64_t watch, timer;
        void (*then)(struct pg_store *s, int ok); /* told once it is made (or not) */
    } tend;
} pg_store;

/* Up to 16 parameters of one statement, as text (integers formatted in num). */
typedef struct pargs {
    const char *v[16];
    char num[16][24];
    int n;
} pargs;

static inline void p_s(pargs *a, const char *v)
{
    a->v[a->n++] = v;
}

static inline void p_i(pargs *a, long long v)
{
    snprintf(a->num[a->n], sizeof a->num[a->n], "%lld", v);
    a->v[a->n] = a->num[a->n];
    a->n++;
}

/* The version of the schema this agentc writes (store_pg_schema.c), as a number and as SQL
 * text; each open store's connection holds the advisory lock (PG_VERSION_LOCK, version)
 * shared, so a migration knows which version each live holder runs. */
#define PG_SCHEMA_VERSION 5
#define PG_SCHEMA_VERSION_S "5"
#define PG_VERSION_LOCK "1634160197"

/* Runs sql (a string literal, prepared once) with a's parameters, after the commit in flight
 * has its results, connecting again first when the connection was lost (never inside a
 * transaction): the result, or NULL with err filled. */
PGresult *ac_pg_q(ac_store *st, const char *sql, const pargs *a, ac_error *err, const char *what);
/* PG_FORK_SQL's parameters, of f, into a (empty). */
void ac_pg_fork_args(const ac_store_fork_row *f, pargs *a);
/* err: "store 'PATH': WHAT: libpq's message"; AC_EIO. */
int ac_pg_fail(ac_store *st, ac_error *err, const char *what);
void ac_pg_rollback(ac_store *st);
/* sql (text built by the caller, several statements allowed) run as is: AC_OK, or AC_EIO with
 * err and the transaction rolled back. */
int ac_pg_exec_text(pg_store *s, const char *sql, ac_error *err, const char *what);
/* Creates the store's schema, or migrates it to PG_SCHEMA_VERSION (store_pg_schema.c). */
int ac_pg_migrate(pg_store *s, ac_error *err);

/* libpq's last message, on one line. */
const char *ac_pg_msg(PGconn *c, char *buf, size_t cap);
/* The connection made again when it was lost or given up: AC_OK, or AC_EIO with err. */
int ac_pg_ready(pg_store *s, ac_error *err);

/* ---- the connection kept (store_pg_tend.c) ---- */

/* ac_store_tend: an idle connection found lost is made again on loop (PQresetStart,
 * PQresetPoll, then its setup sent and read), none of it waited for. */
void ac_pg_tend(ac_store *st, ac_loop *loop);
/* What ac_pg_tend does under way is given up (the connection stale: the caller makes it
 * again, waiting). */
void ac_pg_tend_stop(pg_store *s);
/* The connection, known lost, made again on loop as ac_pg_tend does (or the making under way
 * joined), then(s, ok) told once it is, or is given up (then the caller connects, waiting):
 * 1; 0 when it could not be started (nothing told). */
int ac_pg_tend_start(pg_store *s, ac_loop *loop, void (*then)(pg_store *s, int ok));

/* ---- commits (store_pg_commit.c) ---- */

int ac_pg_commit(ac_store *st, const ac_store_commit *c, ac_error *err);
int ac_pg_commit_many(ac_store *st, const ac_store_commit *c, size_t n, int *rcs, ac_error *errs);
void ac_pg_commit_start(ac_store *st, ac_loop *loop, const ac_store_commit *c, size_t n, int *rcs,
                        ac_error *errs, int *rc, void (*done)(void *ud), void *ud);
void ac_pg_commit_wait(ac_store *st);
/* The commit in flight has its results (blocking, bounded): the connection is free. */
void ac_pg_job_drain(pg_store *s);
/* The commit in flight is given up (the store closes). */
void ac_pg_job_cancel(pg_store *s);

#endif
