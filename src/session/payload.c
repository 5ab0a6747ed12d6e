/*
 * payload.c - typed event payloads as JSON text and values (payload.h).
 */
#include "payload.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/provider.h"
#include "session_int.h"
#include "util/json_text.h"
#include "util/utf8.h"

static void put_completion(ac_buf *b, const ac_completion *c, unsigned flags);

static void put_failure(ac_buf *b, const ac_payload *p, unsigned flags)
{
    ac_buf_addstr(b, "{\"class\":");
    ac_json_put_string(b, p->name, p->name_n, flags);
    ac_buf_addstr(b, ",\"status\":");
    ac_json_put_int(b, p->status);
    ac_buf_addstr(b,
                  p->ok ? ",\"retryable\":true,\"message\":" : ",\"retryable\":false,\"message\":");
    ac_json_put_string(b, p->text, p->n, flags);
    if (p->retry_after_ms >= 0) {
        ac_buf_addstr(b, ",\"retry_after_ms\":");
        ac_json_put_int(b, p->retry_after_ms);
    }
    ac_buf_add(b, "}", 1);
}

void ac_payload_put(ac_buf *b, const ac_payload *p, unsigned flags)
{
    if (p->kind == AC_PAYLOAD_EMPTY) {
        ac_buf_add(b, "{}", 2);
        return;
    }
    if (p->kind == AC_PAYLOAD_COMPLETION) {
        put_completion(b, p->done, flags);
        return;
    }
    if (p->kind == AC_PAYLOAD_FAILURE) {
        put_failure(b, p, flags);
        return;
    }
    if (p->kind == AC_PAYLOAD_TOOL_RESULT) {
        ac_buf_addstr(b, "{\"id\":");
        ac_json_put_string(b, p->id, p->id_n, flags);
        ac_buf_addstr(b, p->ok ? ",\"ok\":true,\"content\":" : ",\"ok\":false,\"content\":");
        ac_json_put_string(b, p->text, p->n, flags);
        ac_buf_addstr(b, ",\"duration_ms\":");
        ac_json_put_int(b, p->duration_ms);
        ac_buf_add(b, "}", 1);
        return;
    }
    if (p->kind != AC_PAYLOAD_DELTA) {
        ac_buf_fail(b);
        return;
    }
    ac_buf_addstr(b, "{\"kind\":");
    const char *kind = ac_delta_kind_name(p->delta);
    ac_json_put_string(b, kind, strlen(kind), flags);
    ac_buf_addstr(b, ",\"text\":");
    ac_json_put_string(b, p->text, p->n, flags);
    if (p->delta == AC_DELTA_TOOL_CALL) {
        ac_buf_addstr(b, ",\"index\":");
        ac_json_put_int(b, p->index);
        if (p->id) {
            ac_buf_addstr(b, ",\"id\":");
            ac_json_put_string(b, p->id, p->id_n, flags);
        }
        if (p->name) {
            ac_buf_addstr(b, ",\"name\":");
            ac_json_put_string(b, p->name, p->name_n, flags);
        }
    }
    ac_buf_add(b, "}", 1);
}

char *ac_payload_text(const ac_payload *p)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_payload_put(&b, p, 0);
    return ac_buf_take(&b, NULL);
}

/* Sets key to a new JSON value (NULL: out of memory): 0, or -1. */
static int put(json_t *d, const char *key, json_t *v)
{
    return json_object_set_new_nocheck(d, key, v);
}

json_t *ac_payload_json(const ac_payload *p)
{
    if (p->kind == AC_PAYLOAD_EMPTY)
        return json_object();
    if (p->kind == AC_PAYLOAD_FAILURE) {
        json_t *j = json_pack("{s:s%, s:I, s:b, s:s%}", "class", p->name, p->name_n, "status",
                              (json_int_t)p->status, "retryable", p->ok, "message", p->text, p->n);
        if (j && p->retry_after_ms >= 0 &&
            json_object_set_new(j, "retry_after_ms", json_integer(p->retry_after_ms))) {
            json_decref(j);
            return NULL;
        }
        return j;
    }
    if (p->kind == AC_PAYLOAD_TOOL_RESULT)
        return json_pack("{s:s%, s:b, s:s%, s:I}", "id", p->id, p->id_n, "ok", p->ok, "content",
                         p->text, p->n, "duration_ms", (json_int_t)p->duration_ms);
    if (p->kind == AC_PAYLOAD_COMPLETION) { /* read back from its text: the same value */
        char *t = ac_payload_text(p);
        json_t *v = t ? json_loads(t, JSON_ALLOW_NUL, NULL) : NULL;
        free(t);
        return v;
    }
    if (p->kind != AC_PAYLOAD_DELTA)
        return NULL;
    json_t *d = json_object();
    int bad = !d || put(d, "kind", json_string(ac_delta_kind_name(p->delta))) ||
              put(d, "text", json_stringn(p->text, p->n));
    if (!bad && p->delta == AC_DELTA_TOOL_CALL)
        bad = put(d, "index", json_integer(p->index)) ||
              (p->id && put(d, "id", json_stringn(p->id, p->id_n))) ||
              (p->name && put(d, "name", json_stringn(p->name, p->name_n)));
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* The JSON string body at *s (after its opening quote, up to len bytes) unescaped into b,
 * *s moved past its closing quote: 0, or -1 (see ac_payload_read_delta). */
static int read_string(const char **s, const char *end, ac_buf *b)
{
    const char *c = *s;
    while (c < end && *c != '"') {
        const char *run = c;
        while (c < end && *c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
            c++;
        ac_buf_add(b, run, (size_t)(c - run));
        if (c >= end || *c == '"')
            break;
        if (*c != '\\' || c + 1 >= end)
            return -1; /* a raw control character */
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = strchr(from, c[1]);
        if (e && c[1]) {
            ac_buf_add(b, &to[e - from], 1);
            c += 2;
            continue;
        }
        unsigned v = 0;
        for (int i = 2; i < 6 && c[1] == 'u' && end - c >= 6; i++) {
            const char *hex = "0123456789abcdef0123456789ABCDEF", *h = strchr(hex, c[i]);
            v = h && c[i] ? v * 16 + (unsigned)((h - hex) % 16) : 0x10000;
        }
        if (c[1] != 'u' || end - c < 6 || v == 0 || v > 0x7f)
            return -1;
        char ch = (char)v;
        ac_buf_add(b, &ch, 1);
        c += 6;
    }
    if (c >= end)
        return -1;
    *s = c + 1;
    return b->failed ? -1 : 0;
}

int ac_payload_read_delta(const char *s, size_t len, ac_payload *p, ac_buf *scratch)
{
    static const char head[] = "{\"kind\":\"", mid[] = ",\"text\":\"";
    const char *end = s + len;
    if (len < sizeof head - 1 || memcmp(s, head, sizeof head - 1))
        return -1;
    s += sizeof head - 1;
    int kind = -1;
    for (int k = AC_DELTA_TEXT; k < AC_DELTA_TOOL_CALL && kind < 0; k++) {
        size_t kl = strlen(ac_delta_kind_name(k));
        if ((size_t)(end - s) > kl && !memcmp(s, ac_delta_kind_name(k), kl) && s[kl] == '"')
            kind = k;
    }
    if (kind < 0)
        return -1;
    s += strlen(ac_delta_kind_name(kind)) + 1;
    if ((size_t)(end - s) < sizeof mid - 1 || memcmp(s, mid, sizeof mid - 1))
        return -1;
    s += sizeof mid - 1;
    ac_buf_clear(scratch);
    if (read_string(&s, end, scratch) < 0 || end - s != 1 || *s != '}' ||
        ac_utf8_valid_len(scratch->p, scratch->n) != scratch->n)
        return -1;
    *p = (ac_payload){.kind = AC_PAYLOAD_DELTA,
                      .delta = (uint8_t)kind,
                      .n = scratch->n,
                      .text = scratch->p ? scratch->p : ""};
    return 0;
}

const ac_payload *ac_event_payload(const ac_session *s, const ac_event *ev)
{
    return s->payload && ev->type == s->payload_type ? s->payload : NULL;
}

/* ---- llm.completed ---- */

#define ALIGN_UP(x) (((x) + _Alignof(max_align_t) - 1) & ~(size_t)(_Alignof(max_align_t) - 1))

/* Bytes a string of n at s takes in a pack: repaired (each bad byte 3) when not UTF-8. */
static size_t str_size(const char *s, size_t n)
{
    if (!s)
        return 1; /* at most "" */
    return (ac_utf8_valid_len(s, n) == n ? n : 3 * n) + 1;
}

size_t ac_completion_size(const ac_completion *c)
{
    size_t n = _Alignof(max_align_t) + ALIGN_UP(sizeof *c) +
               ALIGN_UP(c->n_calls * sizeof *c->calls) + ALIGN_UP(c->n_blocks * sizeof *c->blocks);
    n += str_size(c->content, c->content_n) + str_size(c->reasoning, c->reasoning_n) +
         str_size(c->refusal, c->refusal_n) +
         str_size(c->finish_reason, strlen(c->finish_reason ? c->finish_reason : "")) +
         str_size(c->response_id, c->response_id ? strlen(c->response_id) : 0) +
         str_size(c->response_model, c->response_model ? strlen(c->response_model) : 0);
    for (size_t i = 0; i < c->n_calls; i++) {
        const ac_payload_call *k = &c->calls[i];
        n += str_size(k->id, k->id_n) + str_size(k->name, k->name_n) +
             str_size(k->arguments, k->arguments_n);
    }
    for (size_t i = 0; i < c->n_blocks; i++) {
        const ac_payload_thinking *b = &c->blocks[i];
        n += str_size(b->data, b->data_n) + str_size(b->thinking, b->thinking_n) +
             str_size(b->signature, b->signature_n);
    }
    return n;
}

/* s (n bytes) copied at *at as UTF-8 (repaired as jansson's strings of the providers were),
 * NUL-terminated; *at moved past it, *out_n its length. The copy; NULL for NULL, or *failed
 * set when out of memory. */
static const char *put_str(char **at, const char *s, size_t n, size_t *out_n, int *failed)
{
    if (!s)
        return NULL;
    char *fixed = NULL;
    if (ac_utf8_valid_len(s, n) != n) {
        if (!(fixed = ac_utf8_repair(s, n, AC_UTF8_KEEP_NUL, &n))) {
            *failed = 1;
            return NULL;
        }
        s = fixed;
    }
    char *d = *at;
    memcpy(d, s, n);
    d[n] = 0;
    *at += n + 1;
    if (out_n)
        *out_n = n;
    free(fixed);
    return d;
}

const ac_completion *ac_completion_pack(char *mem, const ac_completion *c)
{
    char *at = (char *)ALIGN_UP((uintptr_t)mem);
    ac_completion *d = (ac_completion *)at;
    ac_payload_call *calls = (ac_payload_call *)(at += ALIGN_UP(sizeof *d));
    ac_payload_thinking *blocks =
        (ac_payload_thinking *)(at += ALIGN_UP(c->n_calls * sizeof *calls));
    at += ALIGN_UP(c->n_blocks * sizeof *blocks);
    int bad = 0;
    *d = *c;
    d->calls = calls;
    d->blocks = blocks;
    d->blocks_json = NULL;
    d->content = put_str(&at, c->content ? c->content : "", c->content_n, &d->content_n, &bad);
    d->reasoning =
        put_str(&at, c->reasoning ? c->reasoning : "", c->reasoning_n, &d->reasoning_n, &bad);
    d->refusal = put_str(&at, c->refusal ? c->refusal : "", c->refusal_n, &d->refusal_n, &bad);
    d->finish_reason =
        put_str(&at, c->finish_reason, c->finish_reason ? strlen(c->finish_reason) : 0, NULL, &bad);
    d->response_id =
        put_str(&at, c->response_id, c->response_id ? strlen(c->response_id) : 0, NULL, &bad);
    d->response_model = put_str(&at, c->response_model,
                                c->response_model ? strlen(c->response_model) : 0, NULL, &bad);
    for (size_t i = 0; i < c->n_calls; i++) {
        const ac_payload_call *k = &c->calls[i];
        calls[i] = (ac_payload_call){0};
        calls[i].id = put_str(&at, k->id ? k->id : "", k->id_n, &calls[i].id_n, &bad);
        calls[i].name = put_str(&at, k->name ? k->name : "", k->name_n, &calls[i].name_n, &bad);
        calls[i].arguments = put_str(&at, k->arguments ? k->arguments : "", k->arguments_n,
                                     &calls[i].arguments_n, &bad);
    }
    for (size_t i = 0; i < c->n_blocks; i++) {
        const ac_payload_thinking *b = &c->blocks[i];
        blocks[i] = (ac_payload_thinking){0};
        blocks[i].data = put_str(&at, b->data, b->data_n, &blocks[i].data_n, &bad);
        blocks[i].thinking = put_str(&at, b->thinking, b->thinking_n, &blocks[i].thinking_n, &bad);
        blocks[i].signature =
            put_str(&at, b->signature, b->signature_n, &blocks[i].signature_n, &bad);
    }
    return bad ? NULL : d;
}

/* ,"key":S (S "" for NULL). */
static void put_field(ac_buf *b, const char *key, const char *s, size_t n, unsigned flags)
{
    ac_buf_addstr(b, ",\"");
    ac_buf_addstr(b, key);
    ac_buf_addstr(b, "\":");
    ac_json_put_string(b, s ? s : "", s ? n : 0, flags);
}

static void put_blocks(ac_buf *b, const ac_completion *c, unsigned flags)
{
    ac_buf_add(b, "[", 1);
    for (size_t i = 0; i < c->n_blocks; i++) {
        const ac_payload_thinking *t = &c->blocks[i];
        ac_buf_addstr(b, i ? ",{" : "{");
        if (t->data) {
            ac_buf_addstr(b, "\"type\":\"redacted_thinking\"");
            put_field(b, "data", t->data, t->data_n, flags);
        } else {
            ac_buf_addstr(b, "\"type\":\"thinking\"");
            put_field(b, "thinking", t->thinking, t->thinking_n, flags);
            put_field(b, "signature", t->signature, t->signature_n, flags);
        }
        ac_buf_add(b, "}", 1);
    }
    ac_buf_add(b, "]", 1);
}

static void put_completion(ac_buf *b, const ac_completion *c, unsigned flags)
{
    ac_buf_addstr(b, "{\"content\":");
    ac_json_put_string(b, c->content ? c->content : "", c->content_n, flags);
    put_field(b, "reasoning", c->reasoning, c->reasoning_n, flags);
    put_field(b, "refusal", c->refusal, c->refusal_n, flags);
    ac_buf_addstr(b, ",\"tool_calls\":[");
    for (size_t i = 0; i < c->n_calls; i++) {
        const ac_payload_call *k = &c->calls[i];
        ac_buf_addstr(b, i ? ",{\"id\":" : "{\"id\":");
        ac_json_put_string(b, k->id ? k->id : "", k->id ? k->id_n : 0, flags);
        put_field(b, "name", k->name, k->name_n, flags);
        put_field(b, "arguments", k->arguments, k->arguments_n, flags);
        ac_buf_add(b, "}", 1);
    }
    ac_buf_addstr(b, "],\"finish_reason\":");
    if (c->finish_reason)
        ac_json_put_string(b, c->finish_reason, strlen(c->finish_reason), flags);
    else
        ac_buf_addstr(b, "null");
    ac_buf_addstr(b, ",\"usage\":{\"input\":");
    ac_json_put_int(b, c->input);
    ac_buf_addstr(b, ",\"output\":");
    ac_json_put_int(b, c->output);
    const char *const keys[] = {",\"cached\":", ",\"cache_write\":", ",\"reasoning\":"};
    const int64_t vals[] = {c->cached, c->cache_write, c->reasoning_tokens};
    for (size_t i = 0; i < 3; i++)
        if (vals[i] > 0) {
            ac_buf_addstr(b, keys[i]);
            ac_json_put_int(b, vals[i]);
        }
    ac_buf_add(b, "}", 1);
    if (c->response_id)
        put_field(b, "response_id", c->response_id, strlen(c->response_id), flags);
    if (c->response_model)
        put_field(b, "response_model", c->response_model, strlen(c->response_model), flags);
    if (c->n_blocks) {
        ac_buf_addstr(b, ",\"thinking_blocks\":");
        put_blocks(b, c, flags);
    }
    ac_buf_add(b, "}", 1);
}

char *ac_completion_blocks_text(const ac_completion *c)
{
    if (!c->n_blocks)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    put_blocks(&b, c, 0);
    return ac_buf_take(&b, NULL);
}

/* A string member of a JSON object: its value and length; NULL when it is not a string. */
static const char *jstr(const json_t *o, const char *key, size_t *n)
{
    const json_t *v = json_object_get(o, key);
    *n = json_string_length(v);
    return json_string_value(v);
}

/* The calls of a JSON llm.completed copied as views into owned (NULL when none). */
static int calls_of_json(const json_t *calls, ac_completion *c, ac_payload_call **owned)
{
    size_t n = json_array_size(calls);
    *owned = n ? calloc(n, sizeof **owned) : NULL;
    if (n && !*owned)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *k = json_array_get(calls, i);
        ac_payload_call *d = &(*owned)[i];
        d->id = jstr(k, "id", &d->id_n);
        d->name = jstr(k, "name", &d->name_n);
        d->arguments = jstr(k, "arguments", &d->arguments_n);
        d->internal = json_is_true(json_object_get(k, "internal"));
    }
    c->calls = *owned;
    c->n_calls = n;
    return 0;
}

int ac_completion_of(const ac_session *s, const ac_event *ev, ac_completion *c,
                     ac_payload_call **owned)
{
    const ac_payload *p = ac_event_payload(s, ev);
    *owned = NULL;
    if (p && p->kind == AC_PAYLOAD_COMPLETION) {
        *c = *p->done;
        return 0;
    }
    const json_t *d = ev->data;
    if (!json_is_object(d))
        return -1;
    *c = (ac_completion){0};
    size_t n;
    c->content = jstr(d, "content", &c->content_n);
    c->reasoning = jstr(d, "reasoning", &c->reasoning_n);
    c->refusal = jstr(d, "refusal", &c->refusal_n);
    c->finish_reason = jstr(d, "finish_reason", &n);
    c->response_id = jstr(d, "response_id", &n);
    c->response_model = jstr(d, "response_model", &n);
    const json_t *u = json_object_get(d, "usage");
    c->has_usage = u != NULL;
    c->input = json_integer_value(json_object_get(u, "input"));
    c->output = json_integer_value(json_object_get(u, "output"));
    c->cached = json_integer_value(json_object_get(u, "cached"));
    c->cache_write = json_integer_value(json_object_get(u, "cache_write"));
    c->reasoning_tokens = json_integer_value(json_object_get(u, "reasoning"));
    const json_t *blocks = json_object_get(d, "thinking_blocks");
    c->blocks_json = json_is_array(blocks) && json_array_size(blocks) ? blocks : NULL;
    return calls_of_json(json_object_get(d, "tool_calls"), c, owned);
}

void ac_event_calls(const ac_session *s, const ac_event *ev, ac_calls_view *v)
{
    const ac_payload *p = ac_event_payload(s, ev);
    *v = (ac_calls_view){0};
    if (p && p->kind == AC_PAYLOAD_COMPLETION) {
        v->typed = p->done->calls;
        v->n = p->done->n_calls;
        return;
    }
    const json_t *d = ev->data;
    const json_t *c = json_is_object(d) ? json_object_get(d, "tool_calls") : NULL;
    if (json_is_array(c)) {
        v->json = c;
        v->n = json_array_size(c);
    }
}

const char *ac_calls_id(const ac_calls_view *v, size_t i)
{
    if (i >= v->n)
        return NULL;
    return v->typed ? v->typed[i].id
                    : json_string_value(json_object_get(json_array_get(v->json, i), "id"));
}

const char *ac_calls_name(const ac_calls_view *v, size_t i)
{
    if (i >= v->n)
        return NULL;
    return v->typed ? v->typed[i].name
                    : json_string_value(json_object_get(json_array_get(v->json, i), "name"));
}

const char *ac_tool_result_of(const ac_session *s, const ac_event *ev, int *ok,
                              const char **content, size_t *n, int64_t *dur)
{
    const ac_payload *p = ac_event_payload(s, ev);
    if (p && p->kind == AC_PAYLOAD_TOOL_RESULT) {
        *ok = p->ok;
        *content = p->text;
        *n = p->n;
        *dur = p->duration_ms;
        return p->id;
    }
    const json_t *d = ev->data;
    *ok = json_is_true(json_object_get(d, "ok"));
    *content = jstr(d, "content", n);
    *dur = json_integer_value(json_object_get(d, "duration_ms"));
    return json_string_value(json_object_get(d, "id"));
}

void ac_failure_of(const ac_session *s, const ac_event *ev, ac_failure_view *f)
{
    const ac_payload *p = ac_event_payload(s, ev);
    if (p && p->kind == AC_PAYLOAD_FAILURE) {
        *f = (ac_failure_view){.cls = p->name,
                               .message = p->text,
                               .status = p->status,
                               .retry_after_ms = p->retry_after_ms,
                               .has_status = 1,
                               .retryable = p->ok};
        return;
    }
    const json_t *raw = ev->data, *d = json_is_object(raw) ? raw : NULL;
    const json_t *st = json_object_get(d, "status"), *ra = json_object_get(d, "retry_after_ms");
    size_t n;
    *f = (ac_failure_view){.cls = jstr(d, "class", &n),
                           .message = jstr(d, "message", &n),
                           .status = json_integer_value(st),
                           .has_status = json_is_integer(st),
                           .retry_after_ms = json_is_integer(ra) ? json_integer_value(ra) : -1,
                           .retryable = json_is_true(json_object_get(d, "retryable"))};
}
