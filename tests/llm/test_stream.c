/* Tests for streamed-response assembly (src/llm/stream*.c): every canned stream in
 * tests/llm/streams/ must assemble to its .expected.json, identically when fed
 * whole, split in two at every byte, and byte by byte; plus error cases. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm/stream.h"

#define STREAMS_DIR "tests/llm/streams"

/* ---- recording sink ---- */

static void log_delta(void *ud, const char *kind, const char *s, size_t n)
{
    json_array_append_new(ud, json_pack("[s s%]", kind, s, n));
}
static void on_text(void *ud, const char *s, size_t n)
{
    log_delta(ud, "text", s, n);
}
static void on_reasoning(void *ud, const char *s, size_t n)
{
    log_delta(ud, "reasoning", s, n);
}
static void on_refusal(void *ud, const char *s, size_t n)
{
    log_delta(ud, "refusal", s, n);
}
static void on_tool(void *ud, int index, const char *id, const char *name, const char *args,
                    size_t n)
{
    assert_non_null(args);
    json_array_append_new(ud, json_pack("[s i s? s? s%]", "tool", index, id, name, args, n));
}

static const char *finish_name(int rc)
{
    switch (rc) {
    case AC_STREAM_OK:
        return "ok";
    case AC_STREAM_ERR_TRUNCATED:
        return "truncated";
    case AC_STREAM_ERR_PROVIDER:
        return "provider";
    case AC_STREAM_ERR_JSON:
        return "json";
    case AC_STREAM_ERR_PROTOCOL:
        return "protocol";
    case AC_STREAM_ERR_SSE:
        return "sse";
    case AC_STREAM_ERR_TURN_TOO_LARGE:
        return "turn_too_large";
    default:
        return "other";
    }
}

/* The turn in the .expected.json shape. */
static json_t *turn_json(const ac_stream_turn *t, int finish_rc)
{
    json_t *calls = json_array();
    for (size_t i = 0; i < t->n_tool_calls; i++) {
        const ac_tool_call_acc *c = &t->tool_calls[i];
        assert_int_equal(strlen(c->arguments), c->arguments_len);
        json_array_append_new(calls, json_pack("{s i s s s s s s%}", "index", c->index, "id", c->id,
                                               "name", c->name, "arguments", c->arguments,
                                               c->arguments_len));
    }
    json_t *usage = t->have_usage ? json_pack("{s I s I}", "input", (json_int_t)t->input_tokens,
                                              "output", (json_int_t)t->output_tokens)
                                  : json_null();
    json_t *error = t->error ? json_pack("{s s s s s b}", "type", t->error_type, "message",
                                         t->error_message, "retryable", t->error_retryable)
                             : json_null();
    json_t *turn = json_pack("{s s% s s% s s% s o s s? s o s b s o s s}", "text", t->text,
                             t->text_len, "reasoning", t->reasoning, t->reasoning_len, "refusal",
                             t->refusal, t->refusal_len, "tool_calls", calls, "finish_reason",
                             t->finish_reason, "usage", usage, "terminated", t->terminated, "error",
                             error, "finish", finish_name(finish_rc));
    /* thinking blocks (Anthropic), in the shape they are sent back in */
    if (t->n_thinking_blocks) {
        json_t *blocks = json_array();
        for (size_t i = 0; i < t->n_thinking_blocks; i++) {
            const ac_thinking_block *b = &t->thinking_blocks[i];
            assert_int_equal(strlen(b->thinking), b->thinking_len);
            json_array_append_new(
                blocks, b->data
                            ? json_pack("{s s s s}", "type", "redacted_thinking", "data", b->data)
                            : json_pack("{s s s s% s s}", "type", "thinking", "thinking",
                                        b->thinking, b->thinking_len, "signature", b->signature));
        }
        json_object_set_new(turn, "thinking_blocks", blocks);
    }
    return turn;
}

/* Runs a stream fed in chunks ending at the given cuts; each chunk in its own
 * exactly-sized heap buffer. Returns {"turn": ..., "deltas": [...]}. */
static json_t *run_cuts(ac_wire wire, const char *in, size_t len, const size_t *cuts, size_t n_cuts)
{
    json_t *deltas = json_array();
    ac_stream_sink sink = {deltas, on_text, on_reasoning, on_refusal, on_tool};
    ac_stream *st = ac_stream_new(wire, &sink, 0);
    assert_non_null(st);
    size_t start = 0;
    int rc = 0;
    for (size_t i = 0; i <= n_cuts && rc == 0; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        char *chunk = malloc(end - start + 1);
        assert_non_null(chunk);
        memcpy(chunk, in + start, end - start);
        rc = ac_stream_feed(st, chunk, end - start);
        free(chunk);
        start = end;
    }
    int fin = ac_stream_finish(st);
    if (rc)
        assert_int_equal(fin, rc);
    json_t *out = json_pack("{s o s o s s}", "turn", turn_json(ac_stream_turn_get(st), fin),
                            "deltas", deltas, "error", ac_stream_error(st));
    ac_stream_free(st);
    return out;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void dump_diff(const char *what, json_t *got, json_t *want)
{
    char *g = json_dumps(got, JSON_INDENT(1) | JSON_SORT_KEYS);
    char *w = json_dumps(want, JSON_INDENT(1) | JSON_SORT_KEYS);
    print_error("%s\n--- got\n%s\n--- expected\n%s\n", what, g, w);
    free(g);
    free(w);
}

/* Checks that concatenated deltas rebuild the assembled turn. */
static void check_deltas_match_turn(const char *name, json_t *run)
{
    json_t *turn = json_object_get(run, "turn");
    json_t *deltas = json_object_get(run, "deltas");
    const char *kinds[] = {"text", "reasoning", "refusal"};
    for (int k = 0; k < 3; k++) {
        json_t *acc = json_string("");
        size_t i;
        json_t *d;
        json_array_foreach(deltas, i, d)
        {
            if (strcmp(json_string_value(json_array_get(d, 0)), kinds[k]) == 0) {
                char *cat = NULL;
                size_t a = json_string_length(acc), b = json_string_length(json_array_get(d, 1));
                cat = malloc(a + b + 1);
                memcpy(cat, json_string_value(acc), a);
                memcpy(cat + a, json_string_value(json_array_get(d, 1)), b);
                json_string_setn(acc, cat, a + b);
                free(cat);
            }
        }
        if (!json_equal(acc, json_object_get(turn, kinds[k]))) {
            dump_diff(name, acc, json_object_get(turn, kinds[k]));
            fail_msg("%s: %s deltas do not rebuild the turn", name, kinds[k]);
        }
        json_decref(acc);
    }
}

static int n_fixtures;

static void check_fixture(const char *name)
{
    char path[512];
    size_t len, elen;
    snprintf(path, sizeof path, "%s/%s.expected.json", STREAMS_DIR, name);
    char *etext = read_file(path, &elen);
    json_error_t jerr;
    json_t *expected = json_loadb(etext, elen, 0, &jerr);
    free(etext);
    if (!expected)
        fail_msg("%s: %s", path, jerr.text);
    const char *wire_name = json_string_value(json_object_get(expected, "wire"));
    assert_non_null(wire_name);
    ac_wire wire = strcmp(wire_name, "anthropic") == 0 ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI;
    json_object_del(expected, "wire");

    snprintf(path, sizeof path, "%s/%s.sse", STREAMS_DIR, name);
    char *in = read_file(path, &len);
    json_t *whole = run_cuts(wire, in, len, NULL, 0);
    if (!json_equal(json_object_get(whole, "turn"), expected)) {
        dump_diff(name, json_object_get(whole, "turn"), expected);
        fail_msg("%s: assembled turn differs from %s.expected.json", name, name);
    }
    check_deltas_match_turn(name, whole);
    assert_true(json_array_size(json_object_get(whole, "deltas")) > 0);

    /* every byte; under valgrind (AGENTC_TEST_UNDER_VALGRIND set by CI) every
     * 7th byte, which still cuts every field of every event somewhere, and
     * keeps the run to seconds instead of minutes */
    size_t step = getenv("AGENTC_TEST_UNDER_VALGRIND") ? 7 : 1;
    for (size_t k = 1; k < len; k += step) {
        json_t *split = run_cuts(wire, in, len, &k, 1);
        if (!json_equal(whole, split)) {
            dump_diff(name, split, whole);
            fail_msg("%s: split at byte %zu differs from the whole feed", name, k);
        }
        json_decref(split);
    }
    size_t *cuts = malloc(len * sizeof *cuts);
    for (size_t k = 1; k < len; k++)
        cuts[k - 1] = k;
    json_t *bytes = run_cuts(wire, in, len, cuts, len - 1);
    free(cuts);
    if (!json_equal(whole, bytes)) {
        dump_diff(name, bytes, whole);
        fail_msg("%s: byte-by-byte feed differs from the whole feed", name);
    }
    json_decref(bytes);
    json_decref(whole);
    json_decref(expected);
    free(in);
    n_fixtures++;
}

static void test_fixture(void **state)
{
    check_fixture(*state);
}

/* Every .sse in the folder has an expectation and is covered by the list below. */
static const char *const fixtures[] = {
    "openai_text",
    "openai_tools",
    "openai_refusal",
    "openai_n2",
    "vllm_tools",
    "llamacpp_text",
    "ollama_parallel_tools",
    "deepseek_reasoning",
    "groq_text",
    "openrouter_comments_error",
    "lmstudio_text",
    "anthropic_text",
    "anthropic_tools",
    "anthropic_thinking",
    "anthropic_thinking_tools",
    "anthropic_error",
};
#define N_FIXTURES (sizeof fixtures / sizeof fixtures[0])

static void test_fixture_list_complete(void **state)
{
    (void)state;
    DIR *d = opendir(STREAMS_DIR);
    assert_non_null(d);
    struct dirent *e;
    size_t n_sse = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".sse") != 0)
            continue;
        n_sse++;
        int found = 0;
        for (size_t i = 0; i < N_FIXTURES; i++)
            if (strlen(fixtures[i]) == l - 4 && memcmp(fixtures[i], e->d_name, l - 4) == 0)
                found = 1;
        if (!found)
            fail_msg("%s/%s is not in the fixture list", STREAMS_DIR, e->d_name);
    }
    closedir(d);
    assert_int_equal(n_sse, N_FIXTURES);
}

/* ---- error cases ---- */

static json_t *run_text(ac_wire wire, const char *in)
{
    return run_cuts(wire, in, strlen(in), NULL, 0);
}

static const char *turn_str(json_t *run, const char *key)
{
    return json_string_value(json_object_get(json_object_get(run, "turn"), key));
}

static void test_invalid_json(void **state)
{
    (void)state;
    json_t *r = run_text(AC_WIRE_OPENAI,
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n"
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}\n\n"
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"late\"}}]}\n\n"
                         "data: [DONE]\n\n");
    assert_string_equal(turn_str(r, "finish"), "json");
    assert_string_equal(turn_str(r, "text"), "ok");
    const char *err = json_string_value(json_object_get(r, "error"));
    assert_non_null(strstr(err, "malformed JSON"));
    json_decref(r);
    r = run_text(AC_WIRE_ANTHROPIC, "event: message_start\ndata: not json\n\n");
    assert_string_equal(turn_str(r, "finish"), "json");
    json_decref(r);
    r = run_text(AC_WIRE_OPENAI, "data: [1,2]\n\n");
    assert_string_equal(turn_str(r, "finish"), "protocol");
    json_decref(r);
    r = run_text(AC_WIRE_OPENAI,
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":7}}]}\n\n");
    assert_string_equal(turn_str(r, "finish"), "protocol");
    json_decref(r);
}

static void test_truncated_stream(void **state)
{
    (void)state;
    size_t len;
    char *in = read_file(STREAMS_DIR "/openai_tools.sse", &len);
    char *done = strstr(in, "data: [DONE]");
    assert_non_null(done);
    ac_stream *st = ac_stream_new(AC_WIRE_OPENAI, NULL, 0);
    assert_int_equal(ac_stream_feed(st, in, (size_t)(done - in)), 0);
    assert_int_equal(ac_stream_finish(st), AC_STREAM_ERR_TRUNCATED);
    assert_string_equal(ac_stream_error(st), "stream ended without its terminator");
    assert_int_equal(ac_stream_error_retryable(st), 1);
    const ac_stream_turn *t = ac_stream_turn_get(st);
    assert_int_equal(t->terminated, 0);
    assert_int_equal(t->n_tool_calls, 3); /* the partial turn is still there */
    ac_stream_free(st);
    /* cut in the middle of a line */
    st = ac_stream_new(AC_WIRE_OPENAI, NULL, 0);
    assert_int_equal(ac_stream_feed(st, in, 100), 0);
    assert_int_equal(ac_stream_finish(st), AC_STREAM_ERR_TRUNCATED);
    ac_stream_free(st);
    free(in);
    in = read_file(STREAMS_DIR "/anthropic_text.sse", &len);
    done = strstr(in, "event: message_stop");
    st = ac_stream_new(AC_WIRE_ANTHROPIC, NULL, 0);
    assert_int_equal(ac_stream_feed(st, in, (size_t)(done - in)), 0);
    assert_int_equal(ac_stream_finish(st), AC_STREAM_ERR_TRUNCATED);
    ac_stream_free(st);
    free(in);
    ac_stream_free(NULL);
}

static void test_turn_cap(void **state)
{
    (void)state;
    size_t len;
    char *in = read_file(STREAMS_DIR "/openai_text.sse", &len);
    ac_stream *st = ac_stream_new(AC_WIRE_OPENAI, NULL, 20);
    assert_int_equal(ac_stream_feed(st, in, len), AC_STREAM_ERR_TURN_TOO_LARGE);
    assert_true(ac_stream_turn_get(st)->text_len <= 20);
    assert_int_equal(ac_stream_feed(st, "x", 1), AC_STREAM_ERR_TURN_TOO_LARGE);
    assert_int_equal(ac_stream_finish(st), AC_STREAM_ERR_TURN_TOO_LARGE);
    assert_non_null(strstr(ac_stream_error(st), "exceeds 20 bytes"));
    ac_stream_free(st);
    /* the same stream fits with a cap of its exact text size */
    st = ac_stream_new(AC_WIRE_OPENAI, NULL, 0);
    assert_int_equal(ac_stream_feed(st, in, len), 0);
    size_t need = ac_stream_turn_get(st)->text_len;
    ac_stream_free(st);
    st = ac_stream_new(AC_WIRE_OPENAI, NULL, need);
    assert_int_equal(ac_stream_feed(st, in, len), 0);
    assert_int_equal(ac_stream_finish(st), 0);
    ac_stream_free(st);
    free(in);
}

static void test_sse_cap(void **state)
{
    (void)state;
    size_t len;
    char *in = read_file(STREAMS_DIR "/openai_text.sse", &len);
    ac_stream *st = ac_stream_new_ex(AC_WIRE_OPENAI, NULL, 0, 64, 0);
    assert_int_equal(ac_stream_feed(st, in, len), AC_STREAM_ERR_SSE);
    assert_non_null(strstr(ac_stream_error(st), "maximum line length"));
    ac_stream_free(st);
    free(in);
}

static void test_after_done_ignored(void **state)
{
    (void)state;
    json_t *r = run_text(AC_WIRE_OPENAI,
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
                         "data: [DONE]\n\n"
                         "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\n"
                         "data: garbage");
    assert_string_equal(turn_str(r, "text"), "a");
    assert_string_equal(turn_str(r, "finish"), "ok");
    json_decref(r);
}

/* "error": null in a chunk is no error (the turn completes). */
static void test_error_null_is_no_error(void **state)
{
    (void)state;
    json_t *got =
        run_text(AC_WIRE_OPENAI,
                 "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}],"
                 "\"error\":null}\n\n"
                 "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"
                 "\n\ndata: [DONE]\n\n");
    json_t *turn = json_object_get(got, "turn");
    assert_string_equal(json_string_value(json_object_get(turn, "finish")), "ok");
    assert_string_equal(json_string_value(json_object_get(turn, "text")), "hello");
    json_decref(got);
}

static void test_vllm_error_object(void **state)
{
    (void)state;
    json_t *r = run_text(AC_WIRE_OPENAI,
                         "data: {\"object\":\"error\",\"message\":\"The server is overloaded\","
                         "\"type\":\"ServiceUnavailableError\",\"param\":null,\"code\":503}\n\n");
    json_t *err = json_object_get(json_object_get(r, "turn"), "error");
    assert_string_equal(json_string_value(json_object_get(err, "type")), "ServiceUnavailableError");
    assert_true(json_is_true(json_object_get(err, "retryable")));
    assert_string_equal(turn_str(r, "finish"), "provider");
    json_decref(r);
    r = run_text(AC_WIRE_OPENAI, "data: {\"error\":{\"message\":\"Invalid API key\","
                                 "\"type\":\"invalid_request_error\",\"code\":401}}\n\n");
    err = json_object_get(json_object_get(r, "turn"), "error");
    assert_true(json_is_false(json_object_get(err, "retryable")));
    json_decref(r);
}

static void test_garbage_bytes(void **state)
{
    (void)state;
    /* binary noise with NULs and stray "data:" lines must end in a clean error or a
     * truncation, never a crash */
    uint64_t x = 0x2545F4914F6CDD1Dull;
    size_t len = 256 * 1024;
    char *in = malloc(len);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        in[i] = (char)(x >> 24);
        if (i % 50 == 0 && i + 8 < len) {
            memcpy(in + i, "\n\ndata: ", 9);
            i += 8;
        }
    }
    for (int w = 0; w < 2; w++) {
        ac_stream *st = ac_stream_new(w ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI, NULL, 0);
        int rc = 0;
        for (size_t off = 0; off < len && rc == 0; off += 1000)
            rc = ac_stream_feed(st, in + off, len - off < 1000 ? len - off : 1000);
        int fin = ac_stream_finish(st);
        assert_true(fin == AC_STREAM_ERR_JSON || fin == AC_STREAM_ERR_PROTOCOL ||
                    fin == AC_STREAM_ERR_TRUNCATED);
        assert_true(strlen(ac_stream_error(st)) > 0);
        ac_stream_free(st);
    }
    free(in);
}

int main(void)
{
    struct CMUnitTest tests[N_FIXTURES + 16];
    size_t n = 0;
    for (size_t i = 0; i < N_FIXTURES; i++) {
        struct CMUnitTest t = {fixtures[i], test_fixture, NULL, NULL, (void *)fixtures[i]};
        tests[n++] = t;
    }
    const struct CMUnitTest more[] = {
        cmocka_unit_test(test_fixture_list_complete),
        cmocka_unit_test(test_invalid_json),
        cmocka_unit_test(test_truncated_stream),
        cmocka_unit_test(test_turn_cap),
        cmocka_unit_test(test_sse_cap),
        cmocka_unit_test(test_after_done_ignored),
        cmocka_unit_test(test_vllm_error_object),
        cmocka_unit_test(test_error_null_is_no_error),
        cmocka_unit_test(test_garbage_bytes),
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        tests[n++] = more[i];
    return _cmocka_run_group_tests("stream", tests, n, NULL, NULL);
}
