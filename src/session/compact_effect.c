/*
 * compact_effect.c - the COMPACTING state's effect and its action.
 *
 * The effect decides (reading the conversation) and posts the plan in
 * compaction.done; the apply_compaction action carries it out. Plans name
 * messages by id, so replaying the journal applies the same plan.
 * Strategies (param `compaction`):
 *   sliding_window      drop older turns after the first user message,
 *                       keeping system messages and the last `keep` turns;
 *                       a marker message says what was dropped
 *   clear_tool_results  replace all but the last `keep` tool results by a
 *                       marker; the record keeps the full result
 * Neither separates an assistant tool call from its results
 * (ac_conv_replace_range refuses such a range).
 */
#include <stdlib.h>
#include <string.h>

#include "context/tokens.h"
#include "session_int.h"

size_t ac_session_estimate_tokens(ac_session *s)
{
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "estimate";
    int64_t n = ac_tokens_estimate(s->conv, &o);
    return n > 0 ? (size_t)n : 0;
}

static json_t *plan_sliding(ac_session *s, size_t keep)
{
    size_t n = ac_conv_message_count(s->conv), floor = ac_conv_floor(s->conv);
    size_t first_user = (size_t)-1;
    for (size_t i = floor; i < n; i++)
        if (ac_conv_message(s->conv, i)->role == AC_ROLE_USER) {
            first_user = i;
            break;
        }
    if (first_user == (size_t)-1)
        return NULL;
    /* walk back over `keep` turn starts (user or assistant messages) */
    size_t cut = n, turns = 0;
    for (size_t i = n; i > first_user + 1; i--) {
        const ac_message *m = ac_conv_message(s->conv, i - 1);
        if (m->role == AC_ROLE_USER || m->role == AC_ROLE_ASSISTANT) {
            cut = i - 1;
            if (++turns >= keep)
                break;
        }
    }
    if (cut <= first_user + 1)
        return NULL;
    return json_pack("{s:s, s:s, s:s}", "strategy", "sliding_window", "from",
                     ac_conv_message(s->conv, first_user + 1)->id, "to",
                     ac_conv_message(s->conv, cut)->id);
}

static json_t *plan_clear(ac_session *s, size_t keep)
{
    size_t n = ac_conv_message_count(s->conv), seen = 0;
    json_t *ids = json_array();
    for (size_t i = n; i > 0; i--) {
        const ac_message *m = ac_conv_message(s->conv, i - 1);
        if (m->role != AC_ROLE_TOOL || (m->flags & AC_MSG_CLEARED))
            continue;
        if (++seen > keep)
            json_array_append_new(ids, json_string(m->id));
    }
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "strategy", "clear_tool_results", "clear", ids);
}

static void compact_fire(void *ud)
{
    ac_session *s = ud;
    s->compact_timer = 0;
    const char *strategy = ac_engine_param_str(s->e, "compaction", "sliding_window");
    size_t keep = (size_t)ac_engine_param_int(s->e, "compaction_keep", 6);
    json_t *plan = NULL;
    if (strcmp(strategy, "sliding_window") == 0)
        plan = plan_sliding(s, keep ? keep : 1);
    else if (strcmp(strategy, "clear_tool_results") == 0)
        plan = plan_clear(s, keep);
    if (plan) {
        ac_session_post_index(s, s->e->ev_compaction_done, plan, 0);
        return;
    }
    char msg[200];
    if (strcmp(strategy, "sliding_window") && strcmp(strategy, "clear_tool_results"))
        snprintf(msg, sizeof msg, "compaction strategy '%s' is not available", strategy);
    else
        snprintf(msg, sizeof msg, "nothing to compact with '%s'", strategy);
    ac_session_post_index(s, s->e->ev_compaction_failed,
                          json_pack("{s:s, s:s}", "strategy", strategy, "message", msg), 0);
}

void ac_compact_start(ac_session *s, const ac_param_value *args, size_t nargs, const ac_event *ev)
{
    (void)args;
    (void)nargs;
    (void)ev;
    s->compact_timer = ac_loop_timer(s->e->loop, 0, compact_fire, s);
}

void ac_compact_stop(ac_session *s)
{
    if (s->compact_timer)
        ac_loop_cancel_timer(s->e->loop, s->compact_timer);
    s->compact_timer = 0;
}

int ac_compact_apply(ac_session *s, json_t *plan, int64_t t_ms, size_t *before, size_t *after)
{
    *before = ac_conv_message_count(s->conv);
    *after = *before;
    const char *strategy = json_string_value(json_object_get(plan, "strategy"));
    if (!strategy)
        return -1;
    if (strcmp(strategy, "sliding_window") == 0) {
        size_t from = ac_conv_find_message(s->conv, json_string_value(json_object_get(plan, "from")));
        size_t to = ac_conv_find_message(s->conv, json_string_value(json_object_get(plan, "to")));
        if (from == (size_t)-1 || to == (size_t)-1 || to <= from)
            return -1;
        char marker[200];
        snprintf(marker, sizeof marker,
                 "[compaction: %zu earlier messages were removed to fit the context window]",
                 to - from);
        ac_message_in m = {AC_ROLE_USER, marker, AC_MSG_SUMMARY};
        if (ac_conv_replace_range(s->conv, from, to, &m, 1, t_ms) != AC_CONV_OK)
            return -1;
    } else if (strcmp(strategy, "clear_tool_results") == 0) {
        size_t i;
        json_t *id;
        json_array_foreach(json_object_get(plan, "clear"), i, id)
        {
            size_t mi = ac_conv_find_message(s->conv, json_string_value(id));
            if (mi == (size_t)-1)
                continue;
            const ac_message *m = ac_conv_message(s->conv, mi);
            char marker[200];
            snprintf(marker, sizeof marker,
                     "[result cleared by compaction; call %s's full result is kept in history]",
                     m->tool_call_id ? m->tool_call_id : "?");
            ac_conv_clear_tool_result(s->conv, mi, marker, t_ms);
        }
    }
    *after = ac_conv_message_count(s->conv);
    return 0;
}
