/*
 * store_ahead.c - a session's rows read ahead, answering the store's reads of it while it loads
 * (store_ahead.h): the store's operations copied, those reads put in front of them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_ahead.h"
#include "util/grow.h"

typedef struct ahead_event {
    uint64_t n;
    int64_t t_ms;
    char *ev, *data, *steps;
} ahead_event;

typedef struct ahead_call {
    char *call_id, *name;
    int64_t started_ms, finished_ms;
    int ok;
} ahead_call;

struct ac_store_ahead {
    ac_store_ops ops;         /* the store's, with the reads of id answered here (begin) */
    const ac_store_ops *real; /* the store's own, while they are */
    char id[256];
    int64_t attempt;
    int have_row;
    ac_store_session_info info;
    char *agent;
    uint64_t snap_n;
    char *snap_body;
    ahead_event *ev;
    size_t n_ev, cap_ev;
    ahead_call *calls;
    size_t n_calls, cap_calls;
    size_t answered;
};

ac_store_ahead *ac_store_ahead_new(const char *id, int64_t attempt)
{
    ac_store_ahead *a = calloc(1, sizeof *a);
    if (a) {
        snprintf(a->id, sizeof a->id, "%s", id);
        a->attempt = attempt;
    }
    return a;
}

void ac_store_ahead_free(ac_store_ahead *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n_ev; i++) {
        free(a->ev[i].ev);
        free(a->ev[i].data);
        free(a->ev[i].steps);
    }
    for (size_t i = 0; i < a->n_calls; i++) {
        free(a->calls[i].call_id);
        free(a->calls[i].name);
    }
    free(a->ev);
    free(a->calls);
    free(a->agent);
    free(a->snap_body);
    free(a);
}

const char *ac_store_ahead_id(const ac_store_ahead *a)
{
    return a->id;
}

const ac_store_session_info *ac_store_ahead_info(const ac_store_ahead *a)
{
    return &a->info;
}

void ac_store_ahead_set_attempt(ac_store_ahead *a, int64_t attempt)
{
    a->attempt = attempt;
}

size_t ac_store_ahead_answered(const ac_store_ahead *a)
{
    return a->answered;
}

/* A copy of s (NULL stays NULL); *bad set when out of memory. */
static char *dup_or_null(const char *s, int *bad)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *bad = 1;
    return d;
}

int ac_store_ahead_row(ac_store_ahead *a, const ac_store_session_info *info, const char *agent)
{
    int bad = 0;
    a->info = *info;
    a->agent = dup_or_null(agent, &bad);
    a->have_row = !bad;
    return bad ? -1 : 0;
}

int ac_store_ahead_snapshot(ac_store_ahead *a, uint64_t n, const char *body)
{
    int bad = 0;
    a->snap_n = n;
    a->snap_body = dup_or_null(body, &bad);
    return bad ? -1 : 0;
}

int ac_store_ahead_event(ac_store_ahead *a, const ac_store_event *ev)
{
    if (ac_grow((void **)&a->ev, &a->cap_ev, a->n_ev + 1, sizeof *a->ev))
        return -1;
    int bad = 0;
    ahead_event *e = &a->ev[a->n_ev];
    e->n = ev->n;
    e->t_ms = ev->t_ms;
    e->ev = dup_or_null(ev->ev, &bad);
    e->data = dup_or_null(ev->data, &bad);
    e->steps = dup_or_null(ev->steps, &bad);
    a->n_ev++; /* freed with a, even when a copy failed */
    return bad ? -1 : 0;
}

int ac_store_ahead_call(ac_store_ahead *a, const char *call_id, const char *name,
                        int64_t started_ms, int64_t finished_ms, int ok)
{
    if (ac_grow((void **)&a->calls, &a->cap_calls, a->n_calls + 1, sizeof *a->calls))
        return -1;
    int bad = 0;
    ahead_call *c = &a->calls[a->n_calls++];
    c->call_id = dup_or_null(call_id, &bad);
    c->name = dup_or_null(name, &bad);
    c->started_ms = started_ms;
    c->finished_ms = finished_ms;
    c->ok = ok;
    return bad ? -1 : 0;
}

/* ---- the reads answered ---- */

static ac_store_ahead *of(ac_store *st)
{
    return (ac_store_ahead *)(void *)((char *)st->ops - offsetof(ac_store_ahead, ops));
}

/* a, when it answers the reads of id. */
static ac_store_ahead *answers(ac_store *st, const char *id)
{
    ac_store_ahead *a = of(st);
    return id && !strcmp(id, a->id) ? a : NULL;
}

static int a_info(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a)
        return of(st)->real->info(st, id, out, err);
    a->answered++;
    *out = a->info;
    return AC_OK;
}

static int a_agent(ac_store *st, const char *id, char **out, ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a)
        return of(st)->real->agent(st, id, out, err);
    a->answered++;
    *out = a->agent ? strdup(a->agent) : NULL;
    if (a->agent && !*out) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    return AC_OK;
}

static int a_snapshot_get(ac_store *st, const char *id, uint64_t upto, uint64_t *n, char **body,
                          ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a || upto < a->snap_n) /* an older one than the latest */
        return of(st)->real->snapshot_get(st, id, upto, n, body, err);
    a->answered++;
    *n = a->snap_body ? a->snap_n : 0;
    *body = a->snap_body ? strdup(a->snap_body) : NULL;
    if (a->snap_body && !*body) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    return AC_OK;
}

static int a_events(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                    ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a || after + 1 < a->snap_n) /* events before the snapshot's were not read */
        return of(st)->real->events(st, id, after, fn, ud, err);
    a->answered++;
    for (size_t i = 0; i < a->n_ev; i++) {
        const ahead_event *e = &a->ev[i];
        if (e->n <= after)
            continue;
        ac_store_event ev = {e->n, e->t_ms, e->ev, e->data, e->steps};
        int rc = fn(ud, &ev);
        if (rc)
            return rc;
    }
    return AC_OK;
}

static int a_tool_calls(ac_store *st, const char *id, ac_store_call_fn fn, void *ud, ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a)
        return of(st)->real->tool_calls(st, id, fn, ud, err);
    a->answered++;
    for (size_t i = 0; i < a->n_calls; i++) {
        const ahead_call *c = &a->calls[i];
        if (fn(ud, c->call_id, c->name, c->started_ms, c->finished_ms, c->ok))
            break;
    }
    return AC_OK;
}

/* The lease its claim took: held already, under the claim's attempt. */
static int a_lease_acquire(ac_store *st, const char *id, const char *holder, int64_t lease_ms,
                           int64_t *attempt, ac_error *err)
{
    ac_store_ahead *a = answers(st, id);
    if (!a || !a->attempt || strcmp(holder, st->holder) != 0)
        return of(st)->real->lease_acquire(st, id, holder, lease_ms, attempt, err);
    a->answered++;
    if (attempt)
        *attempt = a->attempt;
    return AC_OK;
}

void ac_store_ahead_begin(ac_store *st, ac_store_ahead *a)
{
    a->real = st->ops;
    a->ops = *st->ops;
    a->answered = 0;
    if (a->have_row) {
        a->ops.info = a_info;
        a->ops.agent = a_agent;
        a->ops.snapshot_get = a_snapshot_get;
        a->ops.events = a_events;
        a->ops.tool_calls = a_tool_calls;
        a->ops.lease_acquire = a_lease_acquire;
    }
    st->ops = &a->ops;
}

void ac_store_ahead_end(ac_store *st)
{
    st->ops = of(st)->real;
}

int ac_store_ahead_has(const ac_store *st, const char *id)
{
    return st && st->ops->info == a_info && answers((ac_store *)st, id) != NULL;
}
