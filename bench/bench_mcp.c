/*
 * bench_mcp.c - an MCP tools/call round trip over stdio (ac_mcp_call_tool to a
 * trivial C server, bench/mcp_trivial_server.c, started once) against one
 * external tool call (ac_proc_spawn of /bin/cat with the arguments on stdin),
 * both on the same event loop, alternated round by round in one run.
 * Reports the time per call, min/median/max over the rounds, and the ratio.
 * Usage: bench_mcp [calls-per-round] [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "io/loop.h"
#include "io/proc.h"
#include "mcp/mcp.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void mcp_done(void *ud, int ok, const char *content)
{
    *(int *)ud = ok && !strcmp(content, "{\"x\":\"hello\"}") ? 1 : -1;
}

static void cat_done(void *ud, const ac_proc_result *res)
{
    *(int *)ud = res->exited && res->exit_code == 0 ? 1 : -1;
}

static double round_mcp(ac_loop *loop, ac_mcp_server *s, json_t *args, int n)
{
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int done = 0;
        ac_mcp_call_tool(s, "echo", args, 10000, mcp_done, NULL, &done);
        while (!done)
            ac_loop_run_once(loop, 100);
        if (done < 0) {
            fprintf(stderr, "mcp call failed\n");
            exit(1);
        }
    }
    return (now_s() - t0) / n;
}

static double round_spawn(ac_loop *loop, int n)
{
    const char *argv[] = {"/bin/cat", NULL};
    ac_proc_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.argv = argv;
    spec.stdin_data = "{\"x\":\"hello\"}";
    spec.stdin_len = strlen(spec.stdin_data);
    spec.timeout_ms = 10000;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int done = 0;
        char err[256];
        if (!ac_proc_spawn(loop, &spec, cat_done, &done, err, sizeof err)) {
            fprintf(stderr, "spawn: %s\n", err);
            exit(1);
        }
        while (!done)
            ac_loop_run_once(loop, 100);
        if (done < 0) {
            fprintf(stderr, "cat failed\n");
            exit(1);
        }
    }
    return (now_s() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void on_tools(void *ud, ac_mcp_server *s)
{
    (void)s;
    *(int *)ud = 1;
}

/* Starts s and runs the loop until its first listing or failure (10 s at most). */
static int start_server(ac_loop *loop, ac_mcp_server *s, char *err, size_t cap)
{
    int seen = 0;
    ac_mcp_server_on_tools(s, on_tools, &seen);
    ac_mcp_server_start(s);
    for (int k = 0; k < 200 && !seen; k++)
        ac_loop_run_once(loop, 50);
    ac_mcp_server_on_tools(s, NULL, NULL);
    snprintf(err, cap, "%s", seen ? ac_mcp_server_error(s) : "no answer within 10 s");
    return ac_mcp_server_ready(s) ? 0 : -1;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)bench_arg(argv[1], 1, 1000000, "calls") : 500;
    int rounds = argc > 2 ? (int)bench_arg(argv[2], 1, 1000, "rounds") : 9;
    ac_loop *loop = ac_loop_new();
    char *srv_argv[] = {AGENTC_BENCH_MCP_SERVER, NULL};
    ac_mcp_config c = {0};
    c.name = "bench";
    c.argv = srv_argv;
    c.timeout_ms = 10000;
    c.start_timeout_ms = 10000;
    c.idempotent = -1;
    ac_mcp_server *s = ac_mcp_server_new(loop, &c);
    char err[512];
    if (!s || start_server(loop, s, err, sizeof err) < 0) {
        fprintf(stderr, "server: %s\n", s ? err : "out of memory");
        return 1;
    }
    json_t *args = json_pack("{s:s}", "x", "hello");
    round_mcp(loop, s, args, 50); /* warm up */
    round_spawn(loop, 20);
    double *m = calloc((size_t)rounds, sizeof *m), *p = calloc((size_t)rounds, sizeof *p),
           *r = calloc((size_t)rounds, sizeof *r);
    for (int i = 0; i < rounds; i++) {
        m[i] = round_mcp(loop, s, args, n);
        p[i] = round_spawn(loop, n / 5 > 0 ? n / 5 : 1);
        r[i] = p[i] / m[i];
    }
    qsort(m, (size_t)rounds, sizeof *m, cmp);
    qsort(p, (size_t)rounds, sizeof *p, cmp);
    qsort(r, (size_t)rounds, sizeof *r, cmp);
    printf("MCP tools/call round trip over stdio (%d calls x %d rounds, protocol %s):\n", n, rounds,
           ac_mcp_server_version(s));
    printf("  per call   min %7.1f  median %7.1f  max %7.1f us\n", m[0] * 1e6, m[rounds / 2] * 1e6,
           m[rounds - 1] * 1e6);
    printf("external tool process (ac_proc_spawn of /bin/cat, %d calls x %d rounds):\n",
           n / 5 > 0 ? n / 5 : 1, rounds);
    printf("  per call   min %7.1f  median %7.1f  max %7.1f us\n", p[0] * 1e6, p[rounds / 2] * 1e6,
           p[rounds - 1] * 1e6);
    printf("spawn time / MCP time, per round: min %.1fx  median %.1fx  max %.1fx\n", r[0],
           r[rounds / 2], r[rounds - 1]);
    free(m);
    free(p);
    free(r);
    json_decref(args);
    ac_mcp_server_free(s);
    ac_loop_free(loop);
    return 0;
}
