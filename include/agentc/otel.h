/*
 * otel.h - traces of sessions over OTLP/HTTP (JSON encoding).
 *
 * A tracer batches the spans of every engine that names it (ac_engine_config.tracer) and
 * sends them with libcurl on the loop it was made on, never blocking it: at most queue_max
 * ended spans waiting (their text written as each ends; the ones past it are dropped and
 * counted), a POST every delay_ms or as soon as batch_max spans wait, each POST given
 * timeout_ms. A batch the collector refuses (an
 * error status, no answer) is dropped and counted; a 429 or 503 with Retry-After holds the next
 * POST back that long.
 *
 * What the engines trace (docs/observability.md): a span `invoke_agent {agent}` per turn, under
 * it `chat {model}` per model call (a retry is a span of its own) and `execute_tool {tool}` per
 * tool call, `compact {strategy}` per compaction, the GenAI semantic conventions' attributes,
 * and every external transition of the spec as a span event `agentc.transition` with its spec
 * line. Message contents are recorded only when capture_content is set; secrets never.
 */
#ifndef AGENTC_OTEL_H
#define AGENTC_OTEL_H

#include <stdbool.h>
#include <stdint.h>

#include "agentc/agentc.h"

typedef struct ac_tracer ac_tracer;

typedef struct ac_tracer_config {
    const char *url;                 /* the traces URL, e.g. http://host:4318/v1/traces */
    const char *const *headers;      /* "Name: value" sent with each POST, NULL-terminated */
    const char *service_name;        /* NULL: "agentc" */
    const char *resource_attributes; /* "k=v,k2=v2" (OTEL_RESOURCE_ATTRIBUTES), may be NULL */
    bool capture_content;            /* record messages, tool arguments and results */
    int queue_max, batch_max;        /* 0: 2048 and 512 */
    int64_t delay_ms, timeout_ms;    /* 0: 5000 and 30000 */
} ac_tracer_config;

/* A tracer on loop (required). NULL with err filled (AC_EINVAL, AC_ENOMEM) on failure. */
ac_tracer *ac_tracer_new(ac_loop *loop, const ac_tracer_config *cfg, ac_error *err);

/* A tracer configured by the standard variables: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (as is) or
 * OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended), OTEL_EXPORTER_OTLP_HEADERS
 * ("k=v,k2=v2", values percent-decoded), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and the batch span processor's
 * OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_SCHEDULE_DELAY and
 * OTEL_BSP_EXPORT_TIMEOUT (milliseconds). NULL with err->code AC_OK when
 * tracing is off: no endpoint, OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true; NULL with
 * an error code when a variable is malformed (the text names it, never a header's value). */
ac_tracer *ac_tracer_from_env(ac_loop *loop, ac_error *err);

/* Spans dropped so far: past the queue, or in a batch the collector did not take. */
uint64_t ac_tracer_dropped(const ac_tracer *t);
/* Spans the collector took (a 2xx answer). */
uint64_t ac_tracer_exported(const ac_tracer *t);

/* What the exporter did: spans exported and dropped, the bytes of the batches the collector
 * took, and the longest time (the loop thread's CPU time) one export step held the loop: an
 * ended span's text written into the batch being filled, or starting a batch's POST. */
typedef struct ac_tracer_stats {
    uint64_t exported, dropped, bytes;
    int64_t longest_step_us;
} ac_tracer_stats;

/* ac_tracer_shutdown, the stats as they were at the end given in *out (may be NULL). */
void ac_tracer_shutdown_stats(ac_tracer *t, int64_t bound_ms, ac_tracer_stats *out);

/* Sends what is queued and frees the tracer, running the loop for at most bound_ms (0: not at
 * all) while the last POST is under way; what is not sent by then is dropped. Free the engines
 * that name it first. Not from a callback of its loop. NULL is a no-op. */
void ac_tracer_shutdown(ac_tracer *t, int64_t bound_ms);

/* A W3C traceparent header value ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>")
 * received with what starts or continues a turn of s: the next turn s begins (one under way
 * keeps its own) is in that trace, its invoke_agent span a child of the span named, and its
 * trace id is reported (the turn's user_message, ac_session_trace_id) even when s is not
 * traced; untraced, that turn's model and MCP requests forward the header as it came. Checked
 * strictly: 1 taken, 0 ignored (NULL, malformed, an all-zero id, version ff), never an error.
 * Loop thread. */
int ac_session_set_traceparent(ac_session *s, const char *header);

#endif
