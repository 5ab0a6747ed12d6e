/* MCP (Model Context Protocol) client: one ac_mcp_server per server declared
 * in a tool file, started once per engine and shared by its sessions.
 *
 * Transports: stdio (a child process speaking newline-delimited JSON-RPC on
 * its stdin/stdout; its stderr is kept for error messages) and Streamable
 * HTTP (POST through libcurl on the loop, answered with JSON or an SSE
 * stream, Mcp-Session-Id kept and renewed). Everything runs on the loop's
 * thread and nothing blocks it: a server starts in the background
 * (ac_mcp_server_start), its outcome reported by the on_tools callback; the
 * transports hand what they read to the client from deferred tasks
 * (mcp_transport.h), never from inside their I/O callbacks.
 *
 * Handshake: the 2026-07-28 revision is probed first (server/discover, with
 * the protocol version in each request's _meta); on any error or timeout the
 * client falls back to the 2025-11-25 handshake (initialize, then
 * notifications/initialized). The version negotiated is recorded.
 *
 * Concurrent calls are multiplexed by JSON-RPC id: every request gets the
 * next integer id of its server, and answers are matched to their request by
 * that id whatever order they arrive in.
 *
 * Faults (the process exits or cannot start, output that is not JSON-RPC, a
 * message over the size cap, no answer to the handshake or to a call within
 * the timeout): the pending calls fail with a message that names the server
 * and says what happened (with the tail of its stderr), and the server is
 * started again after a bounded backoff (at once after one fault, then
 * AC_MCP_BACKOFF_MIN_MS doubling up to AC_MCP_BACKOFF_MAX_MS while the faults
 * follow each other), or by the next call after it; calls during the backoff
 * fail at once with the reason. Header and environment values given in the
 * configuration never appear in messages. */
#ifndef AGENTC_MCP_MCP_H
#define AGENTC_MCP_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "io/loop.h"

#define AC_MCP_VERSION_2025 "2025-11-25"
#define AC_MCP_VERSION_2026 "2026-07-28"
#define AC_MCP_PROBE_TIMEOUT_MS 5000          /* server/discover, at most half the start timeout */
#define AC_MCP_MAX_MESSAGE ((size_t)16 << 20) /* one JSON-RPC message */
#define AC_MCP_BACKOFF_MIN_MS 250
#define AC_MCP_BACKOFF_MAX_MS 30000
#define AC_MCP_MAX_PAGES 100         /* tools/list pages followed */
#define AC_MCP_START_TIMEOUT_MS 5000 /* start_timeout when the tool file does not say */
/* "max_tools" when the tool file does not say: a server listing more is a fault (its list
 * is never registered, its pages stop being fetched past it) */
#define AC_MCP_MAX_TOOLS 1000
/* "max_output" when the tool file does not say, as a command tool's: a call's result text is
 * cut there ("[output cut at N bytes]") before the journal or the model sees it */
#define AC_MCP_MAX_OUTPUT ((size_t)8 << 20)
/* notifications/tools/list_changed start at most one tools/list per this many ms (the
 * notifications in between make one refresh at its end) */
#define AC_MCP_LIST_CHANGED_MS 1000

/* One server's configuration (tool file "mcp" entry). */
typedef struct ac_mcp_config {
    char *name;               /* the toolkit name: tools are offered as name__tool */
    char **argv;              /* stdio: the command, NULL-terminated; NULL for HTTP */
    char **env;               /* stdio: its whole environment, "NAME=value", NULL-terminated; NULL:
                                 this process's (the engine passes tool_env.c's list plus "env") */
    char **env_add;           /* stdio: "NAME=value" entries over env (or this process's
                                 environment), NULL-terminated; may be NULL */
    char *url;                /* HTTP: the endpoint; NULL for stdio */
    char **headers;           /* HTTP: "Name: value", NULL-terminated */
    int64_t timeout_ms;       /* each call */
    int64_t start_timeout_ms; /* how long a model call waits for the server to start (its
                                 tools/list); the start itself may take up to
                                 max(start_timeout_ms, timeout_ms) before it is a fault */
    char **secrets;           /* values shown as [redacted] in whatever the client reports (the
                                 "env" and "headers" values), longest first, NULL-terminated */
    int idempotent;           /* -1: not said (the server's idempotentHint decides), 0, 1 */
    size_t max_tools;         /* 0: AC_MCP_MAX_TOOLS */
    size_t max_output;        /* 0: AC_MCP_MAX_OUTPUT */
    json_t *cache_tools;      /* "cache": {"tools": {"GLOB": {cache}}}'s "tools" (each a
                                 valid ac_cache_decl), or NULL */
} ac_mcp_config;

void ac_mcp_config_clear(ac_mcp_config *c);

/* Parses the tool file's "mcp" array (borrowed) into *out (n entries, free
 * each with ac_mcp_config_clear, then the array). Relative command paths are
 * taken beside path. -1 with a message naming path and the entry. */
int ac_mcp_config_parse(const json_t *arr, const char *path, ac_mcp_config **out, size_t *n,
                        char *err, size_t errcap);

typedef struct ac_mcp_server ac_mcp_server;
typedef struct ac_mcp_call ac_mcp_call;

/* One tool the server offers (after tools/list). */
typedef struct ac_mcp_tool {
    char *name; /* the server's name for it */
    char *description;
    json_t *input_schema; /* as given (an object) */
    int idempotent_hint;  /* annotations.idempotentHint */
    int read_only_hint;   /* annotations.readOnlyHint */
} ac_mcp_tool;

/* A server (not started: the first ac_mcp_server_start or call starts it).
 * cfg is copied. */
ac_mcp_server *ac_mcp_server_new(ac_loop *loop, const ac_mcp_config *cfg);
/* Stops the server (stdin closed, then SIGTERM and SIGKILL to its process
 * group; an HTTP session is deleted) and frees it. Calls still pending are
 * dropped without their callbacks. */
void ac_mcp_server_free(ac_mcp_server *s);
const char *ac_mcp_server_name(const ac_mcp_server *s);
const ac_mcp_config *ac_mcp_server_config(const ac_mcp_server *s);

/* Starts a server that is down (never started, or in its backoff) without waiting: on_tools
 * reports the first listing or the failure. Never calls back from inside. */
void ac_mcp_server_start(ac_mcp_server *s);
/* 1 while the server starts (process or session up, handshake, first tools/list). */
int ac_mcp_server_starting(const ac_mcp_server *s);
/* 1 once its tools are listed and until a fault. */
int ac_mcp_server_ready(const ac_mcp_server *s);
/* The last fault, "MCP server 'NAME' ..." ("" if none): what its calls fail with. */
const char *ac_mcp_server_error(const ac_mcp_server *s);

/* The protocol version negotiated ("" before the handshake). */
const char *ac_mcp_server_version(const ac_mcp_server *s);
/* The tools listed (valid until the next refresh). */
size_t ac_mcp_server_tool_count(const ac_mcp_server *s);
const ac_mcp_tool *ac_mcp_server_tool(const ac_mcp_server *s, size_t i);
/* Called on the loop after each successful tools/list (the first and the
 * refreshes that notifications/tools/list_changed triggers), after a
 * refresh that failed, and after a start that failed (the list is then
 * unchanged). */
void ac_mcp_server_on_tools(ac_mcp_server *s, void (*fn)(void *ud, ac_mcp_server *s), void *ud);
/* 1 while a ready server fetches its changed list (or is about to). */
int ac_mcp_server_listing(const ac_mcp_server *s);
/* Times the server process was started (tests, diagnostics). */
unsigned ac_mcp_server_starts(const ac_mcp_server *s);

/* A call finished: ok 0 is a failure the model sees (isError, a JSON-RPC
 * error, a fault, a timeout); content is the text for the model. */
typedef void (*ac_mcp_done_fn)(void *ud, int ok, const char *content);
/* A notifications/progress for the call; total < 0 when not given, message
 * may be NULL. */
typedef void (*ac_mcp_progress_fn)(void *ud, double progress, double total, const char *message);

/* Calls tool with args (borrowed, an object) within timeout_ms (<= 0: the
 * server's). done runs once, later, on the loop (never inside this call).
 * Returns the call, or NULL when out of memory. */
ac_mcp_call *ac_mcp_call_tool(ac_mcp_server *s, const char *tool, const json_t *args,
                              int64_t timeout_ms, ac_mcp_done_fn done, ac_mcp_progress_fn progress,
                              void *ud);
/* The W3C traceparent (NULL: none) the next ac_mcp_call_tool of s carries, as the
 * `traceparent` header of an HTTP server's request (a traced session's tool call). */
void ac_mcp_server_set_traceparent(ac_mcp_server *s, const char *traceparent);
/* Abandons a call whose done has not run: the server is sent
 * notifications/cancelled with reason, and done never runs. */
void ac_mcp_call_cancel(ac_mcp_call *c, const char *reason);

/* The text the model sees for a tools/call result (borrowed); *ok is 0 for
 * isError. A new string (free it). */
char *ac_mcp_result_text(const json_t *result, int *ok);

#endif
