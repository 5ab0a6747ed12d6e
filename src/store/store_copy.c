/*
 * store_copy.c - a store's sessions copied into another store, of either backend
 * (ac_store_copy): each session's row, its events with their steps, notes,
 * snapshots (kept and latest), tool calls, params and agent, written through the
 * destination's own operations, so its journal exports byte for byte as the
 * original's does.
 *
 * A session is written by commits of up to 512 events, each snapshot with the
 * events up to it, under the destination's lease, given up by the last commit. A
 * copy that fails midway is removed again: a session is copied whole or not at
 * all. The times the destination records itself (the row's creation and update,
 * a tool call's start and end) are its own clock's at the copy.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define CHUNK 512

typedef struct snap {
    uint64_t n;
    char *body;
    int kept;
} snap;

typedef struct call {
    char *id, *name;
    int finished, ok;
} call;

typedef struct copy_ctx {
    ac_store *to;
    const char *id;
    ac_error *err;
    int rc;
    ac_store_event evs[CHUNK];
    size_t n;
    snap *snaps;
    size_t n_snaps, cap_snaps, next_snap;
    call *calls;
    size_t n_calls, cap_calls;
    int started; /* the tool calls' started records written */
    ac_store_copy_stats *stats;
} copy_ctx;

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}

static int take_snap(void *ud, uint64_t n, const char *body, int kept)
{
    copy_ctx *c = ud;
    if (grow((void **)&c->snaps, &c->cap_snaps, c->n_snaps, sizeof *c->snaps) ||
        !(c->snaps[c->n_snaps].body = strdup(body))) {
        ac_store_err(c->err, c->rc = AC_ENOMEM, "out of memory");
        return 1;
    }
    c->snaps[c->n_snaps].n = n;
    c->snaps[c->n_snaps++].kept = kept;
    return 0;
}

static int take_call(void *ud, const char *id, const char *name, int64_t started, int64_t finished,
                     int ok)
{
    (void)started;
    copy_ctx *c = ud;
    call *k = NULL;
    if (!grow((void **)&c->calls, &c->cap_calls, c->n_calls, sizeof *c->calls)) {
        k = &c->calls[c->n_calls];
        *k = (call){strdup(id), strdup(name), finished > 0, ok};
    }
    if (!k || !k->id || !k->name) {
        if (k)
            free(k->id), free(k->name);
        ac_store_err(c->err, c->rc = AC_ENOMEM, "out of memory");
        return 1;
    }
    c->n_calls++;
    return 0;
}

static void chunk_free(copy_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free((char *)c->evs[i].ev);
        free((char *)c->evs[i].data);
        free((char *)c->evs[i].steps);
    }
    c->n = 0;
}

/* The events gathered, with the snapshot s (NULL: none) and, first, the tool calls' started
 * records; the lease renewed. */
static int flush(copy_ctx *c, const snap *s, const ac_store_session_info *info)
{
    ac_store_commit m = {0};
    m.id = c->id;
    m.holder = c->to->holder;
    m.attempt = 1; /* the copy created the row: its creator's attempt */
    m.lease_ms = c->to->lease_ms;
    m.evs = c->evs;
    m.n_evs = c->n;
    m.status = info->status;
    m.at_rest = info->at_rest;
    const char **ids = NULL, **names = NULL;
    if (!c->started && c->n_calls) {
        ids = calloc(c->n_calls, sizeof *ids);
        names = calloc(c->n_calls, sizeof *names);
        if (!ids || !names) {
            free(ids), free(names);
            ac_store_err(c->err, c->rc = AC_ENOMEM, "out of memory");
            return c->rc;
        }
        for (size_t i = 0; i < c->n_calls; i++)
            ids[i] = c->calls[i].id, names[i] = c->calls[i].name;
        m.started = ids, m.started_names = names, m.n_started = c->n_calls;
    }
    if (s) {
        m.snapshot = s->body;
        m.snapshot_n = s->n;
        m.snapshot_keep = s->kept;
    }
    c->rc = c->to->ops->commit(c->to, &m, c->err);
    free(ids), free(names);
    if (c->rc == AC_OK) {
        c->started = 1;
        c->stats->events += c->n;
        c->stats->snapshots += s != NULL;
    }
    chunk_free(c);
    return c->rc;
}

typedef struct ev_walk {
    copy_ctx *c;
    const ac_store_session_info *info;
} ev_walk;

static int take_event(void *ud, const ac_store_event *e)
{
    ev_walk *w = ud;
    copy_ctx *c = w->c;
    /* snapshots taken before this event go with the events up to theirs */
    while (c->next_snap < c->n_snaps && c->snaps[c->next_snap].n < e->n)
        if (flush(c, &c->snaps[c->next_snap++], w->info) != AC_OK)
            return 1;
    ac_store_event *d = &c->evs[c->n++];
    *d = (ac_store_event){e->n, e->t_ms, strdup(e->ev), e->data ? strdup(e->data) : NULL,
                          e->steps ? strdup(e->steps) : NULL};
    if (!d->ev || (e->data && !d->data) || (e->steps && !d->steps)) {
        ac_store_err(c->err, c->rc = AC_ENOMEM, "out of memory");
        return 1;
    }
    int at = c->next_snap < c->n_snaps && c->snaps[c->next_snap].n == e->n;
    if (at || c->n == CHUNK)
        return flush(c, at ? &c->snaps[c->next_snap++] : NULL, w->info) != AC_OK;
    return 0;
}

static int take_note(void *ud, const ac_store_event *e)
{
    copy_ctx *c = ud;
    c->rc = c->to->ops->note(c->to, c->id, e->n, e->t_ms, e->ev, e->data ? e->data : "{}", c->err);
    c->stats->notes += c->rc == AC_OK;
    return c->rc != AC_OK;
}

/* The last commit: the tool calls that finished, the row as the original's, the lease given
 * up. */
static int last_commit(copy_ctx *c, const ac_store_session_info *info, const char *agent)
{
    ac_store_commit m = {0};
    const char **ids = c->n_calls ? calloc(c->n_calls, sizeof *ids) : NULL;
    int *oks = c->n_calls ? calloc(c->n_calls, sizeof *oks) : NULL;
    if (c->n_calls && (!ids || !oks)) {
        free(ids), free(oks);
        ac_store_err(c->err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    for (size_t i = 0; i < c->n_calls; i++)
        if (c->calls[i].finished) {
            ids[m.n_finished] = c->calls[i].id;
            oks[m.n_finished++] = c->calls[i].ok;
        }
    m.id = c->id;
    m.holder = c->to->holder;
    m.attempt = 1;
    m.lease_ms = c->to->lease_ms;
    m.finished = ids;
    m.finished_ok = oks;
    m.status = info->status;
    m.at_rest = info->at_rest;
    m.title = info->title;
    m.spec_hash = info->spec_hash;
    m.agent = agent;
    m.release = 1;
    int rc = c->to->ops->commit(c->to, &m, c->err);
    free(ids), free(oks);
    return rc;
}

static void ctx_free(copy_ctx *c)
{
    chunk_free(c);
    for (size_t i = 0; i < c->n_snaps; i++)
        free(c->snaps[i].body);
    for (size_t i = 0; i < c->n_calls; i++)
        free(c->calls[i].id), free(c->calls[i].name);
    free(c->snaps);
    free(c->calls);
}

/* Everything of the session but its row, which create made. */
static int copy_body(ac_store *from, copy_ctx *c, const ac_store_session_info *info,
                     const char *agent)
{
    const ac_store_ops *o = from->ops;
    int rc = o->snapshots(from, c->id, take_snap, c, c->err);
    if (rc == AC_OK && c->rc == AC_OK)
        rc = o->tool_calls(from, c->id, take_call, c, c->err);
    ev_walk w = {c, info};
    if (rc == AC_OK && c->rc == AC_OK)
        rc = o->events(from, c->id, 0, take_event, &w, c->err);
    while (rc == AC_OK && c->rc == AC_OK && (c->n || c->next_snap < c->n_snaps || !c->started))
        flush(c, c->next_snap < c->n_snaps ? &c->snaps[c->next_snap++] : NULL, info);
    if (rc == AC_OK && c->rc == AC_OK)
        rc = o->notes(from, c->id, take_note, c, c->err);
    if (rc == AC_OK && c->rc == AC_OK)
        rc = last_commit(c, info, agent);
    if (rc == AC_OK)
        c->stats->tool_calls += c->n_calls;
    return rc != AC_OK ? rc : c->rc;
}

static int copy_one(ac_store *from, ac_store *to, const char *id, ac_store_copy_stats *stats,
                    ac_error *err)
{
    ac_store_session_info info;
    char *params = NULL, *agent = NULL;
    int rc = from->ops->info(from, id, &info, err);
    if (rc == AC_OK)
        rc = from->ops->params(from, id, &params, err);
    if (rc == AC_OK)
        rc = from->ops->agent(from, id, &agent, err);
    if (rc == AC_OK)
        rc = to->ops->create(to, id, info.spec_hash, params, to->holder, to->lease_ms, err);
    if (rc != AC_OK) {
        free(params), free(agent);
        return rc;
    }
    copy_ctx c = {0};
    c.to = to, c.id = id, c.err = err, c.stats = stats;
    rc = copy_body(from, &c, &info, agent);
    ctx_free(&c);
    free(params), free(agent);
    if (rc != AC_OK) { /* whole or not at all */
        ac_error e2;
        to->ops->rm(to, id, to->holder, 0, &e2);
        return rc;
    }
    stats->sessions++;
    return AC_OK;
}

typedef struct ids {
    char **v;
    size_t n, cap;
    int oom;
} ids;

static int take_id(void *ud, const ac_store_session_info *info)
{
    ids *l = ud;
    if (grow((void **)&l->v, &l->cap, l->n, sizeof *l->v) || !(l->v[l->n] = strdup(info->id))) {
        l->oom = 1;
        return 1;
    }
    l->n++;
    return 0;
}

/* Refused before anything is written: an id `to` has, unless force. */
static int check_ids(ac_store *to, const ids *l, int force, ac_error *err)
{
    for (size_t i = 0; i < l->n; i++) {
        ac_store_session_info info;
        ac_error e;
        int rc = to->ops->info(to, l->v[i], &info, &e);
        if (rc == AC_OK && !force) {
            ac_store_err(err, AC_EINVAL,
                         "store '%s' already has a session '%s' (--force replaces it)", to->path,
                         l->v[i]);
            return AC_EINVAL;
        }
        if (rc != AC_OK && rc != AC_STORE_ENOENT) {
            *err = e;
            return rc;
        }
        if (rc == AC_OK && (rc = ac_store_rm(to, l->v[i], err)) != AC_OK)
            return rc;
    }
    return AC_OK;
}

int ac_store_copy(ac_store *from, ac_store *to, const char *id, int force,
                  ac_store_copy_progress_fn fn, void *ud, ac_store_copy_stats *stats, ac_error *err)
{
    ac_store_copy_stats none;
    stats = stats ? stats : &none;
    memset(stats, 0, sizeof *stats);
    if (!from || !to || from == to || !strcmp(from->path, to->path)) {
        ac_store_err(err, AC_EINVAL, "ac_store_copy needs two different stores");
        return AC_EINVAL;
    }
    ac_store_group_sync(from, NULL);
    ac_store_group_sync(to, NULL);
    ids l = {0};
    int rc = AC_OK;
    if (!id)
        rc = from->ops->list(from, take_id, &l, err);
    else if ((rc = from->ops->info(from, id, &(ac_store_session_info){0}, err)) == AC_OK)
        l.oom = !(l.v = malloc(sizeof *l.v)) || !(l.v[l.n++] = strdup(id));
    if (rc == AC_OK && l.oom) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        rc = AC_ENOMEM;
    }
    if (rc == AC_OK)
        rc = check_ids(to, &l, force, err);
    for (size_t i = 0; rc == AC_OK && i < l.n; i++) {
        uint64_t before = stats->events;
        rc = copy_one(from, to, l.v[i], stats, err);
        if (rc == AC_OK && fn)
            fn(ud, l.v[i], stats->events - before);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    return rc;
}
