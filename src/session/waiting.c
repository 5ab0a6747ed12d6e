/*
 * waiting.c - what a session can accept now and what it waits for, derived
 * from the tables and the active configuration; and the failure of a session
 * that nothing can move any more ("stuck"), named after its state.
 */
#include <string.h>

#include "session/spec_rt.h"
#include "session_int.h"

static int is_arrival_or_timer(const ac_fsm_tables *t, uint16_t ev)
{
    if (t->event_flags && (t->event_flags[ev] & AC_EV_TIMER))
        return 1;
    const char *n = t->event_names[ev];
    const char *dot = strrchr(n, '.');
    if (!dot)
        return 0;
    for (uint16_t m = 0; m < t->n_machines; m++) {
        size_t l = strlen(t->machines[m].name);
        if ((size_t)(dot - n) == l && strncmp(n, t->machines[m].name, l) == 0)
            return 1;
    }
    return 0;
}

static int add_unique(const char **names, size_t cap, size_t *n, const char *name)
{
    size_t lim = *n < cap ? *n : cap;
    for (size_t i = 0; i < lim; i++)
        if (names && names[i] == name)
            return 0;
    if (names && *n < cap)
        names[*n] = name;
    (*n)++;
    return 1;
}

/* Events accepted by the rows of state st (no ignores), filtered. */
static void state_events(const ac_fsm_tables *t, uint16_t st, int outside_only, int own_only,
                         const char **names, size_t cap, size_t *n, uint8_t *seen)
{
    const ac_fsm_state *s = &t->states[st];
    for (uint16_t r = 0; r < s->n_transitions; r++) {
        const ac_fsm_transition *tr = &t->transitions[s->first_transition + r];
        if (tr->event == AC_FSM_EVENTLESS || tr->kind == AC_TR_IGNORE || seen[tr->event])
            continue;
        if (outside_only && !(t->event_flags && (t->event_flags[tr->event] & AC_EV_OUTSIDE)))
            continue;
        if (own_only && is_arrival_or_timer(t, tr->event))
            continue;
        seen[tr->event] = 1;
        add_unique(names, cap, n, t->event_names[tr->event]);
    }
}

static size_t accepted(const ac_session *s, const char **names, size_t cap, int outside_only,
                       int deepest_only)
{
    if (!s || !s->fsm.depth)
        return 0;
    const ac_fsm_tables *t = s->e->t;
    uint8_t seen[4096];
    if (t->n_events > sizeof seen)
        return 0;
    memset(seen, 0, t->n_events);
    size_t n = 0;
    for (int lv = s->fsm.depth - 1; lv >= 0; lv--) {
        state_events(t, s->fsm.state[lv], outside_only, deepest_only, names, cap, &n, seen);
        if (deepest_only)
            break;
    }
    return n;
}

size_t ac_session_accepted_events(const ac_session *s, const char **names, size_t cap,
                                  int outside_only)
{
    return accepted(s, names, cap, outside_only, 0);
}

static int spec_has_outside(const ac_fsm_tables *t)
{
    if (!t->event_flags)
        return 0;
    for (uint16_t e = 1; e < t->n_events; e++)
        if (t->event_flags[e] & AC_EV_OUTSIDE)
            return 1;
    return 0;
}

size_t ac_session_waiting_events(const ac_session *s, const char **names, size_t cap)
{
    if (!s)
        return 0;
    if (spec_has_outside(s->e->t))
        return accepted(s, names, cap, 1, 0);
    return accepted(s, names, cap, 0, 1);
}

/* Whether an effect runs in one of the active states (an effect can post). */
static int effect_active(const ac_session *s)
{
    const ac_fsm_tables *t = s->e->t;
    for (int lv = 0; lv < s->fsm.depth; lv++)
        if (t->lists[t->states[s->fsm.state[lv]].effects])
            return 1;
    return 0;
}

int ac_session_wait_state(const ac_session *s, const char **state)
{
    if (state)
        *state = NULL;
    if (!s || !s->fsm.depth)
        return AC_WAIT_NONE;
    const ac_fsm_tables *t = s->e->t;
    if (state)
        *state = t->states[s->fsm.state[s->fsm.depth - 1]].name;
    if (ac_session_settled(s) || s->raised.head || s->inbox.head || effect_active(s))
        return AC_WAIT_NONE;
    return ac_session_waiting_events(s, NULL, 0) ? AC_WAIT_OUTSIDE : AC_WAIT_STUCK;
}

static int fail_at(ac_session *s, const char *reason, int64_t t_ms);

void ac_session_check_stuck(ac_session *s, int64_t t_ms)
{
    const char *state;
    if (!ac_session_in_turn(s) || ac_session_wait_state(s, &state) != AC_WAIT_STUCK)
        return;
    const ac_fsm_tables *t = s->e->t;
    const ac_fsm_state *st = &t->states[s->fsm.state[s->fsm.depth - 1]];
    char msg[512];
    snprintf(msg, sizeof msg,
             "stuck in state %s.%s (spec line %u): no effect or timer runs there, nothing is "
             "queued, and it waits for no event the outside sends",
             t->machines[st->machine].name, st->name, st->line);
    fail_at(s, msg, t_ms); /* dated by the event that left it there: replays agree */
}

int ac_session_fail(ac_session *s, const char *reason)
{
    return fail_at(s, reason, ac_wall_now_ms());
}

static int fail_at(ac_session *s, const char *reason, int64_t t_ms)
{
    if (!s || !reason || ac_session_ended(s))
        return -1;
    ac_turn_fail_session(s, reason, t_ms);
    s->fsm.error = 1; /* ended: nothing more is applied */
    if (s->e->has_output && s->e->out.finished)
        s->e->out.finished(s->e->out.ud, s);
    if (s->sub)
        ac_subagent_child_finished(s);
    return 0;
}
