/*
 * store_writer.h - what the files of stored sessions share: the writer that
 * follows one session through its hooks (store_writer.c), the store's group
 * commit (store_group.c), loading (store_load.c) and recovery
 * (store_recover.c).
 */
#ifndef AGENTC_STORE_WRITER_H
#define AGENTC_STORE_WRITER_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/fsm.h"
#include "io/loop.h"
#include "store_int.h"

/* One event waiting for the next commit: its number, time, name, payload and steps (JSON). */
typedef struct store_row {
    uint64_t n;
    int64_t t_ms;
    char *ev, *data, *steps;
} store_row;

/* What one commit of a writer carries, taken out of the writer when the commit is made (the
 * writer buffers what follows meanwhile) and freed when the commit is done: the events, the
 * steps of events committed before, the tool calls finished and about to run (those run, or
 * fail, when it is done), and what the session row gets. */
typedef struct store_batch {
    int on; /* a commit of it is made and not done */
    store_row *rows;
    size_t n_rows;
    ac_store_event late[4];
    size_t n_late;
    char **fin;
    int *fin_ok;
    size_t n_fin;
    char **pend_id, **pend_name;
    void (**pend_go)(void *, int);
    void **pend_ud;
    size_t n_pend;
    char *spec_hash, *agent, *create_params, *snap;
    uint64_t snap_n;
    ac_loop_task **dur; /* deferred when it is done (ac_store_when_durable) */
    size_t n_dur;
} store_batch;

/* The writer of one stored session (its hooks_ud): what it buffered since its last commit,
 * and what it needs to commit after the session is freed (closing). */
typedef struct store_writer {
    ac_store *st;
    ac_session *s;
    store_row *rows;
    size_t n_rows, cap_rows;
    ac_store_event late[4]; /* steps of committed events (at most the open one) */
    size_t n_late;
    int queued;     /* in the store's group, for the end-of-turn commit */
    uint64_t renew; /* the lease's renewal timer */
    /* recovery from inside a loop callback: the effects restart after the posted events */
    ac_loop_task restart;
    /* a commit done on the loop failed: the session fails now (not at its next event) */
    ac_loop_task failed;
    uint16_t cfg[AC_FSM_MAX_DEPTH];
    uint8_t depth;
    /* the steps of the open event as JSON text, "[STEP,STEP" (NULL: no event open) */
    char *steps;
    size_t steps_len, steps_cap;
    char **fin;
    int *fin_ok;
    size_t n_fin, cap_fin;
    char *title; /* to commit, once */
    int have_title;
    char *spec_hash; /* a spec change to commit */
    uint64_t timer;
    int muted; /* loading: events are counted, not written */
    char *error;
    int64_t renewed_ms; /* when a commit last renewed the lease (the loop's monotonic clock) */
    int64_t attempt;    /* the lease's attempt this writer got (its fencing token, store_int.h) */
    uint64_t sent_n;    /* the last event handed to a commit (or loaded): ac_store_session_events */
    uint64_t snapshot_seq;
    int force_snapshot;
    uint64_t model_calls;
    int resumed;
    /* tool calls whose started records wait for the next commit, and what then runs them */
    char **pend_id, **pend_name;
    void (**pend_go)(void *, int);
    void **pend_ud;
    size_t n_pend, cap_pend;
    char *snap; /* a snapshot to write with the next commit, at event snap_n */
    uint64_t snap_n;
    char *agent;     /* the session's agent to commit (spawn's, an agent change's) */
    uint64_t keep_n; /* the last agent change: the snapshot taken there is kept */
    /* AC_STORE_GROUPED: the row is created by the first commit (create_params non-NULL
     * until then) and the last commit joins a pending group */
    int grouped;
    char *create_params;
    /* freed, its last commit waiting in the group, or muted with a commit in flight: what it
     * needs of the session (the commit in flight names id from then on) */
    int closing;
    char *id;
    const char *status;
    int at_rest;
    store_batch fl; /* the commit in flight */
    /* tasks deferred once what is buffered now is durable (ac_store_when_durable) */
    ac_loop_task **dur;
    size_t n_dur, cap_dur;
    ac_loop *loop;
} store_writer;

/* ---- group commit ----
 *
 * What the sessions of a store buffered in one loop turn is committed in one transaction at
 * the end of that turn (a 0 ms timer of the store's group): their events, the started records
 * of the tool calls about to run (their processes wait for that commit: h_tool_started), a
 * snapshot taken when a session settled, and with AC_STORE_GROUPED the creation of a session's
 * row, the last commit of a session freed while the group was pending and the first of one
 * loaded at rest; the last commit of any session freed while a group commit of it is in flight
 * is the next group's. A session commits alone, at once, only without a loop, when it is freed
 * with no group pending, and when loaded at rest without AC_STORE_GROUPED. */
struct ac_store_group {
    ac_loop *loop;
    uint64_t timer;
    store_writer **v;
    size_t n, cap;
    /* the group commit in flight (busy): its writers (n_fl, those with a commit first: k_fl),
     * their commits and results, kept until it is done */
    int busy;
    store_writer **fl_ws;
    ac_store_commit *fl_c;
    ac_store_event **fl_evs;
    int *fl_rcs, fl_rc;
    ac_error *fl_errs;
    size_t n_fl, k_fl, fl_cap; /* fl_cap: room in the fl_ arrays, kept from one group to the next */
    /* each transition row's STEP text, made once for all the sessions of one spec; after
     * the n_transitions rows, one per state for the steps of no row (a machine's initial
     * entry), by the state entered */
    const ac_fsm_tables *t;
    char hash[80];
    uint32_t n_text;
    struct step_text {
        char *text;
        uint16_t machine, from, to, event, line;
    } * row_text;
};

/* ---- the writer (store_writer.c) ---- */

/* The hooks a stored session is made with (its hooks_ud is its writer; session/store_hooks.h). */
extern const struct ac_session_hooks AC_SW_HOOKS;
/* A writer for a session of st, muted (loading) until ac_sw_go_live. NULL: out of memory. */
store_writer *ac_sw_new(ac_store *st);
void ac_sw_free(store_writer *w); /* NULL: nothing */
/* Writes are on: the lease's renewal timer starts. */
void ac_sw_go_live(store_writer *w);
/* The first error stays: the session fails with it (the hook `error`). */
void ac_sw_error(store_writer *w, const char *text);
/* Takes what w buffered into its batch in flight (w->fl) and fills c (and *evs, to free) with
 * it: 0, or -1 when there is nothing it may commit (failed, loading). */
int ac_sw_prepare(store_writer *w, ac_store_commit *c, ac_store_event **evs);
/* After the commit of c: the observer is told, the batch goes; or the error stays. */
void ac_sw_finish(store_writer *w, const ac_store_commit *c, int rc, const ac_error *err);
/* After a group's commit failed w: its session fails from a task of the loop (its writer
 * may be freed before: h_close takes the task back). */
void ac_sw_tell_failed(store_writer *w);
/* Commits w alone, now (release: the lease given up); a closing writer is freed. */
void ac_sw_commit_with(store_writer *w, int release);
void ac_sw_commit(store_writer *w);
/* The tool calls recorded by the commit just done run (ok), or fail without running. */
void ac_sw_pend_run(store_writer *w, int ok);
/* A snapshot of the settled session, written with the next commit. */
void ac_sw_snapshot_take(store_writer *w);

/* ---- the group commit (store_group.c) ---- */

/* w has something to commit at the end of this loop turn. */
void ac_store_group_add(store_writer *w);
/* w leaves the group (it commits alone, or goes). */
void ac_store_group_remove(store_writer *w);
/* The group commit in flight, if any, is waited for (blocking, bounded by the backend) and
 * done: what a commit made alone, now, or a read must come after. */
void ac_store_group_wait(ac_store *st);

/* ---- loading (store_load.c) ---- */

/* The session rebuilt from its latest snapshot taken at event upto or before and its journal
 * after it up to event upto (UINT64_MAX: all), on e, effects off, w muted (w->s is set;
 * freed with the session, or here on failure). The engine's output hears nothing of it (it
 * was heard when it happened); it runs on the loop thread without turning the loop. NULL
 * with err filled. */
ac_session *ac_store_rebuild(ac_store *st, ac_engine *e, const char *id, uint64_t upto,
                             store_writer *w, ac_error *err);

/* ---- recovery (store_recover.c) ---- */

/* The work a crash interrupted, restarted by the rules of store.h (s rebuilt mid-turn). */
int ac_store_recover(ac_store *st, ac_session *s, ac_error *err);

#endif
