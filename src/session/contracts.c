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
#include <stdio.h>
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

/* ---- payloads: the fields each event carries, and those each built-in handler reads ---- */

#define MAX_FIELDS 12

typedef struct event_fields {
    const char *event;
    const char *fields[MAX_FIELDS]; /* NULL-terminated */
} event_fields;

typedef struct handler_reads {
    int kind; /* 0 guard, 1 action */
    const char *handler;
    const char *fields[MAX_FIELDS];
} handler_reads;

#define TOOL_RESULT                                                                                \
    "id", "ok", "content", "duration_ms", "state_writes", "toolkit", "interrupted", "cached",      \
        "cached_from", "none"

/* The events the providers and tools post (docs/events.md); an event not listed (one the
 * program posts) carries what the program gives it. */
static const event_fields event_payloads[] = {
    {"llm.started", {NULL}},
    {"llm.delta", {"kind", "text", "index", "id", "name", NULL}},
    {"llm.completed",
     {"content", "reasoning", "refusal", "tool_calls", "finish_reason", "usage", "thinking_blocks",
      "response_id", "response_model", NULL}},
    {"llm.failed",
     {"class", "status", "retryable", "message", "retry_after_ms", "interrupted", NULL}},
    {"timer.fired", {"timer", NULL}},
    {"tool.completed", {TOOL_RESULT, NULL}},
    {"context.expanded", {TOOL_RESULT, "by", NULL}},
};

static const handler_reads handler_payload_reads[] = {
    {0, "retryable", {"retryable", NULL}},
    {0, "has_tool_calls", {"tool_calls", NULL}},
    {0, "last_tool_result", {"id", "none", NULL}},
    {1, "append_delta", {"kind", "text", NULL}},
    {1, "record_llm_error", {"message", NULL}},
    {1,
     "record_assistant",
     {"content", "refusal", "reasoning", "tool_calls", "thinking_blocks", NULL}},
    {1, "record_tool_result", {"id", "ok", "content", "duration_ms", "state_writes", NULL}},
};

static const event_fields *payload_of(const char *event)
{
    for (size_t i = 0; i < sizeof event_payloads / sizeof event_payloads[0]; i++)
        if (!strcmp(event_payloads[i].event, event))
            return &event_payloads[i];
    return NULL;
}

static int carries(const event_fields *ef, const char *field)
{
    for (size_t i = 0; i < MAX_FIELDS && ef->fields[i]; i++)
        if (!strcmp(ef->fields[i], field))
            return 1;
    return 0;
}

/* The built-in handler `name` of that kind against the event of transition `row`. */
static void check_reads(const ac_fsm_tables *t, uint16_t row, int kind, const char *name,
                        const ac_payload_check *c)
{
    const ac_fsm_transition *tr = &t->transitions[row];
    const event_fields *ef = payload_of(t->event_names[tr->event]);
    if (!ef || !c->applies(c->ud, kind, name))
        return;
    for (size_t i = 0; i < sizeof handler_payload_reads / sizeof handler_payload_reads[0]; i++) {
        const handler_reads *h = &handler_payload_reads[i];
        if (h->kind != kind || strcmp(h->handler, name))
            continue;
        for (size_t f = 0; f < MAX_FIELDS && h->fields[f]; f++) {
            if (carries(ef, h->fields[f]))
                continue;
            ac_contract_problem p = {kind, name, tr->source, -1, ""};
            snprintf(p.msg, sizeof p.msg,
                     "%s %s reads the payload field \"%s\", which event %s does not carry "
                     "(line %u)",
                     kind ? "action" : "guard", name, h->fields[f], ef->event, tr->line);
            c->report(c->ud, &p);
            return;
        }
    }
}

void ac_payload_contract_check(const ac_fsm_tables *t, const ac_payload_check *c)
{
    for (uint16_t row = 0; row < t->n_transitions; row++) {
        const ac_fsm_transition *tr = &t->transitions[row];
        if (tr->event == AC_FSM_EVENTLESS)
            continue;
        const uint16_t *acts = &t->lists[tr->actions];
        for (uint16_t k = 0; k < acts[0]; k++)
            check_reads(t, row, 1, t->action_names[acts[1 + k]], c);
        for (uint16_t pc = tr->guard; pc != AC_FSM_NONE && pc < t->n_guard_code; pc++) {
            uint16_t op = t->guard_code[pc];
            if (op == AC_G_END)
                break;
            if ((op & AC_G_OPMASK) == AC_G_PRED)
                check_reads(t, row, 0, t->guard_names[op & AC_G_ARGMASK], c);
        }
    }
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
