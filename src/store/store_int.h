/*
 * store_int.h - the store's backend interface (a table of functions) and the
 * pieces shared by the store's files. SQLite implements it today
 * (store_sqlite.c); a PostgreSQL backend shared by several processes
 * implements the same table: every operation is one transaction, and who runs
 * a session is a lease row (holder, expiry) checked inside the transactions
 * that write, never an in-process lock.
 */
#ifndef AGENTC_STORE_INT_H
#define AGENTC_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/store.h"

/* ac_store_event (one journal record) is in store.h. */

/* What one session's commit writes, in one transaction (alone, or with the other sessions
 * of a group commit): the events buffered since its last commit, the tool calls recorded
 * as started or whose results were recorded, a snapshot, the session row (created, or its
 * status, at rest, title) and the lease, renewed to lease_until. The session row is written
 * first, where the lease is checked: AC_STORE_EBUSY when another holder took the lease (ours
 * expired), AC_EINVAL when a row to create exists, and then nothing of it is written. */
typedef struct ac_store_commit {
    const char *id;
    const char *holder;
    int64_t now_ms, lease_until;
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
    /* a snapshot at event snapshot_n, written with the events up to it (NULL: none) */
    const char *snapshot;
    uint64_t snapshot_n;
} ac_store_commit;

typedef int (*ac_store_call_fn)(void *ud, const char *call_id, const char *name, int64_t started_ms,
                                int64_t finished_ms, int ok);

/* Every function returns AC_OK or an error code with err filled. */
typedef struct ac_store_ops {
    const char *name;
    void (*close)(ac_store *st);
    /* A new session row holding the lease; AC_STORE_EBUSY... never: an existing id is
     * AC_EINVAL ("exists"). */
    int (*create)(ac_store *st, const char *id, const char *spec_hash, const char *params,
                  const char *holder, int64_t now_ms, int64_t lease_until, ac_error *err);
    int (*info)(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err);
    int (*list)(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err);
    int (*rm)(ac_store *st, const char *id, const char *holder, int64_t now_ms, ac_error *err);
    int (*commit)(ac_store *st, const ac_store_commit *c, ac_error *err);
    /* Events with n > after, in order. */
    int (*events)(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                  ac_error *err);
    /* The session's params as given at creation ({} when none); malloc'd. */
    int (*params)(ac_store *st, const char *id, char **out, ac_error *err);
    /* *body NULL and *n 0 when there is none; *body malloc'd. */
    int (*snapshot_get)(ac_store *st, const char *id, uint64_t *n, char **body, ac_error *err);
    int (*tool_calls)(ac_store *st, const char *id, ac_store_call_fn fn, void *ud, ac_error *err);
    /* Takes the lease when it is free, expired, ours or held by `dead` (a holder known to
     * be gone, may be NULL); else AC_STORE_EBUSY naming the holder and when it ends. */
    int (*lease_acquire)(ac_store *st, const char *id, const char *holder, int64_t now_ms,
                         int64_t until, const char *dead, ac_error *err);
    int (*lease_release)(ac_store *st, const char *id, const char *holder, ac_error *err);
    /* A note in the session's journal after event n (kind "spec_changed", body JSON): not an
     * event, so replay skips it; export writes it as {"note": KIND, "after": N, ...}. */
    int (*note)(ac_store *st, const char *id, uint64_t n, int64_t t_ms, const char *kind,
                const char *body, ac_error *err);
    /* Notes in order: ev->n the event they follow, ev->ev the kind, ev->data the body. */
    int (*notes)(ac_store *st, const char *id, ac_store_event_fn fn, void *ud, ac_error *err);
    /* n commits in one transaction: rcs[i] and errs[i] for each (a lost lease fails that
     * one only; any other failure fails them all, nothing written). */
    int (*commit_many)(ac_store *st, const ac_store_commit *c, size_t n, int *rcs, ac_error *errs);
    /* Deletes the session's events with n <= upto (its row's event count unchanged). */
    int (*forget)(ac_store *st, const char *id, uint64_t upto, ac_error *err);
} ac_store_ops;

struct ac_store_group; /* the sessions waiting for the end-of-turn commit (store_session.c) */

struct ac_store {
    const ac_store_ops *ops;
    char *path;
    char holder[128];
    int64_t lease_ms;
    uint64_t snapshot_every;
    struct ac_store_group *group;
    ac_store_observer_fn observer; /* ac_store_set_observer */
    void *observer_ud;
};

/* Commits the group now when it holds the last commit of a freed session with that id (id
 * NULL: of any freed session), so what is read next sees it. */
void ac_store_group_sync(ac_store *st, const char *id);
/* Commits what the group holds (the last commits of freed sessions), then frees it;
 * ac_store_close calls it. */
void ac_store_group_free(ac_store *st);

/* The SQLite backend: fills *out (its own struct starting with struct ac_store). */
int ac_store_sqlite_open(const char *path, const ac_store_options *opt, ac_store **out,
                         ac_error *err);
/* ac_error_set without the location parsing, for the store's messages. */
void ac_store_err(ac_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
