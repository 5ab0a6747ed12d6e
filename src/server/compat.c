/*
 * compat.c - the OpenAI-compatible front of `agentc serve`:
 * POST /v1/chat/completions (streamed and not) runs the agent, with its
 * tools and spec, on the given messages in a session of its own, and
 * answers with the final text. The request's "model" names the agent
 * (agents.c), which GET /v1/models lists.
 *
 * The system messages become the session's system prompt; the messages
 * before the last are the session's history (its conversation before its
 * first message), the last, a user's, its first message. The request's
 * settings go to the agent where it lets a session override them; what is
 * not used is named in the reply's X-Agentc-Ignored header. Its "tools" are
 * client tools: such a session is stored and kept, its calls of them are
 * answered as tool_calls and a follow-up continues it (compat_tools.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_int.h"
#include "util/buf.h"

/* The text of a message's content: a string, or an array of {type: text, text} parts. */
int srv_chat_content(json_t *content, char **out)
{
    *out = NULL;
    if (json_is_string(content)) {
        *out = strdup(json_string_value(content));
        return *out ? 0 : -1;
    }
    if (!json_is_array(content))
        return -1;
    size_t i, total = 0;
    json_t *part;
    json_array_foreach(content, i, part)
    {
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(t))
            return -1;
        total += json_string_length(t) + 1;
    }
    char *b = malloc(total + 1), *p = b;
    if (!b)
        return -1;
    json_array_foreach(content, i, part)
    {
        json_t *t = json_object_get(part, "text");
        size_t n = json_string_length(t);
        memcpy(p, json_string_value(t), n);
        p += n;
    }
    *p = 0;
    *out = b;
    return 0;
}

static json_t *chunk(srv_sess *ss, json_t *delta, const char *finish)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:s?}]}", "id", ss->id, "object",
                     "chat.completion.chunk", "created", (json_int_t)(ss->created_ms / 1000),
                     "model", srv_engine_name(ss->agent), "choices", "index", 0, "delta", delta,
                     "finish_reason", finish);
}

static void push_json(srv_stream *st, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (!s)
        return;
    srv_stream_push(st, "data: ", 6);
    srv_stream_push(st, s, strlen(s));
    srv_stream_push(st, "\n\n", 2);
    free(s);
}

/* A text delta of an ephemeral session with a stream (sessions.c calls it). A client of this
 * front cannot be told to forget text, so a model call's deltas are held until the call can
 * no longer be retried (it completed: srv_chat_call_done keeps them) or are dropped with the
 * call (a retry, a failure, a cancel): what the client assembles is only text the session
 * kept, never two attempts of one call. */
void srv_chat_delta(srv_sess *ss, const char *d, size_t n)
{
    if (!ss->chat)
        return;
    srv_stream_hold(ss->chat);
    push_json(ss->chat, chunk(ss, json_pack("{s:s%}", "content", d, n), NULL));
}

void srv_chat_call_done(srv_sess *ss, int keep)
{
    if (!ss->chat)
        return;
    if (keep)
        srv_stream_release(ss->chat);
    else
        srv_stream_drop_held(ss->chat);
}

static json_t *usage(srv_sess *ss)
{
    ac_session_stats st;
    ac_session_get_stats(ss->s, &st);
    return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)st.input_tokens,
                     "completion_tokens", (json_int_t)st.output_tokens, "total_tokens",
                     (json_int_t)(st.input_tokens + st.output_tokens));
}

/* How the completion's turn ended: its outcome, or the session's end. */
enum chat_end { CHAT_DONE, CHAT_FAILED, CHAT_CANCELLED };
static enum chat_end chat_end(const ac_session *s)
{
    ac_session_end end;
    ac_session_get_end(s, &end);
    enum ac_turn_outcome o = ac_session_last_turn(s, NULL);
    if (o == AC_TURN_FAILED || (end.ended && !strcmp(end.how, "failed")))
        return CHAT_FAILED;
    return o == AC_TURN_COMPLETED && !end.ended ? CHAT_DONE : CHAT_CANCELLED;
}

static void done_stream(srv_sess *ss, void *ud)
{
    srv_stream *st = ud;
    enum chat_end s = chat_end(ss->s);
    srv_chat_call_done(ss, s == CHAT_DONE);
    if (s == CHAT_FAILED) {
        const char *e = ac_session_error(ss->s);
        push_json(st, json_pack("{s:{s:s, s:s}}", "error", "code", "agent_failed", "message",
                                e ? e : "the agent failed"));
    } else {
        json_t *c = chunk(ss, json_object(), s == CHAT_CANCELLED ? "cancelled" : "stop");
        if (c)
            json_object_set_new(c, "usage", usage(ss));
        push_json(st, c);
    }
    srv_stream_push(st, "data: [DONE]\n\n", 14);
    ss->chat = NULL;
    st->ss = NULL;
    srv_stream_finish(st);
    if (ss->ephemeral)
        srv_sess_free(ss); /* a session with client tools stays, stored */
}

/* The reply of a request not streamed, with the header naming what it ignored. */
static enum MHD_Result reply_plain(struct MHD_Connection *c, json_t *o, const char *ignored)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    struct MHD_Response *r =
        s ? MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (ignored && *ignored)
        MHD_add_response_header(r, "X-Agentc-Ignored", ignored);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static void done_plain(srv_sess *ss, void *ud)
{
    char *ignored = ud;
    struct MHD_Connection *c = ss->waiter;
    ss->waiter = NULL;
    enum chat_end s = chat_end(ss->s);
    if (s != CHAT_DONE) {
        const char *e = ac_session_error(ss->s);
        srv_reply_error(c, s == CHAT_FAILED ? 502 : 503,
                        s == CHAT_FAILED ? "agent_failed" : "cancelled", "%s",
                        e ? e : "the agent did not finish");
    } else {
        reply_plain(c,
                    json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:s}, s:s}], s:o}", "id",
                              ss->id, "object", "chat.completion", "created",
                              (json_int_t)(ss->created_ms / 1000), "model",
                              srv_engine_name(ss->agent), "choices", "index", 0, "message", "role",
                              "assistant", "content", ac_session_answer(ss->s), "finish_reason",
                              "stop", "usage", usage(ss)),
                    ignored);
    }
    free(ignored);
    MHD_resume_connection(c);
    srv_kick(ss->sv);
    if (ss->ephemeral)
        srv_sess_free(ss); /* a session with client tools stays, stored */
}

static const char *or_(const json_t *v, const char *def)
{
    return json_is_string(v) ? json_string_value(v) : def;
}

/* A message of the request as the history has it: user and assistant text; an assistant's
 * tool calls and a tool's result as text ("[called NAME(ARGS)]", "[result of CALL] TEXT"). */
static json_t *history_entry(json_t *m, const char *role, const char *text)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (!strcmp(role, "tool")) {
        ac_buf_addstr(&b, "[result of ");
        ac_buf_addstr(&b, or_(json_object_get(m, "tool_call_id"), "a tool call"));
        ac_buf_addstr(&b, "] ");
    }
    ac_buf_addstr(&b, text);
    size_t i;
    json_t *call;
    json_array_foreach(json_object_get(m, "tool_calls"), i, call)
    {
        json_t *f = json_object_get(call, "function");
        ac_buf_addstr(&b, b.n ? "\n[called " : "[called ");
        ac_buf_addstr(&b, or_(json_object_get(f, "name"), "?"));
        ac_buf_addstr(&b, "(");
        ac_buf_addstr(&b, or_(json_object_get(f, "arguments"), ""));
        ac_buf_addstr(&b, ")]");
    }
    json_t *e = json_pack("{s:s, s:s%}", "role", strcmp(role, "assistant") ? "user" : "assistant",
                          "content", b.p ? b.p : "", b.n);
    free(b.p);
    return e;
}

static const char *role_of(json_t *m)
{
    return json_string_value(json_object_get(m, "role"));
}

/* Where the request's trailing tool results start (a follow-up's: the messages after the
 * assistant message whose calls they answer); the message count when the last is no tool's. */
static size_t tool_tail(json_t *msgs)
{
    size_t n = json_array_size(msgs), i = n;
    while (i > 0 && role_of(json_array_get(msgs, i - 1)) &&
           !strcmp(role_of(json_array_get(msgs, i - 1)), "tool"))
        i--;
    return i;
}

/* The messages read into the system text (system and developer messages, joined), the
 * history (the messages before the last, as ac_session_options.history has them) and the
 * prompt (the last message, a user's; or the trailing tool results of a follow-up that
 * matched no waiting session, as text). NULL, or what is wrong. */
static const char *chat_read(json_t *msgs, ac_buf *sys, json_t *history, char **prompt)
{
    size_t i, last = json_array_size(msgs) - 1, tail = tool_tail(msgs);
    ac_buf results;
    ac_buf_init(&results, AC_BUF_MAX);
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        const char *role = role_of(m);
        char *text = NULL;
        if (!role)
            return free(results.p), "each message needs a 'role'";
        json_t *content = json_object_get(m, "content");
        if (json_is_null(content) || !content)
            text = strdup("");
        else if (srv_chat_content(content, &text))
            return free(results.p),
                   "a message's 'content' must be a string or an array of text parts";
        if (!text)
            return free(results.p), "out of memory";
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            if (sys->n)
                ac_buf_addstr(sys, "\n\n");
            ac_buf_addstr(sys, text);
        } else if (i == last && !strcmp(role, "user")) {
            *prompt = text;
            text = NULL;
        } else if (i >= tail) { /* a tool result the session is told as text */
            json_t *e = history_entry(m, role, text);
            if (results.n)
                ac_buf_addstr(&results, "\n");
            ac_buf_addstr(&results, json_string_value(json_object_get(e, "content")));
            json_decref(e);
        } else {
            json_array_append_new(history, history_entry(m, role, text));
        }
        free(text);
    }
    if (!*prompt && tail <= last)
        *prompt = ac_buf_take(&results, NULL);
    free(results.p);
    if (!*prompt)
        return "the last message must be a user message or a tool's result";
    return sys->failed ? "out of memory" : NULL;
}

/* Answers a streamed request: the session's chunks go to the connection as they come.
 * 0 with *ret set, or -1 when out of memory (nothing queued). */
static int chat_stream(srv *sv, struct MHD_Connection *c, srv_sess *ss, const char *ignored,
                       enum MHD_Result *ret)
{
    srv_stream *st = srv_stream_new(sv, NULL);
    struct MHD_Response *resp = st ? srv_stream_response(st) : NULL;
    if (!resp) {
        free(st);
        return -1;
    }
    st->log = 0;
    st->ss = ss;
    st->conn = c;
    ss->chat = st;
    ss->on_done = done_stream;
    ss->done_ud = st;
    push_json(st, chunk(ss, json_pack("{s:s, s:s}", "role", "assistant", "content", ""), NULL));
    if (ignored)
        MHD_add_response_header(resp, "X-Agentc-Ignored", ignored);
    *ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return 0;
}

int srv_chat_attach(srv *sv, struct MHD_Connection *c, srv_sess *ss, int streamed,
                    const char *ignored, enum MHD_Result *ret)
{
    if (streamed)
        return chat_stream(sv, c, ss, ignored, ret);
    char *ign = ignored && *ignored ? strdup(ignored) : NULL;
    ss->waiter = c;
    ss->on_done = done_plain;
    ss->done_ud = ign; /* the reply's header; done_plain frees it */
    MHD_suspend_connection(c);
    return 0;
}

void srv_chat_tool_calls(srv_sess *ss, json_t *calls, const char *text)
{
    ss->on_done = NULL;
    if (ss->chat) { /* each call a chunk with its whole arguments, then the finish */
        srv_stream *st = ss->chat;
        size_t i;
        json_t *call;
        json_array_foreach(calls, i, call)
        {
            json_t *tc = json_deep_copy(call);
            json_object_set_new(tc, "index", json_integer((json_int_t)i));
            push_json(st, chunk(ss, json_pack("{s:[o]}", "tool_calls", tc), NULL));
        }
        json_t *end = chunk(ss, json_object(), "tool_calls");
        if (end)
            json_object_set_new(end, "usage", usage(ss));
        push_json(st, end);
        srv_stream_push(st, "data: [DONE]\n\n", 14);
        ss->chat = NULL;
        st->ss = NULL;
        srv_stream_finish(st);
        json_decref(calls);
    } else if (ss->waiter) {
        struct MHD_Connection *c = ss->waiter;
        char *ignored = ss->done_ud;
        ss->waiter = NULL;
        ss->done_ud = NULL;
        reply_plain(c,
                    json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:s?, s:o}, s:s}], s:o}", "id",
                              ss->id, "object", "chat.completion", "created",
                              (json_int_t)(ss->created_ms / 1000), "model",
                              srv_engine_name(ss->agent), "choices", "index", 0, "message", "role",
                              "assistant", "content", text && *text ? text : NULL, "tool_calls",
                              calls, "finish_reason", "tool_calls", "usage", usage(ss)),
                    ignored);
        free(ignored);
        MHD_resume_connection(c);
        srv_kick(ss->sv);
    } else {
        json_decref(calls);
    }
}

/* The request's settings an agent takes as a session's override of its "request" (when
 * its overridable lets it); any other key but these is ignored. */
static const char *const settings[] = {
    "temperature",       "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
    "frequency_penalty", "seed",  "stop",       "reasoning_effort",      NULL};
static const char *const used[] = {"model", "messages", "stream", NULL};

static int listed(const char *const *l, const char *k)
{
    while (*l && strcmp(*l, k))
        l++;
    return *l != NULL;
}

void srv_chat_ignored(ac_buf *ign, json_t *rq, int settings_too, int tools_too)
{
    const char *k;
    json_t *v;
    json_object_foreach(rq, k, v)
    {
        if (listed(used, k) || json_is_null(v) || (!settings_too && listed(settings, k)) ||
            (!tools_too && !strcmp(k, "tools")))
            continue;
        if (ign->n)
            ac_buf_addstr(ign, ", ");
        ac_buf_addstr(ign, k);
    }
}

/* The agent the request's "model" names, with the request's settings as its "request" where
 * the agent lets a session override it (else *refused), a reference taken; NULL after
 * replying why (an unknown model: 404 model_not_found, as OpenAI answers it). */
static srv_engine *chat_agent(srv *sv, struct MHD_Connection *c, json_t *rq, int *refused,
                              enum MHD_Result *ret)
{
    json_t *model = json_object_get(rq, "model");
    if (model && !json_is_string(model) && !json_is_null(model)) {
        *ret = srv_reply_error(c, 400, "invalid_type", "'model' must be a string");
        return NULL;
    }
    const char *m = json_string_value(model), *name = srv_agent_named(sv, m);
    json_t *set = json_object();
    for (size_t i = 0; settings[i]; i++) {
        json_t *v = json_object_get(rq, settings[i]);
        if (v && !json_is_null(v))
            json_object_set(set, settings[i], v);
    }
    json_t *wrap = json_pack("{s:o}", "request", set);
    char *over = wrap && json_object_size(set) ? json_dumps(wrap, JSON_COMPACT) : NULL;
    json_decref(wrap);
    ac_error err = {0};
    srv_engine *e = name ? srv_agent_engine(sv, name, over, &err) : NULL;
    *refused = !e && name && over && err.code == AC_EINVAL; /* not the session's to change */
    if (*refused) {
        memset(&err, 0, sizeof err);
        e = srv_agent_engine(sv, name, NULL, &err);
    }
    free(over);
    if (!name) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "The model '%.200s' does not exist: the models are this server's agents "
                 "(GET /v1/models)",
                 m);
        *ret = srv_reply_json(c, 404,
                              json_pack("{s:{s:s, s:s, s:s, s:s}}", "error", "message", msg, "type",
                                        "invalid_request_error", "param", "model", "code",
                                        "model_not_found"));
    } else if (!e) {
        *ret = srv_reply_error(c, err.code == AC_EBUSY ? 429 : 400,
                               err.code == AC_EBUSY ? "too_many_agents" : "agent_failed",
                               "the agent cannot run with the request's settings: %s", err.text);
    }
    return e;
}

/* The request's "tools" (OpenAI function tools) as client tools (ac_session_options:
 * [{name, description, parameters}] text) in *out (NULL: none). NULL, or what is wrong. */
static const char *chat_tools(json_t *tools, char **out)
{
    *out = NULL;
    if (!tools || json_is_null(tools))
        return NULL;
    json_t *list = json_is_array(tools) ? json_array() : NULL;
    size_t i;
    json_t *t;
    json_array_foreach(list ? tools : NULL, i, t)
    {
        json_t *f = json_object_get(t, "function");
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!type || strcmp(type, "function") || !json_is_object(f)) {
            json_decref(list);
            return "'tools' must be an array of {\"type\": \"function\", \"function\": {\"name\", "
                   "\"description\"?, \"parameters\"?}}";
        }
        json_t *d = json_deep_copy(f);
        json_object_del(d, "strict");
        json_array_append_new(list, d);
    }
    if (!list)
        return "'tools' must be an array of function tools";
    *out = json_array_size(list) ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return NULL;
}

/* The agent's own request settings forbid tool calls ("tool_choice": "none"): the request's
 * tools are not offered. */
static int forbids_tools(const srv_engine *e)
{
    json_t *rec = json_loads(srv_engine_record(e), 0, NULL);
    const char *tc =
        json_string_value(json_object_get(json_object_get(rec, "request"), "tool_choice"));
    int none = tc && !strcmp(tc, "none");
    json_decref(rec);
    return none;
}

/* The session a new request runs in: its agent, messages and client tools read; NULL after
 * replying (*ret), with *ign what it ignores. */
static srv_sess *chat_session(srv *sv, struct MHD_Connection *c, srv_owner *o, json_t *rq,
                              ac_buf *ign, char **prompt, enum MHD_Result *ret)
{
    ac_buf sys;
    ac_buf_init(&sys, AC_BUF_MAX);
    json_t *history = json_array();
    char *client = NULL;
    int refused = 0;
    const char *bad = history ? chat_read(json_object_get(rq, "messages"), &sys, history, prompt)
                              : "out of memory";
    if (!bad)
        bad = chat_tools(json_object_get(rq, "tools"), &client);
    srv_engine *agent = bad ? NULL : chat_agent(sv, c, rq, &refused, ret);
    int unused_tools = agent && client && forbids_tools(agent);
    if (agent)
        srv_chat_ignored(ign, rq, refused, unused_tools);
    char *hist = json_array_size(history) ? json_dumps(history, JSON_COMPACT) : NULL;
    json_decref(history);
    if (unused_tools) {
        free(client);
        client = NULL;
    }
    ac_error err = {0};
    srv_sess *ss = agent ? srv_sess_new(sv, o, NULL, sys.n ? sys.p : NULL, hist, client,
                                        client ? SRV_SESS_CHAT_KEPT : SRV_SESS_CHAT, agent, &err)
                         : NULL;
    free(sys.p);
    free(hist);
    if (bad)
        *ret = srv_reply_error(c, 400, "invalid_request", "%s", bad);
    else if (agent && !ss && client && err.code == AC_EINVAL)
        *ret = srv_reply_error(c, 400, "invalid_tools", "%s", err.text);
    else if (agent && !ss)
        *ret = srv_reply_error(c, 500, "session_failed", "cannot run the agent: %s", err.text);
    free(client);
    return ss;
}

enum MHD_Result srv_chat_completions(srv *sv, struct MHD_Connection *c, req *r)
{
    srv_owner *o = r->owner;
    const char *body = r->body;
    size_t n = r->len;
    json_error_t je;
    json_t *rq = json_loadb(body ? body : "", n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(rq)) {
        json_decref(rq);
        return srv_reply_error(c, 400, "invalid_json", "the body must be a JSON object");
    }
    json_t *msgs = json_object_get(rq, "messages");
    json_t *stream = json_object_get(rq, "stream");
    if (!json_is_array(msgs) || !json_array_size(msgs)) {
        json_decref(rq);
        return srv_reply_error(c, 400, "invalid_type", "'messages' must be a non-empty array");
    }
    if (stream && !json_is_boolean(stream) && !json_is_null(stream)) {
        json_decref(rq);
        return srv_reply_error(c, 400, "invalid_type", "'stream' must be a boolean");
    }
    enum MHD_Result ret = MHD_YES;
    if (srv_client_followup(sv, c, r, rq, &ret)) { /* compat_tools.c */
        json_decref(rq);
        return ret;
    }
    ac_buf ign;
    ac_buf_init(&ign, 4096);
    char *prompt = NULL;
    srv_sess *ss = chat_session(sv, c, o, rq, &ign, &prompt, &ret);
    int streamed = json_is_true(stream);
    json_decref(rq);
    if (ss && srv_chat_attach(sv, c, ss, streamed, ign.n ? ign.p : NULL, &ret) < 0) {
        srv_sess_drop(ss, 1);
        ss = NULL;
        ret = srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    free(ign.p);
    if (ss) {
        srv_traceparent(c, ss->s);
        ac_session_send(ss->s, prompt);
    }
    free(prompt);
    return ret;
}
