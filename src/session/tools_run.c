/*
 * tools_run.c - tools and the run_tools effect.
 *
 * Tools come from tool files (child processes: arguments on stdin, result
 * on stdout), built-ins (builtin:calculator, builtin:clock), the internal
 * context tools (builtin:context) and C callbacks registered by embedders. The effect runs the
 * pending calls of the current turn concurrently (at most max_parallel_tools at once), validates
 * arguments against the tool's JSON Schema before anything runs, and posts
 * one tool.completed per call; results are matched to call ids, and the
 * request builder sends them back in the order the model issued the calls.
 *
 * Internal context tools (builtin:context) let the model change its own
 * context. Their calls are recorded flagged internal (decided by name in
 * record_assistant, see ac_tool_is_internal_name), so history search never
 * returns them. The effect only reads the conversation and posts what the
 * action needs:
 *   expand_context {"by"?}          context.expanded {"id","ok","content","by"}
 *   search_tool_calls {"name"?, "text"?, "from"?, "to"?, "limit"?}
 *                                   tool.completed with a compact JSON list
 *   load_tool_calls {"ids": [...]}  context.loaded {"id","ok","content",
 *                                   "restore": [message ids], "rounds": [call ids]}
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/proc.h"
#include "session_int.h"
#include "tools/calculator.h"
#include "tools/schema.h"
#include "tools/toolfile.h"
#include "util/units.h"
#include "util/utf8.h"

enum tool_kind { TK_CALC, TK_CLOCK, TK_EXTERNAL, TK_CALLBACK, TK_EXPAND, TK_SEARCH, TK_LOAD };

#define SEARCH_LIMIT_DEFAULT 10
#define SEARCH_LIMIT_MAX 50
#define SEARCH_ARGS_EXCERPT 200
#define SEARCH_RESULT_EXCERPT 300
#define SEARCH_OUTPUT_CAP ((size_t)32 << 10)
#define LOAD_IDS_MAX 20

/* ORDER INTERNAL: the names record_assistant flags internal. */
static const char *const internal_names[] = {"expand_context", "search_tool_calls",
                                             "load_tool_calls", NULL};

int ac_tool_is_internal_name(const char *name)
{
    for (size_t i = 0; name && internal_names[i]; i++)
        if (strcmp(internal_names[i], name) == 0)
            return 1;
    return 0;
}

struct ac_tool {
    int kind;
    char *name, *description;
    json_t *parameters;
    ac_schema *schema;
    char **argv;
    int64_t timeout_ms;
    size_t max_output;
    ac_tool_fn fn;
    void *ud;
};

static void tool_free(ac_tool *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->description);
    json_decref(t->parameters);
    ac_schema_free(t->schema);
    if (t->argv)
        for (char **a = t->argv; *a; a++)
            free(*a);
    free(t->argv);
    free(t);
}

void ac_tools_free_all(ac_engine *e)
{
    for (size_t i = 0; i < e->n_tools; i++)
        tool_free(e->tools[i]);
    free(e->tools);
    e->tools = NULL;
    e->n_tools = e->cap_tools = 0;
}

static const ac_tool *find_tool(const ac_engine *e, const char *name)
{
    for (size_t i = 0; i < e->n_tools; i++)
        if (strcmp(e->tools[i]->name, name) == 0)
            return e->tools[i];
    return NULL;
}

static int add_tool(ac_engine *e, ac_tool *t, char *err, size_t errcap)
{
    int internal_kind = t->kind == TK_EXPAND || t->kind == TK_SEARCH || t->kind == TK_LOAD;
    if (!internal_kind && ac_tool_is_internal_name(t->name)) {
        snprintf(err, errcap, "tool name '%s' is reserved for builtin:context", t->name);
        tool_free(t);
        return -1;
    }
    if (find_tool(e, t->name)) {
        snprintf(err, errcap, "tool '%s' is defined twice", t->name);
        tool_free(t);
        return -1;
    }
    if (e->n_tools == e->cap_tools) {
        size_t cap = e->cap_tools ? e->cap_tools * 2 : 8;
        ac_tool **v = realloc(e->tools, cap * sizeof *v);
        if (!v) {
            tool_free(t);
            snprintf(err, errcap, "out of memory");
            return -1;
        }
        e->tools = v;
        e->cap_tools = cap;
    }
    e->tools[e->n_tools++] = t;
    return 0;
}

static ac_tool *new_tool(int kind, const char *name, const char *desc, const char *schema,
                         char *err, size_t errcap)
{
    ac_tool *t = calloc(1, sizeof *t);
    json_error_t jerr;
    if (!t)
        return NULL;
    t->kind = kind;
    t->name = strdup(name);
    t->description = strdup(desc ? desc : "");
    t->parameters = json_loads(schema ? schema : "{\"type\":\"object\"}", 0, &jerr);
    if (!t->parameters) {
        snprintf(err, errcap, "tool '%s': schema is not JSON: %s", name, jerr.text);
        tool_free(t);
        return NULL;
    }
    t->schema = ac_schema_compile(t->parameters, err, errcap);
    if (!t->schema || !t->name || !t->description) {
        tool_free(t);
        return NULL;
    }
    return t;
}

/* builtin:context: the internal tools that change the model's own context. */
static int add_context_tools(ac_engine *e, char *err, size_t errcap)
{
    static const struct {
        int kind;
        const char *name, *desc, *schema;
    } defs[] = {
        {TK_EXPAND, "expand_context",
         "Shows you more of the earlier conversation: grows the window of recent messages "
         "you see by `by` messages (default: the spec's context_step).",
         "{\"type\":\"object\",\"properties\":{\"by\":{\"type\":\"integer\","
         "\"minimum\":1,\"maximum\":100000}},\"additionalProperties\":false}"},
        {TK_SEARCH, "search_tool_calls",
         "Searches earlier tool calls by tool name, by text in their arguments or result, "
         "and by time (ISO 8601 or Unix ms). Returns id, name, an arguments excerpt, "
         "called_at, ok and a result excerpt, newest first.",
         "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
         "\"text\":{\"type\":\"string\"},\"from\":{\"type\":[\"string\",\"integer\"]},"
         "\"to\":{\"type\":[\"string\",\"integer\"]},\"limit\":{\"type\":\"integer\","
         "\"minimum\":1,\"maximum\":50}},\"additionalProperties\":false}"},
        {TK_LOAD, "load_tool_calls",
         "Brings the full results of earlier tool calls (ids from search_tool_calls) back "
         "into your context.",
         "{\"type\":\"object\",\"properties\":{\"ids\":{\"type\":\"array\",\"items\":"
         "{\"type\":\"string\"},\"minItems\":1,\"maxItems\":20}},\"required\":[\"ids\"],"
         "\"additionalProperties\":false}"},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        ac_tool *t =
            new_tool(defs[i].kind, defs[i].name, defs[i].desc, defs[i].schema, err, errcap);
        if (!t || add_tool(e, t, err, errcap) < 0)
            return -1;
    }
    return 0;
}

int ac_engine_add_tools(ac_engine *e, const char *spec, char *err, size_t errcap)
{
    if (strcmp(spec, "builtin:calculator") == 0) {
        ac_tool *t = new_tool(
            TK_CALC, "calculator",
            "Evaluates an arithmetic expression exactly: + - * / %, parentheses, decimals, "
            "unary minus. Use it for any arithmetic.",
            "{\"type\":\"object\",\"properties\":{\"expression\":{\"type\":\"string\","
            "\"description\":\"for example (17 * 23) + 0.5\"}},\"required\":[\"expression\"],"
            "\"additionalProperties\":false}",
            err, errcap);
        return t ? add_tool(e, t, err, errcap) : -1;
    }
    if (strcmp(spec, "builtin:clock") == 0) {
        ac_tool *t = new_tool(
            TK_CLOCK, "clock",
            "Returns the current date and time (UTC, ISO 8601) and the Unix "
            "time in milliseconds.",
            "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}", err, errcap);
        return t ? add_tool(e, t, err, errcap) : -1;
    }
    if (strcmp(spec, "builtin:context") == 0)
        return add_context_tools(e, err, errcap);
    if (strncmp(spec, "builtin:", 8) == 0) {
        snprintf(err, errcap,
                 "unknown built-in tool '%s' (builtin:calculator, builtin:clock, "
                 "builtin:context)",
                 spec);
        return -1;
    }
    ac_toolfile *tf = ac_toolfile_load(spec, err, errcap);
    if (!tf)
        return -1;
    for (size_t i = 0; i < tf->n; i++) {
        const ac_toolfile_tool *d = &tf->tools[i];
        char *schema = json_dumps(d->parameters, JSON_COMPACT);
        ac_tool *t = new_tool(TK_EXTERNAL, d->name, d->description, schema, err, errcap);
        free(schema);
        if (!t) {
            ac_toolfile_free(tf);
            return -1;
        }
        t->argv = calloc(d->argc + 1, sizeof *t->argv);
        for (size_t k = 0; t->argv && k < d->argc; k++)
            t->argv[k] = strdup(d->argv[k]);
        t->timeout_ms = d->timeout_ms;
        t->max_output = d->max_output;
        if (add_tool(e, t, err, errcap) < 0) {
            ac_toolfile_free(tf);
            return -1;
        }
    }
    ac_toolfile_free(tf);
    return 0;
}

int ac_engine_add_callback_tool(ac_engine *e, const char *name, const char *description,
                                const char *schema_json, ac_tool_fn fn, void *ud, char *err,
                                size_t errcap)
{
    if (!name || !*name || !fn) {
        snprintf(err, errcap, "a callback tool needs a name and a function");
        return -1;
    }
    ac_tool *t = new_tool(TK_CALLBACK, name, description, schema_json, err, errcap);
    if (!t)
        return -1;
    t->fn = fn;
    t->ud = ud;
    return add_tool(e, t, err, errcap);
}

void ac_tools_add_defs(ac_engine *e, json_t *arr)
{
    for (size_t i = 0; i < e->n_tools; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:O}", "name", e->tools[i]->name,
                                             "description", e->tools[i]->description, "parameters",
                                             e->tools[i]->parameters));
}

/* ---- the run_tools effect ---- */

struct ac_tool_call_handle {
    pthread_mutex_t mu;
    int refs; /* the caller's and the run's */
    int abandoned;
    ac_loop *loop;
    ac_session *s;
    char *id;
    int ok;
    char *content;
    struct slot *slot;
};

typedef struct slot {
    char *id;
    const ac_tool *tool;
    uint64_t proc;
    uint64_t timer;
    ac_tool_call_handle *cb;
    int64_t started_ms;
    int ok;
    char *content;
    int state;     /* 0 waiting, 1 running, 2 done */
    uint16_t ev;   /* event to post (internal tools); 0: tool.completed */
    json_t *extra; /* more payload fields for that event, or NULL */
    struct ac_tool_run *run;
} slot;

struct ac_tool_run {
    ac_session *s;
    slot *slots;
    size_t n, next, running;
    size_t max_parallel;
    int launching; /* inside launch_next: freeing waits until it returns */
    int dead;      /* stopped while launching */
};

static void handle_release(ac_tool_call_handle *h)
{
    pthread_mutex_lock(&h->mu);
    int left = --h->refs;
    pthread_mutex_unlock(&h->mu);
    if (left == 0) {
        pthread_mutex_destroy(&h->mu);
        free(h->id);
        free(h->content);
        free(h);
    }
}

static int launch_next(ac_tool_run *r);

/* A call finished: start the next waiting one, then post (the post may
 * stop the effect and free `r`, so nothing touches it afterwards). If the
 * runner was stopped while starting the next one (a callback cancelled or
 * freed the session), nothing is posted: the session may be gone. */
static void finish(ac_tool_run *r, slot *sl, int ok, const char *content, size_t len)
{
    ac_session *s = r->s;
    sl->state = 2;
    sl->proc = 0;
    sl->timer = 0;
    r->running--;
    char *clean = ac_utf8_repair(content, len, AC_UTF8_REPLACE_NUL, NULL);
    int64_t dur = ac_loop_now_ms(s->e->loop) - sl->started_ms;
    json_t *d = json_pack("{s:s, s:b, s:s, s:I}", "id", sl->id, "ok", ok, "content",
                          clean ? clean : "", "duration_ms", (json_int_t)dur);
    free(clean);
    if (!d) /* the call is answered whatever happens, or the turn would wait forever */
        d = json_pack("{s:s, s:b, s:s}", "id", sl->id, "ok", 0, "content",
                      "the tool's result could not be recorded");
    uint16_t ev = sl->ev ? sl->ev : s->e->ev_tool_completed;
    if (d && sl->extra)
        json_object_update(d, sl->extra);
    json_decref(sl->extra);
    sl->extra = NULL;
    if (launch_next(r)) { /* stopped meanwhile, and freed */
        json_decref(d);
        return;
    }
    ac_session_post_index(s, ev, d, 0);
}

static void proc_done(void *ud, const ac_proc_result *res)
{
    slot *sl = ud;
    ac_tool_run *run = sl->run;
    char buf[512];
    if (res->spawn_failed) {
        snprintf(buf, sizeof buf, "cannot run '%s': %s", sl->tool->argv[0],
                 strerror(res->spawn_errno));
        finish(run, sl, 0, buf, strlen(buf));
    } else if (res->timed_out) {
        snprintf(buf, sizeof buf, "timed out after %lld ms (the tool was killed)",
                 (long long)sl->tool->timeout_ms);
        finish(run, sl, 0, buf, strlen(buf));
    } else if (res->exited && res->exit_code == 0) {
        if (res->truncated) {
            size_t n = res->out_len;
            char *o = malloc(n + 96);
            if (!o) {
                finish(run, sl, 0, "out of memory", 13);
                return;
            }
            memcpy(o, res->out, n);
            int k = snprintf(o + n, 96, "\n[output cut at %zu bytes]", n);
            finish(run, sl, 1, o, n + (size_t)(k > 0 ? k : 0));
            free(o);
        } else {
            finish(run, sl, 1, res->out, res->out_len);
        }
    } else {
        if (res->err_len)
            finish(run, sl, 0, res->err_tail, res->err_len);
        else {
            if (res->signaled)
                snprintf(buf, sizeof buf, "killed by signal %d", res->signal);
            else
                snprintf(buf, sizeof buf, "exit status %d", res->exit_code);
            finish(run, sl, 0, buf, strlen(buf));
        }
    }
}

static void immediate_fire(void *ud)
{
    slot *sl = ud;
    ac_tool_run *run = sl->run;
    char *c = sl->content;
    sl->content = NULL;
    sl->timer = 0;
    finish(run, sl, sl->ok, c ? c : "", c ? strlen(c) : 0);
    free(c);
}

static void complete_later(ac_tool_run *r, slot *sl, int ok, const char *content)
{
    sl->ok = ok;
    free(sl->content);
    sl->content = strdup(content);
    sl->timer = ac_loop_timer(r->s->e->loop, 0, immediate_fire, sl);
}

static void callback_arrived(void *ud)
{
    ac_tool_call_handle *h = ud;
    pthread_mutex_lock(&h->mu);
    int abandoned = h->abandoned;
    slot *sl = h->slot;
    pthread_mutex_unlock(&h->mu);
    if (!abandoned && sl) {
        ac_tool_run *run = sl->run;
        sl->cb = NULL;
        int ok = h->ok;
        char *content = h->content;
        h->content = NULL;
        handle_release(h); /* the run's reference */
        handle_release(h); /* the caller's (completion) */
        finish(run, sl, ok, content ? content : "", content ? strlen(content) : 0);
        free(content);
        return;
    }
    handle_release(h);
}

void ac_tool_call_complete(ac_tool_call_handle *h, int ok, const char *content)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    if (!h->content)
        h->content = strdup(content ? content : "");
    h->ok = ok;
    pthread_mutex_unlock(&h->mu);
    if (ac_loop_post(h->loop, callback_arrived, h) != 0)
        handle_release(h);
}

/* ---- internal context tools: read the conversation, post what the action needs ---- */

/* A JSON string of at most cap bytes of s (cut at a UTF-8 boundary, "..." added). */
static json_t *excerpt(const char *s, size_t cap)
{
    size_t n = s ? strlen(s) : 0;
    if (n <= cap)
        return json_string(s ? s : "");
    while (cap > 0 && ((unsigned char)s[cap] & 0xC0) == 0x80)
        cap--;
    char *b = malloc(cap + 4);
    if (!b)
        return json_string("");
    memcpy(b, s, cap);
    memcpy(b + cap, "...", 4);
    json_t *j = json_string(b);
    free(b);
    return j ? j : json_string("");
}

static void iso_time(int64_t ms, char *out, size_t cap)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(out, cap, "%lld", (long long)ms);
        return;
    }
    char base[40];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", base, (int)(ms % 1000));
}

/* Unix ms from an integer, or a string ac_parse_time reads (a string of
 * digits, or ISO 8601). 0 on success. */
static int parse_time(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    return ac_parse_time(json_string_value(v), out) == AC_UNITS_OK ? 0 : -1;
}

static void run_expand(ac_tool_run *r, slot *sl, json_t *args)
{
    ac_session *s = r->s;
    char msg[400];
    size_t w = ac_conv_window(s->conv);
    int64_t by = json_integer_value(json_object_get(args, "by"));
    if (by <= 0)
        by = ac_engine_param_int(s->e, "context_step", 20);
    if (by <= 0)
        by = 20;
    sl->ev = s->e->ev_ctx_expanded != AC_FSM_NONE ? s->e->ev_ctx_expanded : 0;
    if (w == 0) {
        snprintf(msg, sizeof msg,
                 "the whole conversation since the last compaction is already visible "
                 "(context window 0 = everything); nothing to expand. Older tool calls can "
                 "be found with search_tool_calls and loaded with load_tool_calls.");
        sl->extra = json_pack("{s:i}", "by", 0);
    } else {
        size_t since = ac_conv_message_count(s->conv) - ac_conv_floor(s->conv);
        snprintf(msg, sizeof msg,
                 "context window grown from %zu to %zu messages (%zu messages since the last "
                 "compaction)",
                 w, w + (size_t)by, since);
        sl->extra = json_pack("{s:I}", "by", (json_int_t)by);
    }
    complete_later(r, sl, 1, msg);
}

static void run_search(ac_tool_run *r, slot *sl, json_t *args)
{
    ac_session *s = r->s;
    ac_call_query q;
    memset(&q, 0, sizeof q);
    q.name = json_string_value(json_object_get(args, "name"));
    q.text = json_string_value(json_object_get(args, "text"));
    json_t *from = json_object_get(args, "from"), *to = json_object_get(args, "to");
    if ((from && parse_time(from, &q.from_ms) != 0) || (to && parse_time(to, &q.to_ms) != 0)) {
        complete_later(r, sl, 0,
                       "invalid arguments: from/to must be Unix milliseconds or ISO 8601 "
                       "(2024-05-01, 2024-05-01T12:00:00Z)");
        return;
    }
    if (from && q.from_ms == 0)
        q.from_ms = 1;
    int64_t limit = json_integer_value(json_object_get(args, "limit"));
    if (limit <= 0)
        limit = SEARCH_LIMIT_DEFAULT;
    if (limit > SEARCH_LIMIT_MAX)
        limit = SEARCH_LIMIT_MAX;
    const ac_tool_call *found[SEARCH_LIMIT_MAX];
    size_t total = ac_conv_search_calls(s->conv, &q, found, (size_t)limit);
    size_t n = total < (size_t)limit ? total : (size_t)limit;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        const ac_tool_call *c = found[i];
        char when[48];
        iso_time(c->called_at_ms, when, sizeof when);
        json_t *o = json_pack("{s:s, s:s, s:o, s:s}", "id", c->id, "name", c->name, "arguments",
                              excerpt(c->arguments, SEARCH_ARGS_EXCERPT), "called_at", when);
        if (!o)
            continue;
        if (c->state == AC_CALL_NONE) {
            json_object_set_new(o, "ok", json_null());
        } else {
            json_object_set_new(o, "ok", json_boolean(c->state == AC_CALL_SUCCESS));
            json_object_set_new(o, "result", excerpt(c->result, SEARCH_RESULT_EXCERPT));
        }
        json_array_append_new(list, o);
    }
    json_t *res =
        json_pack("{s:I, s:o}", "matches", (json_int_t)total, "calls", list ? list : json_array());
    char *txt = res ? json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(res);
    if (txt && strlen(txt) > SEARCH_OUTPUT_CAP)
        txt[SEARCH_OUTPUT_CAP] = 0; /* cannot happen with the caps above; kept as a bound */
    complete_later(r, sl, txt != NULL, txt ? txt : "out of memory");
    free(txt);
}

static void run_load(ac_tool_run *r, slot *sl, json_t *args)
{
    ac_session *s = r->s;
    size_t nmsg = ac_conv_message_count(s->conv);
    size_t *vis = NULL, nvis = 0;
    char *visible = calloc(nmsg + 1, 1);
    json_t *tool_msg = json_object(); /* call id -> message index */
    json_t *restore = json_array(), *rounds = json_array();
    char *txt = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&txt, &len);
    if (!visible || !tool_msg || !restore || !rounds || !out ||
        ac_conv_visible(s->conv, &vis, &nvis) != AC_CONV_OK) {
        if (out)
            fclose(out);
        free(txt);
        txt = NULL;
        complete_later(r, sl, 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nvis; i++)
        visible[vis[i]] = 1;
    for (size_t i = 0; i < nmsg; i++) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if (m->role == AC_ROLE_TOOL && m->tool_call_id)
            json_object_set_new(tool_msg, m->tool_call_id, json_integer((json_int_t)i));
    }
    size_t k;
    json_t *v;
    int any = 0;
    json_array_foreach(json_object_get(args, "ids"), k, v)
    {
        const char *id = json_string_value(v);
        const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
        if (k >= LOAD_IDS_MAX)
            break;
        if (!c || c->internal) {
            fprintf(out, "%s%.80s: unknown call id", k ? "; " : "", id ? id : "?");
            continue;
        }
        if (c->state == AC_CALL_NONE) {
            fprintf(out, "%s%s: has no result yet", k ? "; " : "", id);
            continue;
        }
        json_t *mi = json_object_get(tool_msg, id);
        size_t idx = mi ? (size_t)json_integer_value(mi) : (size_t)-1;
        if (mi && visible[idx]) {
            const ac_message *m = ac_conv_message(s->conv, idx);
            if (m->flags & AC_MSG_CLEARED) {
                json_array_append_new(restore, json_string(m->id));
                fprintf(out, "%s%s: full result restored in place", k ? "; " : "", id);
                any = 1;
            } else {
                fprintf(out, "%s%s: already in context", k ? "; " : "", id);
            }
            continue;
        }
        json_array_append_new(rounds, json_string(id));
        fprintf(out, "%s%s (%s): full result loaded below", k ? "; " : "", id, c->name);
        any = 1;
    }
    fclose(out);
    sl->ev = s->e->ev_ctx_loaded != AC_FSM_NONE ? s->e->ev_ctx_loaded : 0;
    sl->extra = json_pack("{s:O, s:O}", "restore", restore, "rounds", rounds);
    {
        char *msg = malloc(len + 32);
        if (msg) {
            snprintf(msg, len + 32, "%s%s", any ? "loaded: " : "nothing loaded: ", txt ? txt : "");
            complete_later(r, sl, 1, msg);
            free(msg);
        } else {
            complete_later(r, sl, 0, "out of memory");
        }
    }
done:
    free(txt);
    free(vis);
    free(visible);
    json_decref(tool_msg);
    json_decref(restore);
    json_decref(rounds);
}

static void start_call(ac_tool_run *r, slot *sl)
{
    ac_session *s = r->s;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, sl->id);
    sl->state = 1;
    sl->started_ms = ac_loop_now_ms(s->e->loop);
    r->running++;
    const char *name = c ? c->name : "";
    const char *argstr = c && c->arguments && *c->arguments ? c->arguments : "{}";
    if (s->e->has_output && s->e->out.tool_start) {
        s->e->out.tool_start(s->e->out.ud, s, sl->id, name, argstr);
        if (r->dead)
            return; /* stopped from the callback */
    }
    const ac_tool *t = find_tool(s->e, name);
    sl->tool = t;
    char err[600], msg[800];
    if (!t) {
        snprintf(msg, sizeof msg, "unknown tool '%.100s'", name);
        complete_later(r, sl, 0, msg);
        return;
    }
    json_error_t jerr;
    json_t *args = json_loads(argstr, JSON_DECODE_ANY, &jerr);
    if (!args) {
        snprintf(msg, sizeof msg, "invalid arguments: not JSON (%s)", jerr.text);
        complete_later(r, sl, 0, msg);
        return;
    }
    if (!ac_schema_validate(t->schema, args, err, sizeof err)) {
        snprintf(msg, sizeof msg, "invalid arguments: %s", err);
        json_decref(args);
        complete_later(r, sl, 0, msg);
        return;
    }
    if (t->kind == TK_CALC) {
        const char *expr = json_string_value(json_object_get(args, "expression"));
        char out[512];
        if (ac_calc_eval(expr ? expr : "", out, sizeof out, err, sizeof err) == 0)
            complete_later(r, sl, 1, out);
        else
            complete_later(r, sl, 0, err);
    } else if (t->kind == TK_CLOCK) {
        int64_t now = ac_wall_now_ms();
        time_t secs = (time_t)(now / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char iso[64];
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(msg, sizeof msg, "{\"utc\":\"%s\",\"unix_ms\":%lld}", iso, (long long)now);
        complete_later(r, sl, 1, msg);
    } else if (t->kind == TK_EXPAND) {
        run_expand(r, sl, args);
    } else if (t->kind == TK_SEARCH) {
        run_search(r, sl, args);
    } else if (t->kind == TK_LOAD) {
        run_load(r, sl, args);
    } else if (t->kind == TK_EXTERNAL) {
        char env_name[300], env_id[300], env_sess[300];
        snprintf(env_name, sizeof env_name, "AGENTC_TOOL_NAME=%s", t->name);
        snprintf(env_id, sizeof env_id, "AGENTC_TOOL_CALL_ID=%s", sl->id);
        snprintf(env_sess, sizeof env_sess, "AGENTC_SESSION_ID=%s", s->id);
        const char *env[] = {env_name, env_id, env_sess, NULL};
        ac_proc_spec ps;
        memset(&ps, 0, sizeof ps);
        ps.argv = (const char *const *)t->argv;
        ps.env_add = env;
        ps.stdin_data = argstr;
        ps.stdin_len = strlen(argstr);
        ps.timeout_ms = t->timeout_ms;
        ps.max_stdout = t->max_output;
        sl->proc = ac_proc_spawn(s->e->loop, &ps, proc_done, sl, err, sizeof err);
        if (!sl->proc)
            complete_later(r, sl, 0, err);
    } else {
        ac_tool_call_handle *h = calloc(1, sizeof *h);
        if (!h) {
            complete_later(r, sl, 0, "out of memory");
        } else {
            pthread_mutex_init(&h->mu, NULL);
            h->refs = 2;
            h->loop = s->e->loop;
            h->s = s;
            h->id = strdup(sl->id);
            h->slot = sl;
            sl->cb = h;
            char *a = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
            t->fn(t->ud, a ? a : argstr, h);
            free(a);
        }
    }
    json_decref(args);
}

static void run_free(ac_tool_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->slots[i].id);
        free(r->slots[i].content);
        json_decref(r->slots[i].extra);
    }
    free(r->slots);
    free(r);
}

/* Starts waiting calls up to the limit. A tool_start callback or a callback
 * tool may cancel (or free) the session from inside: the runner is then
 * stopped at once but freed only here, once nothing more starts; returns 1
 * when that happened (r is gone). */
static int launch_next(ac_tool_run *r)
{
    r->launching++;
    while (!r->dead && r->next < r->n && r->running < r->max_parallel)
        start_call(r, &r->slots[r->next++]);
    if (--r->launching > 0 || !r->dead)
        return 0;
    run_free(r);
    return 1;
}

void ac_run_tools_start(ac_session *s, const ac_param_value *args, size_t nargs, const ac_event *ev)
{
    (void)ev;
    ac_tool_run *r = calloc(1, sizeof *r);
    size_t n = ac_conv_iter_call_count(s->conv);
    if (!r || !(r->slots = calloc(n + 1, sizeof *r->slots))) {
        free(r);
        return;
    }
    r->s = s;
    r->max_parallel = nargs > 0 && args[0].ival > 0 ? (size_t)args[0].ival : 4;
    for (size_t i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
        if (!c || c->state != AC_CALL_NONE)
            continue;
        r->slots[r->n].run = r;
        r->slots[r->n++].id = strdup(id);
    }
    s->tools_run = r;
    if (r->n == 0) {
        /* nothing to run (the turn's calls could not be recorded): say so,
         * or TOOL_EXECUTING would wait for results that never come */
        ac_session_post_index(s, s->e->ev_tool_completed, json_pack("{s:b}", "none", 1), 0);
        return;
    }
    launch_next(r);
}

void ac_run_tools_stop(ac_session *s)
{
    ac_tool_run *r = s->tools_run;
    if (!r)
        return;
    s->tools_run = NULL;
    for (size_t i = 0; i < r->n; i++) {
        slot *sl = &r->slots[i];
        if (sl->proc)
            ac_proc_kill(s->e->loop, sl->proc);
        if (sl->timer)
            ac_loop_cancel_timer(s->e->loop, sl->timer);
        if (sl->cb) {
            ac_tool_call_handle *h = sl->cb;
            pthread_mutex_lock(&h->mu);
            h->abandoned = 1;
            h->slot = NULL;
            pthread_mutex_unlock(&h->mu);
            handle_release(h);
        }
        sl->proc = 0;
        sl->timer = 0;
        sl->cb = NULL;
    }
    r->dead = 1;
    if (!r->launching)
        run_free(r);
}
