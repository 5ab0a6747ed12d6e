/* Server-Sent Events scanner: a Ragel machine over the WHATWG event-stream grammar.
 *
 * The machine keeps its state (cs) between ac_sse_feed() calls, so input may be
 * split at any byte. Field names are matched by the machine; field values are
 * copied in runs: the first value byte's action finds the end of the line with
 * memchr and jumps there, so long data lines cost two memchr and one memcpy. */
#include "llm/sse.h"
#include "util/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F_NONE, F_DATA, F_EVENT, F_ID, F_RETRY, F_IGNORE, F_COMMENT };

struct ac_sse {
    int cs;
    int bom;      /* BOM bytes matched so far; 3 once past the BOM stage */
    int after_cr; /* the previous byte was a CR ending a line */
    int status;   /* sticky: nonzero after an error or a stop */
    int finished;
    int field;   /* F_* of the line being scanned */
    int pending; /* data or event fields seen since the last dispatch */
    size_t line_len;
    size_t max_line, max_event;
    /* the buffers' own cap is not used: the callers check max_line and max_event */
    ac_buf data;  /* data buffer: values of data lines, each followed by LF */
    ac_buf event; /* event type buffer */
    ac_buf val;   /* value of the current non-data line */
    ac_buf id;    /* last event ID */
    long long retry_ms;
    unsigned long long n_events;
    ac_sse_event_fn on_event;
    ac_sse_comment_fn on_comment;
    void *ud;
};

static void buf_swap(ac_buf *a, ac_buf *b)
{
    ac_buf t = *a;
    *a = *b;
    *b = t;
}

/* First CR or LF in [p, pe), or pe. */
static const char *sse_find_eol(const char *p, const char *pe)
{
    const char *lf = memchr(p, '\n', (size_t)(pe - p));
    const char *end = lf ? lf : pe;
    const char *cr = memchr(p, '\r', (size_t)(end - p));
    return cr ? cr : end;
}

static int sse_fail(ac_sse *s, int code)
{
    s->status = code;
    return code;
}

/* Stores n value bytes of the current line. Returns 0 or an error code. */
static int sse_take_value(ac_sse *s, const char *p, size_t n)
{
    if (n > s->max_line - s->line_len)
        return sse_fail(s, AC_SSE_ERR_LINE_TOO_LONG);
    s->line_len += n;
    ac_buf *dst;
    switch (s->field) {
    case F_DATA:
        /* data.n may be max_event + 1 when it ends in a joining LF */
        if (s->data.n > s->max_event || n > s->max_event - s->data.n)
            return sse_fail(s, AC_SSE_ERR_EVENT_TOO_LARGE);
        dst = &s->data;
        break;
    case F_EVENT:
    case F_ID:
    case F_RETRY:
        dst = &s->val;
        break;
    case F_COMMENT:
        if (!s->on_comment)
            return 0;
        dst = &s->val;
        break;
    default:
        return 0;
    }
    if (ac_buf_add(dst, p, n) != 0)
        return sse_fail(s, AC_SSE_ERR_NOMEM);
    return 0;
}

static int sse_dispatch(ac_sse *s)
{
    s->pending = 0;
    if (s->data.n == 0) {
        s->event.n = 0;
        return 0;
    }
    s->data.n--; /* every data line appended a LF; drop the last one */
    s->data.p[s->data.n] = '\0';
    ac_sse_event ev;
    ev.data = s->data.p;
    ev.data_len = s->data.n;
    if (s->event.n) {
        ev.event = s->event.p;
        ev.event_len = s->event.n;
    } else {
        ev.event = "message";
        ev.event_len = 7;
    }
    ev.id = s->id.n ? s->id.p : "";
    ev.id_len = s->id.n;
    s->n_events++;
    int rc = s->on_event ? s->on_event(s->ud, &ev) : 0;
    s->data.n = 0;
    s->event.n = 0;
    if (rc != 0)
        return sse_fail(s, AC_SSE_STOPPED);
    return 0;
}

/* The line that just ended takes effect. Returns nonzero to stop scanning. */
static int sse_end_line(ac_sse *s)
{
    int rc = 0;
    switch (s->field) {
    case F_NONE:
        rc = sse_dispatch(s);
        break;
    case F_DATA:
        /* the LF may go one past the cap: a final LF is dropped at dispatch */
        if (s->data.n > s->max_event)
            return sse_fail(s, AC_SSE_ERR_EVENT_TOO_LARGE);
        if (ac_buf_add(&s->data, "\n", 1) != 0)
            return sse_fail(s, AC_SSE_ERR_NOMEM);
        s->pending = 1;
        break;
    case F_EVENT:
        buf_swap(&s->event, &s->val);
        if (!s->event.p && ac_buf_reserve(&s->event, 0) != 0)
            return sse_fail(s, AC_SSE_ERR_NOMEM);
        s->event.p[s->event.n] = '\0';
        s->pending = 1;
        break;
    case F_ID:
        /* an ID containing NUL is ignored, per the spec */
        if (!s->val.n || !memchr(s->val.p, '\0', s->val.n))
            buf_swap(&s->id, &s->val);
        break;
    case F_RETRY: {
        long long v = 0;
        size_t i;
        for (i = 0; i < s->val.n; i++) {
            unsigned char c = (unsigned char)s->val.p[i];
            if (c < '0' || c > '9')
                break;
            if (v < (long long)1e15)
                v = v * 10 + (c - '0');
        }
        if (s->val.n && i == s->val.n)
            s->retry_ms = v;
        break;
    }
    case F_COMMENT:
        if (s->on_comment)
            s->on_comment(s->ud, s->val.n ? s->val.p : "", s->val.n);
        break;
    default:
        break;
    }
    s->field = F_NONE;
    s->line_len = 0;
    s->val.n = 0;
    return rc;
}

%%{
    machine sse;
    access s->;

    action clear_cr { s->after_cr = 0; }

    action name_char {
        if (++s->line_len > s->max_line) {
            sse_fail(s, AC_SSE_ERR_LINE_TOO_LONG);
            fbreak;
        }
    }

    action value {
        {
            const char *q = sse_find_eol(p, pe);
            if (sse_take_value(s, p, (size_t)(q - p)) != 0)
                fbreak;
            fexec q;
        }
    }

    action comment {
        s->after_cr = 0;
        s->field = F_COMMENT;
    }

    action cr {
        s->after_cr = 0;
        if (sse_end_line(s) != 0)
            fbreak;
        s->after_cr = 1;
    }

    action lf {
        if (s->after_cr) {
            s->after_cr = 0; /* second half of a CRLF */
        } else if (sse_end_line(s) != 0) {
            fbreak;
        }
    }

    name_char = any - [:\r\n];
    vchar = any - [\r\n];

    known_name = 'data' %{ s->field = F_DATA; }
               | 'event' %{ s->field = F_EVENT; }
               | 'id' %{ s->field = F_ID; }
               | 'retry' %{ s->field = F_RETRY; };
    other_name = (name_char+ - ('data' | 'event' | 'id' | 'retry')) %{ s->field = F_IGNORE; };
    name = (known_name | other_name) >clear_cr $name_char;

    # One space after the colon is not part of the value.
    vrest = (vchar $value)*;
    value_part = ' ' vrest | (vchar - ' ') $value vrest | '';

    field_line = name (':' value_part)?;
    comment_line = ':' @comment value_part;
    eol = '\r' @cr | '\n' @lf;
    line = (field_line | comment_line)? eol;

    main := line*;

    write data nofinal noentry;
}%%

ac_sse *ac_sse_new(size_t max_line, size_t max_event, ac_sse_event_fn on_event,
                   ac_sse_comment_fn on_comment, void *ud)
{
    ac_sse *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->max_line = max_line ? max_line : AC_SSE_DEFAULT_MAX_LINE;
    s->max_event = max_event ? max_event : AC_SSE_DEFAULT_MAX_EVENT;
    s->on_event = on_event;
    s->on_comment = on_comment;
    s->ud = ud;
    s->retry_ms = -1;
    s->field = F_NONE;
    ac_buf_init(&s->data, AC_BUF_MAX);
    ac_buf_init(&s->event, AC_BUF_MAX);
    ac_buf_init(&s->val, AC_BUF_MAX);
    ac_buf_init(&s->id, AC_BUF_MAX);
    %% write init;
    return s;
}

/* Empties b for reuse, or frees it when it grew past what is worth keeping. */
static void buf_keep(ac_buf *b)
{
    if (b->cap > AC_SSE_KEEP_BYTES)
        ac_buf_free(b);
    else
        ac_buf_clear(b);
}

void ac_sse_reset(ac_sse *s)
{
    ac_sse kept = *s;
    memset(s, 0, sizeof *s);
    s->max_line = kept.max_line;
    s->max_event = kept.max_event;
    s->on_event = kept.on_event;
    s->on_comment = kept.on_comment;
    s->ud = kept.ud;
    s->retry_ms = -1;
    s->field = F_NONE;
    s->data = kept.data;
    s->event = kept.event;
    s->val = kept.val;
    s->id = kept.id;
    buf_keep(&s->data);
    buf_keep(&s->event);
    buf_keep(&s->val);
    buf_keep(&s->id);
    %% write init;
}

static int sse_exec(ac_sse *s, const char *buf, size_t len)
{
    const char *p = buf;
    const char *pe = buf + len;
    %% write exec;
    if (s->status)
        return s->status;
    if (s->cs == sse_error)
        return sse_fail(s, AC_SSE_ERR_INTERNAL);
    return 0;
}

static const char sse_bom[3] = {'\xEF', '\xBB', '\xBF'};

int ac_sse_feed(ac_sse *s, const char *buf, size_t len)
{
    if (s->status)
        return s->status;
    if (s->finished)
        return AC_SSE_ERR_FINISHED;
    /* An optional UTF-8 BOM at the very start of the stream is skipped. A partial
     * match that fails is replayed as ordinary bytes. */
    while (s->bom < 3 && len > 0) {
        if (*buf == sse_bom[s->bom]) {
            s->bom++;
            buf++;
            len--;
            continue;
        }
        int matched = s->bom;
        s->bom = 3;
        if (matched) {
            int rc = sse_exec(s, sse_bom, (size_t)matched);
            if (rc)
                return rc;
        }
    }
    if (len == 0)
        return 0;
    return sse_exec(s, buf, len);
}

int ac_sse_finish(ac_sse *s)
{
    if (s->status)
        return s->status;
    if (s->finished)
        return AC_SSE_ERR_FINISHED;
    if (s->bom > 0 && s->bom < 3) {
        int matched = s->bom;
        s->bom = 3;
        int rc = sse_exec(s, sse_bom, (size_t)matched);
        if (rc)
            return rc;
    }
    s->finished = 1;
    int mid_line = s->line_len > 0 || s->field != F_NONE;
    /* the incomplete event is discarded */
    s->data.n = 0;
    s->event.n = 0;
    if (mid_line)
        return AC_SSE_ERR_EOF_MID_LINE;
    if (s->pending)
        return AC_SSE_ERR_EOF_MID_EVENT;
    return 0;
}

long long ac_sse_retry_ms(const ac_sse *s)
{
    return s->retry_ms;
}

unsigned long long ac_sse_event_count(const ac_sse *s)
{
    return s->n_events;
}

const char *ac_sse_strerror(int code)
{
    switch (code) {
    case AC_SSE_OK:
        return "ok";
    case AC_SSE_STOPPED:
        return "stopped by the event callback";
    case AC_SSE_ERR_NOMEM:
        return "out of memory";
    case AC_SSE_ERR_LINE_TOO_LONG:
        return "event-stream line exceeds the maximum line length";
    case AC_SSE_ERR_EVENT_TOO_LARGE:
        return "event-stream event exceeds the maximum event size";
    case AC_SSE_ERR_EOF_MID_LINE:
        return "event stream ended in the middle of a line";
    case AC_SSE_ERR_EOF_MID_EVENT:
        return "event stream ended in the middle of an event";
    case AC_SSE_ERR_FINISHED:
        return "event stream already finished";
    case AC_SSE_ERR_INTERNAL:
        return "event-stream scanner internal error";
    default:
        return "unknown event-stream status";
    }
}

void ac_sse_free(ac_sse *s)
{
    if (!s)
        return;
    ac_buf_free(&s->data);
    ac_buf_free(&s->event);
    ac_buf_free(&s->val);
    ac_buf_free(&s->id);
    free(s);
}
