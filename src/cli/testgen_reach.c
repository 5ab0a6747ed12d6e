/*
 * testgen_reach.c - which transitions of a spec the engine's posting rules let happen at all:
 * the denominator of `agentc testgen`'s target. A row can happen when its source state can be
 * entered and its event can happen there (leave.c's rules: an outside or engine event, a timer,
 * an arrival, an event an effect active there posts, as the built-in handlers' contracts say),
 * except in the root machine's initial state, which the engine leaves on `spawn` as it creates
 * the session: nothing else happens there.
 */
#include <stdlib.h>
#include <string.h>

#include "leave.h"
#include "session/contracts.h"
#include "session/guardrail.h"
#include "session/spec_rt.h"
#include "testgen.h"

int tg_effect_posts(void *ud, uint16_t effect, uint16_t ev)
{
    const ac_fsm_tables *t = ud;
    const char *name = t->effect_names[effect];
    if (ac_guardrail_effect(name))
        return ac_guardrail_posts(t->event_names[ev]);
    if (ac_spec_rt_defines(2, name))
        return 0;
    for (size_t i = 0; i < ac_n_builtin_contracts; i++)
        if (ac_builtin_contracts[i].kind == 2 && !strcmp(ac_builtin_contracts[i].handler, name))
            return ac_contract_posts(&ac_builtin_contracts[i], t->event_names[ev]);
    return -1;
}

/* The machine whose arrival event ev is (M.T, T terminal in M), with T in *term; else
 * AC_FSM_NONE. */
static uint16_t arrival(const ac_fsm_tables *t, uint16_t ev, uint16_t *term)
{
    const char *n = t->event_names[ev], *dot = strrchr(n, '.');
    for (uint16_t s = 0; dot && s < t->n_states; s++) {
        const char *m = t->machines[t->states[s].machine].name;
        if (t->states[s].terminal && strlen(m) == (size_t)(dot - n) &&
            !strncmp(m, n, (size_t)(dot - n)) && !strcmp(t->states[s].name, dot + 1)) {
            *term = s;
            return t->states[s].machine;
        }
    }
    return AC_FSM_NONE;
}

/* Why row r cannot happen with its source entered (NULL: it can). */
static const char *row_blocked(const ac_fsm_tables *t, uint16_t r, const uint8_t *entered)
{
    const ac_fsm_transition *tr = &t->transitions[r];
    uint16_t s = tr->source, term;
    if (tr->event == 0)
        return NULL;
    if (s == t->machines[t->root].initial && strcmp(t->event_names[tr->event], "spawn"))
        return "the engine applies spawn as it creates the session: no other event happens in "
               "the root machine's initial state";
    if (arrival(t, tr->event, &term) != AC_FSM_NONE && !entered[term])
        return "the machine it waits for never ends in that state";
    if (!ac_leave_can_happen(t, tg_effect_posts, (void *)t, s, tr->event))
        return "no handler posts its event there: not an outside or engine event, and no "
               "effect active in its state posts it";
    return NULL;
}

/* The states that can be entered, to a fixpoint. */
static void enter_states(const ac_fsm_tables *t, uint8_t *entered)
{
    entered[t->machines[t->root].initial] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint16_t s = 0; s < t->n_states; s++) {
            if (!entered[s])
                continue;
            uint16_t inv = t->states[s].invoke;
            if (inv != AC_FSM_NONE && !entered[t->machines[inv].initial])
                changed = entered[t->machines[inv].initial] = 1;
            const ac_fsm_state *st = &t->states[s];
            for (uint16_t k = 0; k < st->n_transitions; k++) {
                uint16_t r = (uint16_t)(st->first_transition + k);
                uint16_t to = t->transitions[r].target;
                if (!entered[to] && !row_blocked(t, r, entered))
                    changed = entered[to] = 1;
            }
        }
    }
}

const char **tg_unreachable(const ac_fsm_tables *t)
{
    uint8_t *entered = calloc((size_t)t->n_states + 1, 1);
    const char **why = calloc((size_t)t->n_transitions + 1, sizeof *why);
    if (!entered || !why) {
        free(entered);
        free(why);
        return NULL;
    }
    enter_states(t, entered);
    for (uint16_t r = 0; r < t->n_transitions; r++)
        why[r] = !entered[t->transitions[r].source] ? "its source state is never entered"
                                                    : row_blocked(t, r, entered);
    free(entered);
    return why;
}
