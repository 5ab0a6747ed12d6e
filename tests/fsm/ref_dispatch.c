/*
 * ref_dispatch.c - the reference dispatcher (ref_dispatch.h).
 *
 * Kept deliberately plain: every rule is applied where it is described,
 * with nothing precomputed. Effect uses carried from a source to its target
 * are paired one to one (the first unpaired equal use of the target).
 */
#include <stdlib.h>
#include <string.h>

#include "ref_dispatch.h"

static void fail(ref_fsm *f)
{
    f->error = 1;
}

static bool guard_eval(ref_fsm *f, uint16_t off, const ac_event *ev)
{
    if (off == AC_FSM_NONE)
        return true;
    const uint16_t *code = f->t->guard_code + off;
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

static void run_list(ref_fsm *f, uint16_t off, const ac_event *ev)
{
    const uint16_t *l = f->t->lists + off;
    for (unsigned i = 1; i <= l[0]; i++)
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
    for (unsigned i = 1; i <= la[0]; i++)
        if (la[i] != lb[i])
            return false;
    return true;
}

static bool carried(const ref_fsm *f, uint16_t use)
{
    for (size_t c = 0; c < f->n_carry; c++)
        if (f->carry[c] == use)
            return true;
    return false;
}

/* Exit state s; `next` is the target of the transition, or NONE when the
 * whole level goes away. A use equal to an unpaired use of `next` keeps
 * running (handed over); the others stop. */
static void exit_state(ref_fsm *f, uint16_t s, uint16_t next, const ac_event *ev)
{
    const ac_fsm_tables *t = f->t;
    run_list(f, t->states[s].exit, ev);
    if (f->unstarted == s) { /* its own effects never started; those handed over did */
        f->unstarted = AC_FSM_NONE;
        for (size_t c = 0; c < f->n_pending; c++)
            f->effect(f->ctx, f->pending[c], 0, NULL);
        f->n_pending = 0;
        return;
    }
    const uint16_t *l = t->lists + t->states[s].effects;
    for (unsigned i = 1; i <= l[0]; i++) {
        uint16_t keep = AC_FSM_NONE;
        if (next != AC_FSM_NONE && next != s) {
            const uint16_t *n = t->lists + t->states[next].effects;
            for (unsigned j = 1; j <= n[0] && keep == AC_FSM_NONE; j++)
                if (same_use(t, l[i], n[j]) && !carried(f, n[j]))
                    keep = n[j];
        }
        if (keep != AC_FSM_NONE) {
            f->carry[f->n_carry++] = keep;
            continue;
        }
        f->effect(f->ctx, l[i], 0, NULL);
    }
}

static void stop_levels(ref_fsm *f, uint8_t level, const ac_event *ev)
{
    while (f->depth > level) {
        uint8_t k = (uint8_t)(f->depth - 1);
        exit_state(f, f->state[k], AC_FSM_NONE, ev);
        f->depth = k;
    }
}

static void enqueue(ref_fsm *f, uint16_t event)
{
    if (f->qn == AC_FSM_QUEUE) {
        fail(f);
        return;
    }
    f->queue[(f->qh + f->qn) % AC_FSM_QUEUE] = event;
    f->qn++;
}

static void take(ref_fsm *f, uint8_t level, uint16_t row, const ac_event *ev);

static void enter_state(ref_fsm *f, uint8_t level, uint16_t s, const ac_event *ev)
{
    const ac_fsm_tables *t = f->t;
    const ac_fsm_state *st = &t->states[s];
    f->state[level] = s;
    f->depth = (uint8_t)(level + 1);
    run_list(f, st->enter, ev);
    for (unsigned i = 0; i < st->n_transitions; i++) {
        uint16_t row = (uint16_t)(st->first_transition + i);
        const ac_fsm_transition *tr = &t->transitions[row];
        if (tr->event != AC_FSM_EVENTLESS || tr->kind != AC_TR_EXTERNAL)
            continue;
        if (!guard_eval(f, tr->guard, ev))
            continue;
        /* s is left before its effects start: the uses handed over to it
         * stop when it is left, after its exit actions */
        memcpy(f->pending, f->carry, f->n_carry * sizeof *f->carry);
        f->n_pending = f->n_carry;
        f->n_carry = 0;
        f->unstarted = s;
        if (++f->microsteps > AC_FSM_MAX_MICROSTEPS) {
            fail(f);
            return;
        }
        take(f, level, row, ev);
        return;
    }
    const uint16_t *l = t->lists + st->effects;
    for (unsigned i = 1; i <= l[0]; i++)
        if (!carried(f, l[i]))
            f->effect(f->ctx, l[i], 1, ev);
    f->n_carry = 0;
    if (f->error)
        return;
    if (st->invoke != AC_FSM_NONE && level + 1 < AC_FSM_MAX_DEPTH)
        enter_state(f, (uint8_t)(level + 1), t->machines[st->invoke].initial, ev);
    if (st->terminal && level > 0 && f->depth == level + 1 && f->arrival[s] != AC_FSM_NONE)
        enqueue(f, f->arrival[s]);
}

static void take(ref_fsm *f, uint8_t level, uint16_t row, const ac_event *ev)
{
    const ac_fsm_transition *tr = &f->t->transitions[row];
    if (tr->kind == AC_TR_INTERNAL) {
        run_list(f, tr->actions, ev);
        return;
    }
    if (tr->kind == AC_TR_IGNORE)
        return;
    stop_levels(f, (uint8_t)(level + 1), ev);
    f->n_carry = 0;
    exit_state(f, tr->source, tr->target, ev);
    run_list(f, tr->actions, ev);
    enter_state(f, level, tr->target, ev);
}

static int offer(ref_fsm *f, const ac_event *ev)
{
    const ac_fsm_tables *t = f->t;
    for (int level = f->depth - 1; level >= 0; level--) {
        const ac_fsm_state *st = &t->states[f->state[level]];
        if (st->terminal)
            continue;
        for (unsigned i = 0; i < st->n_transitions; i++) {
            uint16_t row = (uint16_t)(st->first_transition + i);
            const ac_fsm_transition *tr = &t->transitions[row];
            if (tr->event != ev->type || !guard_eval(f, tr->guard, ev))
                continue;
            take(f, (uint8_t)level, row, ev);
            return AC_FSM_HANDLED;
        }
    }
    return AC_FSM_UNHANDLED;
}

static int drain(ref_fsm *f, const ac_event *ev)
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

int ref_fsm_init(ref_fsm *f, const ac_fsm_tables *t, const ac_guard_fn *guards,
                 const ac_action_fn *actions, ac_effect_fn effect, ac_session *ctx)
{
    memset(f, 0, sizeof *f);
    f->t = t;
    f->guards = guards;
    f->actions = actions;
    f->effect = effect;
    f->ctx = ctx;
    f->unstarted = AC_FSM_NONE;
    size_t most = 0; /* the largest effect list: room for what is handed over */
    for (uint16_t s = 0; s < t->n_states; s++)
        if (t->lists[t->states[s].effects] > most)
            most = t->lists[t->states[s].effects];
    f->arrival = calloc(t->n_states + 1u, sizeof *f->arrival);
    f->carry = calloc(most + 1, sizeof *f->carry);
    f->pending = calloc(most + 1, sizeof *f->pending);
    if (!f->arrival || !f->carry || !f->pending) {
        ref_fsm_free(f);
        return -1;
    }
    ac_fsm_arrival_events(t, f->arrival);
    return 0;
}

void ref_fsm_free(ref_fsm *f)
{
    free(f->arrival);
    free(f->carry);
    free(f->pending);
    f->arrival = NULL;
    f->carry = f->pending = NULL;
}

int ref_fsm_start(ref_fsm *f, const ac_event *ev)
{
    if (f->started)
        return AC_FSM_HANDLED;
    f->started = 1;
    f->error = 0;
    f->microsteps = 0;
    enter_state(f, 0, f->t->machines[f->t->root].initial, ev);
    return drain(f, ev);
}

int ref_fsm_dispatch(ref_fsm *f, const ac_event *ev)
{
    if (!f->started || f->error)
        return AC_FSM_FAILED;
    if (ev->type >= f->t->n_events || ev->type == AC_FSM_EVENTLESS)
        return AC_FSM_UNHANDLED;
    f->microsteps = 0;
    int rc = offer(f, ev);
    if (f->qn || f->error)
        return drain(f, ev) == AC_FSM_FAILED ? AC_FSM_FAILED : rc;
    return rc;
}

void ref_fsm_stop(ref_fsm *f, const ac_event *ev)
{
    if (!f->started)
        return;
    stop_levels(f, 0, ev);
    f->started = 0;
}
