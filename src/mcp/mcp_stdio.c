/* The stdio transport of the MCP client: the server is a child process in
 * its own process group, with stdin, stdout and stderr on non-blocking pipes
 * watched by the loop. Messages are lines of JSON both ways. Every line is
 * capped (AC_MCP_MAX_MESSAGE): an endless line is a fault, not growth. The
 * last bytes of stderr are kept for messages. Stopping: stdin is closed (the
 * way the MCP spec asks a stdio server to stop), then the group gets SIGTERM
 * and, if the child is still there shortly after, SIGKILL. */
#define _GNU_SOURCE /* pipe2, execvpe */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp_transport.h"

extern char **environ;

#define ERR_TAIL 2048
#define READ_CHUNK 65536
#define STOP_GRACE_MS 300

typedef struct stdio_tr {
    mcp_transport base;
    ac_loop *loop;
    mcp_transport_cb cb;
    char *name;
    pid_t pid;
    int in_fd, out_fd, err_fd;
    uint64_t in_watch, out_watch, err_watch;
    char *wbuf; /* pending bytes to the child's stdin */
    size_t wlen, woff, wcap;
    char *line; /* the line being read */
    size_t llen, lcap;
    char err[ERR_TAIL]; /* ring of the last stderr bytes */
    size_t err_start, err_len;
    int dead;
} stdio_tr;

void ac_mcp_printable(const char *in, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    if (!cap)
        return;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char ch = (unsigned char)in[i];
        out[k++] = (ch < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f ? '?' : (char)ch;
    }
    out[k] = 0;
}

static void unwatch_close(stdio_tr *t, int *fd, uint64_t *w)
{
    if (*w)
        ac_loop_unwatch(t->loop, *w);
    *w = 0;
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void err_add(stdio_tr *t, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t pos = (t->err_start + t->err_len) % ERR_TAIL;
        t->err[pos] = b[i];
        if (t->err_len < ERR_TAIL)
            t->err_len++;
        else
            t->err_start = (t->err_start + 1) % ERR_TAIL;
    }
}

/* The stderr tail, last line(s), printable, into out. */
static void err_tail(stdio_tr *t, char *out, size_t cap)
{
    char lin[ERR_TAIL + 1];
    size_t n = t->err_len;
    for (size_t i = 0; i < n; i++)
        lin[i] = t->err[(t->err_start + i) % ERR_TAIL];
    while (n && (lin[n - 1] == '\n' || lin[n - 1] == '\r' || lin[n - 1] == ' '))
        n--;
    size_t from = n > 400 ? n - 400 : 0;
    ac_mcp_printable(lin + from, n - from, out, cap);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

static void drain_err(stdio_tr *t)
{
    char buf[4096];
    while (t->err_fd >= 0) {
        ssize_t r = read(t->err_fd, buf, sizeof buf);
        if (r > 0) {
            err_add(t, buf, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            unwatch_close(t, &t->err_fd, &t->err_watch);
        break;
    }
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits up to grace_ms for the child, then kills its group; returns the wait status or -1. */
static int reap(stdio_tr *t, int64_t grace_ms)
{
    int st = -1;
    if (t->pid <= 0)
        return -1;
    int64_t end = mono_ms() + grace_ms;
    for (;;) {
        pid_t r = waitpid(t->pid, &st, WNOHANG);
        if (r == t->pid)
            break;
        if (r < 0 && errno != EINTR) {
            st = -1;
            break;
        }
        if (mono_ms() >= end) {
            kill(-t->pid, SIGKILL);
            while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
    kill(-t->pid, SIGKILL); /* whatever it left in its group */
    t->pid = -1;
    return st;
}

static void die(stdio_tr *t, const char *what)
{
    if (t->dead)
        return;
    t->dead = 1;
    unwatch_close(t, &t->in_fd, &t->in_watch);
    unwatch_close(t, &t->out_fd, &t->out_watch);
    if (t->pid > 0)
        kill(-t->pid, SIGKILL);
    int st = reap(t, 200);
    drain_err(t);
    unwatch_close(t, &t->err_fd, &t->err_watch);
    char why[900], tail[600];
    err_tail(t, tail, sizeof tail);
    char status[64] = "";
    if (st != -1 && WIFEXITED(st))
        snprintf(status, sizeof status, " (exit status %d)", WEXITSTATUS(st));
    else if (st != -1 && WIFSIGNALED(st) && strcmp(what, "exited") == 0)
        snprintf(status, sizeof status, " (killed by signal %d)", WTERMSIG(st));
    snprintf(why, sizeof why, "%s%s%s%s", what, status, tail[0] ? ": " : "", tail);
    t->cb.closed(t->cb.ud, why);
}

static void on_line(stdio_tr *t, char *l, size_t n)
{
    while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
        n--;
    if (n == 0)
        return;
    json_error_t je;
    json_t *m = json_loadb(l, n, 0, &je);
    if (!m || (!json_is_object(m) && !json_is_array(m))) {
        char shown[90], why[200];
        ac_mcp_printable(l, n < 80 ? n : 80, shown, sizeof shown);
        snprintf(why, sizeof why, "wrote a line that is not JSON-RPC (\"%s%s\")", shown,
                 n > 80 ? "..." : "");
        json_decref(m);
        die(t, why);
        return;
    }
    if (json_is_array(m)) { /* a batch (older revisions) */
        for (size_t i = 0; i < json_array_size(m) && !t->dead; i++)
            t->cb.message(t->cb.ud, json_array_get(m, i));
    } else {
        t->cb.message(t->cb.ud, m);
    }
    json_decref(m);
}

static void on_out(void *ud, int fd, int revents)
{
    stdio_tr *t = ud;
    (void)revents;
    char buf[READ_CHUNK];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return;
        die(t, "exited");
        return;
    }
    if (r == 0) {
        die(t, "exited");
        return;
    }
    size_t i = 0;
    while (i < (size_t)r && !t->dead) {
        char *nl = memchr(buf + i, '\n', (size_t)r - i);
        size_t take = nl ? (size_t)(nl - (buf + i)) : (size_t)r - i;
        if (t->llen + take > AC_MCP_MAX_MESSAGE) {
            char why[128];
            snprintf(why, sizeof why, "sent a message over %zu bytes", AC_MCP_MAX_MESSAGE);
            die(t, why);
            return;
        }
        if (t->llen + take + 1 > t->lcap) {
            size_t cap = t->lcap ? t->lcap : 4096;
            while (cap < t->llen + take + 1)
                cap *= 2;
            char *nb = realloc(t->line, cap);
            if (!nb) {
                die(t, "out of memory");
                return;
            }
            t->line = nb;
            t->lcap = cap;
        }
        memcpy(t->line + t->llen, buf + i, take);
        t->llen += take;
        i += take;
        if (nl) {
            i++;
            size_t n = t->llen;
            t->llen = 0;
            on_line(t, t->line, n);
        }
    }
}

static void on_err(void *ud, int fd, int revents)
{
    stdio_tr *t = ud;
    (void)revents;
    char buf[4096];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r > 0)
        err_add(t, buf, (size_t)r);
    else if (r == 0 || (errno != EAGAIN && errno != EINTR))
        unwatch_close(t, &t->err_fd, &t->err_watch);
}

static void on_in(void *ud, int fd, int revents)
{
    stdio_tr *t = ud;
    (void)revents;
    while (t->woff < t->wlen) {
        ssize_t w = write(fd, t->wbuf + t->woff, t->wlen - t->woff);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return;
            die(t, "closed its stdin");
            return;
        }
        t->woff += (size_t)w;
    }
    t->woff = t->wlen = 0;
    ac_loop_watch_events(t->loop, t->in_watch, 0);
}

static int st_send(mcp_transport *base, const char *data, size_t len, char *err, size_t errcap)
{
    stdio_tr *t = (stdio_tr *)base;
    if (t->dead) {
        snprintf(err, errcap, "the server process is not running");
        return -1;
    }
    if (t->woff > 0 && t->woff == t->wlen)
        t->woff = t->wlen = 0;
    if (t->wlen + len + 1 > t->wcap) {
        size_t cap = t->wcap ? t->wcap : 4096;
        while (cap < t->wlen + len + 1)
            cap *= 2;
        char *nb = realloc(t->wbuf, cap);
        if (!nb) {
            snprintf(err, errcap, "out of memory");
            return -1;
        }
        t->wbuf = nb;
        t->wcap = cap;
    }
    memcpy(t->wbuf + t->wlen, data, len);
    t->wlen += len;
    t->wbuf[t->wlen++] = '\n';
    ac_loop_watch_events(t->loop, t->in_watch, AC_LOOP_WRITE);
    return 0;
}

static void st_free(mcp_transport *base)
{
    stdio_tr *t = (stdio_tr *)base;
    if (!t)
        return;
    while (t->in_fd >= 0 && t->woff < t->wlen) { /* a last notifications/cancelled, if any */
        ssize_t w = write(t->in_fd, t->wbuf + t->woff, t->wlen - t->woff);
        if (w <= 0)
            break;
        t->woff += (size_t)w;
    }
    unwatch_close(t, &t->in_fd, &t->in_watch); /* EOF on stdin: the polite stop */
    unwatch_close(t, &t->out_fd, &t->out_watch);
    unwatch_close(t, &t->err_fd, &t->err_watch);
    if (t->pid > 0) {
        int64_t end = mono_ms() + STOP_GRACE_MS / 2;
        int st;
        while (mono_ms() < end && waitpid(t->pid, &st, WNOHANG) == 0) {
            struct timespec ts = {0, 5 * 1000000};
            nanosleep(&ts, NULL);
        }
        if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
            kill(-t->pid, SIGKILL);
            t->pid = -1;
        } else {
            kill(-t->pid, SIGTERM);
            reap(t, STOP_GRACE_MS / 2);
        }
    }
    free(t->wbuf);
    free(t->line);
    free(t->name);
    free(t);
}

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = lowfd; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
        close((int)fd);
}

mcp_transport *ac_mcp_stdio_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                                char *err, size_t errcap)
{
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, pexec[2] = {-1, -1};
    stdio_tr *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    t->base.send = st_send;
    t->base.free = st_free;
    t->loop = loop;
    t->cb = *cb;
    t->pid = -1;
    t->in_fd = t->out_fd = t->err_fd = -1;
    {
        struct sigaction old;
        if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            signal(SIGPIPE, SIG_IGN);
    }
    if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC) ||
        pipe2(pexec, O_CLOEXEC)) {
        snprintf(err, errcap, "cannot make pipes: %s", strerror(errno));
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errcap, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        setpgid(0, 0);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* even a SIGKILL of agentc takes the server along */
#endif
        dup2(pin[0], 0);
        dup2(pout[1], 1);
        dup2(perr[1], 2);
        int ex = pexec[1];
        if (ex != 3) {
            dup2(ex, 3);
            ex = 3;
        }
        fcntl(ex, F_SETFD, FD_CLOEXEC);
        close_from(4);
        signal(SIGPIPE, SIG_DFL);
        if (cfg->env)
            execvpe(cfg->argv[0], cfg->argv, cfg->env);
        else
            execvp(cfg->argv[0], cfg->argv);
        int e = errno;
        ssize_t w = write(ex, &e, sizeof e);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid);
    t->pid = pid;
    close(pin[0]);
    close(pout[1]);
    close(perr[1]);
    close(pexec[1]);
    pin[0] = pout[1] = perr[1] = pexec[1] = -1;
    int eno = 0;
    ssize_t r;
    while ((r = read(pexec[0], &eno, sizeof eno)) < 0 && errno == EINTR)
        ;
    close(pexec[0]);
    pexec[0] = -1;
    if (r == (ssize_t)sizeof eno) {
        snprintf(err, errcap, "cannot run '%s': %s", cfg->argv[0], strerror(eno));
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        t->pid = -1;
        goto fail;
    }
    t->in_fd = pin[1];
    t->out_fd = pout[0];
    t->err_fd = perr[0];
    pin[1] = pout[0] = perr[0] = -1;
    fcntl(t->in_fd, F_SETFL, O_NONBLOCK);
    fcntl(t->out_fd, F_SETFL, O_NONBLOCK);
    fcntl(t->err_fd, F_SETFL, O_NONBLOCK);
    t->in_watch = ac_loop_watch_fd(loop, t->in_fd, 0, on_in, t);
    t->out_watch = ac_loop_watch_fd(loop, t->out_fd, AC_LOOP_READ, on_out, t);
    t->err_watch = ac_loop_watch_fd(loop, t->err_fd, AC_LOOP_READ, on_err, t);
    if (!t->in_watch || !t->out_watch || !t->err_watch) {
        snprintf(err, errcap, "out of memory");
        st_free(&t->base);
        return NULL;
    }
    return &t->base;
fail:
    for (int i = 0; i < 2; i++) {
        if (pin[i] >= 0)
            close(pin[i]);
        if (pout[i] >= 0)
            close(pout[i]);
        if (perr[i] >= 0)
            close(perr[i]);
        if (pexec[i] >= 0)
            close(pexec[i]);
    }
    st_free(&t->base);
    return NULL;
}
