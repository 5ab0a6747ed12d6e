/* Context filters checked before anything runs (ctxfilter.h): the
 * declarations when the tool file is loaded, and each chain typed over a
 * schema of the items for `agentc check --tools`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctxfilter.h"

/* ---- declarations ---- */

static int bad(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

int ac_ctxfilter_path_ok(const char *s, int dot_alone)
{
    size_t n = strlen(s);
    if (dot_alone && !strcmp(s, "."))
        return 1;
    if (!n || n > 256 || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return 0;
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == '"' || *p == '\\')
            return 0;
    return 1;
}

static int cond_ok(const char *name, const char *p, const json_t *spec, char *why, size_t cap)
{
    if (!json_is_object(spec))
        return 0;
    if (!json_object_size(spec))
        return bad(why, cap, "filter \"%s\": where \"%s\": an empty object compares nothing", name,
                   p);
    const char *op;
    json_t *x;
    json_object_foreach((json_t *)spec, op, x)
    {
        int cmp =
            !strcmp(op, "lt") || !strcmp(op, "lte") || !strcmp(op, "gt") || !strcmp(op, "gte");
        if (!strcmp(op, "exists") ? !json_is_boolean(x)
            : !strcmp(op, "in")   ? !json_is_array(x)
            : cmp                 ? !json_is_number(x) && !json_is_string(x)
                                  : strcmp(op, "eq") && strcmp(op, "ne"))
            return bad(why, cap,
                       "filter \"%s\": where \"%s\": \"%s\" is not an operator with such a value "
                       "(eq, ne: a value; in: an array; lt, lte, gt, gte: a number or a string; "
                       "exists: true or false)",
                       name, p, op);
    }
    return 0;
}

static int filter_ok(const char *name, const json_t *f, char *why, size_t cap)
{
    if (!json_is_object(f) || !json_object_size(f))
        return bad(why, cap,
                   "filter \"%s\" must be an object of steps (where, sort, map, unique, "
                   "limit)",
                   name);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)f, k, v)
    {
        if (!strcmp(k, "where")) {
            if (!json_is_object(v))
                return bad(why, cap, "filter \"%s\": \"where\" must be an object of conditions",
                           name);
            const char *p;
            json_t *spec;
            json_object_foreach(v, p, spec)
            {
                if (!ac_ctxfilter_path_ok(p, 1))
                    return bad(why, cap, "filter \"%s\": where: \"%.64s\" is not a dot path", name,
                               p);
                if (cond_ok(name, p, spec, why, cap) < 0)
                    return -1;
            }
        } else if (!strcmp(k, "sort") || !strcmp(k, "map")) {
            const char *s = json_string_value(v);
            if (s && !strcmp(k, "sort") && s[0] == '-')
                s++;
            if (!s || !ac_ctxfilter_path_ok(s, 1))
                return bad(why, cap, "filter \"%s\": \"%s\" must be a dot path%s", name, k,
                           strcmp(k, "sort") ? "" : " (\"-path\" for descending)");
        } else if (!strcmp(k, "unique")) {
            if (!json_is_boolean(v))
                return bad(why, cap, "filter \"%s\": \"unique\" must be true or false", name);
        } else if (!strcmp(k, "limit")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1)
                return bad(why, cap, "filter \"%s\": \"limit\" must be an integer >= 1", name);
        } else {
            return bad(why, cap,
                       "filter \"%s\": unknown step \"%s\" (where, sort, map, unique, limit)", name,
                       k);
        }
    }
    return 0;
}

int ac_ctxfilter_check_decl(const json_t *filters, char *why, size_t whycap)
{
    if (!json_is_object(filters))
        return bad(why, whycap, "\"filters\" must be an object of named filters");
    const char *name;
    json_t *f;
    json_object_foreach((json_t *)filters, name, f)
    {
        if (!*name || strlen(name) > 64 || strchr(name, '"'))
            return bad(why, whycap, "a filter name must be 1 to 64 characters");
        if (filter_ok(name, f, why, whycap) < 0)
            return -1;
    }
    return 0;
}

/* ---- shapes ---- */

static json_t *merge(json_t *a, json_t *b);

/* a and b's properties united into a (both objects' schemas); consumes b. */
static json_t *merge_props(json_t *a, json_t *b)
{
    json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    const char *k;
    json_t *v;
    json_object_foreach(pb, k, v)
    {
        json_t *old = json_object_get(pa, k);
        json_object_set_new(pa, k, old ? merge(json_incref(old), json_incref(v)) : json_incref(v));
    }
    json_decref(b);
    return a;
}

/* One schema for values of schema a or b (consumes both): {} when their types differ. */
static json_t *merge(json_t *a, json_t *b)
{
    const char *ta = json_string_value(json_object_get(a, "type")),
               *tb = json_string_value(json_object_get(b, "type"));
    if (!ta || !tb || strcmp(ta, tb)) {
        json_decref(a);
        json_decref(b);
        return json_object();
    }
    if (!strcmp(ta, "object"))
        return merge_props(a, b);
    if (!strcmp(ta, "array")) {
        json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
        if (ia && ib)
            json_object_set_new(a, "items", merge(json_incref(ia), json_incref(ib)));
        else if (ib)
            json_object_set(a, "items", ib);
    }
    json_decref(b);
    return a;
}

json_t *ac_ctxfilter_shape(const json_t *value)
{
    if (json_is_object(value)) {
        json_t *props = json_object();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)value, k, v)
            json_object_set_new(props, k, ac_ctxfilter_shape(v));
        return json_pack("{s:s, s:o}", "type", "object", "properties", props);
    }
    if (json_is_array(value)) {
        json_t *items = NULL, *s = json_pack("{s:s}", "type", "array");
        size_t i;
        json_t *v;
        json_array_foreach(value, i, v)
        {
            json_t *one = ac_ctxfilter_shape(v);
            items = items ? merge(items, one) : one;
        }
        if (items)
            json_object_set_new(s, "items", items);
        return s;
    }
    const char *t = json_is_string(value)    ? "string"
                    : json_is_number(value)  ? "number"
                    : json_is_boolean(value) ? "boolean"
                                             : "null";
    return json_pack("{s:s}", "type", t);
}

/* ---- typing a chain ---- */

/* The type of values schema s describes ("integer" counted as "number"), or
 * NULL when it does not say one. */
static const char *kind(const json_t *s)
{
    const char *t = json_string_value(json_object_get(s, "type"));
    return t && !strcmp(t, "integer") ? "number" : t;
}

static const char *value_kind(const json_t *v)
{
    return json_is_string(v)    ? "string"
           : json_is_number(v)  ? "number"
           : json_is_boolean(v) ? "boolean"
           : json_is_object(v)  ? "object"
           : json_is_array(v)   ? "array"
                                : "null";
}

enum { R_OK, R_MISSING, R_NOT_OBJECT };

/* Dot path p in items of schema s: R_OK with *sub its schema (NULL when it
 * cannot be known), R_MISSING when s lists the keys and not this one,
 * R_NOT_OBJECT when a step reads a key of something that is no object (*sub
 * its schema). */
static int resolve(const json_t *s, const char *p, const json_t **sub)
{
    *sub = s;
    if (!strcmp(p, "."))
        return R_OK;
    char seg[300];
    while (*sub && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        const char *k = kind(*sub);
        if (k && strcmp(k, "object"))
            return R_NOT_OBJECT;
        const json_t *props = json_object_get(*sub, "properties");
        if (n >= sizeof seg || !json_is_object(props)) {
            *sub = NULL;
            return R_OK;
        }
        memcpy(seg, p, n);
        seg[n] = 0;
        if (!(*sub = json_object_get(props, seg)))
            return R_MISSING;
        p = dot ? dot + 1 : p + n;
    }
    return R_OK;
}

typedef struct typer {
    const char *who, *filter;
    ac_ctxfilter_report_fn fn;
    void *ud;
    size_t problems;
} typer;

static void say(typer *t, const char *fmt, ...)
{
    char m[700], full[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s: filter \"%s\": %s", t->who, t->filter, m);
    if (t->fn)
        t->fn(t->ud, full);
    t->problems++;
}

/* The schema at p in the items, reporting a missing key or items that are no objects. */
static const json_t *key_of(typer *t, const json_t *s, const char *step, const char *p)
{
    const json_t *sub;
    int r = resolve(s, p, &sub);
    if (r == R_MISSING)
        say(t, "%s names \"%s\", which the items do not have", step, p);
    else if (r == R_NOT_OBJECT)
        say(t, "%s reads \"%s\" through a %s, not an object", step, p, kind(sub));
    return r == R_OK ? sub : NULL;
}

static void where_types(typer *t, const json_t *s, const json_t *where)
{
    const char *p;
    json_t *spec;
    json_object_foreach((json_t *)where, p, spec)
    {
        const json_t *sub = key_of(t, s, "where", p);
        const char *k = kind(sub);
        if (!k)
            continue;
        const char *op;
        json_t *x;
        json_t *one = json_is_object(spec) ? NULL : json_pack("{s:O}", "eq", spec);
        json_object_foreach(one ? one : spec, op, x)
        {
            if (!strcmp(op, "exists"))
                continue;
            size_t i, n = json_is_array(x) && !strcmp(op, "in") ? json_array_size(x) : 1;
            for (i = 0; i < n; i++) {
                const json_t *y = !strcmp(op, "in") ? json_array_get(x, i) : x;
                if (strcmp(value_kind(y), k))
                    say(t, "where \"%s\" %s: compares a %s with values of type %s", p, op,
                        value_kind(y), k);
            }
        }
        json_decref(one);
    }
}

size_t ac_ctxfilter_check_chain(const json_t *filters, const json_t *chain,
                                const json_t *item_schema, const char *enum_kind, const char *who,
                                ac_ctxfilter_report_fn fn, void *ud)
{
    typer t = {who, "", fn, ud, 0};
    const json_t *s = item_schema;
    size_t i;
    json_t *name;
    json_array_foreach(chain, i, name)
    {
        const json_t *f = json_object_get(filters, json_string_value(name));
        t.filter = json_string_value(name);
        if (!f || !s)
            continue;
        const json_t *where = json_object_get(f, "where"), *sort = json_object_get(f, "sort"),
                     *map = json_object_get(f, "map");
        if (where)
            where_types(&t, s, where);
        if (json_is_string(sort)) {
            const char *p = json_string_value(sort);
            key_of(&t, s, "sort", p[0] == '-' ? p + 1 : p);
        }
        if (json_is_string(map))
            s = key_of(&t, s, "map", json_string_value(map));
    }
    const char *k = kind(s);
    if (enum_kind && json_array_size(chain) && k && strcmp(k, enum_kind)) {
        t.filter = json_string_value(json_array_get(chain, json_array_size(chain) - 1));
        say(&t, "yields %ss, not %ss, for an enum%s", k, enum_kind,
            !strcmp(k, "object") ? " (map a key of the items)" : "");
    }
    return t.problems;
}
