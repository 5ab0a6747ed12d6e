/*
 * context_tools.c - the internal context tools (builtin:context), which let
 * the model change its own context. Their calls are recorded flagged
 * internal (decided by name in record_assistant, see
 * ac_tool_is_internal_name), so history search never returns them. They
 * run in-process from the run_tools effect, only read the conversation and
 * post what the action needs:
 *   expand_context {"by"?}          context.expanded {"id","ok","content","by"}
 *   search_tool_calls {"name"?, "text"?, "from"?, "to"?, "limit"?}
 *                                   tool.completed with a compact JSON list
 *   load_tool_calls {"ids": [...]}  context.loaded {"id","ok","content",
 *                                   "restore": [message ids], "rounds": [call ids]}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session/tools_internal.h"
#include "util/units.h"

#define SEARCH_LIMIT_DEFAULT 10
#define SEARCH_LIMIT_MAX 50
#define SEARCH_ARGS_EXCERPT 200
#define SEARCH_RESULT_EXCERPT 300
#define SEARCH_OUTPUT_CAP ((size_t)32 << 10)
#define LOAD_IDS_MAX 20

/* ORDER INTERNAL: the names record_assistant flags internal; the tools of
 * ac_context_tools_add below. */
static const char *const internal_names[] = {"expand_context", "search_tool_calls",
                                             "load_tool_calls", NULL};

int ac_tool_is_internal_name(const char *name)
{
    for (size_t i = 0; name && internal_names[i]; i++)
        if (strcmp(internal_names[i], name) == 0)
            return 1;
    return 0;
}

/* builtin:context: the internal tools that change the model's own context. */
int ac_context_tools_add(ac_engine *e, char *err, size_t errcap)
{
    /* expand_context's default step is the spec's: no C default stands in for it */
    const ac_param_value *step = ac_engine_param(e, "context_step");
    if (!step || step->type != AC_PARAM_INT || step->ival <= 0) {
        snprintf(err, errcap, "builtin:context needs the spec to declare param context_step, "
                              "a positive int (%s)",
                 !step ? "it has none" : step->type != AC_PARAM_INT ? "it is not an int"
                                                                    : "it is not positive");
        return -1;
    }
    static const struct {
        int kind;
        const char *name, *desc, *schema;
    } defs[] = {
        {TK_EXPAND, "expand_context",
         "Shows you more of the earlier conversation: grows the window of recent messages "
         "you see by `by` messages (default: the spec's context_step).",
         "{\"type\":\"object\",\"properties\":{\"by\":{\"type\":\"integer\","
         "\"minimum\":1,\"maximum\":100000}},\"additionalProperties\":false}"},
        {TK_SEARCH, "search_tool_calls",
         "Searches earlier tool calls by tool name, by text in their arguments or result, "
         "and by time (ISO 8601 or Unix ms). Returns id, name, an arguments excerpt, "
         "called_at, ok and a result excerpt, newest first.",
         "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
         "\"text\":{\"type\":\"string\"},\"from\":{\"type\":[\"string\",\"integer\"]},"
         "\"to\":{\"type\":[\"string\",\"integer\"]},\"limit\":{\"type\":\"integer\","
         "\"minimum\":1,\"maximum\":50}},\"additionalProperties\":false}"},
        {TK_LOAD, "load_tool_calls",
         "Brings the full results of earlier tool calls (ids from search_tool_calls) back "
         "into your context.",
         "{\"type\":\"object\",\"properties\":{\"ids\":{\"type\":\"array\",\"items\":"
         "{\"type\":\"string\"},\"minItems\":1,\"maxItems\":20}},\"required\":[\"ids\"],"
         "\"additionalProperties\":false}"},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        ac_tool *t =
            ac_tools_new(defs[i].kind, defs[i].name, defs[i].desc, defs[i].schema, err, errcap);
        if (!t || ac_tools_add(e, t, err, errcap) < 0)
            return -1;
    }
    return 0;
}

/* A JSON string of at most cap bytes of s (cut at a UTF-8 boundary, "..." added). */
static json_t *excerpt(const char *s, size_t cap)
{
    size_t n = s ? strlen(s) : 0;
    if (n <= cap)
        return json_string(s ? s : "");
    while (cap > 0 && ((unsigned char)s[cap] & 0xC0) == 0x80)
        cap--;
    char *b = malloc(cap + 4);
    if (!b)
        return json_string("");
    memcpy(b, s, cap);
    memcpy(b + cap, "...", 4);
    json_t *j = json_string(b);
    free(b);
    return j ? j : json_string("");
}

static void iso_time(int64_t ms, char *out, size_t cap)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(out, cap, "%lld", (long long)ms);
        return;
    }
    char base[40];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", base, (int)(ms % 1000));
}

/* Unix ms from an integer, or a string ac_parse_time reads (a string of
 * digits, or ISO 8601). 0 on success. */
static int parse_time(json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    return ac_parse_time(json_string_value(v), out) == AC_UNITS_OK ? 0 : -1;
}

void ac_context_tool_expand(ac_tool_run *r, struct slot *sl, json_t *args)
{
    ac_session *s = ac_tool_run_session(r);
    char msg[400];
    size_t w = ac_conv_window(s->conv);
    int64_t by = json_integer_value(json_object_get(args, "by"));
    if (by <= 0) /* checked positive when the tools were added */
        by = ac_engine_param(s->e, "context_step")->ival;
    uint16_t ev = s->e->ev_ctx_expanded != AC_FSM_NONE ? s->e->ev_ctx_expanded : 0;
    if (w == 0) {
        snprintf(msg, sizeof msg,
                 "the whole conversation since the last compaction is already visible "
                 "(context window 0 = everything); nothing to expand. Older tool calls can "
                 "be found with search_tool_calls and loaded with load_tool_calls.");
        ac_tool_run_set_event(sl, ev, json_pack("{s:i}", "by", 0));
    } else {
        size_t since = ac_conv_message_count(s->conv) - ac_conv_floor(s->conv);
        snprintf(msg, sizeof msg,
                 "context window grown from %zu to %zu messages (%zu messages since the last "
                 "compaction)",
                 w, w + (size_t)by, since);
        ac_tool_run_set_event(sl, ev, json_pack("{s:I}", "by", (json_int_t)by));
    }
    ac_tool_run_complete_later(r, sl, 1, msg);
}

void ac_context_tool_search(ac_tool_run *r, struct slot *sl, json_t *args)
{
    ac_session *s = ac_tool_run_session(r);
    ac_call_query q;
    memset(&q, 0, sizeof q);
    q.name = json_string_value(json_object_get(args, "name"));
    q.text = json_string_value(json_object_get(args, "text"));
    json_t *from = json_object_get(args, "from"), *to = json_object_get(args, "to");
    if ((from && parse_time(from, &q.from_ms) != 0) || (to && parse_time(to, &q.to_ms) != 0)) {
        ac_tool_run_complete_later(
            r, sl, 0,
            "invalid arguments: from/to must be Unix milliseconds or ISO 8601 "
            "(2024-05-01, 2024-05-01T12:00:00Z)");
        return;
    }
    if (from && q.from_ms == 0)
        q.from_ms = 1;
    int64_t limit = json_integer_value(json_object_get(args, "limit"));
    if (limit <= 0)
        limit = SEARCH_LIMIT_DEFAULT;
    if (limit > SEARCH_LIMIT_MAX)
        limit = SEARCH_LIMIT_MAX;
    const ac_tool_call *found[SEARCH_LIMIT_MAX];
    size_t total = ac_conv_search_calls(s->conv, &q, found, (size_t)limit);
    size_t n = total < (size_t)limit ? total : (size_t)limit;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        const ac_tool_call *c = found[i];
        char when[48];
        iso_time(c->called_at_ms, when, sizeof when);
        json_t *o = json_pack("{s:s, s:s, s:o, s:s}", "id", c->id, "name", c->name, "arguments",
                              excerpt(c->arguments, SEARCH_ARGS_EXCERPT), "called_at", when);
        if (!o)
            continue;
        if (c->state == AC_CALL_NONE) {
            json_object_set_new(o, "ok", json_null());
        } else {
            json_object_set_new(o, "ok", json_boolean(c->state == AC_CALL_SUCCESS));
            json_object_set_new(o, "result", excerpt(c->result, SEARCH_RESULT_EXCERPT));
        }
        json_array_append_new(list, o);
    }
    json_t *res =
        json_pack("{s:I, s:o}", "matches", (json_int_t)total, "calls", list ? list : json_array());
    char *txt = res ? json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(res);
    if (txt && strlen(txt) > SEARCH_OUTPUT_CAP)
        txt[SEARCH_OUTPUT_CAP] = 0; /* cannot happen with the caps above; kept as a bound */
    ac_tool_run_complete_later(r, sl, txt != NULL, txt ? txt : "out of memory");
    free(txt);
}

void ac_context_tool_load(ac_tool_run *r, struct slot *sl, json_t *args)
{
    ac_session *s = ac_tool_run_session(r);
    size_t nmsg = ac_conv_message_count(s->conv);
    size_t *vis = NULL, nvis = 0;
    char *visible = calloc(nmsg + 1, 1);
    json_t *tool_msg = json_object(); /* call id -> message index */
    json_t *restore = json_array(), *rounds = json_array();
    char *txt = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&txt, &len);
    if (!visible || !tool_msg || !restore || !rounds || !out ||
        ac_conv_visible(s->conv, &vis, &nvis) != AC_CONV_OK) {
        if (out)
            fclose(out);
        free(txt);
        txt = NULL;
        ac_tool_run_complete_later(r, sl, 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nvis; i++)
        visible[vis[i]] = 1;
    for (size_t i = 0; i < nmsg; i++) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if (m->role == AC_ROLE_TOOL && m->tool_call_id)
            json_object_set_new(tool_msg, m->tool_call_id, json_integer((json_int_t)i));
    }
    size_t k;
    json_t *v;
    int any = 0;
    json_array_foreach(json_object_get(args, "ids"), k, v)
    {
        const char *id = json_string_value(v);
        const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
        if (k >= LOAD_IDS_MAX)
            break;
        if (!c || c->internal) {
            fprintf(out, "%s%.80s: unknown call id", k ? "; " : "", id ? id : "?");
            continue;
        }
        if (c->state == AC_CALL_NONE) {
            fprintf(out, "%s%s: has no result yet", k ? "; " : "", id);
            continue;
        }
        json_t *mi = json_object_get(tool_msg, id);
        size_t idx = mi ? (size_t)json_integer_value(mi) : (size_t)-1;
        if (mi && visible[idx]) {
            const ac_message *m = ac_conv_message(s->conv, idx);
            if (m->flags & AC_MSG_CLEARED) {
                json_array_append_new(restore, json_string(m->id));
                fprintf(out, "%s%s: full result restored in place", k ? "; " : "", id);
                any = 1;
            } else {
                fprintf(out, "%s%s: already in context", k ? "; " : "", id);
            }
            continue;
        }
        json_array_append_new(rounds, json_string(id));
        fprintf(out, "%s%s (%s): full result loaded below", k ? "; " : "", id, c->name);
        any = 1;
    }
    fclose(out);
    ac_tool_run_set_event(sl, s->e->ev_ctx_loaded != AC_FSM_NONE ? s->e->ev_ctx_loaded : 0,
                          json_pack("{s:O, s:O}", "restore", restore, "rounds", rounds));
    {
        char *msg = malloc(len + 32);
        if (msg) {
            snprintf(msg, len + 32, "%s%s", any ? "loaded: " : "nothing loaded: ", txt ? txt : "");
            ac_tool_run_complete_later(r, sl, 1, msg);
            free(msg);
        } else {
            ac_tool_run_complete_later(r, sl, 0, "out of memory");
        }
    }
done:
    free(txt);
    free(vis);
    free(visible);
    json_decref(tool_msg);
    json_decref(restore);
    json_decref(rounds);
}
