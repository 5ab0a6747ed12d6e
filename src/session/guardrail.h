/*
 * guardrail.h - the effect of the spec language's guardrail forms (guardrail.c).
 */
#ifndef AGENTC_SESSION_GUARDRAIL_H
#define AGENTC_SESSION_GUARDRAIL_H

#include "session/session_int.h"

/* 1 when the effect's name is a guardrail's: `guardrail(input, NAME)` or
 * `guardrail(output, NAME)`. */
int ac_guardrail_effect(const char *name);
/* 1 for the events a guardrail effect posts (guardrail.passed, guardrail.tripped). */
int ac_guardrail_posts(const char *ev);
/* 1 when tool is the command of one of the spec's guardrails: it is not offered to the model. */
int ac_guardrail_named(const ac_engine *e, const char *tool);
/* Binds the guardrail effect at index of e's tables. */
void ac_guardrail_bind(ac_engine *e, uint16_t index);

/* A turn's text delta, held until the output guardrail passes (handlers.c). */
void ac_guardrail_hold(ac_session *s, const char *text, size_t n);
/* The last n bytes held go (a model call's partial text, discarded). */
void ac_guardrail_unhold(ac_session *s, size_t n);
/* A turn's text delta shown while an input guardrail may still trip (handlers.c). */
void ac_guardrail_shown(ac_session *s, const char *text, size_t n);
/* Before each event is dispatched (session.c): an output guardrail that passed shows what it
 * held, before the turn's end is reported; one that tripped, or a session at rest, drops it.
 * An input guardrail (parallel) that trips after the turn's text was shown retracts it: the
 * output's discarded, ac_session_discarding saying what and why. */
void ac_guardrail_before_event(ac_session *s, const ac_event *ev);

#endif
