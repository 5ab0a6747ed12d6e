/*
 * tool_cache.c - the tool-result cache (tool_cache.h). Entries are kept in a
 * JSON object by key ({"content", "source", "expires", "tool", "used"}), with
 * a count per tool; eviction drops the tool's least recently used entry.
 */
#include "session/tool_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/tools_internal.h"

struct ac_tool_cache {
    json_t *entries; /* key -> entry */
    json_t *counts;  /* tool -> entries */
    int64_t clock;   /* use order */
};

ac_tool_cache *ac_tool_cache_new(void)
{
    ac_tool_cache *c = calloc(1, sizeof *c);
    if (!c || !(c->entries = json_object()) || !(c->counts = json_object())) {
        ac_tool_cache_free(c);
        return NULL;
    }
    return c;
}

void ac_tool_cache_free(ac_tool_cache *c)
{
    if (!c)
        return;
    json_decref(c->entries);
    json_decref(c->counts);
    free(c);
}

/* v with its numbers normalised: a real with an integral value below 2^53 becomes an
 * integer. A new reference. */
static json_t *canonical(const json_t *v)
{
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            return json_integer((json_int_t)d);
        return json_real(d);
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) json_array_append_new(a, canonical(x));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) json_object_set_new(o, k, canonical(x));
        return o;
    }
    return json_deep_copy(v);
}

static char *canonical_text(const json_t *v)
{
    json_t *c = canonical(v);
    char *t = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    json_decref(c);
    return t;
}

char *ac_tool_cache_key(const char *name, const json_t *args, const char *context_json)
{
    json_t *ctx = context_json ? json_loads(context_json, 0, NULL) : NULL;
    char *a = canonical_text(args), *cx = ctx ? canonical_text(ctx) : NULL;
    json_decref(ctx);
    size_t n = strlen(name) + (a ? strlen(a) : 0) + (cx ? strlen(cx) : 0) + 8;
    char *key = a && (!context_json || cx) ? malloc(n) : NULL;
    if (key)
        snprintf(key, n, "%s\n%s\n%s", name, a, cx ? cx : "");
    free(a);
    free(cx);
    return key;
}

static void count(ac_tool_cache *c, const char *tool, json_int_t d)
{
    json_int_t n = json_integer_value(json_object_get(c->counts, tool)) + d;
    if (n > 0)
        json_object_set_new(c->counts, tool, json_integer(n));
    else
        json_object_del(c->counts, tool);
}

static void drop(ac_tool_cache *c, const char *key)
{
    json_t *e = json_object_get(c->entries, key);
    if (!e)
        return;
    count(c, json_string_value(json_object_get(e, "tool")), -1);
    json_object_del(c->entries, key);
}

int ac_tool_cache_get(ac_tool_cache *c, const char *key, int64_t now_ms, const char **content,
                      const char **source_id)
{
    json_t *e = c && key ? json_object_get(c->entries, key) : NULL;
    if (!e)
        return 0;
    if (json_integer_value(json_object_get(e, "expires")) <= now_ms) {
        drop(c, key);
        return 0;
    }
    json_object_set_new(e, "used", json_integer(++c->clock));
    *content = json_string_value(json_object_get(e, "content"));
    *source_id = json_string_value(json_object_get(e, "source"));
    return 1;
}

/* The key of tool's least recently used entry, or NULL. Borrowed. */
static const char *oldest(ac_tool_cache *c, const char *tool)
{
    const char *k, *best = NULL;
    json_t *e;
    json_int_t best_used = 0;
    json_object_foreach(c->entries, k, e)
    {
        json_int_t u = json_integer_value(json_object_get(e, "used"));
        if (!strcmp(json_string_value(json_object_get(e, "tool")), tool) &&
            (!best || u < best_used)) {
            best = k;
            best_used = u;
        }
    }
    return best;
}

size_t ac_tool_cache_put(ac_tool_cache *c, const char *tool, const char *key, const char *content,
                         const char *source_id, const ac_cache_decl *decl, int64_t now_ms)
{
    if (!c || !key)
        return 0;
    drop(c, key);
    json_t *e = json_pack("{s:s, s:s, s:I, s:s, s:I}", "content", content, "source", source_id,
                          "expires", (json_int_t)(now_ms + decl->ttl_ms), "tool", tool, "used",
                          (json_int_t)++c->clock);
    if (!e || json_object_set_new(c->entries, key, e) < 0)
        return 0;
    count(c, tool, 1);
    size_t evicted = 0;
    while ((size_t)json_integer_value(json_object_get(c->counts, tool)) > decl->max_entries) {
        const char *k = oldest(c, tool);
        if (!k)
            break;
        char *copy = strdup(k);
        if (!copy)
            break;
        drop(c, copy);
        free(copy);
        evicted++;
    }
    return evicted;
}

/* ---- public API (agentc.h) ---- */

int ac_engine_set_tool_cache(ac_engine *e, const char *name, const ac_tool_cache_options *opts,
                             ac_error *err)
{
    ac_tool *t = e && name ? (ac_tool *)ac_tools_find(e, name) : NULL;
    char msg[300];
    if (!t || !opts || opts->ttl_ms < 0 ||
        (opts->scope != AC_CACHE_SESSION && opts->scope != AC_CACHE_ENGINE)) {
        snprintf(msg, sizeof msg, "ac_engine_set_tool_cache: %s",
                 !t      ? "no such tool"
                 : !opts ? "no options"
                         : "ttl_ms must be >= 0 and scope AC_CACHE_SESSION or AC_CACHE_ENGINE");
        ac_error_set(err, AC_EINVAL, msg);
        return -1;
    }
    t->cache.ttl_ms = opts->ttl_ms;
    t->cache.scope = opts->scope == AC_CACHE_ENGINE ? AC_CACHE_DECL_ENGINE : AC_CACHE_DECL_SESSION;
    t->cache.max_entries = opts->max_entries ? opts->max_entries : AC_CACHE_DEFAULT_MAX;
    if (opts->ttl_ms > 0)
        t->idempotent = 1;
    if (err)
        memset(err, 0, sizeof *err);
    return 0;
}

const char *ac_session_tool_call_cached(ac_session *s, const char *id)
{
    return s && id ? json_string_value(json_object_get(s->cache_hits, id)) : NULL;
}
