/* The stream's events read without jansson: the Ragel scanners of delta.rl
 * find the strings, and this file applies them to the turn exactly as the
 * jansson decoders (stream_openai.c, stream_anthropic.c) would, in the same
 * order and through the same calls. Whatever those decoders would reject or
 * treat specially is left to them: these functions then return 0 before
 * changing anything. */
#include "llm/delta.h"
#include "llm/stream_internal.h"

#include <string.h>

/* A decoded string: the body itself when it has no escapes and need not be
 * NUL-terminated, else its decoding in the scratch buffer at *at. */
typedef struct fs_str {
    const char *p;
    size_t n;
} fs_str;

static int fs_take(const ac_dspan *s, int need_nul, char **at, fs_str *out)
{
    if (!s->set) {
        out->p = NULL;
        out->n = 0;
        return 0;
    }
    if (!s->esc && !need_nul) {
        out->p = s->p;
        out->n = s->n;
        return 0;
    }
    long n = ac_delta_unescape(s, *at);
    if (n < 0)
        return -1;
    out->p = *at;
    out->n = (size_t)n;
    *at += n + 1;
    return 0;
}

/* Room in the scratch buffer for the listed spans, decoded and NUL-terminated. */
static char *fs_room(ac_stream *st, const ac_delta *d, const int *keys, size_t nkeys)
{
    size_t total = 1;
    for (size_t i = 0; i < nkeys; i++)
        if (d->s[keys[i]].set)
            total += d->s[keys[i]].n + 1;
    return ac_stream__scratch(st, total);
}

int ac_stream__openai_fast(ac_stream *st, const ac_sse_event *ev, int *rc)
{
    ac_delta d;
    if (!ac_delta_scan_openai(ev->data, ev->data_len, &d))
        return 0;
    /* "object": "error" is an error report; let the decoder say so */
    if (d.s[AC_DS_OBJECT].set &&
        (d.s[AC_DS_OBJECT].esc || ac_delta_is(&d.s[AC_DS_OBJECT], "error")))
        return 0;
    /* the first event also names the response (its id and model) */
    int first = !ac_stream__turn(st)->response_read;
    /* a call without an index is placed by id or position: the decoder's work */
    if (d.has_tool_call && (!d.has_tc_index || d.tc_index >= AC_STREAM_MAX_TOOL_CALLS))
        return 0;
    static const int keys[] = {AC_DS_REASONING_CONTENT,
                               AC_DS_REASONING,
                               AC_DS_CONTENT,
                               AC_DS_REFUSAL,
                               AC_DS_FINISH,
                               AC_DS_TC_ID,
                               AC_DS_TC_NAME,
                               AC_DS_TC_ARGS,
                               AC_DS_ID,
                               AC_DS_MODEL};
    size_t nkeys = sizeof keys / sizeof keys[0] - (first ? 0 : 2);
    char *at = fs_room(st, &d, keys, nkeys);
    if (!at)
        return 0;
    fs_str rcontent, reasoning, content, refusal, finish, id, name, args, rid = {0}, model = {0};
    if (first &&
        (fs_take(&d.s[AC_DS_ID], 1, &at, &rid) || fs_take(&d.s[AC_DS_MODEL], 1, &at, &model)))
        return 0;
    if (fs_take(&d.s[AC_DS_REASONING_CONTENT], 0, &at, &rcontent) ||
        fs_take(&d.s[AC_DS_REASONING], 0, &at, &reasoning) ||
        fs_take(&d.s[AC_DS_CONTENT], 0, &at, &content) ||
        fs_take(&d.s[AC_DS_REFUSAL], 0, &at, &refusal) ||
        fs_take(&d.s[AC_DS_FINISH], 1, &at, &finish) || fs_take(&d.s[AC_DS_TC_ID], 1, &at, &id) ||
        fs_take(&d.s[AC_DS_TC_NAME], 1, &at, &name) || fs_take(&d.s[AC_DS_TC_ARGS], 0, &at, &args))
        return 0;
    /* from here on the event is ours: the same calls as ac_stream__openai_event() */
    if (first && (*rc = ac_stream__set_response(st, rid.p, model.p)))
        return 1;
    *rc = 0;
    fs_str r = rcontent;
    if (!r.p || !r.n) {
        if (reasoning.p)
            r = reasoning;
    }
    if (r.p && (*rc = ac_stream__reasoning(st, r.p, r.n)))
        return 1;
    if (content.p && (*rc = ac_stream__text(st, content.p, content.n)))
        return 1;
    if (refusal.p && (*rc = ac_stream__refusal(st, refusal.p, refusal.n)))
        return 1;
    if (d.has_tool_call) {
        int pos = ac_stream__tool_call(st, (int)d.tc_index);
        *rc = pos < 0 ? pos : ac_stream__tool_fragment(st, pos, id.p, name.p, args.p, args.n);
        if (*rc)
            return 1;
    }
    if (finish.p && finish.n && (*rc = ac_stream__set_finish(st, finish.p)))
        return 1;
    /* as oa_usage() */
    if (d.has_usage && (d.has_in || d.has_out)) {
        ac_stream_turn *t = ac_stream__turn(st);
        if (d.has_in)
            t->input_tokens = d.in_tokens;
        if (d.has_out)
            t->output_tokens = d.out_tokens;
        if (d.has_cached)
            t->cached_tokens = d.cached_tokens;
        if (d.has_rtokens)
            t->reasoning_tokens = d.reasoning_tokens;
        t->have_usage = 1;
    }
    return 1;
}

/* A content_block_delta, as an_block_delta() reads it. */
static int an_fast_delta(ac_stream *st, const ac_delta *d, int *rc)
{
    if (!d->has_index || d->index > 1000000 || !d->has_delta || d->has_block)
        return 0;
    const ac_dspan *dt = &d->s[AC_DS_DTYPE];
    int key, kind;
    if (ac_delta_is(dt, "text_delta"))
        key = AC_DS_TEXT, kind = AC_BLOCK_OTHER;
    else if (ac_delta_is(dt, "thinking_delta"))
        key = AC_DS_THINK, kind = AC_BLOCK_THINKING;
    else if (ac_delta_is(dt, "signature_delta"))
        key = AC_DS_SIG, kind = AC_BLOCK_THINKING;
    else if (ac_delta_is(dt, "input_json_delta"))
        key = AC_DS_PARTIAL, kind = AC_BLOCK_TOOL;
    else
        return 0;
    if (!d->s[key].set)
        return 0;
    ac_stream_block *b = NULL;
    if (key != AC_DS_TEXT) {
        b = ac_stream__block_find(st, (int)d->index);
        if (!b || b->kind != kind)
            return 0;
    }
    char *at = fs_room(st, d, &key, 1);
    fs_str s;
    if (!at || fs_take(&d->s[key], 0, &at, &s))
        return 0;
    switch (key) {
    case AC_DS_TEXT:
        *rc = ac_stream__text(st, s.p, s.n);
        break;
    case AC_DS_THINK:
        *rc = ac_stream__thinking_text(st, b->think_pos, s.p, s.n);
        break;
    case AC_DS_SIG:
        *rc = ac_stream__thinking_signature(st, b->think_pos, s.p, s.n);
        break;
    default:
        if (s.n)
            b->got_args = 1;
        *rc = ac_stream__tool_fragment(st, b->tool_pos, NULL, NULL, s.p, s.n);
        break;
    }
    return 1;
}

/* The strings of a content_block, decoded. */
typedef struct fs_block {
    fs_str text, think, sig, data, id, name;
} fs_block;

/* A thinking or redacted_thinking block's start, as an_block_start() reads it. */
static int an_fast_thinking(ac_stream *st, const fs_block *k, int bi, int redacted)
{
    ac_stream_block *b = ac_stream__block_add(st, bi, AC_BLOCK_THINKING);
    if (!b)
        return -1;
    const char *payload = redacted ? (k->data.p ? k->data.p : "") : NULL;
    int pos = ac_stream__thinking_start(st, payload, redacted && k->data.p ? k->data.n : 0);
    if (pos < 0)
        return pos;
    b->think_pos = pos;
    if (redacted)
        return 0;
    int rc = k->sig.p ? ac_stream__thinking_signature(st, pos, k->sig.p, k->sig.n) : 0;
    if (rc)
        return rc;
    return k->think.p ? ac_stream__thinking_text(st, pos, k->think.p, k->think.n) : 0;
}

/* A tool_use block's start, as an_block_start() reads it. */
static int an_fast_tool(ac_stream *st, const fs_block *k, int bi)
{
    return ac_stream__tool_block(st, bi, k->id.p, k->name.p);
}

/* A content_block_start, as an_block_start() reads it. */
static int an_fast_block_start(ac_stream *st, const ac_delta *d, int *rc)
{
    if (!d->has_index || d->index > 1000000 || !d->has_block || d->has_delta)
        return 0;
    const ac_dspan *type = &d->s[AC_DS_DTYPE];
    if (!type->set || type->esc)
        return 0;
    static const int keys[] = {AC_DS_TEXT, AC_DS_THINK, AC_DS_SIG,
                               AC_DS_DATA, AC_DS_TC_ID, AC_DS_TC_NAME};
    char *at = fs_room(st, d, keys, sizeof keys / sizeof keys[0]);
    fs_block k;
    if (!at || fs_take(&d->s[AC_DS_TEXT], 0, &at, &k.text) ||
        fs_take(&d->s[AC_DS_THINK], 0, &at, &k.think) ||
        fs_take(&d->s[AC_DS_SIG], 0, &at, &k.sig) || fs_take(&d->s[AC_DS_DATA], 1, &at, &k.data) ||
        fs_take(&d->s[AC_DS_TC_ID], 1, &at, &k.id) ||
        fs_take(&d->s[AC_DS_TC_NAME], 1, &at, &k.name))
        return 0;
    int bi = (int)d->index;
    int redacted = ac_delta_is(type, "redacted_thinking");
    if (ac_delta_is(type, "text")) {
        *rc = !ac_stream__block_add(st, bi, AC_BLOCK_TEXT) ? -1
              : k.text.p                                   ? ac_stream__text(st, k.text.p, k.text.n)
                                                           : 0;
    } else if (redacted || ac_delta_is(type, "thinking")) {
        *rc = an_fast_thinking(st, &k, bi, redacted);
    } else if (ac_delta_is(type, "tool_use")) {
        *rc = an_fast_tool(st, &k, bi);
    } else {
        /* server tool blocks and future types are not assembled */
        *rc = ac_stream__block_add(st, bi, AC_BLOCK_OTHER) ? 0 : -1;
    }
    return 1;
}

/* A content_block_stop, as an_block_stop() reads it. */
static int an_fast_block_stop(ac_stream *st, const ac_delta *d, int *rc)
{
    if (!d->has_index || d->index > 1000000)
        return 0;
    ac_stream_block *b = ac_stream__block_find(st, (int)d->index);
    *rc = 0;
    if (b && b->kind == AC_BLOCK_TOOL && !b->got_args) {
        b->got_args = 1;
        *rc = ac_stream__tool_fragment(st, b->tool_pos, NULL, NULL, "{}", 2);
    }
    return 1;
}

/* A usage object's counters into the turn, as an_usage() does. */
static void an_fast_usage(ac_stream *st, const ac_dusage *u)
{
    if (!u->set)
        return;
    ac_stream_turn *t = ac_stream__turn(st);
    if (u->has_in) {
        t->input_tokens = u->in + (u->has_cwrite ? u->cwrite : 0) + (u->has_cread ? u->cread : 0);
        if (u->has_cread)
            t->cached_tokens = u->cread;
        if (u->has_cwrite)
            t->cache_write_tokens = u->cwrite;
        t->have_usage = 1;
    }
    if (u->has_out) {
        t->output_tokens = u->out;
        t->have_usage = 1;
    }
}

/* message_start and message_delta, as ac_stream__anthropic_event() reads them. */
static int an_fast_message(ac_stream *st, const ac_delta *d, int start, int *rc)
{
    static const int keys[] = {AC_DS_ID, AC_DS_MODEL, AC_DS_FINISH};
    char *at = fs_room(st, d, keys, 3);
    fs_str id, model, reason;
    if (!at || fs_take(&d->s[AC_DS_ID], 1, &at, &id) ||
        fs_take(&d->s[AC_DS_MODEL], 1, &at, &model) ||
        fs_take(&d->s[AC_DS_FINISH], 1, &at, &reason))
        return 0;
    if (start) {
        if (!d->has_message)
            return 0;
        an_fast_usage(st, &d->msg_usage);
        *rc = ac_stream__set_response(st, id.p, model.p);
        return 1;
    }
    *rc = reason.p && *reason.p ? ac_stream__set_finish(st, reason.p) : 0;
    an_fast_usage(st, &d->usage);
    return 1;
}

int ac_stream__anthropic_fast(ac_stream *st, const ac_sse_event *ev, int *rc)
{
    ac_delta d;
    if (!ac_delta_scan_anthropic(ev->data, ev->data_len, &d))
        return 0;
    const ac_dspan *type = &d.s[AC_DS_TYPE];
    if (ac_delta_is(type, "content_block_delta"))
        return an_fast_delta(st, &d, rc);
    if (ac_delta_is(type, "content_block_start"))
        return an_fast_block_start(st, &d, rc);
    if (ac_delta_is(type, "content_block_stop"))
        return an_fast_block_stop(st, &d, rc);
    if (ac_delta_is(type, "message_start") || ac_delta_is(type, "message_delta"))
        return an_fast_message(st, &d, type->p[8] == 's', rc);
    if (ac_delta_is(type, "message_stop")) {
        ac_stream__terminate(st);
        *rc = 0;
        return 1;
    }
    if (ac_delta_is(type, "ping")) {
        *rc = 0;
        return 1;
    }
    return 0; /* errors and unknown types: the decoder's */
}
