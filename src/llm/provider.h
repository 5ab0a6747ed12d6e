/*
 * provider.h - the interface between the llm_request effect and an LLM
 * provider (scripted, OpenAI-compatible, Anthropic).
 *
 * A provider starts one call per session at a time. It reads the session's
 * conversation to build its request, and reports only by posting events to
 * the session: llm.started, llm.delta ({"kind": "text"|"reasoning"|
 * "refusal"|"tool_call", "text", "index", "id", "name"}), then either
 * llm.completed (typed, an ac_completion below: {"content", "reasoning", "refusal",
 * "tool_calls": [{"id", "name", "arguments"}], "finish_reason", "usage": {"input",
 * "output"}}) or
 * llm.failed ({"class", "status", "retryable", "retry_after_ms",
 * "message"}). Cancel stops the call at once and posts nothing more.
 */
#ifndef AGENTC_LLM_PROVIDER_H
#define AGENTC_LLM_PROVIDER_H

#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "agentc/agentc.h"
#include "context/request.h"

/* A tool call of a model's reply. */
typedef struct ac_payload_call {
    const char *id, *name, *arguments;
    size_t id_n, name_n, arguments_n;
    int internal; /* an event read from JSON that flags it so (a replayed one); else 0 */
} ac_payload_call;

/* An Anthropic thinking block: redacted (data) or not (thinking, signature; data NULL). */
typedef struct ac_payload_thinking {
    const char *data, *thinking, *signature;
    size_t data_n, thinking_n, signature_n;
} ac_payload_thinking;

/* A model's reply, the payload of llm.completed as the HTTP providers queue it typed
 * (session/payload.h writes its JSON). Strings NUL-terminated; finish_reason, response_id and
 * response_model NULL when it has none. */
typedef struct ac_completion {
    const char *content, *reasoning, *refusal;
    size_t content_n, reasoning_n, refusal_n;
    const ac_payload_call *calls;
    size_t n_calls;
    const char *finish_reason;
    int has_usage;
    /* tokens; cached, cache_write and reasoning written only when above 0 */
    int64_t input, output, cached, cache_write, reasoning_tokens;
    const char *response_id, *response_model;
    const ac_payload_thinking *blocks;
    size_t n_blocks;
    /* an event read from JSON (ac_completion_of): its "thinking_blocks" as they are; else NULL */
    const json_t *blocks_json;
} ac_completion;

/* The kinds of llm.delta. The payload names them ("kind": "text"...) so journals stay
 * readable; handlers turn the name into the enum once with ac_delta_kind_of() and switch on it. */
enum ac_delta_kind { AC_DELTA_TEXT, AC_DELTA_REASONING, AC_DELTA_REFUSAL, AC_DELTA_TOOL_CALL,
                     AC_DELTA_UNKNOWN };

static inline const char *ac_delta_kind_name(enum ac_delta_kind k)
{
    static const char *const names[] = {"text", "reasoning", "refusal", "tool_call"};
    return k < AC_DELTA_UNKNOWN ? names[k] : "unknown";
}

static inline enum ac_delta_kind ac_delta_kind_of(const char *name)
{
    for (int k = 0; name && k < AC_DELTA_UNKNOWN; k++)
        if (strcmp(name, ac_delta_kind_name((enum ac_delta_kind)k)) == 0)
            return (enum ac_delta_kind)k;
    return AC_DELTA_UNKNOWN;
}

typedef struct ac_llm_call_opts {
    int64_t stall_timeout_ms;
    int64_t connect_timeout_ms;
    int64_t call_timeout_ms; /* the whole call; 0: none */
    int64_t max_tokens;      /* reply token cap; 0: the provider's default */
    int64_t thinking_budget; /* extended thinking tokens (Anthropic); 0: off */
    uint16_t origin;         /* the effect's origin: passed with every event the call queues */
    const char *output_schema; /* structured output: JSON Schema text, or NULL (request.h) */
    /* which tools this call offers, with which schemas (toolkits); NULL: all (request.h) */
    ac_request_tool_offer_fn tool_offer;
    void *tool_offer_ud;
    const char *context_note;  /* the State as the model sees it, or NULL (request.h) */
} ac_llm_call_opts;

/* The end of a one-off completion: ok and the reply text, or !ok and an
 * error message. text is borrowed for the duration of the call. */
typedef void (*ac_llm_done_fn)(void *ud, int ok, const char *text);

typedef struct ac_provider ac_provider;
struct ac_provider {
    const char *name;
    /* Returns a call id (nonzero) or 0 when the call could not start (then
     * it has posted llm.failed itself, asynchronously). */
    uint64_t (*start)(ac_provider *p, ac_session *s, const ac_llm_call_opts *opts);
    /* A one-off completion for session s (compaction summaries): the reply
     * to the visible messages of `conv` (read during this call only; its tool
     * definitions are offered, so pass a conversation without any). Nothing
     * is posted to the session: done(ud, ...) runs once on the loop thread,
     * never from inside complete(), unless the call is cancelled first with
     * cancel(). Returns a call id, or 0 when it could not start (done is then
     * never called). The script provider answers with the session's next
     * scripted turn (its content; an "error" turn fails). */
    uint64_t (*complete)(ac_provider *p, ac_session *s, const ac_conv *conv,
                         const ac_llm_call_opts *opts, ac_llm_done_fn done, void *ud);
    void (*cancel)(ac_provider *p, uint64_t call);
    /* Frees what the provider kept in a session's slot (sink.h) when the session is freed;
     * NULL when it keeps nothing there. */
    void (*release)(ac_provider *p, void *state);
    void (*free)(ac_provider *p);
};

/* The scripted provider: turns from JSON Lines (see docs). NULL + err on a
 * bad script. */
ac_provider *ac_provider_script_new(ac_engine *e, const char *path, const char *text, int delay_ms,
                                    char *err, size_t errcap);
/* HTTP providers (src/llm/http_provider.c). */
ac_provider *ac_provider_http_new(ac_engine *e, int kind, const ac_engine_config *cfg, char *err,
                                  size_t errcap);

#endif
