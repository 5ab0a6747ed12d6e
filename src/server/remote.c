/*
 * remote.c - `agentc serve` as one of several workers on a PostgreSQL store: the sessions
 * another worker runs, seen from this one.
 *
 * Wake-ups: every journal commit here is told to the others ("e SESSION N", after it is
 * durable, coalesced by store_notify.c); a stream here of a session another worker runs makes
 * its frames of the journal's events read from the store when told (remote_tail, on the
 * wake-up connection: never waited for), and every second in case a wake-up was lost. The frames
 * are frames.c's of the same journal: the same ids and bytes as the holder's own readers get.
 *
 * Inbox: a request for a session another live worker holds (its view, a message, an outside
 * event, pause, resume, cancel, close, delete, fork: all but its stream) is put in the inbox
 * for that worker and its connection suspended (the session's lease read on the wake-up
 * connection first, never waited for); the holder takes it, answers it as it answers
 * its own requests (srv_answer_forwarded) and the answer is replied here as it is. Past
 * --forward-timeout-ms the request is withdrawn (if the holder has not taken it: then it is
 * never applied) and answered 504 worker_timeout. A session nobody runs is loaded here (its
 * lease claimed), as a request for it always did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"
#include "store/store_ahead.h"
#include "store/store_notify.h"

#define POLL_MS 1000
#define TAKEN_GRACE_MS 2000 /* taken by the holder at the deadline: its answer is that near */

struct srv_fwd {
    srv_fwd *next; /* in sv->fwds */
    srv *sv;
    struct MHD_Connection *conn; /* suspended; NULL once its request is over */
    ac_loop_task *resume; /* a request with no connection (forwarded here): deferred instead */
    int64_t id;           /* its inbox row (0: not stored yet) */
    uint64_t timer;
    int busy;             /* one statement of it is under way */
    int past;             /* its deadline passed */
    int withdraw_due;     /* to be withdrawn (past its deadline): sent when nothing else is */
    int taken;            /* too late to withdraw: its holder has it */
    int finished;         /* answered: status and reply */
    int gone;             /* its request no longer refers to it */
    int put_sent;         /* its inbox row is on its way (or stored: id) */
    int no_session;       /* its lease read found no session (deleted by another worker) */
    int looking;          /* only the session's row read for the request (srv_remote_look), or
                             the list (srv_remote_list) */
    int writing;          /* a write for the request (srv_remote_create, srv_remote_rm,
                             srv_remote_fork), or a read of rows (srv_remote_rows) */
    ac_store_ahead *rows; /* those rows (srv_remote_rows): its own until taken */
    int look_rc;          /* its answer: AC_OK (look), AC_STORE_ENOENT or AC_EIO */
    ac_store_session_info look;
    ac_store_list_fn each;        /* a list's rows told to it (srv_remote_list) */
    ac_store_event_fn each_event; /* a journal's events told to it (srv_remote_events) */
    void *each_ud;
    unsigned status; /* 0: it was not handled there (the request goes on here) */
    char *reply;
    char *method, *route, *body, *owner; /* the request, until it is put in the inbox */
    uint64_t retry_timer;                /* the lease read again (the store did not answer) */
    char session[300];
    char holder[128]; /* the worker it was sent to */
};

static void maybe_free(srv_fwd *f)
{
    if (f->busy || !f->finished || !f->gone || (f->withdraw_due && f->sv->notify))
        return;
    for (srv_fwd **pp = &f->sv->fwds; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    ac_loop_cancel_timer(f->sv->loop, f->timer);
    ac_loop_cancel_timer(f->sv->loop, f->retry_timer);
    free(f->reply);
    free(f->method);
    free(f->route);
    free(f->body);
    free(f->owner);
    ac_store_ahead_free(f->rows);
    free(f);
}

/* The request is answered: status and reply (JSON text), its connection resumed (or, one with
 * none, its resume deferred). */
static void finish(srv_fwd *f, unsigned status, const char *reply)
{
    if (f->finished)
        return;
    f->finished = 1;
    f->status = status;
    f->reply = reply ? strdup(reply) : NULL;
    ac_loop_cancel_timer(f->sv->loop, f->timer);
    f->timer = 0;
    if (f->conn) {
        MHD_resume_connection(f->conn);
        srv_kick(f->sv);
    } else if (f->resume && !f->gone && !f->resume->queued && f->sv->loop) {
        ac_loop_defer(f->sv->loop, f->resume);
    }
}

static void finish_error(srv_fwd *f, unsigned status, const char *code, const char *msg)
{
    if (status == 504 && !f->finished && !f->looking) /* the operator sees which worker */
        fprintf(stderr,
                "agentc serve: a %s for session '%s' was not answered by worker '%s' within "
                "--forward-timeout-ms (%s): %s\n",
                f->method ? f->method : "request", f->session, *f->holder ? f->holder : "(unknown)",
                !f->put_sent ? "its lease not read"
                : f->taken   ? "taken"
                             : "not taken",
                msg);
    json_t *o = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    finish(f, status, s);
    free(s);
}

static void on_answer(void *ud, int state, int status, const char *reply);

/* Withdrawn: the worker it was sent to still holds the session's lease (and is alive), so it
 * did not answer in time; or it went meanwhile, and the request goes on here as if it had not
 * been sent. A lease that cannot be read counts as held (the request was not applied). */
static void on_still_held(void *ud, int rc, const ac_store_session_info *info, const char *error)
{
    srv_fwd *f = ud;
    (void)error;
    f->busy = 0;
    if (rc == AC_STORE_ENOENT || (rc == AC_OK && strcmp(info->holder, f->holder) != 0))
        finish(f, 0, NULL);
    else
        finish_error(f, 504, "worker_timeout",
                     "the worker running the session did not answer in time; the request was "
                     "withdrawn (not applied): send it again");
    maybe_free(f);
}

/* The withdrawal due, once nothing else of it is under way (one statement at a time). */
static void step(srv_fwd *f)
{
    if (f->busy || !f->withdraw_due || !f->id || !f->sv->notify)
        return;
    f->withdraw_due = 0;
    f->busy = ac_inbox_withdraw(f->sv->notify, f->id, on_answer, f) == 0;
    f->withdraw_due = !f->busy;
}

static void on_answer(void *ud, int state, int status, const char *reply)
{
    srv_fwd *f = ud;
    f->busy = 0;
    if (state == AC_INBOX_DONE) {
        f->withdraw_due = 0;
        finish(f, (unsigned)status, reply);
    } else if (state == AC_INBOX_WITHDRAWN) {
        f->withdraw_due = 0;
        f->busy = f->sv->notify && ac_notify_info(f->sv->notify, f->session, on_still_held, f) == 0;
        if (!f->busy)
            finish_error(f, 504, "worker_timeout",
                         "the worker running the session did not answer in time; the request "
                         "was withdrawn (not applied): send it again");
    } else if (state == AC_INBOX_TAKEN) {
        f->taken = 1;
    } else if (state == AC_INBOX_FAILED && f->past && !f->taken) {
        f->withdraw_due = 1; /* tried again at the next poll */
    }
    step(f);
    maybe_free(f);
}

static void poll_one(srv_fwd *f)
{
    step(f);
    if (f->busy || f->finished || !f->id || !f->sv->notify)
        return;
    f->busy = ac_inbox_poll(f->sv->notify, f->id, on_answer, f) == 0;
}

/* Its deadline: withdrawn unless taken; a taken one's answer gets TAKEN_GRACE_MS more, then
 * it is answered without it (saying it may have been applied). */
static void on_deadline(void *ud)
{
    srv_fwd *f = ud;
    f->timer = 0;
    if (f->looking) { /* the row was not read in time: the request is told the store failed */
        finish(f, 0, NULL);
        maybe_free(f);
        return;
    }
    if (!f->put_sent) { /* the lease was never read: nothing was sent */
        f->past = 1;
        finish_error(f, 504, "worker_timeout",
                     "the store did not say in time which worker runs the session; the request "
                     "was not sent (not applied): send it again");
        maybe_free(f);
        return;
    }
    if (!f->past) {
        f->past = 1;
        f->withdraw_due = 1;
        f->timer = ac_loop_timer(f->sv->loop, TAKEN_GRACE_MS, on_deadline, f);
        step(f);
        return;
    }
    finish_error(f, 504, "worker_timeout",
                 f->taken ? "the worker running the session took the request and did not answer "
                            "in time: it may have been applied"
                          : "the request could not be withdrawn from the worker running the "
                            "session in time: it may still be applied");
    maybe_free(f);
}

static void on_put(void *ud, int64_t id, const char *error)
{
    srv_fwd *f = ud;
    f->busy = 0;
    f->id = id;
    if (!id) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "the request could not be handed to the worker running the session: %s",
                 error ? error : "");
        f->withdraw_due = 0;
        finish_error(f, 503, "forward_failed", msg);
    }
    step(f);
    maybe_free(f);
}

static void ask_where(void *ud);

/* The session's lease read: put in the inbox for its holder, or (no other live worker runs it)
 * answered "not handled there": the request goes on here. A read that failed (the connection
 * lost twice under it, the server restarting) is tried again until the deadline. */
static void on_where(void *ud, int rc, const ac_store_session_info *info, const char *error)
{
    srv_fwd *f = ud;
    (void)error;
    f->busy = 0;
    srv *sv = f->sv;
    if (f->finished || !sv->notify) {
        maybe_free(f);
        return;
    }
    if (rc == AC_EIO) {
        f->retry_timer = ac_loop_timer(sv->loop, 100, ask_where, f);
        return;
    }
    if (rc != AC_OK || !*info->holder || !strcmp(info->holder, ac_store_holder(sv->store))) {
        f->no_session = rc == AC_STORE_ENOENT;
        finish(f, 0, NULL);
        maybe_free(f);
        return;
    }
    snprintf(f->holder, sizeof f->holder, "%s", info->holder);
    ac_inbox_msg m = {0, f->session, f->owner, f->method, f->route, f->body};
    f->busy = f->put_sent = ac_inbox_put(sv->notify, &m, info->holder, on_put, f) == 0;
    if (!f->busy) {
        finish_error(f, 503, "out_of_memory", "out of memory");
        maybe_free(f);
    }
}

static void ask_where(void *ud)
{
    srv_fwd *f = ud;
    f->retry_timer = 0;
    f->busy = f->sv->notify && ac_notify_info(f->sv->notify, f->session, on_where, f) == 0;
    if (!f->busy) {
        finish_error(f, 503, "out_of_memory", "out of memory");
        maybe_free(f);
    }
}

/* The request suspended, its session's lease read on the wake-up connection (never waited for),
 * then put in its holder's inbox. */
enum MHD_Result srv_remote_forward(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                   const srv_sess *ss, const char *method, const char *route,
                                   const char *body, const char *owner)
{
    srv_fwd *f = calloc(1, sizeof *f);
    if (!f || !(f->method = strdup(method)) || !(f->route = strdup(route)) ||
        !(f->body = strdup(body ? body : "")) || !(f->owner = strdup(owner))) {
        if (f) {
            free(f->method);
            free(f->route);
            free(f->body);
        }
        free(f);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    f->sv = sv;
    f->conn = c;
    snprintf(f->session, sizeof f->session, "%s", ss->stored_id);
    if (ac_notify_info(sv->notify, f->session, on_where, f) != 0) {
        f->finished = f->gone = 1;
        f->next = sv->fwds;
        sv->fwds = f;
        maybe_free(f);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    f->busy = 1;
    f->timer = ac_loop_timer(sv->loop, sv->cfg->forward_timeout_ms, on_deadline, f);
    f->next = sv->fwds;
    sv->fwds = f;
    *slot = f;
    MHD_suspend_connection(c); /* the handler runs again once it is answered */
    return MHD_YES;
}

enum MHD_Result srv_remote_reply(struct MHD_Connection *c, srv_fwd **slot, int *retry)
{
    srv_fwd *f = *slot;
    *slot = NULL;
    *retry = f->status != 0 ? 0 : f->no_session ? 2 : 1;
    enum MHD_Result ret = MHD_YES;
    if (!*retry) {
        json_t *o = f->reply ? json_loads(f->reply, 0, NULL) : NULL;
        ret = o ? srv_reply_json(c, f->status, o)
                : srv_reply_error(c, 502, "bad_forward",
                                  "the worker running the session gave no answer");
    }
    f->conn = NULL;
    f->gone = 1;
    maybe_free(f);
    return ret;
}

void srv_remote_abandon(srv_fwd *f)
{
    f->conn = NULL;
    f->gone = 1;
    maybe_free(f);
}

/* ---- a session's row read for a request, its connection suspended meanwhile ---- */

static void on_looked(void *ud, int rc, const ac_store_session_info *info, const char *error)
{
    srv_fwd *f = ud;
    (void)error;
    f->busy = 0;
    if (!f->finished) {
        f->look_rc = rc;
        if (rc == AC_OK && info)
            f->look = *info;
        finish(f, 0, NULL);
    }
    maybe_free(f);
}

void srv_remote_sid(const srv_owner *owner, const char *id, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", owner->name ? owner->name : "local", id);
}

/* A read for the request, queued (sent: f is waited for) or not (out of memory). */
static enum MHD_Result look_wait(srv_fwd *f, srv_fwd **slot, int sent)
{
    struct MHD_Connection *c = f->conn;
    if (!sent) {
        free(f);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    f->busy = 1;
    f->timer = ac_loop_timer(f->sv->loop, f->sv->cfg->forward_timeout_ms, on_deadline, f);
    f->next = f->sv->fwds;
    f->sv->fwds = f;
    *slot = f;
    if (c)
        MHD_suspend_connection(c); /* the handler runs again once it is read */
    return MHD_YES;
}

static srv_fwd *look_new(srv *sv, struct MHD_Connection *c)
{
    srv_fwd *f = calloc(1, sizeof *f);
    if (f) {
        f->sv = sv;
        f->conn = c;
        f->looking = 1;
        f->look_rc = AC_EIO;
    }
    return f;
}

/* The row read on the wake-up connection (never waited for), the request suspended until it
 * comes or --forward-timeout-ms passes (then AC_EIO). */
enum MHD_Result srv_remote_look(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                const char *stored_id)
{
    srv_fwd *f = look_new(sv, c);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    snprintf(f->session, sizeof f->session, "%s", stored_id);
    return look_wait(f, slot, ac_notify_info(sv->notify, f->session, on_looked, f) == 0);
}

static int list_row(void *ud, const ac_store_session_info *info)
{
    srv_fwd *f = ud;
    return f->gone || f->finished ? 1 : f->each(f->each_ud, info);
}

static void on_listed(void *ud, int rc, const char *error)
{
    on_looked(ud, rc, NULL, error);
}

/* Every session's row told to each on the wake-up connection (never waited for), the request
 * suspended until the last one or --forward-timeout-ms (then AC_EIO). */
enum MHD_Result srv_remote_list(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                ac_store_list_fn each, void *ud)
{
    srv_fwd *f = look_new(sv, c);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    f->each = each;
    f->each_ud = ud;
    return look_wait(f, slot, ac_notify_list(sv->notify, list_row, on_listed, f) == 0);
}

static int events_row(void *ud, const ac_store_event *ev)
{
    srv_fwd *f = ud;
    return f->gone || f->finished ? 1 : f->each_event(f->each_ud, ev);
}

/* The session's journal events after `after` told to each on the wake-up connection (never
 * waited for), the request suspended until the last one or --forward-timeout-ms (then AC_EIO;
 * srv_remote_looked says which). */
enum MHD_Result srv_remote_events(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                  const char *stored_id, uint64_t after, ac_store_event_fn each,
                                  void *ud)
{
    srv_fwd *f = look_new(sv, c);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    snprintf(f->session, sizeof f->session, "%s", stored_id);
    f->each_event = each;
    f->each_ud = ud;
    return look_wait(
        f, slot, ac_notify_events(sv->notify, f->session, after, events_row, on_listed, f) == 0);
}

int srv_remote_looked(srv_fwd **slot, ac_store_session_info *info)
{
    srv_fwd *f = *slot;
    if (!f || !f->looking || f->writing)
        return SRV_NO_LOOK;
    *slot = NULL;
    int rc = f->look_rc;
    if (rc == AC_OK)
        *info = f->look;
    f->conn = NULL;
    f->gone = 1;
    maybe_free(f);
    return rc;
}

/* ---- a write for a request, its connection suspended meanwhile ---- */

enum { W_CREATE = 1, W_RM, W_ROWS, W_FORK };

static void on_written(void *ud, int rc, const char *error)
{
    srv_fwd *f = ud;
    f->busy = 0;
    if (!f->finished) {
        f->look_rc = rc;
        finish(f, 0, rc == AC_OK ? NULL : error);
    } else if (rc == AC_OK && (f->writing == W_CREATE || f->writing == W_FORK) && f->sv->notify) {
        /* made after its request was answered that the store did not answer: removed again */
        ac_notify_rm(f->sv->notify, f->session, ac_store_holder(f->sv->store), 1, NULL, NULL);
    }
    maybe_free(f);
}

static srv_fwd *write_new(srv *sv, struct MHD_Connection *c, const char *stored_id, int kind)
{
    srv_fwd *f = look_new(sv, c);
    if (f) {
        f->writing = kind;
        snprintf(f->session, sizeof f->session, "%s", stored_id);
    }
    return f;
}

enum MHD_Result srv_remote_create(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                                  const char *stored_id, const char *spec_hash, const char *params)
{
    srv_fwd *f = write_new(sv, c, stored_id, W_CREATE);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    ac_store *st = sv->store;
    return look_wait(f, slot,
                     ac_notify_create(sv->notify, f->session, spec_hash, params,
                                      ac_store_holder(st), ac_store_lease_ms(st), on_written,
                                      f) == 0);
}

enum MHD_Result srv_remote_rm(srv *sv, struct MHD_Connection *c, srv_fwd **slot,
                              const char *stored_id, int64_t attempt)
{
    srv_fwd *f = write_new(sv, c, stored_id, W_RM);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    return look_wait(f, slot,
                     ac_notify_rm(sv->notify, f->session, ac_store_holder(sv->store), attempt,
                                  on_written, f) == 0);
}

enum MHD_Result srv_remote_rows(srv *sv, struct MHD_Connection *c, ac_loop_task *resume,
                                srv_fwd **slot, ac_store_ahead *rows)
{
    srv_fwd *f = write_new(sv, c, ac_store_ahead_id(rows), W_ROWS);
    if (!f) {
        ac_store_ahead_free(rows);
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    }
    f->resume = resume;
    f->rows = rows;
    int sent = ac_notify_ahead_journal(sv->notify, rows, on_written, f) == 0;
    if (!sent)
        f->rows = NULL, ac_store_ahead_free(rows);
    return look_wait(f, slot, sent);
}

enum MHD_Result srv_remote_fork(srv *sv, struct MHD_Connection *c, ac_loop_task *resume,
                                srv_fwd **slot, const ac_store_fork_row *row)
{
    srv_fwd *f = write_new(sv, c, row->to, W_FORK);
    if (!f)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    f->resume = resume;
    return look_wait(f, slot, ac_notify_fork(sv->notify, row, on_written, f) == 0);
}

ac_store_ahead *srv_remote_rows_taken(srv_fwd **slot)
{
    srv_fwd *f = *slot;
    ac_store_ahead *a =
        f && f->writing == W_ROWS && f->finished && f->look_rc == AC_OK ? f->rows : NULL;
    if (a)
        f->rows = NULL;
    return a;
}

int srv_remote_written(srv_fwd **slot, char *why, size_t cap)
{
    srv_fwd *f = *slot;
    if (!f || !f->writing)
        return SRV_NO_LOOK;
    *slot = NULL;
    int rc = f->look_rc;
    snprintf(why, cap, "%s",
             rc == AC_OK ? ""
             : f->status ? "the server is stopping"
             : f->reply  ? f->reply
                         : "the store did not answer in time; it may still be written");
    f->conn = NULL;
    f->gone = 1;
    maybe_free(f);
    return rc;
}

int srv_remote_seen_held(srv *sv, int rc, const ac_store_session_info *info)
{
    if (rc != AC_OK)
        return rc == AC_STORE_ENOENT ? -1 : 0;
    return info->holder[0] && strcmp(info->holder, ac_store_holder(sv->store)) != 0;
}

srv_sess *srv_remote_known(srv *sv, srv_owner *owner, const char *id,
                           const ac_store_session_info *info)
{
    char sid[300];
    srv_remote_sid(owner, id, sid, sizeof sid);
    if (!sv->notify || srv_sess_stored(sv, sid))
        return NULL;
    return srv_sess_known(sv, owner, sid, info->created_ms);
}

/* ---- the holder's side: the inbox drained ---- */

static void drain(srv *sv);

/* A forwarded action's answer, put off until the action is applied (srv_settle). */
typedef struct settle_task {
    ac_loop_task task;
    srv *sv;
    int64_t msg;
    srv_settle later;
    int stored; /* applied, then waited for until what it wrote was committed */
} settle_task;

static void answer_settled(void *ud)
{
    settle_task *t = ud;
    if (!t->stored) {
        t->stored = 1;
        t->later.stored = t->later.fork
                              ? srv_fork_when_done(t->later.fork, &t->task)
                              : srv_settle_stored(t->sv, t->later.owner, t->later.id, &t->task);
        if (t->later.stored > 0)
            return; /* the store defers it again once its commit is done */
    }
    unsigned status = 0;
    char *reply = NULL;
    srv_answer_settled(t->sv, &t->later, &status, &reply);
    if (t->sv->notify)
        ac_inbox_answer(t->sv->notify, t->msg, (int)status, reply ? reply : "");
    free(reply);
    free(t);
}

static void on_take(void *ud, const ac_inbox_msg *m)
{
    srv *sv = ud;
    if (!m) {
        sv->draining = 0;
        if (sv->drain_again && sv->notify)
            drain(sv);
        return;
    }
    unsigned status = 0;
    char *reply = NULL;
    srv_settle later;
    srv_answer_forwarded(sv, m->session, m->owner, m->method, m->route, m->body, &status, &reply,
                         &later);
    settle_task *t = *later.how ? calloc(1, sizeof *t) : NULL;
    if (t) { /* answered once what it posted is applied, as a local request is */
        free(reply);
        t->sv = sv;
        t->msg = m->id;
        t->later = later;
        t->task.fn = answer_settled;
        t->task.ud = t;
        ac_loop_defer(sv->loop, &t->task);
        return;
    }
    if (*later.how) /* no memory to put it off: answered now */
        srv_answer_settled(sv, &later, &status, &reply);
    ac_inbox_answer(sv->notify, m->id, (int)status, reply ? reply : "");
    free(reply);
}

static void drain(srv *sv)
{
    if (sv->draining) {
        sv->drain_again = 1;
        return;
    }
    sv->drain_again = 0;
    sv->draining = ac_inbox_take(sv->notify, ac_store_holder(sv->store), on_take, sv) == 0;
}

/* ---- the streams here of sessions another worker runs ---- */

/* A read of a session's journal after what its live frames have: the session found again by
 * its id when the rows come (it may have gone meanwhile, or be run here now). */
typedef struct tail_read {
    srv *sv;
    srv_sess *ss; /* found at the first row */
    int looked, gap;
    char id[300];
} tail_read;

static void remote_tail(srv *sv, srv_sess *ss);

static srv_sess *tail_of(tail_read *t)
{
    if (!t->looked) {
        t->looked = 1;
        t->ss = srv_sess_stored(t->sv, t->id);
    }
    return t->ss;
}

static int tail_event(void *ud, const ac_store_event *ev)
{
    tail_read *t = ud;
    srv_sess *ss = tail_of(t);
    if (!ss || ss->s || !ss->live)
        return 1; /* gone, or run here now: its own commits make its frames */
    uint64_t at = srv_frames_at(ss->live);
    if (ev->n <= at)
        return 0; /* had already */
    if (ev->n > at + 1) {
        t->gap = 1; /* the frames were made again meanwhile: read from where they are */
        return 1;
    }
    return srv_frames_apply(ss->live, ev) != 0;
}

static void tail_done(void *ud, int rc, const char *error)
{
    tail_read *t = ud;
    (void)rc, (void)error; /* a failed read is done again by the next wake-up or poll */
    srv_sess *ss = t->sv->notify ? srv_sess_stored(t->sv, t->id) : NULL;
    if (ss) {
        ss->tailing = 0;
        if ((ss->tail_again || t->gap) && rc == AC_OK)
            remote_tail(t->sv, ss);
    }
    free(t);
}

/* Reads what the journal has after the session's live frames, on the wake-up connection
 * (never waited for), one read at a time per session (a wake-up meanwhile: another after). */
static void remote_tail(srv *sv, srv_sess *ss)
{
    if (ss->s || !ss->live || !ss->stored_id)
        return;
    if (ss->tailing) {
        ss->tail_again = 1;
        return;
    }
    tail_read *t = calloc(1, sizeof *t);
    if (!t)
        return; /* the next poll reads it */
    t->sv = sv;
    snprintf(t->id, sizeof t->id, "%s", ss->stored_id);
    ss->tail_again = 0;
    ss->tailing = ac_notify_events(sv->notify, ss->stored_id, srv_frames_at(ss->live), tail_event,
                                   tail_done, t) == 0;
    if (!ss->tailing)
        free(t); /* not queued (out of memory): the next poll reads it */
}

void srv_remote_follow(srv *sv, srv_sess *ss)
{
    if (sv->notify)
        remote_tail(sv, ss);
}

/* ---- wake-ups ---- */

static void tail_all(srv *sv)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (!ss->s && ss->live)
            remote_tail(sv, ss);
}

/* What a wake-up would have said, looked for: the poll, and a connection made again. */
static void look_all(srv *sv)
{
    tail_all(sv);
    drain(sv);
    for (srv_fwd *f = sv->fwds; f; f = f->next)
        poll_one(f);
}

static void on_wake(void *ud, char kind, const char *a, const char *b)
{
    srv *sv = ud;
    (void)b;
    if (kind == 'e') {
        srv_sess *ss = srv_sess_stored(sv, a);
        if (ss && !ss->s && ss->live)
            remote_tail(sv, ss);
    } else if (kind == 'i') {
        if (!strcmp(a, ac_store_holder(sv->store)))
            drain(sv);
    } else if (kind == 'r') {
        int64_t id = strtoll(a, NULL, 10);
        for (srv_fwd *f = sv->fwds; f; f = f->next)
            if (f->id == id)
                poll_one(f);
    } else if (kind == '!') {
        fprintf(stderr, "agentc serve: %s (trying again)\n", a);
    } else if (kind == '*') {
        fprintf(stderr, "agentc serve: the wake-up connection is back\n");
        look_all(sv);
    }
}

static void on_poll(void *ud)
{
    srv *sv = ud;
    look_all(sv);
    if (++sv->polls % 60 == 0) /* once a minute: what senders left */
        ac_inbox_sweep(sv->notify);
    sv->remote_timer = ac_loop_timer(sv->loop, POLL_MS, on_poll, sv);
}

void srv_remote_committed(srv *sv, const char *stored_id, uint64_t n)
{
    char num[24];
    if (!sv->notify || !n)
        return;
    snprintf(num, sizeof num, "%llu", (unsigned long long)n);
    ac_notify_send(sv->notify, 'e', stored_id, num);
}

int srv_remote_start(srv *sv)
{
    const char *db = sv->cfg->db;
    if (!db || (strncmp(db, "postgresql://", 13) && strncmp(db, "postgres://", 11)))
        return 0; /* one worker: everything happens here */
    ac_error err = {0};
    sv->notify =
        ac_notify_open(sv->loop, sv->cfg->db_listen ? sv->cfg->db_listen : db, on_wake, sv, &err);
    if (!sv->notify) {
        fprintf(stderr, "agentc serve: --db-listen: %s\n", err.text);
        return 3;
    }
    ac_notify_set_metrics(sv->notify, sv->cfg->metrics_registry);
    sv->remote_timer = ac_loop_timer(sv->loop, POLL_MS, on_poll, sv);
    return 0;
}

void srv_remote_stop(srv *sv)
{
    for (srv_fwd *f = sv->fwds, *next; f; f = next) {
        next = f->next;
        finish_error(f, 503, "stopping", "the server is stopping");
        maybe_free(f);
    }
}

void srv_remote_free(srv *sv)
{
    if (sv->remote_timer)
        ac_loop_cancel_timer(sv->loop, sv->remote_timer);
    sv->remote_timer = 0;
    srv_remote_stop(sv);
    ac_notify *nt = sv->notify;
    sv->notify = NULL; /* the statements told they failed start nothing new */
    uint64_t lines, batches = ac_notify_batches(nt, &lines);
    if (nt)
        fprintf(stderr, "agentc serve: wake-ups: %llu notifying commits for %llu notifications\n",
                (unsigned long long)batches, (unsigned long long)lines);
    ac_notify_free(nt);
    while (sv->fwds) {
        srv_fwd *f = sv->fwds;
        if (f->resume && !f->gone && f->resume->queued) /* nothing takes its answer now */
            ac_loop_undefer(sv->loop, f->resume);
        f->busy = 0;
        f->gone = 1;
        maybe_free(f);
    }
}
