/*
 * toolkits.h - toolkits at run time (toolkits.c): the engine's toolkit
 * definitions, each session's toolkit states and contexts, what a model call
 * offers, whether a call may run, and what a finished call changes.
 *
 * A session's toolkit state is only ever changed by applying events: the
 * spawn event carries the initial states and contexts, and each
 * tool.completed of a toolkit tool carries the toolkit's states after the
 * call and the context keys it wrote ({"toolkit": {"prefix", "states",
 * "context"}}). Replaying a journal therefore rebuilds them exactly.
 */
#ifndef AGENTC_SESSION_TOOLKITS_H
#define AGENTC_SESSION_TOOLKITS_H

#include <jansson.h>
#include <stddef.h>

#include "session/session_int.h"
#include "tools/toolfile.h"

/* Largest AGENTC_CONTEXT value passed to a tool process: Linux refuses a
 * single environment string over 128 KiB (MAX_ARG_STRLEN) with E2BIG. */
#define AC_TOOLKIT_CONTEXT_ENV_MAX (128 * 1024 - 32)

/* The states and contexts of a session's toolkits: {"prefix": {"states": [names, in the
 * order they were turned on], "context": {...}}}. */
typedef struct ac_tk_state {
    json_t *root;
} ac_tk_state;

/* ---- engine ---- */

/* Keeps tf (owned from then on, even on failure) for its toolkits; their
 * engine indexes start at *base. 0, or -1 with err set. */
int ac_toolkits_adopt(ac_engine *e, ac_toolfile *tf, size_t *base, char *err, size_t errcap);
void ac_toolkits_engine_free(ac_engine *e);
size_t ac_toolkits_count(const ac_engine *e);
const ac_toolfile_toolkit *ac_toolkits_def(const ac_engine *e, size_t kit);
/* Binds a C callback to a toolkit tool declared with "callback": true: 1 bound,
 * 0 no such tool (register it as a plain tool), -1 already bound. */
int ac_toolkits_bind_callback(ac_engine *e, const char *name, ac_tool_fn fn, void *ud);

/* The spawn event's "toolkits": {"prefix": {"states": [...], "context": {...}}}
 * of the initial ones; NULL when the engine has no toolkits. */
json_t *ac_toolkits_spawn_json(const ac_engine *e);

/* ---- sessions ---- */

/* From the spawn event's "toolkits" (NULL: the engine's initial ones). */
int ac_toolkits_session_init(ac_session *s, const json_t *spawn);
void ac_toolkits_session_free(ac_session *s);
/* {"prefix": {"states": [...], "context": {...}}}, NULL when there are no toolkits. */
json_t *ac_toolkits_state_json(const ac_session *s);
/* Replaces the states and contexts of the toolkits j names (others keep
 * theirs). 0, or -1 with err set and nothing changed. */
int ac_toolkits_state_restore(ac_session *s, const json_t *j, char *err, size_t errcap);
/* Applies the "toolkit" object of a tool.completed payload, if any. */
void ac_toolkits_apply_event(ac_session *s, const json_t *payload);

ac_tk_state *ac_tk_state_clone(const ac_tk_state *st);
void ac_tk_state_free(ac_tk_state *st);

/* ---- calls ---- */

/* NULL when t may run in st, else the reason in buf (Yggdrasil's order:
 * missing required states, forbidden states, missing required context). */
const char *ac_toolkits_unavailable(const ac_tk_state *st, const ac_tool *t, char *buf, size_t cap);
/* The message for a call to a name that is no tool: unknown toolkit, or no
 * such tool in a known toolkit, or a plain unknown tool. */
void ac_toolkits_unknown(const ac_engine *e, const char *name, char *buf, size_t cap);
/* Arguments against the live enums of t's "x-enum-from" parameters: NULL when
 * fine, else the reason in buf. */
const char *ac_toolkits_check_args(const ac_tk_state *st, const ac_tool *t, const json_t *args,
                                   char *buf, size_t cap);
/* The JSON text of t's toolkit context in st (malloc'd), NULL for other tools. */
char *ac_toolkits_context_text(const ac_tk_state *st, const ac_tool *t);
/* After a call of toolkit tool t finished with *ok and *content (owned, may be
 * replaced): a tool that updates the context must have printed {"result",
 * "context"}; the update is checked against context_schema (a violation makes
 * the call fail and changes nothing); on success the enables/disables and the
 * context update are applied to st and *delta gets the event's "toolkit"
 * object (NULL otherwise). */
void ac_toolkits_after_call(ac_tk_state *st, const ac_tool *t, int *ok, char **content,
                            json_t **delta);

/* The request's tool offer (request.h) for session ud. */
int ac_toolkits_offer(void *session, const char *name, json_t **schema);
/* For ac_toolname_from_wire: does session ud's conversation have a tool named display? */
int ac_toolkits_known_name(void *session, const char *display);

#endif
