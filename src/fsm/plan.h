/*
 * plan.h - what the dispatcher precomputes from a spec's tables (private).
 *
 * Everything a transition needs that depends only on the tables is worked
 * out once, when the plan is built, instead of at every dispatch:
 *   - a dense (state, event) -> first row index, with the rows of the same
 *     state and event chained in declared order;
 *   - for each state and event, the single action of an unguarded internal
 *     transition (streamed deltas and the like), so the commonest event is
 *     one load and one call;
 *   - for each row, one record with what taking it involves: the action
 *     lists to run, the effect uses the source stops, hands over to the
 *     target (declared by both: they keep running) and the target starts,
 *     a guard that is a single predicate, and whether the row can take the
 *     straight path (nothing invoked on either side, no eventless rows in
 *     the target).
 */
#ifndef AGENTC_FSM_PLAN_H
#define AGENTC_FSM_PLAN_H

#include <stdint.h>

#include "agentc/fsm.h"

#define AC_PLAN_GUARD_PROGRAM 0xFFFEu /* pred: evaluate the guard program */

/* Entries of the fast table (0: take the general path). */
#define AC_PLAN_FAST_CALL 0x10000u /* | action: an unguarded internal row, one action */
#define AC_PLAN_FAST_STRAIGHT                                                                      \
    0x20000u /* | row: the first of rows that all take the                                         \
                straight path (guards tried in order) */
#define AC_PLAN_FAST_ARG 0xFFFFu

typedef struct ac_fsm_plan_row {
    uint16_t source, target;
    uint16_t guard;          /* offset into guard_code, or AC_FSM_NONE */
    uint16_t pred;           /* AC_FSM_NONE: no guard; a guard index: the guard is that
                                one predicate; AC_PLAN_GUARD_PROGRAM: run the program */
    uint16_t arrival;        /* the M.S event a terminal target posts to the parent */
    uint16_t next_eventless; /* the source's next eventless row, or NONE */
    uint8_t kind;            /* enum ac_fsm_transition_kind */
    uint8_t straight;        /* external, no invoke on either side, no eventless
                                rows in the target, a run of at most 64 calls */
    /* offsets into the plan's lists (count-prefixed; 0 is the empty list) */
    uint32_t exit;      /* the source's exit actions */
    uint32_t actions;   /* the transition's actions */
    uint32_t enter;     /* the target's entry actions */
    uint32_t stop;      /* source effect uses stopped */
    uint32_t keep;      /* target effect uses handed over, running already */
    uint32_t start;     /* target effect uses started */
    uint32_t start_all; /* every target effect use (source left unstarted) */
    /* the straight path's calls, one after the other and without counts:
     * exit actions, stopped uses, actions, entry actions, started uses */
    uint32_t run;
    uint32_t fast_row; /* target * n_events: the target's row of the fast table */
    uint8_t n_exit, n_stop, n_actions, n_enter, n_start;
} ac_fsm_plan_row;

struct ac_fsm_plan {
    uint16_t n_events;
    /* NULL when n_states * n_events is too large for a dense index: the
     * dispatcher then scans the state's rows (fast is NULL too). The fast
     * table serves the deepest active state only. */
    uint16_t *first_row; /* [state * n_events + event] -> first row, or NONE */
    uint16_t *next_row;  /* [row] -> next row of the same state and event */
    uint32_t *fast;      /* [state * n_events + event] -> AC_PLAN_FAST_* entry, or 0 */
    uint16_t *arrival;   /* [state] -> "M.S" event of a terminal state, or NONE */
    uint16_t *eventless; /* [state] -> its first eventless row (next_eventless
                            chains the others, in declared order), or NONE */
    ac_fsm_plan_row *rows;
    uint16_t *lists;
};

/* A plan without the dense index (the dispatcher scans rows): what a spec
 * too large for the index gets. Exposed so tests can drive both paths. */
ac_fsm_plan *ac_fsm_plan_new_scan(const ac_fsm_tables *t);

#endif
