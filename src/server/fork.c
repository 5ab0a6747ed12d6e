/*
 * fork.c - POST /v1/sessions/{id}/fork: a stored session up to the end of one of its turns,
 * as a new session of the same owner; on PostgreSQL made without waiting, the request
 * suspended between its steps (srv_fork_next), or, one another worker forwarded here (no
 * connection), the same steps run from loop tasks and its inbox answer put off meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_int.h"
#include "store/store_ahead.h"

/* A fork on PostgreSQL made without waiting, the request suspended between its steps: the
 * original's commit under way waited for (srv_delete_waits), its rows read whole on the wake-up
 * connection (srv_remote_rows), the fork rebuilt here from them (ac_store_fork_with) and its
 * rows written there (srv_remote_fork), then the reply srv_fork_session gives. A request with no
 * connection (forwarded here) goes on after each wait by its r->resume, a loop task (fork_step):
 * its reply is kept for the inbox answer put off (srv_settle "forked"). */
typedef struct srv_fork {
    char id[160];   /* the original's, as its owner names it */
    char from[300]; /* the original's in the store */
    char to[400];   /* the new session's in the store */
    uint64_t turn, at;
    int step; /* the next: 0 its commit waited for, 1 its rows read, 2 rebuilt and written,
                 3 answered */
    struct MHD_Connection *c;
    req *r;
    enum MHD_Result ret;  /* srv_remote_fork's */
    json_t *calls;        /* the sub-agent calls of its journal up to at (children.c), or NULL */
    req *own;             /* forwarded here: its request, the fork's own (r) */
    ac_loop_task wake;    /* and its next step, run when a wait is over (own->resume) */
    ac_loop_task *answer; /* the inbox answer put off, deferred once the fork is over */
    unsigned status;      /* the reply once it is over (forwarded) */
    char *reply;
    int done, orphan; /* over; its answer was given without it (it frees itself when over) */
} srv_fork;

/* A record of the original's journal read ahead: kept in the fork's calls up to at. */
static int fork_call(void *ud, const ac_store_event *ev)
{
    srv_fork *fk = ud;
    if (ev->n > fk->at)
        return 1;
    srv_children_keep(fk->calls, fk->to, ev->ev, ev->data);
    return 0;
}

/* The fork's sub-agent calls, its view's, from the original's rows read ahead (no statement);
 * NULL (read at its first view) when they cannot be. */
static void fork_calls(srv *sv, srv_fork *fk)
{
    if ((fk->calls = json_array()) &&
        ac_store_events(sv->store, fk->from, 0, fork_call, fk, NULL) != AC_OK) {
        json_decref(fk->calls);
        fk->calls = NULL;
    }
}

void srv_fork_free(srv_fork *fk)
{
    if (!fk)
        return;
    json_decref(fk->calls);
    if (fk->own) {
        if (fk->own->fwd)
            srv_remote_abandon(fk->own->fwd);
        if (fk->wake.queued)
            ac_loop_undefer(fk->own->sv->loop, &fk->wake);
        free(fk->own);
    }
    free(fk->reply);
    free(fk);
}

static int fork_send(void *ud, const ac_store_fork_row *row, ac_error *err)
{
    (void)err;
    srv_fork *fk = ud;
    fk->ret = srv_remote_fork(fk->r->sv, fk->c, fk->r->resume, &fk->r->fwd, row);
    return AC_OK;
}

/* Its rows read: the fork rebuilt from them and its rows sent. */
static enum MHD_Result fork_rebuilt(srv *sv, struct MHD_Connection *c, req *r, srv_fork *fk)
{
    ac_store_ahead *rows = srv_remote_rows_taken(&r->fwd);
    char why[400];
    int rc = srv_remote_written(&r->fwd, why, sizeof why);
    srv_sess *ss = srv_sess_stored(sv, fk->from);
    ac_error err = {0};
    if (rc == AC_OK && rows && ss) {
        ac_store_ahead_begin(sv->store, rows);
        ac_engine *e = srv_sess_engine(ss);
        fk->c = c;
        fk->r = r;
        if (ac_store_turn_end(sv->store, e, fk->from, fk->turn, &fk->at, &err) == AC_OK) {
            fork_calls(sv, fk);
            rc = ac_store_fork_with(sv->store, e, fk->from, fk->at, fk->turn, fk->to, fork_send, fk,
                                    &err);
        } else
            rc = err.code;
        ac_store_ahead_end(sv->store);
    } else if (rc == AC_OK) {
        rc = ss ? AC_ENOMEM : AC_STORE_ENOENT;
        snprintf(err.text, sizeof err.text, "%s", ss ? "out of memory" : "no such session");
    } else {
        snprintf(err.text, sizeof err.text, "%s", why);
    }
    ac_store_ahead_free(rows);
    if (rc == AC_OK)
        return fk->ret;
    if (!ss) /* deleted meanwhile */
        return srv_reply_error(c, 404, "not_found", "no such session");
    return srv_reply_error(c, rc == AC_EINVAL ? 409 : 500, "fork_failed",
                           "cannot fork the session: %s", err.text);
}

/* Its rows written: the new session known here, and the reply. */
static enum MHD_Result fork_made(srv *sv, struct MHD_Connection *c, req *r, srv_fork *fk)
{
    char why[400];
    int rc = srv_remote_written(&r->fwd, why, sizeof why);
    if (rc != AC_OK)
        return srv_reply_error(c, rc == AC_EINVAL ? 409 : 500, "fork_failed",
                               "cannot fork the session: %s", why);
    srv_sess *fs = srv_sess_known(sv, r->owner, fk->to, ac_wall_now_ms());
    if (!fs)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    fs->children = fk->calls;
    fk->calls = NULL;
    return srv_reply_json(c, 201,
                          json_pack("{s:s, s:{s:s, s:I, s:I}}", "id", fs->id, "forked_from", "id",
                                    fk->id, "at_turn", (json_int_t)fk->turn, "at_event",
                                    (json_int_t)fk->at));
}

enum MHD_Result srv_fork_next(srv *sv, struct MHD_Connection *c, req *r)
{
    srv_fork *fk = r->fork;
    switch (fk->step++) {
    case 0: {
        srv_sess *ss = srv_sess_stored(sv, fk->from);
        if (ss && srv_delete_waits(sv, c, r, ss))
            return MHD_YES; /* its commit is durable first: the fork reads what it wrote */
    }
        fk->step = 2;
        /* fall through */
    case 1: {
        ac_store_ahead *rows = ac_store_ahead_new(fk->from, 0);
        if (!rows)
            return srv_reply_error(c, 503, "out_of_memory", "out of memory");
        return srv_remote_rows(sv, c, r->resume, &r->fwd, rows);
    }
    case 2:
        return fork_rebuilt(sv, c, r, fk);
    default:
        return fork_made(sv, c, r, fk);
    }
}

/* Its next step; the server stopping, none begins that would wait (answered 503, as a request
 * waiting for the store then is). */
static void fork_go(void *ud)
{
    srv_fork *fk = ud;
    if (fk->own->sv->stopping && !fk->own->fwd)
        srv_reply_error(NULL, 503, "stopping", "the server is stopping");
    else
        srv_fork_next(fk->own->sv, NULL, fk->own);
}

/* A forwarded fork's next step (its wake): its reply, once it makes one, kept for the inbox
 * answer put off, which is then told (or, given up already, the fork freed). */
static void fork_step(void *ud)
{
    srv_fork *fk = ud;
    srv_capture_run(fork_go, fk, &fk->status, &fk->reply);
    if (!fk->status)
        return; /* waiting: its wake is deferred once the wait is over */
    fk->done = 1;
    if (fk->orphan) {
        srv_fork_free(fk);
        return;
    }
    if (fk->answer)
        ac_loop_defer(fk->own->sv->loop, fk->answer);
    fk->answer = NULL;
}

int srv_fork_when_done(srv_fork *fk, ac_loop_task *task)
{
    if (fk->done)
        return 0;
    fk->answer = task;
    return 1;
}

void srv_fork_answer(srv_fork *fk, unsigned *status, char **reply)
{
    if (!fk->done) { /* no memory to wait for it: the sender is told so */
        fk->orphan = 1;
        *status = 503;
        *reply = strdup("{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory; "
                        "the fork may still be made\"}}");
        return;
    }
    *status = fk->status;
    *reply = fk->reply;
    fk->reply = NULL;
    srv_fork_free(fk);
}

/* The fork's steps begun (srv_fork_next): sid the new session's id in the store. Forwarded here
 * (c NULL), its request is its own and its answer put off (srv_settle "forked"). */
static enum MHD_Result fork_begin(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                  const char *sid, uint64_t turn)
{
    srv_fork *fk = calloc(1, sizeof *fk);
    srv_settle *later = c ? NULL : srv_captured_later();
    if (!fk || (!c && (!later || !(fk->own = calloc(1, sizeof *fk->own))))) {
        free(fk);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    snprintf(fk->id, sizeof fk->id, "%s", ss->id);
    snprintf(fk->from, sizeof fk->from, "%s", ss->stored_id);
    snprintf(fk->to, sizeof fk->to, "%s", sid);
    fk->turn = turn;
    if (c) {
        r->fork = fk;
        return srv_fork_next(sv, c, r);
    }
    fk->own->owner = r->owner;
    fk->own->sv = sv;
    fk->own->fork = fk;
    fk->own->resume = &fk->wake;
    fk->r = fk->own;
    fk->wake.fn = fork_step;
    fk->wake.ud = fk;
    snprintf(later->how, sizeof later->how, "forked");
    later->code = 201;
    snprintf(later->id, sizeof later->id, "%s", ss->id);
    later->owner = r->owner;
    later->fork = fk;
    fork_step(fk);
    return MHD_YES;
}

/* The stored session ss up to the end of its turn at_turn, as a new session of the same
 * owner (store.h: ac_store_fork): {"at_turn": N, "id"?}. */
enum MHD_Result srv_fork_session(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss)
{
    static const char *const keys[] = {"at_turn", "id", NULL};
    enum MHD_Result ret = MHD_NO;
    json_t *o = srv_parse_body(c, r, keys, 0, &ret);
    if (!o)
        return ret;
    const char *id;
    json_t *turn = json_object_get(o, "at_turn");
    if (srv_optional_string(c, o, "id", &id, &ret)) {
        json_decref(o);
        return ret;
    }
    char auto_id[200], sid[400];
    if (!id)
        snprintf(auto_id, sizeof auto_id, "%.128s-fork%llu", ss->id,
                 (unsigned long long)++sv->next_auto_id);
    id = id ? id : auto_id;
    int bad = !json_is_integer(turn) || json_integer_value(turn) < 1, bad_id = !srv_valid_id(id);
    int taken = !bad && !bad_id && srv_sess_find(sv, r->owner, id) != NULL;
    snprintf(sid, sizeof sid, "%s/%s", ss->owner_name, id);
    uint64_t at = 0, n = bad ? 0 : (uint64_t)json_integer_value(turn);
    json_decref(o); /* id is not used from here on: sid holds it */
    if (bad || bad_id)
        return srv_reply_error(c, 400, bad ? "invalid_turn" : "invalid_id",
                               bad ? "at_turn must be a turn number from 1"
                                   : "a session id is 1 to 128 of A-Z a-z 0-9 . _ -");
    if (taken)
        return srv_reply_error(c, 409, "session_exists", "a session with this id exists");
    if (r->owner->sessions >= sv->cfg->sessions_per_token)
        return srv_reply_error(c, 429, "too_many_sessions",
                               "this token has %zu sessions, the limit; delete one first",
                               r->owner->sessions);
    if (sv->notify && sv->loop && ss->stored_id) /* PostgreSQL: without waiting */
        return fork_begin(sv, c, r, ss, sid, n);
    ac_error err = {0};
    ac_engine *e = srv_sess_engine(ss);
    if (ac_store_turn_end(sv->store, e, ss->stored_id, n, &at, &err) != AC_OK ||
        ac_store_fork(sv->store, e, ss->stored_id, at, n, sid, &err) != AC_OK)
        return srv_reply_error(c, err.code == AC_EINVAL ? 409 : 500, "fork_failed",
                               "cannot fork the session: %s", err.text);
    srv_sess *fs = srv_sess_known(sv, r->owner, sid, ac_wall_now_ms());
    if (!fs)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    return srv_reply_json(c, 201,
                          json_pack("{s:s, s:{s:s, s:I, s:I}}", "id", fs->id, "forked_from", "id",
                                    ss->id, "at_turn", (json_int_t)n, "at_event", (json_int_t)at));
}
