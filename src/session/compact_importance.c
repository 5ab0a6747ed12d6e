/*
 * compact_importance.c - the plan of the "importance" compaction
 * (compact_importance.h): a pass from the newest message to the oldest
 * collects the values later assistant messages repeat, and decides for each
 * tool result whether it stays or becomes a stub.
 */
#include "session/compact_importance.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "session/tools_internal.h"

#define STUB_MAX 200
#define VALUE_MIN 3   /* shortest value that counts as repeated */
#define VALUE_MAX 120 /* longer runs are not values */

enum { DROP, KEEP, KEEP_SOFT }; /* KEEP_SOFT: kept, unless the budget needs it */

/* Calls fn(ud, value) for each value of text: a run of letters, digits and _.:/- of
 * VALUE_MIN to VALUE_MAX bytes with at least one digit (trailing dots and colons cut). */
static void values(const char *text, void (*fn)(void *, const char *), void *ud)
{
    const char *p = text ? text : "";
    while (*p) {
        while (*p && !(isalnum((unsigned char)*p) || *p == '_'))
            p++;
        const char *b = p;
        int digit = 0;
        while (*p && (isalnum((unsigned char)*p) || strchr("_.:/-", *p))) {
            digit |= isdigit((unsigned char)*p) != 0;
            p++;
        }
        size_t n = (size_t)(p - b);
        while (n > 0 && (b[n - 1] == '.' || b[n - 1] == ':'))
            n--;
        if (digit && n >= VALUE_MIN && n <= VALUE_MAX) {
            char v[VALUE_MAX + 1];
            memcpy(v, b, n);
            v[n] = 0;
            fn(ud, v);
        }
    }
}

static void add_value(void *ud, const char *v)
{
    json_object_set_new((json_t *)ud, v, json_true());
}

typedef struct seen {
    json_t *later;
    int hit;
} seen;

static void find_value(void *ud, const char *v)
{
    seen *s = ud;
    s->hit = s->hit || json_object_get(s->later, v) != NULL;
}

/* The values an assistant message says: its text and its calls' arguments. */
static void collect(const ac_conv *conv, const ac_message *m, json_t *later)
{
    values(m->content, add_value, later);
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const ac_tool_call *c = ac_conv_tool_call(conv, m->tool_call_ids[k]);
        if (c)
            values(c->arguments, add_value, later);
    }
}

/* Index of the first message of the latest keep turns (a turn starts at a user or assistant
 * message); n when keep is 0. */
static size_t recent_from(const ac_conv *conv, size_t floor, size_t keep)
{
    size_t n = ac_conv_message_count(conv), from = n, turns = 0;
    for (size_t i = n; keep && i > floor; i--) {
        const ac_message *m = ac_conv_message(conv, i - 1);
        if (m->role == AC_ROLE_USER || m->role == AC_ROLE_ASSISTANT) {
            from = i - 1;
            if (++turns >= keep)
                break;
        }
    }
    return from;
}

/* The message that issued call id, looking back from index i. */
static const ac_message *caller(const ac_conv *conv, size_t i, const char *id)
{
    while (i-- > 0) {
        const ac_message *m = ac_conv_message(conv, i);
        for (size_t k = 0; m->role == AC_ROLE_ASSISTANT && k < m->n_tool_calls; k++)
            if (!strcmp(m->tool_call_ids[k], id))
                return m;
    }
    return NULL;
}

/* Whether call c wrote the State: an "_outputPath" argument, or its tool prescribes one. */
static int writes_state(const ac_engine *e, const ac_tool_call *c)
{
    if (c->arguments && strstr(c->arguments, "\"_outputPath\""))
        return 1;
    const ac_tool *t = ac_tools_find(e, c->name);
    return t && t->out_decl && json_object_get(t->out_decl, "const") != NULL;
}

/* What becomes of tool message i (not cleared, before the recent turns). */
static int decide(const ac_engine *e, const ac_conv *conv, size_t i, json_t *later)
{
    const ac_message *m = ac_conv_message(conv, i);
    const ac_tool_call *c = m->tool_call_id ? ac_conv_tool_call(conv, m->tool_call_id) : NULL;
    const ac_message *from = m->tool_call_id ? caller(conv, i, m->tool_call_id) : NULL;
    if ((m->flags & (AC_MSG_PINNED | AC_MSG_INTERNAL)) || (from && (from->flags & AC_MSG_PINNED)))
        return KEEP;
    if (!c || c->state == AC_CALL_FAILURE || strlen(m->content) <= STUB_MAX)
        return KEEP;
    if (writes_state(e, c))
        return KEEP_SOFT;
    seen sn = {later, 0};
    values(m->content, find_value, &sn);
    return sn.hit ? KEEP_SOFT : DROP;
}

static void stub_text(const ac_conv *conv, const ac_message *m, char *out, size_t cap)
{
    const ac_tool_call *c = ac_conv_tool_call(conv, m->tool_call_id);
    size_t n = strlen(m->content);
    char size[32];
    if (n < 1000)
        snprintf(size, sizeof size, "%zu B", n);
    else
        snprintf(size, sizeof size, "%zu KB", (n + 500) / 1000);
    snprintf(out, cap, "[result of %.100s dropped: %s]", c ? c->name : "a tool", size);
}

/* Appends a stub for tool message i; returns the estimated tokens it saves. */
static int64_t stub(const ac_conv *conv, size_t i, json_t *list)
{
    const ac_message *m = ac_conv_message(conv, i);
    char text[STUB_MAX + 64];
    stub_text(conv, m, text, sizeof text);
    json_array_append_new(list, json_pack("{s:s, s:s}", "id", m->id, "text", text));
    return (int64_t)(strlen(m->content) - strlen(text)) / 4;
}

json_t *ac_compact_plan_importance(ac_session *s, size_t keep, int64_t budget)
{
    const ac_conv *conv = s->conv;
    size_t n = ac_conv_message_count(conv), floor = ac_conv_floor(conv);
    size_t recent = recent_from(conv, floor, keep);
    json_t *later = json_object(), *list = json_array();
    char *fate = calloc(n + 1, 1);
    if (!later || !list || !fate)
        goto oom;
    int64_t est = (int64_t)ac_session_estimate_tokens(s);
    for (size_t i = n; i-- > floor;) {
        const ac_message *m = ac_conv_message(conv, i);
        fate[i] = KEEP;
        if (m->role == AC_ROLE_ASSISTANT)
            collect(conv, m, later);
        else if (m->role == AC_ROLE_TOOL && !(m->flags & AC_MSG_CLEARED) && i < recent)
            fate[i] = (char)decide(s->e, conv, i, later);
    }
    for (size_t i = floor; i < n; i++)
        if (fate[i] == DROP)
            est -= stub(conv, i, list);
    /* over 3/4 of the budget still: the results kept softly go too, oldest first */
    for (size_t i = floor; budget > 0 && est > budget / 4 * 3 && i < n; i++)
        if (fate[i] == KEEP_SOFT)
            est -= stub(conv, i, list);
    free(fate);
    json_decref(later);
    if (json_array_size(list) == 0) {
        json_decref(list);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "strategy", "importance", "stub", list);
oom:
    free(fate);
    json_decref(later);
    json_decref(list);
    return NULL;
}
