/*
 * sessions.c - the sessions of `agentc serve`: a registry by id of the store's sessions
 * (stored as "OWNER/ID"; loaded while in use), their readers fed from the store's journal
 * (the store's observer and frames.c), and the engine's output callbacks.
 *
 * Every session lives in the store (with --db a file, else the store in memory): its
 * journal is the one log; what SSE clients read is made from it (frames.c), live as commits
 * make it durable and again from the store when a reader reconnects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/store.h"
#include "context/conversation.h"
#include "server_int.h"
#include "util/random.h"
#include "session/state.h"
#include "session/toolkits.h"

static void add_view(srv_sess *ss, json_t *o, const srv_view *v);

srv_sess *srv_sess_find(srv *sv, const srv_owner *owner, const char *id)
{
    srv_sess *ss = sv->ids_lost ? sv->sessions : ac_idmap_get(&sv->by_id, ac_idmap_str_key(id));
    for (; ss; ss = sv->ids_lost ? ss->next : ss->same_key)
        if (!ss->freeing && ss->owner == owner && !strcmp(ss->id, id))
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
    uint64_t key = ac_idmap_str_key(ss->id);
    ss->same_key = ac_idmap_get(&sv->by_id, key);
    if (!sv->ids_lost && ac_idmap_put(&sv->by_id, key, ss))
        sv->ids_lost = 1; /* out of memory: found by the list from now on */
}

/* ss out of the sessions list and of by_id. */
static void unlink_sess(srv *sv, srv_sess *ss)
{
    for (srv_sess **pp = &sv->sessions; *pp; pp = &(*pp)->next)
        if (*pp == ss) {
            *pp = ss->next;
            sv->n_sessions--;
            break;
        }
    uint64_t key = ac_idmap_str_key(ss->id);
    srv_sess *head = ac_idmap_get(&sv->by_id, key);
    if (head == ss && ss->same_key && ac_idmap_put(&sv->by_id, key, ss->same_key))
        sv->ids_lost = 1; /* out of memory (the map grows before it replaces) */
    else if (head == ss && !ss->same_key)
        ac_idmap_del(&sv->by_id, key);
    for (srv_sess *o = head; o && o != ss; o = o->same_key)
        if (o->same_key == ss) {
            o->same_key = ss->same_key;
            break;
        }
}

static void fill_err(ac_error *err, int code, const char *text)
{
    if (err) {
        err->code = code;
        snprintf(err->text, sizeof err->text, "%s", text);
    }
}

ac_engine *srv_sess_engine(const srv_sess *ss)
{
    return ss->agent ? srv_engine_get(ss->agent) : ss->sv->engine;
}

static void sess_free_fields(srv_sess *ss)
{
    if (ss->handoff_timer)
        ac_loop_cancel_timer(ss->sv->loop, ss->handoff_timer);
    srv_load_forget(ss->sv, ss);
    json_decref(ss->children);
    srv_engine_release(ss->sv, ss->agent);
    free(ss->base);
    free(ss->stored_id);
    free(ss->system);
    free(ss->owner_name);
    free(ss->id);
    free(ss);
}

srv_sess *srv_sess_known(srv *sv, srv_owner *owner, const char *sid, int64_t created_ms)
{
    const char *slash = strchr(sid, '/');
    srv_sess *ss = slash ? calloc(1, sizeof *ss) : NULL;
    if (!ss)
        return NULL;
    ss->tag = SRV_TAG_SESS;
    ss->sv = sv;
    ss->owner = owner;
    ss->id = strdup(slash + 1);
    ss->stored_id = strdup(sid);
    ss->owner_name = strndup(sid, (size_t)(slash - sid));
    ss->created_ms = created_ms;
    if (!ss->id || !ss->stored_id || !ss->owner_name) {
        sess_free_fields(ss);
        return NULL;
    }
    link_sess(sv, ss);
    return ss;
}

/* The session's ac_session on the server's engine: created (its own system prompt, if any,
 * carried in its spawn event), or continued from the store (the prompt comes back with it). */
int srv_sess_open(srv_sess *ss, unsigned flags, const ac_session_options *given, ac_error *err)
{
    srv *sv = ss->sv;
    ac_session_options opts = {0};
    if (given)
        opts = *given;
    opts.system_prompt = ss->system;
    ac_engine *e = srv_sess_engine(ss);
    opts.agent = ss->agent ? srv_engine_record(ss->agent) : NULL;
    ss->fresh = (flags & (AC_STORE_CREATED | AC_STORE_NEW)) != 0;
    ss->calls_known = 0; /* its load says so once its calls are read (srv_sess_calls_read) */
    if (sv->notify && (flags & (AC_STORE_CREATED | AC_STORE_MUST_EXIST | AC_STORE_NEW)))
        flags |= AC_STORE_GROUPED; /* PostgreSQL: loaded at rest, its first commit, and freed,
                                      its last commit and release, go with the loop's group
                                      commit (no commit made alone, waited for) */
    if (ss->stored_id)
        ss->s = ac_store_session_opts(sv->store, e, ss->stored_id, flags, &opts, err);
    else
        ss->s = ac_session_new_opts(e, ss->id, &opts, err);
    if (!ss->s)
        return -1;
    if (ss->stored_id && opts.agent && !ac_session_agent(ss->s) && ac_session_settled(ss->s))
        ac_session_change_agent(ss->s, "option", "[\"agent\"]", opts.agent); /* from now on */
    ac_session_set_userdata(ss->s, ss);
    ac_session_set_client_calls(ss->s, srv_client_call, ss); /* compat_tools.c */
    ss->last_active_ms = ac_loop_now_ms(sv->loop);
    if (ac_session_handoff(ss->s, NULL))
        srv_children_turn_ended(ss); /* stopped between a handoff's pause and its move */
    return 0;
}

static srv_sess *sess_make(srv *sv, srv_owner *owner, const char *id, const char *system,
                           const ac_session_options *opts, int kind, srv_engine *agent,
                           unsigned flags, ac_error *err)
{
    int ephemeral = kind == SRV_SESS_CHAT;
    srv_sess *ss = calloc(1, sizeof *ss);
    if (!agent && (agent = sv->default_engine))
        srv_engine_hold(agent);
    char auto_id[32];
    if (!id) {
        const char *pfx = kind == SRV_SESS_API ? "s" : "chatcmpl-";
        snprintf(auto_id, sizeof auto_id, "%s%llu", pfx, (unsigned long long)++sv->next_auto_id);
        while (srv_sess_find(sv, owner, auto_id))
            snprintf(auto_id, sizeof auto_id, "%s%llu", pfx,
                     (unsigned long long)++sv->next_auto_id);
        if (sv->notify && !ephemeral) { /* other workers make ids too: a random one */
            unsigned char r[8];
            ac_random_bytes(r, sizeof r);
            snprintf(auto_id, sizeof auto_id, "%s%02x%02x%02x%02x%02x%02x%02x%02x", pfx, r[0], r[1],
                     r[2], r[3], r[4], r[5], r[6], r[7]);
        }
        id = auto_id;
    }
    if (!ss) {
        srv_engine_release(sv, agent);
        fill_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    ss->tag = SRV_TAG_SESS;
    ss->sv = sv;
    ss->owner = owner;
    ss->agent = agent;
    ss->ephemeral = ephemeral;
    ss->created_ms = ac_wall_now_ms();
    ss->id = strdup(id);
    ss->owner_name = strdup(owner && owner->name ? owner->name : "local");
    ss->system = system ? strdup(system) : NULL;
    if (!ephemeral && ss->owner_name) {
        size_t n = strlen(ss->owner_name) + strlen(id) + 2;
        if ((ss->stored_id = malloc(n)))
            snprintf(ss->stored_id, n, "%s/%s", ss->owner_name, id);
    }
    if (!ss->id || !ss->owner_name || (system && !ss->system) || (!ephemeral && !ss->stored_id)) {
        sess_free_fields(ss);
        fill_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    if (srv_sess_open(ss, flags, opts, err)) {
        sess_free_fields(ss);
        return NULL;
    }
    free(ss->system); /* its spawn event carries it from now on: not a third copy */
    ss->system = NULL;
    link_sess(sv, ss);
    return ss;
}

srv_sess *srv_sess_new(srv *sv, srv_owner *owner, const char *id, const char *system,
                       const char *history, const char *client_tools, int kind, srv_engine *agent,
                       ac_error *err)
{
    ac_session_options opts = {0};
    opts.history = history;
    opts.client_tools = client_tools;
    /* PostgreSQL, a kept chat session (its id random, none stored): not read first, its row
     * made by the loop turn's group commit with its first events */
    unsigned flags = sv->notify && kind == SRV_SESS_CHAT_KEPT && !id ? AC_STORE_NEW : 0;
    return sess_make(sv, owner, id, system, &opts, kind, agent, flags, err);
}

srv_sess *srv_sess_new_made(srv *sv, srv_owner *owner, const char *id, const char *system,
                            srv_engine *agent, ac_error *err)
{
    ac_session_options opts = {0};
    return sess_make(sv, owner, id, system, &opts, SRV_SESS_API, agent, AC_STORE_CREATED, err);
}

srv_sess *srv_sess_child(srv *sv, srv_sess *parent, const char *id, srv_engine *agent,
                         const ac_session_options *opts, int is_new, ac_error *err)
{
    /* PostgreSQL, a child none stored (open_child): not read first, its row made by the loop
     * turn's group commit with its first events; else read first */
    srv_sess *ss = sess_make(sv, parent->owner, id, NULL, opts, SRV_SESS_API, agent,
                             sv->notify && is_new ? AC_STORE_NEW : 0, err);
    if (ss)
        ss->in_call = 1;
    if (ss && ss->s && !ss->children && !ac_store_session_events(ss->s))
        ss->children = json_array(); /* its journal empty: its calls come with its commits */
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
    if (!ss->agent && !(ss->agent = srv_agent_of_stored(ss->sv, ss->stored_id, err)))
        return -1;
    return srv_sess_open(ss, AC_STORE_MUST_EXIST, NULL, err);
}

void srv_sess_unload(srv_sess *ss)
{
    if (!ss->s || !ss->stored_id || ss->streams || ss->chat || ss->waiter || ss->in_call ||
        ss->delete_task || ss->discarded)
        return;
    ac_session_set_userdata(ss->s, NULL);
    ac_session_free(ss->s); /* commits; the lease is released */
    ss->s = NULL;
}

void srv_sess_delete_wake(srv_sess *ss)
{
    if (!ss->delete_task)
        return;
    ac_loop_task *t = ss->delete_task;
    ac_store_when_durable_cancel(ss->s, t);
    t->fn(t->ud); /* delete.c's: its request runs again (resumed or deferred), the session gone */
}

void srv_sess_drop(srv_sess *ss, int delete)
{
    if (!ss || ss->freeing)
        return;
    srv *sv = ss->sv;
    ss->freeing = 1;
    unlink_sess(sv, ss);
    while (ss->streams)
        srv_stream_detach(ss->streams);
    srv_frames_free(ss->live);
    ss->live = NULL;
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
    srv_sess_delete_wake(ss);
    if (ss->owner && ss->owner->sessions)
        ss->owner->sessions--;
    int64_t attempt = ss->s ? ac_store_session_attempt(ss->s) : 0; /* its removal's fence */
    if (ss->s) {
        ac_session_set_userdata(ss->s, NULL); /* no more output reaches it */
        ac_session_set_client_calls(ss->s, NULL, NULL);
        ac_session_free(ss->s);
    }
    srv_client_free(ss);
    if (delete &&ss->stored_id) {
        ac_error err = {0};
        int rc = ac_store_rm_fenced(sv->store, ss->stored_id, attempt, &err);
        if (rc != AC_OK && rc != AC_STORE_ENOENT)
            fprintf(stderr, "agentc serve: cannot remove session '%s' from the store: %s\n", ss->id,
                    err.text);
    }
    sess_free_fields(ss);
}

void srv_sess_free(srv_sess *ss)
{
    srv_sess_drop(ss, 0);
}

void srv_sess_say(srv_sess *ss, const char *type, json_t *data)
{
    srv_frame *f = srv_frame_new(0, 0, type, data, ac_wall_now_ms() * 1000);
    for (srv_stream *st = ss->streams; f && st; st = st->next)
        srv_stream_frame(st, f);
    srv_frame_unref(f);
}

/* ---- readers: the journal's frames, caught up from the store, then live ---- */

static void to_readers(void *ud, srv_frame *f)
{
    srv_sess *ss = ud;
    for (srv_stream *st = ss->streams; st && !(f->n && f->n <= ss->sent_upto); st = st->next)
        srv_stream_frame(st, f);
    srv_frame_unref(f);
}

/* The live frames made from the session itself from now on, when they can be: it is run here,
 * applies no event now (a commit may come mid-event: a tool call's), all it recorded is
 * committed and they are made up to there. */
static void live_try(srv_sess *ss)
{
    if (ss->live && !srv_frames_live_of(ss->live) && ss->s && !ss->freeing && !ss->lost &&
        !ss->applying && ss->appended && ss->appended == ss->committed &&
        srv_frames_at(ss->live) == ss->committed)
        srv_frames_go_live(ss->live, ss->s);
}

static void discard(void *ud, srv_frame *f)
{
    (void)ud;
    srv_frame_unref(f);
}

void srv_sess_live_end(srv_sess *ss)
{
    if (!srv_frames_live_of(ss->live))
        return;
    srv_frames_free(ss->live); /* its frames not committed yet: made again at their commit */
    ss->live = srv_frames_new(ss->sv, ss->agent, ss->stored_id, ss->base, discard, NULL);
    if (ss->live && ss->sv->notify) { /* the journal read without waiting: what the readers
                                         were sent (all committed) is not sent again */
        ss->sent_upto = ss->committed;
        srv_frames_set_sink(ss->live, to_readers, ss);
        srv_sess_tail(ss);
        return;
    }
    if (ss->live && srv_sess_tail(ss) == 0) { /* what the readers were sent: not again */
        srv_frames_set_sink(ss->live, to_readers, ss);
        return;
    }
    srv_frames_free(ss->live);
    ss->live = NULL;
    for (srv_stream *st = ss->streams; st; st = st->next)
        srv_stream_finish(st); /* they reconnect with their Last-Event-ID */
}

void srv_on_append(void *ud, ac_session *s, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                   const ac_payload *p, int done)
{
    int *tag = ac_session_userdata(s);
    srv_sess *ss = tag && *tag == SRV_TAG_SESS ? (srv_sess *)tag : NULL;
    (void)ud;
    if (!ss || ss->freeing)
        return;
    if (!done && n > ss->appended)
        ss->appended = n;
    ss->applying = !done;
    if (srv_frames_live_of(ss->live) != s)
        return;
    if (done)
        srv_frames_end(ss->live);
    else
        srv_frames_begin(ss->live, n, t_ms, ev, data, p);
}

/* st one of the session's live readers, its frames made up to event `at` (fm: them): the live
 * frames from there on (fm becomes them when it has none; else fm is freed and st skips
 * theirs up to `at`). */
void srv_sess_attach(srv_sess *ss, srv_stream *st, srv_frames *fm, uint64_t at)
{
    st->skip = at;
    st->ss = ss;
    if (ss->live) {
        srv_frames_free(fm);
    } else {
        ss->live = fm;
        srv_frames_set_sink(fm, to_readers, ss);
    }
    st->next = ss->streams;
    ss->streams = st;
    st->in_list = 1;
    live_try(ss);
}

void srv_sess_trim(srv *sv)
{
    uint64_t cap = (uint64_t)sv->cfg->max_events;
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next) {
        ac_store_session_info info;
        if (!ss->stored_id || ac_store_info(sv->store, ss->stored_id, &info, NULL) != AC_OK ||
            info.events - ss->forgotten <= cap || info.snapshot_seq <= ss->forgotten)
            continue;
        uint64_t n;
        char *body = ac_store_snapshot(sv->store, ss->stored_id, &n, NULL);
        if (body && n > ss->forgotten &&
            ac_store_forget(sv->store, ss->stored_id, n, NULL) == AC_OK) {
            free(ss->base);
            ss->base = body; /* frames start there now */
            ss->forgotten = n;
        } else {
            free(body);
        }
    }
}

srv_sess *srv_sess_stored(srv *sv, const char *id)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (ss->stored_id && !strcmp(ss->stored_id, id))
            return ss;
    return NULL;
}

static int apply_live(void *ud, const ac_store_event *ev)
{
    srv_sess *ss = ud;
    return ss->live ? srv_frames_apply(ss->live, ev) : 1;
}

/* On a shared database the journal is read on the wake-up connection, never waited for (the
 * commits meanwhile wait for that read: srv_on_commit); elsewhere now (a local file). */
int srv_sess_tail(srv_sess *ss)
{
    if (!ss->live || !ss->stored_id)
        return 0;
    if (ss->sv->notify) {
        srv_remote_follow(ss->sv, ss);
        return 0;
    }
    ac_error err = {0};
    int rc = ac_store_events(ss->sv->store, ss->stored_id, srv_frames_at(ss->live), apply_live, ss,
                             &err);
    return rc == AC_OK ? 0 : -1;
}

void srv_sess_tailed(srv_sess *ss, int ok)
{
    if (!ss->s || !ss->live || srv_frames_live_of(ss->live))
        return; /* not run here (another worker runs it, or it is being opened again): the
                   next wake-up, poll or commit reads on */
    if (ok) {
        live_try(ss);
        return;
    }
    srv_frames_free(ss->live);
    ss->live = NULL;
    for (srv_stream *st = ss->streams; st; st = st->next)
        srv_stream_finish(st); /* they reconnect with their Last-Event-ID */
}

void srv_on_commit(void *ud, ac_session *s, const char *id, const ac_store_event *evs, size_t n,
                   const ac_error *err)
{
    srv *sv = ud;
    int *tag = s ? ac_session_userdata(s) : NULL;
    if (!err && n)
        srv_remote_committed(sv, id, evs[n - 1].n); /* the other workers' readers woken */
    srv_sess *ss = tag && *tag == SRV_TAG_SESS ? (srv_sess *)tag : srv_sess_stored(sv, id);
    if (!ss || ss->freeing)
        return;
    if (ss->s)
        ss->last_active_ms = ac_loop_now_ms(sv->loop);
    if (!err && n && evs[n - 1].n > ss->committed)
        ss->committed = evs[n - 1].n;
    if (err && ss->s)
        srv_sess_lost(ss, err); /* another worker runs it now, or the database went */
    if (err) {                  /* not stored: never streamed; the readers are told why and end */
        srv_sess_say(ss, "error",
                     json_pack("{s:s, s:s}", "code", "store_error", "message", err->text));
        for (srv_stream *st = ss->streams; st; st = st->next)
            srv_stream_finish(st);
        if (srv_frames_live_of(ss->live)) { /* what it made is not committed: never sent */
            srv_frames_free(ss->live);
            ss->live = NULL;
        }
        return;
    }
    if (srv_frames_live_of(ss->live)) { /* made as they were recorded: sent now */
        srv_children_commit(ss, evs, n);
        srv_frames_release(ss->live, ss->committed);
        return;
    }
    if (ss->live && n && (ss->tailing || evs[0].n > srv_frames_at(ss->live) + 1)) {
        /* committed by another worker before this one ran the session: read (on a shared
         * database without waiting, these events with them, committed now) */
        if (srv_sess_tail(ss) == 0 && sv->notify) {
            srv_children_commit(ss, evs, n);
            return;
        }
    }
    srv_children_commit(ss, evs, n);
    for (size_t i = 0; ss->live && i < n; i++)
        if (evs[i].n > srv_frames_at(ss->live)) /* what a tail read already is not again */
            srv_frames_apply(ss->live, &evs[i]);
    live_try(ss);
}

/* ---- the engine's output: a replayer's makes frames; a live session's feeds the
 * OpenAI-compatible front ---- */

srv_sess *srv_sess_of(ac_session *s)
{
    int *tag = ac_session_userdata(s);
    srv_sess *ss = tag && *tag == SRV_TAG_SESS ? (srv_sess *)tag : NULL;
    return ss && !ss->freeing ? ss : NULL;
}

/* The frames s's output makes: a replayer's, or the live frames of a session run here (then
 * *ss is it too, as for any session run here). */
static srv_frames *frames_of(ac_session *s, srv_sess **ss)
{
    srv_frames *fm = srv_frames_of(s);
    *ss = fm ? NULL : srv_sess_of(s);
    if (!fm && *ss && srv_frames_live_of((*ss)->live) == s)
        fm = (*ss)->live;
    return fm;
}

static void o_text(void *ud, ac_session *s, const char *d, size_t n)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_text(fm, "text", d, n);
    if (ss && ss->chat)
        srv_chat_delta(ss, d, n);
}

static void o_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_text(fm, "reasoning", d, n);
}

static void o_discarded(void *ud, ac_session *s, size_t partial_len)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    (void)partial_len;
    if (fm)
        srv_frames_discarded(fm);
    if (ss)
        srv_chat_call_done(ss, 0);
}

static void o_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_rejected(fm, attempt, errors);
}

/* Progress is not journaled: a frame with no id to the live readers (never replayed). */
static void o_tool_progress(void *ud, ac_session *s, const char *id, double progress, double total,
                            const char *message)
{
    srv_sess *ss = srv_sess_of(s);
    (void)ud;
    if (ss)
        srv_sess_say(ss, "tool_progress",
                     json_pack("{s:s, s:f, s:f, s:s?}", "id", id ? id : "", "progress", progress,
                               "total", total, "message", message));
}

static void o_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                       const char *content, int64_t duration_ms)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_tool_end(fm, id, name, ok, content, duration_ms);
    if (ss && ss->client)
        srv_client_kick(ss); /* a call of the turn is answered: maybe only the client's wait */
}

static void o_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_compacted(fm, strategy, before, after);
}

static void o_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm)
        srv_frames_trace(fm, r);
    if (!ss)
        return;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    if (ss->chat && r->event < t->n_events && t->event_names[r->event] &&
        (r->kind == AC_TRACE_TRANSITION || r->kind == AC_TRACE_INTERNAL) &&
        !strcmp(t->event_names[r->event], "llm.completed"))
        srv_chat_call_done(ss, 1); /* the engine's event: the call's text is the session's */
}

static void o_finished(void *ud, ac_session *s)
{
    srv_sess *ss;
    srv_frames *fm = frames_of(s, &ss);
    (void)ud;
    if (fm) /* first: what the session is as the turn ends, as a replay finds it */
        srv_frames_finished(fm);
    if (ss)
        srv_children_turn_ended(ss);
    if (ss && ss->on_done) {
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
    sv->out.tool_end = o_tool_end;
    sv->out.discarded = o_discarded;
    sv->out.rejected = o_rejected;
    sv->out.tool_progress = o_tool_progress;
    sv->out.compacted = o_compacted;
    sv->out.trace = o_trace;
    sv->out.finished = o_finished;
}

/* The session's last turn {outcome, error?} and, once it ended, how {how, error?, at_ms}
 * (the same members as ac_session_to_json's). */
static void turn_json(const ac_session *s, json_t *o)
{
    const char *why;
    enum ac_turn_outcome last = ac_session_last_turn(s, &why);
    json_object_set_new(
        o, "last_turn",
        json_pack("{s:s, s:s*}", "outcome", ac_turn_outcome_name(last), "error", why));
    ac_session_end end;
    ac_session_get_end(s, &end);
    if (end.ended)
        json_object_set_new(o, "ended",
                            json_pack("{s:s, s:s*, s:I}", "how", end.how, "error", end.error,
                                      "at_ms", (json_int_t)end.at_ms));
}

/* The calls waiting for a decision: [{"id", "name", "arguments"}], the model's arguments. */
static json_t *pending_calls(ac_session *s)
{
    const char *ids[64];
    size_t n = ac_session_pending_tool_calls(s, ids, 64);
    json_t *a = json_array();
    for (size_t i = 0; a && i < n && i < 64; i++) {
        const char *args = NULL, *name = ac_session_tool_call_name(s, ids[i], &args);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "id", ids[i], "name",
                                           name ? name : "", "arguments", args ? args : ""));
    }
    return a;
}

/* The worker running a stored session: its lease's holder, null when none holds it. */
static json_t *worker_of(const ac_store_session_info *info)
{
    return *info->holder ? json_string(info->holder) : json_null();
}

json_t *srv_sess_json(srv_sess *ss, int full)
{
    return srv_sess_json_as(ss, full, NULL);
}

json_t *srv_sess_json_as(srv_sess *ss, int full, const ac_store_session_info *row)
{
    if (!ss->s) { /* in the store only */
        ac_store_session_info info;
        memset(&info, 0, sizeof info);
        /* on a shared database its view is asked of the worker running it, or it is loaded
         * first (server.c's route_session), and a list passes the rows it read: no read here
         * waits for the database ("unknown" if one came without its row) */
        if (row)
            info = *row;
        else if (ss->sv->notify ||
                 ac_store_info(ss->sv->store, ss->stored_id, &info, NULL) != AC_OK)
            snprintf(info.status, sizeof info.status, "unknown");
        return json_pack("{s:s, s:s, s:I, s:I, s:b, s:o}", "id", ss->id, "status", info.status,
                         "created_ms", (json_int_t)ss->created_ms, "last_event_id",
                         (json_int_t)info.events, "loaded", 0, "worker", worker_of(&info));
    }
    ac_store_session_info info;
    memset(&info, 0, sizeof info);
    if (row) {
        info = *row;
    } else if (ss->stored_id && ss->sv->notify) {
        /* on a shared database: the row as this worker's commits make it (it holds the
         * lease), from memory, no read waiting for the database; one lost (its lease taken or
         * a commit refused, dropped on the loop's next turn): what was committed here, and
         * no worker known */
        info.events = ss->lost ? ss->committed : ac_store_session_events(ss->s);
        if (!ss->lost)
            snprintf(info.holder, sizeof info.holder, "%s", ac_store_holder(ss->sv->store));
    } else if (ss->stored_id) {
        ac_store_info(ss->sv->store, ss->stored_id, &info, NULL);
    }
    ac_session_stats st;
    ac_session_get_stats(ss->s, &st);
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:{s:I, s:I, s:I}}", "id", ss->id, "status",
                          ac_session_status_name(ac_session_status(ss->s)), "created_ms",
                          (json_int_t)ss->created_ms, "last_event_id", (json_int_t)info.events,
                          "usage", "input_tokens", (json_int_t)st.input_tokens, "output_tokens",
                          (json_int_t)st.output_tokens, "tool_calls", (json_int_t)st.tool_calls);
    if (!o)
        return NULL;
    if (st.has_cost) /* the engine prices its model: what the session cost */
        json_object_set_new(json_object_get(o, "usage"), "cost_usd", json_real(st.cost_usd));
    json_t *states = json_object();
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(ss->s));
    for (uint16_t m = 0; m < t->n_machines; m++) {
        const char *name = ac_session_state(ss->s, t->machines[m].name);
        json_object_set_new(states, t->machines[m].name, name ? json_string(name) : json_null());
    }
    json_object_set_new(o, "states", states);
    json_object_set_new(o, "loaded", json_true());
    json_object_set_new(o, "worker", worker_of(&info));
    if (ss->agent)
        json_object_set_new(o, "agent", json_string(srv_engine_name(ss->agent)));
    srv_children_view(ss, o);
    turn_json(ss->s, o);
    /* a session that only an outside event can move names the events (approve, deny, ...) */
    const char *wstate = NULL;
    if (ac_session_wait_state(ss->s, &wstate) == AC_WAIT_OUTSIDE) {
        const char *names[32];
        size_t n = ac_session_waiting_events(ss->s, names, 32);
        json_t *evs = json_array(), *dec = json_array();
        for (size_t i = 0; i < n && i < 32; i++) {
            json_array_append_new(evs, json_string(names[i]));
            if (ac_session_event_takes_decisions(ss->s, names[i]))
                json_array_append_new(dec, json_string(names[i]));
        }
        json_object_set_new(o, "waiting",
                            json_pack("{s:s, s:o, s:o, s:o}", "state", wstate ? wstate : "",
                                      "events", evs, "decisions", dec, "calls",
                                      pending_calls(ss->s)));
    }
    srv_client_view(ss, o); /* the calls it waits for its client to answer (compat_tools.c) */
    if (full) {
        srv_view v = {1, 0, 0, SRV_PAGE_MESSAGES};
        add_view(ss, o, &v);
    }
    return o;
}

/* About what a message serializes to (its text), and a call record (arguments, result). */
static size_t message_bytes(const ac_message *m)
{
    return 96 + strlen(m->content) + (m->reasoning ? strlen(m->reasoning) : 0) +
           (m->thinking ? strlen(m->thinking) : 0);
}
static size_t call_bytes(const ac_tool_call *r)
{
    return 128 + strlen(r->arguments) + (r->result ? strlen(r->result) : 0);
}

/* A page being made: what it holds, and whether one more item of b bytes still fits (the
 * first always does: a page moves on by one item at least). */
typedef struct page {
    json_t *msgs, *calls;
    size_t bytes, items;
} page;
static int page_takes(page *pg, size_t b)
{
    if (pg->items && pg->bytes + b > SRV_PAGE_BYTES)
        return 0;
    pg->bytes += b;
    pg->items++;
    return 1;
}

/* The page of the conversation from v's cursor: messages, each followed by the records of the
 * calls it made, one item at a time until v->limit messages or SRV_PAGE_BYTES, so a message
 * with many big calls spans pages ("N.K": message N's calls from its K-th on, the message
 * itself on the page before). */
static void add_page(srv_sess *ss, json_t *o, const srv_view *v)
{
    const ac_conv *cv = ac_session_conv(ss->s);
    size_t total = ac_conv_message_count(cv), i = v->from, k = v->from_call, n = 0;
    page pg = {json_array(), json_array(), 0, 0};
    for (; i < total; i++, k = 0) {
        const ac_message *m = ac_conv_message(cv, i);
        if (k == 0 && (n == v->limit || !page_takes(&pg, message_bytes(m))))
            break;
        if (k == 0) {
            json_array_append_new(pg.msgs, ac_conv_message_json(m));
            n++;
        }
        for (; k < m->n_tool_calls; k++) {
            const ac_tool_call *r = ac_conv_tool_call(cv, m->tool_call_ids[k]);
            if (r && !page_takes(&pg, call_bytes(r)))
                break;
            if (r)
                json_array_append_new(pg.calls, ac_conv_call_json(r));
        }
        if (k < m->n_tool_calls)
            break;
    }
    char next[48];
    if (k)
        snprintf(next, sizeof next, "%zu.%zu", i, k);
    else
        snprintf(next, sizeof next, "%zu", i);
    json_object_set_new(o, "messages", pg.msgs);
    json_object_set_new(o, "tool_calls", pg.calls);
    json_object_set_new(o, "messages_total", json_integer((json_int_t)total));
    json_object_set_new(o, "next_from", i < total ? json_string(next) : json_null());
}

/* What GET /v1/sessions/{id} adds to the summary: the answer, the error, and unless
 * v->messages is 0 a page of the conversation and, with the first page, the session's shared
 * memory (the State and the toolkits' states and contexts, if any). */
static void add_view(srv_sess *ss, json_t *o, const srv_view *v)
{
    const char *err = ac_session_error(ss->s);
    json_object_set_new(o, "answer", json_string(ac_session_answer(ss->s)));
    if (err)
        json_object_set_new(o, "error", json_string(err));
    if (!v->messages)
        return;
    add_page(ss, o, v);
    if (v->from || v->from_call) /* the shared memory comes with the first page only */
        return;
    json_t *state = ac_session_state_json(ss->s);
    json_t *kits = ac_toolkits_state_json(ss->s);
    if (state)
        json_object_set_new(o, "state", state);
    if (kits)
        json_object_set_new(o, "toolkits", kits);
}

json_t *srv_sess_view(srv_sess *ss, const srv_view *v)
{
    json_t *o = srv_sess_json(ss, 0);
    if (o && ss->s)
        add_view(ss, o, v);
    return o;
}
