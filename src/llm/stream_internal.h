/* Private interface between stream.c (buffers, caps, errors, the SSE glue) and the
 * wire-format decoders stream_openai.c and stream_anthropic.c. Not installed. */
#ifndef AGENTC_LLM_STREAM_INTERNAL_H
#define AGENTC_LLM_STREAM_INTERNAL_H

#include "llm/sse.h"
#include "llm/stream.h"

#include <jansson.h>

/* Decodes one event of the wire format. Returns 0, or a negative AC_STREAM_ERR_*
 * after recording it with ac_stream__fail(). */
int ac_stream__openai_event(ac_stream *st, const ac_sse_event *ev);
int ac_stream__anthropic_event(ac_stream *st, const ac_sse_event *ev);

/* Records the first failure and returns code. */
int ac_stream__fail(ac_stream *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses an event's data as a JSON object (new reference), or fails the stream and
 * returns NULL. */
json_t *ac_stream__parse(ac_stream *st, const ac_sse_event *ev);

/* Appends a delta to the turn and reports it to the sink. Return 0 or an error. */
int ac_stream__text(ac_stream *st, const char *s, size_t n);
int ac_stream__reasoning(ac_stream *st, const char *s, size_t n);
int ac_stream__refusal(ac_stream *st, const char *s, size_t n);
/* Anthropic thinking blocks: starts one (data non-NULL: a redacted block
 * with that payload) and returns its position, or a negative error; appends
 * text (also to the turn's reasoning, reported to the sink) or signature. */
int ac_stream__thinking_start(ac_stream *st, const char *data, size_t n);
int ac_stream__thinking_text(ac_stream *st, int pos, const char *s, size_t n);
int ac_stream__thinking_signature(ac_stream *st, int pos, const char *s, size_t n);

/* Finds or creates the tool call with this index (0..AC_STREAM_MAX_TOOL_CALLS-1)
 * and returns its position in turn.tool_calls, or a negative error. */
#define AC_STREAM_MAX_TOOL_CALLS 1024
int ac_stream__tool_call(ac_stream *st, int index);
/* Position of the call with this id, or -1. */
int ac_stream__tool_call_by_id(const ac_stream *st, const char *id);
/* Largest index in use, or -1. */
int ac_stream__tool_max_index(const ac_stream *st);
/* Applies one fragment to the call at position pos: id and name are kept from the
 * first fragment that has a non-empty one; args are appended. id / name may be
 * NULL. Reports the fragment to the sink. */
int ac_stream__tool_fragment(ac_stream *st, int pos, const char *id, const char *name,
                             const char *args, size_t n);

int ac_stream__set_finish(ac_stream *st, const char *reason);
/* The response's id and model, from the first event that names them (NULL: not named). */
int ac_stream__set_response(ac_stream *st, const char *id, const char *model);
/* Records an in-stream error reported by the server. */
int ac_stream__provider_error(ac_stream *st, const char *type, const char *message, int retryable);
void ac_stream__terminate(ac_stream *st);
ac_stream_turn *ac_stream__turn(ac_stream *st);

/* Per-wire scratch state (Anthropic content blocks), owned by the stream. */
typedef struct ac_stream_block {
    int block_index; /* content block index from the server */
    int kind;        /* AC_BLOCK_* */
    int tool_pos;    /* for tool_use: position in turn.tool_calls */
    int got_args;    /* for tool_use: some input_json_delta arrived */
    int think_pos;   /* for thinking: position in turn.thinking_blocks */
} ac_stream_block;
enum { AC_BLOCK_OTHER, AC_BLOCK_TEXT, AC_BLOCK_THINKING, AC_BLOCK_TOOL };
#define AC_STREAM_MAX_BLOCKS 4096
/* Adds a block record; returns it or NULL after failing the stream. */
ac_stream_block *ac_stream__block_add(ac_stream *st, int block_index, int kind);
ac_stream_block *ac_stream__block_find(ac_stream *st, int block_index);
/* A tool_use block's start: the next tool call (ID and NAME may be NULL) and its block record.
 * 0, or an error as ac_stream__tool_fragment's. */
int ac_stream__tool_block(ac_stream *st, int block_index, const char *id, const char *name);

/* The hot delta events read without jansson (stream_fast.c, scanners in delta.rl).
 * Each returns 1 when it read the event (*rc: 0 or an error, as the decoder
 * would have returned), 0 when the event must go to the jansson decoder; it
 * changes nothing before deciding. */
int ac_stream__openai_fast(ac_stream *st, const ac_sse_event *ev, int *rc);
int ac_stream__anthropic_fast(ac_stream *st, const ac_sse_event *ev, int *rc);
/* A scratch buffer of at least n bytes, valid until the next call, or NULL. */
char *ac_stream__scratch(ac_stream *st, size_t n);
/* For tests, the fuzzer and benchmarks: on = 0 reads every event with jansson;
 * the number of events the fast path read. */
void ac_stream__set_fast(ac_stream *st, int on);
size_t ac_stream__fast_events(const ac_stream *st);

/* Helpers for reading jansson values. */
/* The string at key, or NULL if absent / not a string; *n gets its length. */
const char *ac_stream__str(const json_t *obj, const char *key, size_t *n);
/* Whether a provider error looks transient (overload, rate limit, 5xx). */
int ac_stream__retryable_text(const char *s);

#endif
