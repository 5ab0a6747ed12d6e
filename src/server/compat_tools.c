/*
 * compat_tools.c - client tools on the OpenAI-compatible front. A request's "tools" are the
 * session's client tools (ac_session_options.client_tools): the model sees them beside the
 * agent's own, and a call of one is handed here (ac_session_set_client_calls) instead of
 * running. Once the model's answer has nothing left running but such calls (the agent's own
 * calls of that answer ran first), the request is answered with them as `tool_calls`
 * (finish_reason "tool_calls"), ids agentc_<session>_<n> (n: the call's place among the
 * session's calls, from 1: the same after a reload), and the turn waits, in the run_tools
 * effect, for at most --client-tool-timeout.
 *
 * A follow-up request (its last messages are `tool` results) whose ids name calls a session
 * of the same token waits for continues that session: the results answer the calls
 * (ac_session_answer_call: journaled as tool results) and the request gets the rest of the
 * turn. Past the timeout the calls are answered as failed ("the client did not answer"). A
 * follow-up that matches no waiting call starts a fresh session with the history it carries
 * (compat.c), unless its calls were answered already by a client: 409.
 */
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "request_int.h"
#include "util/grow.h"

typedef struct wait_call {
    char *id;        /* the session's call id */
    char *client_id; /* agentc_<session>_<n> */
    char *name, *arguments;
    int told; /* sent to the client */
} wait_call;

struct srv_client {
    srv_sess *ss;
    wait_call *calls;
    size_t n, cap;
    uint64_t timer;     /* --client-tool-timeout */
    ac_loop_task check; /* a look once the events being applied are */
    json_t *answered;   /* the client ids the last follow-up answered (their results may not
                           be applied yet: a second follow-up is told so all the same) */
};

static void forget(struct srv_client *cl, size_t i)
{
    free(cl->calls[i].id);
    free(cl->calls[i].client_id);
    free(cl->calls[i].name);
    free(cl->calls[i].arguments);
    cl->calls[i] = cl->calls[--cl->n];
}

static void forget_all(struct srv_client *cl)
{
    while (cl->n)
        forget(cl, 0);
    if (cl->timer)
        ac_loop_cancel_timer(cl->ss->sv->loop, cl->timer);
    cl->timer = 0;
}

void srv_client_free(srv_sess *ss)
{
    struct srv_client *cl = ss->client;
    if (!cl)
        return;
    forget_all(cl);
    ac_loop_undefer(ss->sv->loop, &cl->check);
    json_decref(cl->answered);
    free(cl->calls);
    free(cl);
    ss->client = NULL;
}

/* The client's id of the session's call: agentc_<session>_<its place among the calls>. */
static char *client_id(srv_sess *ss, const char *call_id)
{
    ac_conv *conv = ac_session_conv(ss->s);
    size_t n = ac_conv_tool_call_count(conv), k = n;
    while (k > 0 && strcmp(ac_conv_tool_call_at(conv, k - 1)->id, call_id))
        k--;
    ac_buf b;
    ac_buf_init(&b, 512);
    ac_buf_printf(&b, "agentc_%s_%zu", ss->id, k ? k : n + 1);
    return ac_buf_take(&b, NULL);
}

/* The waiting calls answered as failed: their client did not answer in time. */
static void expired(void *ud)
{
    srv_sess *ss = ud;
    struct srv_client *cl = ss->client;
    cl->timer = 0;
    char msg[200];
    snprintf(msg, sizeof msg,
             "the client did not answer: no result came within %lld s (--client-tool-timeout)",
             (long long)(ss->sv->cfg->client_tool_timeout_ms / 1000));
    while (cl->n) {
        char *id = cl->calls[0].id;
        cl->calls[0].id = NULL;
        forget(cl, 0);
        ac_session_answer_call(ss->s, id, 0, msg); /* ENOENT: the turn stopped meanwhile */
        free(id);
    }
}

/* The text of the answer that made the calls (its last assistant message's). */
static const char *answer_text(srv_sess *ss)
{
    ac_conv *conv = ac_session_conv(ss->s);
    for (size_t i = ac_conv_message_count(conv); i > 0; i--) {
        const ac_message *m = ac_conv_message(conv, i - 1);
        if (m->role == AC_ROLE_ASSISTANT)
            return m->content;
    }
    return NULL;
}

/* Once only the client's calls are left, the request attached to the session gets them. */
static void look(void *ud)
{
    srv_sess *ss = ud;
    struct srv_client *cl = ss->client;
    if (!ss->s || !ac_session_in_turn(ss->s)) { /* the turn stopped: nothing waits */
        forget_all(cl);
        return;
    }
    size_t untold = 0;
    for (size_t i = 0; i < cl->n; i++)
        untold += !cl->calls[i].told;
    if (!untold || ac_conv_iter_pending(ac_session_conv(ss->s)) != cl->n ||
        (!ss->chat && !ss->waiter))
        return;
    json_t *calls = json_array();
    for (size_t i = 0; calls && i < cl->n; i++) {
        wait_call *w = &cl->calls[i];
        if (w->told)
            continue;
        w->told = 1;
        json_array_append_new(calls, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", w->client_id,
                                               "type", "function", "function", "name", w->name,
                                               "arguments", w->arguments));
    }
    if (calls)
        srv_chat_tool_calls(ss, calls, answer_text(ss));
}

void srv_client_view(srv_sess *ss, json_t *o)
{
    struct srv_client *cl = ss->client;
    json_t *calls = cl && cl->n ? json_array() : NULL;
    for (size_t i = 0; calls && i < cl->n; i++)
        if (cl->calls[i].told)
            json_array_append_new(calls,
                                  json_pack("{s:s, s:s, s:s}", "id", cl->calls[i].client_id, "call",
                                            cl->calls[i].id, "name", cl->calls[i].name));
    if (json_array_size(calls))
        json_object_set(o, "client_calls", calls);
    json_decref(calls);
}

void srv_client_kick(srv_sess *ss)
{
    if (ss->client && ss->client->n)
        ac_loop_defer(ss->sv->loop, &ss->client->check);
}

void srv_client_call(void *ud, ac_session *s, const char *call_id, const char *name,
                     const char *arguments)
{
    srv_sess *ss = ud;
    if (!ss || ss->freeing || ss->s != s) {
        ac_session_answer_call(s, call_id, 0, "not run: the session's client is gone");
        return;
    }
    struct srv_client *cl = ss->client ? ss->client : calloc(1, sizeof *cl);
    wait_call w = {strdup(call_id), NULL, strdup(name), strdup(arguments), 0};
    w.client_id = cl && w.id ? client_id(ss, call_id) : NULL;
    if (!cl || !w.id || !w.client_id || !w.name || !w.arguments ||
        ac_grow((void **)&cl->calls, &cl->cap, cl->n + 1, sizeof *cl->calls)) {
        free(w.id), free(w.client_id), free(w.name), free(w.arguments);
        if (cl && !ss->client)
            free(cl);
        ac_session_answer_call(s, call_id, 0, "not run: out of memory");
        return;
    }
    if (!ss->client) {
        cl->ss = ss;
        cl->check.fn = look;
        cl->check.ud = ss;
        ss->client = cl;
    }
    cl->calls[cl->n++] = w;
    if (!cl->timer)
        cl->timer = ac_loop_timer(ss->sv->loop, ss->sv->cfg->client_tool_timeout_ms, expired, ss);
    ac_loop_defer(ss->sv->loop, &cl->check);
}

/* ---- follow-ups ---- */

/* The session agentc_<session>_<n> names (of the owner's: another token's never match) and
 * the call's place n; NULL when it names none. */
static srv_sess *named_session(srv *sv, const srv_owner *o, const char *cid, size_t *n)
{
    const char *us = cid ? strrchr(cid, '_') : NULL;
    if (!us || strncmp(cid, "agentc_", 7) || us <= cid + 7 || !us[1] ||
        strspn(us + 1, "0123456789") != strlen(us + 1))
        return NULL;
    char sid[160];
    size_t len = (size_t)(us - cid - 7);
    if (len >= sizeof sid)
        return NULL;
    memcpy(sid, cid + 7, len);
    sid[len] = 0;
    *n = (size_t)strtoull(us + 1, NULL, 10);
    return srv_sess_find(sv, o, sid);
}

static wait_call *waiting(struct srv_client *cl, const char *cid)
{
    for (size_t i = 0; cl && cid && i < cl->n; i++)
        if (cl->calls[i].told && !strcmp(cl->calls[i].client_id, cid))
            return &cl->calls[i];
    return NULL;
}

static const char *result_id(json_t *msgs, size_t i)
{
    return json_string_value(json_object_get(json_array_get(msgs, i), "tool_call_id"));
}

/* The follow-up's trailing tool results: from, their count and the session they name (NULL:
 * none, or one naming another session: *mixed). */
static srv_sess *results_session(srv *sv, const srv_owner *o, json_t *msgs, size_t *from,
                                 int *mixed)
{
    size_t n = json_array_size(msgs), i = n, k;
    srv_sess *ss = NULL;
    *mixed = 0;
    while (i > 0) {
        const char *role = json_string_value(json_object_get(json_array_get(msgs, i - 1), "role"));
        if (!role || strcmp(role, "tool"))
            break;
        i--;
    }
    *from = i;
    for (; i < n; i++) {
        const char *cid =
            json_string_value(json_object_get(json_array_get(msgs, i), "tool_call_id"));
        srv_sess *s2 = named_session(sv, o, cid, &k);
        if (s2 && ss && s2 != ss)
            *mixed = 1;
        if (!ss)
            ss = s2;
    }
    return ss;
}

static int answered_last(const struct srv_client *cl, const char *cid)
{
    size_t j;
    json_t *a;
    json_array_foreach(cl ? cl->answered : NULL, j, a)
    {
        if (!strcmp(json_string_value(a), cid))
            return 1;
    }
    return 0;
}

/* Nothing waits: 1 when a call the results name was answered by a client already (a second
 * follow-up), 0 when they were answered as failed (timeout, restart) or are unknown. */
static int answered_before(srv_sess *ss, json_t *msgs, size_t from, ac_buf *which)
{
    ac_conv *conv = ac_session_conv(ss->s);
    for (size_t i = from; i < json_array_size(msgs); i++) {
        size_t k = 0;
        const char *cid = result_id(msgs, i);
        if (named_session(ss->sv, ss->owner, cid, &k) != ss || !k)
            continue;
        const ac_tool_call *call = ac_conv_tool_call_at(conv, k - 1);
        if (answered_last(ss->client, cid) || (call && call->state == AC_CALL_SUCCESS)) {
            ac_buf_addstr(which, which->n ? ", " : "");
            ac_buf_addstr(which, cid);
        }
    }
    return which->n > 0;
}

/* The results fit the calls the session waits for: NULL, or the refusal's code (why said;
 * status 400). */
static const char *results_fit(struct srv_client *cl, json_t *msgs, size_t from, ac_buf *why)
{
    for (size_t i = from; i < json_array_size(msgs); i++) {
        const char *cid = result_id(msgs, i);
        json_t *content = json_object_get(json_array_get(msgs, i), "content");
        char *text = NULL;
        if (!waiting(cl, cid)) {
            ac_buf_printf(why, "'%s' is not a call the session waits for", cid ? cid : "");
            return "unknown_tool_call";
        }
        if (content && !json_is_null(content) && srv_chat_content(content, &text)) {
            ac_buf_printf(why, "the result of '%s' is not a string or text parts", cid);
            return "invalid_tool_results";
        }
        free(text);
    }
    for (size_t k = 0; k < cl->n; k++) {
        int given = 0;
        for (size_t i = from; !given && i < json_array_size(msgs); i++)
            given = result_id(msgs, i) && !strcmp(cl->calls[k].client_id, result_id(msgs, i));
        if (!given && cl->calls[k].told) {
            ac_buf_addstr(why, why->n ? ", " : "the results of ");
            ac_buf_addstr(why, cl->calls[k].client_id);
        }
    }
    if (!why->n)
        return NULL;
    ac_buf_addstr(why, " are missing: the session still waits for them (a follow-up answers "
                       "every call of the reply)");
    return "missing_tool_results";
}

/* The results answer the calls; the request gets the rest of the turn. */
static void answer_all(srv_sess *ss, json_t *msgs, size_t from)
{
    struct srv_client *cl = ss->client;
    json_decref(cl->answered);
    cl->answered = json_array();
    for (size_t i = from; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        wait_call *w = waiting(cl, json_string_value(json_object_get(m, "tool_call_id")));
        char *text = NULL;
        json_t *content = json_object_get(m, "content");
        if (!w || (content && !json_is_null(content) && srv_chat_content(content, &text)))
            continue;
        char *id = w->id;
        w->id = NULL;
        json_array_append_new(cl->answered, json_string(w->client_id));
        forget(cl, (size_t)(w - cl->calls));
        ac_session_answer_call(ss->s, id, 1, text ? text : "");
        free(id);
        free(text);
    }
    if (!cl->n && cl->timer) {
        ac_loop_cancel_timer(ss->sv->loop, cl->timer);
        cl->timer = 0;
    }
}

/* ss, the session a follow-up names, in memory: 1 when it is (or was loaded here), 0 when it
 * cannot be (not a follow-up of it: a fresh session takes the request), -1 with the request
 * suspended while it is loaded without waiting (PostgreSQL: srv_load_start; the handler runs
 * again once it is). */
static int followed_loaded(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                           enum MHD_Result *ret)
{
    ac_error err = {0};
    if (ss->s)
        return 1;
    if (r->load_failed) { /* loaded for this request, and it failed */
        r->load_failed = 0;
        return 0;
    }
    if (sv->notify && ss->stored_id && c) {
        *ret = srv_load_start(sv, c, r, ss, ss->id);
        return -1;
    }
    return srv_sess_load(ss, &err) == 0;
}

int srv_client_followup(srv *sv, struct MHD_Connection *c, req *r, json_t *rq,
                        enum MHD_Result *ret)
{
    json_t *msgs = json_object_get(rq, "messages");
    size_t from;
    int mixed;
    srv_sess *ss = results_session(sv, r->owner, msgs, &from, &mixed);
    if (!ss || ss->freeing)
        return 0;
    int loaded = followed_loaded(sv, c, r, ss, ret);
    if (loaded <= 0)
        return loaded < 0;
    if (mixed) {
        *ret = srv_reply_error(c, 400, "invalid_tool_results",
                               "the tool results answer the calls of more than one session");
        return 1;
    }
    if (ss->client && ss->client->n)
        look(ss); /* a stopped turn's calls wait no more */
    ac_buf why;
    ac_buf_init(&why, 4096);
    int status = 0;
    const char *code = NULL;
    if (!ss->client || !ss->client->n) {
        if (answered_before(ss, msgs, from, &why))
            status = 409, code = "already_answered";
    } else if ((code = results_fit(ss->client, msgs, from, &why))) {
        status = 400;
    } else if (ss->chat || ss->waiter) {
        status = 409, code = "session_busy";
        ac_buf_addstr(&why, "another request is answered by this session now");
    }
    if (status == 409 && !strcmp(code, "already_answered"))
        ac_buf_addstr(&why, ": answered already by an earlier request (a follow-up is taken once)");
    if (!status && (!ss->client || !ss->client->n)) { /* answered as failed, or unknown */
        free(why.p);
        return 0;
    }
    if (status) {
        *ret = srv_reply_error(c, (unsigned)status, code, "%s", why.p ? why.p : "");
        free(why.p);
        return 1;
    }
    ac_buf_clear(&why);
    srv_chat_ignored(&why, rq, 1, 0); /* the session keeps its agent, settings and tools */
    if (srv_chat_attach(sv, c, ss, json_is_true(json_object_get(rq, "stream")),
                        why.n ? why.p : NULL, ret) < 0)
        *ret = srv_reply_error(c, 503, "out_of_memory", "out of memory");
    else
        answer_all(ss, msgs, from);
    free(why.p);
    return 1;
}
