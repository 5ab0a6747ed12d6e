/* Child processes driven by the event loop, for running external tools.
 *
 * The child runs in its own process group with stdin, stdout and stderr on non-blocking pipes;
 * every other fd is closed in the child. argv[0] is looked up in PATH, no shell is involved.
 * Exit is noticed through a pidfd (Linux >= 5.3; elsewhere by polling waitid every 10 ms), and
 * only our own pids are ever reaped. SIGPIPE is set to ignored in the parent process on the
 * first spawn (if it was at its default), so a child closing its stdin cannot kill us.
 *
 * Policies:
 * - The process group does not outlive the tool: when the child exits, whatever else is left
 *   in its process group (background jobs) is sent SIGKILL before the child is reaped.
 * - Output beyond max_stdout is read and discarded (the child is not killed), truncated = 1;
 *   an endless writer is stopped by timeout_ms.
 * - On timeout the group gets SIGTERM, and SIGKILL AC_PROC_KILL_GRACE_MS later if the child
 *   is still there.
 * - Output the child wrote before exiting is all delivered; output written by leftovers of the
 *   group after the child exited is not waited for.
 *
 * Long-running children (servers speaking a protocol on stdin/stdout): with on_stdout set, the
 * child's stdout is handed to on_stdout as it arrives instead of being collected, and its stdin
 * stays open for ac_proc_write() until ac_proc_close_stdin(). ac_proc_stop() ends such a child
 * without waiting: stdin is closed (the polite stop), SIGTERM follows after a grace time and
 * SIGKILL after AC_PROC_KILL_GRACE_MS more, all by loop timers; the child is reaped when it
 * exits. ac_loop_free() gives children being stopped up to AC_PROC_STOP_WAIT_MS to exit before
 * it kills them. */
#ifndef AGENTC_IO_PROC_H
#define AGENTC_IO_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/loop.h"

#define AC_PROC_KILL_GRACE_MS 500
#define AC_PROC_DEFAULT_MAX_STDOUT ((size_t)8 << 20) /* used when max_stdout == 0 */
#define AC_PROC_DEFAULT_STDERR_TAIL ((size_t)4096)   /* used when max_stderr_tail == 0 */
#define AC_PROC_STOP_WAIT_MS 300                     /* ac_loop_free() and stopping children */

/* Bytes of a streaming child's stdout (on the loop thread, from the loop's fd callback: store
 * them and act later, never free or stop anything from here). */
typedef void (*ac_proc_data_fn)(void *ud, const char *data, size_t len);

/* Everything is copied by ac_proc_spawn(); nothing needs to outlive the call. */
typedef struct ac_proc_spec {
    const char *const *argv;    /* NULL-terminated, argv[0] looked up in PATH (execvp) */
    const char *const *env;     /* the child's environment, "NAME=value", NULL-terminated;
                                   NULL: this process's environment is inherited */
    const char *const *env_add; /* extra "NAME=value" entries over env or the inherited
                                   environment (replacing same-named ones), NULL-terminated,
                                   may be NULL */
    const char *stdin_data;     /* written to the child's stdin, which is then closed; */
    size_t stdin_len;           /* a child that closes stdin early or never reads is fine */
    int64_t timeout_ms;         /* 0 = none */
    size_t max_stdout;          /* 0 = AC_PROC_DEFAULT_MAX_STDOUT */
    size_t max_stderr_tail;     /* keep the LAST n bytes; 0 = AC_PROC_DEFAULT_STDERR_TAIL */
    ac_proc_data_fn on_stdout;  /* NULL: stdout collected into the result; else streamed to
                                   on_stdout(ud, ...) and stdin kept open (ac_proc_write) */
} ac_proc_spec;

typedef struct ac_proc_result {
    int exited, exit_code; /* normal exit and its status */
    int signaled, signal;  /* killed by a signal and which */
    int timed_out;         /* timeout_ms elapsed and we killed the group */
    int truncated;         /* stdout exceeded max_stdout */
    int spawn_failed;      /* the program could not be executed (not found, not */
    int spawn_errno;       /* executable, ...): errno from execvp; other fields 0 */
    const char *out;       /* stdout bytes (may contain NULs; NUL-terminated after */
    size_t out_len;        /* out_len for convenience) */
    const char *err_tail;  /* last bytes of stderr, NUL-terminated after err_len */
    size_t err_len;        /* out and err_tail are valid during the callback only */
    int64_t duration_ms;   /* spawn to exit */
    pid_t pid;             /* the child's pid, which is also its process group id */
} ac_proc_result;

typedef void (*ac_proc_done_fn)(void *ud, const ac_proc_result *res);

/* Starts the child and returns its id; done(ud, res) runs once on the loop thread when the
 * child has exited (or could not be executed: spawn_failed). Never waits for the child's exec:
 * whether it worked is read by the loop from a close-on-exec pipe. Returns 0 and writes a message
 * into err when nothing could be started (bad spec, out of fds or memory, fork failed); done
 * is then never called. */
uint64_t ac_proc_spawn(ac_loop *loop, const ac_proc_spec *spec, ac_proc_done_fn done, void *ud,
                       char *err, size_t errcap);

/* Kills the child's process group with SIGKILL now and reaps the child before returning; done
 * is never called. Unknown or finished ids are a no-op. */
void ac_proc_kill(ac_loop *loop, uint64_t id);

/* A streaming child: queues len bytes for its stdin (written as the pipe takes them). 0, or -1
 * when the id is not live, its stdin is closed, or out of memory. */
int ac_proc_write(ac_loop *loop, uint64_t id, const char *data, size_t len);
/* A streaming child: the bytes queued for its stdin and not written yet (0 for an id that is
 * not live), so a writer can bound what a child that stops reading makes it hold. */
size_t ac_proc_queued(ac_loop *loop, uint64_t id);
/* A streaming child: closes its stdin once the queued bytes are written (EOF). */
void ac_proc_close_stdin(ac_loop *loop, uint64_t id);
/* Stops a child without waiting: done and on_stdout are never called again, queued stdin bytes
 * are still written, then stdin is closed; SIGTERM follows after grace_ms if the child is still
 * there and SIGKILL AC_PROC_KILL_GRACE_MS later. Unknown or finished ids are a no-op. */
void ac_proc_stop(ac_loop *loop, uint64_t id, int64_t grace_ms);

/* The pid (= process group id) of a live child, -1 if the id is not live. */
pid_t ac_proc_pid(ac_loop *loop, uint64_t id);

/* Sends SIGKILL to the process group of every live child of this process,
 * on every loop. Async-signal-safe: for a signal handler about to _exit, so
 * no tool outlives the program. */
void ac_proc_kill_all_now(void);

/* Number of children spawned and not yet done or killed. */
size_t ac_proc_active(ac_loop *loop);

#endif
