/*
 * post_at.h - events posted when a session enters a state (`agentc run --post-at
 * STATE=EVENT[:PAYLOAD]`, and `agentc testgen`'s search, which runs its candidates the same
 * way): a pause while a turn runs, a message queued meanwhile, an outside event at a given
 * point. Each entry posts its event once, on the first entry into its state after the session
 * was created; entries naming one state post in the order given. The event is posted from the
 * trace callback, so the engine applies it right after the event that entered the state
 * (ac_session_post from an output callback), the same way on every run.
 */
#ifndef AGENTC_CLI_POST_AT_H
#define AGENTC_CLI_POST_AT_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"
#include "agentc/fsm.h"

#define AC_POST_AT_MAX 32

typedef struct ac_post_at_entry {
    uint16_t state;      /* index into the tables */
    const char *event;   /* the event's name, as the tables spell it */
    const char *payload; /* JSON text, or a text posted as {"text": PAYLOAD}; NULL: none */
    int used;
} ac_post_at_entry;

typedef struct ac_post_at {
    ac_post_at_entry e[AC_POST_AT_MAX];
    size_t n;
} ac_post_at;

/* Reads the entries "STATE=EVENT[:PAYLOAD]" (STATE may be MACHINE.STATE, and must be when
 * several machines have a state of that name; EVENT is one the spec declares) against t. The
 * entries point into specs and t. 0, or -1 with err saying which entry is wrong and why. */
int ac_post_at_parse(ac_post_at *p, const ac_fsm_tables *t, const char *const *specs, size_t n,
                     char *err, size_t errcap);

/* Called with every trace record of session s: posts the entries of the state it entered. */
void ac_post_at_seen(ac_post_at *p, ac_session *s, const ac_trace_rec *r);

#endif
