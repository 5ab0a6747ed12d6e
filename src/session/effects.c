/*
 * effects.c - the built-in effects: timers (inactivity, retry backoff) and
 * the LLM request, which hands the call to the engine's provider. Each
 * effect keeps its handle in the session and reports only by posting.
 */
#include <stdlib.h>
#include <string.h>

#include "session_int.h"

enum { SLOT_INACTIVITY = 0, SLOT_BACKOFF = 1 };

static void inactivity_fire(void *ud)
{
    ac_session *s = ud;
    s->timer_id[SLOT_INACTIVITY] = 0;
    ac_session_post_index(s, s->e->ev_inactivity, NULL, 0);
}

static int64_t arg_int(const ac_param_value *args, size_t n, size_t i, int64_t def)
{
    return i < n && args[i].type != AC_PARAM_STRING ? args[i].ival : def;
}

static void inactivity_start(ac_session *s, const ac_param_value *args, size_t n,
                             const ac_event *ev)
{
    (void)ev;
    int64_t ms = arg_int(args, n, 0, 600000);
    if (ms <= 0 || s->e->ev_inactivity == AC_FSM_NONE)
        return;
    s->timer_id[SLOT_INACTIVITY] = ac_loop_timer(s->e->loop, ms, inactivity_fire, s);
}

static void inactivity_stop(ac_session *s)
{
    if (s->timer_id[SLOT_INACTIVITY])
        ac_loop_cancel_timer(s->e->loop, s->timer_id[SLOT_INACTIVITY]);
    s->timer_id[SLOT_INACTIVITY] = 0;
}

static void backoff_fire(void *ud)
{
    ac_session *s = ud;
    s->timer_id[SLOT_BACKOFF] = 0;
    ac_session_post_index(s, s->e->ev_timer_fired, json_pack("{s:s}", "timer", "backoff"), 0);
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
    int64_t initial = arg_int(args, n, 0, 1000), max = arg_int(args, n, 1, 10000);
    int64_t retry_after = -1;
    if (ev && ev->data) {
        json_t *ra = json_object_get((json_t *)ev->data, "retry_after_ms");
        if (json_is_integer(ra))
            retry_after = json_integer_value(ra);
    }
    int64_t d = backoff_delay(s->e, initial, max, ac_conv_retries(s->conv), retry_after);
    s->timer_id[SLOT_BACKOFF] = ac_loop_timer(s->e->loop, d, backoff_fire, s);
    if (s->e->has_output && s->e->out.retry) {
        json_t *m = ev && ev->data ? json_object_get((json_t *)ev->data, "message") : NULL;
        s->e->out.retry(s->e->out.ud, s, (int)ac_conv_retries(s->conv), d,
                        json_is_string(m) ? json_string_value(m) : "retryable failure");
    }
}

static void backoff_stop(ac_session *s)
{
    if (s->timer_id[SLOT_BACKOFF])
        ac_loop_cancel_timer(s->e->loop, s->timer_id[SLOT_BACKOFF]);
    s->timer_id[SLOT_BACKOFF] = 0;
}

static void llm_start(ac_session *s, const ac_param_value *args, size_t n, const ac_event *ev)
{
    (void)ev;
    ac_llm_call_opts opts;
    opts.stall_timeout_ms = arg_int(args, n, 0, 120000);
    opts.connect_timeout_ms = arg_int(args, n, 1, 10000);
    s->llm_call = s->e->provider->start(s->e->provider, s, &opts);
}

static void llm_stop(ac_session *s)
{
    if (s->llm_call)
        s->e->provider->cancel(s->e->provider, s->llm_call);
    s->llm_call = 0;
}

void ac_effects_register(ac_registry *r)
{
    ac_registry_effect(r, "inactivity_timer", inactivity_start, inactivity_stop);
    ac_registry_effect(r, "backoff_timer", backoff_start, backoff_stop);
    ac_registry_effect(r, "llm_request", llm_start, llm_stop);
    ac_registry_effect(r, "run_tools", ac_run_tools_start, ac_run_tools_stop);
    ac_registry_effect(r, "compact", ac_compact_start, ac_compact_stop);
}
