/* JSON form of a conversation (snapshots, journals, debugging).
 *
 * Layout, with keys always in this order (optional keys only when set):
 *
 *   {"version":1,"next_msg":N,"next_call":N,"window":N,"floor":N,
 *    "iteration":N,"retries":N,"last_llm_call_ms":N,
 *    "usage":{"input":N,"output":N,"last_input":N},
 *    "calibration":{"last_raw":N,"scale_milli":N,"samples":N},
 *    "tools":[{"name":S,"description":S,"parameters":{...}}],
 *    "tool_calls":[{"id":S,"name":S,"arguments":S,"called_at":N,
 *                   "state":"none"|"success"|"failure",
 *                   "result":S?,"received_at":N?,"internal":true?}],
 *    "messages":[{"id":S,"role":S,"created_at":N,"updated_at":N,
 *                 "content":S?,"reasoning":S?,"thinking":S?,"tool_calls":[S]?,
 *                 "tool_call_id":S?,"summary":true?,"cleared":true?,
 *                 "internal":true?,"pinned":true?}],
 *    "iteration_calls":[S]}
 *
 * A tool message that is not cleared has no "content": it is its record's
 * result. The loader accepts exactly this layout (unknown keys are errors)
 * and checks every cross reference, so whatever it accepts satisfies the
 * invariants listed in conversation.h. */
#include "context/conv_internal.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPOS ((size_t)-1)
#define FORMAT_VERSION 1
#define SCALE_MAX 1000000

static const char *const state_names[] = {"none", "success", "failure"}; /* ORDER ac_call_state */

/* ---------------------------------------------------------------- writer */

/* Adds v (a new reference, may be NULL) to o; -1 on any failure. */
static int put(json_t *o, const char *key, json_t *v)
{
    if (!v)
        return -1;
    return json_object_set_new(o, key, v);
}

static int put_int(json_t *o, const char *key, int64_t v)
{
    return put(o, key, json_integer((json_int_t)v));
}

static int put_str(json_t *o, const char *key, const char *s)
{
    return put(o, key, json_string(s));
}

static json_t *usage_json(const ac_conv *c)
{
    json_t *o = json_object();
    if (!o || put_int(o, "input", c->usage_input) || put_int(o, "output", c->usage_output) ||
        put_int(o, "last_input", c->last_input)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *calibration_json(const ac_conv *c)
{
    json_t *o = json_object();
    if (!o || put_int(o, "last_raw", c->est_last_raw) ||
        put_int(o, "scale_milli", c->scale_milli) || put_int(o, "samples", c->calib_samples)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *tools_json(const ac_conv *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->n_tools; i++) {
        const ac_tool_def *t = &c->tools[i];
        json_t *o = json_object();
        if (json_array_append_new(a, o) || put_str(o, "name", t->name) ||
            put_str(o, "description", t->description) ||
            put(o, "parameters", json_loads(t->schema_json, 0, NULL))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *ac_conv_call_json(const ac_tool_call *r)
{
    json_t *o = json_object();
    int bad = !o || put_str(o, "id", r->id) || put_str(o, "name", r->name) ||
              put_str(o, "arguments", r->arguments) || put_int(o, "called_at", r->called_at_ms) ||
              put_str(o, "state", state_names[r->state]);
    if (!bad && r->state != AC_CALL_NONE)
        bad = put_str(o, "result", r->result) || put_int(o, "received_at", r->received_at_ms);
    if (!bad && r->internal)
        bad = put(o, "internal", json_true());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *calls_json(const ac_conv *c)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < c->n_calls; i++)
        if (json_array_append_new(a, ac_conv_call_json(c->calls[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

json_t *ac_conv_message_json(const ac_message *m)
{
    json_t *o = json_object();
    int bad = !o || put_str(o, "id", m->id) || put_str(o, "role", ac_role_name(m->role)) ||
              put_int(o, "created_at", m->created_at_ms) ||
              put_int(o, "updated_at", m->updated_at_ms);
    if (!bad && (m->role != AC_ROLE_TOOL || (m->flags & AC_MSG_CLEARED)))
        bad = put_str(o, "content", m->content);
    if (!bad && m->reasoning)
        bad = put_str(o, "reasoning", m->reasoning);
    if (!bad && m->thinking) /* a JSON array, kept as the text sent back */
        bad = put_str(o, "thinking", m->thinking);
    if (!bad && m->n_tool_calls) {
        json_t *ids = json_array();
        bad = put(o, "tool_calls", ids);
        for (size_t k = 0; !bad && k < m->n_tool_calls; k++)
            bad = json_array_append_new(ids, json_string(m->tool_call_ids[k]));
    }
    if (!bad && m->tool_call_id)
        bad = put_str(o, "tool_call_id", m->tool_call_id);
    if (!bad && (m->flags & AC_MSG_SUMMARY))
        bad = put(o, "summary", json_true());
    if (!bad && (m->flags & AC_MSG_CLEARED))
        bad = put(o, "cleared", json_true());
    if (!bad && (m->flags & AC_MSG_INTERNAL))
        bad = put(o, "internal", json_true());
    if (!bad && (m->flags & AC_MSG_PINNED))
        bad = put(o, "pinned", json_true());
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *ac_conv_to_json(const ac_conv *c)
{
    char *out = NULL;
    json_t *root = json_object();
    if (!root || put_int(root, "version", FORMAT_VERSION) ||
        put_int(root, "next_msg", (int64_t)c->next_msg_seq) ||
        put_int(root, "next_call", (int64_t)c->next_call_seq) ||
        put_int(root, "window", (int64_t)c->window) || put_int(root, "floor", (int64_t)c->floor) ||
        put_int(root, "iteration", c->iteration) || put_int(root, "retries", c->retries) ||
        put_int(root, "last_llm_call_ms", c->last_llm_call_ms) ||
        put(root, "usage", usage_json(c)) || put(root, "calibration", calibration_json(c)) ||
        put(root, "tools", tools_json(c)) || put(root, "tool_calls", calls_json(c)))
        goto fail;
    json_t *msgs = json_array();
    if (put(root, "messages", msgs))
        goto fail;
    for (size_t i = 0; i < c->n_msgs; i++)
        if (json_array_append_new(msgs, ac_conv_message_json(c->msgs[i])))
            goto fail;
    json_t *iter = json_array();
    if (put(root, "iteration_calls", iter))
        goto fail;
    for (size_t i = 0; i < c->n_iter; i++)
        if (json_array_append_new(iter, json_string(c->iter_calls[i])))
            goto fail;
    out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
fail:
    json_decref(root);
    return out;
}

/* ---------------------------------------------------------------- loader */

typedef struct loader {
    char *err;
    size_t errcap;
    int failed;
} loader;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
fail_at(loader *L, const char *fmt, ...)
{
    if (!L->failed && L->err && L->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err, L->errcap, fmt, ap);
        va_end(ap);
    }
    L->failed = 1;
    return -1;
}

/* Only the listed keys may appear in o. */
static int check_keys(loader *L, json_t *o, const char *where, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        (void)v;
        int known = 0;
        for (size_t i = 0; keys[i]; i++)
            if (strcmp(keys[i], k) == 0)
                known = 1;
        if (!known)
            return fail_at(L, "%s: unknown key \"%s\"", where, k);
    }
    return 0;
}

static int get_obj(loader *L, json_t *o, const char *key, const char *where, json_t **out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v))
        return fail_at(L, "%s.%s: %s", where, key, v ? "expected an object" : "missing");
    *out = v;
    return 0;
}

static int get_arr(loader *L, json_t *o, const char *key, const char *where, json_t **out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_array(v))
        return fail_at(L, "%s.%s: %s", where, key, v ? "expected an array" : "missing");
    *out = v;
    return 0;
}

/* An integer in [min, max]. */
static int get_int(loader *L, json_t *o, const char *key, const char *where, int64_t min,
                   int64_t max, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return fail_at(L, "%s.%s: %s", where, key, v ? "expected an integer" : "missing");
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return fail_at(L, "%s.%s: %lld is out of range", where, key, (long long)x);
    *out = (int64_t)x;
    return 0;
}

/* A string without embedded NULs; optional ones may be absent (*out NULL). */
static int get_str(loader *L, json_t *o, const char *key, const char *where, int optional,
                   int nonempty, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v && optional)
        return 0;
    if (!json_is_string(v))
        return fail_at(L, "%s.%s: %s", where, key, v ? "expected a string" : "missing");
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v))
        return fail_at(L, "%s.%s: contains a NUL character", where, key);
    if (nonempty && !*s)
        return fail_at(L, "%s.%s: must not be empty", where, key);
    *out = s;
    return 0;
}

/* An optional flag; written only as true. */
static int get_flag(loader *L, json_t *o, const char *key, const char *where, int *out)
{
    json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v)
        return 0;
    if (!json_is_true(v))
        return fail_at(L, "%s.%s: expected true or no key", where, key);
    *out = 1;
    return 0;
}

static int load_tools(loader *L, ac_conv *c, json_t *arr)
{
    static const char *const keys[] = {"name", "description", "parameters", NULL};
    char where[64];
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        snprintf(where, sizeof where, "tools[%zu]", i);
        const char *name = NULL, *desc = NULL;
        json_t *params = NULL;
        if (!json_is_object(o))
            return fail_at(L, "%s: expected an object", where);
        if (check_keys(L, o, where, keys) || get_str(L, o, "name", where, 0, 1, &name) ||
            get_str(L, o, "description", where, 0, 0, &desc) ||
            get_obj(L, o, "parameters", where, &params))
            return -1;
        if (ac_conv_find_tool_def(c, name))
            return fail_at(L, "%s.name: duplicate tool \"%s\"", where, name);
        char *schema = json_dumps(params, JSON_COMPACT | JSON_PRESERVE_ORDER);
        int rc = schema ? ac_conv_add_tool_def(c, name, desc, schema) : AC_CONV_ENOMEM;
        free(schema);
        if (rc)
            return fail_at(L, "%s: %s", where, ac_conv_strerror(rc));
    }
    return 0;
}

static int load_calls(loader *L, ac_conv *c, json_t *arr)
{
    static const char *const keys[] = {"id",     "name",        "arguments", "called_at", "state",
                                       "result", "received_at", "internal",  NULL};
    char where[64];
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        snprintf(where, sizeof where, "tool_calls[%zu]", i);
        const char *id = NULL, *name = NULL, *args = NULL, *state = NULL, *result = NULL;
        int64_t called = 0, received = 0;
        int internal = 0;
        if (!json_is_object(o))
            return fail_at(L, "%s: expected an object", where);
        if (check_keys(L, o, where, keys) || get_str(L, o, "id", where, 0, 1, &id) ||
            get_str(L, o, "name", where, 0, 1, &name) ||
            get_str(L, o, "arguments", where, 0, 0, &args) ||
            get_int(L, o, "called_at", where, INT64_MIN, INT64_MAX, &called) ||
            get_str(L, o, "state", where, 0, 0, &state) ||
            get_str(L, o, "result", where, 1, 0, &result) ||
            get_flag(L, o, "internal", where, &internal))
            return -1;
        int st = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(state, state_names[k]) == 0)
                st = k;
        if (st < 0)
            return fail_at(L, "%s.state: unknown state \"%s\"", where, state);
        json_t *rv = json_object_get(o, "received_at");
        if (st == AC_CALL_NONE && (result || rv))
            return fail_at(L, "%s: a call without a result has result or received_at", where);
        if (st != AC_CALL_NONE &&
            (!result || get_int(L, o, "received_at", where, INT64_MIN, INT64_MAX, &received)))
            return L->failed ? -1 : fail_at(L, "%s.result: missing", where);
        if (ac_conv__call_index(c, id) != NPOS)
            return fail_at(L, "%s.id: duplicate tool call id \"%s\"", where, id);

        ac_tool_call *r = calloc(1, sizeof *r);
        if (!r)
            return fail_at(L, "out of memory");
        r->id = ac_conv__strdup(id);
        r->name = ac_conv__strdup(name);
        r->arguments = ac_conv__strdup(args);
        r->result = result ? ac_conv__strdup(result) : NULL;
        r->called_at_ms = called;
        r->received_at_ms = received;
        r->state = (ac_call_state)st;
        r->internal = internal;
        if (!r->id || !r->name || !r->arguments || (result && !r->result)) {
            ac_conv__call_free(r);
            return fail_at(L, "out of memory");
        }
        if (ac_conv__push_call(c, r))
            return fail_at(L, "out of memory");
    }
    return 0;
}

/* A generated message id "m<digits>" must not be ahead of the sequence, or a
 * later message could get the same id. */
static int id_ahead_of_seq(const char *id, uint64_t seq)
{
    if (id[0] != 'm' || !id[1])
        return 0;
    uint64_t v = 0;
    for (const char *p = id + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        if (v > (UINT64_MAX - 9) / 10)
            return 1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return v > seq;
}

typedef struct msg_check {
    size_t *issuer; /* per record: issuing message + 1, 0 = none */
    size_t *answer; /* per record: tool message + 1, 0 = none */
} msg_check;

/* A message's members as read from the document. */
typedef struct msg_fields {
    char where[64]; /* "messages[i]" */
    const char *id, *role_s, *content, *reasoning, *tcid, *thinking;
    int64_t created, updated;
    int summary, cleared, internal, pinned, borrowed;
    ac_role role;
    json_t *calls;
} msg_fields;

/* Reads the members of message object o. 0, or -1. */
static int msg_read(loader *L, json_t *o, msg_fields *f)
{
    static const char *const keys[] = {"id",           "role",      "created_at", "updated_at",
                                       "content",      "reasoning", "thinking",   "tool_calls",
                                       "tool_call_id", "summary",   "cleared",    "internal",
                                       "pinned",       NULL};
    const char *where = f->where;
    if (!json_is_object(o))
        return fail_at(L, "%s: expected an object", where);
    if (check_keys(L, o, where, keys) || get_str(L, o, "id", where, 0, 1, &f->id) ||
        get_str(L, o, "role", where, 0, 0, &f->role_s) ||
        get_int(L, o, "created_at", where, INT64_MIN, INT64_MAX, &f->created) ||
        get_int(L, o, "updated_at", where, INT64_MIN, INT64_MAX, &f->updated) ||
        get_str(L, o, "content", where, 1, 0, &f->content) ||
        get_str(L, o, "reasoning", where, 1, 0, &f->reasoning) ||
        get_str(L, o, "thinking", where, 1, 0, &f->thinking) ||
        get_str(L, o, "tool_call_id", where, 1, 1, &f->tcid) ||
        get_flag(L, o, "summary", where, &f->summary) ||
        get_flag(L, o, "cleared", where, &f->cleared) ||
        get_flag(L, o, "internal", where, &f->internal) ||
        get_flag(L, o, "pinned", where, &f->pinned))
        return -1;
    if (ac_role_parse(f->role_s, &f->role))
        return fail_at(L, "%s.role: unknown role \"%s\"", where, f->role_s);
    f->calls = json_object_get(o, "tool_calls");
    return 0;
}

/* The members agree with each other and with the messages before. 0, or -1. */
static int msg_check_fields(loader *L, const ac_conv *c, msg_fields *f)
{
    const char *where = f->where;
    ac_role role = f->role;
    if (id_ahead_of_seq(f->id, c->next_msg_seq))
        return fail_at(L, "%s.id: \"%s\" is ahead of next_msg", where, f->id);
    if (c->n_msgs && f->created < c->msgs[c->n_msgs - 1]->created_at_ms)
        return fail_at(L, "%s.created_at: messages are not in time order", where);
    if (role != AC_ROLE_ASSISTANT && (f->reasoning || f->thinking || f->calls))
        return fail_at(L, "%s: only assistant messages have reasoning, thinking or tool_calls",
                       where);
    if (f->thinking) {
        json_t *blocks = json_loads(f->thinking, JSON_ALLOW_NUL, NULL);
        int is_array = json_is_array(blocks);
        json_decref(blocks);
        if (!is_array)
            return fail_at(L, "%s.thinking: not the text of a JSON array", where);
    }
    if ((role == AC_ROLE_TOOL) != (f->tcid != NULL))
        return fail_at(L, "%s.tool_call_id: %s", where,
                       f->tcid ? "only tool messages have one" : "missing");
    if (f->cleared && role != AC_ROLE_TOOL)
        return fail_at(L, "%s.cleared: only tool messages can be cleared", where);
    f->borrowed = role == AC_ROLE_TOOL && !f->cleared;
    if (f->borrowed && f->content)
        return fail_at(L, "%s.content: a tool message that is not cleared has no content", where);
    if (!f->borrowed && !f->content)
        return fail_at(L, "%s.content: missing", where);
    if (f->calls && (!json_is_array(f->calls) || json_array_size(f->calls) == 0))
        return fail_at(L, "%s.tool_calls: expected a non-empty array", where);
    return 0;
}

/* A new message with the fields' own copies, or NULL when out of memory. */
static ac_message *msg_make(const msg_fields *f)
{
    ac_message *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->role = f->role;
    m->flags = (f->summary ? AC_MSG_SUMMARY : 0) | (f->cleared ? AC_MSG_CLEARED : 0) |
               (f->internal ? AC_MSG_INTERNAL : 0) | (f->pinned ? AC_MSG_PINNED : 0);
    m->created_at_ms = f->created;
    m->updated_at_ms = f->updated;
    m->id = ac_conv__strdup(f->id);
    int oom = !m->id;
    if (f->content && !oom)
        oom = !(m->content = ac_conv__strdup(f->content));
    if (f->reasoning && !oom)
        oom = !(m->reasoning = ac_conv__strdup(f->reasoning));
    if (f->thinking && !oom)
        oom = !(m->thinking = ac_conv__strdup(f->thinking));
    if (f->tcid && !oom)
        oom = !(m->tool_call_id = ac_conv__strdup(f->tcid));
    size_t ncalls = json_array_size(f->calls);
    if (ncalls && !oom) {
        m->tool_call_ids = calloc(ncalls, sizeof(char *));
        oom = !m->tool_call_ids;
    }
    if (oom) {
        ac_conv__message_free(m);
        return NULL;
    }
    return m;
}

/* The calls message i issues: each known and issued once. 0, or -1. */
static int msg_link_calls(loader *L, const ac_conv *c, const msg_fields *f, ac_message *m, size_t i,
                          msg_check *mc)
{
    for (size_t k = 0; k < json_array_size(f->calls); k++) {
        json_t *v = json_array_get(f->calls, k);
        const char *cid = json_string_value(v);
        size_t ci = cid ? ac_conv__call_index(c, cid) : NPOS;
        if (!cid)
            return fail_at(L, "%s.tool_calls[%zu]: expected a string", f->where, k);
        if (ci == NPOS)
            return fail_at(L, "%s.tool_calls[%zu]: unknown tool call \"%s\"", f->where, k, cid);
        if (mc->issuer[ci])
            return fail_at(L, "%s.tool_calls[%zu]: call \"%s\" already issued by messages[%zu]",
                           f->where, k, cid, mc->issuer[ci] - 1);
        char *copy = ac_conv__strdup(cid);
        if (!copy)
            return fail_at(L, "out of memory");
        ((char **)m->tool_call_ids)[k] = copy;
        m->n_tool_calls = k + 1;
        mc->issuer[ci] = i + 1;
    }
    return 0;
}

/* The call tool message i answers: one with a result, answered once. 0, or -1. */
static int msg_link_answer(loader *L, const ac_conv *c, const msg_fields *f, ac_message *m,
                           size_t i, msg_check *mc)
{
    size_t ci = ac_conv__call_index(c, f->tcid);
    const char *why = NULL;
    if (ci == NPOS)
        why = "names no tool call";
    else if (c->calls[ci]->state == AC_CALL_NONE)
        why = "answers a call that has no result";
    else if (mc->answer[ci])
        why = "answers a call that already has a tool message";
    if (why)
        return fail_at(L, "%s.tool_call_id: \"%s\" %s", f->where, f->tcid, why);
    mc->answer[ci] = i + 1;
    if (f->borrowed)
        m->content = c->calls[ci]->result;
    return 0;
}

static int load_message(loader *L, ac_conv *c, json_t *o, size_t i, msg_check *mc)
{
    msg_fields f;
    memset(&f, 0, sizeof f);
    snprintf(f.where, sizeof f.where, "messages[%zu]", i);
    f.role = AC_ROLE_USER;
    if (msg_read(L, o, &f) || msg_check_fields(L, c, &f))
        return -1;
    ac_message *m = msg_make(&f);
    if (!m)
        return fail_at(L, "out of memory");
    if (msg_link_calls(L, c, &f, m, i, mc) || (f.tcid && msg_link_answer(L, c, &f, m, i, mc))) {
        ac_conv__message_free(m);
        return -1;
    }
    if (ac_conv__push_message(c, m))
        return fail_at(L, "out of memory");
    return 0;
}

static int cmp_msg_id(const void *a, const void *b)
{
    const ac_message *x = *(const ac_message *const *)a, *y = *(const ac_message *const *)b;
    return strcmp(x->id, y->id);
}

/* Message ids are unique (sorting a copy keeps large loads O(n log n)). */
static int check_unique_ids(loader *L, const ac_conv *c)
{
    if (c->n_msgs < 2)
        return 0;
    ac_message **sorted = malloc(c->n_msgs * sizeof *sorted);
    if (!sorted)
        return fail_at(L, "out of memory");
    memcpy(sorted, c->msgs, c->n_msgs * sizeof *sorted);
    qsort(sorted, c->n_msgs, sizeof *sorted, cmp_msg_id);
    int rc = 0;
    for (size_t i = 1; i < c->n_msgs && !rc; i++)
        if (strcmp(sorted[i - 1]->id, sorted[i]->id) == 0)
            rc = fail_at(L, "messages[%zu].id: duplicate message id \"%s\"",
                         ac_conv_find_message(c, sorted[i]->id), sorted[i]->id);
    free(sorted);
    return rc;
}

static int load_messages(loader *L, ac_conv *c, json_t *arr)
{
    msg_check mc = {NULL, NULL};
    int rc = -1;
    if (c->n_calls) {
        mc.issuer = calloc(c->n_calls, sizeof *mc.issuer);
        mc.answer = calloc(c->n_calls, sizeof *mc.answer);
        if (!mc.issuer || !mc.answer) {
            fail_at(L, "out of memory");
            goto done;
        }
    }
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (load_message(L, c, json_array_get(arr, i), i, &mc))
            goto done;
    if (check_unique_ids(L, c))
        goto done;
    /* Every tool message needs the assistant message that issued its call. */
    for (size_t ci = 0; ci < c->n_calls; ci++) {
        if (mc.answer[ci] && !mc.issuer[ci]) {
            fail_at(L, "messages[%zu].tool_call_id: \"%s\" answers a call no message issued",
                    mc.answer[ci] - 1, c->calls[ci]->id);
            goto done;
        }
    }
    rc = 0;
done:
    free(mc.issuer);
    free(mc.answer);
    return rc;
}

static int load_counters(loader *L, ac_conv *c, json_t *root)
{
    json_t *usage = NULL, *cal = NULL;
    int64_t next_msg = 0, next_call = 0, window = 0, iteration = 0, retries = 0;
    static const char *const ukeys[] = {"input", "output", "last_input", NULL};
    static const char *const ckeys[] = {"last_raw", "scale_milli", "samples", NULL};
    if (get_int(L, root, "next_msg", "(root)", 0, INT64_MAX, &next_msg) ||
        get_int(L, root, "next_call", "(root)", 0, INT64_MAX, &next_call) ||
        get_int(L, root, "window", "(root)", 0, INT64_MAX, &window) ||
        get_int(L, root, "iteration", "(root)", 0, INT64_MAX, &iteration) ||
        get_int(L, root, "retries", "(root)", 0, INT64_MAX, &retries) ||
        get_int(L, root, "last_llm_call_ms", "(root)", INT64_MIN, INT64_MAX,
                &c->last_llm_call_ms) ||
        get_obj(L, root, "usage", "(root)", &usage) || check_keys(L, usage, "usage", ukeys) ||
        get_int(L, usage, "input", "usage", 0, INT64_MAX, &c->usage_input) ||
        get_int(L, usage, "output", "usage", 0, INT64_MAX, &c->usage_output) ||
        get_int(L, usage, "last_input", "usage", 0, INT64_MAX, &c->last_input) ||
        get_obj(L, root, "calibration", "(root)", &cal) ||
        check_keys(L, cal, "calibration", ckeys) ||
        get_int(L, cal, "last_raw", "calibration", 0, INT64_MAX, &c->est_last_raw) ||
        get_int(L, cal, "scale_milli", "calibration", 1, SCALE_MAX, &c->scale_milli) ||
        get_int(L, cal, "samples", "calibration", 0, INT64_MAX, &c->calib_samples))
        return -1;
    c->next_msg_seq = (uint64_t)next_msg;
    c->next_call_seq = (uint64_t)next_call;
    c->window = (size_t)window;
    c->iteration = iteration;
    c->retries = retries;
    return 0;
}

ac_conv *ac_conv_from_json(const char *json, char *err, size_t errcap)
{
    static const char *const keys[] = {
        "version",   "next_msg",   "next_call",        "window",          "floor",
        "iteration", "retries",    "last_llm_call_ms", "usage",           "calibration",
        "tools",     "tool_calls", "messages",         "iteration_calls", NULL};
    loader L = {err, errcap, 0};
    json_error_t jerr;
    json_t *root = NULL, *tools = NULL, *calls = NULL, *msgs = NULL, *iter = NULL;
    int64_t version = 0, floor = 0;
    ac_conv *c = NULL;
    if (err && errcap)
        err[0] = 0;
    if (!json) {
        fail_at(&L, "no input");
        return NULL;
    }
    root = json_loads(json, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        fail_at(&L, "%d:%d: %s", jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        fail_at(&L, "(root): expected an object");
        goto fail;
    }
    if (check_keys(&L, root, "(root)", keys) ||
        get_int(&L, root, "version", "(root)", INT64_MIN, INT64_MAX, &version))
        goto fail;
    if (version != FORMAT_VERSION) {
        fail_at(&L, "(root).version: unsupported version %lld", (long long)version);
        goto fail;
    }
    c = ac_conv_new();
    if (!c) {
        fail_at(&L, "out of memory");
        goto fail;
    }
    if (load_counters(&L, c, root) || get_arr(&L, root, "tools", "(root)", &tools) ||
        load_tools(&L, c, tools) || get_arr(&L, root, "tool_calls", "(root)", &calls) ||
        load_calls(&L, c, calls) || get_arr(&L, root, "messages", "(root)", &msgs) ||
        load_messages(&L, c, msgs) ||
        get_int(&L, root, "floor", "(root)", 0, (int64_t)c->n_msgs, &floor) ||
        get_arr(&L, root, "iteration_calls", "(root)", &iter))
        goto fail;
    c->floor = (size_t)floor;
    for (size_t i = 0; i < json_array_size(iter); i++) {
        const char *id = json_string_value(json_array_get(iter, i));
        if (!id) {
            fail_at(&L, "iteration_calls[%zu]: expected a string", i);
            goto fail;
        }
        if (ac_conv__call_index(c, id) == NPOS) {
            fail_at(&L, "iteration_calls[%zu]: unknown tool call \"%s\"", i, id);
            goto fail;
        }
        if (ac_conv__push_iter_call(c, id)) {
            fail_at(&L, "out of memory");
            goto fail;
        }
    }
    json_decref(root);
    return c;

fail:
    json_decref(root);
    ac_conv_free(c);
    return NULL;
}
