/*
 * effects.c - the built-in effects: timers (inactivity, retry backoff) and
 * the LLM request, which hands the call to the engine's provider. Each
 * effect keeps its state in its session slot (ac_session_effect_state) and
 * reports only through the session's queue (ac_session_enqueue).
 */
#include <stdlib.h>
#include <string.h>

#include "session/toolkits.h"
#include "session/state.h"
#include "session/tools_internal.h"
#include "session_int.h"

/* A timer effect's state: what its loop timer posts, and to whom. */
typedef struct timer_effect {
    ac_session *s;
    uint64_t timer;
    uint16_t origin;
    uint16_t ev;
    json_t *data; /* payload of the event, or NULL */
} timer_effect;

static void timer_fire(void *ud)
{
    timer_effect *t = ud;
    t->timer = 0;
    ac_session_enqueue(t->s, t->ev, json_incref(t->data), 0, t->origin);
}

static void timer_effect_start(ac_session *s, int64_t ms, uint16_t ev, json_t *data)
{
    timer_effect *t = calloc(1, sizeof *t);
    if (!t) {
        json_decref(data);
        return;
    }
    t->s = s;
    t->origin = ac_session_origin(s);
    t->ev = ev;
    t->data = data;
    t->timer = ac_loop_timer(s->e->loop, ms, timer_fire, t);
    *ac_session_effect_state(s) = t;
}

static void timer_effect_stop(ac_session *s)
{
    timer_effect **slot = (timer_effect **)ac_session_effect_state(s);
    timer_effect *t = *slot;
    if (!t)
        return;
    if (t->timer)
        ac_loop_cancel_timer(s->e->loop, t->timer);
    json_decref(t->data);
    free(t);
    *slot = NULL;
}

/* The arguments of each effect are checked against its contract (contracts.c) when the
 * engine is built: count and types are right here, and there are no C defaults. */

static void inactivity_start(ac_session *s, const ac_param_value *args, size_t n,
                             const ac_event *ev)
{
    (void)ev;
    (void)n;
    int64_t ms = args[0].ival;
    if (ms <= 0 || s->e->ev_inactivity == AC_FSM_NONE)
        return;
    timer_effect_start(s, ms, s->e->ev_inactivity, NULL);
}

/* Delay before retry n (1-based): initial * 2^(n-1), full jitter in
 * [delay/2, delay], capped by max; Retry-After (from the failure event)
 * wins when larger, still capped by max. */
static int64_t backoff_delay(ac_engine *e, int64_t initial, int64_t max, int64_t retry,
                             int64_t retry_after)
{
    if (initial < 0)
        initial = 0;
    if (max < 0)
        max = 0;
    int64_t d = initial;
    for (int64_t i = 1; i < retry && d < max; i++)
        d = d > INT64_MAX / 2 ? INT64_MAX : d * 2; /* absurd params must not overflow */
    if (d > max)
        d = max;
    if (d > 1)
        d = d / 2 + (int64_t)(ac_engine_rand(e) % (uint64_t)(d / 2 + 1));
    if (retry_after > d)
        d = retry_after;
    return d > max ? max : d;
}

static void backoff_start(ac_session *s, const ac_param_value *args, size_t n, const ac_event *ev)
{
    (void)n;
    int64_t initial = args[0].ival, max = args[1].ival;
    ac_failure_view f = {.retry_after_ms = -1};
    if (ev)
        ac_failure_of(s, ev, &f); /* the failure that asked for the retry */
    int64_t d = backoff_delay(s->e, initial, max, ac_conv_retries(s->conv), f.retry_after_ms);
    timer_effect_start(s, d, s->e->ev_timer_fired, json_pack("{s:s}", "timer", "backoff"));
    if (s->e->has_output && s->e->out.retry) {
        s->e->out.retry(s->e->out.ud, s, (int)ac_conv_retries(s->conv), d,
                        f.message ? f.message : "retryable failure");
    }
}

/* The LLM request's state: the provider's call id, and while the call waits for the
 * offered tools to be brought up to date, what it waits on. */
typedef struct llm_effect {
    ac_session *s;
    uint64_t call;
    uint16_t origin;
    int64_t stall_ms, connect_ms, total_ms;
    int waiting;    /* registered with ac_mcp_wait_listing */
    uint64_t bound; /* the timer that ends the wait */
    ac_mcp_waiter wait;
    ac_loop_task go; /* the deferred start, after the tools.changed event is applied */
} llm_effect;

static void llm_go(void *ud)
{
    llm_effect *l = ud;
    ac_session *s = l->s;
    ac_llm_call_opts opts = {0};
    opts.stall_timeout_ms = l->stall_ms;
    opts.connect_timeout_ms = l->connect_ms;
    opts.call_timeout_ms = l->total_ms;
    opts.max_tokens = s->e->p_max_tokens->ival;
    opts.thinking_budget = s->e->p_thinking_budget->ival;
    opts.origin = l->origin;
    opts.output_schema = s->output_schema_text;
    if (!s->toolkits) /* a session restored from a snapshot older than its toolkits */
        ac_toolkits_session_init(s, NULL);
    if (s->toolkits) { /* only the toolkit tools available now, enums from the context */
        opts.tool_offer = ac_toolkits_offer;
        opts.tool_offer_ud = s;
    }
    char *note = ac_state_context_text(s); /* the State (state.h); the body is built in start */
    opts.context_note = note;
    l->call = s->e->provider->start(s->e->provider, s, &opts);
    free(note);
}

/* The engine's tools changed since the session last looked (an MCP server's list, or a
 * restored session under a new tool file): when what it offers differs, the whole new list
 * goes to the session as a tools.changed event, so the journal says what each call offered.
 * 1 when the event was queued (the call starts once it is applied). A spec that does not
 * declare tools.changed keeps the list its sessions started with. */
static int tools_changed(llm_effect *l)
{
    ac_session *s = l->s;
    uint64_t rev = ac_mcp_tools_rev(s->e);
    if (s->tools_rev == rev)
        return 0;
    s->tools_rev = rev;
    uint16_t ev = ac_engine_event_index(s->e, "tools.changed");
    if (ev == AC_FSM_NONE)
        return 0;
    json_t *defs = json_array();
    if (!defs)
        return 0;
    ac_tools_add_defs(s->e, defs);
    ac_client_tools_add_defs(s, defs); /* the session's own stay offered */
    if (ac_conv_tool_defs_equal(s->conv, defs)) {
        json_decref(defs);
        return 0;
    }
    /* origin 0: a fact about the engine, applied even if the call stops before it is */
    json_t *payload = json_pack("{s:o}", "tools", defs);
    if (payload && s->e->mcp) /* the servers and the protocol each one speaks now */
        ac_mcp_spawn_info(s->e, payload);
    ac_session_enqueue(s, ev, payload, 0, 0);
    return 1;
}

static void llm_waited(void *ud)
{
    llm_effect *l = ud;
    if (l->bound)
        ac_loop_cancel_timer(l->s->e->loop, l->bound);
    l->bound = 0;
    if (l->waiting)
        ac_mcp_unwait(l->s->e, &l->wait);
    l->waiting = 0;
    tools_changed(l);
    /* from inside an MCP server's or the loop's callback: the start follows the event */
    ac_loop_defer(l->s->e->loop, &l->go);
}

static void llm_bound(void *ud)
{
    llm_effect *l = ud;
    l->bound = 0;
    llm_waited(l);
}

static void llm_start(ac_session *s, const ac_param_value *args, size_t n, const ac_event *ev)
{
    (void)ev;
    (void)n;
    llm_effect *l = calloc(1, sizeof *l);
    if (!l) {
        ac_session_enqueue(s, ac_engine_event_index(s->e, "llm.failed"),
                           json_pack("{s:s, s:i, s:b, s:s}", "class", "protocol", "status", 0,
                                     "retryable", 0, "message", "out of memory starting a call"),
                           0, ac_session_origin(s));
        return;
    }
    l->s = s;
    l->origin = ac_session_origin(s);
    l->stall_ms = args[0].ival;
    l->connect_ms = args[1].ival;
    l->total_ms = args[2].ival;
    l->go.fn = llm_go;
    l->go.ud = l;
    *ac_session_effect_state(s) = l;
    if (ac_mcp_listing(s->e)) { /* a server starts or its list changed: the call waits */
        l->waiting = 1;
        l->wait.fn = llm_waited;
        l->wait.ud = l;
        ac_mcp_wait_listing(s->e, &l->wait);
        l->bound = ac_loop_timer(s->e->loop, ac_mcp_wait_ms(s->e), llm_bound, l);
        return;
    }
    if (tools_changed(l)) {
        ac_loop_defer(s->e->loop, &l->go);
        return;
    }
    llm_go(l);
}

static void llm_stop(ac_session *s)
{
    llm_effect **slot = (llm_effect **)ac_session_effect_state(s);
    llm_effect *l = *slot;
    if (!l)
        return;
    if (l->call)
        s->e->provider->cancel(s->e->provider, l->call);
    if (l->waiting)
        ac_mcp_unwait(s->e, &l->wait);
    if (l->bound)
        ac_loop_cancel_timer(s->e->loop, l->bound);
    ac_loop_undefer(s->e->loop, &l->go);
    free(l);
    *slot = NULL;
}

/* The round's tools start: the output hears of each call about to run, in the model's order,
 * from the conversation alone (the effect's report, so a replay says it too). At most
 * max_parallel_tools of them run at once; a toolkit's calls wait for the one before. */
static void run_tools_report(ac_session *s, const ac_param_value *args, size_t n,
                             const ac_event *ev)
{
    (void)args;
    (void)n;
    (void)ev;
    if (!s->e->has_output || !s->e->out.tool_start)
        return;
    size_t calls = ac_conv_iter_call_count(s->conv);
    for (size_t i = 0; i < calls; i++) {
        const ac_tool_call *c = ac_conv_tool_call(s->conv, ac_conv_iter_call(s->conv, i));
        if (!c || c->state != AC_CALL_NONE)
            continue;
        s->e->out.tool_start(s->e->out.ud, s, c->id, c->name, ac_call_arguments(s, c));
    }
}

void ac_effects_register(ac_registry *r)
{
    ac_registry_effect(r, "inactivity_timer", inactivity_start, timer_effect_stop);
    ac_registry_effect(r, "backoff_timer", backoff_start, timer_effect_stop);
    ac_registry_effect(r, "llm_request", llm_start, llm_stop);
    ac_registry_effect_reporting(r, "run_tools", ac_run_tools_start, ac_run_tools_stop,
                                 run_tools_report);
    ac_registry_effect(r, "compact", ac_compact_start, ac_compact_stop);
}
