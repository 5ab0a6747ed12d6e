/* Child processes on the loop: output, exit status, stderr tail, timeouts that kill the whole
 * process group, output caps, binary data, stdin edge cases, exec failures, kill and free,
 * streaming children (stdout as it comes, stdin kept open, stops by timers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/loop.h"
#include "io/proc.h"

typedef struct outcome {
    int calls;
    ac_proc_result res; /* out/err_tail replaced by the copies below */
    char *out;
    char *err;
} outcome;

static void on_done(void *ud, const ac_proc_result *res)
{
    outcome *o = ud;
    o->calls++;
    o->res = *res;
    o->out = malloc(res->out_len + 1);
    memcpy(o->out, res->out, res->out_len + 1); /* includes the NUL after out_len */
    o->err = malloc(res->err_len + 1);
    memcpy(o->err, res->err_tail, res->err_len + 1);
    o->res.out = o->out;
    o->res.err_tail = o->err;
}

static void outcome_free(outcome *o)
{
    free(o->out);
    free(o->err);
}

/* Spawns, runs the loop until everything is done, returns the outcome. */
static outcome run(const ac_proc_spec *spec)
{
    ac_loop *loop = ac_loop_new();
    outcome o;
    memset(&o, 0, sizeof o);
    char err[256];
    uint64_t id = ac_proc_spawn(loop, spec, on_done, &o, err, sizeof err);
    if (id == 0)
        fail_msg("spawn: %s", err);
    assert_int_equal(ac_proc_active(loop), 1);
    ac_loop_run(loop);
    assert_int_equal(o.calls, 1);
    assert_int_equal(ac_proc_active(loop), 0);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_proc_kill(loop, id); /* finished: no-op */
    ac_loop_free(loop);
    return o;
}

/* Gone, or a zombie waiting for whoever inherited it. */
static int process_gone(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp && (rp[2] == 'Z' || rp[2] == 'X');
}

/* SIGKILL is delivered asynchronously: give the kernel up to 5 s. */
static int wait_gone(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        if (process_gone(pid))
            return 1;
        usleep(10000);
    }
    return 0;
}

static void success_with_output(void **state)
{
    (void)state;
    const char *argv[] = {"printf", "%s-%s", "hello", "world", NULL};
    ac_proc_spec spec = {.argv = argv};
    outcome o = run(&spec);
    assert_true(o.res.exited);
    assert_int_equal(o.res.exit_code, 0);
    assert_false(o.res.signaled || o.res.timed_out || o.res.truncated || o.res.spawn_failed);
    assert_string_equal(o.out, "hello-world");
    assert_int_equal(o.res.out_len, 11);
    assert_int_equal(o.res.err_len, 0);
    assert_true(o.res.pid > 0);
    assert_true(o.res.duration_ms >= 0);
    outcome_free(&o);
}

static void nonzero_exit_keeps_stderr_tail(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c",
                          "echo out; echo first-line >&2; printf 0123456789 >&2; exit 3", NULL};
    ac_proc_spec spec = {.argv = argv, .max_stderr_tail = 6};
    outcome o = run(&spec);
    assert_true(o.res.exited);
    assert_int_equal(o.res.exit_code, 3);
    assert_string_equal(o.out, "out\n");
    assert_int_equal(o.res.err_len, 6);
    assert_string_equal(o.err, "456789");
    outcome_free(&o);
}

static void stderr_tail_across_many_writes(void **state)
{
    (void)state;
    /* 2000 lines through the ring: only the end survives, in order. */
    const char *argv[] = {"sh", "-c",
                          "i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done", NULL};
    ac_proc_spec spec = {.argv = argv, .max_stderr_tail = 20};
    outcome o = run(&spec);
    assert_int_equal(o.res.exit_code, 0);
    assert_int_equal(o.res.err_len, 20);
    assert_string_equal(o.err, "7\nline1998\nline1999\n");
    outcome_free(&o);
}

static void timeout_kills_the_whole_process_group(void **state)
{
    (void)state;
    /* The background sleep is a grandchild: only a group kill reaches it. */
    const char *argv[] = {"sh", "-c", "sleep 100 & echo $!; sleep 100", NULL};
    ac_proc_spec spec = {.argv = argv, .timeout_ms = 300};
    outcome o = run(&spec);
    assert_true(o.res.timed_out);
    assert_true(o.res.signaled);
    assert_false(o.res.exited);
    assert_true(o.res.signal == SIGTERM || o.res.signal == SIGKILL);
    pid_t grandchild = (pid_t)atoi(o.out);
    assert_true(grandchild > 0);
    assert_true(wait_gone(grandchild));
    assert_true(wait_gone(o.res.pid));
    outcome_free(&o);
}

static void timeout_escalates_to_sigkill(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done", NULL};
    ac_proc_spec spec = {.argv = argv, .timeout_ms = 200};
    outcome o = run(&spec);
    assert_true(o.res.timed_out);
    assert_true(o.res.signaled);
    assert_int_equal(o.res.signal, SIGKILL);
    assert_true(o.res.duration_ms >= 200 + AC_PROC_KILL_GRACE_MS);
    assert_string_equal(o.out, "ready\n");
    outcome_free(&o);
}

static void huge_output_is_cut_at_max_stdout(void **state)
{
    (void)state;
    const char *argv[] = {"head", "-c", "52428800", "/dev/zero", NULL};
    ac_proc_spec spec = {.argv = argv, .max_stdout = 1 << 20};
    outcome o = run(&spec);
    assert_true(o.res.truncated);
    assert_int_equal(o.res.out_len, 1 << 20);
    /* Read and discarded, not killed: the writer finished normally. */
    assert_true(o.res.exited);
    assert_int_equal(o.res.exit_code, 0);
    outcome_free(&o);
}

static void binary_output_kept_as_bytes(void **state)
{
    (void)state;
    const char *argv[] = {"printf", "a\\000b\\377\\000\\001c", NULL};
    ac_proc_spec spec = {.argv = argv};
    outcome o = run(&spec);
    static const char want[] = {'a', 0, 'b', (char)0xff, 0, 1, 'c'};
    assert_int_equal(o.res.out_len, sizeof want);
    assert_memory_equal(o.out, want, sizeof want);
    outcome_free(&o);
}

static void stdin_round_trips_through_cat(void **state)
{
    (void)state;
    size_t n = 3u << 20;
    char *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (char)((i * 7919) >> 3);
    const char *argv[] = {"cat", NULL};
    ac_proc_spec spec = {.argv = argv, .stdin_data = data, .stdin_len = n, .max_stdout = n};
    outcome o = run(&spec);
    assert_int_equal(o.res.exit_code, 0);
    assert_false(o.res.truncated);
    assert_int_equal(o.res.out_len, n);
    assert_memory_equal(o.out, data, n);
    outcome_free(&o);
    free(data);
}

static void child_closing_stdin_early_is_fine(void **state)
{
    (void)state;
    size_t n = 10u << 20;
    char *data = calloc(1, n);
    const char *argv[] = {"true", NULL};
    ac_proc_spec spec = {.argv = argv, .stdin_data = data, .stdin_len = n};
    outcome o = run(&spec); /* we are still alive: no SIGPIPE death */
    assert_true(o.res.exited);
    assert_int_equal(o.res.exit_code, 0);
    outcome_free(&o);
    free(data);
}

static void child_never_reading_stdin_does_not_hang(void **state)
{
    (void)state;
    size_t n = 10u << 20;
    char *data = calloc(1, n);
    const char *argv[] = {"sleep", "0.2", NULL};
    ac_proc_spec spec = {.argv = argv, .stdin_data = data, .stdin_len = n};
    outcome o = run(&spec);
    assert_true(o.res.exited);
    assert_int_equal(o.res.exit_code, 0);
    assert_false(o.res.timed_out);
    outcome_free(&o);
    free(data);
}

static void missing_program_reports_spawn_failure(void **state)
{
    (void)state;
    const char *by_path[] = {"agentc-no-such-program-xyz", NULL};
    ac_proc_spec spec = {.argv = by_path};
    outcome o = run(&spec);
    assert_true(o.res.spawn_failed);
    assert_int_equal(o.res.spawn_errno, ENOENT);
    assert_false(o.res.exited);
    assert_int_equal(o.res.out_len, 0);
    outcome_free(&o);

    /* A file without execute permission. */
    char tmpl[] = "/tmp/agentc-noexec-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
    fchmod(fd, 0644);
    close(fd);
    const char *not_exec[] = {tmpl, NULL};
    spec.argv = not_exec;
    o = run(&spec);
    unlink(tmpl);
    assert_true(o.res.spawn_failed);
    assert_int_equal(o.res.spawn_errno, EACCES);
    outcome_free(&o);
}

static void bad_spec_is_an_error_not_a_crash(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    char err[128];
    const char *empty[] = {NULL};
    ac_proc_spec spec = {.argv = empty};
    assert_int_equal(ac_proc_spawn(loop, &spec, on_done, NULL, err, sizeof err), 0);
    assert_true(strlen(err) > 0);
    assert_int_equal(ac_proc_spawn(loop, NULL, on_done, NULL, err, sizeof err), 0);
    const char *argv[] = {"true", NULL};
    const char *env[] = {"NOEQUALS", NULL};
    spec.argv = argv;
    spec.env_add = env;
    err[0] = '\0';
    assert_int_equal(ac_proc_spawn(loop, &spec, on_done, NULL, err, sizeof err), 0);
    assert_non_null(strstr(err, "NOEQUALS"));
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

static void env_add_extends_and_overrides(void **state)
{
    (void)state;
    setenv("AC_TEST_OVERRIDE", "old", 1);
    const char *argv[] = {"sh", "-c",
                          "printf '%s|%s|%s' \"$AC_TEST_NEW\" \"$AC_TEST_OVERRIDE\" "
                          "\"${HOME:+home}\"",
                          NULL};
    const char *env[] = {"AC_TEST_NEW=fresh value", "AC_TEST_OVERRIDE=new", NULL};
    ac_proc_spec spec = {.argv = argv, .env_add = env};
    outcome o = run(&spec);
    const char *home = getenv("HOME");
    char want[64];
    snprintf(want, sizeof want, "fresh value|new|%s", home && *home ? "home" : "");
    assert_string_equal(o.out, want);
    outcome_free(&o);
    unsetenv("AC_TEST_OVERRIDE");
}

static void only_stdio_fds_reach_the_child(void **state)
{
    (void)state;
    /* An fd without close-on-exec in the parent must still not leak. */
    int leak = dup2(0, 200);
    assert_int_equal(leak, 200);
    const char *argv[] = {"sh", "-c", "ls /proc/$$/fd", NULL};
    ac_proc_spec spec = {.argv = argv};
    outcome o = run(&spec);
    close(leak);
    /* sh may hold one fd of its own (e.g. 10 for the script); ours are not there. */
    int count_std = 0;
    for (const char *line = o.out; *line;) {
        int fd = atoi(line);
        if (fd <= 2)
            count_std++;
        assert_int_not_equal(fd, 200);
        const char *nl = strchr(line, '\n');
        line = nl ? nl + 1 : line + strlen(line);
    }
    assert_int_equal(count_std, 3);
    outcome_free(&o);
}

static void killed_by_signal_is_reported(void **state)
{
    (void)state;
    const char *argv[] = {"sh", "-c", "kill -9 $$", NULL};
    ac_proc_spec spec = {.argv = argv};
    outcome o = run(&spec);
    assert_true(o.res.signaled);
    assert_int_equal(o.res.signal, SIGKILL);
    assert_false(o.res.timed_out);
    outcome_free(&o);
}

static void never_called(void *ud, const ac_proc_result *res)
{
    (void)ud;
    (void)res;
    fail_msg("done called for a killed process");
}

static void kill_reaps_now_without_callback(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    const char *argv[] = {"sleep", "100", NULL};
    ac_proc_spec spec = {.argv = argv};
    char err[128];
    uint64_t id = ac_proc_spawn(loop, &spec, never_called, NULL, err, sizeof err);
    assert_int_not_equal(id, 0);
    pid_t pid = ac_proc_pid(loop, id);
    assert_true(pid > 0);
    ac_loop_run_once(loop, 20);
    ac_proc_kill(loop, id);
    /* Reaped already: not our child any more, no zombie. */
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    assert_int_equal(ac_proc_active(loop), 0);
    assert_int_equal(ac_proc_pid(loop, id), -1);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_proc_kill(loop, id); /* twice: no-op */
    for (int i = 0; i < 3; i++)
        ac_loop_run_once(loop, 10);
    ac_loop_free(loop);
}

/* ---- streaming children (servers): stdout as it comes, stdin kept open, stop by timers ---- */

typedef struct stream_rec {
    char got[256];
    size_t n;
    outcome o;
} stream_rec;

static void on_bytes(void *ud, const char *data, size_t len)
{
    stream_rec *r = ud;
    for (size_t i = 0; i < len && r->n + 1 < sizeof r->got; i++)
        r->got[r->n++] = data[i];
    r->got[r->n] = 0;
}

static void on_stream_done(void *ud, const ac_proc_result *res)
{
    on_done(&((stream_rec *)ud)->o, res);
}

static void run_until_text(ac_loop *loop, stream_rec *r, const char *want)
{
    for (int i = 0; i < 500 && !strstr(r->got, want); i++)
        ac_loop_run_once(loop, 10);
    assert_non_null(strstr(r->got, want));
}

/* Two exchanges with cat on the same stdin, then EOF: cat exits 0, stdout was handed over as it
 * came (the result holds none of it). */
static void streaming_child_round_trips(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    const char *argv[] = {"cat", NULL};
    stream_rec r;
    memset(&r, 0, sizeof r);
    ac_proc_spec spec = {.argv = argv, .on_stdout = on_bytes};
    char err[128];
    uint64_t id = ac_proc_spawn(loop, &spec, on_stream_done, &r, err, sizeof err);
    assert_int_not_equal(id, 0);
    assert_int_equal(ac_proc_write(loop, id, "one\n", 4), 0);
    run_until_text(loop, &r, "one\n");
    assert_int_equal(ac_proc_write(loop, id, "two\n", 4), 0);
    run_until_text(loop, &r, "one\ntwo\n");
    assert_int_equal(r.o.calls, 0); /* still running, stdin open */
    ac_proc_close_stdin(loop, id);
    assert_int_equal(ac_proc_write(loop, id, "x", 1), -1);
    ac_loop_run(loop);
    assert_int_equal(r.o.calls, 1);
    assert_true(r.o.res.exited);
    assert_int_equal(r.o.res.exit_code, 0);
    assert_int_equal(r.o.res.out_len, 0);
    outcome_free(&r.o);
    ac_loop_free(loop);
}

/* A child that ignores stdin's EOF and SIGTERM: ac_proc_stop returns at once, SIGTERM and then
 * SIGKILL come from timers, the child is reaped, done is never called. */
static void stop_escalates_by_timers(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done",
                          NULL};
    stream_rec r;
    memset(&r, 0, sizeof r);
    ac_proc_spec spec = {.argv = argv, .on_stdout = on_bytes};
    char err[128];
    uint64_t id = ac_proc_spawn(loop, &spec, never_called, &r, err, sizeof err);
    assert_int_not_equal(id, 0);
    run_until_text(loop, &r, "ready");
    pid_t pid = ac_proc_pid(loop, id);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ac_proc_stop(loop, id, 50);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(ms < 20); /* never waits */
    assert_int_equal(ac_proc_active(loop), 1);
    ac_loop_run(loop); /* until the SIGKILL 50 + 500 ms later and the reap */
    assert_int_equal(ac_proc_active(loop), 0);
    assert_true(process_gone(pid));
    ac_loop_free(loop);
}

/* ac_loop_free gives a child being stopped a moment to exit on its own (stdin's EOF). */
static void loop_free_lets_stopping_children_exit(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    const char *argv[] = {"cat", NULL};
    stream_rec r;
    memset(&r, 0, sizeof r);
    ac_proc_spec spec = {.argv = argv, .on_stdout = on_bytes};
    char err[128];
    uint64_t id = ac_proc_spawn(loop, &spec, never_called, &r, err, sizeof err);
    assert_int_not_equal(id, 0);
    pid_t pid = ac_proc_pid(loop, id);
    ac_proc_stop(loop, id, 1000);
    ac_loop_free(loop);
    assert_true(process_gone(pid));
}

/* A cap of SIZE_MAX means no cap (it once wrapped to a 0-byte buffer). */
static void unlimited_max_stdout(void **state)
{
    (void)state;
    const char *argv[] = {"printf", "hello", NULL};
    ac_proc_spec spec = {.argv = argv, .max_stdout = SIZE_MAX};
    outcome o = run(&spec);
    assert_true(o.res.exited);
    assert_string_equal(o.out, "hello");
    assert_false(o.res.truncated);
    outcome_free(&o);
}

/* A child that moves itself out of its process group (into ours) is still
 * timed out and killed: signals go to the child too, not only its group.
 * (If they did not, it would exit normally after 30 s.) */
static const char *leave_group[] = {"perl", "-e", "setpgrp(0, getpgrp(getppid())); sleep 30", NULL};

static void child_leaving_its_group_times_out(void **state)
{
    (void)state;
    ac_proc_spec spec = {.argv = leave_group, .timeout_ms = 300};
    outcome o = run(&spec);
    assert_true(o.res.timed_out);
    assert_true(o.res.signaled);
    assert_false(o.res.exited);
    outcome_free(&o);
}

static void kill_reaches_a_child_that_left_its_group(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_proc_spec spec = {.argv = leave_group};
    char err[128];
    uint64_t id = ac_proc_spawn(loop, &spec, never_called, NULL, err, sizeof err);
    assert_int_not_equal(id, 0);
    pid_t pid = ac_proc_pid(loop, id);
    /* let it leave its group first */
    for (int i = 0; i < 100 && getpgid(pid) != getpgrp(); i++)
        ac_loop_run_once(loop, 10);
    assert_int_equal(getpgid(pid), getpgrp());
    ac_proc_kill(loop, id); /* returns once the child is gone and reaped */
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    ac_loop_free(loop);
}

static void loop_free_kills_live_children(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    char tmpl[] = "/tmp/agentc-proc-XXXXXX";
    int tfd = mkstemp(tmpl);
    assert_true(tfd >= 0);
    close(tfd);
    char script[256];
    snprintf(script, sizeof script, "sleep 100 & echo $! > %s; sleep 100", tmpl);
    const char *argv[] = {"sh", "-c", script, NULL};
    ac_proc_spec spec = {.argv = argv};
    pid_t pids[3];
    char err[128];
    for (int i = 0; i < 3; i++) {
        uint64_t id = ac_proc_spawn(loop, &spec, never_called, NULL, err, sizeof err);
        assert_int_not_equal(id, 0);
        pids[i] = ac_proc_pid(loop, id);
    }
    assert_int_equal(ac_proc_active(loop), 3);
    /* Wait (on the loop) until the last script wrote its grandchild's pid. */
    pid_t grandchild = 0;
    for (int i = 0; i < 500 && grandchild <= 0; i++) {
        ac_loop_run_once(loop, 10);
        FILE *f = fopen(tmpl, "r");
        if (f) {
            int g = 0;
            if (fscanf(f, "%d", &g) == 1)
                grandchild = g;
            fclose(f);
        }
    }
    assert_true(grandchild > 0);
    ac_loop_free(loop);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(waitpid(pids[i], NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
    }
    assert_true(wait_gone(grandchild));
    unlink(tmpl);
}

typedef struct many {
    int done;
    int ok;
} many;

static void many_done(void *ud, const ac_proc_result *res)
{
    many *m = ud;
    m->done++;
    if (res->exited && res->exit_code == 0 && res->out_len > 0)
        m->ok++;
}

static void many_children_in_parallel(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    many m = {0, 0};
    const char *argv[] = {"sh", "-c", "sleep 0.1; echo $$", NULL};
    ac_proc_spec spec = {.argv = argv};
    char err[128];
    for (int i = 0; i < 40; i++)
        assert_int_not_equal(ac_proc_spawn(loop, &spec, many_done, &m, err, sizeof err), 0);
    assert_int_equal(ac_proc_active(loop), 40);
    ac_loop_run(loop);
    assert_int_equal(m.done, 40);
    assert_int_equal(m.ok, 40);
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(success_with_output),
        cmocka_unit_test(streaming_child_round_trips),
        cmocka_unit_test(stop_escalates_by_timers),
        cmocka_unit_test(loop_free_lets_stopping_children_exit),
        cmocka_unit_test(nonzero_exit_keeps_stderr_tail),
        cmocka_unit_test(stderr_tail_across_many_writes),
        cmocka_unit_test(timeout_kills_the_whole_process_group),
        cmocka_unit_test(timeout_escalates_to_sigkill),
        cmocka_unit_test(huge_output_is_cut_at_max_stdout),
        cmocka_unit_test(binary_output_kept_as_bytes),
        cmocka_unit_test(stdin_round_trips_through_cat),
        cmocka_unit_test(child_closing_stdin_early_is_fine),
        cmocka_unit_test(child_never_reading_stdin_does_not_hang),
        cmocka_unit_test(missing_program_reports_spawn_failure),
        cmocka_unit_test(bad_spec_is_an_error_not_a_crash),
        cmocka_unit_test(env_add_extends_and_overrides),
        cmocka_unit_test(only_stdio_fds_reach_the_child),
        cmocka_unit_test(killed_by_signal_is_reported),
        cmocka_unit_test(kill_reaps_now_without_callback),
        cmocka_unit_test(unlimited_max_stdout),
        cmocka_unit_test(child_leaving_its_group_times_out),
        cmocka_unit_test(kill_reaches_a_child_that_left_its_group),
        cmocka_unit_test(loop_free_kills_live_children),
        cmocka_unit_test(many_children_in_parallel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
