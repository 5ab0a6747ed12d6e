/*
 * tools_internal.h - private to the tool files of src/session: the tool
 * registry (tools_registry.c), the callback handles (tool_callback.c), the
 * context tools (context_tools.c) and the run_tools effect that runs them
 * all (tools_run.c).
 */
#ifndef AGENTC_SESSION_TOOLS_INTERNAL_H
#define AGENTC_SESSION_TOOLS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "session/session_int.h"
#include "tools/schema.h"
#include "tools/toolfile.h"

enum tool_kind {
    TK_CALC,
    TK_CLOCK,
    TK_EXTERNAL,
    TK_CALLBACK,
    TK_EXPAND,
    TK_SEARCH,
    TK_LOAD,
    TK_MCP,
    TK_AGENT,   /* a tool file's sub-agent, agent::NAME (subagent.c) */
    TK_HANDOFF, /* a tool file's handoff, transfer_to_NAME (handoff.c) */
    TK_CLIENT   /* a session's client tool: its caller runs it (client_tools.c) */
};

/* ---- registry (tools_registry.c) ---- */

struct ac_tool {
    int kind;
    char *name, *description;
    json_t *parameters;
    ac_schema *schema; /* parameters without "_"-prefixed properties (meta, state_turn.c) */
    /* "_outputPath" as the parameters declare it: its schema compiled (NULL: any
     * path) and whether it is required */
    ac_schema *out_schema;
    json_t *out_decl;
    int out_required;
    char **argv;
    int64_t timeout_ms;
    size_t max_output;
    char **env;         /* tool file "env": "NAME=value", NULL-terminated, may be NULL */
    char **inherit_env; /* tool file "inherit_env", NULL-terminated; NULL: the default */
    int idempotent;     /* may run again after a crash (src/store): the tool file says so, or (MCP)
                           the server's idempotentHint */

    /* its result cache (tool_cache.h); ttl_ms 0: not cached */
    ac_cache_decl cache;

    ac_tool_fn fn;
    void *ud;
    /* toolkits (toolkits.c): the engine index of the tool's toolkit + 1 (0: an independent
     * tool) and its declaration (owned by the toolkit registry) */
    size_t kit1;
    const struct ac_toolfile_tool *def;
    const struct ac_toolfile_toolkit *kit;
    struct ac_mcp_server *mcp; /* TK_MCP: its server (owned by e->mcp) */
    char *mcp_tool;            /* TK_MCP: the server's name for the tool */
    int mcp_gone;              /* TK_MCP: no longer listed by the server */
    json_t *agent;             /* TK_AGENT, TK_HANDOFF: the tool file's entry as written */
    char *agent_dir;           /* TK_AGENT, TK_HANDOFF: the tool file's directory */
    /* the registry's index: the next tool whose name (wire name) has the same key */
    struct ac_tool *next_name, *next_wire;
};

/* A new tool of the given kind with its schema compiled (schema NULL: any
 * object); NULL with err set on a bad schema or when out of memory. */
ac_tool *ac_tools_new(int kind, const char *name, const char *desc, const char *schema, char *err,
                      size_t errcap);
/* Adds t to the engine, which owns it from then on, even on failure
 * (duplicate or reserved name, out of memory: -1 with err set). */
int ac_tools_add(ac_engine *e, ac_tool *t, char *err, size_t errcap);
void ac_tools_free(ac_tool *t);
/* The engine's tool called name, NULL if none. */
const ac_tool *ac_tools_find(const ac_engine *e, const char *name);

/* The tool a call of the session names: the engine's, else one of the session's client
 * tools (client_tools.c); NULL when neither has it. */
const ac_tool *ac_session_tool(const ac_session *s, const char *name);
/* Hands a call of a client tool to the session's caller: 0, or -1 when it has none. */
int ac_client_call_hand(ac_session *s, const char *call_id, const char *name,
                        const char *arguments);

/* The arguments call c runs with: the user's edit (decisions.c), else the model's ("{}" when
 * it sent none). */
const char *ac_call_arguments(const ac_session *s, const ac_tool_call *c);

/* ---- meta-properties and the State (state_turn.c) ---- */

/* Compiles t->schema from t->parameters less its "_"-prefixed properties, and
 * the "_outputPath" declaration into t->out_schema. 0, or -1 with err set. */
int ac_tool_meta_compile(ac_tool *t, char *err, size_t errcap);

typedef struct ac_turn_plan ac_turn_plan;
/* The plan of a turn's n calls (ids, the model's order): arguments parsed,
 * output paths checked, the waits between calls (a call waits for the calls
 * that write what it reads) and their cycles. NULL when out of memory. */
ac_turn_plan *ac_turn_plan_new(ac_session *s, char *const *ids, size_t n);
void ac_turn_plan_free(ac_turn_plan *p);
/* More waits (other orderings, e.g. a toolkit's pipeline): call j waits for
 * call i, and with skip_if_failed is not run when i fails. 0, or -1 when out
 * of memory. Add them all, then seal the plan once: seal finds the cycles. */
int ac_turn_plan_wait(ac_turn_plan *p, size_t j, size_t i, int skip_if_failed);
void ac_turn_plan_seal(ac_turn_plan *p);
/* The next call to start (index), or -1 when none is ready. *fail (malloc'd)
 * is set when the call must fail without running (a cycle, a bad output
 * path, a bad reference); *failed_dep is the call whose failure means this
 * one must not run (a skip_if_failed wait), or (size_t)-1. */
long ac_turn_plan_next(ac_turn_plan *p, char **fail, size_t *failed_dep);
/* Call i's arguments as the tool gets them: references resolved against the
 * State as it stands, meta-properties removed. A new reference, or NULL with
 * the failure the model sees in msg. *rewritten is 0 when they are the model's
 * text unchanged (the tool then gets that text as it was sent). */
json_t *ac_turn_plan_args(ac_turn_plan *p, size_t i, int *rewritten, char *msg, size_t cap);
/* Call i ended with ok and content: its writes to the State (checked against
 * the schema; a refusal turns the call into a failure, *ok 0 and *override
 * the message) as the array the event carries, or NULL when none. */
json_t *ac_turn_plan_finish(ac_turn_plan *p, size_t i, int *ok, const char *content,
                            char **override);
/* ---- MCP servers (tools_mcp.c) ---- */

/* Starts the servers of a tool file's "mcp" array (borrowed), without waiting; their tools
 * are added as server__tool once listed (tools_mcp.c); path names the file in messages. -1
 * with err (a bad declaration, out of memory): a server that cannot start is no error. */
int ac_mcp_add_servers(ac_engine *e, const json_t *mcp, const char *path, char *err, size_t errcap);
/* The revision of the engine's tool list: 0 until an MCP server's list changes, then
 * bumped by each refresh. A session compares it with the revision it last checked
 * (effects.c) before a model call. */
uint64_t ac_mcp_tools_rev(const ac_engine *e);
/* 1 while one of the engine's MCP servers fetches a changed list, or starts within its first
 * start_timeout: a model call waits then (effects.c). */
int ac_mcp_listing(const ac_engine *e);
/* How long such a model call waits at most (ms). */
int64_t ac_mcp_wait_ms(const ac_engine *e);
/* A tool name of an MCP server's toolkit that is not (or not yet) offered: 1 with why its calls
 * fail in msg (the server is starting, could not start, crashed), else 0. */
int ac_mcp_explain(const ac_engine *e, const char *name, char *msg, size_t cap);
/* A tool of an MCP toolkit whose server is still starting (not listed yet): its server, the
 * server's name for the tool in *tool; a call waits for the start (the call's timeout). NULL
 * otherwise. */
struct ac_mcp_server *ac_mcp_starting_server(const ac_engine *e, const char *name,
                                             const char **tool);
/* 1 when name is a tool of an MCP server the tool file marks "idempotent": true (what a
 * restored session knows before the server lists its tools). */
int ac_mcp_idempotent(const ac_engine *e, const char *name);
/* Someone waiting for the lists being fetched: fn(ud) is called once, on the loop, when no
 * server is listing any more. Unwait before freeing w. */
typedef struct ac_mcp_waiter {
    struct ac_mcp_waiter *next;
    void (*fn)(void *ud);
    void *ud;
} ac_mcp_waiter;
void ac_mcp_wait_listing(ac_engine *e, ac_mcp_waiter *w);
void ac_mcp_unwait(ac_engine *e, ac_mcp_waiter *w);

/* ---- tool process environments (tool_env.c) ---- */

/* The environment of t's process: the variables of this process that
 * t->inherit_env (or the default list) names, less the provider's
 * credentials, then t->env. A new NULL-terminated array whose strings are
 * borrowed from environ and t (valid until either changes); NULL when out of
 * memory. */
char **ac_tool_env(const ac_engine *e, const ac_tool *t);

/* ---- callback handles (tool_callback.c) ---- */

struct slot; /* one call of a run (tools_run.c) */

struct ac_tool_call_handle {
    pthread_mutex_t mu;
    int refs; /* the caller's and the run's */
    int abandoned;
    ac_loop *loop;
    ac_session *s;
    char *id;
    int ok;
    char *content;
    char *context; /* the toolkit's context (JSON text) for ac_tool_call_context, or NULL */
    struct slot *slot;
};

/* Drops one reference; the last one frees the handle. Any thread. */
void ac_tool_handle_release(ac_tool_call_handle *h);
/* On the loop thread, posted by ac_tool_call_complete: finishes the call
 * the handle belongs to, unless it was abandoned (tools_run.c). */
void ac_tool_call_arrived(void *handle);

/* ---- the run_tools effect (tools_run.c), for tools run in-process ---- */

ac_session *ac_tool_run_session(const ac_tool_run *r);
/* Completes the call from a 0 ms timer with ok and a copy of content. */
void ac_tool_run_complete_later(ac_tool_run *r, struct slot *sl, int ok, const char *content);
/* When the call completes, ev is posted instead of tool.completed (0 keeps
 * tool.completed), with the fields of extra (stolen, may be NULL) added to
 * the payload. */
void ac_tool_run_set_event(struct slot *sl, uint16_t ev, json_t *extra);

/* ---- sub-agents (subagent.c) ---- */

struct ac_subcall; /* one sub-agent call: its child session */
/* The tools of a tool file's "agents" array (checked by the parser): agent::NAME each; path
 * names the tool file. 0, or -1 with err. */
int ac_subagent_tools_add(ac_engine *e, const json_t *agents, const char *path, char *err,
                          size_t errcap);
/* Starts call sl of run r (tool t, its arguments args) as a child session; it completes
 * through ac_tool_run_complete_later. The call's handle, NULL when it completed already. */
struct ac_subcall *ac_subagent_run(ac_tool_run *r, struct slot *sl, const char *call_id,
                                   const ac_tool *t, const json_t *args);
/* A call of the sub-agent t (a TK_AGENT tool) that no run of tools made (a guardrail's): its
 * child, PARENT.NAME.CALL_ID, gets task as its user message, and done gets its answer (ok)
 * or why it failed, from a timer, unless the call is stopped first. NULL with msg when it
 * cannot run (too deep, out of memory). */
typedef void (*ac_subagent_done_fn)(void *ud, int ok, const char *content);
struct ac_subcall *ac_subagent_ask(ac_session *s, const ac_tool *t, const char *call_id,
                                   const char *task, ac_subagent_done_fn done, void *ud, char *msg,
                                   size_t cap);
/* The parent stopped the call: its child's turn is cancelled and the child let go; when the
 * parent is being paused, the child is paused and the call kept (ac_subagent_unpark). */
void ac_subagent_stop(struct ac_subcall *c);
/* A handoff call (handoff.c): answered at once, then the session pauses (the event its
 * completion is followed by, set with ac_tool_run_set_then) so that the embedder moves it to
 * the named agent at rest and resumes it there. */
void ac_handoff_run(ac_tool_run *r, struct slot *sl, const ac_tool *t);
/* After the call's completion event, ev is queued too (outside the run: a stopped run does
 * not drop it); 0: nothing. */
void ac_tool_run_set_then(struct slot *sl, uint16_t ev);
/* Where the run keeps a call's handle (tools_run.c): the sub-agent call clears it when done. */
struct ac_subcall **ac_tool_run_slot_sub(struct slot *sl);

/* ---- context tools (context_tools.c) ---- */

/* Registers expand_context, search_tool_calls and load_tool_calls. */
int ac_context_tools_add(ac_engine *e, char *err, size_t errcap);
void ac_context_tool_expand(ac_tool_run *r, struct slot *sl, json_t *args);
void ac_context_tool_search(ac_tool_run *r, struct slot *sl, json_t *args);
void ac_context_tool_load(ac_tool_run *r, struct slot *sl, json_t *args);

#endif
