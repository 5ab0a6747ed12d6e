/*
 * leave.c - the checker's proof that every event a state waits for can be
 * sent, and that every non-terminal state can be left.
 *
 * An event can be sent when it is:
 *   - declared `outside event` (the user, the embedding program);
 *   - an engine event (contract.h: spawn, user_message, pause, ...);
 *   - an `after` timer's event, or the arrival event M.T of an invoked machine;
 *   - posted by an effect: one that declares `posts`, or one whose handler's
 *     contract names the events it posts (spec->contracts: `agentc check` with
 *     the built-in handlers, and every spec the agentc binary runs).
 * Any other event a transition waits for is an error at its first use, with
 * the hint to declare it `outside`.
 *
 * A state is left by an eventless transition, or by one of its own
 * transitions (external) on an event that can happen there: an outside or
 * engine event, its `after` timer, the arrival event of the machine it
 * invokes, or an event posted by an effect of the state or of a state above
 * it. A state none of whose ways out can happen is an error at its line,
 * naming the events it waits for and, for each, who could post it.
 */
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "sugar.h"

static int names_has(const ac_names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, s) == 0)
            return 1;
    return 0;
}

/* Whether the effect named eff posts ev, by its `posts` or its handler's contract. */
static int effect_posts(const ac_spec *spec, const char *eff, const char *ev)
{
    for (size_t i = 0; i < spec->n_posts; i++)
        if (strcmp(spec->posts[i].effect.s, eff) == 0 && names_has(&spec->posts[i].events, ev))
            return 1;
    for (size_t i = 0; i < spec->n_contracts; i++)
        if (spec->contracts[i].kind == HK_EFFECT && strcmp(spec->contracts[i].handler, eff) == 0 &&
            ac_contract_posts(&spec->contracts[i], ev))
            return 1;
    return 0;
}

/* An effect the spec declares that posts ev (NULL: none). */
static const char *poster(const ac_spec *spec, const char *ev)
{
    const ac_names *effects = &spec->handlers[HK_EFFECT];
    for (size_t i = 0; i < effects->n; i++)
        if (effect_posts(spec, effects->v[i].s, ev))
            return effects->v[i].s;
    return NULL;
}

static int engine_event(const char *ev)
{
    for (const char *const *e = ac_engine_events; *e; e++)
        if (strcmp(*e, ev) == 0)
            return 1;
    return 0;
}

static int is_timer(const char *ev)
{
    return strncmp(ev, "after(", 6) == 0 && strchr(ev, '@') != NULL;
}

/* Sent from anywhere, whatever runs: by the outside or the engine. */
static int sent_outside(const ac_spec *spec, const char *ev)
{
    return names_has(&spec->outside, ev) || engine_event(ev);
}

/* Effects of state st post ev. */
static int state_posts(const ac_spec *spec, const ac_state_decl *st, const char *ev)
{
    for (size_t k = 0; k < st->n_effects; k++)
        if (effect_posts(spec, st->effects[k].name.s, ev))
            return 1;
    return 0;
}

/* Whether a state above s (one that invokes s's machine, transitively) runs an
 * effect that posts ev. Depth is bounded by the invoke tree (checked). */
static int above_posts(const ac_spec *spec, const ac_resolved *res, int s, const char *ev,
                       int depth)
{
    if (depth > AC_FSM_MAX_DEPTH)
        return 0;
    const char *mname = spec->machines[res->state_machine[s]].name.s;
    for (size_t i = 0; i < res->n_states; i++) {
        const ac_state_decl *a = res->states[i];
        if (!a->invoke.s || strcmp(a->invoke.s, mname) != 0)
            continue;
        if (state_posts(spec, a, ev) || above_posts(spec, res, (int)i, ev, depth + 1))
            return 1;
    }
    return 0;
}

/* Whether a state below s (in a machine s invokes, transitively) runs an effect that posts
 * ev: an event the deeper machines do not handle bubbles up to s. */
static int below_posts(const ac_spec *spec, const ac_resolved *res, int s, const char *ev,
                       int depth)
{
    const char *inv = res->states[s]->invoke.s;
    if (!inv || depth > AC_FSM_MAX_DEPTH)
        return 0;
    for (size_t i = 0; i < res->n_states; i++) {
        if (strcmp(spec->machines[res->state_machine[i]].name.s, inv) != 0)
            continue;
        if (state_posts(spec, res->states[i], ev) || below_posts(spec, res, (int)i, ev, depth + 1))
            return 1;
    }
    return 0;
}

/* An outside event no state handles, to suggest for a transition waiting for an event that
 * cannot happen where it is (NULL: none). */
static const char *unhandled_outside(const ac_spec *spec, const ac_resolved *res)
{
    for (size_t o = 0; o < spec->outside.n; o++) {
        int used = 0;
        for (size_t r = 0; r < res->n_rows && !used; r++)
            used = res->rows[r].event > 0 &&
                   strcmp(res->event_names[res->rows[r].event], spec->outside.v[o].s) == 0;
        if (!used)
            return spec->outside.v[o].s;
    }
    return NULL;
}

/* A transition of its own (not of a `*` source) waits in state s for an event that an effect
 * posts, while no effect that posts it runs there, above or below: an error at the event, with
 * the outside event no state handles as the likely one meant. */
static void check_row_event(ac_spec *spec, const ac_resolved *res, int s, const ac_row *row)
{
    const char *ev = res->event_names[row->event];
    if (row->decl->star || !row->decl->event.s || row->event > (int)spec->events.n ||
        is_timer(ev) || sent_outside(spec, ev) || !poster(spec, ev) ||
        state_posts(spec, res->states[s], ev) || above_posts(spec, res, s, ev, 0) ||
        below_posts(spec, res, s, ev, 0))
        return;
    const char *meant = unhandled_outside(spec, res);
    char hint[160] = "";
    if (meant)
        snprintf(hint, sizeof hint, " (did you mean '%s', which no state handles?)", meant);
    ac_spec_diag(spec, 1, row->decl->event.line, row->decl->event.col,
                 "event '%s' cannot happen in state '%s': %s posts it, and it does not run "
                 "there%s",
                 ev, res->states[s]->name.s, poster(spec, ev), hint);
}

/* Every event a transition waits for can be sent by something: one error per event, at its
 * first use. Timers and arrival events are checked where they are used. */
static void check_sendable(ac_spec *spec, const ac_resolved *res)
{
    char *seen = calloc(res->n_events ? res->n_events : 1, 1);
    for (size_t r = 0; seen && r < res->n_rows; r++) {
        const ac_row *row = &res->rows[r];
        if (row->kind == AC_TR_IGNORE || row->event <= 0 || row->event > (int)spec->events.n ||
            seen[row->event])
            continue;
        seen[row->event] = 1;
        const char *ev = res->event_names[row->event];
        if (is_timer(ev) || sent_outside(spec, ev) || poster(spec, ev))
            continue;
        const ac_name *at = &row->decl->event;
        ac_spec_diag(spec, 1, at->s ? at->line : row->decl->line, at->s ? at->col : row->decl->col,
                     "nothing sends event '%s': no effect posts it and the engine does not "
                     "(declare it 'outside event %s' if the embedding program or the user sends "
                     "it, or 'effect NAME posts %s')",
                     ev, ev, ev);
    }
    free(seen);
}

/* Whether the external row's event can happen in state st (index s). */
static int row_can_happen(const ac_spec *spec, const ac_resolved *res, int s,
                          const ac_state_decl *st, const ac_row *row)
{
    const char *ev = res->event_names[row->event];
    if (row->event > (int)spec->events.n) { /* arrival M.T */
        const char *dot = strrchr(ev, '.');
        return st->invoke.s && dot && strlen(st->invoke.s) == (size_t)(dot - ev) &&
               strncmp(st->invoke.s, ev, (size_t)(dot - ev)) == 0;
    }
    if (is_timer(ev)) {
        for (size_t k = 0; k < st->n_effects; k++)
            if (strcmp(st->effects[k].name.s, ev) == 0)
                return 1;
        return 0;
    }
    return sent_outside(spec, ev) || state_posts(spec, st, ev) || above_posts(spec, res, s, ev, 0);
}

void ac_spec_check_leave(ac_spec *spec, const ac_resolved *res)
{
    check_sendable(spec, res);
    for (size_t s = 0; s < res->n_states; s++) {
        const ac_state_decl *st = res->states[s];
        if (st->terminal || res->state_n_rows[s] == 0)
            continue; /* no rows at all: check_graph reports it */
        char waits[400];
        size_t wo = 0;
        int ok = 0, n_ext = 0, n_named = 0;
        waits[0] = 0;
        for (int r = 0; r < res->state_n_rows[s] && !ok; r++) {
            const ac_row *row = &res->rows[res->state_first_row[s] + r];
            if (row->kind != AC_TR_EXTERNAL)
                continue;
            if (row->event == 0) {
                ok = 1;
                break;
            }
            n_ext++;
            ok = row_can_happen(spec, res, (int)s, st, row);
            const char *ev = res->event_names[row->event];
            const char *who = row->event <= (int)spec->events.n ? poster(spec, ev) : NULL;
            int again = 0; /* named by an earlier row */
            for (int q = 0; q < r && !again; q++)
                again = res->rows[res->state_first_row[s] + q].event == row->event;
            n_named += !ok && !again;
            if (!ok && !again && wo < sizeof waits) {
                const char *why = who                                 ? " (posted by "
                                  : row->event <= (int)spec->events.n ? " (which nothing sends"
                                                                      : "";
                int w = snprintf(waits + wo, sizeof waits - wo, "%s%s%s%s%s", wo ? ", " : "", ev,
                                 why, who ? who : "", *why ? ")" : "");
                if (w > 0)
                    wo += (size_t)w;
            }
        }
        if (ok ||
            n_ext == 0) { /* only internal rows: check_graph reports a state with no way out */
            for (int r = 0; r < res->state_n_rows[s]; r++) {
                const ac_row *row = &res->rows[res->state_first_row[s] + r];
                if (row->kind != AC_TR_IGNORE && row->event > 0)
                    check_row_event(spec, res, (int)s, row);
            }
            continue;
        }
        ac_spec_diag(spec, 1, st->name.line, st->name.col,
                     "state '%s' can never be left: it waits for %s, and nothing active there "
                     "posts %s (run the effect in this state, add an 'after' timer, or declare "
                     "an event the outside sends with 'outside event')",
                     st->name.s, waits, n_named == 1 ? "it" : "them");
    }
}
