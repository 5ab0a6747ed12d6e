/*
 * server.h - `agentc serve`: sessions over HTTP (JSON API, Server-Sent Events,
 * an OpenAI-compatible front and the live audit page) on one event loop.
 *
 * The server is a client of the public headers (agentc.h) plus the loop's
 * timers and fd watches (io/loop.h). libmicrohttpd runs in its external
 * epoll mode: the loop watches MHD's epoll descriptor, runs MHD when it is
 * ready or when MHD's timeout expires, and streams are suspended connections
 * resumed when their session appends an event.
 */
#ifndef AGENTC_SERVER_H
#define AGENTC_SERVER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"
#include "agentc/store.h"

/* Builds the server's engine, once, before it listens: the spec, provider, params and
 * tools every session shares (a session's own system prompt is session data:
 * ac_session_options). NULL and err filled on error. */
typedef ac_engine *(*ac_srv_engine_fn)(void *ud, ac_loop *loop, const ac_output *out,
                                       ac_error *err);

typedef struct ac_srv_config {
    const char *listen;      /* "ADDR:PORT" (default 127.0.0.1:8080; port 0: any) */
    const char *tokens_file; /* bearer tokens, one a line "TOKEN [NAME]"; NULL: none */
    const char *db;          /* the store's file (unused by the in-memory sessions) */
    const char *port_file;   /* written with the bound port once listening; may be NULL */
    ac_srv_engine_fn make_engine;
    void *engine_ud;
    const char *model_name;    /* the id /v1/models lists (default "agentc") */
    int64_t ping_ms;           /* ": ping" comment interval (default 15000) */
    size_t max_body;           /* request body cap in bytes (default 1 MB) */
    unsigned max_connections;  /* default 1024 */
    unsigned header_timeout_s; /* idle/slow client timeout (default 30) */
    size_t sessions_per_token; /* default 1000 */
    unsigned messages_per_min; /* user messages per minute per token (default 600) */
    int64_t grace_ms;          /* SIGTERM: time for running turns (default 10000) */
    size_t max_header_bytes;   /* request line and headers (default 16 KB) */
    int64_t unload_after_ms;   /* --db: a settled session nobody reads is unloaded after
                                  this long (default 10 min); the next request loads it */
    int64_t db_max_bytes;      /* --db: cap the store's file (0: none); a commit past it fails
                                  its session, and its readers get an error frame */
    int64_t max_events;        /* without --db: a session's journal keeps about this many
                                  events in memory, older ones go at its snapshots (default
                                  10000); a cursor before what is kept answers 410 */
    /* The agent record of the server's engine (ac_session_options.agent), kept by each
     * session it creates and recorded by a stored one that has none; NULL: none. */
    const char *agent;
    /* Before a stored session is loaded at rest: its stored agent brought to the server's,
     * the change recorded (agent.changed) on an engine of the agent that recorded its past,
     * so that past is not judged again under the server's (store.h: ac_store_agent). 0, or
     * -1 with err filled (the load fails). NULL: none. */
    int (*agent_load)(void *ud, ac_store *st, const char *id, ac_loop *loop, ac_error *err);
    void *agent_load_ud;
} ac_srv_config;

/* Runs until *stop becomes nonzero (a signal handler sets it), then stops
 * gracefully: no new connections, running turns get grace_ms to settle, then
 * are cancelled; streams end; 0. Returns 2 for bad usage (--listen), 3 for a bad
 * configuration (message on stderr), 1 when the server cannot start. */
int ac_srv_run(const ac_srv_config *cfg, volatile sig_atomic_t *stop);

#endif
