/*
 * store_hooks.h - what a store (src/store) needs of the sessions it keeps, and no
 * more: the hooks a durable session is followed by, the session made with them,
 * and the few pieces of a session's state that rebuilding and recovering it read
 * or set. The rest of a session stays private to src/session (session_int.h).
 */
#ifndef AGENTC_SESSION_STORE_HOOKS_H
#define AGENTC_SESSION_STORE_HOOKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"

struct ac_payload; /* session/payload.h */

/* Durable sessions (src/store/store_writer.c) follow a session through these hooks; NULL
 * for a session that is not stored. Each is called on the loop thread. */
typedef struct ac_session_hooks {
    /* data: the event's JSON payload; p, when it is typed instead (data NULL; its row's text
     * is ac_payload_text(p)): session/payload.h */
    void (*event)(ac_session *s, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                  const struct ac_payload *p);
    void (*step)(ac_session *s, const ac_trace_rec *r);
    void (*steps_done)(ac_session *s, uint64_t n);
    void (*flush)(ac_session *s);        /* before an effect starts or stops */
    void (*settled)(ac_session *s);      /* a drain left the session settled */
    const char *(*error)(ac_session *s); /* non-NULL: the store could not be written */
    /* before a tool call runs: 0 to run it now, -1 when it could not be recorded, 1 when its
     * record waits for the end of the loop turn's commit: go(ud, ok) is called then (ok 0: not
     * recorded), unless tool_forget(s, ud) came first (the call was stopped) */
    int (*tool_started)(ac_session *s, const char *call_id, const char *name,
                        void (*go)(void *ud, int ok), void *ud);
    void (*close)(ac_session *s);
    void (*tool_forget)(ac_session *s, void *ud);
} ac_session_hooks;

/* A session followed by hooks from its first event (spawn is posted unless replay). */
ac_session *ac_session_new_hooked(ac_engine *e, const char *id, const ac_session_hooks *hooks,
                                  void *hooks_ud, int replay, char *err, size_t errcap);
/* The options' check before a session of engine e is made of them: 0, or -1 with err filled
 * (a system prompt that is not UTF-8: a JSON event cannot carry it; client tools that are
 * malformed or named like one of e's tools; an agent that is not a JSON object). When agent
 * is not NULL, the agent parsed (NULL: none) is given there on success: the caller's, to
 * hand to ac_session_new_hooked_opts (the agent's JSON is parsed once per session). */
int ac_session_opts_check(const ac_engine *e, const ac_session_options *opts, json_t **agent,
                          char *err, size_t errcap);
/* The same, a new session taking opts (may be NULL) into its spawn event; the caller checked
 * them with ac_session_opts_check first, which gave agent (stolen, NULL: none). */
ac_session *ac_session_new_hooked_opts(ac_engine *e, const char *id, const ac_session_hooks *hooks,
                                       void *hooks_ud, const ac_session_options *opts,
                                       json_t *agent, char *err, size_t errcap);

/* The hooks_ud s was made with when it is followed by hooks (borrowed); else NULL. */
void *ac_session_hooks_ud(const ac_session *s, const ac_session_hooks *hooks);

/* The events applied to s (its journal's last event number). */
uint64_t ac_session_seq(const ac_session *s);

/* A snapshot restored into s stands for its first seq events: the journal goes on after. */
void ac_session_set_seq(ac_session *s, uint64_t seq);

/* A rebuilt session goes live: its effects run from now on, and its scripted model (if any)
 * continues after the turn_base model calls it has already made. */
void ac_session_go_live(ac_session *s, size_t turn_base);

/* Turns the engine's output callbacks on or off (a rebuild is not heard again); returns
 * whether they were on, to be given back afterwards. */
int ac_engine_set_output(ac_engine *e, int on);

/* The engine's parameter overrides as given ({"name": "value"}, borrowed; NULL: none), for a
 * stored session's metadata. */
const json_t *ac_engine_param_overrides(const ac_engine *e);

/* Whether the engine's tool `name` may run again after a crash (its tool file says
 * "idempotent", or its MCP server's idempotentHint): the store's recovery asks
 * (tools_registry.c). */
bool ac_tool_idempotent(const ac_engine *e, const char *name);

/* What a turn is (turn.c), for a store reading a journal as recorded: whether the root
 * machine's state st of e's spec is one where turns run, and whether an event ended a turn,
 * from whether one ran before it, whether it entered a turn state (a transition into one, a
 * self-transition included) and whether one runs after it. The live session asks the same. */
bool ac_turn_state(const ac_engine *e, uint16_t st);
bool ac_turn_ended_by(bool in_turn_before, bool entered, bool in_turn_after);

#endif
