/*
 * toolkits.c - toolkits at run time; see toolkits.h.
 *
 * Definitions come from tool files (tools/toolfile.h) and stay owned here for
 * the engine's life. Each session holds, per toolkit, the states that are on
 * and the context; a run of tools works on a copy (tools_run.c) so that the
 * calls of a toolkit in one turn each see the previous one's changes at
 * once, and the session's own copy changes when the events are applied.
 */
#include "session/toolkits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/tools_internal.h"
#include "tools/ctxfilter.h"
#include "util/toolname.h"

struct ac_tk_engine {
    ac_toolfile **files;
    size_t n_files;
    const ac_toolfile_toolkit **kits;
    size_t n;
};

/* ---- engine ---- */

int ac_toolkits_adopt(ac_engine *e, ac_toolfile *tf, size_t *base, char *err, size_t errcap)
{
    struct ac_tk_engine *k = e->toolkits;
    if (!k && !(k = e->toolkits = calloc(1, sizeof *k)))
        goto oom;
    for (size_t i = 0; i < tf->n_toolkits; i++)
        for (size_t j = 0; j < k->n; j++)
            if (!strcmp(k->kits[j]->prefix, tf->toolkits[i].prefix)) {
                snprintf(err, errcap, "toolkit '%s' is defined twice", tf->toolkits[i].prefix);
                ac_toolfile_free(tf);
                return -1;
            }
    ac_toolfile **files = realloc(k->files, (k->n_files + 1) * sizeof *files);
    if (!files)
        goto oom;
    k->files = files;
    const ac_toolfile_toolkit **kits = realloc(k->kits, (k->n + tf->n_toolkits + 1) * sizeof *kits);
    if (!kits)
        goto oom;
    k->kits = kits;
    k->files[k->n_files++] = tf;
    *base = k->n;
    for (size_t i = 0; i < tf->n_toolkits; i++)
        k->kits[k->n++] = &tf->toolkits[i];
    return 0;
oom:
    snprintf(err, errcap, "out of memory");
    ac_toolfile_free(tf);
    return -1;
}

void ac_toolkits_engine_free(ac_engine *e)
{
    struct ac_tk_engine *k = e->toolkits;
    if (!k)
        return;
    for (size_t i = 0; i < k->n_files; i++)
        ac_toolfile_free(k->files[i]);
    free(k->files);
    free(k->kits);
    free(k);
    e->toolkits = NULL;
}

size_t ac_toolkits_count(const ac_engine *e)
{
    return e->toolkits ? e->toolkits->n : 0;
}

const ac_toolfile_toolkit *ac_toolkits_def(const ac_engine *e, size_t kit)
{
    return e->toolkits && kit < e->toolkits->n ? e->toolkits->kits[kit] : NULL;
}

int ac_toolkits_bind_callback(ac_engine *e, const char *name, ac_tool_fn fn, void *ud)
{
    ac_tool *t = (ac_tool *)ac_tools_find(e, name);
    if (!t || !t->kit1 || !t->def || !t->def->callback)
        return 0;
    if (t->fn)
        return -1;
    t->fn = fn;
    t->ud = ud;
    return 1;
}

static json_t *strv_json(char *const *v)
{
    json_t *a = json_array();
    for (; a && v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

json_t *ac_toolkits_spawn_json(const ac_engine *e)
{
    size_t n = ac_toolkits_count(e);
    if (!n)
        return NULL;
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        const ac_toolfile_toolkit *k = e->toolkits->kits[i];
        json_object_set_new(
            o, k->prefix,
            json_pack("{s:o, s:O}", "states", strv_json(k->initial_states), "context", k->context));
    }
    return o;
}

/* ---- states ---- */

/* The state is one object {"prefix": {"states": [...], "context": {...}}}, so a session
 * rebuilt by an engine that lacks some toolkit definitions (`agentc sessions show`) keeps
 * them as they are. */

static json_t *kit_states(const ac_tk_state *st, const char *prefix)
{
    return st ? json_object_get(json_object_get(st->root, prefix), "states") : NULL;
}

static json_t *kit_context(const ac_tk_state *st, const char *prefix)
{
    return st ? json_object_get(json_object_get(st->root, prefix), "context") : NULL;
}

static ac_tk_state *state_wrap(json_t *root)
{
    ac_tk_state *st = root ? calloc(1, sizeof *st) : NULL;
    if (!st) {
        json_decref(root);
        return NULL;
    }
    st->root = root;
    return st;
}

void ac_tk_state_free(ac_tk_state *st)
{
    if (!st)
        return;
    json_decref(st->root);
    free(st);
}

ac_tk_state *ac_tk_state_clone(const ac_tk_state *src)
{
    return src ? state_wrap(json_deep_copy(src->root)) : NULL;
}

static size_t kit_index(const ac_engine *e, const char *prefix)
{
    for (size_t i = 0; i < ac_toolkits_count(e); i++)
        if (!strcmp(e->toolkits->kits[i]->prefix, prefix))
            return i;
    return (size_t)-1;
}

int ac_toolkits_session_init(ac_session *s, const json_t *spawn)
{
    if (s->toolkits)
        return 0;
    json_t *root = json_is_object(spawn) ? json_deep_copy(spawn) : ac_toolkits_spawn_json(s->e);
    if (!root)
        return 0; /* no toolkits */
    /* toolkits the journal predates start from their initial states */
    for (size_t i = 0; i < ac_toolkits_count(s->e); i++) {
        const ac_toolfile_toolkit *k = s->e->toolkits->kits[i];
        if (!json_object_get(root, k->prefix))
            json_object_set_new(root, k->prefix,
                                json_pack("{s:o, s:O}", "states", strv_json(k->initial_states),
                                          "context", k->context));
    }
    s->toolkits = state_wrap(root);
    return s->toolkits ? 0 : -1;
}

void ac_toolkits_session_free(ac_session *s)
{
    ac_tk_state_free(s->toolkits);
    s->toolkits = NULL;
}

json_t *ac_toolkits_state_json(const ac_session *s)
{
    if (!s->toolkits || !json_object_size(s->toolkits->root))
        return NULL;
    return json_deep_copy(s->toolkits->root);
}

int ac_toolkits_state_restore(ac_session *s, const json_t *j, char *err, size_t errcap)
{
    if (!json_is_object(j)) {
        snprintf(err, errcap,
                 "toolkits: expected an object {\"prefix\": {\"states\", \"context\"}}");
        return -1;
    }
    const char *prefix;
    json_t *v;
    json_object_foreach((json_t *)j, prefix, v)
    {
        /* an engine with toolkits takes only its own; one without keeps what it is given */
        if (ac_toolkits_count(s->e) && kit_index(s->e, prefix) == (size_t)-1) {
            snprintf(err, errcap, "toolkits: unknown toolkit '%.64s'", prefix);
            return -1;
        }
        json_t *ss = json_object_get(v, "states"), *cx = json_object_get(v, "context");
        size_t i;
        json_t *x;
        int ok = json_is_array(ss) && json_is_object(cx);
        json_array_foreach(ss, i, x) ok = ok && json_is_string(x);
        if (!ok) {
            snprintf(err, errcap,
                     "toolkits: '%.64s' needs \"states\" (an array of names) and \"context\" (an "
                     "object)",
                     prefix);
            return -1;
        }
    }
    if (!s->toolkits && ac_toolkits_session_init(s, NULL) < 0) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    if (!s->toolkits && !(s->toolkits = state_wrap(json_object()))) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    json_object_foreach((json_t *)j, prefix, v)
    {
        json_object_set_new(s->toolkits->root, prefix,
                            json_pack("{s:o, s:o}", "states",
                                      json_deep_copy(json_object_get(v, "states")), "context",
                                      json_deep_copy(json_object_get(v, "context"))));
    }
    return 0;
}

void ac_toolkits_apply_event(ac_session *s, const json_t *payload)
{
    const json_t *d = json_object_get(payload, "toolkit");
    const char *prefix = json_string_value(json_object_get(d, "prefix"));
    if (!prefix)
        return;
    if (!s->toolkits && ac_toolkits_session_init(s, NULL) < 0)
        return;
    if (!s->toolkits && !(s->toolkits = state_wrap(json_object())))
        return;
    json_t *kit = json_object_get(s->toolkits->root, prefix);
    if (!kit) {
        kit = json_pack("{s:[], s:{}}", "states", "context");
        if (!kit || json_object_set_new(s->toolkits->root, prefix, kit))
            return;
    }
    json_t *ss = json_object_get(d, "states"), *cx = json_object_get(d, "context");
    if (json_is_array(ss))
        json_object_set_new(kit, "states", json_deep_copy(ss));
    if (json_is_object(cx))
        json_object_update(json_object_get(kit, "context"), cx);
}

/* ---- availability ---- */

static int state_on(const json_t *states, const char *name)
{
    size_t i;
    json_t *v;
    json_array_foreach(states, i, v) if (!strcmp(json_string_value(v), name)) return 1;
    return 0;
}

/* Appends the names of list whose presence in states equals want to buf. */
static size_t list_names(char *const *list, const json_t *states, const json_t *ctx, int want,
                         char *buf, size_t cap)
{
    size_t k = 0, count = 0;
    buf[0] = 0;
    for (char *const *p = list; p && *p; p++) {
        int on = ctx ? ac_toolfile_context_at(ctx, *p) != NULL : state_on(states, *p);
        if (on != want)
            continue;
        int w = snprintf(buf + k, cap - k, "%s%s", count ? ", " : "", *p);
        count++;
        if (w < 0 || (size_t)w >= cap - k)
            break;
        k += (size_t)w;
    }
    return count;
}

const char *ac_toolkits_unavailable(const ac_tk_state *st, const ac_tool *t, char *buf, size_t cap)
{
    if (!t->kit1 || !t->def || !t->kit || !st)
        return NULL;
    const json_t *states = kit_states(st, t->kit->prefix), *ctx = kit_context(st, t->kit->prefix);
    char names[600];
    if (list_names(t->def->required_states, states, NULL, 0, names, sizeof names)) {
        snprintf(buf, cap, "missing required states: %s", names);
        return buf;
    }
    if (list_names(t->def->forbidden_states, states, NULL, 1, names, sizeof names)) {
        snprintf(buf, cap, "forbidden states are on: %s", names);
        return buf;
    }
    if (list_names(t->def->required_context, NULL, ctx, 0, names, sizeof names)) {
        snprintf(buf, cap, "missing required context: %s", names);
        return buf;
    }
    return NULL;
}

void ac_toolkits_unknown(const ac_engine *e, const char *name, char *buf, size_t cap)
{
    size_t plen;
    const char *tool = ac_toolname_split(name, &plen);
    if (!tool && (tool = strstr(name, "__")) && tool != name && tool[2]) {
        plen = (size_t)(tool - name); /* a wire name that matched no tool */
        tool += 2;
    } else if (!strstr(name, "::")) {
        tool = NULL;
    }
    if (tool) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(plen < 100 ? plen : 100), name);
        int known = kit_index(e, prefix) != (size_t)-1;
        for (size_t i = 0; !known && i < e->n_tools; i++) {
            size_t pl2;
            known = ac_toolname_split(e->tools[i]->name, &pl2) && pl2 == plen &&
                    !strncmp(e->tools[i]->name, name, plen);
        }
        if (known)
            snprintf(buf, cap, "toolkit '%s' has no tool '%.100s'", prefix, tool);
        else
            snprintf(buf, cap, "unknown toolkit '%s' (in '%.100s')", prefix, name);
        return;
    }
    snprintf(buf, cap, "unknown tool '%.100s'", name);
}

/* ---- enums from the context ---- */

/* The values at each path of paths in ctx, concatenated (an array's
 * elements, an object's keys, a scalar itself) into items. Returns how many
 * paths exist. */
static size_t enum_items(const json_t *ctx, const json_t *paths, json_t *items)
{
    size_t found = 0, i;
    json_t *p;
    json_array_foreach(paths, i, p)
    {
        const json_t *v = ac_toolfile_context_at(ctx, json_string_value(p));
        if (!v)
            continue;
        found++;
        if (json_is_array(v)) {
            json_array_extend(items, (json_t *)v);
        } else if (json_is_object(v)) {
            const char *k;
            json_t *x;
            json_object_foreach((json_t *)v, k, x) json_array_append_new(items, json_string(k));
        } else {
            json_array_append(items, (json_t *)v);
        }
    }
    return found;
}

/* Appends the enum of parameter param of t in ctx to out: the values of its
 * paths through its filters (tools/ctxfilter.h), scalars only, without
 * duplicates (seen: a set keyed by a type letter and the value). Returns how
 * many paths exist. */
static size_t enum_values(const json_t *ctx, const ac_tool *t, const char *param, json_t *out)
{
    const json_t *paths = json_object_get(t->def->enum_from, param);
    const json_t *chain = json_object_get(t->def->enum_filters, param);
    json_t *seen = json_object(), *items = json_array(), *filtered = NULL;
    size_t found = seen && items ? enum_items(ctx, paths, items) : 0, j;
    if (chain && found)
        filtered = ac_ctxfilter_apply(t->kit->filters, chain, items);
    json_t *x;
    json_array_foreach(filtered ? filtered : items, j, x)
    {
        char key[512];
        if (json_is_string(x)) {
            if (json_string_length(x) > sizeof key - 3)
                continue;
            snprintf(key, sizeof key, "s:%s", json_string_value(x));
        } else if (json_is_number(x) || json_is_boolean(x)) {
            char *txt = json_dumps(x, JSON_ENCODE_ANY);
            snprintf(key, sizeof key, "n:%s", txt ? txt : "");
            free(txt);
        } else {
            continue; /* objects, arrays and null are not enum values */
        }
        if (json_object_get(seen, key))
            continue;
        json_object_set_new(seen, key, json_true());
        json_array_append(out, x);
    }
    json_decref(seen);
    json_decref(items);
    json_decref(filtered);
    return found;
}

const char *ac_toolkits_check_args(const ac_tk_state *st, const ac_tool *t, const json_t *args,
                                   char *buf, size_t cap)
{
    if (!t->kit1 || !t->def || !t->kit || !t->def->enum_from || !st || !json_is_object(args))
        return NULL;
    const json_t *ctx = kit_context(st, t->kit->prefix);
    const char *param;
    json_t *paths;
    json_object_foreach(t->def->enum_from, param, paths)
    {
        const json_t *a = json_object_get(args, param);
        if (!a)
            continue;
        json_t *vals = json_array();
        if (!vals)
            return NULL;
        int found = enum_values(ctx, t, param, vals) > 0, ok = !found;
        size_t i;
        json_t *v;
        json_array_foreach(vals, i, v) ok = ok || json_equal((json_t *)a, v);
        json_decref(vals);
        if (!ok) {
            char *txt = json_dumps(a, JSON_ENCODE_ANY | JSON_COMPACT);
            char *pl = json_dumps(paths, JSON_COMPACT);
            snprintf(buf, cap,
                     "invalid arguments: /%s: %.200s is not one of the values of context %s", param,
                     txt ? txt : "the value", pl ? pl : "");
            free(txt);
            free(pl);
            return buf;
        }
    }
    return NULL;
}

char *ac_toolkits_context_text(const ac_tk_state *st, const ac_tool *t)
{
    const json_t *ctx = t->kit1 && t->kit ? kit_context(st, t->kit->prefix) : NULL;
    return ctx ? json_dumps(ctx, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
}

/* ---- after a call ---- */

static void replace(char **content, const char *fmt, const char *detail)
{
    char m[700];
    snprintf(m, sizeof m, fmt, detail);
    free(*content);
    *content = strdup(m);
}

void ac_toolkits_after_call(ac_tk_state *st, const ac_tool *t, int *ok, char **content,
                            json_t **delta)
{
    *delta = NULL;
    if (!t->kit1 || !t->def || !t->kit || !st || !*ok)
        return;
    json_t *ctx = kit_context(st, t->kit->prefix), *states = kit_states(st, t->kit->prefix);
    if (!json_is_object(ctx) || !json_is_array(states))
        return;
    json_t *update = NULL;
    if (t->def->updates_context) {
        json_error_t je;
        json_t *out = json_loads(*content ? *content : "", JSON_REJECT_DUPLICATES, &je);
        json_t *res = json_object_get(out, "result"), *cx = json_object_get(out, "context");
        if (!json_is_object(out) || !res || (cx && !json_is_object(cx))) {
            json_decref(out);
            *ok = 0;
            replace(content,
                    "the tool updates the context: it must print {\"result\": ..., \"context\": "
                    "{...}}%s",
                    "");
            return;
        }
        if (cx && json_object_size(cx)) {
            json_t *merged = json_deep_copy(ctx);
            char why[400] = "";
            int valid = merged && json_object_update(merged, cx) == 0;
            if (valid && t->kit && t->kit->ctx_schema)
                valid = ac_schema_validate(t->kit->ctx_schema, merged, why, sizeof why);
            json_decref(merged);
            if (!valid) {
                json_decref(out);
                *ok = 0;
                replace(content,
                        "the context update does not match the toolkit's context_schema (nothing "
                        "was changed): %s",
                        why);
                return;
            }
            update = json_incref(cx);
        }
        char *text = json_is_string(res)
                         ? strdup(json_string_value(res))
                         : json_dumps(res, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        json_decref(out);
        free(*content);
        *content = text;
    }
    for (char **p = t->def->disables_states; p && *p; p++) {
        size_t i;
        json_t *v;
        json_array_foreach(states, i, v) if (!strcmp(json_string_value(v), *p))
        {
            json_array_remove(states, i);
            break;
        }
    }
    for (char **p = t->def->enables_states; p && *p; p++)
        if (!state_on(states, *p))
            json_array_append_new(states, json_string(*p));
    if (update)
        json_object_update(ctx, update);
    *delta = json_pack("{s:s, s:s, s:O, s:o}", "prefix", t->kit->prefix, "tool", t->name, "states",
                       states, "context", update ? update : json_object());
}

/* ---- requests ---- */

int ac_toolkits_offer(void *session, const char *name, json_t **schema)
{
    ac_session *s = session;
    if (!s->toolkits || !strstr(name, "::"))
        return 1;
    const ac_tool *t = ac_tools_find(s->e, name);
    if (!t || !t->kit1 || !t->kit)
        return 1;
    char why[8];
    if (ac_toolkits_unavailable(s->toolkits, t, why, sizeof why))
        return 0;
    if (!t->def->enum_from)
        return 1;
    if (!schema) /* the enums come from the context: the schema is wanted */
        return 2;
    if (!*schema)
        return 1;
    json_t *props = json_object_get(*schema, "properties");
    const char *param;
    json_t *paths;
    json_object_foreach(t->def->enum_from, param, paths)
    {
        json_t *p = json_object_get(props, param);
        if (!json_is_object(p))
            continue;
        json_t *vals = json_array();
        if (!vals)
            continue;
        if (enum_values(kit_context(s->toolkits, t->kit->prefix), t, param, vals) > 0) {
            /* an array parameter takes the enum on its items */
            json_t *items = json_object_get(p, "items");
            if (json_is_object(items) && json_is_object(p) &&
                json_is_string(json_object_get(p, "type")) &&
                !strcmp(json_string_value(json_object_get(p, "type")), "array"))
                json_object_set_new(items, "enum", vals);
            else
                json_object_set_new(p, "enum", vals);
        } else {
            json_decref(vals); /* no such key: the plain type */
        }
    }
    return 1;
}

int ac_toolkits_known_name(void *session, const char *display)
{
    ac_session *s = session;
    return ac_conv_find_tool_def(s->conv, display) != NULL;
}

/* ---- public API (agentc.h) ---- */

char *ac_session_toolkits_json(const ac_session *s)
{
    json_t *j = s ? ac_toolkits_state_json(s) : NULL;
    char *out = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    return out;
}

int ac_session_toolkits_restore(ac_session *s, const char *json, ac_error *err)
{
    char text[400] = "";
    if (!s || !json) {
        ac_error_set(err, AC_EINVAL, "ac_session_toolkits_restore needs a session and JSON");
        return -1;
    }
    json_error_t je;
    json_t *j = json_loads(json, JSON_REJECT_DUPLICATES, &je);
    if (!j) {
        snprintf(text, sizeof text, "toolkits: not JSON: %s", je.text);
        ac_error_set(err, AC_EINVAL, text);
        return -1;
    }
    int rc = ac_toolkits_state_restore(s, j, text, sizeof text);
    json_decref(j);
    if (rc < 0) {
        ac_error_set(err, AC_EINVAL, text);
        return -1;
    }
    if (err)
        memset(err, 0, sizeof *err);
    return 0;
}
