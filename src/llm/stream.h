/* Streaming response assembly for two LLM wire formats.
 *
 * An ac_stream takes the raw HTTP body of a streamed chat response (any chunking),
 * scans it as Server-Sent Events, parses each data payload with jansson, reports
 * every delta to a sink as it arrives, and assembles the whole turn: text,
 * reasoning, refusal, tool calls, finish reason, usage, and any error the server
 * reported inside the stream.
 *
 * Wire formats:
 *   AC_WIRE_OPENAI     Chat Completions chunks ("data: {...}" ... "data: [DONE]"), as
 *                      sent by OpenAI, vLLM, llama.cpp, Ollama, DeepSeek, Groq,
 *                      OpenRouter, LM Studio.
 *   AC_WIRE_ANTHROPIC  Messages API events (message_start ... message_stop). */
#ifndef AGENTC_LLM_STREAM_H
#define AGENTC_LLM_STREAM_H

#include <stddef.h>

typedef enum { AC_WIRE_OPENAI, AC_WIRE_ANTHROPIC } ac_wire;

/* Status codes. Values are stable; never reuse a number. */
enum {
    AC_STREAM_OK = 0,
    AC_STREAM_ERR_NOMEM = -1,          /* allocation failed */
    AC_STREAM_ERR_SSE = -2,            /* event-stream framing error (line/event cap) */
    AC_STREAM_ERR_JSON = -3,           /* a data payload is not valid JSON */
    AC_STREAM_ERR_PROTOCOL = -4,       /* valid JSON of the wrong shape */
    AC_STREAM_ERR_TURN_TOO_LARGE = -5, /* the assembled turn exceeded max_turn_bytes */
    AC_STREAM_ERR_TRUNCATED = -6,      /* the stream ended without its terminator */
    AC_STREAM_ERR_PROVIDER = -7,       /* the server reported an error in the stream */
    AC_STREAM_ERR_FINISHED = -8        /* fed after ac_stream_finish() */
};

#define AC_STREAM_DEFAULT_MAX_TURN ((size_t)64 << 20) /* 64 MiB */

/* Receives deltas as they arrive. Every callback may be NULL. Strings are borrowed,
 * valid only during the call, and not NUL-terminated (use n). Empty deltas are not
 * reported. */
typedef struct ac_stream_sink {
    void *ud;
    void (*on_text)(void *ud, const char *s, size_t n);
    void (*on_reasoning)(void *ud, const char *s, size_t n);
    void (*on_refusal)(void *ud, const char *s, size_t n);
    /* One tool-call fragment. index is the call's position in the turn (0-based);
     * id and name are NUL-terminated and NULL when this fragment lacks them;
     * args_fragment is never NULL ("" with n == 0 when the fragment has none). */
    void (*on_tool_call_delta)(void *ud, int index, const char *id, const char *name,
                               const char *args_fragment, size_t n);
} ac_stream_sink;

/* One assembled tool call. Strings are NUL-terminated, owned by the stream. id and
 * name are "" when the server never sent them. */
typedef struct ac_tool_call_acc {
    int index;
    char *id;
    char *name;
    char *arguments;
    size_t arguments_len;
} ac_tool_call_acc;

/* An Anthropic thinking block, kept whole so it can be sent back with the
 * turn (the API checks the signature). A redacted_thinking block has data
 * (the encrypted payload) and no text. Strings are NUL-terminated. */
typedef struct ac_thinking_block {
    char *thinking; /* "" for a redacted block */
    size_t thinking_len;
    char *signature; /* "" when none arrived */
    char *data;      /* redacted_thinking: the payload; NULL for a thinking block */
} ac_thinking_block;

/* The assembled turn, owned by the stream and valid until ac_stream_free(). The
 * string members are NUL-terminated ("" when empty) except finish_reason and the
 * error strings, which are NULL when absent. */
typedef struct ac_stream_turn {
    char *text;
    size_t text_len;
    char *reasoning;
    size_t reasoning_len;
    char *refusal;
    size_t refusal_len;
    /* Anthropic: the thinking blocks in order (reasoning above is their text
     * joined); none for other wires */
    ac_thinking_block *thinking_blocks;
    size_t n_thinking_blocks;
    ac_tool_call_acc *tool_calls;
    size_t n_tool_calls; /* sorted by index */
    /* normalized: "stop", "tool_calls", "length", "content_filter", or the raw value */
    char *finish_reason;
    /* input_tokens counts every prompt token, including Anthropic cache reads and
     * writes; output_tokens every generated token */
    long long input_tokens, output_tokens;
    /* of input_tokens: read from the provider's cache (OpenAI cached_tokens, Anthropic
     * cache_read_input_tokens) and written to it (Anthropic cache_creation_input_tokens); of
     * output_tokens: reasoning (OpenAI reasoning_tokens). 0 when not reported */
    long long cached_tokens, cache_write_tokens, reasoning_tokens;
    /* the provider's id of the response (OpenAI "id", Anthropic message.id) and the model
     * that answered; NULL when not reported */
    char *response_id, *response_model;
    int response_read; /* an event was read for them */
    int have_usage;
    int terminated; /* saw [DONE] (OpenAI) or message_stop (Anthropic) */
    /* error reported inside the stream, if any */
    int error;
    int error_retryable;
    char *error_type;
    char *error_message;
} ac_stream_turn;

typedef struct ac_stream ac_stream;

/* Creates a stream. sink may be NULL (it is copied). max_turn_bytes of 0 selects
 * AC_STREAM_DEFAULT_MAX_TURN; it caps the sum of all assembled strings. Returns NULL
 * on allocation failure. */
ac_stream *ac_stream_new(ac_wire wire, const ac_stream_sink *sink, size_t max_turn_bytes);

/* Same, with explicit event-stream caps (0 selects the ac_sse defaults). */
ac_stream *ac_stream_new_ex(ac_wire wire, const ac_stream_sink *sink, size_t max_turn_bytes,
                            size_t max_line, size_t max_event);

/* Feeds body bytes. Returns AC_STREAM_OK or a negative AC_STREAM_ERR_*; after an
 * error the stream refuses further input and returns the same code, and
 * ac_stream_error() says what went wrong. An error the server reports inside the
 * stream is not a feed failure: it is recorded in the turn (turn->error) and
 * reported by ac_stream_finish(). Events after the terminator are ignored. */
int ac_stream_feed(ac_stream *st, const char *buf, size_t len);

/* Marks the end of the body. Returns AC_STREAM_OK if the stream ended with its
 * terminator and no in-stream error; AC_STREAM_ERR_PROVIDER if the server reported
 * an error; AC_STREAM_ERR_TRUNCATED ("stream ended without its terminator") if it
 * did not terminate; or the sticky code of an earlier feed failure. */
int ac_stream_finish(ac_stream *st);

/* The assembled turn so far (also usable after a failure, for the partial turn). */
const ac_stream_turn *ac_stream_turn_get(const ac_stream *st);

/* Message for the last failure, "" if none. Owned by the stream. */
const char *ac_stream_error(const ac_stream *st);

/* Whether the last failure is worth retrying: truncation, or an in-stream error the
 * server marked as overload / rate limit / server error. 0 when there is none. */
int ac_stream_error_retryable(const ac_stream *st);

/* Frees the stream and the turn. NULL is a no-op. */
void ac_stream_free(ac_stream *st);

/* Makes st a new stream of the same wire and limits, with this sink (NULL: none),
 * as ac_stream_new() would: the turn is freed, the buffers are kept for the next
 * response (unless one grew past AC_SSE_KEEP_BYTES). */
void ac_stream_reset(ac_stream *st, const ac_stream_sink *sink);

/* Number of events read so far: each event with data, whatever it says. SSE
 * comments (": keep-alive") and blank lines are not events. A client uses it
 * as the measure of progress of a stream. */
size_t ac_stream_events(const ac_stream *st);

#endif
