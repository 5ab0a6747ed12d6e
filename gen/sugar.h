/*
 * sugar.h - the v2 forms of the spec language (comparisons, `calls`,
 * actions with arguments, `after` timers), rewritten into the core language
 * before the checks (sugar.c); the ways-out proof (leave.c); the rules of
 * per-call decisions (decisions.c); and the
 * "did you mean" helper of the diagnostics.
 */
#ifndef AGENTC_GEN_SUGAR_H
#define AGENTC_GEN_SUGAR_H

#include "spec.h"

/* Checks and rewrites the v2 forms in place; adds diagnostics. */
void ac_spec_desugar(ac_spec *spec);

/* Every non-terminal state can be left (leave.c); needs the resolved rows. */
void ac_spec_check_leave(ac_spec *spec, const ac_resolved *res);

/* Outside events that carry decisions and apply_decisions go together (decisions.c); needs
 * the resolved rows. */
void ac_spec_check_decisions(ac_spec *spec, const ac_resolved *res);

/* The candidate closest to `name` within a small edit distance, or NULL.
 * `cands` points at the first `const char *` of n entries `stride` bytes apart. */
const char *ac_spec_closest(const char *name, const char *const *cands, size_t n, size_t stride);

#endif
