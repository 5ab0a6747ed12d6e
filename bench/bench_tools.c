/*
 * bench_tools.c - what running tools and compacting cost.
 *
 * 1. One external tool call's process work through ac_proc_spawn on the
 *    event loop (/bin/cat, small stdin, stdout collected) against the bare
 *    baseline measured in the same run: posix_spawn of /bin/true + waitpid.
 * 2. Compaction of a 10,000-message session, each strategy, end to end
 *    through the engine (plan in the effect, apply in the action).
 * Usage: bench_tools [spawn-iterations]
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "agentc/agentc.h"
#include "bench_args.h"
#include "context/conversation.h"
#include "io/loop.h"
#include "io/proc.h"

extern char **environ;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void cat_done(void *ud, const ac_proc_result *res)
{
    int *done = ud;
    *done = res->exited && res->exit_code == 0 && res->out_len == 14 ? 1 : -1;
}

static double bench_proc(ac_loop *loop, int n)
{
    const char *argv[] = {"/bin/cat", NULL};
    ac_proc_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.argv = argv;
    spec.stdin_data = "{\"x\":\"hello\"}\n";
    spec.stdin_len = strlen(spec.stdin_data);
    spec.timeout_ms = 10000;
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        int done = 0;
        ac_error err = {0};
        if (!ac_proc_spawn(loop, &spec, cat_done, &done, err.text, sizeof err.text)) {
            fprintf(stderr, "spawn: %s\n", err.text);
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

static double bench_posix_spawn(int n)
{
    char *argv[] = {"/bin/true", NULL};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        pid_t pid;
        int st;
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &st, 0) != pid) {
            fprintf(stderr, "posix_spawn failed\n");
            exit(1);
        }
    }
    return (now_s() - t0) / n;
}

typedef struct compact_probe {
    double t_done;
    size_t before, after;
} compact_probe;

static void on_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    (void)s;
    (void)strategy;
    compact_probe *p = ud;
    if (p->t_done == 0) {
        p->t_done = now_s();
        p->before = before;
        p->after = after;
    }
}

/* 10,000 messages: 2,000 interactions of user, call, result, answer, and
 * one extra message per 4 to reach the count exactly. */
static void fill(ac_conv *conv, size_t target)
{
    int64_t t = 1700000000000;
    char text[300], id[32];
    memset(text, 'y', 256);
    text[256] = 0;
    for (size_t i = 0; ac_conv_message_count(conv) + 4 <= target; i++) {
        ac_conv_add_message(conv, AC_ROLE_USER, "what is in the file?", t++);
        snprintf(id, sizeof id, "b%zu", i);
        ac_tool_call_in c = {id, "read", "{\"path\":\"a.txt\"}", 0};
        ac_conv_add_assistant(conv, "", NULL, &c, 1, t++);
        ac_conv_set_tool_result(conv, id, 1, text, t++);
        ac_conv_add_message(conv, AC_ROLE_ASSISTANT, "it holds many y", t++);
    }
    while (ac_conv_message_count(conv) < target)
        ac_conv_add_message(conv, AC_ROLE_USER, "more", t++);
}

static void bench_compaction(const char *strategy)
{
    ac_loop *loop = ac_loop_new();
    char p1[64];
    ac_error err;
    snprintf(p1, sizeof p1, "compaction=%s", strategy);
    const char *params[] = {p1, "compact_threshold=5000", "compaction_keep=4", NULL};
    compact_probe probe = {0, 0, 0};
    ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = &probe;
    out.compacted = on_compacted;
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"a summary of the reads\"}\n{\"content\":\"done\"}\n"
                      "{\"content\":\"done\"}\n";
    cfg.params = params;
    cfg.output = &out;
    cfg.seed = 1;
    ac_engine *e = ac_engine_new(&cfg, &err);
    ac_session *s = e ? ac_session_new(e, "b", NULL, &err) : NULL;
    if (!s) {
        fprintf(stderr, "%s\n", err.text);
        exit(1);
    }
    fill(ac_session_conv(s), 10000);
    double t0 = now_s();
    ac_session_send(s, "and now?");
    for (int i = 0; i < 1000 && probe.t_done == 0; i++)
        ac_loop_run_once(loop, 10);
    if (probe.t_done == 0) {
        fprintf(stderr, "%s: no compaction\n", strategy);
        exit(1);
    }
    printf("  %-20s %8.2f ms   messages %zu -> %zu\n", strategy, (probe.t_done - t0) * 1e3,
           probe.before, probe.after);
    ac_session_free(s);
    ac_engine_free(e);
    while (ac_loop_pending(loop))
        ac_loop_run_once(loop, 10);
    ac_loop_free(loop);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)bench_arg(argv[1], 1, 1000000, "calls") : 300;
    ac_loop *loop = ac_loop_new();
    bench_proc(loop, 10); /* warm up */
    bench_posix_spawn(10);
    double base = bench_posix_spawn(n);
    double proc = bench_proc(loop, n);
    ac_loop_free(loop);
    printf("tool process, %d runs each:\n", n);
    printf("  posix_spawn /bin/true + waitpid (baseline) %8.1f us\n", base * 1e6);
    printf("  ac_proc_spawn /bin/cat, stdin, collect    %8.1f us   ratio %.2fx\n", proc * 1e6,
           proc / base);
    printf("compaction of a 10,000-message session (send to applied, incl. estimate):\n");
    bench_compaction("sliding_window");
    bench_compaction("clear_tool_results");
    bench_compaction("summarize");
    return 0;
}
