/*
 * replay.c - ac_session_replay: a journal re-posted into a replay session,
 * each event's steps compared with the recorded ones by identity.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "session/snapshot.h"
#include "session_int.h"

typedef struct replay_ctx {
    const ac_fsm_tables *t;
    json_t *got; /* STEPs of the event being applied */
} replay_ctx;

static void on_step(void *ud, const ac_trace_rec *r)
{
    replay_ctx *c = ud;
    json_t *step = c->got ? ac_journal_step_json(c->t, r) : NULL;
    if (step)
        json_array_append_new(c->got, step);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static void fill_step(ac_replay_step *o, const json_t *step)
{
    memset(o, 0, sizeof *o);
    if (!json_is_array(step))
        return;
    o->present = true;
    copy_str(o->machine, sizeof o->machine, json_string_value(json_array_get(step, 0)));
    copy_str(o->from, sizeof o->from, json_string_value(json_array_get(step, 1)));
    copy_str(o->event, sizeof o->event, json_string_value(json_array_get(step, 2)));
    copy_str(o->to, sizeof o->to, json_string_value(json_array_get(step, 3)));
    o->line = (int)json_integer_value(json_array_get(step, 4));
    json_t *g = json_array_get(step, 5), *acts = json_array_get(step, 6);
    copy_str(o->guard, sizeof o->guard, g ? json_string_value(g) : "?");
    if (!json_is_array(acts)) {
        copy_str(o->actions, sizeof o->actions, "?");
        return;
    }
    size_t k, at = 0;
    json_t *a;
    json_array_foreach(acts, k, a)
    {
        int n = snprintf(o->actions + at, sizeof o->actions - at, "%s%s", k ? ", " : "",
                         json_string_value(a) ? json_string_value(a) : "");
        if (n < 0 || (size_t)n >= sizeof o->actions - at)
            break;
        at += (size_t)n;
    }
}

/* The first step where got and recorded differ (0-based), or -1 when none. */
static long first_difference(const json_t *got, const json_t *recorded)
{
    size_t n = json_array_size(got), m = json_array_size(recorded);
    for (size_t k = 0; k < n || k < m; k++)
        if (k >= n || k >= m ||
            !ac_journal_step_same(json_array_get(got, k), json_array_get(recorded, k)))
            return (long)k;
    return -1;
}

/* One replay under way: the journal's lines applied in order. */
typedef struct replay_run {
    const char *path;
    int check; /* AC_REPLAY_CHECK: each event's steps compared */
    ac_replay_result *out;
    ac_session *s;
    replay_ctx c;
    ac_replay_agent_fn agent_fn; /* the engine after an agent change (NULL: the same) */
    void *agent_ud;
    uint64_t n_got; /* the recorded number of the last event applied */
    int open_event; /* that event's steps line has not come yet */
    int open_line;  /* the line of that event */
    char event_name[64];
} replay_run;

static int no_steps_line(replay_run *r)
{
    snprintf(r->out->error, sizeof r->out->error,
             "%s:%d: event %llu (%s) has no steps line (the journal is incomplete)", r->path,
             r->open_line, (unsigned long long)r->n_got, r->event_name);
    return AC_REPLAY_ERROR;
}

/* A steps line: the recorded transitions of the open event, compared with the replayed ones.
 * AC_REPLAY_MATCH to go on, else how the replay ends. */
static int steps_line(replay_run *r, const ac_journal_line *l)
{
    ac_replay_result *out = r->out;
    if (!r->open_event || l->n != r->n_got) {
        if (!r->check)
            return AC_REPLAY_MATCH;
        if (r->open_event)
            snprintf(out->error, sizeof out->error,
                     "%s:%d: steps line of event %llu after event %llu (the journal is damaged)",
                     r->path, l->lineno, (unsigned long long)l->n, (unsigned long long)r->n_got);
        else
            snprintf(out->error, sizeof out->error,
                     "%s:%d: steps line of event %llu with no event before it (the journal is "
                     "damaged)",
                     r->path, l->lineno, (unsigned long long)l->n);
        return AC_REPLAY_ERROR;
    }
    r->open_event = 0;
    if (!r->check)
        return AC_REPLAY_MATCH;
    long k = first_difference(r->c.got, l->steps);
    if (k >= 0) {
        out->event = out->events;
        copy_str(out->event_name, sizeof out->event_name, r->event_name);
        out->step = (size_t)k + 1;
        fill_step(&out->recorded, json_array_get(l->steps, (size_t)k));
        fill_step(&out->replayed, json_array_get(r->c.got, (size_t)k));
        return AC_REPLAY_DIVERGED;
    }
    json_decref(r->c.got);
    r->c.got = NULL;
    return AC_REPLAY_MATCH;
}

/* An event line: posted to the replay session. AC_REPLAY_MATCH to go on, else how the
 * replay ends. */
static int event_line(replay_run *r, const ac_journal_line *l)
{
    ac_replay_result *out = r->out;
    if (r->open_event && r->check) /* nothing to compare its transitions with */
        return no_steps_line(r);
    if (l->n != r->n_got + 1) { /* events are numbered 1, 2, 3...: some are missing */
        snprintf(out->error, sizeof out->error,
                 "%s:%d: event %llu where event %llu was expected (the journal is missing "
                 "events)",
                 r->path, l->lineno, (unsigned long long)l->n, (unsigned long long)(r->n_got + 1));
        return AC_REPLAY_ERROR;
    }
    json_decref(r->c.got);
    r->c.got = r->check ? json_array() : NULL;
    r->n_got = l->n;
    r->open_event = 1;
    r->open_line = l->lineno;
    out->events++;
    copy_str(r->event_name, sizeof r->event_name, l->event);
    if (ac_session_post(r->s, l->event, json_incref(l->data), l->t_ms) == AC_EUNKNOWN_EVENT) {
        out->event = out->events;
        copy_str(out->event_name, sizeof out->event_name, l->event);
        return AC_REPLAY_DIVERGED; /* step 0: not an event of this spec */
    }
    return AC_REPLAY_MATCH;
}

/* After an agent change: the session carried over to the engine of the new agent (a snapshot of
 * it at rest restored into a replay session there). AC_REPLAY_MATCH, or AC_REPLAY_ERROR. */
static int switch_agent(replay_run *r, const ac_journal_line *l)
{
    ac_engine *e = r->agent_fn(r->agent_ud, ac_session_agent(r->s));
    if (!e || e == r->s->e)
        return AC_REPLAY_MATCH;
    ac_error err;
    ac_session *s = ac_session_replayer_on(r->s, e, &err);
    if (!s) {
        snprintf(r->out->error, sizeof r->out->error,
                 "%s:%d: the session cannot go on under the agent of event %llu: %s", r->path,
                 l->lineno, (unsigned long long)l->n, err.text);
        return AC_REPLAY_ERROR;
    }
    ac_session_set_step_hook(s, r->check ? on_step : NULL, &r->c);
    ac_session_free(r->s);
    r->s = s;
    r->c.t = e->t;
    return AC_REPLAY_MATCH;
}

/* With a check, a journal that does not record every transition of what it replays fails: a
 * torn last line, an event without its steps, or no event at all. */
static int check_complete(replay_run *r, ac_journal_reader *rd)
{
    ac_replay_result *out = r->out;
    if (out->torn) {
        snprintf(out->error, sizeof out->error,
                 "%s:%d: the journal ends with a torn line (a write cut short): it is "
                 "incomplete; the %zu events before it match",
                 r->path, ac_journal_reader_torn(rd), out->events - (size_t)r->open_event);
        return AC_REPLAY_ERROR;
    }
    if (r->open_event)
        return no_steps_line(r);
    if (out->events == 0) {
        snprintf(out->error, sizeof out->error,
                 "%s: the journal records no event: nothing to check", r->path);
        return AC_REPLAY_ERROR;
    }
    return AC_REPLAY_MATCH;
}

/* The journal's lines applied to r->s until one ends the replay; *rc is the reader's last
 * answer (< 0 on a read error). */
static int apply_lines(replay_run *r, ac_journal_reader *rd, int *rc)
{
    ac_journal_line l;
    int status = AC_REPLAY_MATCH;
    while (status == AC_REPLAY_MATCH &&
           (*rc = ac_journal_reader_next(rd, &l, r->out->error, sizeof r->out->error)) > 0) {
        if (l.kind == AC_JOURNAL_STEPS)
            status = steps_line(r, &l);
        else if (l.kind == AC_JOURNAL_EVENT)
            status = event_line(r, &l);
        if (status == AC_REPLAY_MATCH && l.kind == AC_JOURNAL_STEPS && r->agent_fn &&
            !strcmp(r->event_name, AC_AGENT_CHANGED))
            status = switch_agent(r, &l);
    }
    return status;
}

int ac_session_replay(ac_engine *e, const char *journal_path, unsigned flags, ac_replay_result *out,
                      ac_session **session)
{
    return ac_session_replay_agents(e, journal_path, flags, NULL, NULL, out, session);
}

int ac_session_replay_agents(ac_engine *e, const char *journal_path, unsigned flags,
                             ac_replay_agent_fn agent_fn, void *agent_ud, ac_replay_result *out,
                             ac_session **session)
{
    if (session)
        *session = NULL;
    if (!out)
        return AC_REPLAY_ERROR;
    memset(out, 0, sizeof *out);
    if (!e || !journal_path) {
        snprintf(out->error, sizeof out->error, "ac_session_replay needs an engine and a path");
        return AC_REPLAY_ERROR;
    }
    ac_journal_reader *rd = ac_journal_reader_open(journal_path, out->error, sizeof out->error);
    if (!rd)
        return AC_REPLAY_ERROR;
    const ac_journal_line *hdr = ac_journal_reader_header(rd);
    copy_str(out->spec_hash, sizeof out->spec_hash, hdr->spec_hash);
    out->same_spec = hdr->spec_hash && strcmp(hdr->spec_hash, e->t->hash) == 0;
    ac_session *s = ac_session_new_replay(e, hdr->session ? hdr->session : "replay", out->error,
                                          sizeof out->error);
    if (!s) {
        ac_journal_reader_close(rd);
        return AC_REPLAY_ERROR;
    }
    replay_run r = {.path = journal_path,
                    .check = (flags & AC_REPLAY_CHECK) != 0,
                    .out = out,
                    .s = s,
                    .c = {e->t, NULL},
                    .agent_fn = agent_fn,
                    .agent_ud = agent_ud};
    if (r.check)
        ac_session_set_step_hook(s, on_step, &r.c);
    int rc = 0;
    int status = apply_lines(&r, rd, &rc);
    json_decref(r.c.got);
    s = r.s; /* on another engine after an agent change */
    /* a store's export records the spec the session has now: the last agent's */
    out->same_spec = out->same_spec || strcmp(out->spec_hash, s->e->t->hash) == 0;
    ac_session_set_step_hook(s, NULL, NULL);
    out->torn = ac_journal_reader_torn(rd) != 0;
    if (r.check && rc == 0 && status == AC_REPLAY_MATCH)
        status = check_complete(&r, rd);
    ac_journal_reader_close(rd);
    if (rc < 0 || status == AC_REPLAY_ERROR) {
        ac_session_free(s);
        return AC_REPLAY_ERROR;
    }
    if (status == AC_REPLAY_MATCH)
        out->error[0] = 0;
    if (session)
        *session = s;
    else
        ac_session_free(s);
    return status;
}
