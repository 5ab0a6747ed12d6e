/*
 * contracts.c - what each built-in handler needs from a spec (gen/contract.h):
 * the params it reads, the events it posts, and for effects the arguments of
 * each use, and the action an effect needs to have run before it.
 * ac_engine_new refuses a spec that lacks one, naming the handler and the param; `agentc check
 * --handlers builtin` reports the same problems at their spec lines. There are no C defaults for
 * spec params: a value the spec does not give is an error, not a guess.
 */
#include "session_int.h"
#include "session/contracts.h"
#include "spec_rt.h"

#include <stdint.h>
#include <string.h>

#define INT AC_PARAM_INT
#define DUR AC_PARAM_DURATION
#define STR AC_PARAM_STRING

const ac_contract ac_builtin_contracts[] = {
    /* guards */
    {"iterations_left", 0, {"max_iterations"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL},
    {"needs_compaction",
     0,
     {"compact_threshold"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL},
    {"retries_left", 0, {"max_retries"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL},
    {"output_retries_left",
     0,
     {"output_retries"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL},
    /* actions */
    {"init_session", 1, {"context_window"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL},
    {"fail_budget", 1, {"max_iterations"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL},
    {"fail_output", 1, {"output_retries"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL},
    /* effects */
    {"inactivity_timer",
     2,
     {NULL},
     {0},
     {"inactivity_timeout"},
     1,
     {DUR},
     {NULL},
     NULL,
     NULL,
     NULL},
    {"backoff_timer", 2, {NULL}, {0}, {"timer.fired"}, 2, {DUR, DUR}, {NULL}, NULL, NULL, NULL},
    {"llm_request",
     2,
     {"max_tokens", "thinking_budget"},
     {INT, INT},
     {"llm.started", "llm.delta", "llm.completed", "llm.failed"},
     3,
     {DUR, DUR, DUR},
     {NULL},
     NULL,
     NULL,
     NULL},
    /* it runs the calls of the model's reply that record_assistant recorded; the context
     * tools (expand_context, load_context) answer with their own events */
    {"run_tools",
     2,
     {NULL},
     {0},
     {"tool.completed"},
     1,
     {INT},
     {"context.expanded", "context.loaded"},
     "record_assistant",
     "the calls recorded",
     "without them nothing would run: add record_assistant to the transition that takes the "
     "model's reply, as spec/agent.fsm does on llm.completed"},
    {"compact",
     2,
     {"stall_timeout", "connect_timeout", "call_timeout", "max_tokens"},
     {DUR, DUR, DUR, INT},
     {"compaction.done", "compaction.failed"},
     3,
     {STR, INT, INT},
     {NULL},
     NULL,
     NULL,
     NULL},
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

int ac_builtin_has_handler(int kind, const char *name)
{
    if (ac_spec_rt_defines(kind, name))
        return 1;
    ac_registry *r = ac_registry_new();
    int has = 0;
    for (size_t i = 0; r && i < r->n && !has; i++)
        has = r->v[i].kind == kind && r->v[i].builtin && strcmp(r->v[i].name, name) == 0;
    ac_registry_free(r);
    return has;
}

const ac_cli_handlers ac_builtin_cli_handlers = {
    ac_builtin_contracts, sizeof ac_builtin_contracts / sizeof ac_builtin_contracts[0],
    ac_builtin_has_handler};
