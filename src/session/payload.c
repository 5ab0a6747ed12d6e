/*
 * payload.c - typed event payloads as JSON text and values (payload.h).
 */
#include "payload.h"

#include <string.h>

#include "llm/provider.h"
#include "session_int.h"
#include "util/json_text.h"
#include "util/utf8.h"

void ac_payload_put(ac_buf *b, const ac_payload *p, unsigned flags)
{
    if (p->kind == AC_PAYLOAD_EMPTY) {
        ac_buf_add(b, "{}", 2);
        return;
    }
    if (p->kind != AC_PAYLOAD_DELTA) {
        ac_buf_fail(b);
        return;
    }
    ac_buf_addstr(b, "{\"kind\":");
    const char *kind = ac_delta_kind_name(p->delta);
    ac_json_put_string(b, kind, strlen(kind), flags);
    ac_buf_addstr(b, ",\"text\":");
    ac_json_put_string(b, p->text, p->n, flags);
    if (p->delta == AC_DELTA_TOOL_CALL) {
        ac_buf_printf(b, ",\"index\":%d", p->index);
        if (p->id) {
            ac_buf_addstr(b, ",\"id\":");
            ac_json_put_string(b, p->id, p->id_n, flags);
        }
        if (p->name) {
            ac_buf_addstr(b, ",\"name\":");
            ac_json_put_string(b, p->name, p->name_n, flags);
        }
    }
    ac_buf_add(b, "}", 1);
}

char *ac_payload_text(const ac_payload *p)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_payload_put(&b, p, 0);
    return ac_buf_take(&b, NULL);
}

/* Sets key to a new JSON value (NULL: out of memory): 0, or -1. */
static int put(json_t *d, const char *key, json_t *v)
{
    return json_object_set_new_nocheck(d, key, v);
}

json_t *ac_payload_json(const ac_payload *p)
{
    if (p->kind == AC_PAYLOAD_EMPTY)
        return json_object();
    if (p->kind != AC_PAYLOAD_DELTA)
        return NULL;
    json_t *d = json_object();
    int bad = !d || put(d, "kind", json_string(ac_delta_kind_name(p->delta))) ||
              put(d, "text", json_stringn(p->text, p->n));
    if (!bad && p->delta == AC_DELTA_TOOL_CALL)
        bad = put(d, "index", json_integer(p->index)) ||
              (p->id && put(d, "id", json_stringn(p->id, p->id_n))) ||
              (p->name && put(d, "name", json_stringn(p->name, p->name_n)));
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

/* The JSON string body at *s (after its opening quote, up to len bytes) unescaped into b,
 * *s moved past its closing quote: 0, or -1 (see ac_payload_read_delta). */
static int read_string(const char **s, const char *end, ac_buf *b)
{
    const char *c = *s;
    while (c < end && *c != '"') {
        const char *run = c;
        while (c < end && *c != '"' && *c != '\\' && (unsigned char)*c >= 0x20)
            c++;
        ac_buf_add(b, run, (size_t)(c - run));
        if (c >= end || *c == '"')
            break;
        if (*c != '\\' || c + 1 >= end)
            return -1; /* a raw control character */
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = strchr(from, c[1]);
        if (e && c[1]) {
            ac_buf_add(b, &to[e - from], 1);
            c += 2;
            continue;
        }
        unsigned v = 0;
        for (int i = 2; i < 6 && c[1] == 'u' && end - c >= 6; i++) {
            const char *hex = "0123456789abcdef0123456789ABCDEF", *h = strchr(hex, c[i]);
            v = h && c[i] ? v * 16 + (unsigned)((h - hex) % 16) : 0x10000;
        }
        if (c[1] != 'u' || end - c < 6 || v == 0 || v > 0x7f)
            return -1;
        char ch = (char)v;
        ac_buf_add(b, &ch, 1);
        c += 6;
    }
    if (c >= end)
        return -1;
    *s = c + 1;
    return b->failed ? -1 : 0;
}

int ac_payload_read_delta(const char *s, size_t len, ac_payload *p, ac_buf *scratch)
{
    static const char head[] = "{\"kind\":\"", mid[] = ",\"text\":\"";
    const char *end = s + len;
    if (len < sizeof head - 1 || memcmp(s, head, sizeof head - 1))
        return -1;
    s += sizeof head - 1;
    int kind = -1;
    for (int k = AC_DELTA_TEXT; k < AC_DELTA_TOOL_CALL && kind < 0; k++) {
        size_t kl = strlen(ac_delta_kind_name(k));
        if ((size_t)(end - s) > kl && !memcmp(s, ac_delta_kind_name(k), kl) && s[kl] == '"')
            kind = k;
    }
    if (kind < 0)
        return -1;
    s += strlen(ac_delta_kind_name(kind)) + 1;
    if ((size_t)(end - s) < sizeof mid - 1 || memcmp(s, mid, sizeof mid - 1))
        return -1;
    s += sizeof mid - 1;
    ac_buf_clear(scratch);
    if (read_string(&s, end, scratch) < 0 || end - s != 1 || *s != '}' ||
        ac_utf8_valid_len(scratch->p, scratch->n) != scratch->n)
        return -1;
    *p = (ac_payload){.kind = AC_PAYLOAD_DELTA,
                      .delta = (uint8_t)kind,
                      .n = scratch->n,
                      .text = scratch->p ? scratch->p : ""};
    return 0;
}

const ac_payload *ac_event_payload(const ac_session *s, const ac_event *ev)
{
    return s->payload && ev->type == s->payload_type ? s->payload : NULL;
}
