/*
 * handoff.c - handoffs (docs/composition.md): a tool file's agent entry with "handoff": true
 * is offered as transfer_to_NAME. A call of it is answered at once, and the session pauses
 * right after the answer is applied (the pause event queued behind it), so the turn ends at
 * rest with the transfer in the conversation. The embedder then records the change
 * (ac_session_change_agent_on, reason "handoff"), opens the session on the named agent's
 * engine and resumes it: a new turn of the same conversation answers the same user message.
 * What waits to be moved is read from the conversation (ac_session_handoff), so a session
 * restored after a crash knows it too.
 */
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "session/tools_internal.h"

void ac_handoff_run(ac_tool_run *r, struct slot *sl, const ac_tool *t)
{
    ac_session *s = ac_tool_run_session(r);
    uint16_t pause = ac_engine_event_index(s->e, "pause");
    const char *name = json_string_value(json_object_get(t->agent, "name"));
    char msg[300];
    if (s->agent_path) { /* a child answers its call: its conversation is not its own to give */
        snprintf(msg, sizeof msg,
                 "not run: a sub-agent (%s) cannot hand the conversation to %s: answer the task",
                 s->agent_path, name);
        ac_tool_run_complete_later(r, sl, 0, msg);
        return;
    }
    if (!s->e->subagents || !s->e->subagents->handoffs) {
        snprintf(msg, sizeof msg,
                 "not run: this program does not move a session to another agent, so it cannot "
                 "hand the conversation to %s (agentc run with a stored session does)",
                 name);
        ac_tool_run_complete_later(r, sl, 0, msg);
        return;
    }
    if (pause == AC_FSM_NONE || s->e->ev_resume == AC_FSM_NONE) {
        snprintf(msg, sizeof msg,
                 "not run: this session's spec has no pause and resume events, so it cannot "
                 "hand the conversation to %s",
                 name);
        ac_tool_run_complete_later(r, sl, 0, msg);
        return;
    }
    snprintf(msg, sizeof msg, "transferred to %s: %s answers from here on", name, name);
    ac_tool_run_set_then(sl, pause);
    ac_tool_run_complete_later(r, sl, 1, msg);
}

/* The handoff tool of the last assistant message's calls that succeeded, or NULL. */
static const ac_tool *pending(ac_session *s)
{
    for (size_t i = ac_conv_message_count(s->conv); i-- > 0;) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if (m->role != AC_ROLE_ASSISTANT)
            continue;
        for (size_t k = 0; k < m->n_tool_calls; k++) {
            const ac_tool_call *c = ac_conv_tool_call(s->conv, m->tool_call_ids[k]);
            const ac_tool *t = c ? ac_tools_find(s->e, c->name) : NULL;
            if (t && t->kind == TK_HANDOFF && c->state == AC_CALL_SUCCESS)
                return t;
        }
        return NULL;
    }
    return NULL;
}

const char *ac_session_handoff(ac_session *s, const char **dir)
{
    if (dir)
        *dir = NULL;
    const ac_tool *t = s && ac_session_status(s) == AC_SESSION_PAUSED ? pending(s) : NULL;
    if (!t)
        return NULL;
    free(s->handoff_text);
    s->handoff_text = json_dumps(t->agent, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (dir)
        *dir = t->agent_dir;
    return s->handoff_text;
}
