/* metrics_int.h - what the GenAI mapping (genai.c) records in a metrics registry. */
#ifndef AGENTC_OBS_METRICS_INT_H
#define AGENTC_OBS_METRICS_INT_H

#include "agentc/metrics.h"

enum ac_metric {
    AC_M_TRANSITIONS,
    AC_M_STATE_SECONDS,
    AC_M_TURNS,
    AC_M_TURN_ITERATIONS,
    AC_M_LLM_CALLS,
    AC_M_LLM_SECONDS,
    AC_M_TTFT,
    AC_M_TOKENS,
    AC_M_TOOL_CALLS,
    AC_M_TOOL_SECONDS,
    AC_M_RETRIES,
    AC_M_COMPACTIONS,
    AC_M_SESSIONS,
    AC_M_COST,
    AC_M_TOOL_CACHE_HITS,
    AC_M_TOOL_CACHE_MISSES,
    AC_M_TOOL_CACHE_EVICTIONS,
    AC_M_COMPACTION_SAVED,
    AC_M_STORE_NOTIFICATIONS,
    AC_M_STORE_NOTIFY_LINES,
    AC_M_STORE_BLOCKING,
    AC_M_COUNT
};

/* Adds v to a counter or gauge (v may be negative for a gauge); labels: the family's label
 * values in order (NULL: none). m NULL: nothing. */
void ac_metrics_add(ac_metrics *m, int metric, const char *const *labels, double v);
/* One observation of a histogram. */
void ac_metrics_observe(ac_metrics *m, int metric, const char *const *labels, double v);

#endif
