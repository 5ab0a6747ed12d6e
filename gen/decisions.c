/*
 * decisions.c - the checker's rules for outside events that carry per-call
 * decisions (`outside event approve(decisions)`) and the built-in action that
 * applies them (apply_decisions):
 *
 *   - an edge on such an event that enters a state running run_tools applies the
 *     decisions first (`/ apply_decisions`), or the calls would run as the model
 *     wrote them whatever the user decided;
 *   - apply_decisions is used only on the edges of such events (elsewhere there is
 *     nothing for it to apply), never in a state's enter or exit actions.
 *
 * Each rule reports once per rule of the spec, at its event or at the action.
 */
#include <string.h>

#include "facts.h"
#include "sugar.h"

static const char *apply_name(void)
{
    return ac_arg_actions[AC_ACTION_APPLY_DECISIONS].name;
}

static const ac_name *find_apply(const ac_names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, apply_name()) == 0)
            return &ns->v[i];
    return NULL;
}

static int is_outside(const ac_spec *spec, const char *ev)
{
    for (size_t i = 0; i < spec->outside.n; i++)
        if (strcmp(spec->outside.v[i].s, ev) == 0)
            return 1;
    return 0;
}

static int carries_decisions(const ac_spec *spec, const char *ev)
{
    for (size_t i = 0; i < spec->decisions.n; i++)
        if (strcmp(spec->decisions.v[i].s, ev) == 0)
            return 1;
    return 0;
}

static int runs_tools(const ac_state_decl *st)
{
    for (size_t k = 0; k < st->n_effects; k++)
        if (strcmp(st->effects[k].name.s, "run_tools") == 0)
            return 1;
    return 0;
}

/* The rules already reported: a rule with several sources or `*` gives one row per source,
 * and its problem is reported once. */
typedef struct reported {
    const ac_trans_decl *v[64];
    size_t n;
} reported;

static int first_report(reported *rp, const ac_trans_decl *tr)
{
    for (size_t i = 0; i < rp->n; i++)
        if (rp->v[i] == tr)
            return 0;
    if (rp->n == sizeof rp->v / sizeof rp->v[0])
        return 0; /* enough said */
    rp->v[rp->n++] = tr;
    return 1;
}

static void check_row(ac_spec *spec, const ac_resolved *res, const ac_row *row, reported *rp)
{
    const ac_trans_decl *tr = row->decl;
    const char *ev = row->event > 0 ? res->event_names[row->event] : NULL;
    const ac_name *apply = find_apply(&tr->actions);
    int carries = ev && carries_decisions(spec, ev);
    if (apply && !carries) {
        if (!first_report(rp, tr))
            return;
        if (ev && is_outside(spec, ev))
            ac_spec_diag(spec, 1, apply->line, apply->col,
                         "apply_decisions on an edge taken on '%s', which carries no decisions "
                         "(declare it 'outside event %s(decisions)')",
                         ev, ev);
        else if (ev)
            ac_spec_diag(spec, 1, apply->line, apply->col,
                         "apply_decisions on an edge taken on '%s', which carries no decisions "
                         "(only an outside event does: 'outside event approve(decisions)')",
                         ev);
        else
            ac_spec_diag(spec, 1, apply->line, apply->col,
                         "apply_decisions on an eventless edge: it applies the decisions an "
                         "outside event carries (`outside event approve(decisions)`), on that "
                         "event's edge");
        return;
    }
    if (carries && !apply && row->kind == AC_TR_EXTERNAL && row->target >= 0 &&
        runs_tools(res->states[row->target]) && first_report(rp, tr))
        ac_spec_diag(spec, 1, tr->event.line, tr->event.col,
                     "event '%s' carries per-call decisions, and its edge enters %s, which runs "
                     "run_tools: apply them first ('/ apply_decisions'), or the calls run as the "
                     "model wrote them",
                     ev, res->states[row->target]->name.s);
}

static void check_body(ac_spec *spec, const ac_names *ns, const char *state, const char *when)
{
    const ac_name *apply = find_apply(ns);
    if (apply)
        ac_spec_diag(spec, 1, apply->line, apply->col,
                     "apply_decisions in the %s actions of state '%s': it belongs on the edge "
                     "of an event that carries decisions",
                     when, state);
}

void ac_spec_check_decisions(ac_spec *spec, const ac_resolved *res)
{
    reported rp = {{0}, 0};
    for (size_t r = 0; r < res->n_rows; r++)
        check_row(spec, res, &res->rows[r], &rp);
    for (size_t s = 0; s < res->n_states; s++) {
        check_body(spec, &res->states[s]->enter, res->states[s]->name.s, "enter");
        check_body(spec, &res->states[s]->exit, res->states[s]->name.s, "exit");
    }
}
