/*
 * ref_dispatch.h - a reference dispatcher for tests.
 *
 * The straightforward form of the dispatch rules (see src/fsm/dispatch.c):
 * rows scanned in declared order, effect uses compared at every transition,
 * no plan, no shortcuts. Tests run it beside the real dispatcher and require
 * the same handler calls. It reads the tables only; handlers are bound like
 * the real ones.
 */
#ifndef AGENTC_TESTS_REF_DISPATCH_H
#define AGENTC_TESTS_REF_DISPATCH_H

#include "agentc/fsm.h"

typedef struct ref_fsm {
    const ac_fsm_tables *t;
    const ac_guard_fn *guards;
    const ac_action_fn *actions;
    ac_effect_fn effect;
    ac_session *ctx;
    uint16_t *arrival; /* per state, owned */
    uint8_t depth, qn, qh, started;
    uint16_t state[AC_FSM_MAX_DEPTH];
    uint16_t queue[AC_FSM_QUEUE];
    uint16_t *carry; /* effect uses handed over to the state being entered */
    size_t n_carry;
    uint16_t *pending; /* those handed over to `unstarted`, stopped when it is left */
    size_t n_pending;
    uint16_t microsteps;
    uint16_t unstarted; /* state being left before its effects started */
    int error;
} ref_fsm;

/* 0 on success, -1 when out of memory. */
int ref_fsm_init(ref_fsm *f, const ac_fsm_tables *t, const ac_guard_fn *guards,
                 const ac_action_fn *actions, ac_effect_fn effect, ac_session *ctx);
void ref_fsm_free(ref_fsm *f);
/* Same results as ac_fsm_start / ac_fsm_dispatch / ac_fsm_stop. */
int ref_fsm_start(ref_fsm *f, const ac_event *ev);
int ref_fsm_dispatch(ref_fsm *f, const ac_event *ev);
void ref_fsm_stop(ref_fsm *f, const ac_event *ev);

#endif
