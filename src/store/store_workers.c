/*
 * store_workers.c - the workers of a store (store.h): the processes that run its sessions,
 * their rows and heartbeats, and the claim of the sessions a gone worker left mid-turn.
 * What the SQL does is each backend's (store_int.h); here the calls are checked.
 */
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

int ac_store_fenced(ac_store *st, const ac_store_commit *c, ac_error *err)
{
    ac_store_err(err, AC_STORE_EBUSY,
                 "store '%s': session '%s' was taken over: a later taking of its lease (under "
                 "holder %s or another) holds it, so this writer's (attempt %lld) writes nothing",
                 st->path, c->id, c->holder, (long long)c->attempt);
    return AC_STORE_EBUSY;
}
