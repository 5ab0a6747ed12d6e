/*
 * load.c - a stored session not in memory loaded again (snapshot + tail) between loop
 * iterations, never inside a callback: for a request (suspended meanwhile, then resumed), or
 * for a handoff's reopening on its new agent's engine (children.c; once its last commit is
 * written). On PostgreSQL its lease is taken and its rows and journal's calls read ahead first,
 * without waiting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_int.h"
#include "store/store_ahead.h"
#include "store/store_notify.h"

/* A request waiting, suspended, for its stored session to be loaded: loading posts the
 * journal's events, which must apply at once, so it runs between loop iterations, never
 * inside a callback (where posts are queued). */
struct srv_load {
    struct srv_load *next;
    struct MHD_Connection *conn;
    req *r; /* NULL: a handoff's reopening */
    char *id;
    /* a handoff's reopening: its session (NULL once freed meanwhile), opened again once its
     * last commit is written (committing until then: durable, deferred by the store) */
    int reopen;
    srv_sess *ss;
    int committing;
    ac_loop_task durable;
    /* on PostgreSQL: its rows read ahead on the wake-up connection first (store_ahead.h), the
     * loading then answered from them */
    srv *sv;
    ac_store_ahead *ahead;
    int reading; /* its rows not read yet */
    int read_rc; /* then: AC_OK, AC_STORE_ENOENT or AC_EIO (read_error) */
    char read_error[256];
    int leasing;  /* its lease, taken before its rows are read, not answered yet */
    int lease_rc; /* then: ac_notify_acquire's rc, the attempt taken, or why not */
    int64_t attempt;
    char lease_error[256];
    json_t *calls;  /* the journal's sub-agent calls, read after its rows (children.c), or NULL */
    int calling;    /* those not read yet */
    srv_kids *kids; /* then the children of its unfinished calls read ahead (children.c) */
    int orphan;     /* its request answered without it (stopping): freed when all are answered */
    int64_t behind_until; /* waiting for another load of its session: until then (0: not yet) */
};

static void load_free(struct srv_load *l)
{
    srv_kids_free(l->sv, l->kids);
    json_decref(l->calls);
    ac_store_ahead_free(l->ahead);
    free(l->id);
    free(l);
}

static void unlink_load(struct srv_load *l)
{
    for (struct srv_load **pp = &l->sv->loads; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            return;
        }
}

/* Its statements not all answered yet. */
static int load_asking(const struct srv_load *l)
{
    return l->reading || l->leasing || l->calling || srv_kids_pending(l->kids);
}

static void on_load_read(void *ud, int rc, const char *error)
{
    struct srv_load *l = ud;
    l->reading = 0;
    l->read_rc = rc;
    snprintf(l->read_error, sizeof l->read_error, "%s",
             rc == AC_STORE_ENOENT ? "the session is no longer in the store"
             : error               ? error
                                   : ac_strerror(rc));
    if (l->orphan && !load_asking(l)) {
        unlink_load(l);
        load_free(l);
    }
}

static int on_load_call(void *ud, const ac_store_event *ev)
{
    struct srv_load *l = ud;
    srv_children_keep(l->calls, ac_store_ahead_id(l->ahead), ev->ev, ev->data);
    return 0;
}

static void on_load_kids(void *ud)
{
    struct srv_load *l = ud;
    if (l->orphan && !load_asking(l)) {
        unlink_load(l);
        load_free(l);
    }
}

/* Its journal's calls read: the view after its loading says them without a read (one that
 * failed: that view reads them); the children of its unfinished calls read ahead then. */
static void on_load_calls_read(void *ud, int rc, const char *error)
{
    struct srv_load *l = ud;
    (void)error;
    l->calling = 0;
    if (rc != AC_OK) {
        json_decref(l->calls);
        l->calls = NULL;
    } else if (!l->orphan && l->ahead && l->sv->notify)
        l->kids = srv_kids_read(l->sv, ac_store_ahead_id(l->ahead), l->calls, on_load_kids, l);
    if (l->orphan && !load_asking(l)) {
        unlink_load(l);
        load_free(l);
    }
}

static void on_load_leased(void *ud, int rc, int64_t attempt, const char *error)
{
    struct srv_load *l = ud;
    l->leasing = 0;
    l->lease_rc = rc;
    l->attempt = attempt;
    snprintf(l->lease_error, sizeof l->lease_error, "%s", error ? error : ac_strerror(rc));
    if (rc == AC_OK && l->ahead) /* the loader's lease_acquire answered from it */
        ac_store_ahead_set_attempt(l->ahead, attempt);
    if (l->orphan && !load_asking(l)) {
        if (rc == AC_OK && l->orphan == 2) /* its rows were never asked for */
            ac_notify_release(l->sv->notify, ac_store_ahead_id(l->ahead),
                              ac_store_holder(l->sv->store), attempt, NULL, NULL);
        unlink_load(l);
        load_free(l);
    }
}

/* Another request's load of l's session still waits for its lease or rows: l then takes no
 * lease of its own (a second taking would fence the first's writer out) and runs after it. */
static int load_pending(const struct srv_load *l)
{
    for (const struct srv_load *o = l->sv->loads; o; o = o->next)
        if (o->reopen ? o->ss && o->ss->owner == l->r->owner && !strcmp(o->ss->id, l->id)
                      : o != l && !o->orphan && (load_asking(o) || o->ahead) &&
                            o->r->owner == l->r->owner && !strcmp(o->id, l->id))
            return 1; /* a reopening: until it is opened */
    return 0;
}

int srv_load_pending(const srv *sv, const char *stored_id)
{
    for (const struct srv_load *l = sv->loads; l; l = l->next)
        if ((l->reopen && l->ss && !strcmp(l->ss->stored_id, stored_id)) ||
            srv_kids_has(l->kids, stored_id) ||
            (l->ahead && (load_asking(l) || !l->orphan) &&
             !strcmp(ac_store_ahead_id(l->ahead), stored_id)))
            return 1;
    return 0;
}

/* Its session's lease taken, then its rows and its journal's calls read, without waiting
 * (srv_run_loads loads it once all are answered; the statements run in that order on one
 * connection): 1; 0 when out of memory; -1 too, l then to be kept (listed, orphan 2) until
 * its lease's answer comes, the lease then given up. */
static int load_ahead(struct srv_load *l, const char *stored_id, uint64_t forgotten)
{
    srv *sv = l->sv;
    l->ahead = ac_store_ahead_new(stored_id, 0);
    l->leasing =
        l->ahead && ac_notify_acquire(sv->notify, stored_id, ac_store_holder(sv->store),
                                      ac_store_lease_ms(sv->store), on_load_leased, l) == 0;
    l->reading = l->leasing && ac_notify_ahead(sv->notify, l->ahead, on_load_read, l) == 0;
    if (l->leasing && !l->reading) {
        l->orphan = 2;
        return -1;
    }
    l->calls = l->reading ? json_array() : NULL;
    l->calling = l->calls && ac_notify_events(sv->notify, stored_id, forgotten, on_load_call,
                                              on_load_calls_read, l) == 0;
    if (!l->calling) { /* read by the view, as without it */
        json_decref(l->calls);
        l->calls = NULL;
    }
    if (!l->reading) {
        ac_store_ahead_free(l->ahead);
        l->ahead = NULL;
    }
    return l->reading;
}

/* A load of l's session under way here (another request's, or a claim's): l waits for it. */
static int load_behind(const struct srv_load *l, const srv_sess *ss)
{
    return load_pending(l) || (ss && ss->stored_id && srv_workers_loading(l->sv, ss->stored_id));
}

/* A request for the stored session ss (id: as its owner names it), not in memory: suspended
 * while it is loaded again (snapshot + tail) between iterations (srv_run_loads). */
enum MHD_Result srv_load_start(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                               const char *id)
{
    struct srv_load *l = calloc(1, sizeof *l);
    if (!l || !(l->id = strdup(id))) {
        free(l);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    l->conn = c;
    l->r = r;
    l->sv = sv;
    int ahead = sv->notify && ss->stored_id && !load_behind(l, ss)
                    ? load_ahead(l, ss->stored_id, ss->forgotten)
                    : 1;
    if (ahead == 0) {
        free(l->id);
        free(l);
    } else {
        l->next = sv->loads;
        sv->loads = l;
    }
    if (ahead <= 0)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    MHD_suspend_connection(c); /* the handler runs again once it is resumed */
    return MHD_YES;
}

/* ss (not in memory) loaded, from l's rows read ahead if it has them; err set when it was not. */
static void load_from(srv *sv, struct srv_load *l, srv_sess *ss, ac_error *err)
{
    if (l->ahead && l->lease_rc != AC_OK) {
        err->code = l->lease_rc;
        snprintf(err->text, sizeof err->text, "%s", l->lease_error);
    } else if (l->ahead && l->read_rc != AC_OK) {
        err->code = l->read_rc;
        snprintf(err->text, sizeof err->text, "%s", l->read_error);
        ac_notify_release(sv->notify, ac_store_ahead_id(l->ahead), ac_store_holder(sv->store),
                          l->attempt, NULL, NULL);
    } else {
        srv_kids_load(sv, l->kids); /* its unfinished calls' children first, each from its rows */
        l->kids = NULL;
        if (l->ahead)
            ac_store_ahead_begin(sv->store, l->ahead);
        if (srv_sess_load(ss, err) == 0) {
            err->code = 0;
            srv_sess_calls_read(ss, &l->calls); /* its view's calls, read with its rows */
        } else if (!err->code)
            err->code = AC_EIO;
        if (l->ahead)
            ac_store_ahead_end(sv->store);
    }
}

/* A handoff's reopening, its rows read (or none: stopping, out of memory): opened from them and
 * resumed (children.c); its session freed meanwhile, the lease it took given up. */
static void run_reopen(srv *sv, struct srv_load *l)
{
    srv_sess *ss = l->ss;
    ac_error err = {0};
    if (ss) {
        ss->reopening = 0;
        if (!sv->stopping) { /* else left paused: its next load moves it (srv_sess_open) */
            load_from(sv, l, ss, &err);
            srv_children_reopened(ss, ss->s ? NULL : &err);
        }
    } else if (l->ahead && l->lease_rc == AC_OK)
        ac_notify_release(sv->notify, ac_store_ahead_id(l->ahead), ac_store_holder(sv->store),
                          l->attempt, NULL, NULL);
    load_free(l);
}

/* One load: its session loaded (from its rows read ahead, if it has them), its request resumed. */
static void run_load(srv *sv, struct srv_load *l)
{
    if (l->reopen) {
        run_reopen(sv, l);
        return;
    }
    srv_sess *ss = srv_sess_find(sv, l->r->owner, l->id);
    ac_error err = {0};
    if (ss && !ss->s)
        load_from(sv, l, ss, &err);
    if (err.code) {
        l->r->load_failed = 1;
        l->r->load_code = err.code;
        snprintf(l->r->load_msg, sizeof l->r->load_msg, "%s", err.text);
    }
    MHD_resume_connection(l->conn);
    srv_kick(sv);
    load_free(l);
}

/* l waits for another load of its session under way here (a claim's, another request's), at
 * most --forward-timeout-ms: 1 while it may, else 0 with its request answered 503 (l then
 * dropped: it sent nothing, the other load goes on). */
static int load_behind_waits(srv *sv, struct srv_load *l)
{
    int64_t now = ac_loop_now_ms(sv->loop);
    if (!l->behind_until)
        l->behind_until = now + sv->cfg->forward_timeout_ms;
    if (now < l->behind_until)
        return 1;
    l->r->load_failed = l->r->load_late = 1;
    MHD_resume_connection(l->conn);
    srv_kick(sv);
    return 0;
}

/* A reopening whose last commit is written: its lease and rows asked for (1); 0: opened now
 * (its session gone, stopping, or out of memory: loaded waiting, as before). */
static int reopen_ahead(srv *sv, struct srv_load *l)
{
    if (!l->ss || sv->stopping)
        return 0;
    int ahead = load_ahead(l, l->ss->stored_id, l->ss->forgotten);
    if (ahead < 0) { /* kept until its lease is answered; the handoff failed */
        ac_error err = {0};
        err.code = AC_ENOMEM;
        snprintf(err.text, sizeof err.text, "out of memory");
        l->ss->reopening = 0;
        srv_children_reopened(l->ss, &err);
        l->ss = NULL;
    }
    return ahead != 0;
}

/* l still waits: for its lease or rows, or (it has none) for another load of its session
 * under way here; that one done and the session still not in memory, l's own lease and rows
 * are asked for then (out of memory: it loads waiting, as without them). */
static int load_waits(srv *sv, struct srv_load *l)
{
    if (load_asking(l) || l->orphan || l->committing)
        return 1;
    if (l->ahead) /* and no other load of its calls' children is under way here */
        return l->calls && srv_kids_busy(sv, l->kids, ac_store_ahead_id(l->ahead), l->calls);
    if (l->reopen) /* its last commit written: its lease and rows asked for */
        return reopen_ahead(sv, l);
    srv_sess *ss = srv_sess_find(sv, l->r->owner, l->id);
    if (load_behind(l, ss))
        return load_behind_waits(sv, l);
    if (!ss || ss->s || !ss->stored_id || !sv->notify || sv->stopping)
        return 0;
    int ahead = load_ahead(l, ss->stored_id, ss->forgotten);
    if (ahead < 0) { /* kept until its lease is answered; its request answered now */
        l->r->load_failed = 1;
        l->r->load_code = AC_ENOMEM;
        snprintf(l->r->load_msg, sizeof l->r->load_msg, "out of memory");
        MHD_resume_connection(l->conn);
        srv_kick(sv);
    }
    return ahead != 0;
}

/* Loads the sessions requests wait for (those whose rows are read); between loop iterations
 * only. */
void srv_run_loads(srv *sv)
{
    for (struct srv_load **pp = &sv->loads; *pp;) {
        struct srv_load *l = *pp;
        if (load_waits(sv, l)) {
            pp = &l->next;
            continue;
        }
        *pp = l->next;
        if (l->r && l->r->load_late) { /* answered already, loading nothing */
            load_free(l);
            continue;
        }
        run_load(sv, l);
        pp = &sv->loads;       /* loading ran the engine: the list may have changed */
        srv_workers_ready(sv); /* a claim's load may have waited for this one */
    }
}

/* Stopping: the requests whose session's rows are still being read answered 503. */
void srv_stop_loads(srv *sv)
{
    for (struct srv_load *l = sv->loads; l; l = l->next)
        if (l->r && load_asking(l) && !l->orphan) {
            l->orphan = 1;
            l->r->load_failed = 1;
            l->r->load_code = AC_EIO;
            snprintf(l->r->load_msg, sizeof l->r->load_msg, "the server is stopping");
            MHD_resume_connection(l->conn);
        }
}

/* ---- a handoff's reopening ---- */

static void reopen_committed(void *ud)
{
    struct srv_load *l = ud;
    l->committing = 0;
    srv_kick(l->sv); /* srv_run_loads asks for its lease and rows */
}

int srv_load_reopen(srv *sv, srv_sess *ss)
{
    if (!sv->notify || !ss->s || !ss->stored_id)
        return -1;
    struct srv_load *l = calloc(1, sizeof *l);
    if (!l || !(l->id = strdup(ss->id))) {
        free(l);
        return -1;
    }
    l->sv = sv;
    l->reopen = 1;
    l->ss = ss;
    l->durable.fn = reopen_committed;
    l->durable.ud = l;
    if (ac_store_when_durable(ss->s, &l->durable) <= 0) { /* nothing to wait for, or failed */
        load_free(l);
        return -1;
    }
    l->committing = 1;
    ss->reopening = 1;
    l->next = sv->loads;
    sv->loads = l;
    return 0;
}

void srv_load_forget(srv *sv, srv_sess *ss)
{
    for (struct srv_load *l = sv->loads; ss->reopening && l; l = l->next)
        if (l->reopen && l->ss == ss)
            l->ss = NULL; /* its commit's or rows' answer still to come: freed after it */
    ss->reopening = 0;
}

void srv_free_loads(srv *sv)
{
    while (sv->loads) {
        struct srv_load *l = sv->loads;
        sv->loads = l->next;
        load_free(l);
    }
}
