/*
 * fsm.h - the table-driven dispatcher.
 *
 * An ac_fsm is the running configuration of one compiled spec: the active
 * state of the root machine and of every machine invoked below it (a
 * chain, at most AC_FSM_MAX_DEPTH deep). Dispatch is run-to-completion:
 * one event is fully processed (guards, exit / transition / entry actions,
 * eventless transitions, child arrival events) before the call returns.
 * The dispatcher allocates no memory and never reads the clock: time comes
 * with the event.
 *
 * Handlers are plain C functions bound by index (see ac_fsm_binding); the
 * engine resolves them by name from a registry.
 */
#ifndef AGENTC_FSM_H
#define AGENTC_FSM_H

#include <stdbool.h>
#include <stdint.h>

#include "agentc/fsm_tables.h"

#define AC_FSM_MAX_MICROSTEPS 64 /* eventless steps chained by one event */
#define AC_FSM_QUEUE 16          /* pending child-arrival events */

typedef struct ac_event {
    uint16_t type;    /* event index in the tables */
    int64_t time_ms;  /* wall-clock milliseconds, supplied by whoever posts */
    const void *data; /* payload (a json_t * in the engine), borrowed */
} ac_event;

/* The context handlers get. Opaque here: the engine defines it (and a test
 * or benchmark may define its own). */
typedef struct ac_session ac_session;

typedef bool (*ac_guard_fn)(ac_session *s, const ac_event *ev);
typedef void (*ac_action_fn)(ac_session *s, const ac_event *ev);
/* Effects: started (start = 1) when their state is entered, stopped
 * (start = 0) when it is left. `use` indexes tables->effect_uses, which names
 * the effect and the params passed to it. ev is NULL when stopping. */
typedef void (*ac_effect_fn)(ac_session *s, uint16_t use, int start, const ac_event *ev);

/* What the dispatcher precomputes from a spec's tables: the (state, event)
 * index, the one-call path for unguarded single-action internal transitions,
 * and which effects each external transition stops, hands over and starts.
 * Read-only once built: one plan serves every session of a spec. */
typedef struct ac_fsm_plan ac_fsm_plan;

/* NULL when out of memory. */
ac_fsm_plan *ac_fsm_plan_new(const ac_fsm_tables *t);
void ac_fsm_plan_free(ac_fsm_plan *p);

typedef struct ac_fsm_binding {
    const ac_fsm_tables *t;
    const ac_guard_fn *guards;   /* t->n_guards entries, none NULL */
    const ac_action_fn *actions; /* t->n_actions */
    ac_effect_fn effect;         /* one hook for every effect use */
    const ac_fsm_plan *plan;     /* required: ac_fsm_plan_new(t); without it
                                    ac_fsm_start fails and nothing runs */
} ac_fsm_binding;

/* What a trace record describes. */
enum ac_trace_kind {
    AC_TRACE_TRANSITION = 0, /* external transition taken */
    AC_TRACE_INTERNAL = 1,   /* internal transition (actions only) */
    AC_TRACE_IGNORED = 2,    /* explicitly ignored */
    AC_TRACE_UNHANDLED = 3,  /* nobody handled nor ignored the event */
    AC_TRACE_ERROR = 4       /* microstep bound or queue overflow */
};

typedef struct ac_trace_rec {
    int kind;
    uint16_t machine;
    uint16_t from, to;   /* state indexes (to == from for internal/ignored) */
    uint16_t event;      /* AC_FSM_EVENTLESS for eventless steps */
    uint16_t line;       /* spec line of the transition, 0 if none */
    uint16_t row;        /* transition row, AC_FSM_NONE if none */
    const char *message; /* AC_TRACE_ERROR only */
} ac_trace_rec;

typedef void (*ac_trace_fn)(void *ud, const ac_trace_rec *rec);

typedef struct ac_fsm {
    const ac_fsm_binding *b;
    ac_session *ctx;
    /* copies of hot binding, table and plan pointers: one load, not a chain */
    const ac_fsm_plan *plan;
    const struct ac_fsm_plan_row *plan_rows;
    const uint16_t *plan_lists;
    const ac_fsm_state *states;
    const ac_fsm_transition *rows;
    const uint16_t *lists;
    const uint16_t *first_row, *next_row; /* the plan's index; NULL: rows are scanned */
    const uint32_t *fast_base;            /* the plan's fast table; NULL when traced */
    const uint32_t *fast;                 /* its row for the deepest active state, NULL:
                                             every event takes the general path */
    const ac_guard_fn *guards;
    const ac_action_fn *actions;
    ac_effect_fn effect;
    ac_trace_fn trace;
    void *trace_ud;
    uint16_t n_events;
    uint8_t depth; /* active levels */
    uint8_t qn, qh;
    uint8_t started;
    uint16_t microsteps;
    uint16_t unstarted;             /* state being left before its effects started */
    uint8_t busy;                   /* inside start, dispatch or stop (re-entry is refused) */
    const uint16_t *unstarted_kept; /* effect uses handed over to `unstarted`,
                                       stopped after its exit actions */
    uint16_t state[AC_FSM_MAX_DEPTH];
    uint16_t queue[AC_FSM_QUEUE];
    int error;
    uint32_t entries; /* states entered so far (a self-transition enters its state again) */
    /* entries of the root machine's states marked in `counted` (by state index; NULL: none
     * counted), so far (not restored): whoever marks them learns that one was entered
     * during a dispatch even when it was left again in the same dispatch */
    const uint8_t *counted;
    uint32_t counted_entries;
} ac_fsm;

enum ac_fsm_result {
    AC_FSM_HANDLED = 0,
    AC_FSM_UNHANDLED = 1,
    AC_FSM_FAILED = -1 /* microstep bound exceeded or queue overflow (see trace) */
};

/* Prepares `fsm` (no I/O). Call ac_fsm_start to enter the initial states. */
void ac_fsm_init(ac_fsm *fsm, const ac_fsm_binding *b, ac_session *ctx, ac_trace_fn trace,
                 void *ud);
/* Enters the root machine's initial state (entry actions, eventless steps,
 * effects, invoked machines). `ev` supplies the time. */
int ac_fsm_start(ac_fsm *fsm, const ac_event *ev);
/* Dispatches one event, run to completion. */
int ac_fsm_dispatch(ac_fsm *fsm, const ac_event *ev);
/* Leaves every active state (deepest first), stopping effects: used when a
 * session is freed. No actions other than exit actions run. */
void ac_fsm_stop(ac_fsm *fsm, const ac_event *ev);
/* Puts a machine in the configuration a snapshot recorded: state[0..depth) active (the
 * root machine's state first, each next one in the machine its parent invokes) and `entries`
 * states entered so far, without running any action or effect (whoever restores starts what
 * the states do). AC_FSM_FAILED, nothing changed, when it is busy or the configuration is not
 * one of its tables'. */
int ac_fsm_restore(ac_fsm *fsm, const uint16_t *state, uint8_t depth, uint32_t entries);

/* Active state of `machine`, or AC_FSM_NONE when that machine is not active. */
uint16_t ac_fsm_state_of(const ac_fsm *fsm, uint16_t machine);

/* Builds the per-state arrival event table (`out` has t->n_states entries). */
void ac_fsm_arrival_events(const ac_fsm_tables *t, uint16_t *out);

#endif
