/*
 * snapshot.c - a settled session as one JSON document, and back (snapshot.h).
 * Snapshots are taken only when a session is settled, so no effect runs and
 * no streamed text is pending: the parts below are the whole session. Each
 * part is owned here, by the session: the dispatcher restores itself
 * (ac_fsm_restore), the facts their record (spec_rt.c), the State, toolkits
 * and conversation theirs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "session/session_int.h"
#include "session/snapshot.h"
#include "session/spec_rt.h"
#include "session/state.h"
#include "session/toolkits.h"
#include "tools/schema.h"

/* A part: its name, its value as JSON (a new reference, NULL: out of memory) and how it is
 * put back (AC_OK, or an error code with a message in err). */
typedef struct snapshot_part {
    const char *name;
    json_t *(*save)(const ac_session *s);
    int (*restore)(ac_session *s, json_t *v, char *err, size_t errcap);
} snapshot_part;

/* The dispatcher: the active state of each level, by name, how many states it entered, and
 * whether it is at rest ({"states": [[machine, state], ...], "entries": N, "rest": true}; a
 * snapshot that predates "entries" held the array alone). */
static json_t *save_fsm(const ac_session *s)
{
    const ac_fsm_tables *t = s->e->t;
    json_t *a = json_array();
    for (uint8_t i = 0; a && i < s->fsm.depth; i++) {
        const ac_fsm_state *st = &t->states[s->fsm.state[i]];
        json_array_append_new(a, json_pack("[s s]", t->machines[st->machine].name, st->name));
    }
    json_t *v =
        a ? json_pack("{s:o, s:I}", "states", a, "entries", (json_int_t)s->fsm.entries) : NULL;
    if (v && s->fsm.depth == 1 && ac_session_status(s) == AC_SESSION_IDLE)
        json_object_set_new(v, "rest", json_true()); /* what another spec's rest state takes */
    return v;
}

/* The state [m, name] of t, AC_FSM_NONE when it has none. */
static uint16_t state_named(const ac_fsm_tables *t, const char *m, const char *name)
{
    for (uint16_t k = 0; m && name && k < t->n_states; k++)
        if (!strcmp(t->states[k].name, name) && !strcmp(t->machines[t->states[k].machine].name, m))
            return k;
    return AC_FSM_NONE;
}

static int restore_fsm(ac_session *s, json_t *v, char *err, size_t errcap)
{
    const ac_fsm_tables *t = s->e->t;
    json_t *states = json_is_array(v) ? v : json_object_get(v, "states");
    size_t n = json_array_size(states);
    if (!n || n > AC_FSM_MAX_DEPTH) {
        snprintf(err, errcap, "\"fsm\" holds no states");
        return AC_EINVAL;
    }
    uint16_t cfg[AC_FSM_MAX_DEPTH];
    int rest = json_is_true(json_object_get(v, "rest")) && n == 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(states, i);
        const char *m = json_string_value(json_array_get(e, 0));
        const char *name = json_string_value(json_array_get(e, 1));
        cfg[i] = state_named(t, m, name);
        if (cfg[i] == AC_FSM_NONE && rest) /* at rest under a spec that names it otherwise */
            cfg[i] = ac_turn_rest_state(s->e);
        if (cfg[i] == AC_FSM_NONE) {
            snprintf(err, errcap, "this spec has no state %s.%s%s", m ? m : "?", name ? name : "?",
                     rest ? " (and no one state of its root machine a turn returns to)" : "");
            return AC_ESPEC;
        }
    }
    uint32_t entries = (uint32_t)json_integer_value(json_object_get(v, "entries"));
    if (ac_fsm_restore(&s->fsm, cfg, (uint8_t)n, entries) != AC_FSM_HANDLED) {
        snprintf(err, errcap, "\"fsm\" is not a configuration of this spec");
        return AC_ESPEC;
    }
    return AC_OK;
}

/* The turn: status, answer, error, queued messages, counters, output schema. */
static json_t *save_turn(const ac_session *s)
{
    json_t *v =
        json_pack("{s:s, s:s?, s:O, s:i, s:i, s:s?, s:s?, s:i, s:s?}", "answer",
                  s->answer ? s->answer : "", "error", s->error, "queued", s->queued, "compacted",
                  s->compacted_this_plan, "output_rejections", s->output_rejections,
                  "output_schema", s->output_schema_text, "turn_start", s->turn_start,
                  "last_outcome", (int)s->last_outcome, "last_error", s->last_error);
    if (v && s->cost_usd > 0) /* what its priced model calls cost (kept across a resume) */
        json_object_set_new(v, "cost_usd", json_real(s->cost_usd));
    if (v && s->end_how) /* how and when it ended (turn.c) */
        json_object_set_new(
            v, "end", json_pack("{s:i, s:I}", "how", s->end_how, "at_ms", (json_int_t)s->ended_ms));
    return v;
}

/* How the last turn and the session ended (turn.c). A snapshot of the release before kept
 * one "status" instead: failed (2) and cancelled (3) told how the last turn ended, and its
 * "error" why it failed. */
static void restore_outcome(ac_session *s, json_t *v)
{
    json_t *o = json_object_get(v, "last_outcome"), *end = json_object_get(v, "end");
    free(s->last_error);
    s->last_error = NULL;
    if (json_is_integer(o)) {
        const char *le = json_string_value(json_object_get(v, "last_error"));
        s->last_outcome = (enum ac_turn_outcome)json_integer_value(o);
        s->last_error = le ? strdup(le) : NULL;
    } else {
        json_int_t st = json_integer_value(json_object_get(v, "status"));
        s->last_outcome = st == 2 ? AC_TURN_FAILED : st == 3 ? AC_TURN_CANCELLED : AC_TURN_NONE;
        if (st == 2 && s->error) {
            s->last_error = s->error;
            s->error = NULL;
        }
    }
    s->end_how = (int)json_integer_value(json_object_get(end, "how"));
    s->ended_ms = json_integer_value(json_object_get(end, "at_ms"));
}

static int restore_turn(ac_session *s, json_t *v, char *err, size_t errcap)
{
    json_t *q = json_object_get(v, "queued");
    const char *answer = json_string_value(json_object_get(v, "answer"));
    if (!json_is_object(v) || !json_is_array(q) || !answer) {
        snprintf(err, errcap, "\"turn\" is malformed");
        return AC_EINVAL;
    }
    ac_session_set_answer(s, answer);
    ac_session_set_error(s, json_string_value(json_object_get(v, "error")));
    restore_outcome(s, v);
    json_decref(s->queued);
    s->queued = json_deep_copy(q);
    s->compacted_this_plan = (int)json_integer_value(json_object_get(v, "compacted"));
    s->output_rejections = (int)json_integer_value(json_object_get(v, "output_rejections"));
    s->cost_usd = json_number_value(json_object_get(v, "cost_usd"));
    const char *ts = json_string_value(json_object_get(v, "turn_start"));
    free(s->turn_start);
    s->turn_start = ts ? strdup(ts) : NULL;
    const char *schema = json_string_value(json_object_get(v, "output_schema"));
    if (schema) {
        json_t *doc = json_loads(schema, 0, NULL);
        char why[256] = "";
        s->output_schema = doc ? ac_schema_compile(doc, why, sizeof why) : NULL;
        json_decref(doc);
        if (!s->output_schema) {
            snprintf(err, errcap, "the output schema does not compile: %s", why);
            return AC_EINVAL;
        }
        s->output_schema_text = strdup(schema);
    }
    return s->queued ? AC_OK : AC_ENOMEM;
}

static json_t *save_conv(const ac_session *s)
{
    char *text = ac_conv_to_json(s->conv);
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return v;
}

static int restore_conv(ac_session *s, json_t *v, char *err, size_t errcap)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ac_conv *c = text ? ac_conv_from_json(text, err, errcap) : NULL;
    free(text);
    if (!c)
        return AC_EINVAL;
    ac_conv_free(s->conv);
    s->conv = c;
    return AC_OK;
}

/* Toolkit states and contexts (session/toolkits.c): {} when the engine has none. */
static json_t *save_toolkits(const ac_session *s)
{
    json_t *v = ac_toolkits_state_json(s);
    return v ? v : json_object();
}

static int restore_toolkits(ac_session *s, json_t *v, char *err, size_t errcap)
{
    if (!json_object_size(v))
        return AC_OK;
    return ac_toolkits_state_restore(s, v, err, errcap) == 0 ? AC_OK : AC_EINVAL;
}

/* The parts, in the order they are restored. Another part of the session is one line here. */
static const snapshot_part PARTS[] = {
    {"fsm", save_fsm, restore_fsm},
    {"turn", save_turn, restore_turn},
    {"conversation", save_conv, restore_conv},
    {"toolkits", save_toolkits, restore_toolkits},
    {"state", ac_state_snapshot_save, ac_state_snapshot_restore}, /* the State (state.h) */
    {"facts", ac_spec_facts_save, ac_spec_facts_restore},         /* what guards on facts read */
    {"agent", ac_session_agent_snapshot_save, ac_session_agent_snapshot_restore}, /* agentc.h */
    {"parent", ac_subagent_snapshot_save, ac_subagent_snapshot_restore},          /* subagent.c */
    {"client_tools", ac_client_tools_snapshot_save, ac_client_tools_snapshot_restore},
};

char *ac_session_snapshot_save(const ac_session *s, uint64_t model_calls)
{
    json_t *o = json_pack("{s:i, s:I}", "version", 1, "model_calls", (json_int_t)model_calls);
    for (size_t i = 0; o && i < sizeof PARTS / sizeof PARTS[0]; i++) {
        json_t *v = PARTS[i].save(s);
        if (!v) {
            json_decref(o);
            return NULL;
        }
        json_object_set_new(o, PARTS[i].name, v);
    }
    char *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return out;
}

int ac_session_snapshot_restore(ac_session *s, const char *body, uint64_t *model_calls, char *err,
                                size_t errcap)
{
    json_error_t je;
    json_t *o = json_loads(body, 0, &je);
    if (!o || json_integer_value(json_object_get(o, "version")) != 1) {
        snprintf(err, errcap, "%s", o ? "unknown snapshot version" : je.text);
        json_decref(o);
        return AC_EINVAL;
    }
    *model_calls = (uint64_t)json_integer_value(json_object_get(o, "model_calls"));
    int rc = AC_OK;
    for (size_t i = 0; rc == AC_OK && i < sizeof PARTS / sizeof PARTS[0]; i++) {
        json_t *v = json_object_get(o, PARTS[i].name);
        if (v) /* a part the snapshot predates stays as new */
            rc = PARTS[i].restore(s, v, err, errcap);
    }
    json_decref(o);
    return rc;
}
