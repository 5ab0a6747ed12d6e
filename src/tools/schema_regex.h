/* schema_regex.h - JSON Schema "pattern" support: ECMA-262 regular
 * expressions compiled with PCRE2 (Perl-compatible, close to ECMA-262: `$`
 * matches only at the end, \uXXXX escapes, `[^]`). A match has a bounded
 * amount of work (PCRE2's match, depth and heap limits), so a catastrophic
 * pattern such as ^(a+)+$ on a long string ends with an error instead of
 * holding the caller. */
#ifndef AGENTC_TOOLS_SCHEMA_REGEX_H
#define AGENTC_TOOLS_SCHEMA_REGEX_H

#include <stddef.h>

typedef struct ac_schema_regex {
    void *code;      /* pcre2_code_8 */
    void *mctx;      /* pcre2_match_context_8: the limits */
    const char *src; /* borrowed from the schema document */
    int compiled;
} ac_schema_regex;

/* Limits of one match: backtracking steps (PCRE2 match limit), nested
 * backtracking frames (depth limit) and the heap the matcher may use. */
#define AC_SCHEMA_REGEX_MATCH_LIMIT 1000000u
#define AC_SCHEMA_REGEX_DEPTH_LIMIT 250000u
#define AC_SCHEMA_REGEX_HEAP_LIMIT_KB 65536u

/* snprintf into err (when err is not NULL): the schema modules' messages. */
void ac_schema__msg(char *err, size_t errcap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Value of one hex digit, -1 if c is not one (regex escapes, $ref
 * percent-decoding). */
static inline int ac_schema__hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* 0 on success; -1 with the reason in why. Free with ac_schema__regex_free. */
int ac_schema__regex_compile(ac_schema_regex *rx, const char *src, size_t len, char *why,
                             size_t whycap);
/* 1 when the pattern matches somewhere in s[0..n), 0 when it does not, -1
 * when the match was given up (a limit was reached, or out of memory) with
 * the reason in why. */
int ac_schema__regex_match(const ac_schema_regex *rx, const char *s, size_t n, char *why,
                           size_t whycap);
void ac_schema__regex_free(ac_schema_regex *rx);

#endif
