/*
 * metrics.h - counters and histograms of the engines that name them
 * (ac_engine_config.metrics), rendered in the Prometheus text format (version 0.0.4).
 *
 * The metrics (docs/observability.md): agentc_transitions_total{machine,from,to,event},
 * agentc_state_seconds{machine,state}, agentc_turns_total{outcome}, agentc_turn_iterations,
 * agentc_llm_calls_total{provider,model,outcome}, agentc_llm_call_seconds,
 * agentc_time_to_first_token_seconds, agentc_llm_tokens_total{model,type},
 * agentc_tool_calls_total{tool,outcome}, agentc_tool_call_seconds,
 * agentc_tool_cache_{hits,misses,evictions}_total{tool}, agentc_retries_total{class},
 * agentc_compactions_total{strategy}, agentc_sessions{status}, agentc_cost_usd_total{model},
 * agentc_store_notifications_total{direction} and agentc_store_notify_lines_total{outcome}
 * (`agentc serve` on PostgreSQL: wake-ups between workers), agentc_spans_dropped_total and
 * agentc_build_info{version}. No label carries a session id or
 * anything a tenant sent. Loop thread only.
 */
#ifndef AGENTC_METRICS_H
#define AGENTC_METRICS_H

#include <stdint.h>

#include "agentc/agentc.h"

typedef struct ac_metrics ac_metrics;

ac_metrics *ac_metrics_new(void); /* NULL when out of memory */
void ac_metrics_free(ac_metrics *m);

/* The Prometheus text of every metric (malloc'd; NULL when out of memory). spans_dropped: the
 * value of agentc_spans_dropped_total (ac_tracer_dropped of the program's tracer, or 0). */
char *ac_metrics_render(const ac_metrics *m, uint64_t spans_dropped);

#endif
