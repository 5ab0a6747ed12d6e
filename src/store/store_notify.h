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
/* The connection is up and listening: nothing sent from now on is missed. */
int ac_notify_ready(const ac_notify *nt);

/* A statement's result: r NULL when it failed (the text in error), its connection was lost or
 * the connection is freed: told exactly once. */
typedef void (*ac_notify_query_fn)(void *ud, const struct pg_result *r, const char *error);
/* Queues sql with its n text parameters (copied), run in order, one at a time, on the
 * connection; fn(ud, ...) told once. With next, it runs before what is queued already (after
 * the other "next" ones queued by the same result's callback): the statements of a transaction
 * begun, in a row. 0, or -1 (out of memory). */
int ac_notify_query(ac_notify *nt, const char *sql, int n, const char *const *vals, int next,
                    ac_notify_query_fn fn, void *ud);

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
