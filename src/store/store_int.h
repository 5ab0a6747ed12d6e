/*
 * store_int.h - the store's backend interface (a table of functions) and the
 * pieces shared by the store's files. SQLite implements it today
 * (store_sqlite.c); a PostgreSQL backend shared by several processes
 * implements the same table. What every operation must do, as
 * sqlite3_io_methods says it for a VFS:
 *
 * Isolation. An operation that writes is one transaction, serializable
 * (SQLite: BEGIN IMMEDIATE, one writer at a time; PostgreSQL: SERIALIZABLE,
 * or READ COMMITTED with the session row locked FOR UPDATE first): it writes
 * all it says or nothing. A read (info, list, events, params, snapshot_get,
 * tool_calls, notes, agent) sees only committed transactions, each call one
 * consistent view; a callback it calls must not call the backend again.
 *
 * Group commit. commit_many writes several sessions' commits in one
 * transaction, each inside its own savepoint: one session's failure (its
 * lease lost, its new row existing, a row that conflicts, a failed write
 * inside its part) rolls back to its savepoint and fails that session alone;
 * the others are committed. Only a failure of the transaction itself (BEGIN,
 * COMMIT, or an error after which the database rolled the transaction back:
 * a full disk, an I/O error) fails them all, and then nothing is written.
 * PostgreSQL aborts the whole transaction on any error, so the savepoint is
 * what scopes a failure, never a statement's own rollback. SQLite writes the
 * group without savepoints first and, only when a session's part fails having
 * written some of its rows, rolls back and writes it again with them.
 *
 * Clocks. Leases are timed by the database's clock, never the caller's: an
 * operation is given a lease's length (lease_ms) and computes its expiry
 * inside the SQL from the database's own "now" (SQLite: the time of the
 * file's host, read by SQL once at a commit's BEGIN for all its rows;
 * PostgreSQL: the server's clock_timestamp()); expiry is judged
 * against that same clock. The times a backend records for a session row or a
 * tool call (created_ms, updated_ms, started_ms, finished_ms, lease_expires_ms)
 * are the database's too. An event's t_ms is the session's time (its own
 * event time, journaled) and is stored as given.
 *
 * Holders. Who runs a session is a lease row (holder, expiry) checked inside
 * the transactions that write, never an in-process lock. A holder is a name
 * unique to one open store ("agentc RANDOM:PID@HOST": a random instance id,
 * so two containers with the same PID and host name never share one). A
 * holder is alive while it renews its lease; a backend may also know that a
 * holder is gone before its lease ends, by a lock the system drops when the
 * holder's process ends (SQLite: a lock on the file DB-holders, see
 * store_sqlite.c; PostgreSQL: a session-level advisory lock), never by asking
 * whether a process id exists. A gone holder's lease is free.
 *
 * Fencing. Each taking of a session's lease (lease_acquire, claim) counts the row's
 * attempt one more (a session's creator holds attempt 1); the writer keeps the attempt it
 * got, and a commit, a release or a removal is written only while the row has both its holder and
 * its attempt: a process stopped past its lease whose holder name another took since (a
 * worker id reused by its successor) writes nothing, as does one whose lease was taken and
 * given up since.
 */
#ifndef AGENTC_STORE_INT_H
#define AGENTC_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/store.h"
#include "io/loop.h"

/* ac_store_event (one journal record) is in store.h. */

/* What one session's commit writes, in one transaction (alone, or in its savepoint within a
 * group commit): the events buffered since its last commit, the tool calls recorded as
 * started or whose results were recorded, a snapshot, the session row (created, or its
 * status, at rest, title) and the lease, renewed to the database's now + lease_ms. The
 * session row is written first, where the lease is checked: AC_STORE_EBUSY when another
 * holder took the lease (ours expired), AC_EINVAL when a row to create exists, and then
 * nothing of it is written. */
typedef struct ac_store_commit {
    const char *id;
    const char *holder;
    /* the attempt (fencing token) holder got when it took the lease (1: the session's
     * creator's): written only while the row's attempt is still this one */
    int64_t attempt;
    int64_t lease_ms;
    const ac_store_event *evs;
    size_t n_evs;
    /* steps of events committed before their dispatch ended (an effect started: the event
     * was committed first); n and steps are used */
    const ac_store_event *late;
    size_t n_late;
    const char *const *finished; /* call ids with a result now */
    const int *finished_ok;
    size_t n_finished;
    const char *status;
    int at_rest;
    const char *title;     /* NULL: unchanged */
    const char *spec_hash; /* NULL: unchanged */
    /* tool calls about to run: recorded as started (their processes wait for this commit) */
    const char *const *started, *const *started_names;
    size_t n_started;
    int release; /* give the lease up (the session is closed) */
    /* the session row is created by this commit (a failure is this session's alone) */
    int create;
    const char *create_hash, *create_params;
    /* a snapshot at event snapshot_n, written with the events up to it (NULL: none); it
     * replaces the session's latest unless that one is kept; snapshot_keep: this one is
     * kept (taken at an agent change) */
    const char *snapshot;
    uint64_t snapshot_n;
    int snapshot_keep;
    const char *agent; /* the session's agent now (NULL: unchanged) */
} ac_store_commit;

/* What a fork writes (ac_store_ops.fork). */
typedef struct ac_store_fork_row {
    const char *from, *to;
    uint64_t upto;
    const char *spec_hash, *status;
    int at_rest;
    const char *agent;    /* NULL: none */
    const char *snapshot; /* the fork's at event upto (kept) */
    int64_t t_ms;         /* of the note */
    const char *note;     /* the note's body */
} ac_store_fork_row;
/* ac_store_fork with its rows given to write(ud, f, err) (its values live until it returns)
 * instead of the store's fork (write NULL: the store's); what write returns is the fork's. */
typedef int (*ac_store_fork_write_fn)(void *ud, const ac_store_fork_row *f, ac_error *err);
int ac_store_fork_with(ac_store *st, ac_engine *e, const char *id, uint64_t at, uint64_t at_turn,
                       const char *new_id, ac_store_fork_write_fn write, void *ud, ac_error *err);

typedef int (*ac_store_snap_fn)(void *ud, uint64_t n, const char *body, int kept);
typedef int (*ac_store_call_fn)(void *ud, const char *call_id, const char *name, int64_t started_ms,
                                int64_t finished_ms, int ok);

/* Every function returns AC_OK or an error code with err filled (the text names the store);
 * AC_EIO for a failure of the database. "Writes" marks the operations that are one
 * transaction; the others read (see the top of this file). */
typedef struct ac_store_ops {
    const char *name;
    void (*close)(ac_store *st);
    /* Writes: a new session row, its lease held by holder until the database's now +
     * lease_ms. An existing id is AC_EINVAL ("exists"), nothing written. */
    int (*create)(ac_store *st, const char *id, const char *spec_hash, const char *params,
                  const char *holder, int64_t lease_ms, ac_error *err);
    /* The session's row; out->holder is "" when its lease ended (by the database's clock).
     * AC_STORE_ENOENT when there is none. */
    int (*info)(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err);
    /* Every session row, most recently updated first; fn returning non-zero stops. */
    int (*list)(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err);
    /* Writes: the session and all that is stored for it go, unless another holder's lease
     * runs (AC_STORE_EBUSY), the row's attempt is no longer attempt (AC_STORE_EBUSY, fenced:
     * taken again since; 0: any of holder's) or it does not exist (AC_STORE_ENOENT). */
    int (*rm)(ac_store *st, const char *id, const char *holder, int64_t attempt, ac_error *err);
    /* Writes: one session's commit (ac_store_commit), alone. */
    int (*commit)(ac_store *st, const ac_store_commit *c, ac_error *err);
    /* Events with n > after, in order. */
    int (*events)(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                  ac_error *err);
    /* The session's params as given at creation ({} when none); malloc'd. */
    int (*params)(ac_store *st, const char *id, char **out, ac_error *err);
    /* The latest snapshot taken at an event numbered upto or before (UINT64_MAX: the
     * latest); *body NULL and *n 0 when there is none; *body malloc'd. */
    int (*snapshot_get)(ac_store *st, const char *id, uint64_t upto, uint64_t *n, char **body,
                        ac_error *err);
    /* The tool calls recorded, with their times (the database's clock). */
    int (*tool_calls)(ac_store *st, const char *id, ac_store_call_fn fn, void *ud, ac_error *err);
    /* Writes: takes the lease until the database's now + lease_ms when it is free, ended,
     * ours, or its holder is known to be gone (see the top of this file), the row's attempt
     * counted one more and given in *attempt (may be NULL); else AC_STORE_EBUSY naming the
     * holder and how long its lease runs. */
    int (*lease_acquire)(ac_store *st, const char *id, const char *holder, int64_t lease_ms,
                         int64_t *attempt, ac_error *err);
    /* Writes: gives holder's lease up when the row's attempt is still attempt (0: any of
     * holder's); nothing when another holder or a later attempt has it. */
    int (*lease_release)(ac_store *st, const char *id, const char *holder, int64_t attempt,
                         ac_error *err);
    /* Writes: a note in the session's journal after event n (kind "spec_changed", body JSON):
     * not an event, so replay skips it; export writes it as {"note": KIND, "after": N, ...}. */
    int (*note)(ac_store *st, const char *id, uint64_t n, int64_t t_ms, const char *kind,
                const char *body, ac_error *err);
    /* Notes in order: ev->n the event they follow, ev->ev the kind, ev->data the body. */
    int (*notes)(ac_store *st, const char *id, ac_store_event_fn fn, void *ud, ac_error *err);
    /* Writes: n commits in one transaction, each in its savepoint: rcs[i] and errs[i] for
     * each. One commit's failure fails it alone; a failure of the transaction fails all,
     * nothing written (see "Group commit" at the top of this file). Returns AC_OK when the
     * transaction committed (some commits may have failed), else its error. */
    int (*commit_many)(ac_store *st, const ac_store_commit *c, size_t n, int *rcs, ac_error *errs);
    /* Deletes the session's events with n <= upto (its row's event count unchanged). */
    int (*forget)(ac_store *st, const char *id, uint64_t upto, ac_error *err);
    /* The session's agent now (*out malloc'd; NULL when it recorded none). */
    int (*agent)(ac_store *st, const char *id, char **out, ac_error *err);
    /* Writes: the session f->to made of f->from's events, notes and snapshots up to event
     * f->upto, its row as f says (the lease free), and the note "forked_from". AC_EINVAL when
     * f->to exists, AC_STORE_ENOENT when f->from does not; nothing written then. */
    int (*fork)(ac_store *st, const struct ac_store_fork_row *f, ac_error *err);
    /* Writes: the worker row of st->holder (listen: "" for none), its started and heartbeat
     * times the database's now; AC_STORE_EBUSY when the store takes one worker and has
     * another, or a live process joined under the same holder (store.h). */
    int (*worker_join)(ac_store *st, const char *listen, ac_error *err);
    /* Writes: the heartbeat of st->holder's row (the database's now). */
    int (*worker_beat)(ac_store *st, ac_error *err);
    /* Writes: st->holder's row removed. */
    int (*worker_leave)(ac_store *st, ac_error *err);
    /* The worker rows, st->holder's first, then by id. */
    int (*workers)(ac_store *st, ac_store_worker_fn fn, void *ud, ac_error *err);
    /* Writes: up to max sessions not at rest whose lease is free (ended, no holder, its
     * holder gone; mine: or held by st->holder) leased to st->holder for lease_ms (the
     * attempt of each taken from another holder counted one more, as lease_acquire does:
     * the sessions held by st->holder keep theirs, a writer of this store may run them; the
     * load of one counts it), locked
     * FOR UPDATE SKIP LOCKED where the database has it; fn with each (id, created_ms, and
     * in holder the holder it was taken from, "" for none). */
    int (*claim)(ac_store *st, size_t max, int mine, int64_t lease_ms, ac_store_list_fn fn,
                 void *ud, ac_error *err);
    /* Writes, without waiting: starts commit_many of c[0..n) (c, what it points to, rcs, errs
     * and rc stay the caller's until done runs). done(ud) runs once they are filled as
     * commit_many fills them (*rc its return): on loop, as a task of its own (never from
     * inside the backend's reading of the database), or, for a backend that commits at once
     * (SQLite: ac_store_commit_at_once), before commit_start returns. One commit is started
     * at a time per store; the operations above called meanwhile wait for it. loop NULL:
     * the caller waits with commit_wait. */
    void (*commit_start)(ac_store *st, ac_loop *loop, const ac_store_commit *c, size_t n, int *rcs,
                         ac_error *errs, int *rc, void (*done)(void *ud), void *ud);
    /* Waits (blocking, bounded) until the commit started is done, and runs its done now
     * when it has not run yet. NULL: the backend commits at once. */
    void (*commit_wait)(ac_store *st);
    /* Every snapshot of the session in order of its event number, kept or not (the latest
     * that is not kept is the only one not kept); fn returning non-zero stops. */
    int (*snapshots)(ac_store *st, const char *id, ac_store_snap_fn fn, void *ud, ac_error *err);
    /* ac_store_tend (NULL: nothing to keep). */
    void (*tend)(ac_store *st, ac_loop *loop);
} ac_store_ops;

/* commit_start of a backend whose commits complete at once: commit_many, then done. */
void ac_store_commit_at_once(ac_store *st, ac_loop *loop, const ac_store_commit *c, size_t n,
                             int *rcs, ac_error *errs, int *rc, void (*done)(void *ud), void *ud);

struct ac_store_group; /* the sessions waiting for the end-of-turn commit (store_group.c) */
struct json_t;
struct ac_payload;

struct ac_store {
    const ac_store_ops *ops;
    char *path;
    char holder[128];
    int64_t lease_ms;
    uint64_t snapshot_every;
    struct ac_store_group *group;
    ac_store_observer_fn observer; /* ac_store_set_observer */
    void *observer_ud;
    /* ac_store_set_append_hook (store_append.h) */
    void (*append)(void *ud, ac_session *s, uint64_t n, int64_t t_ms, const char *ev,
                   struct json_t *data, const struct ac_payload *p, int done);
    void *append_ud;
    /* ac_store_serve_on: the loop it serves from (NULL: none), where its waits are counted,
     * and whether each is noted on stderr */
    ac_loop *serving;
    struct ac_metrics *metrics;
    int blocking_log;
};

/* A call that waits for the database on the serving loop (kind "statement", "commit" or
 * "connect"; sql its text, of which the first words are noted; what the operation): counted
 * and noted when the store serves (ac_store_serve_on), else nothing. */
void ac_store_blocked(ac_store *st, const char *kind, const char *sql, const char *what);

/* A commit refused by its fence (its holder's name matches the row, its attempt does not):
 * err says so, AC_STORE_EBUSY (store_workers.c). */
int ac_store_fenced(ac_store *st, const ac_store_commit *c, ac_error *err);

/* Commits the group now when it holds the last commit of a freed session with that id (id
 * NULL: of any freed session), so what is read next sees it. */
void ac_store_group_sync(ac_store *st, const char *id);
/* Commits what the group holds (the last commits of freed sessions), then frees it;
 * ac_store_close calls it. */
void ac_store_group_free(ac_store *st);

/* The SQLite backend: fills *out (its own struct starting with struct ac_store) with
 * st->holder set to holder, whose lock it takes (store_sqlite.c). */
int ac_store_sqlite_open(const char *path, const ac_store_options *opt, const char *holder,
                         ac_store **out, ac_error *err);
/* The PostgreSQL backend (store_pg.c): path is a postgresql:// or postgres:// URI; its keys
 * of agentc's own (schema=NAME) are taken out before libpq sees it. */
int ac_store_pg_open(const char *uri, const ac_store_options *opt, const char *holder,
                     ac_store **out, ac_error *err);
/* The URI as libpq takes it (*conninfo malloc'd, agentc's keys taken out) and the value of its
 * key schema (default "agentc"): AC_OK, AC_EINVAL for a schema name not [a-z0-9_], AC_ENOMEM. */
int ac_store_pg_split_uri(const char *uri, char **conninfo, char *schema, size_t cap,
                          ac_error *err);
/* True when path names a PostgreSQL database (postgresql:// or postgres://). */
int ac_store_is_pg_uri(const char *path);
/* ac_error_set without the location parsing, for the store's messages. */
void ac_store_err(ac_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
