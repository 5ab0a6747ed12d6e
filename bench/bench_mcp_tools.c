/*
 * bench_mcp_tools.c - the cost of an MCP server that lists many tools: for each count N, an
 * engine adds a tool file whose stdio server (bench/mcp_trivial_server.c) lists N tools, and
 * the loop runs until they are registered; then a session is opened (its conversation takes
 * the N tool definitions). Prints, per N: the time until the tools are registered (the server's
 * start and listing included), the loop's longest turn meanwhile (the driver runs it with a 1 ms
 * timeout: a longer turn is a callback that held the loop, as registering the list does), and the
 * session's creation time. No assertion: figures to compare. Usage: bench_mcp_tools [N ...]
 * (default 1000 5000 20000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/agentc.h"
#include "bench_args.h"
#include "io/loop.h"
#include "session/tools_internal.h"

#ifndef AGENTC_BENCH_MCP_SERVER
#define AGENTC_BENCH_MCP_SERVER "bench_mcp_server"
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One count: 0, or -1 with the reason on stderr. */
static int run(long n)
{
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"x\"}\n";
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", err.text);
        return -1;
    }
    char text[1024];
    snprintf(text, sizeof text,
             "{\"mcp\": [{\"name\": \"b\", \"command\": [\"%s\", \"%ld\"], \"max_tools\": %ld, "
             "\"start_timeout\": \"120s\", \"timeout\": \"120s\"}]}",
             AGENTC_BENCH_MCP_SERVER, n, n + 1);
    double t0 = now_ms(), worst = 0;
    if (ac_engine_add_tools_text(e, "bench.json", text, &err) < 0) {
        fprintf(stderr, "tools: %s\n", err.text);
        return -1;
    }
    while (ac_mcp_listing(e) && now_ms() - t0 < 300000) {
        double t = now_ms();
        ac_loop_run_once(loop, 1);
        if (now_ms() - t > worst)
            worst = now_ms() - t;
    }
    double listed = now_ms() - t0;
    const ac_tool *last = NULL;
    char name[64];
    snprintf(name, sizeof name, "b::t%ld", n - 1);
    last = ac_tools_find(e, name);
    double s0 = now_ms();
    ac_session *s = ac_session_new(e, "s", NULL, &err);
    double opened = now_ms() - s0;
    if (!last || !s) {
        fprintf(stderr, "N=%ld: %s\n", n, !last ? "the tools were not registered" : err.text);
        return -1;
    }
    printf("%6ld tools: registered in %8.1f ms (longest loop turn %8.1f ms), a session opened "
           "in %7.1f ms\n",
           n, listed, worst, opened);
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
    return 0;
}

int main(int argc, char **argv)
{
    static const long dflt[] = {1000, 5000, 20000};
    int k = argc > 1 ? argc - 1 : 3;
    for (int i = 0; i < k; i++) {
        long n = argc > 1 ? (long)bench_arg(argv[i + 1], 1, 1000000, "tools") : dflt[i];
        if (run(n) < 0)
            return 1;
    }
    return 0;
}
