/*
 * store_sqlite.c - the SQLite backend of the store (store_int.h).
 *
 * One database file, created 0600, in WAL mode with synchronous=NORMAL: a
 * commit survives a crash of the process; a crash of the machine may lose the
 * last commits but never leaves the file inconsistent (docs/design.md). The
 * schema is versioned with PRAGMA user_version and the file is marked as
 * agentc's with PRAGMA application_id: a database of anything else is refused
 * before anything is written to it.
 *
 * Times are the database's: NOW below, computed by SQLite inside each statement
 * (constant within one statement), times every lease. A holder's lock: each open
 * store holds a shared lock on one byte of the file DB-holders (the byte is a hash
 * of its holder name; an open file description's lock, which the kernel drops when
 * the process ends, a zombie's included). A lease whose holder's byte nobody locks
 * is free before it ends. All the processes of one SQLite file in WAL mode share
 * the host's kernel (WAL needs shared memory), so the lock is sound for this
 * backend; without OFD locks (not Linux) only the lease's expiry frees it.
 */
#define _GNU_SOURCE /* F_OFD_SETLK, F_OFD_GETLK */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"
#include "util/buf.h"

#define APP_ID 0x61674e43 /* "agNC" */
#define SCHEMA_VERSION 5

/* The database's clock in ms since the epoch (SQL). */
#define NOW "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"

#define CACHE 40

typedef struct sq_store {
    struct ac_store base;
    sqlite3 *db;
    int lockfd; /* DB-holders, where this store's holder byte is locked (-1: none) */
    int joined; /* a worker (ac_store_worker_join): the server byte of DB-holders is ours */
    char listen[128];
    int64_t started_ms, beat_ms;
    int64_t commit_now; /* the database's now at the running commit's BEGIN (0: none runs) */
    /* prepared statements by their SQL text (static strings, compared by address) */
    const char *sql[CACHE];
    sqlite3_stmt *stmt[CACHE];
} sq_store;

static const char *SCHEMA =
    "CREATE TABLE sessions("
    " id TEXT PRIMARY KEY, spec_hash TEXT NOT NULL, params TEXT NOT NULL DEFAULT '{}',"
    " status TEXT NOT NULL DEFAULT 'idle', at_rest INTEGER NOT NULL DEFAULT 1,"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    " events INTEGER NOT NULL DEFAULT 0, snapshot_seq INTEGER NOT NULL DEFAULT 0,"
    " holder TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0,"
    " title TEXT NOT NULL DEFAULT '', agent TEXT, attempt INTEGER NOT NULL DEFAULT 1);"
    "CREATE TABLE events(id INTEGER PRIMARY KEY, session TEXT NOT NULL, n INTEGER NOT NULL,"
    " t_ms INTEGER NOT NULL, ev TEXT NOT NULL, data TEXT, steps TEXT);"
    "CREATE UNIQUE INDEX events_session ON events(session, n);"
    "CREATE TABLE snapshots(session TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,"
    " kept INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(session, n));"
    "CREATE TABLE tool_calls(session TEXT NOT NULL, call_id TEXT NOT NULL, name TEXT NOT NULL,"
    " started_ms INTEGER NOT NULL, finished_ms INTEGER NOT NULL DEFAULT 0,"
    " ok INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(session, call_id)) WITHOUT ROWID;"
    "CREATE TABLE notes(session TEXT NOT NULL, after INTEGER NOT NULL, t_ms INTEGER NOT NULL,"
    " kind TEXT NOT NULL, body TEXT NOT NULL);"
    "CREATE INDEX notes_session ON notes(session, after);";

/* Version 1 kept events in a table keyed by (session, n): the rows of the sessions running
 * at once went to as many pages, each written whole by every commit. Version 2 appends them
 * in commit order (rowid) with an index on (session, n). */
static const char *MIGRATE_1_2 =
    "CREATE TABLE events2(id INTEGER PRIMARY KEY, session TEXT NOT NULL, n INTEGER NOT NULL,"
    " t_ms INTEGER NOT NULL, ev TEXT NOT NULL, data TEXT, steps TEXT);"
    "INSERT INTO events2(session, n, t_ms, ev, data, steps)"
    " SELECT session, n, t_ms, ev, data, steps FROM events ORDER BY session, n;"
    "DROP TABLE events;"
    "ALTER TABLE events2 RENAME TO events;"
    "CREATE UNIQUE INDEX events_session ON events(session, n);";

/* Version 2 files may hold the tables `agentc serve --db` kept beside the store, its own copy
 * of each session's events (serve_events) and their owners and system prompts
 * (serve_sessions). Version 3 drops them: the journal is the only log, a session's owner and
 * public id are in its id ("OWNER/ID"), its system prompt in its spawn event. */
static const char *MIGRATE_2_3 = "DROP TABLE IF EXISTS serve_events;"
                                 "DROP TABLE IF EXISTS serve_sessions;";

/* Version 4 keeps each session's agent (NULL for a session stored before: it recorded none)
 * and, besides its latest snapshot, the snapshots taken at its agent changes (kept). */
static const char *MIGRATE_3_4 =
    "ALTER TABLE sessions ADD COLUMN agent TEXT;"
    "CREATE TABLE snapshots2(session TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,"
    " kept INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(session, n));"
    "INSERT INTO snapshots2(session, n, body) SELECT session, n, body FROM snapshots;"
    "DROP TABLE snapshots;"
    "ALTER TABLE snapshots2 RENAME TO snapshots;";

/* Version 5 counts the takings of each session's lease (its fencing token, store_int.h). */
static const char *MIGRATE_4_5 = "ALTER TABLE sessions ADD COLUMN attempt INTEGER NOT NULL "
                                 "DEFAULT 1;";

/* What brings a file of version k to version k + 1 (MIGRATE[0]: an empty file to the
 * current version). */
static const char *const *migrations(void)
{
    static const char *m[SCHEMA_VERSION];
    m[0] = SCHEMA;
    m[1] = MIGRATE_1_2;
    m[2] = MIGRATE_2_3;
    m[3] = MIGRATE_3_4;
    m[4] = MIGRATE_4_5;
    return m;
}

void ac_store_err(ac_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
}

static sqlite3 *DB(ac_store *st)
{
    return ((sq_store *)st)->db;
}

/* An SQLite failure as a store error naming the file. */
static int sq_fail(ac_store *st, ac_error *err, const char *what)
{
    sqlite3 *db = DB(st);
    int rc = sqlite3_extended_errcode(db);
    const char *why = sqlite3_errmsg(db);
    switch (rc & 0xff) {
    case SQLITE_FULL:
        why = "the store is full (disk full or its size limit reached); nothing after the last "
              "commit was written";
        break;
    case SQLITE_READONLY:
        why = "the store is read-only here (file or directory not writable)";
        break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        why = "the file is corrupt or not a database";
        break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        why = "the database stayed locked by another writer past the busy timeout";
        break;
    default:
        break;
    }
    ac_store_err(err, AC_EIO, "store '%s': %s: %s", st->path, what, why);
    return AC_EIO;
}

static int exec(ac_store *st, const char *sql, ac_error *err, const char *what)
{
    if (sqlite3_exec(DB(st), sql, NULL, NULL, NULL) != SQLITE_OK)
        return sq_fail(st, err, what);
    return AC_OK;
}

/* A prepared statement for sql (a string literal), kept for the next time; give it back
 * with done(). */
static sqlite3_stmt *prep(ac_store *st, const char *sql)
{
    sq_store *s = (sq_store *)st;
    int k = 0;
    for (; k < CACHE && s->sql[k]; k++)
        if (s->sql[k] == sql)
            return s->stmt[k];
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK)
        return NULL;
    if (k < CACHE) {
        s->sql[k] = sql;
        s->stmt[k] = q;
    }
    return q;
}

/* Done with a statement of prep(): reset for its next use (finalized if it was not kept). */
static void done(sqlite3_stmt *q)
{
    if (!q)
        return;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
}

static void bind_text(sqlite3_stmt *q, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(q, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(q, i);
}

/* v stays valid until the statement is stepped and reset (a commit's own strings) */
static void bind_static(sqlite3_stmt *q, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(q, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(q, i);
}

/* A statement without results (BEGIN, COMMIT, SAVEPOINT...), prepared once. */
static int run(ac_store *st, const char *sql, ac_error *err, const char *what)
{
    sqlite3_stmt *q = prep(st, sql);
    int rc = q ? sqlite3_step(q) : SQLITE_ERROR;
    int out = rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, what);
    done(q);
    return out;
}

static void rollback(ac_store *st)
{
    sqlite3_exec(DB(st), "ROLLBACK", NULL, NULL, NULL);
}

static void sq_close(ac_store *st)
{
    sq_store *s = (sq_store *)st;
    for (int k = 0; k < CACHE && s->sql[k]; k++)
        sqlite3_finalize(s->stmt[k]);
    sqlite3_close(DB(st));
    if (s->lockfd >= 0)
        close(s->lockfd);
    free(st->path);
    free(st);
}

static const char *col(sqlite3_stmt *q, int i)
{
    const unsigned char *v = sqlite3_column_text(q, i);
    return v ? (const char *)v : "";
}

/* The byte of DB-holders that holder's store locks. */
static off_t holder_byte(const char *holder)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)holder; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (off_t)(h & 0xffffffffffull);
}

/* Takes this store's lock (a shared lock: stores of one holder name share the byte). */
static int holder_lock(sq_store *s, ac_error *err)
{
    s->lockfd = -1;
    if (!strcmp(s->base.path, ":memory:"))
        return AC_OK; /* one process's store: no other holder can see it */
#ifdef F_OFD_SETLK
    char lp[4200];
    snprintf(lp, sizeof lp, "%s-holders", s->base.path);
    s->lockfd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
    fl.l_start = holder_byte(s->base.holder);
    fl.l_len = 1;
    if (s->lockfd < 0 || fcntl(s->lockfd, F_OFD_SETLK, &fl) != 0) {
        ac_store_err(err, AC_EIO, "store '%s': cannot lock '%s': %s", s->base.path, lp,
                     strerror(errno));
        return AC_EIO;
    }
#else
    (void)err;
#endif
    return AC_OK;
}

/* True when no open store holds holder's lock: its process is gone. Never this store's own
 * holder (its own lock does not conflict with itself). */
static int holder_gone(ac_store *st, const char *holder)
{
#ifdef F_OFD_GETLK
    sq_store *s = (sq_store *)st;
    if (!strcmp(holder, st->holder))
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    fl.l_start = holder_byte(holder);
    fl.l_len = 1;
    return s->lockfd >= 0 && fcntl(s->lockfd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
#else
    (void)st, (void)holder;
    return 0;
#endif
}

/* A row of INFO_COLS; holder "" when its lease ended or its holder is gone. */
static void fill_info(ac_store *st, sqlite3_stmt *q, ac_store_session_info *o)
{
    int64_t now = sqlite3_column_int64(q, 11);
    memset(o, 0, sizeof *o);
    snprintf(o->id, sizeof o->id, "%s", col(q, 0));
    snprintf(o->spec_hash, sizeof o->spec_hash, "%s", col(q, 1));
    snprintf(o->status, sizeof o->status, "%s", col(q, 2));
    o->at_rest = sqlite3_column_int(q, 3);
    o->created_ms = sqlite3_column_int64(q, 4);
    o->updated_ms = sqlite3_column_int64(q, 5);
    o->events = (uint64_t)sqlite3_column_int64(q, 6);
    o->snapshot_seq = (uint64_t)sqlite3_column_int64(q, 7);
    int64_t until = sqlite3_column_int64(q, 9);
    if (until > now && !holder_gone(st, col(q, 8))) {
        snprintf(o->holder, sizeof o->holder, "%s", col(q, 8));
        o->lease_expires_ms = until;
    }
    snprintf(o->title, sizeof o->title, "%s", col(q, 10));
    o->attempt = sqlite3_column_int64(q, 12);
}

#define INFO_COLS                                                                                  \
    "id, spec_hash, status, at_rest, created_ms, updated_ms, events, snapshot_seq, holder, "       \
    "lease_until, title, " NOW ", attempt"

static int sq_info(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT " INFO_COLS " FROM sessions WHERE id = ?");
    if (!q)
        return sq_fail(st, err, "reading a session");
    bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        fill_info(st, q, out);
        done(q);
        return AC_OK;
    }
    done(q);
    if (rc != SQLITE_DONE)
        return sq_fail(st, err, "reading a session");
    ac_store_err(err, AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path, id);
    return AC_STORE_ENOENT;
}

static int sq_list(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT " INFO_COLS " FROM sessions ORDER BY updated_ms DESC, id");
    if (!q)
        return sq_fail(st, err, "listing sessions");
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        ac_store_session_info info;
        fill_info(st, q, &info);
        if (fn(ud, &info)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "listing sessions");
}

/* Inside a transaction: AC_OK when `holder` may write the session (its lease, none running,
 * or its holder gone), else AC_STORE_EBUSY naming the other holder. */
static int lease_check(ac_store *st, const char *id, const char *holder, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT holder, lease_until, " NOW " FROM sessions WHERE id = ?");
    if (!q)
        return sq_fail(st, err, "reading a lease");
    bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc != SQLITE_ROW) {
        done(q);
        if (rc != SQLITE_DONE)
            return sq_fail(st, err, "reading a lease");
        ac_store_err(err, AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path, id);
        return AC_STORE_ENOENT;
    }
    const char *h = col(q, 0);
    int64_t until = sqlite3_column_int64(q, 1), now = sqlite3_column_int64(q, 2);
    int ok = until <= now || !*h || (holder && strcmp(h, holder) == 0) || holder_gone(st, h);
    if (!ok) {
        ac_store_err(err, AC_STORE_EBUSY,
                     "session '%s' is in use by %s (its lease runs %lld s more, renewed while "
                     "that holder runs; it ends at once when its process exits)",
                     id, h, (long long)((until - now + 999) / 1000));
    }
    done(q);
    return ok ? AC_OK : AC_STORE_EBUSY;
}

/* The session's row made at the database's time now (ms). */
static int create_row(ac_store *st, const char *id, const char *spec_hash, const char *params,
                      const char *holder, int64_t lease_ms, int64_t now, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "INSERT INTO sessions(id, spec_hash, params, status, at_rest, "
                               "created_ms, updated_ms, holder, lease_until) "
                               "VALUES(?1, ?2, ?3, 'idle', 1, ?6, ?6, ?4, ?6 + ?5)");
    if (!q || !now)
        return sq_fail(st, err, "creating a session");
    bind_text(q, 1, id);
    bind_text(q, 2, spec_hash);
    bind_text(q, 3, params ? params : "{}");
    bind_text(q, 4, holder);
    sqlite3_bind_int64(q, 5, lease_ms);
    sqlite3_bind_int64(q, 6, now);
    int rc = sqlite3_step(q);
    done(q);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        ac_store_err(err, AC_EINVAL, "store '%s' already has a session '%s'", st->path, id);
        return AC_EINVAL;
    }
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "creating a session");
}

static int64_t db_now(ac_store *st);

static int sq_create(ac_store *st, const char *id, const char *spec_hash, const char *params,
                     const char *holder, int64_t lease_ms, ac_error *err)
{
    return create_row(st, id, spec_hash, params, holder, lease_ms, db_now(st), err);
}

/* Inside a transaction: AC_OK while the session's row has attempt (0: any), else
 * AC_STORE_EBUSY (fenced: its lease was taken since that attempt), or AC_EIO. */
static int attempt_check(ac_store *st, const char *id, const char *holder, int64_t attempt,
                         ac_error *err)
{
    if (attempt <= 0)
        return AC_OK;
    sqlite3_stmt *q = prep(st, "SELECT attempt FROM sessions WHERE id = ?");
    if (!q)
        return sq_fail(st, err, "reading a lease");
    bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    int ok = rc == SQLITE_ROW && sqlite3_column_int64(q, 0) == attempt;
    done(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(st, err, "reading a lease");
    ac_store_commit c = {.id = id, .holder = holder, .attempt = attempt};
    return ok ? AC_OK : ac_store_fenced(st, &c, err);
}

static int sq_rm(ac_store *st, const char *id, const char *holder, int64_t attempt, ac_error *err)
{
    int rc = exec(st, "BEGIN IMMEDIATE", err, "removing a session");
    if (rc != AC_OK)
        return rc;
    rc = lease_check(st, id, holder, err);
    if (rc == AC_OK)
        rc = attempt_check(st, id, holder, attempt, err);
    if (rc != AC_OK) {
        rollback(st);
        return rc;
    }
    static const char *const del[] = {
        "DELETE FROM events WHERE session = ?", "DELETE FROM notes WHERE session = ?",
        "DELETE FROM snapshots WHERE session = ?", "DELETE FROM tool_calls WHERE session = ?",
        "DELETE FROM sessions WHERE id = ?"};
    for (size_t i = 0; i < sizeof del / sizeof del[0]; i++) {
        sqlite3_stmt *q = prep(st, del[i]);
        if (!q) {
            sq_fail(st, err, "removing a session");
            rollback(st);
            return AC_EIO;
        }
        bind_text(q, 1, id);
        int s = sqlite3_step(q);
        done(q);
        if (s != SQLITE_DONE) {
            sq_fail(st, err, "removing a session");
            rollback(st);
            return AC_EIO;
        }
    }
    return exec(st, "COMMIT", err, "removing a session");
}

/* Binds row i of what a commit writes to one table (now: the database's, read at the commit's
 * BEGIN). */
typedef void (*bind_fn)(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now);

/* Event i of c bound to the parameters at + 1 .. at + 6 of an events INSERT. */
static void bind_event_at(sqlite3_stmt *q, int at, const ac_store_commit *c, size_t i)
{
    const ac_store_event *e = &c->evs[i];
    bind_static(q, at + 1, c->id);
    sqlite3_bind_int64(q, at + 2, (sqlite3_int64)e->n);
    sqlite3_bind_int64(q, at + 3, e->t_ms);
    bind_static(q, at + 4, e->ev);
    bind_static(q, at + 5, e->data);
    bind_static(q, at + 6, e->steps);
}

static void bind_event(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    (void)now;
    bind_event_at(q, 0, c, i);
}

static void bind_late(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    (void)now;
    bind_static(q, 1, c->late[i].steps);
    bind_static(q, 2, c->id);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)c->late[i].n);
}

static void bind_finished(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    sqlite3_bind_int(q, 1, c->finished_ok[i]);
    bind_static(q, 2, c->id);
    bind_static(q, 3, c->finished[i]);
    sqlite3_bind_int64(q, 4, now);
}

static void bind_started(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    bind_static(q, 1, c->id);
    bind_static(q, 2, c->started[i]);
    bind_static(q, 3, c->started_names[i]);
    sqlite3_bind_int64(q, 4, now);
}

static void bind_id(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    (void)i, (void)now;
    bind_static(q, 1, c->id);
}

static void bind_snapshot(sqlite3_stmt *q, const ac_store_commit *c, size_t i, int64_t now)
{
    (void)i, (void)now;
    bind_static(q, 1, c->id);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)c->snapshot_n);
    bind_static(q, 3, c->snapshot);
    sqlite3_bind_int(q, 4, c->snapshot_keep);
}

/* Runs sql once for each of the n rows bind gives: AC_OK, or AC_EIO with err filled. */
static int each(ac_store *st, const char *sql, const ac_store_commit *c, size_t n, bind_fn bind,
                ac_error *err)
{
    if (!n)
        return AC_OK;
    sqlite3_stmt *q = prep(st, sql);
    int ok = q != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        sqlite3_reset(q);
        bind(q, c, i, ((sq_store *)st)->commit_now);
        ok = sqlite3_step(q) == SQLITE_DONE;
    }
    if (!ok)
        sq_fail(st, err, "committing");
    done(q);
    return ok ? AC_OK : AC_EIO;
}

/* The session row of a commit, where its lease is checked: AC_OK; the lease check's error
 * (nothing written); or AC_EIO. The database's now is the one read at the commit's BEGIN
 * (?3): one read per transaction, not three per session row. */
static int write_row(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    sqlite3_stmt *q =
        prep(st, "UPDATE sessions SET status = ?1, at_rest = ?2, updated_ms = ?3, "
                 "events = max(events, ?4), holder = ?5, "
                 "lease_until = CASE WHEN ?6 < 0 THEN 0 ELSE ?3 + ?6 END, "
                 "title = coalesce(?7, title), spec_hash = coalesce(?8, spec_hash), "
                 "snapshot_seq = CASE WHEN ?9 > 0 THEN ?9 ELSE snapshot_seq END, "
                 "agent = coalesce(?10, agent) "
                 "WHERE id = ?11 AND (lease_until <= ?3 OR holder = '' OR holder = ?12) "
                 "AND attempt = ?13");
    if (!q)
        return sq_fail(st, err, "committing");
    int64_t lease = c->release ? -1 : c->lease_ms;
    sqlite3_int64 snap = c->snapshot ? (sqlite3_int64)c->snapshot_n : 0;
    bind_static(q, 1, c->status ? c->status : "running");
    sqlite3_bind_int(q, 2, c->at_rest);
    sqlite3_bind_int64(q, 3, ((sq_store *)st)->commit_now);
    sqlite3_bind_int64(q, 4, c->n_evs ? (sqlite3_int64)c->evs[c->n_evs - 1].n : 0);
    bind_static(q, 5, c->release ? "" : c->holder);
    sqlite3_bind_int64(q, 6, lease);
    bind_static(q, 7, c->title);
    bind_static(q, 8, c->spec_hash);
    sqlite3_bind_int64(q, 9, snap);
    bind_static(q, 10, c->agent);
    bind_static(q, 11, c->id);
    bind_static(q, 12, c->holder);
    sqlite3_bind_int64(q, 13, c->attempt);
    int rc = sqlite3_step(q);
    int changed = sqlite3_changes(DB(st));
    if (rc != SQLITE_DONE)
        sq_fail(st, err, "committing");
    done(q);
    if (rc != SQLITE_DONE)
        return AC_EIO;
    if (changed)
        return AC_OK;
    /* another holder's lease runs, a later attempt took it, or no such session: nothing
     * written */
    rc = lease_check(st, c->id, c->holder, err);
    return rc == AC_OK ? ac_store_fenced(st, c, err) : rc;
}

static const char EV_INSERT[] =
    "INSERT INTO events(session, n, t_ms, ev, data, steps) VALUES(?, ?, ?, ?, ?, ?)";

/* A session's row of a commit, made first when it is new: AC_OK; the lease check's error or
 * AC_EINVAL for a row to create that exists (nothing written); or AC_EIO. */
static int commit_head(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    int rc = AC_OK;
    if (c->create) /* AC_EINVAL: it exists (created by another process meanwhile) */
        rc = create_row(st, c->id, c->create_hash, c->create_params, c->holder, c->lease_ms,
                        ((sq_store *)st)->commit_now, err);
    return rc == AC_OK ? write_row(st, c, err) : rc;
}

/* What a commit writes after its session's row and events: AC_OK, or AC_EIO. */
static int commit_rest(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    int rc = each(st, "UPDATE events SET steps = ? WHERE session = ? AND n = ?", c, c->n_late,
                  bind_late, err);
    if (rc == AC_OK)
        rc = each(st,
                  "UPDATE tool_calls SET finished_ms = ?4, ok = ?1 "
                  "WHERE session = ?2 AND call_id = ?3",
                  c, c->n_finished, bind_finished, err);
    if (rc == AC_OK)
        rc = each(st,
                  "INSERT OR IGNORE INTO tool_calls(session, call_id, name, started_ms) "
                  "VALUES(?1, ?2, ?3, ?4)",
                  c, c->n_started, bind_started, err);
    /* a new snapshot replaces the latest, unless that one is kept (an agent change's) */
    if (rc == AC_OK)
        rc = each(st, "DELETE FROM snapshots WHERE session = ? AND kept = 0", c,
                  c->snapshot ? 1 : 0, bind_id, err);
    if (rc == AC_OK) /* one taken again at a kept one's event (a spec change there) stays kept */
        rc = each(st,
                  "INSERT INTO snapshots(session, n, body, kept) VALUES(?,?,?,?) "
                  "ON CONFLICT(session, n) DO UPDATE SET body = excluded.body, "
                  "kept = max(kept, excluded.kept)",
                  c, c->snapshot ? 1 : 0, bind_snapshot, err);
    return rc;
}

/* One session's part of a commit, inside the transaction (or its savepoint): AC_OK; the lease
 * check's error or AC_EINVAL for a row to create that exists (nothing written); or AC_EIO
 * (the caller rolls back). */
static int commit_body(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    int rc = commit_head(st, c, err);
    if (rc == AC_OK)
        rc = each(st, EV_INSERT, c, c->n_evs, bind_event, err);
    return rc == AC_OK ? commit_rest(st, c, err) : rc;
}

/* BEGIN IMMEDIATE of a commit, and the database's now read once for its rows: AC_OK, or AC_EIO
 * with err filled (no transaction left open). */
static int commit_begin(ac_store *st, ac_error *err)
{
    int rc = run(st, "BEGIN IMMEDIATE", err, "committing");
    if (rc != AC_OK)
        return rc;
    if (!(((sq_store *)st)->commit_now = db_now(st))) {
        sq_fail(st, err, "committing");
        rollback(st);
        return AC_EIO;
    }
    return AC_OK;
}

static int sq_commit(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    int rc = commit_begin(st, err);
    if (rc != AC_OK)
        return rc;
    rc = commit_body(st, c, err);
    if (rc != AC_OK) {
        rollback(st);
        return rc;
    }
    return run(st, "COMMIT", err, "committing");
}

/* Event rows of a group's commits, inserted EV_ROWS at a time: one statement for several
 * rows costs less than one for each. */
#define EV_ROWS 8
static const char EV_INSERT_ROWS[] =
    "INSERT INTO events(session, n, t_ms, ev, data, steps) VALUES(?, ?, ?, ?, ?, ?),"
    "(?, ?, ?, ?, ?, ?),(?, ?, ?, ?, ?, ?),(?, ?, ?, ?, ?, ?),(?, ?, ?, ?, ?, ?),"
    "(?, ?, ?, ?, ?, ?),(?, ?, ?, ?, ?, ?),(?, ?, ?, ?, ?, ?)";

typedef struct ev_rows {
    const ac_store_commit *c[EV_ROWS];
    size_t i[EV_ROWS], n;
} ev_rows;

/* The rows p holds inserted (EV_ROWS in one statement, fewer one by one), p emptied: AC_OK,
 * or AC_EIO with err filled. */
static int ev_rows_flush(ac_store *st, ev_rows *p, ac_error *err)
{
    size_t n = p->n;
    p->n = 0;
    if (n < EV_ROWS) {
        sqlite3_stmt *q = prep(st, EV_INSERT);
        int ok = q != NULL;
        for (size_t j = 0; ok && j < n; j++) {
            sqlite3_reset(q);
            bind_event_at(q, 0, p->c[j], p->i[j]);
            ok = sqlite3_step(q) == SQLITE_DONE;
        }
        if (!ok)
            sq_fail(st, err, "committing");
        done(q);
        return ok ? AC_OK : AC_EIO;
    }
    sqlite3_stmt *q = prep(st, EV_INSERT_ROWS);
    for (size_t j = 0; q && j < n; j++)
        bind_event_at(q, (int)j * 6, p->c[j], p->i[j]);
    int ok = q && sqlite3_step(q) == SQLITE_DONE;
    if (!ok)
        sq_fail(st, err, "committing");
    done(q);
    return ok ? AC_OK : AC_EIO;
}

/* Event i of c added to p, and p inserted when full: AC_OK, or AC_EIO with err filled. */
static int ev_rows_add(ac_store *st, ev_rows *p, const ac_store_commit *c, size_t i, ac_error *err)
{
    p->c[p->n] = c;
    p->i[p->n++] = i;
    return p->n == EV_ROWS ? ev_rows_flush(st, p, err) : AC_OK;
}

/* The group's commits in one transaction without savepoints: 1 when each was written or
 * failed having written nothing (a lease check, a row to create that exists), and the
 * transaction is committed; 0 when one failed having written part of its rows, or with
 * AC_EIO (rolled back: the caller writes them again, each in its savepoint); or the error of
 * BEGIN or COMMIT, for all (rolled back). */
static int commit_plain(ac_store *st, const ac_store_commit *c, size_t n, int *rcs, ac_error *errs)
{
    ev_rows p = {.n = 0};
    int rc = commit_begin(st, &errs[0]), midway = 0;
    for (size_t i = 0; rc == AC_OK && !midway && i < n; i++) {
        int before = sqlite3_total_changes(DB(st));
        rcs[i] = commit_head(st, &c[i], &errs[i]);
        if (rcs[i] != AC_OK && rcs[i] != AC_EIO && sqlite3_total_changes(DB(st)) == before)
            continue; /* failed alone, nothing written */
        midway = rcs[i] != AC_OK;
        for (size_t k = 0; !midway && k < c[i].n_evs; k++)
            midway = ev_rows_add(st, &p, &c[i], k, &errs[i]) != AC_OK;
        if (!midway && c[i].n_late) /* steps of events that may wait in p */
            midway = ev_rows_flush(st, &p, &errs[i]) != AC_OK;
        midway = midway || commit_rest(st, &c[i], &errs[i]) != AC_OK;
    }
    if (rc == AC_OK && (midway || ev_rows_flush(st, &p, &errs[0]) != AC_OK)) {
        rollback(st);
        memset(errs, 0, n * sizeof *errs);
        return 0;
    }
    if (rc == AC_OK && (rc = run(st, "COMMIT", &errs[0], "committing")) == AC_OK)
        return 1;
    rollback(st);
    for (size_t i = 0; i < n; i++) {
        rcs[i] = rc;
        errs[i] = errs[0];
    }
    return rc;
}

/* Several sessions' commits in one transaction (group commit across the sessions of a loop
 * turn). One that fails is rolled back alone and fails alone: a failure that wrote nothing
 * needs no savepoint, so the group is first written without any; when one fails midway, the
 * group is written again with each commit in a savepoint. A failure of the transaction fails
 * all. */
static int sq_commit_many(ac_store *st, const ac_store_commit *c, size_t n, int *rcs,
                          ac_error *errs)
{
    int plain = commit_plain(st, c, n, rcs, errs);
    if (plain == 1)
        return AC_OK;
    if (plain != 0)
        return plain;
    ac_error *first = &errs[0];
    int rc = commit_begin(st, first);
    for (size_t i = 0; rc == AC_OK && i < n; i++) {
        rc = run(st, "SAVEPOINT one", &errs[i], "committing");
        if (rc != AC_OK)
            break;
        rcs[i] = commit_body(st, &c[i], &errs[i]);
        if (rcs[i] != AC_OK && sqlite3_get_autocommit(DB(st))) {
            rc = rcs[i]; /* the database rolled the whole transaction back (full, I/O) */
            break;
        }
        if (rcs[i] != AC_OK)
            rc = run(st, "ROLLBACK TO one", &errs[i], "committing");
        if (rc == AC_OK)
            rc = run(st, "RELEASE one", &errs[i], "committing");
        if (rc != AC_OK)
            break;
    }
    if (rc == AC_OK)
        rc = run(st, "COMMIT", first, "committing");
    if (rc != AC_OK) {
        for (size_t i = 0; i < n; i++) /* the error of the one that failed it */
            if (errs[i].code == rc) {
                *first = errs[i];
                break;
            }
        rollback(st);
        for (size_t i = 0; i < n; i++) {
            rcs[i] = rc;
            errs[i] = *first;
        }
    }
    return rc;
}

static int sq_events(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                     ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT n, t_ms, ev, data, steps FROM events "
                               "WHERE session = ? AND n > ? ORDER BY n");
    if (!q)
        return sq_fail(st, err, "reading the journal");
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)after);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        ac_store_event e = {(uint64_t)sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
                            col(q, 2), (const char *)sqlite3_column_text(q, 3),
                            (const char *)sqlite3_column_text(q, 4)};
        int r = fn(ud, &e);
        if (r) {
            done(q);
            return r;
        }
    }
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "reading the journal");
}

static int get_text(ac_store *st, const char *sql, const char *id, char **out, uint64_t *n,
                    ac_error *err, const char *what)
{
    *out = NULL;
    sqlite3_stmt *q = prep(st, sql);
    if (!q)
        return sq_fail(st, err, what);
    bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *out = strdup(col(q, 0));
        if (n)
            *n = (uint64_t)sqlite3_column_int64(q, 1);
    }
    done(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(st, err, what);
    if (rc == SQLITE_ROW && !*out) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    return AC_OK;
}

static int sq_params(ac_store *st, const char *id, char **out, ac_error *err)
{
    int rc = get_text(st, "SELECT params, 0 FROM sessions WHERE id = ?", id, out, NULL, err,
                      "reading a session");
    if (rc == AC_OK && !*out) {
        ac_store_err(err, AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path, id);
        return AC_STORE_ENOENT;
    }
    return rc;
}

static int sq_snapshot_get(ac_store *st, const char *id, uint64_t upto, uint64_t *n, char **body,
                           ac_error *err)
{
    *n = 0;
    *body = NULL;
    sqlite3_stmt *q = prep(st, "SELECT body, n FROM snapshots WHERE session = ? AND n <= ? "
                               "ORDER BY n DESC LIMIT 1");
    if (!q)
        return sq_fail(st, err, "reading a snapshot");
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, upto > INT64_MAX ? INT64_MAX : (sqlite3_int64)upto);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *body = strdup(col(q, 0));
        *n = (uint64_t)sqlite3_column_int64(q, 1);
    }
    done(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sq_fail(st, err, "reading a snapshot");
    if (rc == SQLITE_ROW && !*body) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    return AC_OK;
}

static int sq_snapshots(ac_store *st, const char *id, ac_store_snap_fn fn, void *ud, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT n, body, kept FROM snapshots WHERE session = ? ORDER BY n");
    if (!q)
        return sq_fail(st, err, "reading snapshots");
    bind_text(q, 1, id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (fn(ud, (uint64_t)sqlite3_column_int64(q, 0), col(q, 1), sqlite3_column_int(q, 2))) {
            rc = SQLITE_DONE;
            break;
        }
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "reading snapshots");
}

static int sq_agent(ac_store *st, const char *id, char **out, ac_error *err)
{
    *out = NULL;
    sqlite3_stmt *q = prep(st, "SELECT agent FROM sessions WHERE id = ?");
    if (!q)
        return sq_fail(st, err, "reading a session");
    bind_text(q, 1, id);
    int rc = sqlite3_step(q);
    const char *v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    int oom = v && !(*out = strdup(v));
    done(q);
    if (rc == SQLITE_DONE) {
        ac_store_err(err, AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path, id);
        return AC_STORE_ENOENT;
    }
    if (rc != SQLITE_ROW)
        return sq_fail(st, err, "reading a session");
    if (oom) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    return AC_OK;
}

static int sq_tool_calls(ac_store *st, const char *id, ac_store_call_fn fn, void *ud, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT call_id, name, started_ms, finished_ms, ok "
                               "FROM tool_calls WHERE session = ? ORDER BY started_ms, call_id");
    if (!q)
        return sq_fail(st, err, "reading tool calls");
    bind_text(q, 1, id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW)
        if (fn(ud, col(q, 0), col(q, 1), sqlite3_column_int64(q, 2), sqlite3_column_int64(q, 3),
               sqlite3_column_int(q, 4))) {
            rc = SQLITE_DONE;
            break;
        }
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "reading tool calls");
}

static int sq_lease_acquire(ac_store *st, const char *id, const char *holder, int64_t lease_ms,
                            int64_t *attempt, ac_error *err)
{
    int rc = exec(st, "BEGIN IMMEDIATE", err, "taking a lease");
    if (rc != AC_OK)
        return rc;
    rc = lease_check(st, id, holder, err);
    if (rc != AC_OK) {
        rollback(st);
        return rc;
    }
    sqlite3_stmt *q = prep(st, "UPDATE sessions SET holder = ?, lease_until = " NOW " + ?, "
                               "attempt = attempt + 1 WHERE id = ? RETURNING attempt");
    int ok = q != NULL;
    if (ok) {
        bind_text(q, 1, holder);
        sqlite3_bind_int64(q, 2, lease_ms);
        bind_text(q, 3, id);
        ok = sqlite3_step(q) == SQLITE_ROW;
        if (ok && attempt)
            *attempt = sqlite3_column_int64(q, 0);
        ok = ok && sqlite3_step(q) == SQLITE_DONE;
    }
    if (!ok)
        sq_fail(st, err, "taking a lease");
    done(q);
    if (!ok) {
        rollback(st);
        return AC_EIO;
    }
    return exec(st, "COMMIT", err, "taking a lease");
}

static int sq_lease_release(ac_store *st, const char *id, const char *holder, int64_t attempt,
                            ac_error *err)
{
    sqlite3_stmt *q = prep(st, "UPDATE sessions SET holder = '', lease_until = 0 "
                               "WHERE id = ? AND holder = ? AND (? = 0 OR attempt = ?)");
    if (!q)
        return sq_fail(st, err, "releasing a lease");
    bind_text(q, 1, id);
    bind_text(q, 2, holder);
    sqlite3_bind_int64(q, 3, attempt);
    sqlite3_bind_int64(q, 4, attempt);
    int rc = sqlite3_step(q);
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "releasing a lease");
}

static int sq_note(ac_store *st, const char *id, uint64_t n, int64_t t_ms, const char *kind,
                   const char *body, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "INSERT INTO notes(session, after, t_ms, kind, body) "
                               "VALUES(?, ?, ?, ?, ?)");
    if (!q)
        return sq_fail(st, err, "writing a note");
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)n);
    sqlite3_bind_int64(q, 3, t_ms);
    bind_text(q, 4, kind);
    bind_text(q, 5, body);
    int rc = sqlite3_step(q);
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "writing a note");
}

static int sq_notes(ac_store *st, const char *id, ac_store_event_fn fn, void *ud, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "SELECT after, t_ms, kind, body FROM notes WHERE session = ? "
                               "ORDER BY after, rowid");
    if (!q)
        return sq_fail(st, err, "reading notes");
    bind_text(q, 1, id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        ac_store_event e = {(uint64_t)sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
                            col(q, 2), col(q, 3), NULL};
        int r = fn(ud, &e);
        if (r) {
            done(q);
            return r;
        }
    }
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "reading notes");
}

static int sq_forget(ac_store *st, const char *id, uint64_t upto, ac_error *err)
{
    sqlite3_stmt *q = prep(st, "DELETE FROM events WHERE session = ? AND n <= ?");
    if (!q)
        return sq_fail(st, err, "dropping old events");
    bind_text(q, 1, id);
    sqlite3_bind_int64(q, 2, (sqlite3_int64)upto);
    int rc = sqlite3_step(q);
    done(q);
    return rc == SQLITE_DONE ? AC_OK : sq_fail(st, err, "dropping old events");
}

/* A fork's statements: ?1 the new id, ?2 the original's, ?3 the last event copied, then the
 * row's fields, the snapshot and the note. */
static const char *const FORK_SQL[] = {
    "INSERT INTO sessions(id, spec_hash, params, status, at_rest, created_ms, updated_ms, events,"
    " snapshot_seq, title, agent) SELECT ?1, ?4, params, ?5, ?6, " NOW ", " NOW ", ?3, ?3, title,"
    " ?7 FROM sessions WHERE id = ?2",
    "INSERT INTO events(session, n, t_ms, ev, data, steps) SELECT ?1, n, t_ms, ev, data, steps"
    " FROM events WHERE session = ?2 AND n <= ?3 ORDER BY n",
    "INSERT INTO notes(session, after, t_ms, kind, body) SELECT ?1, after, t_ms, kind, body"
    " FROM notes WHERE session = ?2 AND after < ?3 ORDER BY after, rowid",
    "INSERT INTO snapshots(session, n, body, kept) SELECT ?1, n, body, 1 FROM snapshots"
    " WHERE session = ?2 AND kept = 1 AND n < ?3",
    "INSERT INTO snapshots(session, n, body, kept) VALUES(?1, ?3, ?8, 1)",
    "INSERT INTO notes(session, after, t_ms, kind, body) VALUES(?1, ?3, ?9, 'forked_from', ?10)",
};

/* One statement of FORK_SQL: SQLITE_DONE, or its error; *changed the rows it wrote. */
static int fork_step(ac_store *st, const char *sql, const ac_store_fork_row *f, int *changed)
{
    sqlite3_stmt *q = prep(st, sql);
    if (!q)
        return SQLITE_ERROR;
    int np = sqlite3_bind_parameter_count(q);
    bind_static(q, 1, f->to);
    bind_static(q, 2, f->from);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)f->upto);
    if (np >= 4) {
        bind_static(q, 4, f->spec_hash);
        bind_static(q, 5, f->status);
        sqlite3_bind_int(q, 6, f->at_rest);
        bind_static(q, 7, f->agent);
    }
    if (np >= 8)
        bind_static(q, 8, f->snapshot);
    if (np >= 9) {
        sqlite3_bind_int64(q, 9, f->t_ms);
        bind_static(q, 10, f->note);
    }
    int rc = sqlite3_step(q);
    *changed = sqlite3_changes(DB(st));
    done(q);
    return rc;
}

static int sq_fork(ac_store *st, const ac_store_fork_row *f, ac_error *err)
{
    int rc = exec(st, "BEGIN IMMEDIATE", err, "forking a session");
    if (rc != AC_OK)
        return rc;
    for (size_t i = 0; rc == AC_OK && i < sizeof FORK_SQL / sizeof FORK_SQL[0]; i++) {
        int changed = 0, r = fork_step(st, FORK_SQL[i], f, &changed);
        if (i == 0 && (r & 0xff) == SQLITE_CONSTRAINT) {
            ac_store_err(err, rc = AC_EINVAL, "store '%s' already has a session '%s'", st->path,
                         f->to);
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(st, err, "forking a session");
        } else if (i == 0 && !changed) {
            ac_store_err(err, rc = AC_STORE_ENOENT, "store '%s' has no session '%s'", st->path,
                         f->from);
        }
    }
    if (rc != AC_OK) {
        rollback(st);
        return rc;
    }
    return exec(st, "COMMIT", err, "forking a session");
}

/* ---- the one worker of a file ---- */

/* The byte of DB-holders a worker (agentc serve) locks exclusively: past the holders' bytes
 * (holder_byte), so one server per file, whatever its holder name. */
#define SERVER_BYTE ((off_t)1 << 41)

/* The database's now, in ms (0 on failure). */
static int64_t db_now(ac_store *st)
{
    sqlite3_stmt *q = prep(st, "SELECT " NOW);
    int64_t now = q && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
    done(q);
    return now;
}

static int sq_worker_join(ac_store *st, const char *listen, ac_error *err)
{
    sq_store *s = (sq_store *)st;
#ifdef F_OFD_SETLK
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    fl.l_start = SERVER_BYTE;
    fl.l_len = 1;
    if (s->lockfd >= 0 && fcntl(s->lockfd, F_OFD_SETLK, &fl) != 0) {
        ac_store_err(err, AC_STORE_EBUSY,
                     "store '%s' is served by another agentc serve already (one server per "
                     "SQLite file; several workers share a PostgreSQL database)",
                     st->path);
        return AC_STORE_EBUSY;
    }
#else
    (void)err;
#endif
    s->joined = 1;
    snprintf(s->listen, sizeof s->listen, "%s", listen);
    s->started_ms = s->beat_ms = db_now(st);
    return AC_OK;
}

static int sq_worker_beat(ac_store *st, ac_error *err)
{
    (void)err;
    sq_store *s = (sq_store *)st;
    int64_t now = db_now(st);
    if (now)
        s->beat_ms = now;
    return now ? AC_OK : sq_fail(st, err, "renewing its worker");
}

static int sq_worker_leave(ac_store *st, ac_error *err)
{
    (void)err;
    sq_store *s = (sq_store *)st;
#ifdef F_OFD_SETLK
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
    fl.l_start = SERVER_BYTE;
    fl.l_len = 1;
    if (s->joined && s->lockfd >= 0)
        fcntl(s->lockfd, F_OFD_SETLK, &fl);
#endif
    s->joined = 0;
    return AC_OK;
}

static int sq_workers(ac_store *st, ac_store_worker_fn fn, void *ud, ac_error *err)
{
    sq_store *s = (sq_store *)st;
    if (!s->joined)
        return AC_OK;
    sqlite3_stmt *q = prep(st, "SELECT count(*) FROM sessions WHERE holder = ? AND "
                               "lease_until > " NOW);
    if (!q)
        return sq_fail(st, err, "listing workers");
    bind_text(q, 1, st->holder);
    ac_store_worker w;
    memset(&w, 0, sizeof w);
    w.sessions = sqlite3_step(q) == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(q, 0) : 0;
    done(q);
    snprintf(w.id, sizeof w.id, "%s", st->holder);
    snprintf(w.listen, sizeof w.listen, "%s", s->listen);
    w.started_ms = s->started_ms;
    w.heartbeat_ms = s->beat_ms;
    w.alive = 1;
    fn(ud, &w);
    return AC_OK;
}

/* Inside the claim's transaction: the ids (with their creation times) of up to max sessions
 * not at rest whose lease is free; *out malloc'd. */
static int claimable(ac_store *st, size_t max, int mine, ac_store_session_info **out, size_t *n)
{
    sqlite3_stmt *q = prep(st, "SELECT id, created_ms, holder, lease_until, " NOW
                               ", attempt FROM sessions WHERE at_rest = 0 ORDER BY updated_ms, id");
    if (!q)
        return -1;
    int rc;
    while (*n < max && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *h = col(q, 2);
        int own = !strcmp(h, st->holder);
        if (own ? !mine
                : (*h && sqlite3_column_int64(q, 3) > sqlite3_column_int64(q, 4) &&
                   !holder_gone(st, h)))
            continue;
        ac_store_session_info *o = realloc(*out, (*n + 1) * sizeof *o);
        if (!o)
            break;
        *out = o;
        memset(&o[*n], 0, sizeof *o);
        snprintf(o[*n].id, sizeof o[*n].id, "%s", col(q, 0));
        o[*n].created_ms = sqlite3_column_int64(q, 1);
        snprintf(o[*n].holder, sizeof o[*n].holder, "%s", h);
        o[*n].attempt = sqlite3_column_int64(q, 5) + !own; /* as the claim counts it */
        (*n)++;
    }
    done(q);
    return 0;
}

static int sq_claim(ac_store *st, size_t max, int mine, int64_t lease_ms, ac_store_list_fn fn,
                    void *ud, ac_error *err)
{
    int rc = exec(st, "BEGIN IMMEDIATE", err, "claiming sessions");
    if (rc != AC_OK)
        return rc;
    ac_store_session_info *c = NULL;
    size_t n = 0;
    int ok = claimable(st, max, mine, &c, &n) == 0;
    for (size_t i = 0; ok && i < n; i++) {
        sqlite3_stmt *q = prep(st, "UPDATE sessions SET holder = ?, lease_until = " NOW " + ?, "
                                   "attempt = attempt + (holder <> ?1) WHERE id = ?");
        if (q) {
            bind_text(q, 1, st->holder);
            sqlite3_bind_int64(q, 2, lease_ms);
            bind_text(q, 3, c[i].id);
        }
        ok = q && sqlite3_step(q) == SQLITE_DONE;
        done(q);
    }
    if (!ok || exec(st, "COMMIT", err, "claiming sessions") != AC_OK) {
        if (!ok)
            sq_fail(st, err, "claiming sessions");
        rollback(st);
        free(c);
        return AC_EIO;
    }
    for (size_t i = 0; i < n; i++)
        if (fn(ud, &c[i]))
            break;
    free(c);
    return AC_OK;
}

static const ac_store_ops SQ_OPS = {
    "sqlite",
    sq_close,
    sq_create,
    sq_info,
    sq_list,
    sq_rm,
    sq_commit,
    sq_events,
    sq_params,
    sq_snapshot_get,
    sq_tool_calls,
    sq_lease_acquire,
    sq_lease_release,
    sq_note,
    sq_notes,
    sq_commit_many,
    sq_forget,
    sq_agent,
    sq_fork,
    sq_worker_join,
    sq_worker_beat,
    sq_worker_leave,
    sq_workers,
    sq_claim,
    ac_store_commit_at_once,
    NULL,
    sq_snapshots,
    NULL,
};

/* Reads one integer pragma; -1 on failure. */
static long long pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *q = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q); /* not cached */
    return v;
}

/* Brings the file to SCHEMA_VERSION in one transaction (an empty file: the whole schema; an
 * older one: each migration from its version on). The version is read again under the write
 * lock: another process may have migrated it meanwhile. */
static int migrate(sq_store *s, ac_error *err)
{
    ac_store *st = &s->base;
    if (pragma_int(s->db, "PRAGMA user_version") == SCHEMA_VERSION)
        return AC_OK;
    int rc = exec(st, "BEGIN IMMEDIATE;", err, "migrating it");
    if (rc != AC_OK)
        return rc;
    long long ver = pragma_int(s->db, "PRAGMA user_version");
    if (ver < 0 || ver > SCHEMA_VERSION) {
        rollback(st);
        ac_store_err(err, AC_EIO,
                     "store '%s' has schema version %lld, newer than this agentc reads (%d)",
                     st->path, ver, SCHEMA_VERSION);
        return AC_EIO;
    }
    const char *const *m = migrations();
    for (long long v = ver; rc == AC_OK && v < SCHEMA_VERSION; v = v ? v + 1 : SCHEMA_VERSION)
        rc = exec(st, m[v], err, v ? "migrating it" : "creating its tables");
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d;", APP_ID,
             SCHEMA_VERSION);
    if (rc == AC_OK && ver < SCHEMA_VERSION)
        rc = exec(st, sql, err, "migrating it");
    if (rc == AC_OK)
        rc = exec(st, "COMMIT;", err, "migrating it");
    if (rc != AC_OK)
        rollback(st);
    return rc;
}

static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* SQLite's own count of its memory takes a global mutex on every allocation of every
 * statement step; nothing reads it. Only possible before SQLite starts (else refused: kept). */
static void config_sqlite(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* sqlite3_open_v2 of the file at path: "file:..." would be a URI to an SQLite built with URIs
 * on (another file, or memory), "./file:..." is the file created and locked. */
static int open_db(sq_store *s, const char *path, int oflags)
{
    pthread_once(&config_once, config_sqlite);
    if (strncmp(path, "file:", 5))
        return sqlite3_open_v2(path, &s->db, oflags, NULL);
    size_t n = strlen(path) + 3;
    char *dot = malloc(n);
    if (!dot)
        return SQLITE_NOMEM;
    snprintf(dot, n, "./%s", path);
    int rc = sqlite3_open_v2(dot, &s->db, oflags, NULL);
    free(dot);
    return rc;
}

/* Creates the file 0600 ourselves (SQLite would use the umask), never through a link; an
 * existing one of ours open to others is made 0600. */
static int create_file(const char *path, int mem, ac_error *err)
{
    int fd = mem ? open("/dev/null", O_RDONLY | O_CLOEXEC)
                 : open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EISDIR))
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        ac_store_err(err, AC_EIO, "cannot open store '%s': %s", path, strerror(errno));
        return AC_EIO;
    }
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 077) && sb.st_uid == geteuid())
        fchmod(fd, 0600);
    close(fd);
    return AC_OK;
}

/* What kind of file is it? Read before anything is written: AC_OK for an empty database or
 * an agentc store this agentc reads. */
static int check_kind(sq_store *s, const char *path, ac_error *err)
{
    long long app = pragma_int(s->db, "PRAGMA application_id");
    long long ver = pragma_int(s->db, "PRAGMA user_version");
    long long tables = pragma_int(s->db, "SELECT count(*) FROM sqlite_master");
    if ((app < 0 || ver < 0 || tables < 0) && (sqlite3_errcode(s->db) & 0xff) == SQLITE_READONLY) {
        ac_store_err(err, AC_EIO,
                     "store '%s' cannot be written by this user (%s): it is read-only here; "
                     "`agentc sessions list`, `show` and `export` read it as it is",
                     path, sqlite3_errmsg(s->db));
        return AC_EIO;
    }
    if (app < 0 || ver < 0 || tables < 0) {
        ac_store_err(err, AC_EIO,
                     "store '%s' is not an agentc store: the file is corrupt or not an SQLite "
                     "database (%s); it was left as it is",
                     path, sqlite3_errmsg(s->db));
        return AC_EIO;
    }
    if (tables > 0 && app != APP_ID) {
        ac_store_err(err, AC_EIO,
                     "store '%s' is an SQLite database of something else (not an agentc "
                     "store); it was left as it is",
                     path);
        return AC_EIO;
    }
    if (ver > SCHEMA_VERSION) {
        ac_store_err(err, AC_EIO,
                     "store '%s' has schema version %lld, newer than this agentc reads (%d)", path,
                     ver, SCHEMA_VERSION);
        return AC_EIO;
    }
    return AC_OK;
}

/* The file at path opened as immutable ("file:PATH?immutable=1", the path %-escaped): how
 * SQLite reads a WAL database it may not write beside (no -shm can be made there). */
static int open_immutable(sq_store *s, const char *path)
{
    ac_buf uri;
    ac_buf_init(&uri, AC_BUF_MAX);
    ac_buf_addstr(&uri, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if (*c == '%' || *c == '?' || *c == '#' || *c < 0x20 || *c > 0x7e)
            ac_buf_printf(&uri, "%%%02X", *c);
        else
            ac_buf_add(&uri, c, 1);
    }
    int rc = ac_buf_addstr(&uri, "?immutable=1") == 0
                 ? sqlite3_open_v2(uri.p, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL)
                 : SQLITE_NOMEM;
    ac_buf_free(&uri);
    return rc;
}

/* A store opened to be read only: nothing written (no WAL switch, migration or lock), the
 * schema this agentc reads. Where SQLite cannot read it so (a WAL database in a directory this
 * user may not write: no -shm), it is read as immutable: what its file holds, without what
 * a writer running now has not checkpointed yet. AC_OK, RO_WRITE_FIRST (an empty database or
 * one of an older schema: s kept, for the usual open), or the error with s closed. */
#define RO_WRITE_FIRST 1 /* not readable as it is: opened as usual (which says if it cannot) */
static int open_read_only(sq_store *s, const char *path, ac_error *err)
{
    int rc = open_db(s, path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX);
    if (rc == SQLITE_OK && pragma_int(s->db, "PRAGMA application_id") < 0 &&
        (sqlite3_errcode(s->db) & 0xff) == SQLITE_READONLY) {
        sqlite3_close(s->db);
        s->db = NULL;
        rc = open_immutable(s, path);
    }
    if (rc != SQLITE_OK) {
        ac_store_err(err, AC_EIO, "cannot open store '%s' to read it: %s", path,
                     s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sq_close(&s->base);
        return AC_EIO;
    }
    sqlite3_busy_timeout(s->db, 5000);
    sqlite3_extended_result_codes(s->db, 1);
    rc = check_kind(s, path, err);
    if (rc == AC_OK && pragma_int(s->db, "PRAGMA user_version") != SCHEMA_VERSION) {
        sqlite3_close(s->db); /* new (made by a process stopped early) or older: written first */
        s->db = NULL;
        return RO_WRITE_FIRST;
    }
    if (rc != AC_OK) {
        sq_close(&s->base);
        return rc;
    }
    /* no lock taken, but the holders' locks are read: a lease whose holder is gone is shown
     * as such (a crashed run's session is stopped, not in use) */
    char lp[4200];
    snprintf(lp, sizeof lp, "%s-holders", path);
    s->lockfd = open(lp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    return AC_OK;
}

int ac_store_sqlite_open(const char *path, const ac_store_options *opt, const char *holder,
                         ac_store **out, ac_error *err)
{
    *out = NULL;
    int mem = !strcmp(path, ":memory:"); /* no file: this process's memory */
    int ro = opt && opt->read_only && !mem;
    sq_store *s = calloc(1, sizeof *s);
    if (!s || !(s->base.path = strdup(path))) {
        free(s);
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    s->base.ops = &SQ_OPS;
    s->lockfd = -1;
    snprintf(s->base.holder, sizeof s->base.holder, "%s", holder);
    ac_store *st = &s->base;
    int rc = ro ? open_read_only(s, path, err) : RO_WRITE_FIRST;
    if (rc == AC_OK) {
        *out = st;
        return AC_OK;
    }
    if (rc != RO_WRITE_FIRST)
        return AC_EIO;
    if (create_file(path, mem, err) != AC_OK) {
        sq_close(st);
        return AC_EIO;
    }
    /* one thread uses a connection (the loop's: include/agentc/store.h), so SQLite's own
     * locks around each call are not needed; other connections and processes still lock the
     * file as before */
    int oflags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX;
    if (open_db(s, path, oflags) != SQLITE_OK) {
        ac_store_err(err, AC_EIO, "cannot open store '%s': %s", path,
                     s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sq_close(st);
        return AC_EIO;
    }
    sqlite3_busy_timeout(s->db,
                         (int)(opt && opt->busy_timeout_ms > 0 ? opt->busy_timeout_ms : 5000));
    sqlite3_extended_result_codes(s->db, 1);
    if (check_kind(s, path, err) != AC_OK) {
        sq_close(st);
        return AC_EIO;
    }
    if (opt && opt->max_bytes > 0) {
        long long page = pragma_int(s->db, "PRAGMA page_size");
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld",
                 page > 0 ? (long long)(opt->max_bytes / page) + 1 : 1000);
        pragma_int(s->db, sql);
    }
    pragma_int(s->db, "PRAGMA journal_mode = WAL");
    if ((rc = exec(st, "PRAGMA synchronous = NORMAL", err, "setting it up")) != AC_OK) {
        sq_close(st);
        return rc;
    }
    /* Some pragmas return text: check WAL took. */
    sqlite3_stmt *q = prep(st, "PRAGMA journal_mode");
    int wal = q && sqlite3_step(q) == SQLITE_ROW && strcmp(col(q, 0), mem ? "memory" : "wal") == 0;
    done(q);
    if (!wal) {
        ac_store_err(err, AC_EIO,
                     "store '%s': cannot use write-ahead logging there (a read-only directory "
                     "or file?): %s",
                     path, sqlite3_errmsg(s->db));
        sq_close(st);
        return AC_EIO;
    }
    if ((rc = migrate(s, err)) != AC_OK) {
        sq_close(st);
        return rc;
    }
    if ((rc = holder_lock(s, err)) != AC_OK) {
        sq_close(st);
        return rc;
    }
    *out = st;
    return AC_OK;
}
