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
 * _free(NULL) is a no-op everywhere. A NULL engine, session, loop or
 * required string makes a function fail with its error value (AC_EINVAL for
 * posts, -1 or NULL with AC_EINVAL in the ac_error, NULL or 0 for getters) or
 * do nothing; a NULL session counts as ended and settled.
 */
#ifndef AGENTC_H
#define AGENTC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm.h"
#include "agentc/fsm_tables.h"
#include "agentc/version.h" /* AGENTC_VERSION, from project(VERSION) in CMakeLists.txt */

/* Status codes of the public API. A number is never reused: codes are added last.
 * ac_strerror() names each one. The first three equal the dispatcher's results
 * (AC_FSM_HANDLED, AC_FSM_UNHANDLED, AC_FSM_FAILED). */
typedef enum ac_status {
    AC_OK = 0,              /* done; for a post: applied and handled */
    AC_UNHANDLED = 1,       /* applied (and journaled), no transition took it */
    AC_FAILED = -1,         /* the dispatch failed: microstep bound (see the trace) */
    AC_EUNKNOWN_EVENT = -2, /* the spec declares no such event */
    AC_ENOMEM = -3,         /* out of memory: nothing was queued */
    AC_EINVAL = -4,         /* a bad argument */
    AC_QUEUED = 2,          /* accepted, applied later in order (see ac_session_post) */
    AC_ESPEC = -5,          /* the spec cannot run here: a handler, param or event is missing */
    AC_ECONFIG = -6,        /* a bad configuration: provider, model, key, tools, script */
    AC_EIO = -7,            /* a file could not be read or written (journal, tools, script) */
    /* the store's (agentc/store.h also names them AC_STORE_ENOENT, _EBUSY, _ESPEC); -100,
     * -101 and -102, their numbers before they joined this enum, are never given again */
    AC_ENOENT = -8,        /* no stored session with that id */
    AC_EBUSY = -9,         /* another holder's lease on the session runs (the text names it) */
    AC_ESPEC_CHANGED = -10 /* a session stopped mid-turn continued under another spec */
} ac_status;

/* An error at the public edge, in the manner of jansson's json_error_t: a code, a text, and
 * where it comes from when that is a file (a spec, a tool file, a script): its path, line and
 * column (0 when not known). Functions taking an ac_error * accept NULL. */
typedef struct ac_error {
    int code; /* enum ac_status, AC_OK when there was no error */
    int line, column;
    char source[256];
    char text[512];
} ac_error;
/* "handled", "queued", "unknown event"...; "unknown status" for other numbers. */
const char *ac_strerror(int status);

typedef struct ac_engine ac_engine;
typedef struct ac_session ac_session;
typedef struct ac_registry ac_registry;
typedef struct ac_loop ac_loop;
typedef struct ac_conv ac_conv;
typedef struct ac_tool_call_handle ac_tool_call_handle;

/* ---- handlers ------------------------------------------------------------ */

/* Guards and actions read and change session data only: no I/O, no clock
 * (time is ev->time_ms), so a journal always replays to the same session.
 * ev->data is the event's JSON payload (a json_t *, may be NULL) for every event a handler
 * the program registers receives: an engine that binds one builds it for the events the
 * engine carries typed inside (a streamed delta), which its built-in handlers read without
 * it (docs/design.md, "Typed payloads"). */
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
/* Every callback runs on the thread that applies the session's events: the loop's thread
 * (ac_loop_run), or, for an engine without a loop and in ac_session_replay, the thread
 * posting or replaying. None may block: it runs inside the session's dispatch (post what
 * it wants done; ac_session_post from a callback is queued). Each is fired by an action or
 * by an effect's start report, which ac_session_replay applies as the run did, so a replay
 * reports what the run reported, with the same arguments in the same order; what is marked
 * RUN ONLY is fired by I/O or by a call replay does not redo. Any member may be NULL. */
typedef struct ac_output {
    void *ud;
    /* a text or reasoning delta of the model's answer (action append_delta) */
    void (*text)(void *ud, ac_session *s, const char *delta, size_t n);
    void (*reasoning)(void *ud, ac_session *s, const char *delta, size_t n);
    /* the round's tools start (the run_tools effect's report): once per call about to run,
     * in the model's order, before any of them runs; at most max_parallel_tools run at
     * once. A call answered without running (a spec's deny) gets tool_end only; a call the
     * user edited (per-call decisions) starts with the edited arguments */
    void (*tool_start)(void *ud, ac_session *s, const char *id, const char *name,
                       const char *arguments);
    /* a call's result (action record_tool_result, or ac_session_fail_tool_call) */
    void (*tool_end)(void *ud, ac_session *s, const char *id, const char *name, int ok,
                     const char *content, int64_t duration_ms);
    /* RUN ONLY: the backoff effect's wait before retry `attempt` begins (delay_ms is drawn
     * with jitter, which the journal does not keep); a replay reports the failure through
     * discarded and trace (llm.failed, the RETRYING step) */
    void (*retry)(void *ud, ac_session *s, int attempt, int64_t delay_ms, const char *reason);
    /* the partial answer of a failed call dropped (action discard_partial) */
    void (*discarded)(void *ud, ac_session *s, size_t partial_len);
    /* action apply_compaction */
    void (*compacted)(void *ud, ac_session *s, const char *strategy, size_t before, size_t after);
    /* every transition, as the journal's steps record it */
    void (*trace)(void *ud, ac_session *s, const ac_trace_rec *rec);
    /* a turn ended (ac_session_in_turn: the root machine left the state that runs turns,
     * whatever actions ran; ac_session_last_turn says how), or the session ended; also
     * ac_session_fail, which is RUN ONLY (a failure declared by the program or the engine,
     * not an event: a session stuck in a state) */
    void (*finished)(void *ud, ac_session *s);
    /* a final answer refused by the output schema and sent back to the model (attempt: 1 for
     * the first refusal); errors says why (action reject_answer) */
    void (*rejected)(void *ud, ac_session *s, int attempt, const char *errors);
    /* RUN ONLY: progress of a running tool call (MCP notifications/progress, not
     * journaled): total < 0 when unknown, message may be NULL */
    void (*tool_progress)(void *ud, ac_session *s, const char *id, double progress, double total,
                          const char *message);
} ac_output;

/* ---- engine --------------------------------------------------------------- */
enum ac_provider_kind { AC_PROVIDER_OPENAI = 0, AC_PROVIDER_ANTHROPIC = 1, AC_PROVIDER_SCRIPT = 2 };

/* Settings of the model request (see the README's table). They tune how one
 * provider samples, not the agent's control flow, and some exist for one
 * provider only, so they are request options of the engine, not spec params.
 * A zeroed struct sends nothing. Checked by ac_engine_new (AC_ECONFIG): the
 * ranges, and a setting the provider does not have (Anthropic: seed,
 * reasoning_effort; temperature above 1). */
typedef struct ac_request_settings {
    bool has_temperature; /* temperature: 0..2 (Anthropic 0..1) */
    double temperature;
    bool has_top_p; /* top_p: 0..1 */
    double top_p;
    const char *const *stop; /* stop sequences, NULL-terminated; NULL or empty: none */
    bool has_seed;           /* OpenAI only */
    int64_t seed;
    const char *tool_choice;      /* NULL: not sent; "auto", "none", "required" or a tool name
                                     (which must be offered when the request is built) */
    int parallel_tool_calls;      /* 0: not sent, 1: true, -1: false */
    const char *reasoning_effort; /* OpenAI only: none|minimal|low|medium|high|xhigh */
    const char *request_json;     /* a JSON object merged into the body last; it may not
                                     hold messages, tools, stream, stream_options, system */
} ac_request_settings;

typedef struct ac_engine_config {
    const ac_fsm_tables *tables; /* NULL: the built-in spec/agent.fsm tables */
    ac_registry *registry;       /* NULL: built-in handlers only (borrowed) */
    ac_loop *loop;               /* NULL: no effects (replay) (borrowed) */
    const char *const *params;   /* "name=value" overrides, NULL-terminated, may be NULL */
    int provider;                /* enum ac_provider_kind */
    const char *base_url;        /* provider base URL (OpenAI: includes /v1) */
    const char *api_key;         /* never logged, traced or journaled */
    const char *api_key_env;     /* the variable the key came from, if any: like
                                    OPENAI_API_KEY and ANTHROPIC_API_KEY, it is
                                    never passed to a tool process */
    const char *model;
    const char *const *headers; /* extra "Name: value" headers, NULL-terminated */
    const char *script_path;    /* script provider: JSON Lines turns */
    const char *script_text;    /* script provider: turns given inline (wins over path) */
    int script_delay_ms;        /* script provider: delay between streamed deltas */
    const char *system_prompt;  /* may be NULL */
    const char *journal_dir;    /* sessions created without a journal path write one
                                   here, DIR/<id>.jsonl, the id percent-encoded: every
                                   byte other than ASCII letters, digits, '.', '_' and
                                   '-' becomes %XX (upper-case hex; '%' itself is %25),
                                   so distinct ids name distinct files. DIR is created
                                   0700 if missing; a journal that already exists there
                                   is an error (AC_EIO), never overwritten.
                                   NULL: none unless ac_session_new gets a path */
    const ac_output *output;    /* may be NULL */
    uint64_t seed;              /* jitter seed (0: from the clock) */
    /* Structured output: a JSON Schema (JSON text) the final answer must match, or NULL.
     * Asked of the model natively where the provider can (OpenAI response_format; Anthropic
     * gets it as an instruction in "system"), and enforced by agentc: an answer that is not
     * JSON or does not match goes back to the model with the errors, at most output_retries
     * times (a spec param), then the turn fails. A schema agentc's validator refuses makes
     * ac_engine_new fail (AC_ECONFIG). */
    const char *output_schema;
    const ac_request_settings *request; /* model request settings; NULL: none (copied) */
    /* Traces (agentc/otel.h): the tracer the engine's sessions send their spans to, on the
     * engine's loop (borrowed; free the engine before shutting the tracer down); NULL: none */
    struct ac_tracer *tracer;
    const char *agent_name; /* the traces' agent name; NULL: the spec file's base name */
    /* Metrics (agentc/metrics.h) the engine's sessions count in (borrowed); NULL: none */
    struct ac_metrics *metrics;
    /* Prices (JSON text: {"models": {"NAME": {"input": USD per million tokens, "output",
     * "cached_input"?, "cache_write"?}}}, a missing cache price being the input price), or NULL.
     * The sessions of a model it prices count their cost (ac_session_stats.cost_usd); a model it
     * does not price has none. A malformed document: AC_ECONFIG. docs/observability.md */
    const char *prices;
    /* Sub-agents (docs/composition.md): opens the child session a call of a tool file's
     * agent::NAME runs (NULL: a new session on the calling session's engine, no journal
     * unless the engine's journal_dir names one). Borrowed; set it on the engines it
     * builds too, for deeper levels. */
    const struct ac_subagent_opener *subagents;
} ac_engine_config;

/* ---- sub-agents (docs/composition.md) ---------------------------------------------------- */
/* What opens a sub-agent's child session. open(ud, parent, entry, dir, id, opts, err): entry is
 * the tool file's agent entry (JSON text: the agent format plus "name", "description",
 * "input_schema", "max_depth", "handoff"), dir the tool file's directory (relative paths),
 * id the child's id and opts its options (opts->parent set). It returns the session, made
 * on an engine of the entry's agent (the engine stays the opener's: free it after every
 * engine whose sessions call it) on the parent's loop: a new one, or the session stored
 * under id, as it stands (a crash's resume goes on with it); NULL with err. Called on the
 * loop, from no dispatch of the parent. */
struct ac_session_options;
typedef struct ac_subagent_opener {
    void *ud;
    ac_session *(*open)(void *ud, ac_session *parent, const char *entry, const char *dir,
                        const char *id, const struct ac_session_options *opts, ac_error *err);
    /* true when the program moves a session a handoff paused to the agent it names
     * (ac_session_handoff); false (and without an opener): a call of transfer_to_NAME fails
     * without pausing the session */
    bool handoffs;
    /* The call is done with a child open returned (its answer read, or its turn cancelled
     * when the parent stopped the call): the opener keeps it (a stored session of its own
     * that goes on being read) or frees it. NULL: ac_session_free. */
    void (*close)(void *ud, ac_session *child);
} ac_subagent_opener;

/* Builds an engine. On error returns NULL and fills err: AC_ESPEC when the
 * spec names handlers this program lacks or does not give the built-in
 * handlers a param, event or effect argument they need, or an effect what it
 * needs on the way in (run_tools: record_assistant) (the text lists every
 * missing name; line is the spec line of an effect use when the problem is
 * there), or has a state that can never be left or an event nothing sends
 * (the built-in effects post what their contracts say, an effect the program
 * registers may post anything; line is the state's), AC_EINVAL for a bad
 * param override, AC_ECONFIG for the provider, AC_ENOMEM. */
ac_engine *ac_engine_new(const ac_engine_config *cfg, ac_error *err);
void ac_engine_free(ac_engine *e);
const ac_fsm_tables *ac_engine_tables(const ac_engine *e);
ac_loop *ac_engine_loop(const ac_engine *e);
/* Param value by name (after overrides); def when the spec has no such param. */
int64_t ac_engine_param_int(const ac_engine *e, const char *name, int64_t def);
const char *ac_engine_param_str(const ac_engine *e, const char *name, const char *def);

/* Tools: from a tools file, built-ins ("builtin:calculator", "builtin:clock",
 * "builtin:context": the internal tools expand_context, search_tool_calls and
 * load_tool_calls, which change the agent's own context),
 * or C callbacks. 0 on success, else -1 and err (AC_ECONFIG, AC_EIO, AC_ENOMEM).
 * Never waits: a tool file's MCP servers start in the background on the engine's
 * loop (a server that cannot start is no error here: its calls fail with the
 * reason; docs/mcp.md), so it may be called from a loop callback. */
int ac_engine_add_tools(ac_engine *e, const char *spec, ac_error *err);
/* The same from a tool file's content (text, JSON) instead of reading the file:
 * path names it in messages, and its directory is where relative commands are
 * taken from, as if the file were there (it need not exist). text NULL: as
 * ac_engine_add_tools(e, path, err). */
int ac_engine_add_tools_text(ac_engine *e, const char *path, const char *text, ac_error *err);
/* Callback tools: the function gets the arguments (validated) and a handle,
 * and completes the call now or later, from any thread. */
typedef void (*ac_tool_fn)(void *ud, const char *arguments, ac_tool_call_handle *call);
int ac_engine_add_callback_tool(ac_engine *e, const char *name, const char *description,
                                const char *schema_json, ac_tool_fn fn, void *ud, ac_error *err);
/* Completes a callback tool call (thread-safe). Late completions of abandoned
 * calls are ignored, also after the session, the engine and the loop were
 * freed. The handle is invalid afterwards. */
void ac_tool_call_complete(ac_tool_call_handle *call, int ok, const char *content);
/* Toolkits: a tool file's toolkit tool declared with "callback": true is bound
 * by ac_engine_add_callback_tool under its name "prefix::tool" (description and
 * schema come from the file; those arguments are ignored). During the call,
 * the toolkit's context as JSON text (borrowed until the call completes; NULL
 * for a tool outside toolkits). A tool with "updates_context" completes with
 * {"result": ..., "context": {...}}, as a tool process prints it. */
const char *ac_tool_call_context(const ac_tool_call_handle *call);
/* The result cache of a tool (docs/toolkits.md, "Result cache"): a successful result
 * answers later calls with the same name, canonical arguments and toolkit context, without
 * running the tool, for ttl_ms. scope AC_CACHE_SESSION keeps one cache per session,
 * AC_CACHE_ENGINE one for all the engine's sessions. A tool file declares it with "cache";
 * this sets it for a tool already added (a callback tool, or a tool file's), and declares the
 * tool idempotent (a cached result stands for a call that does not run, which is only right
 * for a tool whose calls may be repeated). max_entries 0: 100. ttl_ms 0 turns the cache off. */
typedef enum ac_cache_scope { AC_CACHE_SESSION = 0, AC_CACHE_ENGINE = 1 } ac_cache_scope;
typedef struct ac_tool_cache_options {
    int64_t ttl_ms;
    ac_cache_scope scope;
    size_t max_entries;
} ac_tool_cache_options;
/* 0, or -1 with err (AC_EINVAL: no such tool, a negative ttl, an unknown scope). */
int ac_engine_set_tool_cache(ac_engine *e, const char *name, const ac_tool_cache_options *opts,
                             ac_error *err);

/* ---- sessions --------------------------------------------------------------- */
/* Creates a session and starts it (posts `spawn`, applied before the call
 * returns unless it is made from a loop callback; see ac_session_post).
 * journal_path may be NULL (then the engine's journal_dir, if any, names one).
 * A journal is created 0600 (an existing file at journal_path is truncated);
 * a symbolic link there is refused (AC_EIO). When the journal cannot be
 * written (a full disk, a size limit), the session fails: see ac_session_post.
 * ac_session_free may be called from a handler, an output callback or any
 * loop callback: the session is then freed right after the event being
 * applied (or the callback) is done, and its other queued events are dropped. */
ac_session *ac_session_new(ac_engine *e, const char *id, const char *journal_path, ac_error *err);
/* What belongs to one session rather than to its engine. Engines are shared: one per spec,
 * every session of that spec on it. A field left zero takes the engine's value; fields are
 * only ever added at the end, so zero the whole struct (`= {0}`) before setting some. Each
 * is carried in the session's `spawn` event, so its journal (or its store) keeps it and a
 * replay or a restore gets it back without it being given again. */
typedef struct ac_session_options {
    const char *journal_path;  /* as ac_session_new's (ignored by ac_store_session_opts) */
    const char *system_prompt; /* NULL: the engine's (ac_engine_config.system_prompt) */
    /* What the session runs with, as its caller describes it: a JSON object as text, opaque
     * to the library (stored and journaled as it is, never read; the command line keeps its
     * agent record there, docs/agents.md). NULL: none recorded. It must hold no secret. */
    const char *agent;
    /* A child session (docs/composition.md): the call that runs it, as JSON text
     * {"session": PARENT_ID, "call": CALL_ID, "path": "researcher/checker"} (path: the
     * agents' names from the top session down, '/'-separated). NULL: a session of its own. */
    const char *parent;
    /* The conversation before the session's first message: a JSON array as text of
     * {"role": "user" | "assistant", "content": TEXT}, added in order after the system prompt
     * (carried in the spawn event as "history"). NULL: none. */
    const char *history;
    /* Client tools: tools the session's caller runs itself (the OpenAI-compatible front's
     * request "tools"), a JSON array as text of {"name", "description"?, "parameters"?} (name:
     * 1-64 of A-Z a-z 0-9 _ -, none of the engine's tools' names; parameters: a JSON Schema;
     * at most 128 tools).
     * Offered to the model with the engine's tools and carried in the spawn event (a replay
     * offers the same); a call of one is not run here but handed to the session's client-call
     * function (ac_session_set_client_calls) and waits for ac_session_answer_call. NULL: none. */
    const char *client_tools;
} ac_session_options;
/* ac_session_new with options (opts may be NULL: all defaults). */
ac_session *ac_session_new_opts(ac_engine *e, const char *id, const ac_session_options *opts,
                                ac_error *err);
/* Where the calls of the session's client tools go: fn gets each call when it would run (its
 * id, the tool's name and its arguments as JSON text, references resolved), on the loop's
 * thread, and must not block; the call then waits, holding no place among the calls run at
 * once (max_parallel_tools), until ac_session_answer_call answers it. Without a function
 * such a call fails at once ("no client answers it"). fn NULL: none. */
typedef void (*ac_client_call_fn)(void *ud, ac_session *s, const char *call_id, const char *name,
                                  const char *arguments);
void ac_session_set_client_calls(ac_session *s, ac_client_call_fn fn, void *ud);
/* Answers a waiting call of a client tool with its result (ok 0: a failure the model sees),
 * as a tool's completion: journaled as tool.completed and applied from the loop's next
 * iteration, as a tool's result is. Loop thread only.
 * AC_OK; AC_ENOENT when no call of that id waits (answered already, the turn stopped). */
int ac_session_answer_call(ac_session *s, const char *call_id, int ok, const char *content);
/* A child session's parent call as its options gave it (JSON text, borrowed), and its agent
 * path ("researcher/checker"); NULL for a session of its own. */
const char *ac_session_parent(const ac_session *s);
const char *ac_session_agent_path(const ac_session *s);
/* Handoffs (docs/composition.md): a session a call of a tool file's transfer_to_NAME paused
 * waits to go on under NAME's agent: that entry (JSON text, as ac_subagent_opener's; borrowed
 * until the next call), and the tool file's directory in *dir (may be NULL); NULL when it
 * waits for none. The embedder records the change (ac_session_change_agent_on with reason
 * "handoff"), opens the session on an engine of that agent and posts `resume`: a new turn
 * of the same conversation answers the same user message. */
const char *ac_session_handoff(ac_session *s, const char **dir);
/* The journal records of a sub-agent call in its parent's journal (docs/events.md): numbered
 * and journaled like events, never seen by the dispatcher. */
#define AC_AGENT_STARTED "agent.started"
#define AC_AGENT_DONE "agent.done"
/* The agent the session runs with now (ac_session_options.agent, then the last
 * ac_session_change_agent), as JSON text borrowed until the next change; NULL: none. */
const char *ac_session_agent(const ac_session *s);
/* The journal record of an agent change: not an event of the spec (the dispatcher never sees
 * it, no transition runs) but a numbered record of the journal, "agent.changed" with
 * {"reason": REASON, "what": WHAT, "agent": AGENT}, that a replay, a rebuild and the
 * stream show. The events recorded after it were recorded under AGENT. */
#define AC_AGENT_CHANGED "agent.changed"
/* Records that the session runs with `agent` (a JSON object as text; NULL: the one it has,
 * for a change of what the library runs it with, such as its spec) from its next event on:
 * reason says why ("option": the caller was given another; "handoff"), what is a JSON array
 * as text of what changed (NULL: []). Only at rest (ac_session_settled): the events recorded
 * so far were applied under the agent before, the next turn runs under this one. A stored
 * session takes a snapshot with it and keeps that snapshot (store.h), so a rebuild never
 * applies events recorded under one agent to another. The engine is the caller's to change:
 * free the session and open it on an engine of the new agent. A replayer given the record
 * (ac_session_post with AC_AGENT_CHANGED) applies it likewise. AC_OK; AC_EINVAL for
 * arguments that are not JSON of those kinds or a session not at rest; AC_EIO when it could
 * not be journaled. */
int ac_session_change_agent(ac_session *s, const char *reason, const char *what, const char *agent);
/* ac_session_change_agent for a session that goes on on the engine `to` (the new agent's;
 * NULL or the session's own: as ac_session_change_agent). The move is tried first: the session
 * as it stands is carried over to `to` (ac_session_replayer_on); when it cannot be (`to`'s
 * spec lacks a state the session is in), nothing is recorded and the call fails with
 * AC_ESPEC, err naming the state. A session at rest in its spec's rest state (the one state of
 * the root machine a turn returns to) goes on in the rest state of `to`'s spec whatever its
 * name. The record also carries what the new agent decides of the session from its next turn
 * on, where `to`'s differs from the session's engine's: "system" (its system prompt, or null:
 * none; it replaces the session's, its own given at creation too) and "output_schema" (the
 * schema, or null). A change that names neither keeps the session's. err may be NULL. */
int ac_session_change_agent_on(ac_session *s, const char *reason, const char *what,
                               const char *agent, ac_engine *to, ac_error *err);
/* A session that applies the events it is given as a journal recorded them (a replay, as
 * ac_session_replay does): no effect runs, nothing is journaled, spawn is not posted. Give it
 * a journal's events in order with ac_session_post(s, name, data, t_ms): each is applied
 * before the call returns, from a loop callback too. The engine's output callbacks fire for
 * it as in ac_session_replay (s is this session). */
ac_session *ac_session_new_replayer(ac_engine *e, const char *id, ac_error *err);
/* A replayer (as ac_session_new_replayer) on the engine `to` holding the session s as it
 * stands, settled: its snapshot restored there, its event count kept (s is left as it is).
 * How a replay goes on under the agent an AC_AGENT_CHANGED record names, as
 * ac_session_replay_agents does. NULL and err (AC_ESPEC, naming the state `to`'s spec lacks)
 * when s cannot go on there. */
ac_session *ac_session_replayer_on(const ac_session *s, ac_engine *to, ac_error *err);
/* Stops every effect (transfers, timers, child processes) and frees. */
void ac_session_free(ac_session *s);
const char *ac_session_id(const ac_session *s);
ac_engine *ac_session_engine(const ac_session *s);
ac_conv *ac_session_conv(ac_session *s);
const ac_fsm *ac_session_fsm(const ac_session *s);
void *ac_session_userdata(const ac_session *s);
void ac_session_set_userdata(ac_session *s, void *ud);

/* Posts an event by name with a JSON payload (json_t *, stolen; may be NULL)
 * and a timestamp in ms (0: now). Journaled before it is applied.
 *
 * Events are applied one at a time, never inside someone else's stack frame:
 * - called with nothing of the engine on the stack (from the program's own
 *   code between loop iterations), the event is applied before the call
 *   returns, after any event already queued: AC_OK, AC_UNHANDLED or AC_FAILED;
 * - called from a handler, an output callback or an effect of this session,
 *   the event is raised: applied right after the current event, before
 *   anything that arrived from outside; returns AC_QUEUED;
 * - called from any callback of the loop (a timer, an fd watch, a post, and
 *   so anything that runs while the loop applies another session's events), it
 *   is queued and applied as soon as that callback returns; returns AC_QUEUED.
 * AC_EUNKNOWN_EVENT for an event the spec does not declare, AC_ENOMEM.
 * AC_EIO when the session's journal could not be written (checked after each
 * event and when the session settles): the session then fails for good -
 * what runs is cancelled, the status is ended, ac_session_error says why
 * ("cannot write journal 'PATH': ...") and every later event is refused
 * with AC_EIO, unapplied, as no event is applied unrecorded. Loop
 * thread only: from other threads use ac_session_post_threadsafe(). */
int ac_session_post(ac_session *s, const char *event, void *data, int64_t t_ms);
/* THREAD-SAFE. Queues the event for the session and wakes its engine's loop,
 * which applies it on the loop thread, after the events already queued. Events
 * posted by one thread are applied in the order it posted them; each is
 * journaled once. t_ms 0 stamps the time of this call. Returns AC_QUEUED,
 * AC_EUNKNOWN_EVENT, AC_ENOMEM, or AC_EINVAL for an engine without a loop.
 * The session must outlive the call: stop posting threads (or otherwise order
 * their last post before it) before ac_session_free(); events still queued
 * for a freed session are dropped. */
int ac_session_post_threadsafe(ac_session *s, const char *event, void *data, int64_t t_ms);
/* Conveniences. */
int ac_session_send(ac_session *s, const char *user_text);
/* Ends the session (the spec's `cancel`: the shipped spec goes to Cancelled); stops
 * everything before returning. */
int ac_session_cancel(ac_session *s);
/* Stops the turn under way and keeps the session (the spec's `turn.cancel`: back at rest,
 * the turn recorded as AC_TURN_CANCELLED). AC_UNHANDLED when no turn runs. */
int ac_session_cancel_turn(ac_session *s);

/* Name of the active state of `machine` ("session", "agent", "process"), or NULL. */
const char *ac_session_state(const ac_session *s, const char *machine);

/* What a turn is. A turn runs while the root machine is in a state that invokes another
 * machine (the shipped spec's Running, which invokes `agent`); it ends when the root machine
 * leaves that state, however it leaves it (a self-transition ends one turn and starts the
 * next). The state is read from the spec's tables, never from its name. A spec whose root
 * machine invokes nothing runs a turn in each root state that is neither its initial state,
 * a terminal one, nor one its initial state leads to (its rest). Everything below derives
 * from this one definition. */
bool ac_session_in_turn(const ac_session *s);
/* True when nothing runs: no turn is under way (at rest, paused) or the session ended. */
bool ac_session_settled(const ac_session *s);
/* True when the session ended: its root machine is in a terminal state, or it failed for
 * good (its journal could not be written, ac_session_fail). */
bool ac_session_ended(const ac_session *s);
/* Where the session stands. A number is never reused.
 * ac_session_status returns IDLE, RUNNING, PAUSED or ENDED. FAILED, CANCELLED and COMPLETED
 * are how a session's status read when it also told how the last turn ended; they are no
 * longer returned (a failed or cancelled turn leaves the session IDLE, and a session that
 * ended is ENDED): ac_session_last_turn tells how the last turn ended, ac_session_get_end how
 * the session did. ac_session_status_name still names them. */
enum ac_session_status {
    AC_SESSION_IDLE = 0,    /* at rest: waiting for a message (the last turn ended, or none ran) */
    AC_SESSION_RUNNING = 1, /* a turn is under way (ac_session_in_turn) */
    AC_SESSION_FAILED = 2,  /* no longer returned: AC_TURN_FAILED, or AC_SESSION_ENDED */
    AC_SESSION_CANCELLED = 3, /* no longer returned: AC_TURN_CANCELLED, or AC_SESSION_ENDED */
    AC_SESSION_COMPLETED = 4, /* no longer returned: AC_SESSION_ENDED */
    AC_SESSION_PAUSED = 5,    /* at rest in a state that takes the event `resume` */
    AC_SESSION_ENDED = 6      /* ended (ac_session_ended); a NULL session too */
};
enum ac_session_status ac_session_status(const ac_session *s);
/* "idle", "running", "paused", "ended" (and "failed", "cancelled", "completed"). */
const char *ac_session_status_name(enum ac_session_status status);
/* How a turn ended. A number is never reused. */
enum ac_turn_outcome {
    AC_TURN_NONE = 0,        /* no turn ended yet */
    AC_TURN_COMPLETED = 1,   /* it ended without a reason to fail */
    AC_TURN_FAILED = 2,      /* a reason was given (fail("..."), a failed LLM call, a budget) */
    AC_TURN_CANCELLED = 3,   /* stopped: the event turn.cancel, or the session's cancel/close */
    AC_TURN_INTERRUPTED = 4, /* paused mid-turn (resume goes on where it stopped) */
    AC_TURN_ROLLED_BACK = 5  /* stopped by the event rollback, its messages removed */
};
/* How the last turn that ended ended; *error (may be NULL) gets why it failed (NULL unless
 * AC_TURN_FAILED). A turn under way is not the last turn until it ends. */
enum ac_turn_outcome ac_session_last_turn(const ac_session *s, const char **error);
/* "none", "completed", "failed", "cancelled", "interrupted", "rolled_back". */
const char *ac_turn_outcome_name(enum ac_turn_outcome outcome);
/* How a session ended (ac_session_get_end). */
typedef struct ac_session_end {
    bool ended;
    const char *how;   /* "completed", "failed", "cancelled" or "closed"; NULL when not ended */
    const char *error; /* "failed": why (borrowed); else NULL */
    int64_t at_ms;     /* the time of the event that ended it (wall clock, ms) */
} ac_session_end;
void ac_session_get_end(const ac_session *s, ac_session_end *out);
/* What to tell whoever sends to an ended session: "session NAME ended (failed: WHY) at
 * 2026-11-26T16:30:21Z; start a new one" (UTC). NAME is `name`, or the session's id when NULL
 * (a server that keys ids by owner shows its caller's). Writes "" and returns 0 when it did
 * not end, else the length (cut to cap). */
size_t ac_session_ended_text(const ac_session *s, const char *name, char *buf, size_t cap);
const char *ac_session_answer(const ac_session *s); /* last final answer, "" if none */
/* Why the last turn failed, or why the session failed for good; NULL if neither. */
const char *ac_session_error(const ac_session *s);
const char *ac_session_partial(const ac_session *s); /* text streamed in the current call */
/* In the output's discarded callback: the text it takes back when that is not the call's
 * partial text (ac_session_partial), and why in *reason (may be NULL): "guardrail_tripped",
 * the text a turn showed before its parallel input guardrail tripped. NULL (and *reason
 * NULL) otherwise: the call's partial text goes (a failed call, docs/serve.md). */
const char *ac_session_discarding(const ac_session *s, const char **reason);
/* Counters of a session, for reports: LLM calls of the current turn (iterations),
 * tool calls recorded in the session, the tokens the provider reported, and the turns that
 * ended since this ac_session was made (a count to tell a turn's end from the session's). */
typedef struct ac_session_stats {
    int64_t iterations;
    size_t tool_calls;
    int64_t input_tokens, output_tokens;
    size_t turns_ended;
    bool has_cost;   /* the engine prices its model (ac_engine_config.prices) */
    double cost_usd; /* what the model calls applied to this ac_session cost, in USD */
} ac_session_stats;
void ac_session_get_stats(const ac_session *s, ac_session_stats *out);
/* The trace id (32 hex digits) of the session's turn under way or of its last one, when its
 * engine has a tracer (agentc/otel.h), so a stream and a trace can be joined; NULL otherwise
 * (untraced, or no turn yet). */
const char *ac_session_trace_id(const ac_session *s);
/* Whole session (machine states, status, conversation, and "toolkits" when the
 * engine has any) as JSON; malloc'd. */
char *ac_session_to_json(const ac_session *s);
/* The session's toolkit states and contexts, {"prefix": {"states": [...],
 * "context": {...}}} (malloc'd; NULL without toolkits), and their restore (for
 * a store that snapshots sessions): the toolkits named take the given states
 * and contexts. 0, or -1 with err and nothing changed. */
char *ac_session_toolkits_json(const ac_session *s);
int ac_session_toolkits_restore(ac_session *s, const char *json, ac_error *err);
/* The session's State (a tool file's "state", docs/state.md) as compact JSON, malloc'd;
 * NULL when the session has none (no declaration and nothing written). */
char *ac_session_state_doc_json(const ac_session *s);

/* ---- replay: a journal against a spec -------------------------------------- */
/* One transition as a journal records it. */
typedef struct ac_replay_step {
    bool present;     /* false: that side has no step here (fewer steps) */
    char machine[64]; /* names as in the spec */
    char from[64];    /* "" for a machine's initial entry */
    char event[64];   /* "" for an eventless step */
    char to[64];
    char guard[256];   /* the guard as text, "" when none; "?" when the journal's
                          format does not record it */
    char actions[256]; /* the transition's actions, ", "-separated; "?" likewise */
    int line;          /* spec line of the transition (recorded: in the spec the
                          session ran; replayed: in the engine's spec) */
} ac_replay_step;

enum ac_replay_status {
    AC_REPLAY_MATCH = 0,    /* every event replayed; with AC_REPLAY_CHECK, every step matched */
    AC_REPLAY_DIVERGED = 1, /* stopped at the first divergence (see the result) */
    AC_REPLAY_ERROR = -1    /* the journal could not be read, or is damaged: a
                               malformed line, a line over the size limit, events
                               missing; with AC_REPLAY_CHECK also a torn last
                               line, an event without its steps line or no event
                               (message in error) */
};

#define AC_REPLAY_CHECK 1u /* compare every event's steps with the recorded ones */

typedef struct ac_replay_result {
    size_t events;       /* events replayed */
    bool same_spec;      /* the journal's spec hash is the engine's */
    bool torn;           /* the journal ends with a torn line (skipped; an
                            error with AC_REPLAY_CHECK) */
    char spec_hash[64];  /* the journal's spec hash */
    size_t event;        /* DIVERGED: 1-based index of the event */
    char event_name[64]; /* DIVERGED: its name */
    size_t step;         /* DIVERGED: 1-based step of that event; 0 when the
                            engine's spec does not declare the event */
    /* DIVERGED with step > 0: the step recorded and the step replayed */
    ac_replay_step recorded, replayed;
    char error[512]; /* ERROR: what went wrong, "path:line: ..." for a bad line */
} ac_replay_result;

/* Rebuilds a session from the journal at journal_path against e's spec, with
 * no I/O: a session is created without posting spawn, every recorded event is
 * posted with its recorded time and payload, and effects do nothing but report
 * their start to the output (also on
 * an engine with a loop); the engine's output callbacks are called as in the
 * run, on the calling thread, except those ac_output marks RUN ONLY. With
 * AC_REPLAY_CHECK, the transitions of each event are compared with
 * the recorded ones by identity (machine, source, event, target, guard text,
 * actions), never by spec line, and the replay stops at the first that
 * differs. The param overrides recorded in the journal's header are not
 * applied: build e with them. Returns an enum ac_replay_status, also filling
 * *out (required). When session is not NULL it gets the replayed session (free
 * it; NULL on error), else the session is freed. */
int ac_session_replay(ac_engine *e, const char *journal_path, unsigned flags, ac_replay_result *out,
                      ac_session **session);
/* The engine the events after an agent change are replayed on: agent is the record's
 * (AC_AGENT_CHANGED) JSON text; the engine stays the caller's (free it after the replay and
 * its session). NULL: the replay goes on with the engine it had. */
typedef ac_engine *(*ac_replay_agent_fn)(void *ud, const char *agent);
/* ac_session_replay that, at each agent change of the journal, goes on with the engine
 * agent_fn gives for the new agent (the session carried over as it stands there, at rest),
 * so each part of the journal is replayed under the agent that recorded it. */
int ac_session_replay_agents(ac_engine *e, const char *journal_path, unsigned flags,
                             ac_replay_agent_fn agent_fn, void *agent_ud, ac_replay_result *out,
                             ac_session **session);

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
/* Sends SIGKILL to the process group of every tool process this program started and that is
 * still running, on every loop. Async-signal-safe: for a signal handler about to _exit, so no
 * tool outlives the program. */
void ac_proc_kill_all_now(void);

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
/* The id of the call whose cached result answered call `id` (ac_engine_set_tool_cache), or
 * NULL when the call ran (or is unknown). Borrowed, valid while the session lives. */
const char *ac_session_tool_call_cached(ac_session *s, const char *id);

/* ---- embedding: per-call decisions ---------------------------------------- */
/* An outside event declared `outside event approve(decisions)` carries per-call decisions
 * as its payload, posted with ac_session_post(s, "approve", decisions, 0):
 *
 *   {"calls": {"c1": "approve", "c2": {"deny": "reason"}, "c3": {"arguments": {...}}}}
 *
 * keyed by the pending calls' ids (ac_session_pending_tool_calls; ac_session_tool_call_name
 * gives each one's tool and arguments). "approve": the call runs; {"deny": "reason"} (or
 * "deny"): it does not run, and its result is "denied by the user: reason"; {"arguments":
 * {...}}: it runs with these arguments instead of the model's, which the conversation keeps,
 * and its result begins "arguments edited by the user: {...}". A pending call the decisions
 * do not name is approved (as by the event without a payload). The spec's apply_decisions
 * action applies them, from the journaled event, so a replay applies them too.
 * ac_session_post checks them first, as ac_session_check_decisions does, and refuses ones
 * that do not fit (an unknown call id, a bad shape, edited arguments the tool's schema
 * refuses) with AC_EINVAL: nothing is applied or journaled, the session still waits.
 * ac_session_post_threadsafe cannot check them: a call whose decision has another shape then
 * fails without running ("not run: the user's decision for it was not understood"), an edit the
 * schema refuses fails it too ("invalid arguments: ..."), and ids that are not pending are
 * ignored. */

/* Whether the spec declares `event` an outside event that carries decisions. */
int ac_session_event_takes_decisions(const ac_session *s, const char *event);
/* Checks decisions (a json_t *, borrowed; NULL: none, every pending call approved) for
 * `event` against the session's pending calls. 0, or -1 with the reason in err (may be
 * NULL): "call 'c9' is not pending (pending: c1, c2)", "call 'c3': the edited arguments do
 * not fit the schema of calculator: ...". Loop thread only, like ac_session_post. */
int ac_session_check_decisions(ac_session *s, const char *event, const void *decisions, char *err,
                               size_t errcap);

/* The conversation, oldest message first: message i's content, and its role
 * ("system", "user", "assistant", "tool") in *role when role is not NULL.
 * NULL past the end. */
size_t ac_session_message_count(ac_session *s);
const char *ac_session_message(ac_session *s, size_t i, const char **role);

/* ---- embedding: what a session waits for ----------------------------------- */
/* The events the session can accept now: those with a transition or an internal row in one
 * of its active states, deepest state first, each once (derived from the tables). With
 * outside_only, only the events the spec declares `outside event`. Fills names[0..cap)
 * (names may be NULL to count) and returns how many there are. */
size_t ac_session_accepted_events(const ac_session *s, const char **names, size_t cap,
                                  int outside_only);
enum ac_session_wait {
    AC_WAIT_NONE = 0,    /* settled, or an effect or a queued event can still move it */
    AC_WAIT_OUTSIDE = 1, /* only an event from the outside can move it (see below) */
    AC_WAIT_STUCK = 2    /* nothing can: the spec waits for an event nobody sends */
};
/* What the session waits for. *state gets the deepest active state's name (may be NULL).
 * AC_WAIT_OUTSIDE lists, through ac_session_waiting_events, the spec's outside events
 * the active states accept, or, for a spec that declares none, the events of the deepest
 * state's own rows. A stuck session has already failed, its error naming the state. */
int ac_session_wait_state(const ac_session *s, const char **state);
size_t ac_session_waiting_events(const ac_session *s, const char **names, size_t cap);
/* Fails a session that has not ended with `reason` (it ends: status ended, how "failed",
 * ac_session_error the reason): for an embedder giving up on a session that waits. Nothing is
 * applied to it any more. 0, or -1 when it had ended or failed already. */
int ac_session_fail(ac_session *s, const char *reason);

#endif
