/* schema_regex.h - JSON Schema "pattern" support: ECMA-262 regular
 * expressions translated to POSIX extended syntax and compiled with regcomp.
 * Untranslatable or runaway patterns are refused with a reason. */
#ifndef AGENTC_TOOLS_SCHEMA_REGEX_H
#define AGENTC_TOOLS_SCHEMA_REGEX_H

#include <regex.h>
#include <stddef.h>

typedef struct ac_schema_regex {
    regex_t re;
    const char *src; /* borrowed from the schema document */
    int compiled;
} ac_schema_regex;

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

/* 0 on success; -1 with the reason in why. Free with regfree(&rx->re). */
int ac_schema__regex_compile(ac_schema_regex *rx, const char *src, size_t len, char *why,
                             size_t whycap);
/* 1 when the pattern matches somewhere in s[0..n). */
int ac_schema__regex_match(const ac_schema_regex *rx, const char *s, size_t n);

#endif
