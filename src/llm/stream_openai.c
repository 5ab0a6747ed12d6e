/* Decoder for OpenAI-compatible Chat Completions streams.
 *
 * Each event's data is a chat.completion.chunk object, and "[DONE]" ends the
 * stream. Only choice 0 is assembled (with n > 1 servers interleave choices).
 * Servers differ in details this decoder accepts:
 *   - reasoning in delta.reasoning_content (DeepSeek, vLLM, llama.cpp) or
 *     delta.reasoning (OpenRouter, newer vLLM, Ollama);
 *   - tool calls in fragments keyed by index (OpenAI, vLLM, llama.cpp), or whole,
 *     several per chunk (Ollama), sometimes without index (then id, else position);
 *   - "usage": null on every chunk, usage in a last chunk with empty choices, or in
 *     x_groq.usage (Groq);
 *   - an error object inside a data chunk (OpenRouter: {"error": {...}}; vLLM:
 *     {"object": "error", ...}). */
#include "llm/stream_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int oa_protocol(ac_stream *st, const char *what)
{
    return ac_stream__fail(st, AC_STREAM_ERR_PROTOCOL, "OpenAI stream chunk: %s", what);
}

/* A string member that must be a string or null/absent; *bad set on other types. */
static const char *oa_opt_str(const json_t *obj, const char *key, size_t *n, int *bad)
{
    json_t *v = json_object_get(obj, key);
    *n = 0;
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *bad = 1;
        return NULL;
    }
    *n = json_string_length(v);
    return json_string_value(v);
}

static int oa_error(ac_stream *st, const json_t *root)
{
    const json_t *err = json_object_get(root, "error");
    const char *type = NULL, *msg = NULL;
    char code_buf[32] = "";
    if (json_is_object(err)) {
        type = ac_stream__str(err, "type", NULL);
        msg = ac_stream__str(err, "message", NULL);
        json_t *code = json_object_get(err, "code");
        if (json_is_integer(code))
            snprintf(code_buf, sizeof code_buf, "%lld", (long long)json_integer_value(code));
        else if (json_is_string(code))
            snprintf(code_buf, sizeof code_buf, "%s", json_string_value(code));
    } else if (json_is_string(err)) {
        msg = json_string_value(err);
    } else {
        /* vLLM: {"object": "error", "message": ..., "type": ..., "code": ...} */
        type = ac_stream__str(root, "type", NULL);
        msg = ac_stream__str(root, "message", NULL);
        json_t *code = json_object_get(root, "code");
        if (json_is_integer(code))
            snprintf(code_buf, sizeof code_buf, "%lld", (long long)json_integer_value(code));
    }
    if (!type || !*type)
        type = code_buf[0] ? code_buf : "error";
    int retryable = ac_stream__retryable_text(type) || ac_stream__retryable_text(code_buf) ||
                    ac_stream__retryable_text(msg);
    return ac_stream__provider_error(st, type, msg, retryable);
}

static int oa_tool_calls(ac_stream *st, const json_t *arr)
{
    size_t i;
    json_t *tc;
    json_array_foreach(arr, i, tc)
    {
        if (!json_is_object(tc))
            return oa_protocol(st, "tool_calls element is not an object");
        const char *id = ac_stream__str(tc, "id", NULL);
        const json_t *fn = json_object_get(tc, "function");
        const char *name = NULL;
        const char *args = NULL;
        size_t args_len = 0;
        char *owned = NULL;
        if (json_is_object(fn)) {
            name = ac_stream__str(fn, "name", NULL);
            json_t *a = json_object_get(fn, "arguments");
            if (json_is_string(a)) {
                args = json_string_value(a);
                args_len = json_string_length(a);
            } else if (json_is_object(a) || json_is_array(a)) {
                /* some servers send the arguments as a JSON value, not a string */
                owned = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!owned)
                    return ac_stream__fail(st, AC_STREAM_ERR_NOMEM, "out of memory");
                args = owned;
                args_len = strlen(owned);
            } else if (a && !json_is_null(a)) {
                return oa_protocol(st, "function.arguments is not a string");
            }
        } else if (fn && !json_is_null(fn)) {
            return oa_protocol(st, "tool call function is not an object");
        }
        json_t *jidx = json_object_get(tc, "index");
        int index;
        if (json_is_integer(jidx)) {
            json_int_t v = json_integer_value(jidx);
            index = v < 0 || v >= AC_STREAM_MAX_TOOL_CALLS ? -1 : (int)v;
            if (index < 0) {
                free(owned);
                return oa_protocol(st, "tool call index out of range");
            }
        } else {
            /* no index: a known id names its call, a new id starts the next one,
             * and without an id the position in this chunk decides */
            int pos = id && *id ? ac_stream__tool_call_by_id(st, id) : -1;
            if (pos >= 0)
                index = ac_stream__turn(st)->tool_calls[pos].index;
            else if (id && *id)
                index = ac_stream__tool_max_index(st) + 1;
            else
                index = (int)i;
        }
        int pos = ac_stream__tool_call(st, index);
        int rc = pos < 0 ? pos : ac_stream__tool_fragment(st, pos, id, name, args, args_len);
        free(owned);
        if (rc)
            return rc;
    }
    return 0;
}

static int oa_choice(ac_stream *st, const json_t *choice)
{
    int bad = 0;
    size_t n;
    const char *s;
    int rc;
    const json_t *delta = json_object_get(choice, "delta");
    if (json_is_object(delta)) {
        s = oa_opt_str(delta, "reasoning_content", &n, &bad);
        if (!s || !n) {
            /* "reasoning" is read leniently: some servers put other shapes there */
            int ignored = 0;
            size_t n2;
            const char *s2 = oa_opt_str(delta, "reasoning", &n2, &ignored);
            if (s2) {
                s = s2;
                n = n2;
            }
        }
        if (s && (rc = ac_stream__reasoning(st, s, n)))
            return rc;
        s = oa_opt_str(delta, "content", &n, &bad);
        if (s && (rc = ac_stream__text(st, s, n)))
            return rc;
        s = oa_opt_str(delta, "refusal", &n, &bad);
        if (s && (rc = ac_stream__refusal(st, s, n)))
            return rc;
        if (bad)
            return oa_protocol(st, "delta member of the wrong type");
        const json_t *tcs = json_object_get(delta, "tool_calls");
        if (json_is_array(tcs)) {
            if ((rc = oa_tool_calls(st, tcs)))
                return rc;
        } else if (tcs && !json_is_null(tcs)) {
            return oa_protocol(st, "delta.tool_calls is not an array");
        }
    } else if (delta && !json_is_null(delta)) {
        return oa_protocol(st, "choice delta is not an object");
    }
    s = oa_opt_str(choice, "finish_reason", &n, &bad);
    if (bad)
        return oa_protocol(st, "finish_reason is not a string");
    if (s && n && (rc = ac_stream__set_finish(st, s)))
        return rc;
    return 0;
}

static int oa_usage(ac_stream *st, const json_t *usage)
{
    ac_stream_turn *t = ac_stream__turn(st);
    const json_t *in = json_object_get(usage, "prompt_tokens");
    const json_t *out = json_object_get(usage, "completion_tokens");
    if (!json_is_integer(in) && !json_is_integer(out))
        return 0;
    if (json_is_integer(in))
        t->input_tokens = json_integer_value(in);
    if (json_is_integer(out))
        t->output_tokens = json_integer_value(out);
    const json_t *cached =
        json_object_get(json_object_get(usage, "prompt_tokens_details"), "cached_tokens");
    const json_t *reasoning =
        json_object_get(json_object_get(usage, "completion_tokens_details"), "reasoning_tokens");
    if (json_is_integer(cached))
        t->cached_tokens = json_integer_value(cached);
    if (json_is_integer(reasoning))
        t->reasoning_tokens = json_integer_value(reasoning);
    t->have_usage = 1;
    return 0;
}

int ac_stream__openai_event(ac_stream *st, const ac_sse_event *ev)
{
    /* "[DONE]", tolerating surrounding blanks */
    const char *d = ev->data;
    size_t n = ev->data_len;
    while (n && (*d == ' ' || *d == '\t'))
        d++, n--;
    while (n && (d[n - 1] == ' ' || d[n - 1] == '\t' || d[n - 1] == '\r' || d[n - 1] == '\n'))
        n--;
    if (n == 6 && memcmp(d, "[DONE]", 6) == 0) {
        ac_stream__terminate(st);
        return 0;
    }
    json_t *root = ac_stream__parse(st, ev);
    if (!root)
        return AC_STREAM_ERR_JSON;
    int rc = 0;
    const char *object = ac_stream__str(root, "object", NULL);
    /* an error object, or a non-empty error text ("error": null is no error) */
    const json_t *err = json_object_get(root, "error");
    if (json_is_object(err) || (json_is_string(err) && json_string_length(err) > 0) ||
        (object && strcmp(object, "error") == 0)) {
        if ((rc = oa_error(st, root)))
            goto out;
    }
    if (!ac_stream__turn(st)->response_read &&
        (rc = ac_stream__set_response(st, ac_stream__str(root, "id", NULL),
                                      ac_stream__str(root, "model", NULL))))
        goto out;
    const json_t *choices = json_object_get(root, "choices");
    if (json_is_array(choices)) {
        size_t i;
        json_t *c;
        json_array_foreach(choices, i, c)
        {
            if (!json_is_object(c)) {
                rc = oa_protocol(st, "choice is not an object");
                goto out;
            }
            const json_t *idx = json_object_get(c, "index");
            int is_first = json_is_integer(idx) ? json_integer_value(idx) == 0 : i == 0;
            if (!is_first)
                continue;
            if ((rc = oa_choice(st, c)))
                goto out;
            break;
        }
    } else if (choices && !json_is_null(choices)) {
        rc = oa_protocol(st, "choices is not an array");
        goto out;
    }
    const json_t *usage = json_object_get(root, "usage");
    if (!json_is_object(usage)) {
        const json_t *xg = json_object_get(root, "x_groq");
        usage = json_is_object(xg) ? json_object_get(xg, "usage") : NULL;
    }
    if (json_is_object(usage))
        rc = oa_usage(st, usage);
out:
    json_decref(root);
    return rc;
}
