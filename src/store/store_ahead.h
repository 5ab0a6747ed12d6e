/*
 * store_ahead.h - a session's rows read ahead (by the event loop, without waiting: store_notify.h
 * ac_notify_ahead), then its loading (store_load.c, the one loader) answered from them: between
 * ac_store_ahead_begin and ac_store_ahead_end the store's reads of that session (its row, its
 * agent, its latest snapshot, its journal from the snapshot's event on (that event is the last
 * record a load at rest under another spec reads), its tool calls) and the taking of the lease a
 * claim took already are answered from the rows, no statement sent; everything else (another
 * session, an older snapshot, a write) goes to the store as always.
 */
#ifndef AGENTC_STORE_AHEAD_H
#define AGENTC_STORE_AHEAD_H

#include "store_int.h"

typedef struct ac_store_ahead ac_store_ahead;

/* Rows of session id, none yet; attempt: the lease its claim took (0: none, taken on load). */
ac_store_ahead *ac_store_ahead_new(const char *id, int64_t attempt);
void ac_store_ahead_free(ac_store_ahead *a);
const char *ac_store_ahead_id(const ac_store_ahead *a);
/* Its row, once read (zeroed before). */
const ac_store_session_info *ac_store_ahead_info(const ac_store_ahead *a);

/* Filling (each 0, or -1: out of memory). The row and its agent (NULL: none recorded); the
 * latest snapshot (n 0: none); the journal's events from its event on, in order; its tool calls. */
int ac_store_ahead_row(ac_store_ahead *a, const ac_store_session_info *info, const char *agent);
int ac_store_ahead_snapshot(ac_store_ahead *a, uint64_t n, const char *body);
int ac_store_ahead_event(ac_store_ahead *a, const ac_store_event *ev);
int ac_store_ahead_call(ac_store_ahead *a, const char *call_id, const char *name,
                        int64_t started_ms, int64_t finished_ms, int ok);
/* The lease taken for it meanwhile (by the loop, without waiting): answered as held. */
void ac_store_ahead_set_attempt(ac_store_ahead *a, int64_t attempt);
/* How many statements the rows answered since ac_store_ahead_begin (tests). */
size_t ac_store_ahead_answered(const ac_store_ahead *a);

/* st's reads of a's session answered from a (filled in full) until ac_store_ahead_end; a outlives
 * that. Not nested. */
void ac_store_ahead_begin(ac_store *st, ac_store_ahead *a);
void ac_store_ahead_end(ac_store *st);
/* True while st answers id's reads from rows read ahead (nothing of it can be in flight). */
int ac_store_ahead_has(const ac_store *st, const char *id);

#endif
