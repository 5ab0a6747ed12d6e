/* schema_regex.c - JSON Schema "pattern" with PCRE2; see schema_regex.h. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tools/schema_regex.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ac_schema__msg(char *err, size_t errcap, const char *fmt, ...)
{
    if (!err || errcap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

int ac_schema__regex_compile(ac_schema_regex *rx, const char *src, size_t len, char *why,
                             size_t whycap)
{
    memset(rx, 0, sizeof *rx);
    /* ECMA-262 semantics where PCRE2 can give them: `$` only at the very
     * end, \uXXXX and \xXX escapes, `[^]` for any character, and every line
     * terminator a newline for `.`. UTF-8 subjects and patterns (JSON
     * strings are valid UTF-8). */
    uint32_t opts = PCRE2_UTF | PCRE2_DOLLAR_ENDONLY | PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS |
                    PCRE2_NEVER_BACKSLASH_C;
    pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
    if (!cctx) {
        ac_schema__msg(why, whycap, "out of memory");
        return -1;
    }
    pcre2_set_newline(cctx, PCRE2_NEWLINE_ANY);
    pcre2_set_parens_nest_limit(cctx, 250);
    int ec = 0;
    PCRE2_SIZE off = 0;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)src, len, opts, &ec, &off, cctx);
    pcre2_compile_context_free(cctx);
    if (!code) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(ec, msg, sizeof msg) < 0)
            snprintf((char *)msg, sizeof msg, "error %d", ec);
        ac_schema__msg(why, whycap, "%s at offset %zu", (const char *)msg, (size_t)off);
        return -1;
    }
    pcre2_match_context *mctx = pcre2_match_context_create(NULL);
    if (!mctx) {
        pcre2_code_free(code);
        ac_schema__msg(why, whycap, "out of memory");
        return -1;
    }
    pcre2_set_match_limit(mctx, AC_SCHEMA_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(mctx, AC_SCHEMA_REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(mctx, AC_SCHEMA_REGEX_HEAP_LIMIT_KB);
    rx->code = code;
    rx->mctx = mctx;
    rx->src = src;
    rx->compiled = 1;
    return 0;
}

int ac_schema__regex_match(const ac_schema_regex *rx, const char *s, size_t n, char *why,
                           size_t whycap)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) {
        ac_schema__msg(why, whycap, "out of memory");
        return -1;
    }
    /* The subject comes from a JSON string: valid UTF-8, no check needed. */
    int rc = pcre2_match(rx->code, (PCRE2_SPTR)s, n, 0, PCRE2_NO_UTF_CHECK, md, rx->mctx);
    pcre2_match_data_free(md);
    if (rc >= 0)
        return 1;
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
        ac_schema__msg(why, whycap,
                       "matching needs too much backtracking on a string of %zu bytes (limit "
                       "reached; simplify the pattern or shorten the string)",
                       n);
        break;
    case PCRE2_ERROR_NOMEMORY:
        ac_schema__msg(why, whycap, "out of memory");
        break;
    default: {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(rc, msg, sizeof msg) < 0)
            snprintf((char *)msg, sizeof msg, "error %d", rc);
        ac_schema__msg(why, whycap, "%s", (const char *)msg);
        break;
    }
    }
    return -1;
}

void ac_schema__regex_free(ac_schema_regex *rx)
{
    if (!rx->compiled)
        return;
    pcre2_match_context_free(rx->mctx);
    pcre2_code_free(rx->code);
    rx->code = rx->mctx = NULL;
    rx->compiled = 0;
}
