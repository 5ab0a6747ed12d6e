/* The MCP client: JSON-RPC 2.0 over a transport (mcp_stdio.c, mcp_http.c),
 * the handshake, tools/list, tools/call, the server's own requests and
 * notifications, faults and restarts. See mcp.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/version.h"
#include "mcp/mcp.h"
#include "mcp/mcp_transport.h"
#include "util/buf.h"

enum { ST_DOWN, ST_STARTING, ST_READY };
enum { P_DISCOVER, P_INIT, P_LIST, P_CALL };

typedef struct pending {
    struct pending *next;
    json_int_t id;
    int kind;
    ac_mcp_call *call;
} pending;

struct ac_mcp_call {
    ac_mcp_call *next;
    ac_mcp_server *srv;
    char *tool;
    json_t *args;
    int64_t timeout_ms;
    json_int_t rpc_id; /* 0: not sent yet (the server is starting) */
    uint64_t timer;
    int fail_now; /* fails from its 0 ms timer with msg */
    char *msg;
    ac_mcp_done_fn done;
    ac_mcp_progress_fn progress;
    void *ud;
    char traceparent[64]; /* its request's, "" none */
};

struct ac_mcp_server {
    ac_loop *loop;
    ac_mcp_config cfg;
    mcp_transport *tr;
    int state;
    int stateless;             /* the 2026-07-28 revision: _meta in every request */
    char next_traceparent[64]; /* for the next call (ac_mcp_server_set_traceparent) */
    char version[16];
    json_int_t next_id;
    pending *pend;
    ac_mcp_call *calls;
    ac_mcp_tool *tools;
    size_t n_tools;
    json_t *listing; /* tools gathered over the pages of a tools/list */
    int pages;
    int listing_active, refresh_wanted;
    int64_t listed_ms;   /* when the last tools/list started (list_changed is throttled) */
    uint64_t list_timer; /* a throttled refresh waits for it */
    uint64_t hs_timer, probe_timer, restart_timer;
    ac_loop_task fault_task; /* a fault noticed where callbacks must not run (fault_later) */
    char fault_why[400];
    json_int_t probe_id;
    unsigned fails, starts;
    unsigned reconnects; /* new HTTP sessions since the last answered call */
    int64_t retry_at;
    char last_error[700];
    void (*on_tools)(void *ud, ac_mcp_server *s);
    void *on_tools_ud;
};

/* ---- configuration copies ---- */

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static char **strv_dup(char *const *v)
{
    if (!v)
        return NULL;
    size_t n = 0;
    while (v[n])
        n++;
    char **d = calloc(n + 1, sizeof *d);
    for (size_t i = 0; d && i < n; i++)
        if (!(d[i] = strdup(v[i]))) {
            strv_free(d);
            return NULL;
        }
    return d;
}

void ac_mcp_config_clear(ac_mcp_config *c)
{
    if (!c)
        return;
    free(c->name);
    free(c->url);
    strv_free(c->argv);
    strv_free(c->env);
    strv_free(c->env_add);
    strv_free(c->headers);
    strv_free(c->secrets);
    json_decref(c->cache_tools);
    memset(c, 0, sizeof *c);
}

static void tools_free(ac_mcp_tool *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].name);
        free(t[i].description);
        json_decref(t[i].input_schema);
    }
    free(t);
}

/* ---- calls ---- */

static void call_unlink(ac_mcp_call *c)
{
    ac_mcp_server *s = c->srv;
    for (ac_mcp_call **p = &s->calls; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    for (pending **p = &s->pend; *p; p = &(*p)->next)
        if ((*p)->call == c) {
            pending *d = *p;
            *p = d->next;
            free(d);
            break;
        }
    if (c->timer)
        ac_loop_cancel_timer(s->loop, c->timer);
    c->timer = 0;
}

static void call_free(ac_mcp_call *c)
{
    free(c->tool);
    free(c->msg);
    json_decref(c->args);
    free(c);
}

/* Ends a call: its done runs with ok and text, then it is freed. */
/* text with every secret of the configuration replaced by [redacted]: a new string, or NULL
 * when out of memory. */
static char *mask(char *const *secrets, const char *text)
{
    ac_buf out;
    ac_buf_init(&out, AC_BUF_MAX);
    while (*text) {
        size_t hit = 0;
        for (char *const *p = secrets; p && *p && !hit; p++)
            if (**p && !strncmp(text, *p, strlen(*p)))
                hit = strlen(*p);
        if (ac_buf_add(&out, hit ? "[redacted]" : text, hit ? 10 : 1) != 0)
            break;
        text += hit ? hit : 1;
    }
    return ac_buf_take(&out, NULL);
}

static void call_end(ac_mcp_call *c, int ok, const char *text)
{
    char *m = mask(c->srv->cfg.secrets, text);
    call_unlink(c);
    ac_mcp_done_fn done = c->done;
    void *ud = c->ud;
    call_free(c);
    done(ud, ok, m ? m : "out of memory");
    free(m);
}

/* ---- sending ---- */

static void fault(ac_mcp_server *s, const char *why);
static void fault_later(ac_mcp_server *s, const char *why);
static void on_message(void *ud, json_t *msg);

static json_t *meta_for(ac_mcp_server *s)
{
    if (!s->stateless)
        return NULL;
    return json_pack("{s:s, s:{s:s, s:s}, s:{}}", "io.modelcontextprotocol/protocolVersion",
                     s->version, "io.modelcontextprotocol/clientInfo", "name", "agentc", "version",
                     AGENTC_VERSION, "io.modelcontextprotocol/clientCapabilities");
}

/* Sends msg (stolen). 0, or -1 after a fault. */
static int send_msg(ac_mcp_server *s, json_t *msg)
{
    char err[200];
    char *txt = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    if (!txt) {
        fault(s, "out of memory");
        return -1;
    }
    int rc = s->tr ? s->tr->send(s->tr, txt, strlen(txt), err, sizeof err) : -1;
    free(txt);
    if (rc < 0) {
        fault_later(s, s->tr ? err : "is not running");
        return -1;
    }
    return 0;
}

/* Sends a request (params stolen, may be NULL); returns its id, 0 after a fault. */
static json_int_t request(ac_mcp_server *s, const char *method, json_t *params, int kind,
                          ac_mcp_call *call)
{
    pending *p = calloc(1, sizeof *p);
    json_int_t id = ++s->next_id;
    if (!params)
        params = json_object();
    json_t *meta = meta_for(s);
    if (meta && params) {
        json_t *old = json_object_get(params, "_meta");
        if (old)
            json_object_update(old, meta);
        else
            json_object_set(params, "_meta", meta);
    }
    json_decref(meta);
    json_t *msg = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
                            "params", params);
    if (!p || !msg) {
        free(p);
        json_decref(msg);
        fault(s, "out of memory");
        return 0;
    }
    p->id = id;
    p->kind = kind;
    p->call = call;
    p->next = s->pend;
    s->pend = p;
    if (send_msg(s, msg) < 0)
        return 0;
    return id;
}

static void notify(ac_mcp_server *s, const char *method, json_t *params)
{
    json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (msg && params)
        json_object_set_new(msg, "params", params);
    else
        json_decref(params);
    send_msg(s, msg);
}

/* ---- faults and lifecycle ---- */

/* Transports report from deferred tasks (mcp_transport.h), so one can be freed from inside
 * its own reports. */
static void stop_transport(ac_mcp_server *s)
{
    if (s->tr)
        s->tr->free(s->tr);
    s->tr = NULL;
}

static int64_t backoff_ms(unsigned fails)
{
    if (fails <= 1)
        return 0;
    int64_t d = AC_MCP_BACKOFF_MIN_MS;
    for (unsigned i = 2; i < fails && d < AC_MCP_BACKOFF_MAX_MS; i++)
        d *= 2;
    return d < AC_MCP_BACKOFF_MAX_MS ? d : AC_MCP_BACKOFF_MAX_MS;
}

static void start(ac_mcp_server *s);

static void restart_fire(void *ud)
{
    ac_mcp_server *s = ud;
    s->restart_timer = 0;
    if (s->state == ST_DOWN)
        start(s);
}

/* The server is unusable: every call fails with why; it starts again after the backoff (or
 * with the next call after it). */
static void fault(ac_mcp_server *s, const char *why)
{
    if (s->state == ST_DOWN && !s->tr)
        return;
    snprintf(s->last_error, sizeof s->last_error, "MCP server '%s' %s", s->cfg.name, why);
    char *m = mask(s->cfg.secrets, s->last_error);
    if (m)
        snprintf(s->last_error, sizeof s->last_error, "%s", m);
    free(m);
    int was_listing = ac_mcp_server_listing(s);
    int was_starting = s->state == ST_STARTING;
    s->state = ST_DOWN;
    s->fails++;
    s->retry_at = ac_loop_now_ms(s->loop) + backoff_ms(s->fails);
    if (s->hs_timer)
        ac_loop_cancel_timer(s->loop, s->hs_timer);
    if (s->probe_timer)
        ac_loop_cancel_timer(s->loop, s->probe_timer);
    ac_loop_undefer(s->loop, &s->fault_task);
    if (s->list_timer)
        ac_loop_cancel_timer(s->loop, s->list_timer);
    s->hs_timer = s->probe_timer = s->list_timer = 0;
    s->listing_active = s->refresh_wanted = 0;
    json_decref(s->listing);
    s->listing = NULL;
    stop_transport(s);
    if (!s->restart_timer)
        s->restart_timer =
            ac_loop_timer(s->loop, s->retry_at - ac_loop_now_ms(s->loop), restart_fire, s);
    if ((was_listing || was_starting) && s->on_tools) /* the old list stays */
        s->on_tools(s->on_tools_ud, s);
    while (s->pend) {
        pending *p = s->pend;
        s->pend = p->next;
        free(p);
    }
    /* detach the calls first: a done may start new ones */
    ac_mcp_call *list = s->calls;
    s->calls = NULL;
    char msg[800];
    snprintf(msg, sizeof msg, "%s", s->last_error);
    while (list) {
        ac_mcp_call *c = list;
        list = c->next;
        c->next = NULL;
        if (c->timer)
            ac_loop_cancel_timer(s->loop, c->timer);
        c->timer = 0;
        ac_mcp_done_fn done = c->done;
        void *ud = c->ud;
        call_free(c);
        done(ud, 0, msg);
    }
}

static void fault_fire(void *ud)
{
    ac_mcp_server *s = ud;
    char why[sizeof s->fault_why];
    memcpy(why, s->fault_why, sizeof why);
    fault(s, why);
}

/* A fault noticed where the callers' callbacks must not run (inside ac_mcp_call_tool, or
 * inside a send): reported from a deferred task. */
static void fault_later(ac_mcp_server *s, const char *why)
{
    if (s->fault_task.queued)
        return;
    snprintf(s->fault_why, sizeof s->fault_why, "%s", why);
    ac_loop_defer(s->loop, &s->fault_task);
}

static void on_closed(void *ud, const char *why)
{
    fault(ud, why);
}

/* The HTTP session expired: a new one, and the calls not answered are sent again when it is
 * ready (the server did not run them: it did not know the session). */
static void on_expired(void *ud)
{
    ac_mcp_server *s = ud;
    if (s->state != ST_READY || ++s->reconnects > 3) {
        fault(s, "ended the HTTP session (404) again and again");
        return;
    }
    stop_transport(s);
    while (s->pend) {
        pending *p = s->pend;
        s->pend = p->next;
        free(p);
    }
    for (ac_mcp_call *c = s->calls; c; c = c->next)
        c->rpc_id = 0;
    json_decref(s->listing);
    s->listing = NULL;
    s->listing_active = 0;
    s->state = ST_DOWN;
    start(s);
}

static void send_call(ac_mcp_server *s, ac_mcp_call *c);

static void list_page(ac_mcp_server *s, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
    request(s, "tools/list", params, P_LIST, NULL);
}

static void start_listing(ac_mcp_server *s)
{
    json_decref(s->listing);
    s->listing = json_array();
    s->pages = 0;
    s->listing_active = 1;
    s->refresh_wanted = 0;
    s->listed_ms = ac_loop_now_ms(s->loop);
    list_page(s, NULL);
}

static void refresh_fire(void *ud)
{
    ac_mcp_server *s = ud;
    s->list_timer = 0;
    if (s->state == ST_READY && !s->listing_active && s->refresh_wanted)
        start_listing(s);
}

/* The list changed: listed again now, or once AC_MCP_LIST_CHANGED_MS have passed since the
 * last listing started (a server saying so after every tools/list costs one a second). */
static void want_refresh(ac_mcp_server *s)
{
    s->refresh_wanted = 1;
    if (s->listing_active || s->list_timer)
        return;
    int64_t wait = s->listed_ms + AC_MCP_LIST_CHANGED_MS - ac_loop_now_ms(s->loop);
    if (wait <= 0)
        start_listing(s);
    else
        s->list_timer = ac_loop_timer(s->loop, wait, refresh_fire, s);
}

static void send_initialize(ac_mcp_server *s)
{
    s->stateless = 0;
    json_t *params =
        json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", AC_MCP_VERSION_2025,
                  "capabilities", "clientInfo", "name", "agentc", "version", AGENTC_VERSION);
    request(s, "initialize", params, P_INIT, NULL);
}

static void probe_expired(void *ud)
{
    ac_mcp_server *s = ud;
    s->probe_timer = 0;
    for (pending **p = &s->pend; *p; p = &(*p)->next)
        if ((*p)->kind == P_DISCOVER) {
            pending *d = *p;
            *p = d->next;
            free(d);
            break;
        }
    send_initialize(s);
}

/* The start may go on after start_timeout (the model calls stop waiting for it then, mcp.h):
 * it faults only after the call timeout, if that is longer. */
static int64_t handshake_ms(const ac_mcp_server *s)
{
    return s->cfg.start_timeout_ms > s->cfg.timeout_ms ? s->cfg.start_timeout_ms
                                                       : s->cfg.timeout_ms;
}

static void hs_expired(void *ud)
{
    ac_mcp_server *s = ud;
    char why[160];
    s->hs_timer = 0;
    snprintf(why, sizeof why, "did not complete the handshake within %lld ms",
             (long long)handshake_ms(s));
    fault(s, why);
}

static void start(ac_mcp_server *s)
{
    char err[400];
    if (s->state != ST_DOWN)
        return;
    mcp_transport_cb cb = {s, on_message, on_closed, on_expired};
    s->starts++;
    s->tr = s->cfg.url ? ac_mcp_http_new(s->loop, &s->cfg, &cb, err, sizeof err)
                       : ac_mcp_stdio_new(s->loop, &s->cfg, &cb, err, sizeof err);
    s->state = ST_STARTING;
    s->version[0] = 0;
    if (!s->tr) {
        char why[480];
        snprintf(why, sizeof why, "could not start: %s", err);
        fault_later(s, why);
        return;
    }
    s->hs_timer = ac_loop_timer(s->loop, handshake_ms(s), hs_expired, s);
    /* probe the 2026-07-28 revision; anything but a good answer falls back */
    s->stateless = 0;
    json_t *params = json_pack("{s:{s:s, s:{s:s, s:s}, s:{}}}", "_meta",
                               "io.modelcontextprotocol/protocolVersion", AC_MCP_VERSION_2026,
                               "io.modelcontextprotocol/clientInfo", "name", "agentc", "version",
                               AGENTC_VERSION, "io.modelcontextprotocol/clientCapabilities");
    int64_t probe = s->cfg.start_timeout_ms / 2 < AC_MCP_PROBE_TIMEOUT_MS
                        ? s->cfg.start_timeout_ms / 2
                        : AC_MCP_PROBE_TIMEOUT_MS;
    s->probe_id = request(s, "server/discover", params, P_DISCOVER, NULL);
    if (s->probe_id && s->state == ST_STARTING)
        s->probe_timer = ac_loop_timer(s->loop, probe, probe_expired, s);
}

/* ---- what the server sends ---- */

static const char *known_versions[] = {AC_MCP_VERSION_2025, "2025-06-18", "2025-03-26",
                                       "2024-11-05", NULL};

static void got_discover(ac_mcp_server *s, json_t *result)
{
    if (s->probe_timer)
        ac_loop_cancel_timer(s->loop, s->probe_timer);
    s->probe_timer = 0;
    int ok = 0;
    json_t *vs = json_object_get(result, "supportedVersions");
    size_t i;
    json_t *v;
    json_array_foreach(vs, i, v) if (json_is_string(v) &&
                                     !strcmp(json_string_value(v), AC_MCP_VERSION_2026)) ok = 1;
    const char *pv = json_string_value(json_object_get(result, "protocolVersion"));
    if (pv && !strcmp(pv, AC_MCP_VERSION_2026))
        ok = 1;
    if (!ok) {
        send_initialize(s);
        return;
    }
    s->stateless = 1;
    snprintf(s->version, sizeof s->version, "%s", AC_MCP_VERSION_2026);
    if (s->tr->set_version)
        s->tr->set_version(s->tr, s->version);
    start_listing(s);
}

static void got_initialize(ac_mcp_server *s, json_t *result)
{
    const char *pv = json_string_value(json_object_get(result, "protocolVersion"));
    int known = 0;
    for (size_t i = 0; pv && known_versions[i]; i++)
        known |= !strcmp(pv, known_versions[i]);
    if (!known) {
        char why[200], shown[40];
        ac_mcp_printable(pv ? pv : "(none)", strlen(pv ? pv : "(none)"), shown, sizeof shown);
        snprintf(why, sizeof why,
                 "answered initialize with protocol version '%s', which agentc "
                 "does not speak",
                 shown);
        fault(s, why);
        return;
    }
    snprintf(s->version, sizeof s->version, "%s", pv);
    if (s->tr->set_version)
        s->tr->set_version(s->tr, s->version);
    notify(s, "notifications/initialized", NULL);
    if (s->state == ST_STARTING)
        start_listing(s);
}

static void got_tools(ac_mcp_server *s, json_t *result)
{
    json_t *tools = json_object_get(result, "tools");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        json_t *name = json_object_get(t, "name"); /* a name with a NUL: that tool is left out */
        if (json_is_object(t) && json_is_string(name) &&
            strlen(json_string_value(name)) == json_string_length(name))
            json_array_append(s->listing, t);
    }
    if (json_array_size(s->listing) > s->cfg.max_tools) {
        char why[160];
        snprintf(why, sizeof why, "lists more than %zu tools (its \"max_tools\")",
                 s->cfg.max_tools);
        fault(s, why);
        return;
    }
    const char *cursor = json_string_value(json_object_get(result, "nextCursor"));
    if (cursor && *cursor && ++s->pages < AC_MCP_MAX_PAGES) {
        list_page(s, cursor);
        return;
    }
    size_t n = json_array_size(s->listing);
    ac_mcp_tool *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        fault(s, "out of memory");
        return;
    }
    json_array_foreach(s->listing, i, t)
    {
        const char *d = json_string_value(json_object_get(t, "description"));
        json_t *schema = json_object_get(t, "inputSchema");
        json_t *ann = json_object_get(t, "annotations");
        v[i].name = strdup(json_string_value(json_object_get(t, "name")));
        v[i].description = strdup(d ? d : "");
        v[i].input_schema =
            json_is_object(schema) ? json_incref(schema) : json_pack("{s:s}", "type", "object");
        v[i].idempotent_hint = json_is_true(json_object_get(ann, "idempotentHint"));
        v[i].read_only_hint = json_is_true(json_object_get(ann, "readOnlyHint"));
    }
    tools_free(s->tools, s->n_tools);
    s->tools = v;
    s->n_tools = n;
    json_decref(s->listing);
    s->listing = NULL;
    s->listing_active = 0;
    if (s->state == ST_STARTING) {
        s->state = ST_READY;
        if (s->hs_timer)
            ac_loop_cancel_timer(s->loop, s->hs_timer);
        s->hs_timer = 0;
        for (ac_mcp_call *c = s->calls; c && s->state == ST_READY; c = c->next)
            if (!c->rpc_id && !c->fail_now)
                send_call(s, c);
    }
    if (s->on_tools)
        s->on_tools(s->on_tools_ud, s);
    if (s->refresh_wanted && s->state == ST_READY)
        want_refresh(s);
}

/* A result text over max bytes cut there (at a character's start), as a command tool's
 * output is: "[output cut at N bytes]" after it. text is taken; NULL when out of memory. */
static char *cut_output(char *text, size_t max)
{
    size_t n = strlen(text);
    if (n <= max)
        return text;
    while (max && ((unsigned char)text[max] & 0xc0) == 0x80)
        max--;
    char *o = realloc(text, max + 64);
    if (!o) {
        free(text);
        return NULL;
    }
    snprintf(o + max, 64, "\n[output cut at %zu bytes]", max);
    return o;
}

static void got_response(ac_mcp_server *s, json_t *msg)
{
    json_t *idj = json_object_get(msg, "id");
    if (!json_is_integer(idj))
        return; /* not one of ours */
    json_int_t id = json_integer_value(idj);
    pending *p = NULL;
    for (pending **pp = &s->pend; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            p = *pp;
            *pp = p->next;
            break;
        }
    if (!p)
        return; /* late (timed out, cancelled) or unknown: ignored */
    int kind = p->kind;
    ac_mcp_call *call = p->call;
    free(p);
    json_t *result = json_object_get(msg, "result");
    json_t *error = json_object_get(msg, "error");
    if (kind == P_DISCOVER) {
        if (json_is_object(result))
            got_discover(s, result);
        else {
            if (s->probe_timer)
                ac_loop_cancel_timer(s->loop, s->probe_timer);
            s->probe_timer = 0;
            send_initialize(s);
        }
        return;
    }
    if (!json_is_object(result)) {
        const char *em = json_string_value(json_object_get(error, "message"));
        char shown[300], why[400];
        ac_mcp_printable(em ? em : "no result", strlen(em ? em : "no result"), shown, sizeof shown);
        if (kind == P_CALL) {
            snprintf(why, sizeof why, "MCP error %lld: %s",
                     (long long)json_integer_value(json_object_get(error, "code")), shown);
            s->fails = 0;
            call_end(call, 0, why);
            return;
        }
        snprintf(why, sizeof why, "refused %s: %s", kind == P_INIT ? "initialize" : "tools/list",
                 shown);
        if (kind == P_LIST && s->state == ST_READY) { /* a refresh failed: keep the old list */
            s->listing_active = 0;
            s->refresh_wanted = 0;
            if (s->on_tools)
                s->on_tools(s->on_tools_ud, s);
            return;
        }
        fault(s, why);
        return;
    }
    if (kind == P_INIT)
        got_initialize(s, result);
    else if (kind == P_LIST)
        got_tools(s, result);
    else if (kind == P_CALL) {
        int ok = 1;
        char *text = ac_mcp_result_text(result, &ok);
        s->fails = 0;
        s->reconnects = 0;
        if (text)
            text = cut_output(text, s->cfg.max_output);
        call_end(call, ok, text ? text : "out of memory");
        free(text);
    }
}

static void got_request(ac_mcp_server *s, json_t *msg, const char *method)
{
    json_t *id = json_object_get(msg, "id");
    json_t *ans;
    if (!strcmp(method, "ping"))
        ans = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
    else
        ans = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                        -32601, "message", "Method not found");
    send_msg(s, ans);
}

static void got_notification(ac_mcp_server *s, json_t *msg, const char *method)
{
    json_t *params = json_object_get(msg, "params");
    if (!strcmp(method, "notifications/progress")) {
        json_t *tok = json_object_get(params, "progressToken");
        if (!json_is_string(tok) || strncmp(json_string_value(tok), "agentc-", 7) != 0)
            return;
        json_int_t id = strtoll(json_string_value(tok) + 7, NULL, 10);
        for (ac_mcp_call *c = s->calls; c; c = c->next)
            if (c->rpc_id == id) {
                if (c->progress) {
                    json_t *tot = json_object_get(params, "total");
                    c->progress(c->ud, json_number_value(json_object_get(params, "progress")),
                                json_is_number(tot) ? json_number_value(tot) : -1.0,
                                json_string_value(json_object_get(params, "message")));
                }
                break;
            }
    } else if (!strcmp(method, "notifications/tools/list_changed")) {
        if (s->state != ST_READY)
            return; /* the listing of the handshake comes next anyway */
        want_refresh(s);
    }
    /* others (logging, resources, cancelled) are not used */
}

static void on_message(void *ud, json_t *msg)
{
    ac_mcp_server *s = ud;
    if (!json_is_object(msg))
        return;
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method) {
        if (json_object_get(msg, "id"))
            got_request(s, msg, method);
        else
            got_notification(s, msg, method);
    } else {
        got_response(s, msg);
    }
}

/* ---- calls ---- */

static void call_timer(void *ud)
{
    ac_mcp_call *c = ud;
    ac_mcp_server *s = c->srv;
    c->timer = 0;
    if (c->fail_now) {
        char *m = c->msg;
        c->msg = NULL;
        call_end(c, 0, m ? m : "failed");
        free(m);
        return;
    }
    char msg[300];
    snprintf(msg, sizeof msg, "MCP server '%s': tools/call '%s' timed out after %lld ms",
             s->cfg.name, c->tool, (long long)c->timeout_ms);
    if (c->rpc_id && s->state == ST_READY)
        notify(s, "notifications/cancelled",
               json_pack("{s:I, s:s}", "requestId", c->rpc_id, "reason", "timed out"));
    call_end(c, 0, msg);
}

static void send_call(ac_mcp_server *s, ac_mcp_call *c)
{
    char tok[40];
    json_int_t id = s->next_id + 1; /* request() takes this one */
    snprintf(tok, sizeof tok, "agentc-%lld", (long long)id);
    json_t *params = json_pack("{s:s, s:O, s:{s:s}}", "name", c->tool, "arguments", c->args,
                               "_meta", "progressToken", tok);
    c->rpc_id = id;
    if (s->tr)
        memcpy(s->tr->traceparent, c->traceparent, sizeof c->traceparent);
    request(s, "tools/call", params, P_CALL, c);
    if (s->tr)
        s->tr->traceparent[0] = 0;
}

void ac_mcp_server_set_traceparent(ac_mcp_server *s, const char *traceparent)
{
    if (s)
        snprintf(s->next_traceparent, sizeof s->next_traceparent, "%s",
                 traceparent && strlen(traceparent) < sizeof s->next_traceparent ? traceparent
                                                                                 : "");
}

ac_mcp_call *ac_mcp_call_tool(ac_mcp_server *s, const char *tool, const json_t *args,
                              int64_t timeout_ms, ac_mcp_done_fn done, ac_mcp_progress_fn progress,
                              void *ud)
{
    ac_mcp_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->srv = s;
    c->tool = strdup(tool);
    c->args = args ? json_deep_copy(args) : json_object();
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : s->cfg.timeout_ms;
    c->done = done;
    c->progress = progress;
    c->ud = ud;
    memcpy(c->traceparent, s->next_traceparent, sizeof c->traceparent);
    s->next_traceparent[0] = 0;
    if (!c->tool || !c->args) {
        call_free(c);
        return NULL;
    }
    c->next = s->calls;
    s->calls = c;
    if (s->state == ST_DOWN && ac_loop_now_ms(s->loop) < s->retry_at) {
        char m[900];
        snprintf(m, sizeof m, "%s (next restart in %lld ms)", s->last_error,
                 (long long)(s->retry_at - ac_loop_now_ms(s->loop)));
        c->fail_now = 1;
        c->msg = strdup(m);
        c->timer = ac_loop_timer(s->loop, 0, call_timer, c);
        return c;
    }
    c->timer = ac_loop_timer(s->loop, c->timeout_ms, call_timer, c);
    if (s->state == ST_DOWN)
        start(s); /* a failure to start is reported later (fault_later) */
    if (s->state == ST_READY)
        send_call(s, c);
    return c;
}

void ac_mcp_call_cancel(ac_mcp_call *c, const char *reason)
{
    if (!c)
        return;
    ac_mcp_server *s = c->srv;
    if (c->rpc_id && s->state != ST_DOWN)
        notify(s, "notifications/cancelled",
               json_pack("{s:I, s:s}", "requestId", c->rpc_id, "reason", reason ? reason : ""));
    /* notify may have faulted the server, which ended (and freed) every call */
    for (ac_mcp_call *x = s->calls; x; x = x->next)
        if (x == c) {
            call_unlink(c);
            call_free(c);
            return;
        }
}

/* ---- the server object ---- */

ac_mcp_server *ac_mcp_server_new(ac_loop *loop, const ac_mcp_config *cfg)
{
    ac_mcp_server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->loop = loop;
    s->fault_task.fn = fault_fire;
    s->fault_task.ud = s;
    s->cfg.name = strdup(cfg->name);
    s->cfg.url = cfg->url ? strdup(cfg->url) : NULL;
    s->cfg.argv = strv_dup(cfg->argv);
    s->cfg.env = strv_dup(cfg->env);
    s->cfg.env_add = strv_dup(cfg->env_add);
    s->cfg.headers = strv_dup(cfg->headers);
    s->cfg.secrets = strv_dup(cfg->secrets);
    s->cfg.timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
    s->cfg.start_timeout_ms =
        cfg->start_timeout_ms > 0 ? cfg->start_timeout_ms : AC_MCP_START_TIMEOUT_MS;
    s->cfg.idempotent = cfg->idempotent;
    s->cfg.max_tools = cfg->max_tools ? cfg->max_tools : AC_MCP_MAX_TOOLS;
    s->cfg.max_output = cfg->max_output ? cfg->max_output : AC_MCP_MAX_OUTPUT;
    s->cfg.cache_tools = json_incref(cfg->cache_tools);
    if (!s->cfg.name || (cfg->url && !s->cfg.url) || (cfg->argv && !s->cfg.argv) ||
        (cfg->env && !s->cfg.env) || (cfg->env_add && !s->cfg.env_add) ||
        (cfg->headers && !s->cfg.headers) || (cfg->secrets && !s->cfg.secrets) ||
        (!s->cfg.url && !s->cfg.argv)) {
        ac_mcp_config_clear(&s->cfg);
        free(s);
        return NULL;
    }
    return s;
}

void ac_mcp_server_free(ac_mcp_server *s)
{
    if (!s)
        return;
    while (s->calls) {
        ac_mcp_call *c = s->calls;
        call_unlink(c);
        call_free(c);
    }
    while (s->pend) {
        pending *p = s->pend;
        s->pend = p->next;
        free(p);
    }
    if (s->hs_timer)
        ac_loop_cancel_timer(s->loop, s->hs_timer);
    if (s->probe_timer)
        ac_loop_cancel_timer(s->loop, s->probe_timer);
    if (s->restart_timer)
        ac_loop_cancel_timer(s->loop, s->restart_timer);
    if (s->list_timer)
        ac_loop_cancel_timer(s->loop, s->list_timer);
    ac_loop_undefer(s->loop, &s->fault_task);
    if (s->tr)
        s->tr->free(s->tr);
    json_decref(s->listing);
    tools_free(s->tools, s->n_tools);
    ac_mcp_config_clear(&s->cfg);
    free(s);
}

const char *ac_mcp_server_name(const ac_mcp_server *s)
{
    return s->cfg.name;
}

const ac_mcp_config *ac_mcp_server_config(const ac_mcp_server *s)
{
    return &s->cfg;
}

const char *ac_mcp_server_version(const ac_mcp_server *s)
{
    return s->version;
}

size_t ac_mcp_server_tool_count(const ac_mcp_server *s)
{
    return s->n_tools;
}

const ac_mcp_tool *ac_mcp_server_tool(const ac_mcp_server *s, size_t i)
{
    return i < s->n_tools ? &s->tools[i] : NULL;
}

int ac_mcp_server_listing(const ac_mcp_server *s)
{
    return s->state == ST_READY && (s->listing_active || s->refresh_wanted);
}

void ac_mcp_server_on_tools(ac_mcp_server *s, void (*fn)(void *ud, ac_mcp_server *s), void *ud)
{
    s->on_tools = fn;
    s->on_tools_ud = ud;
}

unsigned ac_mcp_server_starts(const ac_mcp_server *s)
{
    return s->starts;
}

void ac_mcp_server_start(ac_mcp_server *s)
{
    if (s->state == ST_DOWN)
        start(s);
}

int ac_mcp_server_starting(const ac_mcp_server *s)
{
    return s->state == ST_STARTING;
}

int ac_mcp_server_ready(const ac_mcp_server *s)
{
    return s->state == ST_READY;
}

const char *ac_mcp_server_error(const ac_mcp_server *s)
{
    return s->last_error;
}
