/*
 * cli.h - the agentc command line: shared helpers of the subcommands.
 */
#ifndef AGENTC_CLI_H
#define AGENTC_CLI_H

#include "agentc/agentc.h"
#include "gen_cli.h"

/* Exit statuses of agentc run/demo/batch */
#define AC_EXIT_FAILED 1
#define AC_EXIT_CONFIG 3
#define AC_EXIT_OUTPUT 4 /* stdout could not be written (a closed pipe: SIGPIPE, 141) */
#define AC_EXIT_INTERRUPTED 130 /* 128 + SIGINT; SIGTERM and SIGHUP give 143 and 129 */

int ac_cli_run(int argc, char **argv);
int ac_cli_demo(int argc, char **argv);
int ac_cli_replay(int argc, char **argv);
int ac_cli_batch(int argc, char **argv);
int ac_cli_serve(int argc, char **argv);
int ac_journal_coverage(const char *path, const ac_fsm_tables *t, uint32_t *tc, uint32_t *sc,
                        char *err, size_t errcap);
/* Loads and checks a spec file into heap tables, printing diagnostics. */
ac_fsm_tables *ac_cli_tables_from_spec(const char *path);

#endif
