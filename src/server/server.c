/*
 * server.c - `agentc serve`: libmicrohttpd driven by the agentc event loop,
 * the routes of the session API, bearer tokens and limits, graceful stop.
 *
 * One thread: MHD runs in its external epoll mode. The loop watches MHD's
 * epoll descriptor and a timer set from MHD_get_timeout(); both run MHD_run().
 * Session events posted from an MHD callback are applied right after that
 * callback (see ac_session_post), and the streams they wake are resumed
 * connections, so MHD is run again on the next loop iteration (srv_kick).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentc/otel.h"
#include "agentc/store.h"
#include "io/file.h"
#include "request_int.h"
#include "store/store_append.h"
#include "store/store_ahead.h"
#include "store/store_notify.h"
#include "util/grow.h"
#include "util/random.h"
#include "util/sha256.h"

/* ---- replies ---- */

/* Where a reply without a connection goes: a request another worker forwarded here
 * (srv_answer_forwarded), answered by the same handlers as the requests that come here. */
typedef struct captured {
    unsigned status;
    char *body;
    srv_settle *later; /* an accepted action's reply put off (accepted_reply) */
} captured;
static captured *capture;

srv_settle *srv_captured_later(void)
{
    return capture ? capture->later : NULL;
}

void srv_capture_run(void (*step)(void *), void *ud, unsigned *status, char **body)
{
    captured cap = {0, NULL, NULL}, *outer = capture;
    capture = &cap;
    step(ud);
    capture = outer;
    if (cap.status) {
        *status = cap.status;
        *body = cap.body;
    }
}

enum MHD_Result srv_reply_json(struct MHD_Connection *c, unsigned status, json_t *o)
{
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (!c && capture && !capture->body) {
        capture->status = s ? status : 500;
        capture->body = s;
        return s ? MHD_YES : MHD_NO;
    }
    if (!s || !c) {
        free(s);
        return MHD_NO;
    }
    size_t n = strlen(s);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, s, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result srv_reply_error(struct MHD_Connection *c, unsigned status, const char *code,
                                const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return srv_reply_json(c, status,
                          json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
}

/* ---- MHD on the loop ---- */

static void run_mhd(srv *sv);

static void on_mhd_timer(void *ud)
{
    srv *sv = ud;
    sv->mhd_timer = 0;
    sv->kick_pending = 0;
    run_mhd(sv);
}

static void run_mhd(srv *sv)
{
    if (!sv->d || sv->mhd_running)
        return;
    sv->mhd_running = 1;
    MHD_run(sv->d);
    sv->mhd_running = 0;
    if (sv->mhd_timer)
        ac_loop_cancel_timer(sv->loop, sv->mhd_timer);
    sv->mhd_timer = 0;
    MHD_UNSIGNED_LONG_LONG ms = 0;
    int again = sv->kick_again;
    sv->kick_again = 0;
    if (again || MHD_get_timeout(sv->d, &ms) == MHD_YES)
        sv->mhd_timer = ac_loop_timer(sv->loop, ms > 60000 ? 60000 : (int64_t)ms, on_mhd_timer, sv);
    sv->kick_pending = sv->mhd_timer && ms == 0;
}

static void on_epoll(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    run_mhd(ud);
}

/* Resumed connections are served by the next MHD_run: one per loop iteration however many
 * streams woke in it (a 0 ms timer fires in the next iteration, which then does not block). */
void srv_kick(srv *sv)
{
    if (sv->mhd_running) {
        sv->kick_again = 1; /* resumed from inside MHD_run: run it again right after */
        return;
    }
    if (sv->kick_pending)
        return;
    if (sv->mhd_timer)
        ac_loop_cancel_timer(sv->loop, sv->mhd_timer);
    sv->mhd_timer = ac_loop_timer(sv->loop, 0, on_mhd_timer, sv);
    sv->kick_pending = sv->mhd_timer != 0;
}

static void on_ping(void *ud)
{
    srv *sv = ud;
    srv_streams_ping(sv);
    sv->ping_timer = ac_loop_timer(sv->loop, sv->cfg->ping_ms, on_ping, sv);
}

/* ---- tokens ---- */

static int ct_equal(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an > bn ? an : bn;
    unsigned char d = (unsigned char)(an != bn);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < an ? (unsigned char)a[i] : 0;
        unsigned char y = i < bn ? (unsigned char)b[i] : 0;
        d |= (unsigned char)(x ^ y);
    }
    return d == 0;
}

/* A token's tenant when its line names none: "token-" and the first 16 hex digits of its
 * SHA-256, so it stays the token's whatever the lines around it, and says nothing of it. */
static void derived_name(const char *tok, char out[32])
{
    unsigned char d[32];
    ac_sha256(tok, strlen(tok), d);
    memcpy(out, "token-", 6);
    for (int i = 0; i < 8; i++)
        snprintf(out + 6 + 2 * i, 3, "%02x", d[i]);
}

static int valid_name(const char *n)
{
    size_t len = strlen(n);
    if (!len || len > 64)
        return 0;
    for (; *n; n++)
        if (!isalnum((unsigned char)*n) && !strchr("._-", *n))
            return 0;
    return 1;
}

/* Adds one line's token, refusing a short one, a bad name and a name or token another
 * line has. 0, or -1 said on stderr. */
static int add_token(srv *sv, const char *path, size_t lineno, const char *tok, const char *name)
{
    char def[32];
    if (!*name) {
        derived_name(tok, def);
        name = def;
    }
    const char *why = strlen(tok) < 16    ? "a token needs at least 16 characters"
                      : !valid_name(name) ? "a token's name is 1 to 64 of A-Z a-z 0-9 . _ -"
                                          : NULL;
    for (size_t i = 0; !why && i < sv->n_owners; i++) {
        if (!strcmp(sv->owners[i].token, tok))
            why = "this token is also on another line";
        else if (!strcmp(sv->owners[i].name, name))
            why = "this name is another token's too: each token needs its own (its sessions "
                  "are stored under it)";
    }
    if (why) {
        fprintf(stderr, "agentc serve: %s:%zu: %s\n", path, lineno, why);
        return -1;
    }
    srv_owner *o = realloc(sv->owners, (sv->n_owners + 1) * sizeof *o);
    if (!o)
        return -1;
    sv->owners = o;
    o = &sv->owners[sv->n_owners];
    memset(o, 0, sizeof *o);
    o->token = strdup(tok);
    o->name = strdup(name);
    sv->n_owners++;
    return o->token && o->name ? 0 : -1;
}

/* Splits a line "TOKEN [NAME]" in place (blank or '#': *tok empty). */
static void split_token_line(char *line, char **tok, char **name)
{
    char *p = line;
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    *tok = p;
    if (*p == '#') {
        *p = 0;
        *name = p;
        return;
    }
    while (*p && *p != ' ' && *p != '\t' && *p != '\r')
        p++;
    char *tok_end = p;
    while (*p == ' ' || *p == '\t')
        p++;
    *name = p;
    size_t nlen = strlen(p);
    while (nlen && (p[nlen - 1] == '\r' || p[nlen - 1] == ' ' || p[nlen - 1] == '\t'))
        p[--nlen] = 0;
    *tok_end = 0;
}

static int load_tokens(srv *sv, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "agentc serve: cannot read tokens file '%s': %s\n", path, strerror(errno));
        return -1;
    }
    char *text = ac_read_stream(f, (size_t)1 << 20, NULL);
    fclose(f);
    if (!text) {
        fprintf(stderr, "agentc serve: cannot read tokens file '%s'\n", path);
        return -1;
    }
    int rc = 0;
    size_t lineno = 0;
    for (char *line = text; !rc && line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        lineno++;
        char *tok, *name;
        split_token_line(line, &tok, &name);
        if (*tok)
            rc = add_token(sv, path, lineno, tok, name);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!rc && !sv->n_owners) {
        fprintf(stderr, "agentc serve: tokens file '%s' holds no token\n", path);
        rc = -1;
    }
    return rc;
}

/* The owner the request's bearer token names; NULL when it names none. */
static srv_owner *authenticate(srv *sv, struct MHD_Connection *c)
{
    if (!sv->n_owners)
        return &sv->anon;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7)) /* the scheme is case-insensitive (RFC 9110) */
        return NULL;
    const char *tok = h + 7;
    size_t tn = strlen(tok);
    srv_owner *found = NULL;
    for (size_t i = 0; i < sv->n_owners; i++) /* every token compared: no early exit */
        if (ct_equal(tok, tn, sv->owners[i].token, strlen(sv->owners[i].token)) && !found)
            found = &sv->owners[i];
    return found;
}

/* ---- requests ---- */

static enum MHD_Result accepted_reply(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                      unsigned code, const char *how);

int srv_valid_id(const char *id)
{
    size_t n = strlen(id);
    if (!n || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.'))
            return 0;
    }
    return 1;
}

/* Parses the body as a JSON object with only the given keys; replies the error itself. */
json_t *srv_parse_body(struct MHD_Connection *c, const req *r, const char *const *keys,
                       int allow_empty, enum MHD_Result *ret)
{
    if (!r->len && allow_empty)
        return json_object();
    json_error_t je;
    json_t *o = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        *ret = srv_reply_error(c, 400, "invalid_json", "the body is not JSON: %s (at %d:%d)",
                               je.text, je.line, je.column);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        *ret = srv_reply_error(c, 400, "invalid_request", "the body must be a JSON object");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (keys[i] && strcmp(keys[i], k))
            i++;
        if (!keys[i]) {
            char name[64];
            snprintf(name, sizeof name, "%s", k);
            json_decref(o);
            *ret = srv_reply_error(c, 400, "unknown_field", "unknown field '%s'", name);
            return NULL;
        }
    }
    return o;
}

int srv_optional_string(struct MHD_Connection *c, json_t *o, const char *key, const char **out,
                        enum MHD_Result *ret)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v)) {
        *ret = srv_reply_error(c, 400, "invalid_type", "'%s' must be a string", key);
        return -1;
    }
    *out = json_string_value(v);
    return 0;
}

/* Counts one against a per-minute budget of `limit` (a window from *start); 0 if allowed. */
static int over_budget(srv *sv, int64_t *start, unsigned *count, unsigned limit)
{
    int64_t now = ac_loop_now_ms(sv->loop);
    if (now - *start >= 60000) {
        *start = now;
        *count = 0;
    }
    if (*count >= limit)
        return 1;
    (*count)++;
    return 0;
}

/* Counts one message against the owner's per-minute budget; 0 if allowed. */
static int rate_limited(srv *sv, srv_owner *o)
{
    return over_budget(sv, &o->window_start_ms, &o->window_count, sv->cfg->messages_per_min);
}

/* The keys of POST /v1/sessions: its own, then the agent's a session may override. */
static const char *const create_keys[] = {
    "id",    "system", "agent",  "spec",    "provider",      "script",  "base_url", "api_key_env",
    "model", "tools",  "params", "request", "output_schema", "headers", NULL};

/* The agent a new session runs: "agent" (NULL: the default) with the other keys of the
 * body as overrides. NULL after replying why. */
static srv_engine *session_agent(srv *sv, struct MHD_Connection *c, json_t *o, enum MHD_Result *ret)
{
    const char *name;
    if (srv_optional_string(c, o, "agent", &name, ret))
        return NULL;
    json_t *over = json_deep_copy(o);
    json_object_del(over, "id");
    json_object_del(over, "system");
    json_object_del(over, "agent");
    char *text = json_object_size(over) ? json_dumps(over, JSON_COMPACT) : NULL;
    json_decref(over);
    ac_error err = {0};
    srv_engine *e = srv_agent_engine(sv, name, text, &err);
    free(text);
    if (!e)
        *ret = err.code == AC_ENOENT   ? srv_reply_error(c, 404, "agent_not_found", "%s", err.text)
               : err.code == AC_EINVAL ? srv_reply_error(c, 400, "invalid_agent", "%s", err.text)
               : err.code == AC_EBUSY
                   ? srv_reply_error(c, 429, "too_many_agents", "%s", err.text)
                   : srv_reply_error(c, 400, "agent_failed", "the agent cannot run: %s", err.text);
    return e;
}

/* On PostgreSQL: the new session's row is made on the wake-up connection first, the request
 * suspended meanwhile; its agent and id are kept on the request until it is made. */
static enum MHD_Result create_row(srv *sv, struct MHD_Connection *c, req *r, srv_engine *agent,
                                  const char *id)
{
    if (id) {
        snprintf(r->create_id, sizeof r->create_id, "%s", id);
    } else { /* other workers make ids too: a random one */
        unsigned char b[8];
        ac_random_bytes(b, sizeof b);
        snprintf(r->create_id, sizeof r->create_id, "s%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7]);
    }
    ac_engine *e = srv_engine_get(agent);
    char sid[300], *params = ac_store_create_params(e);
    r->create_agent = agent; /* released by the reply, or when the request ends */
    if (!params)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    srv_remote_sid(r->owner, r->create_id, sid, sizeof sid);
    enum MHD_Result ret = srv_remote_create(sv, c, &r->fwd, sid, ac_engine_tables(e)->hash, params);
    free(params);
    return ret;
}

/* Its row made (made: srv_remote_written's), the session here: the reply create_session's. */
static enum MHD_Result create_made(srv *sv, struct MHD_Connection *c, req *r, int made,
                                   const char *why, const char *system)
{
    srv_engine *agent = r->create_agent;
    r->create_agent = NULL;
    if (made != AC_OK) {
        srv_engine_release(sv, agent);
        return made == AC_EINVAL
                   ? srv_reply_error(c, 409, "session_exists", "a session with this id exists")
                   : srv_reply_error(c, 500, "session_failed", "cannot create the session: %s",
                                     why);
    }
    ac_error err = {0};
    srv_sess *ss = srv_sess_new_made(sv, r->owner, r->create_id, system, agent, &err);
    if (!ss) { /* its row goes again (not waited for) */
        char sid[300];
        srv_remote_sid(r->owner, r->create_id, sid, sizeof sid);
        ac_notify_rm(sv->notify, sid, ac_store_holder(sv->store), 1, NULL, NULL);
        return srv_reply_error(c, err.code == AC_ENOMEM ? 503 : 500, "session_failed",
                               "cannot create the session: %s", err.text);
    }
    if (!ss->children) /* its journal is empty: its calls come with its commits, none read */
        ss->children = json_array();
    return accepted_reply(sv, c, r, ss, 201, "created");
}

static enum MHD_Result create_session(srv *sv, struct MHD_Connection *c, req *r)
{
    enum MHD_Result ret = MHD_NO;
    json_t *o = srv_parse_body(c, r, create_keys, 1, &ret);
    if (!o)
        return ret;
    const char *id, *system;
    if (srv_optional_string(c, o, "id", &id, &ret) ||
        srv_optional_string(c, o, "system", &system, &ret)) {
        json_decref(o);
        return ret;
    }
    if (id && !srv_valid_id(id)) {
        json_decref(o);
        return srv_reply_error(c, 400, "invalid_id",
                               "a session id is 1 to 128 of A-Z a-z 0-9 . _ -");
    }
    char why[400];
    int made = srv_remote_written(&r->fwd, why, sizeof why);
    if (made != SRV_NO_LOOK) {
        ret = create_made(sv, c, r, made, why, system);
        json_decref(o);
        return ret;
    }
    ac_store_session_info seen; /* created by another worker: its row, read suspended */
    int seen_rc = srv_remote_looked(&r->fwd, &seen);
    if (id && !srv_sess_find(sv, r->owner, id) && sv->notify && seen_rc == SRV_NO_LOOK) {
        char sid[300];
        srv_remote_sid(r->owner, id, sid, sizeof sid);
        json_decref(o);
        return srv_remote_look(sv, c, &r->fwd, sid);
    }
    if (id && (srv_sess_find(sv, r->owner, id) ||
               (seen_rc == AC_OK && srv_remote_known(sv, r->owner, id, &seen)))) {
        json_decref(o);
        return srv_reply_error(c, 409, "session_exists", "a session with this id exists");
    }
    if (r->owner->sessions >= sv->cfg->sessions_per_token) {
        json_decref(o);
        return srv_reply_error(c, 429, "too_many_sessions",
                               "this token has %zu sessions, the limit; delete one first",
                               r->owner->sessions);
    }
    srv_engine *agent = session_agent(sv, c, o, &ret);
    if (!agent || sv->notify) {
        ret = agent ? create_row(sv, c, r, agent, id) : ret;
        json_decref(o);
        return ret;
    }
    ac_error err = {0};
    srv_sess *ss = srv_sess_new(sv, r->owner, id, system, NULL, NULL, SRV_SESS_API, agent, &err);
    json_decref(o);
    if (!ss)
        return srv_reply_error(c, err.code == AC_ENOMEM ? 503 : 500, "session_failed",
                               "cannot create the session: %s", err.text);
    return accepted_reply(sv, c, r, ss, 201, "created");
}

static int on_stored(void *ud, const ac_store_session_info *info);

/* A row of the list read for the request: kept (its sessions' views are made of them) and the
 * session learnt of if it was stored by another worker. */
static int on_listed(void *ud, const ac_store_session_info *info)
{
    req *r = ud;
    if (ac_grow((void **)&r->rows, &r->cap_rows, r->n_rows + 1, sizeof *r->rows))
        return on_stored(r->sv, info);
    r->rows[r->n_rows++] = *info;
    return on_stored(r->sv, info);
}

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const ac_store_session_info *)a)->id, ((const ac_store_session_info *)b)->id);
}

/* The session's view in a list: of its row read for the request (none: not in the store when
 * it was read), else read now (one worker: a local file). */
static json_t *listed_json(srv *sv, req *r, srv_sess *ss)
{
    if (!sv->notify || !ss->stored_id)
        return srv_sess_json(ss, 0);
    ac_store_session_info key, *row = NULL;
    snprintf(key.id, sizeof key.id, "%s", ss->stored_id);
    if (r->n_rows)
        row = bsearch(&key, r->rows, r->n_rows, sizeof *r->rows, row_cmp);
    if (!row) { /* stored since: a session loaded here is this worker's */
        memset(&key, 0, sizeof key);
        snprintf(key.status, sizeof key.status, "unknown");
        if (ss->s)
            snprintf(key.holder, sizeof key.holder, "%s", ac_store_holder(sv->store));
        row = &key;
    }
    return srv_sess_json_as(ss, 0, row);
}

static enum MHD_Result list_sessions(srv *sv, struct MHD_Connection *c, req *r)
{
    const char *lim = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    long limit = 100;
    if (lim) {
        char *end;
        limit = strtol(lim, &end, 10);
        if (*end || limit < 1 || limit > 1000)
            return srv_reply_error(c, 400, "invalid_limit", "limit must be 1..1000");
    }
    ac_store_session_info seen;
    if (sv->notify && srv_remote_looked(&r->fwd, &seen) == SRV_NO_LOOK) /* others' since: read */
        return srv_remote_list(sv, c, &r->fwd, on_listed, r);
    if (r->n_rows)
        qsort(r->rows, r->n_rows, sizeof *r->rows, row_cmp);
    /* oldest first: the registry holds the newest first */
    size_t n = 0;
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        n++;
    srv_sess **all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return srv_reply_error(c, 503, "out_of_memory", "out of memory");
    size_t k = n;
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        all[--k] = ss;
    json_t *data = json_array();
    int started = after == NULL;
    long count = 0;
    const char *last = NULL;
    int more = 0;
    for (size_t i = 0; i < n; i++) {
        srv_sess *ss = all[i];
        if (ss->ephemeral || ss->freeing || ss->owner != r->owner)
            continue;
        if (!started) {
            started = !strcmp(ss->id, after);
            continue;
        }
        if (count == limit) {
            more = 1;
            break;
        }
        json_array_append_new(data, listed_json(sv, r, ss));
        last = ss->id;
        count++;
    }
    free(all);
    if (!started) { /* the list would look ended where it goes on */
        json_decref(data);
        return srv_reply_error(c, 400, "invalid_after",
                               "no session '%s' to list after (deleted?): list from the start",
                               after);
    }
    json_t *o = json_pack("{s:o, s:b}", "data", data, "has_more", more);
    if (more && last)
        json_object_set_new(o, "next_after", json_string(last));
    return srv_reply_json(c, 200, o);
}

/* The session's active states accept the event now (the spec's tables say so). */
static int accepts(const ac_session *s, const char *name)
{
    const char *names[64];
    size_t n = ac_session_accepted_events(s, names, 64, 0);
    for (size_t i = 0; i < n && i < 64; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

/* Where a session stands for the messages route: its status (ac_session_status reads the
 * spec's tables, never state names): paused, busy while a turn is under way, else idle. */
enum activity { ACT_IDLE, ACT_BUSY, ACT_PAUSED };
static enum activity activity(const ac_session *s)
{
    enum ac_session_status st = ac_session_status(s);
    return st == AC_SESSION_PAUSED ? ACT_PAUSED : st == AC_SESSION_RUNNING ? ACT_BUSY : ACT_IDLE;
}

/* 409 to whatever is sent to a session that ended, saying how and when (never its last
 * error as if it were new). */
static enum MHD_Result ended_reply(struct MHD_Connection *c, const srv_sess *ss)
{
    char text[700];
    ac_session_ended_text(ss->s, ss->id, text, sizeof text);
    return srv_reply_error(c, 409, "session_ended", "%s", text);
}

/* A post went through: applied and handled, or queued (from a loop callback, as MHD's are:
 * the spec's tables were checked before). */
static int posted(int rc)
{
    return rc == AC_OK || rc == AC_QUEUED;
}

int srv_settle_stored(srv *sv, srv_owner *owner, const char *id, ac_loop_task *task)
{
    srv_sess *ss = srv_sess_find(sv, owner, id);
    if (ss && ss->s && ss->discarded) /* a DELETE's: its commit in flight over first */
        return ac_store_session_discard_when(ss->s, task);
    return ss && ss->s ? ac_store_when_durable(ss->s, task) : 0;
}

int srv_settle_failed(const srv_sess *ss, int stored)
{
    return stored < 0 || !ss->s || ss->lost || (ac_session_ended(ss->s) && ac_session_error(ss->s));
}

/* Applied (the drain ran), then once what it wrote is committed: the reply goes. */
static void settle_resume(void *ud)
{
    req *r = ud;
    if (!r->settle_stored) {
        r->settle_stored = srv_settle_stored(r->settle_sv, r->owner, r->settle_id, &r->settle);
        if (r->settle_stored > 0)
            return; /* the store defers it again once its commit is done */
        r->settle_stored = r->settle_stored < 0 ? -1 : 2;
    }
    MHD_resume_connection(r->settle_conn);
    srv_kick(r->settle_sv);
}

/* The reply to an accepted action: code with the session and "accepted": how, once what was
 * posted has been applied (the drain a post from the loop defers runs first). */
static enum MHD_Result accepted_reply(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                      unsigned code, const char *how)
{
    int later = sv->loop && ac_loop_in_callback(sv->loop) && strlen(ss->id) < sizeof r->settle_id;
    if (later && !c && capture) { /* forwarded: the caller answers once it is applied */
        snprintf(capture->later->how, sizeof capture->later->how, "%s", how);
        capture->later->code = code;
        snprintf(capture->later->id, sizeof capture->later->id, "%s", ss->id);
        capture->later->owner = r->owner;
        return MHD_YES;
    }
    if (c && strlen(ss->id) < sizeof r->settle_id) {
        r->settle_how = how;
        r->settle_code = code;
        snprintf(r->settle_id, sizeof r->settle_id, "%s", ss->id);
        r->settle_conn = c;
        r->settle_sv = sv;
        r->settle.fn = settle_resume;
        r->settle.ud = r;
        /* applied already (posted from outside a callback): only its commit is waited for */
        r->settle_stored = later ? 0 : srv_settle_stored(sv, r->owner, ss->id, &r->settle);
        if (later || r->settle_stored > 0) {
            MHD_suspend_connection(c); /* on_request answers once it is resumed */
            if (later)
                ac_loop_defer(sv->loop, &r->settle);
            return MHD_YES;
        }
        r->settle_how = NULL;
        if (r->settle_stored < 0) {
            r->settle_stored = 0;
            return srv_reply_error(c, 503, "store_error", "%s", SRV_NOT_STORED);
        }
    }
    json_t *reply = srv_sess_json(ss, 0);
    json_object_set_new(reply, "accepted", json_string(how));
    return srv_reply_json(c, code, reply);
}

/* The reply accepted_reply put off, now that the action is applied. */
static enum MHD_Result settled_reply(srv *sv, struct MHD_Connection *c, req *r)
{
    const char *how = r->settle_how;
    r->settle_how = NULL;
    int stored = r->settle_stored;
    r->settle_stored = 0;
    srv_sess *ss = srv_sess_find(sv, r->owner, r->settle_id);
    if (ss && srv_settle_failed(ss, stored))
        return srv_reply_error(c, 503, "store_error", "%s", SRV_NOT_STORED);
    if (!ss)
        return srv_reply_error(c, 404, "not_found", "no such session");
    if (!strcmp(how, "created")) { /* its row is this worker's, nothing committed that a read
                                      of it (waiting, on PostgreSQL) would show */
        ac_store_session_info row;
        memset(&row, 0, sizeof row);
        if (sv->notify)
            snprintf(row.holder, sizeof row.holder, "%s", ac_store_holder(sv->store));
        return srv_reply_json(c, r->settle_code, srv_sess_json_as(ss, 0, sv->notify ? &row : NULL));
    }
    json_t *reply = srv_sess_json(ss, 0);
    json_object_set_new(reply, "accepted", json_string(how));
    return srv_reply_json(c, r->settle_code, reply);
}

static enum MHD_Result post_message(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss)
{
    static const char *const keys[] = {"content", "if_busy", NULL};
    enum MHD_Result ret = MHD_NO;
    json_t *o = srv_parse_body(c, r, keys, 0, &ret);
    if (!o)
        return ret;
    json_t *content = json_object_get(o, "content");
    const char *policy = NULL;
    if (!json_is_string(content) || !json_string_length(content)) {
        json_decref(o);
        return srv_reply_error(c, 400, "invalid_type", "'content' must be a non-empty string");
    }
    if (srv_optional_string(c, o, "if_busy", &policy, &ret)) {
        json_decref(o);
        return ret;
    }
    if (!policy)
        policy = "reject";
    if (strcmp(policy, "reject") && strcmp(policy, "enqueue") && strcmp(policy, "interrupt") &&
        strcmp(policy, "rollback")) {
        json_decref(o);
        return srv_reply_error(c, 400, "invalid_value",
                               "if_busy is reject, enqueue, interrupt or rollback");
    }
    if (ac_session_ended(ss->s)) {
        json_decref(o);
        return ended_reply(c, ss);
    }
    enum activity act = activity(ss->s);
    int busy = act == ACT_BUSY;
    if (busy && !strcmp(policy, "reject")) {
        json_decref(o);
        return srv_reply_error(
            c, 409, "session_busy",
            "a turn is running; send with if_busy enqueue, interrupt or rollback");
    }
    if (rate_limited(sv, r->owner)) {
        json_decref(o);
        return srv_reply_error(c, 429, "rate_limited",
                               "more than %u messages this minute for this token",
                               sv->cfg->messages_per_min);
    }
    const char *text = json_string_value(content);
    const char *how = "started";
    int rc;
    srv_traceparent(c, ss->s);
    if (busy && !strcmp(policy, "rollback") && !accepts(ss->s, "rollback")) {
        json_decref(o);
        return srv_reply_error(c, 409, "rollback_unsupported",
                               "the spec takes no 'rollback' event in this state; send with "
                               "if_busy interrupt (spec/agent.fsm shows the transition to add)");
    }
    if (busy && !strcmp(policy, "interrupt") && !accepts(ss->s, "pause")) {
        json_decref(o);
        return srv_reply_error(c, 409, "interrupt_unsupported",
                               "the spec takes no 'pause' event in this state; send with "
                               "if_busy enqueue");
    }
    if (busy && !strcmp(policy, "interrupt")) {
        /* the running turn stops (pause): its unanswered tool calls are answered as
         * interrupted when the next turn starts, so none is left dangling */
        rc = ac_session_post(ss->s, "pause", NULL, 0);
        if (posted(rc))
            rc = ac_session_send(ss->s, text);
        if (posted(rc))
            rc = ac_session_post(ss->s, "resume", NULL, 0);
        how = "interrupted";
    } else if (busy && !strcmp(policy, "rollback")) {
        /* the running turn stops and its messages go (the spec's rollback: its tool calls
         * leave with the assistant messages that made them); the new message starts a turn
         * on the conversation as it was before */
        rc = ac_session_post(ss->s, "rollback", NULL, 0);
        if (posted(rc))
            rc = ac_session_send(ss->s, text);
        how = "rolled_back";
    } else {
        rc = ac_session_send(ss->s, text);
        how = busy ? "enqueued" : act == ACT_PAUSED ? "waiting_for_resume" : "started";
    }
    json_decref(o);
    if (rc == AC_UNHANDLED)
        return srv_reply_error(c, 409, "not_accepted",
                               "the spec took no transition on it in this state");
    if (rc < 0 && rc != AC_QUEUED)
        return srv_reply_error(c, 500, "post_failed", "the message was not accepted: %s",
                               ac_strerror(rc));
    return accepted_reply(sv, c, r, ss, 202, how);
}

/* 409 to an outside event the session's states do not take now, with what it waits for. */
static enum MHD_Result not_waiting(struct MHD_Connection *c, const srv_sess *ss, const char *name)
{
    const char *names[32], *state = NULL;
    char list[400] = "";
    size_t n = 0, at = 0;
    if (ac_session_wait_state(ss->s, &state) == AC_WAIT_OUTSIDE)
        n = ac_session_waiting_events(ss->s, names, 32);
    for (size_t i = 0; i < n && i < 32 && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s'", i ? ", " : "", names[i]);
    ac_session_wait_state(ss->s, &state);
    if (n)
        return srv_reply_error(c, 409, "not_waiting",
                               "nothing waits for event '%s': the session is in %s and waits for "
                               "%s",
                               name, state ? state : "its state", list);
    return srv_reply_error(c, 409, "not_waiting",
                           "nothing waits for event '%s': the session is in %s and waits for no "
                           "outside event (status %s)",
                           name, state ? state : "its state",
                           ac_session_status_name(ac_session_status(ss->s)));
}

void srv_traceparent(struct MHD_Connection *c, ac_session *s)
{
    ac_session_set_traceparent(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent"));
}

static enum MHD_Result post_event(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                  const char *name)
{
    const char *why = NULL;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(ss->s));
    int outside = 0; /* the spec declares it `outside event`: always the outside's to send */
    for (uint16_t i = 0; t->event_flags && i < t->n_events; i++)
        if (t->event_names[i] && !strcmp(t->event_names[i], name))
            outside = (t->event_flags[i] & AC_EV_OUTSIDE) != 0;
    if (outside)
        ;
    else if (!strcmp(name, "user_message") || !strcmp(name, "spawn"))
        why = "use the messages route for user messages";
    else if (strchr(name, '.') || !strcmp(name, "inactivity_timeout"))
        why = "engine events cannot be sent from outside";
    if (why)
        return srv_reply_error(c, 403, "event_not_allowed", "event '%s': %s", name, why);
    if (r->len > sv->cfg->max_event_bytes) /* journaled, and replayed at each load */
        return srv_reply_error(c, 413, "payload_too_large",
                               "an event's payload is at most %zu bytes (--max-event-bytes)",
                               sv->cfg->max_event_bytes);
    if (over_budget(sv, &r->owner->events_start_ms, &r->owner->events_count,
                    sv->cfg->events_per_min))
        return srv_reply_error(c, 429, "rate_limited",
                               "more than %u events this minute for this token",
                               sv->cfg->events_per_min);
    json_t *payload = NULL;
    if (r->len) {
        json_error_t je;
        payload = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &je);
        if (!payload)
            return srv_reply_error(c, 400, "invalid_json", "the body is not JSON: %s", je.text);
    }
    if (ac_session_ended(ss->s)) {
        json_decref(payload);
        return ended_reply(c, ss);
    }
    if (outside && !accepts(ss->s, name)) { /* nothing waits for it: said, not a no-op */
        json_decref(payload);
        return not_waiting(c, ss, name);
    }
    char bad[600];
    if (ac_session_event_takes_decisions(ss->s, name) &&
        ac_session_check_decisions(ss->s, name, payload, bad, sizeof bad) < 0) {
        json_decref(payload); /* refused whole: nothing applied, the session still waits */
        return srv_reply_error(c, 400, "invalid_decisions", "event '%s': %s", name, bad);
    }
    srv_traceparent(c, ss->s);
    int rc = ac_session_post(ss->s, name, payload, 0);
    if (rc == AC_EUNKNOWN_EVENT)
        return srv_reply_error(c, 404, "unknown_event", "the spec declares no event '%s'", name);
    if (rc < 0 && rc != AC_QUEUED)
        return srv_reply_error(c, 500, "post_failed", "event '%s' was not applied: %s", name,
                               ac_strerror(rc));
    return accepted_reply(sv, c, r, ss, 202, name);
}

/* POST /v1/sessions/{id}/turn/cancel: the spec's turn.cancel stops the turn under way (a
 * paused one too) and keeps the session. */
static enum MHD_Result post_turn_cancel(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss)
{
    if (ac_session_ended(ss->s))
        return ended_reply(c, ss);
    enum ac_session_status st = ac_session_status(ss->s);
    if (st != AC_SESSION_RUNNING && st != AC_SESSION_PAUSED)
        return srv_reply_error(c, 409, "no_turn", "no turn is running");
    int rc = ac_session_cancel_turn(ss->s);
    if (rc == AC_EUNKNOWN_EVENT || rc == AC_UNHANDLED)
        return srv_reply_error(c, 409, "turn_cancel_unsupported",
                               "the spec takes no 'turn.cancel' event in this state "
                               "(spec/agent.fsm shows the transition to add)");
    if (rc < 0 && rc != AC_QUEUED)
        return srv_reply_error(c, 500, "post_failed", "turn.cancel was not applied: %s",
                               ac_strerror(rc));
    return accepted_reply(sv, c, r, ss, 202, "turn.cancel");
}

/* A cursor: "N" or "N.k" (a frame id), 0 for none. 0, or -1 when it is not one. */
static int parse_cursor(const char *v, uint64_t *n, unsigned *k)
{
    *n = 0;
    *k = 0;
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)v[0])) /* strtoull would take a space, a sign, " -3" */
        return -1;
    unsigned long long a = strtoull(v, &end, 10);
    if (errno)
        return -1;
    unsigned long b = 0;
    if (*end == '.') {
        const char *p = end + 1;
        if (!isdigit((unsigned char)*p))
            return -1;
        b = strtoul(p, &end, 10);
        if (errno || b > 1000000)
            return -1;
    }
    if (*end)
        return -1;
    *n = a;
    *k = (unsigned)b;
    return 0;
}

/* A new reader of ss's frames: its catch-up read (without waiting on PostgreSQL), then the live
 * frames (catchup.c). */
static enum MHD_Result open_stream(struct MHD_Connection *c, req *r, srv_sess *ss)
{
    const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "starting_after");
    uint64_t n;
    unsigned k;
    if (parse_cursor(q ? q : last, &n, &k))
        return srv_reply_error(c, 400, "invalid_cursor",
                               "Last-Event-ID / starting_after must be a frame id (N or N.k)");
    if (r->owner->streams >= r->sv->cfg->streams_per_token) /* each holds a connection for good */
        return srv_reply_error(c, 429, "too_many_streams",
                               "this token has %zu streams open, the limit (--streams-per-token)",
                               r->owner->streams);
    return srv_catchup_open(c, &r->catchup, &r->fwd, r->owner, ss, n, k);
}

static enum MHD_Result spec_json(srv *sv, struct MHD_Connection *c)
{
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "agent");
    ac_error err = {0};
    srv_engine *e = name ? srv_agent_engine(sv, name, NULL, &err) : NULL;
    if (name && !e)
        return srv_reply_error(c, err.code == AC_ENOENT ? 404 : 500,
                               err.code == AC_ENOENT ? "agent_not_found" : "agent_failed", "%s",
                               err.text);
    const ac_fsm_tables *t = ac_engine_tables(e ? srv_engine_get(e) : sv->engine);
    srv_engine_release(sv, e); /* one of the server's agents: kept */
    json_t *machines = json_array();
    for (uint16_t m = 0; m < t->n_machines; m++) {
        json_t *states = json_array();
        for (uint16_t i = 0; i < t->n_states; i++)
            if (t->states[i].machine == m)
                json_array_append_new(states, json_pack("{s:s, s:b}", "name", t->states[i].name,
                                                        "terminal", t->states[i].terminal));
        json_t *trs = json_array();
        for (uint16_t i = 0; i < t->n_transitions; i++) {
            const ac_fsm_transition *tr = &t->transitions[i];
            if (t->states[tr->source].machine != m)
                continue;
            json_array_append_new(
                trs, json_pack("{s:s, s:s, s:s, s:i, s:b}", "from", t->states[tr->source].name,
                               "to", t->states[tr->target].name, "event",
                               tr->event != AC_FSM_EVENTLESS && tr->event < t->n_events
                                   ? t->event_names[tr->event]
                                   : "",
                               "line", (int)tr->line, "internal", tr->source == tr->target));
        }
        json_array_append_new(machines, json_pack("{s:s, s:o, s:o}", "name", t->machines[m].name,
                                                  "states", states, "transitions", trs));
    }
    return srv_reply_json(
        c, 200,
        json_pack("{s:s, s:s, s:o}", "spec", t->spec_path, "hash", t->hash, "machines", machines));
}

static enum MHD_Result page(struct MHD_Connection *c)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(ac_srv_page_len, (void *)ac_srv_page,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    /* no page of another site may frame it (clickjacking its buttons) */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src "
                            "'unsafe-inline'; connect-src 'self'; img-src data:; "
                            "frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /metrics: with --metrics-token, that bearer token; else whoever the server takes. */
static int metrics_allowed(srv *sv, struct MHD_Connection *c)
{
    const char *want = sv->cfg->metrics_token;
    if (!want)
        return authenticate(sv, c) != NULL;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return h && !strncasecmp(h, "Bearer ", 7) && ct_equal(h + 7, strlen(h + 7), want, strlen(want));
}

static enum MHD_Result metrics_page(srv *sv, struct MHD_Connection *c, int get)
{
    if (!get)
        return srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!metrics_allowed(sv, c))
        return srv_reply_error(c, 401, "unauthorized", "a valid bearer token is required");
    char *text = sv->cfg->metrics();
    struct MHD_Response *r =
        text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(text);
        return srv_reply_error(c, 500, "internal", "the metrics could not be rendered");
    }
    MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* The query of a request another worker forwarded ("k=v&k=v"; srv_answer_forwarded). */
static const char *forwarded_query;

/* A query argument of the view: the connection's, or (c NULL) the forwarded query's. */
static const char *view_arg(struct MHD_Connection *c, const char *key)
{
    static char v[64];
    if (c || !forwarded_query)
        return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
    size_t n = strlen(key);
    for (const char *p = forwarded_query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
        if (!strncmp(p, key, n) && p[n] == '=') {
            snprintf(v, sizeof v, "%.*s", (int)strcspn(p + n + 1, "&"), p + n + 1);
            return v;
        }
    return NULL;
}

/* The view's query arguments of c as "k=v&k=v" (digits and '.' only), into buf. */
static void view_query(struct MHD_Connection *c, char *buf, size_t cap)
{
    static const char *const keys[] = {"messages", "from", "limit"};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, keys[i]);
        if (v && n < cap && strspn(v, "0123456789.") == strlen(v) && strlen(v) < 32)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s=%s", n ? "&" : "", keys[i], v);
    }
}

/* A query argument that is a count: absent (dflt), or 0..max. 0, or -1 when it is not one. */
static int count_arg(struct MHD_Connection *c, const char *key, size_t dflt, size_t max,
                     size_t *out)
{
    const char *v = view_arg(c, key);
    *out = dflt;
    if (!v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long n = isdigit((unsigned char)v[0]) ? strtoull(v, &end, 10) : 0;
    if (!isdigit((unsigned char)v[0]) || errno || *end || n > max)
        return -1;
    *out = (size_t)n;
    return 0;
}

/* GET /v1/sessions/{id}[?messages=0][?from=N&limit=M]: the session, a page of its
 * conversation at a time (a long session costs the loop no more than a page). */
static enum MHD_Result get_session(struct MHD_Connection *c, srv_sess *ss)
{
    srv_view v = {1, 0, 0, SRV_PAGE_MESSAGES};
    size_t messages;
    uint64_t from;
    unsigned call;
    if (count_arg(c, "messages", 1, 1, &messages) ||
        parse_cursor(view_arg(c, "from"), &from, &call) || from > SIZE_MAX ||
        count_arg(c, "limit", SRV_PAGE_MESSAGES, SRV_PAGE_MESSAGES, &v.limit) || !v.limit)
        return srv_reply_error(c, 400, "invalid_query",
                               "messages is 0 or 1, from a page's next_from (N or N.K), limit 1 "
                               "to %d",
                               SRV_PAGE_MESSAGES);
    v.from = (size_t)from;
    v.from_call = call;
    v.messages = (int)messages;
    return srv_reply_json(c, 200, srv_sess_view(ss, &v));
}
/* What is asked of a loaded session ss (rest: the route after its id). */
static enum MHD_Result session_request(srv *sv, struct MHD_Connection *c, req *r, srv_sess *ss,
                                       const char *id, const char *rest, int get, int post, int del)
{
    ss->last_active_ms = ac_loop_now_ms(sv->loop);
    if (!*rest) {
        if (get)
            return get_session(c, ss);
        if (del)
            return srv_delete_waits(sv, c, r, ss) ? MHD_YES : srv_delete_session(sv, c, r, ss, id);
        return srv_reply_error(c, 405, "method_not_allowed", "GET or DELETE");
    }
    if (!strcmp(rest, "/events"))
        return get ? open_stream(c, r, ss)
                   : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!post)
        return srv_reply_error(c, 405, "method_not_allowed", "POST only");
    if (!strcmp(rest, "/messages"))
        return post_message(sv, c, r, ss);
    if (!strcmp(rest, "/fork"))
        return srv_fork_session(sv, c, r, ss);
    if (!strcmp(rest, "/pause") || !strcmp(rest, "/resume") || !strcmp(rest, "/cancel") ||
        !strcmp(rest, "/close"))
        return post_event(sv, c, r, ss, rest + 1);
    if (!strcmp(rest, "/turn/cancel"))
        return post_turn_cancel(sv, c, r, ss);
    if (!strncmp(rest, "/events/", 8) && rest[8] && !strchr(rest + 8, '/')) {
        if (strlen(rest + 8) > 63)
            return srv_reply_error(c, 404, "unknown_event", "no such event");
        return post_event(sv, c, r, ss, rest + 8);
    }
    return srv_reply_error(c, 404, "not_found", "no such route");
}

void srv_answer_forwarded(srv *sv, const char *stored_id, const char *owner, const char *method,
                          const char *route, const char *body, unsigned *status, char **reply,
                          srv_settle *later)
{
    *status = 0;
    *reply = NULL;
    later->how[0] = 0;
    later->stored = 0;
    later->fork = NULL;
    srv_sess *ss = srv_sess_stored(sv, stored_id);
    srv_owner *o = srv_owner_named(sv, owner);
    if (!ss || !ss->s || !o || ss->owner != o || ss->ephemeral)
        return; /* not run here: the sender runs it */
    req r = {0};
    r.owner = o;
    r.body = (char *)body;
    r.len = strlen(body);
    char id[160]; /* a delete frees ss */
    snprintf(id, sizeof id, "%s", ss->id);
    const char *q = strchr(route, '?');
    char path[200];
    snprintf(path, sizeof path, "%.*s", q ? (int)(q - route) : (int)strlen(route), route);
    captured cap = {0, NULL, later};
    capture = &cap;
    forwarded_query = q ? q + 1 : NULL;
    session_request(sv, NULL, &r, ss, id, path, !strcmp(method, "GET"), !strcmp(method, "POST"),
                    !strcmp(method, "DELETE"));
    capture = NULL;
    forwarded_query = NULL;
    *status = *later->how ? 0 : cap.body ? cap.status : 500;
    *reply = cap.body;
}

void srv_answer_settled(srv *sv, const srv_settle *later, unsigned *status, char **reply)
{
    if (later->fork) { /* its fork is over (or there was no memory to wait for it) */
        srv_fork_answer(later->fork, status, reply);
        return;
    }
    srv_sess *ss = srv_sess_find(sv, later->owner, later->id);
    if (!strcmp(later->how, "deleted")) { /* its commit in flight is over: removed now */
        req r = {0};
        r.owner = later->owner;
        captured cap = {0, NULL, NULL};
        capture = &cap;
        if (ss)
            srv_delete_session(sv, NULL, &r, ss, later->id);
        else
            srv_reply_error(NULL, 404, "not_found", "no such session");
        capture = NULL;
        *status = cap.body ? cap.status : 500;
        *reply = cap.body;
        return;
    }
    int failed = ss && srv_settle_failed(ss, later->stored);
    json_t *o = ss && !failed ? srv_sess_json(ss, 0) : NULL;
    if (o && strcmp(later->how, "created"))
        json_object_set_new(o, "accepted", json_string(later->how));
    if (!o)
        o = json_pack("{s:{s:s, s:s}}", "error", "code", failed ? "store_error" : "not_found",
                      "message", failed ? SRV_NOT_STORED : "no such session");
    *status = failed ? 503 : ss ? later->code : 404;
    *reply = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
}

/* /v1/sessions/{id}[/...] (p: after "/v1/sessions/"): the caller's session found (a stored
 * one is loaded first, the request suspended meanwhile), then what is asked of it. */
static enum MHD_Result route_session(srv *sv, struct MHD_Connection *c, req *r, const char *p,
                                     int get, int post, int del)
{
    char id[160];
    const char *slash = strchr(p, '/');
    size_t idn = slash ? (size_t)(slash - p) : strlen(p);
    if (idn == 0 || idn >= sizeof id)
        return srv_reply_error(c, 404, "not_found", "no such session");
    memcpy(id, p, idn);
    id[idn] = 0;
    if (r->catchup) /* a stream's catch-up read while it was suspended */
        return srv_catchup_resume(sv, c, &r->catchup, &r->fwd, r->owner);
    ac_store_session_info seen; /* its row, read while the request was suspended */
    int seen_rc = srv_remote_looked(&r->fwd, &seen);
    srv_sess *ss = srv_sess_find(sv, r->owner, id); /* others' sessions do not exist */
    char sid[300];
    if (!ss && sv->notify && seen_rc == SRV_NO_LOOK) { /* perhaps created by another worker: read */
        srv_remote_sid(r->owner, id, sid, sizeof sid);
        return srv_remote_look(sv, c, &r->fwd, sid);
    }
    if (!ss && seen_rc == AC_OK)
        ss = srv_remote_known(sv, r->owner, id, &seen);
    if (!ss && seen_rc == AC_EIO)
        return srv_reply_error(c, 503, "store_error", "the store did not answer in time");
    if (!ss || ss->ephemeral)
        return srv_reply_error(c, 404, "not_found", "no such session");
    if (!ss->s && r->load_failed && r->load_late) { /* before its lease is read again */
        r->load_failed = r->load_late = 0;
        return srv_reply_error(c, 503, "store_error",
                               "the store did not answer in time: the session is still loading");
    }
    const char *rest = slash ? slash : "";
    int again = 0; /* 1: no other live worker runs it, 2: it is gone (remote.c read its lease) */
    if (r->fwd) {  /* answered by the worker running it (or it runs it no more: on here) */
        enum MHD_Result ret = srv_remote_reply(c, &r->fwd, &again);
        if (!again)
            return ret;
        r->forwards++;
    }
    int local = (get && *rest) || (!get && !post && !del); /* its stream: read here */
    /* a request to forward reads the lease without waiting (srv_remote_forward); a stream's
     * reader reads it first, suspended (srv_remote_look) */
    int held = ss->s || ss->reopening || r->forwards >= 2 || !sv->notify || !ss->stored_id ? 0
               : again                  ? (again == 2 ? -1 : 0)
               : !local                 ? 1
               : seen_rc != SRV_NO_LOOK ? srv_remote_seen_held(sv, seen_rc, &seen)
                                        : 2;
    if (held == 2)
        return srv_remote_look(sv, c, &r->fwd, ss->stored_id);
    if (held < 0) { /* deleted by another worker */
        srv_sess_drop(ss, 0);
        return srv_reply_error(c, 404, "not_found", "no such session");
    }
    if (held) { /* its stream is read from the store here; the rest is asked of its holder */
        if (local)
            return session_request(sv, c, r, ss, id, rest, get, post, del);
        char route[200] = "?"; /* a view's query goes with it */
        if (get)
            view_query(c, route + 1, sizeof route - 1);
        return srv_remote_forward(sv, c, &r->fwd, ss,
                                  get    ? "GET"
                                  : post ? "POST"
                                         : "DELETE",
                                  get ? route : rest, r->body,
                                  r->owner->name ? r->owner->name : "local");
    }
    if (!*rest && del && !ss->s && !ss->reopening) /* reopening: after it, as a load */
        return srv_delete_session(sv, c, r, ss, id);
    if (!ss->s && r->load_failed) {
        r->load_failed = 0;
        return srv_reply_error(c, r->load_code == AC_STORE_EBUSY ? 409 : 500,
                               r->load_code == AC_STORE_EBUSY ? "session_in_use" : "load_failed",
                               "cannot load the session: %s", r->load_msg);
    }
    if (!ss->s) /* a stored session: loaded again (snapshot + tail) between iterations */
        return srv_load_start(sv, c, r, ss, id);
    return session_request(sv, c, r, ss, id, rest, get, post, del);
}

static enum MHD_Result route(srv *sv, struct MHD_Connection *c, req *r, const char *url,
                             const char *method)
{
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"),
        del = !strcmp(method, "DELETE");
    if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
        return get ? page(c) : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!strcmp(url, "/metrics") && sv->cfg->metrics)
        return metrics_page(sv, c, get);
    if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) {
        if (!get)
            return srv_reply_error(c, 405, "method_not_allowed", "GET only");
        return url[1] == 'h' ? srv_healthz(sv, c) : srv_readyz(sv, c);
    }
    if (!r->owner)
        return srv_reply_error(c, 401, "unauthorized", "a valid bearer token is required");
    if (!strcmp(url, "/v1/models"))
        return get ? srv_models(sv, c) : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!strcmp(url, "/v1/chat/completions")) {
        if (!post)
            return srv_reply_error(c, 405, "method_not_allowed", "POST only");
        if (sv->stopping)
            return srv_reply_error(c, 503, "stopping", "the server is stopping");
        if (rate_limited(sv, r->owner))
            return srv_reply_error(c, 429, "rate_limited",
                                   "more than %u messages this minute for this token",
                                   sv->cfg->messages_per_min);
        return srv_chat_completions(sv, c, r);
    }
    if (!strcmp(url, "/v1/agents"))
        return get ? srv_agents_list(sv, c)
                   : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!strcmp(url, "/v1/workers"))
        return get ? srv_workers_list(sv, c, &r->fwd, &r->workers)
                   : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!strcmp(url, "/v1/spec"))
        return get ? spec_json(sv, c) : srv_reply_error(c, 405, "method_not_allowed", "GET only");
    if (!strcmp(url, "/v1/sessions")) {
        if (post) {
            if (sv->stopping)
                return srv_reply_error(c, 503, "stopping", "the server is stopping");
            return create_session(sv, c, r);
        }
        if (get)
            return list_sessions(sv, c, r);
        return srv_reply_error(c, 405, "method_not_allowed", "GET or POST");
    }
    if (strncmp(url, "/v1/sessions/", 13))
        return srv_reply_error(c, 404, "not_found", "no such route");
    return route_session(sv, c, r, url + 13, get, post, del);
}
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    srv *sv = cls;
    (void)version;
    req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->sv = sv;
        *con_cls = r;
        enum MHD_Result refused;
        if (srv_admit(sv, c, method, &refused)) {
            r->refused = 1; /* answered: its body, if any, is not kept */
            srv_admit_answered(sv, c, 1);
            return refused;
        }
        r->owner = authenticate(sv, c);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (n > sv->cfg->max_body) {
                r->too_big = 1;
                srv_admit_answered(sv, c, 1);
                return srv_reply_error(c, 413, "body_too_large",
                                       "the body is over the limit of %zu bytes",
                                       sv->cfg->max_body);
            }
        }
        if (!r->owner && strcmp(url, "/") && strcmp(url, "/index.html") &&
            strcmp(url, "/healthz") && strcmp(url, "/readyz") &&
            (strcmp(url, "/metrics") || !sv->cfg->metrics)) {
            srv_admit_answered(sv, c, 1);
            return srv_reply_error(c, 401, "unauthorized", "a valid bearer token is required");
        }
        return MHD_YES;
    }
    if (r->refused) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->too_big || r->len + n > sv->cfg->max_body) {
            r->too_big = 1;
            return MHD_YES;
        }
        if (r->len + n + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 1024;
            while (cap < r->len + n + 1)
                cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b)
                return MHD_NO;
            r->body = b;
            r->cap = cap;
        }
        memcpy(r->body + r->len, upload_data, n);
        r->len += n;
        r->body[r->len] = 0;
        return MHD_YES;
    }
    if (r->settle_how)
        return settled_reply(sv, c, r);
    if (r->removed_id[0])
        return srv_removed_reply(c, r);
    if (r->fork)
        return srv_fork_next(sv, c, r);
    if (r->too_big)
        return srv_reply_error(c, 413, "body_too_large", "the body is over the limit of %zu bytes",
                               sv->cfg->max_body);
    srv_admit_answered(sv, c, 1); /* read in full within the deadline */
    return route(sv, c, r, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    srv_admit_answered(cls, c, 0); /* the next request on it has its own deadline */
    req *r = *con_cls;
    if (r && r->fwd)
        srv_remote_abandon(r->fwd);
    if (r && r->create_agent)
        srv_engine_release(cls, r->create_agent);
    if (r)
        srv_catchup_free(r->catchup);
    srv *sv = cls;
    if (r && r->settle.queued && sv->loop) /* a reply put off, its connection gone first */
        ac_loop_undefer(sv->loop, &r->settle);
    if (r) {
        srv_fork_free(r->fork);
        free(r->body);
        free(r->rows);
        json_decref(r->workers);
        free(r);
        *con_cls = NULL;
    }
}

/* ---- start and stop ---- */

static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *len,
                        int *loopback, int *v6)
{
    char host[128];
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host)
        return -1;
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return -1;
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[') {
        size_t hl = strlen(host);
        if (hl < 3 || host[hl - 1] != ']')
            return -1;
        host[hl - 1] = 0;
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return -1;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
        *len = sizeof *a;
        *v6 = 1;
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return -1;
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    *len = sizeof *a;
    *v6 = 0;
    return 0;
}

static int bound_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    if (!info)
        return -1;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(info->listen_fd, (struct sockaddr *)&ss, &len))
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void srv_free(srv *sv)
{
    while (sv->sessions)
        srv_sess_free(sv->sessions);
    ac_idmap_clear(&sv->by_id);
    if (sv->loop)
        srv_workers_leave(sv);
    srv_remote_free(sv);
    ac_store_close(sv->store);
    srv_agents_stop(sv);
    if (sv->loop) {
        if (sv->sweep_timer)
            ac_loop_cancel_timer(sv->loop, sv->sweep_timer);
        if (sv->ping_timer)
            ac_loop_cancel_timer(sv->loop, sv->ping_timer);
        if (sv->mhd_timer)
            ac_loop_cancel_timer(sv->loop, sv->mhd_timer);
        if (sv->epoll_watch)
            ac_loop_unwatch(sv->loop, sv->epoll_watch);
        if (sv->cfg->loop_done)
            sv->cfg->loop_done(sv->loop);
        ac_loop_free(sv->loop);
    }
    srv_free_loads(sv); /* a reopening's, left waiting: nothing calls back now */
    for (size_t i = 0; i < sv->n_owners; i++) {
        free(sv->owners[i].token);
        free(sv->owners[i].name);
    }
    free(sv->owners);
}

static int any_running(srv *sv)
{
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (ss->s && !ac_session_settled(ss->s))
            return 1;
    return 0;
}

static unsigned open_connections(srv *sv)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(sv->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return i ? i->num_connections : 0;
}

/* ---- the store: recovery at start, idle sessions unloaded ---- */

srv_owner *srv_owner_named(srv *sv, const char *name)
{
    if (!sv->n_owners)
        return !strcmp(name, "local") ? &sv->anon : NULL;
    for (size_t i = 0; i < sv->n_owners; i++)
        if (!strcmp(sv->owners[i].name, name))
            return &sv->owners[i];
    return NULL; /* a token no longer in the file: its sessions stay, unseen */
}

static int on_stored(void *ud, const ac_store_session_info *info)
{
    srv *sv = ud;
    const char *slash = strchr(info->id, '/');
    if (!slash || (sv->notify && srv_sess_stored(sv, info->id))) /* not the server's; known */
        return 0;
    char owner[128];
    snprintf(owner, sizeof owner, "%.*s", (int)(slash - info->id), info->id);
    srv_sess_known(sv, srv_owner_named(sv, owner), info->id, info->created_ms);
    return 0;
}

/* The store every session lives in: --db's file (its sessions listed, the turns a stop or a
 * crash interrupted resumed), else one in memory. */
static int open_store(srv *sv, const char *path)
{
    ac_error err = {0};
    ac_store_options opt = {0};
    opt.max_bytes = sv->cfg->db_max_bytes;
    opt.lease_ms = sv->cfg->lease_ms;
    opt.holder = sv->cfg->worker_id;
    if (!path) /* snapshots often enough that a journal can keep max_events */
        opt.snapshot_every = (uint64_t)(sv->cfg->max_events / 2 > 0 ? sv->cfg->max_events / 2 : 1);
    sv->store = ac_store_open(path ? path : ":memory:", &opt, &err);
    if (!sv->store) {
        fprintf(stderr, "agentc serve: %s\n", err.text);
        return -1;
    }
    ac_store_set_observer(sv->store, srv_on_commit, sv);
    ac_store_set_append_hook(sv->store, srv_on_append, sv);
    if (srv_workers_join(sv, sv->cfg->listen))
        return -1;
    if (!path)
        return 0;
    if (ac_store_list(sv->store, on_stored, sv, &err) != AC_OK) {
        fprintf(stderr, "agentc serve: cannot read the sessions of '%s': %s\n",
                ac_store_name(sv->store), err.text);
        return -1;
    }
    size_t unowned = 0;
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        unowned += !ss->owner;
    if (unowned)
        fprintf(stderr,
                "agentc serve: %zu stored sessions belong to no token of the tokens file (a "
                "token removed or renamed); they stay stored, unseen\n",
                unowned);
    /* the turns a stop or a crash interrupted, of this worker id or of a gone worker */
    size_t resumed = srv_workers_claim(sv);
    fprintf(stderr, "agentc serve: store %s: %zu sessions, %zu resumed\n", ac_store_name(sv->store),
            sv->n_sessions, resumed);
    return 0;
}

static int64_t sweep_every(srv *sv)
{
    int64_t ms = sv->cfg->unload_after_ms / 2;
    return ms < 50 ? 50 : ms > 5000 ? 5000 : ms;
}

static void on_sweep(void *ud)
{
    srv *sv = ud;
    int64_t now = ac_loop_now_ms(sv->loop);
    if (!sv->cfg->db)
        srv_sess_trim(sv);
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (ss->s && ss->stored_id && !ss->streams && !ss->chat && !ss->waiter &&
            ac_session_settled(ss->s) && now - ss->last_active_ms >= sv->cfg->unload_after_ms)
            srv_sess_unload(ss);
    sv->sweep_timer = ac_loop_timer(sv->loop, sweep_every(sv), on_sweep, sv);
}

/* The configuration's defaults where it leaves a value 0. */
static void cfg_defaults(ac_srv_config *cfg)
{
    if (!cfg->listen)
        cfg->listen = "127.0.0.1:8080";
    if (cfg->ping_ms <= 0)
        cfg->ping_ms = 15000;
    if (!cfg->max_body)
        cfg->max_body = (size_t)1 << 20;
    if (!cfg->max_connections)
        cfg->max_connections = 1024;
    if (!cfg->header_timeout_s)
        cfg->header_timeout_s = 30;
    if (!cfg->sessions_per_token)
        cfg->sessions_per_token = 1000;
    if (!cfg->messages_per_min)
        cfg->messages_per_min = 600;
    if (cfg->grace_ms <= 0)
        cfg->grace_ms = 10000;
    if (!cfg->max_header_bytes)
        cfg->max_header_bytes = 16384;
    if (cfg->unload_after_ms <= 0)
        cfg->unload_after_ms = 600000;
    if (cfg->max_events <= 0)
        cfg->max_events = 10000;
    if (!cfg->max_event_bytes)
        cfg->max_event_bytes = 65536;
    if (!cfg->events_per_min)
        cfg->events_per_min = 600;
    if (cfg->client_tool_timeout_ms <= 0)
        cfg->client_tool_timeout_ms = 600000;
    if (!cfg->streams_per_token)
        cfg->streams_per_token = 64;
    if (cfg->lease_ms <= 0)
        cfg->lease_ms = 10000;
    if (cfg->forward_timeout_ms <= 0)
        cfg->forward_timeout_ms = 5000;
}

/* The tokens, the loop, the engine and the store. 0, or the exit status (said on stderr). */
static int srv_setup(srv *sv, int loopback)
{
    const ac_srv_config *cfg = sv->cfg;
    if (cfg->tokens_file && load_tokens(sv, cfg->tokens_file))
        return 3;
    if (!loopback && !sv->n_owners) {
        fprintf(stderr,
                "agentc serve: refusing to listen on '%s' without --tokens: anyone who\n"
                "  can reach it could run the agent (its tools, its API key). Pass\n"
                "  --tokens FILE, or listen on 127.0.0.1\n",
                cfg->listen);
        return 3;
    }
    sv->loop = ac_loop_new();
    if (!sv->loop)
        return 1;
    srv_output_init(sv);
    srv_children_init(sv);
    int rc = srv_agents_start(sv);
    if (rc)
        return rc;
    if (open_store(sv, cfg->db))
        return 3;
    return srv_remote_start(sv);
}

/* Writes the bound port to the port file, atomically (a temporary file renamed). */
static void write_port_file(const char *path, int port)
{
    char tmpf[4096];
    snprintf(tmpf, sizeof tmpf, "%s.tmp", path);
    FILE *f = fopen(tmpf, "w");
    if (f) {
        fprintf(f, "%d\n", port);
        fclose(f);
        rename(tmpf, path);
    }
}

/* Starts the HTTP daemon on the loop (its epoll descriptor watched). 0, or the exit status. */
static int srv_listen(srv *sv, const struct sockaddr_storage *addr, int v6)
{
    const ac_srv_config *cfg = sv->cfg;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    if (v6)
        flags |= MHD_USE_IPv6;
    sv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, sv, MHD_OPTION_SOCK_ADDR,
                             (const struct sockaddr *)addr, MHD_OPTION_NOTIFY_COMPLETED,
                             on_completed, sv, MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
                             MHD_OPTION_CONNECTION_TIMEOUT, cfg->header_timeout_s,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, cfg->max_header_bytes + 16384,
                             MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_NOTIFY_CONNECTION,
                             srv_admit_notify, sv, MHD_OPTION_END);
    if (!sv->d) {
        fprintf(stderr, "agentc serve: cannot listen on %s: %s\n", cfg->listen, strerror(errno));
        return 1;
    }
    const union MHD_DaemonInfo *ei = MHD_get_daemon_info(sv->d, MHD_DAEMON_INFO_EPOLL_FD);
    sv->epoll_watch = ei ? ac_loop_watch_fd(sv->loop, ei->epoll_fd, AC_LOOP_READ, on_epoll, sv) : 0;
    if (!sv->epoll_watch) {
        fprintf(stderr, "agentc serve: cannot watch the server's epoll descriptor\n");
        MHD_stop_daemon(sv->d);
        sv->d = NULL;
        return 1;
    }
    int port = bound_port(sv->d);
    sv->port = port;
    fprintf(stderr, "agentc serve: listening on %s (port %d)%s\n", cfg->listen, port,
            sv->n_owners ? ", bearer tokens required" : "");
    if (cfg->port_file)
        write_port_file(cfg->port_file, port);
    return 0;
}

/* Graceful stop: no new connections, turns settle within the grace period; past it, stored
 * sessions stay mid-turn in the store and resume at the next start, the others are
 * cancelled; the streams end and the connections close (at most 2 s more). */
static void srv_stop(srv *sv)
{
    const ac_srv_config *cfg = sv->cfg;
    fprintf(stderr, "agentc serve: stopping\n");
    sv->stopping = 1;
    int lfd = (int)MHD_quiesce_daemon(sv->d);
    if (lfd >= 0)
        close(lfd);
    int64_t deadline = ac_loop_now_ms(sv->loop) + cfg->grace_ms;
    while (any_running(sv) && ac_loop_now_ms(sv->loop) < deadline) {
        ac_loop_run_once(sv->loop, 100);
        srv_run_loads(sv);
    }
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        if (ss->s && (!ss->stored_id || !cfg->db) && !ac_session_settled(ss->s)) {
            srv_sess_say(ss, "stopped",
                         json_pack("{s:s, s:s}", "reason", "server_stopping", "partial_response",
                                   ac_session_partial(ss->s)));
            ac_session_cancel(ss->s);
        }
    for (int i = 0; i < 3; i++) /* the loop turn's commit: its frames reach the readers */
        ac_loop_run_once(sv->loop, 0);
    for (srv_sess *ss = sv->sessions; ss; ss = ss->next)
        for (srv_stream *st = ss->streams; st; st = st->next)
            srv_stream_finish(st);
    run_mhd(sv);
    deadline = ac_loop_now_ms(sv->loop) + 2000;
    while (open_connections(sv) && ac_loop_now_ms(sv->loop) < deadline) {
        ac_loop_run_once(sv->loop, 50);
        srv_run_loads(sv);
    }
    /* what is still suspended is resumed before the daemon stops; the leases are released
     * (a turn left mid-way is claimed by another worker at its next heartbeat) */
    srv_stop_loads(sv);
    srv_remote_stop(sv);
    while (sv->sessions)
        srv_sess_free(sv->sessions);
    srv_workers_stop(sv);
    ac_loop_run_once(sv->loop, 0); /* replies waiting for a freed session's commit resumed */
    run_mhd(sv);
    ac_loop_unwatch(sv->loop, sv->epoll_watch);
    sv->epoll_watch = 0;
    MHD_stop_daemon(sv->d);
    sv->d = NULL;
    srv_workers_leave(sv); /* nothing is answered any more: its waits cost no request */
}

int ac_srv_run(const ac_srv_config *cfg_in, volatile sig_atomic_t *stop)
{
    ac_srv_config cfg = *cfg_in;
    cfg_defaults(&cfg);
    srv sv_, *sv = &sv_;
    memset(sv, 0, sizeof *sv);
    sv->cfg = &cfg;
    sv->anon.name = (char *)"local";
    struct sockaddr_storage addr;
    socklen_t alen;
    int loopback = 0, v6 = 0;
    if (parse_listen(cfg.listen, &addr, &alen, &loopback, &v6)) {
        fprintf(stderr,
                "agentc serve: --listen takes ADDR:PORT (127.0.0.1:8080, [::1]:8080), not '%s'\n",
                cfg.listen);
        return 2;
    }
    snprintf(sv->listen_host, sizeof sv->listen_host, "%.*s",
             (int)(strrchr(cfg.listen, ':') - cfg.listen), cfg.listen);
    int rc = srv_setup(sv, loopback);
    if (!rc)
        rc = srv_listen(sv, &addr, v6);
    if (rc) {
        srv_free(sv);
        return rc;
    }
    char addr_s[200];
    snprintf(addr_s, sizeof addr_s, "%s:%d", sv->listen_host, sv->port);
    if (srv_workers_join(sv, addr_s)) { /* its row names the bound port */
        srv_stop(sv);
        srv_free(sv);
        return 1;
    }
    srv_workers_start(sv);
    sv->ping_timer = ac_loop_timer(sv->loop, cfg.ping_ms, on_ping, sv);
    sv->sweep_timer = ac_loop_timer(sv->loop, sweep_every(sv), on_sweep, sv);
    run_mhd(sv);
    while (!*stop) {
        ac_loop_run_once(sv->loop, 500);
        srv_run_loads(sv);
        srv_admit_sweep(sv);
        run_mhd(sv); /* at the connection limit MHD stops listening; only a run re-arms it */
    }
    srv_stop(sv);
    srv_free(sv);
    fprintf(stderr, "agentc serve: stopped\n");
    return 0;
}
