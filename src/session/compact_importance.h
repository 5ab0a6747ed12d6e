/*
 * compact_importance.h - the "importance" compaction strategy's plan
 * (compact_importance.c), carried out by ac_compact_apply (compact_effect.c).
 *
 * Within the token budget it keeps user and assistant messages, the latest
 * `keep` turns, tool errors, the results a later assistant message refers to
 * (it repeats one of their values: a word of at least 3 characters with a
 * digit), the results of calls that write the State (an "_outputPath"
 * argument, or one their tool prescribes), internal rounds, and anything pinned (the spec's pin
 * action: AC_MSG_PINNED on the result or on the message that made the call). Every other tool
 * result becomes a one-line stub, "[result of NAME dropped: 12 KB]"; its record keeps the full
 * result (load_tool_calls brings it back). Calls and results stay where they are, so none is ever
 * separated. When the stubs do not bring the estimate under 3/4 of the budget, the results kept
 * only because they were referenced or write the State are stubbed too, oldest first.
 */
#ifndef AGENTC_SESSION_COMPACT_IMPORTANCE_H
#define AGENTC_SESSION_COMPACT_IMPORTANCE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "session/session_int.h"

/* The plan {"strategy": "importance", "stub": [{"id": message id, "text": stub}, ...]}, or
 * NULL when no result is worth a stub. budget: the estimated tokens that trigger compaction
 * (compact_threshold; 0: none). */
json_t *ac_compact_plan_importance(ac_session *s, size_t keep, int64_t budget);

#endif
