/*
 * contracts.c - what each built-in handler needs from a spec (gen/contract.h):
 * the params it reads, the events it posts, and for effects the arguments of
 * each use, and the action an effect needs to have run before it.
 * ac_engine_new refuses a spec that lacks one, naming the handler and the param; `agentc check
 * --handlers builtin` reports the same problems at their spec lines. There are no C defaults for
 * spec params: a value the spec does not give is an error, or the default its contract declares
 * (ac_builtin_param_defaults), never a constant in the handler.
 */
#include "session_int.h"
#include "session/contracts.h"
#include "spec_rt.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

#define INT AC_PARAM_INT
#define DUR AC_PARAM_DURATION
#define STR AC_PARAM_STRING

const ac_contract ac_builtin_contracts[] = {
    /* guards */
    {"iterations_left",
     0,
     {"max_iterations"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL}},
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
     NULL,
     {NULL}},
    {"retries_left", 0, {"max_retries"}, {INT}, {NULL}, -1, {0}, {NULL}, NULL, NULL, NULL, {NULL}},
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
     NULL,
     {NULL}},
    /* actions */
    {"init_session",
     1,
     {"context_window"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL}},
    {"fail_budget",
     1,
     {"max_iterations"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL}},
    {"fail_output",
     1,
     {"output_retries"},
     {INT},
     {NULL},
     -1,
     {0},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL}},
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
     NULL,
     {NULL}},
    {"backoff_timer",
     2,
     {NULL},
     {0},
     {"timer.fired"},
     2,
     {DUR, DUR},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL}},
    /* the State goes with each request (state_in_context, 0: not), cut at state_context_max
     * bytes (negative: not cut) */
    {"llm_request",
     2,
     {"max_tokens", "thinking_budget", "state_in_context", "state_context_max"},
     {INT, INT, INT, INT},
     {"llm.started", "llm.delta", "llm.completed", "llm.failed"},
     3,
     {DUR, DUR, DUR},
     {NULL},
     NULL,
     NULL,
     NULL,
     {NULL, NULL, "1", "16000"}},
    /* it runs the calls of the model's reply that record_assistant recorded; the context
     * tools (expand_context, load_context) answer with their own events, expand_context
     * showing context_step more messages when the model does not say how many */
    {"run_tools",
     2,
     {"context_step"},
     {INT},
     {"tool.completed"},
     1,
     {INT},
     {"context.expanded", "context.loaded"},
     "record_assistant",
     "the calls recorded",
     "without them nothing would run: add record_assistant to the transition that takes the "
     "model's reply, as spec/agent.fsm does on llm.completed",
     {"20"}},
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
     NULL,
     {NULL}},
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

static int declares(const ac_fsm_tables *t, int kind, const char *name)
{
    const char *const *names = kind == 0   ? t->guard_names
                               : kind == 1 ? t->action_names
                                           : t->effect_names;
    uint16_t n = kind == 0 ? t->n_guards : kind == 1 ? t->n_actions : t->n_effects;
    for (uint16_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static int has_param(const ac_param_value *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return 1;
    return 0;
}

/* The value of a contract's default, of the param's type. 0, or -1 for a contract's mistake. */
static int default_value(const char *text, int type, ac_param_value *v)
{
    char *end;
    long long ms;
    if (type == AC_PARAM_STRING) {
        v->sval = text;
        return 0;
    }
    if (type == AC_PARAM_DURATION) {
        if (ac_parse_duration_ms(text, &ms) != AC_UNITS_OK)
            return -1;
        v->ival = ms;
        return 0;
    }
    errno = 0;
    v->ival = strtoll(text, &end, 10);
    return errno || end == text || *end ? -1 : 0;
}

size_t ac_builtin_param_defaults(const ac_fsm_tables *t, const ac_param_value *have, size_t n_have,
                                 ac_param_value *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < ac_n_builtin_contracts; i++) {
        const ac_contract *k = &ac_builtin_contracts[i];
        if (!declares(t, k->kind, k->handler))
            continue;
        for (int j = 0; j < AC_CONTRACT_MAX && k->params[j]; j++) {
            ac_param_value v = {k->params[j], k->param_types[j], 0, NULL};
            if (!k->param_defaults[j] || has_param(have, n_have, v.name) ||
                has_param(out, n, v.name) || n == cap ||
                default_value(k->param_defaults[j], v.type, &v) < 0)
                continue;
            out[n++] = v;
        }
    }
    return n;
}

size_t ac_builtin_param_defaults_max(void)
{
    size_t n = 0;
    for (size_t i = 0; i < ac_n_builtin_contracts; i++)
        for (int j = 0; j < AC_CONTRACT_MAX && ac_builtin_contracts[i].params[j]; j++)
            n += ac_builtin_contracts[i].param_defaults[j] != NULL;
    return n;
}

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
