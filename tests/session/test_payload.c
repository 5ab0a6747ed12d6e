/*
 * test_payload.c - typed event payloads (src/session/payload.c): a streamed delta's JSON text
 * is what jansson writes for the JSON event it stands for, compact and with JSON_ENSURE_ASCII,
 * for every kind of character; a delta queued typed is journaled as that text, repaired where
 * it is not UTF-8, read by append_delta, and given as ev->data (JSON) to a handler the program
 * registered, and to none when the program registered none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentc/agentc.h"
#include "llm/provider.h"
#include "session/payload.h"
#include "session/sink.h"
#include "spec.h"
#include "util/json_text.h"
#include "util/utf8.h"

/* p's text (flags) against json_dumps of its JSON value */
static void same_as_jansson(const ac_payload *p)
{
    json_t *v = ac_payload_json(p);
    assert_non_null(v);
    static const size_t jflags[2] = {JSON_COMPACT, JSON_COMPACT | JSON_ENSURE_ASCII};
    static const unsigned aflags[2] = {0, AC_JSON_ASCII};
    for (int i = 0; i < 2; i++) {
        char *want = json_dumps(v, jflags[i]);
        ac_buf b;
        ac_buf_init(&b, AC_BUF_MAX);
        ac_payload_put(&b, p, aflags[i]);
        char *got = ac_buf_take(&b, NULL);
        assert_non_null(want);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(want);
        free(got);
    }
    char *row = ac_payload_text(p);
    char *want = json_dumps(v, JSON_COMPACT);
    assert_string_equal(row, want);
    free(row);
    free(want);
    json_decref(v);
}

/* n bytes of UTF-8 from random code points (every length of sequence, controls, quotes) */
static size_t random_utf8(char *out, size_t cap)
{
    size_t n = 0;
    while (n + 4 < cap) {
        unsigned r = (unsigned)rand(), cp;
        switch (r % 5) {
        case 0:
            cp = r % 0x80;
            break;
        case 1:
            cp = 0x80 + r % 0x780;
            break;
        case 2:
            cp = 0x800 + r % 0xF800;
            break;
        case 3:
            cp = 0x10000 + r % 0x100000;
            break;
        default:
            cp = "\"\\\n\t/\x7f\x01"[r % 7];
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF)
            cp = 'x';
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xE0 | (cp >> 12));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | (cp >> 18));
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[n] = 0;
    return n;
}

static void test_text_as_jansson(void **state)
{
    (void)state;
    static const char *const texts[] = {"",
                                        "plain",
                                        "He said \"hi\" \\ /",
                                        "\n\r\t\b\f\x01\x1f\x7f",
                                        "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80",
                                        "\xef\xbf\xbd"};
    for (int kind = AC_DELTA_TEXT; kind < AC_DELTA_TOOL_CALL; kind++)
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            ac_payload p = {.kind = AC_PAYLOAD_DELTA,
                            .delta = (uint8_t)kind,
                            .n = strlen(texts[i]),
                            .text = texts[i]};
            same_as_jansson(&p);
        }
    /* a tool call's arguments: index, then id and name when it has them */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ac_payload p = {.kind = AC_PAYLOAD_DELTA,
                        .delta = AC_DELTA_TOOL_CALL,
                        .n = strlen(texts[i]),
                        .text = texts[i],
                        .index = (int)i};
        same_as_jansson(&p);
        p.id = texts[i];
        p.id_n = strlen(texts[i]);
        same_as_jansson(&p);
        p.name = "calc\xc3\xa9";
        p.name_n = 6;
        same_as_jansson(&p);
        p.id = NULL;
        same_as_jansson(&p);
    }
    ac_payload nul = {.kind = AC_PAYLOAD_DELTA, .n = 3, .text = "a\0b"}; /* NUL: \u0000 */
    same_as_jansson(&nul);
    ac_payload empty = {.kind = AC_PAYLOAD_EMPTY, .text = ""}; /* llm.started: {} */
    same_as_jansson(&empty);
    /* a provider's failure: class, status, retryable, message, and Retry-After when given */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ac_payload p = {.kind = AC_PAYLOAD_FAILURE,
                        .n = strlen(texts[i]),
                        .text = texts[i],
                        .name = i % 2 ? "http" : "stream",
                        .name_n = i % 2 ? 4 : 6,
                        .ok = (int)(i % 3 == 0),
                        .status = i ? 500 + (int64_t)i : 0,
                        .retry_after_ms = i % 2 ? -1 : (int64_t)i * 1000};
        same_as_jansson(&p);
    }
    /* a tool call's plain result: id, ok, content, duration_ms */
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ac_payload p = {.kind = AC_PAYLOAD_TOOL_RESULT,
                        .n = strlen(texts[i]),
                        .text = texts[i],
                        .id = texts[(i + 1) % 6],
                        .id_n = strlen(texts[(i + 1) % 6]),
                        .ok = (int)(i % 2),
                        .duration_ms = (int64_t)i * 1000003};
        same_as_jansson(&p);
    }
    srand(7);
    char buf[512];
    for (int i = 0; i < 2000; i++) {
        size_t n = random_utf8(buf, 1 + (size_t)rand() % sizeof buf);
        assert_int_equal(ac_utf8_valid_len(buf, n), n);
        ac_payload p = {.kind = AC_PAYLOAD_DELTA, .n = n, .text = buf};
        same_as_jansson(&p);
        ac_payload r = {.kind = AC_PAYLOAD_TOOL_RESULT,
                        .n = n,
                        .text = buf,
                        .id = "call_1",
                        .id_n = 6,
                        .ok = i % 3 != 0,
                        .duration_ms = rand()};
        same_as_jansson(&r);
    }
    /* not UTF-8: the ASCII writer fails rather than write what jansson never would */
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_json_put_string(&b, "a\xff", 2, AC_JSON_ASCII);
    assert_true(b.failed);
    ac_buf_free(&b);
}

/* A model's reply as the HTTP providers built it with jansson before it was typed: the
 * reference its typed text must match byte for byte. */
static json_t *reference_completion(const ac_completion *c)
{
    json_t *calls = json_array();
    for (size_t i = 0; i < c->n_calls; i++)
        json_array_append_new(calls, json_pack("{s:s%, s:s%, s:s%}", "id", c->calls[i].id,
                                               c->calls[i].id_n, "name", c->calls[i].name,
                                               c->calls[i].name_n, "arguments",
                                               c->calls[i].arguments, c->calls[i].arguments_n));
    json_t *j = json_pack("{s:s%, s:s%, s:s%, s:o, s:o, s:{s:I, s:I}}", "content", c->content,
                          c->content_n, "reasoning", c->reasoning, c->reasoning_n, "refusal",
                          c->refusal, c->refusal_n, "tool_calls", calls, "finish_reason",
                          c->finish_reason ? json_string(c->finish_reason) : json_null(), "usage",
                          "input", (json_int_t)c->input, "output", (json_int_t)c->output);
    assert_non_null(j);
    json_t *u = json_object_get(j, "usage");
    const char *const keys[] = {"cached", "cache_write", "reasoning"};
    const int64_t vals[] = {c->cached, c->cache_write, c->reasoning_tokens};
    for (size_t i = 0; i < 3; i++)
        if (vals[i] > 0)
            json_object_set_new(u, keys[i], json_integer(vals[i]));
    if (c->response_id)
        json_object_set_new(j, "response_id", json_string(c->response_id));
    if (c->response_model)
        json_object_set_new(j, "response_model", json_string(c->response_model));
    if (c->n_blocks) {
        json_t *blocks = json_array();
        for (size_t i = 0; i < c->n_blocks; i++) {
            const ac_payload_thinking *b = &c->blocks[i];
            json_array_append_new(blocks,
                                  b->data ? json_pack("{s:s, s:s%}", "type", "redacted_thinking",
                                                      "data", b->data, b->data_n)
                                          : json_pack("{s:s, s:s%, s:s%}", "type", "thinking",
                                                      "thinking", b->thinking, b->thinking_n,
                                                      "signature", b->signature, b->signature_n));
        }
        json_object_set_new(j, "thinking_blocks", blocks);
    }
    return j;
}

/* c packed as a queue entry packs it, its text (compact, ASCII, row) against the reference's
 * json_dumps, its JSON value equal to the reference. */
static void completion_as_jansson(const ac_completion *c)
{
    char *mem = malloc(ac_completion_size(c));
    assert_non_null(mem);
    const ac_completion *d = ac_completion_pack(mem, c);
    assert_non_null(d);
    ac_payload p = {.kind = AC_PAYLOAD_COMPLETION, .text = "", .done = d};
    json_t *ref = reference_completion(c);
    static const size_t jflags[2] = {JSON_COMPACT, JSON_COMPACT | JSON_ENSURE_ASCII};
    static const unsigned aflags[2] = {0, AC_JSON_ASCII};
    for (int i = 0; i < 2; i++) {
        char *want = json_dumps(ref, jflags[i]);
        ac_buf b;
        ac_buf_init(&b, AC_BUF_MAX);
        ac_payload_put(&b, &p, aflags[i]);
        char *got = ac_buf_take(&b, NULL);
        assert_non_null(want);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(want);
        free(got);
    }
    json_t *v = ac_payload_json(&p);
    assert_true(json_equal(v, ref));
    json_decref(v);
    json_decref(ref);
    free(mem);
}

static void test_completion_as_jansson(void **state)
{
    (void)state;
    ac_payload_call calls[2] = {
        {.id = "call_1",
         .id_n = 6,
         .name = "calc",
         .name_n = 4,
         .arguments = "{\"x\":\"\\u00e9\"}",
         .arguments_n = 14},
        {.id = "c\xc3\xa9", .id_n = 4, .name = "", .name_n = 0, .arguments = "", .arguments_n = 0}};
    ac_payload_thinking blocks[2] = {
        {.thinking = "th\xe6\x97\xa5\n", .thinking_n = 6, .signature = "sig", .signature_n = 3},
        {.data = "opaque", .data_n = 6}};
    ac_completion c = {.content = "", .reasoning = "", .refusal = ""};
    completion_as_jansson(&c); /* nothing: finish_reason null, usage 0/0 */
    c = (ac_completion){.content = "He said \"hi\"\n\x01 \xf0\x9f\x98\x80",
                        .content_n = 20,
                        .reasoning = "why",
                        .reasoning_n = 3,
                        .refusal = "",
                        .calls = calls,
                        .n_calls = 2,
                        .finish_reason = "tool_calls",
                        .has_usage = 1,
                        .input = 120,
                        .output = 7,
                        .cached = 100,
                        .reasoning_tokens = 3,
                        .response_id = "resp_1",
                        .response_model = "m\xc3\xa9",
                        .blocks = blocks,
                        .n_blocks = 2};
    completion_as_jansson(&c);
    c.cache_write = 9;
    c.cached = 0;
    c.n_blocks = 0;
    c.response_id = NULL;
    completion_as_jansson(&c);
    srand(11);
    char a[256], r[256], args[256];
    for (int i = 0; i < 500; i++) {
        size_t an = random_utf8(a, 1 + (size_t)rand() % sizeof a);
        size_t rn = random_utf8(r, 1 + (size_t)rand() % sizeof r);
        size_t gn = random_utf8(args, 1 + (size_t)rand() % sizeof args);
        calls[0].arguments = args;
        calls[0].arguments_n = gn;
        c = (ac_completion){.content = a,
                            .content_n = an,
                            .reasoning = r,
                            .reasoning_n = rn,
                            .refusal = r,
                            .refusal_n = rn,
                            .calls = calls,
                            .n_calls = (size_t)(i % 3 ? 1 : 0),
                            .finish_reason = "stop",
                            .input = rand(),
                            .output = rand() % 100,
                            .cached = rand() % 3};
        completion_as_jansson(&c);
    }
}

/* A reply not UTF-8 (as a broken server sends) is repaired when packed, NUL kept: what the
 * providers' JSON strings held. */
static void test_completion_repaired(void **state)
{
    (void)state;
    ac_payload_call call = {.id = "i\xff",
                            .id_n = 2,
                            .name = "n",
                            .name_n = 1,
                            .arguments = "{\xc3}",
                            .arguments_n = 3};
    ac_completion c = {.content = "a\0b\xff",
                       .content_n = 4,
                       .reasoning = "",
                       .refusal = "",
                       .calls = &call,
                       .n_calls = 1,
                       .finish_reason = "st\xfe"};
    char *mem = malloc(ac_completion_size(&c));
    const ac_completion *d = ac_completion_pack(mem, &c);
    assert_non_null(d);
    assert_int_equal(d->content_n, 6);
    assert_memory_equal(d->content, "a\0b\xef\xbf\xbd", 7);
    assert_string_equal(d->calls[0].id, "i\xef\xbf\xbd");
    assert_string_equal(d->calls[0].arguments, "{\xef\xbf\xbd}");
    assert_string_equal(d->finish_reason, "st\xef\xbf\xbd");
    ac_payload p = {.kind = AC_PAYLOAD_COMPLETION, .text = "", .done = d};
    char *row = ac_payload_text(&p);
    assert_non_null(strstr(row, "{\"content\":\"a\\u0000b\xef\xbf\xbd\","));
    free(row);
    free(mem);
}

/* A stored delta row read back without jansson: what ac_payload_text wrote, and jansson's
 * reading of anything it accepts; any other row is left to jansson. */
static void test_read_delta(void **state)
{
    (void)state;
    ac_buf scratch;
    ac_buf_init(&scratch, AC_BUF_MAX);
    srand(11);
    char buf[300];
    for (int i = 0; i < 2000; i++) {
        size_t n = random_utf8(buf, 1 + (size_t)rand() % sizeof buf);
        ac_payload p = {.kind = AC_PAYLOAD_DELTA, .delta = (uint8_t)(i % 3), .n = n, .text = buf};
        char *row = ac_payload_text(&p);
        ac_payload q;
        int rc = ac_payload_read_delta(row, strlen(row), &q, &scratch);
        if (memchr(buf, 0, n)) { /* \u0000: jansson refuses it without JSON_ALLOW_NUL */
            assert_int_equal(rc, -1);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(q.delta, p.delta);
            assert_int_equal(q.n, n);
            assert_memory_equal(q.text, buf, n);
        }
        free(row);
    }
    static const char *const others[] = {
        "{\"kind\":\"tool_call\",\"text\":\"a\",\"index\":0}", /* not read: JSON */
        "{\"kind\":\"text\",\"text\":\"a\",\"x\":1}",
        "{\"text\":\"a\",\"kind\":\"text\"}",
        "{\"kind\":\"text\",\"text\":\"caf\\u00e9\"}", /* an escape above U+007F */
        "{\"kind\":\"text\",\"text\":\"a\\q\"}",
        "{\"kind\":\"text\",\"text\":\"a\\u00G1\"}",
        "{\"kind\":\"text\",\"text\":\"a\x01\"}", /* a raw control character */
        "{\"kind\":\"text\",\"text\":\"a\xff\"}", /* not UTF-8 */
        "{\"kind\":\"text\",\"text\":\"a\"} ",
        "{\"kind\":\"text\",\"text\":\"a",
        "{\"kind\":\"text\",\"text\":\"a\\",
        "{\"kind\":\"text\"}",
        ""};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        ac_payload q;
        assert_int_equal(ac_payload_read_delta(others[i], strlen(others[i]), &q, &scratch), -1);
    }
    ac_payload q;
    const char *esc =
        "{\"kind\":\"reasoning\",\"text\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u001F\\u0041\"}";
    assert_int_equal(ac_payload_read_delta(esc, strlen(esc), &q, &scratch), 0);
    assert_int_equal(q.delta, AC_DELTA_REASONING);
    assert_int_equal(q.n, 10);
    assert_memory_equal(q.text,
                        "\"\\/\b\f\n\r\t\x1f"
                        "A",
                        10);
    const char *empty = "{\"kind\":\"text\",\"text\":\"\"}";
    assert_int_equal(ac_payload_read_delta(empty, strlen(empty), &q, &scratch), 0);
    assert_int_equal(q.n, 0);
    assert_string_equal(q.text, "");
    ac_buf_free(&scratch);
}

/* ---- a session given typed deltas ---- */

static char seen[256];
static int n_seen;

static void seen_delta(ac_session *s, const ac_event *ev)
{
    (void)s;
    char *d = ev->data ? json_dumps(ev->data, JSON_COMPACT) : NULL;
    snprintf(seen, sizeof seen, "%s", d ? d : "(null)");
    free(d);
    n_seen++;
}

static ac_fsm_tables *with_seen_delta(void)
{
    ac_spec *spec = ac_spec_load("spec/agent.fsm");
    assert_non_null(spec);
    const char *from = "STREAMING on llm.delta / append_delta";
    const char *to = "STREAMING on llm.delta / append_delta, seen_delta";
    const char *decl = "\naction seen_delta\n";
    char *src = malloc(spec->src_len + strlen(to) + strlen(decl) + 1);
    memcpy(src, spec->src, spec->src_len);
    src[spec->src_len] = 0;
    ac_spec_free(spec);
    char *at = strstr(src, from);
    assert_non_null(at);
    memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
    memcpy(at, to, strlen(to));
    strcat(src, decl);
    spec = ac_spec_parse("edited.fsm", src, strlen(src));
    free(src);
    assert_non_null(spec);
    ac_spec_check(spec);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "edited.fsm");
    ac_spec_free(spec);
    assert_non_null(t);
    return t;
}

/* A session of e streaming its first call (nothing of the script arrives: the loop never
 * runs), given one typed text delta of n bytes of `text`. */
static ac_session *streamed(ac_engine *e, const char *journal, const char *text, size_t n)
{
    ac_error err = {0};
    ac_session *s = ac_session_new(e, "p1", journal, &err);
    assert_non_null(s);
    assert_int_equal(ac_session_send(s, "hi"), AC_OK);
    assert_int_equal(ac_session_post(s, "llm.started", json_object(), 0), AC_OK);
    assert_string_equal(ac_session_state(s, "process"), "STREAMING");
    ac_session_enqueue_delta(s, ac_engine_event_index(e, "llm.delta"), AC_DELTA_TEXT, text, n, 0);
    return s;
}

static void test_session_deltas(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_fsm_tables *t = with_seen_delta();
    ac_registry *r = ac_registry_new();
    assert_int_equal(ac_registry_action(r, "seen_delta", seen_delta), 0);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.tables = t;
    cfg.registry = r;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"unused\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    char path[] = "/tmp/agentc_payload_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    /* "caf\xc3\xa9 \xff": the stray byte repaired to U+FFFD, as the JSON event had it */
    ac_session *s = streamed(e, path, "caf\xc3\xa9 \xff\"", 8);
    assert_int_equal(n_seen, 1);
    assert_string_equal(seen, "{\"kind\":\"text\",\"text\":\"caf\xc3\xa9 \xef\xbf\xbd\\\"\"}");
    assert_string_equal(ac_session_partial(s), "caf\xc3\xa9 \xef\xbf\xbd\"");
    ac_session_free(s);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"ev\":\"llm.delta\"")) {
            assert_non_null(strstr(line, ",\"t\":"));
            assert_string_equal(strstr(line, ",\"ev\""),
                                ",\"ev\":\"llm.delta\",\"data\":{\"kind\":\"text\",\"text\":"
                                "\"caf\\u00E9 \\uFFFD\\\"\"}}\n");
            found++;
        }
    fclose(f);
    unlink(path);
    assert_int_equal(found, 1);
    ac_engine_free(e);
    ac_registry_free(r);
    ac_spec_tables_free(t);
    ac_loop_free(loop);
}

/* An engine of built-in handlers only: append_delta reads the payload, no JSON is made. */
static void test_builtin_only(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"unused\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_session *s = streamed(e, NULL, "typed \xe6\x97\xa5", 9);
    assert_string_equal(ac_session_partial(s), "typed \xe6\x97\xa5");
    ac_session_enqueue_delta(s, ac_engine_event_index(e, "llm.delta"), AC_DELTA_REASONING, "r", 1,
                             0);
    assert_string_equal(ac_session_partial(s), "typed \xe6\x97\xa5"); /* reasoning: not text */
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* A typed reply given to a session of built-in handlers: journaled as the reference's text,
 * recorded (a NUL of its text made U+FFFD, usage and calls counted), has_tool_calls read from
 * it; then a reply without calls ends the turn. */
static void test_session_completion(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"unused\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    char path[] = "/tmp/agentc_payload_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    ac_session *s = streamed(e, path, "x", 1);
    uint16_t done = ac_engine_event_index(e, "llm.completed");
    ac_payload_call call = {.id = "call_9",
                            .id_n = 6,
                            .name = "nothing_here",
                            .name_n = 12,
                            .arguments = "{}",
                            .arguments_n = 2};
    ac_completion c = {.content = "a\0b",
                       .content_n = 3,
                       .reasoning = "",
                       .refusal = "",
                       .calls = &call,
                       .n_calls = 1,
                       .finish_reason = "tool_calls",
                       .has_usage = 1,
                       .input = 40,
                       .output = 2};
    ac_session_enqueue_completion(s, done, &c, 0);
    ac_session_stats st;
    ac_session_get_stats(s, &st);
    assert_int_equal(st.input_tokens, 40);
    assert_int_equal(st.output_tokens, 2);
    assert_int_equal(st.tool_calls, 1);
    assert_string_not_equal(ac_session_state(s, "process"), "STREAMING");
    /* the call's plain result, typed: recorded, a stray byte repaired */
    ac_session_enqueue_tool_result(s, ac_engine_event_index(e, "tool.completed"), "call_9", 1,
                                   "forty-two \xff", 17, 0);
    char *js = ac_session_to_json(s);
    assert_non_null(strstr(js, "\"a\xef\xbf\xbd"
                               "b\""));
    assert_non_null(strstr(js, "\"forty-two \xef\xbf\xbd\""));
    free(js);
    ac_session_free(s);
    json_t *ref = reference_completion(&c);
    char *want = json_dumps(ref, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(ref);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "\"ev\":\"llm.completed\",\"data\":");
        if (at) {
            at += strlen("\"ev\":\"llm.completed\",\"data\":");
            assert_int_equal(strncmp(at, want, strlen(want)), 0);
            assert_string_equal(at + strlen(want), "}\n");
            found++;
        }
    }
    fclose(f);
    free(want);
    assert_int_equal(found, 1);
    f = fopen(path, "r");
    assert_non_null(f);
    found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"ev\":\"tool.completed\",\"data\":{\"id\":\"call_9\",\"ok\":true,"
                         "\"content\":\"forty-two \\uFFFD\",\"duration_ms\":17}}\n"))
            found++;
    fclose(f);
    unlink(path);
    assert_int_equal(found, 1);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* A typed failure given to a streaming session: journaled as the JSON event was, retryable
 * read from it (the call is retried: RETRYING, waiting out its backoff). */
static void test_session_failure(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"unused\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    char path[] = "/tmp/agentc_payload_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    ac_session *s = streamed(e, path, "x", 1);
    ac_session_enqueue_failure(s, ac_engine_event_index(e, "llm.failed"), "http", 503, 1, 2000,
                               "unavailable \xff", 0);
    assert_string_equal(ac_session_state(s, "process"), "RETRYING");
    ac_session_free(s);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, ",\"ev\":\"llm.failed\",\"data\":{\"class\":\"http\",\"status\":503,"
                         "\"retryable\":true,\"message\":\"unavailable \\uFFFD\","
                         "\"retry_after_ms\":2000}}\n"))
            found++;
    fclose(f);
    unlink(path);
    assert_int_equal(found, 1);
    ac_engine_free(e);
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_as_jansson),       cmocka_unit_test(test_read_delta),
        cmocka_unit_test(test_session_deltas),        cmocka_unit_test(test_builtin_only),
        cmocka_unit_test(test_completion_as_jansson), cmocka_unit_test(test_completion_repaired),
        cmocka_unit_test(test_session_completion),    cmocka_unit_test(test_session_failure)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
