/*
 * spec_rt.h - the engine side of the spec language's v2 forms (spec_rt.c):
 * comparison guards, built-in actions with arguments, `after` timers, the
 * session facts, and what a session can accept now (waiting.c).
 */
#ifndef AGENTC_SESSION_SPEC_RT_H
#define AGENTC_SESSION_SPEC_RT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agentc/agentc.h"
#include "agentc/fsm.h"

typedef struct ac_spec_rt ac_spec_rt;

/* Whether the handler of `kind` (0 guard, 1 action, 2 effect) and name is one the spec
 * compiler made, which ac_spec_rt_bind binds. */
int ac_spec_rt_defines(int kind, const char *name);

/* Binds handler `index` of `kind` (0 guard, 1 action, 2 effect) when its name
 * is one the spec compiler made (a comparison, an action with arguments, an
 * `after` timer): 1 bound, 0 not such a name, -1 error (err says why). */
int ac_spec_rt_bind(ac_engine *e, int kind, uint16_t index, const char *name, char *err,
                    size_t errcap);
void ac_spec_rt_free(ac_engine *e);
/* After each event is applied: what the facts remember (turn start, state entry time,
 * the last LLM status). */
void ac_spec_rt_after_event(ac_session *s, const ac_event *ev);
void ac_spec_facts_free(ac_session *s);
/* The facts' record as a snapshot part (snapshot.c): what the facts remember between
 * events (the turn's start, the deepest state's entry time, the last LLM status, class and
 * finish reason); NULL when out of memory. {} when the session has none yet. */
json_t *ac_spec_facts_save(const ac_session *s);
/* Puts back what ac_spec_facts_save gave; AC_OK or AC_EINVAL/AC_ENOMEM with err filled. */
int ac_spec_facts_restore(ac_session *s, json_t *v, char *err, size_t errcap);
/* After the queues drained: a running session that nothing can move any more fails, its
 * error naming the state (waiting.c), dated t_ms (the last event applied). */
void ac_session_check_stuck(ac_session *s, int64_t t_ms);

#endif
