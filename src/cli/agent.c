/*
 * agent.c - reading one agent (either form of the format, agent.h) into the
 * engine options, and checking what a caller overrides against its
 * "overridable" list.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "util/grow.h"

const char *const ac_cli_agent_keys[] = {"name",        "spec",        "provider", "script",
                                         "base_url",    "api_key_env", "model",    "system",
                                         "tools",       "params",      "request",  "output_schema",
                                         "overridable", "headers",     "prices",   NULL};

/* The request settings' names (README: model request settings). */
static const char *const request_keys[] = {
    "temperature",      "top_p",        "stop", "seed", "tool_choice", "parallel_tool_calls",
    "reasoning_effort", "request_json", NULL};

typedef struct rd {
    ac_cli_agent_hold *h;
    ac_cli_engine_opts *o;
    const char *base_dir;
    char *err;
    size_t errcap;
} rd;

static int fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(rd *r, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (r->h->name)
        snprintf(r->err, r->errcap, "agent '%s': %s", r->h->name, m);
    else
        snprintf(r->err, r->errcap, "agent: %s", m);
    return -1;
}

/* Keeps s (malloc'd, may be NULL: out of memory) for the options' lifetime. */
static const char *own(rd *r, char *s)
{
    ac_cli_agent_hold *h = r->h;
    if (!s || ac_grow((void **)&h->owned, &h->cap_owned, h->n_owned + 1, sizeof *h->owned)) {
        free(s);
        fail(r, "out of memory");
        return NULL;
    }
    h->owned[h->n_owned++] = s;
    return s;
}

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* A file-form path: relative ones are taken from the agents file's directory. */
static const char *path_of(rd *r, const char *p)
{
    if (p[0] == '/' || !r->base_dir)
        return p;
    return own(r, join_path(r->base_dir, p));
}

/* An API key or token where a name or a path belongs: never stored. */
static int looks_secret(const char *s)
{
    static const char *const prefixes[] = {"sk-",    "sk_",    "ghp_", "gho_", "github_pat_",
                                           "xoxb-",  "xoxp-",  "AKIA", "AIza", "Bearer ",
                                           "Basic ", "glpat-", "hf_",  NULL};
    for (size_t i = 0; prefixes[i]; i++)
        if (!strncmp(s, prefixes[i], strlen(prefixes[i])) && strlen(s) > strlen(prefixes[i]) + 4)
            return 1;
    return 0;
}

static int is_env_name(const char *s)
{
    if (!*s || isdigit((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

/* A string value of key, checked for secrets. NULL (after fail) when it is not one. */
static const char *str_of(rd *r, const char *key, const json_t *v)
{
    if (!json_is_string(v)) {
        fail(r, "\"%s\" must be a string", key);
        return NULL;
    }
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v)) {
        fail(r, "\"%s\" must not contain NUL characters", key);
        return NULL;
    }
    if (looks_secret(s)) {
        fail(r,
             "\"%s\" looks like a secret (an API key or token): an agent never holds one; "
             "name the variable that has the key with \"api_key_env\"",
             key);
        return NULL;
    }
    return s;
}

/* "http://user:pass@host/" is refused: the URL is listed and stored. */
static int has_userinfo(const char *url)
{
    const char *a = strstr(url, "://");
    a = a ? a + 3 : url;
    size_t n = strcspn(a, "/?#");
    const char *at = memchr(a, '@', n);
    return at != NULL;
}

static int read_name(rd *r, const json_t *v)
{
    const char *s = str_of(r, "name", v);
    if (!s)
        return -1;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
            n = 0;
    if (n == 0 || n > 64)
        return fail(r, "\"name\" must be 1 to 64 letters, digits, '_', '.' or '-', not '%.64s'", s);
    r->h->name = s;
    return 0;
}

/* provider, script, base_url, api_key_env, model: one string each. */
static int read_scalar(rd *r, const char *k, const json_t *v)
{
    const char *s = str_of(r, k, v);
    if (!s)
        return -1;
    ac_cli_engine_opts *o = r->o;
    if (!strcmp(k, "provider")) {
        if (strcmp(s, "openai") && strcmp(s, "anthropic") && strcmp(s, "script"))
            return fail(r, "unknown provider '%.64s' (openai, anthropic, script)", s);
        o->provider = s;
    } else if (!strcmp(k, "script")) {
        if (!(o->script = path_of(r, s)))
            return -1;
    } else if (!strcmp(k, "base_url")) {
        if (has_userinfo(s))
            return fail(r, "\"base_url\" holds credentials (user:password@): an agent never "
                           "holds a secret; name the key's variable with \"api_key_env\"");
        o->base_url = s;
    } else if (!strcmp(k, "api_key_env")) {
        if (!is_env_name(s))
            return fail(r,
                        "\"api_key_env\" names the variable that holds the key (like "
                        "OPENAI_API_KEY), not '%.32s'",
                        s);
        o->api_key_env = s;
    } else {
        o->model = s;
    }
    return 0;
}

static int read_spec(rd *r, const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = str_of(r, "spec", v);
        return s && (r->o->spec = path_of(r, s)) ? 0 : -1;
    }
    const json_t *text = json_object_get(v, "text"), *path = json_object_get(v, "path");
    if (!json_is_object(v) || !json_is_string(text) || (path && !json_is_string(path)))
        return fail(r, "\"spec\" must be a path, or a stored spec {\"path\", \"hash\", \"text\"}");
    r->o->spec_text = json_string_value(text);
    r->o->spec = path ? json_string_value(path) : "<spec>";
    return 0;
}

static int read_system(rd *r, const json_t *v)
{
    const json_t *text = json_object_get(v, "text");
    if (json_is_object(v) && json_is_string(text) && json_object_size(v) == 1) {
        r->o->system_text = json_string_value(text); /* stored: the text as it is */
        return 0;
    }
    if (!json_is_string(v))
        return fail(r, "\"system\" must be a string (the text, or @FILE)");
    const char *s = json_string_value(v);
    if (s[0] != '@') {
        r->o->system_text = s;
        return 0;
    }
    const char *p = path_of(r, s + 1);
    char *at = p ? malloc(strlen(p) + 2) : NULL;
    if (at)
        snprintf(at, strlen(p) + 2, "@%s", p);
    return p && (r->o->system = own(r, at)) ? 0 : -1;
}

static int read_output_schema(rd *r, const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = str_of(r, "output_schema", v);
        return s && (r->o->output_schema = path_of(r, s)) ? 0 : -1;
    }
    if (!json_is_object(v) && !json_is_boolean(v))
        return fail(r, "\"output_schema\" must be a path or a JSON Schema");
    return (r->o->output_schema_text = own(r, json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY))) ? 0
                                                                                              : -1;
}

/* "prices": a prices file's path, or the prices document itself (docs/observability.md) */
static int read_prices(rd *r, const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = str_of(r, "prices", v);
        return s && (r->o->prices = path_of(r, s)) ? 0 : -1;
    }
    if (!json_is_object(v))
        return fail(r, "\"prices\" must be a path or a prices document {\"models\": {...}}");
    return (r->o->prices_text = own(r, json_dumps(v, JSON_COMPACT))) ? 0 : -1;
}

static int read_tools(rd *r, const json_t *v);
static int read_params(rd *r, const json_t *v);
static int read_request(rd *r, const json_t *v);

static int read_list_of_keys(rd *r, const json_t *v)
{
    if (!json_is_array(v))
        return fail(r, "\"overridable\" must be an array of the agent's keys");
    size_t i;
    const json_t *k;
    json_array_foreach(v, i, k)
    {
        const char *s = json_is_string(k) ? json_string_value(k) : "";
        size_t j = 0;
        while (ac_cli_agent_keys[j] && strcmp(ac_cli_agent_keys[j], s))
            j++;
        if (!ac_cli_agent_keys[j] || !strcmp(s, "name") || !strcmp(s, "overridable"))
            return fail(r, "\"overridable\"[%zu]: '%.64s' is not a key a session may override", i,
                        s);
    }
    r->h->overridable = v;
    return 0;
}

static int read_headers(rd *r, const json_t *v)
{
    if (!json_is_array(v))
        return fail(r, "\"headers\" must be an array of header names");
    size_t i;
    const json_t *k;
    json_array_foreach(v, i, k)
    {
        const char *s = str_of(r, "headers", k);
        if (!s)
            return -1;
        if (!*s || strpbrk(s, ": \t"))
            return fail(r,
                        "\"headers\"[%zu] names a header only (its value is a secret, given "
                        "with --header 'Name: value' when the agent runs)",
                        i);
        if (i >= AC_CLI_MAX_HEADERS)
            return fail(r, "too many headers (at most %d)", AC_CLI_MAX_HEADERS);
        r->o->headers[r->o->n_headers++] = s; /* a name: not sent (engine_opts.h) */
    }
    return 0;
}

static int read_key(rd *r, const char *k, const json_t *v)
{
    if (!strcmp(k, "name"))
        return read_name(r, v);
    if (!strcmp(k, "spec"))
        return read_spec(r, v);
    if (!strcmp(k, "system"))
        return read_system(r, v);
    if (!strcmp(k, "tools"))
        return read_tools(r, v);
    if (!strcmp(k, "params"))
        return read_params(r, v);
    if (!strcmp(k, "request"))
        return read_request(r, v);
    if (!strcmp(k, "output_schema"))
        return read_output_schema(r, v);
    if (!strcmp(k, "overridable"))
        return read_list_of_keys(r, v);
    if (!strcmp(k, "headers"))
        return read_headers(r, v);
    if (!strcmp(k, "prices"))
        return read_prices(r, v);
    return read_scalar(r, k, v);
}

static int unknown_key(rd *r, const char *k)
{
    if (strstr(k, "key") && strcmp(k, "api_key_env"))
        return fail(r,
                    "unknown key \"%.64s\": an agent never holds an API key; name the "
                    "variable that has it with \"api_key_env\"",
                    k);
    return fail(
        r,
        "unknown key \"%.64s\" (name, spec, provider, script, base_url, api_key_env, "
        "model, system, tools, params, request, output_schema, overridable, headers, prices)",
        k);
}

int ac_cli_agent_opts(const char *agent_json, const char *base_dir, ac_cli_agent_hold *hold,
                      ac_cli_engine_opts *o, char *err, size_t errcap)
{
    memset(hold, 0, sizeof *hold);
    memset(o, 0, sizeof *o);
    rd r = {hold, o, base_dir, err, errcap};
    json_error_t je;
    hold->doc = agent_json ? json_loads(agent_json, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!hold->doc) {
        fail(&r, "%d:%d: %s", agent_json ? je.line : 0, agent_json ? je.column : 0,
             agent_json ? je.text : "no text");
        return -1;
    }
    if (!json_is_object(hold->doc)) {
        fail(&r, "must be a JSON object");
        ac_cli_agent_hold_free(hold);
        return -1;
    }
    const json_t *name = json_object_get(hold->doc, "name");
    int rc = name ? read_name(&r, name) : 0;
    const char *k;
    json_t *v;
    json_object_foreach(hold->doc, k, v)
    {
        size_t j = 0;
        while (ac_cli_agent_keys[j] && strcmp(ac_cli_agent_keys[j], k))
            j++;
        if (rc == 0)
            rc = ac_cli_agent_keys[j] ? read_key(&r, k, v) : unknown_key(&r, k);
    }
    if (rc)
        ac_cli_agent_hold_free(hold);
    return rc;
}

void ac_cli_agent_hold_free(ac_cli_agent_hold *hold)
{
    for (size_t i = 0; i < hold->n_owned; i++)
        free(hold->owned[i]);
    free(hold->owned);
    json_decref(hold->doc);
    memset(hold, 0, sizeof *hold);
}

/* ---- "params" and "request" ---- */

static int read_params(rd *r, const json_t *v)
{
    if (!json_is_object(v))
        return fail(r, "\"params\" must be an object {\"name\": value}");
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        if (r->o->n_params >= AC_CLI_MAX_PARAMS)
            return fail(r, "too many params (at most %d)", AC_CLI_MAX_PARAMS);
        char val[64];
        const char *s = val;
        if (json_is_integer(x))
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(x));
        else if (json_is_real(x))
            snprintf(val, sizeof val, "%.17g", json_real_value(x));
        else if (json_is_boolean(x))
            s = json_is_true(x) ? "true" : "false";
        else if (!json_is_string(x) || !(s = str_of(r, "params", x)))
            return json_is_string(x) ? -1
                                     : fail(r,
                                            "\"params\".%.64s must be a number, a string "
                                            "or a boolean",
                                            k);
        size_t n = strlen(k) + strlen(s) + 2;
        char *p = malloc(n);
        if (p)
            snprintf(p, n, "%s=%s", k, s);
        if (!(r->o->params[r->o->n_params++] = own(r, p)))
            return -1;
    }
    return 0;
}

static int request_number(rd *r, const char *k, const json_t *x, bool *has, double *out)
{
    if (!json_is_number(x))
        return fail(r, "\"request\".%s must be a number", k);
    *has = true;
    *out = json_number_value(x);
    return 0;
}

static int request_stop(rd *r, const json_t *x)
{
    if (!json_is_array(x) && !json_is_string(x))
        return fail(r, "\"request\".stop must be an array of strings");
    size_t n = json_is_array(x) ? json_array_size(x) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_is_array(x) ? json_array_get(x, i) : x;
        if (!json_is_string(s) || r->o->n_stop >= AC_CLI_MAX_STOP)
            return fail(r, "\"request\".stop must be at most %d strings", AC_CLI_MAX_STOP);
        r->o->stop[r->o->n_stop++] = json_string_value(s);
    }
    r->o->req.stop = r->o->stop;
    return 0;
}

static int request_key(rd *r, size_t k, const json_t *x)
{
    ac_request_settings *q = &r->o->req;
    const char *name = request_keys[k];
    switch (k) {
    case 0:
        return request_number(r, name, x, &q->has_temperature, &q->temperature);
    case 1:
        return request_number(r, name, x, &q->has_top_p, &q->top_p);
    case 2:
        return request_stop(r, x);
    case 3:
        if (!json_is_integer(x))
            return fail(r, "\"request\".seed must be an integer");
        q->has_seed = true;
        q->seed = json_integer_value(x);
        return 0;
    case 5:
        if (!json_is_boolean(x))
            return fail(r, "\"request\".parallel_tool_calls must be true or false");
        q->parallel_tool_calls = json_is_true(x) ? 1 : -1;
        return 0;
    default: {
        if (k == 7 && json_is_object(x))
            return (q->request_json = own(r, json_dumps(x, JSON_COMPACT))) ? 0 : -1;
        const char *s = str_of(r, name, x);
        if (!s)
            return -1;
        *(k == 4 ? &q->tool_choice : k == 6 ? &q->reasoning_effort : &q->request_json) = s;
        return 0;
    }
    }
}

static int read_request(rd *r, const json_t *v)
{
    if (!json_is_object(v))
        return fail(r, "\"request\" must be an object of request settings");
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        size_t j = 0;
        while (request_keys[j] && strcmp(request_keys[j], k))
            j++;
        if (!request_keys[j])
            return fail(r,
                        "\"request\": unknown setting \"%.64s\" (temperature, top_p, stop, seed, "
                        "tool_choice, parallel_tool_calls, reasoning_effort, request_json)",
                        k);
        if (request_key(r, j, x) < 0)
            return -1;
    }
    return 0;
}

/* ---- "tools": paths and built-ins, or stored tool files ---- */

/* Both absent, or equal. */
static int same(const json_t *a, const json_t *b)
{
    return (!a && !b) || (a && b && json_equal((json_t *)a, (json_t *)b));
}

/* Fills every {"$from": "tool_file"} in rec with the value at the same place
 * in file (the tool file as it is now): objects by key, array items by their
 * "name" (and "prefix"), else by position. */
static int fill_refs(rd *r, json_t *rec, const json_t *file, const char *path, const char *at)
{
    if (json_is_array(rec)) {
        size_t i;
        json_t *item;
        json_array_foreach(rec, i, item)
        {
            const json_t *match = json_array_get(file, i), *nm = json_object_get(item, "name");
            const json_t *px = json_object_get(item, "prefix");
            size_t j;
            const json_t *f;
            json_array_foreach(file, j, f)
            {
                if ((nm || px) && same(json_object_get(f, "name"), nm) &&
                    same(json_object_get(f, "prefix"), px))
                    match = f;
            }
            if (fill_refs(r, item, match, path, at) < 0)
                return -1;
        }
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(rec, k, v)
    {
        const json_t *f = json_object_get(file, k);
        const char *from = json_string_value(json_object_get(v, "$from"));
        if (from && !strcmp(from, "tool_file") && json_object_size(v) == 1) {
            if (!json_is_string(f))
                return fail(r,
                            "tool file '%s': the value of \"%.64s\" (in %s) is kept in the "
                            "tool file, which no longer has it",
                            path, k, at);
            json_object_set(rec, k, (json_t *)f);
        } else if ((json_is_object(v) || json_is_array(v)) &&
                   fill_refs(r, v, f, path,
                             json_is_string(json_object_get(v, "name"))
                                 ? json_string_value(json_object_get(v, "name"))
                                 : at) < 0) {
            return -1;
        }
    }
    return 0;
}

/* A stored tool file's text with its referenced values read again from path. */
static const char *tool_text(rd *r, const char *path, const char *text)
{
    if (!strstr(text, "\"$from\""))
        return text;
    json_error_t je;
    json_t *rec = json_loads(text, 0, &je);
    json_t *file = rec ? json_load_file(path, 0, &je) : NULL;
    if (!file) {
        json_decref(rec);
        fail(r,
             "tool file '%s' holds values a stored agent leaves there (env, headers), and "
             "cannot be read: %s",
             path, je.text);
        return NULL;
    }
    int rc = fill_refs(r, rec, file, path, "the file");
    char *full = rc ? NULL : json_dumps(rec, JSON_COMPACT);
    json_decref(rec);
    json_decref(file);
    return rc ? NULL : own(r, full);
}

static int read_stored_tool(rd *r, size_t i, const json_t *t)
{
    const json_t *path = json_object_get(t, "path"), *text = json_object_get(t, "text");
    const json_t *dir = json_object_get(t, "dir");
    if (!json_is_string(path) || !json_is_string(text) || (dir && !json_is_string(dir)))
        return fail(r,
                    "\"tools\"[%zu] must be a path, a builtin: name, or a stored tool file "
                    "{\"path\", \"hash\", \"dir\", \"text\"}",
                    i);
    const char *p = json_string_value(path), *base = strrchr(p, '/');
    base = base ? base + 1 : p;
    r->o->tools[i] = dir ? own(r, join_path(json_string_value(dir), base)) : p;
    r->o->tool_texts[i] = tool_text(r, p, json_string_value(text));
    return r->o->tools[i] && r->o->tool_texts[i] ? 0 : -1;
}

static int read_tools(rd *r, const json_t *v)
{
    if (!json_is_array(v))
        return fail(r, "\"tools\" must be an array of tool file paths and builtin: names");
    if (json_array_size(v) > AC_CLI_MAX_TOOLS)
        return fail(r, "too many tools (at most %d)", AC_CLI_MAX_TOOLS);
    size_t i;
    const json_t *t;
    json_array_foreach(v, i, t)
    {
        r->o->n_tools = i + 1;
        if (json_is_object(t)) {
            if (read_stored_tool(r, i, t) < 0)
                return -1;
            continue;
        }
        const char *s = str_of(r, "tools", t);
        if (!s)
            return -1;
        if (!strncmp(s, "builtin:", 8) && strcmp(s, "builtin:calculator") &&
            strcmp(s, "builtin:clock") && strcmp(s, "builtin:context"))
            return fail(r,
                        "\"tools\"[%zu]: unknown built-in tool '%.64s' (builtin:calculator, "
                        "builtin:clock, builtin:context)",
                        i, s);
        r->o->tools[i] = strncmp(s, "builtin:", 8) ? path_of(r, s) : s;
        if (!r->o->tools[i])
            return -1;
    }
    return 0;
}

/* ---- overrides ---- */

int ac_cli_agent_check_overrides(const ac_cli_agent_hold *agent, const ac_cli_engine_opts *given,
                                 char *err, size_t errcap)
{
    json_t *keys = ac_cli_engine_opts_given(given);
    size_t i;
    json_t *k;
    int rc = keys ? 0 : -1;
    if (!keys)
        snprintf(err, errcap, "out of memory");
    json_array_foreach(keys, i, k)
    {
        int ok = 0;
        size_t j;
        json_t *o;
        json_array_foreach(agent->overridable, j, o) ok |= json_equal(o, k);
        if (!ok && !rc) {
            char *list = json_array_size(agent->overridable)
                             ? json_dumps(agent->overridable, JSON_COMPACT)
                             : NULL;
            snprintf(err, errcap,
                     "agent '%s' does not let \"%s\" be overridden (its \"overridable\": %s)",
                     agent->name ? agent->name : "default", json_string_value(k),
                     list ? list : "none");
            free(list);
            rc = -1;
        }
    }
    json_decref(keys);
    return rc;
}
