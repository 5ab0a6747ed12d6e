/*
 * store_json.c - the compact JSON text of an event's payload, for the store's journal rows
 * (store_json.h). jansson's json_dumps costs about ten thousand instructions for a payload
 * of a hundred bytes (a stream buffer, a callback per piece); this writer appends to one
 * growing buffer (util/json_text.c); a value holding a real number is left to jansson, whose
 * format for reals is the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_json.h"
#include "util/json_text.h"

char *ac_store_json_text(json_t *v)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_json_put(&b, v, 0); /* reals: jansson's format is the reference */
    char *s = ac_buf_take(&b, NULL);
    return s ? s : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
