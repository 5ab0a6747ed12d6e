/* span.c - the span model (span.h). */
#include "obs/span.h"

#include "util/buf.h"
#include "util/random.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ac_span_random_hex(char *out, size_t bytes)
{
    unsigned char b[16] = {0};
    if (bytes > sizeof b)
        bytes = sizeof b;
    ac_random_bytes(b, bytes);
    int zero = 1;
    for (size_t i = 0; i < bytes; i++)
        zero &= b[i] == 0;
    if (zero)
        b[0] = 1; /* an all-zero id is invalid */
    for (size_t i = 0; i < bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static json_t *ns_string(int64_t ms)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64 "000000", ms > 0 ? ms : 0);
    return json_string(buf);
}

ac_span *ac_span_start(const char *trace_id, const char *parent_id, const char *name, int kind,
                       int64_t start_ms)
{
    ac_span *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    if (trace_id && strlen(trace_id) == 32)
        memcpy(sp->trace_id, trace_id, 33);
    else
        ac_span_random_hex(sp->trace_id, 16);
    ac_span_random_hex(sp->span_id, 8);
    sp->attrs = json_array();
    sp->events = json_array();
    sp->j = json_pack("{s:s, s:s, s:s, s:i, s:o, s:O, s:O}", "traceId", sp->trace_id, "spanId",
                      sp->span_id, "name", name, "kind", kind, "startTimeUnixNano",
                      ns_string(start_ms), "attributes", sp->attrs, "events", sp->events);
    json_decref(sp->attrs);
    json_decref(sp->events);
    if (!sp->j) {
        free(sp);
        return NULL;
    }
    if (parent_id && *parent_id)
        json_object_set_new(sp->j, "parentSpanId", json_string(parent_id));
    return sp;
}

/* {"key": key, "value": {type: v}} (v stolen) */
static json_t *kv(const char *key, const char *type, json_t *v)
{
    json_t *val = json_object(), *o = json_object();
    if (!val || !o || !v || json_object_set_new_nocheck(val, type, v) ||
        json_object_set_new_nocheck(o, "key", json_string(key)) ||
        json_object_set_new_nocheck(o, "value", val)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *ac_span_kv_str(const char *key, const char *v)
{
    return kv(key, "stringValue", json_string(v ? v : ""));
}

json_t *ac_span_kv_int(const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v); /* int64 is a string in OTLP/JSON */
    return kv(key, "intValue", json_string(buf));
}

json_t *ac_span_kv_double(const char *key, double v)
{
    return kv(key, "doubleValue", json_real(v));
}

int ac_span_full(const ac_span *sp)
{
    return json_array_size(sp->events) >= AC_SPAN_MAX_EVENTS;
}

void ac_span_str(ac_span *sp, const char *key, const char *v)
{
    if (sp)
        json_array_append_new(sp->attrs, ac_span_kv_str(key, v));
}

void ac_span_strn(ac_span *sp, const char *key, const char *v, size_t n)
{
    if (sp)
        json_array_append_new(sp->attrs, json_pack("{s:s, s:{s:s%}}", "key", key, "value",
                                                   "stringValue", v ? v : "", v ? n : 0));
}

void ac_span_int(ac_span *sp, const char *key, int64_t v)
{
    if (sp)
        json_array_append_new(sp->attrs, ac_span_kv_int(key, v));
}

void ac_span_double(ac_span *sp, const char *key, double v)
{
    if (sp)
        json_array_append_new(sp->attrs, ac_span_kv_double(key, v));
}

void ac_span_bool(ac_span *sp, const char *key, int v)
{
    if (sp)
        json_array_append_new(sp->attrs,
                              json_pack("{s:s, s:{s:b}}", "key", key, "value", "boolValue", v));
}

void ac_span_strs(ac_span *sp, const char *key, const char *const *v, size_t n)
{
    if (!sp)
        return;
    json_t *vals = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(vals, json_pack("{s:s}", "stringValue", v[i] ? v[i] : ""));
    json_array_append_new(sp->attrs, json_pack("{s:s, s:{s:{s:o}}}", "key", key, "value",
                                               "arrayValue", "values", vals));
}

void ac_span_event(ac_span *sp, const char *name, int64_t t_ms, json_t *attrs)
{
    if (!sp || json_array_size(sp->events) >= AC_SPAN_MAX_EVENTS) {
        if (sp)
            sp->dropped_events++;
        json_decref(attrs);
        return;
    }
    json_t *e = json_object();
    if (!e || json_object_set_new_nocheck(e, "name", json_string(name ? name : "")) ||
        json_object_set_new_nocheck(e, "timeUnixNano", ns_string(t_ms)) ||
        json_object_set_new_nocheck(e, "attributes", attrs ? attrs : json_array())) {
        json_decref(e);
        return;
    }
    json_array_append_new(sp->events, e);
}

void ac_span_error(ac_span *sp, const char *message)
{
    if (sp)
        json_object_set_new(sp->j, "status",
                            json_pack("{s:i, s:s}", "code", 2, "message", message ? message : ""));
}

json_t *ac_span_end(ac_span *sp, int64_t end_ms)
{
    if (!sp)
        return NULL;
    json_t *j = sp->j;
    json_object_set_new(j, "endTimeUnixNano", ns_string(end_ms));
    if (sp->dropped_events)
        json_object_set_new(j, "droppedEventsCount", json_integer(sp->dropped_events));
    free(sp);
    return j;
}

void ac_span_free(ac_span *sp)
{
    if (!sp)
        return;
    json_decref(sp->j);
    free(sp);
}
