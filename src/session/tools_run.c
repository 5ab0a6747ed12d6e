/*
 * tools_run.c - the run_tools effect.
 *
 * Runs the pending calls of the current turn concurrently (at most
 * max_parallel_tools at once), validates arguments against the tool's JSON
 * Schema before anything runs, and posts one tool.completed per call;
 * results are matched to call ids, and the request builder sends them back
 * in the order the model issued the calls. Tool files run as child
 * processes (arguments on stdin, result on stdout); the built-ins, the
 * context tools (context_tools.c) and C callbacks (tool_callback.c) run
 * in-process, MCP tools on their server (tools_mcp.c). Each kind of tool is
 * one entry of the kind_ops table (how it runs, how it stops); a call's
 * checks (availability, arguments, schema, toolkit) are the same for all.
 * The tools themselves are in tools_registry.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/proc.h"
#include "mcp/mcp.h"
#include "obs/metrics_int.h"
#include "obs/obs.h"
#include "session/decisions.h"
#include "session/tool_cache.h"
#include "session/toolkits.h"
#include "session/tools_internal.h"
#include "tools/calculator.h"
#include "tools/schema.h"
#include "util/buf.h"
#include "util/utf8.h"

/* ---- the run_tools effect ---- */

typedef struct slot {
    char *id;
    const ac_tool *tool;
    uint64_t proc;
    uint64_t timer;
    ac_tool_call_handle *cb;
    ac_mcp_call *mcp;                /* TK_MCP: the call in flight */
    const struct tool_kind_ops *ops; /* how its kind runs and stops, once it runs */
    int64_t started_ms;
    int ok;
    char *content;
    int state;         /* 0 waiting, 1 running, 2 done */
    int recording;     /* its record waits for the store's commit (hook tool_started) */
    char *prefail;     /* meanwhile: the plan's reason not to run it */
    uint16_t ev;       /* event to post (internal tools); 0: tool.completed */
    json_t *extra;     /* more payload fields for that event, or NULL */
    char *cache_key;   /* a cached tool's call: its key (tool_cache.h), or NULL */
    char *cached_from; /* answered from the cache: the id of the call the result came from */
    struct ac_tool_run *run;
    size_t index;           /* in the model's order */
    struct ac_subcall *sub; /* TK_AGENT: the child session's call (subagent.c) */
    uint16_t then;          /* queued after its completion (ac_tool_run_set_then), 0: none */
    int away; /* a client tool's call handed to the session's caller (1), answered (2): not
                 counted as running */
} slot;

struct ac_tool_run {
    ac_session *s;
    slot *slots;
    size_t n, next, running;
    size_t max_parallel;
    ac_turn_plan *plan; /* order, references and output paths (state_turn.c); NULL: in order */
    uint16_t origin;    /* of the run_tools effect: passed with every event queued */
    ac_tk_state *work;  /* the toolkits as this run's calls change them (toolkits.h) */
};

typedef struct tool_kind_ops tool_kind_ops;

static void launch_next(ac_tool_run *r);

/* The result of a call the user edited says so first, with the arguments it ran with (the
 * conversation keeps the model's); NULL for another call. */
static char *edit_noted(const ac_session *s, const char *id, const char *content)
{
    const char *edited = ac_decisions_arguments(s, id);
    if (!edited)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_printf(&b, "arguments edited by the user: %s\n%s", edited, content);
    return ac_buf_take(&b, NULL);
}

/* ---- the result cache (tool_cache.h) ---- */

/* The cache of t's scope for s, made when first needed (NULL: out of memory). */
static ac_tool_cache *cache_of(ac_session *s, const ac_tool *t)
{
    ac_tool_cache **c = t->cache.scope == AC_CACHE_DECL_ENGINE ? &s->e->tool_cache : &s->tool_cache;
    if (!*c)
        *c = ac_tool_cache_new();
    return *c;
}

static void cache_count(const ac_session *s, int metric, const ac_tool *t, size_t n)
{
    const char *l[] = {t->name};
    if (s->e->obs && n)
        ac_metrics_add(s->e->obs->metrics, metric, l, (double)n);
}

/* The result of a successful call of a cached tool is kept (raw: as the tool gave it, before
 * a toolkit's reading), and a hit's payload names the call it came from. */
static void cache_finish(ac_tool_run *r, slot *sl, int ok, const char *raw, json_t *d)
{
    ac_session *s = r->s;
    if (sl->cached_from) {
        json_object_set_new(d, "cached", json_true());
        json_object_set_new(d, "cached_from", json_string(sl->cached_from));
    } else if (ok && raw && sl->cache_key) {
        size_t evicted =
            ac_tool_cache_put(cache_of(s, sl->tool), sl->tool->name, sl->cache_key, raw, sl->id,
                              &sl->tool->cache, ac_loop_now_ms(s->e->loop));
        cache_count(s, AC_M_TOOL_CACHE_EVICTIONS, sl->tool, evicted);
    }
}

/* A result with more than its text (State writes, a toolkit's changes, an internal tool's
 * extra fields, a cached answer) queued as JSON. */
static void post_result(ac_tool_run *r, slot *sl, uint16_t ev, int ok, const char *text,
                        int64_t dur, json_t *writes, json_t *delta, const char *raw)
{
    json_t *d = json_pack("{s:s, s:b, s:s, s:I}", "id", sl->id, "ok", ok, "content",
                          text ? text : "", "duration_ms", (json_int_t)dur);
    if (d && writes)
        json_object_set(d, "state_writes", writes);
    if (!d) /* the call is answered whatever happens, or the turn would wait forever */
        d = json_pack("{s:s, s:b, s:s}", "id", sl->id, "ok", 0, "content",
                      "the tool's result could not be recorded");
    if (d && sl->extra)
        json_object_update(d, sl->extra);
    if (d && delta)
        json_object_set(d, "toolkit", delta);
    if (d)
        cache_finish(r, sl, ok, raw, d);
    ac_session_enqueue(r->s, ev, d, 0, r->origin);
}

/* A call finished: queue its result, then start the next waiting one. The
 * session applies the result after this callback returns, so the runner is
 * never stopped under our feet. */
static void finish(ac_tool_run *r, slot *sl, int ok, const char *content, size_t len)
{
    ac_session *s = r->s;
    sl->state = 2;
    sl->proc = 0;
    sl->timer = 0;
    if (!sl->away)
        r->running--;
    sl->away = 0;
    json_t *delta = NULL;
    char *own = NULL, *raw = NULL;
    if (sl->cache_key && !sl->cached_from && ok)
        raw = ac_utf8_repair(content, len, AC_UTF8_REPLACE_NUL, NULL);
    if (sl->tool && sl->tool->kit1 && ok) {
        /* a toolkit's call: its changes apply at once, for the next call of the toolkit */
        if ((own = malloc(len + 1))) {
            memcpy(own, content, len);
            own[len] = 0;
            ac_toolkits_after_call(r->work, sl->tool, &ok, &own, &delta);
            content = own ? own : "";
            len = strlen(content);
        }
    }
    char *clean = ac_utf8_repair(content, len, AC_UTF8_REPLACE_NUL, NULL);
    free(own);
    int64_t dur = ac_loop_now_ms(s->e->loop) - sl->started_ms;
    /* where the result goes in the State: checked now, applied with the event */
    char *override = NULL;
    json_t *writes = r->plan ? ac_turn_plan_finish(r->plan, (size_t)(sl - r->slots), &ok,
                                                   clean ? clean : "", &override)
                             : NULL;
    char *noted = edit_noted(s, sl->id, override ? override : clean ? clean : "");
    const char *text = noted ? noted : override ? override : clean ? clean : NULL;
    uint16_t ev = sl->ev ? sl->ev : s->e->ev_tool_completed;
    if (text && ev == s->e->ev_tool_completed && !writes && !sl->extra && !delta &&
        !sl->cached_from) { /* a plain result: typed, no JSON made */
        cache_finish(r, sl, ok, raw, NULL);
        ac_session_enqueue_tool_result(s, ev, sl->id, ok, text, dur, r->origin);
    } else {
        post_result(r, sl, ev, ok, text, dur, writes, delta, raw);
    }
    free(noted);
    free(override);
    free(clean);
    free(raw);
    json_decref(writes);
    json_decref(delta);
    json_decref(sl->extra);
    sl->extra = NULL;
    if (sl->then)
        ac_session_enqueue(s, sl->then, NULL, 0, 0);
    launch_next(r);
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

static void mcp_done(void *ud, int ok, const char *content)
{
    slot *sl = ud;
    sl->mcp = NULL;
    finish(sl->run, sl, ok, content, strlen(content));
}

static void mcp_progress(void *ud, double progress, double total, const char *message)
{
    slot *sl = ud;
    ac_session *s = sl->run->s;
    if (s->e->has_output && s->e->out.tool_progress)
        s->e->out.tool_progress(s->e->out.ud, s, sl->id, progress, total, message);
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

void ac_tool_run_complete_later(ac_tool_run *r, slot *sl, int ok, const char *content)
{
    complete_later(r, sl, ok, content);
}

ac_session *ac_tool_run_session(const ac_tool_run *r)
{
    return r->s;
}

void ac_tool_run_set_event(slot *sl, uint16_t ev, json_t *extra)
{
    sl->ev = ev;
    json_decref(sl->extra);
    sl->extra = extra;
}

void ac_tool_call_arrived(void *ud)
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
        ac_tool_handle_release(h); /* the run's reference */
        ac_tool_handle_release(h); /* the caller's (completion) */
        finish(run, sl, ok, content ? content : "", content ? strlen(content) : 0);
        free(content);
        return;
    }
    ac_tool_handle_release(h);
}

static void run_call(ac_tool_run *r, slot *sl, const char *prefail);

/* The store recorded the call (ok) or could not: it runs, or fails without running. */
static void recorded(void *ud, int ok)
{
    slot *sl = ud;
    char *prefail = sl->prefail;
    sl->prefail = NULL;
    sl->recording = 0;
    if (ok)
        run_call(sl->run, sl, prefail);
    else
        complete_later(sl->run, sl, 0, "not run: the store could not record the call");
    free(prefail);
}

/* ---- internal context tools: read the conversation, post what the action needs ---- */

/* prefail: the plan's reason not to run the call (it fails at once), or NULL. */
static void start_call(ac_tool_run *r, slot *sl, const char *prefail)
{
    ac_session *s = r->s;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, sl->id);
    sl->state = 1;
    sl->started_ms = ac_loop_now_ms(s->e->loop);
    r->running++;
    const char *name = c ? c->name : "";
    const ac_tool *t = ac_session_tool(s, name);
    sl->tool = t;
    /* recorded before it runs; the record may wait for the loop turn's commit */
    int rec = s->hooks ? s->hooks->tool_started(s, sl->id, name, recorded, sl) : 0;
    if (rec < 0) {
        complete_later(r, sl, 0, "not run: the store could not record the call");
        return;
    }
    if (rec > 0) {
        sl->recording = 1;
        sl->prefail = prefail ? strdup(prefail) : NULL;
        return;
    }
    run_call(r, sl, prefail);
}

/* ---- the kinds of tool: one ops entry per kind (tools_internal.h TK_*) ---- */

/* One call with its arguments checked, handed to its kind's run. */
typedef struct call_in {
    ac_tool_run *r;
    slot *sl;
    const ac_tool *t;
    json_t *args;       /* the arguments (borrowed) */
    const char *argstr; /* as text: what a process reads on stdin */
    char *context;      /* the toolkit's context as JSON, NULL outside toolkits; a run that
                           keeps it sets it NULL */
} call_in;

struct tool_kind_ops {
    /* Starts the call; it ends through finish() (now or later, never inside this call). */
    void (*run)(call_in *c);
    /* The session stopped the call while it ran: what it started stops, no result comes. */
    void (*stop)(ac_tool_run *r, slot *sl);
};

static void run_calc(call_in *c)
{
    const char *expr = json_string_value(json_object_get(c->args, "expression"));
    char out[512], err[512];
    if (ac_calc_eval(expr ? expr : "", out, sizeof out, err, sizeof err) == 0)
        complete_later(c->r, c->sl, 1, out);
    else
        complete_later(c->r, c->sl, 0, err);
}

static void run_clock(call_in *c)
{
    int64_t now = ac_wall_now_ms();
    time_t secs = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char iso[64], msg[128];
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(msg, sizeof msg, "{\"utc\":\"%s\",\"unix_ms\":%lld}", iso, (long long)now);
    complete_later(c->r, c->sl, 1, msg);
}

static void run_expand(call_in *c)
{
    ac_context_tool_expand(c->r, c->sl, c->args);
}

static void run_search(call_in *c)
{
    ac_context_tool_search(c->r, c->sl, c->args);
}

static void run_load(call_in *c)
{
    ac_context_tool_load(c->r, c->sl, c->args);
}

/* An MCP call: to srv, the server's name tool (mcp_done ends it). */
static void mcp_start(call_in *c, struct ac_mcp_server *srv, const char *tool, int64_t timeout)
{
    char tp[64]; /* a traced session's trace context, sent by an HTTP server's transport */
    ac_mcp_server_set_traceparent(
        srv, ac_session_tool_traceparent(c->r->s, c->sl->id, tp, sizeof tp) ? tp : NULL);
    c->sl->mcp = ac_mcp_call_tool(srv, tool, c->args, timeout, mcp_done, mcp_progress, c->sl);
    if (!c->sl->mcp)
        complete_later(c->r, c->sl, 0, "out of memory");
}

static void run_mcp(call_in *c)
{
    char msg[200];
    if (c->t->mcp_gone) {
        snprintf(msg, sizeof msg, "the MCP server no longer offers '%.100s'", c->t->mcp_tool);
        complete_later(c->r, c->sl, 0, msg);
        return;
    }
    mcp_start(c, c->t->mcp, c->t->mcp_tool, c->t->timeout_ms);
}

static void stop_mcp(ac_tool_run *r, slot *sl)
{
    (void)r;
    if (sl->mcp)
        ac_mcp_call_cancel(sl->mcp, "the session stopped the call");
    sl->mcp = NULL;
}

/* The environment entries a tool process gets beside ac_tool_env's (NULL-terminated, into
 * env); *ctx_env is the AGENTC_CONTEXT entry to free. -1 with msg when the call must fail. */
static int process_env(call_in *c, char bufs[3][300], const char **env, char **ctx_env, char *msg,
                       size_t cap)
{
    snprintf(bufs[0], 300, "AGENTC_TOOL_NAME=%s", c->t->name);
    snprintf(bufs[1], 300, "AGENTC_TOOL_CALL_ID=%s", c->sl->id);
    snprintf(bufs[2], 300, "AGENTC_SESSION_ID=%s", c->r->s->id);
    *ctx_env = NULL;
    if (c->context) {
        size_t cl = strlen(c->context);
        if (cl > AC_TOOLKIT_CONTEXT_ENV_MAX) {
            snprintf(msg, cap,
                     "not run: the toolkit's context is %zu bytes of JSON, more than the %d "
                     "an environment variable (AGENTC_CONTEXT) may hold",
                     cl, AC_TOOLKIT_CONTEXT_ENV_MAX);
            return -1;
        }
        if (!(*ctx_env = malloc(cl + 16))) {
            snprintf(msg, cap, "out of memory");
            return -1;
        }
        snprintf(*ctx_env, cl + 16, "AGENTC_CONTEXT=%s", c->context);
    }
    env[0] = bufs[0];
    env[1] = bufs[1];
    env[2] = bufs[2];
    env[3] = *ctx_env;
    env[4] = NULL;
    return 0;
}

static void run_process(call_in *c)
{
    char bufs[3][300], msg[400], err[600];
    const char *env[5];
    char *ctx_env;
    if (process_env(c, bufs, env, &ctx_env, msg, sizeof msg) < 0) {
        complete_later(c->r, c->sl, 0, msg);
        return;
    }
    char **base = ac_tool_env(c->r->s->e, c->t); /* never the provider's credentials */
    if (!base) {
        complete_later(c->r, c->sl, 0, "out of memory");
        free(ctx_env);
        return;
    }
    ac_proc_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.argv = (const char *const *)c->t->argv;
    ps.env = (const char *const *)base;
    ps.env_add = env;
    ps.stdin_data = c->argstr;
    ps.stdin_len = strlen(c->argstr);
    ps.timeout_ms = c->t->timeout_ms;
    ps.max_stdout = c->t->max_output;
    c->sl->proc = ac_proc_spawn(c->r->s->e->loop, &ps, proc_done, c->sl, err, sizeof err);
    free(base);
    free(ctx_env);
    if (!c->sl->proc)
        complete_later(c->r, c->sl, 0, err);
}

static void stop_process(ac_tool_run *r, slot *sl)
{
    if (sl->proc)
        ac_proc_kill(r->s->e->loop, sl->proc);
    sl->proc = 0;
}

static void run_callback(call_in *c)
{
    ac_session *s = c->r->s;
    char msg[200];
    if (!c->t->fn) {
        snprintf(msg, sizeof msg, "no callback is registered for tool '%s'", c->t->name);
        complete_later(c->r, c->sl, 0, msg);
        return;
    }
    ac_tool_call_handle *h = calloc(1, sizeof *h);
    if (!h) {
        complete_later(c->r, c->sl, 0, "out of memory");
        return;
    }
    pthread_mutex_init(&h->mu, NULL);
    h->refs = 2;
    h->loop = s->e->loop;
    h->s = s;
    h->id = strdup(c->sl->id);
    h->slot = c->sl;
    h->context = c->context;
    c->context = NULL;
    c->sl->cb = h;
    char *a = json_dumps(c->args, JSON_COMPACT | JSON_ENCODE_ANY);
    c->t->fn(c->t->ud, a ? a : c->argstr, h);
    free(a);
}

static void stop_callback(ac_tool_run *r, slot *sl)
{
    (void)r;
    ac_tool_call_handle *h = sl->cb;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->abandoned = 1;
    h->slot = NULL;
    pthread_mutex_unlock(&h->mu);
    ac_tool_handle_release(h);
    sl->cb = NULL;
}

static void run_agent(call_in *c)
{
    c->sl->sub = ac_subagent_run(c->r, c->sl, c->sl->id, c->t, c->args);
}

static void stop_agent(ac_tool_run *r, slot *sl)
{
    (void)r;
    ac_subagent_stop(sl->sub);
    sl->sub = NULL;
}

static void run_handoff(call_in *c)
{
    ac_handoff_run(c->r, c->sl, c->t);
}

/* A client tool's call goes to the session's caller and waits for ac_session_answer_call,
 * holding no place among the calls run at once. */
static void run_client(call_in *c)
{
    char *a = json_dumps(c->args, JSON_COMPACT | JSON_ENCODE_ANY);
    c->sl->away = 1; /* before: the caller may answer at once */
    c->r->running--;
    int rc = ac_client_call_hand(c->r->s, c->sl->id, c->t->name, a ? a : c->argstr);
    free(a);
    if (rc < 0) {
        c->sl->away = 0;
        c->r->running++;
        complete_later(c->r, c->sl, 0, "not run: no client answers this session's client tools");
    }
}

int ac_session_answer_call(ac_session *s, const char *call_id, int ok, const char *content)
{
    ac_tool_run *r = s && call_id ? s->tool_run : NULL;
    for (size_t i = 0; r && i < r->n; i++) {
        slot *sl = &r->slots[i];
        if (sl->away == 1 && sl->state == 1 && !strcmp(sl->id, call_id)) {
            sl->away = 2; /* answered: finished from the loop, as the other calls are */
            complete_later(r, sl, ok, content ? content : "");
            return AC_OK;
        }
    }
    return AC_ENOENT;
}

void ac_tool_run_set_then(slot *sl, uint16_t ev)
{
    sl->then = ev;
}

struct ac_subcall **ac_tool_run_slot_sub(slot *sl)
{
    return &sl->sub;
}

static const tool_kind_ops kind_ops[] = {
    [TK_CALC] = {run_calc, NULL},
    [TK_CLOCK] = {run_clock, NULL},
    [TK_EXTERNAL] = {run_process, stop_process},
    [TK_CALLBACK] = {run_callback, stop_callback},
    [TK_EXPAND] = {run_expand, NULL},
    [TK_SEARCH] = {run_search, NULL},
    [TK_LOAD] = {run_load, NULL},
    [TK_MCP] = {run_mcp, stop_mcp},
    [TK_AGENT] = {run_agent, stop_agent},
    [TK_HANDOFF] = {run_handoff, NULL},
    [TK_CLIENT] = {run_client, NULL},
};

/* ---- one call: checks, then its kind's run ---- */

/* The call's arguments, references resolved and meta-properties removed (state_turn.c), as
 * JSON (*argstr rewritten into *resolved when they changed); NULL with msg. */
static json_t *call_args(ac_tool_run *r, slot *sl, const char **argstr, char **resolved, char *msg,
                         size_t cap)
{
    json_error_t jerr;
    int rewritten = 0;
    *resolved = NULL;
    json_t *args = r->plan
                       ? ac_turn_plan_args(r->plan, (size_t)(sl - r->slots), &rewritten, msg, cap)
                       : json_loads(*argstr, JSON_DECODE_ANY, &jerr);
    if (!args) {
        if (!r->plan)
            snprintf(msg, cap, "invalid arguments: not JSON (%s)", jerr.text);
        return NULL;
    }
    if (rewritten && !(*resolved = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY))) {
        json_decref(args);
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    if (*resolved)
        *argstr = *resolved;
    return args;
}

/* A call to a tool the engine does not know: an MCP server's tool not listed yet waits for
 * its server's start; the others fail with why. */
static void run_unknown(ac_tool_run *r, slot *sl, const char *name, const char *argstr)
{
    char msg[800];
    const char *tool;
    ac_mcp_server *srv = ac_mcp_starting_server(r->s->e, name, &tool);
    json_t *args = srv ? json_loads(argstr, 0, NULL) : NULL;
    if (srv && json_is_object(args)) {
        call_in c = {r, sl, NULL, args, argstr, NULL};
        sl->ops = &kind_ops[TK_MCP];
        mcp_start(&c, srv, tool, 0);
    } else if (!ac_mcp_explain(r->s->e, name, msg, sizeof msg)) {
        ac_toolkits_unknown(r->s->e, name, msg, sizeof msg);
        complete_later(r, sl, 0, msg);
    } else {
        complete_later(r, sl, 0, msg);
    }
    json_decref(args);
}

/* A cached tool's call: answered from the cache when its key has a fresh result (1); else
 * its key stays with the call, for finish() to keep a success under (0). */
static int cache_answer(ac_tool_run *r, slot *sl, const ac_tool *t, const json_t *args,
                        const char *context)
{
    if (t->cache.ttl_ms <= 0)
        return 0;
    ac_session *s = r->s;
    const char *content, *src;
    sl->cache_key = ac_tool_cache_key(t->name, args, context);
    if (ac_tool_cache_get(cache_of(s, t), sl->cache_key, ac_loop_now_ms(s->e->loop), &content,
                          &src) &&
        (sl->cached_from = strdup(src))) {
        cache_count(s, AC_M_TOOL_CACHE_HITS, t, 1);
        complete_later(r, sl, 1, content);
        return 1;
    }
    cache_count(s, AC_M_TOOL_CACHE_MISSES, t, 1);
    return 0;
}

static void run_call(ac_tool_run *r, slot *sl, const char *prefail)
{
    ac_session *s = r->s;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, sl->id);
    const char *name = c ? c->name : "";
    const char *argstr = ac_call_arguments(s, c);
    const ac_tool *t = sl->tool;
    char err[600], msg[800];
    if (!t && !prefail) {
        run_unknown(r, sl, name, argstr);
        return;
    }
    if (!t || prefail) {
        if (!t)
            ac_toolkits_unknown(s->e, name, msg, sizeof msg);
        complete_later(r, sl, 0, t ? prefail : msg);
        return;
    }
    if (ac_toolkits_unavailable(r->work, t, err, sizeof err)) {
        snprintf(msg, sizeof msg, "not run: %s is not available: %s", t->name, err);
        complete_later(r, sl, 0, msg);
        return;
    }
    char *resolved;
    json_t *args = call_args(r, sl, &argstr, &resolved, msg, sizeof msg);
    if (!args) {
        complete_later(r, sl, 0, msg);
        return;
    }
    if (!ac_schema_validate(t->schema, args, err, sizeof err)) {
        snprintf(msg, sizeof msg, "invalid arguments: %s", err);
        complete_later(r, sl, 0, msg);
    } else if (ac_toolkits_check_args(r->work, t, args, msg, sizeof msg)) {
        complete_later(r, sl, 0, msg);
    } else {
        call_in in = {r, sl, t, args, argstr, ac_toolkits_context_text(r->work, t)};
        if (!cache_answer(r, sl, t, args, in.context)) {
            sl->ops = &kind_ops[t->kind];
            sl->ops->run(&in);
        }
        free(in.context);
    }
    json_decref(args);
    free(resolved);
}

static void run_free(ac_tool_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->slots[i].id);
        free(r->slots[i].content);
        free(r->slots[i].prefail);
        free(r->slots[i].cache_key);
        free(r->slots[i].cached_from);
        json_decref(r->slots[i].extra);
    }
    free(r->slots);
    ac_tk_state_free(r->work);
    ac_turn_plan_free(r->plan);
    free(r);
}

/* Starts waiting calls up to the limit. A callback tool that cancels or frees the session only
 * queues that: the runner stays until the session applies it, after this returns. */
static void launch_next(ac_tool_run *r)
{
    while (r->running < r->max_parallel) {
        if (!r->plan) {
            if (r->next >= r->n)
                return;
            start_call(r, &r->slots[r->next++], NULL);
            continue;
        }
        char *fail = NULL;
        size_t dep;
        long i = ac_turn_plan_next(r->plan, &fail, &dep);
        if (i < 0)
            return;                       /* the rest wait for calls still running */
        if (!fail && dep != (size_t)-1) { /* a toolkit's pipeline stops at its first failure */
            const slot *first = &r->slots[dep];
            const char *pfx = first->tool && first->tool->kit ? first->tool->kit->prefix : "?";
            char msg[300];
            snprintf(msg, sizeof msg, "not run: an earlier call of toolkit %s failed", pfx);
            fail = strdup(msg);
        }
        start_call(r, &r->slots[i], fail);
        free(fail);
    }
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
    r->origin = ac_session_origin(s);
    (void)nargs; /* one int, checked against the contract when the engine was built */
    r->max_parallel = args[0].ival > 0 ? (size_t)args[0].ival : SIZE_MAX; /* <= 0: no limit */
    for (size_t i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
        if (!c || c->state != AC_CALL_NONE)
            continue;
        r->slots[r->n].run = r;
        r->slots[r->n].index = r->n;
        r->slots[r->n++].id = strdup(id);
    }
    if (!s->toolkits) /* a session restored from a snapshot older than its toolkits */
        ac_toolkits_session_init(s, NULL);
    r->work = ac_tk_state_clone(s->toolkits);
    if (s->toolkits && !r->work) {
        ac_session_enqueue(s, ac_engine_event_index(s->e, "tool.completed"),
                           json_pack("{s:b}", "none", 1), 0, r->origin);
        return;
    }
    char **ids = calloc(r->n + 1, sizeof *ids);
    for (size_t i = 0; ids && i < r->n; i++)
        ids[i] = r->slots[i].id;
    r->plan = ids ? ac_turn_plan_new(s, ids, r->n) : NULL; /* NULL: in order, as written */
    free(ids);
    /* a toolkit's calls run one after the other, in the model's order, each only if the one
     * before it succeeded; the State's reads and writes add their own waits (state_turn.c) */
    for (size_t j = 0; j < r->n; j++) {
        const ac_tool_call *c = ac_conv_tool_call(s->conv, r->slots[j].id);
        const ac_tool *t = c ? ac_session_tool(s, c->name) : NULL;
        r->slots[j].tool = t;
        for (size_t i = j; r->plan && t && t->kit1 && i-- > 0;)
            if (r->slots[i].tool && r->slots[i].tool->kit1 == t->kit1) {
                if (ac_turn_plan_wait(r->plan, j, i, 1) < 0) {
                    ac_turn_plan_free(r->plan);
                    r->plan = NULL; /* out of memory: in order, as written */
                }
                break;
            }
    }
    if (r->plan)
        ac_turn_plan_seal(r->plan);
    *ac_session_effect_state(s) = r;
    s->tool_run = r;
    if (r->n == 0) {
        /* nothing to run (the turn's calls could not be recorded): say so,
         * or TOOL_EXECUTING would wait for results that never come */
        ac_session_enqueue(s, s->e->ev_tool_completed, json_pack("{s:b}", "none", 1), 0, r->origin);
        return;
    }
    launch_next(r);
}

void ac_run_tools_stop(ac_session *s)
{
    ac_tool_run **slot_of = (ac_tool_run **)ac_session_effect_state(s);
    ac_tool_run *r = *slot_of;
    if (!r)
        return;
    *slot_of = NULL;
    if (s->tool_run == r)
        s->tool_run = NULL;
    for (size_t i = 0; i < r->n; i++) {
        slot *sl = &r->slots[i];
        if (sl->recording && s->hooks && s->hooks->tool_forget)
            s->hooks->tool_forget(s, sl);
        sl->recording = 0;
        if (sl->timer)
            ac_loop_cancel_timer(s->e->loop, sl->timer);
        sl->timer = 0;
        if (sl->ops && sl->ops->stop)
            sl->ops->stop(r, sl);
    }
    run_free(r);
}
