/*
 * genai.c - a session's events, steps and effects as spans of the GenAI semantic conventions
 * (obs.h): invoke_agent per turn, chat per model call, execute_tool per tool call, compact per
 * compaction, the spec's external transitions as agentc.transition events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs/cost.h"
#include "util/grow.h"
#include "obs/metrics_int.h"
#include "obs/obs.h"
#include "obs/span.h"
#include "session/journal.h"
#include "mcp/mcp.h"
#include "session/session_int.h"
#include "session/store_hooks.h"
#include "session/tools_internal.h"
#include "util/json_text.h"

#define CONTENT_CAP (64 * 1024) /* bytes of a captured content attribute */
#define MAX_MACHINES 32

static void event_ends(ac_obs *o, ac_session *s);

struct ac_obs {
    const ac_obs_engine *oe;
    char *sid;
    ac_span *turn, *chat, *compact;
    int attempt;    /* model calls since the last one that completed (1: the first) */
    int chat_uses;  /* llm_request effect uses running (one per state of the call) */
    int64_t now;    /* the time of the event being applied */
    const char *ev; /* its name, NULL between events */
    const json_t *data;
    size_t turns_before; /* turns ended before the event */
    int64_t in_tok, out_tok;
    double cost;                   /* the turn's, with oe->price */
    int64_t entered[MAX_MACHINES]; /* when each machine entered its state */
    int64_t chat_start;
    const char *chat_outcome; /* "ok", "error"; NULL: cancelled */
    char fail_class[64];      /* the class of the last failed call, for the retry's count */
    const char *status;       /* the agentc_sessions label it is counted under, NULL: none */
    char trace_id[33];        /* of the turn under way or the last one, "" before any */
    size_t compact_before;    /* estimated tokens before a compaction.done is applied */
    const char *compact_strategy;
    ac_session *s;       /* the session of the event being applied */
    ac_span *ended;      /* a turn that ended in it as the next one began */
    int turn_left;       /* the root machine left a turn state in it */
    int turn_before;     /* a turn ran before it */
    char next_trace[33]; /* the trace id of a user_message applied during a turn: the next's */
    struct tool_span {   /* span ids given out for tool calls not completed yet */
        char *call_id;
        char span_id[17];
    } * tools;
    size_t ntools, toolcap;
};

/* a and b in buf (cap > 0), cut to fit: a span's name without a printf */
static const char *name_of(char *buf, size_t cap, const char *a, const char *b)
{
    size_t na = strlen(a), nb = b ? strlen(b) : 0;
    if (na > cap - 1)
        na = cap - 1;
    if (nb > cap - 1 - na)
        nb = cap - 1 - na;
    memcpy(buf, a, na);
    memcpy(buf + na, b, nb);
    buf[na + nb] = 0;
    return buf;
}

/* "00-<trace>-<span>-01" in buf (cap >= 56) */
static void traceparent_of(char *buf, const char *trace_id, const char *span_id)
{
    memcpy(buf, "00-", 3);
    memcpy(buf + 3, trace_id, 32);
    buf[35] = '-';
    memcpy(buf + 36, span_id, 16);
    memcpy(buf + 52, "-01", 4);
}

static const char *dstr(const json_t *d, const char *key)
{
    return json_string_value(json_object_get(d, key));
}

static void set_status(ac_obs *o, const char *status)
{
    if (o->status == status)
        return;
    if (o->status)
        ac_metrics_add(o->oe->metrics, AC_M_SESSIONS, &o->status, -1);
    o->status = status;
    if (status)
        ac_metrics_add(o->oe->metrics, AC_M_SESSIONS, &status, 1);
}

ac_obs *ac_obs_new(const ac_obs_engine *oe, const char *session_id)
{
    ac_obs *o = calloc(1, sizeof *o);
    if (o && !(o->sid = strdup(session_id ? session_id : ""))) {
        free(o);
        return NULL;
    }
    if (o)
        o->oe = oe;
    if (o)
        set_status(o, "idle");
    return o;
}

static void end_span(ac_obs *o, ac_span **sp)
{
    if (*sp)
        ac_tracer_add(o->oe->tracer, ac_span_end(*sp, o->now));
    *sp = NULL;
}

/* The model call's span ends; its count and duration are recorded. */
static void chat_end(ac_obs *o)
{
    if (!o->chat)
        return;
    const char *l[] = {o->oe->provider, o->oe->model,
                       o->chat_outcome ? o->chat_outcome : "cancelled"};
    ac_metrics_add(o->oe->metrics, AC_M_LLM_CALLS, l, 1);
    ac_metrics_observe(o->oe->metrics, AC_M_LLM_SECONDS, l,
                       (double)(o->now - o->chat_start) / 1000.0);
    end_span(o, &o->chat);
}

/* The span ids given out for tool calls, forgotten (the turn is over). */
static void tools_forget(ac_obs *o)
{
    for (size_t i = 0; i < o->ntools; i++)
        free(o->tools[i].call_id);
    o->ntools = 0;
}

/* The span id given out for call_id, taken into out (17 bytes): 1, or 0 when none was. */
static int tool_span_id(ac_obs *o, const char *call_id, char *out)
{
    for (size_t i = 0; i < o->ntools; i++)
        if (!strcmp(o->tools[i].call_id, call_id)) {
            memcpy(out, o->tools[i].span_id, 17);
            free(o->tools[i].call_id);
            o->tools[i] = o->tools[--o->ntools];
            return 1;
        }
    return 0;
}

int ac_obs_tool_traceparent(ac_obs *o, const char *call_id, char *buf, size_t cap)
{
    if (!o || !o->turn || !o->oe->tracer || !call_id || cap < 56)
        return 0;
    size_t i = 0;
    while (i < o->ntools && strcmp(o->tools[i].call_id, call_id) != 0)
        i++;
    if (i == o->ntools) {
        char *id = strdup(call_id);
        if (!id || ac_grow((void **)&o->tools, &o->toolcap, o->ntools + 1, sizeof *o->tools)) {
            free(id);
            return 0;
        }
        o->tools[i].call_id = id;
        ac_span_random_hex(o->tools[i].span_id, 8);
        o->ntools++;
    }
    traceparent_of(buf, o->turn->trace_id, o->tools[i].span_id);
    return 1;
}

void ac_obs_free(ac_obs *o, int64_t t_ms)
{
    if (!o)
        return;
    if (t_ms > o->now)
        o->now = t_ms;
    set_status(o, NULL);
    chat_end(o);
    end_span(o, &o->compact);
    end_span(o, &o->turn);
    end_span(o, &o->ended);
    tools_forget(o);
    free(o->tools);
    free(o->sid);
    free(o);
}

/* A content attribute, cut at CONTENT_CAP with a note. */
static void content(ac_span *sp, const char *key, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n <= CONTENT_CAP) {
        ac_span_str(sp, key, text);
        return;
    }
    ac_span_strn(sp, key, text, CONTENT_CAP);
    ac_span_int(sp, "agentc.content_cut_bytes", (int64_t)(n - CONTENT_CAP));
}

/* A content attribute of a JSON value's text. */
static void content_json(ac_span *sp, const char *key, const json_t *v)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (v)
        ac_json_put(&b, v, AC_JSON_REALS);
    if (!b.failed && b.p)
        content(sp, key, b.p);
    ac_buf_free(&b);
}

static ac_span *child(ac_obs *o, const char *name, int kind, int64_t start)
{
    ac_span *sp = ac_span_start(ac_tracer_blank(o->oe->tracer), o->turn ? o->turn->trace_id : NULL,
                                o->turn ? o->turn->span_id : NULL, name, kind, start);
    ac_span_str(sp, "gen_ai.conversation.id", o->sid);
    return sp;
}

/* A turn's span: in the trace its user_message names or a received parent's, else a new one;
 * the received parent's child. */
static void turn_begin(ac_obs *o, const ac_session *s)
{
    char name[256];
    name_of(name, sizeof name, "invoke_agent ", o->oe->agent);
    const char *trace = dstr(o->data, "trace_id");
    if (!trace && o->next_trace[0])
        trace = o->next_trace;
    const char *parent = NULL;
    if (s->tp_trace[0] && (!trace || !strcmp(trace, s->tp_trace))) {
        trace = s->tp_trace;
        parent = s->tp_span;
    }
    o->turn = ac_span_start(ac_tracer_blank(o->oe->tracer), trace, parent, name, AC_SPAN_INTERNAL,
                            o->now);
    ac_span_str(o->turn, "gen_ai.operation.name", "invoke_agent");
    ac_span_str(o->turn, "gen_ai.provider.name", o->oe->provider);
    ac_span_str(o->turn, "gen_ai.agent.name", o->oe->agent);
    ac_span_str(o->turn, "gen_ai.request.model", o->oe->model);
    ac_span_str(o->turn, "gen_ai.conversation.id", o->sid);
    o->in_tok = o->out_tok = 0;
    o->cost = 0;
    o->chat_uses = 0;
    o->attempt = 0;
    o->next_trace[0] = 0;
}

/* The turn's usage and cost on its span sp. */
static void turn_usage(ac_obs *o, ac_span *sp)
{
    ac_span_int(sp, "gen_ai.usage.input_tokens", o->in_tok);
    ac_span_int(sp, "gen_ai.usage.output_tokens", o->out_tok);
    if (o->oe->price)
        ac_span_double(sp, "agentc.cost_usd", o->cost);
}

/* How the last turn ended, on its span sp and in the metrics. */
static void turn_outcome(ac_obs *o, ac_session *s, ac_span *sp)
{
    const char *why = NULL;
    enum ac_turn_outcome out = ac_session_last_turn(s, &why);
    const char *oname = ac_turn_outcome_name(out);
    ac_session_stats st;
    ac_session_get_stats(s, &st);
    ac_metrics_add(o->oe->metrics, AC_M_TURNS, &oname, 1);
    ac_metrics_observe(o->oe->metrics, AC_M_TURN_ITERATIONS, NULL, (double)st.iterations);
    ac_span_str(sp, "agentc.turn.outcome", oname);
    if (out == AC_TURN_FAILED) {
        ac_span_str(sp, "agentc.fail.reason", why);
        ac_span_str(sp, "error.type", "failed");
        ac_span_error(sp, why);
    }
}

static void turn_end(ac_obs *o, ac_session *s)
{
    turn_usage(o, o->turn);
    turn_outcome(o, s, o->turn);
    chat_end(o);
    end_span(o, &o->compact);
    end_span(o, &o->turn);
    tools_forget(o);
}

/* The root machine entered a turn state (again, a self-transition included) in a turn: that
 * turn ended and its span waits for its outcome (ac_obs_event_done); the new turn has its own. */
static void turn_split(ac_obs *o)
{
    turn_usage(o, o->turn);
    chat_end(o);
    end_span(o, &o->compact);
    o->ended = o->turn;
    o->turn = NULL;
    tools_forget(o);
    turn_begin(o, o->s);
}

void ac_obs_event(ac_obs *o, ac_session *s, const char *name, int64_t t_ms, const json_t *data,
                  int in_turn)
{
    if (!o)
        return;
    o->now = t_ms;
    o->ev = name;
    o->data = data;
    o->s = s;
    o->turn_left = 0;
    o->turn_before = in_turn;
    if (in_turn && !strcmp(name, "user_message")) { /* for the next turn */
        const char *tid = dstr(data, "trace_id");
        snprintf(o->next_trace, sizeof o->next_trace, "%s", tid && strlen(tid) == 32 ? tid : "");
    }
    ac_session_stats st;
    ac_session_get_stats(s, &st);
    o->turns_before = st.turns_ended;
    event_ends(o, s);
    if (in_turn || o->turn)
        return;
    turn_begin(o, s); /* kept if the event starts a turn */
    if (ac_tracer_capture(o->oe->tracer) && !strcmp(name, "user_message"))
        content(o->turn, "gen_ai.input.messages", dstr(data, "text"));
}

/* llm.completed: the response's finish reason and usage, and the answer when captured. */
static void chat_completed(ac_obs *o)
{
    const char *fin = dstr(o->data, "finish_reason");
    if (fin)
        ac_span_strs(o->chat, "gen_ai.response.finish_reasons", &fin, 1);
    const json_t *u = json_object_get(o->data, "usage");
    int64_t in = json_integer_value(json_object_get(u, "input"));
    int64_t out = json_integer_value(json_object_get(u, "output"));
    ac_span_int(o->chat, "gen_ai.usage.input_tokens", in);
    ac_span_int(o->chat, "gen_ai.usage.output_tokens", out);
    const char *rid = dstr(o->data, "response_id"), *rmodel = dstr(o->data, "response_model");
    ac_span_str(o->chat, "gen_ai.response.model", rmodel ? rmodel : o->oe->model);
    if (rid)
        ac_span_str(o->chat, "gen_ai.response.id", rid);
    o->in_tok += in;
    o->out_tok += out;
    o->chat_outcome = "ok";
    static const char *const extra[][2] = {
        {"cached", "gen_ai.usage.cache_read.input_tokens"},
        {"cache_write", "gen_ai.usage.cache_creation.input_tokens"},
        {"reasoning", "gen_ai.usage.reasoning.output_tokens"}};
    for (size_t i = 0; i < 3; i++)
        if (json_is_integer(json_object_get(u, extra[i][0])))
            ac_span_int(o->chat, extra[i][1], json_integer_value(json_object_get(u, extra[i][0])));
    if (o->oe->price) {
        double c = ac_price_cost(o->oe->price, u);
        o->cost += c;
        ac_span_double(o->chat, "agentc.cost_usd", c);
        ac_metrics_add(o->oe->metrics, AC_M_COST, &o->oe->model, c);
    }
    const char *li[] = {o->oe->model, "input"}, *lo[] = {o->oe->model, "output"};
    ac_metrics_add(o->oe->metrics, AC_M_TOKENS, li, (double)in);
    ac_metrics_add(o->oe->metrics, AC_M_TOKENS, lo, (double)out);
    o->attempt = 0;
    if (!ac_tracer_capture(o->oe->tracer))
        return;
    json_t *msg = json_pack("[{s:s, s:[{s:s, s:O}], s:O*}]", "role", "assistant", "parts", "type",
                            "text", "content", json_object_get(o->data, "content"), "tool_calls",
                            json_object_get(o->data, "tool_calls"));
    content_json(o->chat, "gen_ai.output.messages", msg);
    json_decref(msg);
}

static void chat_failed(ac_obs *o)
{
    const char *cls = dstr(o->data, "class");
    o->chat_outcome = "error";
    snprintf(o->fail_class, sizeof o->fail_class, "%s", cls ? cls : "other");
    ac_span_str(o->chat, "error.type", cls ? cls : "_OTHER");
    ac_span_error(o->chat, dstr(o->data, "message"));
}

/* tool.completed: a span for the call, from its start (the duration the event carries). */
static void tool_completed(ac_obs *o, ac_session *s)
{
    const char *id = dstr(o->data, "id");
    const char *args = NULL;
    const char *tool = id ? ac_session_tool_call_name(s, id, &args) : NULL;
    if (!tool)
        return;
    int64_t dur = json_integer_value(json_object_get(o->data, "duration_ms"));
    char name[256];
    name_of(name, sizeof name, "execute_tool ", tool);
    ac_span *sp = child(o, name, AC_SPAN_INTERNAL, o->now - (dur > 0 ? dur : 0));
    if (sp) /* the id its requests and sub-agent were given */
        tool_span_id(o, id, sp->span_id);
    ac_span_str(sp, "gen_ai.operation.name", "execute_tool");
    ac_span_str(sp, "gen_ai.tool.name", tool);
    ac_span_str(sp, "gen_ai.tool.call.id", id);
    ac_span_str(sp, "gen_ai.tool.type", "function");
    const ac_tool *t = ac_tools_find(s->e, tool);
    const char *sep = strstr(tool, "::");
    if (t && t->kind == TK_MCP && t->mcp) /* an MCP server's tool: the server's name */
        ac_span_str(sp, "agentc.mcp.server", ac_mcp_server_name(t->mcp));
    else if (sep)
        ac_span_strn(sp, "agentc.toolkit", tool, (size_t)(sep - tool));
    const char *from = dstr(o->data, "cached_from"); /* answered from the result cache */
    if (from)
        ac_span_str(sp, "agentc.tool.cached_from", from);
    int ok = json_is_true(json_object_get(o->data, "ok"));
    const char *lt[] = {tool, ok ? "ok" : "error"};
    ac_metrics_add(o->oe->metrics, AC_M_TOOL_CALLS, lt, 1);
    ac_metrics_observe(o->oe->metrics, AC_M_TOOL_SECONDS, lt, (double)(dur > 0 ? dur : 0) / 1000.0);
    if (!ok) {
        ac_span_str(sp, "error.type", "tool_error");
        ac_span_error(sp, "the tool call failed");
    }
    if (ac_tracer_capture(o->oe->tracer)) {
        content(sp, "gen_ai.tool.call.arguments", args);
        content(sp, "gen_ai.tool.call.result", dstr(o->data, "content"));
    }
    ac_tracer_add(o->oe->tracer, ac_span_end(sp, o->now));
}

/* What the event says of the span it ends (before the dispatch stops its effect). */
static void event_ends(ac_obs *o, ac_session *s)
{
    if (o->chat && !strcmp(o->ev, "llm.started")) {
        const char *l[] = {o->oe->provider, o->oe->model};
        double ttft = (double)(o->now - o->chat_start) / 1000.0;
        ac_metrics_observe(o->oe->metrics, AC_M_TTFT, l, ttft);
        ac_span_ms(o->chat, "gen_ai.response.time_to_first_chunk", o->now - o->chat_start);
    } else if (o->chat && !strcmp(o->ev, "llm.completed"))
        chat_completed(o);
    else if (o->chat && !strcmp(o->ev, "llm.failed"))
        chat_failed(o);
    else if (!strcmp(o->ev, "tool.completed") && !json_is_true(json_object_get(o->data, "none")))
        tool_completed(o, s);
    else if (o->compact && !strncmp(o->ev, "compaction.", 11)) {
        const char *strat = dstr(o->data, "strategy");
        char name[128];
        name_of(name, sizeof name, "compact ", strat);
        ac_span_rename(o->compact, name);
        ac_span_str(o->compact, "agentc.compaction.strategy", strat);
        if (!strcmp(o->ev, "compaction.done")) {
            ac_metrics_add(o->oe->metrics, AC_M_COMPACTIONS, &strat, 1);
            o->compact_before = ac_session_estimate_tokens(s); /* and after: event_done */
            o->compact_strategy = strat;
        } else
            ac_span_error(o->compact, dstr(o->data, "message"));
    }
}

void ac_obs_event_done(ac_obs *o, ac_session *s, int in_turn)
{
    if (!o)
        return;
    ac_session_stats st;
    ac_session_get_stats(s, &st);
    int ended = st.turns_ended != o->turns_before;
    if (o->ended) { /* the turn that ended as this one began */
        turn_outcome(o, s, o->ended);
        end_span(o, &o->ended);
    }
    if (o->compact_strategy) { /* what the compaction saved, by the conversation's estimate */
        size_t after = ac_session_estimate_tokens(s);
        double saved = o->compact_before > after ? (double)(o->compact_before - after) : 0;
        ac_metrics_add(o->oe->metrics, AC_M_COMPACTION_SAVED, &o->compact_strategy, saved);
        o->compact_strategy = NULL;
    }
    if (in_turn && o->turn)
        memcpy(o->trace_id, o->turn->trace_id, sizeof o->trace_id);
    if (in_turn)
        set_status(o, "running");
    else if (ended || ac_session_ended(s))
        set_status(o, ac_session_ended(s) ? "ended" : "idle");
    if (o->turn && !in_turn && ended) {
        memcpy(o->trace_id, o->turn->trace_id, sizeof o->trace_id);
        turn_end(o, s);
    } else if (o->turn && !in_turn && !ended) {
        ac_tracer_recycle(o->oe->tracer, o->turn); /* the event began no turn */
        o->turn = NULL;
    }
    o->ev = NULL;
    o->data = NULL;
    o->s = NULL;
}

/* The conversation as the model is sent it, for gen_ai.input.messages and
 * gen_ai.system_instructions. */
static void capture_request(ac_obs *o, ac_session *s)
{
    json_t *msgs = json_array();
    const char *system = NULL;
    for (size_t i = 0, n = ac_session_message_count(s); i < n; i++) {
        const char *role = NULL;
        const char *text = ac_session_message(s, i, &role);
        if (role && !strcmp(role, "system")) {
            system = text;
            continue;
        }
        json_array_append_new(msgs,
                              json_pack("{s:s, s:[{s:s, s:s}]}", "role", role ? role : "", "parts",
                                        "type", "text", "content", text ? text : ""));
    }
    content_json(o->chat, "gen_ai.input.messages", msgs);
    json_decref(msgs);
    if (system)
        content(o->chat, "gen_ai.system_instructions", system);
}

static void chat_begin(ac_obs *o, ac_session *s)
{
    char name[256];
    name_of(name, sizeof name, "chat ", o->oe->model);
    o->chat = child(o, name, AC_SPAN_CLIENT, o->now);
    o->chat_start = o->now;
    o->chat_outcome = NULL;
    if (++o->attempt > 1) {
        const char *cls = o->fail_class;
        ac_metrics_add(o->oe->metrics, AC_M_RETRIES, &cls, 1);
    }
    ac_span_str(o->chat, "gen_ai.operation.name", "chat");
    ac_span_str(o->chat, "gen_ai.provider.name", o->oe->provider);
    ac_span_str(o->chat, "gen_ai.request.model", o->oe->model);
    ac_span_int(o->chat, "agentc.attempt", o->attempt);
    const ac_request_settings *r = o->oe->request;
    if (r && r->has_temperature)
        ac_span_double(o->chat, "gen_ai.request.temperature", r->temperature);
    if (r && r->has_top_p)
        ac_span_double(o->chat, "gen_ai.request.top_p", r->top_p);
    if (r && r->has_seed)
        ac_span_int(o->chat, "gen_ai.request.seed", r->seed);
    if (o->oe->max_tokens > 0)
        ac_span_int(o->chat, "gen_ai.request.max_tokens", o->oe->max_tokens);
    size_t nstop = 0;
    while (r && r->stop && r->stop[nstop])
        nstop++;
    if (nstop)
        ac_span_strs(o->chat, "gen_ai.request.stop_sequences", r->stop, nstop);
    if (ac_tracer_capture(o->oe->tracer))
        capture_request(o, s);
}

void ac_obs_effect(ac_obs *o, ac_session *s, const char *effect, int start)
{
    if (!o || !o->turn)
        return;
    if (!strcmp(effect, "llm_request")) {
        if (start && !o->chat)
            chat_begin(o, s);
        o->chat_uses += start ? 1 : -1;
        if (o->chat_uses <= 0) {
            o->chat_uses = 0;
            chat_end(o);
        }
    } else if (!strcmp(effect, "compact")) {
        if (start && !o->compact) {
            o->compact = child(o, "compact", AC_SPAN_INTERNAL, o->now);
            ac_span_str(o->compact, "gen_ai.operation.name", "compact");
        } else if (!start) {
            end_span(o, &o->compact);
        }
    }
}

/* A string attribute's OTLP/JSON text, and a comma after it */
static void attr_text(ac_buf *b, const char *key, const char *v)
{
    ac_buf_printf(b, "{\"key\":\"%s\",\"value\":{\"stringValue\":", key);
    ac_json_put_str(b, v, strlen(v));
    ac_buf_add(b, "}},", 3);
}

/* The record's agentc.transition attributes but the time in state (l: machine, from, event,
 * to), made once per row and states, interned by the tracer: NULL when they cannot be kept. */
static const ac_obs_row *row_attrs(ac_obs *o, const ac_trace_rec *r, const char *const l[4])
{
    const ac_fsm_tables *t = o->oe->t;
    ac_obs_row *row = o->oe->rows && r->row < t->n_transitions ? &o->oe->rows[r->row] : NULL;
    if (!row)
        return NULL;
    if (row->attrs && row->from == r->from && row->event == r->event && row->to == r->to)
        return row;
    static const char *const keys[] = {"agentc.machine", "agentc.from", "agentc.event",
                                       "agentc.to"};
    char guard[512];
    ac_journal_guard_text(t, t->transitions[r->row].guard, guard, sizeof guard);
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    for (size_t i = 0; i < 4; i++)
        attr_text(&b, keys[i], l[i]);
    if (*guard) /* a row without a guard has none */
        attr_text(&b, "agentc.guard", guard);
    ac_buf_printf(&b, "{\"key\":\"agentc.spec.line\",\"value\":{\"intValue\":\"%d\"}}",
                  (int)r->line);
    const char *kept = b.failed ? NULL : ac_tracer_intern(o->oe->tracer, b.p, b.n);
    if (kept)
        *row = (ac_obs_row){kept, b.n, r->from, r->event, r->to};
    ac_buf_free(&b);
    return kept ? row : NULL;
}

void ac_obs_step(ac_obs *o, const ac_trace_rec *r)
{
    if (!o || r->kind != AC_TRACE_TRANSITION || !o->ev)
        return; /* steps of events only, as the journal records them */
    const ac_fsm_tables *t = o->oe->t;
    int64_t entered = r->machine < MAX_MACHINES ? o->entered[r->machine] : 0;
    if (r->machine < MAX_MACHINES)
        o->entered[r->machine] = o->now;
    const char *l[4] = {t->machines[r->machine].name,
                        r->from == AC_FSM_NONE ? "" : t->states[r->from].name,
                        r->event ? t->event_names[r->event] : "", t->states[r->to].name};
    const char *tl[] = {l[0], l[1], l[3], l[2]}; /* machine, from, to, event */
    ac_metrics_add(o->oe->metrics, AC_M_TRANSITIONS, tl, 1);
    if (entered > 0 && r->from != AC_FSM_NONE)
        ac_metrics_observe(o->oe->metrics, AC_M_STATE_SECONDS, l,
                           (double)(o->now - entered) / 1000.0);
    if (r->from == AC_FSM_NONE)
        return; /* a machine entering its initial state: no row of the spec, no event */
    if (r->machine == 0 && o->s) { /* the root machine: a turn ends, another may begin */
        int was = ac_turn_state(o->s->e, r->from), is = ac_turn_state(o->s->e, r->to);
        if (was && !is)
            o->turn_left = 1;
        if (is && (was || o->turn_left) && o->turn_before && o->turn && !o->ended)
            turn_split(o); /* entering a turn state ends the turn under way (turn.c) */
    }
    ac_span *sp = o->chat ? o->chat : o->compact ? o->compact : o->turn;
    if (!sp)
        return;
    const ac_obs_row *row = sp->nev < AC_SPAN_MAX_EVENTS ? row_attrs(o, r, l) : NULL;
    ac_span_event(sp, "agentc.transition", o->now, row ? row->attrs : NULL, row ? row->n : 0,
                  "agentc.state.seconds",
                  entered > 0 ? o->now - entered : -1); /* no attrs: counted as dropped */
}

int ac_obs_traceparent(const ac_obs *o, char *buf, size_t cap)
{
    const ac_span *sp = !o ? NULL : o->chat ? o->chat : o->compact ? o->compact : o->turn;
    if (!sp || !o->oe->tracer || cap < 56)
        return 0;
    traceparent_of(buf, sp->trace_id, sp->span_id);
    return 1;
}

const char *ac_obs_trace_id(const ac_obs *o)
{
    return o && o->oe->tracer && o->trace_id[0] ? o->trace_id : NULL;
}
