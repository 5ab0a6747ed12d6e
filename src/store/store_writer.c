/*
 * store_writer.c - the writer that follows a stored session through its hooks
 * (session_int.h): it buffers each event with its steps, records tool calls as
 * started before they run and as finished, takes snapshots when the session
 * settles, renews the lease, and hands what it buffered to the loop turn's
 * group commit (store_group.c) or commits it alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/journal.h"
#include "store_json.h"
#include "session/snapshot.h"
#include "session/session_int.h"
#include "store_writer.h"
#include "util/grow.h"

static store_writer *W(ac_session *s)
{
    store_writer *w = s->hooks_ud;
    w->s = s;
    return w;
}

static void rows_free(store_writer *w)
{
    for (size_t i = 0; i < w->n_rows; i++) {
        free(w->rows[i].ev);
        free(w->rows[i].data);
        free(w->rows[i].steps);
    }
    w->n_rows = 0;
    for (size_t i = 0; i < w->n_late; i++)
        free((char *)w->late[i].steps);
    w->n_late = 0;
    for (size_t i = 0; i < w->n_fin; i++)
        free(w->fin[i]);
    w->n_fin = 0;
}

void ac_sw_error(store_writer *w, const char *text)
{
    if (w->error)
        return;
    w->error = strdup(text && *text ? text : "cannot write the store");
}

/* The tool calls waiting for their records: dropped (the session is going away). */
static void pend_drop(store_writer *w)
{
    for (size_t i = 0; i < w->n_pend; i++) {
        free(w->pend_id[i]);
        free(w->pend_name[i]);
    }
    w->n_pend = 0;
}

/* The calls of one list (a writer's, or its batch's) run (ok) or fail, the list emptied
 * first: their callbacks may record more calls, which wait for the next commit. */
static void pends_run(char **id, char **name, void (**pgo)(void *, int), void **pud, size_t *np,
                      int ok)
{
    size_t n = *np;
    if (!n)
        return;
    void (**go)(void *, int) = malloc(n * sizeof *go);
    void **ud = malloc(n * sizeof *ud);
    if (!go || !ud) { /* out of memory: each call fails without running, taken one by one */
        free(go), free(ud);
        while (*np) {
            size_t i = --*np;
            free(id[i]), free(name[i]);
            if (pgo[i])
                pgo[i](pud[i], 0);
        }
        return;
    }
    memcpy(go, pgo, n * sizeof *go);
    memcpy(ud, pud, n * sizeof *ud);
    for (size_t i = 0; i < n; i++)
        free(id[i]), free(name[i]);
    *np = 0;
    for (size_t i = 0; i < n; i++)
        if (go[i])
            go[i](ud[i], ok);
    free(go), free(ud);
}

/* The tasks waiting for a commit: deferred on the loop (it is done, or cannot be). */
static void dur_run(ac_loop *loop, ac_loop_task **t, size_t *n)
{
    for (size_t i = 0; loop && i < *n; i++)
        ac_loop_defer(loop, t[i]);
    *n = 0;
}

/* After a commit: the tool calls it recorded run (ok), or fail without running; when the
 * session failed, the calls waiting for a next commit fail too (there is none). */
void ac_sw_pend_run(store_writer *w, int ok)
{
    store_batch *b = &w->fl;
    dur_run(w->loop, b->dur, &b->n_dur);
    pends_run(b->pend_id, b->pend_name, b->pend_go, b->pend_ud, &b->n_pend, ok);
    if (w->error) {
        dur_run(w->loop, w->dur, &w->n_dur);
        pends_run(w->pend_id, w->pend_name, w->pend_go, w->pend_ud, &w->n_pend, 0);
    }
}

/* What the session buffered is committed by the group's next commit, or is in flight. */
static int dur_add(ac_loop_task ***v, size_t *n, size_t *cap, ac_loop_task *task)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 4;
        ac_loop_task **p = realloc(*v, c * sizeof *p);
        if (!p)
            return 0;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = task;
    return 1;
}

int ac_store_when_durable(ac_session *s, ac_loop_task *task)
{
    store_writer *w = s && s->hooks == &AC_SW_HOOKS ? s->hooks_ud : NULL;
    ac_loop *loop = s ? s->e->loop : NULL;
    if (w && w->error)
        return -1; /* what it buffered will not be committed */
    if (!w || !loop || w->muted)
        return 0;
    w->loop = loop;
    if (w->queued || w->timer)
        return dur_add(&w->dur, &w->n_dur, &w->cap_dur, task);
    size_t cap = w->fl.n_dur; /* grown one at a time: rare */
    return w->fl.on ? dur_add(&w->fl.dur, &w->fl.n_dur, &cap, task) : 0;
}

int ac_store_session_discard_when(ac_session *s, ac_loop_task *task)
{
    store_writer *w = s && s->hooks == &AC_SW_HOOKS ? s->hooks_ud : NULL;
    if (!w)
        return 0;
    ac_store_group_remove(w);
    w->muted = 1;
    if (!w->fl.on)
        return 0;
    size_t cap = w->fl.n_dur;
    if (task && !dur_add(&w->fl.dur, &w->fl.n_dur, &cap, task))
        ac_store_group_wait(w->st); /* out of memory: waited for here */
    return w->fl.on;
}

void ac_store_when_durable_cancel(ac_session *s, ac_loop_task *task)
{
    store_writer *w = s && s->hooks == &AC_SW_HOOKS ? s->hooks_ud : NULL;
    ac_loop_task **lists[2] = {w ? w->dur : NULL, w ? w->fl.dur : NULL};
    size_t *ns[2] = {w ? &w->n_dur : NULL, w ? &w->fl.n_dur : NULL};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; lists[k] && i < *ns[k]; i++)
            if (lists[k][i] == task) {
                lists[k][i] = lists[k][--*ns[k]];
                break;
            }
    if (task->queued && s && s->e->loop)
        ac_loop_undefer(s->e->loop, task);
}

/* What a batch holds but its calls (ac_sw_pend_run takes those). */
static void batch_free_data(store_batch *b)
{
    for (size_t i = 0; i < b->n_rows; i++) {
        free(b->rows[i].ev);
        free(b->rows[i].data);
        free(b->rows[i].steps);
    }
    free(b->rows);
    b->rows = NULL;
    b->n_rows = 0;
    for (size_t i = 0; i < b->n_late; i++)
        free((char *)b->late[i].steps);
    b->n_late = 0;
    for (size_t i = 0; i < b->n_fin; i++)
        free(b->fin[i]);
    free(b->fin);
    free(b->fin_ok);
    b->fin = NULL;
    b->fin_ok = NULL;
    b->n_fin = 0;
    free(b->spec_hash), free(b->agent), free(b->create_params), free(b->snap);
    b->spec_hash = b->agent = b->create_params = b->snap = NULL;
}

static void batch_free(store_batch *b)
{
    batch_free_data(b);
    free(b->dur);
    for (size_t i = 0; i < b->n_pend; i++)
        free(b->pend_id[i]), free(b->pend_name[i]);
    free(b->pend_id), free(b->pend_name), free(b->pend_go), free(b->pend_ud);
    memset(b, 0, sizeof *b);
}

/* What w buffered goes into its batch (w buffers anew). */
static void batch_take(store_writer *w)
{
    store_batch *b = &w->fl;
    batch_free(b);
    b->on = 1;
    b->rows = w->rows, b->n_rows = w->n_rows;
    w->rows = NULL, w->n_rows = w->cap_rows = 0;
    memcpy(b->late, w->late, sizeof b->late);
    b->n_late = w->n_late, w->n_late = 0;
    b->fin = w->fin, b->fin_ok = w->fin_ok, b->n_fin = w->n_fin;
    w->fin = NULL, w->fin_ok = NULL, w->n_fin = w->cap_fin = 0;
    b->pend_id = w->pend_id, b->pend_name = w->pend_name;
    b->pend_go = w->pend_go, b->pend_ud = w->pend_ud, b->n_pend = w->n_pend;
    w->pend_id = w->pend_name = NULL, w->pend_go = NULL, w->pend_ud = NULL;
    w->n_pend = w->cap_pend = 0;
    b->spec_hash = w->spec_hash, b->agent = w->agent, b->create_params = w->create_params;
    b->snap = w->snap, b->snap_n = w->snap_n;
    w->spec_hash = w->agent = w->create_params = w->snap = NULL;
    b->dur = w->dur, b->n_dur = w->n_dur;
    w->dur = NULL, w->n_dur = w->cap_dur = 0;
}

/* Fills c (and *evs, to free) with what w buffered: 0, or -1 when there is nothing it may
 * commit (failed, loading). */
int ac_sw_prepare(store_writer *w, ac_store_commit *c, ac_store_event **evs)
{
    ac_session *s = w->s;
    *evs = NULL;
    if (w->error || w->muted)
        return -1;
    if (w->n_rows && !(*evs = calloc(w->n_rows, sizeof **evs))) {
        ac_sw_error(w, "cannot write the store: out of memory");
        return -1;
    }
    int keep = w->snap && w->keep_n && w->snap_n == w->keep_n;
    batch_take(w);
    store_batch *b = &w->fl;
    if (b->n_rows)
        w->sent_n = b->rows[b->n_rows - 1].n;
    for (size_t i = 0; i < b->n_rows; i++)
        (*evs)[i] = (ac_store_event){b->rows[i].n, b->rows[i].t_ms, b->rows[i].ev, b->rows[i].data,
                                     b->rows[i].steps};
    memset(c, 0, sizeof *c);
    c->id = w->closing ? w->id : s->id;
    c->holder = w->st->holder;
    c->attempt = w->attempt;
    c->lease_ms = w->st->lease_ms;
    c->evs = *evs;
    c->n_evs = b->n_rows;
    c->late = b->late;
    c->n_late = b->n_late;
    c->finished = (const char *const *)b->fin;
    c->finished_ok = b->fin_ok;
    c->n_finished = b->n_fin;
    c->status = w->closing ? w->status : ac_session_status_name(ac_session_status(s));
    c->at_rest = w->closing ? w->at_rest : ac_session_settled(s);
    c->title = w->have_title == 1 ? w->title : NULL;
    if (w->have_title == 1)
        w->have_title = 2; /* once (a failed commit fails the session) */
    c->spec_hash = b->spec_hash;
    c->started = (const char *const *)b->pend_id;
    c->started_names = (const char *const *)b->pend_name;
    c->n_started = b->n_pend;
    c->release = w->closing;
    c->create = b->create_params != NULL;
    c->create_params = b->create_params;
    c->create_hash = b->create_params ? b->spec_hash : NULL; /* set with create_params */
    c->snapshot = b->snap;
    c->snapshot_n = b->snap_n;
    c->snapshot_keep = keep;
    c->agent = b->agent;
    return 0;
}

/* The session hears that its journal failed, from a task of the loop's own. */
static void failed_task(void *ud)
{
    store_writer *w = ud;
    if (w->s && !w->closing)
        ac_session_journal_failed(w->s);
}

void ac_sw_tell_failed(store_writer *w)
{
    ac_loop *loop = w->s && !w->closing && w->error ? w->s->e->loop : NULL;
    if (loop) {
        w->failed.fn = failed_task;
        w->failed.ud = w;
        ac_loop_defer(loop, &w->failed);
    }
}

void ac_sw_finish(store_writer *w, const ac_store_commit *c, int rc, const ac_error *err)
{
    ac_store *st = w->st;
    store_batch *b = &w->fl;
    b->on = 0;
    if (rc != AC_OK) {
        ac_sw_error(w, err->text);
        if (st->observer)
            st->observer(st->observer_ud, w->closing ? NULL : w->s, c->id, NULL, 0, err);
        batch_free_data(b);
        return;
    }
    if (st->observer) /* durable now: who follows the journal is told */
        st->observer(st->observer_ud, w->closing ? NULL : w->s, c->id, c->evs, c->n_evs, NULL);
    if (w->s && w->s->e->loop)
        w->renewed_ms = ac_loop_now_ms(w->s->e->loop);
    if (b->snap) {
        w->snapshot_seq = b->snap_n;
        if (w->keep_n <= b->snap_n)
            w->force_snapshot = 0;
    }
    batch_free_data(b);
}

/* Commits w alone, now, or, release, giving the lease up. A store_writer whose session was freed
 * (closing) is freed. */
void ac_sw_commit_with(store_writer *w, int release)
{
    ac_loop *loop = w->s ? w->s->e->loop : NULL;
    ac_store_group_wait(w->st); /* a commit in flight is first */
    ac_store_group_remove(w);
    if (w->timer && loop)
        ac_loop_cancel_timer(loop, w->timer);
    w->timer = 0;
    ac_store_commit c;
    ac_store_event *evs;
    if (ac_sw_prepare(w, &c, &evs) == 0) {
        c.release = c.release || release;
        ac_error err;
        int rc = w->st->ops->commit(w->st, &c, &err);
        ac_sw_finish(w, &c, rc, &err);
        free(evs);
    }
    if (w->closing) {
        ac_sw_free(w);
        return;
    }
    ac_sw_pend_run(w, !w->error);
}

void ac_sw_commit(store_writer *w)
{
    ac_sw_commit_with(w, 0);
}

/* The lease is renewed by every commit; a session that commits nothing for a third of the
 * lease (waiting for input, a long tool) renews it from this timer. The lease's expiry is the
 * database's time; here only how long ago it was renewed is measured, on the loop's clock. */
static void renew_fired(void *ud)
{
    store_writer *w = ud;
    ac_loop *loop = w->s->e->loop;
    w->renew = 0;
    if (w->error)
        return;
    if (ac_loop_now_ms(loop) - w->renewed_ms >= w->st->lease_ms / 3)
        ac_store_group_add(w);
    w->renew = ac_loop_timer(loop, w->st->lease_ms / 3, renew_fired, w);
}

void ac_sw_go_live(store_writer *w)
{
    w->muted = 0;
    if (w->s->e->loop)
        w->renewed_ms = ac_loop_now_ms(w->s->e->loop);
    if (w->s->e->loop && !w->renew)
        w->renew = ac_loop_timer(w->s->e->loop, w->st->lease_ms / 3, renew_fired, w);
}

/* ---- hooks ---- */

/* The session's agent given (spawn) or changed (change: a snapshot is taken there, and
 * kept): committed as the session's agent. */
static void agent_seen(store_writer *w, uint64_t n, int change, json_t *agent)
{
    if (json_is_object(agent)) {
        free(w->agent);
        if (!(w->agent = ac_store_json_text(agent)))
            ac_sw_error(w, "cannot write the store: out of memory");
    }
    if (change) { /* a record without an agent changed the spec: kept as well */
        w->force_snapshot = 1;
        w->keep_n = n;
    }
}

static void h_event(ac_session *s, uint64_t n, int64_t t_ms, const char *ev, json_t *data,
                    const ac_payload *p)
{
    store_writer *w = W(s);
    if (w->st->append && !w->muted)
        w->st->append(w->st->append_ud, s, n, t_ms, ev, data, p, 0);
    if (!strcmp(ev, "llm.completed") ||
        (!strcmp(ev, "llm.failed") && !json_is_true(json_object_get(data, "interrupted"))))
        w->model_calls++;
    if (w->muted || w->error)
        return;
    if (!strcmp(ev, AC_AGENT_CHANGED) || !strcmp(ev, "spawn"))
        agent_seen(w, n, !strcmp(ev, AC_AGENT_CHANGED), json_object_get(data, "agent"));
    if (!w->have_title && !strcmp(ev, "user_message")) {
        const char *text = json_string_value(json_object_get(data, "text"));
        if (text) {
            size_t len = strlen(text), cut = len < 100 ? len : 100;
            while (cut < len && cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
                cut--; /* never half a UTF-8 sequence */
            w->title = strndup(text, cut);
            w->have_title = w->title ? 1 : 0;
        }
    }
    if (!strcmp(ev, "tool.completed")) {
        int typed = p && p->kind == AC_PAYLOAD_TOOL_RESULT;
        const char *id = typed ? p->id : json_string_value(json_object_get(data, "id"));
        if (id) {
            size_t cap_ok = w->cap_fin;
            if (ac_grow((void **)&w->fin_ok, &cap_ok, w->n_fin + 1, sizeof *w->fin_ok) ||
                ac_grow((void **)&w->fin, &w->cap_fin, w->n_fin + 1, sizeof *w->fin)) {
                ac_sw_error(w, "cannot write the store: out of memory");
                return;
            }
            w->fin_ok[w->n_fin] = typed ? p->ok : json_is_true(json_object_get(data, "ok"));
            w->fin[w->n_fin++] = strdup(id);
        }
    }
    /* a loop turn's rows of one session are few: from 8 (small blocks malloc reuses) */
    if (ac_grow((void **)&w->rows, &w->cap_rows, w->n_rows + 1, sizeof *w->rows)) {
        ac_sw_error(w, "cannot write the store: out of memory");
        return;
    }
    store_row *r = &w->rows[w->n_rows++];
    r->n = n;
    r->t_ms = t_ms;
    r->ev = strdup(ev);
    r->data = data ? ac_store_json_text(data) : p ? ac_payload_text(p) : NULL;
    r->steps = NULL;
    w->steps_len = 0;
    if (!w->steps && !(w->steps = malloc(w->steps_cap = 256)))
        w->steps_cap = 0;
    if (w->steps)
        w->steps[w->steps_len++] = '[';
    if (!r->ev || (data && !r->data) || !w->steps)
        ac_sw_error(w, "cannot write the store: out of memory");
    ac_store_group_add(w); /* committed at the end of this loop turn */
}

static void steps_add(store_writer *w, const char *text)
{
    size_t n = strlen(text);
    if (w->steps_len + n + 3 > w->steps_cap) {
        size_t cap = (w->steps_len + n + 3) * 2;
        char *b = realloc(w->steps, cap);
        if (!b) {
            ac_sw_error(w, "cannot write the store: out of memory");
            return;
        }
        w->steps = b;
        w->steps_cap = cap;
    }
    if (w->steps_len > 1)
        w->steps[w->steps_len++] = ',';
    memcpy(w->steps + w->steps_len, text, n);
    w->steps_len += n;
}

/* Where the STEP text of r is kept for every session of tables t (made on first use), or NULL
 * (tables of another spec than the cache's, no memory). */
static struct step_text *step_slot(store_writer *w, const ac_fsm_tables *t, const ac_trace_rec *r)
{
    uint32_t k = r->row != AC_FSM_NONE ? r->row : (uint32_t)t->n_transitions + r->to;
    if ((r->row != AC_FSM_NONE && r->row >= t->n_transitions) || r->to >= t->n_states)
        return NULL;
    struct ac_store_group *g = w->st->group;
    if (!g && (g = calloc(1, sizeof *g)))
        w->st->group = g;
    uint32_t n = (uint32_t)t->n_transitions + t->n_states;
    if (g && !g->t && (g->row_text = calloc(n, sizeof *g->row_text))) {
        g->t = t;
        g->n_text = n;
        snprintf(g->hash, sizeof g->hash, "%s", t->hash ? t->hash : "");
    }
    if (!g || g->t != t || g->n_text != n || strcmp(g->hash, t->hash ? t->hash : ""))
        return NULL; /* the tables of another spec: made each time */
    return &g->row_text[k];
}

static void h_step(ac_session *s, const ac_trace_rec *r)
{
    store_writer *w = W(s);
    if (w->muted || !w->steps_len || w->error ||
        (r->kind != AC_TRACE_TRANSITION && r->kind != AC_TRACE_INTERNAL))
        return; /* not a step (ignored, unhandled) */
    const ac_fsm_tables *t = s->e->t;
    struct step_text *c = step_slot(w, t, r);
    if (c && c->text && c->machine == r->machine && c->from == r->from && c->to == r->to &&
        c->event == r->event && c->line == r->line) {
        steps_add(w, c->text);
        return;
    }
    json_t *step = ac_journal_step_json(t, r);
    char *text = step ? json_dumps(step, JSON_COMPACT) : NULL;
    json_decref(step);
    if (!text)
        return;
    steps_add(w, text);
    if (c) { /* the same row, machine, states, event and line give the same STEP: kept */
        free(c->text);
        *c = (struct step_text){text, r->machine, r->from, r->to, r->event, r->line};
    } else {
        free(text);
    }
}

/* The steps of the open event as a JSON array (malloc'd), and no event open. */
static char *steps_close(store_writer *w)
{
    char *out = NULL;
    if (w->steps && w->steps_len && w->steps_len + 2 <= w->steps_cap) {
        w->steps[w->steps_len++] = ']';
        out = strndup(w->steps, w->steps_len);
    }
    w->steps_len = 0;
    return out;
}

static void h_steps_done(ac_session *s, uint64_t n)
{
    store_writer *w = W(s);
    if (w->st->append && !w->muted)
        w->st->append(w->st->append_ud, s, n, 0, NULL, NULL, NULL, 1);
    if (w->muted || !w->steps_len)
        return;
    if (w->n_rows && w->rows[w->n_rows - 1].n == n) {
        w->rows[w->n_rows - 1].steps = steps_close(w);
    } else if (w->n_late < sizeof w->late / sizeof w->late[0]) { /* committed already */
        w->late[w->n_late].n = n;
        w->late[w->n_late++].steps = steps_close(w);
        ac_store_group_add(w);
    } else {
        w->steps_len = 0;
    }
    if (!s->e->loop)
        ac_sw_commit(w); /* no loop turns: one commit per event */
}

/* An effect starts or stops: what it does follows the end of this loop turn, where the
 * sessions' commits are grouped (a tool call commits alone, before it runs: h_tool_started). */
static void h_flush(ac_session *s)
{
    store_writer *w = W(s);
    if (w->n_rows || w->n_late)
        ac_store_group_add(w);
}

/* The session settled: a snapshot, when one is due, is taken now and written with the
 * loop turn's commit (the events up to it in the same transaction). */
void ac_sw_snapshot_take(store_writer *w)
{
    ac_session *s = w->s;
    char *body = ac_session_snapshot_save(s, w->model_calls);
    if (!body)
        return; /* a snapshot is an optimisation: the journal has everything */
    free(w->snap);
    w->snap = body;
    w->snap_n = s->seq;
}

static void h_settled(ac_session *s)
{
    store_writer *w = W(s);
    if (w->muted)
        return;
    if (w->force_snapshot || s->seq - w->snapshot_seq >= w->st->snapshot_every)
        ac_sw_snapshot_take(w);
    if (s->e->loop)
        ac_store_group_add(w); /* committed at the end of this loop turn */
    else
        ac_sw_commit(w);
}

static const char *h_error(ac_session *s)
{
    return W(s)->error;
}

/* A tool call about to run: its started record joins the loop turn's commit, and the call
 * runs (go) once that commit is durable. Without a loop it commits alone, at once. */
static int h_tool_started(ac_session *s, const char *call_id, const char *name,
                          void (*go)(void *ud, int ok), void *ud)
{
    store_writer *w = W(s);
    if (w->muted)
        return 0;
    if (w->error)
        return -1;
    if (w->n_pend == w->cap_pend) {
        size_t cap = w->cap_pend ? w->cap_pend * 2 : 4;
        char **a = realloc(w->pend_id, cap * sizeof *a);
        if (a)
            w->pend_id = a;
        char **b = a ? realloc(w->pend_name, cap * sizeof *b) : NULL;
        if (b)
            w->pend_name = b;
        void (**c)(void *, int) = b ? realloc(w->pend_go, cap * sizeof *c) : NULL;
        if (c)
            w->pend_go = c;
        void **d = c ? realloc(w->pend_ud, cap * sizeof *d) : NULL;
        if (d)
            w->pend_ud = d;
        if (!d)
            return -1;
        w->cap_pend = cap;
    }
    char *id = strdup(call_id), *nm = strdup(name);
    if (!id || !nm) {
        free(id), free(nm);
        return -1;
    }
    size_t i = w->n_pend++;
    w->pend_id[i] = id;
    w->pend_name[i] = nm;
    w->pend_go[i] = go;
    w->pend_ud[i] = ud;
    if (!s->e->loop) { /* no loop turns: what led to it and the call, one transaction */
        w->pend_go[i] = NULL;
        ac_sw_commit(w); /* the caller runs it (go NULL: not called) */
        return w->error ? -1 : 0;
    }
    ac_store_group_add(w);
    return 1;
}

/* The call was stopped while its record waited: it is not recorded. */
static void h_tool_forget(ac_session *s, void *ud)
{
    store_writer *w = W(s);
    for (size_t i = 0; i < w->n_pend; i++)
        if (w->pend_ud[i] == ud) {
            free(w->pend_id[i]);
            free(w->pend_name[i]);
            for (size_t k = i + 1; k < w->n_pend; k++) {
                w->pend_id[k - 1] = w->pend_id[k];
                w->pend_name[k - 1] = w->pend_name[k];
                w->pend_go[k - 1] = w->pend_go[k];
                w->pend_ud[k - 1] = w->pend_ud[k];
            }
            w->n_pend--;
            return;
        }
    store_batch *b = &w->fl; /* its record is being written: it is not run */
    for (size_t i = 0; i < b->n_pend; i++)
        if (b->pend_ud[i] == ud)
            b->pend_go[i] = NULL;
}

void ac_sw_free(store_writer *w)
{
    if (!w)
        return;
    /* who waits for a commit that will not come is told now (the session is gone) */
    dur_run(w->loop, w->dur, &w->n_dur);
    dur_run(w->loop, w->fl.dur, &w->fl.n_dur);
    rows_free(w);
    pend_drop(w);
    batch_free(&w->fl);
    free(w->dur);
    free(w->pend_id);
    free(w->pend_name);
    free(w->pend_go);
    free(w->pend_ud);
    free(w->rows);
    free(w->fin);
    free(w->fin_ok);
    free(w->steps);
    free(w->title);
    free(w->spec_hash);
    free(w->agent);
    free(w->error);
    free(w->snap);
    free(w->create_params);
    free(w->id);
    free(w);
}

/* w outlives its session s, freed: the group commits its last commit (queued) and frees it,
 * or, muted, frees it once its commit in flight is done. 0: out of memory. */
static int sw_closing(store_writer *w, ac_session *s)
{
    if (!w->id && !(w->id = strdup(s->id)))
        return 0;
    struct ac_store_group *g = w->st->group;
    for (size_t i = 0; w->fl.on && g && i < g->k_fl; i++)
        if (g->fl_ws[i] == w) /* its commit in flight names the session: its own copy now */
            g->fl_c[i].id = w->id;
    w->status = ac_session_status_name(ac_session_status(s));
    w->at_rest = ac_session_settled(s);
    free(w->steps);
    w->steps = NULL;
    w->steps_len = 0;
    w->s = NULL;
    w->closing = 1;
    return 1;
}

/* Called before the session's states are left for good (session.c), so the last commit
 * records where it stands. A session opened with AC_STORE_GROUPED, or one with a commit in
 * flight (the group's, on this loop), whose store's group is pending on this loop or none
 * joins the group (its store_writer outlives the session until then): nothing waits. Else it
 * commits alone, now. Either way the lease is given up by that commit. */
static void h_close(ac_session *s)
{
    store_writer *w = W(s);
    ac_loop *loop = s->e->loop;
    int flying = w->fl.on; /* the group's commit in flight names it: freed when it is done */
    pend_drop(w);          /* calls that never ran: not started */
    for (size_t i = 0; flying && i < w->fl.n_pend; i++)
        w->fl.pend_go[i] = NULL;
    if (w->renew && loop)
        ac_loop_cancel_timer(loop, w->renew);
    w->renew = 0;
    if (w->restart.queued && loop)
        ac_loop_undefer(loop, &w->restart);
    if (w->failed.queued && loop)
        ac_loop_undefer(loop, &w->failed);
    s->hooks_ud = NULL;
    if (w->muted) {
        ac_store_group_remove(w);
        if (w->timer && loop)
            ac_loop_cancel_timer(loop, w->timer);
        w->timer = 0;
        if (flying && sw_closing(w, s))
            return; /* freed when the group's commit is done */
        if (flying)
            ac_store_group_wait(w->st);
        ac_sw_free(w);
        return;
    }
    struct ac_store_group *g = w->st->group;
    if ((w->grouped || flying) && !w->error && loop && (!g || !g->n || g->loop == loop) &&
        !w->timer) {
        ac_store_group_add(w);
        if (w->queued && sw_closing(w, s))
            return; /* committed and freed by the group */
    }
    ac_sw_commit_with(w, 1); /* after the group in flight; the lease is given up */
    ac_sw_free(w);
}

const ac_session_hooks AC_SW_HOOKS = {h_event,        h_step,    h_steps_done,
                                      h_flush,        h_settled, h_error,
                                      h_tool_started, h_close,   h_tool_forget};

store_writer *ac_sw_new(ac_store *st)
{
    store_writer *w = calloc(1, sizeof *w);
    if (w) {
        w->st = st;
        w->muted = 1;
        w->attempt = 1; /* a session's creator's; a stored one's is its lease's (store_load.c) */
    }
    return w;
}
