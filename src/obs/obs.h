/*
 * obs.h - what the engine's sessions give a tracer (src/obs): ended spans, and the GenAI
 * mapping of a session's events, steps and effects onto spans (genai.c).
 */
#ifndef AGENTC_OBS_OBS_H
#define AGENTC_OBS_OBS_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/metrics.h"
#include "agentc/otel.h"

struct ac_span;
/* Queues an ended span (stolen); dropped and counted when the queue is full. */
void ac_tracer_add(ac_tracer *t, struct ac_span *span);
/* n bytes of s kept by t until it is freed (so spans may borrow them past the engine that made
 * them), one copy whatever the times it is asked: the copy, or NULL (out of memory, or past the
 * bound of texts it keeps). */
const char *ac_tracer_intern(ac_tracer *t, const char *s, size_t n);
/* A blank span the tracer kept (for ac_span_start), NULL when it has none. */
struct ac_span *ac_tracer_blank(ac_tracer *t);
/* The span (ended or not, never queued) made blank and kept for another, or freed. */
void ac_tracer_recycle(ac_tracer *t, struct ac_span *span);
/* Whether message contents are recorded. */
int ac_tracer_capture(const ac_tracer *t);

/* ---- the GenAI mapping (genai.c), called by src/session on the loop thread ---- */
typedef struct ac_obs ac_obs; /* one session's open spans */

/* A transition row's agentc.transition attributes as OTLP/JSON text (interned by the tracer),
 * for the states and event it was made for. */
typedef struct ac_obs_row {
    const char *attrs;
    size_t n; /* its bytes */
    uint32_t from, event, to;
} ac_obs_row;

/* What the engine tells the mapping once. */
typedef struct ac_obs_engine {
    ac_tracer *tracer;   /* NULL: no traces */
    ac_metrics *metrics; /* NULL: no metrics */
    const ac_fsm_tables *t;
    const struct ac_price *price; /* the model's prices (cost.h), NULL: none */
    const char *agent;            /* invoke_agent's name */
    const char *provider;         /* "openai", "anthropic", "script" */
    const char *model;
    const ac_request_settings *request; /* may be NULL */
    int64_t max_tokens;                 /* 0: not sent */
    struct ac_obs_row *rows; /* per transition row, its event's text once used (genai.c) */
} ac_obs_engine;

ac_obs *ac_obs_new(const ac_obs_engine *oe, const char *session_id);
/* Ends what is open (a turn cut short by the session's end) and frees o. */
void ac_obs_free(ac_obs *o, int64_t t_ms);
/* An event is applied (data borrowed until ac_obs_event_done); in_turn: whether a turn ran
 * before it. */
void ac_obs_event(ac_obs *o, ac_session *s, const char *name, int64_t t_ms, const json_t *data,
                  int in_turn);
/* The event was applied; in_turn: whether a turn runs now. */
void ac_obs_event_done(ac_obs *o, ac_session *s, int in_turn);
/* A step of the dispatcher (external transitions become span events). */
void ac_obs_step(ac_obs *o, const ac_trace_rec *r);
/* The W3C traceparent of the span current in o (the model call's, the compaction's, else the
 * turn's) into buf (56 bytes and a NUL): 1, or 0 when none is open. */
int ac_obs_traceparent(const ac_obs *o, char *buf, size_t cap);
/* The traceparent of tool call call_id's execute_tool span (its span id chosen now, the span
 * made when the call completes) into buf (56 bytes and a NUL): 1, or 0 when no turn is traced. */
int ac_obs_tool_traceparent(ac_obs *o, const char *call_id, char *buf, size_t cap);
/* The trace id of the turn under way or the last one (32 hex digits); NULL when untraced or
 * before any turn. */
const char *ac_obs_trace_id(const ac_obs *o);
/* An effect starts (start 1) or stops: llm_request and compact open and close spans. */
void ac_obs_effect(ac_obs *o, ac_session *s, const char *effect, int start);

/* The engine's part (obs_engine.c): set up from its config when it names a tracer (and has a
 * loop); 0, or -1 out of memory. */
int ac_obs_engine_setup(ac_engine *e, const ac_engine_config *cfg);
void ac_obs_engine_free(ac_engine *e);

#endif
