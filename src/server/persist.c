/*
 * persist.c - what `agentc serve --db` keeps next to the store's sessions, in
 * the same SQLite file: who owns each session (and its system prompt), and
 * each session's event log as it was sent, so a client reconnecting with
 * Last-Event-ID after a restart gets exactly what it missed.
 *
 * Its own connection and tables (serve_sessions, serve_events). Each insert
 * commits by itself: in WAL mode with synchronous=NORMAL a commit does not
 * wait for the disk, and no transaction is ever left open across a loop
 * iteration, where it would hold the write lock the store's own commit at the
 * end of the iteration needs (same thread: it would wait for nothing). A
 * kill -9 loses nothing committed; a power loss, the last commits.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

struct srv_db {
    sqlite3 *db;
    sqlite3_stmt *ins_event, *ins_session, *del_session, *del_events, *sel_events;
    int in_tx;
    ac_loop *loop;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS serve_sessions(id TEXT PRIMARY KEY, owner TEXT NOT NULL,"
    " public_id TEXT NOT NULL, system TEXT, created_ms INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS serve_events(session TEXT NOT NULL, seq INTEGER NOT NULL,"
    " frame TEXT NOT NULL, PRIMARY KEY(session, seq)) WITHOUT ROWID;";

srv_db *srv_db_open(const char *path, ac_loop *loop)
{
    srv_db *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->loop = loop;
    if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) !=
            SQLITE_OK ||
        sqlite3_busy_timeout(d->db, 5000) != SQLITE_OK ||
        sqlite3_exec(d->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(d->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db, "INSERT OR REPLACE INTO serve_events VALUES(?, ?, ?)", -1,
                           &d->ins_event, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db, "INSERT OR REPLACE INTO serve_sessions VALUES(?, ?, ?, ?, ?)", -1,
                           &d->ins_session, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db, "DELETE FROM serve_sessions WHERE id = ?", -1, &d->del_session,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db, "DELETE FROM serve_events WHERE session = ?", -1, &d->del_events,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(d->db,
                           "SELECT seq, frame FROM serve_events WHERE session = ? ORDER BY seq", -1,
                           &d->sel_events, NULL) != SQLITE_OK) {
        fprintf(stderr, "agentc serve: cannot use '%s' for the event logs: %s\n", path,
                d->db ? sqlite3_errmsg(d->db) : "out of memory");
        srv_db_close(d);
        return NULL;
    }
    return d;
}

void srv_db_commit(srv_db *d)
{
    if (!d || !d->in_tx)
        return;
    if (sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "agentc serve: cannot commit event logs: %s\n", sqlite3_errmsg(d->db));
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    }
    d->in_tx = 0;
}

/* Several statements in one transaction, committed before returning. */
static void begin(srv_db *d)
{
    if (!d->in_tx && sqlite3_exec(d->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK)
        d->in_tx = 1;
}

void srv_db_close(srv_db *d)
{
    if (!d)
        return;
    srv_db_commit(d);
    sqlite3_finalize(d->ins_event);
    sqlite3_finalize(d->ins_session);
    sqlite3_finalize(d->del_session);
    sqlite3_finalize(d->del_events);
    sqlite3_finalize(d->sel_events);
    sqlite3_close(d->db);
    free(d);
}

static int step_done(srv_db *d, sqlite3_stmt *q, const char *what)
{
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "agentc serve: cannot %s: %s\n", what, sqlite3_errmsg(d->db));
        return -1;
    }
    return 0;
}

int srv_db_add_event(srv_db *d, const char *sid, size_t seq, const char *frame, size_t n)
{
    sqlite3_bind_text(d->ins_event, 1, sid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(d->ins_event, 2, (sqlite3_int64)seq);
    sqlite3_bind_text(d->ins_event, 3, frame, (int)n, SQLITE_STATIC);
    return step_done(d, d->ins_event, "record an event");
}

int srv_db_add_session(srv_db *d, const char *sid, const char *owner, const char *public_id,
                       const char *system, int64_t created_ms)
{
    sqlite3_bind_text(d->ins_session, 1, sid, -1, SQLITE_STATIC);
    sqlite3_bind_text(d->ins_session, 2, owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(d->ins_session, 3, public_id, -1, SQLITE_STATIC);
    if (system)
        sqlite3_bind_text(d->ins_session, 4, system, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(d->ins_session, 4);
    sqlite3_bind_int64(d->ins_session, 5, created_ms);
    return step_done(d, d->ins_session, "record a session");
}

void srv_db_remove_session(srv_db *d, const char *sid)
{
    begin(d);
    sqlite3_bind_text(d->del_session, 1, sid, -1, SQLITE_STATIC);
    step_done(d, d->del_session, "remove a session");
    sqlite3_bind_text(d->del_events, 1, sid, -1, SQLITE_STATIC);
    step_done(d, d->del_events, "remove a session's events");
    srv_db_commit(d);
}

int srv_db_load_events(srv_db *d, srv_sess *ss)
{
    srv_db_commit(d);
    sqlite3_stmt *q = d->sel_events;
    sqlite3_bind_text(q, 1, ss->stored_id, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        size_t seq = (size_t)sqlite3_column_int64(q, 0);
        const char *f = (const char *)sqlite3_column_text(q, 1);
        size_t n = (size_t)sqlite3_column_bytes(q, 1);
        if (seq != ss->n_log + 1)
            break; /* a gap (lost by a crash): the log goes on from here */
        if (srv_sess_log_append(ss, f, n))
            break;
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

int srv_db_each_session(srv_db *d, srv_db_session_fn fn, void *ud)
{
    srv_db_commit(d);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(d->db,
                           "SELECT s.id, s.owner, s.public_id, s.system, s.created_ms,"
                           " (SELECT max(seq) FROM serve_events e WHERE e.session = s.id)"
                           " FROM serve_sessions s ORDER BY s.created_ms, s.id",
                           -1, &q, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *sys = (const char *)sqlite3_column_text(q, 3);
        fn(ud, (const char *)sqlite3_column_text(q, 0), (const char *)sqlite3_column_text(q, 1),
           (const char *)sqlite3_column_text(q, 2), sys, sqlite3_column_int64(q, 4),
           (size_t)sqlite3_column_int64(q, 5));
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? 0 : -1;
}
