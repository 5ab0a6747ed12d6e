/*
 * payload.c - typed event payloads as JSON text and values (payload.h).
 */
#include "payload.h"

#include <string.h>

#include "llm/provider.h"
#include "session_int.h"
#include "util/json_text.h"

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

const ac_payload *ac_event_payload(const ac_session *s, const ac_event *ev)
{
    return s->payload && ev->type == s->payload_type ? s->payload : NULL;
}
