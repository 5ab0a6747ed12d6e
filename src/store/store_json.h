/*
 * store_json.h - the compact JSON text of a journal event's payload (store_json.c).
 */
#ifndef AGENTC_STORE_JSON_H
#define AGENTC_STORE_JSON_H

#include <jansson.h>

/* What json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) returns, made faster for the values
 * events carry (reals go to jansson). malloc'd; NULL when out of memory. */
char *ac_store_json_text(json_t *v);

#endif
