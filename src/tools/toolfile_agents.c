/*
 * toolfile_agents.c - a tool file's "agents" array: the sub-agents and handoffs it offers
 * (docs/composition.md). Only the keys of composition are read here (name, description,
 * input_schema, max_depth, handoff); the rest of an entry is the agent format
 * (docs/agents.md), checked by whoever builds the agent's engine.
 */
#include <stdio.h>
#include <string.h>

#include "tools/toolfile.h"
#include "util/toolname.h"

/* fmt's message about agents[i] into err, naming the file. -1. */
static int agents_fail(const char *path, size_t i, const char *name, const char *what, char *err,
                       size_t errcap)
{
    if (name)
        snprintf(err, errcap, "%s: agents[%zu] (\"%s\"): %s", path, i, name, what);
    else
        snprintf(err, errcap, "%s: agents[%zu]: %s", path, i, what);
    return -1;
}

/* The composition keys of one entry. 0, or -1 with err. */
static int check_entry(const json_t *a, const char *path, size_t i, char *err, size_t errcap)
{
    char why[300], composed[160];
    if (!json_is_object(a))
        return agents_fail(path, i, NULL, "an agent is an object {\"name\", \"description\", ...}",
                           err, errcap);
    const char *name = json_string_value(json_object_get(a, "name"));
    if (!name)
        return agents_fail(path, i, NULL, "missing \"name\" (a string)", err, errcap);
    if (ac_toolname_compose("agent", name, composed, sizeof composed, why, sizeof why) < 0 ||
        strlen(name) > 52) /* transfer_to_NAME fits 64 too */
        return agents_fail(
            path, i, NULL,
            "\"name\" must be 1-52 of A-Z a-z 0-9 _ - (it names the tool agent::NAME)", err,
            errcap);
    if (!json_is_string(json_object_get(a, "description")))
        return agents_fail(path, i, name,
                           "missing \"description\" (a string: what the model reads)", err, errcap);
    const json_t *schema = json_object_get(a, "input_schema");
    if (schema) {
        if (!json_is_object(schema))
            return agents_fail(path, i, name, "\"input_schema\" must be a JSON Schema object", err,
                               errcap);
        ac_schema *sc = ac_schema_compile(schema, why, sizeof why);
        if (!sc) {
            char m[400];
            snprintf(m, sizeof m, "\"input_schema\": %s", why);
            return agents_fail(path, i, name, m, err, errcap);
        }
        ac_schema_free(sc);
    }
    const json_t *depth = json_object_get(a, "max_depth");
    if (depth && (!json_is_integer(depth) || json_integer_value(depth) < 1 ||
                  json_integer_value(depth) > 32))
        return agents_fail(path, i, name, "\"max_depth\" must be an integer from 1 to 32", err,
                           errcap);
    const json_t *handoff = json_object_get(a, "handoff");
    if (handoff && !json_is_boolean(handoff))
        return agents_fail(path, i, name, "\"handoff\" must be true or false", err, errcap);
    return 0;
}

int ac_toolfile__parse_agents(const json_t *arr, ac_toolfile *tf, const char *path, char *err,
                              size_t errcap)
{
    if (!json_is_array(arr)) {
        snprintf(err, errcap, "%s: \"agents\" must be an array of agents", path);
        return -1;
    }
    size_t i, j;
    const json_t *a;
    json_array_foreach(arr, i, a)
    {
        if (check_entry(a, path, i, err, errcap) < 0)
            return -1;
        const char *name = json_string_value(json_object_get(a, "name"));
        for (j = 0; j < i; j++)
            if (!strcmp(name, json_string_value(json_object_get(json_array_get(arr, j), "name"))))
                return agents_fail(path, i, name, "duplicate agent name", err, errcap);
    }
    tf->agents = json_incref((json_t *)arr);
    return 0;
}
