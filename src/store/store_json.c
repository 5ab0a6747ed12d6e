/*
 * store_json.c - the compact JSON text of an event's payload, for the store's journal rows
 * (store_json.h). jansson's json_dumps costs about ten thousand instructions for a payload
 * of a hundred bytes (a stream buffer, a callback per piece); this writer appends to one
 * growing buffer. It writes what json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes for
 * objects (in their order), arrays, strings, integers, booleans and null; a value holding a
 * real number is left to jansson, whose format for reals is the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_json.h"

typedef struct buf {
    char *p;
    size_t n, cap;
    int failed; /* out of memory, or a value this writer leaves to jansson */
} buf;

static int grow(buf *b, size_t more)
{
    if (b->failed)
        return -1;
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static void put(buf *b, const char *s, size_t n)
{
    if (grow(b, n) == 0) {
        memcpy(b->p + b->n, s, n);
        b->n += n;
    }
}

static void put_string(buf *b, const char *s, size_t n)
{
    /* at most 6 bytes per input byte, and the quotes */
    if (grow(b, n * 6 + 2) != 0)
        return;
    char *o = b->p + b->n;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
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
    b->n = (size_t)(o - b->p);
}

static void put_value(buf *b, json_t *v, int depth)
{
    if (b->failed)
        return;
    if (depth > 64) { /* deep values: jansson's own checks */
        b->failed = 1;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put(b, "{", 1);
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach(v, k, x)
        {
            if (!first)
                put(b, ",", 1);
            first = 0;
            put_string(b, k, strlen(k));
            put(b, ":", 1);
            put_value(b, x, depth + 1);
        }
        put(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                put(b, ",", 1);
            put_value(b, json_array_get(v, i), depth + 1);
        }
        put(b, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: {
        char num[32];
        int k = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        put(b, num, (size_t)k);
        break;
    }
    case JSON_TRUE:
        put(b, "true", 4);
        break;
    case JSON_FALSE:
        put(b, "false", 5);
        break;
    case JSON_NULL:
        put(b, "null", 4);
        break;
    default: /* a real */
        b->failed = 1;
    }
}

char *ac_store_json_text(json_t *v)
{
    buf b = {0};
    put_value(&b, v, 0);
    if (!b.failed && grow(&b, 1) == 0) {
        b.p[b.n] = 0;
        return b.p;
    }
    free(b.p);
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
