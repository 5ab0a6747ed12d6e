/*
 * json_text.h - a JSON value's compact text appended to an ac_buf (json_text.c): what
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes for objects (in their order), arrays,
 * strings, integers, booleans and null. Built into the runtime (it needs jansson).
 */
#ifndef AGENTC_UTIL_JSON_TEXT_H
#define AGENTC_UTIL_JSON_TEXT_H

#include <jansson.h>
#include <stdint.h>

#include "util/buf.h"

/* Reals written as %.17g (a ".0" added where it would read as an integer); without it a real
 * fails the buffer, for a caller whose reference for reals is jansson's own format. */
#define AC_JSON_REALS 1u
/* Every character above U+007F escaped (\uXXXX, surrogate pairs above U+FFFF), as jansson's
 * JSON_ENSURE_ASCII writes it; a string that is not UTF-8 fails the buffer. */
#define AC_JSON_ASCII 2u

/* v appended to b; a value nested deeper than 64 levels fails b (ac_buf's failed). */
void ac_json_put(ac_buf *b, const json_t *v, unsigned flags);

/* A string of n bytes as a JSON string, and a real as AC_JSON_REALS writes it, appended to b:
 * for a writer of JSON text that keeps its values in structures of its own. */
void ac_json_put_str(ac_buf *b, const char *s, size_t n);
void ac_json_put_real(ac_buf *b, double d);
/* A real as json_dumps writes it with JSON_REAL_PRECISION(precision) (1 to 17); a real that
 * is not finite (which jansson does not hold) fails b. */
void ac_json_put_real_precision(ac_buf *b, double d, int precision);
/* An integer as jansson writes it (decimal, '-' when negative). */
void ac_json_put_int(ac_buf *b, int64_t v);
/* V's decimal digits written backwards, ending just before END (20 bytes are room enough):
 * where they start. */
char *ac_json_digits(char *end, uint64_t v);
/* ac_json_put_str with flags (AC_JSON_ASCII). */
void ac_json_put_string(ac_buf *b, const char *s, size_t n, unsigned flags);

#endif
