/*
 * delete.c - DELETE /v1/sessions/{id}: the session dropped here at once; on PostgreSQL its
 * commit under way waited for (or, still in flight, muted first) with the request suspended,
 * then its rows removed on the wake-up connection, fenced by its lease's attempt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_int.h"
#include "store/store_notify.h"

/* DELETE of a session run here or by nobody: the session goes from here at once. On
 * PostgreSQL it is removed from the store on the wake-up connection (fenced by its lease's
 * attempt), the request suspended meanwhile (srv_removed_reply answers), and what it buffered is
 * dropped, not committed first; a request forwarded here (c NULL) is answered at once, its
 * answer written to the inbox after the removal (one connection, statements in order). */
/* A removal that failed is said on stderr (its request was answered as removed). */
static void rm_said(void *ud, int rc, const char *error)
{
    char *sid = ud;
    if (rc != AC_OK && rc != AC_STORE_ENOENT)
        fprintf(stderr, "agentc serve: cannot remove session '%s' from the store: %s\n", sid,
                error ? error : "");
    free(sid);
}

/* The request goes on: its connection resumed, or (forwarded here, none) its resume deferred. */
static void delete_resume(void *ud)
{
    req *r = ud;
    srv_sess *ss = r->delete_ss;
    r->delete_ss = NULL;
    ss->delete_task = NULL;
    ss->delete_conn = NULL;
    if (r->delete_conn)
        MHD_resume_connection(r->delete_conn);
    else if (r->resume && !r->resume->queued)
        ac_loop_defer(r->sv->loop, r->resume);
    srv_kick(r->sv);
}

/* On PostgreSQL, a commit of the session under way or due this loop turn: the request (a DELETE,
 * a fork) suspended until it is done (no commit waited for on the loop), then it runs again (a
 * renewal of its lease may be under way by then: waited for too, three times at most); one with
 * no connection (forwarded here) has its r->resume deferred instead. 1 when it waits. */
int srv_delete_waits(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss)
{
    if (!sv->notify || (!c && !r->resume) || !ss->s || ss->delete_task || !sv->loop ||
        r->delete_waited >= 3)
        return 0;
    r->delete_wait.fn = delete_resume;
    r->delete_wait.ud = r;
    if (!ac_store_when_durable(ss->s, &r->delete_wait))
        return 0;
    r->delete_waited++;
    r->delete_ss = ss;
    r->delete_conn = c;
    ss->delete_task = &r->delete_wait;
    ss->delete_conn = c;
    if (c) /* srv_sess_delete_wake resumes it if the session goes first */
        MHD_suspend_connection(c);
    return 1;
}

/* On PostgreSQL, a commit of the session still in flight when it is to be removed: muted at
 * once (nothing more committed), the request (local: suspended, resumed as srv_delete_waits' is;
 * forwarded: its answer put off, srv_settle "deleted") waits until that commit is over, then
 * the removal. 1 when it waits. */
static int delete_muted(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss)
{
    if (!sv->notify || !ss->s || !ss->stored_id || r->delete_muted || ss->discarded)
        return 0;
    int64_t attempt = ac_store_session_attempt(ss->s);
    if (!c) { /* forwarded: the inbox answer waits (remote.c answer_settled) */
        srv_settle *later = srv_captured_later();
        if (!later || strlen(ss->id) >= sizeof later->id ||
            !ac_store_session_discard_when(ss->s, NULL))
            return 0;
        ss->discarded = 1;
        ss->delete_attempt = attempt;
        snprintf(later->how, sizeof later->how, "deleted");
        later->code = 200;
        snprintf(later->id, sizeof later->id, "%s", ss->id);
        later->owner = r->owner;
        return 1;
    }
    if (ss->delete_task || !sv->loop)
        return 0;
    r->delete_wait.fn = delete_resume;
    r->delete_wait.ud = r;
    if (!ac_store_session_discard_when(ss->s, &r->delete_wait))
        return 0;
    r->delete_muted = 1;
    r->delete_attempt = attempt;
    r->delete_ss = ss;
    r->delete_conn = c;
    ss->delete_task = &r->delete_wait;
    ss->delete_conn = c;
    MHD_suspend_connection(c);
    return 1;
}

enum MHD_Result srv_delete_session(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                   const char *id)
{
    if (ss->s && !r->delete_muted && !ss->discarded)
        srv_sess_say(ss, "stopped",
                     json_pack("{s:s, s:s}", "reason", "deleted", "partial_response",
                               ac_session_partial(ss->s)));
    char *sid = ss->stored_id ? strdup(ss->stored_id) : NULL;
    if (!sv->notify || !sid || strlen(id) >= sizeof r->removed_id) {
        free(sid);
        srv_sess_drop(ss, 1);
        return srv_reply_json(c, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
    }
    if (delete_muted(sv, c, r, ss)) {
        free(sid);
        return MHD_YES;
    }
    int64_t attempt = r->delete_muted ? r->delete_attempt
                      : ss->discarded ? ss->delete_attempt
                      : ss->s         ? ac_store_session_attempt(ss->s)
                                      : 0; /* its removal's fence */
    if (ss->s)
        ac_store_session_discard(ss->s); /* nothing of it in flight now: at once */
    srv_sess_drop(ss, 0);
    if (c) {
        snprintf(r->removed_id, sizeof r->removed_id, "%s", id);
        enum MHD_Result ret = srv_remote_rm(sv, c, &r->fwd, sid, attempt);
        free(sid);
        return ret;
    }
    /* forwarded: its answer, an inbox statement, goes on the wake-up connection after it */
    if (ac_notify_rm(sv->notify, sid, ac_store_holder(sv->store), attempt, rm_said, sid) != 0) {
        rm_said(sid, ac_store_rm_fenced(sv->store, sid, attempt, NULL), "out of memory");
    }
    return srv_reply_json(c, 200, json_pack("{s:s, s:b}", "id", id, "deleted", 1));
}

/* The answer to a DELETE whose removal (srv_delete_session) is over: as a removal made at once
 * (a failed one is said on stderr). */
enum MHD_Result srv_removed_reply(struct MHD_Connection *c, req *r)
{
    char why[400] = "";
    int rc = srv_remote_written(&r->fwd, why, sizeof why);
    if (rc != AC_OK && rc != AC_STORE_ENOENT)
        fprintf(stderr, "agentc serve: cannot remove session '%s' from the store: %s\n",
                r->removed_id, why);
    return srv_reply_json(c, 200, json_pack("{s:s, s:b}", "id", r->removed_id, "deleted", 1));
}
