/*
 * state.h - a session's State: one JSON object that tools read through
 * references (†state.PATH) and write through "_outputPath" (docs/state.md).
 *
 * The State is declared by a tool file ("state": {"initial", "schema"}),
 * reaches each session in its spawn event (so a replay starts from the same
 * document and checks with the same schema) and changes only when a
 * tool.completed (or context.*) event carrying "state_writes" is applied:
 * [{"path": "†state.a.b", "value": V}, ...], in order. The call that wrote is
 * the event's "id". A replay applies the same events, so it rebuilds the same
 * State. The run_tools effect decides the writes (state_turn.c): it checks
 * them against the schema before the event is queued.
 */
#ifndef AGENTC_SESSION_STATE_H
#define AGENTC_SESSION_STATE_H

#include <jansson.h>
#include <stddef.h>

#include "agentc/agentc.h"

struct ac_schema;

typedef struct ac_state {
    json_t *doc;         /* always an object */
    json_t *schema_json; /* NULL: none */
    struct ac_schema *schema;
    int declared; /* the spawn event declared a State */
} ac_state;

/* From the spawn event's "state" ({"initial", "schema"}) or NULL (an empty,
 * undeclared State). NULL only when out of memory or the schema does not
 * compile (it was checked when the tool file was loaded). */
ac_state *ac_state_new(const json_t *decl);
void ac_state_free(ac_state *st);

/* 1 when the schema (if any) accepts doc, else 0 with why in err. */
int ac_state_accepts(const ac_state *st, const json_t *doc, char *err, size_t errcap);

/* Applies the "state_writes" of an event (NULL: nothing). */
void ac_state_apply(ac_state *st, const json_t *writes);

/* The State's document (a new reference) when the session declares one or a call
 * wrote to it, else NULL. */
json_t *ac_session_state_json(const ac_session *s);

/* The State's document as compact JSON text (malloc'd), "{}" for a session
 * without one; NULL when out of memory. For snapshots (the durable store). */
char *ac_session_state_save(const ac_session *s);

/* Replaces the State's document with json (an object the schema accepts):
 * to restore a snapshot taken with ac_session_state_save. 0, or -1 with a
 * message in err and nothing changed. */
int ac_session_state_restore(ac_session *s, const char *json, char *err, size_t errcap);

/* The whole State as one JSON value, for a snapshot part of the durable store:
 * {"declared": true|false, "doc": {...}, "schema": {...}} ("schema" absent when
 * none). A new reference; NULL only when out of memory. */
json_t *ac_state_snapshot_save(const ac_session *s);

/* Rebuilds the State from a value ac_state_snapshot_save gave (replacing the one
 * the session has, if any; a session restored this way keeps it when its spawn
 * event is applied). AC_OK, or AC_EINVAL / AC_ENOMEM with a message in err and
 * nothing changed (a document the saved schema refuses is refused). */
int ac_state_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap);

/* The State as the model sees it (params state_in_context and
 * state_context_max): a note with the document, cut to the cap with a
 * mark; NULL when it is not shown. malloc'd. */
char *ac_state_context_text(const ac_session *s);

#endif
