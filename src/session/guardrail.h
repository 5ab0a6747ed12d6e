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
/* Binds the guardrail effect at index of e's tables. */
void ac_guardrail_bind(ac_engine *e, uint16_t index);

#endif
