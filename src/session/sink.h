/*
 * sink.h - what a provider (src/llm) may call on a session, and nothing more:
 * the event sink and a per-session slot for the provider's own state. Providers
 * include this instead of the session's internals.
 */
#ifndef AGENTC_SESSION_SINK_H
#define AGENTC_SESSION_SINK_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/agentc.h"

/* Queues an event for the session (data stolen, t_ms 0: now); it is applied after the caller's
 * callback returns, never inside it. origin: the one the call was started with
 * (ac_llm_call_opts.origin), so that what a cancelled call queued is dropped with it. */
void ac_session_enqueue(ac_session *s, uint16_t type, json_t *data, int64_t t_ms, uint16_t origin);
/* Queues a streamed delta of text, reasoning or refusal (kind: enum ac_delta_kind, below
 * AC_DELTA_TOOL_CALL) as a typed llm.delta (session/payload.h): n bytes of text copied into the
 * event's one allocation (what is not UTF-8 repaired), no JSON made; as ac_session_enqueue
 * otherwise. */
void ac_session_enqueue_delta(ac_session *s, uint16_t type, int kind, const char *text, size_t n,
                              uint16_t origin);
/* The same for a tool call's streamed arguments (AC_DELTA_TOOL_CALL): n bytes of args, the
 * call's index, its id and name (NUL-terminated; NULL: the delta has none). */
void ac_session_enqueue_tool_delta(ac_session *s, uint16_t type, int index, const char *id,
                                   const char *name, const char *args, size_t n, uint16_t origin);
struct ac_completion;

/* Queues a model's reply (llm.completed) typed (session/payload.h): c's structures and strings
 * copied into the event's one allocation (what is not UTF-8 repaired), no JSON made. */
void ac_session_enqueue_completion(ac_session *s, uint16_t type, const struct ac_completion *c,
                                   uint16_t origin);
/* Queues a tool call's plain result (tool.completed: id, ok, content, duration; NUL-terminated)
 * typed: no JSON made. */
void ac_session_enqueue_tool_result(ac_session *s, uint16_t type, const char *id, int ok,
                                    const char *content, int64_t duration_ms, uint16_t origin);
/* Queues a provider's failure (llm.failed: class, HTTP status or 0, retryable, Retry-After in
 * ms or -1, message; NUL-terminated) typed: no JSON made. */
void ac_session_enqueue_failure(ac_session *s, uint16_t type, const char *cls, int64_t status,
                                int retryable, int64_t retry_after_ms, const char *message,
                                uint16_t origin);
/* Queues an event whose payload is {} (llm.started) typed: no JSON made. */
void ac_session_enqueue_empty(ac_session *s, uint16_t type, uint16_t origin);
/* The W3C traceparent of the span the session's traces are at (its model call's while it
 * runs) into buf (cap >= 56): 1, or 0 when the session is not traced (nothing to send). An
 * untraced session forwards the traceparent its turn under way received, as it came. */
int ac_session_traceparent(const ac_session *s, char *buf, size_t cap);
/* The traceparent of the tool call call_id's execute_tool span (what the call's requests and a
 * sub-agent's turn are children of); untraced, ac_session_traceparent's. */
int ac_session_tool_traceparent(const ac_session *s, const char *call_id, char *buf, size_t cap);
/* The index of an event of the engine's spec, AC_FSM_NONE if it has none. */
uint16_t ac_engine_event_index(const ac_engine *e, const char *name);
/* The provider's per-session slot (NULL until the provider stores something there); the
 * provider's release() frees it when the session is freed. */
void **ac_session_provider_slot(ac_session *s);
/* Model calls the session completed before it was restored from a store (0 for a new one):
 * where a scripted provider goes on. */
size_t ac_session_turn_base(const ac_session *s);

#endif
