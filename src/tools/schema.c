/* JSON Schema validator: compiles a schema document into a node tree with
 * resolved local $refs and compiled regexes, then validates instances against
 * it. See schema.h for the supported keywords and semantics. */
#include "tools/schema.h"
#include "tools/schema_regex.h"
#include "util/grow.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Type bits, in the order of the names below. ORDER TYPE */
enum {
    SC_T_NULL = 1u << 0,
    SC_T_BOOLEAN = 1u << 1,
    SC_T_OBJECT = 1u << 2,
    SC_T_ARRAY = 1u << 3,
    SC_T_NUMBER = 1u << 4,
    SC_T_STRING = 1u << 5,
    SC_T_INTEGER = 1u << 6,
};
static const char *const sc_type_names[] = {"null",   "boolean", "object", "array",
                                            "number", "string",  "integer"};
#define SC_NTYPES 7

/* |value| = m * 10^e, the shortest decimal form of a JSON number. */
typedef struct sc_dec {
    uint64_t m;
    int e;
} sc_dec;

typedef struct sc_node sc_node;

typedef struct sc_prop {
    const char *key; /* borrowed from the schema document */
    sc_node *node;
} sc_prop;

typedef struct sc_patprop {
    ac_schema_regex rx;
    sc_node *node;
} sc_patprop;

typedef struct sc_list {
    sc_node **v;
    size_t n;
} sc_list;

/* One compiled schema object (or boolean schema). Child nodes are owned by
 * the ac_schema's node table, not by their parent, so $refs may share them. */
struct sc_node {
    const json_t *json; /* borrowed from the schema document */
    int is_bool, bool_value;
    unsigned types; /* 0: any type */

    sc_prop *props;
    size_t nprops;
    sc_patprop *pprops;
    size_t npprops;
    sc_node *additional_props;
    sc_node *property_names;
    const char **required;
    size_t nrequired;
    long long min_props, max_props; /* -1: absent */

    const json_t *enum_values; /* array */
    const json_t *const_value;

    sc_list prefix;      /* prefixItems or items-as-array */
    sc_node *rest_items; /* items after the prefix */
    sc_node *all_items;  /* items as a schema when there is no prefix */
    sc_node *contains;
    long long min_items, max_items;
    int unique;

    const json_t *minimum, *maximum, *xminimum, *xmaximum;
    const json_t *multiple_of;
    sc_dec multiple_dec;
    long long min_len, max_len;
    ac_schema_regex pattern;

    sc_list all_of, any_of, one_of;
    sc_node *not_schema;
    sc_node *if_schema, *then_schema, *else_schema;

    const char *ref_str;
    const json_t *ref_target;
    sc_node *ref;
    int ref_only; /* draft <= 7: $ref overrides its siblings */
};

struct ac_schema {
    json_t *doc; /* private deep copy; nodes borrow from it */
    sc_node *root;
    sc_node **nodes; /* every node, for freeing */
    size_t nnodes, capnodes;
    sc_node **map; /* open addressing on the node's json pointer */
    size_t mapcap;
    sc_node **pending; /* nodes whose $ref is not linked yet */
    size_t npending, cappending;
    int legacy_ref;
};

/* ---------------------------------------------------------------- helpers */
static const char *sc_json_type_name(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    case JSON_NULL:
        return "null";
    }
    return "unknown";
}

static int sc_is_integral(const json_t *j)
{
    if (json_is_integer(j))
        return 1;
    if (json_is_real(j)) {
        double d = json_real_value(j);
        return isfinite(d) && d == floor(d);
    }
    return 0;
}

/* Non-negative integer keyword value (2 and 2.0 both accepted). */
static int sc_get_count(const json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return -1;
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && sc_is_integral(v)) {
        double d = json_real_value(v);
        if (d < 0 || d > 9.0e18)
            return -1;
        *out = (long long)d;
        return 0;
    }
    return -1;
}

/* Compares two JSON numbers exactly; returns <0, 0, >0. */
static int sc_cmp_int_real(long long i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double t = trunc(d);
    long long ti = (long long)t;
    if (i != ti)
        return i < ti ? -1 : 1;
    double frac = d - t;
    return frac > 0 ? -1 : (frac < 0 ? 1 : 0);
}

static int sc_num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (json_is_integer(a))
        return sc_cmp_int_real(json_integer_value(a), json_real_value(b));
    if (json_is_integer(b))
        return -sc_cmp_int_real(json_integer_value(b), json_real_value(a));
    double x = json_real_value(a), y = json_real_value(b);
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* Deep equality where numbers compare by value (1 == 1.0). */
static int sc_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return sc_num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!sc_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (!w || !sc_equal(v, w))
                return 0;
        }
        return 1;
    }
    default:
        return 1; /* true, false, null */
    }
}

static uint64_t sc_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* A hash consistent with sc_equal: equal numbers hash through their double
 * value, object members combine order-independently. */
static uint64_t sc_hash(const json_t *j)
{
    uint64_t h = 14695981039346656037ull ^ (uint64_t)(json_is_number(j) ? 99 : json_typeof(j));
    switch (json_typeof(j)) {
    case JSON_INTEGER:
    case JSON_REAL: {
        double d = json_number_value(j);
        if (d == 0)
            d = 0; /* -0.0 */
        return sc_hash_bytes(h, &d, sizeof d);
    }
    case JSON_STRING:
        return sc_hash_bytes(h, json_string_value(j), json_string_length(j));
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(j); i++) {
            uint64_t e = sc_hash(json_array_get(j, i));
            h = sc_hash_bytes(h, &e, sizeof e);
        }
        return h;
    case JSON_OBJECT: {
        uint64_t sum = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v)
        {
            uint64_t e = sc_hash_bytes(14695981039346656037ull, k, strlen(k));
            e = sc_hash_bytes(e * 31, &(uint64_t){sc_hash(v)}, sizeof(uint64_t));
            sum += e;
        }
        return sc_hash_bytes(h, &sum, sizeof sum);
    }
    default:
        return h;
    }
}

/* Shortest decimal form of a number's magnitude. */
static void sc_to_dec(const json_t *j, sc_dec *out)
{
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        out->m = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
        out->e = 0;
    } else {
        double d = fabs(json_real_value(j));
        char buf[64];
        int p;
        for (p = 0; p < 17; p++) {
            snprintf(buf, sizeof buf, "%.*e", p, d);
            if (strtod(buf, NULL) == d)
                break;
        }
        snprintf(buf, sizeof buf, "%.*e", p, d);
        uint64_t m = 0;
        const char *s = buf;
        for (; *s && *s != 'e'; s++)
            if (*s >= '0' && *s <= '9')
                m = m * 10 + (uint64_t)(*s - '0');
        int ex = *s == 'e' ? (int)strtol(s + 1, NULL, 10) : 0; /* our own "%e": +-308 */
        out->m = m;
        out->e = ex - p;
    }
    while (out->m != 0 && out->m % 10 == 0) {
        out->m /= 10;
        out->e++;
    }
}

/* Is x an integer multiple of d (d > 0)? Decided exactly on the decimal forms. */
static int sc_is_multiple(const json_t *x, const json_t *d, const sc_dec *dd)
{
    if (json_is_integer(x) && json_is_integer(d))
        return json_integer_value(x) % json_integer_value(d) == 0;
    sc_dec xd;
    sc_to_dec(x, &xd);
    if (xd.m == 0)
        return 1;
    if (dd->m == 0)
        return 0;
    if (xd.e >= dd->e) {
        /* x = X * 10^(a-b) * 10^b: need X * 10^(a-b) = 0 mod M */
        unsigned __int128 r = xd.m % dd->m;
        for (int k = 0; k < xd.e - dd->e && r != 0; k++)
            r = (r * 10) % dd->m;
        return r == 0;
    }
    int diff = dd->e - xd.e;
    if (diff > 19)
        return 0;
    unsigned __int128 den = dd->m;
    for (int k = 0; k < diff; k++)
        den *= 10;
    return (unsigned __int128)xd.m % den == 0;
}

static size_t sc_utf8_len(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            c++;
    return c;
}

/* ------------------------------------------------------------- compiling */

typedef struct sc_cctx {
    ac_schema *s;
    char path[512]; /* schema location of the node being compiled */
    size_t plen;
    char *err;
    size_t errcap;
} sc_cctx;

static size_t sc_path_push(char *path, size_t cap, size_t len, const char *seg)
{
    if (len + 1 < cap)
        path[len++] = '/';
    for (const char *s = seg; *s && len + 3 < cap; s++) {
        if (*s == '~' || *s == '/') {
            path[len++] = '~';
            path[len++] = *s == '~' ? '0' : '1';
        } else {
            path[len++] = *s;
        }
    }
    path[len < cap ? len : cap - 1] = 0;
    return len;
}

static const char *sc_cpath(const sc_cctx *c)
{
    return c->plen ? c->path : "(root)";
}

static int sc_cfail(sc_cctx *c, const char *fmt, ...)
{
    char m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    ac_schema__msg(c->err, c->errcap, "%s at %s", m, sc_cpath(c));
    return -1;
}

static size_t sc_ptr_hash(const json_t *j, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)j;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x & (cap - 1));
}

static sc_node *sc_find(const ac_schema *s, const json_t *j)
{
    if (!s->mapcap)
        return NULL;
    for (size_t h = sc_ptr_hash(j, s->mapcap);; h = (h + 1) & (s->mapcap - 1)) {
        if (!s->map[h])
            return NULL;
        if (s->map[h]->json == j)
            return s->map[h];
    }
}

/* Adds nd to the node table and the lookup map. */
static int sc_register(ac_schema *s, sc_node *nd)
{
    if (ac_grow((void **)&s->nodes, &s->capnodes, s->nnodes + 1, sizeof *s->nodes))
        return -1;
    if ((s->nnodes + 1) * 2 > s->mapcap) {
        size_t nc = s->mapcap ? s->mapcap * 2 : 64;
        sc_node **nm = calloc(nc, sizeof *nm);
        if (!nm)
            return -1;
        for (size_t i = 0; i < s->mapcap; i++) {
            if (!s->map[i])
                continue;
            size_t h = sc_ptr_hash(s->map[i]->json, nc);
            while (nm[h])
                h = (h + 1) & (nc - 1);
            nm[h] = s->map[i];
        }
        free(s->map);
        s->map = nm;
        s->mapcap = nc;
    }
    s->nodes[s->nnodes++] = nd;
    size_t h = sc_ptr_hash(nd->json, s->mapcap);
    while (s->map[h])
        h = (h + 1) & (s->mapcap - 1);
    s->map[h] = nd;
    return 0;
}

static int sc_compile_node(sc_cctx *c, const json_t *j, int depth, sc_node **out);

/* Compiles the subschema at key `seg` (appended to the schema path). */
static int sc_compile_child(sc_cctx *c, const json_t *j, const char *seg, int depth, sc_node **out)
{
    size_t saved = c->plen;
    c->plen = sc_path_push(c->path, sizeof c->path, c->plen, seg);
    int rc = sc_compile_node(c, j, depth + 1, out);
    c->plen = saved;
    c->path[saved] = 0;
    return rc;
}

static int sc_compile_list(sc_cctx *c, const json_t *arr, const char *kw, int depth, sc_list *out,
                           int allow_empty)
{
    if (!json_is_array(arr) || (!allow_empty && json_array_size(arr) == 0))
        return sc_cfail(c, "%s must be a non-empty array of schemas", kw);
    size_t n = json_array_size(arr);
    out->v = calloc(n ? n : 1, sizeof *out->v);
    if (!out->v)
        return sc_cfail(c, "out of memory");
    out->n = n;
    size_t saved = c->plen;
    c->plen = sc_path_push(c->path, sizeof c->path, c->plen, kw);
    for (size_t i = 0; i < n; i++) {
        char idx[24];
        snprintf(idx, sizeof idx, "%zu", i);
        if (sc_compile_child(c, json_array_get(arr, i), idx, depth, &out->v[i]) < 0) {
            c->plen = saved;
            return -1;
        }
    }
    c->plen = saved;
    c->path[saved] = 0;
    return 0;
}

/* Compiles every member of a {name: schema} object such as $defs. */
static int sc_compile_map(sc_cctx *c, const json_t *obj, const char *kw, int depth, sc_prop **out,
                          size_t *nout)
{
    if (!json_is_object(obj))
        return sc_cfail(c, "%s must be an object of schemas", kw);
    size_t n = json_object_size(obj), i = 0;
    sc_prop *props = calloc(n ? n : 1, sizeof *props);
    if (!props)
        return sc_cfail(c, "out of memory");
    *out = props;
    *nout = 0;
    size_t saved = c->plen;
    c->plen = sc_path_push(c->path, sizeof c->path, c->plen, kw);
    const char *k;
    json_t *v;
    int rc = 0;
    json_object_foreach((json_t *)obj, k, v)
    {
        props[i].key = k;
        if (sc_compile_child(c, v, k, depth, &props[i].node) < 0) {
            rc = -1;
            break;
        }
        i++;
        *nout = i;
    }
    c->plen = saved;
    c->path[saved] = 0;
    return rc;
}

static int sc_number_kw(sc_cctx *c, const json_t *v, const char *kw, const json_t **out)
{
    if (!json_is_number(v))
        return sc_cfail(c, "%s must be a number", kw);
    *out = v;
    return 0;
}

static int sc_count_kw(sc_cctx *c, const json_t *v, const char *kw, long long *out)
{
    if (sc_get_count(v, out) < 0)
        return sc_cfail(c, "%s must be a non-negative integer", kw);
    return 0;
}

static int sc_type_bit(const char *name, unsigned *bit)
{
    for (int t = 0; t < SC_NTYPES; t++)
        if (strcmp(name, sc_type_names[t]) == 0) {
            *bit = 1u << t;
            return 0;
        }
    return -1;
}

/* Resolves a local "$ref" (a URI fragment holding a JSON pointer) within the
 * document. Returns the target or NULL with a message. */
static const json_t *sc_resolve(sc_cctx *c, const char *ref)
{
    if (ref[0] != '#') {
        sc_cfail(c, "unsupported $ref '%s' (only local references '#/...' are supported)", ref);
        return NULL;
    }
    const json_t *cur = c->s->doc;
    const char *p = ref + 1;
    if (*p == 0)
        return cur;
    if (*p != '/') {
        sc_cfail(c, "unsupported $ref '%s' (anchors are not supported, use '#/...')", ref);
        return NULL;
    }
    char seg[256];
    while (*p == '/') {
        p++;
        size_t n = 0;
        while (*p && *p != '/') {
            int ch = (unsigned char)*p;
            if (ch == '%') {
                int h1 = ac_schema__hexval((unsigned char)p[1]);
                int h2 = h1 >= 0 ? ac_schema__hexval((unsigned char)p[2]) : -1;
                if (h2 < 0) {
                    sc_cfail(c, "bad percent-escape in $ref '%s'", ref);
                    return NULL;
                }
                ch = h1 * 16 + h2;
                p += 3;
            } else if (ch == '~') {
                if (p[1] != '0' && p[1] != '1') {
                    sc_cfail(c, "bad '~' escape in $ref '%s'", ref);
                    return NULL;
                }
                ch = p[1] == '0' ? '~' : '/';
                p += 2;
            } else {
                p++;
            }
            if (n + 1 >= sizeof seg) {
                sc_cfail(c, "$ref '%s' is too long", ref);
                return NULL;
            }
            seg[n++] = (char)ch;
        }
        seg[n] = 0;
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur)) {
            char *end;
            unsigned long long idx = strtoull(seg, &end, 10);
            if (n == 0 || *end || (seg[0] == '0' && n > 1) || seg[0] == '-')
                cur = NULL;
            else
                cur = json_array_get(cur, (size_t)idx);
        } else {
            cur = NULL;
        }
        if (!cur) {
            sc_cfail(c, "unresolvable $ref '%s'", ref);
            return NULL;
        }
    }
    return cur;
}

/* Keywords whose value is one schema, a count, a number or a list of schemas,
 * and the node field each fills. */
typedef struct sc_kw_field {
    const char *kw;
    size_t off;
} sc_kw_field;

static const sc_kw_field sc_child_kws[] = {
    {"additionalProperties", offsetof(sc_node, additional_props)},
    {"propertyNames", offsetof(sc_node, property_names)},
    {"contains", offsetof(sc_node, contains)},
    {"not", offsetof(sc_node, not_schema)},
    {"if", offsetof(sc_node, if_schema)},
    {"then", offsetof(sc_node, then_schema)},
    {"else", offsetof(sc_node, else_schema)},
};
static const sc_kw_field sc_count_kws[] = {
    {"minProperties", offsetof(sc_node, min_props)},
    {"maxProperties", offsetof(sc_node, max_props)},
    {"minItems", offsetof(sc_node, min_items)},
    {"maxItems", offsetof(sc_node, max_items)},
    {"minLength", offsetof(sc_node, min_len)},
    {"maxLength", offsetof(sc_node, max_len)},
};
static const sc_kw_field sc_number_kws[] = {
    {"minimum", offsetof(sc_node, minimum)},
    {"maximum", offsetof(sc_node, maximum)},
};
static const sc_kw_field sc_list_kws[] = {
    {"allOf", offsetof(sc_node, all_of)},
    {"anyOf", offsetof(sc_node, any_of)},
    {"oneOf", offsetof(sc_node, one_of)},
};

/* The field of keyword k in a table, or NULL. */
static void *sc_kw_slot(sc_node *nd, const sc_kw_field *t, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, t[i].kw))
            return (char *)nd + t[i].off;
    return NULL;
}

#define SC_SLOT(nd, table, k) sc_kw_slot(nd, table, sizeof table / sizeof table[0], k)

/* What an object's keywords leave for after all are read: the forms of
 * items, and the draft-4 boolean exclusive bounds. */
typedef struct sc_later {
    const json_t *items, *prefix_items, *add_items;
    int xmin_bool, xmax_bool; /* 1 true, -1 false, 0 absent */
} sc_later;

/* The keywords of the table kinds. 1 when k is one, 0 when not, -1 on error. */
static int sc_compile_table_kw(sc_cctx *c, sc_node *nd, const char *k, const json_t *v, int depth)
{
    void *slot;
    if ((slot = SC_SLOT(nd, sc_child_kws, k)))
        return sc_compile_child(c, v, k, depth, slot) < 0 ? -1 : 1;
    if ((slot = SC_SLOT(nd, sc_count_kws, k)))
        return sc_count_kw(c, v, k, slot) < 0 ? -1 : 1;
    if ((slot = SC_SLOT(nd, sc_number_kws, k)))
        return sc_number_kw(c, v, k, slot) < 0 ? -1 : 1;
    if ((slot = SC_SLOT(nd, sc_list_kws, k)))
        return sc_compile_list(c, v, k, depth, slot, 0) < 0 ? -1 : 1;
    return 0;
}

/* type: a name or a non-empty array of names. */
static int sc_compile_type(sc_cctx *c, sc_node *nd, const json_t *v)
{
    unsigned bit;
    if (json_is_string(v)) {
        if (sc_type_bit(json_string_value(v), &bit) < 0)
            return sc_cfail(c, "unknown type \"%s\"", json_string_value(v));
        nd->types = bit;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return sc_cfail(c, "type must be a string or a non-empty array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *t = json_array_get(v, i);
        if (!json_is_string(t) || sc_type_bit(json_string_value(t), &bit) < 0)
            return sc_cfail(c, "type must name JSON types");
        nd->types |= bit;
    }
    return 0;
}

static int sc_compile_pattern_props(sc_cctx *c, sc_node *nd, const char *k, const json_t *v,
                                    int depth)
{
    if (!json_is_object(v))
        return sc_cfail(c, "patternProperties must be an object of schemas");
    nd->pprops = calloc(json_object_size(v) + 1, sizeof *nd->pprops);
    if (!nd->pprops)
        return sc_cfail(c, "out of memory");
    size_t saved = c->plen;
    c->plen = sc_path_push(c->path, sizeof c->path, c->plen, k);
    const char *pk;
    json_t *pv;
    json_object_foreach((json_t *)v, pk, pv)
    {
        sc_patprop *pp = &nd->pprops[nd->npprops];
        char why[160];
        if (ac_schema__regex_compile(&pp->rx, pk, strlen(pk), why, sizeof why) < 0) {
            sc_cfail(c, "bad pattern \"%s\": %s", pk, why);
            c->plen = saved;
            return -1;
        }
        nd->npprops++;
        if (sc_compile_child(c, pv, pk, depth, &pp->node) < 0) {
            c->plen = saved;
            return -1;
        }
    }
    c->plen = saved;
    c->path[saved] = 0;
    return 0;
}

static int sc_compile_required(sc_cctx *c, sc_node *nd, const json_t *v)
{
    if (!json_is_array(v))
        return sc_cfail(c, "required must be an array of strings");
    nd->required = calloc(json_array_size(v) + 1, sizeof *nd->required);
    if (!nd->required)
        return sc_cfail(c, "out of memory");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *r = json_array_get(v, i);
        if (!json_is_string(r))
            return sc_cfail(c, "required must be an array of strings");
        nd->required[nd->nrequired++] = json_string_value(r);
    }
    return 0;
}

/* $ref: resolved now, its node compiled once every node exists (pending). */
static int sc_compile_ref(sc_cctx *c, sc_node *nd, const json_t *v)
{
    if (!json_is_string(v))
        return sc_cfail(c, "$ref must be a string");
    nd->ref_str = json_string_value(v);
    nd->ref_target = sc_resolve(c, nd->ref_str);
    if (!nd->ref_target)
        return -1;
    if (!json_is_object(nd->ref_target) && !json_is_boolean(nd->ref_target))
        return sc_cfail(c, "$ref '%s' does not point to a schema", nd->ref_str);
    ac_schema *s = c->s;
    if (ac_grow((void **)&s->pending, &s->cappending, s->npending + 1, sizeof *s->pending))
        return sc_cfail(c, "out of memory");
    s->pending[s->npending++] = nd;
    nd->ref_only = s->legacy_ref;
    return 0;
}

static int sc_is_annotation(const char *k)
{
    static const char *const names[] = {"$schema",   "title",     "description", "default",
                                        "examples",  "$comment",  "format",      "readOnly",
                                        "writeOnly", "deprecated"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(k, names[i]))
            return 1;
    return 0;
}

/* The keywords with a value of their own shape. 0, or -1 on error (an
 * unsupported keyword among them). */
static int sc_compile_special_kw(sc_cctx *c, sc_node *nd, const char *k, const json_t *v, int depth,
                                 sc_later *l)
{
    char why[160];
    if (!strcmp(k, "type"))
        return sc_compile_type(c, nd, v);
    if (!strcmp(k, "properties"))
        return sc_compile_map(c, v, k, depth, &nd->props, &nd->nprops);
    if (!strcmp(k, "patternProperties"))
        return sc_compile_pattern_props(c, nd, k, v, depth);
    if (!strcmp(k, "required"))
        return sc_compile_required(c, nd, v);
    if (!strcmp(k, "enum")) {
        if (!json_is_array(v))
            return sc_cfail(c, "enum must be an array");
        nd->enum_values = v;
    } else if (!strcmp(k, "const")) {
        nd->const_value = v;
    } else if (!strcmp(k, "items")) {
        l->items = v;
    } else if (!strcmp(k, "prefixItems")) {
        l->prefix_items = v;
    } else if (!strcmp(k, "additionalItems")) {
        l->add_items = v;
    } else if (!strcmp(k, "uniqueItems")) {
        if (!json_is_boolean(v))
            return sc_cfail(c, "uniqueItems must be a boolean");
        nd->unique = json_is_true(v);
    } else if (!strcmp(k, "exclusiveMinimum") || !strcmp(k, "exclusiveMaximum")) {
        int min = !strcmp(k, "exclusiveMinimum");
        if (json_is_boolean(v))
            *(min ? &l->xmin_bool : &l->xmax_bool) = json_is_true(v) ? 1 : -1;
        else
            return sc_number_kw(c, v, k, min ? &nd->xminimum : &nd->xmaximum);
    } else if (!strcmp(k, "multipleOf")) {
        if (!json_is_number(v) || json_number_value(v) <= 0)
            return sc_cfail(c, "multipleOf must be a number greater than 0");
        nd->multiple_of = v;
        sc_to_dec(v, &nd->multiple_dec);
    } else if (!strcmp(k, "pattern")) {
        if (!json_is_string(v))
            return sc_cfail(c, "pattern must be a string");
        if (ac_schema__regex_compile(&nd->pattern, json_string_value(v), json_string_length(v), why,
                                     sizeof why) < 0)
            return sc_cfail(c, "unsupported or invalid pattern \"%s\": %s", json_string_value(v),
                            why);
    } else if (!strcmp(k, "$ref")) {
        return sc_compile_ref(c, nd, v);
    } else if (!strcmp(k, "$defs") || !strcmp(k, "definitions")) {
        sc_prop *defs = NULL;
        size_t ndefs = 0;
        int rc = sc_compile_map(c, v, k, depth, &defs, &ndefs);
        free(defs); /* the nodes live in the node table; $ref finds them */
        return rc < 0 ? -1 : 0;
    } else if (!strcmp(k, "$id")) {
        if (depth != 0)
            return sc_cfail(c, "unsupported keyword '$id' (allowed on the root only)");
    } else if (!sc_is_annotation(k)) {
        return sc_cfail(c, "unsupported keyword '%s'", k);
    }
    return 0;
}

/* Draft 4's boolean exclusiveMinimum/Maximum turn their minimum/maximum exclusive. */
static int sc_finish_bounds(sc_cctx *c, sc_node *nd, const sc_later *l)
{
    if (l->xmin_bool) {
        if (!nd->minimum)
            return sc_cfail(c, "boolean exclusiveMinimum needs minimum");
        if (l->xmin_bool > 0) {
            nd->xminimum = nd->minimum;
            nd->minimum = NULL;
        }
    }
    if (l->xmax_bool) {
        if (!nd->maximum)
            return sc_cfail(c, "boolean exclusiveMaximum needs maximum");
        if (l->xmax_bool > 0) {
            nd->xmaximum = nd->maximum;
            nd->maximum = NULL;
        }
    }
    return 0;
}

/* items forms: prefixItems + items(rest); items[] + additionalItems(rest);
 * items alone applies to every element. */
static int sc_finish_items(sc_cctx *c, sc_node *nd, const sc_later *l, int depth)
{
    const json_t *items = l->items, *add_items = l->add_items;
    if (l->prefix_items && items && json_is_array(items))
        return sc_cfail(c, "items must be a schema when prefixItems is present");
    sc_node *ignored = NULL;
    if (l->prefix_items) {
        if (sc_compile_list(c, l->prefix_items, "prefixItems", depth, &nd->prefix, 0) < 0)
            return -1;
        if (items && sc_compile_child(c, items, "items", depth, &nd->rest_items) < 0)
            return -1;
        if (add_items && sc_compile_child(c, add_items, "additionalItems", depth,
                                          items ? &ignored : &nd->rest_items) < 0)
            return -1;
    } else if (items && json_is_array(items)) {
        if (sc_compile_list(c, items, "items", depth, &nd->prefix, 1) < 0)
            return -1;
        if (add_items &&
            sc_compile_child(c, add_items, "additionalItems", depth, &nd->rest_items) < 0)
            return -1;
    } else {
        if (items && sc_compile_child(c, items, "items", depth, &nd->all_items) < 0)
            return -1;
        /* additionalItems without an items array has no effect, but it must
         * still be a valid schema */
        if (add_items && sc_compile_child(c, add_items, "additionalItems", depth, &ignored) < 0)
            return -1;
    }
    return 0;
}

static int sc_compile_object(sc_cctx *c, sc_node *nd, const json_t *j, int depth)
{
    const char *k;
    json_t *v;
    sc_later l;
    memset(&l, 0, sizeof l);
    json_object_foreach((json_t *)j, k, v)
    {
        int r = sc_compile_table_kw(c, nd, k, v, depth);
        if (r == 0)
            r = sc_compile_special_kw(c, nd, k, v, depth, &l);
        if (r < 0)
            return -1;
    }
    if (sc_finish_bounds(c, nd, &l) < 0)
        return -1;
    return sc_finish_items(c, nd, &l, depth);
}

static int sc_compile_node(sc_cctx *c, const json_t *j, int depth, sc_node **out)
{
    *out = NULL;
    if (depth > AC_SCHEMA_MAX_DEPTH)
        return sc_cfail(c, "schema nested too deeply (limit %d)", AC_SCHEMA_MAX_DEPTH);
    if (!json_is_object(j) && !json_is_boolean(j))
        return sc_cfail(c, "a schema must be an object or a boolean, got %s", sc_json_type_name(j));
    sc_node *existing = sc_find(c->s, j);
    if (existing) {
        *out = existing;
        return 0;
    }
    sc_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return sc_cfail(c, "out of memory");
    nd->json = j;
    if (sc_register(c->s, nd) < 0) {
        free(nd);
        return sc_cfail(c, "out of memory");
    }
    nd->min_props = nd->max_props = nd->min_items = nd->max_items = -1;
    nd->min_len = nd->max_len = -1;
    *out = nd;
    if (json_is_boolean(j)) {
        nd->is_bool = 1;
        nd->bool_value = json_is_true(j);
        return 0;
    }
    return sc_compile_object(c, nd, j, depth);
}

static void sc_node_free(sc_node *nd)
{
    if (!nd)
        return;
    free(nd->props);
    for (size_t i = 0; i < nd->npprops; i++)
        ac_schema__regex_free(&nd->pprops[i].rx);
    free(nd->pprops);
    free(nd->required);
    free(nd->prefix.v);
    ac_schema__regex_free(&nd->pattern);
    free(nd->all_of.v);
    free(nd->any_of.v);
    free(nd->one_of.v);
    free(nd);
}

void ac_schema_free(ac_schema *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nnodes; i++)
        sc_node_free(s->nodes[i]);
    free(s->nodes);
    free(s->map);
    free(s->pending);
    json_decref(s->doc);
    free(s);
}

ac_schema *ac_schema_compile(const json_t *schema, char *err, size_t errcap)
{
    sc_cctx c = {0};
    c.err = err;
    c.errcap = errcap;
    if (!schema) {
        ac_schema__msg(err, errcap, "no schema given");
        return NULL;
    }
    ac_schema *s = calloc(1, sizeof *s);
    if (!s) {
        ac_schema__msg(err, errcap, "out of memory");
        return NULL;
    }
    c.s = s;
    s->doc = json_deep_copy(schema);
    if (!s->doc) {
        ac_schema__msg(err, errcap, "out of memory");
        goto fail;
    }
    const char *dialect = json_string_value(json_object_get(s->doc, "$schema"));
    if (dialect &&
        (strstr(dialect, "draft-04") || strstr(dialect, "draft-06") || strstr(dialect, "draft-07")))
        s->legacy_ref = 1;
    if (sc_compile_node(&c, s->doc, 0, &s->root) < 0)
        goto fail;
    /* Link $refs; a target not yet compiled is compiled now, and may add
     * further pending refs. */
    for (size_t i = 0; i < s->npending; i++) {
        sc_node *nd = s->pending[i];
        sc_node *target = sc_find(s, nd->ref_target);
        if (!target) {
            c.plen = 0;
            c.path[0] = 0;
            const char *ref = nd->ref_str;
            if (ref[1] == '/') {
                size_t n = strlen(ref + 1);
                if (n >= sizeof c.path)
                    n = sizeof c.path - 1;
                memcpy(c.path, ref + 1, n);
                c.path[n] = 0;
                c.plen = n;
            }
            if (sc_compile_node(&c, nd->ref_target, 0, &target) < 0)
                goto fail;
        }
        nd->ref = target;
    }
    return s;
fail:
    ac_schema_free(s);
    return NULL;
}

/* ------------------------------------------------------------- validation */

typedef struct sc_seg {
    const char *key; /* NULL: array index */
    size_t index;
} sc_seg;

typedef struct sc_vctx {
    sc_seg segs[AC_SCHEMA_MAX_DEPTH + 2];
    int nsegs;
    int depth;
    long steps; /* schema nodes visited, bounded by AC_SCHEMA_MAX_STEPS */
} sc_vctx;

/* Writes the instance location as a JSON pointer; a very long one keeps its
 * start and end around "...". */
static void sc_vpath(const sc_vctx *v, char *buf, size_t cap)
{
    char full[2048];
    size_t len = 0;
    full[0] = 0;
    if (v->nsegs == 0) {
        snprintf(buf, cap, "(root)");
        return;
    }
    for (int i = 0; i < v->nsegs && len + 1 < sizeof full; i++) {
        if (v->segs[i].key) {
            len = sc_path_push(full, sizeof full, len, v->segs[i].key);
        } else {
            int w = snprintf(full + len, sizeof full - len, "/%zu", v->segs[i].index);
            if (w < 0 || (size_t)w >= sizeof full - len) {
                len = sizeof full - 1;
                break;
            }
            len += (size_t)w;
        }
    }
    if (len >= sizeof full)
        len = sizeof full - 1;
    full[len] = 0;
    if (len + 1 <= cap) {
        memcpy(buf, full, len + 1);
        return;
    }
    size_t head = cap / 3, tail = cap - head - 4;
    snprintf(buf, cap, "%.*s...%s", (int)head, full, full + len - tail + 1);
}

/* Records a failure: "<instance path>: <message>". err may be NULL when the
 * caller only needs the verdict. Always returns 0 (invalid). */
static int sc_vfail(const sc_vctx *v, char *err, size_t errcap, const char *fmt, ...)
{
    if (!err || errcap == 0)
        return 0;
    char path[200], m[512];
    sc_vpath(v, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    snprintf(err, errcap, "%s: %s", path, m);
    return 0;
}

static void sc_types_str(unsigned types, char *buf, size_t cap)
{
    size_t len = 0;
    int count = 0, total = 0;
    buf[0] = 0;
    for (int t = 0; t < SC_NTYPES; t++)
        total += (types >> t) & 1;
    for (int t = 0; t < SC_NTYPES; t++) {
        if (!(types & (1u << t)))
            continue;
        count++;
        const char *sep = count == 1 ? "" : (count == total ? " or " : ", ");
        int w = snprintf(buf + len, cap - len, "%s%s", sep, sc_type_names[t]);
        if (w < 0 || (size_t)w >= cap - len)
            return;
        len += (size_t)w;
    }
}

/* A short JSON rendering of a value for messages. */
static void sc_dump(const json_t *j, char *buf, size_t cap)
{
    char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(buf, cap, "?");
        return;
    }
    if (strlen(s) >= cap && cap > 4)
        snprintf(buf, cap, "%.*s...", (int)(cap - 4), s);
    else
        snprintf(buf, cap, "%s", s);
    free(s);
}

static int sc_validate(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err, size_t errcap);

static int sc_validate_at(const sc_node *nd, const json_t *inst, sc_vctx *v, const char *key,
                          size_t index, char *err, size_t errcap)
{
    v->segs[v->nsegs].key = key;
    v->segs[v->nsegs].index = index;
    v->nsegs++;
    int ok = sc_validate(nd, inst, v, err, errcap);
    v->nsegs--;
    return ok;
}

typedef struct sc_hashed {
    uint64_t h;
    size_t i;
} sc_hashed;

static int sc_hashed_cmp(const void *pa, const void *pb)
{
    const sc_hashed *a = pa, *b = pb;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return a->i < b->i ? -1 : (a->i > b->i);
}

/* uniqueItems in O(n log n): sort by a hash consistent with sc_equal, then
 * compare only items with equal hashes. Returns 1 if unique, else 0 and the
 * first duplicate pair found. */
static int sc_unique(const json_t *arr, size_t *dup_a, size_t *dup_b)
{
    size_t n = json_array_size(arr);
    if (n < 2)
        return 1;
    sc_hashed *t = malloc(n * sizeof *t);
    if (!t) {
        for (size_t i = 0; i < n; i++)
            for (size_t k = i + 1; k < n; k++)
                if (sc_equal(json_array_get(arr, i), json_array_get(arr, k))) {
                    *dup_a = i;
                    *dup_b = k;
                    return 0;
                }
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        t[i].h = sc_hash(json_array_get(arr, i));
        t[i].i = i;
    }
    qsort(t, n, sizeof *t, sc_hashed_cmp);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        for (size_t k = i + 1; k < n && t[k].h == t[i].h; k++) {
            if (sc_equal(json_array_get(arr, t[i].i), json_array_get(arr, t[k].i))) {
                *dup_a = t[i].i;
                *dup_b = t[k].i;
                ok = 0;
                break;
            }
        }
    }
    free(t);
    return ok;
}

static int sc_validate_object(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                              size_t errcap)
{
    for (size_t i = 0; i < nd->nrequired; i++)
        if (!json_object_get(inst, nd->required[i]))
            return sc_vfail(v, err, errcap, "missing required property \"%s\"", nd->required[i]);
    size_t size = json_object_size(inst);
    if (nd->min_props >= 0 && size < (unsigned long long)nd->min_props)
        return sc_vfail(v, err, errcap, "object has %zu properties, fewer than minProperties %lld",
                        size, nd->min_props);
    if (nd->max_props >= 0 && size > (unsigned long long)nd->max_props)
        return sc_vfail(v, err, errcap, "object has %zu properties, more than maxProperties %lld",
                        size, nd->max_props);
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)inst, k, val)
    {
        int matched = 0;
        if (nd->property_names) {
            json_t *ks = json_string(k);
            if (!ks)
                return sc_vfail(v, err, errcap, "out of memory");
            char sub[384];
            int ok = sc_validate(nd->property_names, ks, v, err ? sub : NULL, sizeof sub);
            json_decref(ks);
            if (!ok)
                return sc_vfail(v, err, errcap, "property name \"%s\" is not allowed: %s", k, sub);
        }
        for (size_t i = 0; i < nd->nprops; i++) {
            if (strcmp(nd->props[i].key, k) == 0) {
                matched = 1;
                if (!sc_validate_at(nd->props[i].node, val, v, k, 0, err, errcap))
                    return 0;
                break;
            }
        }
        for (size_t i = 0; i < nd->npprops; i++) {
            char why[192];
            int m = ac_schema__regex_match(&nd->pprops[i].rx, k, strlen(k), why, sizeof why);
            if (m < 0)
                return sc_vfail(v, err, errcap, "property name \"%s\" against pattern \"%s\": %s",
                                k, nd->pprops[i].rx.src, why);
            if (m) {
                matched = 1;
                if (!sc_validate_at(nd->pprops[i].node, val, v, k, 0, err, errcap))
                    return 0;
            }
        }
        if (!matched && nd->additional_props) {
            if (nd->additional_props->is_bool && !nd->additional_props->bool_value)
                return sc_vfail(v, err, errcap, "unexpected property \"%s\"", k);
            if (!sc_validate_at(nd->additional_props, val, v, k, 0, err, errcap))
                return 0;
        }
    }
    return 1;
}

static int sc_validate_array(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                             size_t errcap)
{
    size_t n = json_array_size(inst);
    if (nd->min_items >= 0 && n < (unsigned long long)nd->min_items)
        return sc_vfail(v, err, errcap, "array has %zu items, fewer than minItems %lld", n,
                        nd->min_items);
    if (nd->max_items >= 0 && n > (unsigned long long)nd->max_items)
        return sc_vfail(v, err, errcap, "array has %zu items, more than maxItems %lld", n,
                        nd->max_items);
    for (size_t i = 0; i < n; i++) {
        const sc_node *sub = nd->all_items;
        if (nd->prefix.v)
            sub = i < nd->prefix.n ? nd->prefix.v[i] : nd->rest_items;
        if (!sub)
            continue;
        if (sub->is_bool && !sub->bool_value && (!nd->prefix.v || i >= nd->prefix.n))
            return sc_vfail(v, err, errcap, "array has too many items (at most %zu allowed)",
                            nd->prefix.v ? nd->prefix.n : 0);
        if (!sc_validate_at(sub, json_array_get(inst, i), v, NULL, i, err, errcap))
            return 0;
    }
    if (nd->contains) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = sc_validate_at(nd->contains, json_array_get(inst, i), v, NULL, i, NULL, 0);
        if (!found)
            return sc_vfail(v, err, errcap, "array contains no item matching \"contains\"");
    }
    if (nd->unique) {
        size_t a = 0, b = 0;
        if (!sc_unique(inst, &a, &b))
            return sc_vfail(v, err, errcap, "items %zu and %zu are equal but must be unique", a, b);
    }
    return 1;
}

static int sc_validate_number(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                              size_t errcap)
{
    char a[64], b[64];
    if (nd->minimum && sc_num_cmp(inst, nd->minimum) < 0)
        return sc_dump(inst, a, sizeof a), sc_dump(nd->minimum, b, sizeof b),
               sc_vfail(v, err, errcap, "%s is less than minimum %s", a, b);
    if (nd->maximum && sc_num_cmp(inst, nd->maximum) > 0)
        return sc_dump(inst, a, sizeof a), sc_dump(nd->maximum, b, sizeof b),
               sc_vfail(v, err, errcap, "%s is greater than maximum %s", a, b);
    if (nd->xminimum && sc_num_cmp(inst, nd->xminimum) <= 0)
        return sc_dump(inst, a, sizeof a), sc_dump(nd->xminimum, b, sizeof b),
               sc_vfail(v, err, errcap, "%s must be greater than %s", a, b);
    if (nd->xmaximum && sc_num_cmp(inst, nd->xmaximum) >= 0)
        return sc_dump(inst, a, sizeof a), sc_dump(nd->xmaximum, b, sizeof b),
               sc_vfail(v, err, errcap, "%s must be less than %s", a, b);
    if (nd->multiple_of && !sc_is_multiple(inst, nd->multiple_of, &nd->multiple_dec))
        return sc_dump(inst, a, sizeof a), sc_dump(nd->multiple_of, b, sizeof b),
               sc_vfail(v, err, errcap, "%s is not a multiple of %s", a, b);
    return 1;
}

static int sc_validate_string(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                              size_t errcap)
{
    if (nd->min_len >= 0 || nd->max_len >= 0) {
        size_t len = sc_utf8_len(json_string_value(inst), json_string_length(inst));
        if (nd->min_len >= 0 && len < (unsigned long long)nd->min_len)
            return sc_vfail(v, err, errcap, "string has %zu characters, fewer than minLength %lld",
                            len, nd->min_len);
        if (nd->max_len >= 0 && len > (unsigned long long)nd->max_len)
            return sc_vfail(v, err, errcap, "string has %zu characters, more than maxLength %lld",
                            len, nd->max_len);
    }
    if (nd->pattern.compiled) {
        char why[192];
        int m = ac_schema__regex_match(&nd->pattern, json_string_value(inst),
                                       json_string_length(inst), why, sizeof why);
        if (m < 0)
            return sc_vfail(v, err, errcap, "pattern \"%s\" not checked: %s", nd->pattern.src, why);
        if (!m)
            return sc_vfail(v, err, errcap, "string does not match pattern \"%s\"",
                            nd->pattern.src);
    }
    return 1;
}

/* anyOf / oneOf: collects the first branch messages into one. */
static int sc_validate_alternatives(const sc_list *l, int one, const json_t *inst, sc_vctx *v,
                                    char *err, size_t errcap)
{
    char why[600] = "";
    size_t wlen = 0;
    size_t matches = 0, first = 0, second = 0;
    for (size_t i = 0; i < l->n; i++) {
        char sub[256];
        if (sc_validate(l->v[i], inst, v, err ? sub : NULL, sizeof sub)) {
            if (matches == 0)
                first = i;
            else if (matches == 1)
                second = i;
            matches++;
            if (!one)
                return 1;
            if (matches > 1)
                break;
        } else if (err && wlen + 1 < sizeof why) {
            int w = snprintf(why + wlen, sizeof why - wlen, "%s[%zu] %s", wlen ? "; " : "", i, sub);
            wlen = w < 0 ? sizeof why : wlen + (size_t)w;
            if (wlen >= sizeof why)
                wlen = sizeof why - 1;
        }
    }
    const char *kw = one ? "oneOf" : "anyOf";
    if (matches == 0)
        return sc_vfail(v, err, errcap, "value matches none of the %zu schemas in %s: %s", l->n, kw,
                        why);
    if (one && matches > 1)
        return sc_vfail(v, err, errcap,
                        "value matches more than one schema in oneOf (%zu and %zu); it must "
                        "match exactly one",
                        first, second);
    return 1;
}

/* type: the instance's JSON type is one the node allows. */
static int sc_validate_type(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                            size_t errcap)
{
    unsigned have = 0;
    switch (json_typeof(inst)) {
    case JSON_NULL:
        have = SC_T_NULL;
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        have = SC_T_BOOLEAN;
        break;
    case JSON_OBJECT:
        have = SC_T_OBJECT;
        break;
    case JSON_ARRAY:
        have = SC_T_ARRAY;
        break;
    case JSON_STRING:
        have = SC_T_STRING;
        break;
    case JSON_INTEGER:
        have = SC_T_NUMBER | SC_T_INTEGER;
        break;
    case JSON_REAL:
        have = SC_T_NUMBER | (sc_is_integral(inst) ? SC_T_INTEGER : 0);
        break;
    }
    if (have & nd->types)
        return 1;
    char want[96];
    sc_types_str(nd->types, want, sizeof want);
    return sc_vfail(v, err, errcap, "expected %s, got %s", want, sc_json_type_name(inst));
}

/* enum and const. */
static int sc_validate_values(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                              size_t errcap)
{
    if (nd->enum_values) {
        size_t i, n = json_array_size(nd->enum_values);
        for (i = 0; i < n; i++)
            if (sc_equal(inst, json_array_get(nd->enum_values, i)))
                break;
        if (i == n) {
            char allowed[256];
            sc_dump(nd->enum_values, allowed, sizeof allowed);
            return sc_vfail(v, err, errcap, "value is not one of the allowed values %s", allowed);
        }
    }
    if (nd->const_value && !sc_equal(inst, nd->const_value)) {
        char want[200];
        sc_dump(nd->const_value, want, sizeof want);
        return sc_vfail(v, err, errcap, "value must be %s", want);
    }
    return 1;
}

/* allOf, anyOf, oneOf, not, if/then/else. */
static int sc_validate_logic(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                             size_t errcap)
{
    for (size_t i = 0; i < nd->all_of.n; i++)
        if (!sc_validate(nd->all_of.v[i], inst, v, err, errcap))
            return 0;
    if (nd->any_of.n && !sc_validate_alternatives(&nd->any_of, 0, inst, v, err, errcap))
        return 0;
    if (nd->one_of.n && !sc_validate_alternatives(&nd->one_of, 1, inst, v, err, errcap))
        return 0;
    if (nd->not_schema && sc_validate(nd->not_schema, inst, v, NULL, 0)) {
        char bad[128];
        sc_dump(nd->not_schema->json, bad, sizeof bad);
        return sc_vfail(v, err, errcap, "value must not match the schema %s", bad);
    }
    if (!nd->if_schema)
        return 1;
    const sc_node *branch =
        sc_validate(nd->if_schema, inst, v, NULL, 0) ? nd->then_schema : nd->else_schema;
    return !branch || sc_validate(branch, inst, v, err, errcap);
}

/* The checks of one node, by the instance's kind. */
static int sc_validate_node(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err,
                            size_t errcap)
{
    if (nd->ref) {
        if (!sc_validate(nd->ref, inst, v, err, errcap))
            return 0;
        if (nd->ref_only)
            return 1;
    }
    if ((nd->types && !sc_validate_type(nd, inst, v, err, errcap)) ||
        !sc_validate_values(nd, inst, v, err, errcap))
        return 0;
    if (json_is_object(inst) && !sc_validate_object(nd, inst, v, err, errcap))
        return 0;
    if (json_is_array(inst) && !sc_validate_array(nd, inst, v, err, errcap))
        return 0;
    if (json_is_number(inst) && !sc_validate_number(nd, inst, v, err, errcap))
        return 0;
    if (json_is_string(inst) && !sc_validate_string(nd, inst, v, err, errcap))
        return 0;
    return sc_validate_logic(nd, inst, v, err, errcap);
}

static int sc_validate(const sc_node *nd, const json_t *inst, sc_vctx *v, char *err, size_t errcap)
{
    if (nd->is_bool)
        return nd->bool_value ? 1 : sc_vfail(v, err, errcap, "no value is allowed here");
    if (v->depth >= AC_SCHEMA_MAX_DEPTH || v->nsegs > AC_SCHEMA_MAX_DEPTH)
        return sc_vfail(v, err, errcap, "too deeply nested (limit %d)", AC_SCHEMA_MAX_DEPTH);
    if (++v->steps > AC_SCHEMA_MAX_STEPS)
        return sc_vfail(v, err, errcap,
                        "too costly to validate (more than %ld schema checks); simplify the "
                        "arguments",
                        AC_SCHEMA_MAX_STEPS);
    v->depth++;
    int ok = sc_validate_node(nd, inst, v, err, errcap);
    v->depth--;
    return ok;
}

int ac_schema_validate(const ac_schema *schema, const json_t *instance, char *err, size_t errcap)
{
    if (err && errcap)
        err[0] = 0;
    if (!schema || !instance) {
        ac_schema__msg(err, errcap, "no schema or no instance");
        return 0;
    }
    sc_vctx *v = calloc(1, sizeof *v);
    if (!v) {
        ac_schema__msg(err, errcap, "out of memory");
        return 0;
    }
    int ok = sc_validate(schema->root, instance, v, err, errcap);
    if (v->steps > AC_SCHEMA_MAX_STEPS) { /* whatever "not" or "if" made of it */
        ac_schema__msg(err, errcap, "(root): too costly to validate (more than %ld schema checks)",
                       AC_SCHEMA_MAX_STEPS);
        ok = 0;
    }
    free(v);
    return ok;
}
