/*
 * store_workers.c - the workers of a store (store.h): the processes that run its sessions,
 * their rows and heartbeats, and the claim of the sessions a gone worker left mid-turn.
 * What the SQL does is each backend's (store_int.h); here the calls are checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs/metrics_int.h"
#include "store_int.h"

int64_t ac_store_lease_ms(const ac_store *st)
{
    return st ? st->lease_ms : 0;
}

static int no_store(ac_error *err, const char *what)
{
    ac_store_err(err, AC_EINVAL, "%s needs a store", what);
    return AC_EINVAL;
}

int ac_store_worker_join(ac_store *st, const char *listen, ac_error *err)
{
    if (!st)
        return no_store(err, "ac_store_worker_join");
    return st->ops->worker_join(st, listen ? listen : "", err);
}

int ac_store_worker_beat(ac_store *st, ac_error *err)
{
    return st ? st->ops->worker_beat(st, err) : no_store(err, "ac_store_worker_beat");
}

int ac_store_worker_leave(ac_store *st, ac_error *err)
{
    return st ? st->ops->worker_leave(st, err) : no_store(err, "ac_store_worker_leave");
}

int ac_store_workers(ac_store *st, ac_store_worker_fn fn, void *ud, ac_error *err)
{
    if (!st || !fn)
        return no_store(err, "ac_store_workers (and a function)");
    return st->ops->workers(st, fn, ud, err);
}

int ac_store_claim(ac_store *st, size_t max, int mine, ac_store_list_fn fn, void *ud, ac_error *err)
{
    if (!st || !fn)
        return no_store(err, "ac_store_claim (and a function)");
    if (!max)
        return AC_OK;
    ac_store_group_sync(st, NULL); /* what a freed session left is written before */
    return st->ops->claim(st, max, mine, st->lease_ms, fn, ud, err);
}

int ac_store_release(ac_store *st, const char *id, int64_t attempt, ac_error *err)
{
    if (!st || !id)
        return no_store(err, "ac_store_release (and an id)");
    return st->ops->lease_release(st, id, st->holder, attempt > 0 ? attempt : 0, err);
}

void ac_store_tend(ac_store *st, ac_loop *loop)
{
    if (st && loop && st->ops->tend)
        st->ops->tend(st, loop);
}

static const char *const BLOCKING_KINDS[] = {"statement", "commit", "connect"};

void ac_store_serve_on(ac_store *st, ac_loop *loop, struct ac_metrics *m)
{
    if (!st || strcmp(st->ops->name, "postgresql") != 0)
        return; /* a local file: its calls are the loop's own work */
    st->serving = loop;
    st->metrics = loop ? m : NULL;
    const char *log = getenv("AGENTC_STORE_BLOCKING_LOG");
    st->blocking_log = loop && log && !strcmp(log, "1");
    for (size_t i = 0; i < sizeof BLOCKING_KINDS / sizeof *BLOCKING_KINDS; i++)
        ac_metrics_add(st->metrics, AC_M_STORE_BLOCKING, &BLOCKING_KINDS[i], 0); /* shown: 0 */
}

void ac_store_blocked(ac_store *st, const char *kind, const char *sql, const char *what)
{
    if (!st || !st->serving)
        return;
    const char *labels[] = {kind};
    ac_metrics_add(st->metrics, AC_M_STORE_BLOCKING, labels, 1);
    if (!st->blocking_log)
        return;
    /* the SQL's first words (its parameters are never in its text: $1, $2, ...) */
    char words[72];
    size_t n = 0;
    int spaces = 0;
    for (const char *p = sql ? sql : ""; *p && n < sizeof words - 1 && spaces < 7; p++) {
        int blank = *p == ' ' || *p == '\n' || *p == '\t';
        if (blank && n && words[n - 1] == ' ')
            continue;
        spaces += blank;
        words[n++] = blank ? ' ' : *p;
    }
    while (n && words[n - 1] == ' ')
        n--;
    words[n] = 0;
    fprintf(stderr, "agentc serve: the loop waited for the store (%s, %s): %s\n", kind,
            what ? what : "", words);
}

int ac_store_fenced(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    ac_store_err(err, AC_STORE_EBUSY,
                 "store '%s': session '%s' was taken over: a later taking of its lease (under "
                 "holder %s or another) holds it, so this writer's (attempt %lld) writes nothing",
                 st->path, c->id, c->holder, (long long)c->attempt);
    return AC_STORE_EBUSY;
}
