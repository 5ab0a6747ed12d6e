/*
 * tool_order.h - the order in which the calls of one turn may run.
 *
 * Calls are numbered 0..n-1 in the model's order. An edge "j after i" makes
 * call j wait until call i has finished; with skip_on_failure, j is not run
 * at all when i failed or was itself skipped (the skip carries the call that
 * failed first). Calls without edges run at once, subject only to the
 * runner's parallel limit. tools_run.c adds one edge per consecutive pair of
 * calls to the same toolkit (skip_on_failure set); other orderings (data
 * dependencies between calls, say) add their own edges to the same object.
 */
#ifndef AGENTC_SESSION_TOOL_ORDER_H
#define AGENTC_SESSION_TOOL_ORDER_H

#include <stddef.h>

#define AC_ORDER_NONE ((size_t)-1)

typedef struct ac_tool_order ac_tool_order;

ac_tool_order *ac_tool_order_new(size_t n);
void ac_tool_order_free(ac_tool_order *o);
/* Call j waits for call i (i != j). 0, or -1 out of memory or out of range. */
int ac_tool_order_after(ac_tool_order *o, size_t j, size_t i, int skip_on_failure);
/* A call that will never run because one it waits for with skip_on_failure
 * failed or was skipped: returns it (now marked skipped, which counts as
 * failed for its own successors) and the call that failed in *because;
 * AC_ORDER_NONE when there is none. */
size_t ac_tool_order_next_skipped(ac_tool_order *o, size_t *because);
/* The first call in model order that may start now (every call it waits for
 * has finished), marked started; AC_ORDER_NONE when none. */
size_t ac_tool_order_next_ready(ac_tool_order *o);
/* Call i finished (ok nonzero: succeeded). Calling it for a skipped call does nothing. */
void ac_tool_order_done(ac_tool_order *o, size_t i, int ok);

#endif
