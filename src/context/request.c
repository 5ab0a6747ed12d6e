/* Provider request bodies (OpenAI Chat Completions, Anthropic Messages) from
 * the visible part of a conversation. Rules in request.h. */
#include "context/request.h"

#include "context/conv_internal.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/json_text.h"
#include "util/toolname.h"
#include "util/utf8.h"
#include "context/request_cache.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPOS ((size_t)-1)

/* The name sent for a tool: "prefix::tool" goes as "prefix__tool" (util/toolname.h). */
typedef struct wire_name {
    char v[256];
} wire_name;

static const char *wire(const char *name, wire_name *w)
{
    if (!strstr(name, "::") || ac_toolname_to_wire(name, w->v, sizeof w->v) < 0)
        return name;
    return w->v;
}

static void set_err(char *err, size_t errcap, const char *fmt, ...)
{
    if (!err || !errcap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

int ac_request_tool_allowed(const ac_request_opts *opts, const char *name)
{
    if (!opts || !opts->tool_names_allowed)
        return 1;
    for (const char *const *p = opts->tool_names_allowed; *p; p++)
        if (strcmp(*p, name) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------ shared traversal */

/* The visible messages, and for each record the tool message answering it. */
typedef struct view {
    size_t *idx;
    size_t n;
    size_t *answer; /* per record: message index or NPOS */
} view;

static void view_free(view *v)
{
    free(v->idx);
    free(v->answer);
}

static int view_build(const ac_conv *c, view *v)
{
    memset(v, 0, sizeof *v);
    if (ac_conv_visible(c, &v->idx, &v->n))
        return -1;
    if (c->n_calls) {
        v->answer = malloc(c->n_calls * sizeof *v->answer);
        if (!v->answer) {
            view_free(v);
            return -1;
        }
        for (size_t i = 0; i < c->n_calls; i++)
            v->answer[i] = NPOS;
        for (size_t i = 0; i < c->n_msgs; i++) {
            const ac_message *m = c->msgs[i];
            if (m->role != AC_ROLE_TOOL)
                continue;
            size_t ci = ac_conv__call_index(c, m->tool_call_id);
            if (ci != NPOS)
                v->answer[ci] = i;
        }
    }
    return 0;
}

/* The record of call k of assistant message m if it is to be sent (it has a
 * result), else NULL; *content gets the text the model should see. */
static const ac_tool_call *sent_call(const ac_conv *c, const view *v, const ac_message *m, size_t k,
                                     const char **content)
{
    size_t ci = ac_conv__call_index(c, m->tool_call_ids[k]);
    if (ci == NPOS)
        return NULL;
    const ac_tool_call *r = c->calls[ci];
    if (r->state == AC_CALL_NONE)
        return NULL;
    *content = v->answer[ci] != NPOS ? c->msgs[v->answer[ci]]->content : r->result;
    return r;
}

static int is_cleared(const ac_conv *c, const view *v, const ac_tool_call *r)
{
    size_t ci = ac_conv__call_index(c, r->id);
    return ci != NPOS && v->answer[ci] != NPOS && (c->msgs[v->answer[ci]]->flags & AC_MSG_CLEARED);
}

/* Adds v (new reference, may be NULL) to o; -1 on failure. */
static int put(json_t *o, const char *key, json_t *v)
{
    if (!v)
        return -1;
    return json_object_set_new(o, key, v);
}

static int append(json_t *a, json_t *v)
{
    if (!v)
        return -1;
    return json_array_append_new(a, v);
}

/* The schema of a tool as an object (new reference). */
static json_t *tool_schema(const ac_tool_def *t)
{
    return json_loads(t->schema_json, 0, NULL);
}

static int check_opts(const ac_request_opts *opts, char *err, size_t errcap)
{
    if (!opts || !opts->model || !*opts->model) {
        set_err(err, errcap, "request: no model given");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- settings */

static const char *const owned_fields[] = {"messages",       "tools",  "stream",
                                           "stream_options", "system", NULL};
static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", NULL};

int ac_request_settings_check(const ac_request_settings *s, int anthropic, char *err, size_t errcap)
{
    const char *pname = anthropic ? "Anthropic" : "OpenAI";
    if (!s)
        return 0;
    double tmax = anthropic ? 1.0 : 2.0;
    if (s->has_temperature && !(s->temperature >= 0.0 && s->temperature <= tmax)) {
        set_err(err, errcap, "temperature %g is out of range: %s takes 0 to %g", s->temperature,
                pname, tmax);
        return -1;
    }
    if (s->has_top_p && !(s->top_p >= 0.0 && s->top_p <= 1.0)) {
        set_err(err, errcap, "top_p %g is out of range: 0 to 1", s->top_p);
        return -1;
    }
    for (const char *const *p = s->stop; p && *p; p++)
        if (!**p) {
            set_err(err, errcap, "stop sequence #%d is empty", (int)(p - s->stop) + 1);
            return -1;
        }
    if (anthropic && s->has_seed) {
        set_err(err, errcap, "seed is not a setting Anthropic has (OpenAI only)");
        return -1;
    }
    if (anthropic && s->reasoning_effort) {
        set_err(err, errcap,
                "reasoning_effort is not a setting Anthropic has (OpenAI only; Anthropic's "
                "extended thinking is the thinking_budget param)");
        return -1;
    }
    if (s->reasoning_effort) {
        int ok = 0;
        for (const char *const *e = efforts; *e; e++)
            ok |= strcmp(*e, s->reasoning_effort) == 0;
        if (!ok) {
            set_err(err, errcap,
                    "reasoning_effort '%.64s' is not one of none, minimal, low, medium, high, "
                    "xhigh",
                    s->reasoning_effort);
            return -1;
        }
    }
    if (s->tool_choice && !*s->tool_choice) {
        set_err(err, errcap, "tool_choice is empty: auto, none, required or a tool name");
        return -1;
    }
    if (s->parallel_tool_calls < -1 || s->parallel_tool_calls > 1) {
        set_err(err, errcap, "parallel_tool_calls must be 0 (not sent), 1 (true) or -1 (false)");
        return -1;
    }
    if (s->request_json) {
        json_error_t je;
        json_t *j = json_loads(s->request_json, JSON_REJECT_DUPLICATES, &je);
        if (!j) {
            set_err(err, errcap, "request JSON is not valid JSON: %s (column %d)", je.text,
                    je.column);
            return -1;
        }
        if (!json_is_object(j)) {
            json_decref(j);
            set_err(err, errcap, "request JSON must be a JSON object");
            return -1;
        }
        for (const char *const *f = owned_fields; *f; f++)
            if (json_object_get(j, *f)) {
                json_decref(j);
                set_err(err, errcap,
                        "request JSON may not set \"%s\": agentc builds messages, tools, "
                        "stream, stream_options and system itself",
                        *f);
                return -1;
            }
        json_decref(j);
    }
    return 0;
}

static char *dup_str(const char *s, int *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = 1;
    return d;
}

void ac_request_settings_free(ac_request_settings *s)
{
    if (!s)
        return;
    if (s->stop) {
        for (const char *const *p = s->stop; *p; p++)
            free((char *)*p);
        free((void *)s->stop);
    }
    free((char *)s->tool_choice);
    free((char *)s->reasoning_effort);
    free((char *)s->request_json);
    free(s);
}

ac_request_settings *ac_request_settings_dup(const ac_request_settings *s)
{
    ac_request_settings *d = calloc(1, sizeof *d);
    if (!d || !s)
        return d;
    *d = *s;
    d->stop = NULL;
    int bad = 0;
    d->tool_choice = dup_str(s->tool_choice, &bad);
    d->reasoning_effort = dup_str(s->reasoning_effort, &bad);
    d->request_json = dup_str(s->request_json, &bad);
    if (s->stop && s->stop[0]) {
        size_t n = 0;
        while (s->stop[n])
            n++;
        char **stop = calloc(n + 1, sizeof *stop);
        if (!stop)
            bad = 1;
        for (size_t i = 0; stop && i < n; i++)
            stop[i] = dup_str(s->stop[i], &bad);
        d->stop = (const char *const *)stop;
    }
    if (bad) {
        ac_request_settings_free(d);
        return NULL;
    }
    return d;
}

static int is_mode(const char *tc)
{
    return !strcmp(tc, "auto") || !strcmp(tc, "none") || !strcmp(tc, "required");
}

/* A tool_choice naming a tool must name one the request offers. */
static int check_choice(const ac_request_settings *st, json_t *tools, int anthropic, char *err,
                        size_t errcap)
{
    if (!st || !st->tool_choice || is_mode(st->tool_choice))
        return 0;
    for (size_t i = 0; i < json_array_size(tools); i++) {
        json_t *t = json_array_get(tools, i);
        json_t *name = anthropic ? json_object_get(t, "name")
                                 : json_object_get(json_object_get(t, "function"), "name");
        wire_name w;
        if (json_is_string(name) && strcmp(json_string_value(name), wire(st->tool_choice, &w)) == 0)
            return 0;
    }
    set_err(err, errcap,
            "tool_choice '%.128s' is not a tool offered to the model (auto, none, required, or "
            "the name of a configured tool)",
            st->tool_choice);
    return -1;
}

/* The sampling settings common to both APIs. */
static int put_sampling(json_t *root, const ac_request_settings *st, int anthropic)
{
    if (!st)
        return 0;
    if (st->has_temperature && put(root, "temperature", json_real(st->temperature)))
        return -1;
    if (st->has_top_p && put(root, "top_p", json_real(st->top_p)))
        return -1;
    if (st->stop && st->stop[0]) {
        json_t *a = json_array();
        for (const char *const *p = st->stop; a && *p; p++)
            if (append(a, json_string(*p))) {
                json_decref(a);
                return -1;
            }
        if (put(root, anthropic ? "stop_sequences" : "stop", a))
            return -1;
    }
    return 0;
}

/* The pass-through, last (checked by ac_request_settings_check). */
static int put_passthrough(json_t *root, const ac_request_settings *st)
{
    if (!st || !st->request_json)
        return 0;
    json_t *j = json_loads(st->request_json, 0, NULL);
    int rc = json_is_object(j) ? json_object_update(root, j) : -1;
    json_decref(j);
    return rc;
}

/* ---------------------------------------------------------------- OpenAI */

/* The messages are written by the compact writer (util/json_text.h), the bytes json_dumps
 * wrote for them with DUMP_FLAGS (they hold strings only). */

/* ,"key":S */
static void put_text(ac_buf *b, const char *key, const char *s)
{
    ac_buf_printf(b, ",\"%s\":", key);
    ac_json_put_str(b, s, strlen(s));
}

/* A call's result as its tool message. */
static void openai_tool_result(ac_buf *b, const ac_conv *c, const view *v, const ac_tool_call *r,
                               const char *content)
{
    ac_buf_addstr(b, ",{\"role\":\"tool\"");
    put_text(b, "tool_call_id", r->id);
    ac_buf_addstr(b, ",\"content\":");
    if (r->state == AC_CALL_FAILURE && !is_cleared(c, v, r)) {
        size_t at = b->n + 1; /* "Error: " goes after the string's opening quote */
        ac_json_put_str(b, content, strlen(content));
        if (ac_buf_reserve(b, 7) == 0) {
            memmove(b->p + at + 7, b->p + at, b->n - at + 1);
            memcpy(b->p + at, "Error: ", 7);
            b->n += 7;
        }
    } else {
        ac_json_put_str(b, content, strlen(content));
    }
    ac_buf_add(b, "}", 1);
}

/* The entries of message m (with the results of its calls), each after a comma, appended to
 * b. */
static void openai_message(const ac_conv *c, const view *v, const ac_message *m, ac_buf *b)
{
    size_t sent = 0;
    const char *content;
    for (size_t k = 0; m->role == AC_ROLE_ASSISTANT && k < m->n_tool_calls; k++)
        sent += sent_call(c, v, m, k, &content) != NULL;
    if (m->role == AC_ROLE_ASSISTANT && m->n_tool_calls && !sent && !*m->content)
        return; /* nothing left to send */
    ac_buf_addstr(b, ",{\"role\":");
    const char *role = ac_role_name(m->role);
    ac_json_put_str(b, role, strlen(role));
    if (!sent) {
        put_text(b, "content", m->content);
        ac_buf_add(b, "}", 1);
        return;
    }
    if (*m->content)
        put_text(b, "content", m->content);
    else
        ac_buf_addstr(b, ",\"content\":null");
    ac_buf_addstr(b, ",\"tool_calls\":[");
    for (size_t k = 0, n = 0; k < m->n_tool_calls; k++) {
        const ac_tool_call *r = sent_call(c, v, m, k, &content);
        if (!r)
            continue;
        wire_name w;
        ac_buf_addstr(b, n++ ? ",{\"id\":" : "{\"id\":");
        ac_json_put_str(b, r->id, strlen(r->id));
        ac_buf_addstr(b, ",\"type\":\"function\",\"function\":{\"name\":");
        const char *name = wire(r->name, &w);
        ac_json_put_str(b, name, strlen(name));
        put_text(b, "arguments", r->arguments);
        ac_buf_addstr(b, "}}");
    }
    ac_buf_addstr(b, "]}");
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const ac_tool_call *r = sent_call(c, v, m, k, &content);
        if (r)
            openai_tool_result(b, c, v, r, content);
    }
}

/* The text of every message of the view, joined by commas (the messages array without its
 * brackets), appended to out after its first `start` bytes. */
static void openai_messages(const ac_conv *c, const view *v, ac_buf *out, size_t start)
{
    for (size_t i = 0; i < v->n; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        if (m->role == AC_ROLE_TOOL)
            continue; /* a tool message goes right after the call that asked for it */
        size_t at = out->n;
        openai_message(c, v, m, out);
        if (at == start && out->n > at && !out->failed) /* the first: no comma before it */
            memmove(out->p + at, out->p + at + 1, out->n-- - at);
    }
}

#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* The cache key of message m's fragment: besides the message itself, what its
 * calls' results look like in the request. */
static void openai_key(const ac_conv *c, const view *v, const ac_message *m, ac_reqcache_key *k)
{
    k->kind = 0;
    k->m = m;
    k->n_sig = 0;
    if (m->role != AC_ROLE_ASSISTANT || !m->n_tool_calls)
        return;
    if (m->n_tool_calls * 5 > AC_REQCACHE_MAX_SIG) {
        k->n_sig = AC_REQCACHE_MAX_SIG + 1; /* not cached */
        return;
    }
    for (size_t i = 0; i < m->n_tool_calls; i++) {
        const char *content = NULL;
        const ac_tool_call *r = sent_call(c, v, m, i, &content);
        size_t ci = r ? ac_conv__call_index(c, r->id) : NPOS;
        const ac_message *ans = ci != NPOS && v->answer[ci] != NPOS ? c->msgs[v->answer[ci]] : NULL;
        int cleared = r && is_cleared(c, v, r);
        /* a result's text is its record's and never changes; a clearing
         * marker is a short text of its own, hashed (its memory may be reused
         * by the next marker) */
        uint64_t text = (uint64_t)(uintptr_t)content;
        if (cleared) {
            text = 1469598103934665603ull;
            for (const unsigned char *p = (const unsigned char *)content; *p; p++)
                text = (text ^ *p) * 1099511628211ull;
        }
        k->sig[k->n_sig++] = (uint64_t)(uintptr_t)r;
        k->sig[k->n_sig++] = r ? (uint64_t)r->state : 0;
        k->sig[k->n_sig++] = text;
        k->sig[k->n_sig++] = (uint64_t)cleared;
        k->sig[k->n_sig++] = ans ? (uint64_t)ans->updated_at_ms : 0;
    }
}

/* The fragment of m: its messages' compact texts, joined by commas (malloc'd
 * in *out, "" for none). 0, or -1 when out of memory. */
static int openai_fragment(const ac_conv *c, const view *v, const ac_message *m, char **out,
                           size_t *len)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    openai_message(c, v, m, &b);
    if (b.n && !b.failed) /* without its leading comma */
        memmove(b.p, b.p + 1, b.n--);
    *out = ac_buf_take(&b, len);
    return *out ? 0 : -1;
}

/* The text of the "messages" array (without its brackets): each message's
 * fragment from the conversation's cache, serialized only when it is missing
 * or stale, so the cost of a request grows with what changed, not with the
 * conversation. Appended to out after its first `start` bytes; 0, or -1 when
 * out of memory. */
static int openai_messages_text(const ac_conv *c, const view *v, ac_buf *out, size_t start)
{
    ac_reqcache *rc = ac_conv__reqcache(c);
    for (size_t i = 0; i < v->n && !out->failed; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        if (m->role == AC_ROLE_TOOL)
            continue; /* sent right after the call that asked for it */
        /* a system message is serialized again each time: the conversation holds its text,
         * and a session's own prompt may be the largest text it has (one copy, not two) */
        ac_reqcache *mrc = m->role == AC_ROLE_SYSTEM ? NULL : rc;
        ac_reqcache_key key;
        openai_key(c, v, m, &key);
        size_t flen = 0;
        const char *frag = mrc ? ac_reqcache_get(mrc, &key, &flen) : NULL;
        char *made = NULL;
        if (!frag) {
            if (openai_fragment(c, v, m, &made, &flen))
                return -1;
            if (mrc)
                ac_reqcache_put(mrc, &key, made, flen); /* a miss next time if it fails */
            frag = made;
        }
        if (flen && out->n > start)
            ac_buf_add(out, ",", 1);
        if (flen)
            ac_buf_add(out, frag, flen);
        free(made);
    }
    if (out->failed)
        return -1;
    if (rc)
        ac_reqcache_sweep(rc);
    return 0;
}

/* root's JSON text with "messages": [msgs] put right after "model", where
 * json_dumps would have put it had it been root's second member. */
static char *splice_messages(json_t *root, const char *model, const char *msgs, size_t mlen)
{
    json_t *head = json_pack("{s:s}", "model", model);
    char *h = head ? json_dumps(head, DUMP_FLAGS) : NULL;
    char *r = json_dumps(root, DUMP_FLAGS);
    json_decref(head);
    char *out = NULL;
    size_t hl = h ? strlen(h) - 1 : 0; /* without its closing brace */
    if (h && r && strncmp(h, r, hl) == 0) {
        static const char mid[] = ",\"messages\":[";
        size_t rl = strlen(r) - hl, n = hl + sizeof mid - 1 + mlen + 1 + rl;
        out = malloc(n + 1);
        if (out) {
            char *p = out;
            memcpy(p, h, hl), p += hl;
            memcpy(p, mid, sizeof mid - 1), p += sizeof mid - 1;
            memcpy(p, msgs, mlen), p += mlen;
            *p++ = ']';
            memcpy(p, r + hl, rl + 1);
        }
    }
    free(h);
    free(r);
    return out;
}

/* The offered tools in either API's shape. */
static json_t *tools_json(const ac_conv *c, const ac_request_opts *opts, int anthropic)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < c->n_tools; i++) {
        const ac_tool_def *t = &c->tools[i];
        if (!ac_request_tool_allowed(opts, t->name))
            continue;
        int offer =
            opts && opts->tool_offer ? opts->tool_offer(opts->tool_offer_ud, t->name, NULL) : 1;
        if (!offer)
            continue;
        json_t *schema = tool_schema(t);
        if (schema && offer != 1 && !opts->tool_offer(opts->tool_offer_ud, t->name, &schema)) {
            json_decref(schema);
            continue;
        }
        wire_name w;
        const char *name = wire(t->name, &w);
        json_t *o = anthropic ? json_pack("{s:s, s:s, s:o}", "name", name, "description",
                                          t->description, "input_schema", schema)
                              : json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "function",
                                          "function", "name", name, "description", t->description,
                                          "parameters", schema);
        if (append(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* OpenAI's tool_choice and parallel_tool_calls. 0, or -1 out of memory. */
static int put_choice_openai(json_t *root, const ac_request_settings *st)
{
    if (st && st->tool_choice) {
        wire_name w;
        json_t *tc = is_mode(st->tool_choice)
                         ? json_string(st->tool_choice)
                         : json_pack("{s:s, s:{s:s}}", "type", "function", "function", "name",
                                     wire(st->tool_choice, &w));
        if (put(root, "tool_choice", tc))
            return -1;
    }
    if (st && st->parallel_tool_calls &&
        put(root, "parallel_tool_calls", json_boolean(st->parallel_tool_calls > 0)))
        return -1;
    return 0;
}

/* Anthropic's tool_choice, which carries the parallel switch. 0, or -1. */
static int put_choice_anthropic(json_t *root, const ac_request_settings *st)
{
    if (!st || (!st->tool_choice && !st->parallel_tool_calls))
        return 0;
    wire_name w;
    const char *tc = st->tool_choice ? wire(st->tool_choice, &w) : "auto";
    json_t *o = !strcmp(tc, "required") ? json_pack("{s:s}", "type", "any")
                : is_mode(tc)           ? json_pack("{s:s}", "type", tc)
                                        : json_pack("{s:s, s:s}", "type", "tool", "name", tc);
    if (put(root, "tool_choice", o))
        return -1;
    /* "none" has no parallel switch: no tool is called at all */
    if (st->parallel_tool_calls && strcmp(tc, "none") != 0 &&
        put(o, "disable_parallel_tool_use", json_boolean(st->parallel_tool_calls < 0)))
        return -1;
    return 0;
}

/* The tools offered and the choice among them, in the provider's form. 0; 1
 * when the settings are refused (err says why); -1 out of memory. */
static int put_tools(json_t *root, const ac_conv *c, const ac_request_opts *opts, int anthropic,
                     char *err, size_t errcap)
{
    const ac_request_settings *st = opts->settings;
    json_t *tools = tools_json(c, opts, anthropic);
    if (!tools)
        return -1;
    if (!json_array_size(tools)) {
        json_decref(tools);
        return check_choice(st, NULL, anthropic, err, errcap) ? 1 : 0;
    }
    if (check_choice(st, tools, anthropic, err, errcap)) {
        json_decref(tools);
        return 1;
    }
    if (put(root, "tools", tools))
        return -1;
    return anthropic ? put_choice_anthropic(root, st) : put_choice_openai(root, st);
}

/* The options checked and the view of the conversation a request is built
 * from. 0, or -1 with err filled. */
static int request_view(const ac_conv *c, const ac_request_opts *opts, view *v, char *err,
                        size_t errcap)
{
    if (!c || check_opts(opts, err, errcap))
        return -1;
    if (view_build(c, v)) {
        set_err(err, errcap, "request: out of memory");
        return -1;
    }
    return 0;
}

/* Whether the members after the messages are written by the compact writer: all but a
 * pass-through (merged into a JSON value, which decides where its members go) and a
 * temperature or top_p that is not a number jansson holds (the JSON value refuses it). */
static int openai_compact(const ac_request_opts *opts)
{
    const ac_request_settings *st = opts->settings;
    return !st || (!st->request_json && (!st->has_temperature || isfinite(st->temperature)) &&
                   (!st->has_top_p || isfinite(st->top_p)));
}

/* A string as json_pack's "s" takes it: not UTF-8 fails b, as the JSON value would. */
static void put_jstr(ac_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!s || ac_utf8_valid_len(s, n) != n)
        ac_buf_fail(b);
    else
        ac_json_put_str(b, s, n);
}

/* The sampling settings both wires name alike (temperature, top_p), and the stop sequences
 * under the wire's STOP_KEY, as members after others. */
static void put_sampling_text(ac_buf *b, const ac_request_settings *st, const char *stop_key)
{
    if (st && st->has_temperature) {
        ac_buf_addstr(b, ",\"temperature\":");
        ac_json_put_real_precision(b, st->temperature, 15);
    }
    if (st && st->has_top_p) {
        ac_buf_addstr(b, ",\"top_p\":");
        ac_json_put_real_precision(b, st->top_p, 15);
    }
    if (st && st->stop && st->stop[0]) {
        ac_buf_printf(b, ",\"%s\":[", stop_key);
        for (const char *const *p = st->stop; *p; p++) {
            if (p != st->stop)
                ac_buf_add(b, ",", 1);
            put_jstr(b, *p);
        }
        ac_buf_add(b, "]", 1);
    }
}

/* Whether a normalized schema (jansson's compact text) holds a real: a request writes reals
 * with another precision (DUMP_FLAGS), so such a schema goes through a JSON value. */
static int has_real(const char *s)
{
    int in_str = 0;
    for (const char *p = s; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                in_str = 0;
        } else if (*p == '"') {
            in_str = 1;
        } else if (*p == '.' ||
                   ((*p == 'e' || *p == 'E') && p > s && p[-1] >= '0' && p[-1] <= '9')) {
            return 1;
        }
    }
    return 0;
}

/* Tool t's schema as the request sends it, appended to b: its normalized text, or the dump of
 * its value when it holds a real or the offer callback changes it. 0 offered; 1 left out of
 * this request; -1 out of memory. */
static int tool_schema_text(const ac_tool_def *t, const ac_request_opts *opts, ac_buf *b)
{
    int offer = opts->tool_offer ? opts->tool_offer(opts->tool_offer_ud, t->name, NULL) : 1;
    if (!offer)
        return 1;
    if (offer == 1 && !has_real(t->schema_json)) {
        ac_buf_addstr(b, t->schema_json);
        return 0;
    }
    json_t *schema = tool_schema(t);
    if (schema && offer != 1 && !opts->tool_offer(opts->tool_offer_ud, t->name, &schema)) {
        json_decref(schema);
        return 1;
    }
    char *text = schema ? json_dumps(schema, DUMP_FLAGS) : NULL;
    json_decref(schema);
    if (!text)
        return -1;
    ac_buf_addstr(b, text);
    free(text);
    return 0;
}

/* ,"tool_choice" and ,"parallel_tool_calls" after OpenAI's tools (choice_wire: the wire name
 * of a tool_choice naming a tool, else NULL). */
static void openai_choice_text(ac_buf *b, const ac_request_settings *st, const char *choice_wire)
{
    if (st && st->tool_choice) {
        ac_buf_addstr(b, ",\"tool_choice\":");
        if (choice_wire) {
            ac_buf_addstr(b, "{\"type\":\"function\",\"function\":{\"name\":");
            put_jstr(b, choice_wire);
            ac_buf_addstr(b, "}}");
        } else {
            put_jstr(b, st->tool_choice);
        }
    }
    if (st && st->parallel_tool_calls)
        ac_buf_addstr(b, st->parallel_tool_calls > 0 ? ",\"parallel_tool_calls\":true"
                                                     : ",\"parallel_tool_calls\":false");
}

/* ,"tools":[...] and the choice among them in OpenAI's form, as put_tools() makes them.
 * 0; 1 when the settings are refused (err says why); -1 out of memory. */
static int openai_tools_text(ac_buf *b, const ac_conv *c, const ac_request_opts *opts, char *err,
                             size_t errcap)
{
    const ac_request_settings *st = opts->settings;
    wire_name cw;
    const char *choice =
        st && st->tool_choice && !is_mode(st->tool_choice) ? wire(st->tool_choice, &cw) : NULL;
    int n = 0, named = 0;
    for (size_t i = 0; i < c->n_tools && !b->failed; i++) {
        const ac_tool_def *t = &c->tools[i];
        if (!ac_request_tool_allowed(opts, t->name))
            continue;
        size_t at = b->n;
        wire_name w;
        const char *name = wire(t->name, &w);
        ac_buf_addstr(b, n ? ",{\"type\":\"function\",\"function\":{\"name\":"
                           : ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":");
        put_jstr(b, name);
        ac_buf_addstr(b, ",\"description\":");
        put_jstr(b, t->description);
        ac_buf_addstr(b, ",\"parameters\":");
        int rc = b->failed ? -1 : tool_schema_text(t, opts, b);
        if (rc < 0)
            return -1;
        if (rc > 0) { /* left out: as if never written */
            b->n = at;
            b->p[at] = '\0';
            continue;
        }
        ac_buf_addstr(b, "}}");
        n++;
        named |= choice && !strcmp(name, choice);
    }
    if (b->failed)
        return -1;
    if (choice && !named) {
        set_err(err, errcap,
                "tool_choice '%.128s' is not a tool offered to the model (auto, none, required, "
                "or the name of a configured tool)",
                st->tool_choice);
        return 1;
    }
    if (n) {
        ac_buf_add(b, "]", 1);
        openai_choice_text(b, st, choice);
    }
    return 0;
}

/* ,"response_format" of an output schema: its text as the JSON value's dump would write it.
 * 0, or -1 (err says so when it is not JSON). */
static int openai_format_text(ac_buf *b, const char *output_schema, char *err, size_t errcap)
{
    json_t *schema = json_loads(output_schema, JSON_DECODE_ANY, NULL);
    if (!schema) {
        set_err(err, errcap, "request: the output schema is not JSON");
        return -1;
    }
    char *text = json_dumps(schema, DUMP_FLAGS | JSON_ENCODE_ANY);
    json_decref(schema);
    if (!text)
        return -1;
    /* strict stays false: see openai_rest() */
    ac_buf_addstr(b, ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":"
                     "\"output\",\"schema\":");
    ac_buf_addstr(b, text);
    ac_buf_addstr(b, ",\"strict\":false}}");
    free(text);
    return 0;
}

/* The members after the messages, where openai_rest() and splice_messages() put them, by the
 * compact writer; then the closing brace. 0; 1 refused (err says why); -1 the output schema
 * is not JSON (err says so) or out of memory. */
static int openai_tail(ac_buf *b, const ac_conv *c, const ac_request_opts *opts, char *err,
                       size_t errcap)
{
    const ac_request_settings *st = opts->settings;
    if (opts->max_tokens > 0)
        ac_buf_printf(b, ",\"max_tokens\":%" JSON_INTEGER_FORMAT, (json_int_t)opts->max_tokens);
    if (opts->output_schema && openai_format_text(b, opts->output_schema, err, errcap))
        return -1;
    put_sampling_text(b, st, "stop");
    if (st && st->has_seed)
        ac_buf_printf(b, ",\"seed\":%" JSON_INTEGER_FORMAT, (json_int_t)st->seed);
    if (st && st->reasoning_effort) {
        ac_buf_addstr(b, ",\"reasoning_effort\":");
        put_jstr(b, st->reasoning_effort);
    }
    ac_buf_addstr(b, opts->stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}"
                                  : ",\"stream\":false");
    int rc = openai_tools_text(b, c, opts, err, errcap);
    if (rc)
        return rc;
    ac_buf_add(b, "}", 1);
    return b->failed ? -1 : 0;
}

/* The members after "messages" of a request that has settings, as a JSON value (the model
 * first, where splice_messages puts the messages after it). NULL: refused (*refused set,
 * err says why), the output schema not JSON, or out of memory. */
static json_t *openai_rest(const ac_conv *c, const ac_request_opts *opts, char *err, size_t errcap,
                           int *refused)
{
    json_t *root = json_object();
    int rc = put(root, "model", json_string(opts->model));
    if (!rc && opts->max_tokens > 0)
        rc = put(root, "max_tokens", json_integer(opts->max_tokens));
    if (!rc && opts->output_schema) {
        json_t *schema = json_loads(opts->output_schema, JSON_DECODE_ANY, NULL);
        if (!schema)
            set_err(err, errcap, "request: the output schema is not JSON");
        /* strict stays false: OpenAI's strict mode accepts only a subset of JSON Schema
         * (every property required, additionalProperties false); agentc checks the answer
         * against the whole schema itself */
        rc = !schema ||
             put(root, "response_format",
                 json_pack("{s:s, s:{s:s, s:o, s:b}}", "type", "json_schema", "json_schema", "name",
                           "output", "schema", schema, "strict", 0));
    }
    const ac_request_settings *st = opts->settings;
    if (!rc)
        rc = put_sampling(root, st, 0) ||
             (st && st->has_seed && put(root, "seed", json_integer((json_int_t)st->seed))) ||
             (st && st->reasoning_effort &&
              put(root, "reasoning_effort", json_string(st->reasoning_effort)));
    if (!rc && opts->stream) {
        json_t *so = json_object();
        rc = put(root, "stream", json_true()) || put(root, "stream_options", so) ||
             put(so, "include_usage", json_true());
    } else if (!rc) {
        rc = put(root, "stream", json_false());
    }
    int tr = rc ? -1 : put_tools(root, c, opts, 0, err, errcap);
    *refused = tr > 0;
    if (tr || put_passthrough(root, st)) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* The body: the model, the messages, then the members the options add, all written by the
 * compact writer; a JSON value is made only for an output schema, a tool schema holding a
 * real or changed by the offer callback, and a pass-through (then the whole rest). */
char *ac_request_openai(const ac_conv *c, const ac_request_opts *opts, char *err, size_t errcap)
{
    view v;
    if (request_view(c, opts, &v, err, errcap))
        return NULL;
    char *out = NULL;
    if (err && errcap)
        err[0] = 0;
    /* a short conversation is serialized whole: its messages are cheap, and
     * keeping them would cost more than it saves */
    int cached = v.n >= AC_REQCACHE_MIN_MESSAGES, refused = 0;
    int compact = openai_compact(opts);
    /* the text of the messages; of a compact request, the whole body, in one buffer */
    ac_buf msgs;
    ac_buf_init(&msgs, AC_BUF_MAX);
    if (compact) {
        /* a short conversation's whole body in one allocation of 1 KiB, the largest size
         * glibc's per-thread cache keeps */
        ac_buf_reserve(&msgs, 1000);
        ac_buf_addstr(&msgs, "{\"model\":");
        ac_json_put_str(&msgs, opts->model, strlen(opts->model));
        ac_buf_addstr(&msgs, ",\"messages\":[");
    }
    size_t start = msgs.n;
    if (!cached && c->reqcache)
        ac_reqcache_sweep(c->reqcache); /* drops what a longer past left */
    if (cached ? openai_messages_text(c, &v, &msgs, start)
               : (openai_messages(c, &v, &msgs, start), 0))
        goto fail;
    if (opts->context_note) { /* last, so the messages before it stay a cacheable prefix */
        ac_buf_addstr(&msgs, msgs.n > start ? ",{\"role\":\"system\"" : "{\"role\":\"system\"");
        put_text(&msgs, "content", opts->context_note);
        ac_buf_add(&msgs, "}", 1);
    }
    if (msgs.failed)
        goto fail;
    if (compact) {
        ac_buf_add(&msgs, "]", 1);
        int rc = openai_tail(&msgs, c, opts, err, errcap);
        refused = rc > 0;
        out = rc ? NULL : ac_buf_take(&msgs, NULL);
    } else {
        json_t *root = openai_rest(c, opts, err, errcap, &refused);
        out = root ? splice_messages(root, opts->model, msgs.p ? msgs.p : "", msgs.n) : NULL;
        json_decref(root);
    }
fail:
    if (!out && !refused && (!err || !errcap || !err[0]))
        set_err(err, errcap, "request: out of memory");
    ac_buf_free(&msgs);
    view_free(&v);
    return out;
}

/* ------------------------------------------------------------- Anthropic */

/* Appends blocks (an array, new reference) as a message of `role`, merging
 * into the previous message when it has the same role. */
static int anth_push(json_t *msgs, const char *role, json_t *blocks)
{
    if (!blocks)
        return -1;
    if (json_array_size(blocks) == 0) {
        json_decref(blocks);
        return 0;
    }
    size_t n = json_array_size(msgs);
    json_t *last = n ? json_array_get(msgs, n - 1) : NULL;
    if (last && strcmp(json_string_value(json_object_get(last, "role")), role) == 0) {
        int rc = json_array_extend(json_object_get(last, "content"), blocks);
        json_decref(blocks);
        return rc;
    }
    json_t *o = json_object();
    if (append(msgs, o) || put(o, "role", json_string(role))) {
        json_decref(blocks);
        return -1;
    }
    return put(o, "content", blocks);
}

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

/* The tool_use "input" for the arguments the model sent (see request.h). */
static json_t *anth_input(const char *args)
{
    const char *p = args;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!*p)
        return json_object();
    json_t *j = json_loads(args, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(j))
        return j;
    json_decref(j);
    json_t *o = json_object();
    if (put(o, "_raw_arguments", json_string(args))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Puts the thinking blocks of m (a JSON array text) first in blocks. Text
 * that does not parse as an array is left out (the loader and the setter
 * refuse it, so only a damaged conversation has it). */
static int anth_thinking_first(const ac_message *m, json_t *blocks)
{
    json_t *think = json_loads(m->thinking, JSON_ALLOW_NUL, NULL);
    if (!json_is_array(think)) {
        json_decref(think);
        return 0;
    }
    int bad = 0;
    for (size_t k = json_array_size(think); k-- > 0 && !bad;)
        bad = json_array_insert(blocks, 0, json_array_get(think, k)) != 0;
    json_decref(think);
    return bad ? -1 : 0;
}

/* Whether the request ends with an assistant message followed by a user
 * message of tool results only: the round an internal round can join. */
static int ends_with_tool_round(json_t *msgs)
{
    size_t n = json_array_size(msgs);
    if (n < 2)
        return 0;
    json_t *a = json_array_get(msgs, n - 2), *u = json_array_get(msgs, n - 1);
    if (strcmp(json_string_value(json_object_get(a, "role")), "assistant") != 0 ||
        strcmp(json_string_value(json_object_get(u, "role")), "user") != 0)
        return 0;
    json_t *blocks = json_object_get(u, "content");
    for (size_t k = 0; k < json_array_size(blocks); k++)
        if (strcmp(json_string_value(json_object_get(json_array_get(blocks, k), "type")),
                   "tool_result") != 0)
            return 0;
    return json_array_size(blocks) > 0;
}

/* The blocks of assistant message m (thinking, text, tool_use) and those of
 * the user message that answers it (its calls' tool_result blocks), as new
 * arrays in *blocks and *results. -1 when out of memory. */
static int anth_assistant_blocks(const ac_conv *c, const view *v, const ac_message *m,
                                 int with_thinking, json_t **blocks_out, json_t **results_out)
{
    json_t *blocks = json_array(), *results = json_array();
    if (!blocks || !results)
        goto fail;
    if (*m->content && append(blocks, text_block(m->content)))
        goto fail;
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const char *content;
        const ac_tool_call *r = sent_call(c, v, m, k, &content);
        if (!r)
            continue;
        wire_name w;
        json_t *use = json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", r->id, "name",
                                wire(r->name, &w), "input", anth_input(r->arguments));
        json_t *res = json_pack("{s:s, s:s, s:s}", "type", "tool_result", "tool_use_id", r->id,
                                "content", content);
        int bad = append(blocks, use);
        bad |= append(results, res);
        if (bad)
            goto fail;
        if (r->state == AC_CALL_FAILURE && put(res, "is_error", json_true()))
            goto fail;
    }
    /* thinking only with something else: a message of thinking alone is not sent */
    if (with_thinking && m->thinking && json_array_size(blocks) && anth_thinking_first(m, blocks))
        goto fail;
    *blocks_out = blocks;
    *results_out = results;
    return 0;
fail:
    json_decref(blocks);
    json_decref(results);
    return -1;
}

/* With thinking on, the last assistant message of a tool loop must start
 * with the model's thinking. An internal round the engine added (calls
 * brought back by load_tool_calls) has none: it joins the round before it,
 * its calls after that turn's, its results after that turn's. Whether m is
 * such a round (given that its blocks are not empty). */
static int anth_joins_round(const ac_message *m, int with_thinking)
{
    return with_thinking && !m->thinking && (m->flags & AC_MSG_INTERNAL) && !*m->content;
}

static int anth_assistant(const ac_conv *c, const view *v, const ac_message *m, json_t *msgs,
                          int with_thinking)
{
    json_t *blocks, *results;
    if (anth_assistant_blocks(c, v, m, with_thinking, &blocks, &results))
        return -1;
    if (anth_joins_round(m, with_thinking) && json_array_size(blocks) &&
        ends_with_tool_round(msgs)) {
        size_t n = json_array_size(msgs);
        int bad =
            json_array_extend(json_object_get(json_array_get(msgs, n - 2), "content"), blocks) ||
            json_array_extend(json_object_get(json_array_get(msgs, n - 1), "content"), results);
        json_decref(blocks);
        json_decref(results);
        return bad ? -1 : 0;
    }
    if (anth_push(msgs, "assistant", blocks)) {
        json_decref(results);
        return -1;
    }
    return anth_push(msgs, "user", results);
}

/* ------------------------------------------- Anthropic, from cached parts */

/* An incremental Anthropic build keeps, per visible message, the text of its
 * blocks (the array's members without brackets) in the conversation's cache:
 * a user message's text block; an assistant message's blocks and, after a
 * NUL, the tool_result blocks of the user message answering it. The merging
 * of consecutive messages of one role is then done on those texts, as
 * anth_push and anth_assistant do it on JSON values, so the bytes are the
 * same as the whole build's. */

enum { ANTH_KIND_USER = 1, ANTH_KIND_ASSISTANT = 2, ANTH_KIND_ASSISTANT_THINKING = 3 };

typedef struct anth_piece {
    const char *p;
    size_t n;
    size_t next; /* next piece of the same message, or NPOS */
} anth_piece;

typedef struct anth_msg {
    int user;
    int only_results; /* a user message of tool_result blocks only */
    size_t head, tail;
} anth_msg;

typedef struct anth_text {
    anth_piece *pieces;
    size_t n_pieces, cap_pieces;
    anth_msg *msgs;
    size_t n_msgs, cap_msgs;
    char **owned; /* fragments not held by the cache */
    size_t n_owned, cap_owned;
} anth_text;

static int anth_add_piece(anth_text *t, size_t mi, const char *p, size_t n)
{
    if (ac_grow((void **)&t->pieces, &t->cap_pieces, t->n_pieces + 1, sizeof *t->pieces))
        return -1;
    size_t k = t->n_pieces++;
    t->pieces[k] = (anth_piece){p, n, NPOS};
    anth_msg *m = &t->msgs[mi];
    if (m->tail == NPOS)
        m->head = k;
    else
        t->pieces[m->tail].next = k;
    m->tail = k;
    return 0;
}

/* anth_push on texts: a non-empty piece goes into the last message when it
 * has the same role, else into a new one. */
static int anth_push_text(anth_text *t, int user, int results, const char *p, size_t n)
{
    if (!n)
        return 0;
    if (!t->n_msgs || t->msgs[t->n_msgs - 1].user != user) {
        if (ac_grow((void **)&t->msgs, &t->cap_msgs, t->n_msgs + 1, sizeof *t->msgs))
            return -1;
        t->msgs[t->n_msgs++] = (anth_msg){user, 1, NPOS, NPOS};
    }
    anth_msg *m = &t->msgs[t->n_msgs - 1];
    if (!results)
        m->only_results = 0;
    return anth_add_piece(t, t->n_msgs - 1, p, n);
}

static int anth_own(anth_text *t, char *s)
{
    if (ac_grow((void **)&t->owned, &t->cap_owned, t->n_owned + 1, sizeof *t->owned)) {
        free(s);
        return -1;
    }
    t->owned[t->n_owned++] = s;
    return 0;
}

static void anth_text_free(anth_text *t)
{
    for (size_t i = 0; i < t->n_owned; i++)
        free(t->owned[i]);
    free(t->owned);
    free(t->pieces);
    free(t->msgs);
}

/* {"type":"text","text":T} */
static void anth_text_block_text(ac_buf *b, const char *text)
{
    ac_buf_addstr(b, "{\"type\":\"text\",\"text\":");
    put_jstr(b, text);
    ac_buf_add(b, "}", 1);
}

/* A JSON value's text as the request writes it, appended to b (the model's arguments and
 * thinking blocks: jansson parsed them, and writes them back). */
static void put_dumped(ac_buf *b, const json_t *v)
{
    char *s = v ? json_dumps(v, DUMP_FLAGS | JSON_ENCODE_ANY) : NULL;
    if (!s)
        ac_buf_fail(b);
    else
        ac_buf_addstr(b, s);
    free(s);
}

/* The tool_use "input" for the arguments the model sent (see request.h), as anth_input()
 * makes it. */
static void anth_input_text(ac_buf *b, const char *args)
{
    const char *p = args;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (!*p) {
        ac_buf_add(b, "{}", 2);
        return;
    }
    json_t *j = json_loads(args, JSON_REJECT_DUPLICATES, NULL);
    if (json_is_object(j)) {
        put_dumped(b, j);
    } else {
        ac_buf_addstr(b, "{\"_raw_arguments\":");
        put_jstr(b, args);
        ac_buf_add(b, "}", 1);
    }
    json_decref(j);
}

/* The thinking blocks of m (a JSON array text), each followed by a comma, as
 * anth_thinking_first() puts them first. */
static void anth_thinking_text(ac_buf *b, const ac_message *m)
{
    json_t *think = json_loads(m->thinking, JSON_ALLOW_NUL, NULL);
    for (size_t k = 0; json_is_array(think) && k < json_array_size(think); k++) {
        put_dumped(b, json_array_get(think, k));
        ac_buf_add(b, ",", 1);
    }
    json_decref(think);
}

/* Assistant message m's blocks, a NUL, and its calls' tool_result blocks (the members without
 * brackets), as anth_assistant_blocks() makes them, appended to b. */
static void anth_assistant_text(const ac_conv *c, const view *v, const ac_message *m,
                                int with_thinking, ac_buf *b)
{
    ac_buf blocks, results;
    ac_buf_init(&blocks, AC_BUF_MAX);
    ac_buf_init(&results, AC_BUF_MAX);
    if (*m->content)
        anth_text_block_text(&blocks, m->content);
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const char *content;
        const ac_tool_call *r = sent_call(c, v, m, k, &content);
        if (!r)
            continue;
        wire_name w;
        ac_buf_addstr(&blocks, blocks.n ? ",{\"type\":\"tool_use\",\"id\":"
                                        : "{\"type\":\"tool_use\",\"id\":");
        put_jstr(&blocks, r->id);
        ac_buf_addstr(&blocks, ",\"name\":");
        put_jstr(&blocks, wire(r->name, &w));
        ac_buf_addstr(&blocks, ",\"input\":");
        anth_input_text(&blocks, r->arguments);
        ac_buf_add(&blocks, "}", 1);
        ac_buf_addstr(&results, results.n ? ",{\"type\":\"tool_result\",\"tool_use_id\":"
                                          : "{\"type\":\"tool_result\",\"tool_use_id\":");
        put_jstr(&results, r->id);
        ac_buf_addstr(&results, ",\"content\":");
        put_jstr(&results, content);
        ac_buf_addstr(&results, r->state == AC_CALL_FAILURE ? ",\"is_error\":true}" : "}");
    }
    /* thinking only with something else: a message of thinking alone is not sent */
    if (with_thinking && m->thinking && blocks.n)
        anth_thinking_text(b, m);
    if (blocks.failed || results.failed)
        ac_buf_fail(b);
    else if (blocks.n)
        ac_buf_add(b, blocks.p, blocks.n);
    ac_buf_add(b, "", 1);
    if (results.n)
        ac_buf_add(b, results.p, results.n);
    ac_buf_free(&blocks);
    ac_buf_free(&results);
}

/* The blocks of message m (see above), by the compact writer. 0, or -1. */
static int anth_fragment_blocks(const ac_conv *c, const view *v, const ac_message *m,
                                int with_thinking, ac_buf *b)
{
    if (m->role == AC_ROLE_USER) {
        if (*m->content)
            anth_text_block_text(b, m->content);
    } else {
        anth_assistant_text(c, v, m, with_thinking, b);
    }
    return b->failed ? -1 : 0;
}

/* The fragment of message m (see above), malloc'd in *out. */
static int anth_fragment(const ac_conv *c, const view *v, const ac_message *m, int with_thinking,
                         char **out, size_t *len)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (anth_fragment_blocks(c, v, m, with_thinking, &b))
        ac_buf_fail(&b);
    *out = ac_buf_take(&b, len);
    return *out ? 0 : -1;
}

/* The cache key of m's fragment: OpenAI's (what its calls' results look
 * like), and its thinking when thinking is sent. */
static void anth_key(const ac_conv *c, const view *v, const ac_message *m, int with_thinking,
                     ac_reqcache_key *k)
{
    openai_key(c, v, m, k);
    k->kind = m->role == AC_ROLE_USER ? ANTH_KIND_USER
              : with_thinking         ? ANTH_KIND_ASSISTANT_THINKING
                                      : ANTH_KIND_ASSISTANT;
    if (k->kind != ANTH_KIND_ASSISTANT_THINKING || k->n_sig > AC_REQCACHE_MAX_SIG)
        return;
    if (k->n_sig == AC_REQCACHE_MAX_SIG)
        k->n_sig++; /* not cached */
    else
        k->sig[k->n_sig++] = (uint64_t)(uintptr_t)m->thinking;
}

/* The text of the "messages" array (without its brackets), from the fragments cached in rc
 * (NULL: none kept), appended to out. 0, or -1 when out of memory. */
static int anth_messages_text(const ac_conv *c, const view *v, ac_reqcache *rc, int with_thinking,
                              ac_buf *out)
{
    anth_text t = {0};
    size_t start = out->n;
    for (size_t i = 0; i < v->n; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        if (m->role != AC_ROLE_USER && m->role != AC_ROLE_ASSISTANT)
            continue;
        ac_reqcache_key key;
        anth_key(c, v, m, with_thinking, &key);
        size_t flen = 0;
        const char *frag = rc ? ac_reqcache_get(rc, &key, &flen) : NULL;
        if (!frag) {
            char *made;
            if (anth_fragment(c, v, m, with_thinking, &made, &flen) || anth_own(&t, made))
                goto fail;
            if (rc)
                ac_reqcache_put(rc, &key, made, flen); /* a miss next time if it fails */
            frag = made;
        }
        if (m->role == AC_ROLE_USER) {
            if (anth_push_text(&t, 1, 0, frag, flen))
                goto fail;
            continue;
        }
        const char *nul = memchr(frag, '\0', flen);
        size_t bl = nul ? (size_t)(nul - frag) : flen;
        const char *res = nul ? nul + 1 : frag + flen;
        size_t rl = flen - (size_t)(res - frag);
        size_t n = t.n_msgs;
        if (bl && anth_joins_round(m, with_thinking) && n >= 2 && !t.msgs[n - 2].user &&
            t.msgs[n - 1].user && t.msgs[n - 1].only_results) {
            if (anth_add_piece(&t, n - 2, frag, bl) || (rl && anth_add_piece(&t, n - 1, res, rl)))
                goto fail;
            continue;
        }
        if (anth_push_text(&t, 0, 0, frag, bl) || anth_push_text(&t, 1, 1, res, rl))
            goto fail;
    }
    /* The API wants the user to speak first. */
    if (t.n_msgs && !t.msgs[0].user) {
        ac_buf_addstr(out, "{\"role\":\"user\",\"content\":[");
        anth_text_block_text(out, AC_REQUEST_OMITTED_TEXT);
        if (ac_buf_add(out, "]}", 2))
            goto fail;
    }
    for (size_t i = 0; i < t.n_msgs; i++) {
        static const char u[] = "{\"role\":\"user\",\"content\":[",
                          a[] = "{\"role\":\"assistant\",\"content\":[";
        if ((out->n > start && ac_buf_add(out, ",", 1)) ||
            (t.msgs[i].user ? ac_buf_add(out, u, sizeof u - 1) : ac_buf_add(out, a, sizeof a - 1)))
            goto fail;
        for (size_t k = t.msgs[i].head; k != NPOS; k = t.pieces[k].next)
            if ((k != t.msgs[i].head && ac_buf_add(out, ",", 1)) ||
                ac_buf_add(out, t.pieces[k].p, t.pieces[k].n))
                goto fail;
        if (ac_buf_add(out, "]}", 2))
            goto fail;
    }
    anth_text_free(&t);
    if (rc)
        ac_reqcache_sweep(rc);
    return out->failed ? -1 : 0;
fail:
    anth_text_free(&t);
    return -1;
}

/* anth_messages_text() from the conversation's cache, as a string (malloc'd; NULL when out of
 * memory) for fill_messages(). */
static char *anth_messages_string(const ac_conv *c, const view *v, int with_thinking, size_t *len)
{
    ac_buf out;
    ac_buf_init(&out, AC_BUF_MAX);
    if (anth_messages_text(c, v, ac_conv__reqcache(c), with_thinking, &out))
        ac_buf_fail(&out);
    return ac_buf_take(&out, len);
}

/* Where the value of the top-level member `key` (a quoted key and its colon)
 * starts in the JSON object text s, or NULL. */
static const char *top_member(const char *s, const char *key)
{
    size_t kl = strlen(key);
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '"') {
            if (depth == 1 && strncmp(p, key, kl) == 0)
                return p + kl;
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p)
                return NULL;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            depth--;
        }
    }
    return NULL;
}

/* root's JSON text with the members of its empty "messages" array filled
 * in from msgs. */
static char *fill_messages(json_t *root, const char *msgs, size_t mlen)
{
    char *r = json_dumps(root, DUMP_FLAGS);
    const char *at = r ? top_member(r, "\"messages\":") : NULL;
    char *out = NULL;
    if (at && at[0] == '[' && at[1] == ']') {
        size_t head = (size_t)(at + 1 - r), rl = strlen(r);
        out = malloc(rl + mlen + 1);
        if (out) {
            memcpy(out, r, head);
            memcpy(out + head, msgs, mlen);
            memcpy(out + head + mlen, r + head, rl - head + 1);
        }
    }
    free(r);
    return out;
}

/* Joins the visible system messages; returns a malloc'd string or NULL when
 * there are none (*oom set on allocation failure). */
static char *anth_system(const ac_conv *c, const view *v, int *oom)
{
    size_t len = 0, count = 0;
    for (size_t i = 0; i < v->n; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        if (m->role == AC_ROLE_SYSTEM && *m->content) {
            len += strlen(m->content) + 2;
            count++;
        }
    }
    *oom = 0;
    if (!count)
        return NULL;
    char *s = malloc(len + 1), *p = s;
    if (!s) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < v->n; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        if (m->role != AC_ROLE_SYSTEM || !*m->content)
            continue;
        if (p != s) {
            memcpy(p, "\n\n", 2);
            p += 2;
        }
        size_t n = strlen(m->content);
        memcpy(p, m->content, n);
        p += n;
    }
    *p = 0;
    return s;
}

char *ac_request_anthropic(const ac_conv *c, const ac_request_opts *opts, char *err, size_t errcap)
{
    return ac_request__anthropic(c, opts, 1, err, errcap);
}

/* budget_tokens of extended thinking, 0 for none ((budget + the default must fit an int). */
static int anth_budget(const ac_request_opts *opts)
{
    return opts->thinking_budget <= 0 ? 0
           : opts->thinking_budget > INT_MAX - AC_REQUEST_DEFAULT_MAX_TOKENS
               ? INT_MAX - AC_REQUEST_DEFAULT_MAX_TOKENS
               : opts->thinking_budget;
}

/* model, max_tokens, stream, thinking and the sampling settings. 0, or -1. */
static int anth_head(json_t *root, const ac_request_opts *opts, int budget)
{
    int max_tokens = opts->max_tokens > 0 ? opts->max_tokens : AC_REQUEST_DEFAULT_MAX_TOKENS;
    if (budget && max_tokens <= budget)
        max_tokens = budget + AC_REQUEST_DEFAULT_MAX_TOKENS;
    if (put(root, "model", json_string(opts->model)) ||
        put(root, "max_tokens", json_integer(max_tokens)) ||
        put(root, "stream", opts->stream ? json_true() : json_false()))
        return -1;
    if (budget &&
        put(root, "thinking", json_pack("{s:s, s:i}", "type", "enabled", "budget_tokens", budget)))
        return -1;
    return put_sampling(root, opts->settings, 1) ? -1 : 0;
}

/* Joins text to *system after a blank line (text alone when there is none). 0, or -1. */
static int anth_join(char **system, const char *lead, const char *text)
{
    size_t have = *system ? strlen(*system) : 0;
    size_t cap = have + 2 + strlen(lead) + strlen(text) + 1;
    char *joined = malloc(cap);
    if (!joined)
        return -1;
    snprintf(joined, cap, "%s%s%s%s", *system ? *system : "", have ? "\n\n" : "", lead, text);
    free(*system);
    *system = joined;
    return 0;
}

/* The system text: the conversation's, the output schema as an instruction
 * (Anthropic has no native field for it) and the context note. NULL with
 * *oom 0 when there is none. */
static char *anth_full_system(const ac_conv *c, const view *v, const ac_request_opts *opts,
                              int *oom)
{
    char *system = anth_system(c, v, oom);
    if (!*oom && opts->output_schema &&
        anth_join(&system,
                  "Reply with only a JSON value, no other text, that matches "
                  "this JSON Schema:\n",
                  opts->output_schema))
        *oom = 1;
    if (!*oom && opts->context_note && anth_join(&system, "", opts->context_note))
        *oom = 1;
    return system;
}

/* The messages as JSON (the whole build), the user speaking first. 0, or -1. */
static int anth_messages_json(const ac_conv *c, const view *v, json_t *msgs, int thinking)
{
    for (size_t i = 0; i < v->n; i++) {
        const ac_message *m = c->msgs[v->idx[i]];
        int rc = 0;
        if (m->role == AC_ROLE_USER) {
            json_t *blocks = json_array();
            if (blocks && *m->content && append(blocks, text_block(m->content))) {
                json_decref(blocks);
                return -1;
            }
            rc = anth_push(msgs, "user", blocks);
        } else if (m->role == AC_ROLE_ASSISTANT) {
            rc = anth_assistant(c, v, m, msgs, thinking);
        }
        if (rc)
            return -1;
    }
    /* The API wants the user to speak first. */
    json_t *first = json_array_get(msgs, 0);
    if (first && strcmp(json_string_value(json_object_get(first, "role")), "user") != 0) {
        json_t *u = json_pack("{s:s, s:[{s:s, s:s}]}", "role", "user", "content", "type", "text",
                              "text", AC_REQUEST_OMITTED_TEXT);
        if (!u || json_array_insert_new(msgs, 0, u))
            return -1;
    }
    return 0;
}

/* Anthropic's tool_choice (with the parallel switch), as put_choice_anthropic() makes it. */
static void anth_choice_text(ac_buf *b, const ac_request_settings *st)
{
    if (!st || (!st->tool_choice && !st->parallel_tool_calls))
        return;
    wire_name w;
    const char *tc = st->tool_choice ? wire(st->tool_choice, &w) : "auto";
    if (!strcmp(tc, "required")) {
        ac_buf_addstr(b, ",\"tool_choice\":{\"type\":\"any\"");
    } else if (is_mode(tc)) {
        ac_buf_addstr(b, ",\"tool_choice\":{\"type\":");
        put_jstr(b, tc);
    } else {
        ac_buf_addstr(b, ",\"tool_choice\":{\"type\":\"tool\",\"name\":");
        put_jstr(b, tc);
    }
    /* "none" has no parallel switch: no tool is called at all */
    if (st->parallel_tool_calls && strcmp(tc, "none") != 0)
        ac_buf_addstr(b, st->parallel_tool_calls < 0 ? ",\"disable_parallel_tool_use\":true"
                                                     : ",\"disable_parallel_tool_use\":false");
    ac_buf_add(b, "}", 1);
}

/* ,"tools":[...] and the choice among them in Anthropic's form, as put_tools() makes them.
 * 0; 1 when the settings are refused (err says why); -1 out of memory. */
static int anth_tools_text(ac_buf *b, const ac_conv *c, const ac_request_opts *opts, char *err,
                           size_t errcap)
{
    const ac_request_settings *st = opts->settings;
    wire_name cw;
    const char *choice =
        st && st->tool_choice && !is_mode(st->tool_choice) ? wire(st->tool_choice, &cw) : NULL;
    int n = 0, named = 0;
    for (size_t i = 0; i < c->n_tools && !b->failed; i++) {
        const ac_tool_def *t = &c->tools[i];
        if (!ac_request_tool_allowed(opts, t->name))
            continue;
        size_t at = b->n;
        wire_name w;
        const char *name = wire(t->name, &w);
        ac_buf_addstr(b, n ? ",{\"name\":" : ",\"tools\":[{\"name\":");
        put_jstr(b, name);
        ac_buf_addstr(b, ",\"description\":");
        put_jstr(b, t->description);
        ac_buf_addstr(b, ",\"input_schema\":");
        int rc = b->failed ? -1 : tool_schema_text(t, opts, b);
        if (rc < 0)
            return -1;
        if (rc > 0) { /* left out: as if never written */
            b->n = at;
            b->p[at] = '\0';
            continue;
        }
        ac_buf_add(b, "}", 1);
        n++;
        named |= choice && !strcmp(name, choice);
    }
    if (b->failed)
        return -1;
    if (choice && !named) {
        set_err(err, errcap,
                "tool_choice '%.128s' is not a tool offered to the model (auto, none, required, "
                "or the name of a configured tool)",
                st->tool_choice);
        return 1;
    }
    if (n) {
        ac_buf_add(b, "]", 1);
        anth_choice_text(b, st);
    }
    return 0;
}

/* model, max_tokens, stream, thinking, the sampling settings and the system text, as
 * anth_head() and the system member make them. */
static void anth_head_text(ac_buf *b, const ac_request_opts *opts, int budget, const char *system)
{
    const ac_request_settings *st = opts->settings;
    int max_tokens = opts->max_tokens > 0 ? opts->max_tokens : AC_REQUEST_DEFAULT_MAX_TOKENS;
    if (budget && max_tokens <= budget)
        max_tokens = budget + AC_REQUEST_DEFAULT_MAX_TOKENS;
    ac_buf_addstr(b, "{\"model\":");
    put_jstr(b, opts->model);
    ac_buf_printf(b, ",\"max_tokens\":%d,\"stream\":%s", max_tokens,
                  opts->stream ? "true" : "false");
    if (budget)
        ac_buf_printf(b, ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":%d}", budget);
    put_sampling_text(b, st, "stop_sequences");
    if (system) {
        ac_buf_addstr(b, ",\"system\":");
        put_jstr(b, system);
    }
}

/* The body by the compact writer (no pass-through): the head, the messages from their
 * fragments (cached in rc when not NULL), the tools. NULL with *refused set (err says why),
 * or out of memory. */
static char *anth_compact_body(const ac_conv *c, const view *v, const ac_request_opts *opts,
                               ac_reqcache *rc, char *err, size_t errcap, int *refused)
{
    int oom = 0, budget = anth_budget(opts);
    char *system = anth_full_system(c, v, opts, &oom);
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (oom)
        ac_buf_fail(&b);
    ac_buf_reserve(&b, 1000); /* a short conversation's whole body: one allocation */
    anth_head_text(&b, opts, budget, system);
    ac_buf_addstr(&b, ",\"messages\":[");
    if (b.failed || anth_messages_text(c, v, rc, budget > 0, &b))
        ac_buf_fail(&b);
    ac_buf_add(&b, "]", 1);
    int tr = b.failed ? -1 : anth_tools_text(&b, c, opts, err, errcap);
    *refused = tr > 0;
    if (tr)
        ac_buf_fail(&b);
    ac_buf_add(&b, "}", 1);
    free(system);
    return ac_buf_take(&b, NULL);
}

char *ac_request__anthropic(const ac_conv *c, const ac_request_opts *opts, int use_cache, char *err,
                            size_t errcap)
{
    view v;
    if (request_view(c, opts, &v, err, errcap))
        return NULL;
    /* as for OpenAI, a short conversation is serialized whole */
    int cached = use_cache && v.n >= AC_REQCACHE_MIN_MESSAGES;
    if (!cached && use_cache && c->reqcache)
        ac_reqcache_sweep(c->reqcache);
    if (openai_compact(opts)) { /* the same condition: no pass-through, finite reals */
        int refused = 0;
        char *body = anth_compact_body(c, &v, opts, cached ? ac_conv__reqcache(c) : NULL, err,
                                       errcap, &refused);
        if (!body && !refused)
            set_err(err, errcap, "request: out of memory");
        view_free(&v);
        return body;
    }
    char *out = NULL, *system = NULL, *mtext = NULL;
    size_t mlen = 0;
    int oom = 0, budget = anth_budget(opts);
    json_t *root = json_object(), *msgs = json_array();
    if (!root || anth_head(root, opts, budget))
        goto fail;
    system = anth_full_system(c, &v, opts, &oom);
    if (oom || (system && put(root, "system", json_string(system))))
        goto fail;
    if (put(root, "messages", msgs))
        goto fail;
    if (cached ? !(mtext = anth_messages_string(c, &v, budget > 0, &mlen))
               : anth_messages_json(c, &v, msgs, budget > 0))
        goto fail;
    int tr = put_tools(root, c, opts, 1, err, errcap);
    if (tr > 0)
        goto refused;
    if (tr < 0 || put_passthrough(root, opts->settings))
        goto fail;
    out = cached ? fill_messages(root, mtext, mlen) : json_dumps(root, DUMP_FLAGS);
fail:
    if (!out)
        set_err(err, errcap, "request: out of memory");
refused:
    free(mtext);
    free(system);
    json_decref(root);
    view_free(&v);
    return out;
}
