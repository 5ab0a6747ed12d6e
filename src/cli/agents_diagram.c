/*
 * agents_diagram.c - the links between agents that tool files declare (docs/composition.md),
 * for `agentc diagram --tools FILE`: the caller of FILE, each of its agents (its spec), a
 * sub-agent call as a solid edge `agent::NAME`, a handoff as a dashed edge `transfer_to_NAME`,
 * and the same for the tool files those agents are given, each file once.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools/toolfile.h"
#include "util/buf.h"

#define LINKS_MAX_FILES 32

typedef struct links {
    ac_buf *b;
    char *seen[LINKS_MAX_FILES];
    size_t n_seen;
} links;

/* path relative to dir (a tool file's directory), as a new string. */
static char *beside(const char *dir, const char *path)
{
    size_t n = strlen(dir) + strlen(path) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", path[0] == '/' ? "" : dir, path[0] == '/' ? "" : "/", path);
    return p;
}

static void file_links(links *l, const char *path, const char *caller);

/* One entry: its node, the edge from caller, then the agents of its own tool files. */
static void entry_links(links *l, const json_t *a, const char *dir, const char *caller)
{
    const char *name = json_string_value(json_object_get(a, "name"));
    const char *spec = json_string_value(json_object_get(a, "spec"));
    int handoff = json_is_true(json_object_get(a, "handoff"));
    ac_buf_printf(l->b, "    \"agent %s\" [label=\"%s\\nspec: %s\"];\n", name, name,
                  spec ? spec : "the caller's");
    ac_buf_printf(l->b, "    \"%s\" -> \"agent %s\" [label=\"%s%s\"%s];\n", caller, name,
                  handoff ? "transfer_to_" : "agent::", name, handoff ? ", style=dashed" : "");
    char node[160];
    snprintf(node, sizeof node, "agent %s", name);
    size_t i;
    const json_t *t;
    json_array_foreach(json_object_get(a, "tools"), i, t)
    {
        const char *tp = json_string_value(t);
        char *p = tp && strncmp(tp, "builtin:", 8) ? beside(dir, tp) : NULL;
        if (p)
            file_links(l, p, node);
        free(p);
    }
}

static void file_links(links *l, const char *path, const char *caller)
{
    char *real = realpath(path, NULL); /* each file once, however it is named */
    for (size_t i = 0; real && i < l->n_seen; i++)
        if (!strcmp(l->seen[i], real)) {
            free(real);
            return;
        }
    if (!real || l->n_seen == LINKS_MAX_FILES) {
        free(real);
        return;
    }
    l->seen[l->n_seen++] = real;
    char err[512];
    ac_toolfile *tf = ac_toolfile_load(path, err, sizeof err);
    if (!tf)
        return;
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    size_t i;
    const json_t *a;
    json_array_foreach(tf->agents, i, a)
    {
        if (dir)
            entry_links(l, a, dir, caller);
    }
    free(dir);
    ac_toolfile_free(tf);
}

char *ac_cli_agents_diagram(const char *path)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    links l = {&b, {0}, 0};
    ac_buf_printf(&b,
                  "  subgraph \"cluster_agents\" {\n    label=\"agents\";\n"
                  "    \"caller\" [label=\"the agent given %s\", shape=ellipse];\n",
                  path);
    size_t before = b.n;
    file_links(&l, path, "caller");
    for (size_t i = 0; i < l.n_seen; i++)
        free(l.seen[i]);
    if (b.n == before) {
        ac_buf_free(&b);
        return NULL;
    }
    ac_buf_printf(&b, "  }\n");
    return ac_buf_take(&b, NULL);
}
