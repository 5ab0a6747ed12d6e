/*
 * contracts.c - what each built-in handler needs from a spec (gen/contract.h):
 * the params it reads, the events it posts, and for effects the arguments of
 * each use. ac_engine_new refuses a spec that lacks one, naming the handler
 * and the param; `agentc check --handlers builtin` reports the same problems
 * at their spec lines. There are no C defaults for spec params: a value the
 * spec does not give is an error, not a guess.
 */
#include "session_int.h"
#include "session/contracts.h"

#include <stdint.h>

#define INT AC_PARAM_INT
#define DUR AC_PARAM_DURATION
#define STR AC_PARAM_STRING

const ac_contract ac_builtin_contracts[] = {
    /* guards */
    {"iterations_left", 0, {"max_iterations"}, {INT}, {NULL}, -1, {0}},
    {"needs_compaction", 0, {"compact_threshold"}, {INT}, {NULL}, -1, {0}},
    {"retries_left", 0, {"max_retries"}, {INT}, {NULL}, -1, {0}},
    {"output_retries_left", 0, {"output_retries"}, {INT}, {NULL}, -1, {0}},
    /* actions */
    {"init_session", 1, {"context_window"}, {INT}, {NULL}, -1, {0}},
    {"fail_budget", 1, {"max_iterations"}, {INT}, {NULL}, -1, {0}},
    {"fail_output", 1, {"output_retries"}, {INT}, {NULL}, -1, {0}},
    /* effects */
    {"inactivity_timer", 2, {NULL}, {0}, {"inactivity_timeout"}, 1, {DUR}},
    {"backoff_timer", 2, {NULL}, {0}, {"timer.fired"}, 2, {DUR, DUR}},
    {"llm_request",
     2,
     {"max_tokens", "thinking_budget"},
     {INT, INT},
     {"llm.started", "llm.delta", "llm.completed", "llm.failed"},
     3,
     {DUR, DUR, DUR}},
    {"run_tools", 2, {NULL}, {0}, {"tool.completed"}, 1, {INT}},
    {"compact",
     2,
     {"stall_timeout", "connect_timeout", "call_timeout", "max_tokens"},
     {DUR, DUR, DUR, INT},
     {"compaction.done", "compaction.failed"},
     3,
     {STR, INT, INT}},
};

const size_t ac_n_builtin_contracts = sizeof ac_builtin_contracts / sizeof ac_builtin_contracts[0];

static const char *const compaction_words[] = {"sliding_window", "clear_tool_results", "summarize",
                                               "importance", NULL};

const ac_param_rule ac_builtin_param_rules[] = {
    {"max_iterations", 1, NULL, "at least one LLM call per turn"},
    {"max_retries", 0, NULL, "a count"},
    {"backoff_initial", 0, NULL, "a delay"},
    {"backoff_max", 0, NULL, "a delay"},
    {"stall_timeout", 0, NULL, "a timeout (0: none)"},
    {"connect_timeout", 0, NULL, "a timeout (0: libcurl's)"},
    {"inactivity_timeout", 0, NULL, "a timeout (0: none)"},
    {"max_parallel_tools", 0, NULL, "a count (0: no limit)"},
    {"compact_threshold", 0, NULL, "a token count (0: never)"},
    {"compaction", 0, compaction_words, NULL},
    {"compaction_keep", 0, NULL, "a count"},
    {"max_tokens", 0, NULL, "a token count (0: the provider's default)"},
    {"thinking_budget", 0, NULL, "a token count (0: off)"},
    {"output_retries", 0, NULL, "a count"},
};

const size_t ac_n_builtin_param_rules =
    sizeof ac_builtin_param_rules / sizeof ac_builtin_param_rules[0];
