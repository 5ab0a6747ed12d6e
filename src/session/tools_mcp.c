/*
 * tools_mcp.c - the MCP servers of an engine's tool files (src/mcp): each
 * server is started once, when its tool file is added, and shared by every
 * session of the engine; its tools become the toolkit named after the
 * server, registered as server::tool (server__tool on the wire, util/toolname.h).
 * The run_tools effect (tools_run.c) calls them through ac_mcp_call_tool.
 * When the server says its list changed, the engine's tools are updated:
 * new tools are added, changed ones replaced, dropped ones fail when called.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "session/tools_internal.h"
#include "util/toolname.h"
#include "tools/schema.h"

struct ac_mcp_set {
    ac_engine *e;
    ac_mcp_server **v;
    size_t n;
    uint64_t rev;             /* bumped by each refresh after the first listing */
    ac_mcp_waiter *waiters;   /* model calls waiting for a changed list (effects.c) */
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
    return 0;
}

static int sync_tools(ac_engine *e, ac_mcp_server *srv, char *err, size_t errcap)
{
    for (size_t i = 0; i < e->n_tools; i++)
        if (e->tools[i]->mcp == srv)
            e->tools[i]->mcp_gone = 1;
    for (size_t i = 0; i < ac_mcp_server_tool_count(srv); i++)
        if (add_or_update(e, srv, ac_mcp_server_tool(srv, i), err, errcap) < 0)
            return -1;
    return 0;
}

/* After a listing (the first one, or a refresh, or a refresh that failed): the engine's
 * tools follow the server's, the revision moves on, and when no server is listing any
 * more the model calls waiting for the new list go. */
static void on_tools(void *ud, ac_mcp_server *srv)
{
    struct ac_mcp_set *m = ud;
    char err[300];
    sync_tools(m->e, srv, err, sizeof err);
    m->rev++;
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

uint64_t ac_mcp_tools_rev(const ac_engine *e)
{
    return e->mcp ? e->mcp->rev : 0;
}

int ac_mcp_listing(const ac_engine *e)
{
    for (size_t i = 0; e->mcp && i < e->mcp->n; i++)
        if (ac_mcp_server_listing(e->mcp->v[i]))
            return 1;
    return 0;
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
    for (size_t i = 0; i < m->n; i++)
        ac_mcp_server_free(m->v[i]);
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
            if (!strcmp(ac_mcp_server_name(m->v[k]), cfgs[i].name)) {
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
        ac_mcp_server **v = realloc(m->v, (m->n + 1) * sizeof *v);
        ac_mcp_server *srv = v ? ac_mcp_server_new(e->loop, &cfgs[i]) : NULL;
        if (v)
            m->v = v;
        if (!srv) {
            snprintf(err, errcap, "out of memory");
            rc = -1;
            break;
        }
        m->v[m->n++] = srv;
        char why[800];
        if (ac_mcp_server_wait_ready(srv, cfgs[i].start_timeout_ms + 1000, why, sizeof why) < 0) {
            snprintf(err, errcap, "%s: %s", path, why);
            rc = -1;
            break;
        }
        if (sync_tools(e, srv, err, errcap) < 0) {
            rc = -1;
            break;
        }
        ac_mcp_server_on_tools(srv, on_tools, m);
    }
    for (size_t i = 0; i < n; i++)
        ac_mcp_config_clear(&cfgs[i]);
    free(cfgs);
    return rc;
}

void ac_mcp_spawn_info(ac_engine *e, json_t *payload)
{
    struct ac_mcp_set *m = e->mcp;
    json_t *arr = json_array();
    for (size_t i = 0; arr && m && i < m->n; i++) {
        const ac_mcp_config *c = ac_mcp_server_config(m->v[i]);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", c->name, "transport",
                                             c->url ? "streamable-http" : "stdio", "protocol",
                                             ac_mcp_server_version(m->v[i])));
    }
    if (arr)
        json_object_set_new(payload, "mcp", arr);
}
