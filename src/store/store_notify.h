/*
 * store_notify.h - wake-ups between the processes that share a PostgreSQL store, and the
 * statements of the inbox (store_inbox.c), on a connection of their own per process, driven by
 * the loop (non-blocking libpq: PQsocket watched, PQconsumeInput, PQnotifies), made again with
 * a bounded backoff when it is lost. LISTEN needs a direct connection: behind a pooler in
 * transaction mode it receives nothing (docs/postgresql.md: --db-listen).
 *
 * Notifications carry ids only: lines "KIND A [B]" on the channel agentc_SCHEMA:
 *   e SESSION N   the session's journal has its events up to N committed
 *   i HOLDER      the inbox holds a request for the worker HOLDER (the rest of the line)
 *   r ID          the inbox request ID was answered
 * Lines sent within one interval (10 ms) go in one statement, several to a payload (each under
 * 8000 bytes): at most one notifying commit per interval, never inside a transaction of the
 * store's connection (a journal's commit is told after it is durable). A reader also looks
 * every second (a lost notification only delays).
 */
#ifndef AGENTC_STORE_NOTIFY_H
#define AGENTC_STORE_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"
#include "agentc/store.h"

typedef struct ac_notify ac_notify;
struct pg_result;

/* A line another process sent (kind 'e', 'i' or 'r', a and b its fields, b "" when it has
 * none), or kind '*' (a and b "") when the connection was made again: what was sent meanwhile
 * is lost, every reader looks again; or kind '!' (a: why, without the URI's password) when the
 * connection was lost or could not be made, once an outage (it is tried again). */
typedef void (*ac_notify_fn)(void *ud, char kind, const char *a, const char *b);

#define AC_NOTIFY_INTERVAL_MS 10

/* Connects to uri (a postgresql:// URI as the store takes it, its schema= key naming the
 * channel and the tables' schema) on loop, in the background: statements wait for the
 * connection. NULL with err for a URI that is not one. */
ac_notify *ac_notify_open(ac_loop *loop, const char *uri, ac_notify_fn fn, void *ud, ac_error *err);
/* Closes; each statement still queued is told it failed. NULL: nothing. */
void ac_notify_free(ac_notify *nt);
/* Queues the line "kind a b" (b NULL: none) for the next interval's statement; a line of the
 * same kind and a already queued is not queued again (an 'e' line's N raised). */
void ac_notify_send(ac_notify *nt, char kind, const char *a, const char *b);
/* Notifying statements sent so far (each one commit); *lines (may be NULL) the lines queued
 * (what one notification per journal commit would have been), before coalescing. */
uint64_t ac_notify_batches(const ac_notify *nt, uint64_t *lines);
/* Counts in m (may be NULL: none) agentc_store_notifications_total{direction="sent"} (each
 * notifying statement: one commit), {direction="received"} (each notification from another
 * process) and agentc_store_notify_lines_total{outcome="sent|coalesced"} (lines queued that
 * went out, or that were merged into one already queued). */
void ac_notify_set_metrics(ac_notify *nt, struct ac_metrics *m);
/* The connection is up and listening: nothing sent from now on is missed. */
int ac_notify_ready(const ac_notify *nt);

/* A statement's result: r NULL when it failed (the text in error), its connection was lost or
 * the connection is freed: told exactly once. */
typedef void (*ac_notify_query_fn)(void *ud, const struct pg_result *r, const char *error);
/* Queues sql with its n text parameters (copied), run in order, one at a time, on the
 * connection; fn(ud, ...) told once. Flags: AC_NOTIFY_NEXT, it runs before what is queued
 * already (after the other "next" ones queued by the same result's callback): the statements
 * of a transaction begun, in a row; AC_NOTIFY_AGAIN, a statement that may run twice (a read):
 * its connection lost while it was under way, it is sent again, once, first on the next one
 * (a statement waiting meanwhile waits for it). 0, or -1 (out of memory). */
#define AC_NOTIFY_NEXT 1
#define AC_NOTIFY_AGAIN 2
int ac_notify_query(ac_notify *nt, const char *sql, int n, const char *const *vals, int next,
                    ac_notify_query_fn fn, void *ud);

/* ---- the loop's reads and the heartbeat (store_pg_loop.c) ----
 *
 * What the event loop asks of the store on its own (the heartbeat and the claim on its timer,
 * the journal of a session another worker runs for the streams here, a session's lease for a
 * request to forward) goes on this connection, never waiting for the server: the result is
 * told to a callback. Reads are sent again once when the connection is lost under them. */

/* rc: AC_OK, AC_STORE_ENOENT (no such session), or AC_EIO with error (the statement failed). */
typedef void (*ac_notify_done_fn)(void *ud, int rc, const char *error);
typedef void (*ac_notify_info_fn)(void *ud, int rc, const ac_store_session_info *info,
                                  const char *error);

/* Renews the worker row of holder (its heartbeat, by the database's clock). */
int ac_notify_beat(ac_notify *nt, const char *holder, ac_notify_done_fn done, void *ud);
/* ac_store_release's: the session's lease given up by holder if its attempt is still attempt
 * (0: any); done (may be NULL) told. */
int ac_notify_release(ac_notify *nt, const char *id, const char *holder, int64_t attempt,
                      ac_notify_done_fn done, void *ud);
/* ac_store_claim's claim for holder (mine: its own sessions too): each claimed session told to
 * each (its info's id, created_ms, the holder it was taken from, its attempt), then done. */
int ac_notify_claim(ac_notify *nt, const char *holder, size_t max, int mine, int64_t lease_ms,
                    ac_store_list_fn each, ac_notify_done_fn done, void *ud);
/* The session's events after n, in order, told to each (the callbacks' values live until it
 * returns), then done. */
int ac_notify_events(ac_notify *nt, const char *id, uint64_t after, ac_store_event_fn each,
                     ac_notify_done_fn done, void *ud);
/* The session's row (ac_store_info's), told to fn. */
int ac_notify_info(ac_notify *nt, const char *id, ac_notify_info_fn fn, void *ud);
/* Every session's row (ac_store_list's, in its order) told to each, then done. */
int ac_notify_list(ac_notify *nt, ac_store_list_fn each, ac_notify_done_fn done, void *ud);
/* Every worker's row (ac_store_workers' order: holder's first) told to each, then done. */
int ac_notify_workers(ac_notify *nt, const char *holder, ac_store_worker_fn each,
                      ac_notify_done_fn done, void *ud);

/* The writes a request of `serve` makes outside a session's commit (store_pg_loop.c), each
 * one statement (its own transaction) told to done (NULL: nobody waits) with rc (a lease
 * given up: ac_notify_release above): */
/* The session's row made as ac_store_create does (AC_OK; AC_EINVAL when it exists). */
int ac_notify_create(ac_notify *nt, const char *id, const char *spec_hash, const char *params,
                     const char *holder, int64_t lease_ms, ac_notify_done_fn done, void *ud);
/* The session's lease taken for holder as loading a stored session takes it, told to fn: AC_OK
 * with the attempt taken, AC_STORE_ENOENT, AC_STORE_EBUSY (another live holder's lease runs,
 * or the row is being written), AC_EIO; error says which. */
typedef void (*ac_notify_lease_fn)(void *ud, int rc, int64_t attempt, const char *error);
int ac_notify_acquire(ac_notify *nt, const char *id, const char *holder, int64_t lease_ms,
                      ac_notify_lease_fn fn, void *ud);
/* The session removed as ac_store_rm_fenced does (the holder's and the attempt's fence, 0:
 * any attempt): AC_OK, AC_STORE_ENOENT, AC_STORE_EBUSY (another holder's lease, being written
 * now, or taken over since that attempt), AC_EIO; error says which. */
int ac_notify_rm(ac_notify *nt, const char *id, const char *holder, int64_t attempt,
                 ac_notify_done_fn done, void *ud);
/* What loading the session reads (store_ahead.h: its row and agent, its latest snapshot, its
 * journal from the snapshot's event on, its tool calls) into a (filled: ac_store_ahead_new's), then
 * done: AC_OK, AC_STORE_ENOENT (no such session) or AC_EIO. Four statements, queued at once. */
struct ac_store_ahead;
int ac_notify_ahead(ac_notify *nt, struct ac_store_ahead *a, ac_notify_done_fn done, void *ud);
/* The same for a session read whole, not loaded (a fork's reads): its row and agent and its
 * whole journal; no snapshot (the rebuild starts from its first event), no tool calls. Two
 * statements, queued at once. */
int ac_notify_ahead_journal(ac_notify *nt, struct ac_store_ahead *a, ac_notify_done_fn done,
                            void *ud);
/* ac_store_fork's rows written as the store writes them (one statement): AC_OK, AC_EINVAL (the
 * new id exists), AC_STORE_ENOENT (no such original), AC_EIO; error says which. */
struct ac_store_fork_row;
int ac_notify_fork(ac_notify *nt, const struct ac_store_fork_row *f, ac_notify_done_fn done,
                   void *ud);

/* ---- the inbox (store_inbox.c): requests for a session another worker runs ----
 *
 * A worker that gets a request for a session whose lease another live worker holds puts it
 * in the inbox (table inbox of the store's schema), addressed to that holder, and notifies
 * it ("i HOLDER"); the holder takes what is addressed to it (pending -> taken, rows another
 * transaction holds skipped), answers each as a local request (taken -> done, with the HTTP
 * status and body) and notifies "r ID"; the sender reads the answer and deletes the row. A
 * sender that waited long enough withdraws it: deleted while still pending, in one statement,
 * so either the holder took it or it is withdrawn, never both. */

typedef struct ac_inbox_msg {
    int64_t id;
    const char *session; /* the store's id of the session */
    const char *owner;   /* the token's owner that sent it */
    const char *method;  /* "POST" or "DELETE" */
    const char *route;   /* what follows the session's id: "/messages", "" ... */
    const char *body;    /* the request's body ("" none) */
} ac_inbox_msg;

enum {
    AC_INBOX_FAILED = -1,
    AC_INBOX_PENDING = 0,
    AC_INBOX_DONE = 1,
    AC_INBOX_WITHDRAWN = 2,
    AC_INBOX_TAKEN = 3
};

/* The request's id once stored (0 and error: it was not). */
typedef void (*ac_inbox_id_fn)(void *ud, int64_t id, const char *error);
/* Where a request stands: AC_INBOX_DONE with the holder's status and reply (the row deleted),
 * AC_INBOX_PENDING, AC_INBOX_TAKEN (withdraw: too late, the holder has it), AC_INBOX_WITHDRAWN,
 * AC_INBOX_FAILED (the statement failed). */
typedef void (*ac_inbox_answer_fn)(void *ud, int state, int status, const char *reply);
/* Each request taken for the holder, then m NULL once all are told. */
typedef void (*ac_inbox_take_fn)(void *ud, const ac_inbox_msg *m);

/* Each 0, or -1 (out of memory: fn is not called). */
int ac_inbox_put(ac_notify *nt, const ac_inbox_msg *m, const char *holder, ac_inbox_id_fn fn,
                 void *ud);
int ac_inbox_poll(ac_notify *nt, int64_t id, ac_inbox_answer_fn fn, void *ud);
int ac_inbox_withdraw(ac_notify *nt, int64_t id, ac_inbox_answer_fn fn, void *ud);
int ac_inbox_take(ac_notify *nt, const char *holder, ac_inbox_take_fn fn, void *ud);
/* Deletes the requests older than a minute (their senders gave up or went). */
int ac_inbox_sweep(ac_notify *nt);
/* The holder's answer to a request it took (the sender notified). */
int ac_inbox_answer(ac_notify *nt, int64_t id, int status, const char *reply);

#endif
