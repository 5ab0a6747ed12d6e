/*
 * decisions.c - per-call decisions, the payload of an outside event declared
 * `outside event approve(decisions)`:
 *
 *   {"calls": {"c1": "approve", "c2": {"deny": "reason"}, "c3": {"arguments": {...}}}}
 *
 * Checked against the pending calls before the event is applied (ac_session_post refuses
 * bad ones, unapplied and unjournaled: nothing is lost, the session still waits), and
 * applied by the built-in action apply_decisions (bound by spec_rt.c) from the event's
 * journaled data, so a replay applies them too:
 *   - "approve": the call runs; so does every pending call the decisions do not name;
 *   - {"deny": "reason"}: the call does not run, its result is "denied by the user: reason";
 *   - {"arguments": {...}}: the call runs with these arguments (checked against the tool's
 *     schema, like the model's); the conversation keeps the model's, and the result begins
 *     "arguments edited by the user: {...}".
 * The edits live in the session until the next model reply records new calls (they are
 * needed only while run_tools runs, and a settled session has none running).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/decisions.h"
#include "session/tools_internal.h"
#include "tools/schema.h"
#include "util/buf.h"

static int takes_decisions(const ac_session *s, const char *event)
{
    uint16_t ev = ac_engine_event_index(s->e, event);
    const ac_fsm_tables *t = s->e->t;
    return ev != AC_FSM_NONE && ev && t->event_flags && (t->event_flags[ev] & AC_EV_DECISIONS);
}

int ac_session_event_takes_decisions(const ac_session *s, const char *event)
{
    return s && event && takes_decisions(s, event);
}

/* The pending call `id` (one of the current model reply's calls without a result), or NULL
 * with the pending ids listed in err. */
static const ac_tool_call *pending_call(ac_session *s, const char *id, char *err, size_t cap)
{
    size_t n = ac_conv_iter_call_count(s->conv);
    ac_buf b;
    ac_buf_init(&b, 400);
    for (size_t i = 0; i < n; i++) {
        const char *cid = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = cid ? ac_conv_tool_call(s->conv, cid) : NULL;
        if (!c || c->state != AC_CALL_NONE)
            continue;
        if (!strcmp(c->id, id)) {
            ac_buf_free(&b);
            return c;
        }
        ac_buf_printf(&b, "%s%s", b.n ? ", " : "pending: ", c->id);
    }
    snprintf(err, cap, "call '%s' is not pending (%s)", id, b.n ? b.p : "none is");
    ac_buf_free(&b);
    return NULL;
}

/* The edited arguments checked against the tool's schema (meta-properties, "_"-prefixed,
 * left out as for the model's). 0, or -1 with why. */
static int check_edit(ac_session *s, const ac_tool_call *c, json_t *args, char *err, size_t cap)
{
    const ac_tool *t = ac_tools_find(s->e, c->name);
    if (!t) {
        snprintf(err, cap, "call '%s': its tool '%s' is not known here, so it cannot be edited",
                 c->id, c->name);
        return -1;
    }
    if (!json_is_object(args)) {
        snprintf(err, cap, "call '%s': the edited arguments are not a JSON object", c->id);
        return -1;
    }
    json_t *plain = json_copy(args);
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(plain, tmp, k, v) if (k[0] == '_') json_object_del(plain, k);
    char why[400];
    int ok = plain && ac_schema_validate(t->schema, plain, why, sizeof why);
    json_decref(plain);
    if (!ok) {
        snprintf(err, cap, "call '%s': the edited arguments do not fit the schema of %s: %s", c->id,
                 c->name, why);
        return -1;
    }
    return 0;
}

/* One call's decision checked. 0, or -1 with why. */
static int check_one(ac_session *s, const char *id, json_t *d, char *err, size_t cap)
{
    const ac_tool_call *c = pending_call(s, id, err, cap);
    if (!c)
        return -1;
    const char *word = json_string_value(d);
    if (word && (!strcmp(word, "approve") || !strcmp(word, "deny")))
        return 0;
    json_t *deny = json_object_get(d, "deny"), *args = json_object_get(d, "arguments");
    if (json_object_size(d) == 1 && deny && (json_is_string(deny) || json_is_null(deny)))
        return 0;
    if (json_object_size(d) == 1 && args)
        return check_edit(s, c, args, err, cap);
    snprintf(err, cap,
             "call '%s': a decision is \"approve\", {\"deny\": \"reason\"} or {\"arguments\": "
             "{...}}",
             id);
    return -1;
}

int ac_session_check_decisions(ac_session *s, const char *event, const void *decisions, char *err,
                               size_t errcap)
{
    const json_t *d = decisions;
    char scratch[8];
    if (!err || !errcap) {
        err = scratch;
        errcap = sizeof scratch;
    }
    err[0] = 0;
    if (!s || !event)
        return snprintf(err, errcap, "no session or no event"), -1;
    if (!takes_decisions(s, event)) {
        if (!d || json_is_null(d))
            return 0;
        return snprintf(err, errcap, "event '%s' carries no decisions", event), -1;
    }
    if (!d || json_is_null(d))
        return 0; /* every pending call approved */
    json_t *calls = json_object_get(d, "calls");
    if (!json_is_object(d) || json_object_size(d) != (calls ? 1u : 0u) ||
        (calls && !json_is_object(calls)))
        return snprintf(err, errcap,
                        "the decisions are {\"calls\": {\"CALL_ID\": \"approve\" | {\"deny\": "
                        "\"reason\"} | {\"arguments\": {...}}}}"),
               -1;
    const char *id;
    json_t *one;
    json_object_foreach(calls, id, one)
    {
        if (check_one(s, id, one, err, errcap) < 0)
            return -1;
    }
    return 0;
}

/* ---- applied: the built-in action apply_decisions ---- */

void ac_decisions_apply(ac_session *s, const ac_event *ev)
{
    json_decref(s->call_edits);
    s->call_edits = NULL;
    json_t *calls = json_object_get((json_t *)ev->data, "calls");
    const char *id;
    json_t *d;
    json_object_foreach(calls, id, d)
    {
        const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
        if (!c || c->state != AC_CALL_NONE)
            continue; /* checked when posted: only a post from another thread gets here */
        json_t *deny = json_object_get(d, "deny"), *args = json_object_get(d, "arguments");
        const char *why = json_string_value(deny), *word = json_string_value(d);
        if (word && !strcmp(word, "approve"))
            continue;
        if (deny || (word && !strcmp(word, "deny"))) {
            char text[1200];
            snprintf(text, sizeof text, "denied by the user%s%.1100s", why && *why ? ": " : "",
                     why && *why ? why : "");
            ac_session_fail_tool_call(s, id, text, ev->time_ms);
        } else if (!json_is_object(args)) { /* not checked: it does not run on a guess */
            ac_session_fail_tool_call(
                s, id, "not run: the user's decision for it was not understood", ev->time_ms);
        } else {
            /* run_tools checks them against the schema again before anything runs */
            char *text = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
            if (!s->call_edits)
                s->call_edits = json_object();
            if (text && s->call_edits)
                json_object_set_new(s->call_edits, id, json_string(text));
            free(text);
        }
    }
}

void ac_decisions_forget(ac_session *s)
{
    json_decref(s->call_edits);
    s->call_edits = NULL;
}

const char *ac_decisions_arguments(const ac_session *s, const char *id)
{
    return s->call_edits && id ? json_string_value(json_object_get(s->call_edits, id)) : NULL;
}

const char *ac_call_arguments(const ac_session *s, const ac_tool_call *c)
{
    const char *edited = c ? ac_decisions_arguments(s, c->id) : NULL;
    if (edited)
        return edited;
    return c && c->arguments && *c->arguments ? c->arguments : "{}";
}
