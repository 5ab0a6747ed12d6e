/*
 * test_mcp_start.c - MCP servers never block the loop: a real engine (scripted provider) on a
 * real loop with tests/mcp/test_server.js as stdio servers. A server that starts after its
 * start_timeout (the first model call goes without its tools, the next one offers them after a
 * journaled tools.changed), one that starts in time (the first call offers them), one that
 * cannot start (the session goes on, its calls fail with the reason, the other server works,
 * it is started again with a backoff), one killed mid-call (the call fails, the server is
 * started again and the next call works), one that never answers and ignores SIGTERM (stopped
 * by timers, never waited for). In each, a 1 ms timer measures the loop's longest
 * stall (less the time the loop waited for a CPU), which must stay under STALL_MAX_MS (a functional
 * "never blocks" bound, below the shortest start it must not wait for (300 ms), that holds under
 * ASan and on a machine whose load is many times its cores; under valgrind, where everything runs
 * tens of times slower, the bound is 1 s, which still tells a loop that waited for a 2 s start; the
 * figures are printed).
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>

#include "../tools/session_rig.h"

#define STALL_MAX_MS (getenv("AGENTC_TEST_UNDER_VALGRIND") ? 1000.0 : 250.0)

/* ---- the stall meter: a 1 ms timer re-armed from itself ---- */

/* A gap between two ticks is the loop's own time (running, or blocked in a call: what a stall
 * is) plus the time it was ready to run but waited for a CPU, which a loaded machine adds
 * however the loop behaves. The latter is the kernel's runqueue wait of this thread
 * (/proc/self/schedstat, second field, in ns) and is taken off each gap; without the file
 * (a kernel without schedstats) nothing is. */
typedef struct meter {
    ac_loop *loop;
    uint64_t timer;
    int schedstat; /* /proc/self/schedstat, or -1 */
    double last, last_wait, max_gap, max_wall;
} meter;

static double runqueue_wait(const meter *m)
{
    char buf[128];
    ssize_t n = m->schedstat < 0 ? -1 : pread(m->schedstat, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0.0;
    buf[n] = 0;
    unsigned long long run, wait;
    return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? (double)wait / 1e9 : 0.0;
}

static void meter_tick(void *ud)
{
    meter *m = ud;
    double now = rig_now(), wait = runqueue_wait(m);
    double gap = (now - m->last) - (wait - m->last_wait);
    if (gap > m->max_gap)
        m->max_gap = gap;
    if (now - m->last > m->max_wall)
        m->max_wall = now - m->last;
    m->last = now;
    m->last_wait = wait;
    m->timer = ac_loop_timer(m->loop, 1, meter_tick, m);
}

static void meter_start(meter *m, ac_loop *loop)
{
    memset(m, 0, sizeof *m);
    m->loop = loop;
    m->schedstat = open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
    m->last = rig_now();
    m->last_wait = runqueue_wait(m);
    m->timer = ac_loop_timer(loop, 1, meter_tick, m);
}

/* Stops the meter; the longest stall in ms (the gap beyond the timer's 1 ms, less the wait for
 * a CPU), printed with the longest gap as the clock saw it. */
static double meter_stop(meter *m, const char *what)
{
    ac_loop_cancel_timer(m->loop, m->timer);
    if (m->schedstat >= 0)
        close(m->schedstat);
    double stall = m->max_gap * 1000.0 - 1.0;
    printf("loop's longest stall, %s: %.1f ms (longest gap on the clock %.1f ms)\n", what,
           stall < 0 ? 0.0 : stall, m->max_wall * 1000.0);
    return stall;
}

/* ---- engine, journal ---- */

static char server_js[600];

static void tool_file(char *path, size_t cap, const char *name, const char *json)
{
    rig_write(name, json, path, cap);
}

/* Opens the rig with a journal and starts the meter before the session runs. */
static void open_rig(rig *r, meter *m, const char *turns, const char *tools_path,
                     const ac_output *out, char *journal, size_t jcap)
{
    const char *tools[] = {tools_path, NULL};
    ac_error err;
    memset(r, 0, sizeof *r);
    r->loop = ac_loop_new();
    meter_start(m, r->loop);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.seed = 7;
    cfg.output = out;
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
    for (const char *const *t = tools; *t; t++)
        if (ac_engine_add_tools(r->e, *t, &err) != 0)
            fail_msg("tools %s: %s", *t, err.text);
    snprintf(journal, jcap, "%s/journal.jsonl", rig_tmp);
    r->s = ac_session_new(r->e, "s1", journal, &err);
    if (!r->s)
        fail_msg("session: %s", err.text);
}

/* Runs the loop until the session settles, at most 30 s (the meter's timer wakes the loop
 * every millisecond: the bound is on the clock). */
static void settle(rig *r)
{
    for (double end = rig_now() + 30.0; rig_now() < end && !ac_session_settled(r->s);)
        ac_loop_run_once(r->loop, 20);
    if (!ac_session_settled(r->s)) {
        char cmd[700];
        snprintf(cmd, sizeof cmd, "cut -c1-300 %s/journal.jsonl >&2", rig_tmp);
        if (system(cmd) != 0)
            fail_msg("no journal");
        fail_msg("the session did not settle");
    }
}

/* Closes the rig (the servers are stopped by their timers, within the loop's free). */
static void close_rig(rig *r)
{
    ac_session_free(r->s);
    ac_engine_free(r->e);
    ac_loop_free(r->loop);
}

/* The journal's events as "ev" names and, for tools.changed, whether the offered list holds
 * tool: "T+" (it does) or "T-"; one letter per event kept: L (llm.started), T+/T-. */
static void journal_story(const char *path, const char *tool, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[65536];
    out[0] = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        const char *ev = json_string_value(json_object_get(j, "ev"));
        const char *add = NULL;
        if (ev && !strcmp(ev, "llm.started"))
            add = "L ";
        if (ev && !strcmp(ev, "tools.changed")) {
            add = "T- ";
            json_t *tools = json_object_get(json_object_get(j, "data"), "tools");
            size_t i;
            json_t *t;
            json_array_foreach(tools, i, t)
            {
                const char *n = json_string_value(json_object_get(t, "name"));
                if (n && !strcmp(n, tool))
                    add = "T+ ";
            }
        }
        if (add && strlen(out) + strlen(add) < cap)
            strcat(out, add);
        json_decref(j);
    }
    fclose(f);
}

/* ---- the tests ---- */

static const char *two_turns = "{\"tool_calls\":[{\"id\":\"a\",\"name\":\"wait3\","
                               "\"arguments\":\"{}\"}]}\n"
                               "{\"tool_calls\":[{\"id\":\"b\",\"name\":\"late::echo\","
                               "\"arguments\":\"{\\\"text\\\":\\\"hi\\\"}\"}]}\n"
                               "{\"content\":\"done\"}\n";

/* Starts after 2 s, start_timeout 1 s: the first model call goes at about 1 s without its
 * tools; the server is ready before the second (after a 3 s tool), which offers them after
 * tools.changed. */
static void test_starts_late(void **st)
{
    (void)st;
    char tools[600], text[1200], journal[600], story[512];
    snprintf(text, sizeof text,
             "{\"tools\":[{\"name\":\"wait3\",\"description\":\"3 s\",\"command\":[\"sh\","
             "\"-c\",\"sleep 3; echo 3\"]}],"
             "\"mcp\":[{\"name\":\"late\",\"command\":[\"node\",\"%s\",\"--start-delay\","
             "\"2000\"],\"start_timeout\":\"1s\"}]}",
             server_js);
    tool_file(tools, sizeof tools, "late.json", text);
    rig r;
    meter m;
    open_rig(&r, &m, two_turns, tools, NULL, journal, sizeof journal);
    double t0 = rig_now();
    ac_session_send(r.s, "go");
    settle(&r);
    double took = rig_now() - t0;
    double stall = meter_stop(&m, "a server starting after its start_timeout");
    assert_string_equal(ac_session_answer(r.s), "done");
    assert_string_equal(rig_result(&r, "b", 1), "hi");
    journal_story(journal, "late::echo", story, sizeof story);
    /* the first call without its tools, the list with them before the second */
    if (strcmp(story, "L T+ L L "))
        fail_msg("journal: %s", story);
    assert_true(took < 10.0);
    close_rig(&r);
    assert_true(stall < STALL_MAX_MS);
}

/* Starts after 300 ms, start_timeout 5 s: the first model call waits for it and offers its
 * tools. */
static void test_starts_in_time(void **st)
{
    (void)st;
    char tools[600], text[1000], journal[600], story[512];
    snprintf(text, sizeof text,
             "{\"mcp\":[{\"name\":\"late\",\"command\":[\"node\",\"%s\",\"--start-delay\","
             "\"300\"],\"start_timeout\":\"20s\"}]}",
             server_js);
    tool_file(tools, sizeof tools, "intime.json", text);
    const char *turns = "{\"tool_calls\":[{\"id\":\"b\",\"name\":\"late::echo\","
                        "\"arguments\":\"{\\\"text\\\":\\\"hi\\\"}\"}]}\n"
                        "{\"content\":\"done\"}\n";
    rig r;
    meter m;
    open_rig(&r, &m, turns, tools, NULL, journal, sizeof journal);
    ac_session_send(r.s, "go");
    settle(&r);
    double stall = meter_stop(&m, "a server starting within its start_timeout");
    assert_string_equal(rig_result(&r, "b", 1), "hi");
    journal_story(journal, "late::echo", story, sizeof story);
    if (strcmp(story, "T+ L L "))
        fail_msg("journal: %s", story);
    close_rig(&r);
    assert_true(stall < STALL_MAX_MS);
}

/* One server cannot be run, the other works: the session goes on, the calls to the first fail
 * with the reason; the first is started again with a growing backoff meanwhile. */
static void test_cannot_start(void **st)
{
    (void)st;
    char tools[600], text[1000], journal[600];
    snprintf(text, sizeof text,
             "{\"mcp\":[{\"name\":\"bad\",\"command\":[\"no-such-mcp-server-cmd\"]},"
             "{\"name\":\"t\",\"command\":[\"node\",\"%s\"],\"start_timeout\":\"20s\"}]}",
             server_js);
    tool_file(tools, sizeof tools, "bad.json", text);
    const char *turns = "{\"tool_calls\":[{\"id\":\"b\",\"name\":\"bad::echo\","
                        "\"arguments\":\"{}\"},{\"id\":\"t\",\"name\":\"t::echo\","
                        "\"arguments\":\"{\\\"text\\\":\\\"works\\\"}\"}]}\n"
                        "{\"content\":\"done\"}\n";
    rig r;
    meter m;
    open_rig(&r, &m, turns, tools, NULL, journal, sizeof journal);
    ac_session_send(r.s, "go");
    settle(&r);
    for (double end = rig_now() + 1.0; rig_now() < end;) /* restarts with their backoff */
        ac_loop_run_once(r.loop, 20);
    double stall = meter_stop(&m, "a server that cannot start, restarted");
    assert_string_equal(ac_session_answer(r.s), "done");
    const char *res = rig_result(&r, "b", 0);
    if (!strstr(res, "MCP server 'bad' could not start: cannot run 'no-such-mcp-server-cmd'"))
        fail_msg("result: %s", res);
    assert_string_equal(rig_result(&r, "t", 1), "works");
    close_rig(&r);
    assert_true(stall < STALL_MAX_MS);
}

static int tool_started;

static void on_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *arguments)
{
    (void)ud, (void)s, (void)id, (void)name, (void)arguments;
    tool_started = 1;
}

/* kill -9 of the server during a call: the call fails with the reason, the server is started
 * again, the next call works. */
static void test_killed_mid_call(void **st)
{
    (void)st;
    char tools[600], text[1000], journal[600], starts[600];
    snprintf(starts, sizeof starts, "%s/starts", rig_tmp);
    snprintf(text, sizeof text,
             "{\"mcp\":[{\"name\":\"t\",\"command\":[\"node\",\"%s\",\"--starts\",\"%s\"],"
             "\"start_timeout\":\"20s\"}]}",
             server_js, starts);
    tool_file(tools, sizeof tools, "kill.json", text);
    const char *turns = "{\"tool_calls\":[{\"id\":\"k\",\"name\":\"t::slow\","
                        "\"arguments\":\"{\\\"ms\\\":5000}\"}]}\n"
                        "{\"tool_calls\":[{\"id\":\"e\",\"name\":\"t::echo\","
                        "\"arguments\":\"{\\\"text\\\":\\\"back\\\"}\"}]}\n"
                        "{\"content\":\"done\"}\n";
    static ac_output out = {.tool_start = on_tool_start};
    tool_started = 0;
    rig r;
    meter m;
    open_rig(&r, &m, turns, tools, &out, journal, sizeof journal);
    ac_session_send(r.s, "go");
    for (double end = rig_now() + 30.0; rig_now() < end && !tool_started;)
        ac_loop_run_once(r.loop, 20);
    assert_true(tool_started);
    for (double end = rig_now() + 0.3; rig_now() < end;) /* the call reaches the server */
        ac_loop_run_once(r.loop, 20);
    FILE *f = fopen(starts, "r");
    assert_non_null(f);
    long pid = 0;
    assert_int_equal(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    assert_int_equal(kill((pid_t)pid, SIGKILL), 0);
    settle(&r);
    double stall = meter_stop(&m, "a server killed mid-call, restarted");
    const char *res = rig_result(&r, "k", 0);
    if (!strstr(res, "MCP server 't' exited (killed by signal 9)"))
        fail_msg("result: %s", res);
    assert_string_equal(rig_result(&r, "e", 1), "back");
    assert_string_equal(ac_session_answer(r.s), "done");
    close_rig(&r);
    assert_true(stall < STALL_MAX_MS);
}

/* A server that never answers and ignores stdin's EOF and SIGTERM: its handshake fails after
 * 1 s and it is stopped by io/proc's timers (SIGTERM, then SIGKILL), never waited for; its
 * call fails with the reason. */
static void test_stopped_without_waiting(void **st)
{
    (void)st;
    char tools[600], journal[600];
    tool_file(tools, sizeof tools, "deaf.json",
              "{\"mcp\":[{\"name\":\"deaf\",\"command\":[\"sh\",\"-c\",\"trap '' TERM; "
              "while :; do sleep 0.05; done\"],\"start_timeout\":\"1s\",\"timeout\":\"1s\"}]}");
    const char *turns = "{\"tool_calls\":[{\"id\":\"d\",\"name\":\"deaf::echo\","
                        "\"arguments\":\"{}\"}]}\n"
                        "{\"content\":\"done\"}\n";
    rig r;
    meter m;
    open_rig(&r, &m, turns, tools, NULL, journal, sizeof journal);
    ac_session_send(r.s, "go");
    settle(&r);
    for (double end = rig_now() + 1.0; rig_now() < end;) /* the SIGKILL after the SIGTERM */
        ac_loop_run_once(r.loop, 20);
    double stall = meter_stop(&m, "a deaf server stopped");
    const char *res = rig_result(&r, "d", 0);
    if (!strstr(res, "MCP server 'deaf' did not complete the handshake within 1000 ms"))
        fail_msg("result: %s", res);
    assert_string_equal(ac_session_answer(r.s), "done");
    close_rig(&r);
    assert_true(stall < STALL_MAX_MS);
}

static int node_missing(void)
{
    return system("node --version >/dev/null 2>&1") != 0;
}

int main(void)
{
    if (node_missing()) {
        printf("SKIP: node is not installed\n");
        return 0;
    }
    char cwd[400];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(server_js, sizeof server_js, "%s/tests/mcp/test_server.js", cwd);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starts_late),
        cmocka_unit_test(test_starts_in_time),
        cmocka_unit_test(test_cannot_start),
        cmocka_unit_test(test_killed_mid_call),
        cmocka_unit_test(test_stopped_without_waiting),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
