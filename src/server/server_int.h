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

#include "io/loop.h"
#include "server.h"

typedef struct srv srv;
typedef struct srv_db srv_db;
typedef struct ac_store ac_store;
typedef struct srv_sess srv_sess;
typedef struct srv_stream srv_stream;

/* A token's owner: its name, and what it used (sessions, messages this minute). */
typedef struct srv_owner {
    char *token; /* NULL for the single owner of a server without tokens */
    char *name;
    size_t sessions;
    int64_t window_start_ms;
    unsigned window_count;
} srv_owner;

/* One event of a session's log, as it is sent: "id: N\nevent: T\ndata: J\n\n". */
typedef struct srv_frame {
    char *text;
    size_t len;
} srv_frame;

/* Called once when an OpenAI-compatible (ephemeral) session's turn is over. */
typedef void (*srv_done_fn)(srv_sess *ss, void *ud);

struct srv_sess {
    srv_sess *next;
    srv *sv;
    char *id;
    srv_owner *owner;
    ac_session *s;
    int64_t created_ms;
    srv_frame *log; /* event i has sequence number i + 1 */
    size_t n_log, cap_log;
    srv_stream *streams; /* SSE readers of this session */
    char *stop_partial;  /* the partial answer read before a cancel */
    const char *stop_reason;
    int ephemeral;       /* an OpenAI-compatible request: not listed, freed when done */
    srv_done_fn on_done; /* ephemeral sessions */
    void *done_ud;
    int freeing;
    char *stored_id; /* "OWNER/ID" in the store; NULL: not stored (no --db, or ephemeral) */
    char *system;    /* its own system prompt, NULL: the server's */
    char *owner_name;
    int64_t last_active_ms;
    srv_stream *chat;              /* an OpenAI-compatible stream of this session */
    struct MHD_Connection *waiter; /* a non-streamed OpenAI-compatible request, suspended */
};

/* A streamed response: a session's event log from a sequence number on, or
 * (log == 0) bytes pushed into buf. */
struct srv_stream {
    srv_stream *next; /* in the session's list, or the server's orphan list */
    srv *sv;
    srv_sess *ss; /* NULL once the session is gone: the stream ends */
    struct MHD_Connection *conn;
    int log;
    size_t next_seq; /* log mode: the next event to send */
    size_t off;      /* bytes of that event already sent */
    char *buf;       /* buffer mode */
    size_t len, cap, rd;
    int holding; /* buffer mode: bytes from held_from on wait (srv_stream_hold) */
    size_t held_from;
    int done;
    int suspended;
    int ping;
    int in_list;
};

struct srv {
    const ac_srv_config *cfg;
    ac_loop *loop;
    ac_engine *engine; /* every session's (one spec); a session's own prompt is its data */
    ac_output out;
    struct MHD_Daemon *d;
    uint64_t epoll_watch, mhd_timer, ping_timer;
    int mhd_running;
    int kick_again;
    int kick_pending; /* the MHD timer is due now */
    ac_store *store;  /* --db: sessions live in the store, unloaded when idle */
    srv_db *db;
    uint64_t sweep_timer;
    struct srv_load *loads; /* requests waiting for a stored session to load */
    srv_sess *sessions;
    size_t n_sessions;
    srv_owner *owners;
    size_t n_owners;
    srv_owner anon; /* no --tokens */
    int stopping;
    uint64_t next_auto_id;
    const char *model_name;
};

/* persist.c: owners and event logs of stored sessions, in the store's file */
srv_db *srv_db_open(const char *path, ac_loop *loop);
void srv_db_close(srv_db *d);
void srv_db_commit(srv_db *d);
int srv_db_add_event(srv_db *d, const char *sid, size_t seq, const char *frame, size_t n);
int srv_db_add_session(srv_db *d, const char *sid, const char *owner, const char *public_id,
                       const char *system, int64_t created_ms);
void srv_db_remove_session(srv_db *d, const char *sid);
int srv_db_load_events(srv_db *d, srv_sess *ss);
typedef void (*srv_db_session_fn)(void *ud, const char *sid, const char *owner,
                                  const char *public_id, const char *system, int64_t created_ms,
                                  size_t last_seq);
int srv_db_each_session(srv_db *d, srv_db_session_fn fn, void *ud);

/* sessions.c */
/* Appends a ready frame to the in-memory log (no store, no wake); 0 or -1. */
int srv_sess_log_append(srv_sess *ss, const char *frame, size_t n);
/* Loads a stored session that is not in memory (snapshot + tail, resuming an
 * interrupted turn). 0, or -1 with err filled. */
int srv_sess_load(srv_sess *ss, ac_error *err);
/* Frees a settled stored session's memory; it stays in the store. */
void srv_sess_unload(srv_sess *ss);
/* An entry for a session of the store, not loaded. */
srv_sess *srv_sess_known(srv *sv, srv_owner *owner, const char *owner_name, const char *sid,
                         const char *public_id, const char *system, int64_t created_ms,
                         size_t last_seq);
/* Removes the session from memory and, with delete, from the store. */
void srv_sess_drop(srv_sess *ss, int delete);
srv_sess *srv_sess_find(srv *sv, const char *id);
srv_sess *srv_sess_new(srv *sv, srv_owner *owner, const char *id, const char *system, int ephemeral,
                       ac_error *err);
void srv_sess_free(srv_sess *ss); /* srv_sess_drop(ss, 0) */
/* Appends an event (data stolen) to the session's log and wakes its streams. */
void srv_sess_emit(srv_sess *ss, const char *type, json_t *data);
json_t *srv_sess_json(srv_sess *ss, int full);
/* The session's streamed text (its current call's partial) is void: a `discarded` event. */
void srv_sess_discard(srv_sess *ss, const char *text, const char *reason);
void srv_output_init(srv *sv);

/* streams.c */
srv_stream *srv_stream_new(srv *sv, srv_sess *ss, size_t starting_after);
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

/* compat.c: the OpenAI-compatible front */
enum MHD_Result srv_chat_completions(srv *sv, struct MHD_Connection *c, srv_owner *o,
                                     const char *body, size_t n);
void srv_chat_delta(srv_sess *ss, const char *d, size_t n);
/* The model call's text is final (released to the client) or void (dropped). */
void srv_chat_call_done(srv_sess *ss, int keep);
enum MHD_Result srv_models(srv *sv, struct MHD_Connection *c);

/* reply helpers (server.c) */
enum MHD_Result srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *o);
enum MHD_Result srv_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                const char *fmt, ...);

/* page.c (generated from audit.html) */
extern const char ac_srv_page[];
extern const size_t ac_srv_page_len;

#endif
