/* HTTP transfers driven by the event loop: one libcurl multi handle per loop, shared by every
 * transfer, so connections are reused (keep-alive) and HTTP/2 streams are multiplexed when the
 * server offers it. Driven by CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION and
 * curl_multi_socket_action(): no busy loop, no thread per request.
 *
 * Ownership: the caller creates and configures the easy handle (URL, headers, write callback,
 * ...). ac_http_start() lends it to the loop until done() is called or the transfer is
 * cancelled; the caller owns it again from then on (clean it up in done(), or after
 * ac_http_cancel()). The loop never calls curl_easy_cleanup() on a caller's handle, not even
 * in ac_loop_free(). While lent, touch the handle only from its own curl callbacks. The loop
 * does not use CURLOPT_PRIVATE, so it stays free for the caller. */
#ifndef AGENTC_IO_HTTP_H
#define AGENTC_IO_HTTP_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "io/loop.h"

typedef void (*ac_http_done_fn)(void *ud, CURL *easy, CURLcode rc);

/* Calls curl_global_init() once per process (thread-safe). ac_http_start() and
 * ac_loop_multi() call it themselves. 0 on success. */
int ac_http_global_init(void);

/* Adds easy to the loop's multi and returns the transfer id, 0 on failure (nothing started,
 * the caller keeps the handle). Fails from inside curl's callbacks, where curl forbids adding
 * handles: start new transfers from done(), a timer or a post instead. done(ud, easy, rc) runs on
 * the loop thread once the transfer finishes, with curl's result (CURLE_OK even for HTTP 4xx/5xx:
 * read CURLINFO_RESPONSE_CODE); the transfer is already out of the multi then, so done may clean up
 * the handle or start a new transfer with it. */
uint64_t ac_http_start(ac_loop *loop, CURL *easy, ac_http_done_fn done, void *ud);

/* What ac_http_cancel() did. */
#define AC_HTTP_CANCEL_NONE 0     /* unknown or finished id: nothing */
#define AC_HTTP_CANCEL_NOW 1      /* removed from the multi: the handle is the caller's */
#define AC_HTTP_CANCEL_REFUSED -1 /* called inside curl: nothing done (a caller's bug) */

/* Stops a transfer; done is never called for it, and the caller owns the easy handle again on
 * return. Unknown or finished ids are a no-op. libcurl forbids removing a handle from inside
 * one of its callbacks (write, header, progress... of any transfer on this loop), so a cancel
 * from there is refused: callers never act on a transfer from inside curl, they queue what
 * they learnt and act once curl has returned (the session's queue does exactly that). */
int ac_http_cancel(ac_loop *loop, uint64_t id);

/* Number of transfers started and not yet done or cancelled. */
size_t ac_http_active(ac_loop *loop);

/* The loop's multi handle (created on first use), for multi-wide options such as
 * CURLMOPT_MAX_HOST_CONNECTIONS. Do not add or remove handles on it directly, and do not
 * replace the socket or timer callbacks. NULL on allocation failure. */
CURLM *ac_loop_multi(ac_loop *loop);

/* Stall timeout: if the transfer moves no byte (response headers or body in, request body out)
 * for stall_ms, it is removed from the multi and done() is called with
 * CURLE_OPERATION_TIMEDOUT. Checked by a loop timer every stall_ms / 4 (at least 10 ms), so it
 * fires between stall_ms and 1.25 * stall_ms of silence; the caller's curl callbacks stay
 * untouched. curl's own CURLOPT_LOW_SPEED_TIME was not used because it averages the speed over
 * a 5 s window and so reacts seconds late. stall_ms <= 0 turns the check off. Returns 0, or -1
 * if the id is not an active transfer. */
int ac_http_set_stall_timeout(ac_loop *loop, uint64_t id, int64_t stall_ms);
/* From now on, progress of transfer id for the stall check is what the caller reports with
 * ac_http_progress(), not bytes moved: a client that parses the body reports each real unit
 * (an SSE event), so bytes that carry none - keep-alive comments, blank lines, header lines
 * trickled one at a time - do not hold the transfer open. 0, or -1 for an unknown id. */
int ac_http_report_progress(ac_loop *loop, uint64_t id);
/* Transfer id made progress now (callable from its curl callbacks). Unknown ids are ignored. */
void ac_http_progress(ac_loop *loop, uint64_t id);

#endif
