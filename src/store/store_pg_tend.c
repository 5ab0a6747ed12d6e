/*
 * store_pg_tend.c - the store's connection kept from a worker's heartbeat (store_pg.h:
 * ac_pg_tend): an idle connection whose server went (a restart: its socket read without
 * waiting, PQconsumeInput) is made again on the loop with PQresetStart and PQresetPoll, its
 * socket watched, then set up as on open (statement_timeout, search_path, its holder's and its
 * schema version's locks) in one statement sent and read as the socket allows. The holder's
 * lock is back within a heartbeat of the server's return, so the sessions this worker runs
 * mid-turn (a long model call, no commit) are not taken for a gone worker's. Bounded: given up
 * after CONNECT_MS (the next call connects, waiting). A commit on the loop that finds the
 * connection lost waits for it the same way (ac_pg_tend_start); a call that needs the
 * connection meanwhile, waiting, gives it up and connects itself (ac_pg_tend_stop).
 */
#include <stdio.h>
#include <string.h>

#include "store_pg.h"

#define CONNECT_MS 10000

static void tend_io(void *ud, int fd, int revents);

static void tend_end(pg_store *s, int ok)
{
    if (s->tend.watch)
        ac_loop_unwatch(s->tend.loop, s->tend.watch);
    if (s->tend.timer)
        ac_loop_cancel_timer(s->tend.loop, s->tend.timer);
    s->tend.watch = s->tend.timer = 0;
    s->tend.state = 0;
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        PQsetnonblocking(s->conn, 0);
    s->stale = !ok;
    void (*then)(pg_store *, int) = s->tend.then;
    s->tend.then = NULL;
    if (then)
        then(s, ok);
}

void ac_pg_tend_stop(pg_store *s)
{
    if (s->tend.state)
        tend_end(s, 0);
}

static void tend_watch(pg_store *s, int events)
{
    int fd = PQsocket(s->conn);
    if (s->tend.watch && fd == s->tend.fd) {
        ac_loop_watch_events(s->tend.loop, s->tend.watch, events);
        return;
    }
    if (s->tend.watch)
        ac_loop_unwatch(s->tend.loop, s->tend.watch);
    s->tend.fd = fd;
    s->tend.watch = fd >= 0 ? ac_loop_watch_fd(s->tend.loop, fd, events, tend_io, s) : 0;
    if (!s->tend.watch)
        tend_end(s, 0);
}

/* Connected: what open sets up, in one statement (its holder's name as a literal). */
static void setup_send(pg_store *s)
{
    char *h = PQescapeLiteral(s->conn, s->base.holder, strlen(s->base.holder));
    char sql[1280];
    int n = h ? snprintf(sql, sizeof sql,
                         "SET statement_timeout = %lld; "
                         "SET idle_in_transaction_session_timeout = %lld; "
                         "SET search_path TO \"%s\"; " PG_LOCKS_SQL("'%s.' || %s", "%s"),
                         s->timeout_ms, s->idle_tx_ms, s->schema, s->schema, h, h)
              : -1;
    PQfreemem(h);
    if (n < 0 || (size_t)n >= sizeof sql || PQsetnonblocking(s->conn, 1) != 0 ||
        !PQsendQuery(s->conn, sql)) {
        tend_end(s, 0);
        return;
    }
    s->tend.state = 2;
    s->tend.failed = 0;
    int f = PQflush(s->conn);
    tend_watch(s, AC_LOOP_READ | (f == 1 ? AC_LOOP_WRITE : 0));
}

/* The setup's results, as they come: the connection is the store's again once all are in. */
static void setup_read(pg_store *s)
{
    int f = PQflush(s->conn);
    if (f < 0 || !PQconsumeInput(s->conn)) {
        tend_end(s, 0);
        return;
    }
    while (!PQisBusy(s->conn)) {
        PGresult *r = PQgetResult(s->conn);
        if (!r) {
            tend_end(s, !s->tend.failed && PQstatus(s->conn) == CONNECTION_OK);
            return;
        }
        ExecStatusType t = PQresultStatus(r);
        s->tend.failed |= t != PGRES_COMMAND_OK && t != PGRES_TUPLES_OK;
        PQclear(r);
    }
    tend_watch(s, AC_LOOP_READ | (f == 1 ? AC_LOOP_WRITE : 0));
}

static void tend_io(void *ud, int fd, int revents)
{
    pg_store *s = ud;
    (void)fd, (void)revents;
    if (s->tend.state == 2) {
        setup_read(s);
        return;
    }
    switch (PQresetPoll(s->conn)) {
    case PGRES_POLLING_READING:
        tend_watch(s, AC_LOOP_READ);
        break;
    case PGRES_POLLING_WRITING:
        tend_watch(s, AC_LOOP_WRITE);
        break;
    case PGRES_POLLING_OK:
        setup_send(s);
        break;
    default:
        tend_end(s, 0);
        break;
    }
}

static void tend_timeout(void *ud)
{
    pg_store *s = ud;
    s->tend.timer = 0;
    tend_end(s, 0);
}

int ac_pg_tend_start(pg_store *s, ac_loop *loop, void (*then)(pg_store *s, int ok))
{
    if (s->tend.state) { /* under way: told too */
        s->tend.then = then;
        return 1;
    }
    if (!s->conn || !loop || s->in_tx)
        return 0;
    memset(s->sql, 0, sizeof s->sql); /* the statements prepared went with it */
    s->stale = 1;
    if (!PQresetStart(s->conn))
        return 0; /* the next call connects, waiting */
    s->tend.loop = loop;
    s->tend.state = 1;
    s->tend.fd = -1;
    s->tend.then = then;
    s->tend.timer = ac_loop_timer(loop, CONNECT_MS, tend_timeout, s);
    tend_watch(s, AC_LOOP_WRITE); /* a watch refused: given up, then told already */
    return 1;
}

void ac_pg_tend(ac_store *st, ac_loop *loop)
{
    pg_store *s = (pg_store *)st;
    if (s->tend.state || s->job.state || s->in_tx || !s->conn || !loop)
        return; /* under way, or the connection in use: it finds out itself */
    if (!s->stale && PQstatus(s->conn) == CONNECTION_OK && PQconsumeInput(s->conn) &&
        PQstatus(s->conn) == CONNECTION_OK)
        return; /* alive (or its end not arrived yet: the next heartbeat's) */
    ac_pg_tend_start(s, loop, NULL);
}
