/*
 * plan.c - building the dispatcher's plan from a spec's tables (plan.h).
 */
#include <stdlib.h>

#include "fsm/plan.h"

/* Largest dense index, in entries (2 bytes each, twice: rows and actions). */
#define PLAN_MAX_INDEX ((size_t)1 << 20)

static const uint16_t *list_at(const ac_fsm_tables *t, uint16_t off)
{
    return t->lists + off;
}

static int same_use(const ac_fsm_tables *t, uint16_t a, uint16_t b)
{
    const ac_fsm_effect_use *x = &t->effect_uses[a], *y = &t->effect_uses[b];
    if (x->effect != y->effect)
        return 0;
    const uint16_t *la = list_at(t, x->args), *lb = list_at(t, y->args);
    if (la[0] != lb[0])
        return 0;
    for (unsigned i = 1; i <= la[0]; i++)
        if (la[i] != lb[i])
            return 0;
    return 1;
}

static int in_list(const uint16_t *l, uint16_t v)
{
    for (unsigned i = 1; i <= l[0]; i++)
        if (l[i] == v)
            return 1;
    return 0;
}

/* Count-prefixed lists built one after the other in one array. */
typedef struct builder {
    uint16_t *lists;
    size_t n;
} builder;

static uint32_t open_list(builder *b)
{
    b->lists[b->n] = 0;
    return (uint32_t)b->n++;
}

static void push(builder *b, uint32_t off, uint16_t v)
{
    b->lists[b->n++] = v;
    b->lists[off]++;
}

/* An empty list gives its slot back and shares the empty list at 0. */
static uint32_t close_list(builder *b, uint32_t off)
{
    if (b->lists[off] == 0) {
        b->n = off;
        return 0;
    }
    return off;
}

static uint32_t copy_list(builder *b, const uint16_t *l)
{
    uint32_t off = open_list(b);
    for (unsigned i = 1; i <= l[0]; i++)
        push(b, off, l[i]);
    return close_list(b, off);
}

static int has_eventless(const ac_fsm_tables *t, uint16_t s)
{
    const ac_fsm_state *st = &t->states[s];
    for (unsigned i = 0; i < st->n_transitions; i++)
        if (t->transitions[st->first_transition + i].event == AC_FSM_EVENTLESS)
            return 1;
    return 0;
}

/* The record of row r. Effects: each source use is paired with the first
 * unpaired equal use of the target (same effect, same params): paired ones
 * keep running (the target's use is recorded in keep), the others stop;
 * target uses left unpaired start. A self-transition restarts everything.
 * `paired` is scratch with room for the largest effect list. */
static void plan_row(const ac_fsm_tables *t, ac_fsm_plan *p, builder *b, uint16_t r,
                     const uint16_t *arrival, uint16_t *paired)
{
    const ac_fsm_transition *tr = &t->transitions[r];
    ac_fsm_plan_row *pr = &p->rows[r];
    const ac_fsm_state *ss = &t->states[tr->source], *ts = &t->states[tr->target];
    pr->source = tr->source;
    pr->target = tr->target;
    pr->guard = tr->guard;
    pr->kind = tr->kind;
    pr->pred = AC_FSM_NONE;
    if (tr->guard != AC_FSM_NONE) {
        const uint16_t *code = t->guard_code + tr->guard;
        pr->pred = (code[0] & AC_G_OPMASK) == AC_G_PRED && code[1] == AC_G_END
                       ? (uint16_t)(code[0] & AC_G_ARGMASK)
                       : AC_PLAN_GUARD_PROGRAM;
    }
    pr->actions = copy_list(b, list_at(t, tr->actions));
    pr->arrival = AC_FSM_NONE;
    if (tr->kind != AC_TR_EXTERNAL)
        return;
    pr->arrival = arrival[tr->target];
    pr->straight =
        ss->invoke == AC_FSM_NONE && ts->invoke == AC_FSM_NONE && !has_eventless(t, tr->target);
    pr->exit = copy_list(b, list_at(t, ss->exit));
    pr->enter = copy_list(b, list_at(t, ts->enter));
    pr->start_all = copy_list(b, list_at(t, ts->effects));
    const uint16_t *src = list_at(t, ss->effects);
    const uint16_t *dst = list_at(t, ts->effects);
    uint32_t keep = open_list(b);
    for (unsigned i = 1; i <= src[0]; i++) {
        paired[i] = AC_FSM_NONE;
        if (tr->target == tr->source)
            continue;
        for (unsigned j = 1; j <= dst[0]; j++)
            if (same_use(t, src[i], dst[j]) && !in_list(&b->lists[keep], dst[j])) {
                paired[i] = dst[j];
                push(b, keep, dst[j]);
                break;
            }
    }
    pr->keep = close_list(b, keep);
    uint32_t stop = open_list(b);
    for (unsigned i = 1; i <= src[0]; i++)
        if (paired[i] == AC_FSM_NONE)
            push(b, stop, src[i]);
    pr->stop = close_list(b, stop);
    uint32_t start = open_list(b);
    for (unsigned j = 1; j <= dst[0]; j++)
        if (!in_list(&b->lists[pr->keep], dst[j]))
            push(b, start, dst[j]);
    pr->start = close_list(b, start);
    if (!pr->straight)
        return;
    const uint16_t *parts[5] = {list_at(t, ss->exit), &b->lists[pr->stop], list_at(t, tr->actions),
                                list_at(t, ts->enter), &b->lists[pr->start]};
    uint8_t *counts[5] = {&pr->n_exit, &pr->n_stop, &pr->n_actions, &pr->n_enter, &pr->n_start};
    for (int k = 0; k < 5; k++)
        if (parts[k][0] > 255)
            pr->straight = 0;
    if (!pr->straight)
        return;
    pr->run = (uint32_t)b->n;
    pr->fast_row = (uint32_t)tr->target * t->n_events;
    for (int k = 0; k < 5; k++) {
        *counts[k] = (uint8_t)parts[k][0];
        for (unsigned i = 1; i <= parts[k][0]; i++)
            b->lists[b->n++] = parts[k][i];
    }
}

static ac_fsm_plan *plan_new(const ac_fsm_tables *t, int dense)
{
    ac_fsm_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    size_t nrows = t->n_transitions, idx = (size_t)t->n_states * t->n_events;
    if (idx > PLAN_MAX_INDEX)
        dense = 0;
    p->n_events = t->n_events;
    /* room for the lists of a row, each with its count: its actions, the
     * source's exit actions, the target's entry actions, the effect lists
     * (keep, stop, start, start_all: at most twice the source's and the
     * target's uses); the straight run repeats the actions and effects once
     * more; the empty list at 0 */
    size_t room = 1, most = 0;
    for (size_t r = 0; r < nrows; r++) {
        const ac_fsm_transition *tr = &t->transitions[r];
        const ac_fsm_state *ss = &t->states[tr->source], *ts = &t->states[tr->target];
        room +=
            7u +
            2u * (list_at(t, tr->actions)[0] + list_at(t, ss->exit)[0] + list_at(t, ts->enter)[0]) +
            3u * (list_at(t, ss->effects)[0] + list_at(t, ts->effects)[0]);
    }
    if (room > UINT32_MAX) { /* offsets are 32-bit */
        free(p);
        return NULL;
    }
    for (size_t s = 0; s < t->n_states; s++)
        if (list_at(t, t->states[s].effects)[0] > most)
            most = list_at(t, t->states[s].effects)[0];
    uint16_t *paired = calloc(most + 1, sizeof *paired);
    uint16_t *arrival = p->arrival = calloc(t->n_states + 1u, sizeof *arrival);
    p->rows = calloc(nrows + 1, sizeof *p->rows);
    p->eventless = calloc(t->n_states + 1u, sizeof *p->eventless);
    p->lists = calloc(room, sizeof *p->lists);
    if (dense) {
        p->first_row = calloc(idx + 1, sizeof *p->first_row);
        p->next_row = calloc(nrows + 1, sizeof *p->next_row);
        p->fast = calloc(idx + 1, sizeof *p->fast);
    }
    if (!paired || !arrival || !p->rows || !p->eventless || !p->lists ||
        (dense && (!p->first_row || !p->next_row || !p->fast))) {
        free(paired);
        ac_fsm_plan_free(p);
        return NULL;
    }
    ac_fsm_arrival_events(t, arrival); /* NONE but for terminal states */
    builder b = {p->lists, 1};
    for (size_t r = 0; r < nrows; r++)
        plan_row(t, p, &b, (uint16_t)r, arrival, paired);
    free(paired);
    /* eventless rows (only external ones are ever taken), chained
     * backwards so each chain is in declared order */
    for (size_t st = 0; st < t->n_states; st++)
        p->eventless[st] = AC_FSM_NONE;
    for (size_t r = nrows; r-- > 0;) {
        const ac_fsm_transition *tr = &t->transitions[r];
        p->rows[r].next_eventless = AC_FSM_NONE;
        if (tr->event != AC_FSM_EVENTLESS || tr->kind != AC_TR_EXTERNAL)
            continue;
        p->rows[r].next_eventless = p->eventless[tr->source];
        p->eventless[tr->source] = (uint16_t)r;
    }
    if (!dense)
        return p;
    for (size_t i = 0; i < idx; i++) {
        p->first_row[i] = AC_FSM_NONE;
        p->fast[i] = 0;
    }
    /* walk rows backwards so each chain ends up in declaration order */
    for (size_t r = nrows; r-- > 0;) {
        const ac_fsm_transition *tr = &t->transitions[r];
        size_t k = (size_t)tr->source * t->n_events + tr->event;
        p->next_row[r] = p->first_row[k];
        p->first_row[k] = (uint16_t)r;
    }
    /* the commonest events (never for the eventless slot): the first row for
     * (state, event) is an unguarded internal transition with one action;
     * or every row for it takes the straight path */
    for (size_t k = 0; k < idx; k++) {
        uint16_t r = p->first_row[k];
        if (r == AC_FSM_NONE || k % t->n_events == AC_FSM_EVENTLESS)
            continue;
        const ac_fsm_transition *tr = &t->transitions[r];
        if (tr->kind == AC_TR_INTERNAL && tr->guard == AC_FSM_NONE && t->lists[tr->actions] == 1) {
            p->fast[k] = AC_PLAN_FAST_CALL | t->lists[tr->actions + 1];
            continue;
        }
        int straight = 1;
        for (uint16_t q = r; q != AC_FSM_NONE && straight; q = p->next_row[q])
            straight = p->rows[q].straight;
        if (straight)
            p->fast[k] = AC_PLAN_FAST_STRAIGHT | r;
    }
    return p;
}

ac_fsm_plan *ac_fsm_plan_new(const ac_fsm_tables *t)
{
    return plan_new(t, 1);
}

ac_fsm_plan *ac_fsm_plan_new_scan(const ac_fsm_tables *t)
{
    return plan_new(t, 0);
}

void ac_fsm_plan_free(ac_fsm_plan *p)
{
    if (!p)
        return;
    free(p->first_row);
    free(p->next_row);
    free(p->fast);
    free(p->rows);
    free(p->arrival);
    free(p->eventless);
    free(p->lists);
    free(p);
}
