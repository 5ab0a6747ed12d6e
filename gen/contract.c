/*
 * contract.c - checks compiled tables against handler contracts (contract.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

static const char *const kind_names[3] = {"guard", "action", "effect"};

const char *ac_param_type_name(int type)
{
    return type == AC_PARAM_INT        ? "int"
           : type == AC_PARAM_DURATION ? "duration"
           : type == AC_PARAM_STRING   ? "string"
                                       : "?";
}

static const char *article(int type)
{
    return type == AC_PARAM_INT ? "an" : "a";
}

static const ac_fsm_param *find_param(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return &t->params[i];
    return NULL;
}

static int has_event(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 1; i < t->n_events; i++)
        if (strcmp(t->event_names[i], name) == 0)
            return 1;
    return 0;
}

static const ac_contract *find_contract(const ac_contract *c, size_t n, int kind, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == kind && strcmp(c[i].handler, name) == 0)
            return &c[i];
    return NULL;
}

/* What the handler reads by name and the events it needs. */
static size_t check_needs(const ac_fsm_tables *t, const ac_contract *k,
                          ac_contract_report_fn report, void *ud)
{
    size_t bad = 0;
    ac_contract_problem p = {k->kind, k->handler, AC_FSM_NONE, -1, ""};
    for (int i = 0; i < AC_CONTRACT_MAX && k->params[i]; i++) {
        const ac_fsm_param *prm = find_param(t, k->params[i]);
        if ((prm && prm->type == k->param_types[i]) || (!prm && k->param_defaults[i]))
            continue;
        if (prm)
            snprintf(p.msg, sizeof p.msg, "%s %s needs param %s to be %s %s, not %s %s",
                     kind_names[k->kind], k->handler, k->params[i], article(k->param_types[i]),
                     ac_param_type_name(k->param_types[i]), article(prm->type),
                     ac_param_type_name(prm->type));
        else
            snprintf(p.msg, sizeof p.msg,
                     "%s %s needs param %s (%s), which the spec does not declare",
                     kind_names[k->kind], k->handler, k->params[i],
                     ac_param_type_name(k->param_types[i]));
        report(ud, &p);
        bad++;
    }
    for (int i = 0; i < AC_CONTRACT_MAX && k->events[i]; i++) {
        if (has_event(t, k->events[i]))
            continue;
        snprintf(p.msg, sizeof p.msg, "%s %s needs event %s, which the spec does not declare",
                 kind_names[k->kind], k->handler, k->events[i]);
        report(ud, &p);
        bad++;
    }
    return bad;
}

/* Every use of an effect in a state passes the arguments its contract takes. */
static size_t check_uses(const ac_fsm_tables *t, uint16_t effect, const ac_contract *k,
                         ac_contract_report_fn report, void *ud)
{
    size_t bad = 0;
    if (k->nargs < 0)
        return 0;
    for (uint16_t s = 0; s < t->n_states; s++) {
        const uint16_t *uses = t->lists + t->states[s].effects;
        for (uint16_t u = 0; u < uses[0]; u++) {
            const ac_fsm_effect_use *use = &t->effect_uses[uses[1 + u]];
            if (use->effect != effect)
                continue;
            const uint16_t *args = t->lists + use->args;
            ac_contract_problem p = {k->kind, k->handler, s, -1, ""};
            if (args[0] != k->nargs) {
                char want[120] = "";
                size_t o = 0;
                for (int a = 0; a < k->nargs && o < sizeof want; a++)
                    o += (size_t)snprintf(want + o, sizeof want - o, "%s%s", a ? ", " : "",
                                          ac_param_type_name(k->arg_types[a]));
                snprintf(p.msg, sizeof p.msg,
                         "effect %s takes %d argument%s (%s); state %s passes %u", k->handler,
                         k->nargs, k->nargs == 1 ? "" : "s", want, t->states[s].name, args[0]);
                report(ud, &p);
                bad++;
                continue;
            }
            for (int a = 0; a < k->nargs; a++) {
                const ac_fsm_param *prm = &t->params[args[1 + a]];
                if (prm->type == k->arg_types[a])
                    continue;
                p.arg = a;
                snprintf(p.msg, sizeof p.msg,
                         "argument %d of effect %s must be %s %s param; %s is %s %s", a + 1,
                         k->handler, article(k->arg_types[a]), ac_param_type_name(k->arg_types[a]),
                         prm->name, article(prm->type), ac_param_type_name(prm->type));
                report(ud, &p);
                bad++;
            }
        }
    }
    return bad;
}

static int list_has(const ac_fsm_tables *t, uint16_t off, uint16_t item)
{
    const uint16_t *l = t->lists + off;
    for (uint16_t i = 0; i < l[0]; i++)
        if (l[1 + i] == item)
            return 1;
    return 0;
}

/* Whether action a has surely run when the transition tr is taken: before it, or in it. */
static int way_in_has(const ac_fsm_tables *t, const ac_fsm_transition *tr, uint16_t a,
                      const uint8_t *met)
{
    return met[tr->source] || list_has(t, t->states[tr->source].exit, a) ||
           list_has(t, tr->actions, a);
}

/* met[s]: action a has run on every way into state s of machine m since the machine started
 * (the greatest fixpoint over its external and eventless transitions; unreachable: 1). */
static void needs_met(const ac_fsm_tables *t, uint16_t m, uint16_t a, uint8_t *met)
{
    const ac_fsm_machine *mc = &t->machines[m];
    for (uint16_t s = mc->first_state; s < mc->first_state + mc->n_states; s++)
        met[s] = s != mc->initial || list_has(t, t->states[s].enter, a);
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint16_t i = 0; i < t->n_transitions; i++) {
            const ac_fsm_transition *tr = &t->transitions[i];
            uint16_t to = tr->target;
            if (tr->kind != AC_TR_EXTERNAL || t->states[tr->source].machine != m || !met[to] ||
                list_has(t, t->states[to].enter, a) || way_in_has(t, tr, a, met))
                continue;
            met[to] = 0;
            changed = 1;
        }
    }
}

static uint16_t action_index(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 0; i < t->n_actions; i++)
        if (strcmp(t->action_names[i], name) == 0)
            return i;
    return AC_FSM_NONE;
}

/* Every state running the effect is entered only after the action it needs has run. */
static size_t check_need(const ac_fsm_tables *t, uint16_t effect, const ac_contract *k,
                         ac_contract_report_fn report, void *ud)
{
    uint8_t *met = calloc(t->n_states ? t->n_states : 1, 1);
    uint16_t a = action_index(t, k->needs_action);
    size_t bad = 0;
    for (uint16_t s = 0; met && s < t->n_states; s++) {
        const uint16_t *uses = t->lists + t->states[s].effects;
        int runs = 0;
        for (uint16_t u = 0; u < uses[0]; u++)
            runs |= t->effect_uses[uses[1 + u]].effect == effect;
        if (!runs)
            continue;
        if (a != AC_FSM_NONE)
            needs_met(t, t->states[s].machine, a, met);
        if (a != AC_FSM_NONE && (met[s] || list_has(t, t->states[s].enter, a)))
            continue;
        const ac_fsm_transition *in = NULL;
        for (uint16_t i = 0; i < t->n_transitions && !in; i++) {
            const ac_fsm_transition *tr = &t->transitions[i];
            if (tr->target == s && tr->kind == AC_TR_EXTERNAL &&
                (a == AC_FSM_NONE || !way_in_has(t, tr, a, met)))
                in = tr;
        }
        ac_contract_problem p = {k->kind, k->handler, s, -1, ""};
        char way[200] = "";
        if (in)
            snprintf(way, sizeof way, ": the way in at line %u (%s -> %s on %s) comes without it",
                     in->line, t->states[in->source].name, t->states[s].name,
                     in->event ? t->event_names[in->event] : "no event");
        snprintf(p.msg, sizeof p.msg, "effect %s in state %s needs %s by %s on every way in%s (%s)",
                 k->handler, t->states[s].name, k->needs_what, k->needs_action, way, k->needs_hint);
        report(ud, &p);
        bad++;
    }
    free(met);
    return bad;
}

int ac_contract_posts(const ac_contract *k, const char *ev)
{
    for (int i = 0; i < AC_CONTRACT_MAX && k->events[i]; i++)
        if (strcmp(k->events[i], ev) == 0)
            return 1;
    for (int i = 0; i < AC_CONTRACT_MAX && k->also_posts[i]; i++)
        if (strcmp(k->also_posts[i], ev) == 0)
            return 1;
    return 0;
}

const char *const ac_engine_events[] = {"spawn",  "user_message",  "pause", "resume",
                                        "cancel", "turn.cancel",   "close", "rollback",
                                        "ping",   "tools.changed", NULL};

size_t ac_contract_check(const ac_fsm_tables *t, const ac_contract *c, size_t n,
                         ac_contract_applies_fn applies, ac_contract_report_fn report, void *ud)
{
    size_t bad = 0;
    for (int kind = 0; kind < 3; kind++) {
        uint16_t count = kind == 0 ? t->n_guards : kind == 1 ? t->n_actions : t->n_effects;
        const char *const *names = kind == 0   ? t->guard_names
                                   : kind == 1 ? t->action_names
                                               : t->effect_names;
        for (uint16_t i = 0; i < count; i++) {
            const ac_contract *k = find_contract(c, n, kind, names[i]);
            if (!k || (applies && !applies(ud, kind, names[i])))
                continue;
            bad += check_needs(t, k, report, ud);
            if (kind == 2)
                bad += check_uses(t, i, k, report, ud);
            if (kind == 2 && k->needs_action)
                bad += check_need(t, i, k, report, ud);
        }
    }
    return bad;
}
