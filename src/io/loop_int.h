/* Private to src/io: what http.c and proc.c need from the loop.
 *
 * Internal timers and watches behave like public ones but are not counted by
 * ac_loop_pending(): they are plumbing of a transfer or a child process, which is counted
 * itself. */
#ifndef AGENTC_IO_LOOP_INT_H
#define AGENTC_IO_LOOP_INT_H

#include "io/idmap.h"
#include "io/loop.h"

#define AC_LOOP_INTERNAL 1u

uint64_t ac_loop_timer_ex(ac_loop *loop, int64_t delay_ms, ac_loop_fn fn, void *ud, unsigned flags);
uint64_t ac_loop_watch_fd_ex(ac_loop *loop, int fd, int events, ac_loop_fd_fn fn, void *ud,
                             unsigned flags);
/* A fresh id, unique within the loop across all kinds of handles. */
uint64_t ac_loop_next_id(ac_loop *loop);
/* Reads CLOCK_MONOTONIC now (not the cached value). */
int64_t ac_loop_clock_ms(void);

/* A client of the loop (http.c, proc.c): a module keeping per-loop state,
 * created lazily on first use and attached under the address of its ops.
 * The loop knows its clients only through these hooks. */
typedef struct ac_loop_client_ops {
    /* Called by ac_loop_free() while the loop is still usable (the state
     * is still attached, so the client's own functions keep working); frees
     * the state. No callbacks may reach the client's callers. Clients are
     * torn down latest attached first. */
    void (*teardown)(ac_loop *loop, void *state);
    /* The client's live handles, counted by ac_loop_pending(). */
    size_t (*active)(const void *state);
} ac_loop_client_ops;

#define AC_LOOP_MAX_CLIENTS 4

/* Attaches state under ops. 0 on success, -1 if a state is already
 * attached under ops or AC_LOOP_MAX_CLIENTS clients are attached. */
int ac_loop_attach(ac_loop *loop, const ac_loop_client_ops *ops, void *state);
/* The state attached under ops, NULL if none. */
void *ac_loop_client(ac_loop *loop, const ac_loop_client_ops *ops);

#endif
