/*
 * run_common.h - what the commands that run sessions (run, resume, demo,
 * batch) share: stop signals, stdout write errors, JSON Lines output.
 */
#ifndef AGENTC_CLI_RUN_COMMON_H
#define AGENTC_CLI_RUN_COMMON_H

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

/* The signal that asked us to stop (SIGINT, SIGTERM, SIGHUP), or 0. */
extern volatile sig_atomic_t ac_cli_interrupted;

/* The first error writing stdout (an errno value), or 0: it stops the
 * session(s) like a signal does. */
extern int ac_cli_out_errno;

/* Flushes stdout, noting a write error in ac_cli_out_errno. */
void ac_cli_out_flush(void);

/* SIGPIPE ignored while sessions run (restored by ac_cli_finish_output). */
void ac_cli_ignore_sigpipe(void);

/* The exit status once the sessions are over: stdout flushed and checked,
 * a closed pipe re-raised as SIGPIPE, other write errors reported. */
int ac_cli_finish_output(int rc);

/* Wall clock in ms, for the terminal UI and batch timing (never for events). */
int64_t ac_cli_wall_ms(void);

/* The first SIGINT, SIGTERM or SIGHUP sets ac_cli_interrupted; a second one
 * exits at once, killing the tool process groups first. */
void ac_cli_catch_stop_signals(struct sigaction old[3]);
void ac_cli_restore_stop_signals(const struct sigaction old[3]);
const char *ac_cli_stop_signal_name(int sig);

/* Prints o as one JSON line on stdout and releases it (o may be NULL). */
void ac_cli_emit_json(json_t *o);

#endif
