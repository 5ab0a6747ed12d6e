/* utf8.h - UTF-8 validation and repair, one policy for the whole tree.
 *
 * Well-formed means RFC 3629: no overlong forms, no surrogates (U+D800 to
 * U+DFFF), nothing above U+10FFFF. Repair replaces each byte that does not
 * start a well-formed sequence with U+FFFD (EF BF BD), one replacement per
 * bad byte, so the output is always valid and a string of n bytes repairs
 * to at most 3 * n bytes.
 *
 * NUL: a NUL byte (U+0000) is well-formed UTF-8 and is kept unless the
 * caller asks for AC_UTF8_REPLACE_NUL (for text that must later be handled
 * as a C string, such as a tool's output stored in the conversation). All
 * functions are length-bounded and never read past s[n - 1].
 */
#ifndef AGENTC_UTIL_UTF8_H
#define AGENTC_UTIL_UTF8_H

#include <stddef.h>

/* Flags of ac_utf8_repair. */
#define AC_UTF8_KEEP_NUL 0u
#define AC_UTF8_REPLACE_NUL 1u /* NUL bytes become U+FFFD too */

/* The length (1-4) of the well-formed sequence at the start of s[0..n), or
 * 0 if there is none (n == 0, a bad lead byte, a missing or bad continuation
 * byte, an overlong form, a surrogate or a code point above U+10FFFF). NUL
 * is a well-formed sequence of length 1. */
size_t ac_utf8_seq_len(const char *s, size_t n);

/* The length of the longest well-formed prefix of s[0..n); equal to n when
 * the whole of it is valid UTF-8. s may be NULL when n is 0. */
size_t ac_utf8_valid_len(const char *s, size_t n);

/* A new NUL-terminated copy of s[0..n) with every byte that does not start
 * a well-formed sequence (and, with AC_UTF8_REPLACE_NUL, every NUL byte)
 * replaced by U+FFFD. The caller frees it. The number of bytes before the
 * terminator goes to *out_len when out_len is not NULL (with NULs kept, the
 * copy may hold NULs before its end). NULL only when out of memory; s may
 * be NULL when n is 0. */
char *ac_utf8_repair(const char *s, size_t n, unsigned flags, size_t *out_len);

#endif
