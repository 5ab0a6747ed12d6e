/*
 * testgen_alpha.c - the stimuli `agentc testgen`'s search combines, derived from a spec's
 * tables: the model's answers the scripted provider can give (text, tool calls of the tools the
 * spec names, errors with an HTTP status and Retry-After, a finish reason, usage), params that
 * make a guard's bound small, an output schema, an `after` timer made short, and the outside and
 * engine events (and a state's own timer) posted as a state is entered (--post-at). The guards'
 * facts and operands give the constants: `llm.status == 429` gives status 429,
 * `turn.tool_calls > max_tool_calls` gives max_tool_calls 0 and 1 with one and two calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "testgen_search.h"
#include "util/grow.h"

void tg_alpha_free(tg_alpha *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->s[i].label);
        free(a->s[i].value);
    }
    free(a->s);
    memset(a, 0, sizeof *a);
}

/* Adds a stimulus unless one of that kind and value is there (value stolen). */
static void add(tg_alpha *a, int kind, const char *label, char *value, const char *tool)
{
    for (size_t i = 0; value && i < a->n; i++)
        if (a->s[i].kind == kind && !strcmp(a->s[i].value, value)) {
            free(value);
            return;
        }
    if (!value || a->n >= TG_MAX_ALPHA) {
        free(value);
        return;
    }
    if (ac_grow((void **)&a->s, &a->cap, a->n + 1, sizeof *a->s)) {
        free(value);
        return;
    }
    a->s[a->n++] = (tg_stim){kind, strdup(label), value, tool, AC_FSM_NONE};
}

static char *dump(json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    return s;
}

/* A turn of n calls to `name` with `args` (ids left to the provider unless id_prefix). */
static char *calls_turn(const char *name, const char *args, int n)
{
    json_t *calls = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
    return dump(json_pack("{s:o}", "tool_calls", calls));
}

static char *error_turn(int status, int retryable, int64_t retry_after, const char *partial)
{
    json_t *e = json_pack("{s:i, s:s, s:b}", "status", status, "message", "scripted failure",
                          "retryable", retryable);
    if (e && retry_after >= 0)
        json_object_set_new(e, "retry_after_ms", json_integer(retry_after));
    if (e && partial)
        json_object_set_new(e, "partial", json_string(partial));
    return dump(json_pack("{s:o}", "error", e));
}

#define CALC_ARGS "{\"expression\": \"2 * 3\"}"

static int has_name(const char *const *names, uint16_t n, const char *name)
{
    for (uint16_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

/* The answers every spec run by the built-in handlers can be given. */
static void base_turns(tg_alpha *a, const ac_fsm_tables *t)
{
    add(a, TG_TURN, "a tool call", calls_turn("calculator", CALC_ARGS, 1), NULL);
    add(a, TG_TURN, "two tool calls", calls_turn("calculator", CALC_ARGS, 2), NULL);
    add(a, TG_TURN, "HTTP 503 (retryable)", error_turn(503, 1, -1, NULL), NULL);
    add(a, TG_TURN, "HTTP 400 (not retryable)", error_turn(400, 0, -1, NULL), NULL);
    add(a, TG_TURN, "a streamed part, then HTTP 503", error_turn(503, 1, -1, "half "), NULL);
    add(a, TG_TURN, "a streamed part, then HTTP 400", error_turn(400, 0, -1, "half "), NULL);
    add(a, TG_TURN, "HTTP 429 with Retry-After", error_turn(429, 1, 5, NULL), NULL);
    if (has_name(t->action_names, t->n_actions, "expand_context") ||
        has_name(t->action_names, t->n_actions, "load_context")) {
        static const char x[] = "{\"id\": \"x1\", \"name\": \"expand_context\", \"arguments\": "
                                "\"{}\"}",
                          l[] = "{\"id\": \"l1\", \"name\": \"load_tool_calls\", \"arguments\": "
                                "\"{\\\"ids\\\": [\\\"x1\\\"]}\"}";
        char b[512];
        snprintf(b, sizeof b, "{\"tool_calls\": [%s, %s]}", x, l);
        add(a, TG_TURN, "the context tools, expand first", strdup(b), "builtin:context");
        snprintf(b, sizeof b, "{\"tool_calls\": [%s, %s]}", l, x);
        add(a, TG_TURN, "the context tools, load first", strdup(b), "builtin:context");
    }
    if (has_name(t->guard_names, t->n_guards, "answer_valid")) {
        add(a, TG_SCHEMA, "an output schema",
            strdup("{\"type\": \"object\", \"required\": [\"n\"]}"), NULL);
        add(a, TG_TURN, "an answer the output schema refuses",
            strdup("{\"content\": \"not json\"}"), NULL);
    }
}

/* The params the built-in guards read, made small. */
static void named_guards(tg_alpha *a, const ac_fsm_tables *t)
{
    static const char *const map[][3] = {
        {"iterations_left", "max_iterations", "max_iterations=1"},
        {"needs_compaction", "compact_threshold", "compact_threshold=1\ncompaction_keep=0"},
        {"retries_left", "max_retries", "max_retries=1"},
        {"output_retries_left", "output_retries", "output_retries=0"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        int param = 0;
        for (uint16_t p = 0; p < t->n_params; p++)
            param |= !strcmp(t->params[p].name, map[i][1]);
        if (param && has_name(t->guard_names, t->n_guards, map[i][0])) {
            char label[128];
            snprintf(label, sizeof label, "%s", map[i][2]);
            for (char *nl = strchr(label, '\n'); nl; nl = strchr(nl, '\n'))
                *nl = ',';
            add(a, TG_PARAM, label, strdup(map[i][2]), NULL);
        }
    }
}

/* A count satisfying `fact cmp v` (and the count just past it is tried by another op). */
static int64_t satisfy(int cmp, int64_t v)
{
    return cmp == AC_CMP_GT ? v + 1 : cmp == AC_CMP_LT ? v - 1 : cmp == AC_CMP_NE ? v + 1 : v;
}

/* A tool name the glob matches: its wildcards filled in. */
static void glob_name(const char *glob, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *g = glob; *g && o + 2 < cap; g++) {
        if (*g == '*' || *g == '?')
            out[o++] = 'x';
        else if (*g == '[') {
            out[o++] = g[1] && g[1] != ']' && g[1] != '!' ? g[1] : 'x';
            while (*g && *g != ']')
                g++;
            if (!*g)
                break;
        } else
            out[o++] = *g;
    }
    out[o] = 0;
}

static void comparison(tg_alpha *a, const ac_fsm_tables *t, const ac_fsm_guard_op *op)
{
    char label[160], name[128];
    if (op->operand == AC_GOP_CALLS) {
        glob_name(op->sval, name, sizeof name);
        snprintf(label, sizeof label, "a call of %s (calls \"%s\")", name, op->sval);
        add(a, TG_TURN, label, calls_turn(name, "{}", 1), NULL);
        return;
    }
    int f = op->fact;
    if (op->operand == AC_GOP_PARAM && op->param < t->n_params) {
        const ac_fsm_param *p = &t->params[op->param];
        const char *vals[2] = {p->type == AC_PARAM_DURATION ? "1ms" : "0",
                               p->type == AC_PARAM_DURATION ? NULL : "1"};
        for (int i = 0; i < 2 && p->type != AC_PARAM_STRING; i++)
            if (vals[i]) {
                snprintf(label, sizeof label, "%s=%s", p->name, vals[i]);
                add(a, TG_PARAM, label, strdup(label), NULL);
            }
    }
    if (f == AC_FACT_LLM_STATUS && op->operand == AC_GOP_INT) {
        int64_t v = satisfy(op->cmp, op->ival);
        snprintf(label, sizeof label, "HTTP %lld (%s %lld)", (long long)v, ac_facts[f].name,
                 (long long)op->ival);
        add(a, TG_TURN, label, error_turn((int)v, 1, 5, NULL), NULL);
        snprintf(label, sizeof label, "a streamed part, then HTTP %lld (%s %lld)", (long long)v,
                 ac_facts[f].name, (long long)op->ival);
        add(a, TG_TURN, label, error_turn((int)v, 1, 5, "half "), NULL);
    } else if (f == AC_FACT_LLM_FINISH && op->operand == AC_GOP_STRING) {
        snprintf(label, sizeof label, "an answer with finish reason %s", op->sval);
        add(a, TG_TURN, label,
            dump(json_pack("{s:s, s:s}", "content", "6", "finish_reason", op->sval)), NULL);
    } else if ((f == AC_FACT_TURN_TOOL_CALLS || f == AC_FACT_SESSION_TOOL_CALLS ||
                f == AC_FACT_CALLS_PENDING) &&
               op->operand == AC_GOP_INT) {
        int64_t v = satisfy(op->cmp, op->ival);
        int n = v < 1 ? 1 : v > 8 ? 8 : (int)v;
        snprintf(label, sizeof label, "%d tool calls (%s)", n, ac_facts[f].name);
        add(a, TG_TURN, label, calls_turn("calculator", CALC_ARGS, n), NULL);
    } else if (f >= AC_FACT_TURN_TOKENS_IN && f <= AC_FACT_SESSION_TOKENS_OUT) {
        int64_t v = op->operand == AC_GOP_INT     ? satisfy(op->cmp, op->ival)
                    : op->operand == AC_GOP_PARAM ? t->params[op->param].ival + 1
                                                  : 0;
        snprintf(label, sizeof label, "an answer using %lld tokens (%s)", (long long)v,
                 ac_facts[f].name);
        add(a, TG_TURN, label,
            dump(json_pack("{s:s, s:{s:I, s:I}}", "content", "6", "usage", "input", (json_int_t)v,
                           "output", (json_int_t)v)),
            NULL);
    }
}

/* answer_from_call("tool", "arg"): a call of tool carrying arg. */
static void answer_from_call(tg_alpha *a, const char *action)
{
    char tool[128], arg[128], label[300];
    if (sscanf(action, "answer_from_call(\"%127[^\"]\", \"%127[^\"]\")", tool, arg) != 2)
        return;
    json_t *args = json_pack("{s:s}", arg, "6");
    char *as = dump(args);
    snprintf(label, sizeof label, "a call of %s with its %s", tool, arg);
    add(a, TG_TURN, label, as ? calls_turn(tool, as, 1) : NULL, NULL);
    free(as);
}

/* An `after` timer's param, made short; the model made slow so that it fires first. */
static void after_timer(tg_alpha *a, const ac_fsm_tables *t, const char *ev)
{
    char name[128], label[200];
    if (sscanf(ev, "after(%127[^)])@", name) != 1)
        return;
    for (uint16_t p = 0; p < t->n_params; p++)
        if (!strcmp(t->params[p].name, name)) {
            snprintf(label, sizeof label, "%s=1ms", name);
            add(a, TG_SLOW, label, strdup(label), NULL);
        }
}

/* The guardrail a `guardrail(input|output, NAME)` effect runs: NAME into name, else 0. */
static int guardrail_name(const char *effect, char *name, size_t cap)
{
    const char *c = strchr(effect, ',');
    if (strncmp(effect, "guardrail(", 10) || !c)
        return 0;
    c += strspn(c + 1, " ") + 1;
    snprintf(name, cap, "%.*s", (int)strcspn(c, ")"), c);
    return 1;
}

char *tg_guard_tools(const ac_fsm_tables *t, const char *const *trip, size_t n)
{
    json_t *tools = json_array();
    char name[128];
    for (uint16_t e = 0; e < t->n_effects; e++) {
        if (!guardrail_name(t->effect_names[e], name, sizeof name))
            continue;
        int trips = 0;
        for (size_t i = 0; i < n; i++)
            trips |= !strcmp(trip[i], name);
        json_array_append_new(
            tools, json_pack("{s:s, s:s, s:{s:s}, s:[s, s, s]}", "name", name, "description",
                             "guardrail", "parameters", "type", "object", "command", "sh", "-c",
                             trips ? "cat >/dev/null; echo '{\"pass\": false, \"reason\": "
                                     "\"tripped by the test\"}'"
                                   : "cat >/dev/null; echo '{\"pass\": true}'"));
    }
    if (!json_array_size(tools)) {
        json_decref(tools);
        return NULL;
    }
    return dump(json_pack("{s:o}", "tools", tools));
}

void tg_alpha_derive(tg_alpha *a, const ac_fsm_tables *t)
{
    char name[128], label[200];
    for (uint16_t e = 0; e < t->n_effects; e++)
        if (guardrail_name(t->effect_names[e], name, sizeof name)) {
            snprintf(label, sizeof label, "guardrail %s trips", name);
            add(a, TG_TRIP, label, strdup(name), NULL);
        }
    base_turns(a, t);
    named_guards(a, t);
    for (uint16_t g = 0; t->guard_ops && g < t->n_guards; g++)
        if (t->guard_ops[g].operand != AC_GOP_NONE)
            comparison(a, t, &t->guard_ops[g]);
    for (uint16_t i = 0; i < t->n_actions; i++)
        answer_from_call(a, t->action_names[i]);
    for (uint16_t e = 1; e < t->n_events; e++)
        if (t->event_flags && (t->event_flags[e] & AC_EV_TIMER))
            after_timer(a, t, t->event_names[e]);
    tg_alpha_posts(a, t);
}

/* For testgen_posts.c. */
void tg_alpha_add_post(tg_alpha *a, uint16_t state, const char *label, char *value)
{
    size_t n = a->n;
    add(a, TG_POST, label, value, NULL);
    if (a->n > n)
        a->s[n].state = state;
}
