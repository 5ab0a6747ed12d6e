/*
 * facts.h - the session facts a spec's guards can compare, and the built-in
 * actions that take arguments. Shared by the checker (names, types) and the
 * engine (src/session/spec_rt.c), which compiles each comparison once when it
 * binds the spec.
 */
#ifndef AGENTC_GEN_FACTS_H
#define AGENTC_GEN_FACTS_H

#include <string.h>

/* AC_FT_USD: US dollars, compared with a decimal literal (0.25) or an int param (whole dollars) */
enum ac_fact_type { AC_FT_COUNT = 0, AC_FT_DURATION = 1, AC_FT_STRING = 2, AC_FT_USD = 3 };

enum ac_fact_id {
    AC_FACT_TURN_ITERATIONS = 0, /* LLM calls begun in this turn */
    AC_FACT_TURN_RETRIES,        /* retries of the current LLM call */
    AC_FACT_TURN_TOOL_CALLS,     /* tool calls this turn, those the event asks for included */
    AC_FACT_SESSION_TOOL_CALLS,  /* tool calls in the session, likewise */
    AC_FACT_TURN_TOKENS_IN,
    AC_FACT_TURN_TOKENS_OUT,
    AC_FACT_SESSION_TOKENS_IN,
    AC_FACT_SESSION_TOKENS_OUT,
    AC_FACT_TURN_TIME,        /* since the turn's user message (event time) */
    AC_FACT_STATE_TIME,       /* since the deepest active state was entered (event time) */
    AC_FACT_CONTEXT_MESSAGES, /* messages in the conversation */
    AC_FACT_CALLS_PENDING,    /* tool calls asked for and not answered yet */
    AC_FACT_LLM_STATUS,       /* HTTP status of the last failed LLM call (0: none) */
    AC_FACT_LLM_ERROR,        /* class of the last LLM failure ("http", "network", ...) */
    AC_FACT_LLM_FINISH,       /* finish reason of the last LLM reply */
    AC_FACT_TURN_COST,        /* what this turn's model calls cost (its model priced) */
    AC_FACT_SESSION_COST,     /* what the session's model calls cost */
    AC_FACT_COUNT
};

typedef struct ac_fact_info {
    const char *name;
    int type; /* enum ac_fact_type */
    const char *doc;
} ac_fact_info;

static const ac_fact_info ac_facts[AC_FACT_COUNT] = {
    {"turn.iterations", AC_FT_COUNT, "LLM calls begun in this turn"},
    {"turn.retries", AC_FT_COUNT, "retries of the current LLM call"},
    {"turn.tool_calls", AC_FT_COUNT, "tool calls this turn (those the event asks for included)"},
    {"session.tool_calls", AC_FT_COUNT, "tool calls in the session (likewise)"},
    {"turn.tokens_in", AC_FT_COUNT, "input tokens of this turn's LLM calls"},
    {"turn.tokens_out", AC_FT_COUNT, "output tokens of this turn's LLM calls"},
    {"session.tokens_in", AC_FT_COUNT, "input tokens of the session"},
    {"session.tokens_out", AC_FT_COUNT, "output tokens of the session"},
    {"turn.time", AC_FT_DURATION, "time since the turn's user message"},
    {"state.time", AC_FT_DURATION, "time since the deepest active state was entered"},
    {"context.messages", AC_FT_COUNT, "messages in the conversation"},
    {"calls.pending", AC_FT_COUNT, "tool calls asked for and not answered yet"},
    {"llm.status", AC_FT_COUNT, "HTTP status of the last failed LLM call (0: none)"},
    {"llm.error", AC_FT_STRING, "class of the last LLM failure (http, network, ...)"},
    {"llm.finish", AC_FT_STRING, "finish reason of the last LLM reply (stop, tool_use, ...)"},
    {"turn.cost_usd", AC_FT_USD, "what this turn's model calls cost, in USD (0 unpriced)"},
    {"session.cost_usd", AC_FT_USD, "what the session's model calls cost, in USD (0 unpriced)"},
};

static inline int ac_fact_find(const char *name)
{
    for (int i = 0; i < AC_FACT_COUNT; i++)
        if (strcmp(ac_facts[i].name, name) == 0)
            return i;
    return -1;
}

static inline const char *ac_fact_type_name(int type)
{
    return type == AC_FT_COUNT      ? "a count"
           : type == AC_FT_DURATION ? "a duration"
           : type == AC_FT_USD      ? "an amount in USD"
                                    : "a string";
}

/* Built-in actions with string arguments: fail("why") and the others; and
 * apply_decisions, built in too, which takes none and is written without parentheses. */
typedef struct ac_arg_action_info {
    const char *name;
    int n_args;
    const char *usage;
} ac_arg_action_info;

#define AC_ARG_ACTION_COUNT 5
#define AC_ACTION_APPLY_DECISIONS 4 /* the one without arguments: its name alone */
static const ac_arg_action_info ac_arg_actions[AC_ARG_ACTION_COUNT] = {
    {"fail", 1, "fail(\"why\"): the turn fails with this reason"},
    {"note", 1, "note(\"text\"): records the text as the session's last error, status unchanged"},
    {"answer_calls", 1, "answer_calls(\"result\"): every pending tool call gets this result"},
    {"answer_from_call", 2,
     "answer_from_call(\"tool\", \"argument\"): the answer is that argument of the "
     "pending call to the tool, which is answered"},
    {"apply_decisions", 0,
     "apply_decisions: the per-call decisions the event carries are applied (approved calls "
     "run, denied ones get the reason, edited ones run with the edit)"},
};

static inline int ac_arg_action_find(const char *name, size_t len)
{
    for (int i = 0; i < AC_ARG_ACTION_COUNT; i++)
        if (strlen(ac_arg_actions[i].name) == len &&
            strncmp(ac_arg_actions[i].name, name, len) == 0)
            return i;
    return -1;
}

/* The C identifier piece of a spec name: letters and digits upper-cased,
 * the comparison marks spelt out, anything else '_'. Writes at most 4 bytes
 * per input byte plus the terminator; returns the length. */
static inline size_t ac_cname(const char *s, char *out)
{
    size_t o = 0;
    for (; *s; s++) {
        const char *w = NULL;
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<':
            w = "LT";
            break;
        case '>':
            w = "GT";
            break;
        case '=':
            w = "EQ";
            break;
        case '!':
            w = "NOT";
            break;
        case '*':
            w = "STAR";
            break;
        case '?':
            w = "QM";
            break;
        default:
            break;
        }
        if (w) {
            while (*w)
                out[o++] = *w++;
        } else if ((c >= 'a' && c <= 'z'))
            out[o++] = (char)(c - 32);
        else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            out[o++] = (char)c;
        else
            out[o++] = '_';
    }
    out[o] = 0;
    return o;
}

#endif
