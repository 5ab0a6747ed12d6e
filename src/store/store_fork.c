/*
 * store_fork.c - a stored session's agent, now or as it was after an event, and
 * its fork: a new session made of its journal up to an event, its agent as it
 * was then, nothing executed again (store.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/journal.h"
#include "session/snapshot.h"
#include "session/store_hooks.h"
#include "store_writer.h"

/* ---- the agent after an event ---- */

typedef struct agent_scan {
    uint64_t upto;
    json_t *agent; /* the last one seen (owned) */
} agent_scan;

static int scan_event(void *ud, const ac_store_event *ev)
{
    agent_scan *a = ud;
    if (ev->n > a->upto)
        return 1; /* stops the walk */
    if (!ev->data || (strcmp(ev->ev, "spawn") && strcmp(ev->ev, AC_AGENT_CHANGED)))
        return 0;
    json_t *d = json_loads(ev->data, JSON_DECODE_ANY, NULL);
    json_t *agent = json_object_get(d, "agent");
    if (json_is_object(agent)) {
        json_decref(a->agent);
        a->agent = json_incref(agent);
    }
    json_decref(d);
    return 0;
}

/* The agent after event `at`: its snapshot's there or before, then the journal's changes up
 * to `at`. AC_OK with *out malloc'd (NULL: none). */
static int agent_at(ac_store *st, const char *id, uint64_t at, char **out, ac_error *err)
{
    uint64_t n = 0;
    char *body = NULL;
    int rc = st->ops->snapshot_get(st, id, at, &n, &body, err);
    if (rc != AC_OK)
        return rc;
    json_t *snap = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    agent_scan a = {at, json_incref(json_object_get(snap, "agent"))};
    json_decref(snap);
    rc = st->ops->events(st, id, n, scan_event, &a, err);
    if (rc == 1)
        rc = AC_OK;
    *out = json_is_object(a.agent) && rc == AC_OK
               ? json_dumps(a.agent, JSON_COMPACT | JSON_PRESERVE_ORDER)
               : NULL;
    json_decref(a.agent);
    return rc;
}

char *ac_store_agent(ac_store *st, const char *id, uint64_t at, ac_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!st || !id) {
        ac_store_err(err, AC_EINVAL, "ac_store_agent needs a store and an id");
        return NULL;
    }
    ac_store_group_sync(st, id);
    char *out = NULL;
    int rc = at ? st->ops->info(st, id, &(ac_store_session_info){0}, err) : AC_OK;
    if (rc == AC_OK)
        rc = at ? agent_at(st, id, at, &out, err) : st->ops->agent(st, id, &out, err);
    if (rc != AC_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---- fork ---- */

/* The new session's row, from the original rebuilt at event at (s, settled). */
static int fork_write(ac_store *st, ac_session *s, store_writer *w, const char *id, uint64_t at,
                      uint64_t at_turn, const char *new_id, ac_store_fork_write_fn write, void *ud,
                      ac_error *err)
{
    char *snap = ac_session_snapshot_save(s, w->model_calls);
    json_t *note = json_pack("{s:s, s:I, s:I}", "id", id, "at_event", (json_int_t)at, "at_turn",
                             (json_int_t)at_turn);
    char *notes = note ? json_dumps(note, JSON_COMPACT) : NULL;
    json_decref(note);
    int rc = AC_ENOMEM;
    if (snap && notes) {
        ac_store_fork_row f = {id,
                               new_id,
                               at,
                               ac_engine_tables(ac_session_engine(s))->hash,
                               ac_session_status_name(ac_session_status(s)),
                               1,
                               ac_session_agent(s),
                               snap,
                               ac_wall_now_ms(),
                               notes};
        rc = write ? write(ud, &f, err) : st->ops->fork(st, &f, err);
    } else {
        ac_store_err(err, rc, "out of memory");
    }
    free(snap);
    free(notes);
    return rc;
}

int ac_store_fork(ac_store *st, ac_engine *e, const char *id, uint64_t at, uint64_t at_turn,
                  const char *new_id, ac_error *err)
{
    return ac_store_fork_with(st, e, id, at, at_turn, new_id, NULL, NULL, err);
}

int ac_store_fork_with(ac_store *st, ac_engine *e, const char *id, uint64_t at, uint64_t at_turn,
                       const char *new_id, ac_store_fork_write_fn write, void *ud, ac_error *err)
{
    if (!st || !e || !id || !new_id || !*new_id ||
        strlen(new_id) >= sizeof((ac_store_session_info *)0)->id) {
        ac_store_err(err, AC_EINVAL,
                     "ac_store_fork needs a store, an engine, an id and a new "
                     "id of 1 to 255 bytes");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    ac_store_session_info info;
    int rc = st->ops->info(st, id, &info, err);
    if (rc != AC_OK)
        return rc;
    if (at < 1 || at > info.events) {
        ac_store_err(err, AC_EINVAL, "session '%s' has events 1 to %llu: none numbered %llu", id,
                     (unsigned long long)info.events, (unsigned long long)at);
        return AC_EINVAL;
    }
    store_writer *w = ac_sw_new(st);
    if (!w) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    ac_session *s = ac_store_rebuild(st, e, id, at, w, err);
    if (!s)
        return err ? err->code : AC_EIO;
    if (ac_session_seq(s) != at || !ac_session_settled(s)) {
        ac_store_err(err, AC_EINVAL,
                     "session '%s' is not at rest after event %llu (a fork starts between "
                     "turns)",
                     id, (unsigned long long)at);
        rc = AC_EINVAL;
    } else {
        rc = fork_write(st, s, w, id, at, at_turn, new_id, write, ud, err);
    }
    ac_session_free(s); /* muted: writes nothing, takes and releases no lease */
    return rc;
}

/* ---- where a turn ended ---- */

typedef struct turn_scan {
    const ac_engine *e;
    uint16_t root; /* the root machine's state after the events read, AC_FSM_NONE: none yet */
    uint64_t want, seen, at;
} turn_scan;

/* The root machine's state `name`, AC_FSM_NONE when it has none. */
static uint16_t root_state(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 0; name && i < t->n_states; i++)
        if (t->states[i].machine == t->root && !strcmp(t->states[i].name, name))
            return i;
    return AC_FSM_NONE;
}

/* One event's recorded steps: where the root machine went, and whether it entered a turn
 * state (a self-transition enters again; an internal row does not). Then the turn rule of
 * the live session (ac_turn_ended_by) says whether the event ended a turn. */
static int scan_turn(void *ud, const ac_store_event *ev)
{
    turn_scan *c = ud;
    const ac_fsm_tables *t = ac_engine_tables(c->e);
    json_t *steps = ev->steps ? json_loads(ev->steps, 0, NULL) : NULL;
    const char *root = t->machines[t->root].name;
    bool before = c->root != AC_FSM_NONE && ac_turn_state(c->e, c->root), entered = false;
    size_t k;
    json_t *st;
    json_array_foreach(steps, k, st)
    {
        const char *m = json_string_value(json_array_get(st, 0));
        const char *from = json_string_value(json_array_get(st, 1));
        uint16_t to = root_state(t, json_string_value(json_array_get(st, 3)));
        if (!m || !from || to == AC_FSM_NONE || strcmp(m, root))
            continue;
        c->root = to;
        if (!ac_turn_state(c->e, to))
            continue;
        uint16_t row = strcmp(from, t->states[to].name) ? AC_FSM_NONE : ac_journal_step_row(t, st);
        entered |= row == AC_FSM_NONE || t->transitions[row].kind != AC_TR_INTERNAL;
    }
    json_decref(steps);
    if (ac_turn_ended_by(before, entered, c->root != AC_FSM_NONE && ac_turn_state(c->e, c->root)) &&
        ++c->seen == c->want)
        c->at = ev->n;
    return c->at ? 1 : 0;
}

int ac_store_turn_end(ac_store *st, const ac_engine *e, const char *id, uint64_t turn, uint64_t *at,
                      ac_error *err)
{
    *at = 0;
    if (!st || !e || !id || !turn) {
        ac_store_err(err, AC_EINVAL,
                     "ac_store_turn_end needs a store, an engine, an id and a "
                     "turn from 1");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    ac_store_session_info info;
    int rc = st->ops->info(st, id, &info, err);
    if (rc != AC_OK)
        return rc;
    turn_scan c = {e, AC_FSM_NONE, turn, 0, 0};
    rc = st->ops->events(st, id, 0, scan_turn, &c, err);
    if (rc != AC_OK && !c.at)
        return rc;
    if (!c.at) {
        ac_store_err(err, AC_EINVAL, "session '%s' has %llu finished turn%s: no turn %llu", id,
                     (unsigned long long)c.seen, c.seen == 1 ? "" : "s", (unsigned long long)turn);
        return AC_EINVAL;
    }
    *at = c.at;
    return AC_OK;
}
