/* The inbox of an MCP transport (mcp_transport.h): what the transport read is
 * queued here from its I/O callbacks and handed to the client from a task
 * deferred on the loop, one message per run of the task. The task defers
 * itself again before each hand-over, and the hand-over is the last thing it
 * does, so the client may free the transport (and this inbox) from inside. */
#include <stdio.h>
#include <string.h>

#include "mcp/mcp_transport.h"

static void deliver(void *ud)
{
    mcp_inbox *in = ud;
    size_t n = json_array_size(in->q);
    if (in->head < n) {
        json_t *m = json_incref(json_array_get(in->q, in->head++));
        if (in->head == n) {
            json_array_clear(in->q);
            in->head = 0;
        }
        if (in->head || in->end)
            ac_loop_defer(in->loop, &in->task);
        in->cb.message(in->cb.ud, m);
        json_decref(m);
        return;
    }
    if (in->end == MCP_INBOX_CLOSED) {
        char why[sizeof in->why];
        memcpy(why, in->why, sizeof why);
        in->end = -1; /* reported */
        in->cb.closed(in->cb.ud, why);
    } else if (in->end == MCP_INBOX_EXPIRED) {
        in->end = -1;
        in->cb.expired(in->cb.ud);
    }
}

int mcp_inbox_init(mcp_inbox *in, ac_loop *loop, const mcp_transport_cb *cb)
{
    memset(in, 0, sizeof *in);
    in->loop = loop;
    in->cb = *cb;
    in->task.fn = deliver;
    in->task.ud = in;
    in->q = json_array();
    return in->q ? 0 : -1;
}

void mcp_inbox_push(mcp_inbox *in, json_t *msg)
{
    if (in->end || !msg)
        return;
    if (json_is_array(msg))
        json_array_extend(in->q, msg);
    else
        json_array_append(in->q, msg);
    ac_loop_defer(in->loop, &in->task);
}

void mcp_inbox_end(mcp_inbox *in, int end, const char *why)
{
    if (in->end)
        return;
    in->end = end;
    snprintf(in->why, sizeof in->why, "%s", why ? why : "");
    ac_loop_defer(in->loop, &in->task);
}

int mcp_inbox_ended(const mcp_inbox *in)
{
    return in->end != 0;
}

void mcp_inbox_clear(mcp_inbox *in)
{
    if (in->loop)
        ac_loop_undefer(in->loop, &in->task);
    json_decref(in->q);
    in->q = NULL;
}
