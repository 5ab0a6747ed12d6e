/*
 * client_tools.c - a session's client tools: tools its caller runs itself (the
 * OpenAI-compatible front's request "tools"), given in ac_session_options.client_tools.
 * They are offered to the model with the engine's tools (the spawn event carries them and a
 * tools.changed list keeps them, so a replay offers the same), kept in the session's
 * snapshot, and a call of one is handed to the caller (ac_session_set_client_calls) and
 * waits in the run_tools effect until ac_session_answer_call answers it (tools_run.c): its
 * result is journaled as any tool's.
 */
#include <stdlib.h>
#include <string.h>

#include "session/tools_internal.h"
#include "util/toolname.h"

#define AC_CLIENT_TOOLS_MAX 128

struct ac_client_tools {
    json_t *defs; /* [{name, description, parameters}], as the spawn event carries them */
    ac_tool **tools;
    size_t n;
    ac_client_call_fn fn;
    void *ud;
};

static struct ac_client_tools *client_of(ac_session *s)
{
    if (!s->client)
        s->client = calloc(1, sizeof *s->client);
    return s->client;
}

/* 1 when name is one of the engine's tools, as the model sees it ("kit::tool" is kit__tool). */
static int engine_has(const ac_engine *e, const char *name)
{
    char wire[2 * AC_TOOLNAME_MAX + 8];
    for (size_t i = 0; e && i < e->n_tools; i++)
        if (!strcmp(e->tools[i]->name, name) ||
            (!ac_toolname_to_wire(e->tools[i]->name, wire, sizeof wire) && !strcmp(wire, name)))
            return 1;
    return 0;
}

/* One entry of the options' list, normalized: NULL with why. */
static json_t *entry(const ac_engine *e, json_t *t, char *err, size_t errcap)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    json_t *desc = json_object_get(t, "description"), *params = json_object_get(t, "parameters");
    if (!json_is_object(t) || !name || !ac_toolname_plain_ok(name)) {
        snprintf(err, errcap, "a client tool needs a \"name\" of 1-64 of A-Z a-z 0-9 _ -");
        return NULL;
    }
    if (engine_has(e, name) || ac_tool_is_internal_name(name)) {
        snprintf(err, errcap, "the client tool '%s' has the name of one of the agent's own tools",
                 name);
        return NULL;
    }
    if ((desc && !json_is_string(desc) && !json_is_null(desc)) ||
        (params && !json_is_object(params) && !json_is_null(params))) {
        snprintf(err, errcap,
                 "client tool '%s': \"description\" must be a string, \"parameters\" an object",
                 name);
        return NULL;
    }
    char *schema = json_is_object(params) ? json_dumps(params, JSON_COMPACT) : NULL;
    ac_tool *tool = ac_tools_new(TK_CLIENT, name, "", schema, err, errcap);
    free(schema);
    if (!tool)
        return NULL;
    ac_tools_free(tool);
    return json_pack("{s:s, s:s, s:o}", "name", name, "description",
                     json_is_string(desc) ? json_string_value(desc) : "", "parameters",
                     json_is_object(params) ? json_incref(params)
                                            : json_pack("{s:s}", "type", "object"));
}

/* The options' list normalized (NULL: none; *bad set with err when it is wrong). */
static json_t *normalized(const ac_engine *e, const ac_session_options *opts, int *bad, char *err,
                          size_t errcap)
{
    *bad = 0;
    if (!opts || !opts->client_tools)
        return NULL;
    json_t *in = json_loads(opts->client_tools, 0, NULL), *out = json_array();
    if (!json_is_array(in) || !out) {
        snprintf(err, errcap, "the client tools are not a JSON array");
        *bad = 1;
    } else if (json_array_size(in) > AC_CLIENT_TOOLS_MAX) { /* as OpenAI's API takes */
        snprintf(err, errcap, "%zu client tools: at most %d", json_array_size(in),
                 AC_CLIENT_TOOLS_MAX);
        *bad = 1;
    }
    size_t i;
    json_t *t;
    json_array_foreach(*bad ? NULL : in, i, t)
    {
        json_t *d = entry(e, t, err, errcap);
        const char *name = json_string_value(json_object_get(d, "name"));
        for (size_t k = 0; d && k < json_array_size(out); k++)
            if (!strcmp(name, json_string_value(json_object_get(json_array_get(out, k), "name")))) {
                snprintf(err, errcap, "the client tool '%s' is given twice", name);
                json_decref(d);
                d = NULL;
            }
        if (!d || json_array_append_new(out, d)) {
            *bad = 1;
            break;
        }
    }
    json_decref(in);
    if (*bad || !json_array_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int ac_client_tools_check(const ac_engine *e, const ac_session_options *opts, char *err,
                          size_t errcap)
{
    int bad;
    json_decref(normalized(e, opts, &bad, err, errcap));
    return bad ? -1 : 0;
}

json_t *ac_client_tools_spawn_json(const ac_session_options *opts)
{
    int bad;
    char err[8]; /* checked against the engine's names when the session was made */
    return normalized(NULL, opts, &bad, err, sizeof err);
}

static void set_defs(ac_session *s, json_t *defs)
{
    ac_client_call_fn fn = s->client ? s->client->fn : NULL;
    void *ud = s->client ? s->client->ud : NULL;
    ac_client_tools_free(s);
    if ((!fn && !json_array_size(defs)) || !client_of(s))
        return;
    s->client->fn = fn;
    s->client->ud = ud;
    if (!json_array_size(defs))
        return;
    struct ac_client_tools *c = s->client;
    c->tools = calloc(json_array_size(defs), sizeof *c->tools);
    if (!c->tools)
        return;
    c->defs = json_incref(defs);
    size_t i;
    json_t *d;
    json_array_foreach(defs, i, d)
    {
        char err[256];
        char *schema = json_dumps(json_object_get(d, "parameters"), JSON_COMPACT);
        ac_tool *t = ac_tools_new(TK_CLIENT, json_string_value(json_object_get(d, "name")),
                                  json_string_value(json_object_get(d, "description")), schema, err,
                                  sizeof err);
        free(schema);
        if (t)
            c->tools[c->n++] = t;
    }
}

void ac_client_tools_from_spawn(ac_session *s, const json_t *spawn_data)
{
    json_t *defs = json_object_get(spawn_data, "client_tools");
    if (json_is_array(defs))
        set_defs(s, defs);
}

void ac_client_tools_add_defs(const ac_session *s, json_t *defs)
{
    size_t i;
    json_t *d;
    json_array_foreach(s->client ? s->client->defs : NULL, i, d) json_array_append(defs, d);
}

json_t *ac_client_tools_snapshot_save(const ac_session *s)
{
    return s->client && s->client->defs ? json_deep_copy(s->client->defs) : json_array();
}

int ac_client_tools_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap)
{
    if (!json_is_array(v)) {
        snprintf(err, errcap, "\"client_tools\" is malformed");
        return AC_EINVAL;
    }
    set_defs(s, v);
    return AC_OK;
}

void ac_client_tools_free(ac_session *s)
{
    struct ac_client_tools *c = s->client;
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        ac_tools_free(c->tools[i]);
    free(c->tools);
    json_decref(c->defs);
    free(c);
    s->client = NULL;
}

const ac_tool *ac_session_tool(const ac_session *s, const char *name)
{
    const ac_tool *t = ac_tools_find(s->e, name);
    for (size_t i = 0; !t && s->client && i < s->client->n; i++)
        if (!strcmp(s->client->tools[i]->name, name))
            t = s->client->tools[i];
    return t;
}

void ac_session_set_client_calls(ac_session *s, ac_client_call_fn fn, void *ud)
{
    if (s && (s->client || fn) && client_of(s)) {
        s->client->fn = fn;
        s->client->ud = ud;
    }
}

int ac_client_call_hand(ac_session *s, const char *call_id, const char *name, const char *arguments)
{
    if (!s->client || !s->client->fn)
        return -1;
    s->client->fn(s->client->ud, s, call_id, name, arguments);
    return 0;
}
