/*
 * session_int.h - engine and session internals shared by the src/session files
 * and the effect implementations.
 */
#ifndef AGENTC_SESSION_INT_H
#define AGENTC_SESSION_INT_H

#include <jansson.h>
#include <stdio.h>

#include "agentc/agentc.h"
#include "context/conversation.h"
#include "io/idmap.h"
#include "io/loop.h"
#include "llm/provider.h"
#include "session/payload.h"
#include "session/sink.h"
#include "session/store_hooks.h"

/* Effect slots: one per effect index of the spec, per session. */
#define AC_MAX_EFFECTS 64

typedef struct ac_reg_entry {
    char *name;
    int kind;    /* 0 guard, 1 action, 2 effect */
    int builtin; /* one of ours (its contract applies), not a program's own */
    ac_guard_handler guard;
    ac_action_handler action;
    ac_effect_start_handler start;
    ac_effect_stop_handler stop;
    ac_effect_start_handler report; /* may be NULL: see ac_registry_effect_reporting */
} ac_reg_entry;

struct ac_registry {
    ac_reg_entry *v;
    size_t n, cap;
    int loading_builtin; /* while ac_registry_new registers the built-in handlers */
};

typedef struct ac_tool ac_tool;                 /* src/session/tools_internal.h */
typedef struct ac_remote_inbox ac_remote_inbox; /* posts from other threads (session.c) */

struct ac_engine {
    const ac_fsm_tables *t;
    ac_fsm_binding binding;
    ac_guard_fn *guards;
    ac_action_fn *actions;
    ac_effect_start_handler *e_start;
    ac_effect_stop_handler *e_stop;
    ac_effect_start_handler *e_report; /* NULL where an effect reports nothing */
    ac_fsm_plan *plan;                 /* what dispatch precomputes from the tables */
    /* the spec's t->n_params, then the defaults of the params the built-in handlers it uses
     * read and it does not declare (contracts.c); after overrides */
    ac_param_value *params;
    uint16_t n_params;
    char **param_strings;
    json_t *param_overrides; /* {"name": "value"} as given, for journals */
    ac_loop *loop;
    ac_provider *provider;
    ac_output out;
    int has_output;
    int holds_text;      /* an output guardrail: a turn's text waits for it (guardrail.c) */
    int retracts_text;   /* an input guardrail: a turn's text shown is kept to retract it */
    int custom_handlers; /* a guard, action or effect the program registered is bound: it may
                            read ev->data, so a typed payload is made JSON for it */
    char *system_prompt;
    char *journal_dir; /* ac_engine_config.journal_dir, copied */
    /* what tool processes never inherit (tool_env.c): variables by name, and
     * variables holding one of the provider's secrets (util/secrets.h) */
    char **secrets;
    char *api_key_env;
    ac_remote_inbox *remote; /* posts from other threads; NULL without a loop */
    ac_tool **tools;
    size_t n_tools, cap_tools;
    /* the tools by name and by the name the model sees (tools_registry.c) */
    ac_idmap tools_by_name, tools_by_wire;
    struct ac_tk_engine *toolkits; /* toolkit definitions (toolkits.c), NULL when none */
    uint64_t rng;
    /* params the built-in handlers read, bound once (contracts.c guarantees each one a
     * bound built-in handler needs; NULL only when no such handler is bound) */
    const ac_param_value *p_max_iterations, *p_max_retries, *p_compact_threshold, *p_context_window,
        *p_max_tokens, *p_thinking_budget, *p_stall_timeout, *p_call_timeout, *p_connect_timeout,
        *p_state_in_context, *p_state_context_max;
    /* structured output (ac_engine_config.output_schema): its text, checked at engine start
     * and given to each session in the spawn event; NULL when none is configured */
    char *output_schema_text;
    const ac_param_value *p_output_retries;
    /* cached event indexes */
    uint8_t *turn_state; /* per state: 1 where turns run (turn.c) */
    uint16_t ev_turn_cancel, ev_resume;
    uint16_t ev_spawn, ev_user_message, ev_cancel, ev_tool_completed, ev_timer_fired, ev_inactivity,
        ev_compaction_done, ev_compaction_failed, ev_ctx_expanded, ev_ctx_loaded;
    char *tool_choice;      /* the request setting when it names a tool: checked at session start */
    struct ac_mcp_set *mcp; /* MCP servers of the tool files (tools_mcp.c), NULL: none */
    struct ac_spec_rt *spec_rt; /* comparison guards, actions with arguments, timers (spec_rt.c) */
    json_t *state_decl; /* a tool file's "state" ({"initial", "schema"}), NULL: none (state.h) */
    struct ac_obs_engine *obs; /* traces (src/obs/obs.h), NULL when not traced */
    struct ac_price *price;    /* its model's prices (src/obs/cost.h), NULL: none */
    const struct ac_subagent_opener *subagents; /* ac_engine_config.subagents (borrowed) */

    /* engine-scoped tool results (tool_cache.h), or NULL */
    struct ac_tool_cache *tool_cache;
};

/* An event waiting in a session's queue (session.c). */
typedef struct ac_queued_event {
    struct ac_queued_event *next;
    uint16_t type;
    uint16_t origin; /* effect index + 1 of the effect that queued it, 0: none */
    int64_t t_ms;
    json_t *data;
    ac_payload pl; /* typed (pl.kind != AC_PAYLOAD_NONE): data is NULL, pl.text is text[] */
    char text[];
} ac_queued_event;

typedef struct ac_event_queue {
    ac_queued_event *head, *tail;
} ac_event_queue;

typedef struct ac_tool_run ac_tool_run; /* state of the run_tools effect */

struct ac_session {
    ac_engine *e;
    char *id;
    ac_fsm fsm;
    ac_conv *conv;
    struct ac_journal *journal; /* NULL when not journaled (src/session/journal.h) */
    int journal_failed;         /* it could not be written: the session failed (session.c) */
    uint64_t seq;               /* events applied (numbered in the journal) */
    int draining;               /* drain() runs: what is posted now is raised */
    const ac_payload *payload;  /* the typed payload of the event being applied, NULL: none */
    uint16_t payload_type;      /* and that event's type (ac_event_payload) */
    ac_event_queue raised;      /* posted while dispatching: applied next */
    ac_event_queue inbox;       /* from I/O callbacks, other threads and callers, in order */
    ac_loop_task drain_task;
    uint16_t current_effect; /* index + 1 of the effect whose start or stop handler runs */
    /* replay (src/session/replay.c): effects do nothing, and each step of
     * the events applied goes to step_fn when it is set */
    int replaying;
    /* trace context (ac_session_set_traceparent): a received parent, for the next turn, and
     * the trace id of the turn under way or the last one when it came from a user_message or
     * a received parent ("" otherwise) */
    char tp_trace[33], tp_span[17], tp_flags[3], turn_trace[33];
    /* the received parent of the turn under way and its flags, forwarded as they came on its
     * model and MCP requests when the session is not traced ("": none); the turn states'
     * entries (ac_fsm.counted_entries) when the parent came, and when its turn began */
    char turn_parent[17], turn_flags[3];
    uint32_t tp_entries, turn_entries;
    ac_trace_fn step_fn;
    void *step_ud;
    /* turn state (part of the serialized session) */
    char *answer;
    char *error; /* the running turn's reason to fail (or the session's): turn.c */
    enum ac_turn_outcome last_outcome; /* how the last turn ended (turn.c) */
    char *last_error;                  /* why it failed, NULL unless it did */
    int turn_mark;                     /* AC_TURN_MARK_*: what stopped the running turn */
    int end_how;                       /* AC_END_*: how the session ended, 0 while it runs */
    int64_t ended_ms;                  /* when it ended */
    size_t turns_ended;                /* since this ac_session was made (not serialized) */
    json_t *queued;                    /* user messages that arrived while running */
    json_t *pending_records; /* sub-agent records made during a dispatch, applied after it */
    char *turn_start;        /* id of the message that began the current turn, NULL between turns */
    int compacted_this_plan;
    int output_rejections; /* final answers refused by the output schema in this turn */
    /* structured output, from the spawn event (so a replay checks answers as the run did):
     * the schema compiled and its text for the provider; NULL when none */
    struct ac_schema *output_schema;
    char *output_schema_text;
    /* streaming scratch (not serialized: rebuilt from events) */
    char *partial;
    size_t partial_len, partial_cap;
    char *held; /* the turn's text an output guardrail holds (guardrail.c) */
    size_t held_len, held_cap;
    char *shown; /* the turn's text shown, that an input guardrail's trip retracts */
    size_t shown_len, shown_cap;
    int retracting;               /* in the discarded output of that retraction */
    void *provider_state;         /* the provider's per-session state (sink.h) */
    struct ac_obs *obs;           /* the session's open spans (src/obs), NULL when not traced */
    double cost_usd;              /* of the model calls applied (cost.h), with e->price */
    struct ac_tk_state *toolkits; /* toolkit states and contexts (toolkits.c), NULL when none */
    struct ac_state *state;       /* the State (state.h), from the spawn event */

    /* session-scoped tool results (tool_cache.h), or NULL; call id -> the id of the call
     * whose cached result answered it, or NULL */
    struct ac_tool_cache *tool_cache;
    json_t *cache_hits;

    const struct ac_session_hooks *hooks; /* durable sessions (src/store), NULL: none */
    void *hooks_ud;
    size_t turn_base; /* model calls completed before a restore (the script position) */
    /* the engine's tool-list revision the offered tools were last checked against
     * (tools_mcp.c: ac_mcp_tools_rev); not serialized: a restored session checks once */
    uint64_t tools_rev;
    struct ac_spec_facts *spec_facts; /* what the spec's session facts need (spec_rt.c) */
    char *agent;        /* what it runs with (agentc.h: ac_session_agent), NULL: none recorded */
    json_t *call_edits; /* call id -> the arguments the user edited (decisions.c), or NULL */
    /* a child session (subagent.c): its parent call as spawn gave it ({"session", "call",
     * "path"} text), its agent path and level (1 under a session of its own); the call that
     * waits for it (NULL: none, or detached) */
    char *parent;
    char *agent_path;
    int depth;
    struct ac_subcall *sub;
    char *handoff_text;             /* what ac_session_handoff last gave (handoff.c) */
    struct ac_client_tools *client; /* its client tools and their caller (client_tools.c) */
    struct ac_tool_run *tool_run;   /* the run_tools effect running now (tools_run.c), or NULL */
    struct ac_subcall *parked;      /* its sub-agent calls a pause stopped, their children paused */
    uint16_t dispatching;           /* the event being dispatched, + 1 (0: none) */
    void *userdata;
    /* each effect's own state, by effect index, typed in the effect's file: one slot per
     * effect the spec declares (at least one), allocated with the session */
    void *effect_state[];
};

/* The agent record (agent_record.c): spawn's "agent" taken; the options' agent checked (0,
 * its parsed object given in *agent when agent is not NULL (NULL: none), the caller's; or -1
 * with err filled); the record "agent.changed" (data stolen) applied; the snapshot part. */
void ac_session_agent_from_spawn(ac_session *s, const json_t *spawn_data);
int ac_session_agent_check(const ac_session_options *opts, json_t **agent, char *err,
                           size_t errcap);
int ac_session_agent_post(ac_session *s, json_t *data, int64_t t_ms);
/* A sub-agent call's record (AC_AGENT_STARTED, AC_AGENT_DONE; data an object, stolen): applied
 * as the agent change's is, outside any dispatch of s (AC_EINVAL from one), mid-turn too. */
int ac_session_call_record(ac_session *s, const char *name, json_t *data, int64_t t_ms);
/* The same from inside a dispatch of s (a call its effects stop): queued, and applied right after
 * the event being applied (ac_session_flush_records, session.c), or dropped if s is freed. */
void ac_session_queue_record(ac_session *s, const char *name, json_t *data);
void ac_session_flush_records(ac_session *s);
json_t *ac_session_agent_snapshot_save(const ac_session *s);
int ac_session_agent_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap);
/* A child session's parent (subagent.c): spawn's "parent" taken; the spawn payload's of opts
 * (a new reference, NULL: none); the snapshot part; the child's turn ended or it ended (the
 * call waiting for it completes); its fields freed. */
void ac_subagent_from_spawn(ac_session *s, const json_t *spawn_data);
json_t *ac_subagent_spawn_json(const ac_session_options *opts);
json_t *ac_subagent_snapshot_save(const ac_session *s);
int ac_subagent_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap);
void ac_subagent_child_finished(ac_session *s);
/* The turn of s ended other than by a pause: the children its pause kept are let go. */
void ac_subagent_unpark(ac_session *s);
void ac_subagent_session_free(ac_session *s);
/* 1 when the session's journal or store could not be written (the session failed), else 0
 * (session.c). */
int ac_session_journal_failed(ac_session *s);

/* Fills err (may be NULL) with code and text; a text that starts "path:line:col:" also gives
 * the location. */
void ac_error_set(ac_error *err, int code, const char *text);

/* Engine helpers (and ac_engine_event_index, sink.h) */
const ac_param_value *ac_engine_param(const ac_engine *e, const char *name);
uint64_t ac_engine_rand(ac_engine *e);

/* ac_session_enqueue (sink.h) is the sink of every event effects and providers report: queued,
 * never applied inside the caller's frame (see session.c). origin is the value
 * ac_session_origin() gave when the effect started (0: none); when that effect stops, what it
 * queued and was not applied yet is dropped. */
/* From an effect's start or stop handler: its origin for ac_session_enqueue(), and the
 * slot of its per-session state (NULL until the effect stores something; the effect frees
 * it in its stop handler). */
uint16_t ac_session_origin(const ac_session *s);
void **ac_session_effect_state(ac_session *s);
/* Drops what the effect of `origin` queued (the engine calls it when an effect stops). */
void ac_session_forget(ac_session *s, uint16_t origin);
ac_remote_inbox *ac_remote_inbox_new(ac_engine *e);
void ac_remote_inbox_close(ac_remote_inbox *r); /* the engine is being freed */
/* Replay: a traced session whose effects do nothing (even on an engine with a
 * loop), with no journal, and whose spawn event comes from the journal being
 * replayed, not posted here. */
ac_session *ac_session_new_replay(ac_engine *e, const char *id, char *err, size_t errcap);
/* Calls fn for every trace record of the events applied from now on (not
 * those of the start); fn NULL stops it. Replay sessions only. */
void ac_session_set_step_hook(ac_session *s, ac_trace_fn fn, void *ud);
/* What a turn is (turn.c): the turn states of the engine's spec, built once; what the
 * running turn's actions said of it and how the session ended, from the actions that know;
 * and, around each event applied, whether a turn ended (recorded, reported) or began. */
enum { AC_TURN_MARK_CANCELLED = 1, AC_TURN_MARK_ROLLED_BACK = 2 };
enum { AC_END_COMPLETED = 1, AC_END_FAILED = 2, AC_END_CANCELLED = 3, AC_END_CLOSED = 4 };
typedef struct ac_turn_probe {
    int in_turn, ended, paused;
    uint32_t turns; /* the fsm's counted entries: turn states entered */
} ac_turn_probe;
int ac_turn_states_build(ac_engine *e);
/* The spec's rest state: the one state of the root machine a turn returns to (the target of
 * a transition from a turn state that is no turn state, not terminal, and not paused: it
 * takes no `resume`). AC_FSM_NONE when there is not exactly one. */
uint16_t ac_turn_rest_state(const ac_engine *e);
void ac_turn_mark(ac_session *s, int mark);
void ac_session_mark_end(ac_session *s, int how);
void ac_turn_before_event(ac_session *s, ac_turn_probe *p);
void ac_turn_after_event(ac_session *s, const ac_turn_probe *before, int64_t t_ms);
/* The session fails for good (ac_session_fail, a journal that cannot be written): the turn
 * under way fails with why, and the session ends failed at t_ms. */
void ac_turn_fail_session(ac_session *s, const char *why, int64_t t_ms);
json_t *ac_turn_json(const ac_session *s);     /* {"outcome", "error"?} */
json_t *ac_turn_end_json(const ac_session *s); /* {"how", "error"?, "at_ms"} */
/* Turn state, changed by the built-in actions. */
void ac_session_set_answer(ac_session *s, const char *answer);
void ac_session_set_error(ac_session *s, const char *error);

/* Built-in handlers (src/session/handlers.c, effects.c) */
void ac_builtin_handlers(ac_registry *r);
void ac_effects_register(ac_registry *r);
/* An effect whose start the output reports: `report` gets the start's arguments and event
 * in the run and in replay alike, just before `start` (which replay does not call). It
 * reads session data only and calls output callbacks, so a replay reports what the run
 * did (agentc.h's ac_output). ac_registry_effect is this with no report. */
int ac_registry_effect_reporting(ac_registry *r, const char *name, ac_effect_start_handler start,
                                 ac_effect_stop_handler stop, ac_effect_start_handler report);

/* tools (src/session/tools_registry.c, tools_run.c, context_tools.c) */
void ac_tools_free_all(ac_engine *e);
/* Stops and frees the engine's MCP servers (tools_mcp.c). */
void ac_mcp_set_free(ac_engine *e);
/* Adds "mcp": [{"name", "transport", "protocol"}] to a spawn payload (for the journal). */
void ac_mcp_spawn_info(ac_engine *e, json_t *payload);
void ac_tools_add_defs(ac_engine *e, json_t *spawn_tools);
void ac_run_tools_start(ac_session *s, const ac_param_value *args, size_t nargs,
                        const ac_event *ev);
void ac_run_tools_stop(ac_session *s);
/* Client tools (client_tools.c; agentc.h: ac_session_options.client_tools). The options'
 * list checked against the engine's tools: 0, or -1 with err. */
int ac_client_tools_check(const ac_engine *e, const ac_session_options *opts, char *err,
                          size_t errcap);
/* The list as the spawn event carries it, [{name, description, parameters}], or NULL: none. */
json_t *ac_client_tools_spawn_json(const ac_session_options *opts);
/* The session's client tools from its spawn event's "client_tools" (a replay's too). */
void ac_client_tools_from_spawn(ac_session *s, const json_t *spawn_data);
/* Appends their definitions to defs (a tools.changed list keeps them). */
void ac_client_tools_add_defs(const ac_session *s, json_t *defs);
/* The snapshot's part: the list ([] when none), and its restore. */
json_t *ac_client_tools_snapshot_save(const ac_session *s);
int ac_client_tools_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap);
void ac_client_tools_free(ac_session *s);
/* True for the internal context tools' names (fixed list, no engine state). */
int ac_tool_is_internal_name(const char *name);

/* compaction (src/session/compact_effect.c) */
void ac_compact_start(ac_session *s, const ac_param_value *args, size_t nargs, const ac_event *ev);
void ac_compact_stop(ac_session *s);
int ac_compact_apply(ac_session *s, json_t *plan, int64_t t_ms, size_t *before, size_t *after);
size_t ac_session_estimate_tokens(ac_session *s);

#endif
