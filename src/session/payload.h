/*
 * payload.h - typed event payloads (payload.c): what the engine queues for the events posted
 * most often instead of a JSON value, and the one place their JSON is made, by the compact
 * writer, where bytes leave the process (a journal line, a store row) or where a handler the
 * program registered may read ev->data (docs/design.md, "Typed payloads").
 *
 * An llm.delta of text, reasoning or refusal: {"kind": KIND, "text": TEXT}, in that order, as
 * the HTTP providers built it; of a tool call's arguments: {"kind": "tool_call", "text": TEXT,
 * "index": I, "id": ID, "name": NAME}, id and name only when the delta has them. The text is UTF-8
 * (the sink repairs what is not), NUL-terminated, held by the queue entry the payload is part of.
 * An event whose payload is {} (llm.started): nothing more.
 *
 * An llm.completed (AC_PAYLOAD_COMPLETION): an ac_completion, written as the HTTP providers
 * built it: {"content", "reasoning", "refusal", "tool_calls": [{"id", "name", "arguments"}],
 * "finish_reason" (null when none), "usage": {"input", "output", and "cached", "cache_write",
 * "reasoning" when above 0}, then "response_id", "response_model" and "thinking_blocks"
 * ([{"type": "redacted_thinking", "data"} or {"type": "thinking", "thinking", "signature"}])
 * when it has them}. Its strings are UTF-8 (repaired when queued), NUL-terminated, held by the
 * queue entry with the structures.
 *
 * A tool.completed of a call's plain result (AC_PAYLOAD_TOOL_RESULT): {"id": ID, "ok": OK,
 * "content": TEXT, "duration_ms": MS}; a result with more (State writes, a toolkit's changes,
 * a cached answer) stays JSON.
 *
 * An llm.failed of a provider (AC_PAYLOAD_FAILURE): {"class": CLASS, "status": STATUS,
 * "retryable": B, "message": TEXT}, then "retry_after_ms" when the server gave one.
 */
#ifndef AGENTC_SESSION_PAYLOAD_H
#define AGENTC_SESSION_PAYLOAD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm.h"
#include "llm/provider.h"
#include "util/buf.h"

enum ac_payload_kind {
    AC_PAYLOAD_NONE = 0,        /* no typed payload: the event's data is JSON (or nothing) */
    AC_PAYLOAD_DELTA = 1,       /* a streamed delta: delta, text, n */
    AC_PAYLOAD_EMPTY = 2,       /* {} (llm.started) */
    AC_PAYLOAD_COMPLETION = 3,  /* an llm.completed: done */
    AC_PAYLOAD_TOOL_RESULT = 4, /* a tool.completed: id, ok, text (content), duration_ms */
    AC_PAYLOAD_FAILURE = 5      /* an llm.failed: name (class), status, ok (retryable), text
                                   (message), retry_after_ms */
};

typedef struct ac_payload {
    uint8_t kind;     /* enum ac_payload_kind */
    uint8_t delta;    /* AC_PAYLOAD_DELTA: enum ac_delta_kind (below AC_DELTA_UNKNOWN) */
    size_t n;         /* bytes of text */
    const char *text; /* UTF-8, NUL-terminated */
    /* AC_DELTA_TOOL_CALL: the call's index, and its id and name (UTF-8, NUL-terminated; NULL
     * when the delta has none) */
    int index;
    const char *id, *name;
    size_t id_n, name_n;
    const ac_completion *done; /* AC_PAYLOAD_COMPLETION */
    /* AC_PAYLOAD_TOOL_RESULT: the call's result (ok) and how long it ran; AC_PAYLOAD_FAILURE:
     * ok is retryable */
    int ok;
    int64_t duration_ms;
    /* AC_PAYLOAD_FAILURE: the HTTP status (0: none), the server's Retry-After (-1: none) */
    int64_t status, retry_after_ms;
} ac_payload;

/* The payload's JSON text appended to b (flags: util/json_text.h, AC_JSON_ASCII for a journal
 * line), the bytes jansson writes for the JSON value the event had before it was typed. */
void ac_payload_put(ac_buf *b, const ac_payload *p, unsigned flags);
/* Its compact JSON text (a store row), malloc'ed; NULL when out of memory. */
char *ac_payload_text(const ac_payload *p);
/* Its JSON value, for a handler the program registered; NULL when out of memory. */
json_t *ac_payload_json(const ac_payload *p);

/* The bytes ac_completion_pack needs for c (its strings repaired where they are not UTF-8,
 * alignment included). */
size_t ac_completion_size(const ac_completion *c);
/* c copied into mem (ac_completion_size(c) bytes): the copy, at the start of mem's aligned
 * part, pointing into mem; NULL when out of memory (repairing a string). */
const ac_completion *ac_completion_pack(char *mem, const ac_completion *c);
/* The model's reply an llm.completed carries: its typed payload, or read from its JSON (a
 * replayed or posted event: pointers into ev->data; the calls in *owned, malloc'ed, for the
 * caller to free). 0; -1 when it has none (no payload, no JSON object) or out of memory. */
int ac_completion_of(const ac_session *s, const ac_event *ev, ac_completion *c,
                     ac_payload_call **owned);
/* The thinking blocks of c as compact JSON text (record_assistant keeps them so), malloc'ed;
 * NULL when it has none or out of memory. */
char *ac_completion_blocks_text(const ac_completion *c);

/* The tool calls an llm.completed asks for, typed or JSON, without copying. */
typedef struct ac_calls_view {
    const ac_payload_call *typed;
    const json_t *json;
    size_t n;
} ac_calls_view;
void ac_event_calls(const ac_session *s, const ac_event *ev, ac_calls_view *v);
/* The i-th call's id and name (NULL: it has none). */
const char *ac_calls_id(const ac_calls_view *v, size_t i);
const char *ac_calls_name(const ac_calls_view *v, size_t i);

/* A tool.completed's call id, result and content (*n bytes), and duration: its typed payload
 * or its JSON (*dur 0 when it has none). The id; NULL when it has none. */
const char *ac_tool_result_of(const ac_session *s, const ac_event *ev, int *ok,
                              const char **content, size_t *n, int64_t *dur);

/* An llm.failed's class, status, retryable flag, Retry-After (-1: none) and message: its
 * typed payload or its JSON (NULL strings, status 0, retry_after -1 for what it lacks). */
typedef struct ac_failure_view {
    const char *cls, *message;
    int64_t status, retry_after_ms;
    int has_status, retryable;
} ac_failure_view;
void ac_failure_of(const ac_session *s, const ac_event *ev, ac_failure_view *f);

/* The payload of a stored delta row, `{"kind":KIND,"text":TEXT}` as ac_payload_text writes
 * one for text, reasoning and refusal (len bytes at s), read without a JSON value: its text
 * unescaped into scratch (p->text points there). 0; -1 for anything else (another shape or
 * kind, an escape of a character above U+007F or of NUL, text that is not UTF-8): the caller
 * reads that row as JSON. */
int ac_payload_read_delta(const char *s, size_t len, ac_payload *p, ac_buf *scratch);

/* Posts the event `type` with the typed payload p (copied) as ac_session_post posts a JSON one
 * (a replayer applies it at once): for a reader of stored rows. */
int ac_session_post_typed(ac_session *s, uint16_t type, const ac_payload *p, int64_t t_ms);

/* The typed payload of the event being applied to s, when ev is that event and it has one;
 * else NULL (the event's payload is ev->data, JSON: a replayed or posted event). */
const ac_payload *ac_event_payload(const ac_session *s, const ac_event *ev);

#endif
