/*
 * store_pg_schema.c - the PostgreSQL store's schema: created on open, migrated from
 * an older version step by step, in one transaction under an advisory lock (others
 * that open at once wait for it, then find it done). Its version is in the table
 * meta; a newer one than this agentc writes is refused.
 *
 * Rolling upgrades: each open store's connection holds the advisory lock
 * (PG_VERSION_LOCK, the version it runs) shared. A migration waits, bounded by the
 * store's busy timeout, until no session's lease is held by a live holder whose
 * connection runs an older version (or none that says: an agentc from before
 * versions were locked), so that workers can be upgraded one at a time: the first
 * upgraded one migrates once the others' sessions are released or taken over. Past
 * the bound it fails, naming the session and its holder, and nothing is changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_pg.h"

#define LOCK_KEY 1634160195 /* "agNC": the advisory lock of migrations */

/* STEPS[k] takes the schema from version k to k + 1 (in the store's schema, the search path). */
static const char *const STEPS[PG_SCHEMA_VERSION] = {
    "CREATE TABLE meta(key text PRIMARY KEY, value bigint NOT NULL);"
    "CREATE TABLE sessions("
    " id text PRIMARY KEY, spec_hash text NOT NULL, params text NOT NULL DEFAULT '{}',"
    " status text NOT NULL DEFAULT 'idle', at_rest int NOT NULL DEFAULT 1,"
    " created_ms bigint NOT NULL, updated_ms bigint NOT NULL,"
    " events bigint NOT NULL DEFAULT 0, snapshot_seq bigint NOT NULL DEFAULT 0,"
    " holder text NOT NULL DEFAULT '', lease_until bigint NOT NULL DEFAULT 0,"
    " title text NOT NULL DEFAULT '', agent text);"
    "CREATE TABLE events(id bigserial PRIMARY KEY, session text NOT NULL, n bigint NOT NULL,"
    " t_ms bigint NOT NULL, ev text NOT NULL, data text, steps text, UNIQUE(session, n));"
    "CREATE TABLE snapshots(session text NOT NULL, n bigint NOT NULL, body text NOT NULL,"
    " kept int NOT NULL DEFAULT 0, PRIMARY KEY(session, n));"
    "CREATE TABLE tool_calls(session text NOT NULL, call_id text NOT NULL, name text NOT NULL,"
    " started_ms bigint NOT NULL, finished_ms bigint NOT NULL DEFAULT 0,"
    " ok int NOT NULL DEFAULT 0, PRIMARY KEY(session, call_id));"
    "CREATE TABLE notes(id bigserial PRIMARY KEY, session text NOT NULL, after bigint NOT NULL,"
    " t_ms bigint NOT NULL, kind text NOT NULL, body text NOT NULL);"
    "CREATE INDEX notes_session ON notes(session, after);",
    /* 2: the workers (store.h), a row each; the sessions mid-turn, what a claim reads */
    "CREATE TABLE workers(id text PRIMARY KEY, listen text NOT NULL DEFAULT '',"
    " lease_ms bigint NOT NULL, started_ms bigint NOT NULL, heartbeat_ms bigint NOT NULL);"
    "CREATE INDEX sessions_busy ON sessions(updated_ms, id) WHERE at_rest = 0;",
    /* 3: the inbox of requests for a session another worker runs (store_inbox.c) */
    "CREATE TABLE inbox(id bigserial PRIMARY KEY, session text NOT NULL, holder text NOT NULL,"
    " owner text NOT NULL, method text NOT NULL, route text NOT NULL, body text NOT NULL,"
    " state text NOT NULL DEFAULT 'pending', status int NOT NULL DEFAULT 0, reply text,"
    " created_ms bigint NOT NULL);"
    "CREATE INDEX inbox_holder ON inbox(holder, state);",
    /* 4: sessions listed most recently updated first without sorting the table */
    "CREATE INDEX sessions_updated ON sessions(updated_ms DESC, id);",
    /* 5: the takings of each session's lease, its fencing token (store_int.h) */
    "ALTER TABLE sessions ADD COLUMN attempt bigint NOT NULL DEFAULT 1;",
};

/* A live lease held by a holder whose connection runs an older version than $1 (or says
 * none): its session, holder and the ms its lease runs. */
#define OLDER_LEASE                                                                                \
    "SELECT id, holder, lease_until - " NOW " FROM sessions WHERE holder <> '' AND "               \
    "lease_until > " NOW " AND " ALIVE " AND NOT EXISTS(SELECT 1 FROM pg_locks h JOIN pg_locks v " \
    "ON v.pid = h.pid AND v.locktype = 'advisory' AND v.granted AND v.objsubid = 2 "               \
    "AND v.classid::bigint = " PG_VERSION_LOCK " AND v.objid::bigint >= $1 "                       \
    "WHERE h.locktype = 'advisory' AND h.granted AND h.objsubid = 2 "                              \
    "AND h.classid::bigint = 1634160196 "                                                          \
    "AND h.objid::bigint = (hashtext(holder)::bigint & 4294967295)) LIMIT 1"

int ac_pg_exec_text(pg_store *s, const char *sql, ac_error *err, const char *what)
{
    ac_store_blocked(&s->base, "statement", sql, what);
    PGresult *r = PQexec(s->conn, sql);
    ExecStatusType t = PQresultStatus(r);
    PQclear(r);
    if (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK)
        return AC_OK;
    ac_pg_fail(&s->base, err, what);
    ac_pg_rollback(&s->base);
    return AC_EIO;
}

/* The version of the store's schema: 0 when it has no tables yet, -1 on failure. */
static long long schema_version(pg_store *s, ac_error *err)
{
    pargs a = {0};
    PGresult *r =
        ac_pg_q(&s->base, "SELECT to_regclass('meta') IS NOT NULL", &a, err, "opening it");
    if (!r)
        return -1;
    int has = !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    if (!has)
        return 0;
    r = ac_pg_q(&s->base, "SELECT value FROM meta WHERE key = 'version'", &a, err, "opening it");
    if (!r)
        return -1;
    long long v = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    return v;
}

/* Inside the migration's transaction: until no older holder has a lease (AC_OK), bounded by
 * the busy timeout (AC_STORE_EBUSY naming one), polled every 100 ms. */
static int wait_older(pg_store *s, long long from, ac_error *err)
{
    struct timespec t0, now, nap = {0, 100 * 1000000L};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pargs a = {0};
        p_i(&a, PG_SCHEMA_VERSION);
        PGresult *r = ac_pg_q(&s->base, OLDER_LEASE, &a, err, "migrating it");
        if (!r)
            return AC_EIO;
        int busy = PQntuples(r) > 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long ms = (now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (busy && ms >= s->timeout_ms)
            ac_store_err(err, AC_STORE_EBUSY,
                         "store '%s': cannot migrate its schema from version %lld to %d while "
                         "an older agentc runs sessions: session '%s' is held by %s (its lease "
                         "runs %s ms more); waited %lld ms. Upgrade or stop that worker, or "
                         "open again when its lease ended",
                         s->base.path, from, PG_SCHEMA_VERSION, PQgetvalue(r, 0, 0),
                         PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), ms);
        PQclear(r);
        if (!busy)
            return AC_OK;
        if (ms >= s->timeout_ms)
            return AC_STORE_EBUSY;
        nanosleep(&nap, NULL);
    }
}

int ac_pg_migrate(pg_store *s, ac_error *err)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "BEGIN; SELECT pg_advisory_xact_lock(%d); CREATE SCHEMA IF NOT EXISTS \"%s\"",
             LOCK_KEY, s->schema);
    if (ac_pg_exec_text(s, sql, err, "creating its schema") != AC_OK)
        return AC_EIO;
    long long v = schema_version(s, err);
    if (v > PG_SCHEMA_VERSION)
        ac_store_err(err, AC_EIO,
                     "store '%s' has schema version %lld, newer than this agentc reads (%d)",
                     s->base.path, v, PG_SCHEMA_VERSION);
    int rc = v < 0 || v > PG_SCHEMA_VERSION ? AC_EIO : AC_OK;
    if (rc == AC_OK && v > 0 && v < PG_SCHEMA_VERSION)
        rc = wait_older(s, v, err);
    if (rc != AC_OK) {
        ac_pg_rollback(&s->base);
        return rc;
    }
    for (long long k = v; k < PG_SCHEMA_VERSION; k++)
        if (ac_pg_exec_text(s, STEPS[k], err, "migrating it") != AC_OK)
            return AC_EIO;
    snprintf(sql, sizeof sql,
             "INSERT INTO meta VALUES('version', %d) ON CONFLICT(key) DO UPDATE SET value = %d",
             PG_SCHEMA_VERSION, PG_SCHEMA_VERSION);
    if (v < PG_SCHEMA_VERSION && ac_pg_exec_text(s, sql, err, "migrating it") != AC_OK)
        return AC_EIO;
    return ac_pg_exec_text(s, "COMMIT", err, "migrating it");
}
