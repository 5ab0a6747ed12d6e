/* The stdio transport of the MCP client: the server is a child process
 * spawned through io/proc (its own process group, pipes watched by the loop,
 * reached by ac_proc_kill_all_now) in streaming mode. Messages are lines of
 * JSON both ways. Every line is capped (AC_MCP_MAX_MESSAGE): an endless line
 * is a fault, not growth, and so are AC_MCP_MAX_MESSAGE bytes queued for a server that
 * does not read them. The last bytes of stderr are kept for messages.
 * Stopping never waits: stdin is closed (the way the MCP spec asks a stdio
 * server to stop), then io/proc's timers send SIGTERM and SIGKILL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/proc.h"
#include "mcp/mcp_transport.h"
#include "util/buf.h"

#define ERR_TAIL 2048
#define STOP_GRACE_MS 150 /* after stdin is closed, before SIGTERM */

typedef struct stdio_tr {
    mcp_transport base;
    ac_loop *loop;
    mcp_inbox in;
    uint64_t proc; /* 0 once the child is done */
    char *argv0;
    ac_buf line; /* the line being read, capped at AC_MCP_MAX_MESSAGE */
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

/* The stderr tail, last line(s), printable, on one line, into out. */
static void err_tail(const char *err, size_t n, char *out, size_t cap)
{
    while (n && (err[n - 1] == '\n' || err[n - 1] == '\r' || err[n - 1] == ' '))
        n--;
    size_t from = n > 400 ? n - 400 : 0;
    ac_mcp_printable(err + from, n - from, out, cap);
    for (char *p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

static void on_line(stdio_tr *t, const char *l, size_t n)
{
    while (n && (l[n - 1] == '\r' || l[n - 1] == ' ' || l[n - 1] == '\t'))
        n--;
    if (n == 0)
        return;
    json_error_t je;
    /* a NUL in a string is taken (a tool name with one is left out, mcp_client.c) */
    json_t *m = json_loadb(l, n, JSON_ALLOW_NUL, &je);
    if (!m || (!json_is_object(m) && !json_is_array(m))) {
        char shown[90], why[200];
        ac_mcp_printable(l, n < 80 ? n : 80, shown, sizeof shown);
        if (!m && json_error_code(&je) == json_error_stack_overflow)
            snprintf(why, sizeof why, "wrote a message nested too deeply (\"%s...\")", shown);
        else
            snprintf(why, sizeof why, "wrote a line that is not JSON-RPC (\"%s%s\")", shown,
                     n > 80 ? "..." : "");
        mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
    } else {
        mcp_inbox_push(&t->in, m);
    }
    json_decref(m);
}

/* Appends take bytes to the line; -1 (the transport ended) when over the cap. */
static int line_add(stdio_tr *t, const char *b, size_t take)
{
    char why[128];
    if (ac_buf_add(&t->line, b, take) == 0)
        return 0;
    if (t->line.n + take > AC_MCP_MAX_MESSAGE)
        snprintf(why, sizeof why, "sent a message over %zu bytes", AC_MCP_MAX_MESSAGE);
    else
        snprintf(why, sizeof why, "out of memory");
    mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
    return -1;
}

/* io/proc's stdout callback: lines into the inbox, nothing else. */
static void on_out(void *ud, const char *buf, size_t r)
{
    stdio_tr *t = ud;
    size_t i = 0;
    while (i < r && !mcp_inbox_ended(&t->in)) {
        const char *nl = memchr(buf + i, '\n', r - i);
        size_t take = nl ? (size_t)(nl - (buf + i)) : r - i;
        if (line_add(t, buf + i, take) < 0)
            return;
        i += take;
        if (nl) {
            i++;
            on_line(t, t->line.p, t->line.n);
            ac_buf_clear(&t->line);
        }
    }
}

/* io/proc's done: the child exited or could not be run. */
static void child_exit(void *ud, const ac_proc_result *res)
{
    stdio_tr *t = ud;
    char why[900], tail[600], status[64] = "";
    t->proc = 0;
    if (res->spawn_failed) {
        snprintf(why, sizeof why, "could not start: cannot run '%s': %s", t->argv0,
                 strerror(res->spawn_errno));
        mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
        return;
    }
    err_tail(res->err_tail, res->err_len, tail, sizeof tail);
    if (res->exited)
        snprintf(status, sizeof status, " (exit status %d)", res->exit_code);
    else if (res->signaled)
        snprintf(status, sizeof status, " (killed by signal %d)", res->signal);
    snprintf(why, sizeof why, "exited%s%s%s", status, tail[0] ? ": " : "", tail);
    mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, why);
}

static int st_send(mcp_transport *base, const char *data, size_t len, char *err, size_t errcap)
{
    stdio_tr *t = (stdio_tr *)base;
    if (!t->proc || mcp_inbox_ended(&t->in)) {
        snprintf(err, errcap, "the server process is not running");
        return -1;
    }
    /* a server that stops reading its stdin (while it sends requests agentc answers, say)
     * would make the queue grow without end: past the cap it is a fault, like a line over it */
    if (ac_proc_queued(t->loop, t->proc) + len + 1 > AC_MCP_MAX_MESSAGE) {
        snprintf(err, errcap, "stopped reading its input (%zu bytes unsent, the limit is %zu)",
                 ac_proc_queued(t->loop, t->proc) + len + 1, AC_MCP_MAX_MESSAGE);
        mcp_inbox_end(&t->in, MCP_INBOX_CLOSED, err);
        return -1;
    }
    /* refused when its stdin is closed: the child is gone or going, and its exit (the reason)
     * is reported next */
    if (ac_proc_write(t->loop, t->proc, data, len) == 0)
        ac_proc_write(t->loop, t->proc, "\n", 1);
    return 0;
}

static void st_free(mcp_transport *base)
{
    stdio_tr *t = (stdio_tr *)base;
    if (!t)
        return;
    if (t->proc) /* queued bytes (a last notifications/cancelled) still go, then EOF */
        ac_proc_stop(t->loop, t->proc, STOP_GRACE_MS);
    mcp_inbox_clear(&t->in);
    free(t->argv0);
    ac_buf_free(&t->line);
    free(t);
}

mcp_transport *ac_mcp_stdio_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                                char *err, size_t errcap)
{
    stdio_tr *t = calloc(1, sizeof *t);
    if (!t || mcp_inbox_init(&t->in, loop, cb) < 0 || !(t->argv0 = strdup(cfg->argv[0]))) {
        snprintf(err, errcap, "out of memory");
        if (t)
            mcp_inbox_clear(&t->in);
        free(t);
        return NULL;
    }
    t->base.send = st_send;
    t->base.free = st_free;
    t->loop = loop;
    ac_buf_init(&t->line, AC_MCP_MAX_MESSAGE);
    ac_proc_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.argv = (const char *const *)cfg->argv;
    ps.env = (const char *const *)cfg->env;
    ps.env_add = (const char *const *)cfg->env_add;
    ps.max_stderr_tail = ERR_TAIL;
    ps.on_stdout = on_out;
    t->proc = ac_proc_spawn(loop, &ps, child_exit, t, err, errcap);
    if (!t->proc) {
        st_free(&t->base);
        return NULL;
    }
    return &t->base;
}
