/*
 * tools_registry.c - the engine's tools: built-ins (builtin:calculator,
 * builtin:clock, builtin:context), tools from tool files and C callbacks
 * registered by embedders, each with its compiled JSON Schema. The
 * run_tools effect (tools_run.c) looks them up by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/tool_cache.h"
#include "session/toolkits.h"
#include "session/tools_internal.h"
#include "util/grow.h"
#include "util/toolname.h"
#include "tools/schema.h"
#include "tools/toolfile.h"

void ac_tools_free(ac_tool *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->description);
    json_decref(t->parameters);
    ac_schema_free(t->schema);
    ac_schema_free(t->out_schema);
    json_decref(t->out_decl);
    if (t->argv)
        for (char **a = t->argv; *a; a++)
            free(*a);
    free(t->argv);
    for (char **v = t->env; v && *v; v++)
        free(*v);
    free(t->env);
    for (char **v = t->inherit_env; v && *v; v++)
        free(*v);
    free(t->inherit_env);
    free(t->mcp_tool);
    json_decref(t->agent);
    free(t->agent_dir);
    free(t);
}

void ac_tools_free_all(ac_engine *e)
{
    for (size_t i = 0; i < e->n_tools; i++)
        ac_tools_free(e->tools[i]);
    free(e->tools);
    e->tools = NULL;
    e->n_tools = e->cap_tools = 0;
    ac_idmap_clear(&e->tools_by_name);
    ac_idmap_clear(&e->tools_by_wire);
    ac_toolkits_engine_free(e);
    ac_tool_cache_free(e->tool_cache);
    e->tool_cache = NULL;
}

const ac_tool *ac_tools_find(const ac_engine *e, const char *name)
{
    for (const ac_tool *t = ac_idmap_get(&e->tools_by_name, ac_idmap_str_key(name)); t;
         t = t->next_name)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

/* The tool the model would see under wire (its name on the wire, util/toolname.h), NULL if
 * none. */
static const ac_tool *find_wire(const ac_engine *e, const char *wire)
{
    char other[2 * AC_TOOLNAME_MAX + 8];
    for (const ac_tool *t = ac_idmap_get(&e->tools_by_wire, ac_idmap_str_key(wire)); t;
         t = t->next_wire)
        if (ac_toolname_to_wire(t->name, other, sizeof other) == 0 && strcmp(wire, other) == 0)
            return t;
    return NULL;
}

/* Appends t to the engine's tools and to its index (by name, and by wire name unless wire is
 * NULL). -1 when out of memory (nothing changed). */
static int tools_append(ac_engine *e, ac_tool *t, const char *wire)
{
    if (ac_grow((void **)&e->tools, &e->cap_tools, e->n_tools + 1, sizeof *e->tools) ||
        ac_idmap_reserve(&e->tools_by_name, 1) || (wire && ac_idmap_reserve(&e->tools_by_wire, 1)))
        return -1;
    uint64_t k = ac_idmap_str_key(t->name);
    t->next_name = ac_idmap_get(&e->tools_by_name, k);
    ac_idmap_put(&e->tools_by_name, k, t); /* cannot fail: reserved */
    if (wire) {
        k = ac_idmap_str_key(wire);
        t->next_wire = ac_idmap_get(&e->tools_by_wire, k);
        ac_idmap_put(&e->tools_by_wire, k, t);
    }
    e->tools[e->n_tools++] = t;
    return 0;
}

bool ac_tool_idempotent(const ac_engine *e, const char *name)
{
    const ac_tool *t = ac_tools_find(e, name);
    /* a tool of an MCP server still starting is not listed yet: its declaration says */
    return t ? t->idempotent : ac_mcp_idempotent(e, name) != 0;
}

int ac_tools_add(ac_engine *e, ac_tool *t, char *err, size_t errcap)
{
    int internal_kind = t->kind == TK_EXPAND || t->kind == TK_SEARCH || t->kind == TK_LOAD;
    if (!internal_kind && ac_tool_is_internal_name(t->name)) {
        snprintf(err, errcap, "tool name '%s' is reserved for builtin:context", t->name);
        ac_tools_free(t);
        return -1;
    }
    if (ac_tools_find(e, t->name)) {
        snprintf(err, errcap, "tool '%s' is defined twice", t->name);
        ac_tools_free(t);
        return -1;
    }
    /* "prefix::tool" and a plain "prefix__tool" would be one name on the wire */
    char wire[2 * AC_TOOLNAME_MAX + 8];
    int has_wire = ac_toolname_to_wire(t->name, wire, sizeof wire) == 0;
    const ac_tool *same = has_wire ? find_wire(e, wire) : NULL;
    if (same) {
        snprintf(err, errcap,
                 "tool '%s' is defined twice (the model would see '%s' under the same name)",
                 t->name, same->name);
        ac_tools_free(t);
        return -1;
    }
    if (tools_append(e, t, has_wire ? wire : NULL)) {
        ac_tools_free(t);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    return 0;
}

ac_tool *ac_tools_new(int kind, const char *name, const char *desc, const char *schema, char *err,
                      size_t errcap)
{
    ac_tool *t = calloc(1, sizeof *t);
    json_error_t jerr;
    if (!t)
        return NULL;
    t->kind = kind;
    t->name = strdup(name);
    t->description = strdup(desc ? desc : "");
    t->parameters = json_loads(schema ? schema : "{\"type\":\"object\"}", 0, &jerr);
    if (!t->parameters) {
        snprintf(err, errcap, "tool '%s': schema is not JSON: %s", name, jerr.text);
        ac_tools_free(t);
        return NULL;
    }
    if (ac_tool_meta_compile(t, err, errcap) < 0 || !t->name || !t->description) {
        ac_tools_free(t);
        return NULL;
    }
    return t;
}

/* A copy of the NULL-terminated list src (NULL stays NULL) into *dst; -1 when out of memory
 * (what was copied is in *dst, for the caller to free). */
static int strv_copy(char *const *src, char ***dst)
{
    *dst = NULL;
    if (!src)
        return 0;
    size_t n = 0;
    while (src[n])
        n++;
    if (!(*dst = calloc(n + 1, sizeof **dst)))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!((*dst)[i] = strdup(src[i])))
            return -1;
    return 0;
}

static void first_problem(void *ud, const char *message)
{
    char *first = ud;
    if (!*first)
        snprintf(first, 512, "%s", message);
}

/* A built-in tool set ("builtin:NAME"). */
static int add_builtin(ac_engine *e, const char *spec, char *err, size_t errcap)
{
    if (strcmp(spec, "builtin:calculator") == 0) {
        ac_tool *t = ac_tools_new(
            TK_CALC, "calculator",
            "Evaluates an arithmetic expression exactly: + - * / %, parentheses, decimals, "
            "unary minus. Use it for any arithmetic.",
            "{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":\"string\","
            "\"description\":\"for example (17 * 23) + 0.5\"}},\"required\":[\"expression\"],"
            "\"additionalProperties\":false}",
            err, errcap);
        return t ? ac_tools_add(e, t, err, errcap) : -1;
    }
    if (strcmp(spec, "builtin:clock") == 0) {
        ac_tool *t = ac_tools_new(
            TK_CLOCK, "clock",
            "Returns the current date and time (UTC, ISO 8601) and the Unix "
            "time in milliseconds.",
            "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", err, errcap);
        return t ? ac_tools_add(e, t, err, errcap) : -1;
    }
    if (strcmp(spec, "builtin:context") == 0)
        return ac_context_tools_add(e, err, errcap);
    snprintf(err, errcap,
             "unknown built-in tool '%s' (builtin:calculator, builtin:clock, builtin:context)",
             spec);
    return -1;
}

/* The tools of a built-in set, or of a tool file at spec or, when text is not
 * NULL, of that content (spec then names it, and its directory resolves
 * relative commands). */
static int add_tools(ac_engine *e, const char *spec, const char *text, char *err, size_t errcap)
{
    if (!text && strncmp(spec, "builtin:", 8) == 0)
        return add_builtin(e, spec, err, errcap);
    ac_toolfile *tf =
        text ? ac_toolfile_parse(text, spec, err, errcap) : ac_toolfile_load(spec, err, errcap);
    if (!tf)
        return -1;
    size_t kit_base = 0;
    if (tf->n_toolkits) {
        /* reference problems refuse the file (agentc check --tools lists them all) */
        char first[512] = "";
        if (ac_toolfile_check_refs(tf, first_problem, first)) {
            snprintf(err, errcap, "%s: %s (see agentc check --tools %s)", spec, first, spec);
            ac_toolfile_free(tf);
            return -1;
        }
        if (ac_toolkits_adopt(e, tf, &kit_base, err, errcap) < 0)
            return -1; /* tf freed */
    }
    if (tf->state) { /* the session's State (state.h): one declaration per engine */
        if (e->state_decl) {
            snprintf(err, errcap, "%s: \"state\" is declared by another tool file too", spec);
            ac_toolfile_free(tf);
            return -1;
        }
        e->state_decl = json_incref(tf->state);
    }
    for (size_t i = 0; i < tf->n; i++) {
        const ac_toolfile_tool *d = &tf->tools[i];
        char *schema = json_dumps(d->parameters, JSON_COMPACT);
        ac_tool *t = ac_tools_new(d->callback ? TK_CALLBACK : TK_EXTERNAL, d->name, d->description,
                                  schema, err, errcap);
        free(schema);
        if (!t) {
            if (!tf->n_toolkits)
                ac_toolfile_free(tf);
            return -1;
        }
        if (d->toolkit >= 0) {
            t->kit1 = kit_base + (size_t)d->toolkit + 1;
            t->def = d;
            t->kit = &tf->toolkits[d->toolkit];
        }
        t->argv = calloc(d->argc + 1, sizeof *t->argv);
        for (size_t k = 0; t->argv && k < d->argc; k++)
            t->argv[k] = strdup(d->argv[k]);
        t->timeout_ms = d->timeout_ms;
        t->max_output = d->max_output;
        t->idempotent = d->idempotent;
        t->cache = d->cache;
        int oom =
            !t->argv || strv_copy(d->env, &t->env) || strv_copy(d->inherit_env, &t->inherit_env);
        for (size_t k = 0; !oom && k < d->argc; k++)
            oom = !t->argv[k];
        if (oom) {
            snprintf(err, errcap, "out of memory");
            ac_tools_free(t);
            if (!tf->n_toolkits)
                ac_toolfile_free(tf);
            return -1;
        }
        if (ac_tools_add(e, t, err, errcap) < 0) {
            if (!tf->n_toolkits)
                ac_toolfile_free(tf);
            return -1;
        }
    }
    int rc = tf->agents ? ac_subagent_tools_add(e, tf->agents, spec, err, errcap) : 0;
    if (rc == 0 && tf->mcp)
        rc = ac_mcp_add_servers(e, tf->mcp, spec, err, errcap);
    if (!tf->n_toolkits) /* else the toolkit registry keeps it */
        ac_toolfile_free(tf);
    return rc;
}

/* The code of a failure to add tools, from what went wrong. */
static int tools_error_code(const char *text)
{
    return strstr(text, "out of memory")                                ? AC_ENOMEM
           : strstr(text, "cannot read") || strstr(text, "cannot open") ? AC_EIO
                                                                        : AC_ECONFIG;
}

int ac_engine_add_tools(ac_engine *e, const char *spec, ac_error *err)
{
    return ac_engine_add_tools_text(e, spec, NULL, err);
}

int ac_engine_add_tools_text(ac_engine *e, const char *path, const char *text, ac_error *err)
{
    char why[512] = "";
    if (!e || !path) {
        ac_error_set(err, AC_EINVAL, "ac_engine_add_tools needs an engine and a tools spec");
        return -1;
    }
    if (add_tools(e, path, text, why, sizeof why) < 0) {
        ac_error_set(err, tools_error_code(why), why);
        return -1;
    }
    if (err)
        memset(err, 0, sizeof *err);
    return 0;
}

static int add_callback_tool(ac_engine *e, const char *name, const char *description,
                             const char *schema_json, ac_tool_fn fn, void *ud, char *err,
                             size_t errcap)
{
    if (!name || !*name || !fn) {
        snprintf(err, errcap, "a callback tool needs a name and a function");
        return -1;
    }
    int bound = ac_toolkits_bind_callback(e, name, fn, ud);
    if (bound) {
        if (bound < 0)
            snprintf(err, errcap, "toolkit tool '%s' already has a callback", name);
        return bound > 0 ? 0 : -1;
    }
    ac_tool *t = ac_tools_new(TK_CALLBACK, name, description, schema_json, err, errcap);
    if (!t)
        return -1;
    t->fn = fn;
    t->ud = ud;
    return ac_tools_add(e, t, err, errcap);
}

int ac_engine_add_callback_tool(ac_engine *e, const char *name, const char *description,
                                const char *schema_json, ac_tool_fn fn, void *ud, ac_error *err)
{
    char text[512] = "";
    if (!e || !name || !*name || !fn) {
        ac_error_set(err, AC_EINVAL,
                     "ac_engine_add_callback_tool needs an engine, a name and a function");
        return -1;
    }
    if (add_callback_tool(e, name, description, schema_json, fn, ud, text, sizeof text) < 0) {
        ac_error_set(err, tools_error_code(text), text);
        return -1;
    }
    if (err)
        memset(err, 0, sizeof *err);
    return 0;
}

void ac_tools_add_defs(ac_engine *e, json_t *arr)
{
    for (size_t i = 0; i < e->n_tools; i++)
        if (!e->tools[i]->mcp_gone) /* an MCP tool its server no longer lists */
            json_array_append_new(arr, json_pack("{s:s, s:s, s:O}", "name", e->tools[i]->name,
                                                 "description", e->tools[i]->description,
                                                 "parameters", e->tools[i]->parameters));
}
