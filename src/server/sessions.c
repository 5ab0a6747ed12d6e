/*
 * sessions.c - the sessions of `agentc serve`: a registry by id, each with
 * its event log (what SSE clients read, numbered from 1), fed by the engine's
 * output callbacks.
 *
 * The sessions live in memory: the log is kept whole for as long as the
 * session exists, so a reconnecting client gets exactly what it missed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/store.h"
#include "server_int.h"

srv_sess *srv_sess_find(srv *sv, const char *id)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (!ss->freeing && !strcmp(ss->id, id))
            return ss;
    return NULL;
}

static void link_sess(srv *sv, srv_sess *ss)
{
    ss->next = sv->sessions;
    sv->sessions = ss;
    sv->n_sessions++;
    if (ss->owner)
        ss->owner->sessions++;
}

static void fill_err(ac_error *err, int code, const char *text)
{
    if (err) {
        err->code = code;
        snprintf(err->text, sizeof err->text, "%s", text);
    }
}

static void sess_free_fields(srv_sess *ss)
{
    free(ss->stored_id);
    free(ss->system);
    free(ss->owner_name);
    free(ss->id);
    free(ss);
}

srv_sess *srv_sess_known(srv *sv, srv_owner *owner, const char *owner_name, const char *sid,
                         const char *public_id, const char *system, int64_t created_ms,
                         size_t last_seq)
{
    srv_sess *ss = calloc(1, sizeof *ss);
    if (!ss)
        return NULL;
    ss->sv = sv;
    ss->owner = owner;
    ss->id = strdup(public_id);
    ss->stored_id = strdup(sid);
    ss->owner_name = strdup(owner_name);
    ss->system = system ? strdup(system) : NULL;
    ss->created_ms = created_ms;
    ss->n_log = last_seq; /* the log itself is read when the session is loaded */
    if (!ss->id || !ss->stored_id || !ss->owner_name || (system && !ss->system)) {
        sess_free_fields(ss);
        return NULL;
    }
    link_sess(sv, ss);
    return ss;
}

static void clear_log(srv_sess *ss)
{
    for (size_t i = 0; i < ss->n_log && ss->log; i++)
        free(ss->log[i].text);
    free(ss->log);
    ss->log = NULL;
    ss->n_log = ss->cap_log = 0;
}

/* The session's ac_session on the server's engine: created (its own system prompt, if any,
 * carried in its spawn event), or continued from the store (the prompt comes back with it). */
static int open_session(srv_sess *ss, unsigned flags, ac_error *err)
{
    srv *sv = ss->sv;
    ac_session_options opts = {0};
    opts.system_prompt = ss->system;
    if (ss->stored_id)
        ss->s = ac_store_session_opts(sv->store, sv->engine, ss->stored_id, flags, &opts, err);
    else
        ss->s = ac_session_new_opts(sv->engine, ss->id, &opts, err);
    if (!ss->s)
        return -1;
    ac_session_set_userdata(ss->s, ss);
    ss->last_active_ms = ac_loop_now_ms(sv->loop);
    return 0;
}

srv_sess *srv_sess_new(srv *sv, srv_owner *owner, const char *id, const char *system, int ephemeral,
                       ac_error *err)
{
    srv_sess *ss = calloc(1, sizeof *ss);
    char auto_id[32];
    if (!id) {
        snprintf(auto_id, sizeof auto_id, "%s%llu", ephemeral ? "chatcmpl-" : "s",
                 (unsigned long long)++sv->next_auto_id);
        while (srv_sess_find(sv, auto_id))
            snprintf(auto_id, sizeof auto_id, "%s%llu", ephemeral ? "chatcmpl-" : "s",
                     (unsigned long long)++sv->next_auto_id);
        id = auto_id;
    }
    if (!ss) {
        fill_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    ss->sv = sv;
    ss->owner = owner;
    ss->ephemeral = ephemeral;
    ss->created_ms = ac_wall_now_ms();
    ss->id = strdup(id);
    ss->owner_name = strdup(owner && owner->name ? owner->name : "local");
    ss->system = system ? strdup(system) : NULL;
    if (sv->store && !ephemeral && ss->owner_name) {
        size_t n = strlen(ss->owner_name) + strlen(id) + 2;
        if ((ss->stored_id = malloc(n)))
            snprintf(ss->stored_id, n, "%s/%s", ss->owner_name, id);
    }
    if (!ss->id || !ss->owner_name || (system && !ss->system) ||
        (sv->store && !ephemeral && !ss->stored_id)) {
        sess_free_fields(ss);
        fill_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    if (open_session(ss, 0, err)) {
        sess_free_fields(ss);
        return NULL;
    }
    if (ss->stored_id)
        srv_db_add_session(sv->db, ss->stored_id, ss->owner_name, ss->id, ss->system,
                           ss->created_ms);
    link_sess(sv, ss);
    return ss;
}

int srv_sess_load(srv_sess *ss, ac_error *err)
{
    if (ss->s)
        return 0;
    if (!ss->stored_id) {
        fill_err(err, AC_EINVAL, "the session is not in the store");
        return -1;
    }
    ss->n_log = 0;
    if (open_session(ss, AC_STORE_MUST_EXIST, err))
        return -1;
    if (srv_db_load_events(ss->sv->db, ss)) {
        fill_err(err, AC_EIO, "cannot read the session's event log");
        return -1;
    }
    return 0;
}

void srv_sess_unload(srv_sess *ss)
{
    if (!ss->s || !ss->stored_id || ss->streams || ss->chat || ss->waiter)
        return;
    size_t n = ss->n_log;
    ac_session_set_userdata(ss->s, NULL);
    ac_session_free(ss->s); /* commits; the lease is released */
    ss->s = NULL;
    clear_log(ss);
    ss->n_log = n;
}

void srv_sess_drop(srv_sess *ss, int delete)
{
    if (!ss || ss->freeing)
        return;
    srv *sv = ss->sv;
    ss->freeing = 1;
    for (srv_sess **pp = &sv->sessions; *pp; pp = &(*pp)->next)
        if (*pp == ss) {
            *pp = ss->next;
            sv->n_sessions--;
            break;
        }
    while (ss->streams)
        srv_stream_detach(ss->streams);
    if (ss->chat) { /* its client is still reading: end the stream */
        ss->chat->ss = NULL;
        srv_stream_finish(ss->chat);
        ss->chat = NULL;
    }
    if (ss->waiter) { /* a suspended request: answered before the session goes */
        srv_reply_error(ss->waiter, 503, "stopping", "the server is stopping");
        MHD_resume_connection(ss->waiter);
        ss->waiter = NULL;
        srv_kick(sv);
    }
    if (ss->owner && ss->owner->sessions)
        ss->owner->sessions--;
    if (ss->s) {
        ac_session_set_userdata(ss->s, NULL); /* no more output reaches it */
        ac_session_free(ss->s);
    }
    if (delete &&ss->stored_id) {
        ac_error err = {0};
        int rc = ac_store_rm(sv->store, ss->stored_id, &err);
        if (rc != AC_OK && rc != AC_STORE_ENOENT)
            fprintf(stderr, "agentc serve: cannot remove session '%s' from the store: %s\n", ss->id,
                    err.text);
        srv_db_remove_session(sv->db, ss->stored_id);
    }
    clear_log(ss);
    free(ss->stop_partial);
    sess_free_fields(ss);
}

void srv_sess_free(srv_sess *ss)
{
    srv_sess_drop(ss, 0);
}

int srv_sess_log_append(srv_sess *ss, const char *frame, size_t n)
{
    if (ss->n_log == ss->cap_log) {
        size_t cap = ss->cap_log ? ss->cap_log * 2 : 16;
        srv_frame *l = realloc(ss->log, cap * sizeof *l);
        if (!l)
            return -1;
        ss->log = l;
        ss->cap_log = cap;
    }
    char *f = malloc(n + 1);
    if (!f)
        return -1;
    memcpy(f, frame, n);
    f[n] = 0;
    ss->log[ss->n_log].text = f;
    ss->log[ss->n_log].len = n;
    ss->n_log++;
    return 0;
}

void srv_sess_emit(srv_sess *ss, const char *type, json_t *data)
{
    if (!data)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    /* when it was appended, in microseconds since the epoch (clients measure delays by it) */
    json_object_set_new(data, "t_us",
                        json_integer((json_int_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000));
    char *js = json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(data);
    if (!js)
        return;
    size_t need = strlen(js) + strlen(type) + 48;
    char *f = malloc(need);
    if (!f) {
        free(js);
        return;
    }
    int n = snprintf(f, need, "id: %zu\nevent: %s\ndata: %s\n\n", ss->n_log + 1, type, js);
    free(js);
    if (srv_sess_log_append(ss, f, (size_t)n)) {
        free(f);
        return;
    }
    if (ss->stored_id && ss->sv->db)
        srv_db_add_event(ss->sv->db, ss->stored_id, ss->n_log, f, (size_t)n);
    free(f);
    if (ss->s)
        ss->last_active_ms = ac_loop_now_ms(ss->sv->loop);
    for (srv_stream *st = ss->streams; st; st = st->next)
        srv_stream_wake(st);
}

static srv_sess *of(ac_session *s)
{
    srv_sess *ss = ac_session_userdata(s);
    return ss && !ss->freeing ? ss : NULL;
}

/* ---- output callbacks: each becomes one event of the log ---- */

static void o_text(void *ud, ac_session *s, const char *d, size_t n)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss && ss->chat)
        srv_chat_delta(ss, d, n);
    if (ss)
        srv_sess_emit(ss, "text", json_pack("{s:s%}", "delta", d, n));
}

/* Text streamed and then dropped (a failed call's partial answer, retried or not; a turn
 * stopped mid-call): SSE clients remove it from what they assembled (its bytes end the text
 * streamed since the call began), the OpenAI-compatible stream never sends it. */
void srv_sess_discard(srv_sess *ss, const char *text, const char *reason)
{
    srv_chat_call_done(ss, 0);
    if (text && *text)
        srv_sess_emit(ss, "discarded",
                      json_pack("{s:s, s:I, s:s}", "text", text, "partial_len",
                                (json_int_t)strlen(text), "reason", reason));
}

static void o_discarded(void *ud, ac_session *s, size_t partial_len)
{
    srv_sess *ss = of(s);
    (void)ud;
    (void)partial_len; /* the partial itself is still the session's until the callback returns */
    if (ss)
        srv_sess_discard(ss, ac_session_partial(s), "call_failed");
}

static void o_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "rejected",
                      json_pack("{s:i, s:s}", "attempt", attempt, "errors", errors ? errors : ""));
}

static void o_tool_progress(void *ud, ac_session *s, const char *id, double progress, double total,
                            const char *message)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "tool_progress",
                      json_pack("{s:s, s:f, s:f, s:s?}", "id", id ? id : "", "progress", progress,
                                "total", total, "message", message));
}

static void o_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "reasoning", json_pack("{s:s%}", "delta", d, n));
}

static void o_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                         const char *arguments)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "tool_call",
                      json_pack("{s:s, s:s, s:s}", "id", id ? id : "", "name", name ? name : "",
                                "arguments", arguments ? arguments : ""));
}

static void o_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                       const char *content, int64_t duration_ms)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "tool_result",
                      json_pack("{s:s, s:s, s:b, s:s, s:I}", "id", id ? id : "", "name",
                                name ? name : "", "ok", ok, "content", content ? content : "",
                                "duration_ms", (json_int_t)duration_ms));
}

static void o_retry(void *ud, ac_session *s, int attempt, int64_t delay_ms, const char *reason)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "retry",
                      json_pack("{s:i, s:I, s:s}", "attempt", attempt, "delay_ms",
                                (json_int_t)delay_ms, "reason", reason ? reason : ""));
}

static void o_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (ss)
        srv_sess_emit(ss, "compacted",
                      json_pack("{s:s, s:I, s:I}", "strategy", strategy ? strategy : "", "before",
                                (json_int_t)before, "after", (json_int_t)after));
}

/* state_changed: reason says why, from the spec: the transition's actions and line */
static void o_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    srv_sess *ss = of(s);
    (void)ud;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    if (ss && r->event < t->n_events && t->event_names[r->event] &&
        (r->kind == AC_TRACE_TRANSITION || r->kind == AC_TRACE_INTERNAL) &&
        !strcmp(t->event_names[r->event], "llm.completed"))
        srv_chat_call_done(ss, 1); /* the engine's event: the call's text is the session's now */
    if (!ss || r->kind != AC_TRACE_TRANSITION)
        return;
    char reason[256];
    size_t n = 0;
    reason[0] = 0;
    if (r->from == AC_FSM_NONE)
        n = (size_t)snprintf(reason, sizeof reason, "initial state");
    else if (r->row != AC_FSM_NONE && r->row < t->n_transitions) {
        const ac_fsm_transition *tr = &t->transitions[r->row];
        if (tr->guard != AC_FSM_NONE)
            n = (size_t)snprintf(reason, sizeof reason, "guarded");
        uint16_t cnt = t->lists[tr->actions];
        for (uint16_t i = 0; i < cnt && n < sizeof reason; i++)
            n += (size_t)snprintf(reason + n, sizeof reason - n, "%s%s", n ? (i ? ", " : ": ") : "",
                                  t->action_names[t->lists[tr->actions + 1 + i]]);
    }
    if (n < sizeof reason && r->line)
        snprintf(reason + n, sizeof reason - n, "%s%s:%u", n ? " at " : "", t->spec_path,
                 (unsigned)r->line);
    srv_sess_emit(
        ss, "state_changed",
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "machine", t->machines[r->machine].name,
                  "from_state", r->from == AC_FSM_NONE ? "" : t->states[r->from].name, "to_state",
                  t->states[r->to].name, "event",
                  r->event != AC_FSM_EVENTLESS && r->event < t->n_events ? t->event_names[r->event]
                                                                         : "",
                  "reason", reason, "line", (int)r->line));
}

static void o_finished(void *ud, ac_session *s)
{
    srv_sess *ss = of(s);
    (void)ud;
    if (!ss)
        return;
    enum ac_session_status st = ac_session_status(s);
    ac_session_stats stats;
    ac_session_get_stats(s, &stats);
    if (st == AC_SESSION_FAILED) {
        const char *e = ac_session_error(s);
        srv_sess_emit(
            ss, "error",
            json_pack("{s:s, s:s}", "code", "turn_failed", "message", e ? e : "the turn failed"));
        srv_sess_emit(
            ss, "stopped",
            json_pack("{s:s, s:s}", "reason", "failed", "partial_response", ac_session_partial(s)));
    } else if (st == AC_SESSION_CANCELLED) {
        srv_sess_emit(ss, "stopped",
                      json_pack("{s:s, s:s}", "reason",
                                ss->stop_reason ? ss->stop_reason : "cancelled", "partial_response",
                                ss->stop_partial ? ss->stop_partial : ""));
    } else {
        srv_sess_emit(ss, "turn_done",
                      json_pack("{s:s, s:s, s:I, s:{s:I, s:I}}", "status",
                                ac_session_status_name(st), "answer", ac_session_answer(s),
                                "iterations", (json_int_t)stats.iterations, "usage", "input",
                                (json_int_t)stats.input_tokens, "output",
                                (json_int_t)stats.output_tokens));
    }
    if (ss->on_done) {
        srv_done_fn fn = ss->on_done;
        ss->on_done = NULL;
        fn(ss, ss->done_ud);
    }
}

void srv_output_init(srv *sv)
{
    memset(&sv->out, 0, sizeof sv->out);
    sv->out.ud = sv;
    sv->out.text = o_text;
    sv->out.reasoning = o_reasoning;
    sv->out.tool_start = o_tool_start;
    sv->out.tool_end = o_tool_end;
    sv->out.retry = o_retry;
    sv->out.discarded = o_discarded;
    sv->out.rejected = o_rejected;
    sv->out.tool_progress = o_tool_progress;
    sv->out.compacted = o_compacted;
    sv->out.trace = o_trace;
    sv->out.finished = o_finished;
}

json_t *srv_sess_json(srv_sess *ss, int full)
{
    if (!ss->s) { /* in the store only */
        ac_store_session_info info;
        memset(&info, 0, sizeof info);
        if (ac_store_info(ss->sv->store, ss->stored_id, &info, NULL) != AC_OK)
            snprintf(info.status, sizeof info.status, "unknown");
        return json_pack("{s:s, s:s, s:I, s:I, s:b}", "id", ss->id, "status", info.status,
                         "created_ms", (json_int_t)ss->created_ms, "last_event_id",
                         (json_int_t)ss->n_log, "loaded", 0);
    }
    ac_session_stats st;
    ac_session_get_stats(ss->s, &st);
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:{s:I, s:I, s:I}}", "id", ss->id, "status",
                          ac_session_status_name(ac_session_status(ss->s)), "created_ms",
                          (json_int_t)ss->created_ms, "last_event_id", (json_int_t)ss->n_log,
                          "usage", "input_tokens", (json_int_t)st.input_tokens, "output_tokens",
                          (json_int_t)st.output_tokens, "tool_calls", (json_int_t)st.tool_calls);
    if (!o)
        return NULL;
    json_t *states = json_object();
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(ss->s));
    for (uint16_t m = 0; m < t->n_machines; m++) {
        const char *name = ac_session_state(ss->s, t->machines[m].name);
        json_object_set_new(states, t->machines[m].name, name ? json_string(name) : json_null());
    }
    json_object_set_new(o, "states", states);
    json_object_set_new(o, "loaded", json_true());
    /* a session that only an outside event can move names the events (approve, deny, ...) */
    const char *wstate = NULL;
    if (ac_session_wait_state(ss->s, &wstate) == AC_WAIT_OUTSIDE) {
        const char *names[32];
        size_t n = ac_session_waiting_events(ss->s, names, 32);
        json_t *evs = json_array();
        for (size_t i = 0; i < n && i < 32; i++)
            json_array_append_new(evs, json_string(names[i]));
        json_object_set_new(o, "waiting",
                            json_pack("{s:s, s:o}", "state", wstate ? wstate : "", "events", evs));
    }
    if (!full)
        return o;
    const char *err = ac_session_error(ss->s);
    json_object_set_new(o, "answer", json_string(ac_session_answer(ss->s)));
    if (err)
        json_object_set_new(o, "error", json_string(err));
    char *whole = ac_session_to_json(ss->s);
    json_t *w = whole ? json_loads(whole, 0, NULL) : NULL;
    free(whole);
    json_t *conv = w ? json_object_get(w, "conversation") : NULL;
    json_t *msgs = conv ? json_object_get(conv, "messages") : NULL;
    json_t *calls = conv ? json_object_get(conv, "tool_calls") : NULL;
    json_object_set_new(o, "messages", msgs ? json_incref(msgs) : json_array());
    json_object_set_new(o, "tool_calls", calls ? json_incref(calls) : json_array());
    /* the session's shared memory: the State and the toolkits' states and contexts, if any */
    json_t *state = w ? json_object_get(w, "state") : NULL;
    json_t *kits = w ? json_object_get(w, "toolkits") : NULL;
    if (state)
        json_object_set(o, "state", state);
    if (kits)
        json_object_set(o, "toolkits", kits);
    json_decref(w);
    return o;
}
