/* Conversation data model: messages in time order, tool call records with an
 * id index, tool definitions, the ReAct context and counters. See
 * conversation.h for the contract; the layout is in conv_internal.h. */
#include "context/conv_internal.h"
#include "context/request_cache.h"
#include "util/grow.h"
#include "util/utf8.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPOS ((size_t)-1)

static const char *const role_names[] = {"system", "user", "assistant", "tool"}; /* ORDER ROLE */

const char *ac_role_name(ac_role role)
{
    if ((unsigned)role > AC_ROLE_TOOL)
        return "?";
    return role_names[role];
}

int ac_role_parse(const char *name, ac_role *out)
{
    for (unsigned i = 0; i <= AC_ROLE_TOOL; i++) {
        if (name && strcmp(name, role_names[i]) == 0) {
            *out = (ac_role)i;
            return 0;
        }
    }
    return -1;
}

const char *ac_conv_strerror(int status)
{
    switch (status) {
    case AC_CONV_OK:
        return "ok";
    case AC_CONV_ENOMEM:
        return "out of memory";
    case AC_CONV_EINVAL:
        return "invalid argument";
    case AC_CONV_ENOTFOUND:
        return "not found";
    case AC_CONV_EDUP:
        return "tool call already has a result";
    case AC_CONV_ESPLIT:
        return "edit would separate a tool call from its result";
    default:
        return "unknown status";
    }
}

/* Copies s; every byte that does not start a valid UTF-8 sequence becomes
 * U+FFFD (util/utf8.h), so whatever a tool or server sent can always be
 * written as JSON. */
char *ac_conv__strdup(const char *s)
{
    return ac_utf8_repair(s, strlen(s), AC_UTF8_KEEP_NUL, NULL);
}

ac_conv *ac_conv_new(void)
{
    ac_conv *conv = calloc(1, sizeof *conv);
    if (!conv)
        return NULL;
    conv->scale_milli = AC_TOKENS_SCALE_ONE;
    return conv;
}

void ac_conv__message_free(ac_message *m)
{
    if (!m)
        return;
    free((void *)m->id);
    if (m->role != AC_ROLE_TOOL || (m->flags & AC_MSG_CLEARED))
        free((void *)m->content);
    free((void *)m->reasoning);
    free((void *)m->thinking);
    for (size_t i = 0; i < m->n_tool_calls; i++)
        free((void *)m->tool_call_ids[i]);
    free((void *)m->tool_call_ids);
    free((void *)m->tool_call_id);
    free(m);
}

void ac_conv__call_free(ac_tool_call *c)
{
    if (!c)
        return;
    free((void *)c->id);
    free((void *)c->name);
    free((void *)c->arguments);
    free((void *)c->result);
    free(c);
}

void ac_conv_free(ac_conv *conv)
{
    if (!conv)
        return;
    /* Messages first: tool messages borrow from records. */
    for (size_t i = 0; i < conv->n_msgs; i++)
        ac_conv__message_free(conv->msgs[i]);
    free(conv->msgs);
    for (size_t i = 0; i < conv->n_calls; i++)
        ac_conv__call_free(conv->calls[i]);
    free(conv->calls);
    free(conv->call_idx.slots);
    free(conv->tool_idx.slots);
    for (size_t i = 0; i < conv->n_tools; i++) {
        free((void *)conv->tools[i].name);
        free((void *)conv->tools[i].description);
        free((void *)conv->tools[i].schema_json);
    }
    free(conv->tools);
    for (size_t i = 0; i < conv->n_iter; i++)
        free(conv->iter_calls[i]);
    free(conv->iter_calls);
    ac_reqcache_free(conv->reqcache);
    free(conv);
}

/* ---------------------------------------------------------------- index */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

typedef const char *(*key_at_fn)(const ac_conv *conv, size_t i);

static const char *call_key(const ac_conv *conv, size_t i)
{
    return conv->calls[i]->id;
}

static const char *tool_key(const ac_conv *conv, size_t i)
{
    return conv->tools[i].name;
}

/* The position of key in index x (key_at gives the string at a position), or NPOS. */
static size_t index_find(const ac_conv *conv, const ac_conv_index *x, key_at_fn key_at,
                         const char *key)
{
    if (!x->n || !key)
        return NPOS;
    size_t mask = x->n - 1;
    for (size_t i = (size_t)hash_str(key) & mask;; i = (i + 1) & mask) {
        uint32_t v = x->slots[i];
        if (v == 0)
            return NPOS;
        if (strcmp(key_at(conv, v - 1), key) == 0)
            return v - 1;
    }
}

size_t ac_conv__call_index(const ac_conv *conv, const char *id)
{
    return index_find(conv, &conv->call_idx, call_key, id);
}

static void slots_insert(uint32_t *slots, size_t n_slots, const char *id, uint32_t value)
{
    size_t mask = n_slots - 1;
    size_t i = (size_t)hash_str(id) & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = value;
}

/* Makes room in index x for `need` entries (load factor <= 1/2), rebuilt from the `count`
 * there are. */
static int index_reserve(const ac_conv *conv, ac_conv_index *x, key_at_fn key_at, size_t count,
                         size_t need)
{
    if (need * 2 <= x->n)
        return 0;
    if (need >= UINT32_MAX / 4)
        return -1;
    size_t n = x->n ? x->n : 8;
    while (need * 2 > n)
        n *= 2;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < count; i++)
        slots_insert(slots, n, key_at(conv, i), (uint32_t)(i + 1));
    free(x->slots);
    x->slots = slots;
    x->n = n;
    return 0;
}

/* Appends a record; capacity must have been reserved. */
static void calls_append(ac_conv *conv, ac_tool_call *c)
{
    conv->calls[conv->n_calls] = c;
    slots_insert(conv->call_idx.slots, conv->call_idx.n, c->id, (uint32_t)(conv->n_calls + 1));
    conv->n_calls++;
}

int ac_conv__push_call(ac_conv *conv, ac_tool_call *c)
{
    if (ac_grow((void **)&conv->calls, &conv->cap_calls, conv->n_calls + 1, sizeof *conv->calls) ||
        index_reserve(conv, &conv->call_idx, call_key, conv->n_calls, conv->n_calls + 1)) {
        ac_conv__call_free(c);
        return AC_CONV_ENOMEM;
    }
    calls_append(conv, c);
    return AC_CONV_OK;
}

const ac_tool_call *ac_conv_tool_call(const ac_conv *conv, const char *id)
{
    size_t i = ac_conv__call_index(conv, id);
    return i == NPOS ? NULL : conv->calls[i];
}

size_t ac_conv_tool_call_count(const ac_conv *conv)
{
    return conv->n_calls;
}

const ac_tool_call *ac_conv_tool_call_at(const ac_conv *conv, size_t i)
{
    return i < conv->n_calls ? conv->calls[i] : NULL;
}

/* ------------------------------------------------------------- messages */

/* Position for a message created at t: after every message created at or
 * before t (upper bound), so equal times keep insertion order. */
static size_t insert_pos(const ac_conv *conv, int64_t t)
{
    size_t lo = 0, hi = conv->n_msgs;
    if (hi == 0 || conv->msgs[hi - 1]->created_at_ms <= t)
        return hi;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (conv->msgs[mid]->created_at_ms <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Inserts m in time order; capacity must have been reserved. */
static void msgs_insert(ac_conv *conv, ac_message *m)
{
    size_t pos = insert_pos(conv, m->created_at_ms);
    memmove(conv->msgs + pos + 1, conv->msgs + pos, (conv->n_msgs - pos) * sizeof *conv->msgs);
    conv->msgs[pos] = m;
    conv->n_msgs++;
    if (pos < conv->floor)
        conv->floor++;
}

static int msgs_reserve(ac_conv *conv, size_t extra)
{
    return ac_grow((void **)&conv->msgs, &conv->cap_msgs, conv->n_msgs + extra, sizeof *conv->msgs);
}

/* Loader path: appends in the given order (the loader checks the order). */
int ac_conv__push_message(ac_conv *conv, ac_message *m)
{
    if (msgs_reserve(conv, 1)) {
        ac_conv__message_free(m);
        return AC_CONV_ENOMEM;
    }
    conv->msgs[conv->n_msgs++] = m;
    return AC_CONV_OK;
}

static char *make_msg_id(uint64_t seq)
{
    char buf[32];
    snprintf(buf, sizeof buf, "m%llu", (unsigned long long)seq);
    return ac_conv__strdup(buf);
}

/* A new plain message with an id from seq; NULL when out of memory. */
static ac_message *message_new(uint64_t seq, ac_role role, const char *content, unsigned flags,
                               int64_t created, int64_t updated)
{
    ac_message *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->role = role;
    m->flags = flags;
    m->created_at_ms = created;
    m->updated_at_ms = updated;
    m->id = make_msg_id(seq);
    m->content = ac_conv__strdup(content ? content : "");
    if (!m->id || !m->content) {
        ac_conv__message_free(m);
        return NULL;
    }
    return m;
}

const char *ac_conv_add_message_flags(ac_conv *conv, ac_role role, const char *content,
                                      unsigned flags, int64_t t_ms)
{
    if (!conv || !content || (unsigned)role >= AC_ROLE_TOOL || (flags & ~AC_MSG_FLAGS_ALL) ||
        (flags & AC_MSG_CLEARED))
        return NULL;
    if (msgs_reserve(conv, 1))
        return NULL;
    ac_message *m = message_new(conv->next_msg_seq + 1, role, content, flags, t_ms, t_ms);
    if (!m)
        return NULL;
    conv->next_msg_seq++;
    msgs_insert(conv, m);
    return m->id;
}

const char *ac_conv_add_message(ac_conv *conv, ac_role role, const char *content, int64_t t_ms)
{
    return ac_conv_add_message_flags(conv, role, content, 0, t_ms);
}

/* Is id used by an existing record or by one of the first n new ones? */
static int id_taken(const ac_conv *conv, ac_tool_call **fresh, size_t n, const char *id)
{
    if (ac_conv__call_index(conv, id) != NPOS)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(fresh[i]->id, id) == 0)
            return 1;
    return 0;
}

/* Picks the final id of a new call: the model's id, "call_<seq>" when it gave
 * none, or "<id>_<seq>" when it is already in use. */
static char *choose_call_id(const ac_conv *conv, ac_tool_call **fresh, size_t n, const char *want,
                            uint64_t *seq)
{
    /* compared as stored: invalid bytes already turned into U+FFFD, so two
     * ids that differ only in such bytes cannot end up equal */
    char *clean = want && *want ? ac_conv__strdup(want) : NULL;
    if (want && *want && !clean)
        return NULL;
    if (clean && !id_taken(conv, fresh, n, clean))
        return clean;
    const char *base = clean ? clean : "call";
    size_t cap = strlen(base) + 32;
    char *buf = malloc(cap);
    if (buf) {
        do {
            (*seq)++;
            snprintf(buf, cap, "%s_%llu", base, (unsigned long long)*seq);
        } while (id_taken(conv, fresh, n, buf));
    }
    free(clean);
    return buf;
}

/* Whether text is a JSON array (thinking text may hold U+0000). */
static int is_json_array(const char *text)
{
    json_t *j = json_loads(text, JSON_ALLOW_NUL, NULL);
    int ok = json_is_array(j);
    json_decref(j);
    return ok;
}

int ac_conv_set_thinking(ac_conv *conv, size_t index, const char *blocks_json)
{
    if (!conv)
        return AC_CONV_EINVAL;
    if (index >= conv->n_msgs)
        return AC_CONV_ENOTFOUND;
    ac_message *m = conv->msgs[index];
    if (m->role != AC_ROLE_ASSISTANT)
        return AC_CONV_EINVAL;
    char *copy = NULL;
    if (blocks_json) {
        if (!is_json_array(blocks_json))
            return AC_CONV_EINVAL;
        if (!(copy = ac_conv__strdup(blocks_json)))
            return AC_CONV_ENOMEM;
    }
    free((void *)m->thinking);
    m->thinking = copy;
    /* the new text may sit where an older one did: no serialized form of
     * the old one may be taken for it */
    ac_reqcache_free(conv->reqcache);
    conv->reqcache = NULL;
    return AC_CONV_OK;
}

int ac_conv_add_assistant(ac_conv *conv, const char *content, const char *reasoning,
                          const ac_tool_call_in *calls, size_t n, int64_t t_ms)
{
    return ac_conv_add_assistant_thinking(conv, content, reasoning, NULL, calls, n, t_ms);
}

int ac_conv_add_assistant_thinking(ac_conv *conv, const char *content, const char *reasoning,
                                   const char *thinking, const ac_tool_call_in *calls, size_t n,
                                   int64_t t_ms)
{
    if (!conv || (n && !calls) || (thinking && !is_json_array(thinking)))
        return AC_CONV_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!calls[i].name || !*calls[i].name)
            return AC_CONV_EINVAL;

    int rc = AC_CONV_ENOMEM;
    uint64_t call_seq = conv->next_call_seq;
    size_t n_internal = 0;
    ac_tool_call **fresh = NULL;
    ac_message *m = message_new(conv->next_msg_seq + 1, AC_ROLE_ASSISTANT, content, 0, t_ms, t_ms);
    if (!m)
        goto fail;
    if (reasoning && !(m->reasoning = ac_conv__strdup(reasoning)))
        goto fail;
    if (thinking && !(m->thinking = ac_conv__strdup(thinking)))
        goto fail;
    if (n) {
        fresh = calloc(n, sizeof *fresh);
        char **ids = calloc(n, sizeof *ids);
        m->tool_call_ids = (const char *const *)ids;
        if (!fresh || !ids)
            goto fail;
        for (size_t i = 0; i < n; i++) {
            ac_tool_call *c = calloc(1, sizeof *c);
            if (!c)
                goto fail;
            fresh[i] = c;
            c->id = choose_call_id(conv, fresh, i, calls[i].id, &call_seq);
            c->name = ac_conv__strdup(calls[i].name);
            c->arguments = ac_conv__strdup(calls[i].arguments ? calls[i].arguments : "");
            c->called_at_ms = t_ms;
            c->internal = calls[i].internal ? 1 : 0;
            n_internal += (size_t)c->internal;
            if (!c->id || !c->name || !c->arguments)
                goto fail;
            ids[i] = ac_conv__strdup(c->id);
            m->n_tool_calls = i + 1;
            if (!ids[i])
                goto fail;
        }
    }
    if (n && n_internal == n)
        m->flags |= AC_MSG_INTERNAL;

    /* Reserve everything, then commit without further failure points. */
    if (msgs_reserve(conv, 1) ||
        ac_grow((void **)&conv->calls, &conv->cap_calls, conv->n_calls + n, sizeof *conv->calls) ||
        index_reserve(conv, &conv->call_idx, call_key, conv->n_calls, conv->n_calls + n) ||
        ac_grow((void **)&conv->iter_calls, &conv->cap_iter, conv->n_iter + n,
                sizeof *conv->iter_calls))
        goto fail;
    char **iter_ids = NULL;
    if (n) {
        iter_ids = calloc(n, sizeof *iter_ids);
        if (!iter_ids)
            goto fail;
        for (size_t i = 0; i < n; i++) {
            if (!(iter_ids[i] = ac_conv__strdup(fresh[i]->id))) {
                for (size_t j = 0; j < i; j++)
                    free(iter_ids[j]);
                free(iter_ids);
                goto fail;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        calls_append(conv, fresh[i]);
        conv->iter_calls[conv->n_iter++] = iter_ids[i];
    }
    free(iter_ids);
    free(fresh);
    conv->next_call_seq = call_seq;
    conv->next_msg_seq++;
    msgs_insert(conv, m);
    return AC_CONV_OK;

fail:
    if (fresh)
        for (size_t i = 0; i < n; i++)
            ac_conv__call_free(fresh[i]);
    free(fresh);
    ac_conv__message_free(m);
    return rc;
}

int ac_conv_set_tool_result(ac_conv *conv, const char *call_id, int ok, const char *content,
                            int64_t t_ms)
{
    if (!conv || !call_id || !content)
        return AC_CONV_EINVAL;
    size_t ci = ac_conv__call_index(conv, call_id);
    if (ci == NPOS)
        return AC_CONV_ENOTFOUND;
    ac_tool_call *c = conv->calls[ci];
    if (c->state != AC_CALL_NONE)
        return AC_CONV_EDUP;

    char *result = ac_conv__strdup(content);
    ac_message *m = calloc(1, sizeof *m);
    if (!result || !m || msgs_reserve(conv, 1))
        goto fail;
    m->role = AC_ROLE_TOOL;
    m->flags = c->internal ? AC_MSG_INTERNAL : 0;
    m->created_at_ms = m->updated_at_ms = t_ms;
    m->id = make_msg_id(conv->next_msg_seq + 1);
    m->tool_call_id = ac_conv__strdup(c->id);
    if (!m->id || !m->tool_call_id)
        goto fail;
    c->result = result;
    c->state = ok ? AC_CALL_SUCCESS : AC_CALL_FAILURE;
    c->received_at_ms = t_ms;
    m->content = c->result; /* borrowed while not cleared */
    conv->next_msg_seq++;
    msgs_insert(conv, m);
    return AC_CONV_OK;

fail:
    free(result);
    ac_conv__message_free(m); /* content is NULL here */
    return AC_CONV_ENOMEM;
}

size_t ac_conv_message_count(const ac_conv *conv)
{
    return conv->n_msgs;
}

const ac_message *ac_conv_message(const ac_conv *conv, size_t i)
{
    return i < conv->n_msgs ? conv->msgs[i] : NULL;
}

size_t ac_conv_find_message(const ac_conv *conv, const char *id)
{
    for (size_t i = 0; id && i < conv->n_msgs; i++)
        if (strcmp(conv->msgs[i]->id, id) == 0)
            return i;
    return NPOS;
}

/* --------------------------------------------------------------- search */

static int call_matches(const ac_tool_call *c, const ac_call_query *q)
{
    if (c->internal)
        return 0;
    if (q->name && strcmp(c->name, q->name) != 0)
        return 0;
    if (q->from_ms && c->called_at_ms < q->from_ms)
        return 0;
    if (q->to_ms && c->called_at_ms > q->to_ms)
        return 0;
    if (q->text && *q->text && !strstr(c->arguments, q->text) &&
        !(c->result && strstr(c->result, q->text)))
        return 0;
    return 1;
}

size_t ac_conv_search_calls(const ac_conv *conv, const ac_call_query *q, const ac_tool_call **out,
                            size_t cap)
{
    static const ac_call_query all = {0};
    if (!q)
        q = &all;
    size_t skipped = 0, found = 0;
    for (size_t i = conv->n_calls; i-- > 0;) {
        const ac_tool_call *c = conv->calls[i];
        if (!call_matches(c, q))
            continue;
        if (skipped < q->skip) {
            skipped++;
            continue;
        }
        if (out && found < cap)
            out[found] = c;
        found++;
    }
    return found;
}

/* ---------------------------------------------------------------- tools */

char *ac_conv__normalize_schema(const char *schema_json)
{
    json_error_t jerr;
    json_t *j = json_loads(schema_json, JSON_REJECT_DUPLICATES, &jerr);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    return s;
}

int ac_conv_add_tool_def(ac_conv *conv, const char *name, const char *description,
                         const char *schema_json)
{
    if (!conv || !name || !*name || !schema_json)
        return AC_CONV_EINVAL;
    char *schema = ac_conv__normalize_schema(schema_json);
    if (!schema)
        return AC_CONV_EINVAL;
    char *n = ac_conv__strdup(name);
    char *d = ac_conv__strdup(description ? description : "");
    if (!n || !d)
        goto fail;
    size_t at = index_find(conv, &conv->tool_idx, tool_key, name);
    if (at != NPOS) {
        ac_tool_def *t = &conv->tools[at];
        free((void *)t->name);
        free((void *)t->description);
        free((void *)t->schema_json);
        t->name = n;
        t->description = d;
        t->schema_json = schema;
        return AC_CONV_OK;
    }
    if (ac_grow((void **)&conv->tools, &conv->cap_tools, conv->n_tools + 1, sizeof *conv->tools) ||
        index_reserve(conv, &conv->tool_idx, tool_key, conv->n_tools, conv->n_tools + 1))
        goto fail;
    conv->tools[conv->n_tools] = (ac_tool_def){n, d, schema};
    slots_insert(conv->tool_idx.slots, conv->tool_idx.n, n, (uint32_t)(conv->n_tools + 1));
    conv->n_tools++;
    return AC_CONV_OK;

fail:
    free(n);
    free(d);
    free(schema);
    return AC_CONV_ENOMEM;
}

void ac_conv_clear_tool_defs(ac_conv *conv)
{
    for (size_t i = 0; conv && i < conv->n_tools; i++) {
        free((void *)conv->tools[i].name);
        free((void *)conv->tools[i].description);
        free((void *)conv->tools[i].schema_json);
    }
    if (conv) {
        conv->n_tools = 0;
        if (conv->tool_idx.n)
            memset(conv->tool_idx.slots, 0, conv->tool_idx.n * sizeof *conv->tool_idx.slots);
    }
}

int ac_conv_tool_defs_equal(const ac_conv *conv, const json_t *defs)
{
    if (!json_is_array(defs) || json_array_size(defs) != conv->n_tools)
        return 0;
    for (size_t i = 0; i < conv->n_tools; i++) {
        const json_t *d = json_array_get(defs, i);
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *desc = json_string_value(json_object_get(d, "description"));
        const ac_tool_def *t = &conv->tools[i];
        if (!name || strcmp(name, t->name) || strcmp(desc ? desc : "", t->description))
            return 0;
        json_t *params = json_object_get(d, "parameters");
        char *schema = params ? json_dumps(params, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        int same = schema ? !strcmp(schema, t->schema_json)
                          : !strcmp(t->schema_json, "{\"type\":\"object\"}");
        free(schema);
        if (!same)
            return 0;
    }
    return 1;
}

size_t ac_conv_tool_def_count(const ac_conv *conv)
{
    return conv->n_tools;
}

const ac_tool_def *ac_conv_tool_def(const ac_conv *conv, size_t i)
{
    return i < conv->n_tools ? &conv->tools[i] : NULL;
}

const ac_tool_def *ac_conv_find_tool_def(const ac_conv *conv, const char *name)
{
    size_t at = index_find(conv, &conv->tool_idx, tool_key, name);
    return at == NPOS ? NULL : &conv->tools[at];
}

/* ----------------------------------------------------------- compaction */

int ac_conv_replace_range(ac_conv *conv, size_t from, size_t to, const ac_message_in *repl,
                          size_t n, int64_t t_ms)
{
    if (!conv || from > to || to > conv->n_msgs || (n && !repl))
        return AC_CONV_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)repl[i].role >= AC_ROLE_TOOL || !repl[i].content ||
            (repl[i].flags & ~(AC_MSG_SUMMARY | AC_MSG_INTERNAL)))
            return AC_CONV_EINVAL;
    }

    /* Closure check: mark the calls issued inside the range. */
    unsigned char *inside = NULL;
    if (conv->n_calls) {
        inside = calloc(conv->n_calls, 1);
        if (!inside)
            return AC_CONV_ENOMEM;
    }
    for (size_t i = from; i < to; i++) {
        const ac_message *m = conv->msgs[i];
        for (size_t k = 0; k < m->n_tool_calls; k++) {
            size_t ci = ac_conv__call_index(conv, m->tool_call_ids[k]);
            if (ci != NPOS)
                inside[ci] = 1;
        }
    }
    for (size_t i = 0; i < conv->n_msgs; i++) {
        const ac_message *m = conv->msgs[i];
        if (m->role != AC_ROLE_TOOL)
            continue;
        size_t ci = ac_conv__call_index(conv, m->tool_call_id);
        int issued_inside = ci != NPOS && inside[ci];
        int is_inside = i >= from && i < to;
        if (issued_inside != is_inside) {
            free(inside);
            return AC_CONV_ESPLIT;
        }
    }
    free(inside);

    int64_t created = t_ms;
    if (from < to)
        created = conv->msgs[from]->created_at_ms;
    else if (from > 0)
        created = conv->msgs[from - 1]->created_at_ms;
    else if (from < conv->n_msgs)
        created = conv->msgs[from]->created_at_ms;

    size_t removed = to - from;
    if (n > removed && msgs_reserve(conv, n - removed))
        return AC_CONV_ENOMEM;
    ac_message **fresh = n ? calloc(n, sizeof *fresh) : NULL;
    if (n && !fresh)
        return AC_CONV_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        fresh[i] = message_new(conv->next_msg_seq + 1 + i, repl[i].role, repl[i].content,
                               repl[i].flags, created, t_ms);
        if (!fresh[i]) {
            for (size_t j = 0; j < i; j++)
                ac_conv__message_free(fresh[j]);
            free(fresh);
            return AC_CONV_ENOMEM;
        }
    }

    for (size_t i = from; i < to; i++)
        ac_conv__message_free(conv->msgs[i]);
    memmove(conv->msgs + from + n, conv->msgs + to, (conv->n_msgs - to) * sizeof *conv->msgs);
    for (size_t i = 0; i < n; i++)
        conv->msgs[from + i] = fresh[i];
    free(fresh);
    conv->n_msgs = conv->n_msgs - removed + n;
    conv->next_msg_seq += n;

    if (conv->floor >= to)
        conv->floor = conv->floor - removed + n;
    else if (conv->floor > from)
        conv->floor = from;
    return AC_CONV_OK;
}

static ac_message *tool_msg_at(ac_conv *conv, size_t msg_index, ac_tool_call **rec)
{
    if (!conv || msg_index >= conv->n_msgs)
        return NULL;
    ac_message *m = conv->msgs[msg_index];
    if (m->role != AC_ROLE_TOOL)
        return NULL;
    size_t ci = ac_conv__call_index(conv, m->tool_call_id);
    if (ci == NPOS)
        return NULL;
    *rec = conv->calls[ci];
    return m;
}

int ac_conv_clear_tool_result(ac_conv *conv, size_t msg_index, const char *marker, int64_t t_ms)
{
    ac_tool_call *rec = NULL;
    ac_message *m = tool_msg_at(conv, msg_index, &rec);
    if (!m || !marker)
        return m ? AC_CONV_EINVAL : AC_CONV_ENOTFOUND;
    char *copy = ac_conv__strdup(marker);
    if (!copy)
        return AC_CONV_ENOMEM;
    if (m->flags & AC_MSG_CLEARED)
        free((void *)m->content);
    m->content = copy;
    m->flags |= AC_MSG_CLEARED;
    m->updated_at_ms = t_ms;
    return AC_CONV_OK;
}

int ac_conv_pin(ac_conv *conv, size_t msg_index, int64_t t_ms)
{
    if (!conv || msg_index >= conv->n_msgs)
        return AC_CONV_ENOTFOUND;
    ac_message *m = conv->msgs[msg_index];
    if (!(m->flags & AC_MSG_PINNED)) {
        m->flags |= AC_MSG_PINNED;
        m->updated_at_ms = t_ms;
    }
    return AC_CONV_OK;
}

int ac_conv_restore_tool_result(ac_conv *conv, size_t msg_index, int64_t t_ms)
{
    ac_tool_call *rec = NULL;
    ac_message *m = tool_msg_at(conv, msg_index, &rec);
    if (!m)
        return AC_CONV_ENOTFOUND;
    if (!(m->flags & AC_MSG_CLEARED))
        return AC_CONV_OK;
    free((void *)m->content);
    m->content = rec->result;
    m->flags &= ~AC_MSG_CLEARED;
    m->updated_at_ms = t_ms;
    return AC_CONV_OK;
}

/* --------------------------------------------------------- ReAct context */

size_t ac_conv_window(const ac_conv *conv)
{
    return conv->window;
}

void ac_conv_set_window(ac_conv *conv, size_t messages)
{
    conv->window = messages;
}

size_t ac_conv_floor(const ac_conv *conv)
{
    return conv->floor;
}

int ac_conv_set_floor(ac_conv *conv, size_t floor)
{
    if (floor > conv->n_msgs)
        return AC_CONV_EINVAL;
    conv->floor = floor;
    return AC_CONV_OK;
}

size_t ac_conv_iter_call_count(const ac_conv *conv)
{
    return conv->n_iter;
}

const char *ac_conv_iter_call(const ac_conv *conv, size_t i)
{
    return i < conv->n_iter ? conv->iter_calls[i] : NULL;
}

size_t ac_conv_iter_pending(const ac_conv *conv)
{
    size_t n = 0;
    for (size_t i = 0; i < conv->n_iter; i++) {
        const ac_tool_call *c = ac_conv_tool_call(conv, conv->iter_calls[i]);
        if (c && c->state == AC_CALL_NONE)
            n++;
    }
    return n;
}

int ac_conv__push_iter_call(ac_conv *conv, const char *id)
{
    if (ac_grow((void **)&conv->iter_calls, &conv->cap_iter, conv->n_iter + 1,
                sizeof *conv->iter_calls))
        return AC_CONV_ENOMEM;
    char *copy = ac_conv__strdup(id);
    if (!copy)
        return AC_CONV_ENOMEM;
    conv->iter_calls[conv->n_iter++] = copy;
    return AC_CONV_OK;
}

void ac_conv_next_iteration(ac_conv *conv)
{
    for (size_t i = 0; i < conv->n_iter; i++)
        free(conv->iter_calls[i]);
    conv->n_iter = 0;
    conv->iteration++;
}

int ac_conv__issuers(const ac_conv *conv, size_t **out)
{
    *out = NULL;
    if (!conv->n_calls)
        return AC_CONV_OK;
    size_t *map = malloc(conv->n_calls * sizeof *map);
    if (!map)
        return AC_CONV_ENOMEM;
    for (size_t i = 0; i < conv->n_calls; i++)
        map[i] = NPOS;
    for (size_t i = 0; i < conv->n_msgs; i++) {
        const ac_message *m = conv->msgs[i];
        for (size_t k = 0; k < m->n_tool_calls; k++) {
            size_t ci = ac_conv__call_index(conv, m->tool_call_ids[k]);
            if (ci != NPOS)
                map[ci] = i;
        }
    }
    *out = map;
    return AC_CONV_OK;
}

/* Issuer of the call a tool message answers, or NPOS. */
static size_t issuer_of(const ac_conv *conv, const size_t *issuers, const ac_message *m)
{
    size_t ci = ac_conv__call_index(conv, m->tool_call_id);
    return ci == NPOS ? NPOS : issuers[ci];
}

int ac_conv_visible(const ac_conv *conv, size_t **idx_out, size_t *n_out)
{
    *idx_out = NULL;
    *n_out = 0;
    size_t n = conv->n_msgs;
    size_t floor = conv->floor < n ? conv->floor : n;
    if (n == 0)
        return AC_CONV_OK;

    size_t *issuers = NULL;
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx || ac_conv__issuers(conv, &issuers)) {
        free(idx);
        return AC_CONV_ENOMEM;
    }

    size_t start = floor;
    if (conv->window && n - floor > conv->window)
        start = n - conv->window;
    /* Extend back so no visible tool message loses its issuer; start only
     * moves down, so one downward scan sees every message it adds. */
    for (size_t i = n; i-- > start;) {
        const ac_message *m = conv->msgs[i];
        if (m->role != AC_ROLE_TOOL)
            continue;
        size_t a = issuer_of(conv, issuers, m);
        if (a != NPOS && a < start && a >= floor)
            start = a;
    }

    size_t k = 0;
    int first_user_seen = 0;
    for (size_t i = 0; i < start; i++) {
        const ac_message *m = conv->msgs[i];
        int keep = 0;
        if (m->role == AC_ROLE_SYSTEM && !(m->flags & AC_MSG_SUMMARY))
            keep = 1;
        else if (i >= floor && (m->flags & AC_MSG_SUMMARY))
            keep = 1;
        else if (i >= floor && m->role == AC_ROLE_USER && !first_user_seen)
            keep = 1;
        if (i >= floor && m->role == AC_ROLE_USER)
            first_user_seen = 1;
        if (keep)
            idx[k++] = i;
    }
    for (size_t i = start; i < n; i++) {
        const ac_message *m = conv->msgs[i];
        if (m->role == AC_ROLE_TOOL) {
            size_t a = issuer_of(conv, issuers, m);
            if (a == NPOS || a < floor)
                continue;
        }
        idx[k++] = i;
    }
    free(issuers);
    if (k == 0) {
        free(idx);
        return AC_CONV_OK;
    }
    *idx_out = idx;
    *n_out = k;
    return AC_CONV_OK;
}

/* -------------------------------------------------------------- counters */

int64_t ac_conv_last_llm_call_ms(const ac_conv *conv)
{
    return conv->last_llm_call_ms;
}

void ac_conv_set_last_llm_call_ms(ac_conv *conv, int64_t t_ms)
{
    conv->last_llm_call_ms = t_ms;
}

int64_t ac_conv_iteration(const ac_conv *conv)
{
    return conv->iteration;
}

void ac_conv_set_iteration(ac_conv *conv, int64_t n)
{
    conv->iteration = n;
}

int64_t ac_conv_retries(const ac_conv *conv)
{
    return conv->retries;
}

void ac_conv_set_retries(ac_conv *conv, int64_t n)
{
    conv->retries = n;
}

void ac_conv_add_usage(ac_conv *conv, int64_t input, int64_t output)
{
    if (input >= 0) {
        conv->usage_input += input;
        conv->last_input = input;
    }
    if (output >= 0)
        conv->usage_output += output;
}

int64_t ac_conv_usage_input(const ac_conv *conv)
{
    return conv->usage_input;
}

int64_t ac_conv_usage_output(const ac_conv *conv)
{
    return conv->usage_output;
}

int64_t ac_conv_last_input_tokens(const ac_conv *conv)
{
    return conv->last_input;
}
