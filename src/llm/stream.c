/* Streaming response assembly: the parts shared by every wire format. Owns the
 * SSE scanner, the capped turn buffers, the tool-call table and error reporting;
 * stream_openai.c and stream_anthropic.c decode their events into it. */
#include "llm/stream_internal.h"
#include "util/buf.h"
#include "util/grow.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Private per-call state, parallel to turn.tool_calls. */
typedef struct st_call {
    ac_buf args; /* its p is the call's arguments once any arrived */
} st_call;

struct ac_stream {
    ac_wire wire;
    ac_stream_sink sink;
    ac_sse *sse;
    size_t max_turn;
    size_t turn_bytes; /* sum of all assembled string bytes */
    size_t events;     /* events with data read (ac_stream_events) */
    int status;        /* sticky failure code */
    int finished;
    int retryable;
    char *err; /* what failed (malloc'd on failure), or NULL */
    /* p is NULL until the first append; the turn budget caps them, not their own */
    ac_buf text, reasoning, refusal;
    ac_buf *thinks; /* per thinking block: text, signature, data (3 each) */
    size_t thinks_cap;
    st_call *calls;
    size_t calls_cap;
    ac_stream_block *blocks;
    size_t n_blocks, blocks_cap;
    ac_buf scratch; /* decoded strings of a fast-read event */
    /* the turn's finish_reason, response_id and response_model (each at most 256 bytes) */
    char names[3][257];
    int slow;           /* 1: every event is read with jansson (testing) */
    size_t fast_events; /* events read by the fast path */
    ac_stream_turn turn;
};

#define ST_ERR_CAP 320

static char st_empty[1];

int ac_stream__fail(ac_stream *st, int code, const char *fmt, ...)
{
    if (st->status)
        return st->status;
    st->status = code;
    st->retryable = 0;
    /* made on failure only: a stream in flight carries no message buffer */
    st->err = malloc(ST_ERR_CAP);
    if (st->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->err, ST_ERR_CAP, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Reserves n more bytes of the turn budget. */
static int st_budget(ac_stream *st, size_t n)
{
    if (n > st->max_turn - st->turn_bytes)
        return ac_stream__fail(st, AC_STREAM_ERR_TURN_TOO_LARGE, "assembled turn exceeds %zu bytes",
                               st->max_turn);
    st->turn_bytes += n;
    return 0;
}

static int st_nomem(ac_stream *st)
{
    return ac_stream__fail(st, AC_STREAM_ERR_NOMEM, "out of memory");
}

static int st_add(ac_stream *st, ac_buf *s, const char *p, size_t n)
{
    int rc = st_budget(st, n);
    if (rc)
        return rc;
    if (ac_buf_add(s, p, n) != 0)
        return st_nomem(st);
    return 0;
}

int ac_stream__text(ac_stream *st, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    int rc = st_add(st, &st->text, s, n);
    if (rc)
        return rc;
    st->turn.text = st->text.p;
    st->turn.text_len = st->text.n;
    if (st->sink.on_text)
        st->sink.on_text(st->sink.ud, s, n);
    return 0;
}

int ac_stream__reasoning(ac_stream *st, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    int rc = st_add(st, &st->reasoning, s, n);
    if (rc)
        return rc;
    st->turn.reasoning = st->reasoning.p;
    st->turn.reasoning_len = st->reasoning.n;
    if (st->sink.on_reasoning)
        st->sink.on_reasoning(st->sink.ud, s, n);
    return 0;
}

int ac_stream__refusal(ac_stream *st, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    int rc = st_add(st, &st->refusal, s, n);
    if (rc)
        return rc;
    st->turn.refusal = st->refusal.p;
    st->turn.refusal_len = st->refusal.n;
    if (st->sink.on_refusal)
        st->sink.on_refusal(st->sink.ud, s, n);
    return 0;
}

#define AC_STREAM_MAX_THINKING 1024

/* The public view of thinking block pos after its strings changed. */
static void st_think_view(ac_stream *st, size_t pos)
{
    ac_thinking_block *b = &st->turn.thinking_blocks[pos];
    ac_buf *s = &st->thinks[3 * pos];
    b->thinking = s[0].p ? s[0].p : st_empty;
    b->thinking_len = s[0].n;
    b->signature = s[1].p ? s[1].p : st_empty;
    b->data = s[2].p; /* only redacted blocks have one (possibly "") */
}

int ac_stream__thinking_start(ac_stream *st, const char *data, size_t n)
{
    ac_stream_turn *t = &st->turn;
    if (t->n_thinking_blocks >= AC_STREAM_MAX_THINKING)
        return ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "too many thinking blocks");
    if (t->n_thinking_blocks == st->thinks_cap) {
        size_t cap = st->thinks_cap ? st->thinks_cap * 2 : 2;
        ac_thinking_block *nb = realloc(t->thinking_blocks, cap * sizeof *nb);
        if (!nb)
            return st_nomem(st);
        t->thinking_blocks = nb;
        ac_buf *ns = realloc(st->thinks, 3 * cap * sizeof *ns);
        if (!ns)
            return st_nomem(st);
        st->thinks = ns;
        st->thinks_cap = cap;
    }
    size_t pos = t->n_thinking_blocks++;
    for (size_t k = 0; k < 3; k++)
        ac_buf_init(&st->thinks[3 * pos + k], AC_BUF_MAX);
    if (data) {
        int rc = st_add(st, &st->thinks[3 * pos + 2], data, n);
        if (rc) {
            t->n_thinking_blocks--;
            return rc;
        }
    }
    st_think_view(st, pos);
    return (int)pos;
}

int ac_stream__thinking_text(ac_stream *st, int pos, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    int rc = st_add(st, &st->thinks[3 * (size_t)pos], s, n);
    if (rc)
        return rc;
    st_think_view(st, (size_t)pos);
    return ac_stream__reasoning(st, s, n);
}

int ac_stream__thinking_signature(ac_stream *st, int pos, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    int rc = st_add(st, &st->thinks[3 * (size_t)pos + 1], s, n);
    if (rc)
        return rc;
    st_think_view(st, (size_t)pos);
    return 0;
}

int ac_stream__tool_call_by_id(const ac_stream *st, const char *id)
{
    for (size_t i = 0; i < st->turn.n_tool_calls; i++)
        if (strcmp(st->turn.tool_calls[i].id, id) == 0)
            return (int)i;
    return -1;
}

int ac_stream__tool_max_index(const ac_stream *st)
{
    size_t n = st->turn.n_tool_calls;
    return n ? st->turn.tool_calls[n - 1].index : -1;
}

int ac_stream__tool_call(ac_stream *st, int index)
{
    if (index < 0 || index >= AC_STREAM_MAX_TOOL_CALLS)
        return ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "tool call index %d out of range",
                               index);
    ac_stream_turn *t = &st->turn;
    size_t pos = t->n_tool_calls;
    /* calls are kept sorted by index; new ones usually go at the end */
    while (pos > 0 && t->tool_calls[pos - 1].index >= index) {
        if (t->tool_calls[pos - 1].index == index)
            return (int)(pos - 1);
        pos--;
    }
    if (t->n_tool_calls == st->calls_cap) {
        size_t cap = st->calls_cap ? st->calls_cap * 2 : 4;
        ac_tool_call_acc *nc = realloc(t->tool_calls, cap * sizeof *nc);
        if (!nc)
            return st_nomem(st);
        t->tool_calls = nc;
        st_call *np = realloc(st->calls, cap * sizeof *np);
        if (!np)
            return st_nomem(st);
        st->calls = np;
        st->calls_cap = cap;
    }
    size_t tail = t->n_tool_calls - pos;
    memmove(t->tool_calls + pos + 1, t->tool_calls + pos, tail * sizeof *t->tool_calls);
    memmove(st->calls + pos + 1, st->calls + pos, tail * sizeof *st->calls);
    t->n_tool_calls++;
    ac_tool_call_acc *c = &t->tool_calls[pos];
    c->index = index;
    c->id = st_empty;
    c->name = st_empty;
    c->arguments = st_empty;
    c->arguments_len = 0;
    ac_buf_init(&st->calls[pos].args, AC_BUF_MAX);
    /* positions of Anthropic blocks after pos shift by one */
    for (size_t i = 0; i < st->n_blocks; i++)
        if (st->blocks[i].kind == AC_BLOCK_TOOL && st->blocks[i].tool_pos >= (int)pos)
            st->blocks[i].tool_pos++;
    return (int)pos;
}

static int st_set_once(ac_stream *st, char **dst, const char *v)
{
    if (!v || !*v || *dst != st_empty)
        return 0;
    size_t n = strlen(v);
    int rc = st_budget(st, n);
    if (rc)
        return rc;
    char *c = malloc(n + 1);
    if (!c)
        return st_nomem(st);
    memcpy(c, v, n + 1);
    *dst = c;
    return 0;
}

int ac_stream__tool_fragment(ac_stream *st, int pos, const char *id, const char *name,
                             const char *args, size_t n)
{
    ac_tool_call_acc *c = &st->turn.tool_calls[pos];
    int rc = st_set_once(st, &c->id, id);
    if (!rc)
        rc = st_set_once(st, &c->name, name);
    if (!rc && n) {
        ac_buf *a = &st->calls[pos].args;
        rc = st_add(st, a, args, n);
        if (!rc) {
            c->arguments = a->p;
            c->arguments_len = a->n;
        }
    }
    if (rc)
        return rc;
    if (st->sink.on_tool_call_delta && ((id && *id) || (name && *name) || n))
        st->sink.on_tool_call_delta(st->sink.ud, c->index, id && *id ? id : NULL,
                                    name && *name ? name : NULL, args ? args : "", n);
    return 0;
}

static int st_strdup_into(ac_stream *st, char **dst, const char *v)
{
    size_t n = strlen(v);
    char *c = malloc(n + 1);
    if (!c)
        return st_nomem(st);
    memcpy(c, v, n + 1);
    free(*dst);
    *dst = c;
    return 0;
}

/* Copies v (at most 256 bytes) into the stream's slot k and points *dst at it. */
static void st_name(ac_stream *st, int k, char **dst, const char *v)
{
    size_t n = strlen(v);
    memcpy(st->names[k], v, n + 1);
    *dst = st->names[k];
}

int ac_stream__set_finish(ac_stream *st, const char *reason)
{
    /* ORDER: the normalized names are the OpenAI ones */
    static const char *const map[][2] = {
        {"end_turn", "stop"},       {"stop_sequence", "stop"},
        {"tool_use", "tool_calls"}, {"function_call", "tool_calls"},
        {"max_tokens", "length"},   {"refusal", "content_filter"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(reason, map[i][0]) == 0) {
            reason = map[i][1];
            break;
        }
    if (strlen(reason) > 256)
        return ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "finish reason too long");
    st_name(st, 0, &st->turn.finish_reason, reason);
    return 0;
}

int ac_stream__set_response(ac_stream *st, const char *id, const char *model)
{
    ac_stream_turn *t = &st->turn;
    t->response_read = 1;
    if (id && !t->response_id && strlen(id) <= 256)
        st_name(st, 1, &t->response_id, id);
    if (model && !t->response_model && strlen(model) <= 256)
        st_name(st, 2, &t->response_model, model);
    return 0;
}

int ac_stream__provider_error(ac_stream *st, const char *type, const char *message, int retryable)
{
    ac_stream_turn *t = &st->turn;
    char tbuf[128], mbuf[1024];
    /* keep the first error; bounded copies */
    if (t->error)
        return 0;
    snprintf(tbuf, sizeof tbuf, "%s", type ? type : "error");
    snprintf(mbuf, sizeof mbuf, "%s", message ? message : "");
    t->error = 1;
    t->error_retryable = retryable;
    if (st_strdup_into(st, &t->error_type, tbuf) || st_strdup_into(st, &t->error_message, mbuf))
        return st->status;
    return 0;
}

void ac_stream__terminate(ac_stream *st)
{
    st->turn.terminated = 1;
}

ac_stream_turn *ac_stream__turn(ac_stream *st)
{
    return &st->turn;
}

ac_stream_block *ac_stream__block_add(ac_stream *st, int block_index, int kind)
{
    if (st->n_blocks >= AC_STREAM_MAX_BLOCKS) {
        ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "too many content blocks");
        return NULL;
    }
    if (ac_grow((void **)&st->blocks, &st->blocks_cap, st->n_blocks + 1, sizeof *st->blocks)) {
        st_nomem(st);
        return NULL;
    }
    ac_stream_block *b = &st->blocks[st->n_blocks++];
    b->block_index = block_index;
    b->kind = kind;
    b->tool_pos = -1;
    b->got_args = 0;
    b->think_pos = -1;
    return b;
}

int ac_stream__tool_block(ac_stream *st, int block_index, const char *id, const char *name)
{
    int pos = ac_stream__tool_call(st, ac_stream__tool_max_index(st) + 1);
    if (pos < 0)
        return pos;
    ac_stream_block *b = ac_stream__block_add(st, block_index, AC_BLOCK_TOOL);
    if (!b)
        return -1;
    b->tool_pos = pos;
    return ac_stream__tool_fragment(st, pos, id, name, "", 0);
}

ac_stream_block *ac_stream__block_find(ac_stream *st, int block_index)
{
    for (size_t i = st->n_blocks; i > 0; i--)
        if (st->blocks[i - 1].block_index == block_index)
            return &st->blocks[i - 1];
    return NULL;
}

const char *ac_stream__str(const json_t *obj, const char *key, size_t *n)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) {
        if (n)
            *n = 0;
        return NULL;
    }
    if (n)
        *n = json_string_length(v);
    return json_string_value(v);
}

/* Case-insensitive substring search over a bounded string. */
static int st_contains_ci(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (const char *h = hay; *h; h++) {
        size_t i = 0;
        while (i < nl && h[i] && tolower((unsigned char)h[i]) == needle[i])
            i++;
        if (i == nl)
            return 1;
    }
    return 0;
}

int ac_stream__retryable_text(const char *s)
{
    static const char *const words[] = {"overloaded",   "rate limit", "rate_limit",
                                        "ratelimit",    "429",        "500",
                                        "502",          "503",        "504",
                                        "server_error", "api_error",  "temporarily unavailable"};
    if (!s)
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (st_contains_ci(s, words[i]))
            return 1;
    return 0;
}

json_t *ac_stream__parse(ac_stream *st, const ac_sse_event *ev)
{
    json_error_t jerr;
    json_t *root = json_loadb(ev->data, ev->data_len, JSON_ALLOW_NUL, &jerr);
    if (!root) {
        char near[41];
        size_t n = ev->data_len < 40 ? ev->data_len : 40;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)ev->data[i];
            near[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
        }
        near[n] = '\0';
        ac_stream__fail(st, AC_STREAM_ERR_JSON,
                        "malformed JSON in event-stream data at byte %d: %s (data begins '%s')",
                        jerr.position, jerr.text, near);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "event-stream data is not a JSON object");
        return NULL;
    }
    return root;
}

size_t ac_stream_events(const ac_stream *st)
{
    return st ? st->events : 0;
}

static int st_on_event(void *ud, const ac_sse_event *ev)
{
    ac_stream *st = ud;
    st->events++;
    if (st->turn.terminated)
        return 0; /* nothing after the terminator counts */
    int rc;
    if (!st->slow && (st->wire == AC_WIRE_ANTHROPIC ? ac_stream__anthropic_fast(st, ev, &rc)
                                                    : ac_stream__openai_fast(st, ev, &rc))) {
        st->fast_events++;
        return rc != 0;
    }
    rc = st->wire == AC_WIRE_ANTHROPIC ? ac_stream__anthropic_event(st, ev)
                                       : ac_stream__openai_event(st, ev);
    return rc != 0;
}

ac_stream *ac_stream_new_ex(ac_wire wire, const ac_stream_sink *sink, size_t max_turn_bytes,
                            size_t max_line, size_t max_event)
{
    if (wire != AC_WIRE_OPENAI && wire != AC_WIRE_ANTHROPIC)
        return NULL;
    ac_stream *st = calloc(1, sizeof *st);
    if (!st)
        goto fail;
    st->wire = wire;
    if (sink)
        st->sink = *sink;
    st->max_turn = max_turn_bytes ? max_turn_bytes : AC_STREAM_DEFAULT_MAX_TURN;
    st->sse = ac_sse_new(max_line, max_event, st_on_event, NULL, st);
    if (!st->sse)
        goto fail;
    ac_buf_init(&st->text, AC_BUF_MAX);
    ac_buf_init(&st->reasoning, AC_BUF_MAX);
    ac_buf_init(&st->refusal, AC_BUF_MAX);
    ac_buf_init(&st->scratch, AC_BUF_MAX);
    st->turn.text = st_empty;
    st->turn.reasoning = st_empty;
    st->turn.refusal = st_empty;
    return st;
fail:
    ac_stream_free(st);
    return NULL;
}

ac_stream *ac_stream_new(ac_wire wire, const ac_stream_sink *sink, size_t max_turn_bytes)
{
    return ac_stream_new_ex(wire, sink, max_turn_bytes, 0, 0);
}

static int st_sse_status(ac_stream *st, int rc)
{
    if (rc == 0)
        return 0;
    if (rc == AC_SSE_STOPPED && st->status)
        return st->status; /* a decoder failed and stopped the scanner */
    return ac_stream__fail(st, rc == AC_SSE_ERR_NOMEM ? AC_STREAM_ERR_NOMEM : AC_STREAM_ERR_SSE,
                           "%s", ac_sse_strerror(rc));
}

int ac_stream_feed(ac_stream *st, const char *buf, size_t len)
{
    if (st->status)
        return st->status;
    if (st->finished)
        return AC_STREAM_ERR_FINISHED;
    return st_sse_status(st, ac_sse_feed(st->sse, buf, len));
}

int ac_stream_finish(ac_stream *st)
{
    if (st->status)
        return st->status;
    if (st->finished)
        return AC_STREAM_ERR_FINISHED;
    st->finished = 1;
    int rc = ac_sse_finish(st->sse);
    const ac_stream_turn *t = &st->turn;
    if (t->error) {
        ac_stream__fail(st, AC_STREAM_ERR_PROVIDER, "server reported an error: %s: %s",
                        t->error_type, t->error_message);
        st->retryable = t->error_retryable;
        return st->status;
    }
    /* a cut-off tail after the terminator does not matter */
    if (t->terminated)
        return 0;
    if (rc != 0 && rc != AC_SSE_ERR_EOF_MID_LINE && rc != AC_SSE_ERR_EOF_MID_EVENT)
        return st_sse_status(st, rc);
    ac_stream__fail(st, AC_STREAM_ERR_TRUNCATED, "stream ended without its terminator");
    st->retryable = 1;
    return st->status;
}

const ac_stream_turn *ac_stream_turn_get(const ac_stream *st)
{
    return &st->turn;
}

const char *ac_stream_error(const ac_stream *st)
{
    if (st->err)
        return st->err;
    return st->status ? "out of memory" : "";
}

int ac_stream_error_retryable(const ac_stream *st)
{
    return st->status ? st->retryable : 0;
}

/* Frees what the turn allocated besides the text buffers. */
static void st_turn_free(ac_stream *st)
{
    free(st->err);
    for (size_t i = 0; i < 3 * st->turn.n_thinking_blocks; i++)
        ac_buf_free(&st->thinks[i]);
    free(st->thinks);
    free(st->turn.thinking_blocks);
    for (size_t i = 0; i < st->turn.n_tool_calls; i++) {
        ac_tool_call_acc *c = &st->turn.tool_calls[i];
        if (c->id != st_empty)
            free(c->id);
        if (c->name != st_empty)
            free(c->name);
        if (c->arguments != st_empty)
            free(c->arguments); /* the p of st->calls[i].args */
    }
    free(st->turn.tool_calls);
    free(st->calls);
    free(st->blocks);
    free(st->turn.error_type);
    free(st->turn.error_message);
}

void ac_stream_free(ac_stream *st)
{
    if (!st)
        return;
    ac_sse_free(st->sse);
    ac_buf_free(&st->text);
    ac_buf_free(&st->reasoning);
    ac_buf_free(&st->refusal);
    ac_buf_free(&st->scratch);
    st_turn_free(st);
    free(st);
}

/* Empties b for the next turn, or frees it when it grew past what is worth keeping. */
static void st_keep(ac_buf *b)
{
    if (b->cap > AC_SSE_KEEP_BYTES)
        ac_buf_free(b);
    else
        ac_buf_clear(b);
}

void ac_stream_reset(ac_stream *st, const ac_stream_sink *sink)
{
    st_turn_free(st);
    ac_sse_reset(st->sse);
    ac_stream kept = *st;
    memset(st, 0, sizeof *st);
    st->wire = kept.wire;
    if (sink)
        st->sink = *sink;
    st->sse = kept.sse;
    st->max_turn = kept.max_turn;
    st->slow = kept.slow;
    st->text = kept.text;
    st->reasoning = kept.reasoning;
    st->refusal = kept.refusal;
    st->scratch = kept.scratch;
    st_keep(&st->text);
    st_keep(&st->reasoning);
    st_keep(&st->refusal);
    st_keep(&st->scratch);
    st->turn.text = st_empty;
    st->turn.reasoning = st_empty;
    st->turn.refusal = st_empty;
}

char *ac_stream__scratch(ac_stream *st, size_t n)
{
    /* room for n bytes at p (n stays 0): reserved, never appended to */
    return ac_buf_reserve(&st->scratch, n) == 0 ? st->scratch.p : NULL;
}

void ac_stream__set_fast(ac_stream *st, int on)
{
    st->slow = !on;
}

size_t ac_stream__fast_events(const ac_stream *st)
{
    return st->fast_events;
}
