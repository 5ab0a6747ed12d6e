/*
 * store_session.c - stored sessions: the writer that follows a session through
 * its hooks (group commit, lease renewal, tool-call records, snapshots), and
 * loading one back (latest snapshot + the journal after it) with the recovery
 * rules of store.h for the work a crash interrupted.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/journal.h"
#include "session/session_int.h"
#include "session/tools_internal.h"
#include "store_int.h"
#include "store_json.h"
#include "store_snapshot.h"

#define INTERRUPTED_TOOL "interrupted: the tool may or may not have completed"

typedef struct row {
    uint64_t n;
    int64_t t_ms;
    char *ev, *data, *steps;
} row;

typedef struct writer {
    ac_store *st;
    ac_session *s;
    row *rows;
    size_t n_rows, cap_rows;
    ac_store_event late[4]; /* steps of committed events (at most the open one) */
    size_t n_late;
    int queued;     /* in the store's group, for the end-of-turn commit */
    uint64_t renew; /* the lease's renewal timer */
    /* recovery from inside a loop callback: the effects restart after the posted events */
    ac_loop_task restart;
    uint16_t cfg[AC_FSM_MAX_DEPTH];
    uint8_t depth;
    /* the steps of the open event as JSON text, "[STEP,STEP" (NULL: no event open) */
    char *steps;
    size_t steps_len, steps_cap;
    char **fin;
    int *fin_ok;
    size_t n_fin, cap_fin;
    char *title; /* to commit, once */
    int have_title;
    char *spec_hash; /* a spec change to commit */
    uint64_t timer;
    int muted; /* loading: events are counted, not written */
    char *error;
    int64_t lease_until;
    uint64_t snapshot_seq;
    int force_snapshot;
    uint64_t model_calls;
    int resumed;
    /* tool calls whose started records wait for the next commit, and what then runs them */
    char **pend_id, **pend_name;
    void (**pend_go)(void *, int);
    void **pend_ud;
    size_t n_pend, cap_pend;
    char *snap; /* a snapshot to write with the next commit, at event snap_n */
    uint64_t snap_n;
    /* AC_STORE_GROUPED: the row is created by the first commit (create_params non-NULL
     * until then) and the last commit joins a pending group */
    int grouped;
    char *create_params;
    /* freed, its last commit waiting in the group: what it needs of the session */
    int closing;
    char *id;
    const char *status;
    int at_rest;
} writer;

static int64_t wall_ms(void)
{
    return ac_wall_now_ms();
}

static writer *W(ac_session *s)
{
    writer *w = s->hooks_ud;
    w->s = s;
    return w;
}

static void rows_free(writer *w)
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

static void set_error(writer *w, const char *text)
{
    if (w->error)
        return;
    w->error = strdup(text && *text ? text : "cannot write the store");
}

/* ---- group commit ----
 *
 * What the sessions of a store buffered in one loop turn is committed in one transaction at
 * the end of that turn (a 0 ms timer of the store's group): their events, the started records
 * of the tool calls about to run (their processes wait for that commit: h_tool_started), a
 * snapshot taken when a session settled, and with AC_STORE_GROUPED the creation of a session's
 * row and the last commit of a session freed while the group was pending. A session commits
 * alone, at once, only without a loop, when it is freed with no group pending, and when
 * loaded at rest. */

struct ac_store_group {
    ac_loop *loop;
    uint64_t timer;
    writer **v;
    size_t n, cap;
    /* each transition row's STEP text, made once for all the sessions of one spec */
    const ac_fsm_tables *t;
    char hash[80];
    uint16_t n_text;
    struct step_text {
        char *text;
        uint16_t from, to;
    } * row_text;
};

static void writer_free(writer *w);

static void group_remove(writer *w)
{
    struct ac_store_group *g = w->st->group;
    if (!w->queued || !g)
        return;
    w->queued = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i] == w) {
            g->v[i] = g->v[--g->n];
            break;
        }
    if (!g->n && g->timer) {
        ac_loop_cancel_timer(g->loop, g->timer);
        g->timer = 0;
    }
}

/* The tool calls waiting for their records: dropped (the session is going away). */
static void pend_drop(writer *w)
{
    for (size_t i = 0; i < w->n_pend; i++) {
        free(w->pend_id[i]);
        free(w->pend_name[i]);
    }
    w->n_pend = 0;
}

/* After a commit: the tool calls it recorded run (ok), or fail without running. Their
 * callbacks may record more calls: those wait for the next commit. */
static void pend_run(writer *w, int ok)
{
    size_t n = w->n_pend;
    if (!n)
        return;
    void (**go)(void *, int) = malloc(n * sizeof *go);
    void **ud = malloc(n * sizeof *ud);
    if (!go || !ud) { /* out of memory: each call fails without running, taken one by one */
        free(go), free(ud);
        while (w->n_pend) {
            size_t i = --w->n_pend;
            free(w->pend_id[i]), free(w->pend_name[i]);
            if (w->pend_go[i])
                w->pend_go[i](w->pend_ud[i], 0);
        }
        return;
    }
    memcpy(go, w->pend_go, n * sizeof *go);
    memcpy(ud, w->pend_ud, n * sizeof *ud);
    pend_drop(w);
    for (size_t i = 0; i < n; i++)
        if (go[i])
            go[i](ud[i], ok);
    free(go), free(ud);
}

/* Commits every waiting session now (the store closes, or a session freed in the group is
 * opened again). */
static void group_fired(void *ud);
static void group_flush(ac_store *st)
{
    struct ac_store_group *g = st->group;
    if (!g || !g->n)
        return;
    if (g->timer)
        ac_loop_cancel_timer(g->loop, g->timer);
    g->timer = 0;
    group_fired(st);
}

/* id NULL: any session freed with its last commit in the group. */
void ac_store_group_sync(ac_store *st, const char *id)
{
    struct ac_store_group *g = st ? st->group : NULL;
    for (size_t i = 0; g && i < g->n; i++)
        if (g->v[i]->closing && (!id || !strcmp(g->v[i]->id, id))) {
            group_flush(st);
            return;
        }
}

void ac_store_group_free(ac_store *st)
{
    group_flush(st); /* the last commits of sessions freed in the group */
    if (st->group) {
        for (uint16_t i = 0; st->group->row_text && i < st->group->n_text; i++)
            free(st->group->row_text[i].text);
        free(st->group->row_text);
        free(st->group->v);
        free(st->group);
        st->group = NULL;
    }
}

/* Fills c (and *evs, to free) with what w buffered: 0, or -1 when there is nothing it may
 * commit (failed, loading). */
static int prepare(writer *w, ac_store_commit *c, ac_store_event **evs)
{
    ac_session *s = w->s;
    *evs = NULL;
    if (w->error || w->muted)
        return -1;
    if (w->n_rows && !(*evs = calloc(w->n_rows, sizeof **evs))) {
        set_error(w, "cannot write the store: out of memory");
        return -1;
    }
    for (size_t i = 0; i < w->n_rows; i++)
        (*evs)[i] = (ac_store_event){w->rows[i].n, w->rows[i].t_ms, w->rows[i].ev, w->rows[i].data,
                                     w->rows[i].steps};
    int64_t now = wall_ms();
    memset(c, 0, sizeof *c);
    c->id = w->closing ? w->id : s->id;
    c->holder = w->st->holder;
    c->now_ms = now;
    c->lease_until = now + w->st->lease_ms;
    c->evs = *evs;
    c->n_evs = w->n_rows;
    c->late = w->late;
    c->n_late = w->n_late;
    c->finished = (const char *const *)w->fin;
    c->finished_ok = w->fin_ok;
    c->n_finished = w->n_fin;
    c->status = w->closing ? w->status : ac_session_status_name(ac_session_status(s));
    c->at_rest = w->closing ? w->at_rest : ac_session_settled(s);
    c->title = w->have_title == 1 ? w->title : NULL;
    c->spec_hash = w->spec_hash;
    c->started = (const char *const *)w->pend_id;
    c->started_names = (const char *const *)w->pend_name;
    c->n_started = w->n_pend;
    c->release = w->closing;
    c->create = w->create_params != NULL;
    c->create_params = w->create_params;
    c->create_hash = w->create_params ? w->spec_hash : NULL; /* set with create_params */
    c->snapshot = w->snap;
    c->snapshot_n = w->snap_n;
    return 0;
}

static void finish(writer *w, const ac_store_commit *c, int rc, const ac_error *err)
{
    ac_store *st = w->st;
    if (rc != AC_OK) {
        set_error(w, err->text);
        if (st->observer)
            st->observer(st->observer_ud, w->closing ? NULL : w->s, c->id, NULL, 0, err);
        return;
    }
    if (st->observer) /* durable now: who follows the journal is told */
        st->observer(st->observer_ud, w->closing ? NULL : w->s, c->id, c->evs, c->n_evs, NULL);
    w->lease_until = c->lease_until;
    if (w->have_title == 1)
        w->have_title = 2;
    free(w->spec_hash);
    w->spec_hash = NULL;
    free(w->create_params);
    w->create_params = NULL;
    if (w->snap) {
        w->snapshot_seq = w->snap_n;
        w->force_snapshot = 0;
        free(w->snap);
        w->snap = NULL;
    }
    rows_free(w);
}

/* Commits w alone, now, or, release, giving the lease up. A writer whose session was freed
 * (closing) is freed. */
static void commit_with(writer *w, int release)
{
    ac_loop *loop = w->s ? w->s->e->loop : NULL;
    group_remove(w);
    if (w->timer && loop)
        ac_loop_cancel_timer(loop, w->timer);
    w->timer = 0;
    ac_store_commit c;
    ac_store_event *evs;
    if (prepare(w, &c, &evs) == 0) {
        c.release = c.release || release;
        ac_error err;
        int rc = w->st->ops->commit(w->st, &c, &err);
        finish(w, &c, rc, &err);
        free(evs);
    }
    if (w->closing) {
        writer_free(w);
        return;
    }
    pend_run(w, !w->error);
}

static void commit(writer *w)
{
    commit_with(w, 0);
}

static void timer_fired(void *ud)
{
    writer *w = ud;
    w->timer = 0;
    commit(w);
}

static void group_fired(void *ud)
{
    ac_store *st = ud;
    struct ac_store_group *g = st->group;
    g->timer = 0;
    size_t n = g->n;
    writer **ws = malloc(n * sizeof *ws);
    ac_store_commit *c = calloc(n, sizeof *c);
    ac_store_event **evs = calloc(n, sizeof *evs);
    int *rcs = calloc(n, sizeof *rcs);
    ac_error *errs = calloc(n, sizeof *errs);
    if (!ws || !c || !evs || !rcs || !errs) { /* commit them one by one */
        free(ws), free(c), free(evs), free(rcs), free(errs);
        while (g->n)
            commit(g->v[0]);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        writer *w = g->v[i];
        w->queued = 0;
        ws[i] = w;
        if (prepare(w, &c[k], &evs[k]) == 0) { /* the ones that commit first, in order */
            ws[i] = ws[k];
            ws[k++] = w;
        }
    }
    g->n = 0;
    if (k)
        st->ops->commit_many(st, c, k, rcs, errs);
    for (size_t i = 0; i < k; i++) {
        finish(ws[i], &c[i], rcs[i], &errs[i]);
        free(evs[i]);
    }
    /* then the tool calls recorded run, and the writers of freed sessions go */
    for (size_t i = 0; i < n; i++) {
        if (ws[i]->closing)
            writer_free(ws[i]);
        else
            pend_run(ws[i], !ws[i]->error);
    }
    free(ws), free(c), free(evs), free(rcs), free(errs);
}

/* w has something to commit at the end of this loop turn. */
static void schedule(writer *w)
{
    ac_loop *loop = w->s->e->loop;
    if (!loop || w->queued || w->timer)
        return;
    ac_store *st = w->st;
    if (!st->group && !(st->group = calloc(1, sizeof *st->group))) {
        w->timer = ac_loop_timer(loop, 0, timer_fired, w);
        return;
    }
    struct ac_store_group *g = st->group;
    if (g->n && g->loop != loop) { /* another loop's turn: on its own */
        w->timer = ac_loop_timer(loop, 0, timer_fired, w);
        return;
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        writer **v = realloc(g->v, cap * sizeof *v);
        if (!v) {
            w->timer = ac_loop_timer(loop, 0, timer_fired, w);
            return;
        }
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = w;
    w->queued = 1;
    if (!g->timer) {
        g->loop = loop;
        g->timer = ac_loop_timer(loop, 0, group_fired, st);
    }
}

/* The lease is renewed by every commit; a session that commits nothing for a third of the
 * lease (waiting for input, a long tool) renews it from this timer. */
static void renew_fired(void *ud)
{
    writer *w = ud;
    ac_loop *loop = w->s->e->loop;
    w->renew = 0;
    if (w->error)
        return;
    if (w->lease_until - wall_ms() < w->st->lease_ms * 2 / 3)
        schedule(w);
    w->renew = ac_loop_timer(loop, w->st->lease_ms / 3, renew_fired, w);
}

static void go_live(writer *w)
{
    w->muted = 0;
    if (w->s->e->loop && !w->renew)
        w->renew = ac_loop_timer(w->s->e->loop, w->st->lease_ms / 3, renew_fired, w);
}

/* ---- hooks ---- */

static void h_event(ac_session *s, uint64_t n, int64_t t_ms, const char *ev, json_t *data)
{
    writer *w = W(s);
    if (!strcmp(ev, "llm.completed") ||
        (!strcmp(ev, "llm.failed") && !json_is_true(json_object_get(data, "interrupted"))))
        w->model_calls++;
    if (w->muted || w->error)
        return;
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
        const char *id = json_string_value(json_object_get(data, "id"));
        if (id) {
            if (w->n_fin == w->cap_fin) {
                size_t cap = w->cap_fin ? w->cap_fin * 2 : 8;
                char **f = realloc(w->fin, cap * sizeof *f);
                int *o = f ? realloc(w->fin_ok, cap * sizeof *o) : NULL;
                if (f)
                    w->fin = f;
                if (o)
                    w->fin_ok = o;
                if (!f || !o) {
                    set_error(w, "cannot write the store: out of memory");
                    return;
                }
                w->cap_fin = cap;
            }
            w->fin_ok[w->n_fin] = json_is_true(json_object_get(data, "ok"));
            w->fin[w->n_fin++] = strdup(id);
        }
    }
    if (w->n_rows == w->cap_rows) {
        size_t cap = w->cap_rows ? w->cap_rows * 2 : 64;
        row *r = realloc(w->rows, cap * sizeof *r);
        if (!r) {
            set_error(w, "cannot write the store: out of memory");
            return;
        }
        w->rows = r;
        w->cap_rows = cap;
    }
    row *r = &w->rows[w->n_rows++];
    r->n = n;
    r->t_ms = t_ms;
    r->ev = strdup(ev);
    r->data = data ? ac_store_json_text(data) : NULL;
    r->steps = NULL;
    w->steps_len = 0;
    if (!w->steps && !(w->steps = malloc(w->steps_cap = 256)))
        w->steps_cap = 0;
    if (w->steps)
        w->steps[w->steps_len++] = '[';
    if (!r->ev || (data && !r->data) || !w->steps)
        set_error(w, "cannot write the store: out of memory");
    schedule(w); /* committed at the end of this loop turn */
}

static void steps_add(writer *w, const char *text)
{
    size_t n = strlen(text);
    if (w->steps_len + n + 3 > w->steps_cap) {
        size_t cap = (w->steps_len + n + 3) * 2;
        char *b = realloc(w->steps, cap);
        if (!b) {
            set_error(w, "cannot write the store: out of memory");
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

static void h_step(ac_session *s, const ac_trace_rec *r)
{
    writer *w = W(s);
    if (w->muted || !w->steps_len || w->error)
        return;
    const ac_fsm_tables *t = s->e->t;
    struct step_text *c = NULL;
    if (r->row != AC_FSM_NONE && r->row < t->n_transitions) {
        struct ac_store_group *g = w->st->group;
        if (!g && (g = calloc(1, sizeof *g)))
            w->st->group = g;
        if (g && !g->t && (g->row_text = calloc(t->n_transitions, sizeof *g->row_text))) {
            g->t = t;
            g->n_text = t->n_transitions;
            snprintf(g->hash, sizeof g->hash, "%s", t->hash ? t->hash : "");
        }
        /* the tables of another spec: made each time */
        if (g && g->t == t && g->n_text == t->n_transitions &&
            !strcmp(g->hash, t->hash ? t->hash : ""))
            c = &g->row_text[r->row];
        if (c && c->text && c->from == r->from && c->to == r->to) {
            steps_add(w, c->text);
            return;
        }
    }
    json_t *step = ac_journal_step_json(t, r);
    char *text = step ? json_dumps(step, JSON_COMPACT) : NULL;
    json_decref(step);
    if (!text)
        return; /* not a step (ignored, unhandled) */
    steps_add(w, text);
    if (c) { /* the same row and states give the same STEP: kept */
        free(c->text);
        c->text = text;
        c->from = r->from;
        c->to = r->to;
    } else {
        free(text);
    }
}

/* The steps of the open event as a JSON array (malloc'd), and no event open. */
static char *steps_close(writer *w)
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
    writer *w = W(s);
    if (w->muted || !w->steps_len)
        return;
    if (w->n_rows && w->rows[w->n_rows - 1].n == n) {
        w->rows[w->n_rows - 1].steps = steps_close(w);
    } else if (w->n_late < sizeof w->late / sizeof w->late[0]) { /* committed already */
        w->late[w->n_late].n = n;
        w->late[w->n_late++].steps = steps_close(w);
        schedule(w);
    } else {
        w->steps_len = 0;
    }
    if (!s->e->loop)
        commit(w); /* no loop turns: one commit per event */
}

/* An effect starts or stops: what it does follows the end of this loop turn, where the
 * sessions' commits are grouped (a tool call commits alone, before it runs: h_tool_started). */
static void h_flush(ac_session *s)
{
    writer *w = W(s);
    if (w->n_rows || w->n_late)
        schedule(w);
}

/* The session settled: a snapshot, when one is due, is taken now and written with the
 * loop turn's commit (the events up to it in the same transaction). */
static void snapshot_take(writer *w)
{
    ac_session *s = w->s;
    char *body = ac_store_snapshot_save(s, w->model_calls);
    if (!body)
        return; /* a snapshot is an optimisation: the journal has everything */
    free(w->snap);
    w->snap = body;
    w->snap_n = s->seq;
}

static void h_settled(ac_session *s)
{
    writer *w = W(s);
    if (w->muted)
        return;
    if (w->force_snapshot || s->seq - w->snapshot_seq >= w->st->snapshot_every)
        snapshot_take(w);
    if (s->e->loop)
        schedule(w); /* committed at the end of this loop turn */
    else
        commit(w);
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
    writer *w = W(s);
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
        commit(w); /* the caller runs it (go NULL: not called) */
        return w->error ? -1 : 0;
    }
    schedule(w);
    return 1;
}

/* The call was stopped while its record waited: it is not recorded. */
static void h_tool_forget(ac_session *s, void *ud)
{
    writer *w = W(s);
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
}

static void writer_free(writer *w)
{
    rows_free(w);
    pend_drop(w);
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
    free(w->error);
    free(w->snap);
    free(w->create_params);
    free(w->id);
    free(w);
}

/* Called before the session's states are left for good (session.c), so the last commit
 * records where it stands. A session opened with AC_STORE_GROUPED whose store has a group
 * commit pending on this loop joins it (its writer outlives the session until then);
 * otherwise it commits alone, now. Either way the lease is given up by that commit. */
static void h_close(ac_session *s)
{
    writer *w = W(s);
    ac_loop *loop = s->e->loop;
    pend_drop(w); /* calls that never ran: not started */
    if (w->renew && loop)
        ac_loop_cancel_timer(loop, w->renew);
    w->renew = 0;
    if (w->restart.queued && loop)
        ac_loop_undefer(loop, &w->restart);
    s->hooks_ud = NULL;
    if (w->muted) {
        group_remove(w);
        if (w->timer && loop)
            ac_loop_cancel_timer(loop, w->timer);
        writer_free(w);
        return;
    }
    struct ac_store_group *g = w->st->group;
    if (w->grouped && !w->error && loop && (!g || !g->n || g->loop == loop) && !w->timer) {
        schedule(w);
        if (w->queued && (w->id = strdup(s->id))) {
            w->status = ac_session_status_name(ac_session_status(s));
            w->at_rest = ac_session_settled(s);
            free(w->steps);
            w->steps = NULL;
            w->steps_len = 0;
            w->s = NULL;
            w->closing = 1; /* committed and freed by the group */
            return;
        }
    }
    commit_with(w, 1); /* and the lease is given up */
    writer_free(w);
}

static const ac_session_hooks HOOKS = {h_event,        h_step,    h_steps_done,
                                       h_flush,        h_settled, h_error,
                                       h_tool_started, h_close,   h_tool_forget};

/* ---- loading ---- */

typedef struct load_ctx {
    ac_session *s;
    ac_error *err;
    const char *path;
} load_ctx;

static int load_event(void *ud, const ac_store_event *ev)
{
    load_ctx *c = ud;
    ac_session *s = c->s;
    if (ev->n != s->seq + 1) {
        ac_store_err(c->err, AC_EIO,
                     "store '%s': session '%s' has event %llu where %llu was expected (the "
                     "store is damaged)",
                     c->path, s->id, (unsigned long long)ev->n, (unsigned long long)s->seq + 1);
        return AC_EIO;
    }
    json_t *data = NULL;
    if (ev->data) {
        json_error_t je;
        data = json_loads(ev->data, JSON_DECODE_ANY, &je);
        if (!data) {
            ac_store_err(c->err, AC_EIO, "store '%s': event %llu of '%s' does not parse: %s",
                         c->path, (unsigned long long)ev->n, s->id, je.text);
            return AC_EIO;
        }
    }
    int rc = ac_session_post(s, ev->ev, data, ev->t_ms);
    if (rc == AC_EUNKNOWN_EVENT || s->seq != ev->n) {
        ac_store_err(c->err, AC_STORE_ESPEC,
                     "store '%s': event %llu of '%s' (%s) is not an event of this spec", c->path,
                     (unsigned long long)ev->n, s->id, ev->ev);
        return AC_STORE_ESPEC;
    }
    return 0;
}

/* Rebuilds the session from its snapshot and the journal after it, effects off and
 * nothing written (w->muted). */
static ac_session *rebuild_quiet(ac_store *st, ac_engine *e, const char *id, writer *w,
                                 ac_error *err);

/* The engine's output hears nothing of the rebuild (it was heard when it happened): the
 * rebuild runs on the loop thread without turning the loop, so no other session of the
 * engine runs meanwhile. */
static ac_session *rebuild(ac_store *st, ac_engine *e, const char *id, writer *w, ac_error *err)
{
    int had = e->has_output;
    e->has_output = 0;
    ac_session *s = rebuild_quiet(st, e, id, w, err);
    e->has_output = had;
    return s;
}

static ac_session *rebuild_quiet(ac_store *st, ac_engine *e, const char *id, writer *w,
                                 ac_error *err)
{
    char text[512] = "";
    ac_session *s = ac_session_new_hooked(e, id, &HOOKS, w, 1, text, sizeof text);
    if (!s) {
        ac_store_err(err, AC_ESPEC, "cannot rebuild session '%s': %s", id, text);
        writer_free(w);
        return NULL;
    }
    w->s = s;
    uint64_t n = 0;
    char *body = NULL;
    int rc = st->ops->snapshot_get(st, id, &n, &body, err);
    if (rc == AC_OK && body) {
        rc = ac_store_snapshot_restore(s, body, &w->model_calls, text, sizeof text);
        if (rc != AC_OK)
            ac_store_err(err, rc, "store '%s': the snapshot of '%s' cannot be used: %s", st->path,
                         id, text);
        else
            s->seq = n;
        w->snapshot_seq = n;
    }
    free(body);
    if (rc == AC_OK) {
        load_ctx c = {s, err, st->path};
        rc = st->ops->events(st, id, s->seq, load_event, &c, err);
    }
    if (rc != AC_OK) {
        ac_session_free(s);
        return NULL;
    }
    return s;
}

typedef struct started_ctx {
    ac_session *s;
    json_t *started; /* call id -> true */
} started_ctx;

static int on_call(void *ud, const char *call_id, const char *name, int64_t started_ms,
                   int64_t finished_ms, int ok)
{
    (void)name, (void)started_ms, (void)finished_ms, (void)ok;
    started_ctx *c = ud;
    json_object_set_new(c->started, call_id, json_true());
    return 0;
}

static int same_config(const ac_fsm *f, const uint16_t *cfg, uint8_t depth, uint8_t level)
{
    if (f->depth <= level || depth <= level)
        return 0;
    for (uint8_t i = 0; i <= level; i++)
        if (f->state[i] != cfg[i])
            return 0;
    return 1;
}

/* Effects of the levels still in the state the session was rebuilt in never started: start
 * them now (a level entered since started its own). */
static void restart_effects(void *ud)
{
    writer *w = ud;
    ac_session *s = w->s;
    const ac_fsm_tables *t = s->e->t;
    ac_event ev = {0, wall_ms(), NULL};
    for (uint8_t i = 0; i < w->depth && same_config(&s->fsm, w->cfg, w->depth, i); i++) {
        const uint16_t *l = t->lists + t->states[w->cfg[i]].effects;
        for (uint16_t k = 0; k < l[0]; k++)
            s->fsm.effect(s, l[1 + k], 1, &ev);
    }
}

/* The work a crash interrupted, restarted by the rules of store.h. */
static int recover(ac_store *st, ac_session *s, ac_error *err)
{
    ac_engine *e = s->e;
    const ac_fsm_tables *t = e->t;
    uint16_t cfg[AC_FSM_MAX_DEPTH];
    uint8_t depth = s->fsm.depth;
    memcpy(cfg, s->fsm.state, sizeof cfg);
    int llm = 0, tools = 0;
    for (uint8_t i = 0; i < depth; i++) {
        const uint16_t *l = t->lists + t->states[cfg[i]].effects;
        for (uint16_t k = 0; k < l[0]; k++) {
            const char *name = t->effect_names[t->effect_uses[l[1 + k]].effect];
            llm |= !strcmp(name, "llm_request");
            tools |= !strcmp(name, "run_tools");
        }
    }
    if (tools) {
        started_ctx c = {s, json_object()};
        int rc = c.started ? st->ops->tool_calls(st, s->id, on_call, &c, err) : AC_ENOMEM;
        if (rc != AC_OK) {
            json_decref(c.started);
            return rc;
        }
        size_t n = ac_conv_iter_call_count(s->conv);
        json_t *ids = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *cid = ac_conv_iter_call(s->conv, i);
            const ac_tool_call *call = cid ? ac_conv_tool_call(s->conv, cid) : NULL;
            if (!call || call->state != AC_CALL_NONE || !json_object_get(c.started, cid))
                continue; /* answered, or never started: it runs (again) as usual */
            const ac_tool *tool = ac_tools_find(e, call->name);
            if (tool && tool->idempotent)
                continue;
            json_array_append_new(ids, json_string(cid));
        }
        json_decref(c.started);
        size_t k;
        json_t *v;
        json_array_foreach(ids, k, v)
        {
            ac_session_post(s, "tool.completed",
                            json_pack("{s:s, s:b, s:s, s:b}", "id", json_string_value(v), "ok", 0,
                                      "content", INTERRUPTED_TOOL, "interrupted", 1),
                            0);
        }
        json_decref(ids);
    }
    if (llm && same_config(&s->fsm, cfg, depth, (uint8_t)(depth - 1))) {
        /* the call in flight: its partial text goes (discard_partial says so), and the
         * spec's retry path issues it again */
        ac_session_post(s, "llm.failed",
                        json_pack("{s:s, s:i, s:b, s:s, s:b}", "class", "interrupted", "status", 0,
                                  "retryable", 1, "message",
                                  "the process stopped during the model call; it is issued "
                                  "again",
                                  "interrupted", 1),
                        0);
    }
    writer *w = s->hooks_ud;
    memcpy(w->cfg, cfg, sizeof cfg);
    w->depth = depth;
    if (e->loop && ac_loop_in_callback(e->loop)) {
        /* the events posted above are applied right after this callback: the effects start
         * after them */
        w->restart.fn = restart_effects;
        w->restart.ud = w;
        ac_loop_defer(e->loop, &w->restart);
    } else {
        restart_effects(w);
    }
    return AC_OK;
}

static writer *writer_new(ac_store *st)
{
    writer *w = calloc(1, sizeof *w);
    if (w) {
        w->st = st;
        w->muted = 1;
    }
    return w;
}

/* A fresh id: time and randomness, readable. */
static void fresh_id(char *buf, size_t cap)
{
    int64_t now = wall_ms();
    time_t secs = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    unsigned r = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&r, sizeof r, 1, f) != 1)
        r = (unsigned)now ^ (unsigned)getpid() * 2654435761u;
    if (f)
        fclose(f);
    snprintf(buf, cap, "%04d%02d%02d-%02d%02d%02d-%06x", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r & 0xffffff);
}

/* A holder "agentc PID@HOST" on this host whose process is gone: its lease is void. */
static const char *dead_holder(const ac_store_session_info *info)
{
    const char *at = strrchr(info->holder, '@');
    const char *sp = strchr(info->holder, ' ');
    char host[128] = "";
    if (!at || !sp || sp > at || gethostname(host, sizeof host - 1) != 0 || strcmp(at + 1, host))
        return NULL;
    char *end;
    long pid = strtol(sp + 1, &end, 10);
    if (end != at || pid <= 0 || pid == (long)getpid())
        return NULL;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
        return NULL;
    return info->holder;
}

ac_session *ac_store_session(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                             ac_error *err)
{
    return ac_store_session_opts(st, e, id, flags, NULL, err);
}

ac_session *ac_store_session_opts(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                                  const ac_session_options *opts, ac_error *err)
{
    if (!st || !e) {
        ac_store_err(err, AC_EINVAL, "ac_store_session needs a store and an engine");
        return NULL;
    }
    char idbuf[64];
    if (!id) {
        fresh_id(idbuf, sizeof idbuf);
        id = idbuf;
    }
    if (!*id || strlen(id) >= sizeof((ac_store_session_info *)0)->id) {
        ac_store_err(err, AC_EINVAL, "a session id is 1 to 255 bytes");
        return NULL;
    }
    ac_store_group_sync(st, id); /* freed in this loop turn: its last commit first */
    ac_store_session_info info;
    int rc = st->ops->info(st, id, &info, err);
    int64_t now = wall_ms();
    if (rc == AC_OK && info.events == 0 && info.snapshot_seq == 0 &&
        !(flags & AC_STORE_MUST_EXIST) &&
        st->ops->lease_acquire(st, id, st->holder, now, now + st->lease_ms, dead_holder(&info),
                               err) == AC_OK) {
        /* created by a process that stopped before its first commit (not even spawn): made
         * anew */
        st->ops->rm(st, id, st->holder, now, NULL);
        rc = AC_STORE_ENOENT;
    }
    if (rc == AC_STORE_ENOENT && !(flags & AC_STORE_MUST_EXIST)) {
        json_t *meta = json_pack("{s:s, s:O?}", "spec", e->t->spec_path ? e->t->spec_path : "",
                                 "params", e->param_overrides);
        char *metas = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
        json_decref(meta);
        int lazy = (flags & AC_STORE_GROUPED) && e->loop && metas;
        rc = lazy ? AC_OK
                  : st->ops->create(st, id, e->t->hash, metas, st->holder, now, now + st->lease_ms,
                                    err);
        if (rc != AC_OK) {
            free(metas);
            return NULL;
        }
        writer *w = writer_new(st);
        if (!w) {
            free(metas);
            ac_store_err(err, AC_ENOMEM, "out of memory");
            if (!lazy)
                st->ops->rm(st, id, st->holder, now, NULL);
            return NULL;
        }
        w->grouped = (flags & AC_STORE_GROUPED) != 0;
        if (lazy && !(w->spec_hash = strdup(e->t->hash))) {
            free(metas);
            writer_free(w);
            ac_store_err(err, AC_ENOMEM, "out of memory");
            return NULL;
        }
        if (lazy) /* the row is created by the loop turn's group commit */
            w->create_params = metas;
        else
            free(metas);
        w->muted = 0;
        w->lease_until = now + st->lease_ms;
        char text[512] = "";
        ac_session *s = ac_session_new_hooked_opts(e, id, &HOOKS, w, opts, text, sizeof text);
        if (!s) {
            writer_free(w);
            ac_store_err(err, strstr(text, "tool_choice") ? AC_ECONFIG : AC_ESPEC, "%s", text);
            if (!lazy)
                st->ops->rm(st, id, st->holder, now, NULL);
            return NULL;
        }
        w->s = s;
        go_live(w);
        return s;
    }
    if (rc != AC_OK)
        return NULL;
    rc = st->ops->lease_acquire(st, id, st->holder, now, now + st->lease_ms, dead_holder(&info),
                                err);
    if (rc != AC_OK)
        return NULL;
    int other_spec = strcmp(info.spec_hash, e->t->hash) != 0;
    if (other_spec && !info.at_rest) {
        st->ops->lease_release(st, id, st->holder, NULL);
        ac_store_err(err, AC_STORE_ESPEC,
                     "session '%s' stopped mid-turn under spec %.12s; this spec is %.12s: "
                     "resume it with its own spec first (a spec may change only at rest)",
                     id, info.spec_hash, e->t->hash);
        return NULL;
    }
    writer *w = writer_new(st);
    if (!w) {
        st->ops->lease_release(st, id, st->holder, NULL);
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    w->have_title = info.title[0] ? 2 : 0;
    w->grouped = (flags & AC_STORE_GROUPED) != 0;
    ac_session *s = rebuild(st, e, id, w, err);
    if (!s) {
        st->ops->lease_release(st, id, st->holder, NULL);
        return NULL;
    }
    s->replaying = 0;
    go_live(w);
    s->turn_base = (size_t)w->model_calls;
    w->lease_until = now + st->lease_ms;
    if (other_spec) { /* at rest: allowed, recorded, and a snapshot marks the point */
        w->spec_hash = strdup(e->t->hash);
        json_t *note = json_pack("{s:s, s:s}", "from", info.spec_hash, "to", e->t->hash);
        char *body = note ? json_dumps(note, JSON_COMPACT) : NULL;
        json_decref(note);
        ac_error nerr;
        if (!body || st->ops->note(st, id, s->seq, now, "spec_changed", body, &nerr) != AC_OK)
            set_error(w, body ? nerr.text : "out of memory");
        free(body);
        w->force_snapshot = 1;
    }
    if (!(flags & AC_STORE_NO_RESUME) && !ac_session_settled(s)) {
        w->resumed = 1;
        rc = recover(st, s, err);
        if (rc != AC_OK) {
            ac_session_free(s);
            return NULL;
        }
    } else if (ac_session_settled(s)) {
        if (w->force_snapshot)
            snapshot_take(w); /* written with this commit */
        commit(w);
    }
    if (w->error) {
        ac_store_err(err, AC_EIO, "%s", w->error);
        ac_session_free(s);
        return NULL;
    }
    return s;
}

bool ac_store_session_resumed(const ac_session *s)
{
    return s && s->hooks == &HOOKS && ((writer *)s->hooks_ud)->resumed;
}

ac_store *ac_session_store(const ac_session *s)
{
    return s && s->hooks == &HOOKS ? ((writer *)s->hooks_ud)->st : NULL;
}

char *ac_store_snapshot(ac_store *st, const char *id, uint64_t *n, ac_error *err)
{
    *n = 0;
    if (!st || !id) {
        ac_store_err(err, AC_EINVAL, "ac_store_snapshot needs a store and an id");
        return NULL;
    }
    ac_store_group_sync(st, id);
    char *body = NULL;
    if (st->ops->snapshot_get(st, id, n, &body, err) != AC_OK)
        return NULL;
    if (err)
        memset(err, 0, sizeof *err);
    return body;
}

ac_session *ac_store_replayer(ac_engine *e, const char *id, const char *snapshot, ac_error *err)
{
    ac_session *s = ac_session_new_replayer(e, id, err);
    if (!s || !snapshot)
        return s;
    char text[512] = "";
    uint64_t calls = 0;
    int had = e->has_output; /* what the snapshot holds was heard when it happened */
    e->has_output = 0;
    int rc = ac_store_snapshot_restore(s, snapshot, &calls, text, sizeof text);
    e->has_output = had;
    if (rc != AC_OK) {
        ac_store_err(err, rc, "the snapshot of '%s' cannot be used: %s", id, text);
        ac_session_free(s);
        return NULL;
    }
    return s;
}

char *ac_store_session_json(ac_store *st, ac_engine *e, const char *id, ac_error *err)
{
    if (!st || !e || !id) {
        ac_store_err(err, AC_EINVAL, "ac_store_session_json needs a store, an engine and an id");
        return NULL;
    }
    ac_store_group_sync(st, id);
    ac_store_session_info info;
    if (st->ops->info(st, id, &info, err) != AC_OK)
        return NULL;
    writer *w = writer_new(st);
    if (!w) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    ac_session *s = rebuild(st, e, id, w, err);
    if (!s)
        return NULL;
    char *out = ac_session_to_json(s);
    ac_session_free(s); /* muted: writes nothing, takes and releases no lease */
    if (!out)
        ac_store_err(err, AC_ENOMEM, "out of memory");
    return out;
}

char *ac_store_session_json_full(ac_store *st, ac_engine *e, const char *id, ac_error *err);
/* Tests: the same, replaying the whole journal (the snapshot ignored). */
char *ac_store_session_json_full(ac_store *st, ac_engine *e, const char *id, ac_error *err)
{
    writer *w = writer_new(st);
    if (!w)
        return NULL;
    char text[512] = "";
    int had = e->has_output;
    e->has_output = 0;
    ac_session *s = ac_session_new_hooked(e, id, &HOOKS, w, 1, text, sizeof text);
    char *out = NULL;
    if (!s) {
        writer_free(w);
        ac_store_err(err, AC_ESPEC, "%s", text);
    } else {
        w->s = s;
        load_ctx c = {s, err, st->path};
        if (st->ops->events(st, id, 0, load_event, &c, err) == AC_OK)
            out = ac_session_to_json(s);
        ac_session_free(s);
    }
    e->has_output = had;
    return out;
}
