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
 * in-process. The tools themselves are in tools_registry.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/proc.h"
#include "mcp/mcp.h"
#include "session/toolkits.h"
#include "session/tools_internal.h"
#include "tools/calculator.h"
#include "tools/schema.h"
#include "util/utf8.h"

/* ---- the run_tools effect ---- */

typedef struct slot {
    char *id;
    const ac_tool *tool;
    uint64_t proc;
    uint64_t timer;
    ac_tool_call_handle *cb;
    ac_mcp_call *mcp; /* TK_MCP: the call in flight */
    int64_t started_ms;
    int ok;
    char *content;
    int state;     /* 0 waiting, 1 running, 2 done */
    int recording; /* its record waits for the store's commit (hook tool_started) */
    char *prefail; /* meanwhile: the plan's reason not to run it */
    uint16_t ev;   /* event to post (internal tools); 0: tool.completed */
    json_t *extra; /* more payload fields for that event, or NULL */
    struct ac_tool_run *run;
    size_t index; /* in the model's order */
} slot;

struct ac_tool_run {
    ac_session *s;
    slot *slots;
    size_t n, next, running;
    size_t max_parallel;
    ac_turn_plan *plan; /* order, references and output paths (state_turn.c); NULL: in order */
    uint16_t origin; /* of the run_tools effect: passed with every event queued */
    ac_tk_state *work;    /* the toolkits as this run's calls change them (toolkits.h) */
};

static void launch_next(ac_tool_run *r);

/* A call finished: queue its result, then start the next waiting one. The
 * session applies the result after this callback returns, so the runner is
 * never stopped under our feet. */
static void finish(ac_tool_run *r, slot *sl, int ok, const char *content, size_t len)
{
    ac_session *s = r->s;
    sl->state = 2;
    sl->proc = 0;
    sl->timer = 0;
    r->running--;
    json_t *delta = NULL;
    char *own = NULL;
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
    json_t *d = json_pack("{s:s, s:b, s:s, s:I}", "id", sl->id, "ok", ok, "content",
                          override ? override : clean ? clean : "", "duration_ms",
                          (json_int_t)dur);
    free(override);
    free(clean);
    if (d && writes)
        json_object_set(d, "state_writes", writes);
    json_decref(writes);
    if (!d) /* the call is answered whatever happens, or the turn would wait forever */
        d = json_pack("{s:s, s:b, s:s}", "id", sl->id, "ok", 0, "content",
                      "the tool's result could not be recorded");
    uint16_t ev = sl->ev ? sl->ev : s->e->ev_tool_completed;
    if (d && sl->extra)
        json_object_update(d, sl->extra);
    if (d && delta)
        json_object_set(d, "toolkit", delta);
    json_decref(delta);
    json_decref(sl->extra);
    sl->extra = NULL;
    ac_session_enqueue(s, ev, d, 0, r->origin);
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
    const ac_tool *t = ac_tools_find(s->e, name);
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

static void run_call(ac_tool_run *r, slot *sl, const char *prefail)
{
    ac_session *s = r->s;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, sl->id);
    const char *name = c ? c->name : "";
    const char *argstr = c && c->arguments && *c->arguments ? c->arguments : "{}";
    const ac_tool *t = sl->tool;
    char err[600], msg[800];
    if (!t) {
        ac_toolkits_unknown(s->e, name, msg, sizeof msg);
        complete_later(r, sl, 0, msg);
        return;
    }
    if (prefail) {
        complete_later(r, sl, 0, prefail);
        return;
    }
    if (ac_toolkits_unavailable(r->work, t, err, sizeof err)) {
        snprintf(msg, sizeof msg, "not run: %s is not available: %s", t->name, err);
        complete_later(r, sl, 0, msg);
        return;
    }
    json_error_t jerr;
    /* references resolved, meta-properties removed (state_turn.c) */
    int rewritten = 0;
    json_t *args = r->plan ? ac_turn_plan_args(r->plan, (size_t)(sl - r->slots), &rewritten, msg,
                                               sizeof msg)
                           : json_loads(argstr, JSON_DECODE_ANY, &jerr);
    if (!args) {
        if (!r->plan)
            snprintf(msg, sizeof msg, "invalid arguments: not JSON (%s)", jerr.text);
        complete_later(r, sl, 0, msg);
        return;
    }
    char *resolved = rewritten ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    if (rewritten && !resolved) {
        json_decref(args);
        complete_later(r, sl, 0, "out of memory");
        return;
    }
    if (resolved)
        argstr = resolved;
    if (!ac_schema_validate(t->schema, args, err, sizeof err)) {
        snprintf(msg, sizeof msg, "invalid arguments: %s", err);
        json_decref(args);
        free(resolved);
        complete_later(r, sl, 0, msg);
        return;
    }
    if (ac_toolkits_check_args(r->work, t, args, msg, sizeof msg)) {
        json_decref(args);
        free(resolved);
        complete_later(r, sl, 0, msg);
        return;
    }
    char *context = ac_toolkits_context_text(r->work, t); /* NULL outside toolkits */
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
        ac_context_tool_expand(r, sl, args);
    } else if (t->kind == TK_SEARCH) {
        ac_context_tool_search(r, sl, args);
    } else if (t->kind == TK_LOAD) {
        ac_context_tool_load(r, sl, args);
    } else if (t->kind == TK_MCP) {
        if (t->mcp_gone) {
            snprintf(msg, sizeof msg, "the MCP server no longer offers '%.100s'", t->mcp_tool);
            complete_later(r, sl, 0, msg);
        } else {
            sl->mcp = ac_mcp_call_tool(t->mcp, t->mcp_tool, args, t->timeout_ms, mcp_done,
                                       mcp_progress, sl);
            if (!sl->mcp)
                complete_later(r, sl, 0, "out of memory");
        }
    } else if (t->kind == TK_EXTERNAL) {
        char env_name[300], env_id[300], env_sess[300];
        snprintf(env_name, sizeof env_name, "AGENTC_TOOL_NAME=%s", t->name);
        snprintf(env_id, sizeof env_id, "AGENTC_TOOL_CALL_ID=%s", sl->id);
        snprintf(env_sess, sizeof env_sess, "AGENTC_SESSION_ID=%s", s->id);
        char *env_ctx = NULL;
        if (context) {
            size_t cl = strlen(context);
            if (cl > AC_TOOLKIT_CONTEXT_ENV_MAX) {
                snprintf(msg, sizeof msg,
                         "not run: the toolkit's context is %zu bytes of JSON, more than the %d "
                         "an environment variable (AGENTC_CONTEXT) may hold",
                         cl, AC_TOOLKIT_CONTEXT_ENV_MAX);
                complete_later(r, sl, 0, msg);
                free(context);
                json_decref(args);
                return;
            }
            if ((env_ctx = malloc(cl + 16)))
                snprintf(env_ctx, cl + 16, "AGENTC_CONTEXT=%s", context);
        }
        const char *env[] = {env_name, env_id, env_sess, env_ctx, NULL};
        char **base = ac_tool_env(s->e, t); /* never the provider's credentials */
        if (!base || (context && !env_ctx)) {
            complete_later(r, sl, 0, "out of memory");
            free(base);
            free(env_ctx);
            free(context);
            json_decref(args);
            free(resolved);
            return;
        }
        ac_proc_spec ps;
        memset(&ps, 0, sizeof ps);
        ps.argv = (const char *const *)t->argv;
        ps.env = (const char *const *)base;
        ps.env_add = env;
        ps.stdin_data = argstr;
        ps.stdin_len = strlen(argstr);
        ps.timeout_ms = t->timeout_ms;
        ps.max_stdout = t->max_output;
        sl->proc = ac_proc_spawn(s->e->loop, &ps, proc_done, sl, err, sizeof err);
        free(base);
        free(env_ctx);
        if (!sl->proc)
            complete_later(r, sl, 0, err);
    } else if (!t->fn) {
        snprintf(msg, sizeof msg, "no callback is registered for tool '%s'", t->name);
        complete_later(r, sl, 0, msg);
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
            h->context = context;
            context = NULL;
            sl->cb = h;
            char *a = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
            t->fn(t->ud, a ? a : argstr, h);
            free(a);
        }
    }
    free(context);
    json_decref(args);
    free(resolved);
}

static void run_free(ac_tool_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->slots[i].id);
        free(r->slots[i].content);
        free(r->slots[i].prefail);
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
            return; /* the rest wait for calls still running */
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
        const ac_tool *t = c ? ac_tools_find(s->e, c->name) : NULL;
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
    if (r->n == 0) {
        /* nothing to run (the turn's calls could not be recorded): say so,
         * or TOOL_EXECUTING would wait for results that never come */
        ac_session_enqueue(s, s->e->ev_tool_completed, json_pack("{s:b}", "none", 1), 0,
                           r->origin);
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
    for (size_t i = 0; i < r->n; i++) {
        slot *sl = &r->slots[i];
        if (sl->recording && s->hooks && s->hooks->tool_forget)
            s->hooks->tool_forget(s, sl);
        sl->recording = 0;
        if (sl->proc)
            ac_proc_kill(s->e->loop, sl->proc);
        if (sl->timer)
            ac_loop_cancel_timer(s->e->loop, sl->timer);
        if (sl->mcp)
            ac_mcp_call_cancel(sl->mcp, "the session stopped the call");
        sl->mcp = NULL;
        if (sl->cb) {
            ac_tool_call_handle *h = sl->cb;
            pthread_mutex_lock(&h->mu);
            h->abandoned = 1;
            h->slot = NULL;
            pthread_mutex_unlock(&h->mu);
            ac_tool_handle_release(h);
        }
        sl->proc = 0;
        sl->timer = 0;
        sl->cb = NULL;
    }
    run_free(r);
}
