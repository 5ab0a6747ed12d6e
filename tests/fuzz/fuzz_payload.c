/* libFuzzer target: typed event payloads (src/session/payload.c) against jansson. The first
 * byte picks the payload (a delta of text, reasoning, refusal or a tool call's arguments,
 * with or without id and name, or {}), the rest is the delta's text. As the session's sink does,
 * text that is not UTF-8 is repaired first; then the payload's JSON text, compact and ASCII, must
 * be byte for byte what json_dumps writes for the JSON event it stands for, and its JSON value that
 * event. The unrepaired bytes, when they are not UTF-8, must fail the ASCII writer rather than be
 * written. Three more payloads, picked the same way: a tool call's plain result (the text as id
 * and content), a provider's failure (the text as its message) and a model's reply (the text as its
 * strings, packed from the unrepaired bytes as the provider queues it), each against the JSON value
 * the tool runner and the providers built with jansson. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/provider.h"
#include "session/payload.h"
#include "util/json_text.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const ac_payload *p, const json_t *want, unsigned aflags, size_t jflags)
{
    char *w = json_dumps(want, jflags);
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_payload_put(&b, p, aflags);
    char *got = ac_buf_take(&b, NULL);
    if (!w || !got || strcmp(w, got) != 0)
        abort();
    free(w);
    free(got);
}

/* The JSON value of a reply as the providers built it with jansson (text: its strings; the
 * caller sets its reasoning). */
static json_t *reply_json(const char *text, size_t len, int calls, int finish, int64_t in,
                          int64_t out)
{
    json_t *j = json_pack("{s:s%, s:s, s:s, s:[], s:o, s:{s:I, s:I}}", "content", text, len,
                          "reasoning", "", "refusal", "", "tool_calls", "finish_reason",
                          finish ? json_string(text) : json_null(), "usage", "input",
                          (json_int_t)in, "output", (json_int_t)out);
    if (j && calls)
        json_array_append_new(json_object_get(j, "tool_calls"),
                              json_pack("{s:s%, s:s, s:s%}", "id", text, len, "name", "calc",
                                        "arguments", text, len));
    if (j && in > 1)
        json_object_set_new(json_object_get(j, "usage"), "cached", json_integer(in - 1));
    if (j && finish)
        json_object_set_new(j, "response_model", json_string(text));
    return j;
}

/* A tool result (kind 5) and a reply (kind 6) of the input: 0, or abort. */
static int typed_more(int kind, uint8_t flags, const char *in, size_t n)
{
    size_t len;
    char *text = ac_utf8_repair(in, n, AC_UTF8_KEEP_NUL, &len);
    if (!text)
        return 0;
    ac_payload p;
    json_t *want;
    char *mem = NULL;
    if (kind == 5 && (flags & 16)) { /* a provider's failure, its message the text */
        int64_t ra = flags & 32 ? (int64_t)n : -1;
        p = (ac_payload){.kind = AC_PAYLOAD_FAILURE,
                         .n = len,
                         .text = text,
                         .name = "http",
                         .name_n = 4,
                         .ok = flags & 8,
                         .status = (int64_t)n,
                         .retry_after_ms = ra};
        want = json_pack("{s:s, s:I, s:b, s:s%}", "class", "http", "status", (json_int_t)n,
                         "retryable", flags & 8, "message", text, len);
        if (want && ra >= 0)
            json_object_set_new(want, "retry_after_ms", json_integer(ra));
    } else if (kind == 5) {
        p = (ac_payload){.kind = AC_PAYLOAD_TOOL_RESULT,
                         .n = len,
                         .text = text,
                         .id = text,
                         .id_n = len,
                         .ok = flags & 8,
                         .duration_ms = (int64_t)n * 977};
        want = json_pack("{s:s%, s:b, s:s%, s:I}", "id", text, len, "ok", flags & 8, "content",
                         text, len, "duration_ms", (json_int_t)p.duration_ms);
    } else {
        /* finish_reason and response_model are C strings: the text up to a NUL */
        int calls = flags & 8, finish = (flags & 16) && !memchr(text, 0, len);
        ac_payload_call call = {
            .id = in, .id_n = n, .name = "calc", .name_n = 4, .arguments = in, .arguments_n = n};
        char *cut = finish ? strndup(in, n) : NULL;
        ac_completion c = {.content = in,
                           .content_n = n,
                           .reasoning = in,
                           .reasoning_n = n / 2,
                           .refusal = "",
                           .calls = &call,
                           .n_calls = calls ? 1 : 0,
                           .finish_reason = cut,
                           .has_usage = 1,
                           .input = flags % 4,
                           .output = (int64_t)n,
                           .cached = flags % 4 - 1,
                           .response_model = cut};
        /* the half of the raw bytes repaired may differ from half of the repaired text */
        size_t half_len;
        char *half = ac_utf8_repair(in, n / 2, AC_UTF8_KEEP_NUL, &half_len);
        mem = malloc(ac_completion_size(&c));
        const ac_completion *d = mem && half ? ac_completion_pack(mem, &c) : NULL;
        free(cut);
        if (!d) {
            free(half);
            free(mem);
            free(text);
            return 0;
        }
        p = (ac_payload){.kind = AC_PAYLOAD_COMPLETION, .text = "", .done = d};
        want = reply_json(text, len, calls, finish, flags % 4, (int64_t)n);
        if (want)
            json_object_set_new(want, "reasoning", json_stringn(half, half_len));
        free(half);
    }
    json_t *got = ac_payload_json(&p);
    if (!want || !got || !json_equal(want, got))
        abort();
    same(&p, want, 0, JSON_COMPACT);
    same(&p, want, AC_JSON_ASCII, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(want);
    json_decref(got);
    free(mem);
    free(text);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] % 7 >= 5)
        return typed_more(data[0] % 7, data[0], (const char *)data + 1, size - 1);
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    int kind = data[0] % 7; /* 0-3: enum ac_delta_kind (3: a tool call's arguments), 4: {} */
    if (ac_utf8_valid_len(in, n) != n) {
        ac_buf b;
        ac_buf_init(&b, AC_BUF_MAX);
        ac_json_put_string(&b, in, n, AC_JSON_ASCII);
        if (!b.failed)
            abort();
        ac_buf_free(&b);
    }
    size_t len;
    char *text = ac_utf8_repair(in, n, AC_UTF8_KEEP_NUL, &len);
    if (!text)
        return 0;
    ac_payload p = {.kind = AC_PAYLOAD_EMPTY, .text = ""};
    json_t *want = json_object();
    if (kind < 4) {
        p = (ac_payload){.kind = AC_PAYLOAD_DELTA, .delta = (uint8_t)kind, .n = len, .text = text};
        json_object_set_new(want, "kind", json_string(ac_delta_kind_name(kind)));
        json_object_set_new(want, "text", json_stringn(text, len));
    }
    if (kind == AC_DELTA_TOOL_CALL) { /* the text serves as id and name too */
        p.index = data[0];
        json_object_set_new(want, "index", json_integer(p.index));
        if (data[0] & 8) {
            p.id = text;
            p.id_n = len;
            json_object_set_new(want, "id", json_stringn(text, len));
        }
        if (data[0] & 16) {
            p.name = text;
            p.name_n = len;
            json_object_set_new(want, "name", json_stringn(text, len));
        }
    }
    json_t *got = ac_payload_json(&p);
    if (!want || !got || !json_equal(want, got))
        abort();
    same(&p, want, 0, JSON_COMPACT);
    /* a stored row read back: the input itself when it is one (jansson's reading of it), and
     * the payload's own row text */
    ac_buf scratch;
    ac_buf_init(&scratch, AC_BUF_MAX);
    ac_payload r;
    if (ac_payload_read_delta(in, n, &r, &scratch) == 0) {
        json_t *j = json_loadb(in, n, 0, NULL);
        json_t *rj = ac_payload_json(&r);
        if (!j || !rj || !json_equal(j, rj))
            abort();
        json_decref(j);
        json_decref(rj);
    }
    char *row = ac_payload_text(&p);
    if (kind < 3 && row && !memchr(text, 0, len) &&
        (ac_payload_read_delta(row, strlen(row), &r, &scratch) != 0 || r.n != len ||
         memcmp(r.text, text, len) != 0 || r.delta != kind))
        abort();
    free(row);
    ac_buf_free(&scratch);
    same(&p, want, AC_JSON_ASCII, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(want);
    json_decref(got);
    free(text);
    return 0;
}
