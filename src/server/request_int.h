/*
 * request_int.h - one request of the session API as its handlers (server.c, load.c, fork.c,
 * delete.c) share it: its state while it is suspended, and the helpers they all use.
 */
#ifndef AGENTC_SERVER_REQUEST_INT_H
#define AGENTC_SERVER_REQUEST_INT_H

#include "server_int.h"

typedef struct req {
    srv_owner *owner;
    char *body;
    size_t len, cap;
    int too_big;
    int refused;     /* answered before its body (admission) */
    int load_failed; /* a stored session could not be loaded: the error below */
    int load_code;
    int load_late; /* that load waited for another past --forward-timeout-ms (503) */
    char load_msg[400];
    srv_fwd *fwd;         /* forwarded to the worker running its session (remote.c) */
    srv_catchup *catchup; /* a new stream's catch-up, read while it is suspended (catchup.c) */
    srv *sv;
    srv_engine *create_agent; /* POST /v1/sessions: its agent while its row is made */
    char create_id[160];      /* and its id */
    char removed_id[160];     /* DELETE: the session removed while the request waits */
    ac_loop_task delete_wait; /* DELETE: for the session's commit under way (srv_delete_waits) */
    srv_sess *delete_ss;
    struct MHD_Connection *delete_conn;
    int delete_waited; /* thrice at most: one committing on and on is waited for no more */
    int delete_muted;  /* its commit in flight still: muted, waited for (delete_muted) */
    int64_t delete_attempt;
    struct srv_fork *fork;       /* POST .../fork on PostgreSQL: under way (srv_fork_next) */
    ac_loop_task *resume;        /* forwarded here (no connection): run to go on after a wait */
    ac_store_session_info *rows; /* GET /v1/sessions: the store's rows, read without waiting */
    size_t n_rows, cap_rows;
    json_t *workers; /* GET /v1/workers: the workers' rows, read without waiting */
    int forwards;    /* how often it was (the worker it went to runs the session no more) */
    /* an action posted from the loop is applied by a deferred drain: the 202 waits for it
     * (settle runs after the drain) so its body shows the state after the action */
    const char *settle_how; /* the "accepted" of the reply; NULL: none pending */
    unsigned settle_code;
    char settle_id[160];
    struct MHD_Connection *settle_conn;
    srv *settle_sv;
    ac_loop_task settle;
    int settle_stored; /* 0: to be applied; 1: waiting for its commit; 2: committed (or nothing
                          to commit); -1: its store failed the session */
} req;

/* request helpers (server.c) */
int srv_valid_id(const char *id); /* 1 to 128 of A-Z a-z 0-9 . _ - */
/* The body as a JSON object with only the given keys; replies the error itself. */
json_t *srv_parse_body(struct MHD_Connection *c, const req *r, const char *const *keys,
                       int allow_empty, enum MHD_Result *ret);
int srv_optional_string(struct MHD_Connection *c, json_t *o, const char *key, const char **out,
                        enum MHD_Result *ret);
/* The settle of a forwarded request's reply put off, while one is answered; else NULL. */
srv_settle *srv_captured_later(void);

/* compat.c: the OpenAI-compatible front's request (r: its owner and body) */
enum MHD_Result srv_chat_completions(srv *sv, struct MHD_Connection *c, req *r);
/* A follow-up request (its last messages are tool results): 1 when it continues a session of
 * the owner that waits for those calls (or is refused: *ret replied; or, on PostgreSQL, that
 * session not in memory is loaded first, the request suspended meanwhile: srv_load_start), 0
 * when it matches none (a fresh session takes it). */
int srv_client_followup(srv *sv, struct MHD_Connection *c, req *r, json_t *rq,
                        enum MHD_Result *ret);

/* stored sessions loaded for requests (load.c) */
enum MHD_Result srv_load_start(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                               const char *id);
void srv_run_loads(srv *sv);  /* between loop iterations only */
void srv_stop_loads(srv *sv); /* stopping: those still reading answered 503 */

/* forks (fork.c) */
enum MHD_Result srv_fork_session(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss);
enum MHD_Result srv_fork_next(srv *sv, struct MHD_Connection *c, req *r);

/* deletes (delete.c) */
int srv_delete_waits(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss);
enum MHD_Result srv_delete_session(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                   const char *id);
enum MHD_Result srv_removed_reply(struct MHD_Connection *c, req *r);

#endif
