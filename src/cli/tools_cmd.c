/*
 * tools_cmd.c - `agentc check --tools FILE [--start]` and `agentc diagram --tools FILE` (with the
 * links of its agents, agents_diagram.c):
 * a tool file's toolkits checked (references, then the proof that every
 * tool can become available), its MCP servers' declarations checked as run
 * parses them and counted (--start also starts each server and reports
 * which cannot start), and the toolkits drawn (DOT).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/loop.h"
#include "mcp/mcp.h"
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

static int is_start_flag(const char *cmd, const char *arg)
{
    return !strcmp(cmd, "check") && !strcmp(arg, "--start");
}

static ac_toolfile *load(int argc, char **argv, const char *cmd, const char **path)
{
    *path = tools_arg(argc, argv);
    if (!*path || !**path) {
        fprintf(stderr, "usage: agentc %s --tools FILE%s\n", cmd,
                strcmp(cmd, "check") ? "" : " [--start]");
        return NULL;
    }
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--tools") && strncmp(argv[i], "--tools=", 8) &&
            (i == 1 || strcmp(argv[i - 1], "--tools")) && !is_start_flag(cmd, argv[i])) {
            fprintf(stderr, "agentc %s --tools: unexpected argument '%s'\n", cmd, argv[i]);
            return NULL;
        }
    char err[1024];
    ac_toolfile *tf = ac_toolfile_load(*path, err, sizeof err);
    if (!tf)
        fprintf(stderr, "%s\n", err);
    return tf;
}

/* ---- MCP servers: declarations (as run parses them), and --start ---- */

typedef struct started {
    ac_mcp_server *srv;
    int reported; /* its first listing or its failure */
} started;

static void on_listed(void *ud, ac_mcp_server *s)
{
    (void)s;
    ((started *)ud)->reported = 1;
}

/* Starts every server (this process's environment plus each one's "env") and waits for all,
 * each at most max(start_timeout, timeout); one line per server. The number that cannot start. */
static size_t start_servers(const char *path, ac_mcp_config *cfgs, size_t n)
{
    ac_loop *loop = ac_loop_new();
    started *v = calloc(n ? n : 1, sizeof *v);
    if (!loop || !v) {
        fprintf(stderr, "%s: out of memory\n", path);
        ac_loop_free(loop);
        free(v);
        return n ? n : 1;
    }
    int64_t wait = 0;
    for (size_t i = 0; i < n; i++) {
        cfgs[i].env_add = cfgs[i].env; /* over this process's environment */
        cfgs[i].env = NULL;
        v[i].srv = ac_mcp_server_new(loop, &cfgs[i]);
        if (!v[i].srv)
            continue;
        const ac_mcp_config *c = ac_mcp_server_config(v[i].srv);
        int64_t w = c->start_timeout_ms > c->timeout_ms ? c->start_timeout_ms : c->timeout_ms;
        wait = w > wait ? w : wait;
        ac_mcp_server_on_tools(v[i].srv, on_listed, &v[i]);
        ac_mcp_server_start(v[i].srv);
    }
    int64_t end = ac_loop_now_ms(loop) + wait + 1000;
    for (size_t left = n; left && ac_loop_now_ms(loop) < end;) {
        ac_loop_run_once(loop, 50);
        left = 0;
        for (size_t i = 0; i < n; i++)
            left += v[i].srv && !v[i].reported;
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        ac_mcp_server *s = v[i].srv;
        if (s && ac_mcp_server_ready(s)) {
            printf("%s: MCP server '%s': started, protocol %s, %zu tools\n", path, cfgs[i].name,
                   ac_mcp_server_version(s), ac_mcp_server_tool_count(s));
            continue;
        }
        bad++;
        const char *why = s ? ac_mcp_server_error(s) : "out of memory";
        if (s && !*why)
            fprintf(stderr, "%s: MCP server '%s' did not start in time\n", path, cfgs[i].name);
        else
            fprintf(stderr, "%s: %s\n", path, why);
    }
    for (size_t i = 0; i < n; i++)
        ac_mcp_server_free(v[i].srv);
    free(v);
    ac_loop_free(loop);
    return bad;
}

/* The "mcp" declarations checked; *servers counts them. -1 after printing the problem, else
 * the number of servers that cannot start (--start) or 0. */
static long check_mcp(const ac_toolfile *tf, const char *path, int start, size_t *servers)
{
    *servers = 0;
    if (!tf->mcp)
        return 0;
    ac_mcp_config *cfgs;
    size_t n;
    char err[1024];
    if (ac_mcp_config_parse(tf->mcp, path, &cfgs, &n, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *servers = n;
    long bad = start ? (long)start_servers(path, cfgs, n) : 0;
    for (size_t i = 0; i < n; i++)
        ac_mcp_config_clear(&cfgs[i]);
    free(cfgs);
    return bad;
}

static int has_start(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--start") && strcmp(argv[i - 1], "--tools"))
            return 1;
    return 0;
}

int ac_cli_tools_check(int argc, char **argv)
{
    const char *path;
    ac_toolfile *tf = load(argc, argv, "check", &path);
    if (!tf)
        return 1;
    size_t servers;
    int start = has_start(argc, argv);
    long mcp_bad = check_mcp(tf, path, start, &servers);
    size_t refs = ac_toolfile_check_refs(tf, print_problem, (void *)path);
    size_t never = refs ? 0 : ac_toolfile_check_reach(tf, print_problem, (void *)path);
    size_t kit_tools = 0;
    for (size_t i = 0; i < tf->n; i++)
        kit_tools += tf->tools[i].toolkit >= 0;
    char mcp[96] = "";
    if (servers)
        snprintf(mcp, sizeof mcp, ", %zu MCP servers (%s)", servers,
                 start ? "each started" : "not started: --start starts them");
    char agents[64] = "";
    if (json_array_size(tf->agents))
        snprintf(agents, sizeof agents, ", %zu agents", json_array_size(tf->agents));
    if (!refs && !never && mcp_bad == 0)
        printf("%s: ok: %zu tools, %zu toolkits%s%s; every toolkit tool can become available\n",
               path, tf->n, tf->n_toolkits, agents, mcp);
    else if (!refs && never)
        fprintf(stderr, "%s: %zu of %zu toolkit tools can never become available\n", path, never,
                kit_tools);
    if (mcp_bad > 0)
        fprintf(stderr, "%s: %ld of %zu MCP servers cannot start\n", path, mcp_bad, servers);
    ac_toolfile_free(tf);
    return refs || never || mcp_bad ? 1 : 0;
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
    char *agents = ac_cli_agents_diagram(path); /* the links of its agents, if it has any */
    size_t n = strlen(dot);
    if (agents && n >= 2 && !strcmp(dot + n - 2, "}\n"))
        n -= 2; /* into the same graph */
    fwrite(dot, 1, n, stdout);
    if (agents && n != strlen(dot))
        printf("%s}\n", agents);
    free(agents);
    free(dot);
    return 0;
}
