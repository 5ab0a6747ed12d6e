/*
 * json_text.c - a JSON value's compact text appended to a buffer (json_text.h). jansson's
 * json_dumps costs about ten thousand instructions for a value of a hundred bytes (a stream
 * buffer, a callback per piece); this writer appends to one growing buffer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "util/utf8.h"

/* The code point of the well-formed UTF-8 sequence of len bytes at u. */
static unsigned decode(const unsigned char *u, size_t len)
{
    static const unsigned char lead_mask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    unsigned cp = u[0] & lead_mask[len];
    for (size_t k = 1; k < len; k++)
        cp = (cp << 6) | (u[k] & 0x3Fu);
    return cp;
}

/* A code point above U+007F as jansson's JSON_ENSURE_ASCII writes it: \uXXXX, a surrogate
 * pair above U+FFFF, upper-case hex. Returns the bytes written (6 or 12). */
static size_t put_ascii_escape(char *o, unsigned cp)
{
    if (cp < 0x10000) {
        snprintf(o, 7, "\\u%04X", cp);
        return 6;
    }
    cp -= 0x10000;
    snprintf(o, 13, "\\u%04X\\u%04X", 0xD800 | ((cp >> 10) & 0x3FF), 0xDC00 | (cp & 0x3FF));
    return 12;
}

static void put_string(ac_buf *b, const char *s, size_t n, unsigned flags)
{
    /* at most 6 bytes per input byte (a 4-byte sequence: 12), and the quotes */
    if (ac_buf_reserve(b, n * 6 + 2) != 0)
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80 && (flags & AC_JSON_ASCII)) {
            size_t len = ac_utf8_seq_len(s + i, n - i);
            if (!len) { /* not UTF-8: a JSON string never holds it */
                ac_buf_fail(b);
                return;
            }
            o += put_ascii_escape(o, decode((const unsigned char *)s + i, len));
            i += len - 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
            continue;
        }
        *o++ = '\\';
        switch (c) {
        case '"':
        case '\\':
            *o++ = (char)c;
            break;
        case '\b':
            *o++ = 'b';
            break;
        case '\f':
            *o++ = 'f';
            break;
        case '\n':
            *o++ = 'n';
            break;
        case '\r':
            *o++ = 'r';
            break;
        case '\t':
            *o++ = 't';
            break;
        default:
            snprintf(o, 6, "u%04X", c);
            o += 5;
        }
    }
    *o++ = '"';
    ac_buf_commit(b, (size_t)(o - (b->p + b->n)));
}

/* v in decimal, as %lld writes it, without printf's cost (the store writes several a
 * row). */
char *ac_json_digits(char *end, uint64_t v)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

void ac_json_put_int(ac_buf *b, int64_t v)
{
    char num[24];
    char *o = ac_json_digits(num + sizeof num, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--o = '-';
    ac_buf_add(b, o, (size_t)(num + sizeof num - o));
}

/* A real as jansson writes one with this precision: %.*g, a ".0" where it would read as an
 * integer, the exponent without '+' or leading zeros. */
static void put_real_prec(ac_buf *b, double d, int precision)
{
    char num[40];
    int n = snprintf(num, sizeof num - 2, "%.*g", precision, d); /* room left for ".0" */
    if (n > 0 && (size_t)n < sizeof num - 2 && !strpbrk(num, ".eni"))
        memcpy(num + n, ".0", 3);
    char *e = strchr(num, 'e');
    if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-')
            *to++ = *from++;
        else if (*from == '+')
            from++;
        while (*from == '0' && from[1])
            from++;
        memmove(to, from, strlen(from) + 1);
    }
    ac_buf_addstr(b, num);
}

/* A real as AC_JSON_REALS writes it (%.17g); without the flag the buffer failed: the caller
 * leaves the value to jansson. */
static void put_real(ac_buf *b, double d, unsigned flags)
{
    if (!(flags & AC_JSON_REALS)) {
        ac_buf_fail(b);
        return;
    }
    put_real_prec(b, d, 17);
}

static void put_value(ac_buf *b, const json_t *v, unsigned flags, int depth)
{
    if (b->failed)
        return;
    if (depth > 64) { /* deeper than any value agentc makes */
        ac_buf_fail(b);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        ac_buf_add(b, "{", 1);
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach((json_t *)v, k, x)
        {
            if (!first)
                ac_buf_add(b, ",", 1);
            first = 0;
            put_string(b, k, strlen(k), flags);
            ac_buf_add(b, ":", 1);
            put_value(b, x, flags, depth + 1);
        }
        ac_buf_add(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        ac_buf_add(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                ac_buf_add(b, ",", 1);
            put_value(b, json_array_get(v, i), flags, depth + 1);
        }
        ac_buf_add(b, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v), flags);
        break;
    case JSON_INTEGER:
        ac_json_put_int(b, (int64_t)json_integer_value(v));
        break;
    case JSON_TRUE:
        ac_buf_add(b, "true", 4);
        break;
    case JSON_FALSE:
        ac_buf_add(b, "false", 5);
        break;
    case JSON_NULL:
        ac_buf_add(b, "null", 4);
        break;
    default: /* a real */
        put_real(b, json_real_value(v), flags);
    }
}

void ac_json_put(ac_buf *b, const json_t *v, unsigned flags)
{
    put_value(b, v, flags, 0);
}

void ac_json_put_str(ac_buf *b, const char *s, size_t n)
{
    put_string(b, s ? s : "", s ? n : 0, 0);
}

void ac_json_put_string(ac_buf *b, const char *s, size_t n, unsigned flags)
{
    put_string(b, s ? s : "", s ? n : 0, flags);
}

void ac_json_put_real(ac_buf *b, double d)
{
    put_real(b, d, AC_JSON_REALS);
}

void ac_json_put_real_precision(ac_buf *b, double d, int precision)
{
    if (precision < 1 || precision > 17 || !isfinite(d)) {
        ac_buf_fail(b);
        return;
    }
    put_real_prec(b, d, precision);
}
