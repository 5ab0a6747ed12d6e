/*
 * agent_record.c - the record form of an agent (agent.h): what a session
 * stores of the configuration it runs with, self-contained and without a
 * secret; the keys two records differ in; and laying the options given on a
 * command line over a stored or selected agent.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "cli.h"
#include "io/file.h"
#include "util/secrets.h"

#define MAX_FILE ((size_t)16 << 20)

/* A hex digest of text (FNV-1a, 64 bits): tells that a content changed. */
static void hash_hex(const char *text, char out[17])
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* The path made absolute (as it is when the file is gone). */
static void abs_path(const char *path, char out[PATH_MAX])
{
    if (realpath(path, out))
        return;
    char cwd[PATH_MAX];
    if (path[0] != '/' && getcwd(cwd, sizeof cwd) && strlen(cwd) + strlen(path) + 2 <= PATH_MAX)
        snprintf(out, PATH_MAX, "%s/%s", cwd, path);
    else
        snprintf(out, PATH_MAX, "%s", path);
}

static char *read_text(const char *path, const char *what, char *err, size_t errcap)
{
    char *t = ac_read_file(path, MAX_FILE, NULL);
    if (!t)
        snprintf(err, errcap, "cannot read %s '%s': %s", what, path, strerror(errno));
    return t;
}

/* A URL with its userinfo left out, as a JSON string (NULL when out of memory). */
static json_t *url_without_userinfo(const char *url)
{
    char *s = ac_url_strip_userinfo(url);
    json_t *j = s ? json_string(s) : NULL;
    free(s);
    return j;
}

static int record_spec(const ac_cli_engine_opts *o, json_t *rec, char *err, size_t errcap)
{
    char *read = NULL, path[PATH_MAX], hash[17];
    const char *text = o->spec_text;
    if (!text && !(text = read = read_text(o->spec, "spec", err, errcap)))
        return -1;
    ac_fsm_tables *t = ac_cli_tables_from_spec_text(o->spec, text);
    if (!t) {
        snprintf(err, errcap, "spec '%s' does not load", o->spec);
        free(read);
        return -1;
    }
    ac_spec_hash(t, hash);
    ac_spec_tables_free(t);
    if (o->spec_text)
        snprintf(path, sizeof path, "%s", o->spec);
    else
        abs_path(o->spec, path);
    int rc = json_object_set_new(
        rec, "spec", json_pack("{s:s, s:s, s:s}", "path", path, "hash", hash, "text", text));
    free(read);
    return rc;
}

/* Replaces the values of every "env" and "headers" object under v by references. */
static void redact_values(json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_array(v))
        json_array_foreach(v, i, x) redact_values(x);
    if (!json_is_object(v))
        return;
    json_object_foreach(v, k, x)
    {
        if ((!strcmp(k, "env") || !strcmp(k, "headers")) && json_is_object(x)) {
            const char *name;
            json_t *val;
            json_object_foreach(x, name, val)
                json_object_set_new(x, name, json_pack("{s:s}", "$from", "tool_file"));
        } else {
            redact_values(x);
        }
    }
}

/* A tool file's record: {"path", "hash", "dir", "text"}, its secrets left in the file. */
static json_t *record_tool(const char *spec, const char *given_text, char *err, size_t errcap)
{
    char *read = NULL, path[PATH_MAX], hash[17];
    const char *text = given_text;
    struct stat st;
    if (!text && stat(spec, &st) == 0 && S_ISDIR(st.st_mode)) { /* as the tool loader says */
        snprintf(err, errcap, "%s: is a directory, not a tool file", spec);
        return NULL;
    }
    if (!text && !(text = read = read_text(spec, "tool file", err, errcap)))
        return NULL;
    json_error_t je;
    json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
    free(read);
    if (!doc) {
        snprintf(err, errcap, "%s:%d:%d: %s", spec, je.line, je.column, je.text);
        return NULL;
    }
    redact_values(doc);
    char *kept = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!kept) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    hash_hex(kept, hash);
    if (given_text)
        snprintf(path, sizeof path, "%s", spec);
    else
        abs_path(spec, path);
    char *slash = strrchr(path, '/');
    json_t *t = json_pack("{s:s, s:s, s:s%, s:s}", "path", path, "hash", hash, "dir", path,
                          slash ? (size_t)(slash - path) : (size_t)0, "text", kept);
    free(kept);
    return t;
}

static int record_tools(const ac_cli_engine_opts *o, json_t *rec, char *err, size_t errcap)
{
    json_t *arr = json_array();
    json_object_set_new(rec, "tools", arr);
    for (size_t i = 0; i < o->n_tools; i++) {
        const char *t = o->tools[i];
        int builtin = !o->tool_texts[i] && !strncmp(t, "builtin:", 8);
        json_t *x = builtin ? json_string(t) : record_tool(t, o->tool_texts[i], err, errcap);
        if (!x || json_array_append_new(arr, x))
            return -1;
    }
    return 0;
}

static json_t *record_request(const ac_cli_engine_opts *o)
{
    const ac_request_settings *q = &o->req;
    json_t *r = json_object();
    if (q->has_temperature)
        json_object_set_new(r, "temperature", json_real(q->temperature));
    if (q->has_top_p)
        json_object_set_new(r, "top_p", json_real(q->top_p));
    if (q->stop && q->stop[0]) {
        json_t *s = json_array();
        for (size_t i = 0; q->stop[i]; i++)
            json_array_append_new(s, json_string(q->stop[i]));
        json_object_set_new(r, "stop", s);
    }
    if (q->has_seed)
        json_object_set_new(r, "seed", json_integer(q->seed));
    if (q->tool_choice)
        json_object_set_new(r, "tool_choice", json_string(q->tool_choice));
    if (q->parallel_tool_calls)
        json_object_set_new(r, "parallel_tool_calls", json_boolean(q->parallel_tool_calls > 0));
    if (q->reasoning_effort)
        json_object_set_new(r, "reasoning_effort", json_string(q->reasoning_effort));
    if (q->request_json) {
        json_t *obj = json_loads(q->request_json, 0, NULL);
        json_object_set_new(r, "request_json", obj ? obj : json_string(q->request_json));
    }
    return r;
}

/* "prices": the document, read now. */
static int record_prices(const ac_cli_engine_opts *o, json_t *rec, char *err, size_t errcap)
{
    char *read = NULL;
    const char *text = o->prices_text;
    if (!text && o->prices && !(text = read = read_text(o->prices, "prices", err, errcap)))
        return -1;
    if (!text)
        return 0;
    json_t *p = json_loads(text, 0, NULL);
    free(read);
    if (!json_is_object(p)) {
        json_decref(p);
        snprintf(err, errcap, "the prices are not a JSON object");
        return -1;
    }
    return json_object_set_new(rec, "prices", p);
}

/* "system", "output_schema" and "prices": their texts, read now. */
static int record_texts(const ac_cli_engine_opts *o, json_t *rec, char *err, size_t errcap)
{
    char *read = NULL;
    const char *sys = o->system_text ? o->system_text : o->system;
    if (!o->system_text && sys && sys[0] == '@' &&
        !(sys = read = read_text(sys + 1, "system prompt", err, errcap)))
        return -1;
    if (sys) /* {"text"}: a text that begins with '@' is no file name */
        json_object_set_new(rec, "system", json_pack("{s:s}", "text", sys));
    free(read);
    read = NULL;
    const char *schema = o->output_schema_text;
    if (!schema && o->output_schema &&
        !(schema = read = read_text(o->output_schema, "output schema", err, errcap)))
        return -1;
    if (schema) {
        json_t *s = json_loads(schema, 0, NULL);
        if (!s)
            snprintf(err, errcap, "the output schema is not JSON");
        free(read);
        if (!s || json_object_set_new(rec, "output_schema", s))
            return -1;
    }
    return record_prices(o, rec, err, errcap);
}

/* provider, script, base_url, api_key_env, model, params, headers (names). */
static void record_plain(const ac_cli_engine_opts *o, json_t *rec)
{
    char path[PATH_MAX];
    if (o->provider)
        json_object_set_new(rec, "provider", json_string(o->provider));
    if (o->script) {
        abs_path(o->script, path);
        json_object_set_new(rec, "script", json_string(path));
    }
    if (o->base_url)
        json_object_set_new(rec, "base_url", url_without_userinfo(o->base_url));
    if (o->api_key_env)
        json_object_set_new(rec, "api_key_env", json_string(o->api_key_env));
    if (o->model)
        json_object_set_new(rec, "model", json_string(o->model));
    json_t *params = json_object();
    for (size_t i = 0; i < o->n_params; i++) {
        const char *eq = strchr(o->params[i], '=');
        char name[128];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - o->params[i]) : 0, o->params[i]);
        if (eq && name[0])
            json_object_set_new(params, name, json_string(eq + 1));
    }
    json_object_set_new(rec, "params", params);
    json_t *names = json_array();
    for (size_t i = 0; i < o->n_headers; i++) {
        size_t n = strcspn(o->headers[i], ":");
        json_array_append_new(names, json_stringn(o->headers[i], n));
    }
    if (json_array_size(names))
        json_object_set(rec, "headers", names);
    json_decref(names);
}

char *ac_cli_agent_record(const ac_cli_engine_opts *o, const char *name, char *err, size_t errcap)
{
    json_t *rec = json_pack("{s:s}", "name", name ? name : "default");
    if (!rec) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    record_plain(o, rec);
    json_object_set_new(rec, "request", record_request(o));
    char *text = NULL;
    if ((!(o->spec || o->spec_text) || record_spec(o, rec, err, errcap) == 0) &&
        record_tools(o, rec, err, errcap) == 0 && record_texts(o, rec, err, errcap) == 0) {
        text = json_dumps(rec, JSON_COMPACT);
        if (!text)
            snprintf(err, errcap, "out of memory");
    }
    json_decref(rec);
    return text;
}

/* ---- the keys two records differ in ---- */

/* "KEY.NAME" for every NAME whose value differs between two objects. */
static void diff_members(json_t *out, const char *key, const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    char path[160];
    json_object_foreach((json_t *)a, k, v) if (!json_equal(v, json_object_get(b, k)))
    {
        snprintf(path, sizeof path, "%s.%s", key, k);
        json_array_append_new(out, json_string(path));
    }
    json_object_foreach((json_t *)b, k, v) if (!json_object_get(a, k))
    {
        snprintf(path, sizeof path, "%s.%s", key, k);
        json_array_append_new(out, json_string(path));
    }
}

json_t *ac_cli_agent_diff(const char *old_record, const char *new_record)
{
    json_t *a = old_record ? json_loads(old_record, 0, NULL) : NULL;
    json_t *b = new_record ? json_loads(new_record, 0, NULL) : NULL;
    json_t *out = json_array();
    if (!json_is_object(a) || !json_is_object(b)) {
        json_array_append_new(out, json_string("agent"));
    } else {
        for (size_t i = 0; ac_cli_agent_keys[i]; i++) {
            const char *k = ac_cli_agent_keys[i];
            const json_t *x = json_object_get(a, k), *y = json_object_get(b, k);
            if ((!strcmp(k, "params") || !strcmp(k, "request")) &&
                (json_is_object(x) || json_is_object(y))) {
                json_t *ex = json_object();
                diff_members(out, k, json_is_object(x) ? x : ex, json_is_object(y) ? y : ex);
                json_decref(ex);
            } else if (!json_equal((json_t *)x, (json_t *)y) && (x || y)) {
                json_array_append_new(out, json_string(k));
            }
        }
    }
    json_decref(a);
    json_decref(b);
    return out;
}

/* ---- what was given wins ---- */

static void overlay_params(ac_cli_engine_opts *base, const ac_cli_engine_opts *given)
{
    for (size_t i = 0; i < given->n_params; i++) {
        const char *p = given->params[i];
        size_t n = strcspn(p, "=") + 1, j = 0;
        while (j < base->n_params && strncmp(base->params[j], p, n))
            j++;
        if (j == base->n_params && base->n_params < AC_CLI_MAX_PARAMS)
            base->n_params++;
        if (j < base->n_params)
            base->params[j] = p;
        base->params[base->n_params] = NULL;
    }
}

static void overlay_request(ac_cli_engine_opts *base, const ac_cli_engine_opts *given)
{
    ac_request_settings *b = &base->req;
    const ac_request_settings *g = &given->req;
    if (g->has_temperature)
        b->has_temperature = true, b->temperature = g->temperature;
    if (g->has_top_p)
        b->has_top_p = true, b->top_p = g->top_p;
    if (g->has_seed)
        b->has_seed = true, b->seed = g->seed;
    if (g->parallel_tool_calls)
        b->parallel_tool_calls = g->parallel_tool_calls;
    if (g->tool_choice)
        b->tool_choice = g->tool_choice;
    if (g->reasoning_effort)
        b->reasoning_effort = g->reasoning_effort;
    if (g->request_json)
        b->request_json = g->request_json;
    if (given->n_stop) {
        memcpy(base->stop, given->stop, sizeof base->stop);
        base->n_stop = given->n_stop;
    }
    b->stop = base->n_stop ? base->stop : NULL;
}

void ac_cli_engine_opts_overlay(ac_cli_engine_opts *base, const ac_cli_engine_opts *given)
{
    const char *const *g[] = {&given->provider,    &given->base_url, &given->model,
                              &given->api_key_env, &given->script,   &given->script_text};
    const char **b[] = {&base->provider,    &base->base_url, &base->model,
                        &base->api_key_env, &base->script,   &base->script_text};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (*g[i])
            *b[i] = *g[i];
    if (given->spec || given->spec_text)
        base->spec = given->spec, base->spec_text = given->spec_text;
    if (given->system || given->system_text)
        base->system = given->system, base->system_text = given->system_text;
    if (given->output_schema || given->output_schema_text)
        base->output_schema = given->output_schema,
        base->output_schema_text = given->output_schema_text;
    if (given->prices || given->prices_text)
        base->prices = given->prices, base->prices_text = given->prices_text;
    if (given->n_tools) {
        memcpy(base->tools, given->tools, sizeof base->tools);
        memcpy(base->tool_texts, given->tool_texts, sizeof base->tool_texts);
        base->n_tools = given->n_tools;
    }
    if (given->n_headers) {
        memcpy(base->headers, given->headers, sizeof base->headers);
        base->n_headers = given->n_headers;
    }
    if (given->script_delay_ms)
        base->script_delay_ms = given->script_delay_ms;
    overlay_params(base, given);
    overlay_request(base, given);
}

void ac_cli_engine_opts_secrets_from(ac_cli_engine_opts *o, const ac_cli_engine_opts *from)
{
    for (size_t i = 0; i < o->n_headers; i++) {
        size_t n = strlen(o->headers[i]);
        for (size_t j = 0; !strchr(o->headers[i], ':') && j < from->n_headers; j++)
            if (!strncasecmp(from->headers[j], o->headers[i], n) && from->headers[j][n] == ':')
                o->headers[i] = from->headers[j];
    }
    if (o->base_url && from->base_url && strcmp(o->base_url, from->base_url)) {
        json_t *plain = url_without_userinfo(from->base_url);
        if (json_is_string(plain) && !strcmp(json_string_value(plain), o->base_url))
            o->base_url = from->base_url;
        json_decref(plain);
    }
}

json_t *ac_cli_engine_opts_given(const ac_cli_engine_opts *o)
{
    const ac_request_settings *q = &o->req;
    const struct {
        const char *key;
        int set;
    } keys[] = {
        {"spec", o->spec || o->spec_text},
        {"provider", o->provider != NULL},
        {"script", o->script || o->script_text},
        {"base_url", o->base_url != NULL},
        {"api_key_env", o->api_key_env != NULL},
        {"model", o->model != NULL},
        {"system", o->system || o->system_text},
        {"tools", o->n_tools > 0},
        {"params", o->n_params > 0},
        {"request", q->has_temperature || q->has_top_p || q->has_seed || o->n_stop ||
                        q->tool_choice || q->parallel_tool_calls || q->reasoning_effort ||
                        q->request_json},
        {"output_schema", o->output_schema || o->output_schema_text},
        {"headers", o->n_headers > 0},
        {"prices", o->prices || o->prices_text},
    };
    json_t *out = json_array();
    for (size_t i = 0; out && i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].set)
            json_array_append_new(out, json_string(keys[i].key));
    return out;
}
