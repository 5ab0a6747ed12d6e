/*
 * turn.c - what a turn is, and what follows from it (agentc.h): a turn runs while the root
 * machine is in a state that invokes another machine, read from the spec's tables. Whether a
 * session is in a turn, settled, paused or ended, when a turn ends and how (last_turn), and
 * how the session ended, all derive from that here and nowhere else: the store finding
 * where a turn ended in a journal (ac_store_turn_end) and the spec's turn.* facts ask here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session_int.h"
#include "store_hooks.h"

/* True when state st has a row (not an ignore) on event ev. */
static int takes(const ac_fsm_tables *t, uint16_t st, uint16_t ev)
{
    const ac_fsm_state *s = &t->states[st];
    for (uint16_t r = 0; ev != AC_FSM_NONE && r < s->n_transitions; r++) {
        const ac_fsm_transition *tr = &t->transitions[s->first_transition + r];
        if (tr->event == ev && tr->kind != AC_TR_IGNORE)
            return 1;
    }
    return 0;
}

/* True when a transition of the root machine's initial state leads to st. */
static int rest_of_initial(const ac_fsm_tables *t, uint16_t st)
{
    const ac_fsm_state *init = &t->states[t->machines[t->root].initial];
    for (uint16_t r = 0; r < init->n_transitions; r++)
        if (t->transitions[init->first_transition + r].target == st)
            return 1;
    return 0;
}

int ac_turn_states_build(ac_engine *e)
{
    const ac_fsm_tables *t = e->t;
    e->turn_state = calloc(t->n_states ? t->n_states : 1, 1);
    if (!e->turn_state)
        return -1;
    e->ev_resume = ac_engine_event_index(e, "resume");
    int invokes = 0;
    for (uint16_t i = 0; i < t->n_states; i++)
        invokes |= t->states[i].machine == t->root && t->states[i].invoke != AC_FSM_NONE;
    for (uint16_t i = 0; i < t->n_states; i++) {
        const ac_fsm_state *s = &t->states[i];
        if (s->machine == t->root && !s->terminal)
            e->turn_state[i] = invokes
                                   ? s->invoke != AC_FSM_NONE
                                   : i != t->machines[t->root].initial && !rest_of_initial(t, i);
    }
    return 0;
}

/* The spec's rest state: the one state of the root machine a turn returns to (the target of
 * a transition from a turn state that is no turn state, not terminal, and not paused: it
 * takes no `resume`). AC_FSM_NONE when there is not exactly one. */
uint16_t ac_turn_rest_state(const ac_engine *e)
{
    const ac_fsm_tables *t = e->t;
    uint16_t found = AC_FSM_NONE;
    for (uint16_t i = 0; i < t->n_states; i++) {
        const ac_fsm_state *s = &t->states[i];
        if (!e->turn_state[i] || s->machine != t->root)
            continue;
        for (uint16_t r = 0; r < s->n_transitions; r++) {
            uint16_t to = t->transitions[s->first_transition + r].target;
            if (to == AC_FSM_NONE || to >= t->n_states || to == found || e->turn_state[to] ||
                t->states[to].terminal || t->states[to].machine != t->root ||
                takes(t, to, e->ev_resume))
                continue;
            if (found != AC_FSM_NONE)
                return AC_FSM_NONE; /* two: none is the one */
            found = to;
        }
    }
    return found;
}

bool ac_turn_state(const ac_engine *e, uint16_t st)
{
    return e && st < e->t->n_states && e->turn_state[st];
}

bool ac_turn_ended_by(bool in_turn_before, bool entered, bool in_turn_after)
{
    return (in_turn_before && (entered || !in_turn_after)) || (entered && !in_turn_after);
}

bool ac_session_ended(const ac_session *s)
{
    if (!s)
        return true; /* nothing will happen to no session */
    return (s->fsm.depth > 0 && s->e->t->states[s->fsm.state[0]].terminal) || s->fsm.error ||
           s->journal_failed;
}

bool ac_session_in_turn(const ac_session *s)
{
    return s && !ac_session_ended(s) && s->fsm.depth && ac_turn_state(s->e, s->fsm.state[0]);
}

bool ac_session_settled(const ac_session *s)
{
    return !ac_session_in_turn(s); /* at rest, paused, or ended */
}

enum ac_session_status ac_session_status(const ac_session *s)
{
    if (ac_session_ended(s))
        return AC_SESSION_ENDED;
    if (ac_session_in_turn(s))
        return AC_SESSION_RUNNING;
    /* at rest in a state that takes `resume` */
    return s->fsm.depth && takes(s->e->t, s->fsm.state[0], s->e->ev_resume) ? AC_SESSION_PAUSED
                                                                            : AC_SESSION_IDLE;
}

const char *ac_session_status_name(enum ac_session_status status)
{
    static const char *const names[] = {"idle",      "running", "failed", "cancelled",
                                        "completed", "paused",  "ended"};
    return (unsigned)status < sizeof names / sizeof *names ? names[status] : "unknown";
}

const char *ac_turn_outcome_name(enum ac_turn_outcome outcome)
{
    static const char *const names[] = {"none",      "completed",   "failed",
                                        "cancelled", "interrupted", "rolled_back"};
    return (unsigned)outcome < sizeof names / sizeof *names ? names[outcome] : "unknown";
}

enum ac_turn_outcome ac_session_last_turn(const ac_session *s, const char **error)
{
    if (error)
        *error = s && s->last_outcome == AC_TURN_FAILED ? s->last_error : NULL;
    return s ? s->last_outcome : AC_TURN_NONE;
}

const char *ac_session_error(const ac_session *s)
{
    if (!s)
        return NULL;
    if (s->end_how == AC_END_FAILED && s->error)
        return s->error;
    return s->last_outcome == AC_TURN_FAILED ? s->last_error : NULL;
}

void ac_turn_mark(ac_session *s, int mark)
{
    s->turn_mark = mark;
}

void ac_session_mark_end(ac_session *s, int how)
{
    s->end_how = how;
}

/* The running turn ended: how, from the reason given (fail() and the failure actions set
 * one) and what stopped it. */
static void turn_ended(ac_session *s, int paused)
{
    enum ac_turn_outcome o = AC_TURN_COMPLETED;
    if (s->error)
        o = AC_TURN_FAILED;
    else if (s->turn_mark == AC_TURN_MARK_CANCELLED)
        o = AC_TURN_CANCELLED;
    else if (s->turn_mark == AC_TURN_MARK_ROLLED_BACK)
        o = AC_TURN_ROLLED_BACK;
    else if (paused)
        o = AC_TURN_INTERRUPTED;
    s->last_outcome = o;
    s->turns_ended++;
    free(s->last_error);
    s->last_error = s->error; /* the reason goes with the turn */
    s->error = NULL;
    s->turn_mark = 0;
}

void ac_turn_before_event(ac_session *s, ac_turn_probe *p)
{
    p->in_turn = ac_session_in_turn(s);
    p->ended = ac_session_ended(s);
    p->paused = ac_session_status(s) == AC_SESSION_PAUSED;
    p->turns = s->fsm.counted_entries;
    if (!p->in_turn && !p->ended && s->error)
        ac_session_set_error(s, NULL); /* given outside a turn: no turn of this event fails by it */
}

/* After an event: a turn that ended is recorded and reported (the output's finished); a
 * turn that began starts with no reason to fail; a session that ended is dated. */
void ac_turn_after_event(ac_session *s, const ac_turn_probe *p, int64_t t_ms)
{
    int entered = s->fsm.counted_entries != p->turns; /* a turn began (and may have ended) */
    int now = ac_session_in_turn(s), ended = ac_session_ended(s);
    int finished = 0;
    if (ac_turn_ended_by(p->in_turn, entered, now)) {
        turn_ended(s, ac_session_status(s) == AC_SESSION_PAUSED);
        finished = 1;
    } else if (p->paused && s->turn_mark && s->last_outcome == AC_TURN_INTERRUPTED) {
        turn_ended(s, 0); /* the turn a pause stopped is cancelled or rolled back */
        finished = 1;
    }
    if (!now)
        s->turn_mark = 0; /* a mark is the running turn's */
    if (ended && !p->ended) {
        s->ended_ms = t_ms;
        if (!s->end_how) /* a reason given now, or a turn that failed as the session ended */
            s->end_how = s->error || s->fsm.error || (finished && s->last_outcome == AC_TURN_FAILED)
                             ? AC_END_FAILED
                             : AC_END_COMPLETED;
        finished = 1;
    }
    if (finished && s->e->has_output && s->e->out.finished)
        s->e->out.finished(s->e->out.ud, s);
    if (finished && s->sub)
        ac_subagent_child_finished(s);
    if (finished && s->parked && ac_session_status(s) != AC_SESSION_PAUSED)
        ac_subagent_unpark(s);
}

void ac_turn_fail_session(ac_session *s, const char *why, int64_t t_ms)
{
    if (ac_session_in_turn(s)) {
        ac_session_set_error(s, why);
        turn_ended(s, 0);
    }
    ac_session_set_error(s, why);
    s->end_how = AC_END_FAILED;
    s->ended_ms = t_ms;
}

void ac_session_get_end(const ac_session *s, ac_session_end *out)
{
    static const char *const how[] = {NULL, "completed", "failed", "cancelled", "closed"};
    memset(out, 0, sizeof *out);
    if (!s || !ac_session_ended(s))
        return;
    int h = s->end_how >= AC_END_COMPLETED && s->end_how <= AC_END_CLOSED ? s->end_how
                                                                          : AC_END_COMPLETED;
    out->ended = true;
    out->how = how[h];
    out->error = h == AC_END_FAILED ? ac_session_error(s) : NULL;
    out->at_ms = s->ended_ms;
}

size_t ac_session_ended_text(const ac_session *s, const char *name, char *buf, size_t cap)
{
    ac_session_end end;
    ac_session_get_end(s, &end);
    if (cap)
        buf[0] = 0;
    if (!end.ended || !cap)
        return 0;
    char when[32] = "an unknown time";
    time_t secs = (time_t)(end.at_ms / 1000);
    struct tm tm;
    if (end.at_ms > 0 && gmtime_r(&secs, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int n = snprintf(buf, cap, "session %s ended (%s%s%.300s) at %s; start a new one",
                     name ? name : s->id, end.how, end.error ? ": " : "",
                     end.error ? end.error : "", when);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

json_t *ac_turn_json(const ac_session *s)
{
    const char *error;
    enum ac_turn_outcome o = ac_session_last_turn(s, &error);
    return json_pack("{s:s, s:s*}", "outcome", ac_turn_outcome_name(o), "error", error);
}

json_t *ac_turn_end_json(const ac_session *s)
{
    ac_session_end end;
    ac_session_get_end(s, &end);
    if (!end.ended)
        return json_null();
    return json_pack("{s:s, s:s*, s:I}", "how", end.how, "error", end.error, "at_ms",
                     (json_int_t)end.at_ms);
}
