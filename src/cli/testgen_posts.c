/*
 * testgen_posts.c - the events `agentc testgen`'s candidates post as a state is entered
 * (--post-at): in each state that can be entered, every event one of its own rows waits for
 * that the outside or the engine sends (an `outside event`, pause, resume, cancel, close,
 * rollback, turn.cancel, ping, tools.changed, a user message queued), and the event of a timer
 * running there (an effect posting one event, given a duration), as if it fired at once.
 * Also the params every candidate runs with: the timers inside a turn made short.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "testgen_search.h"

static int engine_event(const char *ev)
{
    for (const char *const *e = ac_engine_events; *e; e++)
        if (!strcmp(*e, ev))
            return strcmp(ev, "spawn") != 0; /* applied as the session is created */
    return 0;
}

/* The one event effect posts and a duration param among its args (a timer): the event, else
 * 0. */
static uint16_t timer_event(const ac_fsm_tables *t, uint16_t use)
{
    const ac_fsm_effect_use *u = &t->effect_uses[use];
    uint16_t ev = 0;
    for (uint16_t e = 1; e < t->n_events; e++) {
        int p = tg_effect_posts((void *)t, u->effect, e);
        if (p < 0 || (p > 0 && ev))
            return 0;
        if (p > 0)
            ev = e;
    }
    const uint16_t *args = t->lists + u->args;
    for (uint16_t i = 1; ev && i <= args[0]; i++)
        if (args[i] < t->n_params && t->params[args[i]].type == AC_PARAM_DURATION)
            return ev;
    return 0;
}

static int state_timer(const ac_fsm_tables *t, uint16_t s, uint16_t ev)
{
    const uint16_t *uses = t->lists + t->states[s].effects;
    for (uint16_t k = 1; k <= uses[0]; k++)
        if (timer_event(t, uses[k]) == ev)
            return 1;
    return 0;
}

void tg_alpha_posts(tg_alpha *a, const ac_fsm_tables *t)
{
    const char **why = tg_unreachable(t);
    for (uint16_t s = 0; why && s < t->n_states; s++) {
        const ac_fsm_state *st = &t->states[s];
        for (uint16_t k = 0; k < st->n_transitions; k++) {
            uint16_t r = (uint16_t)(st->first_transition + k), ev = t->transitions[r].event;
            if (!ev || why[r] || t->transitions[r].kind == AC_TR_IGNORE)
                continue;
            const char *en = t->event_names[ev];
            int outside = t->event_flags && (t->event_flags[ev] & AC_EV_OUTSIDE);
            if (!outside && !engine_event(en) && !state_timer(t, s, ev))
                continue;
            char v[300], label[360];
            snprintf(v, sizeof v, "%s.%s=%s%s", t->machines[st->machine].name, st->name, en,
                     !strcmp(en, "user_message") ? ":and then 4 * 5?" : "");
            snprintf(label, sizeof label, "%s at %s", en, st->name);
            tg_alpha_add_post(a, s, label, strdup(v));
        }
    }
    free(why);
}

void tg_fast_timers(const ac_fsm_tables *t, ac_buf *b)
{
    uint8_t *done = calloc((size_t)t->n_params + 1, 1);
    for (uint16_t s = 0; done && s < t->n_states; s++) {
        const uint16_t *uses = t->lists + t->states[s].effects;
        if (t->states[s].machine == t->root) /* at rest: a timer there ends the session */
            continue;
        for (uint16_t k = 1; k <= uses[0]; k++) {
            if (!timer_event(t, uses[k]))
                continue;
            const uint16_t *args = t->lists + t->effect_uses[uses[k]].args;
            for (uint16_t i = 1; i <= args[0]; i++) {
                uint16_t p = args[i];
                if (p < t->n_params && t->params[p].type == AC_PARAM_DURATION && !done[p]) {
                    done[p] = 1;
                    ac_buf_printf(b, "--param\n%s=2ms\n", t->params[p].name);
                }
            }
        }
    }
    free(done);
}
