/* Parsing of human-written durations and sizes used in tool files and
 * parameters: "500ms", "10s", "10m", "2h"; "512B", "64KB", "1MB", "1GiB".
 *
 * Sizes: B, KB, MB, GB are decimal (1000-based); KiB, MiB, GiB are binary
 * (1024-based). Unit names are case-sensitive, as written here. A bare number
 * without a unit is refused, so "10" is never guessed to mean seconds or bytes.
 * Numbers are non-negative decimal integers; no sign, no fraction, no spaces.
 */
#ifndef AC_TOOLS_UNITS_H
#define AC_TOOLS_UNITS_H

#include <stddef.h>

/* Parses a duration into milliseconds. Units: ms, s, m, h.
 * Returns 0 on success, -1 on junk, negative numbers or overflow. */
int ac_parse_duration_ms(const char *s, long long *out);

/* Parses a size into bytes. Units: B, KB, MB, GB (x1000), KiB, MiB, GiB (x1024).
 * Returns 0 on success, -1 on junk, negative numbers or overflow. */
int ac_parse_size(const char *s, size_t *out);

#endif
