/*
 * leave.c - the checker's proof that every non-terminal state can be left.
 *
 * A state is left by an eventless transition, or by one of its own
 * transitions (external) on an event that something active there can post:
 *   - an event declared `outside event` (the user, the embedder);
 *   - an `after` timer of the state;
 *   - the arrival event M.T of the machine M the state invokes;
 *   - an event an effect of the state, or of a state above it, posts: the
 *     effects that declare `posts` post exactly those events, an effect
 *     without `posts` may post any event;
 *   - an event no effect declares it posts and that is not an arrival or a
 *     timer event: the outside sends it (the engine's spawn, user_message, ...).
 * A state none of whose ways out can happen is an error at its line, naming
 * the events it waits for and, for each, who could post it.
 */
#include <stdlib.h>
#include <string.h>

#include "sugar.h"

static const ac_posts *posts_of(const ac_spec *spec, const char *effect)
{
    for (size_t i = 0; i < spec->n_posts; i++)
        if (strcmp(spec->posts[i].effect.s, effect) == 0)
            return &spec->posts[i];
    return NULL;
}

static int names_has(const ac_names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, s) == 0)
            return 1;
    return 0;
}

/* Whether some effect declares that it posts `ev`; *who gets one of them. */
static int declared_poster(const ac_spec *spec, const char *ev, const char **who)
{
    for (size_t i = 0; i < spec->n_posts; i++)
        if (names_has(&spec->posts[i].events, ev)) {
            *who = spec->posts[i].effect.s;
            return 1;
        }
    return 0;
}

/* Effects of state s may post ev. */
static int state_posts(const ac_spec *spec, const ac_state_decl *st, const char *ev)
{
    for (size_t k = 0; k < st->n_effects; k++) {
        const char *eff = st->effects[k].name.s;
        const ac_posts *p = posts_of(spec, eff);
        if (strncmp(eff, "after(", 6) == 0)
            continue; /* a timer posts its own event only (checked by name) */
        if (!p || names_has(&p->events, ev))
            return 1;
    }
    return 0;
}

/* Whether a state above s (one that invokes s's machine, transitively) runs an
 * effect that may post ev. Depth is bounded by the invoke tree (checked). */
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

void ac_spec_check_leave(ac_spec *spec, const ac_resolved *res)
{
    for (size_t s = 0; s < res->n_states; s++) {
        const ac_state_decl *st = res->states[s];
        if (st->terminal || res->state_n_rows[s] == 0)
            continue; /* no rows at all: check_graph reports it */
        char waits[400];
        size_t wo = 0;
        int ok = 0, n_ext = 0;
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
            const char *ev = res->event_names[row->event];
            const char *who = NULL;
            if (row->event > (int)spec->events.n) { /* arrival M.T */
                const char *dot = strrchr(ev, '.');
                ok = st->invoke.s && dot && strlen(st->invoke.s) == (size_t)(dot - ev) &&
                     strncmp(st->invoke.s, ev, (size_t)(dot - ev)) == 0;
            } else if (strncmp(ev, "after(", 6) == 0 && strchr(ev, '@')) {
                for (size_t k = 0; k < st->n_effects; k++)
                    ok |= strcmp(st->effects[k].name.s, ev) == 0;
            } else if (names_has(&spec->outside, ev) || !declared_poster(spec, ev, &who)) {
                ok = 1;
            } else {
                ok = state_posts(spec, st, ev) || above_posts(spec, res, (int)s, ev, 0);
            }
            if (!ok && wo < sizeof waits) {
                int w = who ? snprintf(waits + wo, sizeof waits - wo, "%s%s (posted by %s)",
                                       wo ? ", " : "", ev, who)
                            : snprintf(waits + wo, sizeof waits - wo, "%s%s", wo ? ", " : "", ev);
                if (w > 0)
                    wo += (size_t)w;
            }
        }
        if (ok || n_ext == 0)
            continue; /* only internal rows: check_graph reports a state with no way out */
        ac_spec_diag(spec, 1, st->name.line, st->name.col,
                     "state '%s' can never be left: it waits for %s, and nothing active there "
                     "posts %s (run the effect in this state, add an 'after' timer, or declare "
                     "an event the outside sends with 'outside event')",
                     st->name.s, waits, n_ext == 1 ? "it" : "them");
    }
}
