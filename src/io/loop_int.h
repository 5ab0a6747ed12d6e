/* Private to src/io: what http.c and proc.c need from the loop, and the id map they share.
 *
 * Internal timers and watches behave like public ones but are not counted by
 * ac_loop_pending(): they are plumbing of a transfer or a child process, which is counted
 * itself. */
#ifndef AC_IO_LOOP_INT_H
#define AC_IO_LOOP_INT_H

#include "io/loop.h"

/* Open-addressing map from a non-zero uint64_t key to a pointer. The map does not own the
 * values. */
typedef struct ac_idmap {
    uint64_t *keys; /* 0 = empty slot */
    void **vals;
    size_t cap; /* power of two, or 0 */
    size_t len;
} ac_idmap;

void *ac_idmap_get(const ac_idmap *m, uint64_t key);
/* 0 on success, -1 on allocation failure. Replaces an existing value. */
int ac_idmap_put(ac_idmap *m, uint64_t key, void *val);
/* Removes and returns the value, NULL if absent. */
void *ac_idmap_del(ac_idmap *m, uint64_t key);
/* Any one value, NULL if empty: to drain a map with repeated del calls. */
void *ac_idmap_any(const ac_idmap *m, uint64_t *key);
void ac_idmap_clear(ac_idmap *m);

#define AC_LOOP_INTERNAL 1u

uint64_t ac_loop_timer_ex(ac_loop *loop, int64_t delay_ms, ac_loop_fn fn, void *ud, unsigned flags);
uint64_t ac_loop_watch_fd_ex(ac_loop *loop, int fd, int events, ac_loop_fd_fn fn, void *ud,
                             unsigned flags);
/* A fresh id, unique within the loop across all kinds of handles. */
uint64_t ac_loop_next_id(ac_loop *loop);
/* Reads CLOCK_MONOTONIC now (not the cached value). */
int64_t ac_loop_clock_ms(void);

/* Per-loop state slots of the other io modules, created lazily by them. */
struct ac_http_state;
struct ac_proc_state;
struct ac_http_state **ac_loop_http_slot(ac_loop *loop);
struct ac_proc_state **ac_loop_proc_slot(ac_loop *loop);

/* Called by ac_loop_free() while the loop is still usable; no callbacks reach the caller. */
void ac_http_teardown(ac_loop *loop);
void ac_proc_teardown(ac_loop *loop);

#endif
