/*
 * agents_file.c - `--agents FILE` ({"agents": [AGENT, ...]}, agent.h): every
 * agent checked when the file is loaded, then found by name.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

struct ac_cli_agents {
    json_t *doc;  /* the "agents" array as written */
    char **texts; /* each agent as compact JSON */
    size_t n;
    char dir[PATH_MAX];
};

void ac_cli_agents_free(ac_cli_agents *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->texts[i]);
    free(a->texts);
    json_decref(a->doc);
    free(a);
}

/* The agents file's directory, which its relative paths are taken from. */
static void file_dir(const char *path, char out[PATH_MAX])
{
    char abs[PATH_MAX];
    if (!realpath(path, abs))
        snprintf(abs, sizeof abs, "%s", path);
    char *slash = strrchr(abs, '/');
    if (slash)
        snprintf(out, PATH_MAX, "%.*s", slash == abs ? 1 : (int)(slash - abs), abs);
    else
        snprintf(out, PATH_MAX, ".");
}

/* Checks agent i by reading it as the engine options would be. */
static int check_agent(ac_cli_agents *a, size_t i, const char *path, char *err, size_t errcap)
{
    const json_t *ag = json_array_get(a->doc, i);
    const json_t *name = json_object_get(ag, "name");
    if (!json_is_object(ag) || !json_is_string(name)) {
        snprintf(err, errcap, "%s: agents[%zu] must be an object with a \"name\"", path, i);
        return -1;
    }
    for (size_t j = 0; j < i; j++)
        if (json_equal(json_object_get(json_array_get(a->doc, j), "name"), (json_t *)name)) {
            snprintf(err, errcap, "%s: agents[%zu]: the name '%s' is taken by agents[%zu]", path, i,
                     json_string_value(name), j);
            return -1;
        }
    if (!(a->texts[i] = json_dumps(ag, JSON_COMPACT))) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    a->n = i + 1;
    ac_cli_agent_hold hold;
    ac_cli_engine_opts o;
    char why[512];
    if (ac_cli_agent_opts(a->texts[i], a->dir, &hold, &o, why, sizeof why) < 0) {
        snprintf(err, errcap, "%s: agents[%zu]: %s", path, i, why);
        return -1;
    }
    ac_cli_agent_hold_free(&hold);
    return 0;
}

static int check_top(const json_t *doc, const char *path, char *err, size_t errcap)
{
    const char *k;
    json_t *v;
    if (!json_is_object(doc)) {
        snprintf(err, errcap, "%s: must be an object {\"agents\": [AGENT, ...]}", path);
        return -1;
    }
    json_object_foreach((json_t *)doc, k, v) if (strcmp(k, "agents") && strcmp(k, "$schema"))
    {
        snprintf(err, errcap, "%s: unknown key \"%.64s\" (only \"agents\" and \"$schema\")", path,
                 k);
        return -1;
    }
    if (!json_is_array(json_object_get(doc, "agents")) ||
        !json_array_size(json_object_get(doc, "agents"))) {
        snprintf(err, errcap, "%s: \"agents\" must be a non-empty array of agents", path);
        return -1;
    }
    return 0;
}

ac_cli_agents *ac_cli_agents_load(const char *path, char *err, size_t errcap)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line <= 0)
            snprintf(err, errcap, "cannot read agents file '%s': %s", path, je.text);
        else
            snprintf(err, errcap, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return NULL;
    }
    ac_cli_agents *a = NULL;
    if (check_top(doc, path, err, errcap) == 0 && (a = calloc(1, sizeof *a))) {
        a->doc = json_incref(json_object_get(doc, "agents"));
        file_dir(path, a->dir);
        a->texts = calloc(json_array_size(a->doc), sizeof *a->texts);
        for (size_t i = 0; a && i < json_array_size(a->doc); i++)
            if (!a->texts || check_agent(a, i, path, err, errcap) < 0) {
                if (!a->texts)
                    snprintf(err, errcap, "out of memory");
                ac_cli_agents_free(a);
                a = NULL;
            }
    } else if (!a && json_is_object(doc) && json_is_array(json_object_get(doc, "agents"))) {
        snprintf(err, errcap, "out of memory");
    }
    json_decref(doc);
    return a;
}

size_t ac_cli_agents_count(const ac_cli_agents *a)
{
    return a ? a->n : 0;
}

const char *ac_cli_agents_name(const ac_cli_agents *a, size_t i)
{
    return i < ac_cli_agents_count(a)
               ? json_string_value(json_object_get(json_array_get(a->doc, i), "name"))
               : NULL;
}

const char *ac_cli_agents_find(const ac_cli_agents *a, const char *name)
{
    for (size_t i = 0; name && i < ac_cli_agents_count(a); i++)
        if (!strcmp(ac_cli_agents_name(a, i), name))
            return a->texts[i];
    return NULL;
}

const char *ac_cli_agents_dir(const ac_cli_agents *a)
{
    return a->dir;
}

const json_t *ac_cli_agents_get(const ac_cli_agents *a, size_t i)
{
    return i < ac_cli_agents_count(a) ? json_array_get(a->doc, i) : NULL;
}

void ac_cli_agents_unknown(const ac_cli_agents *a, const char *name, char *err, size_t errcap)
{
    int n = snprintf(err, errcap, "unknown agent '%s' (the agents are:", name);
    for (size_t i = 0; i < ac_cli_agents_count(a) && n >= 0 && (size_t)n < errcap; i++)
        n += snprintf(err + n, errcap - (size_t)n, "%s %s", i ? "," : "", ac_cli_agents_name(a, i));
    if (n >= 0 && (size_t)n < errcap)
        snprintf(err + n, errcap - (size_t)n, ")");
}
