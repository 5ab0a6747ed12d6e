/*
 * compat.c - the OpenAI-compatible front of `agentc serve`:
 * POST /v1/chat/completions (streamed and not) runs the agent, with its
 * tools and spec, on the given messages in a session of its own, and
 * answers with the final text. The request's "model" names the agent
 * (agents.c), which GET /v1/models lists.
 *
 * The system messages become the session's system prompt; the other
 * messages, when there are more than one user message, are given to the
 * agent as a transcript followed by the last user message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "util/buf.h"

/* The text of a message's content: a string, or an array of {type: text, text} parts. */
static int content_text(json_t *content, char **out)
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
    srv_sess_free(ss);
}

static void done_plain(srv_sess *ss, void *ud)
{
    (void)ud;
    struct MHD_Connection *c = ss->waiter;
    ss->waiter = NULL;
    enum chat_end s = chat_end(ss->s);
    if (s != CHAT_DONE) {
        const char *e = ac_session_error(ss->s);
        srv_reply_error(c, s == CHAT_FAILED ? 502 : 503,
                        s == CHAT_FAILED ? "agent_failed" : "cancelled", "%s",
                        e ? e : "the agent did not finish");
    } else {
        srv_reply_json(c, 200,
                       json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:s}, s:s}], s:o}", "id",
                                 ss->id, "object", "chat.completion", "created",
                                 (json_int_t)(ss->created_ms / 1000), "model",
                                 srv_engine_name(ss->agent), "choices", "index", 0, "message",
                                 "role", "assistant", "content", ac_session_answer(ss->s),
                                 "finish_reason", "stop", "usage", usage(ss)));
    }
    MHD_resume_connection(c);
    srv_kick(ss->sv);
    srv_sess_free(ss);
}

/* The messages read into the system text (system and developer messages, joined) and the
 * prompt: the conversation so far, then the last user message. NULL, or what is wrong. */
static const char *chat_read(json_t *msgs, ac_buf *sys, ac_buf *prompt)
{
    ac_buf conv;
    ac_buf_init(&conv, AC_BUF_MAX);
    char *last_user = NULL;
    size_t i;
    json_t *m;
    const char *bad = NULL;
    json_array_foreach(msgs, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        char *text = NULL;
        if (!role) {
            bad = "each message needs a 'role'";
            break;
        }
        json_t *content = json_object_get(m, "content");
        if (json_is_null(content) || !content)
            text = strdup("");
        else if (content_text(content, &text)) {
            bad = "a message's 'content' must be a string or an array of text parts";
            break;
        }
        if (!text) {
            bad = "out of memory";
            break;
        }
        if (!strcmp(role, "system") || !strcmp(role, "developer")) {
            if (sys->n)
                ac_buf_addstr(sys, "\n\n");
            ac_buf_addstr(sys, text);
            free(text);
            continue;
        }
        if (last_user) {
            ac_buf_addstr(&conv, "user: ");
            ac_buf_addstr(&conv, last_user);
            ac_buf_addstr(&conv, "\n\n");
            free(last_user);
            last_user = NULL;
        }
        if (!strcmp(role, "user")) {
            last_user = text;
            continue;
        }
        ac_buf_addstr(&conv, role);
        ac_buf_addstr(&conv, ": ");
        ac_buf_addstr(&conv, text);
        ac_buf_addstr(&conv, "\n\n");
        free(text);
    }
    if (!bad && !last_user)
        bad = "the last message must be a user message";
    if (!bad && conv.n) {
        ac_buf_addstr(prompt, "The conversation so far:\n\n");
        ac_buf_add(prompt, conv.p, conv.n);
        ac_buf_addstr(prompt, "The user's new message:\n\n");
    }
    if (!bad)
        ac_buf_addstr(prompt, last_user);
    free(last_user);
    if (!bad && (sys->failed || conv.failed || prompt->failed))
        bad = "out of memory";
    free(conv.p);
    return bad;
}

/* Answers a streamed request: the session's chunks go to the connection as they come.
 * 0 with *ret set, or -1 when out of memory (nothing queued). */
static int chat_stream(srv *sv, struct MHD_Connection *c, srv_sess *ss, enum MHD_Result *ret)
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
    *ret = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return 0;
}

/* The agent the request's "model" names, a reference taken; NULL after replying why (an
 * unknown model: 404 model_not_found, as OpenAI answers it). */
static srv_engine *chat_agent(srv *sv, struct MHD_Connection *c, json_t *model,
                              enum MHD_Result *ret)
{
    if (model && !json_is_string(model) && !json_is_null(model)) {
        *ret = srv_reply_error(c, 400, "invalid_type", "'model' must be a string");
        return NULL;
    }
    const char *m = json_string_value(model), *name = srv_agent_named(sv, m);
    ac_error err = {0};
    srv_engine *e = name ? srv_agent_engine(sv, name, NULL, &err) : NULL;
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
        *ret = srv_reply_error(c, 500, "agent_failed", "cannot run the agent: %s", err.text);
    }
    return e;
}

enum MHD_Result srv_chat_completions(srv *sv, struct MHD_Connection *c, srv_owner *o,
                                     const char *body, size_t n)
{
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
    ac_buf sys, prompt;
    ac_buf_init(&sys, AC_BUF_MAX);
    ac_buf_init(&prompt, AC_BUF_MAX);
    const char *bad = chat_read(msgs, &sys, &prompt);
    int streamed = json_is_true(stream);
    enum MHD_Result ret = MHD_YES;
    srv_engine *agent = bad ? NULL : chat_agent(sv, c, json_object_get(rq, "model"), &ret);
    json_decref(rq);
    if (bad || !agent) {
        free(sys.p);
        free(prompt.p);
        return bad ? srv_reply_error(c, 400, "invalid_request", "%s", bad) : ret;
    }
    ac_error err = {0};
    srv_sess *ss = srv_sess_new(sv, o, NULL, sys.n ? sys.p : NULL, 1, agent, &err);
    free(sys.p);
    if (!ss) {
        free(prompt.p);
        return srv_reply_error(c, 500, "session_failed", "cannot run the agent: %s", err.text);
    }
    if (streamed) {
        if (chat_stream(sv, c, ss, &ret) < 0) {
            free(prompt.p);
            srv_sess_free(ss);
            return srv_reply_error(c, 503, "out_of_memory", "out of memory");
        }
    } else {
        ss->waiter = c;
        ss->on_done = done_plain;
        MHD_suspend_connection(c);
    }
    srv_traceparent(c, ss->s);
    ac_session_send(ss->s, prompt.p);
    free(prompt.p);
    return ret;
}
