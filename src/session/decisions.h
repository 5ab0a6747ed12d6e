/*
 * decisions.h - per-call decisions inside the engine (decisions.c): the built-in action
 * apply_decisions, and the arguments run_tools runs an edited call with.
 */
#ifndef AGENTC_SESSION_DECISIONS_H
#define AGENTC_SESSION_DECISIONS_H

#include "session/session_int.h"

/* The action apply_decisions: denies the calls the event's decisions deny and records the
 * edited arguments; the calls it does not deny are left to run_tools. */
void ac_decisions_apply(ac_session *s, const ac_event *ev);
/* Drops the recorded edits: the model's reply brings new calls (ids may be used again). */
void ac_decisions_forget(ac_session *s);
/* The arguments call `id` runs with when the user edited them (compact JSON), else NULL. */
const char *ac_decisions_arguments(const ac_session *s, const char *id);

#endif
