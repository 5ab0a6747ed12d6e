/* The "toolkits" part of tool files: prefixes, states, contexts and the
 * tools' state and context declarations; see toolfile.h. Structural errors
 * are refused here, with the toolkit and tool named; references between
 * the declarations are checked by toolkit_check.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctxfilter.h"
#include "tools/toolfile.h"
#include "util/toolname.h"

static void strv_free(char **v)
{
    if (v)
        for (char **p = v; *p; p++)
            free(*p);
    free(v);
}

void ac_toolfile__free_tool_parts(ac_toolfile_tool *d)
{
    free(d->local);
    strv_free(d->required_states);
    strv_free(d->forbidden_states);
    strv_free(d->enables_states);
    strv_free(d->disables_states);
    strv_free(d->required_context);
    json_decref(d->enum_from);
    json_decref(d->enum_filters);
}

void ac_toolfile__free_toolkit(ac_toolfile_toolkit *k)
{
    free(k->prefix);
    strv_free(k->initial_states);
    strv_free(k->states);
    json_decref(k->context);
    json_decref(k->context_schema);
    ac_schema_free(k->ctx_schema);
    json_decref(k->filters);
}

static int fail(char *err, size_t errcap, const char *path, const char *label, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (err && errcap)
        snprintf(err, errcap, "%s: %s: %s", path, label, m);
    return -1;
}

/* A state name or context key: 1-64 printable ASCII characters without spaces or quotes. */
static int word_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\')
            return 0;
    return 1;
}

/* key: an array of distinct names (absent: an empty list). */
static int names(const json_t *o, const char *key, char ***out, const char *path, const char *label,
                 char *err, size_t errcap)
{
    const json_t *a = json_object_get(o, key);
    if (a && !json_is_array(a))
        return fail(err, errcap, path, label, "\"%s\" must be an array of names", key);
    size_t n = json_array_size(a);
    *out = calloc(n + 1, sizeof **out);
    if (!*out)
        return fail(err, errcap, path, label, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        if (!json_is_string(v) || !word_ok(json_string_value(v)))
            return fail(err, errcap, path, label,
                        "\"%s\"[%zu] must be a name of 1 to 64 printable characters without "
                        "spaces or quotes",
                        key, i);
        for (size_t k = 0; k < i; k++)
            if (!strcmp((*out)[k], json_string_value(v)))
                return fail(err, errcap, path, label, "\"%s\" lists \"%s\" twice", key,
                            json_string_value(v));
        if (!((*out)[i] = strdup(json_string_value(v))))
            return fail(err, errcap, path, label, "out of memory");
    }
    return 0;
}

/* One "x-enum-from": a path, a list of paths, or {"path": either, "filters": [names]};
 * the paths into *paths and the names into *chain (NULL when none). */
static int enum_source(const char *pname, const json_t *ef, json_t **paths, json_t **chain,
                       char *why, size_t whycap)
{
    *chain = NULL;
    const json_t *src = ef;
    if (json_is_object(ef)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)ef, k, v) if (strcmp(k, "path") && strcmp(k, "filters"))
        {
            snprintf(why, whycap,
                     "parameter \"%.64s\": \"x-enum-from\": unknown key \"%.64s\" "
                     "(path, filters)",
                     pname, k);
            return -1;
        }
        src = json_object_get(ef, "path");
        const json_t *f = json_object_get(ef, "filters");
        size_t i;
        json_t *v2;
        int names_ok = json_is_array(f) && json_array_size(f) > 0;
        json_array_foreach(f, i, v2) names_ok = names_ok && json_is_string(v2);
        if (f && !names_ok) {
            snprintf(why, whycap,
                     "parameter \"%.64s\": \"x-enum-from\": \"filters\" must be a non-empty "
                     "list of filter names",
                     pname);
            return -1;
        }
        *chain = f ? json_deep_copy(f) : NULL;
    }
    if (!(*paths = json_array())) {
        snprintf(why, whycap, "out of memory");
        return -1;
    }
    if (json_is_string(src)) {
        json_array_append(*paths, (json_t *)src);
    } else if (json_is_array(src) && json_array_size(src) > 0) {
        json_array_extend(*paths, (json_t *)src);
    } else {
        snprintf(why, whycap,
                 "parameter \"%.64s\": \"x-enum-from\" must be a context path, a non-empty list "
                 "of them, or {\"path\": ..., \"filters\": [...]}",
                 pname);
        return -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(*paths, i, v)
    {
        if (json_is_string(v) && ac_ctxfilter_path_ok(json_string_value(v), 0))
            continue;
        snprintf(why, whycap,
                 "parameter \"%.64s\": \"x-enum-from\" paths are context keys, dotted for "
                 "nested objects (\"a.b\")",
                 pname);
        return -1;
    }
    return 0;
}

int ac_toolfile__take_enum_from(json_t *params, json_t **out, json_t **filters, char *why,
                                size_t whycap)
{
    *out = *filters = NULL;
    json_t *props = json_object_get(params, "properties");
    if (!json_is_object(props))
        return 0;
    const char *pname;
    json_t *p;
    json_object_foreach(props, pname, p)
    {
        json_t *ef = json_object_get(p, "x-enum-from"), *list = NULL, *chain = NULL;
        if (!ef)
            continue;
        int rc = enum_source(pname, ef, &list, &chain, why, whycap);
        if (rc == 0 && json_object_get(p, "enum")) {
            snprintf(why, whycap,
                     "parameter \"%.64s\" has both \"enum\" and \"x-enum-from\" (choose one)",
                     pname);
            rc = -1;
        }
        if (rc == 0 && ((!*out && !(*out = json_object())) ||
                        (chain && !*filters && !(*filters = json_object())))) {
            snprintf(why, whycap, "out of memory");
            rc = -1;
        }
        if (rc < 0) {
            json_decref(list);
            json_decref(chain);
            return -1;
        }
        json_object_set_new(*out, pname, list);
        if (chain)
            json_object_set_new(*filters, pname, chain);
    }
    /* out of the schema that is compiled and sent: the enum replaces it per call */
    json_object_foreach(props, pname, p) json_object_del(p, "x-enum-from");
    return 0;
}

/* Every filter a tool's parameters chain is one of its toolkit's. */
static int chains_known(const ac_toolfile_tool *d, const json_t *filters, const char *path,
                        const char *label, char *err, size_t errcap)
{
    const char *param;
    json_t *chain;
    json_object_foreach(d->enum_filters, param, chain)
    {
        size_t i;
        json_t *n;
        json_array_foreach(
            chain, i,
            n) if (!json_object_get(filters,
                                    json_string_value(
                                        n))) return fail(err, errcap, path, label,
                                                         "parameter \"%s\": unknown filter "
                                                         "\"%.64s\" (not in the toolkit's "
                                                         "\"filters\")",
                                                         param, json_string_value(n));
    }
    return 0;
}

static int parse_kit_tool(const json_t *e, ac_toolfile_tool *d, int kit, const char *prefix,
                          const char *path, const char *label, char *err, size_t errcap)
{
    if (ac_toolfile__parse_tool(path, label, e, 1, d, err, errcap) < 0)
        return -1;
    d->toolkit = kit;
    char full[2 * AC_TOOLNAME_MAX + 8], why[300];
    if (ac_toolname_compose(prefix, d->name, full, sizeof full, why, sizeof why) < 0)
        return fail(err, errcap, path, label, "%s", why);
    d->local = d->name;
    if (!(d->name = strdup(full)))
        return fail(err, errcap, path, label, "out of memory");
    if (names(e, "required_states", &d->required_states, path, label, err, errcap) ||
        names(e, "forbidden_states", &d->forbidden_states, path, label, err, errcap) ||
        names(e, "enables_states", &d->enables_states, path, label, err, errcap) ||
        names(e, "disables_states", &d->disables_states, path, label, err, errcap) ||
        names(e, "required_context", &d->required_context, path, label, err, errcap))
        return -1;
    const json_t *u = json_object_get(e, "updates_context");
    if (u && !json_is_boolean(u))
        return fail(err, errcap, path, label, "\"updates_context\" must be true or false");
    d->updates_context = json_is_true(u);
    return 0;
}

static int parse_kit(const json_t *k, size_t ki, ac_toolfile *tf, const char *path, char *err,
                     size_t errcap)
{
    static const char *const keys[] = {"prefix",         "initial_states", "states", "context",
                                       "context_schema", "filters",        "tools"};
    ac_toolfile_toolkit *kit = &tf->toolkits[ki];
    char label[160];
    snprintf(label, sizeof label, "toolkits[%zu]", ki);
    if (!json_is_object(k))
        return fail(err, errcap, path, label, "must be an object");
    const json_t *pj = json_object_get(k, "prefix");
    if (json_is_string(pj))
        snprintf(label, sizeof label, "toolkits[%zu] (\"%.64s\")", ki, json_string_value(pj));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)k, key, v)
    {
        size_t i;
        for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!strcmp(key, keys[i]))
                break;
        if (i == sizeof keys / sizeof keys[0])
            return fail(err, errcap, path, label, "unknown key \"%s\"", key);
    }
    if (!json_is_string(pj) || !ac_toolname_prefix_ok(json_string_value(pj)))
        return fail(err, errcap, path, label,
                    "\"prefix\" must be letters, digits, '-' and single '_' (not \"__\", not "
                    "starting or ending with '_'), at most 61 characters");
    if (!(kit->prefix = strdup(json_string_value(pj))))
        return fail(err, errcap, path, label, "out of memory");
    for (size_t o = 0; o < ki; o++)
        if (!strcmp(tf->toolkits[o].prefix, kit->prefix))
            return fail(err, errcap, path, label, "duplicate prefix (also toolkits[%zu])", o);
    if (names(k, "initial_states", &kit->initial_states, path, label, err, errcap))
        return -1;
    if (json_object_get(k, "states") && names(k, "states", &kit->states, path, label, err, errcap))
        return -1;
    const json_t *ctx = json_object_get(k, "context");
    if (ctx && !json_is_object(ctx))
        return fail(err, errcap, path, label, "\"context\" must be an object");
    if (!(kit->context = ctx ? json_deep_copy(ctx) : json_object()))
        return fail(err, errcap, path, label, "out of memory");
    const json_t *cs = json_object_get(k, "context_schema");
    if (cs) {
        char why[320];
        if (!json_is_object(cs))
            return fail(err, errcap, path, label,
                        "\"context_schema\" must be a JSON Schema object");
        if (!(kit->context_schema = json_deep_copy(cs)))
            return fail(err, errcap, path, label, "out of memory");
        if (!(kit->ctx_schema = ac_schema_compile(kit->context_schema, why, sizeof why)))
            return fail(err, errcap, path, label, "invalid \"context_schema\": %s", why);
        if (!ac_schema_validate(kit->ctx_schema, kit->context, why, sizeof why))
            return fail(err, errcap, path, label,
                        "the initial \"context\" does not match \"context_schema\": %s", why);
    }
    const json_t *filters = json_object_get(k, "filters");
    char fwhy[400];
    if (filters && ac_ctxfilter_check_decl(filters, fwhy, sizeof fwhy) < 0)
        return fail(err, errcap, path, label, "%s", fwhy);
    if (!(kit->filters = filters ? json_deep_copy(filters) : json_object()))
        return fail(err, errcap, path, label, "out of memory");
    const json_t *tools = json_object_get(k, "tools");
    if (!json_is_array(tools))
        return fail(err, errcap, path, label,
                    tools ? "\"tools\" must be an array" : "missing \"tools\"");
    size_t n = json_array_size(tools), base = tf->n;
    ac_toolfile_tool *grown = realloc(tf->tools, (base + n + 1) * sizeof *tf->tools);
    if (!grown)
        return fail(err, errcap, path, label, "out of memory");
    tf->tools = grown;
    memset(tf->tools + base, 0, (n + 1) * sizeof *tf->tools);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(tools, i);
        const json_t *nm = json_object_get(e, "name");
        char tl[256];
        if (json_is_string(nm))
            snprintf(tl, sizeof tl, "%s: tools[%zu] (\"%.64s\")", label, i, json_string_value(nm));
        else
            snprintf(tl, sizeof tl, "%s: tools[%zu]", label, i);
        tf->n = base + i + 1;
        if (parse_kit_tool(e, &tf->tools[base + i], (int)ki, kit->prefix, path, tl, err, errcap) ||
            chains_known(&tf->tools[base + i], kit->filters, path, tl, err, errcap))
            return -1;
        for (size_t o = base; o < base + i; o++)
            if (!strcmp(tf->tools[o].name, tf->tools[base + i].name))
                return fail(err, errcap, path, tl, "duplicate tool name (also tools[%zu])",
                            o - base);
    }
    return 0;
}

int ac_toolfile__parse_toolkits(const json_t *arr, ac_toolfile *tf, const char *path, char *err,
                                size_t errcap)
{
    size_t n = json_array_size(arr);
    tf->toolkits = calloc(n + 1, sizeof *tf->toolkits);
    if (!tf->toolkits)
        return fail(err, errcap, path, "toolkits", "out of memory");
    if (!tf->tools && !(tf->tools = calloc(1, sizeof *tf->tools)))
        return fail(err, errcap, path, "toolkits", "out of memory");
    for (size_t i = 0; i < n; i++) {
        tf->n_toolkits = i + 1;
        if (parse_kit(json_array_get(arr, i), i, tf, path, err, errcap) < 0)
            return -1;
    }
    return 0;
}
