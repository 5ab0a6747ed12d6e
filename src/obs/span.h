/*
 * span.h - one span, kept cheaply until it is exported: hex trace and span ids, a name, a kind,
 * times in wall-clock milliseconds, typed attributes whose strings live in one text arena of the
 * span, at most AC_SPAN_MAX_EVENTS events (the rest counted as dropped) whose attributes are
 * text encoded once and shared, and a status. Its
 * OTLP/JSON text (nanosecond strings, int64 as strings) is written only when it is exported
 * (ac_span_put).
 */
#ifndef AGENTC_OBS_SPAN_H
#define AGENTC_OBS_SPAN_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define AC_SPAN_MAX_EVENTS 128

/* OTLP span kinds (enums are integers in the JSON encoding) */
#define AC_SPAN_INTERNAL 1
#define AC_SPAN_SERVER 2
#define AC_SPAN_CLIENT 3

/* attribute types */
/* attribute types (AC_ATTR_MS: milliseconds, written as a double of seconds) */
enum { AC_ATTR_STR, AC_ATTR_INT, AC_ATTR_DOUBLE, AC_ATTR_BOOL, AC_ATTR_STRS, AC_ATTR_MS };

/* An attribute as a span keeps one: string values are offsets in its arena. Keys and event
 * names, in every call below, are literals (strings that outlive the span and need no JSON
 * escaping): they are neither copied nor escaped. */
typedef struct ac_span_kv {
    const char *key;
    uint32_t val, len; /* len: a string's bytes; an array's strings (NUL-separated) */
    uint8_t type;
    union {
        int64_t i;
        double d;
    } num;
} ac_span_kv;

/* An event: its attributes' OTLP/JSON text borrowed (it outlives the span), and a duration */
typedef struct ac_span_ev {
    int64_t t_ms;
    const char *name, *attrs, *ms_key;
    uint32_t attrs_n;
    int64_t ms; /* < 0: no duration */
} ac_span_ev;

typedef struct ac_span {
    char trace_id[33], span_id[17], parent_id[17]; /* parent_id "" for a root */
    int kind, error;
    int64_t start_ms, end_ms;
    uint32_t name, status; /* arena offsets (status: an error's message) */
    uint32_t dropped_events;
    ac_span_kv *kv;
    size_t nkv, kvcap;
    ac_span_ev *ev;
    size_t nev, evcap;
    ac_buf arena; /* the strings, each NUL-terminated */
} ac_span;

/* A 32-digit trace id (16 random bytes) or 16-digit span id (8) in out, lower-case hex. */
void ac_span_random_hex(char *out, size_t bytes);

/* A W3C traceparent's trace id, parent span id and flags copied out: 1, or 0 (nothing
 * copied) when header is not one (ac_session_set_traceparent's rules). */
int ac_traceparent_parse(const char *header, char trace_id[33], char span_id[17], char flags[3]);

/* A new span: in trace_id (NULL: a new trace) under parent_id (NULL: a root); made in blank
 * (a span ac_span_clear kept) when not NULL, else allocated. NULL when out of memory. */
ac_span *ac_span_start(ac_span *blank, const char *trace_id, const char *parent_id,
                       const char *name, int kind, int64_t start_ms);
/* The span made blank for another ac_span_start, its memory kept: 1, or 0 when it grew past
 * what most spans take (then free it). */
int ac_span_clear(ac_span *sp);
void ac_span_rename(ac_span *sp, const char *name);
void ac_span_str(ac_span *sp, const char *key, const char *v);
void ac_span_strn(ac_span *sp, const char *key, const char *v, size_t n);
void ac_span_int(ac_span *sp, const char *key, int64_t v);
void ac_span_double(ac_span *sp, const char *key, double v);
/* A duration of ms milliseconds as a double of seconds. */
void ac_span_ms(ac_span *sp, const char *key, int64_t ms);
void ac_span_bool(ac_span *sp, const char *key, int v);
/* An array of strings attribute. */
void ac_span_strs(ac_span *sp, const char *key, const char *const *v, size_t n);
/* An event at t_ms: attrs (n bytes), the OTLP/JSON text of its attribute objects
 * ("{\"key\":…},{…}"), is borrowed and must outlive the span (text the tracer interned:
 * ac_tracer_intern), and when ms >= 0 a duration attribute ms_key of ms milliseconds (as seconds)
 * follows. Past AC_SPAN_MAX_EVENTS (or out of memory) it is only counted as dropped. */
void ac_span_event(ac_span *sp, const char *name, int64_t t_ms, const char *attrs, size_t n,
                   const char *ms_key, int64_t ms);
/* Status ERROR with message. */
void ac_span_error(ac_span *sp, const char *message);
/* Ends the span at end_ms: it is the caller's to export (ac_span_put) and free. */
ac_span *ac_span_end(ac_span *sp, int64_t end_ms);
/* The ended span's OTLP/JSON object appended to b. */
void ac_span_put(ac_buf *b, const ac_span *sp);
void ac_span_free(ac_span *sp);

#endif
