/*
 * handlers.c - the built-in guards and actions of spec/agent.fsm.
 *
 * They read and change session data only, taking time from the event and
 * data from its payload: no I/O, no clock, no randomness. That is what
 * makes a journal replay to the same session.
 */
#include <stdlib.h>
#include <string.h>

#include "obs/cost.h"
#include "context/tokens.h"
#include "session/decisions.h"
#include "session/guardrail.h"
#include "session/state.h"
#include "session_int.h"
#include "session/toolkits.h"
#include "util/grow.h"
#include "util/toolname.h"
#include "tools/schema.h"
#include "util/utf8.h"

static json_t *data(const ac_event *ev)
{
    return (json_t *)ev->data;
}

static const char *dstr(const ac_event *ev, const char *key)
{
    json_t *v = ev->data ? json_object_get(data(ev), key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static const ac_message *last_message(ac_session *s)
{
    size_t n = ac_conv_message_count(s->conv);
    return n ? ac_conv_message(s->conv, n - 1) : NULL;
}

/* ---------------- guards ---------------- */

static bool g_turn_unfinished(ac_session *s, const ac_event *ev)
{
    (void)ev;
    const ac_message *m = last_message(s);
    return m && (m->role == AC_ROLE_USER || m->role == AC_ROLE_TOOL ||
                 (m->role == AC_ROLE_ASSISTANT && m->n_tool_calls > 0));
}

static bool g_has_queued_message(ac_session *s, const ac_event *ev)
{
    (void)ev;
    return json_array_size(s->queued) > 0;
}

static bool g_iterations_left(ac_session *s, const ac_event *ev)
{
    (void)ev;
    return ac_conv_iteration(s->conv) < s->e->p_max_iterations->ival;
}

static bool g_needs_compaction(ac_session *s, const ac_event *ev)
{
    (void)ev;
    if (s->compacted_this_plan)
        return false;
    int64_t threshold = s->e->p_compact_threshold->ival;
    return threshold > 0 && (int64_t)ac_session_estimate_tokens(s) > threshold;
}

static bool g_turn_complete(ac_session *s, const ac_event *ev)
{
    (void)ev;
    const ac_message *m = last_message(s);
    return m && m->role == AC_ROLE_ASSISTANT && m->n_tool_calls == 0;
}

static bool g_retryable(ac_session *s, const ac_event *ev)
{
    (void)s;
    ac_failure_view f;
    ac_failure_of(s, ev, &f);
    return f.retryable;
}

static bool g_retries_left(ac_session *s, const ac_event *ev)
{
    (void)ev;
    return ac_conv_retries(s->conv) < s->e->p_max_retries->ival;
}

static bool g_has_tool_calls(ac_session *s, const ac_event *ev)
{
    ac_calls_view v;
    ac_event_calls(s, ev, &v);
    return v.n > 0;
}

/* True when this event answers the last call still pending in the
 * iteration, or says there was nothing to run ({"none": true}). */
static bool g_last_tool_result(ac_session *s, const ac_event *ev)
{
    int ok;
    const char *content;
    size_t n;
    int64_t dur;
    const char *id = ac_tool_result_of(s, ev, &ok, &content, &n, &dur);
    if (!id)
        return ev->data && json_is_true(json_object_get(data(ev), "none")) &&
               ac_conv_iter_pending(s->conv) == 0;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
    return c && c->state == AC_CALL_NONE && ac_conv_iter_pending(s->conv) == 1;
}

/* The last assistant message checked against the output schema: 1 valid (or no schema), 0
 * not, with why in err. Depends on the conversation and the engine's schema only. */
static int answer_check(ac_session *s, char *err, size_t errcap)
{
    err[0] = 0;
    if (!s->output_schema)
        return 1;
    const ac_message *m = last_message(s);
    const char *text = m ? m->content : "";
    json_error_t jerr;
    json_t *doc = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!doc) {
        snprintf(err, errcap, "the answer is not JSON: %s (line %d, column %d)", jerr.text,
                 jerr.line, jerr.column);
        return 0;
    }
    int ok = ac_schema_validate(s->output_schema, doc, err, errcap);
    json_decref(doc);
    return ok;
}

static bool g_answer_valid(ac_session *s, const ac_event *ev)
{
    (void)ev;
    char err[1024];
    return answer_check(s, err, sizeof err) == 1;
}

static bool g_output_retries_left(ac_session *s, const ac_event *ev)
{
    (void)ev;
    return s->output_rejections < s->e->p_output_retries->ival;
}

/* ---------------- actions ---------------- */

/* The tools offered to the model, as the spawn and tools.changed events give them, less the
 * spec's guardrails' commands. */
static void add_tool_defs(ac_session *s, json_t *tools)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *desc = json_string_value(json_object_get(t, "description"));
        json_t *params = json_object_get(t, "parameters");
        char *schema = params ? json_dumps(params, JSON_COMPACT) : NULL;
        if (name && !ac_guardrail_named(s->e, name))
            ac_conv_add_tool_def(s->conv, name, desc ? desc : "",
                                 schema ? schema : "{\"type\":\"object\"}");
        free(schema);
    }
}

/* The message that began the current turn (what a rollback removes from), NULL between
 * turns. */
static void set_turn_start(ac_session *s, const char *msg_id)
{
    free(s->turn_start);
    s->turn_start = msg_id ? strdup(msg_id) : NULL;
}

static void a_init_session(ac_session *s, const ac_event *ev)
{
    const char *sys = dstr(ev, "system");
    if (sys && *sys)
        ac_conv_add_message(s->conv, AC_ROLE_SYSTEM, sys, ev->time_ms);
    size_t i;
    json_t *m; /* the conversation before the first message (ac_session_options.history) */
    json_array_foreach(ev->data ? json_object_get(data(ev), "history") : NULL, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *text = json_string_value(json_object_get(m, "content"));
        if (role && text)
            ac_conv_add_message(s->conv,
                                strcmp(role, "assistant") ? AC_ROLE_USER : AC_ROLE_ASSISTANT, text,
                                ev->time_ms);
    }
    add_tool_defs(s, ev->data ? json_object_get(data(ev), "tools") : NULL);
    add_tool_defs(s, ev->data ? json_object_get(data(ev), "client_tools") : NULL);
    json_t *schema = ev->data ? json_object_get(data(ev), "output_schema") : NULL;
    if (schema && !s->output_schema) { /* checked at engine start: this compiles */
        char why[256];
        s->output_schema = ac_schema_compile(schema, why, sizeof why);
        s->output_schema_text =
            s->output_schema ? json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    }
    if (!s->state) /* the State, as the spawn event declares it (state.h) */
        s->state = ac_state_new(ev->data ? json_object_get(data(ev), "state") : NULL);
    int64_t window = s->e->p_context_window->ival;
    ac_conv_set_window(s->conv, window > 0 ? (size_t)window : 0); /* negative: all */
    ac_toolkits_session_init(s, ev->data ? json_object_get(data(ev), "toolkits") : NULL);
}

static void a_append_user_message(ac_session *s, const ac_event *ev)
{
    const char *text = dstr(ev, "text");
    const char *id = ac_conv_add_message(s->conv, AC_ROLE_USER, text ? text : "", ev->time_ms);
    if (!s->turn_start) /* a message added while paused mid-turn belongs to that turn */
        set_turn_start(s, id);
}

static void a_queue_user_message(ac_session *s, const ac_event *ev)
{
    const char *text = dstr(ev, "text");
    json_array_append_new(
        s->queued, json_pack("{s:s, s:I}", "text", text ? text : "", "t", (json_int_t)ev->time_ms));
}

static void a_take_queued_message(ac_session *s, const ac_event *ev)
{
    json_t *q = json_array_get(s->queued, 0);
    if (!q)
        return;
    const char *text = json_string_value(json_object_get(q, "text"));
    set_turn_start(s, ac_conv_add_message(s->conv, AC_ROLE_USER, text ? text : "", ev->time_ms));
    json_array_remove(s->queued, 0);
}

static void partial_reset(ac_session *s);

/* Where a turn ends and how it went are turn.c's (the session leaving the state that runs
 * turns, and the reason given); these actions say only what they know. */
static void a_finish_interaction(ac_session *s, const ac_event *ev)
{
    (void)ev;
    set_turn_start(s, NULL);
}

static void a_record_failure(ac_session *s, const ac_event *ev)
{
    (void)ev;
    set_turn_start(s, NULL);
    if (!s->error)
        ac_session_set_error(s, "the agent failed");
}

/* turn.cancel: the turn stops, what it added stays (its unanswered calls are answered as
 * interrupted when the next turn starts: start_loop) */
static void a_cancel_turn(ac_session *s, const ac_event *ev)
{
    (void)ev;
    set_turn_start(s, NULL);
    partial_reset(s);
    ac_turn_mark(s, AC_TURN_MARK_CANCELLED);
}

static void a_cancel_session(ac_session *s, const ac_event *ev)
{
    (void)ev;
    set_turn_start(s, NULL);
    ac_turn_mark(s, AC_TURN_MARK_CANCELLED);
    ac_session_mark_end(s, AC_END_CANCELLED);
}

static void a_close_session(ac_session *s, const ac_event *ev)
{
    (void)ev;
    set_turn_start(s, NULL);
    ac_turn_mark(s, AC_TURN_MARK_CANCELLED);
    ac_session_mark_end(s, AC_END_CLOSED);
}

/* The turn stops (the spec left Running or Paused) and every message it added is removed:
 * from the message that began it to the end. Its tool calls go with the assistant messages
 * that made them, so none is left unanswered. A turn whose first message was compacted away
 * keeps the summary: what follows the last summary is removed. What the turn's tools did
 * (toolkit contexts, the State, the world) stays. */
static void a_rollback_turn(ac_session *s, const ac_event *ev)
{
    size_t n = ac_conv_message_count(s->conv), from = n;
    if (s->turn_start)
        from = ac_conv_find_message(s->conv, s->turn_start);
    else if (g_turn_unfinished(s, ev)) /* restored from a snapshot that did not record it */
        for (size_t i = n; i-- > 0;) {
            const ac_message *m = ac_conv_message(s->conv, i);
            if (m->role == AC_ROLE_USER && !(m->flags & (AC_MSG_INTERNAL | AC_MSG_SUMMARY))) {
                from = i;
                break;
            }
        }
    if (s->turn_start && from >= n) { /* compacted: keep the summary */
        from = n;
        for (size_t i = n; i-- > 0;)
            if (ac_conv_message(s->conv, i)->flags & AC_MSG_SUMMARY) {
                from = i + 1;
                break;
            }
    }
    int rc = from < n ? ac_conv_replace_range(s->conv, from, n, NULL, 0, ev->time_ms) : AC_CONV_OK;
    if (rc == AC_CONV_OK) {
        ac_conv_next_iteration(s->conv); /* the turn's calls are gone: none to answer later */
        ac_conv_set_iteration(s->conv, 0);
    }
    set_turn_start(s, NULL);
    s->output_rejections = 0;
    s->compacted_this_plan = 0;
    partial_reset(s);
    char why[200];
    snprintf(why, sizeof why, "the turn was stopped but its messages could not be removed: %s",
             ac_conv_strerror(rc));
    ac_session_set_error(s, rc == AC_CONV_OK ? NULL : why); /* its calls are answered later */
    ac_turn_mark(s, AC_TURN_MARK_ROLLED_BACK);
}

/* The tools offered change (an MCP server's list changed): the event carries the whole
 * list, so a replay offers what the run offered. */
static void a_refresh_tools(ac_session *s, const ac_event *ev)
{
    json_t *tools = ev->data ? json_object_get(data(ev), "tools") : NULL;
    if (!json_is_array(tools))
        return;
    ac_conv_clear_tool_defs(s->conv);
    add_tool_defs(s, tools);
}

static void a_touch(ac_session *s, const ac_event *ev)
{
    (void)s;
    (void)ev;
}

static void a_start_loop(ac_session *s, const ac_event *ev)
{
    /* calls left without a result when the loop was stopped (a pause during
     * TOOL_EXECUTING) are answered as interrupted, so the model sees them */
    for (size_t i = 0; i < ac_conv_iter_call_count(s->conv); i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
        if (c && c->state == AC_CALL_NONE)
            ac_conv_set_tool_result(s->conv, id, 0,
                                    "interrupted: the session was paused before this call "
                                    "finished; call it again if it is still needed",
                                    ev->time_ms);
    }
    ac_conv_set_iteration(s->conv, 0);
    s->compacted_this_plan = 0;
    s->output_rejections = 0;
}

static void a_begin_iteration(ac_session *s, const ac_event *ev)
{
    (void)ev;
    ac_conv_next_iteration(s->conv);
    ac_conv_set_retries(s->conv, 0);
    s->compacted_this_plan = 0;
}

static void a_fail_budget(ac_session *s, const ac_event *ev)
{
    (void)ev;
    char msg[160];
    snprintf(msg, sizeof msg, "no final answer after max_iterations (%lld) LLM calls",
             (long long)s->e->p_max_iterations->ival);
    ac_session_set_error(s, msg);
}

static void a_fail_process(ac_session *s, const ac_event *ev)
{
    (void)ev;
    if (!s->error)
        ac_session_set_error(s, "the LLM call failed");
}

static void a_finish_answer(ac_session *s, const ac_event *ev)
{
    (void)ev;
    const ac_message *m = last_message(s);
    ac_session_set_answer(s, m ? m->content : "");
}

/* The refused answer stays in the conversation; the errors follow it as a user message so
 * the model can answer again. */
static void a_reject_answer(ac_session *s, const ac_event *ev)
{
    char err[1024], msg[1400];
    answer_check(s, err, sizeof err);
    s->output_rejections++;
    snprintf(msg, sizeof msg,
             "Your answer does not match the required JSON Schema: %s\n"
             "Reply again with only a JSON value that matches the schema.",
             err);
    ac_conv_add_message(s->conv, AC_ROLE_USER, msg, ev->time_ms);
    if (s->e->has_output && s->e->out.rejected)
        s->e->out.rejected(s->e->out.ud, s, s->output_rejections, err);
}

static void a_fail_output(ac_session *s, const ac_event *ev)
{
    (void)ev;
    char err[1024], msg[1400];
    answer_check(s, err, sizeof err);
    snprintf(msg, sizeof msg,
             "the answer does not match the output schema, after %d retr%s (output_retries = "
             "%lld): %s",
             s->output_rejections, s->output_rejections == 1 ? "y" : "ies",
             (long long)s->e->p_output_retries->ival, err);
    ac_session_set_error(s, msg);
}

/* pin: the conversation's latest message is kept by the "importance" compaction (a tool
 * result, or the assistant message of a round: its calls' results). */
static void a_pin(ac_session *s, const ac_event *ev)
{
    size_t n = ac_conv_message_count(s->conv);
    if (n)
        ac_conv_pin(s->conv, n - 1, ev->time_ms);
}

static void a_apply_compaction(ac_session *s, const ac_event *ev)
{
    size_t before = 0, after = 0;
    ac_compact_apply(s, data(ev), ev->time_ms, &before, &after);
    s->compacted_this_plan = 1;
    if (s->e->has_output && s->e->out.compacted)
        s->e->out.compacted(s->e->out.ud, s, dstr(ev, "strategy"), before, after);
}

static void a_skip_compaction(ac_session *s, const ac_event *ev)
{
    (void)ev;
    s->compacted_this_plan = 1;
}

static void partial_reset(ac_session *s)
{
    s->partial_len = 0;
    if (s->partial)
        s->partial[0] = 0;
}

/* Remembers the raw token estimate of the request being sent, so the usage
 * the response reports calibrates later estimates (record_assistant). */
static void a_begin_call(ac_session *s, const ac_event *ev)
{
    ac_conv_set_last_llm_call_ms(s->conv, ev->time_ms);
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "estimate";
    ac_tokens_begin_request(s->conv, &o);
    partial_reset(s);
}

static void a_mark_streaming(ac_session *s, const ac_event *ev)
{
    (void)s;
    (void)ev;
}

/* A delta's kind and text: its typed payload, or its JSON (a replayed event). 0, or -1 when
 * it has no text. */
static int delta_of(const ac_session *s, const ac_event *ev, enum ac_delta_kind *kind,
                    const char **text, size_t *n)
{
    const ac_payload *p = ac_event_payload(s, ev);
    if (p && p->kind == AC_PAYLOAD_DELTA) {
        *kind = p->delta;
        *text = p->text;
        *n = p->n;
        return 0;
    }
    *kind = ac_delta_kind_of(dstr(ev, "kind"));
    json_t *tj = ev->data ? json_object_get(data(ev), "text") : NULL;
    *text = json_string_value(tj);
    *n = json_string_length(tj); /* known: no strlen */
    return *text ? 0 : -1;
}

static void a_append_delta(ac_session *s, const ac_event *ev)
{
    enum ac_delta_kind kind;
    const char *text;
    size_t n;
    if (delta_of(s, ev, &kind, &text, &n) < 0)
        return;
    if (kind == AC_DELTA_TEXT) {
        if (ac_grow((void **)&s->partial, &s->partial_cap, s->partial_len + n + 1, 1))
            return;
        memcpy(s->partial + s->partial_len, text, n + 1);
        s->partial_len += n;
        if (s->e->holds_text)
            ac_guardrail_hold(s, text, n);
        else if (s->e->has_output && s->e->out.text)
            s->e->out.text(s->e->out.ud, s, text, n);
        if (s->e->retracts_text && !s->e->holds_text)
            ac_guardrail_shown(s, text, n);
    } else if (kind == AC_DELTA_REASONING) {
        if (s->e->has_output && s->e->out.reasoning)
            s->e->out.reasoning(s->e->out.ud, s, text, n);
    }
}

static void a_discard_partial(ac_session *s, const ac_event *ev)
{
    (void)ev;
    if (s->e->holds_text)
        ac_guardrail_unhold(s, s->partial_len); /* never shown: nothing to retract */
    else if (s->partial_len && s->e->has_output && s->e->out.discarded)
        s->e->out.discarded(s->e->out.ud, s, s->partial_len);
    partial_reset(s);
}

static void a_record_llm_error(ac_session *s, const ac_event *ev)
{
    ac_failure_view f;
    ac_failure_of(s, ev, &f);
    ac_session_set_error(s, f.message ? f.message : "the LLM call failed");
}

/* text (n bytes) for the conversation's C strings: a U+0000 in it becomes U+FFFD, so the text
 * after it is kept. A text without one is returned as it is (*owned stays NULL). */
static const char *nul_free(const char *t, size_t n, char **owned)
{
    *owned = NULL;
    if (!t || strlen(t) == n)
        return t;
    *owned = ac_utf8_repair(t, n, AC_UTF8_REPLACE_NUL, NULL);
    return *owned ? *owned : t;
}

/* The calls of a reply for the conversation; names is where display names go. */
static void calls_in(ac_session *s, const ac_completion *r, ac_tool_call_in *in, char (*names)[160])
{
    for (size_t i = 0; i < r->n_calls; i++) {
        const ac_payload_call *c = &r->calls[i];
        in[i].id = c->id;
        in[i].name = c->name;
        in[i].arguments = c->arguments;
        /* a call the model sent without a name is still recorded (and
         * answered as an unknown tool), never dropped with its turn */
        if (!in[i].name || !*in[i].name)
            in[i].name = "(no name)";
        /* "prefix__tool" from the wire is the toolkit tool "prefix::tool" */
        if (strstr(in[i].name, "__") && ac_toolname_from_wire(in[i].name, ac_toolkits_known_name, s,
                                                              names[i], sizeof names[i]) == 1)
            in[i].name = names[i];
        /* by name, from a fixed list: replay gives the same flags whatever tools the
         * replaying engine has */
        in[i].internal = c->internal || ac_tool_is_internal_name(in[i].name);
    }
}

static void a_record_assistant(ac_session *s, const ac_event *ev)
{
    ac_decisions_forget(s); /* the user's edits were for the calls before these */
    ac_completion r;
    ac_payload_call *owned;
    if (ac_completion_of(s, ev, &r, &owned) < 0)
        r = (ac_completion){0};
    size_t n = r.n_calls;
    ac_tool_call_in *in = n ? calloc(n, sizeof *in) : NULL;
    char(*names)[160] = n ? calloc(n, sizeof *names) : NULL;
    if (!names) {
        free(in);
        in = NULL;
    }
    if (in)
        calls_in(s, &r, in, names);
    char *own_content, *own_refusal;
    const char *content = nul_free(r.content, r.content_n, &own_content);
    const char *refusal = nul_free(r.refusal, r.refusal_n, &own_refusal);
    if ((!content || !*content) && refusal)
        content = refusal;
    /* Anthropic thinking blocks go back with the turn: kept as their JSON text */
    char *thinking = r.blocks_json ? json_dumps(r.blocks_json, JSON_COMPACT | JSON_PRESERVE_ORDER)
                                   : ac_completion_blocks_text(&r);
    if (ac_conv_add_assistant_thinking(s->conv, content ? content : "", r.reasoning, thinking, in,
                                       in ? n : 0, ev->time_ms) == AC_CONV_EINVAL &&
        thinking) /* never lose the turn over its thinking */
        ac_conv_add_assistant(s->conv, content ? content : "", r.reasoning, in, in ? n : 0,
                              ev->time_ms);
    free(thinking);
    free(own_content);
    free(own_refusal);
    free(in);
    free(names);
    free(owned);
    if (r.has_usage) {
        ac_conv_add_usage(s->conv, r.input, r.output);
        if (s->e->price)
            s->cost_usd +=
                ac_price_cost_of(s->e->price, r.input, r.output, r.cached, r.cache_write);
        if (r.input > 0)
            ac_tokens_calibrate(s->conv, r.input);
    }
    partial_reset(s);
}

static void a_record_tool_result(ac_session *s, const ac_event *ev)
{
    int ok;
    const char *content;
    size_t n;
    int64_t dur;
    const char *id = ac_tool_result_of(s, ev, &ok, &content, &n, &dur);
    if (!id)
        return;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
    /* what a typed result never has (its event's JSON, a replayed or posted one) */
    ac_state_apply(s->state, json_object_get(data(ev), "state_writes")); /* state.h */
    ac_conv_set_tool_result(s->conv, id, ok, content ? content : "", ev->time_ms);
    ac_toolkits_apply_event(s, data(ev)); /* a toolkit call's states and context */
    /* answered from the result cache (tool_cache.h): the call its result came from */
    const char *from = dstr(ev, "cached_from");
    if (from && (s->cache_hits || (s->cache_hits = json_object())))
        json_object_set_new(s->cache_hits, id, json_string(from));
    if (c && s->e->has_output && s->e->out.tool_end)
        s->e->out.tool_end(s->e->out.ud, s, id, c->name, ok, content ? content : "", dur);
}

/* Internal tools: the result text is prepared by the effect (it is in the
 * event), and the context change is applied here. */
static void a_expand_context(ac_session *s, const ac_event *ev)
{
    json_t *d = data(ev);
    json_int_t step = json_integer_value(json_object_get(d, "by"));
    size_t by = step > 0 ? (size_t)step : 0, w = ac_conv_window(s->conv);
    if (w != 0)
        ac_conv_set_window(s->conv, w > SIZE_MAX - by ? SIZE_MAX : w + by);
    a_record_tool_result(s, ev);
}

/* "restore": cleared tool messages in view get their content back;
 * "rounds": calls out of view come back as internal tool-call rounds (an
 * assistant message issuing a copy of the call, then its full result), after
 * the load_tool_calls result so the model reads them next. */
static void a_load_context(ac_session *s, const ac_event *ev)
{
    json_t *ids = json_object_get(data(ev), "restore");
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        size_t mi = ac_conv_find_message(s->conv, json_string_value(v));
        if (mi != (size_t)-1)
            ac_conv_restore_tool_result(s->conv, mi, ev->time_ms);
    }
    a_record_tool_result(s, ev);
    json_array_foreach(json_object_get(data(ev), "rounds"), i, v)
    {
        const ac_tool_call *c = ac_conv_tool_call(s->conv, json_string_value(v));
        if (!c || c->state == AC_CALL_NONE || c->internal)
            continue;
        ac_tool_call_in in = {c->id, c->name, c->arguments, 1};
        if (ac_conv_add_assistant(s->conv, "", NULL, &in, 1, ev->time_ms) != AC_CONV_OK)
            continue;
        const ac_tool_call *copy =
            ac_conv_tool_call_at(s->conv, ac_conv_tool_call_count(s->conv) - 1);
        if (copy && copy != c)
            ac_conv_set_tool_result(s->conv, copy->id, c->state == AC_CALL_SUCCESS,
                                    c->result ? c->result : "", ev->time_ms);
    }
}

static void a_count_retry(ac_session *s, const ac_event *ev)
{
    (void)ev; /* the backoff effect reports the retry with its actual delay */
    ac_conv_set_retries(s->conv, ac_conv_retries(s->conv) + 1);
}

void ac_builtin_handlers(ac_registry *r)
{
    ac_registry_guard(r, "turn_unfinished", g_turn_unfinished);
    ac_registry_guard(r, "has_queued_message", g_has_queued_message);
    ac_registry_guard(r, "iterations_left", g_iterations_left);
    ac_registry_guard(r, "needs_compaction", g_needs_compaction);
    ac_registry_guard(r, "turn_complete", g_turn_complete);
    ac_registry_guard(r, "retryable", g_retryable);
    ac_registry_guard(r, "retries_left", g_retries_left);
    ac_registry_guard(r, "has_tool_calls", g_has_tool_calls);
    ac_registry_guard(r, "last_tool_result", g_last_tool_result);
    ac_registry_guard(r, "answer_valid", g_answer_valid);
    ac_registry_guard(r, "output_retries_left", g_output_retries_left);
    ac_registry_action(r, "init_session", a_init_session);
    ac_registry_action(r, "append_user_message", a_append_user_message);
    ac_registry_action(r, "queue_user_message", a_queue_user_message);
    ac_registry_action(r, "take_queued_message", a_take_queued_message);
    ac_registry_action(r, "finish_interaction", a_finish_interaction);
    ac_registry_action(r, "record_failure", a_record_failure);
    ac_registry_action(r, "cancel_session", a_cancel_session);
    ac_registry_action(r, "cancel_turn", a_cancel_turn);
    ac_registry_action(r, "close_session", a_close_session);
    ac_registry_action(r, "touch", a_touch);
    ac_registry_action(r, "rollback_turn", a_rollback_turn);
    ac_registry_action(r, "refresh_tools", a_refresh_tools);
    ac_registry_action(r, "start_loop", a_start_loop);
    ac_registry_action(r, "begin_iteration", a_begin_iteration);
    ac_registry_action(r, "fail_budget", a_fail_budget);
    ac_registry_action(r, "fail_process", a_fail_process);
    ac_registry_action(r, "finish_answer", a_finish_answer);
    ac_registry_action(r, "reject_answer", a_reject_answer);
    ac_registry_action(r, "fail_output", a_fail_output);
    ac_registry_action(r, "apply_compaction", a_apply_compaction);
    ac_registry_action(r, "pin", a_pin);
    ac_registry_action(r, "skip_compaction", a_skip_compaction);
    ac_registry_action(r, "begin_call", a_begin_call);
    ac_registry_action(r, "mark_streaming", a_mark_streaming);
    ac_registry_action(r, "append_delta", a_append_delta);
    ac_registry_action(r, "discard_partial", a_discard_partial);
    ac_registry_action(r, "record_llm_error", a_record_llm_error);
    ac_registry_action(r, "record_assistant", a_record_assistant);
    ac_registry_action(r, "record_tool_result", a_record_tool_result);
    ac_registry_action(r, "expand_context", a_expand_context);
    ac_registry_action(r, "load_context", a_load_context);
    ac_registry_action(r, "count_retry", a_count_retry);
}
