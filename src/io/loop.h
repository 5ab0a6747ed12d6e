/* The event loop: one per process (one thread), shared by every session.
 *
 * poll(2)-based, in the spirit of Redis' ae.c: one-shot timers, fd watches, and a thread-safe
 * post queue for completions that arrive from other threads. HTTP transfers (http.h) and child
 * processes (proc.h) are driven by the same loop.
 *
 * Ownership: the loop owns every timer, watch, transfer record and child process registered
 * with it. Callers hold uint64_t ids, never pointers; 0 is never a valid id. Cancelling an id
 * that already fired (or was cancelled) is a harmless no-op, so an id can be kept after its
 * callback ran. Callbacks may register and cancel anything, including themselves.
 *
 * Everything except ac_loop_post() must be called on the loop's thread. ac_loop_run_once(),
 * ac_loop_run() and ac_loop_free() must not be called from a callback of the same loop.
 *
 * The part of the loop a program needs to drive sessions (ac_loop_new, ac_loop_free,
 * ac_loop_run_once, ac_loop_run, ac_loop_stop) is public and declared in agentc.h. */
#ifndef AGENTC_IO_LOOP_H
#define AGENTC_IO_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"

/* Interest and readiness bits for fd watches. AC_LOOP_ERROR is only ever reported (POLLERR,
 * POLLHUP, POLLNVAL); a hang-up is also reported as AC_LOOP_READ so a reader sees EOF. */
#define AC_LOOP_READ 1
#define AC_LOOP_WRITE 2
#define AC_LOOP_ERROR 4

typedef void (*ac_loop_fn)(void *ud);
typedef void (*ac_loop_fd_fn)(void *ud, int fd, int revents);

/* CLOCK_MONOTONIC in milliseconds, cached once per loop iteration. */
int64_t ac_loop_now_ms(ac_loop *loop);
/* CLOCK_REALTIME in milliseconds since the epoch (for event timestamps). */
int64_t ac_wall_now_ms(void);

/* One-shot timer firing fn(ud) after delay_ms (negative counts as 0). Timers with the same
 * deadline fire in the order they were created. A timer created by a callback fires at the
 * earliest in the next iteration, so a 0 ms timer re-arming itself cannot starve the loop.
 * Returns the id, 0 on allocation failure. */
uint64_t ac_loop_timer(ac_loop *loop, int64_t delay_ms, ac_loop_fn fn, void *ud);
/* 1 if the timer was pending (and now never fires), 0 otherwise. */
int ac_loop_cancel_timer(ac_loop *loop, uint64_t id);

/* Calls fn(ud, fd, revents) whenever fd is ready for one of events (AC_LOOP_READ|WRITE);
 * level-triggered. The fd stays owned by the caller: unwatch it before closing it.
 * Returns the id, 0 on failure (bad arguments or allocation). */
uint64_t ac_loop_watch_fd(ac_loop *loop, int fd, int events, ac_loop_fd_fn fn, void *ud);
/* Changes the interest set of a live watch; 0 on success, -1 if the id is not live. */
int ac_loop_watch_events(ac_loop *loop, uint64_t id, int events);
void ac_loop_unwatch(ac_loop *loop, uint64_t id);

/* Deferred tasks: work a callback hands to the loop so that it runs outside the callback's
 * stack frame. ac_loop_defer() queues the task (once: deferring a queued task again is a
 * no-op); the loop runs every queued task, in the order deferred, right after the callback
 * (fd, timer or post) that deferred it returns and before any other callback runs. Tasks
 * deferred by a running task run in the same pass. A task deferred outside any callback runs
 * at the start of the next ac_loop_run_once(), which then does not block. The task is owned
 * by the caller (no allocation, so deferring cannot fail); ac_loop_undefer() takes it off the
 * queue before the caller frees it. Loop thread only. */
typedef struct ac_loop_task {
    ac_loop_fn fn;
    void *ud;
    struct ac_loop_task *next; /* owned by the loop while queued */
    int queued;
} ac_loop_task;
void ac_loop_defer(ac_loop *loop, ac_loop_task *task);
void ac_loop_undefer(ac_loop *loop, ac_loop_task *task);
/* Nonzero while one of the loop's callbacks or deferred tasks is on the stack: work that must
 * not run inside someone else's callback (a dispatch) is deferred then. */
int ac_loop_in_callback(const ac_loop *loop);

/* THREAD-SAFE. Queues fn(ud) to run on the loop thread in a following iteration and wakes the
 * loop. Posts run in the order they were queued. 0 on success, -1 on allocation failure.
 * Must not race with ac_loop_free(). */
int ac_loop_post(ac_loop *loop, ac_loop_fn fn, void *ud);

/* Number of live timers and fd watches registered by callers, plus the live handles of the
 * loop's clients (HTTP transfers, child processes; see loop_int.h). The loop's own internal
 * timers and watches are not counted. 0 means nothing left behind. */
size_t ac_loop_pending(ac_loop *loop);

#endif
