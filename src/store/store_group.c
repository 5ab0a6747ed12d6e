/*
 * store_group.c - the group commit: what the sessions of a store buffered in
 * one loop turn is committed in one transaction at the end of that turn (a 0 ms
 * timer of the store's group): their events, the started records of the tool
 * calls about to run (their processes wait for that commit), a snapshot taken
 * when a session settled, and with AC_STORE_GROUPED the creation of a session's
 * row, the last commit of a session freed while the group was pending and the
 * first of one loaded at rest; the last commit of any session freed while a group
 * commit of it is in flight is the next group's. A session commits alone, at once,
 * only without a loop, when it is freed with no group pending, and when loaded at
 * rest without AC_STORE_GROUPED.
 *
 * The group's commit is started (ops->commit_start) and done later, on the loop:
 * what it carries was taken out of its writers (their batches), which buffer what
 * follows for the next group, started when this one is done. Only then are the
 * observer told and the tool calls it recorded run. One group is in flight at a
 * time per store; what must come after it (a commit made alone, a read, closing)
 * waits for it (ac_store_group_wait).
 */
#include <stdlib.h>
#include <string.h>

#include "store_ahead.h"
#include "store_writer.h"
#include "util/grow.h"

void ac_store_group_remove(store_writer *w)
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

void ac_store_group_wait(ac_store *st)
{
    struct ac_store_group *g = st ? st->group : NULL;
    if (g && g->busy && st->ops->commit_wait)
        st->ops->commit_wait(st);
}

/* Commits every waiting session now (the store closes, or a session freed in the group is
 * opened again). */
static void group_fired(void *ud);
static void group_flush(ac_store *st)
{
    ac_store_group_wait(st);
    struct ac_store_group *g = st->group;
    if (!g || !g->n)
        return;
    if (g->timer)
        ac_loop_cancel_timer(g->loop, g->timer);
    g->timer = 0;
    group_fired(st);
    ac_store_group_wait(st);
}

/* id NULL: any session freed with its last commit in the group. */
void ac_store_group_sync(ac_store *st, const char *id)
{
    if (id && ac_store_ahead_has(st, id)) /* its rows were read: nothing of it is in flight */
        return;
    ac_store_group_wait(st); /* what is read next sees what is in flight */
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
        for (uint32_t i = 0; st->group->row_text && i < st->group->n_text; i++)
            free(st->group->row_text[i].text);
        free(st->group->row_text);
        struct ac_store_group *g = st->group;
        free(g->fl_ws), free(g->fl_c), free(g->fl_evs), free(g->fl_rcs), free(g->fl_errs);
        free(st->group->v);
        free(st->group);
        st->group = NULL;
    }
}

static void timer_fired(void *ud)
{
    store_writer *w = ud;
    w->timer = 0;
    ac_sw_commit(w);
}

/* The group's commit is done: each writer hears its result, then the tool calls it recorded
 * run and the writers of freed sessions go; what was buffered meanwhile is the next group. */
static void group_done(void *ud)
{
    ac_store *st = ud;
    struct ac_store_group *g = st->group;
    store_writer **ws = g->fl_ws;
    for (size_t i = 0; i < g->k_fl; i++) {
        ac_sw_finish(ws[i], &g->fl_c[i], g->fl_rcs[i], &g->fl_errs[i]);
        if (g->fl_rcs[i] != AC_OK)
            ac_sw_tell_failed(ws[i]);
        free(g->fl_evs[i]);
    }
    for (size_t i = 0; i < g->n_fl; i++) {
        if (ws[i]->closing && !ws[i]->queued) /* else its last commit is the next group's */
            ac_sw_free(ws[i]);
        else
            ac_sw_pend_run(ws[i], !ws[i]->error);
    }
    g->n_fl = g->k_fl = 0; /* the arrays stay for the next group */
    g->busy = 0;
    if (g->n && !g->timer)
        g->timer = ac_loop_timer(g->loop, 0, group_fired, st);
}

/* Room for n members in the group's in-flight arrays, kept from one group commit to the next
 * (a group's errors alone are 780 bytes a member, zeroed each time when they were calloc'd):
 * 0, or -1 when out of memory. */
static int fl_reserve(struct ac_store_group *g, size_t n)
{
    size_t c1 = g->fl_cap, c2 = c1, c3 = c1, c4 = c1, c5 = c1;
    if (ac_grow((void **)&g->fl_ws, &c1, n, sizeof *g->fl_ws) ||
        ac_grow((void **)&g->fl_c, &c2, n, sizeof *g->fl_c) ||
        ac_grow((void **)&g->fl_evs, &c3, n, sizeof *g->fl_evs) ||
        ac_grow((void **)&g->fl_rcs, &c4, n, sizeof *g->fl_rcs) ||
        ac_grow((void **)&g->fl_errs, &c5, n, sizeof *g->fl_errs))
        return -1;
    g->fl_cap = c5;
    return 0;
}

static void group_fired(void *ud)
{
    ac_store *st = ud;
    struct ac_store_group *g = st->group;
    g->timer = 0;
    if (g->busy)
        return; /* started again when the one in flight is done */
    size_t n = g->n;
    if (fl_reserve(g, n)) { /* commit them one by one */
        while (g->n)
            ac_sw_commit(g->v[0]);
        return;
    }
    store_writer **ws = g->fl_ws;
    ac_store_commit *c = g->fl_c;
    ac_store_event **evs = g->fl_evs;
    int *rcs = g->fl_rcs;
    ac_error *errs = g->fl_errs;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        store_writer *w = g->v[i];
        evs[i] = NULL, rcs[i] = AC_OK;
        errs[i].code = 0, errs[i].text[0] = '\0';
        w->queued = 0;
        ws[i] = w;
        if (ac_sw_prepare(w, &c[k], &evs[k]) == 0) { /* the ones that commit first, in order */
            ws[i] = ws[k];
            ws[k++] = w;
        }
    }
    g->n = 0;
    g->busy = 1;
    g->n_fl = n, g->k_fl = k;
    if (k)
        st->ops->commit_start(st, g->loop, c, k, rcs, errs, &g->fl_rc, group_done, st);
    else
        group_done(st);
}

/* w has something to commit at the end of this loop turn. */
void ac_store_group_add(store_writer *w)
{
    ac_loop *loop = ac_engine_loop(ac_session_engine(w->s));
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
        store_writer **v = realloc(g->v, cap * sizeof *v);
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
