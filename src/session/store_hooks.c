/* store_hooks.c - the pieces of a session and an engine a store reads and sets
 * (store_hooks.h). */
#include "session/store_hooks.h"
#include "session_int.h"

void *ac_session_hooks_ud(const ac_session *s, const ac_session_hooks *hooks)
{
    return s && s->hooks == hooks ? s->hooks_ud : NULL;
}

uint64_t ac_session_seq(const ac_session *s)
{
    return s->seq;
}

void ac_session_set_seq(ac_session *s, uint64_t seq)
{
    s->seq = seq;
}

void ac_session_go_live(ac_session *s, size_t turn_base)
{
    s->replaying = 0;
    s->turn_base = turn_base;
}

int ac_engine_set_output(ac_engine *e, int on)
{
    int had = e->has_output;
    e->has_output = on;
    return had;
}

const json_t *ac_engine_param_overrides(const ac_engine *e)
{
    return e->param_overrides;
}
