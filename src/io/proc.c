/* Child processes on the event loop: fork + execvp with pipes, a close-on-exec error pipe that
 * reports exec failures, a pidfd (or a waitid poll) to notice the exit, and process-group
 * kills for timeouts, cancellation and leftovers. */
#define _GNU_SOURCE /* pipe2, execvpe */
#include "io/proc.h"
#include "io/loop_int.h"
#include "util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* AC_PROC_NO_PIDFD forces the waitid polling path (tests build it to cover that path). */
#if defined(SYS_pidfd_open) && !defined(AC_PROC_NO_PIDFD)
#define AC_PROC_HAVE_PIDFD 1
#endif

#define AC_PROC_READ_CHUNK 65536
#define AC_PROC_WRITE_CHUNK 65536
#define AC_PROC_POLL_MS 10 /* waitid polling when pidfd is unavailable */

typedef struct ac_proc {
    uint64_t id;
    ac_loop *loop;
    pid_t pid; /* -1 once reaped */
    int pidfd;
    int in_fd, out_fd, err_fd;
    int ep_fd; /* the exec error pipe: EOF once the child execs, or its errno */
    uint64_t in_watch, out_watch, err_watch, pidfd_watch, ep_watch;
    uint64_t timeout_timer, grace_timer, poll_timer;

    ac_buf in; /* stdin not yet written: from in_off to in.n */
    size_t in_off;
    ac_proc_data_fn on_stdout; /* streaming (proc.h); NULL once stopped */
    int stream, close_in, stopping;

    ac_buf out; /* stdout, capped at max_stdout */

    char *err; /* ring buffer of err_max bytes */
    size_t err_max, err_start, err_len;

    int timed_out, truncated, spawn_failed, spawn_errno;
    int64_t start_ms;
    ac_proc_done_fn done;
    void *ud;
} ac_proc;

struct ac_proc_state {
    ac_idmap procs; /* id -> ac_proc* */
};

static pthread_once_t sigpipe_once = PTHREAD_ONCE_INIT;

static void ignore_sigpipe(void)
{
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
        !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_IGN;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
    }
}

static void proc_teardown(ac_loop *loop, void *state);

static size_t proc_active(const void *state)
{
    return ((const struct ac_proc_state *)state)->procs.len;
}

/* The loop's hooks into this module; its address is the key of our state. */
static const ac_loop_client_ops proc_client = {proc_teardown, proc_active};

static struct ac_proc_state *proc_state(ac_loop *loop, int create)
{
    struct ac_proc_state *st = ac_loop_client(loop, &proc_client);
    if (!st && create) {
        st = calloc(1, sizeof *st);
        if (st && ac_loop_attach(loop, &proc_client, st) != 0) {
            free(st);
            st = NULL;
        }
    }
    return st;
}

size_t ac_proc_active(ac_loop *loop)
{
    struct ac_proc_state *st = proc_state(loop, 0);
    return st ? st->procs.len : 0;
}

pid_t ac_proc_pid(ac_loop *loop, uint64_t id)
{
    struct ac_proc_state *st = proc_state(loop, 0);
    ac_proc *p = st ? ac_idmap_get(&st->procs, id) : NULL;
    return p ? p->pid : -1;
}

static void close_fd(ac_loop *loop, int *fd, uint64_t *watch)
{
    if (*watch)
        ac_loop_unwatch(loop, *watch);
    *watch = 0;
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void cancel_timer(ac_loop *loop, uint64_t *id)
{
    if (*id)
        ac_loop_cancel_timer(loop, *id);
    *id = 0;
}

/* Releases everything but the record itself; the child must already be reaped. */
static void proc_release(ac_proc *p)
{
    ac_loop *loop = p->loop;
    close_fd(loop, &p->in_fd, &p->in_watch);
    close_fd(loop, &p->out_fd, &p->out_watch);
    close_fd(loop, &p->err_fd, &p->err_watch);
    close_fd(loop, &p->pidfd, &p->pidfd_watch);
    cancel_timer(loop, &p->timeout_timer);
    cancel_timer(loop, &p->grace_timer);
    cancel_timer(loop, &p->poll_timer);
    close_fd(loop, &p->ep_fd, &p->ep_watch);
}

/* Process groups of live children, for ac_proc_kill_all_now, which runs in a
 * signal handler: plain stores of sig_atomic_t slots, no locks, no allocation. */
#define AC_PROC_TRACKED 1024
static volatile sig_atomic_t tracked_pgids[AC_PROC_TRACKED];

static void pgid_track(pid_t pid)
{
    for (int i = 0; i < AC_PROC_TRACKED; i++)
        if (tracked_pgids[i] == 0) {
            tracked_pgids[i] = pid;
            return;
        }
}

static void pgid_untrack(pid_t pid)
{
    if (pid <= 0)
        return;
    for (int i = 0; i < AC_PROC_TRACKED; i++)
        if (tracked_pgids[i] == pid)
            tracked_pgids[i] = 0;
}

void ac_proc_kill_all_now(void)
{
    for (int i = 0; i < AC_PROC_TRACKED; i++) {
        pid_t pg = tracked_pgids[i];
        if (pg > 0) {
            kill(-pg, SIGKILL);
            kill(pg, SIGKILL); /* a child that left its group */
        }
    }
}

/* Signals the child's group, and the child itself in case it moved to
 * another group (its pid stays ours until it is reaped). */
static void signal_child(pid_t pid, int sig)
{
    kill(-pid, sig);
    kill(pid, sig);
}

static void proc_free(ac_proc *p)
{
    if (!p)
        return;
    ac_buf_free(&p->in);
    ac_buf_free(&p->out);
    free(p->err);
    free(p);
}

static pid_t reap(pid_t pid, int *status)
{
    pid_t r;
    do
        r = waitpid(pid, status, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

/* ---- output buffers -------------------------------------------------------------------- */

static void out_append(ac_proc *p, const char *buf, size_t n)
{
    size_t room = p->out.max - p->out.n;
    size_t take = n < room ? n : room;
    /* cut at the cap, or out of memory: what is kept is the result */
    if (ac_buf_add(&p->out, buf, take) != 0 || take < n)
        p->truncated = 1;
}

static void err_append(ac_proc *p, const char *buf, size_t n)
{
    size_t max = p->err_max;
    if (n >= max) {
        memcpy(p->err, buf + (n - max), max);
        p->err_start = 0;
        p->err_len = max;
        return;
    }
    size_t pos = (p->err_start + p->err_len) % max;
    size_t first = max - pos < n ? max - pos : n;
    memcpy(p->err + pos, buf, first);
    memcpy(p->err, buf + first, n - first);
    if (p->err_len + n > max) {
        p->err_start = (p->err_start + p->err_len + n - max) % max;
        p->err_len = max;
    } else {
        p->err_len += n;
    }
}

/* Reads what is available now; closes the fd at EOF or error. */
static void drain(ac_proc *p, int is_err)
{
    int *fd = is_err ? &p->err_fd : &p->out_fd;
    uint64_t *watch = is_err ? &p->err_watch : &p->out_watch;
    char buf[AC_PROC_READ_CHUNK];
    while (*fd >= 0) {
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            if (is_err)
                err_append(p, buf, (size_t)n);
            else if (!p->stream)
                out_append(p, buf, (size_t)n);
            else if (p->on_stdout)
                p->on_stdout(p->ud, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        close_fd(p->loop, fd, watch);
    }
}

static void on_out(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    drain(ud, 0);
}

static void on_err(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    drain(ud, 1);
}

static void on_stdin(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    ac_proc *p = ud;
    while (p->in_off < p->in.n) {
        size_t chunk = p->in.n - p->in_off;
        if (chunk > AC_PROC_WRITE_CHUNK)
            chunk = AC_PROC_WRITE_CHUNK;
        ssize_t n = write(p->in_fd, p->in.p + p->in_off, chunk);
        if (n > 0) {
            p->in_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        p->close_in = 1; /* EPIPE: the child closed its stdin; it gets no more */
        break;
    }
    p->in_off = 0;
    ac_buf_clear(&p->in);
    if (p->stream && !p->close_in) { /* open for more: no interest until ac_proc_write */
        ac_loop_watch_events(p->loop, p->in_watch, 0);
        return;
    }
    close_fd(p->loop, &p->in_fd, &p->in_watch);
    ac_buf_free(&p->in);
}

/* ---- completion ------------------------------------------------------------------------ */

static void complete(ac_proc *p, const ac_proc_result *res)
{
    struct ac_proc_state *st = proc_state(p->loop, 0);
    ac_idmap_del(&st->procs, p->id);
    proc_release(p);
    if (p->done)
        p->done(p->ud, res);
    proc_free(p);
}

/* The exec error pipe: EOF when the child has exec'd, or the errno of a failed exec (the child
 * then exits 127). Read by the loop, so the spawner never waits for the exec. */
static void read_exec_pipe(ac_proc *p)
{
    int child_errno = 0;
    ssize_t n;
    do
        n = read(p->ep_fd, &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n == (ssize_t)sizeof child_errno) {
        p->spawn_failed = 1;
        p->spawn_errno = child_errno;
    }
    close_fd(p->loop, &p->ep_fd, &p->ep_watch);
}

static void on_exec_pipe(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    read_exec_pipe(ud);
}

/* An exec that failed: reported as such, not as the child's exit 127. */
static void spawn_failed(ac_proc *p)
{
    ac_proc_result res;
    memset(&res, 0, sizeof res);
    res.spawn_failed = 1;
    res.spawn_errno = p->spawn_errno;
    res.out = "";
    res.err_tail = "";
    res.pid = -1;
    res.duration_ms = ac_loop_clock_ms() - p->start_ms;
    complete(p, &res);
}

/* The child has exited but is not reaped yet, so its pid still names the group: kill the
 * leftovers, collect the output it wrote, then reap. */
static void on_child_exit(ac_proc *p)
{
    kill(-p->pid, SIGKILL);
    if (p->ep_fd >= 0)
        read_exec_pipe(p); /* written before the child's exit */
    drain(p, 0);
    drain(p, 1);
    int status = 0;
    pgid_untrack(p->pid); /* before the reap: its number may be reused after */
    pid_t r = reap(p->pid, &status);
    int64_t end = ac_loop_clock_ms();
    if (p->spawn_failed) {
        p->pid = -1;
        spawn_failed(p);
        return;
    }

    ac_proc_result res;
    memset(&res, 0, sizeof res);
    res.pid = p->pid;
    p->pid = -1;
    if (r > 0 && WIFEXITED(status)) {
        res.exited = 1;
        res.exit_code = WEXITSTATUS(status);
    } else if (r > 0 && WIFSIGNALED(status)) {
        res.signaled = 1;
        res.signal = WTERMSIG(status);
    }
    res.timed_out = p->timed_out;
    res.truncated = p->truncated;

    char *err_lin = malloc(p->err_len + 1);
    if (err_lin) {
        size_t first = p->err_max - p->err_start;
        if (first > p->err_len)
            first = p->err_len;
        memcpy(err_lin, p->err + p->err_start, first);
        memcpy(err_lin + first, p->err, p->err_len - first);
        err_lin[p->err_len] = '\0';
        res.err_tail = err_lin;
        res.err_len = p->err_len;
    } else {
        res.err_tail = "";
    }
    if (p->out.p) {
        res.out = p->out.p;
        res.out_len = p->out.n;
    } else {
        res.out = "";
    }
    res.duration_ms = end - p->start_ms;
    complete(p, &res);
    free(err_lin);
}

#ifdef AC_PROC_HAVE_PIDFD
static void on_pidfd(void *ud, int fd, int revents)
{
    (void)fd;
    (void)revents;
    on_child_exit(ud);
}
#endif

static void on_poll_timer(void *ud)
{
    ac_proc *p = ud;
    p->poll_timer = 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* WNOWAIT: look without reaping, so the group can still be killed by pid.
     * ECHILD: something else of the process reaped it (SIGCHLD ignored, a
     * waitpid(-1) of the embedding program): it is over all the same. */
    int r = waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if ((r == 0 && si.si_pid != 0) || (r < 0 && errno == ECHILD)) {
        on_child_exit(p);
        return;
    }
    p->poll_timer = ac_loop_timer_ex(p->loop, AC_PROC_POLL_MS, on_poll_timer, p, AC_LOOP_INTERNAL);
}

static void on_grace(void *ud)
{
    ac_proc *p = ud;
    p->grace_timer = 0;
    signal_child(p->pid, SIGKILL);
}

static void on_timeout(void *ud)
{
    ac_proc *p = ud;
    p->timeout_timer = 0;
    p->timed_out = 1;
    signal_child(p->pid, SIGTERM);
    p->grace_timer =
        ac_loop_timer_ex(p->loop, AC_PROC_KILL_GRACE_MS, on_grace, p, AC_LOOP_INTERNAL);
    if (!p->grace_timer)
        signal_child(p->pid, SIGKILL);
}

/* ---- spawning -------------------------------------------------------------------------- */

static size_t env_name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : 0;
}

/* base (NULL: the inherited environment) with env_add entries (may be NULL) replacing or
 * extending it. The strings are borrowed; only the array is allocated. */
static char **build_env(const char *const *base, const char *const *env_add, char *err,
                        size_t errcap)
{
    static const char *const none[] = {NULL};
    if (!base)
        base = (const char *const *)environ;
    if (!env_add)
        env_add = none;
    size_t nenv = 0, nadd = 0;
    while (base && base[nenv])
        nenv++;
    for (; env_add[nadd]; nadd++) {
        if (env_name_len(env_add[nadd]) == 0) {
            snprintf(err, errcap, "env entry '%s' is not NAME=value", env_add[nadd]);
            return NULL;
        }
    }
    char **envp = calloc(nenv + nadd + 1, sizeof *envp);
    if (!envp) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < nenv; i++) {
        size_t len = env_name_len(base[i]);
        int replaced = 0;
        for (size_t j = 0; j < nadd && !replaced; j++)
            replaced =
                len > 0 && env_name_len(env_add[j]) == len && memcmp(env_add[j], base[i], len) == 0;
        if (!replaced)
            envp[n++] = (char *)base[i];
    }
    for (size_t j = 0; j < nadd; j++)
        envp[n++] = (char *)env_add[j];
    envp[n] = NULL;
    return envp;
}

/* Keeps fds 0..2 free for the child's dup2 (a caller may have closed its own stdio). */
static int move_above_stdio(int fd)
{
    if (fd > 2)
        return fd;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return nfd;
}

static void close_from(int lowfd, int except)
{
#ifdef SYS_close_range
    if (except > lowfd && syscall(SYS_close_range, (unsigned)lowfd, (unsigned)except - 1, 0) != 0)
        goto slow;
    if (syscall(SYS_close_range, (unsigned)(except + 1), ~0u, 0) == 0)
        return;
slow:
#endif
    for (int fd = lowfd; fd < 65536; fd++)
        if (fd != except)
            close(fd);
}

/* In the child after fork: only async-signal-safe calls until exec. */
static void child_exec(const ac_proc_spec *spec, char **envp, int in_r, int out_w, int err_w,
                       int ep_w, pid_t parent)
{
    setpgid(0, 0);
#ifdef __linux__
    /* a backstop for a parent that dies without cleaning up (SIGKILL): the tool dies with it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the parent died before the line above */
#else
    (void)parent;
#endif
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &sa, NULL); /* ignored signals would stay ignored across exec */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in_r, 0) < 0 || dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
        goto fail;
    close_from(3, ep_w); /* ep_w is close-on-exec itself */
    if (envp)
        execvpe(spec->argv[0], (char *const *)spec->argv, envp);
    else
        execvp(spec->argv[0], (char *const *)spec->argv);
fail:;
    int e = errno;
    ssize_t wr = write(ep_w, &e, sizeof e);
    (void)wr;
    _exit(127);
}

/* The record of a child to spawn: buffers and limits from spec, nothing started. */
static ac_proc *proc_new(ac_loop *loop, const ac_proc_spec *spec, ac_proc_done_fn done, void *ud)
{
    ac_proc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->loop = loop;
    p->pid = -1;
    p->pidfd = p->in_fd = p->out_fd = p->err_fd = p->ep_fd = -1;
    p->done = done;
    p->ud = ud;
    p->on_stdout = spec->on_stdout;
    p->stream = spec->on_stdout != NULL;
    ac_buf_init(&p->out, spec->max_stdout ? spec->max_stdout : AC_PROC_DEFAULT_MAX_STDOUT);
    ac_buf_init(&p->in, AC_BUF_MAX);
    p->err_max = spec->max_stderr_tail ? spec->max_stderr_tail : AC_PROC_DEFAULT_STDERR_TAIL;
    p->err = malloc(p->err_max);
    int in_failed = spec->stdin_len > 0 && spec->stdin_data &&
                    ac_buf_add(&p->in, spec->stdin_data, spec->stdin_len) != 0;
    if (!p->err || in_failed) {
        proc_free(p);
        return NULL;
    }
    return p;
}

/* The child's pipes (stdin, stdout, stderr, and the exec error pipe), the child's ends above
 * fd 2 and the parent's non-blocking. -1 with err (what is open stays in the arrays). */
static int make_pipes(int in[2], int out[2], int errp[2], int ep[2], char *err, size_t errcap)
{
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC) ||
        pipe2(ep, O_CLOEXEC)) {
        snprintf(err, errcap, "pipe: %s", strerror(errno));
        return -1;
    }
    in[0] = move_above_stdio(in[0]);
    out[1] = move_above_stdio(out[1]);
    errp[1] = move_above_stdio(errp[1]);
    ep[1] = move_above_stdio(ep[1]);
    if (in[0] < 0 || out[1] < 0 || errp[1] < 0 || ep[1] < 0) {
        snprintf(err, errcap, "fcntl: %s", strerror(errno));
        return -1;
    }
    int parent_fds[4] = {in[1], out[0], errp[0], ep[0]};
    for (int i = 0; i < 4; i++) {
        if (fcntl(parent_fds[i], F_SETFL, fcntl(parent_fds[i], F_GETFL) | O_NONBLOCK) != 0) {
            snprintf(err, errcap, "fcntl: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* Forks the child (signals blocked across fork so no handler of ours runs in the child before
 * it resets them) and tracks its group. The pid, or -1 with errno. */
static pid_t fork_child(ac_proc *p, const ac_proc_spec *spec, char **envp, int in_r, int out_w,
                        int err_w, int ep_w)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    p->start_ms = ac_loop_clock_ms();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(spec, envp, in_r, out_w, err_w, ep_w, parent);
    int fork_errno = errno;
    if (pid > 0) {
        /* tracked while signals are still blocked: a Ctrl-C handler running
         * right after would otherwise miss this child */
        setpgid(pid, pid); /* also in the child: whichever runs first wins the race */
        pgid_track(pid);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = fork_errno;
    return pid;
}

/* A running child: its exit (pidfd, or a waitid poll), its output, its stdin and its timeout
 * watched by the loop. 0, or -1 when out of memory. */
static int watch_child(ac_proc *p, int64_t timeout_ms)
{
    ac_loop *loop = p->loop;
    int ok = 1;
#ifdef AC_PROC_HAVE_PIDFD
    p->pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    if (p->pidfd >= 0) {
        fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
        p->pidfd_watch =
            ac_loop_watch_fd_ex(loop, p->pidfd, AC_LOOP_READ, on_pidfd, p, AC_LOOP_INTERNAL);
        ok = p->pidfd_watch != 0;
    }
#endif
    if (p->pidfd < 0) {
        p->poll_timer = ac_loop_timer_ex(loop, AC_PROC_POLL_MS, on_poll_timer, p, AC_LOOP_INTERNAL);
        ok = p->poll_timer != 0;
    }
    p->ep_watch =
        ac_loop_watch_fd_ex(loop, p->ep_fd, AC_LOOP_READ, on_exec_pipe, p, AC_LOOP_INTERNAL);
    p->out_watch = ac_loop_watch_fd_ex(loop, p->out_fd, AC_LOOP_READ, on_out, p, AC_LOOP_INTERNAL);
    p->err_watch = ac_loop_watch_fd_ex(loop, p->err_fd, AC_LOOP_READ, on_err, p, AC_LOOP_INTERNAL);
    ok = ok && p->out_watch && p->err_watch && p->ep_watch;
    if (p->in.n > 0 || p->stream) {
        p->in_watch = ac_loop_watch_fd_ex(loop, p->in_fd, p->in.n > 0 ? AC_LOOP_WRITE : 0, on_stdin,
                                          p, AC_LOOP_INTERNAL);
        ok = ok && p->in_watch;
    } else {
        close_fd(loop, &p->in_fd, &p->in_watch); /* EOF right away */
    }
    if (timeout_ms > 0) {
        p->timeout_timer = ac_loop_timer_ex(loop, timeout_ms, on_timeout, p, AC_LOOP_INTERNAL);
        ok = ok && p->timeout_timer;
    }
    return ok ? 0 : -1;
}

static void close_pair(int fd[2])
{
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    fd[0] = fd[1] = -1;
}

uint64_t ac_proc_spawn(ac_loop *loop, const ac_proc_spec *spec, ac_proc_done_fn done, void *ud,
                       char *err, size_t errcap)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, ep[2] = {-1, -1};
    char **envp = NULL;
    ac_proc *p = NULL;
    char dummy[1];
    if (!err || errcap == 0) {
        err = dummy;
        errcap = sizeof dummy;
    }
    err[0] = '\0';
    if (!spec || !spec->argv || !spec->argv[0] || !spec->argv[0][0]) {
        snprintf(err, errcap, "proc spec needs a non-empty argv[0]");
        return 0;
    }
    pthread_once(&sigpipe_once, ignore_sigpipe);
    struct ac_proc_state *st = proc_state(loop, 1);
    if (!st)
        goto oom;
    if ((spec->env || spec->env_add) && !(envp = build_env(spec->env, spec->env_add, err, errcap)))
        return 0;
    if (!(p = proc_new(loop, spec, done, ud)))
        goto oom;
    if (make_pipes(in, out, errp, ep, err, errcap) < 0)
        goto fail;
    pid_t pid = fork_child(p, spec, envp, in[0], out[1], errp[1], ep[1]);
    if (pid < 0) {
        snprintf(err, errcap, "fork: %s", strerror(errno));
        goto fail;
    }
    p->pid = pid;
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    close(ep[1]);
    in[0] = out[1] = errp[1] = ep[1] = -1;
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = errp[0];
    p->ep_fd = ep[0]; /* non-blocking: the loop reads whether the exec worked */
    in[1] = out[0] = errp[0] = ep[0] = -1;
    free(envp);
    envp = NULL;

    p->id = ac_loop_next_id(loop);
    if (ac_idmap_put(&st->procs, p->id, p) != 0) {
        signal_child(pid, SIGKILL);
        pgid_untrack(pid);
        reap(pid, NULL);
        p->pid = -1;
        goto oom;
    }
    if (watch_child(p, spec->timeout_ms) < 0) {
        ac_proc_kill(loop, p->id);
        snprintf(err, errcap, "out of memory");
        return 0;
    }
    return p->id;

oom:
    snprintf(err, errcap, "out of memory");
fail:
    close_pair(in);
    close_pair(out);
    close_pair(errp);
    close_pair(ep);
    free(envp);
    if (p) {
        proc_release(p);
        proc_free(p);
    }
    return 0;
}

void ac_proc_kill(ac_loop *loop, uint64_t id)
{
    struct ac_proc_state *st = proc_state(loop, 0);
    ac_proc *p = st ? ac_idmap_del(&st->procs, id) : NULL;
    if (!p)
        return;
    if (p->pid > 0) {
        signal_child(p->pid, SIGKILL);
        pgid_untrack(p->pid);
        reap(p->pid, NULL);
        p->pid = -1;
    }
    proc_release(p);
    proc_free(p);
}

static ac_proc *live(ac_loop *loop, uint64_t id)
{
    struct ac_proc_state *st = proc_state(loop, 0);
    return st ? ac_idmap_get(&st->procs, id) : NULL;
}

int ac_proc_write(ac_loop *loop, uint64_t id, const char *data, size_t len)
{
    ac_proc *p = live(loop, id);
    if (!p || !p->stream || p->in_fd < 0 || p->close_in)
        return -1;
    /* out of memory: nothing of data is queued; what was queued before is still written,
     * and the queue takes more once it has drained */
    if (ac_buf_add(&p->in, data, len) != 0)
        return -1;
    ac_loop_watch_events(loop, p->in_watch, AC_LOOP_WRITE);
    return 0;
}

size_t ac_proc_queued(ac_loop *loop, uint64_t id)
{
    ac_proc *p = live(loop, id);
    return p && p->in.n > p->in_off ? p->in.n - p->in_off : 0;
}

void ac_proc_close_stdin(ac_loop *loop, uint64_t id)
{
    ac_proc *p = live(loop, id);
    if (!p || p->in_fd < 0)
        return;
    p->close_in = 1;
    if (p->in_off >= p->in.n)
        close_fd(loop, &p->in_fd, &p->in_watch);
    else
        on_stdin(p, p->in_fd, AC_LOOP_WRITE); /* what the pipe takes now, the rest later */
}

void ac_proc_stop(ac_loop *loop, uint64_t id, int64_t grace_ms)
{
    ac_proc *p = live(loop, id);
    if (!p || p->stopping)
        return;
    p->stopping = 1;
    p->done = NULL;
    p->on_stdout = NULL;
    ac_proc_close_stdin(loop, id);
    if (p->pid <= 0)
        return; /* spawn failed: its 0 ms completion frees it */
    cancel_timer(loop, &p->timeout_timer);
    p->timeout_timer = ac_loop_timer_ex(loop, grace_ms, on_timeout, p, AC_LOOP_INTERNAL);
    if (!p->timeout_timer)
        signal_child(p->pid, SIGTERM);
}

/* ac_loop_free(): children being stopped get up to AC_PROC_STOP_WAIT_MS to exit on their own
 * (their stdin is closed) before the kill. The loop is not running any more; the wait is on the
 * children's pidfds (without pidfds, looks every 5 ms). */
static void wait_stopping(struct ac_proc_state *st)
{
    int64_t end = ac_loop_clock_ms() + AC_PROC_STOP_WAIT_MS;
    for (;;) {
        struct pollfd fds[64];
        nfds_t n = 0;
        int blind = 0;
        for (size_t i = 0; i < st->procs.cap; i++) {
            ac_proc *p = st->procs.keys[i] ? st->procs.vals[i] : NULL;
            if (!p || !p->stopping || p->pid <= 0)
                continue;
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid)
                continue; /* gone already */
            if (p->pidfd >= 0 && n < 64)
                fds[n++] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
            else
                blind = 1;
        }
        int64_t left = end - ac_loop_clock_ms();
        if ((!n && !blind) || left <= 0)
            return;
        if (blind && left > 5)
            left = 5;
        poll(fds, n, (int)left);
    }
}

/* Called by ac_loop_free(): every child is killed and reaped, no done callback runs. */
static void proc_teardown(ac_loop *loop, void *state)
{
    struct ac_proc_state *st = state;
    ac_proc *p;
    wait_stopping(st);
    while ((p = ac_idmap_any(&st->procs, NULL)) != NULL)
        ac_proc_kill(loop, p->id);
    ac_idmap_clear(&st->procs);
    free(st);
}
