/*
 * streams.c - streamed responses of `agentc serve`: Server-Sent Events (the frames a
 * session's journal gives, queued per reader) and byte buffers (the OpenAI-compatible
 * stream).
 *
 * A stream is the content reader of a libmicrohttpd response. When it has
 * nothing to send it suspends its connection; a queued frame (or a ping, or
 * the end) resumes it and asks the server to run MHD again. A slow reader's
 * queued deltas of one kind are joined into one frame (the id of the last);
 * one more than MAX_QUEUED bytes behind is ended: it reconnects with its
 * Last-Event-ID and reads the rest from the journal.
 */
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

#define MAX_QUEUED ((size_t)8 << 20)
#define MAX_JOINED ((size_t)64 << 10) /* a joined delta grows to this, then a new one starts */

static void unlink_stream(srv_stream *st)
{
    if (!st->in_list || !st->ss)
        return;
    for (srv_stream **pp = &st->ss->streams; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    st->in_list = 0;
}

srv_stream *srv_stream_new(srv *sv, srv_sess *ss)
{
    srv_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->sv = sv;
    st->ss = ss;
    st->log = 1;
    if (ss) {
        st->next = ss->streams;
        ss->streams = st;
        st->in_list = 1;
    }
    return st;
}

void srv_stream_wake(srv_stream *st)
{
    if (st->suspended && st->conn) {
        st->suspended = 0;
        MHD_resume_connection(st->conn);
        srv_kick(st->sv);
    }
}

void srv_stream_push(srv_stream *st, const char *data, size_t n)
{
    if (st->len + n > st->cap) {
        size_t cap = st->cap ? st->cap : 256;
        while (cap < st->len + n)
            cap *= 2;
        char *b = realloc(st->buf, cap);
        if (!b)
            return; /* the client misses this chunk; nothing else breaks */
        st->buf = b;
        st->cap = cap;
    }
    memcpy(st->buf + st->len, data, n);
    st->len += n;
    if (!st->holding)
        srv_stream_wake(st);
}

/* Bytes pushed from now on wait (the client does not get them) until released or dropped. */
void srv_stream_hold(srv_stream *st)
{
    if (!st->holding) {
        st->holding = 1;
        st->held_from = st->len;
    }
}

void srv_stream_release(srv_stream *st)
{
    if (st->holding) {
        st->holding = 0;
        srv_stream_wake(st);
    }
}

void srv_stream_drop_held(srv_stream *st)
{
    if (st->holding) {
        st->holding = 0;
        st->len = st->held_from;
    }
}

static void queue_clear(srv_stream *st)
{
    while (st->head) {
        srv_qnode *q = st->head;
        st->head = q->next;
        srv_frame_unref(q->f);
        free(q);
    }
    st->tail = NULL;
    st->off = st->queued = 0;
}

void srv_stream_frame(srv_stream *st, srv_frame *f)
{
    if (st->done || (f->n && f->n <= st->skip)) /* sent by its catch-up already */
        return;
    srv_qnode *t = st->tail;
    if (t && f->delta && t->f->delta && t->f->type == f->type && !(t == st->head && st->off) &&
        t->f->delta_len + f->delta_len <= MAX_JOINED) {
        if (t->f->refs == 1) { /* this reader's joined frame: f appended in place */
            size_t len = t->f->len;
            if (srv_frame_append(t->f, f) == 0) {
                st->queued += t->f->len - len;
                return;
            }
        } else {
            srv_frame *j = srv_frame_join(t->f, f); /* not being sent: joined */
            if (j) {
                st->queued += j->len - t->f->len;
                srv_frame_unref(t->f);
                t->f = j;
                return;
            }
        }
    }
    srv_qnode *q = malloc(sizeof *q);
    /* too far behind: it reads the journal (a frame is queued while less than the cap is:
     * one larger than the cap is sent, or a reader could never get past it) */
    if (!q || st->queued >= MAX_QUEUED) {
        free(q);
        srv_stream_finish(st);
        return;
    }
    f->refs++;
    q->f = f;
    q->next = NULL;
    if (st->tail)
        st->tail->next = q;
    else
        st->head = q;
    st->tail = q;
    st->queued += f->len;
    srv_stream_wake(st);
}

void srv_stream_finish(srv_stream *st)
{
    st->done = 1;
    srv_stream_wake(st);
}

void srv_stream_detach(srv_stream *st)
{
    unlink_stream(st);
    st->ss = NULL;
    st->done = 1;
    srv_stream_wake(st);
}

void srv_streams_ping(srv *sv)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        for (srv_stream *st = ss->streams; st; st = st->next)
            if (st->log && !st->done) {
                st->ping = 1;
                srv_stream_wake(st);
            }
}

static ssize_t read_log(srv_stream *st, char *buf, size_t max)
{
    size_t n = 0;
    if (st->ping && st->off == 0 && max >= 8) {
        memcpy(buf, ": ping\n\n", 8);
        n = 8;
        st->ping = 0;
    }
    while (st->head && n < max) {
        srv_qnode *q = st->head;
        size_t est = q->f->len;
        if (st->off == 0 && srv_frame_render(q->f)) { /* out of memory: it reconnects */
            queue_clear(st);
            st->done = 1;
            break;
        }
        st->queued = st->queued - est + q->f->len;
        size_t k = q->f->len - st->off;
        if (k > max - n)
            k = max - n;
        memcpy(buf + n, q->f->bytes + st->off, k);
        n += k;
        st->off += k;
        if (st->off == q->f->len) {
            st->off = 0;
            st->queued -= q->f->len;
            st->head = q->next;
            if (!st->head)
                st->tail = NULL;
            srv_frame_unref(q->f);
            free(q);
        }
    }
    return (ssize_t)n;
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    srv_stream *st = cls;
    (void)pos;
    ssize_t n;
    if (st->log) {
        n = read_log(st, buf, max);
    } else {
        size_t end = st->holding ? st->held_from : st->len; /* held bytes wait */
        size_t k = end - st->rd;
        if (k > max)
            k = max;
        memcpy(buf, st->buf + st->rd, k);
        st->rd += k;
        if (st->rd == st->len)
            st->rd = st->len = st->held_from = 0;
        n = (ssize_t)k;
    }
    if (n > 0)
        return n;
    if ((st->done && !st->holding) || !st->conn)
        return MHD_CONTENT_READER_END_OF_STREAM;
    st->suspended = 1;
    MHD_suspend_connection(st->conn);
    return 0;
}

static void reader_free(void *cls)
{
    srv_stream *st = cls;
    unlink_stream(st);
    queue_clear(st);
    if (st->owner)
        st->owner->streams--;
    if (st->log && st->ss && !st->ss->streams) { /* its last reader: no frames made */
        srv_frames_free(st->ss->live);
        st->ss->live = NULL;
    }
    if (!st->log && st->ss && st->ss->ephemeral) {
        /* the client of an OpenAI-compatible stream went away: stop its turn */
        srv_sess *ss = st->ss;
        st->ss = NULL;
        ss->chat = NULL;
        ss->done_ud = NULL;
        ss->on_done = NULL;
        srv_sess_free(ss);
    }
    free(st->buf);
    free(st);
}

struct MHD_Response *srv_stream_response(srv_stream *st)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader, st, reader_free);
    if (!r)
        return NULL;
    MHD_add_response_header(r, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    return r;
}
