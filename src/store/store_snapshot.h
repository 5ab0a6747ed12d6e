/*
 * store_snapshot.h - a session at rest as one JSON document, and back.
 *
 * The snapshot is a table of parts (store_snapshot.c): each part has a name,
 * a save function (the part as JSON) and a restore function. A part added to
 * the session (toolkit states, the State document...) is one line in that
 * table; a snapshot without a part's key restores that part as new.
 */
#ifndef AGENTC_STORE_SNAPSHOT_H
#define AGENTC_STORE_SNAPSHOT_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/agentc.h"

typedef struct ac_snapshot_part {
    const char *name;
    json_t *(*save)(const ac_session *s); /* new reference, NULL: out of memory */
    /* v is the saved value; AC_OK, or an error code with a message in err */
    int (*restore)(ac_session *s, json_t *v, char *err, size_t errcap);
} ac_snapshot_part;

/* The snapshot of a settled session ({"version": 1, "model_calls": N, PART: ...});
 * malloc'd, NULL when out of memory. */
char *ac_store_snapshot_save(const ac_session *s, uint64_t model_calls);
/* Restores the parts into a session just started (replaying, nothing applied yet). */
int ac_store_snapshot_restore(ac_session *s, const char *body, uint64_t *model_calls, char *err,
                              size_t errcap);

#endif
