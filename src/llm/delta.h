/* Fast reading of the streamed events (not installed).
 *
 * Most events of a streamed response are small deltas of one fixed shape: an
 * OpenAI chunk with one choice whose delta carries content, reasoning, a
 * refusal or one tool-call fragment; an Anthropic content_block_delta. The
 * others are few and small too: the OpenAI first chunk (the response's id and
 * model) and usage chunk, Anthropic's message_start, content_block_start and
 * _stop, message_delta, message_stop and ping. The
 * scanners below are Ragel machines that accept exactly such events - and only
 * when jansson would accept the same bytes (strict UTF-8, escapes, integers,
 * no duplicate members that matter) - and record where their strings are.
 * Anything else returns 0 and the caller reads the event with jansson, so the
 * scanners decide nothing the jansson decoders would decide differently. */
#ifndef AGENTC_LLM_DELTA_H
#define AGENTC_LLM_DELTA_H

#include <stddef.h>

/* A string member's body as it appears in the JSON text (between the quotes,
 * escapes not yet decoded). */
typedef struct ac_dspan {
    const char *p;
    size_t n;
    unsigned char set; /* the member was present with a string value */
    unsigned char esc; /* the body has escapes: decode with ac_delta_unescape() */
} ac_dspan;

enum {
    /* OpenAI chunk */
    AC_DS_OBJECT,            /* "object" */
    AC_DS_CONTENT,           /* choices[0].delta.content */
    AC_DS_REASONING_CONTENT, /* choices[0].delta.reasoning_content */
    AC_DS_REASONING,         /* choices[0].delta.reasoning */
    AC_DS_REFUSAL,           /* choices[0].delta.refusal */
    AC_DS_FINISH,            /* choices[0].finish_reason */
    AC_DS_TC_ID,             /* choices[0].delta.tool_calls[0].id */
    AC_DS_TC_NAME,           /* ... .function.name */
    AC_DS_TC_ARGS,           /* ... .function.arguments */
    /* Anthropic event */
    AC_DS_TYPE,    /* "type" */
    AC_DS_DTYPE,   /* delta.type */
    AC_DS_TEXT,    /* delta.text */
    AC_DS_THINK,   /* delta.thinking */
    AC_DS_SIG,     /* delta.signature */
    AC_DS_PARTIAL, /* delta.partial_json */
    /* the response's names: OpenAI "id" and "model"; Anthropic message.id, message.model */
    AC_DS_ID,
    AC_DS_MODEL,
    AC_DS_DATA, /* Anthropic content_block.data (a redacted thinking block) */
    AC_DS_COUNT
};

/* An Anthropic usage object: its integer counters. */
typedef struct ac_dusage {
    int set; /* the member was an object */
    int has_in, has_out, has_cwrite, has_cread;
    long long in, out, cwrite, cread; /* input_tokens, output_tokens,
                                         cache_creation_input_tokens, cache_read_input_tokens */
} ac_dusage;

/* Anthropic's content_block object shares the delta's spans: "type" is
 * AC_DS_DTYPE, "text", "thinking" and "signature" the delta's, "id" and "name"
 * AC_DS_TC_ID and AC_DS_TC_NAME, and a member in both is a duplicate (the scan
 * fails); an event with both objects is left to jansson by the caller. */
typedef struct ac_delta {
    ac_dspan s[AC_DS_COUNT];
    int has_tool_call;   /* OpenAI: delta.tool_calls held one call */
    int has_tc_index;    /* the call had an "index" */
    long tc_index;       /* its value (0..9999999) */
    int has_usage;       /* OpenAI: "usage" was an object */
    int has_in, has_out; /* with integer prompt_tokens / completion_tokens */
    long long in_tokens, out_tokens;
    int has_cached;      /* usage.prompt_tokens_details.cached_tokens, an integer */
    int has_rtokens;     /* usage.completion_tokens_details.reasoning_tokens, an integer */
    long long cached_tokens, reasoning_tokens;
    int has_index; /* Anthropic: "index" was present */
    long index;    /* its value (0..9999999) */
    int has_delta; /* Anthropic: "delta" object was present */
    int has_block;   /* Anthropic: "content_block" object was present */
    int has_message; /* Anthropic: "message" object was present */
    ac_dusage usage, msg_usage; /* Anthropic: "usage" and message.usage */
} ac_delta;

/* Scans one event's data. Returns 1 when it has the hot shape and is valid
 * JSON as jansson reads it (d filled), 0 otherwise (d unspecified). */
int ac_delta_scan_openai(const char *data, size_t n, ac_delta *d);
int ac_delta_scan_anthropic(const char *data, size_t n, ac_delta *d);

/* Decodes the body of s into out (room for s->n + 1 bytes) as jansson would
 * and NUL-terminates it. Returns the decoded length, or -1 for an escape
 * jansson rejects (an unpaired surrogate). */
long ac_delta_unescape(const ac_dspan *s, char *out);

/* Whether the body of s, with no escapes, equals the NUL-terminated lit. */
int ac_delta_is(const ac_dspan *s, const char *lit);

#endif
