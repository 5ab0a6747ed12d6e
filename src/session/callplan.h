/*
 * callplan.h - the order in which the calls of one turn run: a small
 * dependency scheduler with no knowledge of tools or of the State.
 *
 * A plan holds n calls (indexes in the model's order). "Call j waits for call
 * i" means j does not start before i is done; with skip_if_failed, a failure
 * of i fails j without running it. Whoever knows why calls depend on each
 * other adds the waits (the State's paths: state_turn.c; a toolkit's pipeline
 * may add its own), then ac_callplan_check finds the cycles, and the runner
 * asks ac_callplan_next for calls to start and reports each end with
 * ac_callplan_done. Calls with nothing to wait for start at once, in order.
 */
#ifndef AGENTC_SESSION_CALLPLAN_H
#define AGENTC_SESSION_CALLPLAN_H

#include <stddef.h>

typedef struct ac_callplan ac_callplan;

ac_callplan *ac_callplan_new(size_t n);
void ac_callplan_free(ac_callplan *p);

/* Call j waits for call i (a wait on itself is ignored, a repeated one kept
 * once). 0, or -1 when out of memory or out of range. */
int ac_callplan_wait(ac_callplan *p, size_t j, size_t i, int skip_if_failed);

/* Finds every cycle of waits. Each call on one is reported once, with the
 * cycle it is on (cycle[0] == call, then the calls it waits for in turn, len
 * of them); it stops waiting (the runner fails it when it starts). Returns
 * the number of calls reported. Call once, after the waits are added. */
size_t ac_callplan_check(ac_callplan *p,
                         void (*on_cycle)(void *ud, size_t call, const size_t *cycle, size_t len),
                         void *ud);

/* The first call in order that has not started and whose waits are all
 * done, marked started; -1 when none is ready now. *failed_dep is the call
 * whose failure means this one must not run (a skip_if_failed wait), or
 * (size_t)-1. */
long ac_callplan_next(ac_callplan *p, size_t *failed_dep);

/* Call i ended (ok or not). */
void ac_callplan_done(ac_callplan *p, size_t i, int ok);

/* True when call j waits (directly) for call i. */
int ac_callplan_waits(const ac_callplan *p, size_t j, size_t i);

#endif
