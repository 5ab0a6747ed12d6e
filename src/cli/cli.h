/*
 * cli.h - the agentc command line: shared helpers of the subcommands.
 */
#ifndef AGENTC_CLI_H
#define AGENTC_CLI_H

#include <jansson.h>

#include "agentc/agentc.h"
#include "gen_cli.h"

/* Exit statuses of agentc run/demo/batch */
#define AC_EXIT_FAILED 1
#define AC_EXIT_CONFIG 3
#define AC_EXIT_OUTPUT 4        /* stdout could not be written (a closed pipe: SIGPIPE, 141) */
#define AC_EXIT_INTERRUPTED 130 /* 128 + SIGINT; SIGTERM and SIGHUP give 143 and 129 */

int ac_cli_run(int argc, char **argv);
int ac_cli_demo(int argc, char **argv);
int ac_cli_replay(int argc, char **argv);
int ac_cli_batch(int argc, char **argv);
int ac_cli_serve(int argc, char **argv);
/* tools_cmd.c: check --tools FILE, diagram --tools FILE */
int ac_cli_has_tools_arg(int argc, char **argv);
int ac_cli_tools_check(int argc, char **argv);
int ac_cli_tools_diagram(int argc, char **argv);
/* Durable sessions (store_cli.c, sessions.c, resume.c) */
typedef struct ac_store ac_store;
int ac_cli_resume(int argc, char **argv);
int ac_cli_sessions(int argc, char **argv);
/* agentc store copy FROM TO [--session ID] [--force] (store_copy.c) */
int ac_cli_store(int argc, char **argv);
/* agentc sessions fork ID --at TURN [--as NEW] (sessions_fork.c): the exit status. */
int ac_cli_sessions_fork(ac_store *st, const char *id, const char *at_turn, const char *as);
/* The sessions of st, most recently updated first, in a malloc'd array (*n of them; free()
 * it). 0, or an exit status after saying why. */
typedef struct ac_store_session_info ac_store_session_info;
int ac_cli_sessions_collect(ac_store *st, ac_store_session_info **out, size_t *n);
/* A time (ms since the epoch) as 2026-11-26T13:02:02Z, "-" for 0. */
void ac_cli_fmt_time(int64_t ms, char *buf, size_t cap);
/* sessions prune (sessions_prune.c): its arguments checked (the duration into *ms; each
 * status "a" or "a,b" a status name), 0 or an exit status after saying why; and the prune. */
int ac_cli_prune_args(const char *older_than, const char *const *status, size_t n_status,
                      long long *ms);
int ac_cli_sessions_prune(ac_store *st, long long older_ms, const char *const *status,
                          size_t n_status, int dry_run);
/* The store of --db PATH (NULL: AGENTC_DB, else the default path); none (*out NULL) with
 * no_store or AGENTC_DB=off. 0, or an exit status after printing why. */
int ac_cli_store_open(const char *db, int no_store, ac_store **out);
/* The store AGENTC_DB names for the commands that store only when given one (serve, batch):
 * NULL when it is unset, empty or "off". */
const char *ac_cli_store_env(void);
/* The store of db (NULL: AGENTC_DB, else the default path) for reading it: 0 with *out
 * open, 0 with *out NULL when nothing is at its path (in path: never created by reading), or
 * an exit status after saying why (AGENTC_DB=off, a file that is not a store). read_only:
 * opened to read only (ac_store_options.read_only: list, show, export). */
int ac_cli_store_open_existing(const char *db, int read_only, ac_store **out, char *path,
                               size_t cap);
/* A stored session (create or continue, ac_store_session_opts; agent: the agent record a new
 * one keeps, NULL: none) or, without a store, a plain one. */
ac_session *ac_cli_session_open(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                                const char *journal, const char *agent, ac_error *err);
/* coverage.c: `agentc coverage`, and a journal's counts added to tc and sc (diagram). */
int ac_cli_coverage(int argc, char **argv);
/* testgen.c: `agentc testgen`. */
int ac_cli_testgen(int argc, char **argv);
/* Counts being gathered over the tables t: per row (tc) and per state (sc); the steps t has
 * no row for in stale (identity text -> {"transition", "count"}), NULL: not kept. */
typedef struct ac_cov {
    const ac_fsm_tables *t;
    uint32_t *tc, *sc;
    json_t *stale;
} ac_cov;
/* Adds the steps of the journal at path. 0, or -1 with err filled. */
int ac_cov_journal(ac_cov *c, const char *path, char *err, size_t errcap);
/* The TRANSITION shape of row r that `coverage --json` and `testgen` share. */
json_t *ac_cov_transition_json(const ac_fsm_tables *t, uint16_t r);
/* Whether row r counts as a transition (an `ignore` row makes no step). */
int ac_cov_counted(const ac_fsm_tables *t, uint16_t r);
/* Taken and total counted rows of machine mi (-1: all); a percentage (100 of none). */
void ac_cov_tally(const ac_cov *c, int mi, unsigned *taken, unsigned *total);
double ac_cov_pct(unsigned n, unsigned m);
int ac_journal_coverage(const char *path, const ac_fsm_tables *t, uint32_t *tc, uint32_t *sc,
                        char *err, size_t errcap);
/* The links between the agents the tool file at path declares and those of the tool files they
 * are given (agents_diagram.c): a DOT subgraph, malloc'd; NULL when it declares none. */
char *ac_cli_agents_diagram(const char *path);
/* Loads and checks a spec file into heap tables, printing diagnostics. */
ac_fsm_tables *ac_cli_tables_from_spec(const char *path);
/* The same from the spec's source text (path names it; NULL text: read path). */
ac_fsm_tables *ac_cli_tables_from_spec_text(const char *path, const char *text);

#endif
