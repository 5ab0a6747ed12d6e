/* A scripted HTTP/1.1 server on 127.0.0.1 for tests, running in background threads of the test
 * process (one accept thread, one thread per connection, keep-alive).
 *
 * A test queues responses (FIFO, taken in the order requests complete; an empty queue answers
 * 500 "no scripted response") and afterwards inspects every request the server received.
 * Request bodies are read by Content-Length or chunked encoding, and "Expect: 100-continue" is
 * answered. Everything passed in is copied; everything handed out is the caller's to free. */
#ifndef AGENTC_TEST_HTTPD_H
#define AGENTC_TEST_HTTPD_H

#include <stddef.h>

typedef struct ac_httpd ac_httpd;

typedef struct ac_httpd_resp {
    int status;          /* e.g. 200; 0 counts as 200 */
    const char *headers; /* extra header lines "Name: value\r\n...", may be NULL; the server
                            adds Content-Length or Transfer-Encoding itself */
    const char *body;
    size_t body_len;
    size_t chunk_size;    /* 0 = whole body with Content-Length; else chunked encoding, */
    int chunk_delay_ms;   /* chunks of this size with this delay between them */
    int disconnect_after; /* >= 0: close the connection after this many body bytes; -1 = no.
                             NOTE a zeroed struct disconnects at once: use AC_HTTPD_RESP_INIT */
    int stall_ms;         /* after the last body byte (before the chunked terminator, or at
                             disconnect_after), stay silent this long with the socket open */
    int keepalive_ms;     /* > 0: during stall_ms, send the SSE comment ": keep-alive" and a
                             blank line every keepalive_ms instead of staying silent */
} ac_httpd_resp;

/* Defaults for a normal response: 200, no disconnect. */
#define AC_HTTPD_RESP_INIT                                                                         \
    {                                                                                              \
        .status = 200, .disconnect_after = -1                                                      \
    }

/* NULL if the socket could not be set up. */
ac_httpd *ac_httpd_start(void);
int ac_httpd_port(ac_httpd *h);
/* Closes every connection, joins every thread, frees everything. NULL is a no-op. */
void ac_httpd_stop(ac_httpd *h);

/* Queues the next response; copies everything. */
void ac_httpd_push(ac_httpd *h, const ac_httpd_resp *r);
/* Shorthand: status, optional header lines, NUL-terminated body, sent whole. */
void ac_httpd_push_simple(ac_httpd *h, int status, const char *headers, const char *body);

/* Number of complete requests received so far. */
size_t ac_httpd_request_count(ac_httpd *h);
/* Copies of request i (0-based, in order of completion): method, path (with query), raw header
 * lines ("Name: value\r\n" each, without the request line and the blank line) and body; each
 * out-pointer may be NULL; strings are NUL-terminated; the caller frees them. 0 on success,
 * -1 if there is no request i. */
int ac_httpd_request(ac_httpd *h, size_t i, char **method, char **path, char **headers, char **body,
                     size_t *body_len);
/* Looks name up (case-insensitive) in raw header lines and copies its trimmed value into buf
 * (truncated to cap - 1). Returns buf, or NULL if absent. */
const char *ac_httpd_header_value(const char *headers, const char *name, char *buf, size_t cap);
/* Number of TCP connections accepted so far (to prove keep-alive reuse). */
size_t ac_httpd_connections(ac_httpd *h);

#endif
