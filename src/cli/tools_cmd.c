/*
 * tools_cmd.c - `agentc check --tools FILE` and `agentc diagram --tools FILE`:
 * a tool file's toolkits checked (references, then the proof that every
 * tool can become available) and drawn (DOT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tools/toolfile.h"

static const char *tools_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tools"))
            return i + 1 < argc ? argv[i + 1] : "";
        if (!strncmp(argv[i], "--tools=", 8))
            return argv[i] + 8;
    }
    return NULL;
}

int ac_cli_has_tools_arg(int argc, char **argv)
{
    return tools_arg(argc, argv) != NULL;
}

static void print_problem(void *ud, const char *message)
{
    fprintf(stderr, "%s: %s\n", (const char *)ud, message);
}

static ac_toolfile *load(int argc, char **argv, const char *cmd, const char **path)
{
    *path = tools_arg(argc, argv);
    if (!*path || !**path) {
        fprintf(stderr, "usage: agentc %s --tools FILE\n", cmd);
        return NULL;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--tools") && strncmp(argv[i], "--tools=", 8) &&
            (i == 1 || strcmp(argv[i - 1], "--tools"))) {
            fprintf(stderr, "agentc %s --tools: unexpected argument '%s'\n", cmd, argv[i]);
            return NULL;
        }
    char err[1024];
    ac_toolfile *tf = ac_toolfile_load(*path, err, sizeof err);
    if (!tf)
        fprintf(stderr, "%s\n", err);
    return tf;
}

int ac_cli_tools_check(int argc, char **argv)
{
    const char *path;
    ac_toolfile *tf = load(argc, argv, "check", &path);
    if (!tf)
        return 1;
    size_t refs = ac_toolfile_check_refs(tf, print_problem, (void *)path);
    size_t never = refs ? 0 : ac_toolfile_check_reach(tf, print_problem, (void *)path);
    size_t kit_tools = 0;
    for (size_t i = 0; i < tf->n; i++)
        kit_tools += tf->tools[i].toolkit >= 0;
    if (!refs && !never)
        printf("%s: ok: %zu tools, %zu toolkits; every toolkit tool can become available\n", path,
               tf->n, tf->n_toolkits);
    else if (!refs)
        fprintf(stderr, "%s: %zu of %zu toolkit tools can never become available\n", path, never,
                kit_tools);
    ac_toolfile_free(tf);
    return refs || never ? 1 : 0;
}

int ac_cli_tools_diagram(int argc, char **argv)
{
    const char *path;
    ac_toolfile *tf = load(argc, argv, "diagram", &path);
    if (!tf)
        return 1;
    char *dot = ac_toolfile_diagram(tf);
    ac_toolfile_free(tf);
    if (!dot) {
        fprintf(stderr, "agentc diagram: out of memory\n");
        return 1;
    }
    fputs(dot, stdout);
    free(dot);
    return 0;
}
