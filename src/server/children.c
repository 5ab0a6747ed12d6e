/*
 * children.c - the sessions a session of `agentc serve` hands work to (docs/composition.md).
 *
 * Sub-agents: the server's opener (ac_subagent_opener, set on every engine it builds) opens
 * the child a call of agent::NAME runs as a stored session of its parent's owner, id
 * PARENT.NAME.CALL, on the engine of the entry's agent (agents.c), so it has its own journal
 * and its own stream (GET /v1/sessions/{child}/events) like any session; the parent's
 * journal records agent.started and agent.done around the call. A child the store already
 * has (a call run again after a restart) is loaded as it stands: it goes on where it was.
 * When the call is done with it, the child stays a session of the server (unloaded later as
 * any settled one). GET /v1/sessions/{id} lists a session's calls ("children", read once
 * from its journal, then kept from its commits) and a child's "parent".
 *
 * Handoffs: a session a call of transfer_to_NAME paused is moved from a timer (never from
 * the dispatch that paused it): the change recorded at rest (agent.changed, reason
 * "handoff"), the session opened again from the store on the named agent's engine, and
 * resumed, so a new turn answers the same user message. Its stored agent is the new one: a
 * restart goes on with it. On PostgreSQL the reopening waits for nothing: once its last commit
 * is written (ac_store_when_durable) its lease is taken and its rows read ahead on the wake-up
 * connection, then it is opened from them between loop iterations (load.c, as a request's
 * load); a request for it meanwhile waits for that load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "store/store_ahead.h"
#include "store/store_notify.h"

#define SRV_MAX_HANDOFFS 32 /* in one turn: agents that hand it back and forth are stopped */

/* ---- sub-agents ---- */

static void set_err(ac_error *err, int code, const char *text)
{
    if (!err)
        return;
    err->code = code;
    snprintf(err->text, sizeof err->text, "%s", text);
}

const char *srv_owner_id(const char *of, const char *sid)
{
    const char *slash = strchr(of, '/');
    size_t n = slash ? (size_t)(slash - of) + 1 : 0;
    return n && !strncmp(of, sid, n) && sid[n] ? sid + n : sid;
}

static json_t *find_call(const json_t *children, const char *sid);

/* id: the child's stored id (its parent's, "OWNER/ID", then ".NAME.CALL"). */
static ac_session *open_child(void *ud, ac_session *parent, const char *entry, const char *dir,
                              const char *id, const ac_session_options *opts, ac_error *err)
{
    srv *sv = ud;
    srv_sess *ps = srv_sess_of(parent);
    if (!ps || !ps->stored_id || !ps->agent) /* an OpenAI-compatible request's: not stored */
        return ac_session_new_opts(ac_session_engine(parent), id, opts, err);
    const char *own = srv_owner_id(ps->stored_id, id);
    if (own == id) {
        set_err(err, AC_EINVAL, "the child's id is not its parent's owner's");
        return NULL;
    }
    srv_sess *cs = srv_sess_stored(sv, id);
    if (cs && cs->freeing) {
        set_err(err, AC_EBUSY, "its session is being removed");
        return NULL;
    }
    /* stored already: the call runs again (a restart), the child goes on. On PostgreSQL it
     * was read ahead with its parent's load and is loaded here waiting only when that read
     * failed, its parent was loaded at the start, or a later call names it by the same call
     * id once its own call ended: a child is not unloaded while its call is open */
    if (cs) {
        if (!cs->s && srv_sess_load(cs, err) < 0)
            return NULL;
        cs->in_call = 1;
        return cs->s;
    }
    srv_engine *agent = srv_agent_of_entry(sv, ps->agent, entry, dir, NULL, err);
    if (!agent)
        return NULL;
    /* none stored: a parent made here (each child known here), or loaded with its calls read
     * and none of them this child (a row made elsewhere all the same: its first commit fails) */
    int is_new = ps->fresh || (ps->calls_known && !find_call(ps->children, own));
    cs = srv_sess_child(sv, ps, own, agent, opts, is_new, err);
    return cs ? cs->s : NULL;
}

/* The call is done with its child: it stays a session of the server. */
static void close_child(void *ud, ac_session *child)
{
    srv *sv = ud;
    srv_sess *cs = srv_sess_of(child);
    if (!cs) {
        ac_session_free(child);
        return;
    }
    cs->in_call = 0;
    cs->last_active_ms = ac_loop_now_ms(sv->loop);
}

/* ---- handoffs ---- */

static void handoff_failed(srv_sess *ss, const char *why)
{
    fprintf(stderr, "agentc serve: session '%s': the handoff failed: %s\n", ss->id, why);
    srv_sess_say(ss, "error", json_pack("{s:s, s:s}", "code", "handoff_failed", "message", why));
}

/* ss opened again on its new agent's engine (err NULL), or not (why in err): resumed, or the
 * handoff failed. */
void srv_children_reopened(srv_sess *ss, const ac_error *err)
{
    if (err || !ss->s) {
        handoff_failed(ss, err && err->text[0] ? err->text : "the session is being removed");
        return;
    }
    if (ss->handoff_timer) /* the open saw the transfer it is moved for: done */
        ac_loop_cancel_timer(ss->sv->loop, ss->handoff_timer);
    ss->handoff_timer = 0;
    if (ac_session_post(ss->s, "resume", NULL, 0) < 0)
        handoff_failed(ss, "the session cannot resume under the new agent");
}

/* Opens ss again on its new agent's engine (from the change's snapshot), reading it here. */
static void reopen_fired(void *ud)
{
    srv_sess *ss = ud;
    ac_error err = {0};
    ss->handoff_timer = 0;
    if (ss->freeing || (!ss->s && srv_sess_open(ss, AC_STORE_MUST_EXIST, NULL, &err) < 0)) {
        srv_children_reopened(ss, &err);
        return;
    }
    srv_children_reopened(ss, NULL);
}

/* Records the change to the agent ss's handoff names, then frees ss's session: it is opened
 * again on the new agent's engine once its last commit is written (reopen_fired). */
static void handoff_fired(void *ud)
{
    srv_sess *ss = ud;
    srv *sv = ss->sv;
    ss->handoff_timer = 0;
    const char *dir, *entry = ss->s && !ss->freeing ? ac_session_handoff(ss->s, &dir) : NULL;
    if (!entry)
        return;
    if (++ss->handoffs > SRV_MAX_HANDOFFS) {
        handoff_failed(ss, "too many handoffs in one turn: stopped (the agents hand the "
                           "conversation on in a loop)");
        return;
    }
    if (!ss->stored_id || !ss->agent) {
        handoff_failed(ss, "a handoff moves a stored session to another agent: this one is not "
                           "stored");
        return;
    }
    char *what = NULL;
    ac_error err = {0};
    srv_engine *to = srv_agent_of_entry(sv, ss->agent, entry, dir ? dir : ".", &what, &err);
    if (to == ss->agent) { /* moved already (stopped before its resume): it goes on */
        free(what);
        srv_engine_release(sv, to);
        if (ac_session_post(ss->s, "resume", NULL, 0) < 0)
            handoff_failed(ss, "the session cannot resume under the new agent");
        return;
    }
    int rc = to ? ac_session_change_agent_on(ss->s, "handoff", what ? what : "[\"agent\"]",
                                             srv_engine_record(to), srv_engine_get(to), &err)
                : AC_ECONFIG;
    free(what);
    if (rc != AC_OK) {
        srv_engine_release(sv, to);
        handoff_failed(ss, err.text[0] ? err.text : "out of memory");
        return;
    }
    srv_sess_delete_wake(ss);
    srv_sess_live_end(ss);
    /* PostgreSQL: reopened once its last commit is written, from its rows read ahead (load.c) */
    int ahead = srv_load_reopen(sv, ss) == 0;
    ac_session_set_userdata(ss->s, NULL);
    ac_session_free(ss->s); /* its last commit goes with the store's group, on this turn */
    ss->s = NULL;
    srv_engine_release(sv, ss->agent);
    ss->agent = to;
    if (!ahead) /* SQLite: opened from a timer, its reads made there */
        ss->handoff_timer = ac_loop_timer(sv->loop, 0, reopen_fired, ss);
}

void srv_children_turn_ended(srv_sess *ss)
{
    if (!ss->s || ss->handoff_timer)
        return;
    if (ac_session_handoff(ss->s, NULL))
        ss->handoff_timer = ac_loop_timer(ss->sv->loop, 0, handoff_fired, ss);
    else
        ss->handoffs = 0; /* a turn answered: the next may hand on again */
}

/* ---- what a session's view says of its calls ---- */

static json_t *find_call(const json_t *children, const char *sid)
{
    size_t i;
    json_t *c;
    json_array_foreach(children, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "session"));
        if (id && !strcmp(id, sid))
            return c;
    }
    return NULL;
}

void srv_sess_calls_read(srv_sess *ss, json_t **calls)
{
    if (!ss->s || !*calls)
        return;
    json_decref(ss->children); /* what its journal says now */
    ss->children = *calls;
    *calls = NULL;
    ss->calls_known = 1;
}

void srv_children_keep(json_t *children, const char *stored_id, const char *ev, const char *data)
{
    int started = !strcmp(ev, AC_AGENT_STARTED);
    if (!started && strcmp(ev, AC_AGENT_DONE))
        return;
    json_t *d = json_loads(data, 0, NULL);
    const char *sid = json_string_value(json_object_get(d, "session"));
    sid = sid && stored_id ? srv_owner_id(stored_id, sid) : sid;
    json_t *c = sid ? find_call(children, sid) : NULL;
    if (sid && !c) {
        c = json_pack("{s:s, s:O, s:O}", "session", sid, "agent", json_object_get(d, "agent"),
                      "call", json_object_get(d, "call"));
        json_array_append_new(children, c);
    }
    if (c && !started) {
        json_object_set(c, "ok", json_object_get(d, "ok"));
        json_object_set(c, "outcome", json_object_get(d, "outcome"));
    } else if (c) { /* called again (a restart, a resume after a pause): running again */
        json_object_set(c, "call", json_object_get(d, "call"));
        json_object_del(c, "ok");
        json_object_del(c, "outcome");
    }
    json_decref(d);
}

/* A record of a call in ss's journal (agent.started, agent.done) kept in ss->children. */
static void keep_call(srv_sess *ss, const char *ev, const char *data)
{
    srv_children_keep(ss->children, ss->stored_id, ev, data);
}

void srv_children_commit(srv_sess *ss, const ac_store_event *evs, size_t n)
{
    for (size_t i = 0; ss->children && i < n; i++)
        keep_call(ss, evs[i].ev, evs[i].data);
}

static int read_call(void *ud, const ac_store_event *ev)
{
    keep_call(ud, ev->ev, ev->data);
    return 0;
}

void srv_children_read(srv_sess *ss)
{
    if (!ss->children && ss->stored_id && (ss->children = json_array()) &&
        ac_store_events(ss->sv->store, ss->stored_id, ss->forgotten, read_call, ss, NULL) !=
            AC_OK) {
        json_decref(ss->children); /* read again next time */
        ss->children = NULL;
    }
}

void srv_children_view(srv_sess *ss, json_t *o)
{
    const char *parent = ss->s ? ac_session_parent(ss->s) : NULL;
    json_t *p = parent ? json_loads(parent, 0, NULL) : NULL;
    const char *psid = json_string_value(json_object_get(p, "session"));
    if (psid && ss->stored_id)
        json_object_set_new(p, "session", json_string(srv_owner_id(ss->stored_id, psid)));
    if (p)
        json_object_set_new(o, "parent", p);
    /* On PostgreSQL every load made while the loop serves keeps the calls read with its rows
     * (a request's, a claim's, a handoff's reopening, a call's child read ahead with its
     * parent), and a session claimed at the start read them then (srv_children_read): this
     * read waits only where those reads failed or could not be sent, and for a call's child
     * loaded when its call ran (docs/postgresql.md, what still blocks the loop). */
    srv_children_read(ss);
    if (json_array_size(ss->children))
        json_object_set(o, "children", ss->children);
}

void srv_children_init(srv *sv)
{
    sv->opener.ud = sv;
    sv->opener.open = open_child;
    sv->opener.close = close_child;
    sv->opener.handoffs = true; /* every session of the server but the ephemeral is stored */
}

/* ---- the children of a parent's unfinished calls, read ahead with its load ---- */

typedef struct srv_kid {
    struct srv_kids *k;
    ac_store_ahead *a;
    json_t *calls;                 /* its own calls, for its view (NULL: read by that view) */
    int leasing, reading, calling; /* not answered yet */
    int lease_rc, read_rc;
    int64_t attempt;
} srv_kid;

struct srv_kids {
    srv *sv;
    srv_kid *v;
    size_t n;
    size_t pending; /* answers still to come */
    void (*done)(void *ud);
    void *ud;
};

/* The stored id of a call's child (its parent's, pid, "OWNER/ID"; the call names it as its
 * parent's owner does) when the call has not ended; else 0. */
static int unfinished_child(const char *pid, const json_t *c, char *out, size_t cap)
{
    const char *sid = json_string_value(json_object_get(c, "session"));
    const char *slash = strchr(pid, '/');
    if (!sid || json_object_get(c, "ok") || !slash)
        return 0;
    int n = strchr(sid, '/') ? snprintf(out, cap, "%s", sid)
                             : snprintf(out, cap, "%.*s/%s", (int)(slash - pid), pid, sid);
    return n > 0 && (size_t)n < cap;
}

/* Another load of child cid under way here (a claim's, a request's, a reopening): it loads it. */
static int kid_loading(srv *sv, const char *cid)
{
    return srv_load_pending(sv, cid) || srv_workers_loading(sv, cid);
}

int srv_kids_busy(srv *sv, const srv_kids *own, const char *pid, const json_t *calls)
{
    size_t i;
    json_t *c;
    char cid[300];
    json_array_foreach(calls, i, c)
    {
        if (unfinished_child(pid, c, cid, sizeof cid) && !srv_kids_has(own, cid) &&
            kid_loading(sv, cid))
            return 1;
    }
    return 0;
}

static void kid_answered(srv_kids *k)
{
    if (--k->pending == 0 && k->done)
        k->done(k->ud);
}

static void kid_leased(void *ud, int rc, int64_t attempt, const char *error)
{
    srv_kid *kid = ud;
    (void)error;
    kid->leasing = 0;
    kid->lease_rc = rc;
    kid->attempt = attempt;
    if (rc == AC_OK)
        ac_store_ahead_set_attempt(kid->a, attempt);
    kid_answered(kid->k);
}

static void kid_read(void *ud, int rc, const char *error)
{
    srv_kid *kid = ud;
    (void)error;
    kid->reading = 0;
    kid->read_rc = rc;
    kid_answered(kid->k);
}

static int kid_call(void *ud, const ac_store_event *ev)
{
    srv_kid *kid = ud;
    srv_children_keep(kid->calls, ac_store_ahead_id(kid->a), ev->ev, ev->data);
    return 0;
}

static void kid_calls(void *ud, int rc, const char *error)
{
    srv_kid *kid = ud;
    (void)error;
    kid->calling = 0;
    if (rc != AC_OK) {
        json_decref(kid->calls);
        kid->calls = NULL;
    }
    kid_answered(kid->k);
}

/* kid's lease taken, then its rows and its calls read, on the wake-up connection: 1; 0 when
 * none was sent. */
static int kid_ask(srv *sv, srv_kid *kid, const char *cid)
{
    if (!(kid->a = ac_store_ahead_new(cid, 0)))
        return 0;
    kid->leasing = ac_notify_acquire(sv->notify, cid, ac_store_holder(sv->store),
                                     ac_store_lease_ms(sv->store), kid_leased, kid) == 0;
    kid->reading = kid->leasing && ac_notify_ahead(sv->notify, kid->a, kid_read, kid) == 0;
    kid->lease_rc = kid->read_rc = AC_EIO;
    kid->calls = kid->reading ? json_array() : NULL;
    kid->calling =
        kid->calls && ac_notify_events(sv->notify, cid, 0, kid_call, kid_calls, kid) == 0;
    if (!kid->calling) {
        json_decref(kid->calls);
        kid->calls = NULL;
    }
    kid->k->pending += (size_t)kid->leasing + (size_t)kid->reading + (size_t)kid->calling;
    if (!kid->leasing)
        ac_store_ahead_free(kid->a);
    if (!kid->leasing)
        kid->a = NULL;
    return kid->leasing;
}

srv_kids *srv_kids_read(srv *sv, const char *pid, const json_t *calls, void (*done)(void *),
                        void *ud)
{
    size_t i, n = json_array_size(calls);
    json_t *c;
    char cid[300];
    srv_kids *k = sv->notify && n ? calloc(1, sizeof *k) : NULL;
    if (!k || !(k->v = calloc(n, sizeof *k->v))) {
        free(k);
        return NULL;
    }
    k->sv = sv;
    json_array_foreach(calls, i, c)
    {
        srv_sess *cs = unfinished_child(pid, c, cid, sizeof cid) ? srv_sess_stored(sv, cid) : NULL;
        if (!unfinished_child(pid, c, cid, sizeof cid) || (cs && (cs->s || cs->reopening)) ||
            kid_loading(sv, cid))
            continue;
        srv_kid *kid = &k->v[k->n];
        kid->k = k;
        k->n += (size_t)kid_ask(sv, kid, cid);
    }
    if (!k->pending) {
        srv_kids_free(sv, k);
        return NULL;
    }
    k->done = done;
    k->ud = ud;
    return k;
}

int srv_kids_has(const srv_kids *k, const char *cid)
{
    for (size_t i = 0; k && i < k->n; i++)
        if (k->v[i].a && !strcmp(ac_store_ahead_id(k->v[i].a), cid))
            return 1;
    return 0;
}

size_t srv_kids_pending(const srv_kids *k)
{
    return k ? k->pending : 0;
}

/* kid loaded from its rows (its session made known here first), or its lease given up. */
static void kid_load(srv *sv, srv_kid *kid)
{
    const char *cid = ac_store_ahead_id(kid->a);
    const char *slash = strchr(cid, '/');
    srv_sess *cs = srv_sess_stored(sv, cid);
    ac_error err = {0};
    int ok = kid->lease_rc == AC_OK && kid->read_rc == AC_OK && slash && !sv->stopping &&
             !(cs && (cs->s || cs->freeing || cs->reopening));
    if (ok && !cs) {
        char owner[128];
        snprintf(owner, sizeof owner, "%.*s", (int)(slash - cid), cid);
        cs = srv_sess_known(sv, srv_owner_named(sv, owner), cid,
                            ac_store_ahead_info(kid->a)->created_ms);
    }
    if (ok && cs) {
        ac_store_ahead_begin(sv->store, kid->a);
        ok = srv_sess_load(cs, &err) == 0;
        ac_store_ahead_end(sv->store);
        if (ok)
            srv_sess_calls_read(cs, &kid->calls); /* its view's calls, read with its rows */
        if (ok)
            return;
        fprintf(stderr, "agentc serve: session '%s' (a call's) cannot be loaded: %s\n", cid,
                err.text);
    }
    if (kid->lease_rc == AC_OK) /* fenced by its attempt: nothing if it is another's by now */
        ac_notify_release(sv->notify, cid, ac_store_holder(sv->store), kid->attempt, NULL, NULL);
}

void srv_kids_load(srv *sv, srv_kids *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        kid_load(sv, &k->v[i]);
        ac_store_ahead_free(k->v[i].a);
        json_decref(k->v[i].calls);
    }
    k->n = 0;
    srv_kids_free(sv, k);
}

void srv_kids_free(srv *sv, srv_kids *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        srv_kid *kid = &k->v[i];
        if (kid->lease_rc == AC_OK && sv->notify)
            ac_notify_release(sv->notify, ac_store_ahead_id(kid->a), ac_store_holder(sv->store),
                              kid->attempt, NULL, NULL);
        ac_store_ahead_free(kid->a);
        json_decref(kid->calls);
    }
    free(k->v);
    free(k);
}
