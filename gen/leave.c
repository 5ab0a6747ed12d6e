/*
 * leave.c - the proof that every event a transition waits for can be sent, and
 * that every non-terminal state can be left (leave.h), over compiled tables.
 *
 * An event can be sent when it is:
 *   - declared `outside event` (the user, the embedding program);
 *   - an engine event (contract.h: spawn, user_message, pause, ...);
 *   - an `after` timer's event, or the arrival event M.T of an invoked machine;
 *   - posted by an effect, as the caller's posts function says: the spec's
 *     `posts` and the handlers' contracts in the checker, the bound built-in
 *     handlers' contracts in ac_engine_new.
 * Any other event a transition waits for is a problem at its first use.
 *
 * A state is left by an eventless transition, or by one of its own external
 * transitions on an event that can happen there: an outside or engine event,
 * its `after` timer, the arrival event of the machine it invokes, or an event
 * posted by an effect of the state, of a state above it (one invoking its
 * machine) or below it (an event the deeper machines leave bubbles up). A
 * state none of whose ways out can happen is a problem; so is a transition of
 * a state that is not stuck, on an event posted only where the state is not.
 *
 * The checker's entry (ac_spec_check_leave) lowers the spec and places each
 * problem at the state's name or the transition's event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "leave.h"
#include "sugar.h"

typedef struct prover {
    const ac_fsm_tables *t;
    ac_leave_posts_fn posts;
    void *ud;
} prover;

static int engine_event(const char *ev)
{
    for (const char *const *e = ac_engine_events; *e; e++)
        if (strcmp(*e, ev) == 0)
            return 1;
    return 0;
}

static int is_timer(const prover *pv, uint16_t ev)
{
    const char *n = pv->t->event_names[ev];
    return strncmp(n, "after(", 6) == 0 && strchr(n, '@') != NULL;
}

/* Sent from anywhere, whatever runs: by the outside or the engine. */
static int sent_outside(const prover *pv, uint16_t ev)
{
    return (pv->t->event_flags && (pv->t->event_flags[ev] & AC_EV_OUTSIDE)) ||
           engine_event(pv->t->event_names[ev]);
}

/* The machine whose arrival event ev is (M.T, T a terminal state of M), else AC_FSM_NONE. */
static uint16_t arrival_of(const ac_fsm_tables *t, uint16_t ev)
{
    const char *n = t->event_names[ev], *dot = strrchr(n, '.');
    for (uint16_t m = 0; dot && m < t->n_machines; m++) {
        const ac_fsm_machine *mc = &t->machines[m];
        if (strlen(mc->name) != (size_t)(dot - n) || strncmp(mc->name, n, (size_t)(dot - n)))
            continue;
        for (uint16_t s = mc->first_state; s < mc->first_state + mc->n_states; s++)
            if (t->states[s].terminal && strcmp(t->states[s].name, dot + 1) == 0)
                return m;
    }
    return AC_FSM_NONE;
}

/* An effect of state s posts ev (or may). */
static int state_posts(const prover *pv, uint16_t s, uint16_t ev)
{
    const uint16_t *uses = pv->t->lists + pv->t->states[s].effects;
    for (uint16_t u = 0; u < uses[0]; u++)
        if (pv->posts(pv->ud, pv->t->effect_uses[uses[1 + u]].effect, ev) != 0)
            return 1;
    return 0;
}

/* An effect of a state above s (dir < 0: invoking its machine, transitively) or below it
 * (dir > 0: in the machine it invokes, transitively) posts ev. */
static int near_posts(const prover *pv, uint16_t s, uint16_t ev, int dir, int depth)
{
    const ac_fsm_tables *t = pv->t;
    if (depth > AC_FSM_MAX_DEPTH || (dir > 0 && t->states[s].invoke == AC_FSM_NONE))
        return 0;
    for (uint16_t i = 0; i < t->n_states; i++) {
        int linked = dir < 0 ? t->states[i].invoke == t->states[s].machine
                             : t->states[i].machine == t->states[s].invoke;
        if (linked && (state_posts(pv, i, ev) || near_posts(pv, i, ev, dir, depth + 1)))
            return 1;
    }
    return 0;
}

/* An effect that posts ev: one that surely does, else one that may; NULL: none. */
static const char *poster(const prover *pv, uint16_t ev)
{
    const char *may = NULL;
    for (uint16_t e = 0; e < pv->t->n_effects; e++) {
        int p = pv->posts(pv->ud, e, ev);
        if (p > 0)
            return pv->t->effect_names[e];
        if (p < 0 && !may)
            may = pv->t->effect_names[e];
    }
    return may;
}

/* Every event a transition waits for can be sent by something: one problem per event. */
static size_t check_sendable(const prover *pv, ac_leave_report_fn report, void *ud)
{
    const ac_fsm_tables *t = pv->t;
    uint8_t *seen = calloc(t->n_events ? t->n_events : 1, 1);
    size_t bad = 0;
    for (uint16_t i = 0; seen && i < t->n_transitions; i++) {
        const ac_fsm_transition *tr = &t->transitions[i];
        if (tr->kind == AC_TR_IGNORE || tr->event == 0 || seen[tr->event])
            continue;
        seen[tr->event] = 1;
        if (is_timer(pv, tr->event) || arrival_of(t, tr->event) != AC_FSM_NONE ||
            sent_outside(pv, tr->event) || poster(pv, tr->event))
            continue;
        const char *ev = t->event_names[tr->event];
        ac_leave_problem p = {AC_LEAVE_UNSENDABLE, tr->source, i, ""};
        snprintf(p.msg, sizeof p.msg,
                 "nothing sends event '%s': no effect posts it and the engine does not (declare "
                 "it 'outside event %s' if the embedding program or the user sends it, or "
                 "'effect NAME posts %s')",
                 ev, ev, ev);
        report(ud, &p);
        bad++;
    }
    free(seen);
    return bad;
}

/* Whether the external transition's event can happen in state s. */
static int can_happen(const prover *pv, uint16_t s, uint16_t ev)
{
    const ac_fsm_tables *t = pv->t;
    uint16_t m = arrival_of(t, ev);
    if (m != AC_FSM_NONE)
        return t->states[s].invoke == m;
    if (is_timer(pv, ev)) {
        const uint16_t *uses = t->lists + t->states[s].effects;
        for (uint16_t u = 0; u < uses[0]; u++)
            if (strcmp(t->effect_names[t->effect_uses[uses[1 + u]].effect], t->event_names[ev]) ==
                0)
                return 1;
        return 0;
    }
    return sent_outside(pv, ev) || state_posts(pv, s, ev) || near_posts(pv, s, ev, -1, 0) ||
           near_posts(pv, s, ev, 1, 0);
}

int ac_leave_can_happen(const ac_fsm_tables *t, ac_leave_posts_fn posts, void *ud, uint16_t s,
                        uint16_t ev)
{
    prover pv = {t, posts, ud};
    return can_happen(&pv, s, ev);
}

/* An outside event no transition takes: the likely one meant (NULL: none). */
static const char *unhandled_outside(const ac_fsm_tables *t)
{
    for (uint16_t e = 1; t->event_flags && e < t->n_events; e++) {
        int used = 0;
        for (uint16_t i = 0; i < t->n_transitions && !used; i++)
            used = t->transitions[i].event == e && t->transitions[i].kind != AC_TR_IGNORE;
        if ((t->event_flags[e] & AC_EV_OUTSIDE) && !used)
            return t->event_names[e];
    }
    return NULL;
}

/* The transitions of a state that can be left waiting for events posted only elsewhere. */
static size_t check_elsewhere(const prover *pv, uint16_t s, ac_leave_report_fn report, void *ud)
{
    const ac_fsm_tables *t = pv->t;
    const ac_fsm_state *st = &t->states[s];
    size_t bad = 0;
    for (uint16_t r = 0; r < st->n_transitions; r++) {
        uint16_t i = (uint16_t)(st->first_transition + r), ev = t->transitions[i].event;
        if (t->transitions[i].kind == AC_TR_IGNORE || ev == 0 || is_timer(pv, ev) ||
            arrival_of(t, ev) != AC_FSM_NONE || !poster(pv, ev) || can_happen(pv, s, ev))
            continue;
        const char *meant = unhandled_outside(t);
        char hint[160] = "";
        if (meant)
            snprintf(hint, sizeof hint, " (did you mean '%s', which no state handles?)", meant);
        ac_leave_problem p = {AC_LEAVE_ELSEWHERE, s, i, ""};
        snprintf(p.msg, sizeof p.msg,
                 "event '%s' cannot happen in state '%s': %s posts it, and it does not run "
                 "there%s",
                 t->event_names[ev], st->name, poster(pv, ev), hint);
        report(ud, &p);
        bad++;
    }
    return bad;
}

/* Whether state s can be left; when not, the events it waits for in waits. */
static int can_leave(const prover *pv, uint16_t s, char *waits, size_t cap, int *named)
{
    const ac_fsm_tables *t = pv->t;
    const ac_fsm_state *st = &t->states[s];
    size_t wo = 0;
    int n_ext = 0;
    *named = 0;
    waits[0] = 0;
    for (uint16_t r = 0; r < st->n_transitions; r++) {
        const ac_fsm_transition *tr = &t->transitions[st->first_transition + r];
        if (tr->kind != AC_TR_EXTERNAL)
            continue;
        if (tr->event == 0 || can_happen(pv, s, tr->event))
            return 1;
        n_ext++;
        int again = 0; /* named by an earlier transition */
        for (uint16_t q = 0; q < r && !again; q++)
            again = t->transitions[st->first_transition + q].event == tr->event;
        if (again || wo >= cap)
            continue;
        const char *who = poster(pv, tr->event);
        int w =
            snprintf(waits + wo, cap - wo, "%s%s%s%s%s", wo ? ", " : "", t->event_names[tr->event],
                     who                                       ? " (posted by "
                     : arrival_of(t, tr->event) == AC_FSM_NONE ? " (which nothing sends"
                                                               : "",
                     who ? who : "", who || arrival_of(t, tr->event) == AC_FSM_NONE ? ")" : "");
        wo += w > 0 ? (size_t)w : 0;
        ++*named;
    }
    return n_ext == 0; /* only internal rows: the checker's graph rules report it */
}

size_t ac_leave_check(const ac_fsm_tables *t, ac_leave_posts_fn posts, ac_leave_report_fn report,
                      void *ud)
{
    prover pv = {t, posts, ud};
    size_t bad = check_sendable(&pv, report, ud);
    for (uint16_t s = 0; s < t->n_states; s++) {
        const ac_fsm_state *st = &t->states[s];
        char waits[400];
        int named;
        if (st->terminal || st->n_transitions == 0)
            continue; /* no transitions at all: the checker's graph rules report it */
        if (can_leave(&pv, s, waits, sizeof waits, &named)) {
            bad += check_elsewhere(&pv, s, report, ud);
            continue;
        }
        ac_leave_problem p = {AC_LEAVE_STUCK, s, AC_FSM_NONE, ""};
        snprintf(p.msg, sizeof p.msg,
                 "state '%s' can never be left: it waits for %s, and nothing active there posts "
                 "%s (run the effect in this state, add an 'after' timer, or declare an event "
                 "the outside sends with 'outside event')",
                 st->name, waits, named == 1 ? "it" : "them");
        report(ud, &p);
        bad++;
    }
    return bad;
}

/* ---- the checker's entry: what the spec's effects post, and where each problem is ---- */

typedef struct spec_leave {
    ac_spec *spec;
    const ac_resolved *res;
    const ac_fsm_tables *t;
} spec_leave;

static int names_has(const ac_names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, s) == 0)
            return 1;
    return 0;
}

/* An effect with a handler's contract posts what the contract says; else what its `posts`
 * declares; else nothing. */
static int spec_posts(void *ud, uint16_t effect, uint16_t ev)
{
    const spec_leave *sl = ud;
    const char *eff = sl->t->effect_names[effect], *name = sl->t->event_names[ev];
    for (size_t i = 0; i < sl->spec->n_contracts; i++)
        if (sl->spec->contracts[i].kind == HK_EFFECT &&
            strcmp(sl->spec->contracts[i].handler, eff) == 0)
            return ac_contract_posts(&sl->spec->contracts[i], name);
    for (size_t i = 0; i < sl->spec->n_posts; i++)
        if (strcmp(sl->spec->posts[i].effect.s, eff) == 0)
            return names_has(&sl->spec->posts[i].events, name);
    return 0;
}

static void spec_report(void *ud, const ac_leave_problem *p)
{
    const spec_leave *sl = ud;
    const ac_name *at = &sl->res->states[p->state]->name;
    if (p->transition != AC_FSM_NONE) {
        const ac_trans_decl *d = sl->res->rows[p->transition].decl;
        if (p->kind == AC_LEAVE_ELSEWHERE && d->star)
            return; /* `* -> X on e` names e for every state, not for this one */
        ac_spec_diag(sl->spec, 1, d->event.s ? d->event.line : d->line,
                     d->event.s ? d->event.col : d->col, "%s", p->msg);
        return;
    }
    ac_spec_diag(sl->spec, 1, at->line, at->col, "%s", p->msg);
}

void ac_spec_check_leave(ac_spec *spec, const ac_resolved *res)
{
    struct ac_resolved *was = spec->res;
    spec->res = (struct ac_resolved *)res; /* lowering reads the resolved rows */
    ac_fsm_tables *t = ac_spec_lower(spec, spec->path);
    spec->res = was;
    if (!t) {
        ac_spec_diag(spec, 1, 1, 1, "out of memory");
        return;
    }
    spec_leave sl = {spec, res, t};
    ac_leave_check(t, spec_posts, spec_report, &sl);
    ac_spec_tables_free(t);
}
