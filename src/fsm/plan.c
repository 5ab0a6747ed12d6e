/*
 * plan.c - building the dispatcher's plan from a spec's tables (plan.h).
 *
 * Sizes stay proportional to the tables: each state's exit, entry and
 * effect lists are copied once and shared by its rows; the effect hand-over
 * of a (source, target) pair is worked out once and shared by the rows
 * between them; a row's straight run (its calls one after the other) is
 * laid out only when short. Pairing effect uses is quadratic in the effect
 * lists of the two states, never worse.
 */
#include <stdlib.h>
#include <string.h>

#include "fsm/plan.h"

/* Largest dense index, in entries (2 bytes each, twice: rows and actions). */
#define PLAN_MAX_INDEX ((size_t)1 << 20)
/* Longest straight run (calls of one row); longer rows take the general path. */
#define PLAN_MAX_RUN 64u

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

/* Count-prefixed lists built one after the other in one growing array;
 * offset 0 is the empty list. */
typedef struct builder {
    uint16_t *lists;
    size_t n, cap;
    int oom;
} builder;

static int reserve(builder *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    if (cap > UINT32_MAX) { /* offsets are 32-bit */
        b->oom = 1;
        return -1;
    }
    uint16_t *nl = realloc(b->lists, cap * sizeof *nl);
    if (!nl) {
        b->oom = 1;
        return -1;
    }
    b->lists = nl;
    b->cap = cap;
    return 0;
}

/* Appends the count-prefixed list of n items; returns its offset (0 when
 * empty or on failure, which sets b->oom). */
static uint32_t add_list(builder *b, const uint16_t *items, size_t n)
{
    if (n == 0 || reserve(b, n + 1))
        return 0;
    uint32_t off = (uint32_t)b->n;
    b->lists[b->n++] = (uint16_t)n;
    memcpy(b->lists + b->n, items, n * sizeof *items);
    b->n += n;
    return off;
}

static uint32_t copy_list(builder *b, const uint16_t *l)
{
    return add_list(b, l + 1, l[0]);
}

/* Per-state copies, shared by the rows of the state. */
typedef struct state_lists {
    uint32_t exit, enter, effects;
} state_lists;

/* The hand-over between two states, shared by the rows between them. */
typedef struct pair_plan {
    uint32_t stop, keep, start;
    uint16_t for_source; /* the source it was worked out for, NONE if none */
} pair_plan;

typedef struct scratch {
    uint16_t *stop, *keep, *start; /* room for the largest effect list */
    unsigned char *taken;
} scratch;

/* Effects from source to target: each source use is paired with the first
 * unpaired equal use of the target (same effect, same params); paired ones
 * keep running (the target's use is recorded in keep), the others stop;
 * target uses left unpaired start. A self-transition restarts everything. */
static void plan_pair(const ac_fsm_tables *t, builder *b, const state_lists *sl, uint16_t source,
                      uint16_t target, scratch *w, pair_plan *out)
{
    const uint16_t *src = list_at(t, t->states[source].effects);
    const uint16_t *dst = list_at(t, t->states[target].effects);
    size_t ns = 0, nk = 0, nt = 0;
    memset(w->taken, 0, (size_t)dst[0] + 1);
    for (unsigned i = 1; i <= src[0]; i++) {
        unsigned j = 0;
        if (target != source)
            for (j = 1; j <= dst[0]; j++)
                if (!w->taken[j] && same_use(t, src[i], dst[j]))
                    break;
        if (j >= 1 && j <= dst[0]) {
            w->taken[j] = 1;
            w->keep[nk++] = dst[j];
        } else {
            w->stop[ns++] = src[i];
        }
    }
    for (unsigned j = 1; j <= dst[0]; j++)
        if (!w->taken[j])
            w->start[nt++] = dst[j];
    if (nk == 0) { /* nothing handed over: the states' own lists serve */
        out->stop = sl[source].effects;
        out->keep = 0;
        out->start = sl[target].effects;
    } else {
        out->stop = add_list(b, w->stop, ns);
        out->keep = add_list(b, w->keep, nk);
        out->start = add_list(b, w->start, nt);
    }
    out->for_source = source;
}

/* The record of row r. */
static void plan_row(const ac_fsm_tables *t, ac_fsm_plan *p, builder *b, const state_lists *sl,
                     pair_plan *pairs, scratch *w, uint16_t r, const uint16_t *arrival)
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
    pr->exit = sl[tr->source].exit;
    pr->enter = sl[tr->target].enter;
    pr->start_all = sl[tr->target].effects;
    pair_plan *pp = &pairs[tr->target];
    if (pp->for_source != tr->source)
        plan_pair(t, b, sl, tr->source, tr->target, w, pp);
    pr->stop = pp->stop;
    pr->keep = pp->keep;
    pr->start = pp->start;
    if (ss->invoke != AC_FSM_NONE || ts->invoke != AC_FSM_NONE ||
        p->eventless[tr->target] != AC_FSM_NONE)
        return;
    /* the straight run: exit actions, stopped uses, actions, entry actions,
     * started uses, one after the other, when short */
    const uint16_t *parts[5] = {list_at(t, ss->exit), b->lists + pr->stop, list_at(t, tr->actions),
                                list_at(t, ts->enter), b->lists + pr->start};
    size_t total = 0;
    for (int k = 0; k < 5; k++)
        total += parts[k][0];
    if (total > PLAN_MAX_RUN || reserve(b, total))
        return;
    parts[1] = b->lists + pr->stop; /* the lists may have moved */
    parts[4] = b->lists + pr->start;
    uint8_t *counts[5] = {&pr->n_exit, &pr->n_stop, &pr->n_actions, &pr->n_enter, &pr->n_start};
    pr->run = (uint32_t)b->n;
    pr->fast_row = (uint32_t)tr->target * t->n_events;
    for (int k = 0; k < 5; k++) {
        *counts[k] = (uint8_t)parts[k][0];
        memcpy(b->lists + b->n, parts[k] + 1, parts[k][0] * sizeof(uint16_t));
        b->n += parts[k][0];
    }
    pr->straight = 1;
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
    size_t most = 0;
    for (size_t s = 0; s < t->n_states; s++)
        if (list_at(t, t->states[s].effects)[0] > most)
            most = list_at(t, t->states[s].effects)[0];
    builder b = {NULL, 0, 0, 0};
    scratch w = {calloc(most + 1, sizeof(uint16_t)), calloc(most + 1, sizeof(uint16_t)),
                 calloc(most + 1, sizeof(uint16_t)), calloc(most + 1, 1)};
    state_lists *sl = calloc(t->n_states + 1u, sizeof *sl);
    pair_plan *pairs = calloc(t->n_states + 1u, sizeof *pairs);
    uint16_t *arrival = p->arrival = calloc(t->n_states + 1u, sizeof *arrival);
    p->rows = calloc(nrows + 1, sizeof *p->rows);
    p->eventless = calloc(t->n_states + 1u, sizeof *p->eventless);
    if (dense) {
        p->first_row = calloc(idx + 1, sizeof *p->first_row);
        p->next_row = calloc(nrows + 1, sizeof *p->next_row);
        p->fast = calloc(idx + 1, sizeof *p->fast);
    }
    int ok = w.stop && w.keep && w.start && w.taken && sl && pairs && arrival && p->rows &&
             p->eventless && (!dense || (p->first_row && p->next_row && p->fast)) &&
             reserve(&b, 1) == 0;
    if (ok) {
        b.lists[b.n++] = 0;                /* the empty list */
        ac_fsm_arrival_events(t, arrival); /* NONE but for terminal states */
        /* eventless rows (only external ones are ever taken), chained
         * backwards so each chain is in declared order */
        for (size_t st = 0; st < t->n_states; st++) {
            p->eventless[st] = AC_FSM_NONE;
            pairs[st].for_source = AC_FSM_NONE;
        }
        for (size_t r = nrows; r-- > 0;) {
            const ac_fsm_transition *tr = &t->transitions[r];
            p->rows[r].next_eventless = AC_FSM_NONE;
            if (tr->event != AC_FSM_EVENTLESS || tr->kind != AC_TR_EXTERNAL)
                continue;
            p->rows[r].next_eventless = p->eventless[tr->source];
            p->eventless[tr->source] = (uint16_t)r;
        }
        for (size_t st = 0; st < t->n_states; st++) {
            sl[st].exit = copy_list(&b, list_at(t, t->states[st].exit));
            sl[st].enter = copy_list(&b, list_at(t, t->states[st].enter));
            sl[st].effects = copy_list(&b, list_at(t, t->states[st].effects));
        }
        for (size_t r = 0; r < nrows && !b.oom; r++)
            plan_row(t, p, &b, sl, pairs, &w, (uint16_t)r, arrival);
        ok = !b.oom;
    }
    free(w.stop);
    free(w.keep);
    free(w.start);
    free(w.taken);
    free(sl);
    free(pairs);
    p->lists = b.lists;
    if (!ok) {
        ac_fsm_plan_free(p);
        return NULL;
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
