/* What the model sees of a tools/call result: text blocks joined by newlines,
 * structuredContent as compact JSON (unless a text block already carries the
 * same JSON, or the same text as a structuredContent of one string member, as
 * the filesystem server's {"content": TEXT} beside TEXT), other blocks (image, audio, resources,
 * anything newer) described by type and size instead of dropped; isError makes it a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "util/buf.h"

static void sep(ac_buf *b)
{
    if (b->n)
        ac_buf_add(b, "\n", 1);
}

/* Bytes a base64 string decodes to. */
static size_t b64_size(const char *s)
{
    size_t n = s ? strlen(s) : 0, r = n % 4, d = n / 4 * 3 + (r == 2 ? 1 : r == 3 ? 2 : 0);
    for (size_t k = n; r == 0 && k > 0 && k + 2 >= n && s[k - 1] == '='; k--)
        d--;
    return d;
}

static const char *str(const json_t *o, const char *k, const char *def)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : def;
}

static void describe(ac_buf *b, const json_t *blk)
{
    char line[600];
    const char *type = str(blk, "type", "(untyped)");
    if (!strcmp(type, "image") || !strcmp(type, "audio")) {
        snprintf(line, sizeof line, "[%s content: %s, %zu bytes, not shown]", type,
                 str(blk, "mimeType", "unknown type"), b64_size(str(blk, "data", "")));
    } else if (!strcmp(type, "resource_link")) {
        snprintf(line, sizeof line, "[resource link: %.300s%s%.100s%s]", str(blk, "uri", "?"),
                 json_object_get(blk, "name") ? " (" : "", str(blk, "name", ""),
                 json_object_get(blk, "name") ? ")" : "");
    } else if (!strcmp(type, "resource")) {
        const json_t *r = json_object_get(blk, "resource");
        const char *text = json_string_value(json_object_get(r, "text"));
        if (text) {
            snprintf(line, sizeof line, "[resource %.300s]\n", str(r, "uri", "?"));
            ac_buf_addstr(b, line);
            ac_buf_addstr(b, text);
            return;
        }
        snprintf(line, sizeof line, "[resource %.300s: %s, %zu bytes, not shown]",
                 str(r, "uri", "?"), str(r, "mimeType", "unknown type"),
                 b64_size(str(r, "blob", "")));
    } else {
        char *j = json_dumps(blk, JSON_COMPACT);
        snprintf(line, sizeof line, "[%.60s content block, %zu bytes of JSON, not shown]", type,
                 j ? strlen(j) : 0);
        free(j);
    }
    ac_buf_addstr(b, line);
}

/* Whether the text block t already carries structuredContent sc. */
static int carries(const char *t, const json_t *sc)
{
    if (json_is_object(sc) && json_object_size(sc) == 1) {
        const char *v = json_string_value(json_object_iter_value(json_object_iter((json_t *)sc)));
        if (v && !strcmp(v, t))
            return 1;
    }
    json_t *parsed = json_loads(t, JSON_DECODE_ANY, NULL);
    int same = parsed && json_equal(parsed, sc);
    json_decref(parsed);
    return same;
}

char *ac_mcp_result_text(const json_t *result, int *ok)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    *ok = !json_is_true(json_object_get(result, "isError"));
    const json_t *content = json_object_get(result, "content");
    const json_t *sc = json_object_get(result, "structuredContent");
    int sc_shown = 0;
    size_t i;
    const json_t *blk;
    json_array_foreach(content, i, blk)
    {
        sep(&b);
        if (!strcmp(str(blk, "type", ""), "text")) {
            const char *t = str(blk, "text", "");
            ac_buf_addstr(&b, t);
            if (sc && !sc_shown)
                sc_shown = carries(t, sc);
        } else {
            describe(&b, blk);
        }
    }
    if (sc && !sc_shown) {
        char *j = json_dumps(sc, JSON_COMPACT | JSON_ENCODE_ANY);
        sep(&b);
        ac_buf_addstr(&b, j ? j : "null");
        free(j);
    }
    return ac_buf_take(&b, NULL);
}
