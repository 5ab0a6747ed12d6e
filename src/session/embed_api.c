/*
 * embed_api.c - session accessors for programs that embed the engine and
 * bind their own handlers: the tool calls waiting for a result, answering a
 * call with a failure instead of running it (a human denied it, a policy
 * refused it), and reading the conversation message by message.
 *
 * Everything here reads or changes session data only (no I/O, no clock), so
 * the mutating call may be used from an action, where the journal replays
 * it like any other handler.
 */
#include <string.h>

#include "session_int.h"

void ac_session_get_stats(const ac_session *s, ac_session_stats *out)
{
    if (!out)
        return;
    if (!s) {
        memset(out, 0, sizeof *out);
        return;
    }
    out->iterations = ac_conv_iteration(s->conv);
    out->tool_calls = ac_conv_tool_call_count(s->conv);
    out->input_tokens = ac_conv_usage_input(s->conv);
    out->output_tokens = ac_conv_usage_output(s->conv);
    out->turns_ended = s->turns_ended;
    out->has_cost = s->e->price != NULL;
    out->cost_usd = s->cost_usd;
}

size_t ac_session_pending_tool_calls(ac_session *s, const char **ids, size_t cap)
{
    if (!s)
        return 0;
    size_t n = ac_conv_iter_call_count(s->conv), found = 0;
    for (size_t i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
        if (!c || c->state != AC_CALL_NONE)
            continue;
        if (ids && found < cap)
            ids[found] = c->id;
        found++;
    }
    return found;
}

const char *ac_session_tool_call_name(ac_session *s, const char *id, const char **arguments)
{
    const ac_tool_call *c = s && id ? ac_conv_tool_call(s->conv, id) : NULL;
    if (arguments)
        *arguments = c ? c->arguments : NULL;
    return c ? c->name : NULL;
}

int ac_session_fail_tool_call(ac_session *s, const char *id, const char *error, int64_t t_ms)
{
    if (!s || !id || !error)
        return -1;
    const ac_tool_call *c = ac_conv_tool_call(s->conv, id);
    if (!c || c->state != AC_CALL_NONE)
        return -1;
    if (ac_conv_set_tool_result(s->conv, id, 0, error, t_ms) != AC_CONV_OK)
        return -1;
    if (s->e->has_output && s->e->out.tool_end)
        s->e->out.tool_end(s->e->out.ud, s, c->id, c->name, 0, c->result ? c->result : error, 0);
    return 0;
}

size_t ac_session_message_count(ac_session *s)
{
    return s ? ac_conv_message_count(s->conv) : 0;
}

const char *ac_session_message(ac_session *s, size_t i, const char **role)
{
    const ac_message *m = s ? ac_conv_message(s->conv, i) : NULL;
    if (role)
        *role = m ? ac_role_name(m->role) : NULL;
    return m ? m->content : NULL;
}
