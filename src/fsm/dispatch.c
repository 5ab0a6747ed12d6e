/*
 * dispatch.c - the run-to-completion dispatcher over ac_fsm_tables.
 *
 * Order of a transition taken at level L (external):
 *   1. stop the machines invoked below L, deepest first (exit actions,
 *      effects stopped);
 *   2. exit the source: exit actions, effects stopped - except effect uses
 *      that the target declares too, which keep running;
 *   3. transition actions;
 *   4. enter the target: entry actions; then its eventless transitions are
 *      tried in order (the first whose guard holds is taken at once); if
 *      none, its effects start and the machine it invokes is entered.
 * Entering a terminal state of an invoked machine queues the arrival event
 * `MACHINE.STATE`, dispatched to the parent after the current step.
 * Internal transitions run their actions only; ignores do nothing.
 * An event is offered to the deepest active machine first and bubbles up
 * while no transition or ignore of the current state matches.
 *
 * What depends only on the tables comes from the plan (plan.h): the row
 * index, each row's action and effect lists, single-predicate guards, and
 * the straight path for rows with nothing invoked and no eventless step.
 */
#include <string.h>

#include "agentc/fsm.h"
#include "fsm/plan.h"

static const uint16_t empty_list[1] = {0};

static void trace_emit(ac_fsm *f, int kind, uint16_t machine, uint16_t from, uint16_t to,
                       uint16_t event, uint16_t row, const char *msg)
{
    ac_trace_rec r;
    r.kind = kind;
    r.machine = machine;
    r.from = from;
    r.to = to;
    r.event = event;
    r.row = row;
    r.line = row == AC_FSM_NONE ? 0 : f->b->t->transitions[row].line;
    r.message = msg;
    f->trace(f->trace_ud, &r);
}

static inline void trace(ac_fsm *f, int kind, uint16_t machine, uint16_t from, uint16_t to,
                         uint16_t event, uint16_t row, const char *msg)
{
    if (f->trace)
        trace_emit(f, kind, machine, from, to, event, row, msg);
}

static void fail(ac_fsm *f, uint16_t machine, uint16_t state, uint16_t event, const char *msg)
{
    f->error = 1;
    f->fast = NULL;
    trace(f, AC_TRACE_ERROR, machine, state, state, event, AC_FSM_NONE, msg);
}

static bool guard_eval(ac_fsm *f, uint16_t off, const ac_event *ev)
{
    const uint16_t *code = f->b->t->guard_code + off;
    bool stack[AC_FSM_GUARD_STACK];
    int sp = 0;
    for (; *code != AC_G_END; code++) {
        uint16_t op = *code;
        switch (op & AC_G_OPMASK) {
        case AC_G_PRED:
            if (sp == AC_FSM_GUARD_STACK)
                return false;
            stack[sp++] = f->guards[op & AC_G_ARGMASK](f->ctx, ev);
            break;
        case AC_G_NOT:
            if (sp < 1)
                return false;
            stack[sp - 1] = !stack[sp - 1];
            break;
        case AC_G_AND:
            if (sp < 2)
                return false;
            sp--;
            stack[sp - 1] = stack[sp - 1] && stack[sp];
            break;
        default:
            if (sp < 2)
                return false;
            sp--;
            stack[sp - 1] = stack[sp - 1] || stack[sp];
            break;
        }
    }
    return sp == 1 && stack[0];
}

static inline __attribute__((always_inline)) bool
row_guard_holds(ac_fsm *f, const ac_fsm_plan_row *pr, const ac_event *ev)
{
    if (pr->pred == AC_FSM_NONE)
        return true;
    if (pr->pred != AC_PLAN_GUARD_PROGRAM)
        return f->guards[pr->pred](f->ctx, ev);
    return guard_eval(f, pr->guard, ev);
}

static inline void run_list(ac_fsm *f, const uint16_t *l, const ac_event *ev)
{
    for (unsigned i = 1, n = l[0]; i <= n; i++)
        f->actions[l[i]](f->ctx, ev);
}

static inline void stop_effects(ac_fsm *f, const uint16_t *l)
{
    for (unsigned i = 1, n = l[0]; i <= n; i++)
        f->effect(f->ctx, l[i], 0, NULL);
}

static inline void start_effects(ac_fsm *f, const uint16_t *l, const ac_event *ev)
{
    for (unsigned i = 1, n = l[0]; i <= n; i++)
        f->effect(f->ctx, l[i], 1, ev);
}

/* The one-call table row of the deepest active state, or NULL when events
 * must take the general path (traced, failed). Called once a started
 * machine has settled; ac_fsm_stop clears it. */
static inline void refresh_fast(ac_fsm *f)
{
    f->fast = f->fast_base && f->depth && !f->error
                  ? f->fast_base + (size_t)f->state[f->depth - 1] * f->n_events
                  : NULL;
}

/* Leaves state s for good (its level goes away): exit actions, effects stop. */
static void leave_state(ac_fsm *f, uint16_t s, const ac_event *ev)
{
    run_list(f, f->lists + f->states[s].exit, ev);
    if (f->unstarted == s) { /* its effects never started: only those handed over run */
        f->unstarted = AC_FSM_NONE;
        stop_effects(f, f->unstarted_kept);
        f->unstarted_kept = empty_list;
        return;
    }
    stop_effects(f, f->lists + f->states[s].effects);
}

/* Stop every level >= `level`, deepest first. */
static void stop_levels(ac_fsm *f, uint8_t level, const ac_event *ev)
{
    while (f->depth > level) {
        uint8_t k = (uint8_t)(f->depth - 1);
        leave_state(f, f->state[k], ev);
        f->depth = k;
    }
}

static void enqueue(ac_fsm *f, uint16_t event, uint16_t machine, uint16_t state)
{
    if (f->qn == AC_FSM_QUEUE) {
        fail(f, machine, state, event, "internal event queue overflow");
        return;
    }
    f->queue[(f->qh + f->qn) % AC_FSM_QUEUE] = event;
    f->qn++;
}

/* An external row with nothing invoked on either side and no eventless rows
 * in the target, untraced: the plan lays its calls out one after the other.
 * `kept` NULL: an ordinary transition. Otherwise the row is an eventless step
 * out of a state just entered, whose own effects never started: only `kept`,
 * the uses handed over to it, run, and they stop after its exit actions. */
static inline __attribute__((always_inline)) void take_straight(ac_fsm *f, uint8_t level,
                                                                const ac_fsm_plan_row *pr,
                                                                const ac_event *ev,
                                                                const uint16_t *kept)
{
    const bool eventless = kept != NULL;
    const uint16_t *op = f->plan_lists + pr->run;
    ac_session *ctx = f->ctx;
    for (unsigned i = pr->n_exit; i; i--)
        f->actions[*op++](ctx, ev);
    if (eventless) {
        op += pr->n_stop;
        stop_effects(f, kept);
    } else
        for (unsigned i = pr->n_stop; i; i--)
            f->effect(ctx, *op++, 0, NULL);
    for (unsigned i = pr->n_actions; i; i--)
        f->actions[*op++](ctx, ev);
    f->state[level] = pr->target;
    f->entries++;
    if (!level && f->counted)
        f->counted_entries += f->counted[pr->target];
    for (unsigned i = pr->n_enter; i; i--)
        f->actions[*op++](ctx, ev);
    if (eventless)
        start_effects(f, f->plan_lists + pr->start_all, ev);
    else
        for (unsigned i = pr->n_start; i; i--)
            f->effect(ctx, *op++, 1, ev);
    if (level > 0 && pr->arrival != AC_FSM_NONE && !f->error)
        enqueue(f, pr->arrival, f->states[pr->target].machine, pr->target);
}

static void take(ac_fsm *f, uint8_t level, uint16_t row, const ac_event *ev);

/* Enters state s at `level`. `kept` lists the effect uses handed over by the
 * state just left (already running), `start` the uses to start if s stays. */
static void enter_state(ac_fsm *f, uint8_t level, uint16_t s, const ac_event *ev,
                        const uint16_t *enter, const uint16_t *kept, const uint16_t *start)
{
    const ac_fsm_state *st = &f->states[s];
    f->state[level] = s;
    f->entries++;
    if (!level && f->counted)
        f->counted_entries += f->counted[s];
    f->depth = (uint8_t)(level + 1);
    run_list(f, enter, ev);
    /* eventless transitions, in declared order */
    for (uint16_t row = f->plan->eventless[s]; row != AC_FSM_NONE;
         row = f->plan_rows[row].next_eventless) {
        const ac_fsm_plan_row *pr = &f->plan_rows[row];
        if (!row_guard_holds(f, pr, ev))
            continue;
        /* s is left before its effects start: the uses handed over to it
         * stop once its exit actions have run (or when the machine stops) */
        if (++f->microsteps > AC_FSM_MAX_MICROSTEPS) {
            f->unstarted = s;
            f->unstarted_kept = kept;
            fail(f, st->machine, s, AC_FSM_EVENTLESS,
                 "too many eventless steps in one dispatch (the limit is 64)");
            return;
        }
        if (pr->straight && !f->trace) {
            take_straight(f, level, pr, ev, kept);
        } else {
            f->unstarted = s;
            f->unstarted_kept = kept;
            take(f, level, row, ev);
        }
        return;
    }
    start_effects(f, start, ev);
    if (f->error)
        return;
    if (st->invoke != AC_FSM_NONE && level + 1 < AC_FSM_MAX_DEPTH) {
        uint16_t init = f->b->t->machines[st->invoke].initial;
        const ac_fsm_state *is = &f->states[init];
        trace(f, AC_TRACE_TRANSITION, st->invoke, AC_FSM_NONE, init, AC_FSM_EVENTLESS, AC_FSM_NONE,
              NULL);
        enter_state(f, (uint8_t)(level + 1), init, ev, f->lists + is->enter, empty_list,
                    f->lists + is->effects);
    }
    if (level > 0 && f->depth == level + 1 && f->plan->arrival[s] != AC_FSM_NONE)
        enqueue(f, f->plan->arrival[s], st->machine, s);
}

static void take(ac_fsm *f, uint8_t level, uint16_t row, const ac_event *ev)
{
    const ac_fsm_plan_row *pr = &f->plan_rows[row];
    const uint16_t *lists = f->plan_lists;
    uint16_t machine = f->states[pr->source].machine;
    if (pr->kind == AC_TR_INTERNAL) {
        trace(f, AC_TRACE_INTERNAL, machine, pr->source, pr->source, f->rows[row].event, row, NULL);
        run_list(f, lists + pr->actions, ev);
        return;
    }
    if (pr->kind == AC_TR_IGNORE) {
        trace(f, AC_TRACE_IGNORED, machine, pr->source, pr->source, f->rows[row].event, row, NULL);
        return;
    }
    /* external: machines invoked below go first, then the source is exited
     * with the effect plan worked out for this row */
    if (f->depth > level + 1)
        stop_levels(f, (uint8_t)(level + 1), ev);
    run_list(f, lists + pr->exit, ev);
    const uint16_t *kept = lists + pr->keep, *start = lists + pr->start;
    if (f->unstarted == pr->source) { /* its own effects never started */
        f->unstarted = AC_FSM_NONE;
        stop_effects(f, f->unstarted_kept); /* those handed over to it */
        f->unstarted_kept = empty_list;
        kept = empty_list;
        start = lists + pr->start_all;
    } else {
        stop_effects(f, lists + pr->stop);
    }
    trace(f, AC_TRACE_TRANSITION, machine, pr->source, pr->target, f->rows[row].event, row, NULL);
    run_list(f, lists + pr->actions, ev);
    enter_state(f, level, pr->target, ev, lists + pr->enter, kept, start);
}

/* Offers `event` to the active machines from level `top` up, deepest first. */
static inline __attribute__((always_inline)) int offer_from(ac_fsm *f, const ac_event *ev, int top)
{
    const ac_fsm_plan_row *rows = f->plan_rows;
    for (int level = top; level >= 0; level--) {
        uint16_t s = f->state[level];
        if (f->first_row) {
            /* terminal states have no rows, so their entries are empty */
            for (uint16_t row = f->first_row[(size_t)s * f->n_events + ev->type];
                 row != AC_FSM_NONE; row = f->next_row[row]) {
                const ac_fsm_plan_row *pr = &rows[row];
                if (!row_guard_holds(f, pr, ev))
                    continue;
                if (pr->straight && !f->trace)
                    take_straight(f, (uint8_t)level, pr, ev, NULL);
                else
                    take(f, (uint8_t)level, row, ev);
                return AC_FSM_HANDLED;
            }
            continue;
        }
        const ac_fsm_state *st = &f->states[s];
        if (st->terminal)
            continue; /* terminal states take no events */
        for (unsigned i = 0; i < st->n_transitions; i++) {
            uint16_t row = (uint16_t)(st->first_transition + i);
            if (f->rows[row].event != ev->type || !row_guard_holds(f, &rows[row], ev))
                continue;
            take(f, (uint8_t)level, row, ev);
            return AC_FSM_HANDLED;
        }
    }
    uint16_t deepest = f->depth ? f->state[f->depth - 1] : 0;
    trace(f, AC_TRACE_UNHANDLED, f->depth ? f->states[deepest].machine : f->b->t->root, deepest,
          deepest, ev->type, AC_FSM_NONE, NULL);
    return AC_FSM_UNHANDLED;
}

static inline __attribute__((always_inline)) int offer(ac_fsm *f, const ac_event *ev)
{
    return offer_from(f, ev, f->depth - 1);
}

static int drain(ac_fsm *f, const ac_event *ev)
{
    while (f->qn && !f->error) {
        ac_event inner = *ev;
        inner.type = f->queue[f->qh];
        inner.data = NULL;
        f->qh = (uint8_t)((f->qh + 1) % AC_FSM_QUEUE);
        f->qn--;
        f->microsteps = 0;
        offer(f, &inner);
    }
    return f->error ? AC_FSM_FAILED : AC_FSM_HANDLED;
}

void ac_fsm_init(ac_fsm *f, const ac_fsm_binding *b, ac_session *ctx, ac_trace_fn tr, void *ud)
{
    /* field by field: the state and queue arrays are only read below depth
     * and qn (a memset of the whole struct costs more than the rest) */
    static const ac_fsm_plan no_plan; /* a binding without a plan never starts */
    const ac_fsm_plan *p = b->plan ? b->plan : &no_plan;
    f->b = b;
    f->ctx = ctx;
    f->plan = b->plan;
    f->plan_rows = p->rows;
    f->plan_lists = p->lists;
    f->states = b->t->states;
    f->rows = b->t->transitions;
    f->lists = b->t->lists;
    f->first_row = p->first_row;
    f->next_row = p->next_row;
    f->fast_base = tr ? NULL : p->fast; /* a traced machine reports every step */
    f->fast = NULL;
    f->guards = b->guards;
    f->actions = b->actions;
    f->effect = b->effect;
    f->trace = tr;
    f->trace_ud = ud;
    f->n_events = b->t->n_events;
    f->depth = f->qn = f->qh = f->started = 0;
    f->microsteps = 0;
    f->unstarted = AC_FSM_NONE;
    f->unstarted_kept = empty_list;
    f->busy = 0;
    f->error = 0;
    f->counted = NULL;
    f->counted_entries = 0;
}

/* A handler called start, dispatch or stop on its own machine while one of
 * them runs: refused, and the machine fails (the session posts events to a
 * queue instead). */
static int reentered(ac_fsm *f)
{
    uint16_t deepest = f->depth ? f->state[f->depth - 1] : 0;
    fail(f, f->depth ? f->states[deepest].machine : f->b->t->root, deepest, AC_FSM_NONE,
         "the dispatcher was called from one of its handlers (post the event instead)");
    return AC_FSM_FAILED;
}

int ac_fsm_start(ac_fsm *f, const ac_event *ev)
{
    const ac_fsm_tables *t = f->b->t;
    if (f->busy)
        return reentered(f);
    if (f->started)
        return AC_FSM_HANDLED;
    if (!f->plan)
        return AC_FSM_FAILED; /* the binding lacks its plan (ac_fsm_plan_new) */
    f->busy = 1;
    f->started = 1;
    f->error = 0;
    f->microsteps = 0;
    uint16_t init = t->machines[t->root].initial;
    const ac_fsm_state *is = &f->states[init];
    trace(f, AC_TRACE_TRANSITION, t->root, AC_FSM_NONE, init, AC_FSM_EVENTLESS, AC_FSM_NONE, NULL);
    enter_state(f, 0, init, ev, f->lists + is->enter, empty_list, f->lists + is->effects);
    int rc = f->qn ? drain(f, ev) : (f->error ? AC_FSM_FAILED : AC_FSM_HANDLED);
    refresh_fast(f);
    f->busy = 0;
    return rc;
}

/* The general path: bubbling, guards, external transitions, arrival events. */
__attribute__((noinline)) static int dispatch_slow(ac_fsm *f, const ac_event *ev)
{
    if (f->busy)
        return reentered(f);
    if (!f->started || f->error)
        return AC_FSM_FAILED;
    if (ev->type >= f->n_events || ev->type == AC_FSM_EVENTLESS) {
        trace(f, AC_TRACE_UNHANDLED, f->b->t->root, f->state[0], f->state[0], ev->type, AC_FSM_NONE,
              NULL);
        return AC_FSM_UNHANDLED;
    }
    f->busy = 1;
    f->fast = NULL; /* a handler calling back lands in the check above */
    f->microsteps = 0;
    int rc = offer(f, ev);
    if (f->qn || f->error)
        rc = drain(f, ev) == AC_FSM_FAILED ? AC_FSM_FAILED : rc;
    refresh_fast(f);
    f->busy = 0;
    return rc;
}

/* The deepest state's rows for the event all take the straight path (the
 * fast table says so, which also means untraced, started and not failed):
 * the first whose guard holds is taken; if none does, the event bubbles to
 * the levels above as usual. */
__attribute__((noinline)) static int dispatch_straight(ac_fsm *f, uint16_t row, const ac_event *ev)
{
    int level = f->depth - 1, rc = AC_FSM_HANDLED;
    f->busy = 1;
    f->fast = NULL; /* a handler calling back lands in dispatch_slow's check */
    f->microsteps = 0;
    for (; row != AC_FSM_NONE; row = f->next_row[row]) {
        const ac_fsm_plan_row *pr = &f->plan_rows[row];
        if (row_guard_holds(f, pr, ev)) {
            take_straight(f, (uint8_t)level, pr, ev, NULL);
            if (f->qn || f->error)
                goto settle;
            f->fast = f->fast_base + pr->fast_row; /* the target is the deepest state */
            f->busy = 0;
            return AC_FSM_HANDLED;
        }
    }
    rc = offer_from(f, ev, level - 1);
settle:
    if (f->qn || f->error)
        rc = drain(f, ev) == AC_FSM_FAILED ? AC_FSM_FAILED : rc;
    refresh_fast(f);
    f->busy = 0;
    return rc;
}

int ac_fsm_dispatch(ac_fsm *f, const ac_event *ev)
{
    /* The commonest events, found with one load in the plan's fast table for
     * the deepest state: an unguarded internal transition with one action
     * (streamed deltas and the like) is one call; rows that all take the
     * straight path skip the general checks. */
    const uint32_t *fast = f->fast;
    if (fast && ev->type < f->n_events) {
        uint32_t e = fast[ev->type];
        if (e & AC_PLAN_FAST_CALL) {
            f->actions[e & AC_PLAN_FAST_ARG](f->ctx, ev);
            return AC_FSM_HANDLED;
        }
        if (e)
            return dispatch_straight(f, (uint16_t)(e & AC_PLAN_FAST_ARG), ev);
    }
    return dispatch_slow(f, ev);
}

void ac_fsm_stop(ac_fsm *f, const ac_event *ev)
{
    if (f->busy) {
        reentered(f);
        return;
    }
    if (!f->started)
        return;
    f->busy = 1;
    f->fast = NULL;
    stop_levels(f, 0, ev);
    f->started = 0;
    f->busy = 0;
}

uint16_t ac_fsm_state_of(const ac_fsm *f, uint16_t machine)
{
    for (uint8_t i = 0; i < f->depth; i++)
        if (f->b->t->states[f->state[i]].machine == machine)
            return f->state[i];
    return AC_FSM_NONE;
}

/* Whether `event` is "machine.state" (compared in place: names have no
 * length limit). */
static bool is_arrival_name(const char *event, const char *machine, const char *state)
{
    size_t m = strlen(machine);
    return strncmp(event, machine, m) == 0 && event[m] == '.' && strcmp(event + m + 1, state) == 0;
}

int ac_fsm_restore(ac_fsm *f, const uint16_t *state, uint8_t depth, uint32_t entries)
{
    const ac_fsm_tables *t = f->b->t;
    if (f->busy || !depth || depth > AC_FSM_MAX_DEPTH)
        return AC_FSM_FAILED;
    for (uint8_t i = 0; i < depth; i++) {
        uint16_t m = i ? f->states[state[i - 1]].invoke : t->root;
        if (state[i] >= t->n_states || f->states[state[i]].machine != m)
            return AC_FSM_FAILED;
    }
    memcpy(f->state, state, depth * sizeof *state);
    f->depth = depth;
    f->entries = entries;
    f->started = 1;
    f->error = 0;
    f->qn = f->qh = 0;
    f->unstarted = AC_FSM_NONE;
    f->unstarted_kept = empty_list;
    refresh_fast(f);
    return AC_FSM_HANDLED;
}

void ac_fsm_arrival_events(const ac_fsm_tables *t, uint16_t *out)
{
    for (uint16_t s = 0; s < t->n_states; s++) {
        out[s] = AC_FSM_NONE;
        if (!t->states[s].terminal)
            continue;
        const char *machine = t->machines[t->states[s].machine].name;
        for (uint16_t e = 1; e < t->n_events; e++)
            if (is_arrival_name(t->event_names[e], machine, t->states[s].name))
                out[s] = e;
    }
}
