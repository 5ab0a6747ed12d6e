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
 */
#include <stdio.h>
#include <string.h>

#include "agentc/fsm.h"

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
    trace(f, AC_TRACE_ERROR, machine, state, state, event, AC_FSM_NONE, msg);
}

static bool guard_eval(ac_fsm *f, uint16_t off, const ac_event *ev);

static inline bool guard_holds(ac_fsm *f, uint16_t off, const ac_event *ev)
{
    return off == AC_FSM_NONE || guard_eval(f, off, ev);
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
            stack[sp++] = f->b->guards[op & AC_G_ARGMASK](f->ctx, ev);
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

static inline void run_list(ac_fsm *f, uint16_t off, const ac_event *ev)
{
    const uint16_t *l = f->lists + off;
    for (uint16_t i = 1; i <= l[0]; i++)
        f->actions[l[i]](f->ctx, ev);
}

static bool same_use(const ac_fsm_tables *t, uint16_t a, uint16_t b)
{
    const ac_fsm_effect_use *x = &t->effect_uses[a], *y = &t->effect_uses[b];
    if (x->effect != y->effect)
        return false;
    const uint16_t *la = t->lists + x->args, *lb = t->lists + y->args;
    if (la[0] != lb[0])
        return false;
    for (uint16_t i = 1; i <= la[0]; i++)
        if (la[i] != lb[i])
            return false;
    return true;
}

/* Does state `s` declare an effect use equal to `use`? Returns its use or NONE. */
static uint16_t find_use(const ac_fsm_tables *t, uint16_t s, uint16_t use)
{
    const uint16_t *l = t->lists + t->states[s].effects;
    for (uint16_t i = 1; i <= l[0]; i++)
        if (same_use(t, l[i], use))
            return l[i];
    return AC_FSM_NONE;
}

/* Exit state s; `next` is the target state of the transition, or NONE when
 * the whole level goes away. Effects shared with `next` are carried. */
static void exit_state(ac_fsm *f, uint16_t s, uint16_t next, const ac_event *ev)
{
    const ac_fsm_tables *t = f->b->t;
    const ac_fsm_state *st = &t->states[s];
    run_list(f, st->exit, ev);
    if (f->unstarted == s) { /* left by an eventless step: its effects never started */
        f->unstarted = AC_FSM_NONE;
        return;
    }
    const uint16_t *l = t->lists + st->effects;
    for (uint16_t i = 1; i <= l[0]; i++) {
        uint16_t keep = (next != AC_FSM_NONE && next != s) ? find_use(t, next, l[i]) : AC_FSM_NONE;
        if (keep != AC_FSM_NONE && f->n_carry < 8) {
            f->carry[f->n_carry++] = keep;
            continue;
        }
        f->b->effect(f->ctx, l[i], 0, NULL);
    }
}

/* Stop every level >= `level`, deepest first (no carrying). */
static void stop_levels(ac_fsm *f, uint8_t level, const ac_event *ev)
{
    while (f->depth > level) {
        uint8_t k = (uint8_t)(f->depth - 1);
        exit_state(f, f->state[k], AC_FSM_NONE, ev);
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

static void take(ac_fsm *f, uint8_t level, uint16_t row, const ac_event *ev);

static void enter_state(ac_fsm *f, uint8_t level, uint16_t s, const ac_event *ev)
{
    const ac_fsm_tables *t = f->b->t;
    const ac_fsm_state *st = &t->states[s];
    f->state[level] = s;
    f->depth = (uint8_t)(level + 1);
    if (f->first_row)
        f->level_index[level] = f->first_row + (size_t)s * f->n_events;
    run_list(f, st->enter, ev);
    /* eventless transitions, in declared order (the index chains exactly
     * those rows; without it the state's rows are scanned) */
    uint16_t scan = 0;
    uint16_t row = f->first_row ? f->level_index[level][AC_FSM_EVENTLESS] : AC_FSM_NONE;
    for (;;) {
        if (f->first_row) {
            if (row == AC_FSM_NONE)
                break;
        } else {
            if (scan >= st->n_transitions)
                break;
            row = (uint16_t)(st->first_transition + scan++);
        }
        const ac_fsm_transition *tr = &t->transitions[row];
        uint16_t this_row = row;
        if (f->first_row)
            row = f->next_row[row];
        if (tr->event != AC_FSM_EVENTLESS || tr->kind != AC_TR_EXTERNAL)
            continue;
        if (!guard_holds(f, tr->guard, ev))
            continue;
        if (++f->microsteps > AC_FSM_MAX_MICROSTEPS) {
            fail(f, st->machine, s, AC_FSM_EVENTLESS,
                 "too many eventless steps in one dispatch (the limit is 64)");
            return;
        }
        /* carried effects were meant for this state: it is being left
         * before starting them, so they stop now */
        for (uint8_t c = 0; c < f->n_carry; c++)
            f->b->effect(f->ctx, f->carry[c], 0, NULL);
        f->n_carry = 0;
        f->unstarted = s;
        take(f, level, this_row, ev);
        return;
    }
    const uint16_t *l = t->lists + st->effects;
    for (uint16_t i = 1; i <= l[0]; i++) {
        bool carried = false;
        for (uint8_t c = 0; c < f->n_carry; c++)
            carried |= f->carry[c] == l[i];
        if (!carried)
            f->b->effect(f->ctx, l[i], 1, ev);
    }
    f->n_carry = 0;
    if (f->error)
        return;
    if (st->invoke != AC_FSM_NONE && level + 1 < AC_FSM_MAX_DEPTH) {
        const ac_fsm_machine *child = &t->machines[st->invoke];
        trace(f, AC_TRACE_TRANSITION, st->invoke, AC_FSM_NONE, child->initial, AC_FSM_EVENTLESS,
              AC_FSM_NONE, NULL);
        enter_state(f, (uint8_t)(level + 1), child->initial, ev);
    }
    if (st->terminal && level > 0 && f->depth == level + 1 && f->b->arrival_event[s] != AC_FSM_NONE)
        enqueue(f, f->b->arrival_event[s], st->machine, s);
}

static void take(ac_fsm *f, uint8_t level, uint16_t row, const ac_event *ev)
{
    const ac_fsm_transition *tr = &f->rows[row];
    if (tr->kind == AC_TR_INTERNAL) { /* the hot path: deltas and the like */
        trace(f, AC_TRACE_INTERNAL, f->states[tr->source].machine, tr->source, tr->source,
              tr->event, row, NULL);
        run_list(f, tr->actions, ev);
        return;
    }
    uint16_t machine = f->states[tr->source].machine;
    if (tr->kind == AC_TR_IGNORE) {
        trace(f, AC_TRACE_IGNORED, machine, tr->source, tr->source, tr->event, row, NULL);
        return;
    }
    stop_levels(f, (uint8_t)(level + 1), ev);
    f->n_carry = 0;
    exit_state(f, tr->source, tr->target, ev);
    trace(f, AC_TRACE_TRANSITION, machine, tr->source, tr->target, tr->event, row, NULL);
    run_list(f, tr->actions, ev);
    enter_state(f, level, tr->target, ev);
}

/* Offers `event` to the active machines, deepest first. */
static int offer(ac_fsm *f, const ac_event *ev)
{
    const ac_fsm_tables *t = f->t;
    if (f->first_row) {
        /* indexed: terminal states have no rows, so their entries are empty */
        for (int level = f->depth - 1; level >= 0; level--) {
            for (uint16_t row = f->level_index[level][ev->type]; row != AC_FSM_NONE;
                 row = f->next_row[row]) {
                const ac_fsm_transition *tr = &f->rows[row];
                if (!guard_holds(f, tr->guard, ev))
                    continue;
                take(f, (uint8_t)level, row, ev);
                return AC_FSM_HANDLED;
            }
        }
        goto unhandled;
    }
    for (int level = f->depth - 1; level >= 0; level--) {
        uint16_t s = f->state[level];
        const ac_fsm_state *st = &f->states[s];
        if (st->terminal)
            continue; /* terminal states take no events */
        for (uint16_t i = 0; i < st->n_transitions; i++) {
            uint16_t row = (uint16_t)(st->first_transition + i);
            const ac_fsm_transition *tr = &t->transitions[row];
            if (tr->event != ev->type || !guard_holds(f, tr->guard, ev))
                continue;
            take(f, (uint8_t)level, row, ev);
            return AC_FSM_HANDLED;
        }
    }
unhandled:;
    uint16_t deepest = f->depth ? f->state[f->depth - 1] : 0;
    trace(f, AC_TRACE_UNHANDLED, f->depth ? t->states[deepest].machine : t->root, deepest, deepest,
          ev->type, AC_FSM_NONE, NULL);
    return AC_FSM_UNHANDLED;
}

void ac_fsm_fast_actions(const ac_fsm_tables *t, uint16_t *fast_action)
{
    for (uint16_t r = 0; r < t->n_transitions; r++) {
        const ac_fsm_transition *tr = &t->transitions[r];
        fast_action[r] =
            tr->kind == AC_TR_INTERNAL && tr->guard == AC_FSM_NONE && t->lists[tr->actions] == 1
                ? t->lists[tr->actions + 1]
                : AC_FSM_NONE;
    }
}

size_t ac_fsm_index_entries(const ac_fsm_tables *t)
{
    size_t n = (size_t)t->n_states * t->n_events;
    return n <= ((size_t)1 << 20) ? n : 0;
}

void ac_fsm_index_build(const ac_fsm_tables *t, uint16_t *first_row, uint16_t *next_row)
{
    size_t n = ac_fsm_index_entries(t);
    for (size_t i = 0; i < n; i++)
        first_row[i] = AC_FSM_NONE;
    /* walk rows backwards so each chain ends up in declaration order */
    for (uint16_t r = t->n_transitions; r-- > 0;) {
        const ac_fsm_transition *tr = &t->transitions[r];
        size_t k = (size_t)tr->source * t->n_events + tr->event;
        next_row[r] = n ? first_row[k] : AC_FSM_NONE;
        if (n)
            first_row[k] = r;
    }
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
    memset(f, 0, sizeof *f);
    f->b = b;
    f->ctx = ctx;
    f->trace = tr;
    f->trace_ud = ud;
    f->unstarted = AC_FSM_NONE;
    f->t = b->t;
    f->states = b->t->states;
    f->rows = b->t->transitions;
    f->lists = b->t->lists;
    f->first_row = b->first_row;
    f->next_row = b->next_row;
    f->fast_action = b->first_row ? b->fast_action : NULL;
    f->actions = b->actions;
    f->n_events = b->t->n_events;
}

int ac_fsm_start(ac_fsm *f, const ac_event *ev)
{
    const ac_fsm_tables *t = f->b->t;
    if (f->started)
        return AC_FSM_HANDLED;
    f->started = 1;
    f->error = 0;
    f->microsteps = 0;
    uint16_t init = t->machines[t->root].initial;
    trace(f, AC_TRACE_TRANSITION, t->root, AC_FSM_NONE, init, AC_FSM_EVENTLESS, AC_FSM_NONE, NULL);
    enter_state(f, 0, init, ev);
    return drain(f, ev);
}

/* The general path: bubbling, guards, external transitions, arrival events. */
__attribute__((noinline)) static int dispatch_slow(ac_fsm *f, const ac_event *ev)
{
    if (!f->started || f->error)
        return AC_FSM_FAILED;
    if (ev->type >= f->n_events || ev->type == AC_FSM_EVENTLESS) {
        trace(f, AC_TRACE_UNHANDLED, f->t->root, f->state[0], f->state[0], ev->type, AC_FSM_NONE,
              NULL);
        return AC_FSM_UNHANDLED;
    }
    f->microsteps = 0;
    int rc = offer(f, ev);
    if (f->qn || f->error)
        return drain(f, ev) == AC_FSM_FAILED ? AC_FSM_FAILED : rc;
    return rc;
}

int ac_fsm_dispatch(ac_fsm *f, const ac_event *ev)
{
    /* Fast path for the most frequent case (streamed deltas and the like):
     * the deepest state has an unguarded internal transition for the event.
     * Only actions run: no state change, no arrival event, nothing to drain. */
    if (f->first_row && f->depth && !f->error && ev->type < f->n_events &&
        ev->type != AC_FSM_EVENTLESS) {
        uint16_t row = f->level_index[f->depth - 1][ev->type];
        if (row != AC_FSM_NONE && f->fast_action && !f->trace) {
            uint16_t a = f->fast_action[row];
            if (a != AC_FSM_NONE) {
                f->actions[a](f->ctx, ev);
                return AC_FSM_HANDLED;
            }
        }
        if (row != AC_FSM_NONE) {
            const ac_fsm_transition *tr = &f->rows[row];
            if (tr->kind == AC_TR_INTERNAL && tr->guard == AC_FSM_NONE) {
                if (f->trace)
                    trace_emit(f, AC_TRACE_INTERNAL, f->states[tr->source].machine, tr->source,
                               tr->source, tr->event, row, NULL);
                run_list(f, tr->actions, ev);
                return AC_FSM_HANDLED;
            }
        }
    }
    return dispatch_slow(f, ev);
}

void ac_fsm_stop(ac_fsm *f, const ac_event *ev)
{
    if (!f->started)
        return;
    stop_levels(f, 0, ev);
    f->started = 0;
}

uint16_t ac_fsm_state_of(const ac_fsm *f, uint16_t machine)
{
    for (uint8_t i = 0; i < f->depth; i++)
        if (f->b->t->states[f->state[i]].machine == machine)
            return f->state[i];
    return AC_FSM_NONE;
}

void ac_fsm_arrival_events(const ac_fsm_tables *t, uint16_t *out)
{
    char name[512];
    for (uint16_t s = 0; s < t->n_states; s++) {
        out[s] = AC_FSM_NONE;
        if (!t->states[s].terminal)
            continue;
        snprintf(name, sizeof name, "%s.%s", t->machines[t->states[s].machine].name,
                 t->states[s].name);
        for (uint16_t e = 1; e < t->n_events; e++)
            if (strcmp(t->event_names[e], name) == 0)
                out[s] = e;
    }
}
