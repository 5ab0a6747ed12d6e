/*
 * store_recover.c - a stored session rebuilt mid-turn finishes the work a crash
 * interrupted, by the rules of store.h: a tool call with a recorded result is
 * never run again, one started without a result runs again only when its tool
 * is idempotent (else it gets the result "interrupted"), a model call in flight
 * is issued again; the effects of the states it stands in start again.
 */
#include <string.h>

#include "context/conversation.h"
#include "session/store_hooks.h"
#include "store_writer.h"

#define INTERRUPTED_TOOL "interrupted: the tool may or may not have completed"

typedef struct started_ctx {
    ac_session *s;
    json_t *started; /* call id -> true */
} started_ctx;

static int on_call(void *ud, const char *call_id, const char *name, int64_t started_ms,
                   int64_t finished_ms, int ok)
{
    (void)name, (void)started_ms, (void)finished_ms, (void)ok;
    started_ctx *c = ud;
    json_object_set_new(c->started, call_id, json_true());
    return 0;
}

static int same_config(const ac_fsm *f, const uint16_t *cfg, uint8_t depth, uint8_t level)
{
    if (f->depth <= level || depth <= level)
        return 0;
    for (uint8_t i = 0; i <= level; i++)
        if (f->state[i] != cfg[i])
            return 0;
    return 1;
}

/* Effects of the levels still in the state the session was rebuilt in never started: start
 * them now (a level entered since started its own). */
static void restart_effects(void *ud)
{
    store_writer *w = ud;
    ac_session *s = w->s;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    const ac_fsm *f = ac_session_fsm(s);
    ac_event ev = {0, ac_wall_now_ms(), NULL};
    for (uint8_t i = 0; i < w->depth && same_config(f, w->cfg, w->depth, i); i++) {
        const uint16_t *l = t->lists + t->states[w->cfg[i]].effects;
        for (uint16_t k = 0; k < l[0]; k++)
            f->effect(s, l[1 + k], 1, &ev);
    }
}

/* The work a crash interrupted, restarted by the rules of store.h. */
int ac_store_recover(ac_store *st, ac_session *s, ac_error *err)
{
    ac_engine *e = ac_session_engine(s);
    const ac_fsm_tables *t = ac_engine_tables(e);
    const ac_fsm *f = ac_session_fsm(s);
    uint16_t cfg[AC_FSM_MAX_DEPTH];
    uint8_t depth = f->depth;
    memcpy(cfg, f->state, sizeof cfg);
    int llm = 0, tools = 0;
    for (uint8_t i = 0; i < depth; i++) {
        const uint16_t *l = t->lists + t->states[cfg[i]].effects;
        for (uint16_t k = 0; k < l[0]; k++) {
            const char *name = t->effect_names[t->effect_uses[l[1 + k]].effect];
            llm |= !strcmp(name, "llm_request");
            tools |= !strcmp(name, "run_tools");
        }
    }
    if (tools) {
        started_ctx c = {s, json_object()};
        int rc =
            c.started ? st->ops->tool_calls(st, ac_session_id(s), on_call, &c, err) : AC_ENOMEM;
        if (rc != AC_OK) {
            json_decref(c.started);
            return rc;
        }
        ac_conv *conv = ac_session_conv(s);
        size_t n = ac_conv_iter_call_count(conv);
        json_t *ids = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *cid = ac_conv_iter_call(conv, i);
            const ac_tool_call *call = cid ? ac_conv_tool_call(conv, cid) : NULL;
            if (!call || call->state != AC_CALL_NONE || !json_object_get(c.started, cid))
                continue; /* answered, or never started: it runs (again) as usual */
            if (ac_tool_idempotent(e, call->name))
                continue;
            json_array_append_new(ids, json_string(cid));
        }
        json_decref(c.started);
        size_t k;
        json_t *v;
        json_array_foreach(ids, k, v)
        {
            ac_session_post(s, "tool.completed",
                            json_pack("{s:s, s:b, s:s, s:b}", "id", json_string_value(v), "ok", 0,
                                      "content", INTERRUPTED_TOOL, "interrupted", 1),
                            0);
        }
        json_decref(ids);
    }
    if (llm && same_config(f, cfg, depth, (uint8_t)(depth - 1))) {
        /* the call in flight: its partial text goes (discard_partial says so), and the
         * spec's retry path issues it again */
        ac_session_post(s, "llm.failed",
                        json_pack("{s:s, s:i, s:b, s:s, s:b}", "class", "interrupted", "status", 0,
                                  "retryable", 1, "message",
                                  "the process stopped during the model call; it is issued "
                                  "again",
                                  "interrupted", 1),
                        0);
    }
    store_writer *w = ac_session_hooks_ud(s, &AC_SW_HOOKS);
    memcpy(w->cfg, cfg, sizeof cfg);
    w->depth = depth;
    ac_loop *loop = ac_engine_loop(e);
    if (loop && ac_loop_in_callback(loop)) {
        /* the events posted above are applied right after this callback: the effects start
         * after them */
        w->restart.fn = restart_effects;
        w->restart.ud = w;
        ac_loop_defer(loop, &w->restart);
    } else {
        restart_effects(w);
    }
    return AC_OK;
}
