/*
 * frames.c - what SSE clients read, derived from a session's stored journal: each journal
 * event gives zero or more frames, numbered N or N.k (N the event's number in the journal, k
 * the frame's index among the event's frames from 1), so ids strictly increase, may skip and
 * never repeat, and are the same whenever the journal is read again.
 *
 * The mapping is a replay: a replayer session (ac_session_new_replayer) is given the journal's
 * events in order, on an engine of the agent that recorded them (the session's, or one built
 * for an agent it had before: at each agent.changed the replayer goes on under the new agent,
 * ac_session_replayer_on, as `agentc replay` does), and the engine's output callbacks it fires
 * become the frames (text, reasoning, tool_result, compacted, state_changed, discarded, rejected,
 * turn_done, stopped, error); what a replay does not report is read from the event itself
 * (tool_call from the calls a completed model call asks for, retry from a failed call the
 * session goes on after, the stop of a turn by pause, rollback or cancel). The live stream
 * and a reconnect's replay are the same function of the same journal: the same frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/store.h"
#include "server_int.h"
#include "session/payload.h"
#include "session/sink.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/json_text.h"
#include "util/utf8.h"

/* Each part of a journal is replayed on an engine of the agent that recorded it: the
 * session's own, or one built for an agent it had before (kept with the frames). */
#define FRAMES_MAX_AGENTS 16

typedef struct frames_engine {
    json_t *record;
    ac_engine *e;
    void *hold;
} frames_engine;

struct srv_frames {
    int tag; /* SRV_TAG_FRAMES: what the replayer's userdata is */
    srv *sv;
    srv_engine *agent; /* the session's agent (a reference held; NULL: the server's engine) */
    json_t *agent_record;
    frames_engine own[FRAMES_MAX_AGENTS];
    size_t n_own;
    char *id;
    ac_session *rs;
    uint64_t n; /* the event being applied */
    unsigned k; /* frames it gave so far */
    int64_t t_ms;
    int attempts;       /* failed attempts of the current model call */
    char *stop_partial; /* the partial answer a cancel stopped */
    size_t turns_seen;  /* the replayer's turns_ended at the last finished */
    srv_frame_fn fn;
    void *ud;
    ac_buf text; /* a stored delta's text, unescaped (srv_frames_apply) */
    /* live (srv_frames_go_live): rs is the session itself (not ours), its frames wait in pend
     * until their event is committed (srv_frames_release); ev, data, p: the event applied */
    int live;
    srv_frame **pend;
    size_t n_pend, cap_pend;
    const char *ev;
    json_t *data;
    const ac_payload *p;
};

/* ---- frames ---- */

void srv_frame_unref(srv_frame *f)
{
    if (f && --f->refs == 0) {
        free(f->delta);
        free(f->bytes);
        free(f);
    }
}

/* A frame's bytes are made in one ac_buf: the header printed, the JSON dumped after. */
static int put(const char *b, size_t n, void *ud)
{
    return ac_buf_add(ud, b, n);
}

/* "id: N[.k]\nevent: T\ndata: " (no id line for n == 0) begun in fb: 0, or -1 out of memory. */
static int head(ac_buf *fb, uint64_t n, unsigned k, const char *type)
{
    size_t tl = strlen(type);
    ac_buf_init(fb, AC_BUF_MAX);
    if (ac_buf_reserve(fb, 256 + tl))
        return -1;
    char num[48], *end = num + sizeof num, *p = end;
    if (n && k) {
        p = ac_json_digits(p, k);
        *--p = '.';
    }
    if (n)
        p = ac_json_digits(p, n);
    if (n && (put("id: ", 4, fb) || put(p, (size_t)(end - p), fb) || put("\n", 1, fb)))
        return -1;
    return put("event: ", 7, fb) || put(type, tl, fb) || put("\ndata: ", 7, fb) ? -1 : 0;
}

/* f given its bytes (fb's, then "\n\n" ends the data line) and what it is: f, or NULL (out
 * of memory: f freed). */
static srv_frame *made(srv_frame *f, ac_buf *fb, uint64_t n, unsigned k, const char *type,
                       int64_t t_us)
{
    if (put("\n\n", 2, fb)) {
        ac_buf_free(fb);
        free(f->delta);
        free(f);
        return NULL;
    }
    int delta = !strcmp(type, "text") || !strcmp(type, "reasoning");
    if (!(f->bytes = ac_buf_take(fb, &f->len))) {
        free(f->delta);
        free(f);
        return NULL;
    }
    f->refs = 1;
    f->n = n;
    f->k = k;
    f->type = !delta ? "other" : type[0] == 't' ? "text" : "reasoning";
    f->t_us = t_us;
    return f;
}

/* "id: N[.k]\nevent: T\ndata: JSON\n\n"; data stolen. */
srv_frame *srv_frame_new(uint64_t n, unsigned k, const char *type, json_t *data, int64_t t_us)
{
    srv_frame *f = data ? calloc(1, sizeof *f) : NULL;
    ac_buf fb = {0};
    if (f) {
        json_object_set_new(data, "t_us", json_integer((json_int_t)t_us));
        json_t *d = json_object_get(data, "delta");
        if ((!strcmp(type, "text") || !strcmp(type, "reasoning")) && json_is_string(d)) {
            f->delta_len = json_string_length(d);
            f->delta = malloc(f->delta_len + 1);
            if (f->delta)
                memcpy(f->delta, json_string_value(d), f->delta_len + 1);
        }
        if (!head(&fb, n, k, type)) /* the compact writer: jansson's bytes, reals included */
            ac_json_put(&fb, data, AC_JSON_REALS | AC_JSON_ASCII);
        if (fb.failed || !fb.p) {
            ac_buf_free(&fb);
            free(f->delta);
            free(f);
            f = NULL;
        }
    }
    json_decref(data);
    return f ? made(f, &fb, n, k, type, t_us) : NULL;
}

/* JSON needs no escape in d (printable ASCII but '"' and '\\'): its dump is "d" as it is. */
static int plain(const char *d, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)d[i];
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
            return 0;
    }
    return 1;
}

/* d (len bytes) as a JSON string, by the compact writer srv_frame_new's uses where it
 * escapes: 0; 1 not UTF-8; -1 out of memory. */
static int put_string(ac_buf *fb, const char *d, size_t len)
{
    if (plain(d, len))
        return put("\"", 1, fb) || put(d, len, fb) || put("\"", 1, fb) ? -1 : 0;
    if (ac_utf8_valid_len(d, len) != len)
        return 1;
    ac_json_put_string(fb, d, len, AC_JSON_ASCII);
    return fb->failed ? -1 : 0;
}

/* ","t_us":T}" ends a frame's object. */
static int put_tail(ac_buf *fb, int64_t t_us)
{
    char num[24], *end = num + sizeof num;
    char *p = ac_json_digits(end, t_us < 0 ? 0 - (uint64_t)t_us : (uint64_t)t_us);
    if (t_us < 0)
        *--p = '-';
    return put(",\"t_us\":", 8, fb) || put(p, (size_t)(end - p), fb) || put("}", 1, fb) ? -1 : 0;
}

/* What srv_frame_new makes of an object whose dump, its "}" left off, is body. */
static srv_frame *frame_of_text(uint64_t n, unsigned k, const char *type, const char *body,
                                size_t blen, int64_t t_us)
{
    srv_frame *f = calloc(1, sizeof *f);
    ac_buf fb = {0};
    if (f && !head(&fb, n, k, type) && !put(body, blen, &fb) && !put_tail(&fb, t_us))
        return made(f, &fb, n, k, type, t_us);
    ac_buf_free(&fb);
    free(f);
    return NULL;
}

srv_frame *srv_frame_delta(uint64_t n, unsigned k, const char *type, const char *d, size_t len,
                           int64_t t_us, int *bad)
{
    srv_frame *f = calloc(1, sizeof *f);
    ac_buf fb = {0};
    int rc = -1;
    if (f && (f->delta = malloc(len + 1)) && !head(&fb, n, k, type) &&
        !put("{\"delta\":", 9, &fb) && !(rc = put_string(&fb, d, len)) && !put_tail(&fb, t_us)) {
        memcpy(f->delta, d, len);
        f->delta[len] = 0;
        f->delta_len = len;
        return made(f, &fb, n, k, type, t_us);
    }
    if (bad)
        *bad = rc == 1;
    ac_buf_free(&fb);
    if (f)
        free(f->delta);
    free(f);
    return NULL;
}

/* One frame for two deltas of one kind (a slow client's): b's id and time, the joined text. */
srv_frame *srv_frame_join(const srv_frame *a, const srv_frame *b)
{
    char *t = malloc(a->delta_len + b->delta_len + 1);
    if (!t)
        return NULL;
    memcpy(t, a->delta, a->delta_len);
    memcpy(t + a->delta_len, b->delta, b->delta_len + 1);
    srv_frame *f =
        srv_frame_delta(b->n, b->k, b->type, t, a->delta_len + b->delta_len, b->t_us, NULL);
    free(t);
    return f;
}

int srv_frame_append(srv_frame *a, const srv_frame *b)
{
    /* doubling: a slow reader's joins cost what they append */
    size_t cap = a->delta_cap ? a->delta_cap : a->delta_len + 1;
    if (ac_grow((void **)&a->delta, &cap, a->delta_len + b->delta_len + 1, 1))
        return -1;
    a->delta_cap = cap;
    memcpy(a->delta + a->delta_len, b->delta, b->delta_len + 1);
    a->delta_len += b->delta_len;
    a->n = b->n;
    a->k = b->k;
    a->t_us = b->t_us;
    a->len += b->delta_len; /* about its size until it is made */
    a->stale = 1;
    return 0;
}

int srv_frame_render(srv_frame *f)
{
    if (!f->stale)
        return 0;
    srv_frame *g = srv_frame_delta(f->n, f->k, f->type, f->delta, f->delta_len, f->t_us, NULL);
    if (!g)
        return -1;
    free(f->bytes);
    f->bytes = g->bytes;
    f->len = g->len;
    f->stale = 0;
    g->bytes = NULL;
    srv_frame_unref(g);
    return 0;
}

int srv_frame_after(const srv_frame *f, uint64_t n, unsigned k)
{
    return f->n > n || (f->n == n && f->k > k);
}

/* ---- the mapping ---- */

/* f to the sink; live, once its event is committed. */
static void give(srv_frames *fm, srv_frame *f)
{
    if (!fm->live) {
        fm->fn(fm->ud, f);
        return;
    }
    if (ac_grow((void **)&fm->pend, &fm->cap_pend, fm->n_pend + 1, sizeof *fm->pend)) {
        srv_frame_unref(f); /* no memory: a frame missed, as a failed frame is */
        return;
    }
    fm->pend[fm->n_pend++] = f;
}

static void emit(srv_frames *fm, const char *type, json_t *data)
{
    if (!data)
        return;
    srv_frame *f = srv_frame_new(fm->n, fm->k, type, data, fm->t_ms * 1000);
    fm->k++;
    if (f)
        give(fm, f);
}

/* The engine the events recorded under agent (NULL: none recorded) are replayed on: the
 * session's when it is that agent (or none is known), else one built for it, kept. */
static ac_engine *engine_for(srv_frames *fm, const json_t *agent)
{
    srv *sv = fm->sv;
    ac_engine *mine = fm->agent ? srv_engine_get(fm->agent) : sv->engine;
    if (!json_is_object(agent) || json_equal(agent, fm->agent_record))
        return mine;
    for (size_t i = 0; i < fm->n_own; i++)
        if (json_equal(agent, fm->own[i].record))
            return fm->own[i].e;
    const ac_srv_agents *a = sv->cfg->agents;
    char *text = json_dumps(agent, JSON_COMPACT | JSON_PRESERVE_ORDER);
    frames_engine *fe = &fm->own[fm->n_own];
    ac_error err = {0};
    if (fm->n_own < FRAMES_MAX_AGENTS && text && a->replay &&
        (fe->e = a->replay(a->ud, text, &sv->out, &fe->hold, &err))) {
        fe->record = json_incref((json_t *)agent);
        fm->n_own++;
        free(text);
        return fe->e;
    }
    free(text);
    fprintf(stderr,
            "agentc serve: session %s: an agent its journal recorded cannot be rebuilt (%s): "
            "its events are replayed under its agent now\n",
            fm->id, err.text[0] ? err.text : "too many agents");
    return mine;
}

/* The replayer replaced by r (NULL: kept). */
static void replayer_set(srv_frames *fm, ac_session *r)
{
    if (!r)
        return;
    ac_session_set_userdata(fm->rs, NULL);
    ac_session_free(fm->rs);
    fm->rs = r;
    ac_session_set_userdata(r, fm);
    ac_session_stats stats; /* its count of turns is its own */
    ac_session_get_stats(r, &stats);
    fm->turns_seen = stats.turns_ended;
}

srv_frames *srv_frames_new(srv *sv, srv_engine *agent, const char *id, const char *base,
                           srv_frame_fn fn, void *ud)
{
    srv_frames *fm = calloc(1, sizeof *fm);
    if (!fm || !(fm->id = strdup(id))) {
        free(fm);
        return NULL;
    }
    fm->tag = SRV_TAG_FRAMES;
    ac_buf_init(&fm->text, AC_BUF_MAX);
    fm->sv = sv;
    fm->fn = fn;
    fm->ud = ud;
    fm->agent = agent;
    srv_engine_hold(agent);
    fm->agent_record = agent ? json_loads(srv_engine_record(agent), 0, NULL) : NULL;
    json_t *doc = base ? json_loads(base, 0, NULL) : NULL; /* a snapshot holds its agent */
    ac_engine *e = engine_for(fm, json_object_get(doc, "agent"));
    json_decref(doc);
    ac_error err;
    fm->rs = ac_store_replayer(e, id, base, &err);
    if (!fm->rs) {
        fm->fn = NULL;
        srv_frames_free(fm);
        return NULL;
    }
    ac_session_set_userdata(fm->rs, fm);
    return fm;
}

void srv_frames_free(srv_frames *fm)
{
    if (!fm)
        return;
    if (fm->rs && !fm->live) {
        ac_session_set_userdata(fm->rs, NULL);
        ac_session_free(fm->rs);
    }
    for (size_t i = 0; i < fm->n_pend; i++)
        srv_frame_unref(fm->pend[i]);
    free(fm->pend);
    const ac_srv_agents *a = fm->sv->cfg->agents;
    for (size_t i = 0; i < fm->n_own; i++) {
        a->replay_release(a->ud, fm->own[i].e, fm->own[i].hold);
        json_decref(fm->own[i].record);
    }
    json_decref(fm->agent_record);
    srv_engine_release(fm->sv, fm->agent);
    free(fm->stop_partial);
    ac_buf_free(&fm->text);
    free(fm->id);
    free(fm);
}

uint64_t srv_frames_at(const srv_frames *fm)
{
    return fm->n;
}

void srv_frames_set_sink(srv_frames *fm, srv_frame_fn fn, void *ud)
{
    fm->fn = fn;
    fm->ud = ud;
}

/* A turn stopped by pause, rollback or cancel: what it was streaming goes. */
static void stopping(srv_frames *fm, const char *ev)
{
    int pause = !strcmp(ev, "pause"), rollback = !strcmp(ev, "rollback");
    if ((!pause && !rollback && strcmp(ev, "cancel") && strcmp(ev, "turn.cancel") &&
         strcmp(ev, "close")) ||
        ac_session_status(fm->rs) != AC_SESSION_RUNNING)
        return;
    const char *partial = ac_session_partial(fm->rs);
    const char *reason = pause ? "interrupted" : rollback ? "rolled_back" : "cancelled";
    if (*partial) /* first: a client takes it off the answer it is assembling */
        emit(fm, "discarded",
             json_pack("{s:s, s:I, s:s}", "text", partial, "partial_len",
                       (json_int_t)strlen(partial), "reason", reason));
    if (pause || rollback)
        emit(fm, "stopped", json_pack("{s:s, s:s}", "reason", reason, "partial_response", partial));
    else {
        free(fm->stop_partial);
        fm->stop_partial = strdup(partial);
    }
}

/* What the event says that a replay does not report: the calls a model asks for, a retry, an
 * agent change. */
static void after(srv_frames *fm, const char *ev, json_t *data)
{
    if (!strcmp(ev, "llm.completed")) {
        fm->attempts = 0;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(data, "tool_calls"), i, c)
        {
            const char *id = json_string_value(json_object_get(c, "id"));
            const char *name = json_string_value(json_object_get(c, "name"));
            const char *args = json_string_value(json_object_get(c, "arguments"));
            emit(fm, "tool_call",
                 json_pack("{s:s, s:s, s:s}", "id", id ? id : "", "name", name ? name : "",
                           "arguments", args ? args : ""));
        }
    } else if (!strcmp(ev, "llm.failed") && ac_session_status(fm->rs) == AC_SESSION_RUNNING) {
        const char *why = json_string_value(json_object_get(data, "message"));
        emit(fm, "retry",
             json_pack("{s:i, s:s}", "attempt", ++fm->attempts, "reason", why ? why : ""));
    } else if (!strcmp(ev, "llm.failed")) {
        fm->attempts = 0;                       /* the turn ended with the call */
    } else if (!strcmp(ev, AC_AGENT_CHANGED)) { /* the agent's keys, not its texts */
        json_t *name = json_object_get(json_object_get(data, "agent"), "name");
        emit(fm, "agent_changed",
             json_pack("{s:O?, s:O?, s:O?}", "reason", json_object_get(data, "reason"), "what",
                       json_object_get(data, "what"), "agent", name));
    } else if (!strcmp(ev, AC_AGENT_STARTED) || !strcmp(ev, AC_AGENT_DONE)) { /* sub-agents */
        json_t *d = json_deep_copy(data); /* the child's id as the owner's requests name it */
        const char *sid = json_string_value(json_object_get(d, "session"));
        if (sid && fm->id && srv_owner_id(fm->id, sid) != sid)
            json_object_set_new(d, "session", json_string(srv_owner_id(fm->id, sid)));
        emit(fm, !strcmp(ev, AC_AGENT_DONE) ? "agent_done" : "agent_started", d);
    }
}

/* A stored text, reasoning or refusal delta, the row most often read, applied from its text
 * as a typed payload (no JSON value made): 1; 0 when the row is anything else. */
static int apply_delta(srv_frames *fm, const ac_store_event *ev, int *rc)
{
    ac_payload p;
    if (!ev->data || strcmp(ev->ev, "llm.delta") ||
        ac_payload_read_delta(ev->data, strlen(ev->data), &p, &fm->text) < 0)
        return 0;
    fm->n = ev->n;
    fm->k = 0;
    fm->t_ms = ev->t_ms;
    uint16_t type = ac_engine_event_index(ac_session_engine(fm->rs), "llm.delta");
    *rc = ac_session_post_typed(fm->rs, type, &p, ev->t_ms);
    return 1;
}

int srv_frames_apply(srv_frames *fm, const ac_store_event *ev)
{
    int typed_rc;
    if (apply_delta(fm, ev, &typed_rc)) /* nothing else to do for a delta (stopping, after) */
        return typed_rc == AC_ENOMEM ? -1 : 0;
    json_t *data = NULL;
    if (ev->data && !(data = json_loads(ev->data, 0, NULL)))
        return -1;
    fm->n = ev->n;
    fm->k = 0;
    fm->t_ms = ev->t_ms;
    ac_error err;
    if (ev->n == 1 && !strcmp(ev->ev, "spawn")) { /* the journal's start: spawn's agent's */
        ac_engine *e = engine_for(fm, json_object_get(data, "agent"));
        if (e != ac_session_engine(fm->rs))
            replayer_set(fm, ac_store_replayer(e, fm->id, NULL, &err));
    }
    stopping(fm, ev->ev);
    int rc = ac_session_post(fm->rs, ev->ev, json_incref(data), ev->t_ms);
    if (rc >= 0 || rc == AC_QUEUED)
        after(fm, ev->ev, data);
    if (rc >= 0 && !strcmp(ev->ev, AC_AGENT_CHANGED)) { /* on under the new agent, at rest */
        ac_engine *e = engine_for(fm, json_object_get(data, "agent"));
        if (e != ac_session_engine(fm->rs))
            replayer_set(fm, ac_session_replayer_on(fm->rs, e, &err));
    }
    json_decref(data);
    return rc == AC_ENOMEM ? -1 : 0;
}

/* ---- live: the frames of the session itself, made as it records each event ---- */

void srv_frames_go_live(srv_frames *fm, ac_session *s)
{
    ac_session_set_userdata(fm->rs, NULL);
    ac_session_free(fm->rs);
    fm->rs = s;
    fm->live = 1;
    ac_session_stats stats; /* the turns counted from s's own count on */
    ac_session_get_stats(s, &stats);
    fm->turns_seen = stats.turns_ended;
}

ac_session *srv_frames_live_of(const srv_frames *fm)
{
    return fm && fm->live ? fm->rs : NULL;
}

void srv_frames_begin(srv_frames *fm, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                      const ac_payload *p)
{
    fm->n = n;
    fm->k = 0;
    fm->t_ms = t_ms;
    fm->ev = ev;
    fm->data = data;
    fm->p = p;
    stopping(fm, ev);
}

void srv_frames_end(srv_frames *fm)
{
    const char *ev = fm->ev;
    if (!ev)
        return;
    /* what after() reads of an event that came typed: its JSON, as a replay reads it */
    int reads = !strcmp(ev, "llm.completed") || !strcmp(ev, "llm.failed") ||
                !strcmp(ev, AC_AGENT_CHANGED) || !strcmp(ev, AC_AGENT_STARTED) ||
                !strcmp(ev, AC_AGENT_DONE);
    json_t *data = fm->data         ? json_incref(fm->data)
                   : reads && fm->p ? ac_payload_json(fm->p)
                                    : NULL;
    if (reads)
        after(fm, ev, data);
    json_decref(data);
    fm->ev = NULL;
    fm->data = NULL;
    fm->p = NULL;
}

void srv_frames_release(srv_frames *fm, uint64_t upto)
{
    size_t i = 0;
    for (; i < fm->n_pend && fm->pend[i]->n <= upto; i++)
        fm->fn(fm->ud, fm->pend[i]);
    memmove(fm->pend, fm->pend + i, (fm->n_pend - i) * sizeof *fm->pend);
    fm->n_pend -= i;
}

/* ---- the engine's output: a replayer's becomes frames ---- */

srv_frames *srv_frames_of(ac_session *s)
{
    int *tag = ac_session_userdata(s);
    return tag && *tag == SRV_TAG_FRAMES ? (srv_frames *)tag : NULL;
}

void srv_frames_text(srv_frames *fm, const char *kind, const char *d, size_t n)
{
    int bad = 0;
    srv_frame *f = srv_frame_delta(fm->n, fm->k, kind, d, n, fm->t_ms * 1000, &bad);
    if (bad) /* not UTF-8: no frame */
        return;
    fm->k++;
    if (f)
        give(fm, f);
}

void srv_frames_tool_end(srv_frames *fm, const char *id, const char *name, int ok,
                         const char *content, int64_t duration_ms)
{
    emit(fm, "tool_result",
         json_pack("{s:s, s:s, s:b, s:s, s:I}", "id", id ? id : "", "name", name ? name : "", "ok",
                   ok, "content", content ? content : "", "duration_ms", (json_int_t)duration_ms));
}

void srv_frames_compacted(srv_frames *fm, const char *strategy, size_t before, size_t after_n)
{
    emit(fm, "compacted",
         json_pack("{s:s, s:I, s:I}", "strategy", strategy ? strategy : "", "before",
                   (json_int_t)before, "after", (json_int_t)after_n));
}

void srv_frames_discarded(srv_frames *fm)
{
    const char *why, *p = ac_session_discarding(fm->rs, &why);
    if (!p)
        p = ac_session_partial(fm->rs), why = "call_failed";
    if (*p)
        emit(fm, "discarded",
             json_pack("{s:s, s:I, s:s}", "text", p, "partial_len", (json_int_t)strlen(p), "reason",
                       why));
}

void srv_frames_rejected(srv_frames *fm, int attempt, const char *errors)
{
    emit(fm, "rejected",
         json_pack("{s:i, s:s}", "attempt", attempt, "errors", errors ? errors : ""));
}

/* What snprintf(b + n, cap - n, "%s", v) does, without the format: the length it would
 * have, n + strlen(v) (b holds what fits, ended). */
static size_t cat(char *b, size_t cap, size_t n, const char *v)
{
    size_t l = strlen(v);
    if (n < cap) {
        size_t k = l < cap - n - 1 ? l : cap - n - 1;
        memcpy(b + n, v, k);
        b[n + k] = 0;
    }
    return n + l;
}

/* A state_changed frame; its strings as they are when none needs an escape (the most). */
static void state_changed(srv_frames *fm, const char *machine, const char *from, const char *to,
                          const char *ev, const char *reason, int line)
{
    char body[1024];
    int bl = -1;
    if (plain(machine, strlen(machine)) && plain(from, strlen(from)) && plain(to, strlen(to)) &&
        plain(ev, strlen(ev)) && plain(reason, strlen(reason)))
        bl = snprintf(body, sizeof body,
                      "{\"machine\":\"%s\",\"from_state\":\"%s\",\"to_state\":\"%s\",\"event\":"
                      "\"%s\",\"reason\":\"%s\",\"line\":%d",
                      machine, from, to, ev, reason, line);
    if (bl < 0 || (size_t)bl >= sizeof body) {
        emit(fm, "state_changed",
             json_pack("{s:s, s:s, s:s, s:s, s:s, s:i}", "machine", machine, "from_state", from,
                       "to_state", to, "event", ev, "reason", reason, "line", line));
        return;
    }
    srv_frame *f = frame_of_text(fm->n, fm->k, "state_changed", body, (size_t)bl, fm->t_ms * 1000);
    fm->k++;
    if (f)
        give(fm, f);
}

/* state_changed: reason says why, from the spec: the transition's actions and line */
void srv_frames_trace(srv_frames *fm, const ac_trace_rec *r)
{
    if (r->kind != AC_TRACE_TRANSITION)
        return;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(fm->rs));
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
        for (uint16_t i = 0; i < cnt && n < sizeof reason; i++) {
            n = cat(reason, sizeof reason, n, n ? (i ? ", " : ": ") : "");
            n = cat(reason, sizeof reason, n, t->action_names[t->lists[tr->actions + 1 + i]]);
        }
    }
    if (n < sizeof reason && r->line)
        snprintf(reason + n, sizeof reason - n, "%s%s:%u", n ? " at " : "", t->spec_path,
                 (unsigned)r->line);
    const char *from = r->from == AC_FSM_NONE ? "" : t->states[r->from].name;
    const char *ev =
        r->event != AC_FSM_EVENTLESS && r->event < t->n_events ? t->event_names[r->event] : "";
    state_changed(fm, t->machines[r->machine].name, from, t->states[r->to].name, ev, reason,
                  (int)r->line);
}

/* A turn ended (its outcome says how) or the session did: the frames that say so. A turn
 * stopped by pause or rollback was said when it stopped (stopping). */
void srv_frames_finished(srv_frames *fm)
{
    ac_session *s = fm->rs;
    ac_session_stats stats;
    ac_session_get_stats(s, &stats);
    ac_session_end end;
    ac_session_get_end(s, &end);
    int turn = stats.turns_ended != fm->turns_seen;
    fm->turns_seen = stats.turns_ended;
    enum ac_turn_outcome o = ac_session_last_turn(s, NULL);
    int failed = end.ended ? !strcmp(end.how, "failed") : turn && o == AC_TURN_FAILED;
    if (failed) {
        const char *e = ac_session_error(s);
        emit(fm, "error",
             json_pack("{s:s, s:s}", "code", "turn_failed", "message", e ? e : "the turn failed"));
        emit(
            fm, "stopped",
            json_pack("{s:s, s:s}", "reason", "failed", "partial_response", ac_session_partial(s)));
    } else if ((end.ended && (!turn || o == AC_TURN_CANCELLED)) ||
               (turn && o == AC_TURN_CANCELLED)) {
        /* the session ended (cancelled, closed, completed), or a turn.cancel stopped its turn */
        emit(fm, "stopped",
             json_pack("{s:s, s:s}", "reason", end.ended ? end.how : "cancelled",
                       "partial_response", fm->stop_partial ? fm->stop_partial : ""));
    } else if (turn && o == AC_TURN_COMPLETED) {
        const char *trace = ac_session_trace_id(s); /* joins the stream and the trace */
        emit(fm, "turn_done",
             json_pack("{s:s, s:s, s:s, s:I, s:{s:I, s:I}, s:s*}", "status",
                       ac_session_status_name(ac_session_status(s)), "outcome", "completed",
                       "answer", ac_session_answer(s), "iterations", (json_int_t)stats.iterations,
                       "usage", "input", (json_int_t)stats.input_tokens, "output",
                       (json_int_t)stats.output_tokens, "trace_id", trace));
    }
}
