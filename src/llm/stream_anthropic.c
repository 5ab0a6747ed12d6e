/* Decoder for Anthropic Messages API streams.
 *
 * Events: message_start (input usage), content_block_start / _delta / _stop for
 * text, thinking and tool_use blocks, message_delta (stop_reason, output usage),
 * message_stop (the terminator), ping, and error. The decoder reads the "type"
 * member of the data; the SSE event name is only a fallback. A tool call's index
 * is the order of its tool_use block among the tool_use blocks of the message. */
#include "llm/stream_internal.h"

#include <stdlib.h>
#include <string.h>

static int an_protocol(ac_stream *st, const char *what)
{
    return ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "Anthropic stream event: %s", what);
}

static long long an_int(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

/* Sums the prompt-side counters of a usage object into the turn, if it has any. */
static void an_usage(ac_stream *st, const json_t *usage)
{
    if (!json_is_object(usage))
        return;
    ac_stream_turn *t = ac_stream__turn(st);
    if (json_is_integer(json_object_get(usage, "input_tokens"))) {
        t->input_tokens = an_int(usage, "input_tokens") +
                          an_int(usage, "cache_creation_input_tokens") +
                          an_int(usage, "cache_read_input_tokens");
        if (json_is_integer(json_object_get(usage, "cache_read_input_tokens")))
            t->cached_tokens = an_int(usage, "cache_read_input_tokens");
        if (json_is_integer(json_object_get(usage, "cache_creation_input_tokens")))
            t->cache_write_tokens = an_int(usage, "cache_creation_input_tokens");
        t->have_usage = 1;
    }
    if (json_is_integer(json_object_get(usage, "output_tokens"))) {
        t->output_tokens = an_int(usage, "output_tokens");
        t->have_usage = 1;
    }
}

static int an_block_index(const json_t *root, int *out)
{
    const json_t *v = json_object_get(root, "index");
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
        return -1;
    *out = (int)json_integer_value(v);
    return 0;
}

static int an_block_start(ac_stream *st, const json_t *root)
{
    int bi;
    if (an_block_index(root, &bi) != 0)
        return an_protocol(st, "content_block_start without a valid index");
    const json_t *cb = json_object_get(root, "content_block");
    if (!json_is_object(cb))
        return an_protocol(st, "content_block_start without content_block");
    const char *type = ac_stream__str(cb, "type", NULL);
    if (!type)
        return an_protocol(st, "content block without type");
    size_t n;
    const char *s;
    if (strcmp(type, "text") == 0) {
        if (!ac_stream__block_add(st, bi, AC_BLOCK_TEXT))
            return -1;
        s = ac_stream__str(cb, "text", &n);
        return s ? ac_stream__text(st, s, n) : 0;
    }
    if (strcmp(type, "thinking") == 0 || strcmp(type, "redacted_thinking") == 0) {
        int redacted = type[0] == 'r';
        ac_stream_block *b = ac_stream__block_add(st, bi, AC_BLOCK_THINKING);
        if (!b)
            return -1;
        s = redacted ? ac_stream__str(cb, "data", &n) : NULL;
        int pos = ac_stream__thinking_start(st, redacted ? (s ? s : "") : NULL, s ? n : 0);
        if (pos < 0)
            return pos;
        b->think_pos = pos;
        if (redacted)
            return 0;
        s = ac_stream__str(cb, "signature", &n);
        int rc = s ? ac_stream__thinking_signature(st, pos, s, n) : 0;
        if (rc)
            return rc;
        s = ac_stream__str(cb, "thinking", &n);
        return s ? ac_stream__thinking_text(st, pos, s, n) : 0;
    }
    if (strcmp(type, "tool_use") == 0) {
        const char *id = ac_stream__str(cb, "id", NULL);
        const char *name = ac_stream__str(cb, "name", NULL);
        return ac_stream__tool_block(st, bi, id, name);
    }
    /* server tool blocks and future types are not assembled */
    return ac_stream__block_add(st, bi, AC_BLOCK_OTHER) ? 0 : -1;
}

static int an_block_delta(ac_stream *st, const json_t *root)
{
    int bi;
    if (an_block_index(root, &bi) != 0)
        return an_protocol(st, "content_block_delta without a valid index");
    const json_t *delta = json_object_get(root, "delta");
    if (!json_is_object(delta))
        return an_protocol(st, "content_block_delta without delta");
    const char *type = ac_stream__str(delta, "type", NULL);
    if (!type)
        return an_protocol(st, "delta without type");
    size_t n;
    const char *s;
    if (strcmp(type, "text_delta") == 0) {
        if (!(s = ac_stream__str(delta, "text", &n)))
            return an_protocol(st, "text_delta without text");
        return ac_stream__text(st, s, n);
    }
    if (strcmp(type, "thinking_delta") == 0 || strcmp(type, "signature_delta") == 0) {
        int sig = type[0] == 's';
        if (!(s = ac_stream__str(delta, sig ? "signature" : "thinking", &n)))
            return an_protocol(st, sig ? "signature_delta without signature"
                                       : "thinking_delta without thinking");
        ac_stream_block *b = ac_stream__block_find(st, bi);
        if (!b || b->kind != AC_BLOCK_THINKING)
            return an_protocol(st, sig ? "signature_delta for a block that is not thinking"
                                       : "thinking_delta for a block that is not thinking");
        return sig ? ac_stream__thinking_signature(st, b->think_pos, s, n)
                   : ac_stream__thinking_text(st, b->think_pos, s, n);
    }
    if (strcmp(type, "input_json_delta") == 0) {
        if (!(s = ac_stream__str(delta, "partial_json", &n)))
            return an_protocol(st, "input_json_delta without partial_json");
        ac_stream_block *b = ac_stream__block_find(st, bi);
        if (!b || b->kind != AC_BLOCK_TOOL)
            return an_protocol(st, "input_json_delta for a block that is not tool_use");
        if (n)
            b->got_args = 1;
        return ac_stream__tool_fragment(st, b->tool_pos, NULL, NULL, s, n);
    }
    return 0; /* citations_delta and future delta types */
}

static int an_block_stop(ac_stream *st, const json_t *root)
{
    int bi;
    if (an_block_index(root, &bi) != 0)
        return an_protocol(st, "content_block_stop without a valid index");
    ac_stream_block *b = ac_stream__block_find(st, bi);
    /* a tool called without arguments streams no input: its input is {} */
    if (b && b->kind == AC_BLOCK_TOOL && !b->got_args) {
        b->got_args = 1;
        return ac_stream__tool_fragment(st, b->tool_pos, NULL, NULL, "{}", 2);
    }
    return 0;
}

static int an_error(ac_stream *st, const json_t *root)
{
    const json_t *err = json_object_get(root, "error");
    const char *type = NULL, *msg = NULL;
    if (json_is_object(err)) {
        type = ac_stream__str(err, "type", NULL);
        msg = ac_stream__str(err, "message", NULL);
    }
    if (!type)
        type = "error";
    int retryable = strcmp(type, "overloaded_error") == 0 ||
                    strcmp(type, "rate_limit_error") == 0 || strcmp(type, "api_error") == 0;
    return ac_stream__provider_error(st, type, msg, retryable);
}

int ac_stream__anthropic_event(ac_stream *st, const ac_sse_event *ev)
{
    json_t *root = ac_stream__parse(st, ev);
    if (!root)
        return AC_STREAM_ERR_JSON;
    char evname[32];
    const char *type = ac_stream__str(root, "type", NULL);
    if (!type) {
        size_t n = ev->event_len < sizeof evname - 1 ? ev->event_len : sizeof evname - 1;
        memcpy(evname, ev->event, n);
        evname[n] = '\0';
        type = evname;
    }
    int rc = 0;
    if (strcmp(type, "message_start") == 0) {
        const json_t *msg = json_object_get(root, "message");
        an_usage(st, json_object_get(msg, "usage"));
        rc = ac_stream__set_response(st, ac_stream__str(msg, "id", NULL),
                                     ac_stream__str(msg, "model", NULL));
    } else if (strcmp(type, "content_block_start") == 0) {
        rc = an_block_start(st, root);
    } else if (strcmp(type, "content_block_delta") == 0) {
        rc = an_block_delta(st, root);
    } else if (strcmp(type, "content_block_stop") == 0) {
        rc = an_block_stop(st, root);
    } else if (strcmp(type, "message_delta") == 0) {
        const json_t *delta = json_object_get(root, "delta");
        const char *reason =
            json_is_object(delta) ? ac_stream__str(delta, "stop_reason", NULL) : NULL;
        if (reason && *reason)
            rc = ac_stream__set_finish(st, reason);
        an_usage(st, json_object_get(root, "usage"));
    } else if (strcmp(type, "message_stop") == 0) {
        ac_stream__terminate(st);
    } else if (strcmp(type, "error") == 0) {
        rc = an_error(st, root);
    }
    /* ping and unknown event types are ignored */
    json_decref(root);
    return rc;
}
