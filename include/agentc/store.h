/*
 * store.h - durable sessions: a store of sessions, their journals of events,
 * snapshots and tool-call records.
 *
 * A store is opened from a path (today an SQLite file; the interface is made
 * for a database shared by several processes: who runs a session is a lease
 * recorded in the database, with a holder name and an expiry, never an
 * in-process lock). A stored session is an ordinary ac_session: everything the
 * rest of agentc.h says about posting, threads and output applies.
 *
 *   ac_store *st = ac_store_open("sessions.db", NULL, &err);
 *   ac_session *s = ac_store_session(st, engine, "chat-42", 0, &err);
 *   ac_session_send(s, "hello");            // run the loop until it settles
 *   ac_session_free(s);                     // commits, releases the lease
 *   ac_store_close(st);
 *
 * What is written when: every event a stored session applies is appended to
 * its journal in the store. Appends are buffered; what all the sessions of a
 * store buffered in one loop turn is committed in one transaction at the end
 * of that turn: with them, the started records of the tool calls about to run
 * (a call runs once that commit is durable) and the snapshots of sessions that
 * settled. A session freed commits alone, at once (unless AC_STORE_GROUPED).
 * Streamed deltas never wait for a commit one by one. See
 * docs/design.md ("Durable sessions") for what survives kill -9 and power
 * loss.
 *
 * Threads: a store and its sessions belong to the thread of the engine's loop,
 * except ac_session_post_threadsafe (agentc.h), which works on stored sessions.
 * Functions that take an ac_error * accept NULL.
 */
#ifndef AGENTC_STORE_H
#define AGENTC_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The store's error codes, by their store names (enum ac_status in agentc.h). */
#define AC_STORE_ENOENT AC_ENOENT       /* no session with that id */
#define AC_STORE_EBUSY AC_EBUSY         /* another holder's lease runs (the text names it) */
#define AC_STORE_ESPEC AC_ESPEC_CHANGED /* continuing mid-turn under another spec */

typedef struct ac_store ac_store;

typedef struct ac_store_options {
    int64_t busy_timeout_ms; /* wait for a writer's lock this long (0: 5000) */
    int64_t lease_ms;        /* a session's lease lasts this long by the database's clock,
                                renewed while it runs (0: 30000); a holder that stops
                                renewing loses it when it ends, one whose process ended
                                at once (SQLite: the kernel drops its lock) */
    const char *holder;      /* who holds the leases, unique to this store (NULL:
                                "agentc RANDOM:PID@HOST", a fresh random id each open) */
    int64_t max_bytes;       /* cap the database file (0: none): a full store fails the
                                session's next commit with a clear error */
    uint64_t snapshot_every; /* snapshot a session at rest after this many events since
                                its last one (0: 1000) */
    int read_only;           /* SQLite: open an existing store to read it only (listing,
                                showing, exporting sessions): nothing is created or written,
                                no lock is taken, so a file others own or a read-only
                                directory can be read; what would write fails */
} ac_store_options;

/* Opens (or creates, mode 0600) the store at path; an SQLite database with WAL, and
 * beside it the file PATH-holders, where each open store holds a lock that tells the
 * others it is alive.
 * NULL with err filled when the file is not a store of agentc (foreign or
 * corrupt), is of a newer schema, or cannot be opened or created (a read-only
 * directory): the file is left as it was. opt may be NULL. */
ac_store *ac_store_open(const char *path, const ac_store_options *opt, ac_error *err);
/* path ":memory:" opens a store that lives in this process's memory only (no file, gone
 * when closed): the same operations, for a program that wants no durability.
 * path "postgresql://..." or "postgres://..." opens a PostgreSQL database (libpq's URI; the
 * key schema=NAME, default agentc, names the schema of agentc's tables and is taken out
 * before libpq sees the URI): the same operations, shared by any number of processes
 * (docs/postgresql.md). */
/* The store as messages name it: its path, or its URI without the password. */
const char *ac_store_name(const ac_store *st);
/* The name this open store holds leases by (ac_store_options.holder, or the one made). */
const char *ac_store_holder(const ac_store *st);
/* Closes; the sessions of this store must be freed first. NULL is a no-op. */
void ac_store_close(ac_store *st);
/* The path ac_store_open gets when nothing is given: $AGENTC_DB, else
 * $XDG_STATE_HOME/agentc/sessions.db, else ~/.local/state/agentc/sessions.db
 * (the directory is created 0700 by ac_store_open). 0, or -1 when cap is too
 * small or HOME is unset. */
int ac_store_default_path(char *buf, size_t cap);

/* Where a stored session stands. */
typedef struct ac_store_session_info {
    char id[256];
    char spec_hash[80];
    char status[16]; /* ac_session_status_name() of its last commit */
    int at_rest;     /* settled when last committed: nothing to resume */
    int64_t created_ms, updated_ms;
    uint64_t events;       /* events in its journal */
    uint64_t snapshot_seq; /* event number of its latest snapshot, 0: none */
    char holder[128];      /* lease holder, "" when none, expired or its process ended */
    int64_t lease_expires_ms;
    char title[128]; /* the start of its first user message */
    int64_t attempt; /* the takings of its lease so far (fencing); ac_store_claim's: its own */
} ac_store_session_info;

/* Flags of ac_store_session. */
#define AC_STORE_MUST_EXIST 1u /* refuse an unknown id (AC_STORE_ENOENT) */
#define AC_STORE_NO_RESUME 2u  /* rebuild the session but start no effect (inspection) */
/* Created and closed with the loop turn's group commit (a batch): a new session's row is
 * written by the commit at the end of the loop turn that created it, not before
 * ac_store_session returns, and a session freed while its store has a group commit pending
 * on its loop gives its last commit (and its lease) to that commit, or to ac_store_close:
 * close the store before freeing the loop. Without it both commit at once. */
#define AC_STORE_GROUPED 4u
/* The session's row was made already by its creator (this store's holder, the engine's spec
 * hash and ac_store_create_params; `serve` on PostgreSQL makes it on a connection its loop
 * watches): it is neither read nor made again, and the lease is the creator's; a session
 * that cannot be made leaves that row to its caller to remove. */
#define AC_STORE_CREATED 8u
/* The caller knows the session is not stored (its id was never used: a sub-agent's, named by
 * its call): no row read first; its row is made as a new session's, with AC_STORE_GROUPED by
 * the loop turn's group commit with its first events (nothing waited for). A row stored under
 * that id meanwhile fails that commit (AC_EINVAL), as a lazy create's does. */
#define AC_STORE_NEW 16u
/* The params a new session's row stores for e (its spec's path and param overrides), as JSON
 * text (malloc'd; NULL: out of memory). */
char *ac_store_create_params(ac_engine *e);
/* Before freeing s, whose session the caller removes from the store itself: what s buffered
 * is dropped and freeing it commits nothing, its lease included (a commit of it in flight is
 * waited for first). No effect on a session that is not stored. */
void ac_store_session_discard(ac_session *s);
/* The same without waiting: what s buffered is dropped and its writer muted at once (nothing
 * more is committed); while a commit of s is in flight (it names the session) s must not be
 * freed: 1 then, task (may be NULL: none) deferred once that commit is over; 0 when none is (s
 * may be freed now, committing nothing). */
struct ac_loop_task;
int ac_store_session_discard_when(ac_session *s, struct ac_loop_task *task);

/* Creates the session `id` (posting spawn, as ac_session_new does) or, when the
 * store has it, rebuilds it from its latest snapshot and the journal after it,
 * takes its lease and restarts what the states it is in do: a model call in
 * flight is issued again (its partial text discarded: the output's discarded
 * callback says so), a tool call with a recorded result is never run again, one
 * started without a result runs again only when its tool is declared
 * "idempotent", else it gets the result "interrupted: the tool may or may not
 * have completed". id NULL makes a fresh id. Errors: AC_STORE_EBUSY naming the
 * holder, AC_STORE_ESPEC for a session stopped mid-turn under another spec
 * (at rest, a spec change is allowed and recorded in the journal as one agent change
 * naming the spec, AC_AGENT_CHANGED {"reason": "option", "what": ["spec"], "spec": {"from",
 * "to"}}, unless the session's last record is already one naming "spec": the caller's own),
 * AC_EIO, AC_STORE_ENOENT with AC_STORE_MUST_EXIST. */
ac_session *ac_store_session(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                             ac_error *err);
/* ac_store_session with the options a new session is created with (opts may be NULL). A
 * session the store has already keeps its own: they came back with its spawn event. */
ac_session *ac_store_session_opts(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                                  const ac_session_options *opts, ac_error *err);
/* The session's agent (ac_session_options.agent, changed by ac_session_change_agent) as JSON
 * text, malloc'd: at 0, the one it runs with now; else the one in effect after its event
 * `at`. NULL with err->code AC_OK when it recorded none (a session stored before agents were
 * recorded, or made without one); NULL with err filled on error (AC_STORE_ENOENT...).
 *
 * The past is never re-judged: every agent change is made at rest and takes a snapshot that
 * is kept, so the events after the latest snapshot were all recorded under one agent, the
 * one ac_store_agent(st, id, 0) gives. A caller that builds its engine from that record
 * before ac_store_session rebuilds the session under what recorded it; to run the next turn
 * under another agent, it records the change (ac_session_change_agent), frees the session
 * and opens it again on an engine of the new agent (nothing is applied again: the rebuild
 * starts from the change's snapshot). */
char *ac_store_agent(ac_store *st, const char *id, uint64_t at, ac_error *err);

/* The number of the event that ended the session's turn `turn` (1: its first), counted as
 * the live session counts turns (ac_session_status): a turn runs while the root machine of
 * e's spec is in a state that invokes another machine and ends when the machine leaves that
 * state or enters it again (a message queued mid-turn starts the next). Read from the
 * journal's recorded steps, nothing applied. AC_OK with *at; AC_EINVAL when fewer turns ended (err
 * says how many); AC_STORE_ENOENT; AC_EIO. */
int ac_store_turn_end(ac_store *st, const ac_engine *e, const char *id, uint64_t turn, uint64_t *at,
                      ac_error *err);

/* Makes the session new_id of the session id's journal up to its event `at`, which must
 * leave it at rest (a fork starts between turns): its events, notes and kept snapshots up
 * there, its agent as it was then, and a snapshot at `at` made by rebuilding it there on e
 * (an engine of the agent ac_store_agent(st, id, at, ...) gives), nothing executed again. The
 * new session records its origin, the note "forked_from" {"id", "at_event", "at_turn"} after
 * event `at` (at_turn as the caller counts turns, 0: not given); the two go on
 * independently. AC_OK; AC_EINVAL for an event out of range, one mid-turn or a new id the
 * store has; AC_STORE_ENOENT; AC_EIO. */
int ac_store_fork(ac_store *st, ac_engine *e, const char *id, uint64_t at, uint64_t at_turn,
                  const char *new_id, ac_error *err);

/* True when the stored session was rebuilt mid-turn and its effects restarted
 * (ac_store_session found work to finish). */
bool ac_store_session_resumed(const ac_session *s);
/* The attempt of the lease its writer holds (see ac_store_rm_fenced), 0 for a session that
 * is not stored. */
int64_t ac_store_session_attempt(const ac_session *s);
/* The number of the session's last event its row says (`events`) once the commits made of it
 * are done, the one in flight included (what ac_store_info read after that commit would
 * say): the events it was loaded with, those of its first commit after loading, and those
 * handed to a commit since. 0 for a session that is not stored. */
uint64_t ac_store_session_events(const ac_session *s);
/* The store a session was opened from, NULL for a session that is not stored. */
ac_store *ac_session_store(const ac_session *s);

/* One journal record: event n (numbered from 1 in its session), its time (the wall clock,
 * ms since the epoch, of the process that applied it), name, payload and the steps it made
 * (JSON texts; data and steps may be NULL: steps are NULL in an observer's records of an
 * event committed before its dispatch ended). */
typedef struct ac_store_event {
    uint64_t n;
    int64_t t_ms;
    const char *ev;
    const char *data;
    const char *steps;
} ac_store_event;
typedef int (*ac_store_event_fn)(void *ud, const ac_store_event *ev);
/* Calls fn for each event of the session's journal with n > after, in order, as committed
 * (what this process has not committed yet is not there); a non-zero return from fn stops
 * the walk. AC_OK, AC_STORE_ENOENT, AC_EIO. */
int ac_store_events(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                    ac_error *err);

/* Drops the session's journal events numbered up to `upto`, which must not pass its latest
 * snapshot (AC_EINVAL otherwise): the session is restored from that snapshot as before, and
 * ac_store_events gives the events after `upto` only (its event count is unchanged). For a
 * store that keeps a bounded journal (one in memory). AC_OK, AC_STORE_ENOENT, AC_EIO. */
int ac_store_forget(ac_store *st, const char *id, uint64_t upto, ac_error *err);
/* The session's latest snapshot (malloc'd; NULL and *n 0 when it has none) and in *n the
 * number of the event it was taken at. NULL with err filled on error. A new snapshot replaces
 * the latest, except one taken at an agent change: those are kept. */
char *ac_store_snapshot(ac_store *st, const char *id, uint64_t *n, ac_error *err);
/* A replayer (ac_session_new_replayer) restored from a snapshot of ac_store_snapshot (NULL:
 * at the start): give it the journal's events after the snapshot's. NULL with err filled. */
ac_session *ac_store_replayer(ac_engine *e, const char *id, const char *snapshot, ac_error *err);

/* Told after each commit of a session's journal, on the loop's thread, once the transaction
 * is durable: s is the session (NULL when it was freed with this, its last commit), id its
 * id, evs[0..n) the events that commit wrote (n may be 0), err NULL. When a commit fails
 * (err set: a full disk, a lost lease), its events were not written and are not given: the
 * session fails (ac_session_error says why). The observer reads; it must not free
 * sessions, post to them or close the store. One observer per store; fn NULL removes it. */
typedef void (*ac_store_observer_fn)(void *ud, ac_session *s, const char *id,
                                     const ac_store_event *evs, size_t n, const ac_error *err);
void ac_store_set_observer(ac_store *st, ac_store_observer_fn fn, void *ud);

/* What ac_store_copy copied. */
typedef struct ac_store_copy_stats {
    uint64_t sessions, events, notes, snapshots, tool_calls;
} ac_store_copy_stats;
/* Told after each session copied: its id and the events it has. */
typedef void (*ac_store_copy_progress_fn)(void *ud, const char *id, uint64_t events);
/* Copies the session `id` of `from` (NULL: every session) into `to`, of either backend: its
 * row, events with their steps, notes, snapshots (kept and latest), tool calls, params and
 * agent; its journal exports (ac_store_export) byte for byte as the original's. The times
 * `to` records itself (the row's creation and update, a tool call's start and end) are its
 * clock's at the copy. An id `to` has is refused before anything is written (AC_EINVAL)
 * unless force, which removes it first (refused, AC_STORE_EBUSY, while another holder's
 * lease runs). A session whose copy fails is removed from `to` again. fn (may be NULL) is
 * told after each session; stats (may be NULL) counts what was copied. Copy a session
 * nobody runs: one being written meanwhile is copied as committed when each part is read. */
int ac_store_copy(ac_store *from, ac_store *to, const char *id, int force,
                  ac_store_copy_progress_fn fn, void *ud, ac_store_copy_stats *stats,
                  ac_error *err);

/* What a stored session buffered until now (the events of a turn that just ended) is
 * committed on its loop later, at the end of the loop turn, and on PostgreSQL without
 * waiting: a reply that must not be sent before that (an end-of-turn answer) hands task
 * (struct ac_loop_task of io/loop.h, owned by the caller) to the store, which defers it on
 * the session's loop once that commit is done, durable or failed (ac_session_error says
 * so). 1 when the task was taken; 0 when nothing waits to be committed (the caller goes on
 * at once): a session that is not stored, without a loop or with nothing buffered; -1 when its
 * store failed it (what it buffered will not be committed).
 * Cancel takes the task back (queued or not) before the caller frees it or the session. */
struct ac_loop_task;
int ac_store_when_durable(ac_session *s, struct ac_loop_task *task);
void ac_store_when_durable_cancel(ac_session *s, struct ac_loop_task *task);

/* Calls fn for each stored session, most recently updated first; a non-zero
 * return from fn stops the walk. */
typedef int (*ac_store_list_fn)(void *ud, const ac_store_session_info *info);
int ac_store_list(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err);
/* AC_OK with *out filled, AC_STORE_ENOENT, AC_EIO. */
int ac_store_info(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err);
/* Removes a session and everything stored for it; refused (AC_STORE_EBUSY) while
 * another holder's lease runs. */
int ac_store_rm(ac_store *st, const char *id, ac_error *err);
/* ac_store_rm by the writer of the lease's attempt (ac_store_session_attempt): refused
 * (AC_STORE_EBUSY) when the lease was taken since, under any holder name, so a writer
 * stopped past its lease removes nothing; attempt 0 is ac_store_rm. */
int ac_store_rm_fenced(ac_store *st, const char *id, int64_t attempt, ac_error *err);
/* Writes the session's journal to path (created 0600, an existing file is
 * refused) in the format `agentc replay` reads. */
int ac_store_export(ac_store *st, const char *id, const char *path, ac_error *err);
/* The session's JSON form (ac_session_to_json) rebuilt from the store without
 * running anything; free() it. NULL with err filled. */
char *ac_store_session_json(ac_store *st, ac_engine *e, const char *id, ac_error *err);

/* ---- workers: the processes that run a store's sessions (agentc serve) ----
 *
 * A worker is an open store joined under its holder name (ac_store_options.holder, the
 * worker's id) with the address it serves. Several workers share a PostgreSQL store; an
 * SQLite file takes one (a second is refused). A worker renews its row every third of
 * its lease (ac_store_worker_beat) from its loop's timer; the leases of the sessions it runs
 * are renewed by their own commits (a session quiet for a third of its lease commits to
 * renew it). A worker whose process ended (its connection or its lock gone) or whose
 * row was not renewed within its lease is no longer alive; the sessions it ran mid-turn
 * are claimed by another (ac_store_claim) and finish there. */
typedef struct ac_store_worker {
    char id[128];                     /* its holder name */
    char listen[128];                 /* the address it serves ("" when it gave none) */
    int64_t started_ms, heartbeat_ms; /* the database's clock */
    uint64_t sessions;                /* sessions whose lease it holds now */
    int alive;                        /* renewed within its lease, its process there */
} ac_store_worker;
typedef int (*ac_store_worker_fn)(void *ud, const ac_store_worker *w);

/* The lease of the store's sessions, in ms (ac_store_options.lease_ms, or its default). */
int64_t ac_store_lease_ms(const ac_store *st);
/* Joins the store as a worker serving listen (may be NULL): its row written. AC_STORE_EBUSY
 * when an SQLite file has a worker already (one server per file) or a live process joined
 * under the same holder name; AC_EIO. */
int ac_store_worker_join(ac_store *st, const char *listen, ac_error *err);
/* Renews the worker's row (its heartbeat, by the database's clock). AC_OK, AC_EIO. */
int ac_store_worker_beat(ac_store *st, ac_error *err);
/* Leaves: the worker's row removed (the leases are released by freeing the sessions). */
int ac_store_worker_leave(ac_store *st, ac_error *err);
/* Calls fn for each worker row, this worker's first, then by id (rows of workers gone for
 * more than an hour are dropped). */
int ac_store_workers(ac_store *st, ac_store_worker_fn fn, void *ud, ac_error *err);
/* Claims up to max sessions stopped mid-turn (not at rest) whose holder is gone: the lease
 * ended by the database's clock, or the holder's process or connection ended (mine: the
 * sessions this holder name holds too, a previous run's of the same worker id). Each is
 * leased to this store's holder in one transaction, rows locked FOR UPDATE SKIP LOCKED so
 * two workers claiming at once never take the same; fn is called with each claimed session
 * (id, created_ms, and in holder the holder it was taken from, "" for none); load it with
 * ac_store_session, which finishes its turn. AC_OK, AC_EIO. */
int ac_store_claim(ac_store *st, size_t max, int mine, ac_store_list_fn fn, void *ud,
                   ac_error *err);
/* Keeps the store's connection (PostgreSQL; nothing for SQLite), from a worker's heartbeat:
 * found lost while idle (the server restarted), it is made again in the background on loop,
 * never waited for, and its holder's lock taken again; a call that needs the connection
 * meanwhile makes it again itself. */
void ac_store_tend(ac_store *st, ac_loop *loop);
/* The store serves others from loop (`agentc serve` once it listens; NULL: no more, the CLI's
 * default). On PostgreSQL each call that then waits for the database on loop's thread (a
 * statement run synchronously, a commit in flight waited for, a connection made again) is
 * counted in m's agentc_store_blocking_statements_total (m NULL: not counted) and, with
 * AGENTC_STORE_BLOCKING_LOG=1 in the environment, noted on stderr by its SQL's first words
 * (never its parameters); and a call that finds the connection lost fails at once (AC_EIO)
 * while it is made again in the background on loop (ac_store_tend), never waited for. An
 * SQLite store (a local file): nothing. */
struct ac_metrics;
void ac_store_serve_on(ac_store *st, ac_loop *loop, struct ac_metrics *m);
/* Gives up this store's lease of the session id (one claimed and not run: another worker may
 * claim it) while the row's attempt is still attempt (the claim's info.attempt; 0: any of
 * this holder's); nothing when another holder or a later taking has it. AC_OK, AC_EIO. */
int ac_store_release(ac_store *st, const char *id, int64_t attempt, ac_error *err);

#ifdef __cplusplus
}
#endif

#endif
