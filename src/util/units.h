/* units.h - parsing of human-written durations, sizes and times, used by
 * the spec compiler (param values), tool files, engine parameters, the
 * context tools and `agentc sessions prune`: "500ms", "10s", "10m", "2h", "7d"; "512B", "64KB", "1MB",
 * "1GiB"; "2026-11-03T14:05:00Z".
 *
 * Sizes: B, KB, MB, GB are decimal (1000-based); KiB, MiB, GiB are binary
 * (1024-based). Unit names are case-sensitive, as written here. A bare number
 * without a unit is refused, so "10" is never guessed to mean seconds or bytes.
 * Numbers are non-negative decimal integers; no sign, no fraction, no spaces.
 *
 * The parsers return AC_UNITS_OK (0) or a negative AC_UNITS_E* code, and
 * leave *out untouched on error.
 */
#ifndef AGENTC_UTIL_UNITS_H
#define AGENTC_UTIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define AC_UNITS_OK 0
#define AC_UNITS_EINVAL -1 /* no number at the start, NULL argument, or junk */
#define AC_UNITS_EUNIT -2  /* a number followed by no unit or an unknown one */
#define AC_UNITS_ERANGE -3 /* a number with a known unit, too large */

/* Parses a duration into milliseconds. Units: ms, s, m, h, d (24 h). */
int ac_parse_duration_ms(const char *s, long long *out);

/* Parses a size into bytes. Units: B, KB, MB, GB (x1000), KiB, MiB, GiB (x1024). */
int ac_parse_size(const char *s, size_t *out);

/* Parses a point in time into Unix milliseconds (UTC). Accepted forms:
 * a string of at most 18 digits (Unix milliseconds), or ISO 8601 as
 * YYYY-MM-DD, optionally followed by 'T' (or a space) and hh:mm, :ss,
 * a fraction (.f, milliseconds kept), then optionally 'Z' or +hh:mm /
 * -hh:mm. Without an offset the time is UTC. Returns AC_UNITS_OK or
 * AC_UNITS_EINVAL. */
int ac_parse_time(const char *s, int64_t *out_ms);

#endif
