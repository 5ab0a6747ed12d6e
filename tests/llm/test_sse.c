/* Unit tests for the SSE scanner (src/llm/sse.rl): line ends, chunk splits at every
 * byte, BOM, fields, comments, caps, truncation and garbage input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "llm/sse.h"

/* Records events and comments as a JSON array of ["event", type, id, data] and
 * ["comment", text]. */
typedef struct rec {
    json_t *log;
    int stop_after; /* stop when this many events were seen; 0 = never */
    int n_events;
    size_t max_data; /* longest event data seen */
} rec;

static int rec_event(void *ud, const ac_sse_event *ev)
{
    rec *r = ud;
    /* the strings are NUL-terminated at their lengths */
    assert_int_equal(ev->data[ev->data_len], '\0');
    assert_int_equal(ev->event[ev->event_len], '\0');
    assert_int_equal(ev->id[ev->id_len], '\0');
    json_array_append_new(r->log, json_pack("[s s# s# s#]", "event", ev->event, (int)ev->event_len,
                                            ev->id, (int)ev->id_len, ev->data, (int)ev->data_len));
    r->n_events++;
    if (ev->data_len > r->max_data)
        r->max_data = ev->data_len;
    return r->stop_after && r->n_events >= r->stop_after;
}

static void rec_comment(void *ud, const char *s, size_t n)
{
    rec *r = ud;
    json_array_append_new(r->log, json_pack("[s s#]", "comment", s, (int)n));
}

/* Feeds input in chunks ending at the given cut points (ascending, exclusive of 0
 * and len), each chunk in its own exactly-sized heap buffer so overreads show up
 * under ASan. Returns the log plus the feed and finish codes. */
static json_t *run_cuts(const char *in, size_t len, const size_t *cuts, size_t n_cuts,
                        size_t max_line, size_t max_event)
{
    rec r = {json_array(), 0, 0, 0};
    ac_sse *s = ac_sse_new(max_line, max_event, rec_event, rec_comment, &r);
    assert_non_null(s);
    int feed_rc = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n_cuts && feed_rc == 0; i++) {
        size_t end = i < n_cuts ? cuts[i] : len;
        char *chunk = malloc(end - start + 1);
        assert_non_null(chunk);
        memcpy(chunk, in + start, end - start);
        feed_rc = ac_sse_feed(s, chunk, end - start);
        free(chunk);
        start = end;
    }
    int fin_rc = ac_sse_finish(s);
    json_t *out = json_pack("{s o s i s i s I}", "log", r.log, "feed", feed_rc, "finish", fin_rc,
                            "retry", (json_int_t)ac_sse_retry_ms(s));
    ac_sse_free(s);
    return out;
}

static json_t *run_whole(const char *in, size_t len)
{
    return run_cuts(in, len, NULL, 0, 0, 0);
}

/* The input scanned whole, split in two at every byte, and byte by byte, must give
 * the same result; returns it. */
static json_t *run_all_splits(const char *in, size_t len)
{
    json_t *whole = run_whole(in, len);
    for (size_t k = 1; k < len; k++) {
        json_t *split = run_cuts(in, len, &k, 1, 0, 0);
        if (!json_equal(whole, split)) {
            char *a = json_dumps(whole, JSON_COMPACT), *b = json_dumps(split, JSON_COMPACT);
            fail_msg("split at %zu differs:\n whole %s\n split %s", k, a, b);
        }
        json_decref(split);
    }
    if (len > 1) {
        size_t *cuts = malloc((len - 1) * sizeof *cuts);
        for (size_t k = 1; k < len; k++)
            cuts[k - 1] = k;
        json_t *bytes = run_cuts(in, len, cuts, len - 1, 0, 0);
        free(cuts);
        assert_true(json_equal(whole, bytes));
        json_decref(bytes);
    }
    return whole;
}

/* Checks the log of a run against a JSON literal. */
static void expect_log(json_t *run, const char *expected_json)
{
    json_error_t err;
    json_t *exp = json_loads(expected_json, 0, &err);
    if (!exp)
        fail_msg("bad expectation: %s", err.text);
    if (!json_equal(json_object_get(run, "log"), exp)) {
        char *got = json_dumps(json_object_get(run, "log"), JSON_COMPACT);
        fail_msg("log mismatch\n got      %s\n expected %s", got, expected_json);
    }
    json_decref(exp);
}

static int run_int(json_t *run, const char *key)
{
    return (int)json_integer_value(json_object_get(run, key));
}

#define S(lit) lit, sizeof(lit) - 1

static void test_line_ends(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S("data: lf\n\ndata: cr\r\rdata: crlf\r\n\r\ndata: mixed\r\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"lf\"],[\"event\",\"message\",\"\",\"cr\"],"
                  "[\"event\",\"message\",\"\",\"crlf\"],[\"event\",\"message\",\"\",\"mixed\"]]");
    assert_int_equal(run_int(r, "finish"), AC_SSE_OK);
    json_decref(r);
}

static void test_cr_lf_split_is_one_line_end(void **state)
{
    (void)state;
    /* if the LF after a CR were a second line end, "a" would be dispatched alone */
    const char in[] = "data: a\r\ndata: b\r\n\r\n";
    size_t cut = 8; /* between the first CR and its LF */
    assert_int_equal(in[cut - 1], '\r');
    json_t *r = run_cuts(in, sizeof in - 1, &cut, 1, 0, 0);
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\\nb\"]]");
    json_decref(r);
    /* CR, then a lone LF later is its own (empty) line */
    r = run_all_splits(S("data: a\r\r\ndata: b\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\"],[\"event\",\"message\",\"\",\"b\"]]");
    json_decref(r);
}

static void test_bom(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S("\xEF\xBB\xBF"
                                 "data: a\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\"]]");
    json_decref(r);
    /* a second BOM is part of the field name, so the field is unknown */
    r = run_all_splits(S("\xEF\xBB\xBF\xEF\xBB\xBF"
                         "data: a\n\ndata: b\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"b\"]]");
    json_decref(r);
    /* a partial BOM is ordinary bytes */
    r = run_all_splits(S("\xEF\xBB"
                         "data: a\n\ndata: b\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"b\"]]");
    json_decref(r);
    /* a stream that is only part of a BOM ended mid-line */
    r = run_all_splits(S("\xEF\xBB"));
    assert_int_equal(run_int(r, "finish"), AC_SSE_ERR_EOF_MID_LINE);
    json_decref(r);
    r = run_all_splits(S("\xEF\xBB\xBF"));
    assert_int_equal(run_int(r, "finish"), AC_SSE_OK);
    json_decref(r);
}

static void test_multiline_data_and_space(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S("data: a\ndata:b\ndata\ndata:  c\ndata: \n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\\nb\\n\\n c\\n\"]]");
    json_decref(r);
}

static void test_comments(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S(": OPENROUTER PROCESSING\n:x\n:\n\ndata: y\n: mid\n\n"));
    expect_log(r, "[[\"comment\",\"OPENROUTER PROCESSING\"],[\"comment\",\"x\"],[\"comment\",\"\"],"
                  "[\"comment\",\"mid\"],[\"event\",\"message\",\"\",\"y\"]]");
    assert_int_equal(run_int(r, "finish"), AC_SSE_OK);
    json_decref(r);
}

static void test_event_id_retry(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S("event: add\nid: 7\nretry: 1500\ndata: 1\n\n"
                                 "data: 2\n\n"
                                 "id\nretry: 15x\nevent\ndata: 3\n\n"
                                 "id: a\0b\ndata: 4\n\n"
                                 "retry\nfoo: bar\nDATA: no\ndata: 5\n\n"));
    expect_log(r, "[[\"event\",\"add\",\"7\",\"1\"],[\"event\",\"message\",\"7\",\"2\"],"
                  "[\"event\",\"message\",\"\",\"3\"],[\"event\",\"message\",\"\",\"4\"],"
                  "[\"event\",\"message\",\"\",\"5\"]]");
    assert_int_equal(run_int(r, "retry"), 1500);
    json_decref(r);
    r = run_whole(S("data: x\n\n"));
    assert_int_equal(run_int(r, "retry"), -1);
    json_decref(r);
}

static void test_field_without_colon_and_empty_data(void **state)
{
    (void)state;
    /* "data" alone appends an empty line: the event has empty data and is
     * dispatched; an event with no data field at all is not */
    json_t *r = run_all_splits(S("data\n\nevent: x\n\nid: 3\n\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"\"]]");
    json_decref(r);
}

static void test_line_too_long(void **state)
{
    (void)state;
    const char in[] = "data: 0123456789\n\ndata: 0123456789abcdefghij\n\n";
    json_t *r = run_cuts(in, sizeof in - 1, NULL, 0, 16, 0);
    expect_log(r, "[[\"event\",\"message\",\"\",\"0123456789\"]]");
    assert_int_equal(run_int(r, "feed"), AC_SSE_ERR_LINE_TOO_LONG);
    assert_int_equal(run_int(r, "finish"), AC_SSE_ERR_LINE_TOO_LONG);
    json_decref(r);
    /* a long name without a colon is caught too, byte by byte */
    ac_sse *s = ac_sse_new(16, 0, NULL, NULL, NULL);
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++)
        rc = ac_sse_feed(s, "a", 1);
    assert_int_equal(rc, AC_SSE_ERR_LINE_TOO_LONG);
    assert_int_equal(ac_sse_feed(s, "\n", 1), AC_SSE_ERR_LINE_TOO_LONG);
    assert_string_equal(ac_sse_strerror(rc), "event-stream line exceeds the maximum line length");
    ac_sse_free(s);
}

static void test_event_too_large(void **state)
{
    (void)state;
    const char in[] = "data: 1234\ndata: 1234\ndata: 1234\n\n";
    size_t cut = 13;
    json_t *r = run_cuts(in, sizeof in - 1, &cut, 1, 0, 10);
    assert_int_equal(run_int(r, "feed"), AC_SSE_ERR_EVENT_TOO_LARGE);
    assert_int_equal(json_array_size(json_object_get(r, "log")), 0);
    json_decref(r);
    r = run_cuts(in, sizeof in - 1, NULL, 0, 0, 14);
    expect_log(r, "[[\"event\",\"message\",\"\",\"1234\\n1234\\n1234\"]]");
    assert_int_equal(run_int(r, "feed"), AC_SSE_OK);
    json_decref(r);
}

static void test_truncated(void **state)
{
    (void)state;
    json_t *r = run_all_splits(S("data: a\n\ndata: b\n"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\"]]");
    assert_int_equal(run_int(r, "finish"), AC_SSE_ERR_EOF_MID_EVENT);
    json_decref(r);
    r = run_all_splits(S("data: a\n\ndata: b"));
    assert_int_equal(run_int(r, "finish"), AC_SSE_ERR_EOF_MID_LINE);
    json_decref(r);
    r = run_all_splits(S("data: a\n\n: bye\n"));
    assert_int_equal(run_int(r, "finish"), AC_SSE_OK);
    json_decref(r);
    r = run_all_splits(S("data: a\n\r"));
    expect_log(r, "[[\"event\",\"message\",\"\",\"a\"]]");
    assert_int_equal(run_int(r, "finish"), AC_SSE_OK);
    json_decref(r);
    ac_sse *s = ac_sse_new(0, 0, NULL, NULL, NULL);
    assert_int_equal(ac_sse_finish(s), AC_SSE_OK);
    assert_int_equal(ac_sse_feed(s, "x", 1), AC_SSE_ERR_FINISHED);
    ac_sse_free(s);
    ac_sse_free(NULL);
}

static void test_callback_stop(void **state)
{
    (void)state;
    rec r = {json_array(), 2, 0, 0};
    ac_sse *s = ac_sse_new(0, 0, rec_event, NULL, &r);
    const char in[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
    assert_int_equal(ac_sse_feed(s, in, sizeof in - 1), AC_SSE_STOPPED);
    assert_int_equal(r.n_events, 2);
    assert_int_equal(ac_sse_feed(s, in, sizeof in - 1), AC_SSE_STOPPED);
    assert_int_equal(r.n_events, 2);
    assert_int_equal(ac_sse_event_count(s), 2);
    ac_sse_free(s);
    json_decref(r.log);
}

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void test_garbage(void **state)
{
    (void)state;
    /* random bytes (with NULs, CRs, LFs and colons over-represented) in random
     * chunks: the scanner must neither crash nor exceed its caps */
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    size_t len = 1 << 20;
    char *buf = malloc(len);
    for (size_t i = 0; i < len; i++) {
        uint64_t v = rng_next(&seed);
        static const char special[] = {'\0', '\r', '\n', ':', ' ', 'd', 'a', 't'};
        buf[i] = (v & 3) == 0 ? special[(v >> 8) & 7] : (char)(v >> 16);
    }
    for (int round = 0; round < 4; round++) {
        rec r = {json_array(), 0, 0, 0};
        ac_sse *s = ac_sse_new(4096, 8192, rec_event, rec_comment, &r);
        size_t off = 0;
        int rc = 0;
        while (off < len && rc == 0) {
            size_t n = 1 + (size_t)(rng_next(&seed) % 5000);
            if (n > len - off)
                n = len - off;
            rc = ac_sse_feed(s, buf + off, n);
            off += n;
        }
        assert_true(rc == 0 || rc == AC_SSE_ERR_LINE_TOO_LONG || rc == AC_SSE_ERR_EVENT_TOO_LARGE);
        ac_sse_finish(s);
        assert_true(r.max_data <= 8192);
        ac_sse_free(s);
        json_decref(r.log);
        /* vary the mix between rounds */
        for (size_t k = 0; k < len; k += 97)
            buf[k] = round & 1 ? '\n' : 'x';
    }
    free(buf);
}

static void test_large_data_line(void **state)
{
    (void)state;
    /* one 3 MiB data line fed in odd chunks arrives intact */
    size_t n = 3u << 20;
    char *in = malloc(n + 16);
    memcpy(in, "data: ", 6);
    for (size_t i = 0; i < n; i++)
        in[6 + i] = (char)('a' + i % 26);
    memcpy(in + 6 + n, "\n\n", 2);
    rec r = {json_array(), 0, 0, 0};
    ac_sse *s = ac_sse_new(4u << 20, 4u << 20, rec_event, NULL, &r);
    size_t total = n + 8, off = 0;
    while (off < total) {
        size_t k = total - off < 65521 ? total - off : 65521;
        assert_int_equal(ac_sse_feed(s, in + off, k), 0);
        off += k;
    }
    assert_int_equal(ac_sse_finish(s), 0);
    assert_int_equal(json_array_size(r.log), 1);
    json_t *data = json_array_get(json_array_get(r.log, 0), 3);
    assert_int_equal(json_string_length(data), n);
    assert_memory_equal(json_string_value(data), in + 6, n);
    ac_sse_free(s);
    json_decref(r.log);
    free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_ends),
        cmocka_unit_test(test_cr_lf_split_is_one_line_end),
        cmocka_unit_test(test_bom),
        cmocka_unit_test(test_multiline_data_and_space),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_event_id_retry),
        cmocka_unit_test(test_field_without_colon_and_empty_data),
        cmocka_unit_test(test_line_too_long),
        cmocka_unit_test(test_event_too_large),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_large_data_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
