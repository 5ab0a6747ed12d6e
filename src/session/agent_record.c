/*
 * agent_record.c - what a session runs with (its agent, ac_session_options.agent):
 * carried by spawn, changed at rest by the engine-level journal record
 * "agent.changed" (agentc.h), kept in snapshots. The library never reads the agent
 * itself: it is the caller's JSON text, stored and journaled as given. What a change
 * decides of the session is read from the engines instead (the new agent's system prompt
 * and output schema, carried by the record), and a change is tried on the new engine
 * before it is recorded (the session carried over there, ac_session_replayer_on).
 */
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "journal.h"
#include "session/snapshot.h"
#include "session_int.h"
#include "tools/schema.h"

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

int ac_session_agent_check(const ac_session_options *opts, json_t **agent, char *err, size_t errcap)
{
    json_t *a = opts && opts->agent ? json_loads(opts->agent, 0, NULL) : NULL;
    int ok = !opts || !opts->agent || json_is_object(a);
    if (!ok)
        snprintf(err, errcap, "the session's agent is not a JSON object");
    if (ok && agent)
        *agent = a;
    else
        json_decref(a);
    return ok ? 0 : -1;
}

/* The session's system prompt from an agent change on: its first system message (not a
 * compaction summary) gets the text, or goes (null); with none, the text comes first. */
static void set_system(ac_session *s, const json_t *v, int64_t t_ms)
{
    size_t n = ac_conv_message_count(s->conv), at = 0;
    while (at < n && (ac_conv_message(s->conv, at)->role != AC_ROLE_SYSTEM ||
                      (ac_conv_message(s->conv, at)->flags & AC_MSG_SUMMARY)))
        at++;
    const char *text = json_string_value(v);
    ac_message_in m = {AC_ROLE_SYSTEM, text, 0};
    if (at == n && text)
        ac_conv_replace_range(s->conv, 0, 0, &m, 1, t_ms);
    else if (at < n)
        ac_conv_replace_range(s->conv, at, at + 1, &m, text ? 1 : 0, t_ms);
}

/* The session's output schema from an agent change on (null: none); checked when the engine
 * that gave it was built, so it compiles. */
static void set_output_schema(ac_session *s, const json_t *v)
{
    char why[256];
    ac_schema_free(s->output_schema);
    free(s->output_schema_text);
    s->output_schema = json_is_object(v) ? ac_schema_compile(v, why, sizeof why) : NULL;
    s->output_schema_text =
        s->output_schema ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

/* What the record decides of the session: its agent, and the system prompt and output schema
 * it names. */
static void apply_to_session(ac_session *s, const json_t *data, int64_t t_ms)
{
    const json_t *agent = json_object_get(data, "agent");
    if (agent) /* absent: the agent stays (a change the library saw, such as the spec) */
        set_agent(s, agent);
    const json_t *sys = json_object_get(data, "system");
    if (sys && (json_is_string(sys) || json_is_null(sys)))
        set_system(s, sys, t_ms);
    const json_t *schema = json_object_get(data, "output_schema");
    if (schema && (json_is_object(schema) || json_is_null(schema)))
        set_output_schema(s, schema);
}

/* The record `name` applied: numbered and journaled like an event, no transition runs (its
 * steps are []); an agent change replaces the agent, and a live stored session then settles
 * again: its writer takes the snapshot the record asks for. Steals data. */
static int apply_record(ac_session *s, const char *name, json_t *data, int64_t t_ms)
{
    int change = !strcmp(name, AC_AGENT_CHANGED);
    if (ac_session_journal_failed(s)) {
        json_decref(data);
        return AC_EIO;
    }
    if (!t_ms)
        t_ms = ac_wall_now_ms();
    s->seq++;
    if (s->journal)
        ac_journal_write_event(s->journal, s->seq, t_ms, name, data, NULL);
    if (s->hooks)
        s->hooks->event(s, s->seq, t_ms, name, data, NULL);
    if (ac_session_journal_failed(s)) {
        json_decref(data);
        return AC_EIO;
    }
    if (change)
        apply_to_session(s, data, t_ms);
    if (s->journal)
        ac_journal_write_steps(s->journal, s->seq);
    if (s->hooks)
        s->hooks->steps_done(s, s->seq);
    json_decref(data);
    if (s->journal && !s->replaying)
        ac_journal_flush(s->journal);
    if (change && s->hooks && !s->replaying)
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
    return apply_record(s, AC_AGENT_CHANGED, data, t_ms);
}

int ac_session_call_record(ac_session *s, const char *name, json_t *data, int64_t t_ms)
{
    if (!json_is_object(data) || (!s->replaying && s->draining)) {
        json_decref(data);
        return AC_EINVAL;
    }
    return apply_record(s, name, data, t_ms);
}

void ac_session_queue_record(ac_session *s, const char *name, json_t *data)
{
    if (!s->pending_records)
        s->pending_records = json_array();
    json_t *r = json_is_object(data) ? json_pack("{s:s, s:O}", "name", name, "data", data) : NULL;
    json_decref(data);
    if (r && s->pending_records)
        json_array_append_new(s->pending_records, r);
    else
        json_decref(r);
}

void ac_session_flush_records(ac_session *s)
{
    json_t *all = s->pending_records;
    s->pending_records = NULL;
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
    {
        json_t *d = json_object_get(r, "data");
        apply_record(s, json_string_value(json_object_get(r, "name")), json_incref(d), 0);
    }
    json_decref(all);
}

int ac_session_change_agent(ac_session *s, const char *reason, const char *what, const char *agent)
{
    return ac_session_change_agent_on(s, reason, what, agent, NULL, NULL);
}

ac_session *ac_session_replayer_on(const ac_session *s, ac_engine *to, ac_error *err)
{
    char why[512] = "";
    char *snap = s && to ? ac_session_snapshot_save(s, 0) : NULL;
    ac_session *r = snap ? ac_session_new_replay(to, s->id, why, sizeof why) : NULL;
    uint64_t calls = 0;
    int had = r ? ac_engine_set_output(to, 0) : 0; /* what it holds was heard when it happened */
    int rc = r ? ac_session_snapshot_restore(r, snap, &calls, why, sizeof why) : AC_ENOMEM;
    if (r)
        ac_engine_set_output(to, had);
    free(snap);
    if (rc != AC_OK) {
        ac_session_free(r);
        ac_error_set(err, !s || !to ? AC_EINVAL : rc,
                     !s || !to ? "ac_session_replayer_on needs a session and an engine"
                     : why[0]  ? why
                               : "out of memory");
        return NULL;
    }
    r->seq = s->seq;
    if (err)
        memset(err, 0, sizeof *err);
    return r;
}

/* "system" and "output_schema" of the record: to's where they differ from s's engine's. */
static void engine_keys(json_t *data, const ac_session *s, const ac_engine *to)
{
    const char *a = s->e->system_prompt, *b = to->system_prompt;
    if ((a || b) && (!a || !b || strcmp(a, b)))
        json_object_set_new(data, "system", b ? json_string(b) : json_null());
    a = s->e->output_schema_text, b = to->output_schema_text;
    if ((a || b) && (!a || !b || strcmp(a, b))) {
        json_t *doc = b ? json_loads(b, 0, NULL) : NULL;
        json_object_set_new(data, "output_schema", doc ? doc : json_null());
    }
}

int ac_session_change_agent_on(ac_session *s, const char *reason, const char *what,
                               const char *agent, ac_engine *to, ac_error *err)
{
    ac_error_set(err, AC_EINVAL, "the agent is not a JSON object, or what not an array");
    if (!s)
        return AC_EINVAL;
    if (to && to != s->e) { /* the move tried first: nothing is recorded when it cannot be made */
        ac_session *r = ac_session_replayer_on(s, to, err);
        if (!r)
            return err ? err->code : AC_ESPEC;
        ac_session_free(r);
    }
    json_t *a = agent ? json_loads(agent, 0, NULL) : NULL;
    json_t *w = what ? json_loads(what, 0, NULL) : json_array();
    if ((agent && !json_is_object(a)) || !json_is_array(w)) {
        json_decref(a);
        json_decref(w);
        return AC_EINVAL;
    }
    json_t *data =
        json_pack("{s:s, s:o, s:o*}", "reason", reason ? reason : "option", "what", w, "agent", a);
    if (data && to && to != s->e)
        engine_keys(data, s, to);
    int rc = data ? ac_session_agent_post(s, data, 0) : AC_ENOMEM;
    ac_error_set(err, rc, rc == AC_OK ? "" : ac_strerror(rc));
    return rc;
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
