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

/* The agents a server hosts (docs/agents.md), given by its caller, which owns the agent
 * format: the server keeps one engine per distinct agent record, built on its loop by build,
 * shared by the sessions that run that agent (a session's own system prompt is session data:
 * ac_session_options). Every callback runs on the server's loop. */
typedef struct ac_srv_agents {
    void *ud;
    /* The agents as GET /v1/agents lists them, a new JSON array (text) of objects with a
     * "name", holding no secret. The first is the default agent (a session naming none). */
    char *(*list)(void *ud);
    /* The record of the agent called name (NULL: the default) with overrides laid over it
     * (a JSON object of the format's keys as text; NULL: none): a new string, or NULL and
     * err: AC_ENOENT no such agent, AC_EINVAL an override the agent does not allow or that
     * is malformed, another code when the agent's files cannot be read. */
    char *(*record)(void *ud, const char *name, const char *overrides, ac_error *err);
    /* An engine built from a record on loop, reporting to out, its sessions' sub-agents
     * opened by subagents (ac_engine_config.subagents); *hold is given back to release. NULL
     * and err on error. */
    ac_engine *(*build)(void *ud, const char *record, ac_loop *loop, const ac_output *out,
                        const ac_subagent_opener *subagents, void **hold, ac_error *err);
    /* Frees an engine build made, once no session runs on it. */
    void (*release)(void *ud, ac_engine *e, void *hold);
    /* Before a session of the store st is loaded: the record it runs from now on (a new
     * string). At rest its stored agent (store.h: ac_store_agent) is brought to the server's
     * agent of its name, the change recorded (agent.changed) on an engine of the agent that
     * recorded its past, so that past is never judged again under the server's; stopped
     * mid-turn, it keeps its stored agent to finish the turn. NULL and err: the load fails. */
    char *(*load)(void *ud, ac_store *st, const char *id, ac_loop *loop, ac_error *err);
    /* An engine with no loop of a record's spec, params, system prompt and output schema,
     * reporting to out: a session's journal recorded under an agent it had before is
     * replayed on it (its stream's frames). *hold is given back to replay_release. NULL and
     * err when the record cannot be used. */
    ac_engine *(*replay)(void *ud, const char *record, const ac_output *out, void **hold,
                         ac_error *err);
    void (*replay_release)(void *ud, ac_engine *e, void *hold);
    /* The record of a tool file's agent entry (docs/composition.md; dir: the tool file's
     * directory) called by a session whose agent's record is caller: the entry's agent keys
     * over the caller's, or the agent the entry names. With what non-NULL, *what is what
     * changed from caller (a JSON array as text, malloc'd). NULL and err when it cannot be
     * read. */
    char *(*entry)(void *ud, const char *caller, const char *entry, const char *dir, char **what,
                   ac_error *err);
} ac_srv_agents;

typedef struct ac_srv_config {
    const char *listen;          /* "ADDR:PORT" (default 127.0.0.1:8080; port 0: any) */
    const char *tokens_file;     /* bearer tokens, one a line "TOKEN [NAME]" (docs/serve.md; no
                                    NAME: "token-" + 16 hex of its SHA-256); NULL: none */
    const char *db;              /* the store's file (unused by the in-memory sessions) */
    const char *port_file;       /* written with the bound port once listening; may be NULL */
    const ac_srv_agents *agents; /* required */
    const char *model_name;      /* another name of the default agent on the OpenAI-compatible
                                    front (the --model name; may be NULL) */
    int64_t ping_ms;             /* ": ping" comment interval (default 15000) */
    size_t max_body;             /* request body cap in bytes (default 1 MB) */
    unsigned max_connections;    /* default 1024 */
    unsigned header_timeout_s;   /* seconds a request (headers, body) has to arrive (30) */
    size_t sessions_per_token;   /* default 1000 */
    unsigned messages_per_min;   /* user messages per minute per token (default 600) */
    int64_t grace_ms;            /* SIGTERM: time for running turns (default 10000) */
    size_t max_header_bytes;     /* request line and headers (default 16 KB) */
    int64_t unload_after_ms;     /* --db: a settled session nobody reads is unloaded after
                                    this long (default 10 min); the next request loads it */
    int64_t db_max_bytes;        /* --db: cap the store's file (0: none); a commit past it fails
                                    its session, and its readers get an error frame */
    int64_t max_events;          /* without --db: a session's journal keeps about this many
                                    events in memory, older ones go at its snapshots (default
                                    10000); a cursor before what is kept answers 410 */
    /* Called once every session and engine is freed, before the loop is: what the program
     * keeps on the loop finishes there (the command line's tracer). May be NULL. */
    void (*loop_done)(ac_loop *loop);
    /* GET /metrics: the Prometheus text (malloc'd; NULL: an error); NULL: no such route. It
     * takes metrics_token as its bearer token when set, else any token the server takes. */
    char *(*metrics)(void);
    const char *metrics_token;
    /* The registry GET /metrics renders (borrowed; NULL: none): the server's own counts go in
     * it (wake-ups between workers). */
    struct ac_metrics *metrics_registry;
    const char *worker_id; /* the worker's id, its sessions' lease holder (NULL: the store's
                              "agentc RANDOM:PID@HOST") */
    int64_t lease_ms;      /* a session's lease (default 10000); renewed every third */
    /* PostgreSQL --db: the connection of wake-ups (LISTEN/NOTIFY and the inbox), a direct one
       (a pooler in transaction mode drops LISTEN); NULL: db */
    const char *db_listen;
    int64_t forward_timeout_ms; /* a request for a session another worker runs waits this long
                                   for that worker's answer (default 5000), then 504 */
    const char *allowed_hosts;  /* more Host names the server answers to, comma-separated
                                   ("NAME" on any port, "NAME:PORT"); besides IP addresses,
                                   localhost and --listen's host on the bound port */
    size_t max_event_bytes;     /* an outside event's payload (default 65536: decisions with
                                   edited arguments fit; more is 413) */
    unsigned events_per_min;    /* events posted per minute per token (default 600) */
    unsigned streams_per_token; /* SSE streams open at once per token (default 64) */
    /* the OpenAI-compatible front: how long a turn waits for the client's results of its
     * client tools' calls before they are answered as failed (default 600000) */
    int64_t client_tool_timeout_ms;
} ac_srv_config;

/* Runs until *stop becomes nonzero (a signal handler sets it), then stops
 * gracefully: no new connections, running turns get grace_ms to settle, then
 * are cancelled; streams end; 0. Returns 2 for bad usage (--listen), 3 for a bad
 * configuration (message on stderr), 1 when the server cannot start. */
int ac_srv_run(const ac_srv_config *cfg, volatile sig_atomic_t *stop);

#endif
