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
#include "util/buf.h"

static void put_string(ac_buf *b, const char *s, size_t n)
{
    /* at most 6 bytes per input byte, and the quotes */
    if (ac_buf_reserve(b, n * 6 + 2) != 0)
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
    ac_buf_commit(b, (size_t)(o - (b->p + b->n)));
}

static void put_value(ac_buf *b, json_t *v, int depth)
{
    if (b->failed)
        return;
    if (depth > 64) {   /* deep values: jansson's own checks */
        ac_buf_fail(b); /* left to jansson */
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        ac_buf_add(b, "{", 1);
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach(v, k, x)
        {
            if (!first)
                ac_buf_add(b, ",", 1);
            first = 0;
            put_string(b, k, strlen(k));
            ac_buf_add(b, ":", 1);
            put_value(b, x, depth + 1);
        }
        ac_buf_add(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        ac_buf_add(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                ac_buf_add(b, ",", 1);
            put_value(b, json_array_get(v, i), depth + 1);
        }
        ac_buf_add(b, "]", 1);
        break;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: {
        char num[32];
        int k = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        ac_buf_add(b, num, (size_t)k);
        break;
    }
    case JSON_TRUE:
        ac_buf_add(b, "true", 4);
        break;
    case JSON_FALSE:
        ac_buf_add(b, "false", 5);
        break;
    case JSON_NULL:
        ac_buf_add(b, "null", 4);
        break;
    default:            /* a real */
        ac_buf_fail(b); /* left to jansson */
    }
}

char *ac_store_json_text(json_t *v)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    put_value(&b, v, 0);
    char *s = ac_buf_take(&b, NULL);
    return s ? s : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
