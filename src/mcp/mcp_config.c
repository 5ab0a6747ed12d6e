/* The "mcp" array of a tool file:
 *
 *   {"mcp": [{"name": "fs",                          required: [A-Za-z0-9_-]{1,32}, no "__",
 *                                                    no '_' first or last
 *             "command": ["node", "server.js"],      stdio: the server's command, or
 *             "url": "http://127.0.0.1:8931/mcp",    Streamable HTTP: its endpoint
 *             "env": {"NAME": "value"},              stdio only: added to its environment
 *             "headers": {"Authorization": "..."},   HTTP only: sent with every request
 *             "timeout": "30s",                      each call
 *             "start_timeout": "5s",                 how long the first model call waits
 *                                                    for the start (handshake, tools/list)
 *             "idempotent": true,                    default: the server's idempotentHint
 *             "max_tools": 1000,                     a server listing more is a fault
 *             "max_output": "8MiB",                  a call's result is cut there
 *             "cache": {"tools": {"GLOB": {...}}}}]}  result caches (tools/toolfile.h's
 *                                                    "cache") for the tools whose names
 *                                                    match GLOB (fnmatch) and whose
 *                                                    annotations say readOnlyHint
 *
 * Values of "env" and "headers" are secrets: messages name keys, never values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "tools/toolfile.h"
#include "util/secrets.h"
#include "util/units.h"

/* Where a server's entry is, for its messages: the file, its index, its name once known. */
typedef struct cfg_at {
    char *err;
    size_t errcap;
    const char *path;
    size_t i;
    const char *nm;
} cfg_at;

static int cfail(const cfg_at *w, const char *fmt, ...)
{
    char m[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (w->nm)
        snprintf(w->err, w->errcap, "%s: mcp[%zu] (\"%s\"): %s", w->path, w->i, w->nm, m);
    else
        snprintf(w->err, w->errcap, "%s: mcp[%zu]: %s", w->path, w->i, m);
    return -1;
}

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 32 || strlen(s) != n || strstr(s, "__") || s[0] == '_' || s[n - 1] == '_')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static int valid_env_name(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

static int valid_header_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s <= ' ' || *s == ':' || *s == 0x7f)
            return 0;
    return 1;
}

/* "k<sep>v" for each member of obj, NULL-terminated; NULL on a bad member (*bad names it). */
static char **pairs(const json_t *obj, const char *sep, int header, const char **bad)
{
    char **v = calloc(json_object_size(obj) + 1, sizeof *v);
    size_t n = 0;
    const char *k;
    json_t *val;
    if (!v)
        return NULL;
    json_object_foreach((json_t *)obj, k, val)
    {
        const char *s = json_string_value(val);
        if (!s || strlen(s) != json_string_length(val) ||
            (header ? !valid_header_name(k) || strpbrk(s, "\r\n") : !valid_env_name(k))) {
            *bad = k;
            goto fail;
        }
        size_t len = strlen(k) + strlen(sep) + strlen(s) + 1;
        if (!(v[n] = malloc(len)))
            goto fail;
        snprintf(v[n++], len, "%s%s%s", k, sep, s);
    }
    return v;
fail:
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return NULL;
}

static int by_length_desc(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

/* The values to mask: "env" values and what ac_secrets_collect takes from "headers". */
static int collect_secrets(ac_mcp_config *c)
{
    char **h = ac_secrets_collect(NULL, NULL, (const char *const *)c->headers);
    size_t nh = 0, ne = 0;
    if (!h)
        return -1;
    while (h[nh])
        nh++;
    while (c->env && c->env[ne])
        ne++;
    c->secrets = calloc(nh + ne + 1, sizeof *c->secrets);
    if (!c->secrets) {
        ac_secrets_free(h);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < nh; i++)
        if (!(c->secrets[n++] = strdup(h[i])))
            return ac_secrets_free(h), -1;
    ac_secrets_free(h);
    for (size_t i = 0; i < ne; i++) {
        const char *v = strchr(c->env[i], '=') + 1;
        if (strlen(v) >= AC_SECRET_MIN_LEN && !(c->secrets[n++] = strdup(v)))
            return -1;
    }
    qsort(c->secrets, n, sizeof *c->secrets, by_length_desc);
    return 0;
}

/* The entry is an object of known keys with a valid "name": sets w->nm and c->name. */
static int parse_name(const json_t *e, cfg_at *w, ac_mcp_config *c)
{
    static const char *const keys[] = {"name",      "command",    "url",        "env",
                                       "headers",   "timeout",    "idempotent", "start_timeout",
                                       "max_tools", "max_output", "cache",      NULL};
    const char *nm = NULL;
    if (!json_is_object(e))
        return cfail(w, "must be an object");
    const json_t *name = json_object_get(e, "name");
    if (json_is_string(name) && valid_name(json_string_value(name), json_string_length(name)))
        nm = json_string_value(name);
    w->nm = nm;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v)
    {
        size_t j = 0;
        while (keys[j] && strcmp(keys[j], k))
            j++;
        if (!keys[j])
            return cfail(w, "unknown key \"%.64s\"", k);
    }
    if (!nm)
        return cfail(w, "\"name\" must be 1 to 32 letters, digits, '-' or single '_' (no \"__\", "
                        "not first or last)");
    c->name = strdup(nm);
    return c->name ? 0 : cfail(w, "out of memory");
}

/* "command": the stdio server's argv; a relative program with a '/' is taken from the
 * directory of the tool file. */
static int parse_command(const json_t *cmd, const cfg_at *w, ac_mcp_config *c)
{
    if (!json_is_array(cmd) || json_array_size(cmd) == 0)
        return cfail(w, "\"command\" must be a non-empty array of strings");
    size_t n = json_array_size(cmd);
    c->argv = calloc(n + 1, sizeof *c->argv);
    if (!c->argv)
        return cfail(w, "out of memory");
    for (size_t a = 0; a < n; a++) {
        const json_t *s = json_array_get(cmd, a);
        if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s) ||
            (a == 0 && !json_string_length(s)))
            return cfail(w, "\"command\"[%zu] must be a non-empty string", a);
        c->argv[a] = strdup(json_string_value(s));
        if (!c->argv[a])
            return cfail(w, "out of memory");
    }
    const char *slash = strrchr(w->path, '/');
    if (c->argv[0][0] != '/' && strchr(c->argv[0], '/') && slash) {
        size_t dl = (size_t)(slash - w->path), len = dl + 2 + strlen(c->argv[0]);
        char *abs = malloc(len);
        if (!abs)
            return cfail(w, "out of memory");
        snprintf(abs, len, "%.*s/%s", (int)dl, w->path, c->argv[0]);
        free(c->argv[0]);
        c->argv[0] = abs;
    }
    return 0;
}

static int parse_url(const json_t *url, const cfg_at *w, ac_mcp_config *c)
{
    const char *u = json_string_value(url);
    if (!u || (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) ||
        strlen(u) != json_string_length(url))
        return cfail(w, "\"url\" must be an http:// or https:// URL");
    c->url = strdup(u);
    return c->url ? 0 : cfail(w, "out of memory");
}

/* "env" (stdio only) and "headers" (HTTP only): secrets, so messages name keys only. */
static int parse_env_headers(const json_t *e, const cfg_at *w, ac_mcp_config *c)
{
    const json_t *env = json_object_get(e, "env"), *hdr = json_object_get(e, "headers");
    const char *bad = NULL;
    if (env) {
        if (c->url)
            return cfail(w, "\"env\" is for stdio servers (\"command\")");
        if (!json_is_object(env))
            return cfail(w, "\"env\" must be an object {\"NAME\": \"value\"}");
        if (!(c->env = pairs(env, "=", 0, &bad)))
            return cfail(w,
                         bad ? "\"env\": bad variable \"%.64s\" (a name of letters, digits and "
                               "'_', and a string value)"
                             : "out of memory",
                         bad);
    }
    if (hdr) {
        if (c->argv)
            return cfail(w, "\"headers\" is for HTTP servers (\"url\")");
        if (!json_is_object(hdr))
            return cfail(w, "\"headers\" must be an object {\"Name\": \"value\"}");
        if (!(c->headers = pairs(hdr, ": ", 1, &bad)))
            return cfail(w,
                         bad ? "\"headers\": bad header \"%.64s\" (a token name and a string "
                               "value on one line)"
                             : "out of memory",
                         bad);
    }
    return 0;
}

/* The duration at key, or def when absent; must be positive. */
static int parse_ms(const json_t *e, const char *key, long long def, const cfg_at *w, long long *ms)
{
    const json_t *to = json_object_get(e, key);
    *ms = def;
    if (to &&
        (!json_is_string(to) || ac_parse_duration_ms(json_string_value(to), ms) < 0 || *ms <= 0))
        return cfail(w, "\"%s\" must be a duration such as \"30s\"", key);
    return 0;
}

/* "max_tools" (a positive integer) and "max_output" (a size such as "1MB"). */
static int parse_limits(const json_t *e, const cfg_at *w, ac_mcp_config *c)
{
    const json_t *mt = json_object_get(e, "max_tools"), *mo = json_object_get(e, "max_output");
    c->max_tools = AC_MCP_MAX_TOOLS;
    c->max_output = AC_MCP_MAX_OUTPUT;
    if (mt &&
        (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > 1000000))
        return cfail(w, "\"max_tools\" must be an integer from 1 to 1000000");
    if (mt)
        c->max_tools = (size_t)json_integer_value(mt);
    if (mo && (!json_is_string(mo) || ac_parse_size(json_string_value(mo), &c->max_output) < 0 ||
               c->max_output == 0))
        return cfail(w, "\"max_output\" must be a size such as \"1MB\"");
    return 0;
}

/* "cache": {"tools": {"GLOB": {"ttl", "scope", "max_entries"}}}. */
static int parse_cache(const json_t *e, cfg_at *w, ac_mcp_config *c)
{
    const json_t *cache = json_object_get(e, "cache");
    if (!cache)
        return 0;
    const json_t *tools = json_object_get(cache, "tools");
    if (!json_is_object(cache) || json_object_size(cache) != 1 || !json_is_object(tools))
        return cfail(w, "\"cache\" must be {\"tools\": {\"GLOB\": {\"ttl\", \"scope\", "
                        "\"max_entries\"}}}");
    const char *glob;
    json_t *d;
    json_object_foreach((json_t *)tools, glob, d)
    {
        ac_cache_decl decl;
        char why[300];
        if (!*glob || strlen(glob) > 128)
            return cfail(w, "\"cache\": a tool pattern must be 1 to 128 characters");
        if (ac_toolfile_parse_cache(d, &decl, why, sizeof why) < 0)
            return cfail(w, "\"cache\": \"%.64s\": %s", glob, why);
    }
    c->cache_tools = json_incref((json_t *)tools);
    return 0;
}

static int parse_one(const json_t *e, cfg_at *w, ac_mcp_config *c)
{
    c->idempotent = -1;
    if (parse_name(e, w, c) < 0)
        return -1;
    const json_t *cmd = json_object_get(e, "command"), *url = json_object_get(e, "url");
    if (!!cmd == !!url)
        return cfail(w, "needs either \"command\" (stdio) or \"url\" (Streamable HTTP)");
    long long call_ms, start_ms;
    if ((cmd ? parse_command(cmd, w, c) : parse_url(url, w, c)) < 0 ||
        parse_env_headers(e, w, c) < 0 || parse_ms(e, "timeout", 30000, w, &call_ms) < 0 ||
        parse_ms(e, "start_timeout", AC_MCP_START_TIMEOUT_MS, w, &start_ms) < 0)
        return -1;
    c->timeout_ms = call_ms;
    c->start_timeout_ms = start_ms;
    const json_t *idem = json_object_get(e, "idempotent");
    if (idem && !json_is_boolean(idem))
        return cfail(w, "\"idempotent\" must be true or false");
    if (idem)
        c->idempotent = json_is_true(idem);
    if (parse_limits(e, w, c) < 0 || parse_cache(e, w, c) < 0)
        return -1;
    if (collect_secrets(c) < 0)
        return cfail(w, "out of memory");
    return 0;
}

int ac_mcp_config_parse(const json_t *arr, const char *path, ac_mcp_config **out, size_t *n,
                        char *err, size_t errcap)
{
    *out = NULL;
    *n = 0;
    if (!path)
        path = "<tools>";
    if (!json_is_array(arr)) {
        snprintf(err, errcap, "%s: \"mcp\" must be an array of servers", path);
        return -1;
    }
    size_t cnt = json_array_size(arr);
    ac_mcp_config *v = calloc(cnt ? cnt : 1, sizeof *v);
    if (!v) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < cnt; i++) {
        cfg_at w = {err, errcap, path, i, NULL};
        int rc = parse_one(json_array_get(arr, i), &w, &v[i]);
        for (size_t j = 0; rc == 0 && j < i; j++)
            if (!strcmp(v[j].name, v[i].name))
                rc = cfail(&w, "duplicate server name (also mcp[%zu])", j);
        if (rc < 0) {
            for (size_t j = 0; j <= i; j++)
                ac_mcp_config_clear(&v[j]);
            free(v);
            return -1;
        }
    }
    *out = v;
    *n = cnt;
    return 0;
}
