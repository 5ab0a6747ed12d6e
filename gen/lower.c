/*
 * lower.c - turns a checked spec into ac_fsm_tables (heap), and computes
 * the hash of the spec's meaning.
 *
 * The C emitter prints exactly these tables, and `agentc run --spec FILE`
 * executes them directly, so generated and in-memory engines cannot drift.
 *
 * ac_spec_lower runs lower_alloc, lower_start, lower_machines,
 * lower_states, lower_transitions, lower_params_and_names and lower_finish
 * in this order: names go to one string buffer as offsets, which become
 * pointers only at the end, once the buffer no longer moves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "names.h"
#include "spec.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/units.h"

typedef struct lowered {
    ac_fsm_tables t; /* first member: the public view */
    ac_buf strings;  /* NUL-terminated names one after another */
    uint16_t *lists;
    size_t n_lists, cap_lists;
    uint16_t *guard_code;
    size_t n_guard, cap_guard;
    ac_fsm_guard_op *gops;  /* per guard, once some guard is a comparison */
    ac_fsm_action_op *aops; /* per action, once some action is a built-in one */
    int oom;
    char hash[17];
} lowered;

/* Adds s (and its NUL) to the string table; its offset there. */
static size_t str_add(lowered *lw, const char *s)
{
    size_t at = lw->strings.n;
    if (ac_buf_add(&lw->strings, s, strlen(s) + 1) != 0) {
        lw->oom = 1;
        return 0;
    }
    return at;
}

static void u16_push(uint16_t **v, size_t *n, size_t *cap, uint16_t x, int *oom)
{
    if (ac_grow((void **)v, cap, *n + 1, sizeof **v)) {
        *oom = 1;
        return;
    }
    (*v)[(*n)++] = x;
}

static int param_index(const ac_spec *spec, const char *name)
{
    for (size_t p = 0; p < spec->n_params; p++)
        if (strcmp(spec->params[p].name.s, name) == 0)
            return (int)p;
    return -1;
}

/* The operand of a comparison the checker accepted: a param, a string, an
 * amount of an AC_FT_USD fact, a count or a duration. */
static void cmp_operand(const ac_spec *spec, const ac_gexpr *g, int fact, ac_fsm_guard_op *op)
{
    if (g->rhs_kind == TK_STRING) {
        op->operand = AC_GOP_STRING;
    } else if (g->rhs_kind != TK_NUMBER) {
        op->operand = AC_GOP_PARAM;
        op->param = (uint16_t)param_index(spec, g->rhs.s);
    } else if (ac_facts[fact].type == AC_FT_USD) {
        op->operand = AC_GOP_USD;
        op->usd = strtod(g->rhs.s, NULL);
    } else {
        long long ms = 0;
        op->operand = AC_GOP_INT;
        if (g->rhs.s[strspn(g->rhs.s, "0123456789")])
            ac_parse_duration_ms(g->rhs.s, &ms); /* checked by the checker */
        else
            ms = strtoll(g->rhs.s, NULL, 10);
        op->ival = ms;
    }
}

/* A guard the checker rewrote from a comparison or `calls "glob"` (its name is
 * now the canonical text, its operator and operand stay in the expression):
 * its typed operation in lw->gops[index]. */
static void guard_op(lowered *lw, const ac_spec *spec, const ac_gexpr *g, int index)
{
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    if (!g->rhs.s || index < 0)
        return; /* a guard bound to C by name */
    if (!lw->gops && !(lw->gops = calloc(spec->handlers[HK_GUARD].n + 1, sizeof *lw->gops))) {
        lw->oom = 1;
        return;
    }
    ac_fsm_guard_op *op = &lw->gops[index];
    if (op->operand != AC_GOP_NONE)
        return; /* the same guard used again */
    if (!g->op.s) {
        op->operand = AC_GOP_CALLS;
    } else {
        char fact[64]; /* the canonical text begins with the fact's name */
        snprintf(fact, sizeof fact, "%.*s", (int)strcspn(g->pred.s, " "), g->pred.s);
        int f = ac_fact_find(fact);
        op->fact = (uint8_t)(f < 0 ? 0 : f);
        for (uint8_t k = 0; k < 6; k++)
            if (strcmp(g->op.s, ops[k]) == 0)
                op->cmp = k;
        cmp_operand(spec, g, op->fact, op);
    }
    if (op->operand == AC_GOP_STRING || op->operand == AC_GOP_CALLS)
        if (!(op->sval = strdup(g->rhs.s)))
            lw->oom = 1;
}

/* The built-in actions (`fail("why")`, `apply_decisions`, ...) as typed operations in
 * lw->aops: which one, and the strings between its quotes (the checker made sure of the
 * shape, and refuses a quote inside a string). 0, or -1 when out of memory. */
static int action_ops(lowered *lw)
{
    ac_fsm_tables *t = &lw->t;
    for (uint16_t i = 0; i < t->n_actions; i++) {
        const char *s = t->action_names[i], *paren = strchr(s, '(');
        int k = paren ? ac_arg_action_find(s, (size_t)(paren - s))
                : strcmp(s, ac_arg_actions[AC_ACTION_APPLY_DECISIONS].name) == 0
                    ? AC_ACTION_APPLY_DECISIONS
                    : -1;
        if (k < 0)
            continue;
        if (!lw->aops && !(lw->aops = calloc(t->n_actions, sizeof *lw->aops)))
            return -1;
        ac_fsm_action_op *op = &lw->aops[i];
        op->kind = (uint8_t)(AC_AOP_FAIL + k); /* the enum follows ac_arg_actions' order */
        const char *q = paren;
        for (int a = 0; a < ac_arg_actions[k].n_args && a < 2 && q; a++) {
            const char *open = strchr(q, '"'), *close = open ? strchr(open + 1, '"') : NULL;
            if (!close)
                break;
            if (!(op->args[a] = strndup(open + 1, (size_t)(close - open - 1))))
                return -1;
            q = close + 1;
        }
    }
    return 0;
}

static void guard_emit(lowered *lw, const ac_spec *spec, const ac_gexpr *g)
{
    switch (g->kind) {
    case GX_PRED:
        guard_op(lw, spec, g, ac_spec_handler_index(spec, HK_GUARD, g->pred.s));
        u16_push(&lw->guard_code, &lw->n_guard, &lw->cap_guard,
                 (uint16_t)(AC_G_PRED | (unsigned)ac_spec_handler_index(spec, HK_GUARD, g->pred.s)),
                 &lw->oom);
        break;
    case GX_NOT:
        guard_emit(lw, spec, g->a);
        u16_push(&lw->guard_code, &lw->n_guard, &lw->cap_guard, AC_G_NOT, &lw->oom);
        break;
    default:
        guard_emit(lw, spec, g->a);
        guard_emit(lw, spec, g->b);
        u16_push(&lw->guard_code, &lw->n_guard, &lw->cap_guard,
                 g->kind == GX_AND ? AC_G_AND : AC_G_OR, &lw->oom);
        break;
    }
}

static int guard_depth(const ac_gexpr *g)
{
    if (!g)
        return 0;
    if (g->kind == GX_PRED)
        return 1;
    int a = guard_depth(g->a), b = guard_depth(g->b);
    return g->kind == GX_NOT ? a : (a > b + 1 ? a : b + 1);
}

/* The checker bounds every count and the total size of `lists`, so the
 * casts to uint16_t below cannot wrap for a checked spec. */
static uint16_t names_list(lowered *lw, const ac_spec *spec, int kind, const ac_names *ns)
{
    if (ns->n == 0)
        return 0;
    uint16_t off = (uint16_t)lw->n_lists;
    u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists, (uint16_t)ns->n, &lw->oom);
    for (size_t i = 0; i < ns->n; i++)
        u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists,
                 (uint16_t)ac_spec_handler_index(spec, kind, ns->v[i].s), &lw->oom);
    return off;
}

static uint16_t params_list(lowered *lw, const ac_spec *spec, const ac_names *ns)
{
    if (ns->n == 0)
        return 0;
    uint16_t off = (uint16_t)lw->n_lists;
    u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists, (uint16_t)ns->n, &lw->oom);
    for (size_t i = 0; i < ns->n; i++)
        u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists,
                 (uint16_t)ac_spec_param_index(spec, ns->v[i].s), &lw->oom);
    return off;
}

/* One lowering: the tables being built, and where each name will sit in
 * lw->strings (offsets, since the string buffer moves as it grows). */
typedef struct lowering {
    const ac_spec *spec;
    const ac_resolved *res;
    lowered *lw;
    ac_fsm_machine *machines;
    ac_fsm_state *states;
    ac_fsm_transition *trans;
    ac_fsm_effect_use *eus;
    ac_fsm_param *params;
    size_t path_off;
    size_t *machine_name, *state_name, *param_name, *param_sval;
    size_t *name_off; /* events, then guards, actions, effects */
    size_t n_names;
    const char **names;
} lowering;

/* Counts, and every table at its final size. */
static int lower_alloc(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    const ac_resolved *res = lo->res;
    ac_fsm_tables *t = &lo->lw->t;
    size_t n_eu = 0;
    for (size_t s = 0; s < res->n_states; s++)
        n_eu += res->states[s]->n_effects;

    t->n_machines = (uint16_t)spec->n_machines;
    t->n_states = (uint16_t)res->n_states;
    t->n_events = (uint16_t)res->n_events;
    t->n_transitions = (uint16_t)res->n_rows;
    t->n_guards = (uint16_t)spec->handlers[HK_GUARD].n;
    t->n_actions = (uint16_t)spec->handlers[HK_ACTION].n;
    t->n_effects = (uint16_t)spec->handlers[HK_EFFECT].n;
    t->n_params = (uint16_t)spec->n_params;
    t->n_effect_uses = (uint16_t)n_eu;
    t->root = (uint16_t)res->root;

    lo->machines = calloc(spec->n_machines + 1, sizeof *lo->machines);
    lo->states = calloc(res->n_states + 1, sizeof *lo->states);
    lo->trans = calloc(res->n_rows + 1, sizeof *lo->trans);
    lo->eus = calloc(n_eu + 1, sizeof *lo->eus);
    lo->params = calloc(spec->n_params + 1, sizeof *lo->params);
    lo->machine_name = calloc(spec->n_machines + 1, sizeof(size_t));
    lo->state_name = calloc(res->n_states + 1, sizeof(size_t));
    lo->param_name = calloc(spec->n_params + 1, sizeof(size_t));
    lo->param_sval = calloc(spec->n_params + 1, sizeof(size_t));
    size_t n_name_tables = res->n_events + spec->handlers[HK_GUARD].n +
                           spec->handlers[HK_ACTION].n + spec->handlers[HK_EFFECT].n;
    lo->name_off = calloc(n_name_tables + 1, sizeof(size_t));
    lo->names = calloc(n_name_tables + 4, sizeof(char *));
    t->machines = lo->machines;
    t->states = lo->states;
    t->transitions = lo->trans;
    t->effect_uses = lo->eus;
    t->params = lo->params;
    if (!lo->machines || !lo->states || !lo->trans || !lo->eus || !lo->params ||
        !lo->machine_name || !lo->state_name || !lo->param_name || !lo->param_sval ||
        !lo->name_off || !lo->names)
        return -1;
    return 0;
}

/* The empty list at offset 0, and the spec path (printed in comments of
 * every output, so control bytes become '?'). */
static void lower_start(lowering *lo, const char *rel_path)
{
    lowered *lw = lo->lw;
    u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists, 0, &lw->oom);
    lo->path_off = str_add(lw, rel_path);
    for (char *c = lw->oom ? NULL : lw->strings.p + lo->path_off; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static void lower_machines(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    const ac_resolved *res = lo->res;
    for (size_t m = 0; m < spec->n_machines; m++) {
        const ac_machine_decl *md = &spec->machines[m];
        ac_fsm_machine *mt = &lo->machines[m];
        lo->machine_name[m] = str_add(lo->lw, md->name.s);
        mt->first_state = (uint16_t)res->machine_first_state[m];
        mt->n_states = (uint16_t)md->n_states;
        mt->depth = (uint16_t)(res->machine_depth[m] < 0 ? 0 : res->machine_depth[m]);
        mt->initial = (uint16_t)res->machine_first_state[m];
        for (size_t s = 0; s < md->n_states; s++)
            if (md->initial.s && strcmp(md->states[s].name.s, md->initial.s) == 0)
                mt->initial = (uint16_t)md->states[s].index;
    }
}

/* States with their enter and exit lists, invoke, and effect uses: the
 * argument lists of a state's uses first, then its list of those uses. */
static void lower_states(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    const ac_resolved *res = lo->res;
    lowered *lw = lo->lw;
    size_t eu = 0;
    for (size_t s = 0; s < res->n_states; s++) {
        const ac_state_decl *sd = res->states[s];
        ac_fsm_state *st = &lo->states[s];
        lo->state_name[s] = str_add(lw, sd->name.s);
        st->machine = (uint16_t)res->state_machine[s];
        st->first_transition = (uint16_t)res->state_first_row[s];
        st->n_transitions = (uint16_t)res->state_n_rows[s];
        st->enter = names_list(lw, spec, HK_ACTION, &sd->enter);
        st->exit = names_list(lw, spec, HK_ACTION, &sd->exit);
        st->invoke = AC_FSM_NONE;
        if (sd->invoke.s)
            for (size_t m = 0; m < spec->n_machines; m++)
                if (strcmp(spec->machines[m].name.s, sd->invoke.s) == 0)
                    st->invoke = (uint16_t)m;
        st->line = (uint16_t)(sd->name.line > 65535 ? 65535 : sd->name.line);
        st->terminal = (uint8_t)sd->terminal;
        size_t first_eu = eu;
        for (size_t e = 0; e < sd->n_effects; e++) {
            const ac_effect_decl *ed = &sd->effects[e];
            lo->eus[eu].effect = (uint16_t)ac_spec_handler_index(spec, HK_EFFECT, ed->name.s);
            lo->eus[eu].args = params_list(lw, spec, &ed->args);
            eu++;
        }
        st->effects = 0;
        if (sd->n_effects) {
            st->effects = (uint16_t)lw->n_lists;
            u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists, (uint16_t)sd->n_effects, &lw->oom);
            for (size_t e = first_eu; e < eu; e++)
                u16_push(&lw->lists, &lw->n_lists, &lw->cap_lists, (uint16_t)e, &lw->oom);
        }
    }
}

/* Transition rows with their action lists and guard programs; the rows a
 * declaration expands into share one program. */
static int lower_transitions(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    const ac_resolved *res = lo->res;
    lowered *lw = lo->lw;
    for (size_t r = 0; r < res->n_rows; r++) {
        const ac_row *rw = &res->rows[r];
        ac_fsm_transition *tr = &lo->trans[r];
        tr->source = (uint16_t)rw->state;
        tr->event = (uint16_t)rw->event;
        tr->target = (uint16_t)rw->target;
        tr->kind = (uint8_t)rw->kind;
        tr->line = (uint16_t)(rw->decl->line > 65535 ? 65535 : rw->decl->line);
        tr->actions = names_list(lw, spec, HK_ACTION, &rw->decl->actions);
        tr->guard = AC_FSM_NONE;
        if (rw->decl->guard) {
            if (guard_depth(rw->decl->guard) > AC_FSM_GUARD_STACK) {
                lw->oom = 1; /* the parser caps nesting; this is a safety net */
                return -1;
            }
            /* identical guard programs share code: search previous rows */
            size_t start = lw->n_guard;
            guard_emit(lw, spec, rw->decl->guard);
            u16_push(&lw->guard_code, &lw->n_guard, &lw->cap_guard, AC_G_END, &lw->oom);
            tr->guard = (uint16_t)start;
            if (r > 0 && lo->trans[r - 1].guard != AC_FSM_NONE &&
                res->rows[r - 1].decl == rw->decl) {
                lw->n_guard = start;
                tr->guard = lo->trans[r - 1].guard;
            }
        }
    }
    return 0;
}

/* Params, and the names of events and handlers in one array. */
static void lower_params_and_names(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    lowered *lw = lo->lw;
    for (size_t p = 0; p < spec->n_params; p++) {
        lo->param_name[p] = str_add(lw, spec->params[p].name.s);
        lo->params[p].type = (uint8_t)spec->params[p].type;
        lo->params[p].ival = spec->params[p].ival;
        lo->param_sval[p] = spec->params[p].sval ? str_add(lw, spec->params[p].sval) : (size_t)-1;
    }
    size_t k = 0;
    for (size_t e = 0; e < lo->res->n_events; e++)
        lo->name_off[k++] = str_add(lw, lo->res->event_names[e]);
    for (int h = 0; h < AC_HK_COUNT; h++)
        for (size_t i = 0; i < spec->handlers[h].n; i++)
            lo->name_off[k++] = str_add(lw, spec->handlers[h].v[i].s);
    lo->n_names = k;
}

/* The strings are final: offsets become pointers, and the list and guard
 * code arrays are handed over with their counts. */
static int lower_finish(lowering *lo)
{
    const ac_spec *spec = lo->spec;
    lowered *lw = lo->lw;
    ac_fsm_tables *t = &lw->t;
    if (lw->oom || lw->n_lists >= AC_FSM_NONE || lw->n_guard >= AC_FSM_NONE)
        return -1;
    t->spec_path = lw->strings.p + lo->path_off;
    for (size_t m = 0; m < spec->n_machines; m++)
        lo->machines[m].name = lw->strings.p + lo->machine_name[m];
    for (size_t s = 0; s < lo->res->n_states; s++)
        lo->states[s].name = lw->strings.p + lo->state_name[s];
    for (size_t p = 0; p < spec->n_params; p++) {
        lo->params[p].name = lw->strings.p + lo->param_name[p];
        lo->params[p].sval =
            lo->param_sval[p] == (size_t)-1 ? NULL : lw->strings.p + lo->param_sval[p];
    }
    for (size_t i = 0; i < lo->n_names; i++)
        lo->names[i] = lw->strings.p + lo->name_off[i];
    t->event_names = lo->names;
    lo->names = NULL; /* owned by the tables now */
    t->guard_names = t->event_names + lo->res->n_events;
    t->action_names = t->guard_names + spec->handlers[HK_GUARD].n;
    t->effect_names = t->action_names + spec->handlers[HK_ACTION].n;
    {
        uint8_t *fl = calloc(lo->res->n_events ? lo->res->n_events : 1, 1);
        int any = 0;
        if (!fl)
            return -1;
        for (size_t e = 1; e < lo->res->n_events; e++) {
            const char *en = lo->res->event_names[e];
            for (size_t o = 0; o < spec->outside.n; o++)
                if (strcmp(spec->outside.v[o].s, en) == 0)
                    fl[e] |= AC_EV_OUTSIDE;
            for (size_t o = 0; o < spec->decisions.n; o++)
                if (strcmp(spec->decisions.v[o].s, en) == 0)
                    fl[e] |= AC_EV_DECISIONS;
            if (strncmp(en, "after(", 6) == 0 && strchr(en, '@'))
                fl[e] |= AC_EV_TIMER;
            any |= fl[e];
        }
        if (any)
            t->event_flags = fl;
        else
            free(fl);
    }
    if (lw->n_guard == 0)
        u16_push(&lw->guard_code, &lw->n_guard, &lw->cap_guard, AC_G_END, &lw->oom);
    if (lw->oom || action_ops(lw) < 0)
        return -1;
    t->lists = lw->lists;
    t->guard_code = lw->guard_code;
    t->guard_ops = lw->gops;
    t->action_ops = lw->aops;
    t->layout = AC_FSM_LAYOUT;
    t->n_lists = (uint16_t)lw->n_lists; /* both below AC_FSM_NONE, checked above */
    t->n_guard_code = (uint16_t)lw->n_guard;
    ac_spec_hash(t, lw->hash);
    t->hash = lw->hash;
    return 0;
}

ac_fsm_tables *ac_spec_lower(const ac_spec *spec, const char *rel_path)
{
    if (!spec->res)
        return NULL;
    lowered *lw = calloc(1, sizeof *lw);
    if (!lw)
        return NULL;
    ac_buf_init(&lw->strings, AC_BUF_MAX);
    lowering lo = {.spec = spec, .res = spec->res, .lw = lw};
    int ok = lower_alloc(&lo) == 0;
    if (ok) {
        lower_start(&lo, rel_path);
        lower_machines(&lo);
        lower_states(&lo);
        ok = lower_transitions(&lo) == 0;
    }
    if (ok) {
        lower_params_and_names(&lo);
        ok = lower_finish(&lo) == 0;
    }
    free(lo.machine_name);
    free(lo.state_name);
    free(lo.param_name);
    free(lo.param_sval);
    free(lo.name_off);
    free(lo.names);
    if (ok)
        return &lw->t;
    ac_spec_tables_free(&lw->t);
    return NULL;
}

void ac_spec_tables_free(ac_fsm_tables *t)
{
    if (!t)
        return;
    lowered *lw = (lowered *)t;
    free((void *)t->machines);
    free((void *)t->states);
    free((void *)t->transitions);
    free((void *)t->effect_uses);
    free((void *)t->params);
    free((void *)t->event_names);
    free((void *)t->event_flags);
    ac_buf_free(&lw->strings);
    free(lw->lists);
    free(lw->guard_code);
    for (uint16_t i = 0; lw->gops && i < t->n_guards; i++)
        free((void *)lw->gops[i].sval);
    free(lw->gops);
    for (uint16_t i = 0; lw->aops && i < t->n_actions; i++)
        for (int a = 0; a < 2; a++)
            free((void *)lw->aops[i].args[a]);
    free(lw->aops);
    free(lw);
}

/* FNV-1a over a canonical text of the tables: names, structure, values.
 * Lines and layout are left out, so comments and whitespace don't count. */
typedef struct hasher {
    uint64_t h;
} hasher;

static void hs(hasher *h, const char *s)
{
    for (; *s; s++)
        h->h = (h->h ^ (unsigned char)*s) * 1099511628211ull;
    h->h = (h->h ^ 0xff) * 1099511628211ull;
}

static void hn(hasher *h, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    hs(h, buf);
}

static void hl(hasher *h, const ac_fsm_tables *t, uint16_t off)
{
    hn(h, t->lists[off]);
    for (uint16_t i = 1; i <= t->lists[off]; i++)
        hn(h, t->lists[off + i]);
}

void ac_spec_hash(const ac_fsm_tables *t, char out[17])
{
    hasher h = {1469598103934665603ull};
    hs(&h, "agentc-spec-1");
    for (uint16_t i = 0; i < t->n_params; i++) {
        hs(&h, t->params[i].name);
        hn(&h, t->params[i].type);
        hn(&h, t->params[i].ival);
        hs(&h, t->params[i].sval ? t->params[i].sval : "");
    }
    for (uint16_t i = 0; i < t->n_events; i++)
        hs(&h, t->event_names[i]);
    if (t->event_flags) /* hashed only when some event has a flag: older hashes stay */
        for (uint16_t i = 0; i < t->n_events; i++)
            hn(&h, t->event_flags[i]);
    for (uint16_t i = 0; i < t->n_guards; i++)
        hs(&h, t->guard_names[i]);
    hs(&h, "/");
    for (uint16_t i = 0; i < t->n_actions; i++)
        hs(&h, t->action_names[i]);
    hs(&h, "/");
    for (uint16_t i = 0; i < t->n_effects; i++)
        hs(&h, t->effect_names[i]);
    for (uint16_t i = 0; i < t->n_machines; i++) {
        hs(&h, t->machines[i].name);
        hn(&h, t->machines[i].initial);
    }
    for (uint16_t i = 0; i < t->n_states; i++) {
        const ac_fsm_state *s = &t->states[i];
        hs(&h, s->name);
        hn(&h, s->machine);
        hn(&h, s->terminal);
        hn(&h, s->invoke);
        hl(&h, t, s->enter);
        hl(&h, t, s->exit);
        hn(&h, t->lists[s->effects]);
        for (uint16_t k = 1; k <= t->lists[s->effects]; k++) {
            const ac_fsm_effect_use *u = &t->effect_uses[t->lists[s->effects + k]];
            hn(&h, u->effect);
            hl(&h, t, u->args);
        }
    }
    for (uint16_t i = 0; i < t->n_transitions; i++) {
        const ac_fsm_transition *tr = &t->transitions[i];
        hn(&h, tr->source);
        hn(&h, tr->event);
        hn(&h, tr->target);
        hn(&h, tr->kind);
        hl(&h, t, tr->actions);
        if (tr->guard != AC_FSM_NONE)
            for (uint16_t g = tr->guard; t->guard_code[g] != AC_G_END; g++)
                hn(&h, t->guard_code[g]);
        else
            hs(&h, "-");
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h.h);
}
