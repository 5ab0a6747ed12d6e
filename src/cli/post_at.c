/*
 * post_at.c - events posted when a session enters a state (post_at.h).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "post_at.h"

/* The state `name` (STATE or MACHINE.STATE) names: its index, AC_FSM_NONE when none does, or
 * AC_FSM_NONE - 1 when several machines have one of that name. */
static uint16_t find_state(const ac_fsm_tables *t, const char *name, size_t len)
{
    const char *dot = memchr(name, '.', len);
    uint16_t found = AC_FSM_NONE;
    for (uint16_t s = 0; s < t->n_states; s++) {
        const char *m = t->machines[t->states[s].machine].name, *sn = t->states[s].name;
        int hit = dot ? strlen(m) == (size_t)(dot - name) &&
                            !strncmp(m, name, (size_t)(dot - name)) &&
                            strlen(sn) == len - (size_t)(dot - name) - 1 &&
                            !strncmp(sn, dot + 1, strlen(sn))
                      : strlen(sn) == len && !strncmp(sn, name, len);
        if (hit && found != AC_FSM_NONE)
            return AC_FSM_NONE - 1;
        if (hit)
            found = s;
    }
    return found;
}

static const char *find_event(const ac_fsm_tables *t, const char *name, size_t len)
{
    for (uint16_t e = 1; e < t->n_events; e++)
        if (strlen(t->event_names[e]) == len && !strncmp(t->event_names[e], name, len))
            return t->event_names[e];
    return NULL;
}

static int parse_one(ac_post_at_entry *x, const ac_fsm_tables *t, const char *spec, char *err,
                     size_t errcap)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1]) {
        snprintf(err, errcap, "--post-at %s: expected STATE=EVENT[:PAYLOAD]", spec);
        return -1;
    }
    uint16_t s = find_state(t, spec, (size_t)(eq - spec));
    if (s >= AC_FSM_NONE - 1) {
        snprintf(err, errcap, "--post-at %s: %s state '%.*s' (%s)", spec,
                 s == AC_FSM_NONE ? "no" : "more than one", (int)(eq - spec), spec,
                 s == AC_FSM_NONE ? "agentc diagram SPEC lists the states"
                                  : "name it MACHINE.STATE");
        return -1;
    }
    const char *ev = eq + 1, *colon = strchr(ev, ':');
    size_t evlen = colon ? (size_t)(colon - ev) : strlen(ev);
    /* an event name may hold a dot (tools.changed) but no colon */
    if (!(x->event = find_event(t, ev, evlen))) {
        snprintf(err, errcap, "--post-at %s: the spec declares no event '%.*s'", spec, (int)evlen,
                 ev);
        return -1;
    }
    if (t->states[s].terminal) {
        snprintf(err, errcap, "--post-at %s: %s is a terminal state: nothing happens there", spec,
                 t->states[s].name);
        return -1;
    }
    x->state = s;
    x->payload = colon ? colon + 1 : NULL;
    x->used = 0;
    return 0;
}

int ac_post_at_parse(ac_post_at *p, const ac_fsm_tables *t, const char *const *specs, size_t n,
                     char *err, size_t errcap)
{
    p->n = 0;
    if (n > AC_POST_AT_MAX) {
        snprintf(err, errcap, "--post-at: at most %d", AC_POST_AT_MAX);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_one(&p->e[p->n++], t, specs[i], err, errcap) < 0)
            return -1;
    return 0;
}

static json_t *payload_json(const char *text)
{
    if (!text)
        return NULL;
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    if (json_is_object(j) || json_is_array(j))
        return j;
    json_decref(j);
    return json_pack("{s:s}", "text", text);
}

void ac_post_at_seen(ac_post_at *p, ac_session *s, const ac_trace_rec *r)
{
    if (!p || r->kind != AC_TRACE_TRANSITION)
        return;
    for (size_t i = 0; i < p->n; i++) {
        ac_post_at_entry *x = &p->e[i];
        if (x->used || x->state != r->to)
            continue;
        x->used = 1;
        ac_session_post(s, x->event, payload_json(x->payload), 0);
    }
}
