/* Provider request bodies built from a conversation: OpenAI Chat Completions
 * and Anthropic Messages.
 *
 * Both send the visible window (ac_conv_visible) and share these rules:
 * - each assistant message that issued tool calls is followed by exactly
 *   their results, in the order the model issued the calls, whatever order
 *   the results arrived in;
 * - a call that has no result yet is left out of the request (with its
 *   assistant message if nothing else remains of it), so a request can
 *   always be built; the model sees no half-finished call;
 * - a cleared tool result is sent as its marker;
 * - reasoning text is not sent back (OpenAI-compatible servers reject or
 *   ignore it); Anthropic thinking blocks are, with their signatures, when
 *   the request enables thinking (opts->thinking_budget > 0), first in their
 *   assistant message, as the API requires during a tool loop.
 *
 * OpenAI: failures are sent as tool content prefixed "Error: ". max_tokens
 * is sent only when opts->max_tokens > 0.
 *
 * Settings (opts->settings, agentc.h): OpenAI gets temperature, top_p, stop,
 * seed, reasoning_effort, tool_choice ("auto" | "none" | "required" |
 * {"type": "function", "function": {"name"}}) and parallel_tool_calls;
 * Anthropic temperature, top_p, stop_sequences and tool_choice ({"type":
 * "auto" | "none" | "any" | "tool", "name"}, with disable_parallel_tool_use
 * for parallel_tool_calls). The pass-through object is merged in last.
 *
 * Anthropic: system messages are joined (blank line between) into the
 * top-level "system"; every message uses content blocks; consecutive
 * messages of the same role are merged so roles alternate, tool_result blocks
 * first; empty texts are left out (the API rejects empty text blocks).
 * Tool arguments become the "input" object: "" or whitespace gives {}; text
 * that is not a JSON object is sent as {"_raw_arguments": "<text>"} so the
 * model can still see what it sent (the call's result normally carries the
 * validation error). max_tokens defaults to 4096; with thinking enabled it is
 * raised to budget + 4096 when it would not exceed the budget (the API wants
 * max_tokens > budget_tokens). When the visible window
 * starts with an assistant message, a user message AC_REQUEST_OMITTED_TEXT
 * is put first, since the API expects the user to speak first.
 */
#ifndef AGENTC_CONTEXT_REQUEST_H
#define AGENTC_CONTEXT_REQUEST_H

#include <stddef.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "context/conversation.h"

#define AC_REQUEST_DEFAULT_MAX_TOKENS 4096
#define AC_REQUEST_OMITTED_TEXT "[earlier conversation omitted]"

/* Per-request tool offer (toolkits): called with each tool of the conversation
 * (its display name, "prefix::tool") and schema NULL, it returns 0 to leave the
 * tool out of this request, 1 to offer it as it is, 2 to see its schema: then
 * it is called again with the schema (a new reference the callee may replace)
 * and returns 0 to leave the tool out, else 1. */
typedef int (*ac_request_tool_offer_fn)(void *ud, const char *name, json_t **schema);

typedef struct ac_request_opts {
    const char *model; /* required */
    int stream;        /* "stream": true, and for OpenAI stream_options.include_usage */
    int max_tokens;    /* <= 0: OpenAI omits it, Anthropic uses the default */
    /* Anthropic extended thinking: "thinking": {"type": "enabled",
     * "budget_tokens": N} when > 0 (the API's minimum is 1024); ignored by
     * OpenAI requests */
    int thinking_budget;
    /* NULL-terminated list of tool names to offer; NULL offers every tool. */
    const char *const *tool_names_allowed;
    /* Structured output: a JSON Schema (JSON text) or NULL. OpenAI: "response_format":
     * {"type": "json_schema", "json_schema": {"name": "output", "schema": ..., "strict":
     * false}}; Anthropic: an instruction with the schema appended to "system". */
    const char *output_schema;
    /* A note about where the work stands (the session's State, docs/state.md) or NULL.
     * OpenAI: a last "system" message; Anthropic: appended to "system". */
    const char *context_note;
    /* Sampling and tool settings and the pass-through (agentc.h); NULL: none.
     * The tool settings (tool_choice, parallel_tool_calls) are sent only when
     * tools are offered; a tool_choice naming a tool not offered is an error. */
    const ac_request_settings *settings;
    /* NULL: every tool as declared. Names containing "::" are always sent in their wire form
     * (util/toolname.h), in the offered tools and in the history's tool calls. */
    ac_request_tool_offer_fn tool_offer;
    void *tool_offer_ud;
} ac_request_opts;

/* Return a malloc'd JSON body (free it), or NULL with a message in err. */
char *ac_request_openai(const ac_conv *conv, const ac_request_opts *opts, char *err, size_t errcap);
char *ac_request_anthropic(const ac_conv *conv, const ac_request_opts *opts, char *err,
                           size_t errcap);

/* Checks settings for a provider (anthropic nonzero: Anthropic): ranges,
 * settings the provider does not have, the pass-through (a JSON object
 * without the fields agentc owns). 0, or -1 with a message in err. NULL
 * settings are fine. */
int ac_request_settings_check(const ac_request_settings *s, int anthropic, char *err,
                              size_t errcap);
/* A deep copy (free with ac_request_settings_free); NULL when out of memory. */
ac_request_settings *ac_request_settings_dup(const ac_request_settings *s);
void ac_request_settings_free(ac_request_settings *s);

/* Is tool `name` offered under opts? (NULL opts or list: every tool.) */
int ac_request_tool_allowed(const ac_request_opts *opts, const char *name);

#endif
