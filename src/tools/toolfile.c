/* Tool definition file loader and checker; see toolfile.h. */
#include "tools/toolfile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/toolname.h"
#include "util/units.h"

#define TF_DEFAULT_TIMEOUT "30s"
#define TF_DEFAULT_MAX_OUTPUT "1MB"

const char *const ac_toolfile_default_inherit[] = {"PATH", "HOME", "USER",   "LOGNAME", "LANG",
                                                   "LC_*", "TZ",   "TMPDIR", NULL};

typedef struct tf_ctx {
    const char *path;
    char label[96]; /* "tools[2] (\"grep\")" */
    char *err;
    size_t errcap;
} tf_ctx;

static int tf_fail(tf_ctx *c, const char *fmt, ...)
{
    char m[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (c->err && c->errcap) {
        if (c->label[0])
            snprintf(c->err, c->errcap, "%s: %s: %s", c->path, c->label, m);
        else
            snprintf(c->err, c->errcap, "%s: %s", c->path, m);
    }
    return -1;
}

/* A JSON string without embedded NULs, as a new C string. */
static char *tf_strdup_json(const json_t *s)
{
    size_t n = json_string_length(s);
    const char *v = json_string_value(s);
    if (strlen(v) != n)
        return NULL;
    char *d = malloc(n + 1);
    if (d)
        memcpy(d, v, n + 1);
    return d;
}

static int tf_valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* An environment variable name: [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes; with
 * pattern set, one trailing '*' is allowed too ("LC_*", "*"). */
static int tf_valid_env_name(const char *s, size_t n, int pattern)
{
    if (pattern && n > 0 && s[n - 1] == '*')
        n--;
    else if (n == 0)
        return 0;
    if (n > 255)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
              (i > 0 && ch >= '0' && ch <= '9')))
            return 0;
    }
    return 1;
}

static void tf_strv_free(char **v)
{
    if (v)
        for (char **p = v; *p; p++)
            free(*p);
    free(v);
}

static void tf_def_free(ac_toolfile_tool *d)
{
    ac_toolfile__free_tool_parts(d);
    tf_strv_free(d->env);
    tf_strv_free(d->inherit_env);
    free(d->name);
    free(d->description);
    json_decref(d->parameters);
    ac_schema_free(d->schema);
    if (d->argv)
        for (size_t i = 0; i < d->argc; i++)
            free(d->argv[i]);
    free(d->argv);
}

void ac_toolfile_free(ac_toolfile *tf)
{
    if (!tf)
        return;
    for (size_t i = 0; i < tf->n; i++)
        tf_def_free(&tf->tools[i]);
    free(tf->tools);
    for (size_t i = 0; i < tf->n_toolkits; i++)
        ac_toolfile__free_toolkit(&tf->toolkits[i]);
    free(tf->toolkits);
    json_decref(tf->state);
    json_decref(tf->mcp);
    json_decref(tf->agents);
    free(tf);
}

const ac_toolfile_tool *ac_toolfile_find(const ac_toolfile *tf, const char *name)
{
    if (!tf || !name)
        return NULL;
    for (size_t i = 0; i < tf->n; i++)
        if (strcmp(tf->tools[i].name, name) == 0)
            return &tf->tools[i];
    return NULL;
}

/* Every key of the entry is one a tool (in_toolkit: a toolkit's tool) may have. */
static int tf_check_keys(tf_ctx *c, const json_t *e, int in_toolkit)
{
    static const char *const keys[] = {"name",        "description", "parameters", "command",
                                       "timeout",     "max_output",  "idempotent", "env",
                                       "inherit_env", "cache"};
    static const char *const tk_keys[] = {"required_states", "forbidden_states", "enables_states",
                                          "disables_states", "required_context", "updates_context",
                                          "callback"};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v)
    {
        size_t i, j = 0;
        for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!strcmp(k, keys[i]))
                break;
        if (i == sizeof keys / sizeof keys[0] && in_toolkit)
            for (j = 0; j < sizeof tk_keys / sizeof tk_keys[0]; j++)
                if (!strcmp(k, tk_keys[j]))
                    break;
        if (i == sizeof keys / sizeof keys[0] &&
            (!in_toolkit || j == sizeof tk_keys / sizeof tk_keys[0]))
            return tf_fail(c, "unknown key \"%s\"%s", k,
                           !in_toolkit && !strncmp(k, "required_", 9)
                               ? " (states and context belong to toolkit tools, under \"toolkits\")"
                               : "");
    }
    return 0;
}

/* callback, name and description. */
static int tf_parse_identity(tf_ctx *c, const json_t *e, ac_toolfile_tool *d)
{
    const json_t *cbk = json_object_get(e, "callback");
    if (cbk && !json_is_boolean(cbk))
        return tf_fail(c, "\"callback\" must be true or false");
    d->callback = json_is_true(cbk);

    const json_t *name = json_object_get(e, "name");
    if (!name)
        return tf_fail(c, "missing \"name\"");
    if (!json_is_string(name) || !tf_valid_name(json_string_value(name), json_string_length(name)))
        return tf_fail(c, "\"name\" must be a string of 1 to 64 letters, digits, '_' or '-'");
    d->name = tf_strdup_json(name);
    if (!d->name)
        return tf_fail(c, "out of memory");

    const json_t *desc = json_object_get(e, "description");
    if (!desc)
        return tf_fail(c, "missing \"description\"");
    if (!json_is_string(desc))
        return tf_fail(c, "\"description\" must be a string");
    d->description = tf_strdup_json(desc);
    if (!d->description)
        return tf_fail(c, "\"description\" must not contain NUL characters");
    return 0;
}

/* command: argv, a relative path with a slash made absolute beside the tool file. */
static int tf_parse_command(tf_ctx *c, const json_t *cmd, ac_toolfile_tool *d)
{
    if (!json_is_array(cmd) || json_array_size(cmd) == 0)
        return tf_fail(c, "\"command\" must be a non-empty array of strings");
    d->argc = json_array_size(cmd);
    d->argv = calloc(d->argc + 1, sizeof *d->argv);
    if (!d->argv)
        return tf_fail(c, "out of memory");
    for (size_t i = 0; i < d->argc; i++) {
        const json_t *a = json_array_get(cmd, i);
        if (!json_is_string(a))
            return tf_fail(c, "\"command\"[%zu] must be a string, got %s", i,
                           json_is_number(a) ? "a number" : "a non-string");
        d->argv[i] = tf_strdup_json(a);
        if (!d->argv[i])
            return tf_fail(c, "\"command\"[%zu] must not contain NUL characters", i);
    }
    if (d->argv[0][0] == 0)
        return tf_fail(c, "\"command\"[0] must not be empty");
    /* a relative path (with a slash) names a file beside the tool file, wherever agentc runs
     * from; a bare name is looked up in PATH */
    const char *slash = strrchr(c->path, '/');
    if (d->argv[0][0] != '/' && strchr(d->argv[0], '/') && slash) {
        size_t dl = (size_t)(slash - c->path), al = strlen(d->argv[0]);
        char *abs = malloc(dl + 1 + al + 1);
        if (!abs)
            return tf_fail(c, "out of memory");
        memcpy(abs, c->path, dl);
        abs[dl] = '/';
        memcpy(abs + dl + 1, d->argv[0], al + 1);
        free(d->argv[0]);
        d->argv[0] = abs;
    }
    return 0;
}

/* parameters: a JSON Schema, compiled (a toolkit tool's enum_from taken out first). */
static int tf_parse_parameters(tf_ctx *c, const json_t *e, ac_toolfile_tool *d, int in_toolkit)
{
    const json_t *params = json_object_get(e, "parameters");
    if (params) {
        if (!json_is_object(params))
            return tf_fail(c, "\"parameters\" must be a JSON Schema object");
        d->parameters = json_deep_copy(params);
    } else {
        d->parameters = json_pack("{s:s}", "type", "object");
    }
    if (!d->parameters)
        return tf_fail(c, "out of memory");
    char why[320];
    if (in_toolkit && ac_toolfile__take_enum_from(d->parameters, &d->enum_from, &d->enum_filters,
                                                  why, sizeof why))
        return tf_fail(c, "%s", why);
    d->schema = ac_schema_compile(d->parameters, why, sizeof why);
    if (!d->schema)
        return tf_fail(c, "invalid \"parameters\" schema: %s", why);
    return 0;
}

/* timeout, max_output and idempotent. */
static int tf_parse_limits(tf_ctx *c, const json_t *e, ac_toolfile_tool *d)
{
    const json_t *timeout = json_object_get(e, "timeout");
    if (timeout && !json_is_string(timeout))
        return tf_fail(c, "\"timeout\" must be a string such as \"10s\"");
    const char *ts = timeout ? json_string_value(timeout) : TF_DEFAULT_TIMEOUT;
    if (ac_parse_duration_ms(ts, &d->timeout_ms) < 0 || d->timeout_ms == 0)
        return tf_fail(c, "bad \"timeout\" \"%s\" (expected a positive number with ms, s, m or h)",
                       ts);

    const json_t *maxout = json_object_get(e, "max_output");
    if (maxout && !json_is_string(maxout))
        return tf_fail(c, "\"max_output\" must be a string such as \"1MB\"");
    const char *ms = maxout ? json_string_value(maxout) : TF_DEFAULT_MAX_OUTPUT;
    if (ac_parse_size(ms, &d->max_output) < 0 || d->max_output == 0)
        return tf_fail(c,
                       "bad \"max_output\" \"%s\" (expected a positive number with B, KB, MB, GB, "
                       "KiB, MiB or GiB)",
                       ms);

    const json_t *idem = json_object_get(e, "idempotent");
    if (idem && !json_is_boolean(idem))
        return tf_fail(c, "\"idempotent\" must be true or false");
    d->idempotent = idem ? json_is_true(idem) : 0;
    const json_t *cache = json_object_get(e, "cache");
    char why[300];
    if (cache && ac_toolfile_parse_cache(cache, &d->cache, why, sizeof why) < 0)
        return tf_fail(c, "\"cache\": %s", why);
    if (cache && !d->idempotent)
        return tf_fail(c, "\"cache\" needs \"idempotent\": true (a cached result stands for a "
                          "call that does not run)");
    return 0;
}

int ac_toolfile_parse_cache(const json_t *j, ac_cache_decl *out, char *why, size_t whycap)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(j)) {
        snprintf(why, whycap, "must be an object {\"ttl\", \"scope\", \"max_entries\"}");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)j, k,
                        v) if (strcmp(k, "ttl") && strcmp(k, "scope") && strcmp(k, "max_entries"))
    {
        snprintf(why, whycap, "unknown key \"%.64s\" (ttl, scope, max_entries)", k);
        return -1;
    }
    const json_t *ttl = json_object_get(j, "ttl"), *scope = json_object_get(j, "scope"),
                 *max = json_object_get(j, "max_entries");
    const char *ts = ttl ? json_string_value(ttl) : AC_CACHE_DEFAULT_TTL;
    if (!ts || ac_parse_duration_ms(ts, &out->ttl_ms) < 0 || out->ttl_ms <= 0) {
        snprintf(why, whycap, "\"ttl\" must be a positive duration such as \"10m\"");
        return -1;
    }
    const char *sc = scope ? json_string_value(scope) : "session";
    if (!sc || (strcmp(sc, "session") && strcmp(sc, "engine"))) {
        snprintf(why, whycap, "\"scope\" must be \"session\" or \"engine\"");
        return -1;
    }
    out->scope = strcmp(sc, "engine") ? AC_CACHE_DECL_SESSION : AC_CACHE_DECL_ENGINE;
    if (max && (!json_is_integer(max) || json_integer_value(max) < 1 ||
                json_integer_value(max) > 1000000)) {
        snprintf(why, whycap, "\"max_entries\" must be an integer from 1 to 1000000");
        return -1;
    }
    out->max_entries = max ? (size_t)json_integer_value(max) : AC_CACHE_DEFAULT_MAX;
    return 0;
}

/* env: {"NAME": "value"}, kept as NAME=value. */
static int tf_parse_env(tf_ctx *c, const json_t *env, ac_toolfile_tool *d)
{
    if (env) {
        if (!json_is_object(env))
            return tf_fail(c, "\"env\" must be an object {\"NAME\": \"value\"}");
        d->env = calloc(json_object_size(env) + 1, sizeof *d->env);
        if (!d->env)
            return tf_fail(c, "out of memory");
        size_t n = 0;
        const char *ek;
        json_t *ev;
        json_object_foreach((json_t *)env, ek, ev)
        {
            if (!tf_valid_env_name(ek, strlen(ek), 0))
                return tf_fail(c,
                               "\"env\": bad variable name \"%.64s\" (letters, digits and "
                               "'_', not starting with a digit)",
                               ek);
            if (!json_is_string(ev) || strlen(json_string_value(ev)) != json_string_length(ev))
                return tf_fail(c, "\"env\".%s must be a string without NUL characters", ek);
            size_t kl = strlen(ek), vl = json_string_length(ev);
            char *kv = malloc(kl + vl + 2);
            if (!kv)
                return tf_fail(c, "out of memory");
            memcpy(kv, ek, kl);
            kv[kl] = '=';
            memcpy(kv + kl + 1, json_string_value(ev), vl + 1);
            d->env[n++] = kv;
        }
    }
    return 0;
}

/* inherit_env: variable names or PREFIX* patterns. */
static int tf_parse_inherit_env(tf_ctx *c, const json_t *inh, ac_toolfile_tool *d)
{
    if (inh) {
        if (!json_is_array(inh))
            return tf_fail(c, "\"inherit_env\" must be an array of variable names");
        d->inherit_env = calloc(json_array_size(inh) + 1, sizeof *d->inherit_env);
        if (!d->inherit_env)
            return tf_fail(c, "out of memory");
        for (size_t i = 0; i < json_array_size(inh); i++) {
            const json_t *a = json_array_get(inh, i);
            if (!json_is_string(a) ||
                !tf_valid_env_name(json_string_value(a), json_string_length(a), 1))
                return tf_fail(c,
                               "\"inherit_env\"[%zu] must be a variable name or a PREFIX* "
                               "pattern",
                               i);
            if (!(d->inherit_env[i] = tf_strdup_json(a)))
                return tf_fail(c, "out of memory");
        }
    }
    return 0;
}

static int tf_parse_entry(tf_ctx *c, const json_t *e, ac_toolfile_tool *d, int in_toolkit)
{
    d->toolkit = -1;
    if (!json_is_object(e))
        return tf_fail(c, "must be an object");
    if (tf_check_keys(c, e, in_toolkit) < 0 || tf_parse_identity(c, e, d) < 0)
        return -1;
    const json_t *cmd = json_object_get(e, "command");
    if (d->callback && cmd)
        return tf_fail(c, "a \"callback\" tool has no \"command\"");
    if (!cmd && !d->callback)
        return tf_fail(c, "missing \"command\"");
    if (!d->callback && tf_parse_command(c, cmd, d) < 0)
        return -1;
    if (tf_parse_parameters(c, e, d, in_toolkit) < 0 || tf_parse_limits(c, e, d) < 0 ||
        tf_parse_env(c, json_object_get(e, "env"), d) < 0)
        return -1;
    return tf_parse_inherit_env(c, json_object_get(e, "inherit_env"), d);
}

int ac_toolfile__parse_tool(const char *path, const char *label, const json_t *e, int in_toolkit,
                            ac_toolfile_tool *d, char *err, size_t errcap)
{
    tf_ctx c = {.path = path, .err = err, .errcap = errcap};
    snprintf(c.label, sizeof c.label, "%s", label);
    return tf_parse_entry(&c, e, d, in_toolkit);
}

/* "state": {"initial": {...}, "schema": {...}}: the session's State (docs/state.md). */
static int tf_parse_state(tf_ctx *c, const json_t *st, ac_toolfile *tf)
{
    snprintf(c->label, sizeof c->label, "state");
    if (!json_is_object(st))
        return tf_fail(c, "must be an object {\"initial\": {...}, \"schema\": {...}}");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)st, k, v)
    {
        if (strcmp(k, "initial") != 0 && strcmp(k, "schema") != 0)
            return tf_fail(c, "unknown key \"%s\" (\"initial\" and \"schema\" are allowed)", k);
    }
    const json_t *init = json_object_get(st, "initial"), *schema = json_object_get(st, "schema");
    if (init && !json_is_object(init))
        return tf_fail(c, "\"initial\" must be an object (the State is a JSON object)");
    if (schema && !json_is_object(schema))
        return tf_fail(c, "\"schema\" must be a JSON Schema object");
    json_t *empty = json_object();
    if (!empty)
        return tf_fail(c, "out of memory");
    if (schema) {
        char why[320];
        ac_schema *sc = ac_schema_compile(schema, why, sizeof why);
        if (!sc) {
            json_decref(empty);
            return tf_fail(c, "invalid \"schema\": %s", why);
        }
        int ok = ac_schema_validate(sc, init ? init : empty, why, sizeof why);
        ac_schema_free(sc);
        if (!ok) {
            json_decref(empty);
            return tf_fail(c, "the schema refuses the initial State: %s", why);
        }
    }
    tf->state = json_pack("{s:O, s:O?}", "initial", init ? init : empty, "schema", schema);
    json_decref(empty);
    c->label[0] = 0;
    return tf->state ? 0 : tf_fail(c, "out of memory");
}

static ac_toolfile *tf_from_json(const json_t *root, tf_ctx *c)
{
    ac_toolfile *tf = NULL;
    if (!json_is_object(root)) {
        tf_fail(c, "the document must be an object {\"tools\": [...]}");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)root, k, v)
    {
        if (strcmp(k, "tools") != 0 && strcmp(k, "toolkits") != 0 && strcmp(k, "state") != 0 &&
            strcmp(k, "mcp") != 0 && strcmp(k, "agents") != 0) {
            tf_fail(c,
                    "unknown key \"%s\" (only \"tools\", \"toolkits\", \"state\", \"mcp\" and "
                    "\"agents\" are allowed)",
                    k);
            return NULL;
        }
    }
    const json_t *tools = json_object_get(root, "tools");
    const json_t *kits = json_object_get(root, "toolkits");
    const json_t *mcp = json_object_get(root, "mcp");
    const json_t *agents = json_object_get(root, "agents");
    if (kits && !json_is_array(kits)) {
        tf_fail(c, "\"toolkits\" must be an array");
        return NULL;
    }
    if (mcp && !json_is_array(mcp)) {
        tf_fail(c, "\"mcp\" must be an array of servers");
        return NULL;
    }
    if (!json_is_array(tools) && (tools || (!kits && !mcp && !agents))) {
        tf_fail(c, tools ? "\"tools\" must be an array" : "missing \"tools\"");
        return NULL;
    }
    tf = calloc(1, sizeof *tf);
    if (!tf)
        goto oom;
    tf->mcp = mcp ? json_incref((json_t *)mcp) : NULL; /* checked by the MCP client */
    if (kits && ac_toolfile__parse_toolkits(kits, tf, c->path, c->err, c->errcap) < 0)
        goto fail;
    if (agents && ac_toolfile__parse_agents(agents, tf, c->path, c->err, c->errcap) < 0)
        goto fail;
    size_t n = json_array_size(tools), base = tf->n;
    ac_toolfile_tool *grown = realloc(tf->tools, (base + n + 1) * sizeof *tf->tools);
    if (!grown)
        goto oom;
    tf->tools = grown;
    memset(tf->tools + base, 0, (n + 1) * sizeof *tf->tools);
    if (json_object_get(root, "state") && tf_parse_state(c, json_object_get(root, "state"), tf) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(tools, i);
        const json_t *name = json_object_get(e, "name");
        if (json_is_string(name) &&
            tf_valid_name(json_string_value(name), json_string_length(name)))
            snprintf(c->label, sizeof c->label, "tools[%zu] (\"%s\")", i, json_string_value(name));
        else
            snprintf(c->label, sizeof c->label, "tools[%zu]", i);
        tf->n = base + i + 1; /* so a half-filled entry is freed */
        if (tf_parse_entry(c, e, &tf->tools[base + i], 0) < 0)
            goto fail;
        for (size_t k2 = 0; k2 < base; k2++) {
            char wire[160];
            if (ac_toolname_to_wire(tf->tools[k2].name, wire, sizeof wire) == 0 &&
                strcmp(wire, tf->tools[base + i].name) == 0) {
                tf_fail(c, "the name is the wire form of toolkit tool \"%s\"", tf->tools[k2].name);
                goto fail;
            }
        }
        for (size_t k2 = base; k2 < base + i; k2++) {
            if (strcmp(tf->tools[k2].name, tf->tools[base + i].name) == 0) {
                tf_fail(c, "duplicate tool name (also tools[%zu])", k2 - base);
                goto fail;
            }
        }
    }
    return tf;
oom:
    tf_fail(c, "out of memory");
fail:
    ac_toolfile_free(tf);
    return NULL;
}

static void tf_syntax_error(tf_ctx *c, const json_error_t *je)
{
    if (c->err && c->errcap)
        snprintf(c->err, c->errcap, "%s:%d:%d: %s", c->path, je->line, je->column, je->text);
}

ac_toolfile *ac_toolfile_parse(const char *json_text, const char *path_for_messages, char *err,
                               size_t errcap)
{
    tf_ctx c = {
        .path = path_for_messages ? path_for_messages : "<tools>", .err = err, .errcap = errcap};
    if (!json_text) {
        tf_fail(&c, "no text");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_loads(json_text, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        tf_syntax_error(&c, &je);
        return NULL;
    }
    ac_toolfile *tf = tf_from_json(root, &c);
    json_decref(root);
    return tf;
}

ac_toolfile *ac_toolfile_load(const char *path, char *err, size_t errcap)
{
    tf_ctx c = {.path = path ? path : "<tools>", .err = err, .errcap = errcap};
    if (!path) {
        tf_fail(&c, "no path");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        tf_fail(&c, "is a directory, not a tool file");
        return NULL;
    }
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (je.line <= 0 && err && errcap)
            snprintf(err, errcap, "%s: %s", path, je.text);
        else
            tf_syntax_error(&c, &je);
        return NULL;
    }
    ac_toolfile *tf = tf_from_json(root, &c);
    json_decref(root);
    return tf;
}
