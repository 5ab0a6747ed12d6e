/*
 * agent_record.c - what a session runs with (its agent, ac_session_options.agent):
 * carried by spawn, changed at rest by the engine-level journal record
 * "agent.changed" (agentc.h), kept in snapshots. The library never reads the agent
 * itself: it is the caller's JSON text, stored and journaled as given.
 */
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "session/snapshot.h"
#include "session_int.h"

const char *ac_session_agent(const ac_session *s)
{
    return s ? s->agent : NULL;
}

/* The agent of a JSON value (an object; anything else: none), as compact text in s. */
static void set_agent(ac_session *s, const json_t *agent)
{
    char *text =
        json_is_object(agent) ? json_dumps(agent, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    free(s->agent);
    s->agent = text;
}

void ac_session_agent_from_spawn(ac_session *s, const json_t *spawn_data)
{
    const json_t *agent = json_object_get(spawn_data, "agent");
    if (agent)
        set_agent(s, agent);
}

json_t *ac_session_agent_spawn_json(const ac_session_options *opts)
{
    return opts && opts->agent ? json_loads(opts->agent, 0, NULL) : NULL;
}

int ac_session_agent_check(const ac_session_options *opts, char *err, size_t errcap)
{
    json_t *a = ac_session_agent_spawn_json(opts);
    int ok = !opts || !opts->agent || json_is_object(a);
    json_decref(a);
    if (!ok)
        snprintf(err, errcap, "the session's agent is not a JSON object");
    return ok ? 0 : -1;
}

/* The record applied: numbered and journaled like an event, no transition runs (its steps
 * are []), the agent replaced. A live stored session then settles again: its writer takes
 * the snapshot the record asks for. Steals data. */
static int apply_record(ac_session *s, json_t *data, int64_t t_ms)
{
    if (ac_session_journal_failed(s)) {
        json_decref(data);
        return AC_EIO;
    }
    if (!t_ms)
        t_ms = ac_wall_now_ms();
    s->seq++;
    if (s->journal)
        ac_journal_write_event(s->journal, s->seq, t_ms, AC_AGENT_CHANGED, data);
    if (s->hooks)
        s->hooks->event(s, s->seq, t_ms, AC_AGENT_CHANGED, data);
    if (ac_session_journal_failed(s)) {
        json_decref(data);
        return AC_EIO;
    }
    json_t *agent = json_object_get(data, "agent");
    if (agent) /* absent: the agent stays (a change the library saw, such as the spec) */
        set_agent(s, agent);
    if (s->journal)
        ac_journal_write_steps(s->journal, s->seq);
    if (s->hooks)
        s->hooks->steps_done(s, s->seq);
    json_decref(data);
    if (s->journal && !s->replaying)
        ac_journal_flush(s->journal);
    if (s->hooks && !s->replaying)
        s->hooks->settled(s); /* the snapshot at the change, committed */
    return ac_session_journal_failed(s) ? AC_EIO : AC_OK;
}

int ac_session_agent_post(ac_session *s, json_t *data, int64_t t_ms)
{
    int live = !s->replaying; /* a replayer applies what was checked when it was recorded */
    json_t *agent = json_object_get(data, "agent");
    if ((agent && !json_is_object(agent)) ||
        (live && (s->draining || s->raised.head || s->inbox.head || !ac_session_settled(s)))) {
        json_decref(data);
        return AC_EINVAL;
    }
    return apply_record(s, data, t_ms);
}

int ac_session_change_agent(ac_session *s, const char *reason, const char *what, const char *agent)
{
    if (!s)
        return AC_EINVAL;
    json_t *a = agent ? json_loads(agent, 0, NULL) : NULL;
    json_t *w = what ? json_loads(what, 0, NULL) : json_array();
    if ((agent && !json_is_object(a)) || !json_is_array(w)) {
        json_decref(a);
        json_decref(w);
        return AC_EINVAL;
    }
    json_t *data =
        json_pack("{s:s, s:o, s:o*}", "reason", reason ? reason : "option", "what", w, "agent", a);
    return data ? ac_session_agent_post(s, data, 0) : AC_ENOMEM;
}

json_t *ac_session_agent_snapshot_save(const ac_session *s)
{
    json_t *a = s->agent ? json_loads(s->agent, 0, NULL) : NULL;
    return a ? a : json_null();
}

int ac_session_agent_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap)
{
    (void)err, (void)errcap;
    set_agent(s, v); /* null: none */
    return AC_OK;
}
