/*
 * leave.h - the proof that every event a transition waits for can be sent, and
 * that every non-terminal state can be left, over compiled tables (leave.c).
 *
 * The checker runs it on the tables it lowers (with what the spec's `posts` and the
 * handlers' contracts say each effect posts); ac_engine_new runs it before it runs a
 * spec (with what the bound built-in handlers' contracts say; an effect the program
 * binds itself may post anything).
 */
#ifndef AGENTC_GEN_LEAVE_H
#define AGENTC_GEN_LEAVE_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm_tables.h"

enum ac_leave_kind {
    AC_LEAVE_UNSENDABLE = 0, /* nothing sends the event of `transition` (its first use) */
    AC_LEAVE_STUCK = 1,      /* `state` can never be left */
    AC_LEAVE_ELSEWHERE = 2   /* `transition` waits for an event that cannot happen in `state` */
};

typedef struct ac_leave_problem {
    int kind;            /* enum ac_leave_kind */
    uint16_t state;      /* the state concerned */
    uint16_t transition; /* the transition concerned (AC_FSM_NONE: the state) */
    char msg[700];
} ac_leave_problem;

/* Whether effect `effect` posts event `ev` (indexes into t): 1 yes, 0 no, -1 not known (it
 * may post any event). */
typedef int (*ac_leave_posts_fn)(void *ud, uint16_t effect, uint16_t ev);
typedef void (*ac_leave_report_fn)(void *ud, const ac_leave_problem *p);

/* Reports every problem, in state order; returns how many. */
size_t ac_leave_check(const ac_fsm_tables *t, ac_leave_posts_fn posts, ac_leave_report_fn report,
                      void *ud);

/* Whether event ev can happen while state s is active, by the rules above (an outside or
 * engine event, a timer of s, the arrival of the machine s invokes, an event an effect of s or
 * of a state above or below it posts): 1 or 0. `agentc testgen` counts as reachable only the
 * transitions whose event can happen at their source. */
int ac_leave_can_happen(const ac_fsm_tables *t, ac_leave_posts_fn posts, void *ud, uint16_t s,
                        uint16_t ev);

#endif
