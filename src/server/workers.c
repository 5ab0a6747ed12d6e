/*
 * workers.c - `agentc serve` as one worker of its store: its row joined and renewed on the
 * loop's own timer every third of the lease, the sessions a gone worker left mid-turn
 * claimed and finished here (loaded as any stored session: the store's resume rules), a
 * session whose lease another worker took dropped, and the routes that tell a load balancer
 * and an operator how it stands (/healthz, /readyz, /v1/workers).
 *
 * The leases of the sessions this worker runs are renewed by their own commits (store.h);
 * the heartbeat renews the worker's row and claims. Nothing here runs on a tool's or a model
 * call's path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "store/store_ahead.h"
#include "store/store_notify.h"

#define CLAIM_MAX 64   /* sessions claimed per heartbeat: the rest at the next */
#define RETRY_MS 60000 /* a claimed session that could not be loaded is tried again after */

static int64_t beat_every(const srv *sv)
{
    int64_t ms = ac_store_lease_ms(sv->store) / 3;
    return ms < 10 ? 10 : ms;
}

/* A claimed session's lease given up (another may load it): on PostgreSQL on the wake-up
 * connection, not waited for. */
static void give_up(srv *sv, const ac_store_session_info *info)
{
    if (!sv->notify || ac_notify_release(sv->notify, info->id, ac_store_holder(sv->store),
                                         info->attempt, NULL, NULL) != 0)
        ac_store_release(sv->store, info->id, info->attempt, NULL);
}

/* A claimed session: known here (made known when another worker created it), loaded, its
 * turn resumed by the store's rules. */
static int on_claimed(void *ud, const ac_store_session_info *info)
{
    srv *sv = ud;
    const char *slash = strchr(info->id, '/');
    if (!slash) /* not one of a server's: its lease stays until it ends */
        return 0;
    srv_sess *ss = srv_sess_stored(sv, info->id);
    if (!ss) {
        char owner[128];
        snprintf(owner, sizeof owner, "%.*s", (int)(slash - info->id), info->id);
        ss = srv_sess_known(sv, srv_owner_named(sv, owner), info->id, info->created_ms);
    }
    if (!ss || ss->s)
        return 0; /* running here already */
    ac_error err = {0};
    int64_t now = ac_loop_now_ms(sv->loop);
    int waiting = ss->resume_failed_ms && now - ss->resume_failed_ms < RETRY_MS;
    if (waiting || srv_sess_load(ss, &err)) {
        if (!waiting) {
            if (!ss->resume_failed_ms)
                fprintf(stderr, "agentc serve: session '%s' cannot resume: %s\n", info->id,
                        err.text);
            ss->resume_failed_ms = now > 0 ? now : 1;
        }
        give_up(sv, info);
        return 0;
    }
    ss->resume_failed_ms = 0;
    sv->claimed++;
    if (!sv->workers_started) { /* the start's count says it */
        srv_children_read(ss);  /* before the loop serves: its first view reads nothing then */
        return 0;
    }
    if (!*info->holder)
        fprintf(stderr, "agentc serve: session '%s' had no worker mid-turn; resumed here\n",
                info->id);
    else if (!strcmp(info->holder, ac_store_holder(sv->store)))
        fprintf(stderr, "agentc serve: session '%s' claimed again; resumed here\n", info->id);
    else
        fprintf(stderr, "agentc serve: session '%s': its worker '%s' is gone; resumed here\n",
                info->id, info->holder);
    return 0;
}

/* The sessions whose lease another worker took, or that could not be written: no longer run
 * here (their commits are refused already, fenced in the store; their readers were told). The
 * lease of one that could not be written is given up (once the database answers, fenced by its
 * attempt), so that the worker a request for it reaches loads it, or a claim takes it mid-turn. */
static void drop_lost(srv *sv)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next) {
        if (!ss->lost || !ss->s)
            continue;
        if (ss->lost == SRV_LOST_WRITE && sv->notify)
            ac_notify_release(sv->notify, ss->stored_id, ac_store_holder(sv->store),
                              ac_store_session_attempt(ss->s), NULL, NULL);
        ss->lost = 0;
        srv_sess_delete_wake(ss);
        while (ss->streams)
            srv_stream_detach(ss->streams);
        srv_frames_free(ss->live);
        ss->live = NULL;
        ac_session_set_userdata(ss->s, NULL);
        ac_session_free(ss->s); /* its commit is refused: nothing written */
        ss->s = NULL;
        fprintf(stderr, "agentc serve: session '%s' is no longer run here\n", ss->stored_id);
    }
}

void srv_sess_lost(srv_sess *ss, const ac_error *err)
{
    srv *sv = ss->sv;
    const char *db = sv->cfg->db ? sv->cfg->db : "";
    int shared = !strncmp(db, "postgresql://", 13) || !strncmp(db, "postgres://", 11);
    if (ss->lost || !ss->stored_id || (err->code != AC_STORE_EBUSY && !shared))
        return;
    ss->lost = err->code == AC_STORE_EBUSY ? SRV_LOST_LEASE : SRV_LOST_WRITE;
    if (err->code == AC_STORE_EBUSY)
        fprintf(stderr, "agentc serve: session '%s' lost its lease: %s\n", ss->stored_id,
                err->text);
    else
        fprintf(stderr,
                "agentc serve: session '%s' cannot be written (%s); it continues from what "
                "was committed once the store answers\n",
                ss->stored_id, err->text);
    if (!sv->lost_timer)
        sv->lost_timer = ac_loop_timer(sv->loop, 0, srv_workers_drop_lost, sv);
}

void srv_workers_drop_lost(void *ud)
{
    srv *sv = ud;
    sv->lost_timer = 0;
    drop_lost(sv);
}

static void db_is(srv *sv, int ok, const char *why)
{
    if (ok != sv->db_ok)
        fprintf(stderr, "agentc serve: the store is %s%s%s\n",
                ok ? "reachable again" : "unreachable", ok ? "" : ": ", ok ? "" : why);
    sv->db_ok = ok;
}

static void claim_done(void *ud, int rc, const char *error)
{
    srv *sv = ud;
    sv->beating = 0;
    if (rc != AC_OK && sv->workers_started && sv->notify)
        fprintf(stderr, "agentc serve: cannot claim sessions: %s\n", error ? error : "");
}

/* A claimed session whose rows (then its journal's sub-agent calls) are being read ahead of
 * its loading. */
struct srv_claim_load {
    struct srv_claim_load *next; /* srv's claim_loads */
    srv *sv;
    ac_store_ahead *a;
    ac_store_session_info info; /* the claim's row */
    int reading, read_rc;       /* its rows not read yet; then how */
    char read_error[256];
    json_t *calls; /* its calls (children.c) once read, or NULL: read by its first view */
    int calling;
    srv_kids *kids; /* then the children of its unfinished calls read ahead (children.c) */
    int ready;      /* all answered, waiting for another load of one of those children here */
};
typedef struct srv_claim_load ahead_load;

int srv_workers_loading(const srv *sv, const char *stored_id)
{
    for (const ahead_load *l = sv->claim_loads; l; l = l->next)
        if (!strcmp(l->info.id, stored_id) || srv_kids_has(l->kids, stored_id))
            return 1;
    return 0;
}

static void ahead_done(ahead_load *l);

void srv_workers_ready(srv *sv)
{
    for (ahead_load *l = sv->claim_loads; l; l = l->next)
        if (l->ready && !srv_kids_busy(sv, l->kids, l->info.id, l->calls)) {
            ahead_done(l); /* which calls this again: the list may have changed */
            return;
        }
}

/* Its statements all answered: done, unless another load of a child of its unfinished calls is
 * under way here (then once that one is). */
static void ahead_try(ahead_load *l)
{
    if (l->reading || l->calling || srv_kids_pending(l->kids))
        return;
    if (l->read_rc == AC_OK && l->calls && !l->sv->stopping &&
        srv_kids_busy(l->sv, l->kids, l->info.id, l->calls)) {
        l->ready = 1;
        return;
    }
    ahead_done(l);
}

/* Its rows and calls read: loaded from them (store_ahead.h: no read of it waits for the
 * database), the children of its unfinished calls first (from theirs). Rows that could not be
 * read: the next heartbeat's claim takes it again (its lease is this worker's). */
static void ahead_done(ahead_load *l)
{
    srv *sv = l->sv;
    for (ahead_load **pp = &sv->claim_loads; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    if (!sv->workers_started || !sv->notify) {
        /* closing: released with the connection */
    } else if (sv->stopping) {
        give_up(sv, &l->info);
    } else if (l->read_rc != AC_OK) {
        fprintf(stderr, "agentc serve: session '%s' claimed, its rows not read: %s\n", l->info.id,
                l->read_error);
    } else {
        srv_kids_load(sv, l->kids);
        l->kids = NULL;
        ac_store_ahead_begin(sv->store, l->a);
        on_claimed(sv, &l->info);
        ac_store_ahead_end(sv->store);
        srv_sess *ss = srv_sess_stored(sv, l->info.id);
        if (ss) /* its view's calls, read with its rows */
            srv_sess_calls_read(ss, &l->calls);
    }
    srv_kids_free(sv, l->kids);
    json_decref(l->calls);
    ac_store_ahead_free(l->a);
    free(l);
    srv_kick(sv); /* the requests that waited for this load run (run_loads) */
    srv_workers_ready(sv);
}

static void ahead_read(void *ud, int rc, const char *error)
{
    ahead_load *l = ud;
    l->reading = 0;
    l->read_rc = rc;
    snprintf(l->read_error, sizeof l->read_error, "%s", error ? error : ac_strerror(rc));
    ahead_try(l);
}

static void kids_read(void *ud)
{
    ahead_try(ud);
}

/* Still to be loaded here (not stopping or closing), its rows read. */
static int sv_claiming(const ahead_load *l)
{
    return l->sv->workers_started && l->sv->notify && !l->sv->stopping && !l->reading &&
           l->read_rc == AC_OK;
}

static int call_read(void *ud, const ac_store_event *ev)
{
    ahead_load *l = ud;
    srv_children_keep(l->calls, l->info.id, ev->ev, ev->data);
    return 0;
}

static void calls_read(void *ud, int rc, const char *error)
{
    ahead_load *l = ud;
    (void)error;
    l->calling = 0;
    if (rc != AC_OK) {
        json_decref(l->calls);
        l->calls = NULL;
    } else if (sv_claiming(l))
        l->kids = srv_kids_read(l->sv, l->info.id, l->calls, kids_read, l);
    ahead_try(l);
}

/* The child of an unfinished call of a session a claim is loading, its lease taken for it. */
static int kid_claimed(const srv *sv, const char *id)
{
    for (const ahead_load *l = sv->claim_loads; l; l = l->next)
        if (srv_kids_has(l->kids, id))
            return 1;
    return 0;
}

/* A claimed session, the claim's answer come: its rows and calls read (without waiting), then
 * loaded; or (stopping meanwhile) given up at once for a survivor. */
static int claimed_async(void *ud, const ac_store_session_info *info)
{
    srv *sv = ud;
    if (!sv->workers_started || !sv->notify)
        return 1; /* closing: released with the connection */
    srv_sess *ss = srv_sess_stored(sv, info->id);
    if (sv->stopping) {
        if (!ss || !ss->s) /* not one it runs */
            give_up(sv, info);
        return 0;
    }
    if ((ss && ss->s) || srv_load_pending(sv, info->id) || kid_claimed(sv, info->id))
        return 0; /* running here already, or another load of it took its lease again */
    ahead_load *l = calloc(1, sizeof *l);
    if (l && (l->a = ac_store_ahead_new(info->id, info->attempt))) {
        l->sv = sv;
        l->info = *info;
        if (ac_notify_ahead(sv->notify, l->a, ahead_read, l) == 0) {
            l->reading = 1;
            l->calls = json_array();
            l->calling = l->calls && ac_notify_events(sv->notify, info->id, ss ? ss->forgotten : 0,
                                                      call_read, calls_read, l) == 0;
            if (!l->calling) {
                json_decref(l->calls);
                l->calls = NULL;
            }
            l->next = sv->claim_loads;
            sv->claim_loads = l;
            return 0;
        }
        ac_store_ahead_free(l->a);
    }
    free(l);
    return 0; /* out of memory: the next heartbeat's claim takes it again */
}

static void beat_done(void *ud, int rc, const char *error)
{
    srv *sv = ud;
    sv->beating = sv->beat_waiting = 0;
    if (!sv->workers_started || !sv->notify)
        return; /* stopping: the connection closes */
    db_is(sv, rc == AC_OK, error ? error : "");
    drop_lost(sv);
    if (rc == AC_OK && !sv->stopping)
        sv->beating =
            ac_notify_claim(sv->notify, ac_store_holder(sv->store), CLAIM_MAX, 1,
                            ac_store_lease_ms(sv->store), claimed_async, claim_done, sv) == 0;
}

/* Renews the worker's row, then claims what gone workers left (not while stopping). The
 * database's reachability is what /readyz reports. On PostgreSQL both are statements of the
 * wake-up connection, never waited for (one at a time: a database slower than the heartbeat
 * gets the next when it answered), and the store's own connection, found lost while idle, is
 * made again in the background (ac_store_tend: its holder's lock taken again); an SQLite
 * store is a local file, its calls made here. */
static void on_beat(void *ud)
{
    srv *sv = ud;
    sv->beat_timer = 0;
    ac_error err = {0};
    int64_t now = ac_loop_now_ms(sv->loop);
    /* the loop itself did not run meanwhile (the process stopped, the machine busy): what the
     * database answered is read before the heartbeat is called late */
    int stalled = sv->beat_tick_ms && now - sv->beat_tick_ms > 2 * beat_every(sv);
    sv->beat_tick_ms = now;
    if (sv->notify && !ac_notify_ready(sv->notify)) {
        db_is(sv, 0, "the wake-up connection is down (it is made again)");
        drop_lost(sv);
    } else if (sv->notify && !sv->beating) {
        ac_store_tend(sv->store, sv->loop);
        sv->beating = sv->beat_waiting =
            ac_notify_beat(sv->notify, ac_store_holder(sv->store), beat_done, sv) == 0;
        sv->beat_sent_ms = now;
    } else if (sv->notify) { /* the heartbeat not answered for a lease: not ready (a claim
                              * under way, loading what it claimed, is not the database's) */
        if (sv->beat_waiting && !stalled && now - sv->beat_sent_ms > ac_store_lease_ms(sv->store))
            db_is(sv, 0, "it did not answer the last heartbeat within the lease");
    } else {
        int ok = ac_store_worker_beat(sv->store, &err) == AC_OK;
        db_is(sv, ok, err.text);
        drop_lost(sv);
        if (ok && !sv->stopping &&
            ac_store_claim(sv->store, CLAIM_MAX, 1, on_claimed, sv, &err) != AC_OK)
            fprintf(stderr, "agentc serve: cannot claim sessions: %s\n", err.text);
    }
    sv->beat_timer = ac_loop_timer(sv->loop, beat_every(sv), on_beat, sv);
}

int srv_workers_join(srv *sv, const char *listen)
{
    ac_error err = {0};
    if (ac_store_worker_join(sv->store, listen, &err) != AC_OK) {
        fprintf(stderr, "agentc serve: %s\n", err.text);
        return -1;
    }
    sv->db_ok = 1;
    return 0;
}

/* At start, before the loop serves: the store's own claim, waited for (nothing waits behind
 * it, and the start's count says what it resumed). */
size_t srv_workers_claim(srv *sv)
{
    ac_error err = {0};
    sv->claimed = 0;
    if (ac_store_claim(sv->store, (size_t)-1, 1, on_claimed, sv, &err) != AC_OK)
        fprintf(stderr, "agentc serve: cannot claim sessions: %s\n", err.text);
    return sv->claimed;
}

void srv_workers_start(srv *sv)
{
    sv->workers_started = 1;
    fprintf(stderr, "agentc serve: worker '%s', lease %lld ms\n", ac_store_holder(sv->store),
            (long long)ac_store_lease_ms(sv->store));
    sv->beat_timer = ac_loop_timer(sv->loop, beat_every(sv), on_beat, sv);
    /* from now on the loop serves: what waits for the database is counted (and on
     * PostgreSQL a connection lost is made again in the background, never waited for) */
    ac_store_serve_on(sv->store, sv->loop, sv->cfg->metrics_registry);
}

void srv_workers_stop(srv *sv)
{
    if (sv->beat_timer)
        ac_loop_cancel_timer(sv->loop, sv->beat_timer);
    if (sv->lost_timer)
        ac_loop_cancel_timer(sv->loop, sv->lost_timer);
    sv->beat_timer = sv->lost_timer = 0;
}

void srv_workers_leave(srv *sv)
{
    srv_workers_stop(sv);
    if (!sv->workers_started)
        return;
    /* the loop serves no more: the statement (after the group commit in flight) and the last
     * commit closing the store may wait now, a lost connection made again waiting */
    ac_store_serve_on(sv->store, NULL, NULL);
    ac_store_worker_leave(sv->store, NULL);
    sv->workers_started = 0;
}

/* ---- the routes ---- */

static enum MHD_Result plain(struct MHD_Connection *c, unsigned status, const char *text)
{
    return srv_reply_json(c, status, json_pack("{s:s}", "status", text));
}

enum MHD_Result srv_healthz(srv *sv, struct MHD_Connection *c)
{
    (void)sv; /* answered from the loop: it runs */
    return plain(c, 200, "ok");
}

enum MHD_Result srv_readyz(srv *sv, struct MHD_Connection *c)
{
    if (sv->stopping)
        return plain(c, 503, "stopping");
    return sv->db_ok ? plain(c, 200, "ready") : plain(c, 503, "store_unreachable");
}

static int add_worker(void *ud, const ac_store_worker *w)
{
    json_t *a = ud;
    json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:I, s:I, s:b}", "id", w->id, "listen",
                                       w->listen, "started_ms", (json_int_t)w->started_ms,
                                       "last_heartbeat_ms", (json_int_t)w->heartbeat_ms, "sessions",
                                       (json_int_t)w->sessions, "alive", w->alive));
    return 0;
}

/* On PostgreSQL the rows are read on the wake-up connection, the request suspended meanwhile
 * (*slot, *rows: the request's; the handler runs again once they are read), answered 503 at
 * once while that connection is down; elsewhere read now (a local file). */
enum MHD_Result srv_workers_list(srv *sv, struct MHD_Connection *c, srv_fwd **slot, json_t **rows)
{
    ac_error err = {0};
    ac_store_session_info unused;
    if (sv->notify) {
        int rc = srv_remote_looked(slot, &unused);
        if (rc == SRV_NO_LOOK && !ac_notify_ready(sv->notify)) /* nothing to wait for */
            return srv_reply_error(c, 503, "store_error",
                                   "cannot list the workers: the store is unreachable (its "
                                   "connection is being made again)");
        if (rc == SRV_NO_LOOK) {
            json_decref(*rows);
            if (!(*rows = json_array()))
                return srv_reply_error(c, 503, "out_of_memory", "out of memory");
            return srv_remote_workers(sv, c, slot, add_worker, *rows);
        }
        if (rc != AC_OK)
            return srv_reply_error(c, 503, "store_error",
                                   "cannot list the workers: the store did not answer");
    } else {
        json_decref(*rows);
        if (!(*rows = json_array()) ||
            ac_store_workers(sv->store, add_worker, *rows, &err) != AC_OK)
            return srv_reply_error(c, 503, "store_error", "%s",
                                   err.text[0] ? err.text : "out of memory");
    }
    json_t *a = *rows;
    *rows = NULL;
    return srv_reply_json(c, 200,
                          json_pack("{s:s, s:o}", "worker", ac_store_holder(sv->store), "data", a));
}
