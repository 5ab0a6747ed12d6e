/*
 * snapshot.h - a settled session as one JSON document, and back (snapshot.c).
 *
 * {"version": 1, "model_calls": N, PART: ...}: a table of parts, each with a
 * name, a save and a restore function: fsm (the active states and the
 * dispatcher's entry count), turn, conversation, toolkits, state (the State),
 * facts (what the spec's fact guards remember between events) and agent (what it
 * runs with, agentc.h: ac_session_agent; null when none). A part
 * added to the session is one line in that table; a snapshot without a
 * part's key restores that part as new. The store writes and reads them
 * (src/store); model_calls is its own count, carried through.
 */
#ifndef AGENTC_SESSION_SNAPSHOT_H
#define AGENTC_SESSION_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/agentc.h"

/* The snapshot of a settled session; malloc'd, NULL when out of memory. */
char *ac_session_snapshot_save(const ac_session *s, uint64_t model_calls);
/* Restores the parts into a session just started (replaying, nothing applied yet): AC_OK, or
 * an error code with err filled (nothing to use: the caller drops the session). */
int ac_session_snapshot_restore(ac_session *s, const char *body, uint64_t *model_calls, char *err,
                                size_t errcap);

#endif
