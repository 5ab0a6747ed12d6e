/*
 * store_load.c - opening a stored session (store.h): a new one is created, a
 * stored one rebuilt from its latest snapshot and the journal after it (effects
 * off, output silent), its lease taken, and what it was doing when it stopped
 * restarted (store_recover.c); and a stored session's JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session/snapshot.h"
#include "session/store_hooks.h"
#include "store_writer.h"
#include "util/random.h"

/* ---- loading ---- */

typedef struct load_ctx {
    ac_session *s;
    ac_error *err;
    const char *path;
    uint64_t upto; /* the last event applied */
    int stopped;   /* an event after it came */
} load_ctx;

static int load_event(void *ud, const ac_store_event *ev)
{
    load_ctx *c = ud;
    ac_session *s = c->s;
    uint64_t seq = ac_session_seq(s);
    if (ev->n > c->upto) {
        c->stopped = 1;
        return AC_EINVAL;
    }
    if (ev->n != seq + 1) {
        ac_store_err(c->err, AC_EIO,
                     "store '%s': session '%s' has event %llu where %llu was expected (the "
                     "store is damaged)",
                     c->path, ac_session_id(s), (unsigned long long)ev->n,
                     (unsigned long long)seq + 1);
        return AC_EIO;
    }
    json_t *data = NULL;
    if (ev->data) {
        json_error_t je;
        data = json_loads(ev->data, JSON_DECODE_ANY, &je);
        if (!data) {
            ac_store_err(c->err, AC_EIO, "store '%s': event %llu of '%s' does not parse: %s",
                         c->path, (unsigned long long)ev->n, ac_session_id(s), je.text);
            return AC_EIO;
        }
    }
    int rc = ac_session_post(s, ev->ev, data, ev->t_ms);
    if (rc == AC_EUNKNOWN_EVENT || ac_session_seq(s) != ev->n) {
        ac_store_err(c->err, AC_STORE_ESPEC,
                     "store '%s': event %llu of '%s' (%s) is not an event of this spec", c->path,
                     (unsigned long long)ev->n, ac_session_id(s), ev->ev);
        return AC_STORE_ESPEC;
    }
    return 0;
}

/* Rebuilds the session from its latest snapshot taken at event upto or before and the
 * journal after it up to event upto, effects off and nothing written (w->muted). */
static ac_session *rebuild_quiet(ac_store *st, ac_engine *e, const char *id, uint64_t upto,
                                 store_writer *w, ac_error *err);

ac_session *ac_store_rebuild(ac_store *st, ac_engine *e, const char *id, uint64_t upto,
                             store_writer *w, ac_error *err)
{
    int had = ac_engine_set_output(e, 0);
    ac_session *s = rebuild_quiet(st, e, id, upto, w, err);
    ac_engine_set_output(e, had);
    return s;
}

static ac_session *rebuild(ac_store *st, ac_engine *e, const char *id, store_writer *w,
                           ac_error *err)
{
    return ac_store_rebuild(st, e, id, UINT64_MAX, w, err);
}

static ac_session *rebuild_quiet(ac_store *st, ac_engine *e, const char *id, uint64_t upto,
                                 store_writer *w, ac_error *err)
{
    char text[512] = "";
    ac_session *s = ac_session_new_hooked(e, id, &AC_SW_HOOKS, w, 1, text, sizeof text);
    if (!s) {
        ac_store_err(err, AC_ESPEC, "cannot rebuild session '%s': %s", id, text);
        ac_sw_free(w);
        return NULL;
    }
    w->s = s;
    uint64_t n = 0;
    char *body = NULL;
    int rc = st->ops->snapshot_get(st, id, upto, &n, &body, err);
    if (rc == AC_OK && body) {
        rc = ac_session_snapshot_restore(s, body, &w->model_calls, text, sizeof text);
        if (rc != AC_OK)
            ac_store_err(err, rc, "store '%s': the snapshot of '%s' cannot be used: %s", st->path,
                         id, text);
        else
            ac_session_set_seq(s, n);
        w->snapshot_seq = n;
    }
    free(body);
    if (rc == AC_OK) {
        load_ctx c = {s, err, st->path, upto, 0};
        rc = st->ops->events(st, id, ac_session_seq(s), load_event, &c, err);
        if (c.stopped)
            rc = AC_OK;
    }
    if (rc != AC_OK) {
        ac_session_free(s);
        return NULL;
    }
    return s;
}

/* A fresh id: time and randomness, readable. */
static void fresh_id(char *buf, size_t cap)
{
    int64_t now = ac_wall_now_ms();
    time_t secs = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    unsigned r = 0;
    ac_random_bytes(&r, sizeof r);
    snprintf(buf, cap, "%04d%02d%02d-%02d%02d%02d-%06x", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, r & 0xffffff);
}

/* A new session: its row created now, or with AC_STORE_GROUPED by the loop turn's group
 * commit (lazy). */
char *ac_store_create_params(ac_engine *e)
{
    const ac_fsm_tables *t = ac_engine_tables(e);
    json_t *meta = json_pack("{s:s, s:O?}", "spec", t->spec_path ? t->spec_path : "", "params",
                             (json_t *)ac_engine_param_overrides(e));
    char *metas = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    return metas;
}

/* agent: opts' agent as ac_session_opts_check parsed it (stolen, NULL: none). */
static ac_session *create_new(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                              const ac_session_options *opts, json_t *agent, ac_error *err)
{
    const ac_fsm_tables *t = ac_engine_tables(e);
    int made = (flags & AC_STORE_CREATED) != 0; /* by the caller */
    char *metas = made ? NULL : ac_store_create_params(e);
    int lazy = !made && (flags & AC_STORE_GROUPED) && ac_engine_loop(e) && metas;
    int rc = lazy || made ? AC_OK
                          : st->ops->create(st, id, t->hash, metas, st->holder, st->lease_ms, err);
    if (rc != AC_OK) {
        free(metas);
        json_decref(agent);
        return NULL;
    }
    store_writer *w = ac_sw_new(st);
    if (!w || (lazy && !(w->spec_hash = strdup(t->hash)))) {
        free(metas);
        json_decref(agent);
        ac_sw_free(w);
        ac_store_err(err, AC_ENOMEM, "out of memory");
        if (!lazy && !made) /* made by the caller: removed by it */
            st->ops->rm(st, id, st->holder, 0, NULL);
        return NULL;
    }
    w->grouped = (flags & AC_STORE_GROUPED) != 0;
    if (lazy) /* the row is created by the loop turn's group commit */
        w->create_params = metas;
    else
        free(metas);
    w->muted = 0;
    char text[512] = "";
    ac_session *s =
        ac_session_new_hooked_opts(e, id, &AC_SW_HOOKS, w, opts, agent, text, sizeof text);
    if (!s) {
        ac_sw_free(w);
        ac_store_err(err, strstr(text, "tool_choice") ? AC_ECONFIG : AC_ESPEC, "%s", text);
        if (!lazy && !made) /* made by the caller: removed by it */
            st->ops->rm(st, id, st->holder, 0, NULL);
        return NULL;
    }
    w->s = s;
    ac_sw_go_live(w);
    return s;
}

/* Whether the record read (the session's last) is an agent change naming the spec. */
static int names_spec(void *ud, const ac_store_event *ev)
{
    int *found = ud;
    json_t *d =
        ev->data && !strcmp(ev->ev, AC_AGENT_CHANGED) ? json_loads(ev->data, 0, NULL) : NULL;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(d, "what"), i, k) *found |=
        json_is_string(k) && !strcmp(json_string_value(k), "spec");
    json_decref(d);
    return 1; /* the one record read */
}

/* At rest under another spec: allowed, and recorded as one agent change naming the spec
 * ({"reason": "option", "what": ["spec"], "spec": {"from", "to"}}, the agent unchanged),
 * unless the caller recorded that change as its last record (a caller that keeps the
 * spec in its agent). The snapshot taken with it marks the point. */
static void spec_changed(ac_store *st, store_writer *w, const ac_store_session_info *info)
{
    ac_session *s = w->s;
    const char *hash = ac_engine_tables(ac_session_engine(s))->hash;
    w->spec_hash = strdup(hash);
    w->force_snapshot = 1;
    int recorded = 0;
    uint64_t n = ac_session_seq(s);
    ac_error rerr;
    int rc = n ? st->ops->events(st, ac_session_id(s), n - 1, names_spec, &recorded, &rerr) : AC_OK;
    if (rc != AC_OK && rc != 1) {
        ac_sw_error(w, rerr.text);
        return;
    }
    if (recorded)
        return;
    json_t *data = json_pack("{s:s, s:[s], s:{s:s, s:s}}", "reason", "option", "what", "spec",
                             "spec", "from", info->spec_hash, "to", hash);
    rc = data ? ac_session_post(s, AC_AGENT_CHANGED, data, 0) : AC_ENOMEM;
    if (rc != AC_OK)
        ac_sw_error(w, ac_session_error(s) ? ac_session_error(s) : ac_strerror(rc));
}

/* A session loaded at rest commits once (its lease renewed, a snapshot due, a spec change
 * noted): with AC_STORE_GROUPED on a loop, by the loop turn's group commit, not waited for
 * (a reply that needs it waits through ac_store_when_durable; ac_store_session_events
 * counts its events already, as a read after it would); else alone, now. */
static void at_rest_commit(store_writer *w)
{
    if (w->grouped && ac_engine_loop(ac_session_engine(w->s))) {
        ac_store_group_add(w);
        w->sent_n = ac_session_seq(w->s);
    } else {
        ac_sw_commit(w);
    }
}

/* A stored session: its lease taken, rebuilt, and what it was doing restarted. */
static ac_session *open_stored(ac_store *st, ac_engine *e, const ac_store_session_info *info,
                               unsigned flags, ac_error *err)
{
    const char *id = info->id;
    int64_t attempt = 0;
    if (st->ops->lease_acquire(st, id, st->holder, st->lease_ms, &attempt, err) != AC_OK)
        return NULL;
    const char *hash = ac_engine_tables(e)->hash;
    int other_spec = strcmp(info->spec_hash, hash) != 0;
    if (other_spec && !info->at_rest) {
        st->ops->lease_release(st, id, st->holder, attempt, NULL);
        ac_store_err(err, AC_STORE_ESPEC,
                     "session '%s' stopped mid-turn under spec %.12s; this spec is %.12s: "
                     "resume it with its own spec first (a spec may change only at rest)",
                     id, info->spec_hash, hash);
        return NULL;
    }
    store_writer *w = ac_sw_new(st);
    if (!w) {
        st->ops->lease_release(st, id, st->holder, attempt, NULL);
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    w->attempt = attempt;
    w->have_title = info->title[0] ? 2 : 0;
    w->grouped = (flags & AC_STORE_GROUPED) != 0;
    ac_session *s = rebuild(st, e, id, w, err);
    if (!s) {
        st->ops->lease_release(st, id, st->holder, attempt, NULL);
        return NULL;
    }
    ac_session_go_live(s, (size_t)w->model_calls);
    ac_sw_go_live(w);
    w->sent_n = ac_session_seq(s);
    if (other_spec)
        spec_changed(st, w, info);
    if (!(flags & AC_STORE_NO_RESUME) && !ac_session_settled(s)) {
        w->resumed = 1;
        if (ac_store_recover(st, s, err) != AC_OK) {
            ac_session_free(s);
            return NULL;
        }
    } else if (ac_session_settled(s)) {
        if (w->force_snapshot)
            ac_sw_snapshot_take(w); /* written with this commit */
        at_rest_commit(w);
    }
    if (w->error) {
        ac_store_err(err, AC_EIO, "%s", w->error);
        ac_session_free(s);
        return NULL;
    }
    return s;
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
    char why[128];
    json_t *agent = NULL; /* parsed once: given to the new session's spawn event */
    if (ac_session_opts_check(e, opts, &agent, why, sizeof why)) {
        ac_store_err(err, AC_EINVAL, "%s", why);
        return NULL;
    }
    if (flags & (AC_STORE_CREATED | AC_STORE_NEW)) /* its row is new: nothing to read */
        return create_new(st, e, id, flags, opts, agent, err);
    ac_store_group_sync(st, id); /* freed in this loop turn: its last commit first */
    ac_store_session_info info;
    int rc = st->ops->info(st, id, &info, err);
    if (rc == AC_OK && info.events == 0 && info.snapshot_seq == 0 &&
        !(flags & AC_STORE_MUST_EXIST) &&
        st->ops->lease_acquire(st, id, st->holder, st->lease_ms, NULL, err) == AC_OK) {
        /* created by a process that stopped before its first commit (not even spawn): made
         * anew */
        st->ops->rm(st, id, st->holder, 0, NULL);
        rc = AC_STORE_ENOENT;
    }
    if (rc == AC_STORE_ENOENT && !(flags & AC_STORE_MUST_EXIST))
        return create_new(st, e, id, flags, opts, agent, err);
    json_decref(agent); /* a stored session keeps its own agent */
    return rc == AC_OK ? open_stored(st, e, &info, flags, err) : NULL;
}

void ac_store_session_discard(ac_session *s)
{
    store_writer *w = s ? ac_session_hooks_ud(s, &AC_SW_HOOKS) : NULL;
    if (!w)
        return;
    if (w->fl.on) /* its commit in flight names the session: done first */
        ac_store_group_wait(w->st);
    ac_store_group_remove(w);
    w->muted = 1; /* freed: nothing committed (h_close) */
}

int64_t ac_store_session_attempt(const ac_session *s)
{
    const store_writer *w = s ? ac_session_hooks_ud(s, &AC_SW_HOOKS) : NULL;
    return w ? w->attempt : 0;
}

uint64_t ac_store_session_events(const ac_session *s)
{
    const store_writer *w = s ? ac_session_hooks_ud(s, &AC_SW_HOOKS) : NULL;
    return w ? w->sent_n : 0;
}

bool ac_store_session_resumed(const ac_session *s)
{
    const store_writer *w = ac_session_hooks_ud(s, &AC_SW_HOOKS);
    return w && w->resumed;
}

ac_store *ac_session_store(const ac_session *s)
{
    const store_writer *w = ac_session_hooks_ud(s, &AC_SW_HOOKS);
    return w ? w->st : NULL;
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
    if (st->ops->snapshot_get(st, id, UINT64_MAX, n, &body, err) != AC_OK)
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
    int had = ac_engine_set_output(e, 0); /* what the snapshot holds was heard when it happened */
    int rc = ac_session_snapshot_restore(s, snapshot, &calls, text, sizeof text);
    ac_engine_set_output(e, had);
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
    store_writer *w = ac_sw_new(st);
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
    store_writer *w = ac_sw_new(st);
    if (!w)
        return NULL;
    char text[512] = "";
    int had = ac_engine_set_output(e, 0);
    ac_session *s = ac_session_new_hooked(e, id, &AC_SW_HOOKS, w, 1, text, sizeof text);
    char *out = NULL;
    if (!s) {
        ac_sw_free(w);
        ac_store_err(err, AC_ESPEC, "%s", text);
    } else {
        w->s = s;
        load_ctx c = {s, err, st->path, UINT64_MAX, 0};
        if (st->ops->events(st, id, 0, load_event, &c, err) == AC_OK)
            out = ac_session_to_json(s);
        ac_session_free(s);
    }
    ac_engine_set_output(e, had);
    return out;
}
