/*
 * session.c - sessions: posting events (journal first, then dispatch),
 * re-entrancy (events posted by handlers wait for the current dispatch),
 * tracing, and the session's JSON form.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "session_int.h"

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void set_str(char **slot, const char *v)
{
    char *d = xstrdup(v);
    free(*slot);
    *slot = d;
}

/* Trace: recorded as the event's steps, and forwarded to the output. */
static void on_trace(void *ud, const ac_trace_rec *r)
{
    ac_session *s = ud;
    if (s->journal)
        ac_journal_add_step(s->journal, s->e->t, r);
    if (s->step_fn)
        s->step_fn(s->step_ud, r);
    if (s->e->has_output && s->e->out.trace)
        s->e->out.trace(s->e->out.ud, s, r);
}

static int apply(ac_session *s, uint16_t type, json_t *data, int64_t t_ms)
{
    s->seq++;
    if (s->journal)
        ac_journal_write_event(s->journal, s->seq, t_ms, s->e->t->event_names[type], data);
    ac_event ev = {type, t_ms, data};
    s->dispatching = 1;
    int rc = ac_fsm_dispatch(&s->fsm, &ev);
    s->dispatching = 0;
    if (s->journal)
        ac_journal_write_steps(s->journal, s->seq);
    json_decref(data);
    return rc;
}

static void session_free_now(ac_session *s);
static void drain_pending(ac_session *s);

/* Drops the events still waiting to be applied. */
static void pending_clear(ac_session *s)
{
    while (s->pending) {
        ac_pending_event *p = s->pending;
        s->pending = p->next;
        json_decref(p->data);
        free(p);
    }
    s->pending_tail = NULL;
}

int ac_session_post_index(ac_session *s, uint16_t type, json_t *data, int64_t t_ms)
{
    if (type == AC_FSM_NONE || type == 0 || type >= s->e->t->n_events) {
        json_decref(data);
        return -2;
    }
    if (t_ms == 0)
        t_ms = ac_wall_now_ms();
    if (s->dispatching) {
        ac_pending_event *p = calloc(1, sizeof *p);
        if (!p) {
            json_decref(data);
            return AC_FSM_FAILED;
        }
        p->type = type;
        p->t_ms = t_ms;
        p->data = data;
        if (s->pending_tail)
            s->pending_tail->next = p;
        else
            s->pending = p;
        s->pending_tail = p;
        return AC_FSM_HANDLED;
    }
    int rc = apply(s, type, data, t_ms);
    drain_pending(s);
    if (s->free_requested && !s->dispatching)
        session_free_now(s); /* asked for by a handler or an output callback */
    else if (s->journal && ac_session_settled(s))
        ac_journal_flush(s->journal); /* waiting for input: the loop may not turn soon */
    return rc;
}

/* Applies the events posted while dispatching, in order. */
static void drain_pending(ac_session *s)
{
    while (s->pending && !s->dispatching && !s->free_requested) {
        ac_pending_event *p = s->pending;
        s->pending = p->next;
        if (!s->pending)
            s->pending_tail = NULL;
        apply(s, p->type, p->data, p->t_ms);
        free(p);
    }
}

int ac_session_post(ac_session *s, const char *event, void *data, int64_t t_ms)
{
    uint16_t type = ac_engine_event_index(s->e, event);
    return ac_session_post_index(s, type, data, t_ms);
}

typedef struct later {
    ac_session *s;
    uint16_t type;
    json_t *data;
    uint64_t timer;
    struct later *next;
} later;

static void later_unlink(later *l)
{
    for (later **pp = (later **)&l->s->laters; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            return;
        }
}

static void later_fire(void *ud)
{
    later *l = ud;
    later_unlink(l);
    ac_session_post_index(l->s, l->type, l->data, 0);
    free(l);
}

/* Deferred posts belong to their session: freeing it cancels them. */
static void later_cancel_all(ac_session *s)
{
    while (s->laters) {
        later *l = s->laters;
        s->laters = l->next;
        ac_loop_cancel_timer(s->e->loop, l->timer);
        json_decref(l->data);
        free(l);
    }
}

void ac_session_post_later(ac_session *s, const char *event, json_t *data)
{
    later *l = calloc(1, sizeof *l);
    if (!l || !s->e->loop || s->replaying) {
        json_decref(data);
        free(l);
        return;
    }
    l->s = s;
    l->type = ac_engine_event_index(s->e, event);
    l->data = data;
    l->timer = ac_loop_timer(s->e->loop, 0, later_fire, l);
    l->next = s->laters;
    s->laters = l;
}

int ac_session_send(ac_session *s, const char *text)
{
    return ac_session_post_index(s, s->e->ev_user_message, json_pack("{s:s}", "text", text), 0);
}

int ac_session_cancel(ac_session *s)
{
    return ac_session_post_index(s, s->e->ev_cancel, NULL, 0);
}

static json_t *spawn_payload(ac_engine *e)
{
    json_t *tools = json_array();
    ac_tools_add_defs(e, tools);
    json_t *d = json_pack("{s:o}", "tools", tools);
    if (d && e->system_prompt)
        json_object_set_new(d, "system", json_string(e->system_prompt));
    return d;
}

static ac_session *session_new(ac_engine *e, const char *id, const char *journal_path, int replay,
                               char *err, size_t errcap)
{
    ac_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    s->e = e;
    s->id = strdup(id ? id : "s1");
    s->conv = ac_conv_new();
    s->queued = json_array();
    s->status = strdup("idle");
    s->answer = strdup("");
    if (!s->id || !s->conv || !s->queued || !s->status || !s->answer) {
        snprintf(err, errcap, "out of memory");
        goto fail;
    }
    char dir_path[4096];
    if (!journal_path && e->journal_dir && !replay) {
        int k = snprintf(dir_path, sizeof dir_path, "%s/", e->journal_dir);
        for (const char *c = s->id; k > 0 && *c && (size_t)k < sizeof dir_path - 7; c++)
            dir_path[k++] =
                (char)(isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-' ? *c
                                                                                         : '_');
        if (k > 0 && (size_t)k < sizeof dir_path - 7) {
            memcpy(dir_path + k, ".jsonl", 7);
            journal_path = dir_path;
        } else {
            snprintf(err, errcap, "journal directory path too long");
            goto fail;
        }
    }
    s->replaying = replay;
    if (journal_path && !replay) {
        s->journal = ac_journal_open(journal_path, e->loop, err, errcap);
        if (!s->journal)
            goto fail;
        if (ac_journal_write_header(s->journal, e->t, s->id, e->param_overrides) < 0) {
            snprintf(err, errcap, "out of memory");
            goto fail;
        }
    }
    /* Tracing costs a call per transition: installed only when someone
     * listens (the journal's recorded steps, the output's trace, a replay). */
    int traced = s->journal || replay || (e->has_output && e->out.trace);
    ac_fsm_init(&s->fsm, &e->binding, s, traced ? on_trace : NULL, s);
    ac_event start = {0, ac_wall_now_ms(), NULL};
    s->dispatching = 1; /* what effects post while starting waits in the queue */
    int started = ac_fsm_start(&s->fsm, &start);
    s->dispatching = 0;
    if (started != AC_FSM_HANDLED) {
        snprintf(err, errcap, "the spec failed to start (see the trace)");
        ac_event stop = {0, start.time_ms, NULL};
        ac_fsm_stop(&s->fsm, &stop);
        later_cancel_all(s);
        pending_clear(s);
        goto fail;
    }
    e->live_sessions++;
    drain_pending(s);
    if (e->ev_spawn != AC_FSM_NONE && !replay && !s->free_requested)
        ac_session_post_index(s, e->ev_spawn, spawn_payload(e), 0);
    else if (s->free_requested) {
        session_free_now(s);
        snprintf(err, errcap, "the session was freed while it started");
        return NULL;
    }
    return s;
fail:
    ac_conv_free(s->conv);
    json_decref(s->queued);
    ac_journal_close(s->journal);
    free(s->status);
    free(s->answer);
    free(s->id);
    free(s);
    return NULL;
}

ac_session *ac_session_new(ac_engine *e, const char *id, const char *journal_path, char *err,
                           size_t errcap)
{
    return session_new(e, id, journal_path, 0, err, errcap);
}

ac_session *ac_session_new_replay(ac_engine *e, const char *id, char *err, size_t errcap)
{
    return session_new(e, id, NULL, 1, err, errcap);
}

void ac_session_set_step_hook(ac_session *s, ac_trace_fn fn, void *ud)
{
    s->step_fn = fn;
    s->step_ud = ud;
}

void ac_session_free(ac_session *s)
{
    if (!s)
        return;
    if (s->dispatching) { /* from a handler or an output callback: once the event is done */
        s->free_requested = 1;
        return;
    }
    session_free_now(s);
}

static void session_free_now(ac_session *s)
{
    s->in_free = 1;
    ac_event ev = {0, 0, NULL};
    ac_fsm_stop(&s->fsm, &ev);
    later_cancel_all(s);
    pending_clear(s);
    ac_journal_close(s->journal);
    s->e->live_sessions--;
    ac_conv_free(s->conv);
    json_decref(s->queued);
    free(s->partial);
    free(s->status);
    free(s->answer);
    free(s->error);
    free(s->id);
    free(s);
}

const char *ac_session_id(const ac_session *s)
{
    return s->id;
}
ac_engine *ac_session_engine(const ac_session *s)
{
    return s->e;
}
ac_conv *ac_session_conv(ac_session *s)
{
    return s->conv;
}
const ac_fsm *ac_session_fsm(const ac_session *s)
{
    return &s->fsm;
}
void *ac_session_userdata(const ac_session *s)
{
    return s->userdata;
}
void ac_session_set_userdata(ac_session *s, void *ud)
{
    s->userdata = ud;
}

const char *ac_session_state(const ac_session *s, const char *machine)
{
    const ac_fsm_tables *t = s->e->t;
    for (uint16_t m = 0; m < t->n_machines; m++)
        if (strcmp(t->machines[m].name, machine) == 0) {
            uint16_t st = ac_fsm_state_of(&s->fsm, m);
            return st == AC_FSM_NONE ? NULL : t->states[st].name;
        }
    return NULL;
}

bool ac_session_ended(const ac_session *s)
{
    return s->fsm.depth > 0 && s->e->t->states[s->fsm.state[0]].terminal;
}

bool ac_session_settled(const ac_session *s)
{
    if (ac_session_ended(s) || s->fsm.error)
        return true;
    /* settled: the root machine's state invokes nothing and runs no effects
     * besides timers waiting for input (Idle, Paused) */
    const ac_fsm_state *st = &s->e->t->states[s->fsm.state[0]];
    return s->fsm.depth == 1 && st->invoke == AC_FSM_NONE && strcmp(s->status, "running") != 0;
}

const char *ac_session_status(const ac_session *s)
{
    return s->status;
}
const char *ac_session_answer(const ac_session *s)
{
    return s->answer;
}
const char *ac_session_error(const ac_session *s)
{
    return s->error;
}
const char *ac_session_partial(const ac_session *s)
{
    return s->partial ? s->partial : "";
}

/* internal setters used by handlers */
void ac_session_set_status(ac_session *s, const char *status)
{
    set_str(&s->status, status);
}
void ac_session_set_answer(ac_session *s, const char *answer)
{
    set_str(&s->answer, answer ? answer : "");
}
void ac_session_set_error(ac_session *s, const char *error)
{
    set_str(&s->error, error);
}

char *ac_session_to_json(const ac_session *s)
{
    const ac_fsm_tables *t = s->e->t;
    json_t *states = json_array();
    for (uint8_t i = 0; i < s->fsm.depth; i++) {
        const ac_fsm_state *st = &t->states[s->fsm.state[i]];
        json_array_append_new(states, json_pack("[s s]", t->machines[st->machine].name, st->name));
    }
    char *conv = ac_conv_to_json(s->conv);
    json_error_t jerr;
    json_t *cj = conv ? json_loads(conv, 0, &jerr) : NULL;
    free(conv);
    json_t *o = json_pack("{s:s, s:s, s:o, s:s, s:s, s:s?, s:O, s:i, s:o?}", "spec_hash", t->hash,
                          "id", s->id, "states", states, "status", s->status, "answer", s->answer,
                          "error", s->error, "queued", s->queued, "compacted",
                          s->compacted_this_plan, "conversation", cj);
    char *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return out;
}
