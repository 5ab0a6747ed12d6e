/* Static checks of toolkits (`agentc check --tools`, `agentc diagram --tools`):
 * references between declarations, the reachability proof and the state
 * diagram.
 *
 * The proof explores, per toolkit, every combination of states and present
 * context keys reachable from the initial ones, assuming any available tool
 * may succeed: a successful call turns its disables_states off, then its
 * enables_states on, and a tool with "updates_context" may add any context
 * key the context_schema allows (its "properties" when additionalProperties
 * is false; any key otherwise). Context keys are never removed (updates are
 * merged). A tool that is available in no explored combination can never be
 * offered. The exploration is exact over states and present keys; it stops
 * at AC_TK_MAX_NODES combinations and says so. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctxfilter.h"
#include "tools/toolfile.h"
#include "util/buf.h"

#define AC_TK_MAX_NODES (1u << 20)
#define MAXBITS 64

static void report(ac_toolfile_report_fn fn, void *ud, const char *fmt, ...)
{
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (fn)
        fn(ud, m);
}

static int in_list(char *const *v, const char *s)
{
    for (; v && *v; v++)
        if (!strcmp(*v, s))
            return 1;
    return 0;
}

/* The schema of context key path (dotted) in schema, or NULL. */
static const json_t *schema_at(const json_t *schema, const char *path)
{
    const json_t *cur = schema;
    char seg[300];
    while (cur && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = 0;
        cur = json_object_get(json_object_get(cur, "properties"), seg);
        path = dot ? dot + 1 : path + n;
    }
    return cur;
}

const json_t *ac_toolfile_context_at(const json_t *obj, const char *path)
{
    const json_t *cur = obj;
    char seg[300];
    while (cur && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, path, n);
        seg[n] = 0;
        cur = json_object_get(cur, seg);
        path = dot ? dot + 1 : path + n;
    }
    return cur;
}

/* Is context key `key` possible: in the initial context or allowed by the schema? */
static int key_known(const ac_toolfile *tf, size_t ki, const char *path)
{
    const ac_toolfile_toolkit *k = &tf->toolkits[ki];
    if (ac_toolfile_context_at(k->context, path))
        return 1;
    if (k->context_schema)
        return schema_at(k->context_schema, path) != NULL;
    for (size_t i = 0; i < tf->n; i++) /* no schema: any key an updating tool writes */
        if (tf->tools[i].toolkit == (int)ki && tf->tools[i].updates_context)
            return 1;
    return 0;
}

/* The schema of the values the enum path ps lists (an array's items, an
 * object's keys, a scalar itself), from the context schema or else from the
 * initial context; a new reference, NULL when unknown. */
static json_t *enum_items(const ac_toolfile_toolkit *k, const char *ps)
{
    json_t *c = k->context_schema ? json_incref((json_t *)schema_at(k->context_schema, ps))
                                  : ac_ctxfilter_shape(ac_toolfile_context_at(k->context, ps));
    if (k->context_schema ? !c : !ac_toolfile_context_at(k->context, ps)) {
        json_decref(c);
        return NULL;
    }
    const char *type = json_string_value(json_object_get(c, "type"));
    json_t *out = NULL;
    if (type && !strcmp(type, "array"))
        out = json_incref(json_object_get(c, "items"));
    else if (type && !strcmp(type, "object"))
        out = json_pack("{s:s}", "type", "string");
    else
        out = json_incref(c);
    json_decref(c);
    return out;
}

/* The kind of value parameter param of t takes in an enum (its type, its items' for an
 * array): "number" for integer and number, "boolean", else "string". */
static const char *enum_kind(const ac_toolfile_tool *t, const char *param)
{
    const json_t *p = json_object_get(json_object_get(t->parameters, "properties"), param);
    const char *type = json_string_value(json_object_get(p, "type"));
    if (type && !strcmp(type, "array"))
        type = json_string_value(json_object_get(json_object_get(p, "items"), "type"));
    if (type && (!strcmp(type, "integer") || !strcmp(type, "number")))
        return "number";
    return type && !strcmp(type, "boolean") ? "boolean" : "string";
}

/* The filters a parameter chains, typed over each of its paths. */
static size_t check_filters(const ac_toolfile_toolkit *k, const ac_toolfile_tool *t,
                            const char *param, const json_t *paths, ac_toolfile_report_fn fn,
                            void *ud)
{
    const json_t *chain = json_object_get(t->enum_filters, param);
    size_t problems = 0, j;
    json_t *p;
    if (!chain)
        return 0;
    json_array_foreach(paths, j, p)
    {
        char who[400];
        snprintf(who, sizeof who, "%s: parameter \"%s\" (from \"%s\")", t->name, param,
                 json_string_value(p));
        json_t *items = enum_items(k, json_string_value(p));
        if (items)
            problems += ac_ctxfilter_check_chain(k->filters, chain, items, enum_kind(t, param), who,
                                                 fn, ud);
        json_decref(items);
    }
    return problems;
}

/* Is state s declared or set by someone (initial, enables, disables)? */
static int state_known(const ac_toolfile *tf, size_t ki, const char *s)
{
    const ac_toolfile_toolkit *k = &tf->toolkits[ki];
    if (k->states)
        return in_list(k->states, s);
    if (in_list(k->initial_states, s))
        return 1;
    for (size_t i = 0; i < tf->n; i++)
        if (tf->tools[i].toolkit == (int)ki &&
            (in_list(tf->tools[i].enables_states, s) || in_list(tf->tools[i].disables_states, s)))
            return 1;
    return 0;
}

size_t ac_toolfile_check_refs(const ac_toolfile *tf, ac_toolfile_report_fn fn, void *ud)
{
    size_t problems = 0;
    for (size_t ki = 0; ki < tf->n_toolkits; ki++) {
        const ac_toolfile_toolkit *k = &tf->toolkits[ki];
        for (char **s = k->initial_states; *s; s++)
            if (k->states && !in_list(k->states, *s)) {
                report(fn, ud, "toolkit %s: initial state \"%s\" is not in \"states\"", k->prefix,
                       *s);
                problems++;
            }
        for (size_t i = 0; i < tf->n; i++) {
            const ac_toolfile_tool *t = &tf->tools[i];
            if (t->toolkit != (int)ki)
                continue;
            struct {
                char **v;
                const char *what;
            } lists[] = {{t->required_states, "required_states"},
                         {t->forbidden_states, "forbidden_states"},
                         {t->enables_states, "enables_states"},
                         {t->disables_states, "disables_states"}};
            for (size_t l = 0; l < 4; l++)
                for (char **s = lists[l].v; s && *s; s++)
                    if (!state_known(tf, ki, *s)) {
                        if (k->states)
                            report(fn, ud, "%s: unknown state \"%s\" in %s (not in \"states\")",
                                   t->name, *s, lists[l].what);
                        else
                            report(fn, ud,
                                   "%s: unknown state \"%s\" in %s (not initial, and no tool "
                                   "enables or disables it)",
                                   t->name, *s, lists[l].what);
                        problems++;
                    }
            for (char **s = t->required_states; s && *s; s++)
                if (in_list(t->forbidden_states, *s)) {
                    report(fn, ud, "%s: both requires and forbids state \"%s\"", t->name, *s);
                    problems++;
                }
            for (char **s = t->enables_states; s && *s; s++)
                if (in_list(t->disables_states, *s)) {
                    report(fn, ud, "%s: both enables and disables state \"%s\"", t->name, *s);
                    problems++;
                }
            for (char **s = t->required_context; s && *s; s++)
                if (!key_known(tf, ki, *s)) {
                    report(fn, ud,
                           "%s: required context \"%s\" is neither in the initial context nor in "
                           "context_schema (nor written by a tool that updates the context)",
                           t->name, *s);
                    problems++;
                }
            const char *param;
            json_t *paths;
            json_object_foreach(t->enum_from, param, paths)
            {
                size_t j;
                json_t *p;
                json_array_foreach(paths, j, p)
                {
                    const char *ps = json_string_value(p);
                    int ok = k->context_schema ? schema_at(k->context_schema, ps) != NULL
                                               : key_known(tf, ki, ps);
                    if (!ok) {
                        report(fn, ud, "%s: parameter \"%s\": enum path \"%s\" is not in %s",
                               t->name, param, ps,
                               k->context_schema ? "the context schema" : "the context");
                        problems++;
                    }
                }
                problems += check_filters(k, t, param, paths, fn, ud);
            }
        }
    }
    return problems;
}

/* ---- the reachable combinations of one toolkit ---- */

typedef struct node {
    uint64_t s, k;
} node;

typedef struct explore {
    const ac_toolfile *tf;
    size_t ki;
    const char *states[MAXBITS];
    size_t ns;
    const char *keys[MAXBITS];
    size_t nk;
    const ac_toolfile_tool **tools;
    size_t nt;
    uint64_t *req, *forb, *en, *dis, *rk; /* per tool */
    uint64_t writable;                    /* keys an updating tool may add */
    node *seen;                           /* hash set, open addressing */
    size_t cap, count;
    node *order; /* in discovery order */
    int truncated, too_wide;
    char *avail; /* per tool: available somewhere */
} explore;

static int bit_of(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i], s))
            return (int)i;
    return -1;
}

static int add_name(const char **v, size_t *n, const char *s)
{
    if (bit_of(v, *n, s) >= 0)
        return 0;
    if (*n >= MAXBITS)
        return -1;
    v[(*n)++] = s;
    return 0;
}

static uint64_t mask(explore *x, char **list, int keys)
{
    uint64_t m = 0;
    for (char **s = list; s && *s; s++) {
        int b = keys ? bit_of(x->keys, x->nk, *s) : bit_of(x->states, x->ns, *s);
        if (b >= 0)
            m |= (uint64_t)1 << b;
    }
    return m;
}

static size_t hash(node n)
{
    uint64_t h =
        n.s * 0x9E3779B97F4A7C15ull ^ (n.k + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    return (size_t)(h ^ (h >> 31));
}

/* 1 when n was new (and is added), 0 when seen, -1 out of memory or too many. */
static int visit(explore *x, node n)
{
    if (x->count * 2 >= x->cap) {
        if (x->count >= AC_TK_MAX_NODES) {
            x->truncated = 1;
            return -1;
        }
        size_t cap = x->cap ? x->cap * 2 : 256;
        node *ns = malloc(cap * sizeof *ns);
        node *no = realloc(x->order, (cap / 2 + 1) * sizeof *no);
        if (!ns || !no) {
            free(ns);
            if (no)
                x->order = no;
            x->truncated = 1;
            return -1;
        }
        x->order = no;
        for (size_t i = 0; i < cap; i++)
            ns[i].s = ns[i].k = UINT64_MAX;
        for (size_t i = 0; i < x->count; i++) {
            size_t h = hash(x->order[i]) & (cap - 1);
            while (ns[h].s != UINT64_MAX || ns[h].k != UINT64_MAX)
                h = (h + 1) & (cap - 1);
            ns[h] = x->order[i];
        }
        free(x->seen);
        x->seen = ns;
        x->cap = cap;
    }
    size_t h = hash(n) & (x->cap - 1);
    while (x->seen[h].s != UINT64_MAX || x->seen[h].k != UINT64_MAX) {
        if (x->seen[h].s == n.s && x->seen[h].k == n.k)
            return 0;
        h = (h + 1) & (x->cap - 1);
    }
    x->seen[h] = n;
    x->order[x->count++] = n;
    return 1;
}

static int avail_at(const explore *x, size_t t, node n)
{
    return (n.s & x->req[t]) == x->req[t] && !(n.s & x->forb[t]) && (n.k & x->rk[t]) == x->rk[t];
}

static node step(const explore *x, size_t t, node n)
{
    node m = {(n.s & ~x->dis[t]) | x->en[t], n.k};
    if (x->tools[t]->updates_context)
        m.k |= x->writable;
    return m;
}

static void explore_free(explore *x)
{
    free(x->tools);
    free(x->req);
    free(x->forb);
    free(x->en);
    free(x->dis);
    free(x->rk);
    free(x->seen);
    free(x->order);
    free(x->avail);
}

/* Builds and runs the exploration of toolkit ki. 0, or -1 out of memory. */
static int explore_run(explore *x, const ac_toolfile *tf, size_t ki)
{
    memset(x, 0, sizeof *x);
    x->tf = tf;
    x->ki = ki;
    const ac_toolfile_toolkit *k = &tf->toolkits[ki];
    for (size_t i = 0; i < tf->n; i++)
        if (tf->tools[i].toolkit == (int)ki)
            x->nt++;
    x->tools = calloc(x->nt + 1, sizeof *x->tools);
    x->req = calloc(x->nt + 1, sizeof *x->req);
    x->forb = calloc(x->nt + 1, sizeof *x->forb);
    x->en = calloc(x->nt + 1, sizeof *x->en);
    x->dis = calloc(x->nt + 1, sizeof *x->dis);
    x->rk = calloc(x->nt + 1, sizeof *x->rk);
    x->avail = calloc(x->nt + 1, 1);
    if (!x->tools || !x->req || !x->forb || !x->en || !x->dis || !x->rk || !x->avail)
        return -1;
    size_t t = 0;
    for (char **s = k->states; s && *s; s++)
        x->too_wide |= add_name(x->states, &x->ns, *s);
    for (char **s = k->initial_states; *s; s++)
        x->too_wide |= add_name(x->states, &x->ns, *s);
    for (size_t i = 0; i < tf->n; i++) {
        const ac_toolfile_tool *d = &tf->tools[i];
        if (d->toolkit != (int)ki)
            continue;
        x->tools[t++] = d;
        char **lists[] = {d->required_states, d->forbidden_states, d->enables_states,
                          d->disables_states};
        for (size_t l = 0; l < 4; l++)
            for (char **s = lists[l]; s && *s; s++)
                x->too_wide |= add_name(x->states, &x->ns, *s);
        for (char **s = d->required_context; s && *s; s++)
            x->too_wide |= add_name(x->keys, &x->nk, *s);
    }
    const json_t *props = json_object_get(k->context_schema, "properties");
    int closed = json_is_false(json_object_get(k->context_schema, "additionalProperties"));
    for (size_t b = 0; b < x->nk; b++)
        if (!closed || json_object_get(props, x->keys[b]) ||
            (strchr(x->keys[b], '.') && schema_at(k->context_schema, x->keys[b])))
            x->writable |= (uint64_t)1 << b;
    for (t = 0; t < x->nt; t++) {
        x->req[t] = mask(x, x->tools[t]->required_states, 0);
        x->forb[t] = mask(x, x->tools[t]->forbidden_states, 0);
        x->en[t] = mask(x, x->tools[t]->enables_states, 0);
        x->dis[t] = mask(x, x->tools[t]->disables_states, 0);
        x->rk[t] = mask(x, x->tools[t]->required_context, 1);
    }
    node start = {mask(x, k->initial_states, 0), 0};
    for (size_t b = 0; b < x->nk; b++)
        if (ac_toolfile_context_at(k->context, x->keys[b]))
            start.k |= (uint64_t)1 << b;
    if (x->too_wide)
        return 0;
    if (visit(x, start) < 0)
        return x->truncated ? 0 : -1;
    for (size_t q = 0; q < x->count; q++) {
        node n = x->order[q];
        for (t = 0; t < x->nt; t++) {
            if (!avail_at(x, t, n))
                continue;
            x->avail[t] = 1;
            if (visit(x, step(x, t, n)) < 0 && x->truncated)
                return 0;
        }
    }
    return 0;
}

static void join_bits(const explore *x, uint64_t m, int keys, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (size_t b = 0; b < MAXBITS; b++)
        if (m & ((uint64_t)1 << b)) {
            int w =
                snprintf(out + k, cap - k, "%s%s", k ? ", " : "", keys ? x->keys[b] : x->states[b]);
            if (w < 0 || (size_t)w >= cap - k)
                return;
            k += (size_t)w;
        }
}

static void why_unreachable(const explore *x, size_t t, char *out, size_t cap)
{
    uint64_t on = 0, off = 0, keys = 0; /* what reachable tools can do, and the start */
    node start = x->order ? x->order[0] : (node){0, 0};
    on = start.s;
    keys = start.k;
    for (size_t i = 0; i < x->nt; i++)
        if (x->avail[i]) {
            on |= x->en[i];
            off |= x->dis[i];
            if (x->tools[i]->updates_context)
                keys |= x->writable;
        }
    char names[600];
    if (x->req[t] & ~on) {
        join_bits(x, x->req[t] & ~on, 0, names, sizeof names);
        snprintf(out, cap,
                 "needs state %s, which is not initial and no tool that can become available "
                 "enables",
                 names);
    } else if (x->forb[t] & start.s & ~off) {
        join_bits(x, x->forb[t] & start.s & ~off, 0, names, sizeof names);
        snprintf(out, cap,
                 "forbids state %s, which is on initially and no tool that can become available "
                 "disables",
                 names);
    } else if (x->rk[t] & ~keys) {
        join_bits(x, x->rk[t] & ~keys, 1, names, sizeof names);
        snprintf(out, cap,
                 "needs context %s, which is not in the initial context and no tool that can "
                 "become available may write it",
                 names);
    } else {
        char r[300], f[300];
        join_bits(x, x->req[t], 0, r, sizeof r);
        join_bits(x, x->forb[t], 0, f, sizeof f);
        snprintf(out, cap, "no reachable combination of states has [%s] on and [%s] off", r, f);
    }
}

size_t ac_toolfile_check_reach(const ac_toolfile *tf, ac_toolfile_report_fn fn, void *ud)
{
    size_t bad = 0;
    for (size_t ki = 0; ki < tf->n_toolkits; ki++) {
        explore x;
        if (explore_run(&x, tf, ki) < 0) {
            report(fn, ud, "toolkit %s: out of memory during the proof", tf->toolkits[ki].prefix);
            explore_free(&x);
            bad++;
            continue;
        }
        if (x.too_wide) {
            report(fn, ud, "toolkit %s: not proved: more than %d states or required context keys",
                   tf->toolkits[ki].prefix, MAXBITS);
            bad++;
        } else {
            for (size_t t = 0; t < x.nt; t++) {
                if (x.avail[t])
                    continue;
                char why[900];
                why_unreachable(&x, t, why, sizeof why);
                report(fn, ud, "%s can never become available: %s%s", x.tools[t]->name, why,
                       x.truncated ? " (proof stopped early: too many combinations)" : "");
                bad++;
            }
        }
        explore_free(&x);
    }
    return bad;
}

/* ---- DOT ---- */

#define DIAGRAM_MAX_NODES 256

char *ac_toolfile_diagram(const ac_toolfile *tf)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_printf(
        &b, "digraph toolkits {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontsize=10];\n"
            "  edge [fontsize=9];\n");
    for (size_t ki = 0; ki < tf->n_toolkits; ki++) {
        explore x;
        const char *prefix = tf->toolkits[ki].prefix;
        ac_buf_printf(&b, "  subgraph \"cluster_%s\" {\n    label=\"toolkit %s\";\n", prefix,
                      prefix);
        if (explore_run(&x, tf, ki) == 0 && !x.too_wide) {
            /* nodes: the reachable state sets (context keys folded in) */
            uint64_t sets[DIAGRAM_MAX_NODES];
            size_t ns = 0;
            for (size_t i = 0; i < x.count && ns < DIAGRAM_MAX_NODES; i++) {
                size_t j;
                for (j = 0; j < ns && sets[j] != x.order[i].s; j++)
                    ;
                if (j == ns)
                    sets[ns++] = x.order[i].s;
            }
            for (size_t j = 0; j < ns; j++) {
                char st[600], tools[1200];
                join_bits(&x, sets[j], 0, st, sizeof st);
                size_t tk = 0;
                tools[0] = 0;
                for (size_t t = 0; t < x.nt; t++) {
                    int here = 0;
                    for (size_t i = 0; i < x.count && !here; i++)
                        here = x.order[i].s == sets[j] && avail_at(&x, t, x.order[i]);
                    if (here && tk < sizeof tools) {
                        int w = snprintf(tools + tk, sizeof tools - tk, "%s%s", tk ? ", " : "",
                                         x.tools[t]->local);
                        if (w > 0)
                            tk += (size_t)w;
                    }
                }
                ac_buf_printf(&b, "    \"%s/%zu\" [label=\"%s%s\\n%s%s\"%s];\n", prefix, j,
                              j == 0 ? "start: " : "", *st ? st : "(no state on)",
                              *tools ? "offers: " : "offers nothing", tools,
                              j == 0 ? ", penwidth=2" : "");
            }
            /* edges: a call that changes the states */
            for (size_t j = 0; j < ns; j++)
                for (size_t t = 0; t < x.nt; t++) {
                    int from = 0;
                    for (size_t i = 0; i < x.count && !from; i++)
                        from = x.order[i].s == sets[j] && avail_at(&x, t, x.order[i]);
                    if (!from)
                        continue;
                    uint64_t to = (sets[j] & ~x.dis[t]) | x.en[t];
                    if (to == sets[j])
                        continue;
                    for (size_t m = 0; m < ns; m++)
                        if (sets[m] == to)
                            ac_buf_printf(&b, "    \"%s/%zu\" -> \"%s/%zu\" [label=\"%s::%s\"];\n",
                                          prefix, j, prefix, m, prefix, x.tools[t]->local);
                }
            for (size_t t = 0; t < x.nt; t++)
                if (!x.avail[t])
                    ac_buf_printf(
                        &b,
                        "    \"%s/never/%zu\" [label=\"never available:\\n%s\", color=red, "
                        "fontcolor=red];\n",
                        prefix, t, x.tools[t]->local);
        }
        explore_free(&x);
        ac_buf_printf(&b, "  }\n");
    }
    ac_buf_printf(&b, "}\n");
    return ac_buf_take(&b, NULL);
}
