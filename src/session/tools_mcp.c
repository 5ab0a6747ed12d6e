/*
 * tools_mcp.c - the MCP servers of an engine's tool files (src/mcp): each
 * server is started once, when its tool file is added, and shared by every
 * session of the engine; its tools become the toolkit named after the
 * server, registered as server::tool (server__tool on the wire, util/toolname.h).
 * The run_tools effect (tools_run.c) calls them through ac_mcp_call_tool.
 *
 * Servers start in the background: adding the tool file never waits. A model
 * call waits (effects.c, on the loop) for servers still within their first
 * start_timeout; a server listed later has its tools offered from the next
 * model call (tools.changed). A server that cannot start or crashes offers
 * what it listed before (nothing if it never started); calls to it fail with
 * the reason while it is started again with a bounded backoff (mcp.h).
 * When the server says its list changed, the engine's tools are updated:
 * new tools are added, changed ones replaced, dropped ones fail when called.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "session/tools_internal.h"
#include "util/toolname.h"
#include "tools/schema.h"

/* A model call that waits for a server's changed list waits at most this long. */
#define MCP_LISTING_WAIT_MS 5000

typedef struct mcp_entry {
    struct ac_mcp_set *set;
    ac_mcp_server *srv;
    int awaited;       /* within its first start_timeout: model calls wait for it */
    int64_t start_ms;  /* when it was first started */
    uint64_t deadline; /* the timer that ends that */
    char problem[300]; /* a tool it lists that the engine refused, else "" */
} mcp_entry;

struct ac_mcp_set {
    ac_engine *e;
    mcp_entry **v;
    size_t n;
    uint64_t rev;           /* bumped by each refresh after the first listing */
    ac_mcp_waiter *waiters; /* model calls waiting for a changed list (effects.c) */
};

/* The engine's name for tool of toolkit kit: "kit::tool" (the model sees "kit__tool",
 * util/toolname.h). -1 when the pair makes no valid name: that tool is not offered. */
static int mcp_tool_name(const char *kit, const char *tool, char *out, size_t cap)
{
    char why[160];
    return ac_toolname_compose(kit, tool, out, cap, why, sizeof why);
}

/* The compiled schema of an MCP tool: the server's inputSchema if our validator takes it,
 * else the same schema without what it refuses is not attempted: the arguments are only
 * checked to be an object (the server checks the rest) - a keyword we do not support never
 * refuses a server. */
static void set_schema(ac_tool *t, const ac_mcp_tool *mt)
{
    char why[256];
    ac_schema *sc = ac_schema_compile(mt->input_schema, why, sizeof why);
    if (!sc) {
        json_t *any = json_pack("{s:s}", "type", "object");
        sc = any ? ac_schema_compile(any, why, sizeof why) : NULL;
        json_decref(any);
        if (!sc)
            return; /* out of memory: keep the old one */
    }
    ac_schema_free(t->schema);
    t->schema = sc;
    json_decref(t->parameters);
    t->parameters = json_incref(mt->input_schema);
}

/* The server's "cache" patterns: the first that matches the tool's name applies when the
 * server marks the tool read-only (readOnlyHint), which also makes it idempotent; a match on
 * a tool that is not read-only is refused, said on stderr, and the tool runs uncached. */
static void apply_cache(ac_tool *t, const ac_mcp_config *cfg, const ac_mcp_tool *mt)
{
    const char *glob;
    json_t *d;
    char why[300];
    memset(&t->cache, 0, sizeof t->cache);
    json_object_foreach(cfg->cache_tools, glob, d)
    {
        if (fnmatch(glob, mt->name, 0) != 0)
            continue;
        if (!mt->read_only_hint)
            fprintf(stderr,
                    "agentc: MCP server '%s': tool '%.100s' matches \"cache\" pattern "
                    "\"%.100s\" but the server does not mark it read-only (readOnlyHint): it "
                    "is not cached\n",
                    cfg->name, mt->name, glob);
        else if (ac_toolfile_parse_cache(d, &t->cache, why, sizeof why) == 0)
            t->idempotent = 1;
        return;
    }
}

static int add_or_update(ac_engine *e, ac_mcp_server *srv, const ac_mcp_tool *mt, char *err,
                         size_t errcap)
{
    char name[160], wire[160];
    const ac_mcp_config *cfg = ac_mcp_server_config(srv);
    if (mcp_tool_name(cfg->name, mt->name, name, sizeof name) < 0 ||
        ac_toolname_to_wire(name, wire, sizeof wire) < 0)
        return 0; /* a name no provider takes: not offered */
    ac_tool *t = (ac_tool *)ac_tools_find(e, name);
    if (t && t->mcp != srv) { /* a clash on the wire is refused by ac_tools_add */
        snprintf(err, errcap, "MCP server '%s': tool '%s' is defined twice", cfg->name, name);
        return -1;
    }
    if (!t) {
        t = ac_tools_new(TK_MCP, name, mt->description, NULL, err, errcap);
        if (!t)
            return -1;
        t->mcp = srv;
        t->mcp_tool = strdup(mt->name);
        if (!t->mcp_tool) {
            ac_tools_free(t);
            snprintf(err, errcap, "out of memory");
            return -1;
        }
        if (ac_tools_add(e, t, err, errcap) < 0)
            return -1;
    } else {
        char *d = strdup(mt->description);
        if (d) {
            free(t->description);
            t->description = d;
        }
    }
    set_schema(t, mt);
    t->mcp_gone = 0;
    t->timeout_ms = cfg->timeout_ms;
    t->idempotent = cfg->idempotent >= 0 ? cfg->idempotent : mt->idempotent_hint;
    apply_cache(t, cfg, mt);
    return 0;
}

/* The engine's tools follow the server's list: a tool the engine refuses (a name clash) is
 * left out and the others are added; the first refusal goes to err (else err is ""). */
static void sync_tools(ac_engine *e, ac_mcp_server *srv, char *err, size_t errcap)
{
    char why[300];
    err[0] = 0;
    for (size_t i = 0; i < e->n_tools; i++)
        if (e->tools[i]->mcp == srv)
            e->tools[i]->mcp_gone = 1;
    for (size_t i = 0; i < ac_mcp_server_tool_count(srv); i++)
        if (add_or_update(e, srv, ac_mcp_server_tool(srv, i), why, sizeof why) < 0 && !err[0])
            snprintf(err, errcap, "%s", why);
}

/* When no server is listing or awaited any more, the model calls waiting go. */
static void wake_waiters(struct ac_mcp_set *m)
{
    if (ac_mcp_listing(m->e))
        return;
    ac_mcp_waiter *w = m->waiters;
    m->waiters = NULL;
    while (w) {
        ac_mcp_waiter *next = w->next;
        w->next = NULL;
        w->fn(w->ud);
        w = next;
    }
}

static void not_awaited(mcp_entry *me)
{
    me->awaited = 0;
    if (me->deadline)
        ac_loop_cancel_timer(me->set->e->loop, me->deadline);
    me->deadline = 0;
}

/* After a listing (the first one, or a refresh, or a refresh or a start that failed): the
 * engine's tools follow the server's, the revision moves on, and the waiting model calls
 * may go. */
static void on_tools(void *ud, ac_mcp_server *srv)
{
    mcp_entry *me = ud;
    sync_tools(me->set->e, srv, me->problem, sizeof me->problem);
    me->set->rev++;
    not_awaited(me);
    wake_waiters(me->set);
}

/* Its start_timeout passed: the model calls go without its tools. */
static void start_deadline(void *ud)
{
    mcp_entry *me = ud;
    me->deadline = 0;
    me->awaited = 0;
    wake_waiters(me->set);
}

uint64_t ac_mcp_tools_rev(const ac_engine *e)
{
    return e->mcp ? e->mcp->rev : 0;
}

int ac_mcp_listing(const ac_engine *e)
{
    for (size_t i = 0; e->mcp && i < e->mcp->n; i++)
        if (ac_mcp_server_listing(e->mcp->v[i]->srv) || e->mcp->v[i]->awaited)
            return 1;
    return 0;
}

int64_t ac_mcp_wait_ms(const ac_engine *e)
{
    int64_t w = MCP_LISTING_WAIT_MS, now = e->loop ? ac_loop_now_ms(e->loop) : 0;
    for (size_t i = 0; e->mcp && i < e->mcp->n; i++) {
        const mcp_entry *me = e->mcp->v[i];
        int64_t left =
            me->awaited ? me->start_ms + ac_mcp_server_config(me->srv)->start_timeout_ms - now : 0;
        if (left > w)
            w = left;
    }
    return w;
}

/* The entry of the MCP toolkit named by name ("kit::tool" or the wire's "kit__tool"), with
 * the tool part in *tool; NULL when the prefix names no MCP server. */
static const mcp_entry *entry_of(const ac_engine *e, const char *name, const char **tool)
{
    size_t plen;
    const char *t = ac_toolname_split(name, &plen);
    if (!t && (t = strstr(name, "__")) && t != name) {
        plen = (size_t)(t - name);
        t += 2;
    }
    for (size_t i = 0; t && e->mcp && i < e->mcp->n; i++) {
        const char *kit = ac_mcp_server_name(e->mcp->v[i]->srv);
        if (strlen(kit) == plen && !strncmp(kit, name, plen)) {
            *tool = t;
            return e->mcp->v[i];
        }
    }
    return NULL;
}

ac_mcp_server *ac_mcp_starting_server(const ac_engine *e, const char *name, const char **tool)
{
    const mcp_entry *me = entry_of(e, name, tool);
    return me && ac_mcp_server_starting(me->srv) ? me->srv : NULL;
}

int ac_mcp_idempotent(const ac_engine *e, const char *name)
{
    const char *tool;
    const mcp_entry *me = entry_of(e, name, &tool);
    return me && ac_mcp_server_config(me->srv)->idempotent == 1;
}

int ac_mcp_explain(const ac_engine *e, const char *name, char *msg, size_t cap)
{
    const char *tool;
    const mcp_entry *me = entry_of(e, name, &tool);
    if (!me)
        return 0;
    const char *why = ac_mcp_server_error(me->srv);
    if (!ac_mcp_server_ready(me->srv) && *why)
        snprintf(msg, cap, "%s", why);
    else if (me->problem[0])
        snprintf(msg, cap, "%s", me->problem);
    else
        return 0;
    return 1;
}

void ac_mcp_wait_listing(ac_engine *e, ac_mcp_waiter *w)
{
    if (!e->mcp) {
        w->fn(w->ud);
        return;
    }
    w->next = e->mcp->waiters;
    e->mcp->waiters = w;
}

void ac_mcp_unwait(ac_engine *e, ac_mcp_waiter *w)
{
    for (ac_mcp_waiter **pp = e->mcp ? &e->mcp->waiters : NULL; pp && *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            w->next = NULL;
            return;
        }
}

void ac_mcp_set_free(ac_engine *e)
{
    struct ac_mcp_set *m = e->mcp;
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        not_awaited(m->v[i]);
        ac_mcp_server_free(m->v[i]->srv);
        free(m->v[i]);
    }
    free(m->v);
    free(m);
    e->mcp = NULL;
}

/* The environment of a stdio server: what a tool process is given (tool_env.c: the default
 * inherited variables, never the provider's credentials) plus the entry's "env". */
static char **server_env(ac_engine *e, char **add)
{
    ac_tool fake;
    memset(&fake, 0, sizeof fake);
    fake.env = add;
    char **borrowed = ac_tool_env(e, &fake);
    if (!borrowed)
        return NULL;
    size_t n = 0;
    while (borrowed[n])
        n++;
    char **v = calloc(n + 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        if (!(v[i] = strdup(borrowed[i]))) {
            for (size_t k = 0; k < i; k++)
                free(v[k]);
            free(v);
            v = NULL;
        }
    free(borrowed);
    return v;
}

/* A server of the set, started in the background and awaited for its start_timeout. */
static int add_server(struct ac_mcp_set *m, const ac_mcp_config *cfg)
{
    mcp_entry **v = realloc(m->v, (m->n + 1) * sizeof *v);
    if (v)
        m->v = v;
    mcp_entry *me = v ? calloc(1, sizeof *me) : NULL;
    if (!me || !(me->srv = ac_mcp_server_new(m->e->loop, cfg))) {
        free(me);
        return -1;
    }
    me->set = m;
    m->v[m->n++] = me;
    ac_mcp_server_on_tools(me->srv, on_tools, me);
    me->awaited = 1;
    me->start_ms = ac_loop_now_ms(m->e->loop);
    me->deadline = ac_loop_timer(m->e->loop, ac_mcp_server_config(me->srv)->start_timeout_ms,
                                 start_deadline, me);
    ac_mcp_server_start(me->srv);
    return 0;
}

int ac_mcp_add_servers(ac_engine *e, const json_t *mcp, const char *path, char *err, size_t errcap)
{
    ac_mcp_config *cfgs;
    size_t n;
    if (ac_mcp_config_parse(mcp, path, &cfgs, &n, err, errcap) < 0)
        return -1;
    int rc = 0;
    if (!e->loop && n) {
        snprintf(err, errcap, "%s: MCP servers need an engine with a loop", path);
        rc = -1;
    }
    if (!rc && !e->mcp && !(e->mcp = calloc(1, sizeof *e->mcp))) {
        snprintf(err, errcap, "out of memory");
        rc = -1;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        struct ac_mcp_set *m = e->mcp;
        m->e = e;
        for (size_t k = 0; k < m->n; k++)
            if (!strcmp(ac_mcp_server_name(m->v[k]->srv), cfgs[i].name)) {
                snprintf(err, errcap, "%s: MCP server '%s' is declared twice", path, cfgs[i].name);
                rc = -1;
            }
        if (rc)
            break;
        if (cfgs[i].argv) {
            char **env = server_env(e, cfgs[i].env);
            if (!env) {
                snprintf(err, errcap, "out of memory");
                rc = -1;
                break;
            }
            for (char **p = cfgs[i].env; p && *p; p++)
                free(*p);
            free(cfgs[i].env);
            cfgs[i].env = env;
        }
        if (add_server(m, &cfgs[i]) < 0) {
            snprintf(err, errcap, "out of memory");
            rc = -1;
        }
    }
    for (size_t i = 0; i < n; i++)
        ac_mcp_config_clear(&cfgs[i]);
    free(cfgs);
    return rc;
}

/* Adds "mcp": [{"name", "transport", "protocol"}] to a spawn or tools.changed payload; the
 * protocol is there once the server's handshake is done. */
void ac_mcp_spawn_info(ac_engine *e, json_t *payload)
{
    struct ac_mcp_set *m = e->mcp;
    json_t *arr = json_array();
    for (size_t i = 0; arr && m && i < m->n; i++) {
        const ac_mcp_config *c = ac_mcp_server_config(m->v[i]->srv);
        const char *v = ac_mcp_server_version(m->v[i]->srv);
        json_t *o = json_pack("{s:s, s:s}", "name", c->name, "transport",
                              c->url ? "streamable-http" : "stdio");
        if (o && *v) /* once the handshake is done */
            json_object_set_new(o, "protocol", json_string(v));
        json_array_append_new(arr, o);
    }
    if (arr)
        json_object_set_new(payload, "mcp", arr);
}
