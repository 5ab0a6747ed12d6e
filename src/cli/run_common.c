/*
 * run_common.c - what the commands that run sessions (run, resume, demo,
 * batch) share: stop signals, stdout write errors and the exit status they
 * give, JSON Lines output, the wall clock of the terminal UI.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "cli.h"
#include "run_common.h"

/* The signal that asked us to stop (SIGINT, SIGTERM, SIGHUP), or 0. */
volatile sig_atomic_t ac_cli_interrupted;

/* The first error writing stdout (an errno value), or 0. It stops the
 * session(s) like a signal does: nobody reads the answer any more, so the
 * model is not paid to go on. EPIPE ends the process by SIGPIPE (141),
 * the same whether or not a tool was spawned (the tool layer sets SIGPIPE
 * to ignored); any other error gives AC_EXIT_OUTPUT with a message. */
int ac_cli_out_errno;
static struct sigaction g_old_sigpipe;

void ac_cli_out_flush(void)
{
    if ((fflush(stdout) == EOF || ferror(stdout)) && !ac_cli_out_errno)
        ac_cli_out_errno = errno ? errno : EIO;
}

/* SIGPIPE is ignored while sessions run, so a closed pipe is an error we
 * see (and cancel on) rather than a death that skips the cleanup. */
void ac_cli_ignore_sigpipe(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &g_old_sigpipe);
    ac_cli_out_errno = 0;
}

/* The exit status once the sessions are over: stdout flushed and checked,
 * a closed pipe re-raised as SIGPIPE, other write errors reported. */
int ac_cli_finish_output(int rc)
{
    ac_cli_out_flush();
    if (ac_cli_out_errno == EPIPE) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
        raise(SIGPIPE);
        return 128 + SIGPIPE;
    }
    if (ac_cli_out_errno) {
        fprintf(stderr, "agentc: cannot write the output: %s\n", strerror(ac_cli_out_errno));
        return rc > 128 ? rc : AC_EXIT_OUTPUT; /* a signal that stopped us first stays */
    }
    sigaction(SIGPIPE, &g_old_sigpipe, NULL);
    if (ferror(stderr) && !rc)
        return AC_EXIT_OUTPUT; /* diagnostics lost: nowhere left to say so */
    return rc;
}

/* Wall clock in ms, for the terminal UI and batch timing (never for events). */
int64_t ac_cli_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first SIGINT (Ctrl-C), SIGTERM or SIGHUP cancels the session(s)
 * cleanly (journal intact with its cancel event, tools killed, partial
 * answer shown) and the exit status is 128 + the signal; a second one exits
 * at once, killing the tool process groups first. */
static void on_stop_signal(int sig)
{
    if (ac_cli_interrupted) {
        ac_proc_kill_all_now(); /* no tool process outlives us */
        _exit(128 + sig);
    }
    ac_cli_interrupted = sig;
}

static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

void ac_cli_catch_stop_signals(struct sigaction old[3])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaddset(&sa.sa_mask, stop_signals[i]);
    ac_cli_interrupted = 0;
    for (int i = 0; i < 3; i++)
        sigaction(stop_signals[i], &sa, &old[i]);
}

void ac_cli_restore_stop_signals(const struct sigaction old[3])
{
    for (int i = 0; i < 3; i++)
        sigaction(stop_signals[i], &old[i], NULL);
}

const char *ac_cli_stop_signal_name(int sig)
{
    return sig == SIGTERM ? "terminated" : sig == SIGHUP ? "hangup" : "interrupted";
}

void ac_cli_emit_json(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (s) {
        puts(s);
        ac_cli_out_flush();
        free(s);
    }
    json_decref(o);
}
