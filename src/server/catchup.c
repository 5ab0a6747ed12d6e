/*
 * catchup.c - a new SSE reader of a session: the frames of its journal after the reader's
 * cursor (its catch-up), then the session's live frames, none missed and none sent twice.
 *
 * The journal is read after the event the reader's frames are made to; on PostgreSQL on the
 * wake-up connection (srv_remote_events), the request suspended meanwhile, so the loop never
 * waits for the database. The live frames go on meanwhile (another worker's commits read by
 * remote.c, this worker's own commits): when the handler runs again, the reader is attached at
 * the event it reached. Behind the live frames, the journal is read again from there; ahead of
 * them, the live frames skip what the reader was sent (srv_sess_attach). A session with no live
 * frames gets the reader's, unless it is run here and committed events newer than those read
 * (srv_on_commit made no frames of them): read again.
 */
#include <stdlib.h>

#include "server_int.h"

#define MAX_READS 32 /* a journal that outruns its reader this often: the reader tries again */

struct srv_catchup {
    srv *sv;
    srv_stream *st;
    struct MHD_Response *resp; /* st's response, not queued yet (it frees st) */
    srv_frames *fm;            /* the reader's frames, made of the events read */
    uint64_t n;                /* the reader's cursor (N.k) */
    unsigned k;
    uint64_t at; /* the last event fm was made of (the kept journal's start before any) */
    int reads;   /* reads done */
    int gap;     /* the read skipped events (the session's journal trimmed meanwhile) */
    int oom;
    char id[300];
};

static void to_reader(void *ud, srv_frame *f)
{
    srv_catchup *cu = ud;
    if (srv_frame_after(f, cu->n, cu->k))
        srv_stream_frame(cu->st, f);
    srv_frame_unref(f);
}

static int catch_row(void *ud, const ac_store_event *ev)
{
    srv_catchup *cu = ud;
    if (ev->n <= cu->at)
        return 0;
    if (ev->n != cu->at + 1) {
        cu->gap = 1;
        return 1;
    }
    if (srv_frames_apply(cu->fm, ev)) {
        cu->oom = 1;
        return 1;
    }
    cu->at = ev->n;
    return 0;
}

void srv_catchup_free(srv_catchup *cu)
{
    if (!cu)
        return;
    srv_frames_free(cu->fm);
    if (cu->resp)
        MHD_destroy_response(cu->resp); /* frees st */
    else
        free(cu->st);
    free(cu);
}

static srv_catchup *catchup_new(srv_sess *ss, uint64_t n, unsigned k)
{
    srv_catchup *cu = calloc(1, sizeof *cu);
    if (!cu)
        return NULL;
    cu->sv = ss->sv;
    cu->n = n;
    cu->k = k;
    cu->at = ss->forgotten;
    snprintf(cu->id, sizeof cu->id, "%s", ss->stored_id);
    cu->st = srv_stream_new(ss->sv, NULL);
    cu->resp = cu->st ? srv_stream_response(cu->st) : NULL;
    cu->fm =
        cu->resp ? srv_frames_new(ss->sv, ss->agent, ss->stored_id, ss->base, to_reader, cu) : NULL;
    if (!cu->fm) {
        srv_catchup_free(cu);
        return NULL;
    }
    return cu;
}

/* The reader attached to the session's live frames and its response queued. */
static enum MHD_Result attach(srv_catchup **slot, struct MHD_Connection *c, srv_owner *owner,
                              srv_sess *ss)
{
    srv_catchup *cu = *slot;
    if (owner->streams >= cu->sv->cfg->streams_per_token)
        return srv_reply_error(c, 429, "too_many_streams",
                               "this token has %zu streams open, the limit (--streams-per-token)",
                               owner->streams);
    *slot = NULL;
    int had_live = ss->live != NULL;
    srv_sess_attach(ss, cu->st, cu->fm, cu->at);
    cu->st->conn = c;
    cu->st->owner = owner;
    owner->streams++;
    if (!had_live && !ss->s)
        srv_remote_follow(cu->sv, ss); /* what its holder committed since: no wake-up missed */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u); /* pings keep it alive */
    enum MHD_Result ret = MHD_queue_response(c, 200, cu->resp);
    MHD_destroy_response(cu->resp);
    free(cu);
    return ret;
}

static enum MHD_Result fail(srv_catchup **slot, struct MHD_Connection *c, unsigned status,
                            const char *code, const char *msg)
{
    srv_catchup_free(*slot);
    *slot = NULL;
    return srv_reply_error(c, status, code, "%s", msg);
}

/* The event the reader must reach before it is attached (0: none). */
static uint64_t live_at(const srv_sess *ss)
{
    if (ss->live && !srv_frames_live_of(ss->live))
        return srv_frames_at(ss->live);
    return ss->s ? ss->committed : 0; /* live frames of the session itself: what it committed */
}

/* After each read (none yet: the first): read (again), or attach. */
static enum MHD_Result next(srv_catchup **slot, struct MHD_Connection *c, srv_fwd **fwd,
                            srv_owner *owner, srv_sess *ss)
{
    srv_catchup *cu = *slot;
    srv *sv = cu->sv;
    for (;;) {
        if (cu->oom)
            return fail(slot, c, 503, "out_of_memory", "out of memory");
        if (cu->gap || cu->reads >= MAX_READS)
            return fail(slot, c, 503, "journal_moved",
                        "the session's journal changed while it was read: open the stream again");
        if (cu->reads == 1 && cu->n > cu->at) {
            char msg[120];
            snprintf(msg, sizeof msg, "event %llu does not exist yet (last: %llu)",
                     (unsigned long long)cu->n, (unsigned long long)cu->at);
            return fail(slot, c, 409, "cursor_ahead", msg);
        }
        if (cu->reads && cu->at >= live_at(ss))
            return attach(slot, c, owner, ss);
        cu->reads++;
        if (sv->notify) /* suspended: srv_catchup_resume goes on */
            return srv_remote_events(sv, c, fwd, cu->id, cu->at, catch_row, cu);
        ac_error err = {0};
        int rc = ac_store_events(sv->store, cu->id, cu->at, catch_row, cu, &err);
        if (rc != AC_OK && !cu->gap && !cu->oom) {
            char msg[sizeof err.text + 40];
            snprintf(msg, sizeof msg, "cannot read the session's journal: %s", err.text);
            return fail(slot, c, 500, "store_error", msg);
        }
    }
}

enum MHD_Result srv_catchup_open(struct MHD_Connection *c, srv_catchup **slot, srv_fwd **fwd,
                                 srv_owner *owner, srv_sess *ss, uint64_t n, unsigned k)
{
    uint64_t from = ss->forgotten;
    if (from && (n || k) && n <= from) /* its frames are made from what is kept only */
        return srv_reply_error(c, 410, "cursor_expired",
                               "the journal keeps the frames after event %llu only; read the "
                               "session and follow it without a cursor",
                               (unsigned long long)from);
    *slot = catchup_new(ss, n, k);
    if (!*slot)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    return next(slot, c, fwd, owner, ss);
}

enum MHD_Result srv_catchup_resume(srv *sv, struct MHD_Connection *c, srv_catchup **slot,
                                   srv_fwd **fwd, srv_owner *owner)
{
    ac_store_session_info unused;
    int rc = srv_remote_looked(fwd, &unused);
    srv_sess *ss = srv_sess_stored(sv, (*slot)->id);
    if (!ss || ss->ephemeral)
        return fail(slot, c, 404, "not_found", "no such session");
    if (rc != AC_OK)
        return fail(slot, c, 503, "store_error", "the store did not answer in time");
    return next(slot, c, fwd, owner, ss);
}
