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
    ac_buf_add(b, "}", 1);
}

char *ac_payload_text(const ac_payload *p)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_payload_put(&b, p, 0);
    return ac_buf_take(&b, NULL);
}

json_t *ac_payload_json(const ac_payload *p)
{
    if (p->kind == AC_PAYLOAD_EMPTY)
        return json_object();
    if (p->kind != AC_PAYLOAD_DELTA)
        return NULL;
    json_t *d = json_object();
    if (!d || json_object_set_new_nocheck(d, "kind", json_string(ac_delta_kind_name(p->delta))) ||
        json_object_set_new_nocheck(d, "text", json_stringn(p->text, p->n))) {
        json_decref(d);
        return NULL;
    }
    return d;
}

const ac_payload *ac_event_payload(const ac_session *s, const ac_event *ev)
{
    return s->payload && ev->type == s->payload_type ? s->payload : NULL;
}
