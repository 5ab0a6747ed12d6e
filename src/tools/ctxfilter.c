/* Context filters (ctxfilter.h): their declarations checked, applied to a
 * list of context values, and typed over a schema of the items for
 * `agentc check --tools`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctxfilter.h"
#include "tools/toolfile.h"

/* ---- values ---- */

/* The value at dot path p in item ("." is the item itself), or NULL. */
static const json_t *at(const json_t *item, const char *p)
{
    return strcmp(p, ".") ? ac_toolfile_context_at(item, p) : item;
}

/* Equality with numbers compared by value (1 equals 1.0). */
static int same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

/* -1, 0, 1 between two numbers or two strings; 2 when they do not compare. */
static int compare(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_string(a) && json_is_string(b)) {
        int c = strcmp(json_string_value(a), json_string_value(b));
        return c < 0 ? -1 : c > 0;
    }
    return 2;
}

/* One condition of a where: spec is a value (equality) or an object of operators. */
static int holds(const json_t *v, const json_t *spec)
{
    if (!json_is_object(spec))
        return v && same(v, spec);
    const char *op;
    json_t *x;
    json_object_foreach((json_t *)spec, op, x)
    {
        int ok;
        if (!strcmp(op, "exists")) {
            ok = (v != NULL) == json_is_true(x);
        } else if (!strcmp(op, "eq")) {
            ok = v && same(v, x);
        } else if (!strcmp(op, "ne")) {
            ok = !v || !same(v, x);
        } else if (!strcmp(op, "in")) {
            size_t i;
            json_t *y;
            ok = 0;
            json_array_foreach(x, i, y) ok = ok || (v && same(v, y));
        } else {
            int c = v ? compare(v, x) : 2;
            ok = c != 2 && (!strcmp(op, "lt")    ? c < 0
                            : !strcmp(op, "lte") ? c <= 0
                            : !strcmp(op, "gt")  ? c > 0
                                                 : c >= 0);
        }
        if (!ok)
            return 0;
    }
    return 1;
}

/* ---- applying ---- */

typedef struct sortkey {
    const char *path;
    int desc;
} sortkey;

/* Items without the key last whatever the direction; numbers before strings. */
static int sort_cmp(const sortkey *k, const json_t *a, const json_t *b)
{
    const json_t *x = at(a, k->path), *y = at(b, k->path);
    if (!x || !y)
        return !x - !y;
    int c = compare(x, y);
    if (c == 2)
        c = json_is_number(x) ? -1 : json_is_number(y) ? 1 : 0;
    return k->desc ? -c : c;
}

/* A stable merge sort of v[0..n) with tmp as scratch. */
static void msort(const sortkey *k, json_t **v, json_t **tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2, i = 0, j = h, o = 0;
    msort(k, v, tmp, h);
    msort(k, v + h, tmp, n - h);
    while (i < h && j < n)
        tmp[o++] = sort_cmp(k, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[o++] = v[i++];
    while (j < n)
        tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static json_t *do_sort(json_t *items, const char *spec)
{
    sortkey k = {spec[0] == '-' ? spec + 1 : spec, spec[0] == '-'};
    size_t n = json_array_size(items);
    json_t **v = calloc(n + 1, sizeof *v), **tmp = calloc(n + 1, sizeof *tmp);
    json_t *out = json_array();
    if (!v || !tmp || !out) {
        free(v);
        free(tmp);
        json_decref(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(items, i);
    msort(&k, v, tmp, n);
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    free(tmp);
    return out;
}

/* The set key of a value for unique: numbers by value. */
static char *unique_key(const json_t *v)
{
    char *s;
    if (json_is_number(v)) {
        s = malloc(40);
        if (s)
            snprintf(s, 40, "n:%.17g", json_number_value(v));
        return s;
    }
    char *d = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
    if (!d)
        return NULL;
    s = malloc(strlen(d) + 3);
    if (s)
        snprintf(s, strlen(d) + 3, "v:%s", d);
    free(d);
    return s;
}

/* One filter's steps over items (a new array, or NULL out of memory). */
static json_t *apply_one(const json_t *f, const json_t *items)
{
    const json_t *where = json_object_get(f, "where"), *sort = json_object_get(f, "sort"),
                 *map = json_object_get(f, "map"), *limit = json_object_get(f, "limit");
    json_t *cur = json_array(),
           *seen = json_is_true(json_object_get(f, "unique")) ? json_object() : NULL;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        const char *p;
        json_t *spec;
        int ok = 1;
        json_object_foreach((json_t *)where, p, spec) ok = ok && holds(at(it, p), spec);
        if (ok)
            json_array_append(cur, it);
    }
    if (cur && json_is_string(sort)) {
        json_t *sorted = do_sort(cur, json_string_value(sort));
        json_decref(cur);
        cur = sorted;
    }
    json_t *out = json_array();
    json_array_foreach(cur, i, it)
    {
        const json_t *v = map ? at(it, json_string_value(map)) : it;
        if (!v)
            continue;
        if (seen) {
            char *k = unique_key(v);
            int dup = !k || json_object_get(seen, k) != NULL;
            if (k && !dup)
                json_object_set_new(seen, k, json_true());
            free(k);
            if (dup)
                continue;
        }
        if (limit && json_array_size(out) >= (size_t)json_integer_value(limit))
            break;
        json_array_append(out, (json_t *)v);
    }
    json_decref(cur);
    json_decref(seen);
    return out;
}

json_t *ac_ctxfilter_apply(const json_t *filters, const json_t *chain, const json_t *items)
{
    json_t *cur = json_deep_copy(items);
    size_t i;
    json_t *name;
    json_array_foreach(chain, i, name)
    {
        const json_t *f = json_object_get(filters, json_string_value(name));
        if (!f || !cur)
            continue;
        json_t *next = apply_one(f, cur);
        json_decref(cur);
        cur = next;
    }
    return cur;
}
