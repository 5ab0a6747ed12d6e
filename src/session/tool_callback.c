/*
 * tool_callback.c - the handles of calls to tools implemented by C
 * callbacks (ac_engine_add_callback_tool). A handle is shared by the run
 * and the embedder, who may complete it from any thread: it is guarded by a
 * mutex and counted (one reference each), and the completion reaches the
 * loop's thread through ac_loop_post. A handle whose run was stopped first
 * is "abandoned": its completion is dropped without touching the loop, which
 * may be gone by then (the session, the engine and the loop freed while a
 * worker still holds the handle).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "session/tools_internal.h"

void ac_tool_handle_release(ac_tool_call_handle *h)
{
    pthread_mutex_lock(&h->mu);
    int left = --h->refs;
    pthread_mutex_unlock(&h->mu);
    if (left == 0) {
        pthread_mutex_destroy(&h->mu);
        free(h->id);
        free(h->content);
        free(h->context);
        free(h);
    }
}

void ac_tool_call_complete(ac_tool_call_handle *h, int ok, const char *content)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    if (h->abandoned) {
        /* The run stopped (its session may be freed, and the engine and the
         * loop with it): the loop must not be touched. */
        pthread_mutex_unlock(&h->mu);
        ac_tool_handle_release(h);
        return;
    }
    if (!h->content)
        h->content = strdup(content ? content : "");
    h->ok = ok;
    /* Posted under the mutex: the run cannot be abandoned, and so the loop
     * cannot be freed, between the check above and the post. */
    int rc = ac_loop_post(h->loop, ac_tool_call_arrived, h);
    pthread_mutex_unlock(&h->mu);
    if (rc != 0)
        ac_tool_handle_release(h);
}

const char *ac_tool_call_context(const ac_tool_call_handle *h)
{
    return h ? h->context : NULL;
}
