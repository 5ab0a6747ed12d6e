/* Server-Sent Events scanner (WHATWG event-stream framing).
 *
 * Bytes from an HTTP body go in through ac_sse_feed() in chunks split anywhere;
 * complete events come out through a callback. The scanner copies what it needs,
 * so the caller may reuse its buffer as soon as ac_sse_feed() returns. Every
 * internal buffer is capped: an over-long line or event is an error, never
 * unbounded growth. */
#ifndef AGENTC_LLM_SSE_H
#define AGENTC_LLM_SSE_H

#include <stddef.h>

/* Status codes. Values are stable; never reuse a number. */
enum {
    AC_SSE_OK = 0,
    AC_SSE_STOPPED = 1,              /* the event callback returned nonzero */
    AC_SSE_ERR_NOMEM = -1,           /* allocation failed */
    AC_SSE_ERR_LINE_TOO_LONG = -2,   /* a line exceeded max_line bytes */
    AC_SSE_ERR_EVENT_TOO_LARGE = -3, /* an event's data exceeded max_event bytes */
    AC_SSE_ERR_EOF_MID_LINE = -4,    /* input ended inside a line */
    AC_SSE_ERR_EOF_MID_EVENT = -5,   /* input ended after fields but before the blank line */
    AC_SSE_ERR_FINISHED = -6,        /* fed after ac_sse_finish() */
    AC_SSE_ERR_INTERNAL = -7         /* the state machine failed (a bug) */
};

#define AC_SSE_DEFAULT_MAX_LINE ((size_t)1 << 20)  /* 1 MiB */
#define AC_SSE_DEFAULT_MAX_EVENT ((size_t)8 << 20) /* 8 MiB */

typedef struct ac_sse ac_sse;

/* One dispatched event. All pointers are borrowed from the scanner and valid only
 * during the callback. Each string is also NUL-terminated (data may contain NULs;
 * use the lengths). event is "message" when the stream gave no event type; id is
 * the last event ID seen so far in the stream (it persists across events, as the
 * spec says), "" if none. */
typedef struct ac_sse_event {
    const char *event;
    size_t event_len;
    const char *data;
    size_t data_len;
    const char *id;
    size_t id_len;
} ac_sse_event;

/* Called for every dispatched event. A nonzero return stops the scanner:
 * ac_sse_feed() returns AC_SSE_STOPPED and every later call does too.
 * The callback must not free the scanner. */
typedef int (*ac_sse_event_fn)(void *ud, const ac_sse_event *ev);

/* Called for every comment line (one starting with ':'), with the text after the
 * colon, one leading space stripped. Borrowed, valid only during the call. */
typedef void (*ac_sse_comment_fn)(void *ud, const char *text, size_t len);

/* Creates a scanner. max_line / max_event of 0 select the defaults above.
 * on_event and on_comment may be NULL. Returns NULL on allocation failure. */
ac_sse *ac_sse_new(size_t max_line, size_t max_event, ac_sse_event_fn on_event,
                   ac_sse_comment_fn on_comment, void *ud);

/* Scans len bytes. Returns AC_SSE_OK, AC_SSE_STOPPED, or a negative AC_SSE_ERR_*.
 * After an error or a stop the scanner refuses further input and returns the same
 * code again. */
int ac_sse_feed(ac_sse *sse, const char *buf, size_t len);

/* Marks the end of input. Any incomplete event is discarded. Returns AC_SSE_OK if
 * the stream ended cleanly (at a line end, with no undispatched fields),
 * AC_SSE_ERR_EOF_MID_LINE or AC_SSE_ERR_EOF_MID_EVENT if it was cut short, or the
 * sticky error/stop code of an earlier feed. */
int ac_sse_finish(ac_sse *sse);

/* Reconnection time in milliseconds from the last valid "retry" field, or -1. */
long long ac_sse_retry_ms(const ac_sse *sse);

/* Number of events dispatched so far. */
unsigned long long ac_sse_event_count(const ac_sse *sse);

/* A static description of a status code; never NULL. */
const char *ac_sse_strerror(int code);

/* Frees the scanner and everything it owns. NULL is a no-op. */
void ac_sse_free(ac_sse *sse);

/* Makes sse as ac_sse_new() left it (same limits and callbacks), keeping its
 * buffers for the next stream unless one grew past AC_SSE_KEEP_BYTES. */
#define AC_SSE_KEEP_BYTES 4096
void ac_sse_reset(ac_sse *sse);

#endif
