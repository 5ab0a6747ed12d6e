/* The HTTP LLM providers (src/llm/http_provider.c) end to end: a real engine and session on a
 * real event loop, talking HTTP to the loopback scripted server. Each case checks the exact
 * request sent and what the session made of the response: answers, tool rounds, retries on
 * 429/503/refused/disconnect/stall, hard failures, key scrubbing, big streams, keep-alive,
 * and the one-off completions that write compaction summaries. */
#include "provider_fixture.h"

/* ---- cases ---- */

static void test_openai_text(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    const char *const hdrs[] = {"X-Extra: yes", NULL};
    fx_engine(&f, AC_PROVIDER_OPENAI, NULL, KEY, NULL, hdrs, 0);
    push_stream(&f, oa_text2("Hello", ", world"));
    fx_run(&f, NULL);

    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "Hello, world");
    assert_string_equal(f.text.p, "Hello, world");
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    req r;
    req_get(&f, 0, &r);
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.path, "/v1/chat/completions");
    assert_header(&r, "Authorization", "Bearer " KEY);
    assert_header(&r, "Content-Type", "application/json");
    assert_header(&r, "Accept", "text/event-stream");
    assert_header(&r, "X-Extra", "yes");
    assert_no_header(&r, "x-api-key");
    assert_string_equal(jstr(r.json, "model"), "test-model");
    assert_true(json_is_true(json_object_get(r.json, "stream")));
    assert_true(
        json_is_true(json_object_get(json_object_get(r.json, "stream_options"), "include_usage")));
    assert_null(json_object_get(r.json, "response_format")); /* no output schema */
    json_t *m = last_message(&r);
    assert_string_equal(jstr(m, "role"), "user");
    assert_string_equal(jstr(m, "content"), "hi");
    /* the calculator is offered */
    json_t *tools = json_object_get(r.json, "tools");
    assert_int_equal(json_array_size(tools), 1);
    assert_string_equal(jstr(json_object_get(json_array_get(tools, 0), "function"), "name"),
                        "calculator");
    req_free(&r);

    json_t *sj = session_json(&f);
    json_t *usage = json_object_get(json_object_get(sj, "conversation"), "usage");
    assert_int_equal(json_integer_value(json_object_get(usage, "input")), 12);
    assert_int_equal(json_integer_value(json_object_get(usage, "output")), 3);
    json_decref(sj);
    fx_free(&f);
}

static void test_openai_tool_round(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    push_stream(&f, oa_tool_call("call_abc", "6*7"));
    push_stream(&f, oa_text2("The answer", " is 42."));
    fx_run(&f, "what is 6*7?");

    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "The answer is 42.");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    req r;
    req_get(&f, 1, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    size_t n = json_array_size(msgs);
    assert_true(n >= 3);
    json_t *user = json_array_get(msgs, n - 3);
    json_t *asst = json_array_get(msgs, n - 2);
    json_t *tool = json_array_get(msgs, n - 1);
    assert_string_equal(jstr(user, "content"), "what is 6*7?");
    assert_string_equal(jstr(asst, "role"), "assistant");
    json_t *calls = json_object_get(asst, "tool_calls");
    assert_int_equal(json_array_size(calls), 1);
    json_t *c0 = json_array_get(calls, 0);
    assert_string_equal(jstr(c0, "id"), "call_abc");
    assert_string_equal(jstr(c0, "type"), "function");
    json_t *fn = json_object_get(c0, "function");
    assert_string_equal(jstr(fn, "name"), "calculator");
    assert_string_equal(jstr(fn, "arguments"), "{\"expression\": \"6*7\"}");
    assert_string_equal(jstr(tool, "role"), "tool");
    assert_string_equal(jstr(tool, "tool_call_id"), "call_abc");
    assert_non_null(strstr(jstr(tool, "content"), "42"));
    req_free(&r);

    json_t *sj = session_json(&f);
    json_t *usage = json_object_get(json_object_get(sj, "conversation"), "usage");
    assert_int_equal(json_integer_value(json_object_get(usage, "input")), 30 + 12);
    assert_int_equal(json_integer_value(json_object_get(usage, "output")), 9 + 3);
    json_decref(sj);
    fx_free(&f);
}

static void test_429_retry_after(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    ac_httpd_push_simple(f.h, 429, "Retry-After: 1\r\nContent-Type: application/json\r\n",
                         "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\","
                         "\"code\":\"rate_limit_exceeded\"}}");
    push_stream(&f, oa_text2("after", " waiting"));
    fx_run(&f, NULL);

    assert_string_equal(ac_session_answer(f.s), "after waiting");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_int_equal(f.retries, 1);
    assert_int_equal(f.last_retry_delay, 1000); /* Retry-After: 1 (s) */
    assert_non_null(strstr(f.last_retry_reason, "HTTP 429"));
    assert_non_null(strstr(f.last_retry_reason, "Rate limit reached (requests)"));
    fx_free(&f);
}

/* Retry-After as an HTTP-date: honoured, and capped by backoff_max. */
static void test_429_retry_after_http_date(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=1500ms", NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    char hdr[128], date[64];
    time_t at = time(NULL) + 5; /* further away than backoff_max */
    struct tm tm;
    gmtime_r(&at, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(hdr, sizeof hdr, "Retry-After: %s\r\nContent-Type: application/json\r\n", date);
    ac_httpd_push_simple(f.h, 429, hdr, "{\"error\":{\"message\":\"slow down\"}}");
    push_stream(&f, oa_text2("dated", " retry"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_answer(f.s), "dated retry");
    assert_int_equal(f.retries, 1);
    assert_int_equal(f.last_retry_delay, 1500); /* ~5 s asked, capped by backoff_max */
    fx_free(&f);
}

static void test_503_twice(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    ac_httpd_push_simple(f.h, 503, "Content-Type: text/plain\r\n", "busy");
    ac_httpd_push_simple(f.h, 503, NULL, "");
    push_stream(&f, oa_text2("finally", "!"));
    fx_run(&f, NULL);

    assert_string_equal(ac_session_answer(f.s), "finally!");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    assert_int_equal(f.retries, 2);
    /* an empty body falls back to the status line's reason phrase */
    assert_non_null(strstr(f.last_retry_reason, "HTTP 503 from "));
    fx_free(&f);
}

static int file_contains(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    sbuf b = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        sb_add(&b, buf, n);
    fclose(fp);
    int found = b.p && strstr(b.p, needle) != NULL;
    free(b.p);
    return found;
}

static void test_401_no_retry_key_scrubbed(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    fx_engine(&f, AC_PROVIDER_OPENAI, NULL, KEY, NULL, NULL, 1);
    ac_httpd_push_simple(f.h, 401, "Content-Type: application/json\r\n",
                         "{\"error\":{\"message\":\"Incorrect API key provided: " KEY
                         ". You can find your API key at https://example.invalid.\","
                         "\"type\":\"invalid_request_error\",\"param\":null,"
                         "\"code\":\"invalid_api_key\"}}");
    fx_run(&f, NULL);

    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_int_equal(f.retries, 0);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    const char *err = ac_session_error(f.s);
    assert_non_null(err);
    char want[256];
    snprintf(want, sizeof want,
             "HTTP 401 from http://127.0.0.1:%d/v1/chat/completions: Incorrect API key "
             "provided: [redacted].",
             f.port);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
    assert_non_null(strstr(err, "(invalid_request_error)"));
    assert_null(strstr(err, KEY));
    char *sj = ac_session_to_json(f.s);
    assert_non_null(sj);
    assert_null(strstr(sj, KEY));
    free(sj);
    ac_session_free(f.s);
    f.s = NULL;
    assert_false(file_contains(f.journal, KEY));
    assert_true(file_contains(f.journal, "[redacted]")); /* the journal did get the failure */
    ac_engine_free(f.e);
    ac_loop_free(f.loop);
    ac_httpd_stop(f.h);
    free(f.text.p);
    unlink(f.journal);
}

static void test_http_400_plain_body(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    ac_httpd_push_simple(f.h, 400, "Content-Type: text/html\r\n",
                         "<html>\n  <body>bad\trequest</body>\n</html>");
    fx_run(&f, NULL);
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_non_null(strstr(ac_session_error(f.s), "HTTP 400 from "));
    assert_non_null(strstr(ac_session_error(f.s), "<html> <body>bad request</body> </html>"));
    fx_free(&f);
}

/* A server that ignores "stream": a JSON document instead of an event stream. */
static void test_json_instead_of_stream(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    ac_httpd_push_simple(
        f.h, 200, "Content-Type: application/json; charset=utf-8\r\n",
        "{\"error\":{\"message\":\"model not loaded\",\"type\":\"server_error\"}}");
    ac_httpd_push_simple(f.h, 200, "Content-Type: application/json\r\n",
                         "{\"choices\":[{\"message\":{\"content\":\"hi\"}}]}");
    fx_run(&f, NULL);
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_non_null(strstr(ac_session_error(f.s), "model not loaded (server_error)"));
    ac_session_free(f.s); /* it ended; the next case needs a fresh session */
    f.s = ac_session_new(f.e, "t2", NULL, &ae);
    assert_non_null(f.s);
    fx_run(&f, NULL);
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_non_null(strstr(ac_session_error(f.s), "expected an event stream"));
    fx_free(&f);
}

/* A response header past libcurl's limit: curl calls it "Out of memory"; the message says what
 * it means. */
static void test_huge_header_explained(void **state)
{
    (void)state;
    static const char *const params[] = {"max_retries=0", NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    size_t n = 200 * 1024;
    char *hdr = malloc(n + 64);
    memcpy(hdr, "X-Big: ", 7);
    memset(hdr + 7, 'a', n);
    memcpy(hdr + 7 + n, "\r\n", 3);
    ac_httpd_push_simple(f.h, 200, hdr, "{}");
    fx_run(&f, NULL);
    free(hdr);
    const char *e = ac_session_error(f.s);
    assert_non_null(e);
    assert_non_null(strstr(e, "response header larger than its limit"));
    fx_free(&f);
}

/* A U+0000 in the answer does not cut it: the text after it is kept (as U+FFFD + the rest). */
static void test_nul_in_answer_kept(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    push_stream(&f, strdup("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":"
                           "\"before\\u0000after\"}}]}\n\n"
                           "data: {\"choices\":[{\"index\":0,\"delta\":{},"
                           "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_answer(f.s), "before\xEF\xBF\xBD"
                                                "after");
    fx_free(&f);
}

/* A rate limit or an overloaded server reported in an HTTP 200 JSON body is retried like a
 * 429, honouring Retry-After; the answer then comes from the retry. */
static void test_json_200_rate_limit_retried(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=50ms", NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    ac_httpd_push_simple(f.h, 200, "Content-Type: application/json\r\nRetry-After: 0\r\n",
                         "{\"error\":{\"message\":\"Rate limit reached\","
                         "\"type\":\"rate_limit_error\"}}");
    ac_httpd_push_simple(f.h, 200, "Content-Type: application/json\r\n",
                         "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                         "\"message\":\"Overloaded\"}}");
    push_stream(&f, oa_text2("after", " the limit"));
    fx_run(&f, NULL);
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    assert_int_equal(f.retries, 2);
    assert_string_equal(ac_session_answer(f.s), "after the limit");
    fx_free(&f);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_connection_refused(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", closed_port());
    fx_engine(&f, AC_PROVIDER_OPENAI, base, KEY, NULL, NULL, 0);
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(f.retries, 3); /* max_retries */
    const char *err = ac_session_error(f.s);
    assert_non_null(strstr(err, "cannot connect to http://127.0.0.1:"));
    assert_int_equal(ac_httpd_request_count(f.h), 0);
    fx_free(&f);
}

/* Counts the llm.failed events in the journal whose class is cls and that are retryable. */
static int journal_failures(const char *path, const char *cls, int *retryable)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    char line[8192];
    int n = 0;
    *retryable = 0;
    while (fgets(line, sizeof line, fp)) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j)
            continue;
        const char *name = json_string_value(json_object_get(j, "ev"));
        json_t *data = json_object_get(j, "data");
        const char *c = json_string_value(json_object_get(data, "class"));
        if (name && strcmp(name, "llm.failed") == 0 && c && strcmp(c, cls) == 0) {
            n++;
            if (json_is_true(json_object_get(data, "retryable")))
                (*retryable)++;
        }
        json_decref(j);
    }
    fclose(fp);
    return n;
}

static void test_dns_failure(void **state)
{
    (void)state;
    /* .invalid never resolves (RFC 2606). The lookup must not leave this machine: the test
     * thread moves into a new, empty network namespace first, where the resolver fails at
     * once. That needs CAP_SYS_ADMIN (root); without it the test is skipped. It runs last,
     * since the thread stays in that namespace. The connect timeout, which covers name
     * resolution, keeps anything unexpected from hanging the test. */
    if (unshare(CLONE_NEWNET) != 0) {
        fprintf(stderr, "test_dns_failure: cannot unshare the network namespace, skipped\n");
        skip();
    }
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s", "max_retries=2",
                                         "connect_timeout=3s", NULL};
    fx f;
    fx_base(&f);
    fx_engine(&f, AC_PROVIDER_OPENAI, "http://nonexistent.invalid/v1", KEY, params, NULL, 1);
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(f.retries, 2); /* max_retries */
    const char *err = ac_session_error(f.s);
    assert_non_null(strstr(err, "http://nonexistent.invalid/v1/chat/completions"));
    assert_non_null(strstr(f.last_retry_reason, "resolv"));
    int retryable;
    assert_int_equal(journal_failures(f.journal, "dns", &retryable), 3); /* 1 + 2 retries */
    assert_int_equal(retryable, 3);
    assert_int_equal(ac_httpd_request_count(f.h), 0);
    fx_free(&f);
}

/* A listener on 127.0.0.1 whose accept queue is full and which never accepts: the kernel drops
 * further SYNs, so a connect there hangs until the client gives up. Returns the listener;
 * fillers (n of them) are the connections that fill its queue. */
static int full_backlog_listener(int *port, int *fillers, int n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 0), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    for (int i = 0; i < n; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        assert_true(fillers[i] >= 0);
        (void)connect(fillers[i], (struct sockaddr *)&a, sizeof a); /* EINPROGRESS or done */
    }
    usleep(100 * 1000); /* let the handshakes that can complete do so */
    return fd;
}

static void test_connect_timeout(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s", "max_retries=1",
                                         "connect_timeout=300ms", NULL};
    int port, fillers[4];
    int lfd = full_backlog_listener(&port, fillers, 4);
    fx f;
    fx_base(&f);
    char base[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", port);
    fx_engine(&f, AC_PROVIDER_OPENAI, base, KEY, params, NULL, 1);
    int64_t t0 = mono_ms();
    fx_run(&f, NULL);
    int64_t took = mono_ms() - t0;
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(f.retries, 1);
    assert_non_null(strstr(ac_session_error(f.s), "timed out after 300 ms"));
    int retryable;
    assert_int_equal(journal_failures(f.journal, "timeout", &retryable), 2);
    assert_int_equal(retryable, 2);
    /* Not a timing assertion: two attempts cannot both time out in under 2 x 300 ms. */
    assert_true(took >= 600);
    fx_free(&f);
    for (int i = 0; i < 4; i++)
        close(fillers[i]);
    close(lfd);
}

static void test_disconnect_mid_stream(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    const char *pieces[] = {"one ", "two ", "three ", "four", NULL};
    char *full = oa_text_v(pieces, 5, 4);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = full;
    r.body_len = strlen(full);
    /* cut right after the "three " chunk */
    const char *cut = strstr(full, "three ");
    assert_non_null(cut);
    r.disconnect_after = (int)(strstr(cut, "\n\n") + 2 - full);
    ac_httpd_push(f.h, &r);
    push_stream(&f, full);
    fx_run(&f, NULL);

    assert_string_equal(ac_session_answer(f.s), "one two three four");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_int_equal(f.retries, 1);
    assert_int_equal(f.discarded, 1);
    /* the front end saw the partial text, then the discard, then the whole answer */
    assert_string_equal(f.text.p, "one two three one two three four");
    assert_non_null(strstr(f.last_retry_reason, "connection lost while streaming"));
    fx_free(&f);
}

/* The connection drops after the stream's terminator ([DONE] sent, the
 * chunked body never closed): the turn is complete, nothing is retried. */
static void test_disconnect_after_done(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    char *full = oa_text2("one ", "two");
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = full;
    r.body_len = strlen(full);
    r.chunk_size = 64;
    r.disconnect_after = (int)r.body_len; /* every byte, then no chunked terminator */
    ac_httpd_push(f.h, &r);
    free(full);
    fx_run(&f, NULL);
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "one two");
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_int_equal(f.retries, 0);
    assert_int_equal(f.discarded, 0);
    assert_string_equal(f.text.p, "one two");
    fx_free(&f);
}

/* A key cut short by a length limit (here the in-stream error type, kept
 * to 40 characters) is masked too, not only whole keys. */
static void test_partial_key_scrubbed(void **state)
{
    (void)state;
    static const char long_key[] = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij";
    fx f;
    fx_base(&f);
    fx_engine(&f, AC_PROVIDER_OPENAI, NULL, long_key, NULL, NULL, 1);
    char type[128];
    snprintf(type, sizeof type, "key=%s", long_key);
    sbuf b = {0};
    sb_str(&b, "data: ");
    json_t *err = json_pack("{s:{s:s, s:s}}", "error", "message", "bad", "type", type);
    char *line = json_dumps(err, JSON_COMPACT);
    sb_str(&b, line);
    free(line);
    json_decref(err);
    sb_str(&b, "\n\ndata: [DONE]\n\n");
    push_stream(&f, b.p);
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    const char *e = ac_session_error(f.s);
    assert_non_null(strstr(e, "key="));
    assert_null(strstr(e, "sk-proj-ABCD"));
    char *sj = ac_session_to_json(f.s);
    assert_null(strstr(sj, "sk-proj-ABCD"));
    free(sj);
    assert_false(file_contains(f.journal, "sk-proj-ABCD"));
    fx_free(&f);
}

static void test_stall(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s",
                                         "stall_timeout=300ms", NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    char *full = oa_text2("not", " stalled");
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = full;
    r.body_len = strlen(full);
    r.disconnect_after = (int)(strstr(full, "\n\n") + 2 - full); /* the role chunk only */
    r.stall_ms = 1500;
    ac_httpd_push(f.h, &r);
    push_stream(&f, full);
    fx_run(&f, NULL);

    assert_string_equal(ac_session_answer(f.s), "not stalled");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_int_equal(f.retries, 1);
    assert_non_null(strstr(f.last_retry_reason, "no data from"));
    fx_free(&f);
}

/* A server that sends the role chunk and then only SSE keep-alive comments:
 * the comments are not progress, so the stall timeout ends the call (before,
 * it waited until the server gave up after 5 s). */
static void test_keepalive_comments_stall(void **state)
{
    (void)state;
    static const char *const params[] = {"max_retries=0", "stall_timeout=300ms", NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    char *full = oa_text2("never", " seen");
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = full;
    r.body_len = (size_t)(strstr(full, "\n\n") + 2 - full); /* the role chunk only */
    r.chunk_size = 4096;
    r.stall_ms = 5000;
    r.keepalive_ms = 50;
    ac_httpd_push(f.h, &r);
    int64_t t0 = mono_ms();
    fx_run(&f, NULL);
    int64_t took = mono_ms() - t0;
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    const char *e = ac_session_error(f.s);
    if (!strstr(e, "no data from") || took > 3000)
        fail_msg("after %lld ms: %s", (long long)took, e);
    free(full);
    fx_free(&f);
}

/* A server that keeps sending real events, slowly, for longer than
 * call_timeout: the deadline ends the call although it never stalls. */
static void test_call_timeout(void **state)
{
    (void)state;
    static const char *const params[] = {"max_retries=0", "stall_timeout=1s", "call_timeout=700ms",
                                         NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    const char *pieces[41];
    for (int i = 0; i < 40; i++)
        pieces[i] = "tick ";
    pieces[40] = NULL;
    char *full = oa_text_v(pieces, 1, 1);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = full;
    r.body_len = strlen(full);
    r.chunk_size = strlen(full) / 40 + 1;
    r.chunk_delay_ms = 100; /* about 4 s in all, an event every 100 ms */
    ac_httpd_push(f.h, &r);
    int64_t t0 = mono_ms();
    fx_run(&f, NULL);
    int64_t took = mono_ms() - t0;
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    const char *e = ac_session_error(f.s);
    if (!strstr(e, "call_timeout") || took > 2500)
        fail_msg("after %lld ms: %s", (long long)took, e);
    free(full);
    fx_free(&f);
}

static void test_garbage_body(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s", "max_retries=1",
                                         NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    static const char garbage[] = "\x01\x02\xff\xfe garbage \x7f\x80 not an event stream";
    for (int i = 0; i < 2; i++) {
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.headers = "Content-Type: text/event-stream\r\n";
        r.body = garbage;
        r.body_len = sizeof garbage - 1;
        ac_httpd_push(f.h, &r);
    }
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_non_null(strstr(ac_session_error(f.s), "ended without its terminator"));
    fx_free(&f);
}

/* A 200 event stream whose body is empty: no byte ever reached the stream parser, made when
 * the answer's first bytes come, so the end of the call makes it; the call fails as a stream
 * without its terminator and is retried like one. */
static void test_empty_stream_body(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s", "max_retries=1",
                                         NULL};
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, params);
    for (int i = 0; i < 2; i++) {
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.headers = "Content-Type: text/event-stream\r\n";
        r.body = "";
        r.body_len = 0;
        ac_httpd_push(f.h, &r);
    }
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    assert_int_equal(f.retries, 1);
    assert_non_null(strstr(ac_session_error(f.s), "ended without its terminator"));
    fx_free(&f);
}

static void test_oversize_line(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    size_t n = (size_t)2 << 20;
    char *body = malloc(n + 1);
    assert_non_null(body);
    memcpy(body, "data: ", 6);
    memset(body + 6, 'x', n - 6);
    body[n] = '\0';
    push_stream(&f, body);
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(ac_httpd_request_count(f.h), 1); /* not retryable */
    assert_non_null(strstr(ac_session_error(f.s), "maximum line length"));
    fx_free(&f);
}

static void test_invalid_json(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    sbuf b = {0};
    oa_content(&b, "partial");
    sb_str(&b, "data: {\"choices\": [ not json\n\n");
    push_stream(&f, b.p);
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_non_null(strstr(ac_session_error(f.s), "malformed JSON"));
    assert_int_equal(f.discarded, 1); /* "partial" was streamed, then dropped */
    fx_free(&f);
}

static void test_big_stream(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    sbuf body = {0}, want = {0};
    char piece[201];
    size_t i = 0;
    while (body.len < ((size_t)20 << 20)) {
        memset(piece, 'a' + (int)(i % 26), 200);
        piece[200] = '\0';
        snprintf(piece, 12, "%010zu", i); /* numbered, so order and loss both show */
        piece[10] = '-';
        oa_content(&body, piece);
        sb_add(&want, piece, 200);
        i++;
    }
    oa_finish(&body, "stop", 1, (int)i);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = body.p;
    r.body_len = body.len;
    r.chunk_size = 64 << 10;
    ac_httpd_push(f.h, &r);
    free(body.p);
    fx_run(&f, NULL);
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    const char *ans = ac_session_answer(f.s);
    assert_int_equal(strlen(ans), want.len);
    assert_true(memcmp(ans, want.p, want.len) == 0);
    assert_int_equal(f.text.len, want.len);
    free(want.p);
    fx_free(&f);
}

static void test_keepalive(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
    for (int i = 0; i < 5; i++) {
        char a[32];
        snprintf(a, sizeof a, "answer %d", i);
        push_stream(&f, oa_text2(a, "."));
        fx_run(&f, NULL);
        char want[32];
        snprintf(want, sizeof want, "answer %d.", i);
        assert_string_equal(ac_session_answer(f.s), want);
    }
    assert_int_equal(ac_httpd_request_count(f.h), 5);
    assert_int_equal(ac_httpd_connections(f.h), 1);
    /* the fifth request carries the whole conversation */
    req r;
    req_get(&f, 4, &r);
    assert_int_equal(json_array_size(json_object_get(r.json, "messages")), 9);
    req_free(&r);
    fx_free(&f);
}

static void test_env_base_trailing_slash_no_key(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    char env[96];
    snprintf(env, sizeof env, "http://127.0.0.1:%d/v1/", f.port);
    setenv("OPENAI_BASE_URL", env, 1);
    fx_engine(&f, AC_PROVIDER_OPENAI, "", NULL, NULL, NULL, 0);
    unsetenv("OPENAI_BASE_URL");
    push_stream(&f, oa_text2("local", " server"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_answer(f.s), "local server");
    req r;
    req_get(&f, 0, &r);
    assert_string_equal(r.path, "/v1/chat/completions");
    assert_no_header(&r, "Authorization");
    req_free(&r);
    fx_free(&f);
}

static void test_cancel_while_streaming(void **state)
{
    (void)state;
    for (int inside = 0; inside < 2; inside++) {
        fx f;
        fx_setup(&f, AC_PROVIDER_OPENAI, NULL);
        const char *pieces[] = {"a", "b", "c", "d", "e", "f", NULL};
        char *body = oa_text_v(pieces, 1, 6);
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.headers = "Content-Type: text/event-stream\r\n";
        r.body = body;
        r.body_len = strlen(body);
        r.chunk_size = 40;
        r.chunk_delay_ms = 20;
        ac_httpd_push(f.h, &r);
        free(body);
        f.cancel_on_text = inside;
        assert_true(ac_session_send(f.s, "hi") >= 0);
        int64_t deadline = mono_ms() + 20000;
        while (f.text.len == 0 && mono_ms() < deadline)
            ac_loop_run_once(f.loop, 50);
        assert_true(f.text.len > 0);
        if (!inside)
            ac_session_cancel(f.s);
        assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "cancelled");
        /* a cancel from inside a delta post is finished from the loop, outside curl */
        for (int i = 0; i < 3 && ac_http_active(f.loop); i++)
            ac_loop_run_once(f.loop, 10);
        assert_int_equal(ac_http_active(f.loop), 0);
        size_t seen = f.text.len;
        for (int i = 0; i < 5; i++)
            ac_loop_run_once(f.loop, 20);
        assert_int_equal(f.text.len, seen); /* nothing posted after the cancel */
        fx_free(&f);
    }
}

static void test_anthropic_tool_round(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_ANTHROPIC, NULL);
    sbuf b = {0};
    an_start(&b, 50);
    an_text_block(&b, 0, "Let me compute.");
    sb_event(&b, "content_block_start",
             json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{}}}", "type", "content_block_start",
                       "index", 1, "content_block", "type", "tool_use", "id", "toolu_1", "name",
                       "calculator", "input"));
    const char *frags[] = {"{\"expression\": ", "\"6*7\"}"};
    for (int i = 0; i < 2; i++)
        sb_event(&b, "content_block_delta",
                 json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", 1,
                           "delta", "type", "input_json_delta", "partial_json", frags[i]));
    sb_event(&b, "content_block_stop",
             json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 1));
    an_stop(&b, "tool_use", 20);
    push_stream(&f, b.p);
    push_stream(&f, an_text("It is 42."));
    fx_run(&f, "what is 6*7?");

    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "It is 42.");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    req r;
    req_get(&f, 0, &r);
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.path, "/v1/messages");
    assert_header(&r, "x-api-key", KEY);
    assert_header(&r, "anthropic-version", "2023-06-01");
    assert_header(&r, "Content-Type", "application/json");
    assert_no_header(&r, "Authorization");
    assert_string_equal(jstr(r.json, "model"), "test-model");
    assert_true(json_is_true(json_object_get(r.json, "stream")));
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_tokens")), 4096);
    json_t *tools = json_object_get(r.json, "tools");
    assert_string_equal(jstr(json_array_get(tools, 0), "name"), "calculator");
    assert_non_null(json_object_get(json_array_get(tools, 0), "input_schema"));
    json_t *m = last_message(&r);
    assert_string_equal(jstr(m, "role"), "user");
    json_t *blk = json_array_get(json_object_get(m, "content"), 0);
    assert_string_equal(jstr(blk, "type"), "text");
    assert_string_equal(jstr(blk, "text"), "what is 6*7?");
    req_free(&r);

    req_get(&f, 1, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    size_t n = json_array_size(msgs);
    assert_int_equal(n, 3);
    json_t *asst = json_array_get(msgs, 1);
    assert_string_equal(jstr(asst, "role"), "assistant");
    json_t *ac = json_object_get(asst, "content");
    assert_int_equal(json_array_size(ac), 2);
    assert_string_equal(jstr(json_array_get(ac, 0), "text"), "Let me compute.");
    json_t *use = json_array_get(ac, 1);
    assert_string_equal(jstr(use, "type"), "tool_use");
    assert_string_equal(jstr(use, "id"), "toolu_1");
    assert_string_equal(jstr(use, "name"), "calculator");
    assert_string_equal(jstr(json_object_get(use, "input"), "expression"), "6*7");
    json_t *res_msg = json_array_get(msgs, 2);
    assert_string_equal(jstr(res_msg, "role"), "user");
    json_t *res = json_array_get(json_object_get(res_msg, "content"), 0);
    assert_string_equal(jstr(res, "type"), "tool_result");
    assert_string_equal(jstr(res, "tool_use_id"), "toolu_1");
    char *rtxt = json_dumps(json_object_get(res, "content"), JSON_ENCODE_ANY);
    assert_non_null(strstr(rtxt, "42"));
    free(rtxt);
    req_free(&r);

    json_t *sj = session_json(&f);
    json_t *usage = json_object_get(json_object_get(sj, "conversation"), "usage");
    assert_int_equal(json_integer_value(json_object_get(usage, "input")), 50 + 40);
    assert_int_equal(json_integer_value(json_object_get(usage, "output")), 20 + 7);
    json_decref(sj);
    fx_free(&f);
}

/* Extended thinking (param thinking_budget): the request asks for it, and
 * the thinking blocks of a tool-use turn (a redacted one and one with a
 * signature in two deltas) go back first in that assistant message, as the
 * API requires; the conversation keeps them (they survive the session's
 * JSON); a journal replays to the same state. */
static void test_anthropic_thinking_tool_round(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    const char *const params[] = {"backoff_initial=10ms", "thinking_budget=2048", NULL};
    fx_engine(&f, AC_PROVIDER_ANTHROPIC, NULL, KEY, params, NULL, 1);
    sbuf b = {0};
    an_start(&b, 50);
    sb_event(&b, "content_block_start",
             json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_start", "index", 0,
                       "content_block", "type", "redacted_thinking", "data", "EmwKAhgB"));
    sb_event(&b, "content_block_stop",
             json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 0));
    sb_event(&b, "content_block_start",
             json_pack("{s:s, s:i, s:{s:s, s:s, s:s}}", "type", "content_block_start", "index", 1,
                       "content_block", "type", "thinking", "thinking", "", "signature", ""));
    sb_event(&b, "content_block_delta",
             json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", 1,
                       "delta", "type", "thinking_delta", "thinking", "6*7 needs the tool."));
    const char *sig[] = {"EuYBCkQYAiJA", "nh3vMm0jW2eP=="};
    for (int i = 0; i < 2; i++)
        sb_event(&b, "content_block_delta",
                 json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", 1,
                           "delta", "type", "signature_delta", "signature", sig[i]));
    sb_event(&b, "content_block_stop",
             json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 1));
    sb_event(&b, "content_block_start",
             json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{}}}", "type", "content_block_start",
                       "index", 2, "content_block", "type", "tool_use", "id", "toolu_1", "name",
                       "calculator", "input"));
    sb_event(&b, "content_block_delta",
             json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", 2,
                       "delta", "type", "input_json_delta", "partial_json",
                       "{\"expression\": \"6*7\"}"));
    sb_event(&b, "content_block_stop",
             json_pack("{s:s, s:i}", "type", "content_block_stop", "index", 2));
    an_stop(&b, "tool_use", 20);
    push_stream(&f, b.p);
    push_stream(&f, an_text("It is 42."));
    fx_run(&f, "what is 6*7?");
    assert_string_equal(ac_session_answer(f.s), "It is 42.");
    assert_int_equal(ac_httpd_request_count(f.h), 2);

    req r;
    req_get(&f, 0, &r);
    json_t *th = json_object_get(r.json, "thinking");
    assert_string_equal(jstr(th, "type"), "enabled");
    assert_int_equal(json_integer_value(json_object_get(th, "budget_tokens")), 2048);
    assert_int_equal(json_integer_value(json_object_get(r.json, "max_tokens")), 4096);
    req_free(&r);

    req_get(&f, 1, &r);
    json_t *ac = json_object_get(json_array_get(json_object_get(r.json, "messages"), 1), "content");
    assert_int_equal(json_array_size(ac), 3);
    json_t *b0 = json_array_get(ac, 0), *b1 = json_array_get(ac, 1), *b2 = json_array_get(ac, 2);
    assert_string_equal(jstr(b0, "type"), "redacted_thinking");
    assert_string_equal(jstr(b0, "data"), "EmwKAhgB");
    assert_string_equal(jstr(b1, "type"), "thinking");
    assert_string_equal(jstr(b1, "thinking"), "6*7 needs the tool.");
    assert_string_equal(jstr(b1, "signature"), "EuYBCkQYAiJAnh3vMm0jW2eP==");
    assert_string_equal(jstr(b2, "type"), "tool_use");
    req_free(&r);

    /* kept in the conversation, through its JSON */
    json_t *sj = session_json(&f);
    char *txt = json_dumps(sj, 0);
    assert_non_null(strstr(txt, "\\\"signature\\\":\\\"EuYBCkQYAiJAnh3vMm0jW2eP==\\\""));
    free(txt);
    json_decref(sj);
    /* the journal (the llm.completed payload carries the blocks) replays to
     * the same state: no loop, no effects */
    char *live = ac_session_to_json(f.s);
    assert_non_null(live);
    char err[256];
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"unused\"}\n";
    cfg.params = params;
    ac_engine *e2 = ac_engine_new(&cfg, &ae);
    if (!e2)
        fail_msg("engine: %s", ae.text);
    assert_int_equal(ac_engine_add_tools(e2, "builtin:calculator", &ae), 0);
    int events = 0;
    ac_session *s2 = test_replay_journal(e2, "t1", f.journal, &events, err, sizeof err);
    if (!s2)
        fail_msg("replay: %s", err);
    assert_true(events > 5);
    char *replayed = ac_session_to_json(s2);
    assert_non_null(replayed);
    assert_string_equal(live, replayed);
    free(replayed);
    free(live);
    ac_session_free(s2);
    ac_engine_free(e2);
    fx_free(&f);
}

static void test_anthropic_overloaded_in_stream(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_ANTHROPIC, NULL);
    sbuf b = {0};
    an_start(&b, 10);
    sb_event(&b, "error",
             json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", "overloaded_error",
                       "message", "Overloaded"));
    push_stream(&f, b.p);
    ac_httpd_push_simple(f.h, 529, "Content-Type: application/json\r\n",
                         "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                         "\"message\":\"Overloaded\"}}");
    push_stream(&f, an_text("fine now"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_answer(f.s), "fine now");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    assert_int_equal(f.retries, 2);
    assert_non_null(strstr(f.last_retry_reason, "HTTP 529"));
    assert_non_null(strstr(f.last_retry_reason, "Overloaded (overloaded_error)"));
    fx_free(&f);
}

/* Compaction by summary through the HTTP provider's one-off completion: the
 * summary request carries the instruction and a transcript of the replaced
 * range and offers no tools; its reply goes into the conversation, not to
 * the output; the next request sends the summary instead of the range. */

static int has_message_with(json_t *msgs, const char *role, const char *text)
{
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *c = json_string_value(json_object_get(m, "content"));
        if (strcmp(jstr(m, "role"), role) == 0 && c && strstr(c, text))
            return 1;
    }
    return 0;
}

static void test_summarize_over_http(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, summarize_params);
    push_stream(&f, oa_text2("Answer", " one."));
    fx_run(&f, "first question");
    /* the first turn had nothing to compact: one request */
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    assert_string_equal(ac_session_answer(f.s), "Answer one.");

    push_stream(&f, oa_text2("Earlier the assistant", " answered one."));
    push_stream(&f, oa_text2("Answer", " two."));
    fx_run(&f, "second question");
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "Answer two.");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    /* the summary is not streamed to the output */
    assert_string_equal(f.text.p, "Answer one.Answer two.");

    req r;
    req_get(&f, 1, &r); /* the summary request */
    assert_string_equal(r.path, "/v1/chat/completions");
    assert_string_equal(jstr(r.json, "model"), "test-model");
    assert_null(json_object_get(r.json, "tools"));
    json_t *msgs = json_object_get(r.json, "messages");
    assert_int_equal(json_array_size(msgs), 2);
    assert_true(has_message_with(msgs, "system", "summary"));
    assert_true(has_message_with(msgs, "user", "[assistant] Answer one."));
    assert_false(has_message_with(msgs, "user", "second question"));
    req_free(&r);

    req_get(&f, 2, &r); /* the next turn: the summary stands for the range */
    msgs = json_object_get(r.json, "messages");
    assert_true(has_message_with(msgs, "user", "first question"));
    assert_true(has_message_with(msgs, "user", "second question"));
    /* a user message in the place of the range */
    assert_true(has_message_with(
        msgs, "user", "[summary of 1 earlier messages] Earlier the assistant answered one."));
    assert_false(has_message_with(msgs, "assistant", "Answer one."));
    req_free(&r);
    fx_free(&f);
}

/* The same through the Anthropic provider: the instruction goes in "system". */
static void test_summarize_over_http_anthropic(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_ANTHROPIC, summarize_params);
    push_stream(&f, an_text("Answer one."));
    fx_run(&f, "first question");
    push_stream(&f, an_text("Earlier the assistant answered one."));
    push_stream(&f, an_text("Answer two."));
    fx_run(&f, "second question");
    assert_string_equal(ac_session_answer(f.s), "Answer two.");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    req r;
    req_get(&f, 1, &r);
    assert_string_equal(r.path, "/v1/messages");
    assert_non_null(strstr(jstr(r.json, "system"), "summary"));
    assert_null(json_object_get(r.json, "tools"));
    json_t *msgs = json_object_get(r.json, "messages");
    assert_int_equal(json_array_size(msgs), 1);
    json_t *block = json_array_get(json_object_get(json_array_get(msgs, 0), "content"), 0);
    assert_non_null(strstr(jstr(block, "text"), "[assistant] Answer one."));
    req_free(&r);
    req_get(&f, 2, &r);
    char *body = json_dumps(r.json, 0);
    assert_non_null(
        strstr(body, "[summary of 1 earlier messages] Earlier the assistant answered one."));
    free(body);
    req_free(&r);
    fx_free(&f);
}

/* A failed summary request (HTTP 500) leaves the conversation as it was and
 * the turn goes on: compaction is skipped, not fatal. */
static void test_summarize_failure_over_http(void **state)
{
    (void)state;
    fx f;
    fx_setup(&f, AC_PROVIDER_OPENAI, summarize_params);
    push_stream(&f, oa_text2("Answer", " one."));
    fx_run(&f, "first question");
    ac_httpd_push_simple(f.h, 500, "Content-Type: text/plain\r\n", "summarizer down");
    push_stream(&f, oa_text2("Answer", " two."));
    fx_run(&f, "second question");
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "Answer two.");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    req r;
    req_get(&f, 2, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    assert_true(has_message_with(msgs, "assistant", "Answer one."));
    assert_false(has_message_with(msgs, "user", "[summary of"));
    assert_false(has_message_with(msgs, "assistant", "[summary of"));
    req_free(&r);
    fx_free(&f);
}

static void test_bad_config(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = "ftp://example.invalid";
    cfg.model = "m";
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "expected http:// or https://"));
    assert_int_equal(ae.code, AC_ECONFIG);
    cfg.base_url = NULL;
    cfg.model = NULL;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "model"));
    cfg.model = "m";
    const char *const hdrs[] = {"X-Secret " KEY, NULL};
    cfg.headers = hdrs;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "header #1"));
    assert_null(strstr(ae.text, KEY));
    /* a thinking budget under Anthropic's minimum is refused before any call */
    cfg.headers = NULL;
    cfg.provider = AC_PROVIDER_ANTHROPIC;
    cfg.base_url = "http://127.0.0.1:9";
    cfg.api_key = KEY;
    const char *const small_budget[] = {"thinking_budget=500", NULL};
    cfg.params = small_budget;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "thinking_budget 500 is below Anthropic's minimum of 1024"));
    const char *const budget_ok[] = {"thinking_budget=1024", NULL};
    cfg.params = budget_ok;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("%s", ae.text);
    ac_engine_free(e);
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_text),
        cmocka_unit_test(test_openai_tool_round),
        cmocka_unit_test(test_429_retry_after),
        cmocka_unit_test(test_429_retry_after_http_date),
        cmocka_unit_test(test_503_twice),
        cmocka_unit_test(test_401_no_retry_key_scrubbed),
        cmocka_unit_test(test_http_400_plain_body),
        cmocka_unit_test(test_json_instead_of_stream),
        cmocka_unit_test(test_json_200_rate_limit_retried),
        cmocka_unit_test(test_nul_in_answer_kept),
        cmocka_unit_test(test_huge_header_explained),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test(test_connect_timeout),
        cmocka_unit_test(test_disconnect_mid_stream),
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_keepalive_comments_stall),
        cmocka_unit_test(test_call_timeout),
        cmocka_unit_test(test_disconnect_after_done),
        cmocka_unit_test(test_partial_key_scrubbed),
        cmocka_unit_test(test_garbage_body),
        cmocka_unit_test(test_empty_stream_body),
        cmocka_unit_test(test_oversize_line),
        cmocka_unit_test(test_invalid_json),
        cmocka_unit_test(test_big_stream),
        cmocka_unit_test(test_keepalive),
        cmocka_unit_test(test_env_base_trailing_slash_no_key),
        cmocka_unit_test(test_cancel_while_streaming),
        cmocka_unit_test(test_anthropic_tool_round),
        cmocka_unit_test(test_anthropic_thinking_tool_round),
        cmocka_unit_test(test_anthropic_overloaded_in_stream),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_summarize_over_http),
        cmocka_unit_test(test_summarize_over_http_anthropic),
        cmocka_unit_test(test_summarize_failure_over_http),
        cmocka_unit_test(test_dns_failure), /* last: it leaves the network namespace */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
