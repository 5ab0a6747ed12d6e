/* provider_fixture.h - the fixture of the HTTP provider tests (test_provider_http.c and
 * test_provider_requests.c): canned OpenAI and Anthropic streams, a loopback server, loop,
 * engine and session, and inspection of the requests the server received. Header-only: every
 * function is static inline, so each test program takes what it uses. */
#ifndef AGENTC_TESTS_PROVIDER_FIXTURE_H
#define AGENTC_TESTS_PROVIDER_FIXTURE_H

#define _GNU_SOURCE /* unshare */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "io/http.h"
#include "io/loop.h"
#include "journal_replay.h"
#include "test_httpd.h"

static ac_error ae
    __attribute__((unused)); /* the last error of the engine and session calls below */

#define KEY "sk-test-SECRET"
#define TEXT_CAP ((size_t)64 << 20)

/* ---- a growable byte buffer ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static inline void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Appends one SSE event ("event:" line only when event is not NULL); data is stolen. */
static inline void sb_event(sbuf *b, const char *event, json_t *data)
{
    assert_non_null(data);
    char *txt = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(txt);
    if (event) {
        sb_str(b, "event: ");
        sb_str(b, event);
        sb_str(b, "\n");
    }
    sb_str(b, "data: ");
    sb_str(b, txt);
    sb_str(b, "\n\n");
    free(txt);
    json_decref(data);
}

/* ---- canned streams ---- */

static inline void oa_content(sbuf *b, const char *piece)
{
    sb_event(b, NULL,
             json_pack("{s:[{s:i, s:{s:s}, s:n}]}", "choices", "index", 0, "delta", "content",
                       piece, "finish_reason"));
}

static inline void oa_finish(sbuf *b, const char *reason, int in, int out)
{
    sb_event(b, NULL,
             json_pack("{s:[{s:i, s:{}, s:s}]}", "choices", "index", 0, "delta", "finish_reason",
                       reason));
    sb_event(b, NULL,
             json_pack("{s:[], s:{s:i, s:i, s:i}}", "choices", "usage", "prompt_tokens", in,
                       "completion_tokens", out, "total_tokens", in + out));
    sb_str(b, "data: [DONE]\n\n");
}

/* An OpenAI stream answering the NULL-terminated pieces. malloc'd. */
static inline char *oa_text_v(const char *const *pieces, int in, int out)
{
    sbuf b = {0};
    sb_event(&b, NULL,
             json_pack("{s:[{s:i, s:{s:s, s:s}, s:n}]}", "choices", "index", 0, "delta", "role",
                       "assistant", "content", "", "finish_reason"));
    for (const char *const *p = pieces; *p; p++)
        oa_content(&b, *p);
    oa_finish(&b, "stop", in, out);
    return b.p;
}

static inline char *oa_text2(const char *a, const char *c)
{
    const char *pieces[] = {a, c, NULL};
    return oa_text_v(pieces, 12, 3);
}

/* An OpenAI stream issuing one calculator call with the given expression. */
static inline char *oa_tool_call(const char *id, const char *expr)
{
    sbuf b = {0};
    sb_event(&b, NULL,
             json_pack("{s:[{s:i, s:{s:s, s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}, s:n}]}", "choices",
                       "index", 0, "delta", "role", "assistant", "tool_calls", "index", 0, "id", id,
                       "type", "function", "function", "name", "calculator", "arguments", "",
                       "finish_reason"));
    char args[256];
    snprintf(args, sizeof args, "{\"expression\": \"%s\"}", expr);
    size_t half = strlen(args) / 2;
    char first[256];
    memcpy(first, args, half);
    first[half] = '\0';
    const char *frags[] = {first, args + half};
    for (int i = 0; i < 2; i++)
        sb_event(&b, NULL,
                 json_pack("{s:[{s:i, s:{s:[{s:i, s:{s:s}}]}, s:n}]}", "choices", "index", 0,
                           "delta", "tool_calls", "index", 0, "function", "arguments", frags[i],
                           "finish_reason"));
    oa_finish(&b, "tool_calls", 30, 9);
    return b.p;
}

static inline void an_start(sbuf *b, int in)
{
    sb_event(b, "message_start",
             json_pack("{s:s, s:{s:s, s:s, s:s, s:[], s:s, s:n, s:{s:i, s:i}}}", "type",
                       "message_start", "message", "id", "msg_1", "type", "message", "role",
                       "assistant", "content", "model", "claude-test", "stop_reason", "usage",
                       "input_tokens", in, "output_tokens", 1));
}

static inline void an_text_block(sbuf *b, int index, const char *text)
{
    sb_event(b, "content_block_start",
             json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_start", "index", index,
                       "content_block", "type", "text", "text", ""));
    sb_event(b, "content_block_delta",
             json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", index,
                       "delta", "type", "text_delta", "text", text));
    sb_event(b, "content_block_stop",
             json_pack("{s:s, s:i}", "type", "content_block_stop", "index", index));
}

static inline void an_stop(sbuf *b, const char *reason, int out)
{
    sb_event(b, "message_delta",
             json_pack("{s:s, s:{s:s, s:n}, s:{s:i}}", "type", "message_delta", "delta",
                       "stop_reason", reason, "stop_sequence", "usage", "output_tokens", out));
    sb_event(b, "message_stop", json_pack("{s:s}", "type", "message_stop"));
}

static inline char *an_text(const char *text)
{
    sbuf b = {0};
    an_start(&b, 40);
    an_text_block(&b, 0, text);
    an_stop(&b, "end_turn", 7);
    return b.p;
}

/* ---- the fixture: server, loop, engine, session ---- */

typedef struct fx {
    ac_httpd *h;
    int port;
    ac_loop *loop;
    ac_engine *e;
    ac_session *s;
    ac_output out;
    sbuf text; /* every text delta the front end saw */
    int retries;
    int64_t last_retry_delay;
    char last_retry_reason[512];
    int discarded;
    int cancel_on_text; /* cancel the session from inside the first text delta */
    char base[128];
    char journal[64];
    const ac_request_settings *request; /* the engine's request settings, may be NULL */
    int rejected;                       /* answers refused by the output schema */
    char last_rejection[1024];          /* the errors of the last one */
} fx;

/* The output schema the next fx_engine gives its engine (structured output cases). */
static const char *fx_output_schema __attribute__((unused));

static inline void on_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    (void)s;
    fx *f = ud;
    f->rejected++;
    assert_int_equal(attempt, f->rejected);
    snprintf(f->last_rejection, sizeof f->last_rejection, "%s", errors);
}

static inline void on_text(void *ud, ac_session *s, const char *d, size_t n)
{
    fx *f = ud;
    if (f->text.len + n < TEXT_CAP)
        sb_add(&f->text, d, n);
    if (f->cancel_on_text) {
        f->cancel_on_text = 0;
        ac_session_cancel(s);
    }
}

static inline void on_retry(void *ud, ac_session *s, int attempt, int64_t delay, const char *reason)
{
    (void)s;
    (void)attempt;
    fx *f = ud;
    f->retries++;
    f->last_retry_delay = delay;
    snprintf(f->last_retry_reason, sizeof f->last_retry_reason, "%s", reason ? reason : "");
}

static inline void on_discarded(void *ud, ac_session *s, size_t n)
{
    (void)s;
    (void)n;
    fx *f = ud;
    f->discarded++;
}

__attribute__((unused)) static const char *const quick_params[] = {"backoff_initial=10ms",
                                                                   "backoff_max=2s", NULL};
/* compaction by summary as soon as possible (the summary tests of both programs) */
__attribute__((unused)) static const char *const summarize_params[] = {
    "backoff_initial=10ms", "backoff_max=2s", "compaction=summarize", "compact_threshold=1",
    "compaction_keep=1", NULL};

/* Starts the server and loop. */
static inline void fx_base(fx *f)
{
    memset(f, 0, sizeof *f);
    f->h = ac_httpd_start();
    assert_non_null(f->h);
    f->port = ac_httpd_port(f->h);
    f->loop = ac_loop_new();
    assert_non_null(f->loop);
    f->out.ud = f;
    f->out.text = on_text;
    f->out.retry = on_retry;
    f->out.discarded = on_discarded;
    f->out.rejected = on_rejected;
}

/* Builds the engine and a session. base NULL: the server's (with /v1 for OpenAI). */
static inline void fx_engine(fx *f, int kind, const char *base, const char *key,
                             const char *const *params, const char *const *headers, int journal)
{
    if (!base) {
        snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d%s", f->port,
                 kind == AC_PROVIDER_OPENAI ? "/v1" : "");
        base = f->base;
    } else if (base != f->base) {
        snprintf(f->base, sizeof f->base, "%s", base);
    }
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = f->loop;
    cfg.provider = kind;
    cfg.base_url = *base ? base : NULL;
    cfg.api_key = key;
    cfg.model = "test-model";
    cfg.params = params ? params : quick_params;
    cfg.headers = headers;
    cfg.output = &f->out;
    cfg.seed = 7;
    cfg.output_schema = fx_output_schema;
    cfg.request = f->request;
    f->e = ac_engine_new(&cfg, &ae);
    if (!f->e)
        fail_msg("ac_engine_new: %s", ae.text);
    int rc = ac_engine_add_tools(f->e, "builtin:calculator", &ae);
    if (rc != 0)
        fail_msg("add_tools: %s", ae.text);
    if (journal) {
        snprintf(f->journal, sizeof f->journal, "/tmp/agentc_provider_journal_XXXXXX");
        int fd = mkstemp(f->journal);
        assert_true(fd >= 0);
        close(fd);
    }
    f->s = ac_session_new(f->e, "t1", journal ? f->journal : NULL, &ae);
    if (!f->s)
        fail_msg("ac_session_new: %s", ae.text);
}

static inline void fx_setup(fx *f, int kind, const char *const *params)
{
    fx_base(f);
    fx_engine(f, kind, NULL, KEY, params, NULL, 0);
}

static inline int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends "hi" (or text) and runs the loop until the session settles. */
static inline void fx_run(fx *f, const char *text)
{
    int rc = ac_session_send(f->s, text ? text : "hi");
    assert_true(rc >= 0);
    int64_t deadline = mono_ms() + 60000; /* a broken test fails, never hangs */
    while (!ac_session_settled(f->s)) {
        if (mono_ms() > deadline)
            fail_msg("session did not settle (state %s)", ac_session_state(f->s, "process"));
        ac_loop_run_once(f->loop, 50);
    }
}

static inline void fx_free(fx *f)
{
    ac_session_free(f->s);
    assert_int_equal(ac_http_active(f->loop), 0);
    ac_engine_free(f->e);
    ac_loop_free(f->loop);
    ac_httpd_stop(f->h);
    free(f->text.p);
    if (f->journal[0])
        unlink(f->journal);
}

/* ---- request inspection ---- */

typedef struct req {
    char *method, *path, *headers, *body;
    size_t body_len;
    json_t *json;
} req;

static inline void req_get(fx *f, size_t i, req *r)
{
    memset(r, 0, sizeof *r);
    assert_int_equal(
        ac_httpd_request(f->h, i, &r->method, &r->path, &r->headers, &r->body, &r->body_len), 0);
    json_error_t jerr;
    r->json = json_loadb(r->body, r->body_len, 0, &jerr);
    if (!r->json)
        fail_msg("request %zu body is not JSON: %s", i, jerr.text);
}

static inline void req_free(req *r)
{
    free(r->method);
    free(r->path);
    free(r->headers);
    free(r->body);
    json_decref(r->json);
}

static inline void assert_header(const req *r, const char *name, const char *want)
{
    char v[256];
    const char *got = ac_httpd_header_value(r->headers, name, v, sizeof v);
    if (!got)
        fail_msg("header %s missing; headers:\n%s", name, r->headers);
    assert_string_equal(got, want);
}

static inline void assert_no_header(const req *r, const char *name)
{
    char v[256];
    assert_null(ac_httpd_header_value(r->headers, name, v, sizeof v));
}

static inline json_t *last_message(const req *r)
{
    json_t *m = json_object_get(r->json, "messages");
    assert_true(json_is_array(m) && json_array_size(m) > 0);
    return json_array_get(m, json_array_size(m) - 1);
}

static inline const char *jstr(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    if (!s)
        fail_msg("no string '%s'", k);
    return s;
}

static inline json_t *session_json(fx *f)
{
    char *txt = ac_session_to_json(f->s);
    assert_non_null(txt);
    json_t *j = json_loads(txt, 0, NULL);
    free(txt);
    assert_non_null(j);
    return j;
}

static inline void push_stream(fx *f, char *body)
{
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = body;
    r.body_len = strlen(body);
    ac_httpd_push(f->h, &r);
    free(body);
}

#endif
