/* span.c - the span model (span.h): typed attributes in arrays, strings in an arena, the
 * OTLP/JSON text written once, at export. */
#include "obs/span.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/json_text.h"
#include "util/random.h"

/* Random bytes read ahead in blocks: ids are many and small. Loop thread only. */
static void id_bytes(unsigned char *out, size_t n)
{
    static unsigned char pool[512];
    static size_t left;
    if (left < n) {
        ac_random_bytes(pool, sizeof pool);
        left = sizeof pool;
    }
    memcpy(out, pool + sizeof pool - left, n);
    left -= n;
}

/* a byte's two hex digits at 2 * byte */
static const char hex_pairs[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
                                "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
                                "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                                "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
                                "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
                                "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
                                "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
                                "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

void ac_span_random_hex(char *out, size_t bytes)
{
    unsigned char b[16] = {0};
    if (bytes > sizeof b)
        bytes = sizeof b;
    id_bytes(b, bytes);
    int zero = 1;
    for (size_t i = 0; i < bytes; i++)
        zero &= b[i] == 0;
    if (zero)
        b[0] = 1; /* an all-zero id is invalid */
    for (size_t i = 0; i < bytes; i++)
        memcpy(out + 2 * i, hex_pairs + 2 * b[i], 2);
    out[2 * bytes] = 0;
}

/* n lower-case hex digits at s, not all zero */
static int hex_id(const char *s, size_t n)
{
    int nonzero = 0;
    for (size_t i = 0; i < n; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
        nonzero |= s[i] != '0';
    }
    return nonzero;
}

int ac_traceparent_parse(const char *h, char trace_id[33], char span_id[17], char flags[3])
{
    /* version "-" trace id "-" parent id "-" flags: 55 bytes; a later version may add more
     * after a '-' */
    size_t n = h ? strlen(h) : 0;
    if (n < 55 || (n > 55 && (h[55] != '-' || !strncmp(h, "00", 2))) || h[2] != '-' ||
        h[35] != '-' || h[52] != '-')
        return 0;
    int version = (hex_id(h, 2) || !strncmp(h, "00", 2)) && strncmp(h, "ff", 2) != 0;
    int flags_ok = hex_id(h + 53, 2) || !strncmp(h + 53, "00", 2);
    if (!version || !flags_ok || !hex_id(h + 3, 32) || !hex_id(h + 36, 16))
        return 0;
    memcpy(trace_id, h + 3, 32);
    trace_id[32] = 0;
    memcpy(span_id, h + 36, 16);
    span_id[16] = 0;
    memcpy(flags, h + 53, 2);
    flags[2] = 0;
    return 1;
}

/* n bytes of s and a NUL into the arena: its offset (0, the empty string, when out of room) */
static uint32_t keep(ac_span *sp, const char *s, size_t n)
{
    size_t at = sp->arena.n;
    if (!s || !n || at > UINT32_MAX - n - 1 ||
        (at + n + 1 >= sp->arena.cap && ac_buf_reserve(&sp->arena, n + 1)))
        return 0;
    memcpy(sp->arena.p + at, s, n);
    sp->arena.p[at + n] = 0;
    ac_buf_commit(&sp->arena, n + 1);
    return (uint32_t)at;
}

static uint32_t keeps(ac_span *sp, const char *s)
{
    return s ? keep(sp, s, strlen(s)) : 0;
}

ac_span *ac_span_start(ac_span *blank, const char *trace_id, const char *parent_id,
                       const char *name, int kind, int64_t start_ms)
{
    ac_span *sp = blank ? blank : calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    if (!blank) {
        ac_buf_init(&sp->arena, AC_BUF_MAX);
        ac_buf_reserve(&sp->arena, 480); /* a span's strings, mostly: one allocation */
        ac_grow((void **)&sp->kv, &sp->kvcap, 16, sizeof *sp->kv);
    }
    ac_buf_add(&sp->arena, "", 1); /* offset 0: "" */
    if (trace_id && strlen(trace_id) == 32)
        memcpy(sp->trace_id, trace_id, 33);
    else
        ac_span_random_hex(sp->trace_id, 16);
    ac_span_random_hex(sp->span_id, 8);
    if (parent_id && strlen(parent_id) == 16)
        memcpy(sp->parent_id, parent_id, 17);
    sp->kind = kind;
    sp->start_ms = start_ms;
    sp->name = keeps(sp, name);
    if (sp->arena.failed) {
        ac_span_free(sp);
        return NULL;
    }
    return sp;
}

void ac_span_rename(ac_span *sp, const char *name)
{
    if (sp)
        sp->name = keeps(sp, name);
}

static ac_span_kv *add_kv(ac_span *sp, const char *key, int type)
{
    if (sp->nkv == sp->kvcap && ac_grow((void **)&sp->kv, &sp->kvcap, sp->nkv + 1, sizeof *sp->kv))
        return NULL;
    ac_span_kv *kv = &sp->kv[sp->nkv++];
    memset(kv, 0, sizeof *kv);
    kv->key = key ? key : "";
    kv->type = (uint8_t)type;
    return kv;
}

void ac_span_strn(ac_span *sp, const char *key, const char *v, size_t n)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_STR) : NULL;
    if (kv) {
        kv->val = keep(sp, v, v ? n : 0);
        kv->len = kv->val ? (uint32_t)(v ? n : 0) : 0;
    }
}

void ac_span_str(ac_span *sp, const char *key, const char *v)
{
    ac_span_strn(sp, key, v, v ? strlen(v) : 0);
}

void ac_span_int(ac_span *sp, const char *key, int64_t v)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_INT) : NULL;
    if (kv)
        kv->num.i = v;
}

void ac_span_double(ac_span *sp, const char *key, double v)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_DOUBLE) : NULL;
    if (kv)
        kv->num.d = v;
}

void ac_span_ms(ac_span *sp, const char *key, int64_t ms)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_MS) : NULL;
    if (kv)
        kv->num.i = ms;
}

void ac_span_bool(ac_span *sp, const char *key, int v)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_BOOL) : NULL;
    if (kv)
        kv->num.i = v != 0;
}

void ac_span_strs(ac_span *sp, const char *key, const char *const *v, size_t n)
{
    ac_span_kv *kv = sp ? add_kv(sp, key, AC_ATTR_STRS) : NULL;
    if (!kv)
        return;
    size_t at = sp->arena.n;
    for (size_t i = 0; i < n; i++)
        if (ac_buf_add(&sp->arena, v[i] ? v[i] : "", (v[i] ? strlen(v[i]) : 0) + 1))
            return;
    kv->val = (uint32_t)at;
    kv->len = (uint32_t)n;
}

void ac_span_event(ac_span *sp, const char *name, int64_t t_ms, const char *attrs, size_t n,
                   const char *ms_key, int64_t ms)
{
    if (!sp)
        return;
    if (sp->nev >= AC_SPAN_MAX_EVENTS || !attrs || n > UINT32_MAX ||
        (sp->nev == sp->evcap &&
         ac_grow((void **)&sp->ev, &sp->evcap, sp->nev < 16 ? 16 : sp->nev + 1, sizeof *sp->ev))) {
        sp->dropped_events++;
        return;
    }
    sp->ev[sp->nev++] =
        (ac_span_ev){t_ms, name ? name : "", attrs, ms_key ? ms_key : "", (uint32_t)n, ms};
}

void ac_span_error(ac_span *sp, const char *message)
{
    if (!sp)
        return;
    sp->error = 1;
    sp->status = keeps(sp, message);
}

ac_span *ac_span_end(ac_span *sp, int64_t end_ms)
{
    if (sp)
        sp->end_ms = end_ms;
    return sp;
}

int ac_span_clear(ac_span *sp)
{
    if (!sp || sp->arena.cap > 4096 || sp->kvcap > 64 || sp->evcap > AC_SPAN_MAX_EVENTS)
        return 0; /* grown past the common: not kept */
    ac_buf arena = sp->arena;
    ac_span_kv *kv = sp->kv;
    ac_span_ev *ev = sp->ev;
    size_t kvcap = sp->kvcap, evcap = sp->evcap;
    memset(sp, 0, sizeof *sp);
    ac_buf_clear(&arena);
    sp->arena = arena;
    sp->kv = kv;
    sp->kvcap = kvcap;
    sp->ev = ev;
    sp->evcap = evcap;
    return 1;
}

void ac_span_free(ac_span *sp)
{
    if (!sp)
        return;
    free(sp->kv);
    free(sp->ev);
    ac_buf_free(&sp->arena);
    free(sp);
}

/* ---- the OTLP/JSON text ---- */

static const char *at(const ac_span *sp, uint32_t off)
{
    return sp->arena.p + off;
}

/* Bytes written at b's end, room reserved before (ac_buf_reserve); ac_buf_commit(b, 0) ends
 * the text. */
static void raw(ac_buf *b, const char *s, size_t n)
{
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

#define RAW(b, s) raw((b), s, sizeof s - 1)

/* v in decimal, then ns zeros ("000000": milliseconds as nanoseconds) */
/* "00".."99": two decimal digits at 2 * n */
static const char dec_pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";

static void raw_i64(ac_buf *b, int64_t v, int zeros)
{
    char d[24];
    int k = (int)sizeof d;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    while (u >= 100) {
        k -= 2;
        memcpy(d + k, dec_pairs + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10) {
        k -= 2;
        memcpy(d + k, dec_pairs + 2 * u, 2);
    } else
        d[--k] = (char)('0' + u);
    if (v < 0)
        b->p[b->n++] = '-';
    memcpy(b->p + b->n, d + k, sizeof d - (size_t)k);
    b->n += sizeof d - (size_t)k;
    for (; zeros > 0; zeros--)
        b->p[b->n++] = '0';
}

/* The seconds of the last time written as nanoseconds, their digits kept: a span's times are
 * mostly in the same second. */
typedef struct time_text {
    int64_t sec;
    char text[32];
    size_t n;
} time_text;

/* ms milliseconds as a nanosecond string's digits (room reserved; < 0 as 0) */
static void raw_ns(ac_buf *b, int64_t ms, time_text *c)
{
    if (ms < 1000) { /* no seconds to keep */
        raw_i64(b, ms > 0 ? ms : 0, 6);
        return;
    }
    int64_t sec = ms / 1000;
    int f = (int)(ms % 1000);
    if (sec != c->sec || !c->n) {
        ac_buf t = {c->text, 0, sizeof c->text, sizeof c->text - 1, 0};
        raw_i64(&t, sec, 0);
        c->sec = sec;
        c->n = t.n;
    }
    raw(b, c->text, c->n);
    b->p[b->n++] = (char)('0' + f / 100);
    memcpy(b->p + b->n, dec_pairs + 2 * (f % 100), 2);
    memcpy(b->p + b->n + 2, "000000", 6);
    b->n += 8;
}

/* ms milliseconds as seconds: "1.25", "0.005", "3.0" (reads back as ms / 1000.0) */
static void raw_secs(ac_buf *b, int64_t ms)
{
    if (ms < 0) {
        b->p[b->n++] = '-';
        ms = -ms;
    }
    raw_i64(b, ms / 1000, 0);
    int f = (int)(ms % 1000);
    b->p[b->n++] = '.';
    b->p[b->n++] = (char)('0' + f / 100);
    if (f % 100) {
        b->p[b->n++] = (char)('0' + f / 10 % 10);
        if (f % 10)
            b->p[b->n++] = (char)('0' + f % 10);
    }
}

/* a key or an event name, quoted: literals that need no escaping (span.h) */
static void raw_str(ac_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (ac_buf_reserve(b, n + 2))
        return;
    b->p[b->n++] = '"';
    raw(b, s, n);
    b->p[b->n++] = '"';
}

/* An attribute's object, a comma before it unless first */
static void put_kv(ac_buf *b, const ac_span *sp, const ac_span_kv *kv, int first)
{
    size_t klen = strlen(kv->key);
    if (ac_buf_reserve(b, 160 + klen))
        return;
    if (!first)
        RAW(b, ",");
    RAW(b, "{\"key\":\"");
    raw(b, kv->key, klen);
    switch (kv->type) {
    case AC_ATTR_STR:
        RAW(b, "\",\"value\":{\"stringValue\":");
        ac_buf_commit(b, 0);
        ac_json_put_str(b, at(sp, kv->val), kv->len);
        ac_buf_add(b, "}}", 2);
        return;
    case AC_ATTR_INT: /* int64 is a string in OTLP/JSON */
        RAW(b, "\",\"value\":{\"intValue\":\"");
        raw_i64(b, kv->num.i, 0);
        RAW(b, "\"");
        break;
    case AC_ATTR_MS:
        RAW(b, "\",\"value\":{\"doubleValue\":");
        raw_secs(b, kv->num.i);
        break;
    case AC_ATTR_DOUBLE:
        RAW(b, "\",\"value\":{\"doubleValue\":");
        ac_buf_commit(b, 0);
        ac_json_put_real(b, kv->num.d);
        ac_buf_add(b, "}}", 2);
        return;
    case AC_ATTR_BOOL:
        if (kv->num.i)
            RAW(b, "\",\"value\":{\"boolValue\":true");
        else
            RAW(b, "\",\"value\":{\"boolValue\":false");
        break;
    default: {
        RAW(b, "\",\"value\":{\"arrayValue\":{\"values\":[");
        ac_buf_commit(b, 0);
        const char *s = at(sp, kv->val);
        for (uint32_t i = 0; i < kv->len; i++) {
            ac_buf_add(b, "{\"stringValue\":", 15);
            ac_json_put_str(b, s, strlen(s));
            ac_buf_add(b, i + 1 < kv->len ? "}," : "}", i + 1 < kv->len ? 2 : 1);
            s += strlen(s) + 1;
        }
        ac_buf_add(b, "]}}}", 4);
        return;
    }
    }
    RAW(b, "}}");
    ac_buf_commit(b, 0);
}

static void put_events(ac_buf *b, const ac_span *sp, time_text *tc)
{
    ac_buf_add(b, ",\"events\":[", 11);
    for (size_t i = 0; i < sp->nev; i++) {
        const ac_span_ev *e = &sp->ev[i];
        size_t na = e->attrs_n;
        if (ac_buf_reserve(b, 192 + strlen(e->name) + na + strlen(e->ms_key)))
            return;
        RAW(b, "{\"name\":");
        raw_str(b, e->name);
        RAW(b, ",\"timeUnixNano\":\"");
        raw_ns(b, e->t_ms, tc);
        RAW(b, "\",\"attributes\":[");
        raw(b, e->attrs, na);
        if (e->ms >= 0) {
            RAW(b, ",{\"key\":");
            raw_str(b, e->ms_key);
            RAW(b, ",\"value\":{\"doubleValue\":");
            raw_secs(b, e->ms);
            RAW(b, "}}");
        }
        RAW(b, "]}");
        if (i + 1 < sp->nev)
            RAW(b, ",");
        ac_buf_commit(b, 0);
    }
    ac_buf_add(b, "]", 1);
}

/* ids, name, kind and times */
static void put_head(ac_buf *b, const ac_span *sp, time_text *tc)
{
    if (ac_buf_reserve(b, 160))
        return;
    RAW(b, "{\"traceId\":\"");
    raw(b, sp->trace_id, 32);
    RAW(b, "\",\"spanId\":\"");
    raw(b, sp->span_id, 16);
    if (sp->parent_id[0]) {
        RAW(b, "\",\"parentSpanId\":\"");
        raw(b, sp->parent_id, 16);
    }
    RAW(b, "\",\"name\":");
    ac_buf_commit(b, 0);
    ac_json_put_str(b, at(sp, sp->name), strlen(at(sp, sp->name)));
    if (ac_buf_reserve(b, 192))
        return;
    RAW(b, ",\"kind\":");
    raw_i64(b, sp->kind, 0);
    RAW(b, ",\"startTimeUnixNano\":\"");
    raw_ns(b, sp->start_ms, tc);
    RAW(b, "\",\"endTimeUnixNano\":\"");
    raw_ns(b, sp->end_ms, tc);
    RAW(b, "\",\"attributes\":[");
    ac_buf_commit(b, 0);
}

void ac_span_put(ac_buf *b, const ac_span *sp)
{
    time_text tc = {0};
    put_head(b, sp, &tc);
    for (size_t i = 0; i < sp->nkv; i++)
        put_kv(b, sp, &sp->kv[i], i == 0);
    ac_buf_add(b, "]", 1);
    if (sp->nev)
        put_events(b, sp, &tc);
    if (sp->dropped_events)
        ac_buf_printf(b, ",\"droppedEventsCount\":%" PRIu32, sp->dropped_events);
    if (sp->error) {
        ac_buf_addstr(b, ",\"status\":{\"code\":2,\"message\":");
        ac_json_put_str(b, at(sp, sp->status), strlen(at(sp, sp->status)));
        ac_buf_add(b, "}", 1);
    }
    ac_buf_add(b, "}", 1);
}
