/*
 * agentc.h - the embedding API: engines, sessions, events, handlers.
 *
 * An ac_engine holds one compiled spec (the built-in tables or a spec file
 * loaded at run time), its handlers bound by name, the policy params, the
 * LLM provider and the tools. Sessions (one conversation each) run on the
 * engine's event loop: one thread, many sessions.
 *
 * Ownership: strings passed in are copied unless said otherwise; pointers
 * returned are borrowed and valid until the object they come from is freed.
 * _free(NULL) is a no-op everywhere.
 */
#ifndef AGENTC_H
#define AGENTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm.h"
#include "agentc/fsm_tables.h"
#include "agentc/version.h" /* AGENTC_VERSION, from project(VERSION) in CMakeLists.txt */

typedef struct ac_engine ac_engine;
typedef struct ac_session ac_session;
typedef struct ac_registry ac_registry;
typedef struct ac_loop ac_loop;
typedef struct ac_conv ac_conv;
typedef struct ac_tool_call_handle ac_tool_call_handle;

/* ---- handlers ------------------------------------------------------------ */

/* Guards and actions read and change session data only: no I/O, no clock
 * (time is ev->time_ms), so a journal always replays to the same session.
 * ev->data is the event's JSON payload (a json_t *, may be NULL). */
typedef ac_guard_fn ac_guard_handler;
typedef ac_action_fn ac_action_handler;
/* Effects do the I/O; they report only by posting events. `args` are the
 * values of the params the spec passes (ac_param_value). */
typedef struct ac_param_value {
    const char *name;
    int type; /* enum ac_fsm_param_type */
    int64_t ival;
    const char *sval;
} ac_param_value;
typedef void (*ac_effect_start_handler)(ac_session *s, const ac_param_value *args, size_t nargs,
                                        const ac_event *ev);
typedef void (*ac_effect_stop_handler)(ac_session *s);

ac_registry *ac_registry_new(void); /* holds the built-in handlers */
void ac_registry_free(ac_registry *r);
/* Adds or replaces a handler by name. 0 on success. */
int ac_registry_guard(ac_registry *r, const char *name, ac_guard_handler fn);
int ac_registry_action(ac_registry *r, const char *name, ac_action_handler fn);
int ac_registry_effect(ac_registry *r, const char *name, ac_effect_start_handler start,
                       ac_effect_stop_handler stop);

/* ---- output: what a front end shows ------------------------------------- */
typedef struct ac_output {
    void *ud;
    void (*text)(void *ud, ac_session *s, const char *delta, size_t n);
    void (*reasoning)(void *ud, ac_session *s, const char *delta, size_t n);
    void (*tool_start)(void *ud, ac_session *s, const char *id, const char *name,
                       const char *arguments);
    void (*tool_end)(void *ud, ac_session *s, const char *id, const char *name, int ok,
                     const char *content, int64_t duration_ms);
    void (*retry)(void *ud, ac_session *s, int attempt, int64_t delay_ms, const char *reason);
    void (*discarded)(void *ud, ac_session *s, size_t partial_len); /* partial message dropped */
    void (*compacted)(void *ud, ac_session *s, const char *strategy, size_t before, size_t after);
    void (*trace)(void *ud, ac_session *s, const ac_trace_rec *rec);
    void (*finished)(void *ud, ac_session *s); /* turn done: Idle or a terminal state */
} ac_output;

/* ---- engine --------------------------------------------------------------- */
enum ac_provider_kind { AC_PROVIDER_OPENAI = 0, AC_PROVIDER_ANTHROPIC = 1, AC_PROVIDER_SCRIPT = 2 };

typedef struct ac_engine_config {
    const ac_fsm_tables *tables; /* NULL: the built-in spec/agent.fsm tables */
    ac_registry *registry;       /* NULL: built-in handlers only (borrowed) */
    ac_loop *loop;               /* NULL: no effects (replay) (borrowed) */
    const char *const *params;   /* "name=value" overrides, NULL-terminated, may be NULL */
    int provider;                /* enum ac_provider_kind */
    const char *base_url;        /* provider base URL (OpenAI: includes /v1) */
    const char *api_key;         /* never logged, traced or journaled */
    const char *model;
    const char *const *headers; /* extra "Name: value" headers, NULL-terminated */
    const char *script_path;    /* script provider: JSON Lines turns */
    const char *script_text;    /* script provider: turns given inline (wins over path) */
    int script_delay_ms;        /* script provider: delay between streamed deltas */
    const char *system_prompt;  /* may be NULL */
    const char *journal_dir;    /* sessions created without a journal path write one
                                   here, DIR/<id>.jsonl (characters of the id other
                                   than letters, digits, '.', '_' and '-' become '_');
                                   NULL: none unless ac_session_new gets a path */
    const ac_output *output;    /* may be NULL */
    uint64_t seed;              /* jitter seed (0: from the clock) */
} ac_engine_config;

/* Builds an engine. On error returns NULL and writes one message in err
 * (a missing handler lists every missing name). */
ac_engine *ac_engine_new(const ac_engine_config *cfg, char *err, size_t errcap);
void ac_engine_free(ac_engine *e);
const ac_fsm_tables *ac_engine_tables(const ac_engine *e);
ac_loop *ac_engine_loop(const ac_engine *e);
/* Param value by name (after overrides); def when the spec has no such param. */
int64_t ac_engine_param_int(const ac_engine *e, const char *name, int64_t def);
const char *ac_engine_param_str(const ac_engine *e, const char *name, const char *def);

/* Tools: from a tools file, built-ins ("builtin:calculator", "builtin:clock",
 * "builtin:context": the internal tools expand_context, search_tool_calls and
 * load_tool_calls, which change the agent's own context),
 * or C callbacks. 0 on success, else a message in err. */
int ac_engine_add_tools(ac_engine *e, const char *spec, char *err, size_t errcap);
/* Callback tools: the function gets the arguments (validated) and a handle,
 * and completes the call now or later, from any thread. */
typedef void (*ac_tool_fn)(void *ud, const char *arguments, ac_tool_call_handle *call);
int ac_engine_add_callback_tool(ac_engine *e, const char *name, const char *description,
                                const char *schema_json, ac_tool_fn fn, void *ud, char *err,
                                size_t errcap);
/* Completes a callback tool call (thread-safe). Late completions of abandoned
 * calls are ignored. The handle is invalid afterwards. */
void ac_tool_call_complete(ac_tool_call_handle *call, int ok, const char *content);

/* ---- sessions --------------------------------------------------------------- */
/* Creates a session and starts it (posts `spawn`). journal_path may be NULL
 * (then the engine's journal_dir, if any, names one). ac_session_free may be
 * called from a handler or an output callback: the session is then freed
 * once the event being applied is done. */
ac_session *ac_session_new(ac_engine *e, const char *id, const char *journal_path, char *err,
                           size_t errcap);
/* Stops every effect (transfers, timers, child processes) and frees. */
void ac_session_free(ac_session *s);
const char *ac_session_id(const ac_session *s);
ac_engine *ac_session_engine(const ac_session *s);
ac_conv *ac_session_conv(ac_session *s);
const ac_fsm *ac_session_fsm(const ac_session *s);
void *ac_session_userdata(const ac_session *s);
void ac_session_set_userdata(ac_session *s, void *ud);

/* Posts an event by name with a JSON payload (json_t *, stolen; may be NULL)
 * and a timestamp in ms (0: now). Journaled before it is applied. Safe to
 * call from handlers: the event is then queued until the current dispatch
 * completes. Returns AC_FSM_HANDLED, AC_FSM_UNHANDLED or AC_FSM_FAILED, or
 * -2 for an event the spec does not declare. */
int ac_session_post(ac_session *s, const char *event, void *data, int64_t t_ms);
/* Conveniences. */
int ac_session_send(ac_session *s, const char *user_text);
int ac_session_cancel(ac_session *s); /* stops everything before returning */

/* Name of the active state of `machine` ("session", "agent", "process"), or NULL. */
const char *ac_session_state(const ac_session *s, const char *machine);
/* True when the session waits for input (Idle) or ended (terminal). */
bool ac_session_settled(const ac_session *s);
bool ac_session_ended(const ac_session *s);
/* Final status: "running", "idle", "completed", "failed", "cancelled". */
const char *ac_session_status(const ac_session *s);
const char *ac_session_answer(const ac_session *s);  /* last final answer, "" if none */
const char *ac_session_error(const ac_session *s);   /* NULL if none */
const char *ac_session_partial(const ac_session *s); /* text streamed in the current call */
/* Whole session (machine states, status, conversation) as JSON; malloc'd. */
char *ac_session_to_json(const ac_session *s);

/* ---- embedding: the event loop --------------------------------------------- */
/* The part of the loop a program needs to drive sessions: one loop per
 * thread, shared by every engine and session on it. These are declared here
 * only; the rest of the loop (timers, fd watches, posts from other threads)
 * is internal (src/io/loop.h). */
ac_loop *ac_loop_new(void); /* NULL on allocation failure */
/* Cancels everything still registered, without calling any callback: child
 * processes are killed (process group, SIGKILL) and reaped, HTTP transfers
 * are removed (their easy handles stay with whoever started them), pending
 * posts are dropped; watched fds are not closed (they belong to the caller).
 * Free sessions and engines first. ac_loop_free(NULL) is a no-op. Not from a
 * callback of the same loop. */
void ac_loop_free(ac_loop *loop);
/* Waits up to timeout_ms (negative: no limit, 0: do not block) for something
 * to be ready, then runs ready fd callbacks, expired timers and queued posts.
 * Returns the number of callbacks run (internal ones, such as driving curl,
 * included), -1 if poll failed. Not from a callback of the same loop. */
int ac_loop_run_once(ac_loop *loop, int timeout_ms);
/* Runs iterations until ac_loop_stop() is called or nothing is left to wait
 * for: no timer, fd watch, transfer, child process or queued post. Not from
 * a callback of the same loop. */
void ac_loop_run(ac_loop *loop);
void ac_loop_stop(ac_loop *loop);

/* ---- embedding: tool calls and the conversation --------------------------- */
/* For handlers an embedder registers, e.g. an approval step that answers the
 * calls of a turn itself instead of running them. Ids and strings returned
 * are borrowed from the conversation and stay valid while the session lives
 * (message contents until compaction replaces the message). */

/* Tool calls of the current loop iteration that have no result yet, in the
 * order the model issued them. Fills ids[0..cap) (ids may be NULL to count)
 * and returns how many there are, which may exceed cap. */
size_t ac_session_pending_tool_calls(ac_session *s, const char **ids, size_t cap);
/* Name of tool call `id` and, when arguments is not NULL, its arguments as the
 * model sent them; NULL (and *arguments NULL) for an unknown id. */
const char *ac_session_tool_call_name(ac_session *s, const char *id, const char **arguments);
/* Answers pending call `id` with a failure whose text is `error`, without
 * running the tool: the model sees it as that call's result in its next
 * request, and the output's tool_end reports it (ok 0, duration 0). Changes
 * session data only, so call it from an action with t_ms = ev->time_ms: the
 * journal then replays it. 0 on success; -1 for NULL arguments, an unknown
 * id, or a call that already has a result. */
int ac_session_fail_tool_call(ac_session *s, const char *id, const char *error, int64_t t_ms);
/* The conversation, oldest message first: message i's content, and its role
 * ("system", "user", "assistant", "tool") in *role when role is not NULL.
 * NULL past the end. */
size_t ac_session_message_count(ac_session *s);
const char *ac_session_message(ac_session *s, size_t i, const char **role);

#endif
