/* utf8.c - UTF-8 validation and repair; see utf8.h for the policy. */
#include "util/utf8.h"

#include <stdlib.h>
#include <string.h>

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

size_t ac_utf8_seq_len(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* continuation bytes, C0, C1 (overlong), F5..FF */
    }
    if (len > n || u[1] < lo || u[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if ((u[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

size_t ac_utf8_valid_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII runs are the common case */
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = ac_utf8_seq_len(s + i, n - i);
        if (l == 0)
            break;
        i += l;
    }
    return i;
}

/* Whether the byte at s[i] is replaced: NUL under AC_UTF8_REPLACE_NUL, or
 * the start of no well-formed sequence. *len receives the bytes kept. */
static int bad_at(const char *s, size_t n, size_t i, unsigned flags, size_t *len)
{
    if (s[i] == 0 && (flags & AC_UTF8_REPLACE_NUL)) {
        *len = 1;
        return 1;
    }
    *len = ac_utf8_seq_len(s + i, n - i);
    if (*len == 0) {
        *len = 1;
        return 1;
    }
    return 0;
}

char *ac_utf8_repair(const char *s, size_t n, unsigned flags, size_t *out_len)
{
    size_t bad = 0, len;
    for (size_t i = 0; i < n; i += len)
        bad += (size_t)bad_at(s, n, i, flags, &len);
    if (bad > (((size_t)-1) - n - 1) / 2)
        return NULL;
    size_t total = n + 2 * bad;
    char *out = malloc(total + 1);
    if (!out)
        return NULL;
    if (bad == 0) {
        if (n)
            memcpy(out, s, n);
    } else {
        size_t o = 0;
        for (size_t i = 0; i < n; i += len) {
            if (bad_at(s, n, i, flags, &len)) {
                memcpy(out + o, REPLACEMENT, 3);
                o += 3;
            } else {
                memcpy(out + o, s + i, len);
                o += len;
            }
        }
    }
    out[total] = 0;
    if (out_len)
        *out_len = total;
    return out;
}
