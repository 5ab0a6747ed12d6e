/* The loopback test server itself, driven by a raw socket client so every byte on the wire is
 * checked: 100-continue, chunked request bodies, pipelined keep-alive requests, framing of
 * scripted responses, header lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "test_httpd.h"

static int connect_to(ac_httpd *h)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0}; /* a broken server fails the test instead of hanging it */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)ac_httpd_port(h));
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void send_str(int fd, const char *s)
{
    size_t n = strlen(s);
    assert_int_equal(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until want bytes arrived or the peer closed; returns the count, buf NUL-terminated. */
static size_t recv_upto(int fd, char *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = recv(fd, buf + got, want - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    return got;
}

static size_t recv_all(int fd, char *buf, size_t cap)
{
    return recv_upto(fd, buf, cap - 1);
}

static void expect_100_continue_then_body(void **state)
{
    (void)state;
    ac_httpd *h = ac_httpd_start();
    ac_httpd_push_simple(h, 200, NULL, "ok");
    int fd = connect_to(h);
    send_str(fd, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                 "Expect: 100-continue\r\n\r\n");
    char buf[512];
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    assert_int_equal(recv_upto(fd, buf, sizeof cont - 1), sizeof cont - 1);
    assert_string_equal(buf, cont);
    assert_int_equal(ac_httpd_request_count(h), 0); /* not complete before the body */
    send_str(fd, "hello");
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert_int_equal(recv_upto(fd, buf, sizeof resp - 1), sizeof resp - 1);
    assert_string_equal(buf, resp);
    char *body;
    size_t blen;
    assert_int_equal(ac_httpd_request(h, 0, NULL, NULL, NULL, &body, &blen), 0);
    assert_int_equal(blen, 5);
    assert_string_equal(body, "hello");
    free(body);
    close(fd);
    ac_httpd_stop(h);
}

static void chunked_request_and_pipelined_keep_alive(void **state)
{
    (void)state;
    ac_httpd *h = ac_httpd_start();
    ac_httpd_push_simple(h, 201, "X-One: 1\r\n", "first");
    ac_httpd_push_simple(h, 404, NULL, "second");
    int fd = connect_to(h);
    /* Two requests in one write; the first with a chunked body and a trailer. */
    send_str(fd, "PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "3\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n"
                 "GET /b?x=1 HTTP/1.1\r\nConnection: close\r\n\r\n");
    char buf[1024];
    recv_all(fd, buf, sizeof buf); /* until the server closes (Connection: close) */
    static const char want[] = "HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-One: 1\r\n\r\nfirst"
                               "HTTP/1.1 404 Not Found\r\nContent-Length: 6\r\n"
                               "Connection: close\r\n\r\nsecond";
    assert_string_equal(buf, want);
    assert_int_equal(ac_httpd_request_count(h), 2);
    assert_int_equal(ac_httpd_connections(h), 1);
    char *method, *path, *headers, *body;
    size_t blen;
    assert_int_equal(ac_httpd_request(h, 0, &method, &path, &headers, &body, &blen), 0);
    assert_string_equal(method, "PUT");
    assert_string_equal(path, "/a");
    assert_string_equal(headers, "Transfer-Encoding: chunked\r\n");
    assert_int_equal(blen, 13);
    assert_string_equal(body, "abc0123456789");
    free(method);
    free(path);
    free(headers);
    free(body);
    assert_int_equal(ac_httpd_request(h, 1, &method, &path, NULL, NULL, &blen), 0);
    assert_string_equal(method, "GET");
    assert_string_equal(path, "/b?x=1");
    assert_int_equal(blen, 0);
    free(method);
    free(path);
    assert_int_equal(ac_httpd_request(h, 2, &method, NULL, NULL, NULL, NULL), -1);
    close(fd);
    ac_httpd_stop(h);
}

static void chunked_response_with_disconnect(void **state)
{
    (void)state;
    ac_httpd *h = ac_httpd_start();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.headers = "Content-Type: text/event-stream\r\n";
    r.body = "abcdefgh";
    r.body_len = 8;
    r.chunk_size = 3;
    r.disconnect_after = 5;
    ac_httpd_push(h, &r);
    int fd = connect_to(h);
    send_str(fd, "GET / HTTP/1.1\r\n\r\n");
    char buf[512];
    recv_all(fd, buf, sizeof buf);
    assert_string_equal(buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                             "Content-Type: text/event-stream\r\n\r\n3\r\nabc\r\n2\r\nde\r\n");
    close(fd);
    ac_httpd_stop(h);
}

static void bad_request_gets_400(void **state)
{
    (void)state;
    ac_httpd *h = ac_httpd_start();
    int fd = connect_to(h);
    send_str(fd, "NONSENSE\r\n\r\n");
    char buf[256];
    recv_all(fd, buf, sizeof buf);
    assert_non_null(strstr(buf, "HTTP/1.1 400 "));
    close(fd);
    assert_int_equal(ac_httpd_request_count(h), 0);
    ac_httpd_stop(h);
}

static void header_value_lookup(void **state)
{
    (void)state;
    const char *hs = "Content-Type:  text/plain \r\nX-Empty:\r\nx-dup: one\r\nX-Dup: two\r\n";
    char buf[8];
    assert_string_equal(ac_httpd_header_value(hs, "content-type", buf, sizeof buf), "text/pl");
    assert_string_equal(ac_httpd_header_value(hs, "X-Empty", buf, sizeof buf), "");
    assert_string_equal(ac_httpd_header_value(hs, "X-DUP", buf, sizeof buf), "one");
    assert_null(ac_httpd_header_value(hs, "Content", buf, sizeof buf));
    assert_null(ac_httpd_header_value("", "A", buf, sizeof buf));
}

static void stop_is_prompt_with_stalled_connection(void **state)
{
    (void)state;
    ac_httpd *h = ac_httpd_start();
    ac_httpd_resp r = AC_HTTPD_RESP_INIT;
    r.body = "x";
    r.body_len = 1;
    r.stall_ms = 60000;
    ac_httpd_push(h, &r);
    int fd = connect_to(h);
    send_str(fd, "GET / HTTP/1.1\r\n\r\n");
    char buf[128];
    recv_upto(fd, buf, 39); /* the whole response; the server now stalls */
    ac_httpd_stop(h);       /* returns without waiting out the stall */
    close(fd);
    ac_httpd_stop(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expect_100_continue_then_body),
        cmocka_unit_test(chunked_request_and_pipelined_keep_alive),
        cmocka_unit_test(chunked_response_with_disconnect),
        cmocka_unit_test(bad_request_gets_400),
        cmocka_unit_test(header_value_lookup),
        cmocka_unit_test(stop_is_prompt_with_stalled_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
