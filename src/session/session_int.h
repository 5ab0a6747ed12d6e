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
#include "io/loop.h"
#include "llm/provider.h"

/* Effect slots: one per effect index of the spec, per session. */
#define AC_MAX_EFFECTS 64

typedef struct ac_reg_entry {
    char *name;
    int kind; /* 0 guard, 1 action, 2 effect */
    ac_guard_handler guard;
    ac_action_handler action;
    ac_effect_start_handler start;
    ac_effect_stop_handler stop;
} ac_reg_entry;

struct ac_registry {
    ac_reg_entry *v;
    size_t n, cap;
};

typedef struct ac_tool ac_tool; /* src/session/tools_internal.h */

struct ac_engine {
    const ac_fsm_tables *t;
    ac_fsm_tables *owned_tables; /* when loaded from a spec file (freed by caller) */
    ac_fsm_binding binding;
    ac_guard_fn *guards;
    ac_action_fn *actions;
    ac_effect_start_handler *e_start;
    ac_effect_stop_handler *e_stop;
    ac_fsm_plan *plan;      /* what dispatch precomputes from the tables */
    ac_param_value *params; /* t->n_params, after overrides */
    char **param_strings;
    json_t *param_overrides; /* {"name": "value"} as given, for journals */
    ac_loop *loop;
    ac_provider *provider;
    ac_output out;
    int has_output;
    char *system_prompt;
    char *journal_dir; /* ac_engine_config.journal_dir, copied */
    ac_tool **tools;
    size_t n_tools, cap_tools;
    uint64_t rng;
    size_t live_sessions;
    /* cached event indexes */
    /* params the built-in guards read on every evaluation (NULL: not in the spec) */
    const ac_param_value *p_max_iterations, *p_max_retries, *p_compact_threshold;
    uint16_t ev_spawn, ev_user_message, ev_cancel, ev_tool_completed, ev_timer_fired, ev_llm_delta,
        ev_inactivity, ev_compaction_done, ev_compaction_failed, ev_ctx_expanded, ev_ctx_loaded;
};

typedef struct ac_pending_event {
    struct ac_pending_event *next;
    uint16_t type;
    int64_t t_ms;
    json_t *data;
} ac_pending_event;

typedef struct ac_tool_run ac_tool_run; /* state of the run_tools effect */

struct ac_session {
    ac_engine *e;
    char *id;
    ac_fsm fsm;
    ac_conv *conv;
    FILE *journal;
    uint64_t seq; /* events journaled */
    int dispatching;
    ac_pending_event *pending, *pending_tail;
    json_t *steps; /* transitions of the event being dispatched (journal) */
    /* turn state (part of the serialized session) */
    char *status;
    char *answer;
    char *error;
    json_t *queued; /* user messages that arrived while running */
    int compacted_this_plan;
    /* streaming scratch (not serialized: rebuilt from events) */
    char *partial;
    size_t partial_len, partial_cap;
    /* effects */
    uint64_t timer_id[AC_MAX_EFFECTS];
    uint64_t llm_call;
    int64_t llm_started_ms;
    ac_tool_run *tools_run;
    uint64_t compact_timer;
    void *compact_run; /* summarize: the one-off completion in flight */
    int script_cursor;
    void *laters; /* deferred posts (ac_session_post_later), cancelled on free */
    void *userdata;
    int in_free;
    int free_requested; /* ac_session_free during a dispatch: freed once it is done */
};

/* Engine helpers */
uint16_t ac_engine_event_index(const ac_engine *e, const char *name);
const ac_param_value *ac_engine_param(const ac_engine *e, const char *name);
uint64_t ac_engine_rand(ac_engine *e);

/* Session helpers */
int ac_session_post_index(ac_session *s, uint16_t type, json_t *data, int64_t t_ms);
/* Posts from the loop, never synchronously: for effects that finish at once.
 * Pending posts are cancelled when the session is freed. */
void ac_session_post_later(ac_session *s, const char *event, json_t *data);
/* Replay: a session whose spawn event comes from the journal, not posted here. */
ac_session *ac_session_new_replay(ac_engine *e, const char *id, char *err, size_t errcap);
/* Turn state, changed by the built-in actions. */
void ac_session_set_status(ac_session *s, const char *status);
void ac_session_set_answer(ac_session *s, const char *answer);
void ac_session_set_error(ac_session *s, const char *error);

/* Built-in handlers (src/session/handlers.c, effects.c) */
void ac_builtin_handlers(ac_registry *r);
void ac_effects_register(ac_registry *r);

/* tools (src/session/tools_registry.c, tools_run.c, context_tools.c) */
void ac_tools_free_all(ac_engine *e);
void ac_tools_add_defs(ac_engine *e, json_t *spawn_tools);
void ac_run_tools_start(ac_session *s, const ac_param_value *args, size_t nargs,
                        const ac_event *ev);
void ac_run_tools_stop(ac_session *s);
/* True for the internal context tools' names (fixed list, no engine state). */
int ac_tool_is_internal_name(const char *name);

/* compaction (src/session/compact_effect.c) */
void ac_compact_start(ac_session *s, const ac_param_value *args, size_t nargs, const ac_event *ev);
void ac_compact_stop(ac_session *s);
int ac_compact_apply(ac_session *s, json_t *plan, int64_t t_ms, size_t *before, size_t *after);
size_t ac_session_estimate_tokens(ac_session *s);

#endif
