/* HTTP through the loop's curl multi against the loopback test server: GET/POST, concurrency,
 * keep-alive reuse, cancellation, refused connections, disconnects and stalls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include "io/http.h"
#include "io/loop.h"
#include "test_httpd.h"

#define BODY_CAP (8u << 20)

typedef struct xfer {
    ac_loop *loop;
    CURL *easy;
    char *body;
    size_t len;
    int done;
    CURLcode rc;
    long status;
    struct curl_slist *hdrs;
    char urlbuf[128];
} xfer;

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (x->len + n > BODY_CAP)
        return 0; /* fails the transfer: capped */
    char *nb = realloc(x->body, x->len + n + 1);
    if (!nb)
        return 0;
    x->body = nb;
    memcpy(x->body + x->len, ptr, n);
    x->len += n;
    x->body[x->len] = '\0';
    return n;
}

static void xfer_init(xfer *x, ac_loop *loop, int port, const char *path)
{
    memset(x, 0, sizeof *x);
    x->loop = loop;
    x->easy = curl_easy_init();
    assert_non_null(x->easy);
    snprintf(x->urlbuf, sizeof x->urlbuf, "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(x->easy, CURLOPT_URL, x->urlbuf);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, 20000L); /* a broken test fails, not hangs */
}

static void xfer_cleanup(xfer *x)
{
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    free(x->body);
    x->easy = NULL;
    x->body = NULL;
}

static void on_done(void *ud, CURL *easy, CURLcode rc)
{
    xfer *x = ud;
    assert_ptr_equal(easy, x->easy);
    x->done++;
    x->rc = rc;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &x->status);
}

static int setup(void **state)
{
    ac_httpd *h = ac_httpd_start();
    if (!h)
        return -1;
    *state = h;
    return 0;
}

static int teardown(void **state)
{
    ac_httpd_stop(*state);
    return 0;
}

static void get_returns_body_and_server_records_request(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_push_simple(h, 200, "Content-Type: text/plain\r\nX-Test: yes\r\n", "hello, world");
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/v1/models?q=1");
    x.hdrs = curl_slist_append(NULL, "Authorization: Bearer k123");
    curl_easy_setopt(x.easy, CURLOPT_HTTPHEADER, x.hdrs);
    uint64_t id = ac_http_start(loop, x.easy, on_done, &x);
    assert_int_not_equal(id, 0);
    assert_int_equal(ac_http_active(loop), 1);
    assert_int_equal(ac_loop_pending(loop), 1);
    /* Lending the same handle twice is refused. */
    assert_int_equal(ac_http_start(loop, x.easy, on_done, &x), 0);
    ac_loop_run(loop);
    assert_int_equal(x.done, 1);
    assert_int_equal(x.rc, CURLE_OK);
    assert_int_equal(x.status, 200);
    assert_string_equal(x.body, "hello, world");
    assert_int_equal(ac_http_active(loop), 0);
    ac_http_cancel(loop, id); /* finished: no-op */

    char *method, *path, *headers, *body;
    size_t blen;
    assert_int_equal(ac_httpd_request(h, 0, &method, &path, &headers, &body, &blen), 0);
    assert_string_equal(method, "GET");
    assert_string_equal(path, "/v1/models?q=1");
    char v[64];
    assert_non_null(ac_httpd_header_value(headers, "authorization", v, sizeof v));
    assert_string_equal(v, "Bearer k123");
    assert_int_equal(blen, 0);
    free(method);
    free(path);
    free(headers);
    free(body);
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void post_large_body_arrives_intact(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    size_t n = 3u << 20;
    char *payload = malloc(n);
    assert_non_null(payload);
    for (size_t i = 0; i < n; i++)
        payload[i] = (char)(i * 131 + (i >> 9));
    ac_httpd_push_simple(h, 201, NULL, "{\"ok\":true}");
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/post");
    curl_easy_setopt(x.easy, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(x.easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    assert_int_not_equal(ac_http_start(loop, x.easy, on_done, &x), 0);
    ac_loop_run(loop);
    assert_int_equal(x.rc, CURLE_OK);
    assert_int_equal(x.status, 201);
    assert_string_equal(x.body, "{\"ok\":true}");
    size_t last = ac_httpd_request_count(h) - 1;
    char *method, *body;
    size_t blen;
    assert_int_equal(ac_httpd_request(h, last, &method, NULL, NULL, &body, &blen), 0);
    assert_string_equal(method, "POST");
    assert_int_equal(blen, n);
    assert_memory_equal(body, payload, n);
    free(method);
    free(body);
    free(payload);
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void concurrent(ac_httpd *h, int count)
{
    ac_loop *loop = ac_loop_new();
    size_t before_conn = ac_httpd_connections(h);
    size_t before_req = ac_httpd_request_count(h);
    xfer *xs = calloc((size_t)count, sizeof *xs);
    static const char body[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    for (int i = 0; i < count; i++) {
        /* Chunked with delays, so all transfers overlap in time. */
        ac_httpd_resp r = AC_HTTPD_RESP_INIT;
        r.body = body;
        r.body_len = sizeof body - 1;
        r.chunk_size = 9;
        r.chunk_delay_ms = 20;
        ac_httpd_push(h, &r);
    }
    for (int i = 0; i < count; i++) {
        xfer_init(&xs[i], loop, ac_httpd_port(h), "/c");
        assert_int_not_equal(ac_http_start(loop, xs[i].easy, on_done, &xs[i]), 0);
    }
    assert_int_equal(ac_http_active(loop), (size_t)count);
    ac_loop_run(loop);
    for (int i = 0; i < count; i++) {
        assert_int_equal(xs[i].done, 1);
        assert_int_equal(xs[i].rc, CURLE_OK);
        assert_string_equal(xs[i].body, body);
        xfer_cleanup(&xs[i]);
    }
    assert_int_equal(ac_http_active(loop), 0);
    assert_int_equal(ac_httpd_request_count(h) - before_req, (size_t)count);
    /* HTTP/1.1 without multiplexing: overlapping transfers need their own connections. */
    assert_true(ac_httpd_connections(h) - before_conn > 1);
    free(xs);
    ac_loop_free(loop);
}

static void ten_concurrent_transfers_complete(void **state)
{
    concurrent(*state, 10);
}

static void fifty_concurrent_transfers_complete(void **state)
{
    concurrent(*state, 50);
}

typedef struct chain {
    ac_loop *loop;
    int port;
    int left;
    int ok;
    xfer x;
} chain;

static void chain_next(chain *c);

static void chain_done(void *ud, CURL *easy, CURLcode rc)
{
    chain *c = ud;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status == 200)
        c->ok++;
    xfer_cleanup(&c->x);
    /* Next request started from the completion callback itself. */
    if (--c->left > 0)
        chain_next(c);
}

static void chain_next(chain *c)
{
    xfer_init(&c->x, c->loop, c->port, "/seq");
    assert_int_not_equal(ac_http_start(c->loop, c->x.easy, chain_done, c), 0);
}

static void sequential_requests_reuse_one_connection(void **state)
{
    /* A fresh server, so its connection count starts at zero. */
    ac_httpd *h = ac_httpd_start();
    assert_non_null(h);
    ac_loop *loop = ac_loop_new();
    for (int i = 0; i < 20; i++)
        ac_httpd_push_simple(h, 200, NULL, "again");
    chain c = {.loop = loop, .port = ac_httpd_port(h), .left = 20};
    chain_next(&c);
    ac_loop_run(loop);
    assert_int_equal(c.ok, 20);
    assert_int_equal(ac_httpd_request_count(h), 20);
    assert_int_equal(ac_httpd_connections(h), 1);
    ac_loop_free(loop);
    ac_httpd_stop(h);
    (void)state;
}

static void check_started(void *ud)
{
    xfer *x = ud;
    if (x->len > 0)
        ac_loop_stop(x->loop);
    else
        ac_loop_timer(x->loop, 5, check_started, x);
}

static void cancel_mid_transfer_leaves_nothing(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    static char big[4096];
    memset(big, 'z', sizeof big);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = big;
    r.body_len = sizeof big;
    r.chunk_size = 16;
    r.chunk_delay_ms = 50; /* ~13 s in total: it is cancelled long before */
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/slow");
    uint64_t id = ac_http_start(loop, x.easy, on_done, &x);
    ac_loop_timer(loop, 5, check_started, &x);
    ac_loop_run(loop);
    assert_true(x.len > 0);
    assert_true(x.len < sizeof big);
    ac_http_cancel(loop, id);
    assert_int_equal(ac_http_active(loop), 0);
    ac_http_cancel(loop, id); /* twice: no-op */
    /* Let the loop spin a little: no callback may arrive for the cancelled transfer. */
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(loop, 10);
    assert_int_equal(x.done, 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    /* The handle is the caller's again and still usable. */
    ac_httpd_push_simple(h, 200, NULL, "after");
    free(x.body);
    x.body = NULL;
    x.len = 0;
    curl_easy_setopt(x.easy, CURLOPT_URL, x.urlbuf);
    assert_int_not_equal(ac_http_start(loop, x.easy, on_done, &x), 0);
    ac_loop_run(loop);
    assert_int_equal(x.rc, CURLE_OK);
    assert_string_equal(x.body, "after");
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

typedef struct self_cancel {
    xfer x;
    uint64_t id;
    int writes;
    int cleaned;
    int rc_inside, rc_after;
} self_cancel;

static void cancel_later(void *ud)
{
    self_cancel *c = ud;
    c->rc_after = ac_http_cancel(c->x.loop, c->id); /* curl has returned: removed now */
    xfer_cleanup(&c->x);
    c->cleaned = 1;
}

/* curl forbids removing a handle from its callbacks: the cancel is refused, the transfer is
 * untouched, and the caller acts once curl has returned (here from a post). */
static size_t cancel_in_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    (void)ptr;
    self_cancel *c = ud;
    if (c->writes++ == 0) {
        c->rc_inside = ac_http_cancel(c->x.loop, c->id);
        assert_int_equal(ac_http_active(c->x.loop), 1);
        ac_loop_post(c->x.loop, cancel_later, c);
    }
    return size * nmemb;
}

static void cancel_from_inside_write_callback(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    static char big[2048];
    memset(big, 'q', sizeof big);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = big;
    r.body_len = sizeof big;
    r.chunk_size = 64;
    r.chunk_delay_ms = 20;
    ac_httpd_push(h, &r);
    self_cancel c;
    memset(&c, 0, sizeof c);
    xfer_init(&c.x, loop, ac_httpd_port(h), "/self-cancel");
    curl_easy_setopt(c.x.easy, CURLOPT_WRITEFUNCTION, cancel_in_write);
    curl_easy_setopt(c.x.easy, CURLOPT_WRITEDATA, &c);
    c.id = ac_http_start(loop, c.x.easy, on_done, &c.x);
    ac_loop_run(loop);
    assert_int_equal(c.rc_inside, AC_HTTP_CANCEL_REFUSED);
    assert_int_equal(c.rc_after, AC_HTTP_CANCEL_NOW);
    assert_true(c.writes >= 1);
    assert_int_equal(c.cleaned, 1);
    assert_int_equal(c.x.done, 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

/* Two live transfers: A's write callback cancels B while curl is inside A's callback. */
/* A cancel outside curl reports an immediate removal; an unknown id reports nothing. */
static void cancel_outside_curl_is_immediate(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    assert_int_equal(ac_http_cancel(loop, 12345), AC_HTTP_CANCEL_NONE);
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = "xxxxxxxx";
    r.body_len = 8;
    r.chunk_size = 1;
    r.chunk_delay_ms = 200;
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/now");
    uint64_t id = ac_http_start(loop, x.easy, on_done, &x);
    assert_int_not_equal(id, 0);
    ac_loop_timer(loop, 5, check_started, &x);
    ac_loop_run(loop); /* until the response has begun: the server took its reply */
    assert_true(x.len > 0);
    assert_int_equal(ac_http_cancel(loop, id), AC_HTTP_CANCEL_NOW);
    assert_int_equal(ac_http_cancel(loop, id), AC_HTTP_CANCEL_NONE);
    xfer_cleanup(&x); /* ours again at once */
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    close(fd); /* bound, never listening, now closed: nobody accepts there */
    return ntohs(sa.sin_port);
}

static void connection_refused_is_reported(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    xfer x;
    xfer_init(&x, loop, closed_port(), "/");
    assert_int_not_equal(ac_http_start(loop, x.easy, on_done, &x), 0);
    ac_loop_run(loop);
    assert_int_equal(x.done, 1);
    assert_int_equal(x.rc, CURLE_COULDNT_CONNECT);
    assert_int_equal(ac_http_active(loop), 0);
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void mid_stream_disconnect_is_partial(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = "0123456789";
    r.body_len = 10;
    r.disconnect_after = 4;
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/cut");
    ac_http_start(loop, x.easy, on_done, &x);
    ac_loop_run(loop);
    assert_int_equal(x.rc, CURLE_PARTIAL_FILE);
    assert_int_equal(x.len, 4);
    assert_memory_equal(x.body, "0123", 4);
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void stall_timeout_fires_on_silent_server(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = "data: a\n\ndata: b\n\n";
    r.body_len = strlen(r.body);
    r.chunk_size = 9;
    r.stall_ms = 8000; /* all chunks sent, then silence before the terminator */
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/stream");
    assert_int_equal(ac_http_set_stall_timeout(loop, 424242, 300), -1);
    uint64_t id = ac_http_start(loop, x.easy, on_done, &x);
    assert_int_equal(ac_http_set_stall_timeout(loop, id, 300), 0);
    int64_t t0 = ac_loop_now_ms(loop);
    ac_loop_run(loop);
    /* Not a timing test: 8 s is when the server would have ended the response itself. */
    assert_true(ac_loop_now_ms(loop) - t0 < 8000);
    assert_int_equal(ac_http_active(loop), 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    assert_int_equal(x.rc, CURLE_OPERATION_TIMEDOUT);
    assert_string_equal(x.body, "data: a\n\ndata: b\n\n");
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void slow_but_moving_stream_is_not_a_stall(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = "abcdefghij";
    r.body_len = 10;
    r.chunk_size = 1;
    r.chunk_delay_ms = 60; /* ~600 ms in all, each gap well under the 400 ms stall limit */
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/trickle");
    uint64_t id = ac_http_start(loop, x.easy, on_done, &x);
    assert_int_equal(ac_http_set_stall_timeout(loop, id, 400), 0);
    ac_loop_run(loop);
    assert_int_equal(x.rc, CURLE_OK);
    assert_string_equal(x.body, "abcdefghij");
    xfer_cleanup(&x);
    ac_loop_free(loop);
}

static void empty_queue_answers_500_and_statuses_pass_through(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_push_simple(h, 429, "Retry-After: 7\r\n", "slow down");
    xfer a, b;
    xfer_init(&a, loop, ac_httpd_port(h), "/a");
    ac_http_start(loop, a.easy, on_done, &a);
    ac_loop_run(loop);
    xfer_init(&b, loop, ac_httpd_port(h), "/b");
    ac_http_start(loop, b.easy, on_done, &b);
    ac_loop_run(loop);
    assert_int_equal(a.rc, CURLE_OK);
    assert_int_equal(a.status, 429);
    assert_string_equal(a.body, "slow down");
    struct curl_header *hd = NULL;
    assert_int_equal(curl_easy_header(a.easy, "Retry-After", 0, CURLH_HEADER, -1, &hd), CURLHE_OK);
    assert_string_equal(hd->value, "7");
    assert_int_equal(b.status, 500);
    assert_string_equal(b.body, "no scripted response");
    xfer_cleanup(&a);
    xfer_cleanup(&b);
    ac_loop_free(loop);
}

static void loop_free_with_live_transfer(void **state)
{
    ac_httpd *h = *state;
    ac_loop *loop = ac_loop_new();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = "abcdef";
    r.body_len = 6;
    r.disconnect_after = 1;
    r.stall_ms = 3000;
    ac_httpd_push(h, &r);
    xfer x;
    xfer_init(&x, loop, ac_httpd_port(h), "/live");
    ac_http_start(loop, x.easy, on_done, &x);
    ac_loop_timer(loop, 5, check_started, &x);
    ac_loop_run(loop);
    assert_int_equal(ac_http_active(loop), 1);
    ac_loop_free(loop); /* removes the transfer; the handle stays ours */
    assert_int_equal(x.done, 0);
    xfer_cleanup(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_returns_body_and_server_records_request),
        cmocka_unit_test(post_large_body_arrives_intact),
        cmocka_unit_test(ten_concurrent_transfers_complete),
        cmocka_unit_test(fifty_concurrent_transfers_complete),
        cmocka_unit_test(sequential_requests_reuse_one_connection),
        cmocka_unit_test(cancel_mid_transfer_leaves_nothing),
        cmocka_unit_test(cancel_from_inside_write_callback),
        cmocka_unit_test(cancel_outside_curl_is_immediate),
        cmocka_unit_test(connection_refused_is_reported),
        cmocka_unit_test(mid_stream_disconnect_is_partial),
        cmocka_unit_test(stall_timeout_fires_on_silent_server),
        cmocka_unit_test(slow_but_moving_stream_is_not_a_stall),
        cmocka_unit_test(empty_queue_answers_500_and_statuses_pass_through),
        cmocka_unit_test(loop_free_with_live_transfer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
