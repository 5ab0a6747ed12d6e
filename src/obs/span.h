/*
 * span.h - one span as OTLP/JSON builds it: hex trace and span ids, a name, a kind, times in
 * wall-clock milliseconds (nanosecond strings on the wire), attributes, at most
 * AC_SPAN_MAX_EVENTS events (the rest counted as dropped) and a status.
 */
#ifndef AGENTC_OBS_SPAN_H
#define AGENTC_OBS_SPAN_H

#include <jansson.h>
#include <stdint.h>

#define AC_SPAN_MAX_EVENTS 128

/* OTLP span kinds (enums are integers in the JSON encoding) */
#define AC_SPAN_INTERNAL 1
#define AC_SPAN_SERVER 2
#define AC_SPAN_CLIENT 3

typedef struct ac_span {
    json_t *j;      /* the OTLP span object, without its end time */
    json_t *attrs;  /* its "attributes" array (borrowed from j) */
    json_t *events; /* its "events" array (borrowed from j) */
    uint32_t dropped_events;
    char trace_id[33], span_id[17];
} ac_span;

/* A 32-digit trace id (16 random bytes) or 16-digit span id (8) in out, lower-case hex. */
void ac_span_random_hex(char *out, size_t bytes);

/* A new span: in trace_id (NULL: a new trace) under parent_id (NULL: a root). NULL when out
 * of memory. */
ac_span *ac_span_start(const char *trace_id, const char *parent_id, const char *name, int kind,
                       int64_t start_ms);
void ac_span_str(ac_span *sp, const char *key, const char *v);
void ac_span_strn(ac_span *sp, const char *key, const char *v, size_t n);
void ac_span_int(ac_span *sp, const char *key, int64_t v);
void ac_span_double(ac_span *sp, const char *key, double v);
void ac_span_bool(ac_span *sp, const char *key, int v);
/* An array of strings attribute (the values borrowed). */
void ac_span_strs(ac_span *sp, const char *key, const char *const *v, size_t n);
/* An event at t_ms with attrs (an OTLP attribute array, stolen; NULL: none); past
 * AC_SPAN_MAX_EVENTS it is only counted. */
void ac_span_event(ac_span *sp, const char *name, int64_t t_ms, json_t *attrs);
/* An OTLP attribute {"key", "value": {"stringValue"|"intValue"...}} (new reference). */
json_t *ac_span_kv_str(const char *key, const char *v);
json_t *ac_span_kv_int(const char *key, int64_t v);
json_t *ac_span_kv_double(const char *key, double v);
/* Whether the span holds AC_SPAN_MAX_EVENTS events (another is only counted). */
int ac_span_full(const ac_span *sp);
/* Status ERROR with message. */
void ac_span_error(ac_span *sp, const char *message);
/* Ends the span at end_ms: its OTLP object (new reference; NULL when out of memory), the
 * span freed. */
json_t *ac_span_end(ac_span *sp, int64_t end_ms);
/* Drops a span without ending it. */
void ac_span_free(ac_span *sp);

#endif
