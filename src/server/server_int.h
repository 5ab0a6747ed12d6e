/*
 * server_int.h - the parts of `agentc serve` shared by its files: the server,
 * its sessions with their event logs, and the streams reading them.
 */
#ifndef AGENTC_SERVER_INT_H
#define AGENTC_SERVER_INT_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/store.h"
#include "io/idmap.h"
#include "io/loop.h"
#include "server.h"
#include "session/payload.h"
#include "util/buf.h"

typedef struct srv srv;
typedef struct ac_store ac_store;
enum { SRV_LOST_LEASE = 1, SRV_LOST_WRITE = 2 };

typedef struct srv_sess srv_sess;
typedef struct srv_stream srv_stream;
typedef struct srv_engine srv_engine; /* one agent's engine (agents.c) */
typedef struct srv_conn srv_conn;     /* an open connection and its deadline (admit.c) */
typedef struct srv_fwd srv_fwd;       /* a request forwarded to another worker (remote.c) */
struct ac_notify;
struct ac_store_ahead;
struct ac_store_fork_row;
struct srv_fork;

/* A token's owner: its name, and what it used (sessions, messages this minute). */
typedef struct srv_owner {
    char *token; /* NULL for the single owner of a server without tokens */
    char *name;
    size_t sessions;
    int64_t window_start_ms;
    unsigned window_count;
    int64_t events_start_ms; /* events posted this minute */
    unsigned events_count;
    size_t streams; /* SSE streams open */
} srv_owner;

/* What a session's userdata (and a replayer's) points to starts with one of these. */
enum { SRV_TAG_SESS = 0x5e55, SRV_TAG_FRAMES = 0xf4a3 };

/* One SSE frame, as it is sent: "id: N[.k]\nevent: T\ndata: J\n\n" (no id: n == 0). Shared
 * by the streams it goes to (refs). */
typedef struct srv_frame {
    int refs;
    uint64_t n;       /* the journal event it comes from, 0: none (not replayed) */
    unsigned k;       /* its index among that event's frames */
    const char *type; /* "text", "reasoning" (what coalesces) or "other" */
    char *delta;      /* text and reasoning: the delta */
    size_t delta_len;
    size_t delta_cap; /* a joined frame's: what delta holds room for, 0: delta_len + 1 */
    int stale;        /* a joined frame's deltas were appended since bytes were made */
    int64_t t_us;
    char *bytes;
    size_t len;
} srv_frame;
typedef void (*srv_frame_fn)(void *ud, srv_frame *f); /* f's reference is the callee's */
typedef struct srv_frames srv_frames;

/* Called once when an OpenAI-compatible (ephemeral) session's turn is over. */
typedef void (*srv_done_fn)(srv_sess *ss, void *ud);

struct srv_sess {
    int tag; /* SRV_TAG_SESS */
    srv_sess *next;
    srv_sess *same_key; /* the next session whose id has the same key in srv's by_id */
    srv *sv;
    char *id;
    srv_owner *owner;
    ac_session *s;
    int64_t created_ms;
    srv_stream *streams; /* SSE readers of this session */
    srv_frames *live;    /* while it has readers: its committed journal made frames (from the
                            session itself once it is run here and all it recorded was
                            committed: srv_frames_go_live) */
    uint64_t forgotten;  /* its journal's events up to this one were dropped (memory store) */
    char *base;          /* then: its snapshot at that event, where its frames start */
    int ephemeral;       /* an OpenAI-compatible request: not listed, freed when done */
    srv_done_fn on_done; /* ephemeral sessions */
    void *done_ud;
    int freeing;
    char *stored_id; /* "OWNER/ID" in the store; NULL: not stored (ephemeral) */
    char *system;    /* its own system prompt while it is created (NULL: the server's); its
                        spawn event carries it after */
    char *owner_name;
    int64_t last_active_ms;
    srv_stream *chat;              /* an OpenAI-compatible stream of this session */
    struct MHD_Connection *waiter; /* a non-streamed OpenAI-compatible request, suspended */
    srv_engine *agent;             /* the agent it runs (a reference held) */
    int lost; /* SRV_LOST_LEASE: its lease was taken by another worker; SRV_LOST_WRITE: it could
                 not be written (workers.c) */
    int tailing, tail_again;   /* a read of its journal under way, another due (remote.c) */
    uint64_t sent_upto;        /* the frames its readers had when its frames were made again */
    uint64_t committed;        /* the last of its events committed here (srv_on_commit) */
    uint64_t appended;         /* the last of its events recorded here (srv_on_append) */
    int applying;              /* it applies the event it recorded last (srv_on_append) */
    int64_t resume_failed_ms;  /* a claim of it could not load it then (said once) */
    struct srv_client *client; /* its calls waiting for the client (compat_tools.c) */
    int in_call;               /* a sub-agent's session its parent's call runs: kept */
    int fresh;        /* made here, not loaded from the store: every child of it is known here */
    json_t *children; /* its sub-agent calls (children.c), once read */
    int calls_known;  /* loaded here with its calls read with its rows: children names each
                         child its journal has (none other stored but by a race its first
                         commit refuses) */
    uint64_t handoff_timer; /* moves it to the agent a handoff names (children.c) */
    int reopening;          /* a handoff's reopening of it under way (load.c) */
    int handoffs;           /* made since its last answered turn (children.c) */
    /* a DELETE waiting for its commit under way (server.c delete_waits), resumed after */
    ac_loop_task *delete_task;
    struct MHD_Connection *delete_conn;
    /* a DELETE forwarded here while its commit was in flight: muted (nothing more committed),
     * removed once that commit is over (its answer put off: srv_settle "deleted") */
    int discarded;
    int64_t delete_attempt; /* its lease's attempt: the removal's fence */
};

typedef struct srv_qnode {
    struct srv_qnode *next;
    srv_frame *f;
} srv_qnode;

/* A streamed response: frames (an SSE reader of a session: its catch-up, then the live
 * frames) or (log == 0) bytes pushed into buf (the OpenAI-compatible stream). */
struct srv_stream {
    srv_stream *next; /* in the session's list */
    srv *sv;
    srv_sess *ss;     /* NULL once the session is gone: the stream ends */
    srv_owner *owner; /* a session's reader: the token it counts against (streams) */
    struct MHD_Connection *conn;
    int log;
    srv_qnode *head, *tail; /* frames to send, the head's first `off` bytes sent */
    size_t off;
    size_t queued; /* bytes queued */
    char *buf;     /* buffer mode */
    size_t len, cap, rd;
    int holding; /* buffer mode: bytes from held_from on wait (srv_stream_hold) */
    size_t held_from;
    int done;
    int suspended;
    int ping;
    int in_list;
    uint64_t skip; /* a session's reader: its frames of events up to this one were sent */
};

struct srv {
    const ac_srv_config *cfg;
    ac_loop *loop;
    ac_engine *engine; /* the default agent's (agents.c); a session's own prompt is its data */
    srv_engine *engines, *default_engine; /* every agent's engine in use (agents.c) */
    ac_subagent_opener opener;            /* the sessions' sub-agents (children.c) */
    uint64_t reap_timer;                  /* frees the engines no session uses (agents.c) */
    json_t *agents;                       /* the agents as GET /v1/agents lists them */
    ac_output out;
    struct MHD_Daemon *d;
    uint64_t epoll_watch, mhd_timer, ping_timer;
    int mhd_running;
    int kick_again;
    int kick_pending; /* the MHD timer is due now */
    ac_store *store;  /* every session's journal (--db: a file, else memory) */
    uint64_t sweep_timer;
    struct srv_load *loads;             /* requests waiting for a stored session to load */
    struct srv_claim_load *claim_loads; /* claimed sessions whose rows are read (workers.c) */
    srv_sess *sessions;
    size_t n_sessions;
    /* the sessions by ac_idmap_str_key of their id (those of one key chained by same_key);
     * ids_lost: a put failed (out of memory), srv_sess_find scans the list instead */
    ac_idmap by_id;
    int ids_lost;
    srv_owner *owners;
    size_t n_owners;
    srv_owner anon; /* no --tokens */
    int stopping;
    uint64_t next_auto_id;
    /* PostgreSQL: the other workers (remote.c) */
    struct ac_notify *notify; /* wake-ups and the inbox; NULL: one worker (SQLite, memory) */
    uint64_t remote_timer;    /* the poll that makes a lost wake-up a delay */
    srv_fwd *fwds;            /* requests waiting for another worker's answer */
    /* forwarded actions' answers put off (remote.c) */
    struct settle_task *settles;
    int draining, drain_again;
    unsigned polls;
    int port;                           /* the bound port */
    char listen_host[128];              /* --listen's host, as written ("127.0.0.1", "[::1]") */
    srv_conn *conns;                    /* every open connection (admit.c) */
    size_t n_conns;                     /* how many */
    int64_t swept_ms;                   /* the last sweep of their deadlines (admit.c) */
    uint64_t beat_timer, lost_timer;    /* workers.c */
    int db_ok;                          /* the store answered the last heartbeat (/readyz) */
    int beating;                        /* a heartbeat or a claim is under way (workers.c) */
    int beat_waiting;                   /* its statement is not answered yet */
    int64_t beat_sent_ms, beat_tick_ms; /* when it was sent; the heartbeat timer's last run */
    int workers_started;
    size_t claimed;
};

/* admit.c */
/* Refuses, before any token, a request whose Host is not one of the server's names (421),
 * whose Origin is another (403), or a POST whose body is not declared JSON (415): 0, or -1
 * with the error replied in *ret. */
int srv_admit(srv *sv, struct MHD_Connection *c, const char *method, enum MHD_Result *ret);
/* MHD's connection notifications: every open connection is watched from its accept. */
void srv_admit_notify(void *cls, struct MHD_Connection *c, void **ctx,
                      enum MHD_ConnectionNotificationCode code);
/* The connection's request is read and answered (1: free of the deadline, it may stream), or
 * done (0: the next request on it has --client-timeout from now). */
void srv_admit_answered(srv *sv, struct MHD_Connection *c, int answered);
/* Drops the connections whose request was not read within --client-timeout of their accept
 * (or of their previous request's end): however slowly it trickles in, a request has that
 * long; at --max-connections, 1 s (the clients waiting to be accepted get the room). Called
 * every loop turn; walks the connections at most every SRV_SWEEP_MS (a deadline is kept to
 * that, and a busy loop with many streams does not walk them all at each event). */
#define SRV_SWEEP_MS 100
void srv_admit_sweep(srv *sv);

/* catchup.c: a new SSE reader of a session, its journal's frames after its cursor read, then
 * attached to the session's live frames (see there) */
typedef struct srv_catchup srv_catchup;
/* GET .../events of ss after (n, k) for owner: answered, or suspended with *slot (the
 * request's) set, to go on with srv_catchup_resume when the handler runs again (*fwd: the
 * request's remote read). */
enum MHD_Result srv_catchup_open(struct MHD_Connection *c, srv_catchup **slot, srv_fwd **fwd,
                                 srv_owner *owner, srv_sess *ss, uint64_t n, unsigned k);
enum MHD_Result srv_catchup_resume(srv *sv, struct MHD_Connection *c, srv_catchup **slot,
                                   srv_fwd **fwd, srv_owner *owner);
/* The request ended first (after srv_remote_abandon of its remote read). */
void srv_catchup_free(srv_catchup *cu);

/* sessions.c */
/* Loads a stored session that is not in memory (snapshot + tail, resuming an
 * interrupted turn). 0, or -1 with err filled. */
int srv_sess_load(srv_sess *ss, ac_error *err);
/* Frees a settled stored session's memory; it stays in the store. */
void srv_sess_unload(srv_sess *ss);
/* An entry for a session of the store ("OWNER/ID"), not loaded. */
srv_sess *srv_sess_known(srv *sv, srv_owner *owner, const char *sid, int64_t created_ms);
/* Removes the session from memory and, with delete, from the store. */
void srv_sess_drop(srv_sess *ss, int delete);
/* The session of that stored id ("OWNER/ID"), NULL when none is known. */
srv_sess *srv_sess_stored(srv *sv, const char *id);
/* The owner's session id (each owner has its ids: the store keeps OWNER/ID). */
srv_sess *srv_sess_find(srv *sv, const srv_owner *owner, const char *id);
/* What a session is made for: the API's (stored, "sN" ids), an OpenAI-compatible request's
 * (not stored, freed when done) or one with client tools (stored and kept: it may wait for its
 * client and be continued by a later request); the last two have "chatcmpl-N" ids. */
enum { SRV_SESS_API = 0, SRV_SESS_CHAT = 1, SRV_SESS_CHAT_KEPT = 2 };
/* A new session of that kind running agent (its reference is the session's, even on failure;
 * NULL: the default agent); history: its conversation before its first message (JSON text,
 * ac_session_options.history), NULL: none; client_tools: ac_session_options.client_tools. */
srv_sess *srv_sess_new(srv *sv, srv_owner *owner, const char *id, const char *system,
                       const char *history, const char *client_tools, int kind, srv_engine *agent,
                       ac_error *err);
/* An API session whose row in the store was made already (srv_remote_create): opened with
 * AC_STORE_CREATED, no store read or written. */
srv_sess *srv_sess_new_made(srv *sv, srv_owner *owner, const char *id, const char *system,
                            srv_engine *agent, ac_error *err);
/* A stored session of parent's owner, the child a sub-agent call runs (opts: its options,
 * opts->parent set), on agent (its reference is the session's, even on failure); is_new: none
 * is stored (PostgreSQL: not read first, its row made by the loop turn's group commit). */
srv_sess *srv_sess_child(srv *sv, srv_sess *parent, const char *id, srv_engine *agent,
                         const ac_session_options *opts, int is_new, ac_error *err);
/* ss's session on its agent's engine: created (flags 0) or continued from the store. 0, or -1
 * with err. */
int srv_sess_open(srv_sess *ss, unsigned flags, const ac_session_options *opts, ac_error *err);
/* The engine the session runs on: its agent's. */
ac_engine *srv_sess_engine(const srv_sess *ss);
void srv_sess_free(srv_sess *ss); /* srv_sess_drop(ss, 0) */
/* A DELETE waiting for the session's commit under way is resumed now (its ac_session goes). */
void srv_sess_delete_wake(srv_sess *ss);
/* A frame that is no journal event's (n 0: not replayed) to the session's readers. */
void srv_sess_say(srv_sess *ss, const char *type, json_t *data);
/* The store's observer: committed events become frames for the session's readers. */
void srv_on_commit(void *ud, ac_session *s, const char *id, const ac_store_event *evs, size_t n,
                   const ac_error *err);
/* The store's append hook (store/store_append.h): a session's live frames made as it records
 * each event. */
void srv_on_append(void *ud, ac_session *s, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                   const ac_payload *p, int done);
/* Its ac_session is about to go (a handoff) while its live frames are made from it: they are
 * made from the journal again (read up to what is committed), or its readers end. */
void srv_sess_live_end(srv_sess *ss);
/* st one of the session's live readers, its frames made up to event at (fm: them, the
 * session's live frames if it has none, else freed; st skips the live ones up to at). */
void srv_sess_attach(srv_sess *ss, srv_stream *st, srv_frames *fm, uint64_t at);
/* A session's summary (full 0), or with full its first page of messages (srv_sess_view). */
json_t *srv_sess_json(srv_sess *ss, int full);
/* The same with its store row given (row: read already, NULL: read now, waiting). */
json_t *srv_sess_json_as(srv_sess *ss, int full, const ac_store_session_info *row);
/* Its live frames made of the journal's events committed after the last they were made of
 * (another worker's commits, read from the store). 0, or -1. */
int srv_sess_tail(srv_sess *ss);
/* What GET /v1/sessions/{id} asks for: a page of the conversation, from message `from`
 * (from_call > 0: that message's calls from that one on), at most `limit` messages and about
 * SRV_PAGE_BYTES of messages and call records (one at least: a page costs the loop a bounded
 * time however long the session); messages 0: the summary, the answer and what it waits for
 * only. */
typedef struct srv_view {
    int messages;
    size_t from, from_call, limit;
} srv_view;
#define SRV_PAGE_MESSAGES 1000
#define SRV_PAGE_BYTES ((size_t)1 << 20)
json_t *srv_sess_view(srv_sess *ss, const srv_view *v);
/* Without --db: drops what sessions' journals keep beyond max_events (at their snapshots). */
void srv_sess_trim(srv *sv);
void srv_output_init(srv *sv);

/* frames.c: a session's journal events made frames (see there) */
srv_frame *srv_frame_new(uint64_t n, unsigned k, const char *type, json_t *data, int64_t t_us);
/* The frame srv_frame_new makes of {"delta": d} (d: len bytes), made faster; NULL when d is
 * not UTF-8 (*bad set, bad may be NULL) or out of memory. */
srv_frame *srv_frame_delta(uint64_t n, unsigned k, const char *type, const char *d, size_t len,
                           int64_t t_us, int *bad);
srv_frame *srv_frame_join(const srv_frame *a, const srv_frame *b);
/* b's delta appended to a's (a joined frame no one else holds): b's id and time; bytes made
 * again by srv_frame_render before they are sent. 0, or -1 (out of memory, a unchanged). */
int srv_frame_append(srv_frame *a, const srv_frame *b);
int srv_frame_render(srv_frame *f); /* 0, or -1 (out of memory) */
void srv_frame_unref(srv_frame *f);
int srv_frame_after(const srv_frame *f, uint64_t n, unsigned k);
/* A replayer at the start of the session's journal, or at a snapshot of it (base, NULL:
 * none), for the session whose agent is agent (NULL: the server's engine): each part of the
 * journal is replayed on an engine of the agent that recorded it. */
srv_frames *srv_frames_new(srv *sv, srv_engine *agent, const char *id, const char *base,
                           srv_frame_fn fn, void *ud);
void srv_frames_free(srv_frames *fm);
void srv_frames_set_sink(srv_frames *fm, srv_frame_fn fn, void *ud);
int srv_frames_apply(srv_frames *fm, const ac_store_event *ev); /* 0, -1: out of memory */
srv_frames *srv_frames_of(ac_session *s); /* NULL unless s is a replayer of frames */
void srv_frames_text(srv_frames *fm, const char *kind, const char *d, size_t n);
void srv_frames_tool_end(srv_frames *fm, const char *id, const char *name, int ok,
                         const char *content, int64_t duration_ms);
void srv_frames_compacted(srv_frames *fm, const char *strategy, size_t before, size_t after_n);
void srv_frames_discarded(srv_frames *fm);
void srv_frames_rejected(srv_frames *fm, int attempt, const char *errors);
void srv_frames_trace(srv_frames *fm, const ac_trace_rec *r);
void srv_frames_finished(srv_frames *fm);
uint64_t srv_frames_at(const srv_frames *fm); /* the last event applied (0: none) */
/* fm, made of the journal up to event N, made from s from now on: s is run here, recorded N
 * last and committed it. Its replayer goes; each frame s's output makes as it applies an event
 * (between srv_frames_begin and srv_frames_end) waits in fm until srv_frames_release says the
 * event is committed. The same frames as a replay of the journal makes: a replay reports what
 * the run reported (docs/design.md). */
void srv_frames_go_live(srv_frames *fm, ac_session *s);
ac_session *srv_frames_live_of(const srv_frames *fm); /* the session of live frames, or NULL */
void srv_frames_begin(srv_frames *fm, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                      const ac_payload *p);
void srv_frames_end(srv_frames *fm);
void srv_frames_release(srv_frames *fm, uint64_t upto); /* the frames of events up to upto */

/* streams.c */
srv_stream *srv_stream_new(srv *sv, srv_sess *ss);
/* Frame mode: f (a reference taken) queued, joined to the last queued delta of its kind
 * when that one is not being sent; a reader too far behind is ended (it reconnects). */
void srv_stream_frame(srv_stream *st, srv_frame *f);
struct MHD_Response *srv_stream_response(srv_stream *st);
void srv_stream_push(srv_stream *st, const char *data, size_t n);
void srv_stream_finish(srv_stream *st);
/* Buffer mode: what is pushed after hold waits; release sends it, drop_held forgets it. */
void srv_stream_hold(srv_stream *st);
void srv_stream_release(srv_stream *st);
void srv_stream_drop_held(srv_stream *st);
void srv_stream_wake(srv_stream *st);
void srv_stream_detach(srv_stream *st); /* its session is going away */
void srv_streams_ping(srv *sv);

/* server.c */
void srv_kick(srv *sv); /* runs MHD soon (after a resume) */
/* The reply to an accepted action, put off until what it posted is applied (the drain a post
 * from the loop defers): the session's view then, with "accepted": how. */
typedef struct srv_settle {
    char how[64]; /* the reply's "accepted" (a copy: the forwarded route is gone by then);
                     "": none put off */
    unsigned code;
    char id[160];
    srv_owner *owner;
    int stored;            /* srv_settle_stored's answer: -1 the store failed the session */
    struct srv_fork *fork; /* "forked": the fork run for it (fork.c), answered once it is made */
} srv_settle;
/* A request another worker forwarded (route: what follows the session's id) answered as if
 * it came here: *status and *body (malloc'd JSON); *status 0 when this worker does not run the
 * session (the sender goes on without it). An accepted action's reply is put off as a local
 * one's is: later->how set, *reply NULL; the caller defers srv_answer_settled. */
void srv_answer_forwarded(srv *sv, const char *stored_id, const char *owner, const char *method,
                          const char *route, const char *body, unsigned *status, char **reply,
                          srv_settle *later);
/* The reply srv_answer_forwarded put off, now that the action is applied. */
void srv_answer_settled(srv *sv, const srv_settle *later, unsigned *status, char **reply);
/* Runs step(ud) with the replies it makes without a connection captured: the first one's status
 * and body (malloc'd; NULL with a status when it could not be made) in *status and *body, which
 * are left as they are when it makes none (it is suspended). */
void srv_capture_run(void (*step)(void *), void *ud, unsigned *status, char **body);
/* A forked answer put off (srv_settle "forked", fork.c): 1 when the fork is still under way (task
 * deferred once it is over), 0 when it is over; then its reply (*status, *reply malloc'd) taken
 * and the fork freed. One taken before the fork is over answers 503 and the fork frees itself
 * when it is. */
int srv_fork_when_done(struct srv_fork *fk, struct ac_loop_task *task);
void srv_fork_answer(struct srv_fork *fk, unsigned *status, char **reply);
/* A fork freed with its request and its next step (a stop frees one not over this way). */
void srv_fork_free(struct srv_fork *fk);
/* An accepted action's reply waits until what it wrote is committed: 1 when the session's store
 * took task (deferred once the commit is done, durable or failed), 0 when nothing waits. */
int srv_settle_stored(srv *sv, srv_owner *owner, const char *id, struct ac_loop_task *task);
/* The session could not write what an accepted action wrote (its commit failed; stored: what
 * srv_settle_stored said, -1 the store failed it): the reply is 503 store_error,
 * SRV_NOT_STORED. */
int srv_settle_failed(const srv_sess *ss, int stored);
#define SRV_NOT_STORED                                                                             \
    "it was accepted but the store did not take it (the session goes on from what was "            \
    "committed): read the session, then send it again"

/* remote.c: the other workers of a PostgreSQL store (see there) */
int srv_remote_start(srv *sv); /* 0, or an exit status (said) */
void srv_remote_stop(srv *sv); /* requests waiting for another worker answered 503 */
void srv_remote_free(srv *sv); /* after every session is freed */
/* The owner's session id stored by another worker since this one listed the store (info: its
 * row, read by srv_remote_look): an entry for it (not loaded), or NULL. */
srv_sess *srv_remote_known(srv *sv, srv_owner *owner, const char *id,
                           const ac_store_session_info *info);
/* The stored id of the owner's session id. */
void srv_remote_sid(const srv_owner *owner, const char *id, char *buf, size_t cap);
/* Reads the session's row without waiting, the request suspended meanwhile (*slot: the
 * request's, read by srv_remote_looked when the handler runs again). */
enum MHD_Result srv_remote_look(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                const char *stored_id);
/* Every session's row told to each (ud) without waiting, the request suspended meanwhile
 * (srv_remote_looked says when it is over: AC_OK or AC_EIO). */
enum MHD_Result srv_remote_list(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                ac_store_list_fn each, void *ud);
/* Every worker's row told to each (ud) without waiting, the request suspended meanwhile
 * (srv_remote_looked says when it is over: AC_OK or AC_EIO). */
enum MHD_Result srv_remote_workers(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                   ac_store_worker_fn each, void *ud);
/* The session's journal events after `after` told to each (ud) without waiting, the request
 * suspended meanwhile (srv_remote_looked says when it is over: AC_OK or AC_EIO). */
enum MHD_Result srv_remote_events(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                  const char *stored_id, uint64_t after, ac_store_event_fn each,
                                  void *ud);
/* A session another worker runs, its live frames just made here, or one run here whose frames
 * are behind what was committed: the journal's events after them read (without waiting), as a
 * wake-up would (srv_sess_tailed told when it is over). */
void srv_remote_follow(srv *sv, srv_sess *ss);
/* That read is over (ok: its events applied): a session run here goes live from its frames,
 * or, its read failed, ends its readers' streams (they reconnect with Last-Event-ID). */
void srv_sess_tailed(srv_sess *ss, int ok);
/* The row read (*slot a look): AC_OK (info filled), AC_STORE_ENOENT or AC_EIO (the store did
 * not answer in time); SRV_NO_LOOK when *slot is no look (left as it is). */
#define SRV_NO_LOOK 1
int srv_remote_looked(srv_fwd **slot, ac_store_session_info *info);
/* The writes a request makes outside a session's commit, on the wake-up connection without
 * waiting, the request suspended meanwhile (*slot: the request's; srv_remote_written says how
 * it went when the handler runs again): the row of the new session stored_id made for this
 * worker (spec_hash, params: ac_store_create_params; one made after the request was answered
 * at --forward-timeout-ms is removed again), or the session removed (its lease's attempt: the
 * fence, 0 any). */
enum MHD_Result srv_remote_create(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                  const char *stored_id, const char *spec_hash, const char *params);
enum MHD_Result srv_remote_rm(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                              const char *stored_id, int64_t attempt);
/* A fork's reads and write, the same way: the rows of the session ahead_id(rows) read whole
 * (store_notify.h: ac_notify_ahead_journal; rows its own), then the fork's rows written (one
 * made after the request was answered at --forward-timeout-ms is removed again). */
/* With no connection (c NULL: a request another worker forwarded), nothing is suspended:
 * resume is deferred on the loop when it is over, and an error is replied without one. */
enum MHD_Result srv_remote_rows(srv *sv, struct MHD_Connection *c, struct ac_loop_task *resume,
                                srv_fwd **slot, struct ac_store_ahead *rows);
enum MHD_Result srv_remote_fork(srv *sv, struct MHD_Connection *c, struct ac_loop_task *resume,
                                srv_fwd **slot, const struct ac_store_fork_row *row);
/* The rows srv_remote_rows read, once read (the caller's to free; NULL: not read), taken before
 * srv_remote_written says how it went. */
struct ac_store_ahead *srv_remote_rows_taken(srv_fwd **slot);
/* The write's outcome (*slot a write): AC_OK, or its error code with why (AC_EINVAL: the row
 * exists; AC_EIO: the store failed or did not answer in time); SRV_NO_LOOK when *slot is no
 * write (left as it is). */
int srv_remote_written(srv_fwd **slot, char *why, size_t cap);
/* The session's journal has its events up to n committed here: told to the others. */
void srv_remote_committed(srv *sv, const char *stored_id, uint64_t n);
/* Of a look's answer (rc, info): 1 when another live worker holds the session's lease (and
 * this one can forward to it), -1 when the store has it no more (another worker deleted it),
 * else 0. */
int srv_remote_seen_held(srv *sv, int rc, const ac_store_session_info *info);
/* Forwards the request to the session's holder, the connection suspended until its answer
 * (*slot: the request's, answered by srv_remote_reply when the handler runs again). */
enum MHD_Result srv_remote_forward(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                   const srv_sess *ss, const char *method, const char *route,
                                   const char *body, const char *owner);
/* The forwarded request's answer replied (*slot freed): MHD's result; or *retry set: 1, no
 * other live worker runs the session (none did when its lease was read, or the worker it went
 * to went before the request's deadline): the request goes on here as if it had not been
 * sent; 2, the session is gone (another worker deleted it). */
enum MHD_Result srv_remote_reply(struct MHD_Connection *c, srv_fwd **slot, int *retry);
/* The request ended (its client went): a forward waiting is answered to no one. */
void srv_remote_abandon(srv_fwd *fwd);
/* The owner of that name (the tokens file's), NULL when no token has it. */
srv_owner *srv_owner_named(srv *sv, const char *name);

/* workers.c: this server as one worker of its store (see there) */
/* Joins the store as a worker serving listen: 0, or -1 (said on stderr: another server on
 * the SQLite file, a live worker of the same id). */
int srv_workers_join(srv *sv, const char *listen);
/* Claims and loads the sessions left mid-turn by gone workers (this worker id's included):
 * how many resumed. */
size_t srv_workers_claim(srv *sv);
/* The heartbeat: every third of the lease, the worker's row renewed, sessions claimed. */
void srv_workers_start(srv *sv);
/* The heartbeat stopped: no more claims (the sessions freed next). */
void srv_workers_stop(srv *sv);
/* Once the loop serves no more (the HTTP daemon stopped): the heartbeat stopped and the
 * worker's row removed, waiting (a statement after the group commit in flight). */
void srv_workers_leave(srv *sv);
/* A commit of ss failed: when another worker holds its lease, or the store is a shared
 * database that went (a restart, the network), ss is no longer run here (dropped from memory
 * on the loop's next turn, said on stderr); what it committed is claimed again (here or by
 * another worker) once the database answers. Other failures (a full SQLite file) leave it. */
void srv_sess_lost(srv_sess *ss, const ac_error *err);
void srv_workers_drop_lost(void *ud);
/* 1 while a claim's load of the stored session stored_id is under way (its rows read ahead):
 * a request for it then takes no lease of its own (a second taking, counting the attempt
 * again, would fence that load's writer out) and waits for it. */
int srv_workers_loading(const srv *sv, const char *stored_id);
/* The claims' loads that waited for another load of a child of their unfinished calls (a
 * request's, another claim's), that one done: loaded now. */
void srv_workers_ready(srv *sv);
/* load.c: 1 while a request's load of stored_id waits for its lease or rows, or a handoff's
 * reopening of it is under way: a claim of it then loads nothing (that load does, with its own
 * lease). */
int srv_load_pending(const srv *sv, const char *stored_id);
/* GET /healthz (no token): the loop runs. */
enum MHD_Result srv_healthz(srv *sv, struct MHD_Connection *c);
/* GET /readyz (no token): 200 while the store answers and the server is not stopping. */
enum MHD_Result srv_readyz(srv *sv, struct MHD_Connection *c);
/* GET /v1/workers: the store's workers (*slot, *rows: the request's, kept while it waits for
 * them; *rows freed with the request). */
enum MHD_Result srv_workers_list(srv *sv, struct MHD_Connection *c, srv_fwd **slot, json_t **rows);

/* children.c: sub-agents and handoffs of the server's sessions (see there) */
void srv_children_init(srv *sv); /* sv->opener, before the agents' engines are built */
/* The session that runs s (NULL: none, or a replayer). */
srv_sess *srv_sess_of(ac_session *s);
/* A turn of ss ended: a handoff it paused for is applied from a timer (the session moved to
 * the agent it names and resumed). */
void srv_children_turn_ended(srv_sess *ss);
/* The stored events of ss: its sub-agent calls' records kept for its view. */
void srv_children_commit(srv_sess *ss, const ac_store_event *evs, size_t n);
/* A stored id (sid, "OWNER/ID") as the owner of the stored session `of` names it: ID when
 * both have one owner, else sid. */
const char *srv_owner_id(const char *of, const char *sid);
/* GET /v1/sessions/{id}'s "children" and "parent" (the calls read from its journal once). */
void srv_children_view(srv_sess *ss, json_t *o);
/* Its calls read from its journal (waiting), unless known already; read again later if that
 * read failed. At the start (claims before the loop serves) and by the view. */
void srv_children_read(srv_sess *ss);
/* A record of a journal (agent.started, agent.done) of the stored session stored_id kept in
 * children, its calls' list: a load's reads (server.c) make that list ahead. */
void srv_children_keep(json_t *children, const char *stored_id, const char *ev, const char *data);
/* A handoff's reopening of ss done: opened (err NULL) and resumed, or why not said in a
 * handoff_failed event. */
void srv_children_reopened(srv_sess *ss, const ac_error *err);
/* load.c: a handoff's reopening of ss, on PostgreSQL: called before ss->s is freed, it waits
 * for its last commit (ac_store_when_durable), then its lease and rows are read ahead and it
 * is opened from them between loop iterations (srv_children_reopened). 0; -1: not on
 * PostgreSQL, nothing to wait for, or out of memory (reopened as before, from a timer). */
int srv_load_reopen(srv *sv, srv_sess *ss);
/* ss freed: its reopening, if any, opens nothing (its lease, taken, given up). */
void srv_load_forget(srv *sv, srv_sess *ss);
/* The server freed, its loop and store gone: the loads left over freed. */
void srv_free_loads(srv *sv);
/* The children of a parent's unfinished calls (agent.started without agent.done in calls, its
 * journal's, read with its rows; pid its stored id), read ahead with its load on PostgreSQL:
 * each one not in memory nor being loaded here has its lease taken and its rows read on the
 * wake-up connection, without waiting; done(ud) once all are answered. Loaded from them before
 * the parent (srv_kids_load), so that the call, run again, finds its child loaded (open_child:
 * no statement). NULL: none to read (or out of memory: loaded when its call runs, reading). */
typedef struct srv_kids srv_kids;
srv_kids *srv_kids_read(srv *sv, const char *pid, const json_t *calls, void (*done)(void *),
                        void *ud);
size_t srv_kids_pending(const srv_kids *k);           /* answers still to come (0 for NULL) */
int srv_kids_has(const srv_kids *k, const char *cid); /* cid is one of them (its lease taken) */
/* 1 while another load of one of those children (but own's) is under way here (a claim's, a
 * request's): the parent's load waits for it. */
int srv_kids_busy(srv *sv, const srv_kids *own, const char *pid, const json_t *calls);
/* Each loaded from its rows (its lease given up when it cannot be), then k freed. */
void srv_kids_load(srv *sv, srv_kids *k);
/* k freed unloaded, the leases it took given up (nothing pending, or nothing to call back). */
void srv_kids_free(srv *sv, srv_kids *k);
/* ss just loaded, *calls its journal's calls read with its rows (NULL: not read): its children
 * from them (taken), and known whole (calls_known). */
void srv_sess_calls_read(srv_sess *ss, json_t **calls);

/* compat.c: the OpenAI-compatible front */
void srv_chat_delta(srv_sess *ss, const char *d, size_t n);
/* The model call's text is final (released to the client) or void (dropped). */
void srv_chat_call_done(srv_sess *ss, int keep);

/* compat_tools.c: the front's client tools (see there) */
/* The session's client-call function (ac_session_set_client_calls; ud: the srv_sess). */
void srv_client_call(void *ud, ac_session *s, const char *call_id, const char *name,
                     const char *arguments);
/* A call of the session's turn was answered: whether only the client's calls are left is
 * looked at once the event is applied. */
void srv_client_kick(srv_sess *ss);
/* Its waiting calls forgotten (the session goes). */
void srv_client_free(srv_sess *ss);
/* "client_calls" [{"id", "call", "name"}] into a session's view while it waits for its
 * client: the ids the client was given, the session's own call ids. */
void srv_client_view(srv_sess *ss, json_t *o);
/* The reply to a request attached to the session (streamed or not): compat.c. */
int srv_chat_attach(srv *sv, struct MHD_Connection *c, srv_sess *ss, int streamed,
                    const char *ignored, enum MHD_Result *ret);
/* The request's keys the front does not use, comma-separated, into ign (settings_too: the
 * request settings too; tools_too: "tools" too). */
void srv_chat_ignored(ac_buf *ign, json_t *rq, int settings_too, int tools_too);
/* A message's content as text (a string or text parts): 0, or -1. */
int srv_chat_content(json_t *content, char **out);
/* Answers the request attached to the session with the model's calls of client tools
 * (calls: [{id, type, function: {name, arguments}}], stolen) and the text of the answer that
 * made them: finish_reason "tool_calls". The session stays, waiting. */
void srv_chat_tool_calls(srv_sess *ss, json_t *calls, const char *text);

/* agents.c: the server's agents, an engine each (see there) */
/* Builds every agent's engine; the first is the default. 0, or an exit status (said). */
int srv_agents_start(srv *sv);
void srv_agents_stop(srv *sv); /* after every session is freed */
/* The engine of the agent called name (NULL: the default) with the overrides (JSON object
 * text, NULL: none), a reference taken; NULL and err (AC_ENOENT: no such agent, AC_EINVAL:
 * a refused override, AC_EBUSY: too many distinct agents). */
srv_engine *srv_agent_engine(srv *sv, const char *name, const char *overrides, ac_error *err);
/* The agent a session of the store runs from now on (a reference taken): its stored agent
 * brought to the server's (ac_srv_agents.load). NULL and err: it cannot be loaded. */
srv_engine *srv_agent_of_stored(srv *sv, const char *stored_id, ac_error *err);
/* The agent of a tool file's agent entry (JSON text; dir: the tool file's directory) called
 * by a session running caller (a reference taken); with what non-NULL, *what: what changed
 * from caller (malloc'd JSON array text). NULL and err when it cannot be built. */
srv_engine *srv_agent_of_entry(srv *sv, const srv_engine *caller, const char *entry,
                               const char *dir, char **what, ac_error *err);
void srv_engine_hold(srv_engine *e);
void srv_engine_release(srv *sv, srv_engine *e); /* NULL: nothing */
ac_engine *srv_engine_get(const srv_engine *e);
const char *srv_engine_name(const srv_engine *e);
/* The agent's record (the format's record form: what the session stores). */
const char *srv_engine_record(const srv_engine *e);
/* The agent a model name of the OpenAI-compatible front means (NULL model: the default):
 * its name (borrowed), or NULL for none. */
const char *srv_agent_named(srv *sv, const char *model);
enum MHD_Result srv_agents_list(srv *sv, struct MHD_Connection *c);
enum MHD_Result srv_models(srv *sv, struct MHD_Connection *c);

/* reply helpers (server.c) */
enum MHD_Result srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *o);
/* The request's W3C traceparent, if any, given to s for its next turn (a bad one ignored). */
void srv_traceparent(struct MHD_Connection *c, ac_session *s);
enum MHD_Result srv_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                const char *fmt, ...);

/* page.c (generated from audit.html) */
extern const char ac_srv_page[];
extern const size_t ac_srv_page_len;

#endif
