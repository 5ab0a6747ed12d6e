/* stream_compare.h - runs a stream with the hot-delta scanners on or off and
 * renders everything observable (sink calls, the assembled turn, the status,
 * the error text) as one byte string, so the two readings can be compared
 * byte for byte. Header-only; for test_delta.c and fuzz_delta.c. */
#ifndef AGENTC_TESTS_STREAM_COMPARE_H
#define AGENTC_TESTS_STREAM_COMPARE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/stream.h"
#include "llm/stream_internal.h"

typedef struct sc_buf {
    char *p;
    size_t len, cap;
} sc_buf;

static void sc_put(sc_buf *b, const void *s, size_t n)
{
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            abort();
        b->p = np;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* A tag, the length, then the bytes: unambiguous for any content. */
static void sc_field(sc_buf *b, const char *tag, const char *s, size_t n)
{
    char head[64];
    int k = snprintf(head, sizeof head, "|%s:%zu:", tag, s ? n : (size_t)0);
    sc_put(b, head, (size_t)k);
    if (s)
        sc_put(b, s, n);
    else
        sc_put(b, "(null)", 6);
}

static void sc_num(sc_buf *b, const char *tag, long long v)
{
    char head[64];
    int k = snprintf(head, sizeof head, "|%s=%lld", tag, v);
    sc_put(b, head, (size_t)k);
}

static void sc_text(void *ud, const char *s, size_t n)
{
    sc_field(ud, "text", s, n);
}
static void sc_reasoning(void *ud, const char *s, size_t n)
{
    sc_field(ud, "reasoning", s, n);
}
static void sc_refusal(void *ud, const char *s, size_t n)
{
    sc_field(ud, "refusal", s, n);
}
static void sc_tool(void *ud, int index, const char *id, const char *name, const char *args,
                    size_t n)
{
    sc_num(ud, "tool", index);
    sc_field(ud, "id", id, id ? strlen(id) : 0);
    sc_field(ud, "name", name, name ? strlen(name) : 0);
    sc_field(ud, "args", args, n);
}

static void sc_turn(sc_buf *b, const ac_stream_turn *t)
{
    sc_field(b, "T.text", t->text, t->text_len);
    sc_field(b, "T.reasoning", t->reasoning, t->reasoning_len);
    sc_field(b, "T.refusal", t->refusal, t->refusal_len);
    for (size_t i = 0; i < t->n_thinking_blocks; i++) {
        const ac_thinking_block *k = &t->thinking_blocks[i];
        sc_field(b, "T.think", k->thinking, k->thinking_len);
        sc_field(b, "T.sig", k->signature, strlen(k->signature));
        sc_field(b, "T.data", k->data, k->data ? strlen(k->data) : 0);
    }
    for (size_t i = 0; i < t->n_tool_calls; i++) {
        const ac_tool_call_acc *c = &t->tool_calls[i];
        sc_num(b, "T.call", c->index);
        sc_field(b, "T.id", c->id, strlen(c->id));
        sc_field(b, "T.name", c->name, strlen(c->name));
        sc_field(b, "T.args", c->arguments, c->arguments_len);
    }
    sc_field(b, "T.finish", t->finish_reason, t->finish_reason ? strlen(t->finish_reason) : 0);
    sc_num(b, "T.in", t->input_tokens);
    sc_num(b, "T.out", t->output_tokens);
    sc_num(b, "T.cached", t->cached_tokens);
    sc_num(b, "T.cwrite", t->cache_write_tokens);
    sc_num(b, "T.rtokens", t->reasoning_tokens);
    sc_num(b, "T.usage", t->have_usage);
    sc_field(b, "T.rid", t->response_id, t->response_id ? strlen(t->response_id) : 0);
    sc_field(b, "T.model", t->response_model, t->response_model ? strlen(t->response_model) : 0);
    sc_num(b, "T.rread", t->response_read);
    sc_num(b, "T.term", t->terminated);
    sc_num(b, "T.err", t->error);
    sc_num(b, "T.retry", t->error_retryable);
    sc_field(b, "T.etype", t->error_type, t->error_type ? strlen(t->error_type) : 0);
    sc_field(b, "T.emsg", t->error_message, t->error_message ? strlen(t->error_message) : 0);
}

/* Feeds in (chunks of at most chunk bytes; 0: whole) with the scanners on or
 * off, with a turn cap of max_turn (0: default), to a new stream or (reused)
 * to one that read `in` before and was reset. Returns the rendering (free
 * it); *fast gets the number of events the scanners read. */
static char *sc_run_on(ac_wire wire, const char *in, size_t len, size_t chunk, int on,
                       size_t max_turn, size_t *fast, int reused)
{
    sc_buf b = {0};
    ac_stream_sink sink = {&b, sc_text, sc_reasoning, sc_refusal, sc_tool};
    ac_stream *st = ac_stream_new(wire, reused ? NULL : &sink, max_turn);
    if (!st)
        abort();
    ac_stream__set_fast(st, on);
    if (reused) {
        ac_stream_feed(st, in, len);
        ac_stream_finish(st);
        ac_stream_reset(st, &sink);
    }
    int rc = 0;
    if (!chunk)
        chunk = len ? len : 1;
    for (size_t off = 0; off < len && rc == 0; off += chunk)
        rc = ac_stream_feed(st, in + off, len - off < chunk ? len - off : chunk);
    sc_num(&b, "feed", rc);
    sc_num(&b, "finish", ac_stream_finish(st));
    sc_num(&b, "events", (long long)ac_stream_events(st));
    sc_num(&b, "retryable", ac_stream_error_retryable(st));
    sc_field(&b, "error", ac_stream_error(st), strlen(ac_stream_error(st)));
    sc_turn(&b, ac_stream_turn_get(st));
    if (fast)
        *fast = ac_stream__fast_events(st);
    ac_stream_free(st);
    if (!b.p)
        sc_put(&b, "", 0);
    return b.p;
}

static char *sc_run(ac_wire wire, const char *in, size_t len, size_t chunk, int on, size_t max_turn,
                    size_t *fast)
{
    return sc_run_on(wire, in, len, chunk, on, max_turn, fast, 0);
}

#endif
