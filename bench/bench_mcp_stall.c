/*
 * bench_mcp_stall.c - the loop's longest stall around MCP servers, and how long
 * ac_engine_add_tools holds its caller, over rounds (min/median/max), for three scenarios
 * with tests/mcp/test_server.js as a stdio server (node needed):
 *   start  a server ready 2 s after it starts; one call to it
 *   crash  kill -9 of the server during a call; the next call restarts it
 *   stop   a server that never answers and ignores stdin's EOF and SIGTERM (1 s timeouts)
 * A 1 ms timer re-armed from itself records the longest gap between its firings. Only the
 * public API and ac_loop_timer are used, so the same file builds against an older tree for a
 * before/after comparison. Run: build/bench_mcp_stall [rounds]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "agentc/agentc.h"
#include "io/loop.h"

#ifndef AGENTC_BENCH_TEST_SERVER
#define AGENTC_BENCH_TEST_SERVER "tests/mcp/test_server.js"
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct meter {
    ac_loop *loop;
    uint64_t timer;
    double last, max;
} meter;

static void tick(void *ud)
{
    meter *m = ud;
    double n = now_s();
    if (n - m->last > m->max)
        m->max = n - m->last;
    m->last = n;
    m->timer = ac_loop_timer(m->loop, 1, tick, m);
}

static int started;

static void on_start(void *ud, ac_session *s, const char *id, const char *name, const char *a)
{
    (void)ud, (void)s, (void)id, (void)name, (void)a;
    started = 1;
}

static void run_for(ac_loop *l, double secs, ac_session *s)
{
    for (double end = now_s() + secs; now_s() < end && !(s && ac_session_settled(s));)
        ac_loop_run_once(l, 20);
}

/* kill -9 of the pid the test server wrote, once a call runs. */
static void kill_mid_call(ac_loop *loop, const char *starts)
{
    for (double end = now_s() + 20; now_s() < end && !started;)
        ac_loop_run_once(loop, 20);
    run_for(loop, 0.3, NULL);
    FILE *p = fopen(starts, "r");
    long pid = 0;
    if (p && fscanf(p, "%ld", &pid) == 1 && pid > 0)
        kill((pid_t)pid, SIGKILL);
    if (p)
        fclose(p);
}

/* One round: *stall_ms the loop's longest stall, *add_ms how long adding the tools took. */
static void round_of(const char *tools, const char *turns, const char *starts, double *stall_ms,
                     double *add_ms)
{
    ac_loop *loop = ac_loop_new();
    meter m = {loop, 0, now_s(), 0};
    m.timer = ac_loop_timer(loop, 1, tick, &m);
    static ac_output out = {.tool_start = on_start};
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.output = &out;
    ac_error err;
    ac_engine *e = ac_engine_new(&cfg, &err);
    double t0 = now_s();
    int rc = e ? ac_engine_add_tools(e, tools, &err) : -1;
    *add_ms = (now_s() - t0) * 1000;
    ac_session *s = rc == 0 ? ac_session_new(e, "s1", NULL, &err) : NULL;
    started = 0;
    if (s && ac_session_send(s, "go") == 0 && starts)
        kill_mid_call(loop, starts);
    run_for(loop, 20, s);
    run_for(loop, 2.0, NULL); /* restarts, stops */
    *stall_ms = m.max * 1000 - 1 > 0 ? m.max * 1000 - 1 : 0;
    ac_loop_cancel_timer(loop, m.timer);
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n, const char *unit)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%-6s %-26s %8.1f / %8.1f / %8.1f %s (min/median/max)\n", what, unit, v[0], v[n / 2],
           v[n - 1], "ms");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? (int)bench_arg(argv[1], 1, 100, "rounds") : 5;
    if (system("node --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "usage: bench_mcp_stall [rounds 1-100] (node needed)\n");
        return 2;
    }
    char dir[] = "/tmp/agentc-stall-XXXXXX", tools[3][128], starts[128], text[1024];
    if (!mkdtemp(dir))
        return 1;
    const char *js = AGENTC_BENCH_TEST_SERVER;
    snprintf(starts, sizeof starts, "%s/starts", dir);
    for (int i = 0; i < 3; i++)
        snprintf(tools[i], sizeof tools[i], "%s/t%d.json", dir, i);
    snprintf(text, sizeof text,
             "{\"mcp\":[{\"name\":\"t\",\"command\":[\"node\",\"%s\",\"--start-delay\",\"2000\"],"
             "\"start_timeout\":\"10s\"}]}",
             js);
    write_file(tools[0], text);
    snprintf(text, sizeof text,
             "{\"mcp\":[{\"name\":\"t\",\"command\":[\"node\",\"%s\",\"--starts\",\"%s\"],"
             "\"start_timeout\":\"10s\"}]}",
             js, starts);
    write_file(tools[1], text);
    write_file(tools[2], "{\"mcp\":[{\"name\":\"t\",\"command\":[\"sh\",\"-c\",\"trap '' TERM; "
                         "while :; do sleep 0.05; done\"],\"start_timeout\":\"1s\","
                         "\"timeout\":\"1s\"}]}");
    const char *echo = "{\"tool_calls\":[{\"id\":\"b\",\"name\":\"t::echo\",\"arguments\":"
                       "\"{\\\"text\\\":\\\"hi\\\"}\"}]}\n{\"content\":\"done\"}\n";
    char crash[400];
    snprintf(crash, sizeof crash,
             "{\"tool_calls\":[{\"id\":\"k\",\"name\":\"t::slow\",\"arguments\":"
             "\"{\\\"ms\\\":5000}\"}]}\n%s",
             echo);
    const char *names[3] = {"start", "crash", "stop"};
    double stall[3][100], add[3][100];
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 3; i++) {
            unlink(starts);
            round_of(tools[i], i == 1 ? crash : echo, i == 1 ? starts : NULL, &stall[i][r],
                     &add[i][r]);
        }
    for (int i = 0; i < 3; i++) {
        report(names[i], stall[i], rounds, "loop's longest stall");
        report(names[i], add[i], rounds, "ac_engine_add_tools held");
    }
    for (int i = 0; i < 3; i++)
        unlink(tools[i]);
    unlink(starts);
    rmdir(dir);
    return 0;
}
