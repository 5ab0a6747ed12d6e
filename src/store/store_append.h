/*
 * store_append.h - a hook of the store's writer: told of each event a stored session records,
 * before it is applied and after, so that what a server streams of it is made then, from the
 * session itself, and sent once the store's observer says the event is committed (the journal
 * stays the one log: the hook makes nothing of its own that is kept).
 */
#ifndef AGENTC_STORE_APPEND_H
#define AGENTC_STORE_APPEND_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/store.h"
#include "session/payload.h"

/* Event n of session s (time t_ms, name ev, data: its JSON, NULL when it came typed as p or
 * has none) recorded, about to be applied (done 0); then applied (done 1: t_ms 0, ev, data and
 * p NULL; those given before are still valid). Not told of the events a restore replays
 * unrecorded. The hook reads; it must not post to s, free it or close the store. */
typedef void (*ac_store_append_fn)(void *ud, ac_session *s, uint64_t n, int64_t t_ms,
                                   const char *ev, json_t *data, const ac_payload *p, int done);

/* One hook per store; fn NULL removes it. */
void ac_store_set_append_hook(ac_store *st, ac_store_append_fn fn, void *ud);

#endif
