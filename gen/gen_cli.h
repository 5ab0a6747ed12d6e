/*
 * gen_cli.h - the `check`, `gen` and `diagram` subcommands, shared by the
 * bootstrap generator (agentc-gen) and the full agentc CLI.
 */
#ifndef AGENTC_GEN_CLI_H
#define AGENTC_GEN_CLI_H

#include "contract.h"
#include "spec.h"

/* Exit codes */
#define AC_EXIT_OK 0
#define AC_EXIT_ERRORS 1
#define AC_EXIT_USAGE 2

/* The handlers a program runs specs with: their contracts, and which names it binds. */
typedef struct ac_cli_handlers {
    const ac_contract *contracts;
    size_t n_contracts;
    /* whether the program has a handler of that kind (enum ac_handler_kind) and name */
    int (*has)(int kind, const char *name);
} ac_cli_handlers;

/* `builtin` (NULL in a program without handlers) are the program's built-in handlers: `check`
 * checks against them unless given `--handlers none`. */
int ac_cli_check(int argc, char **argv, const ac_cli_handlers *builtin);
/* `handlers` (NULL: none) are the program's: the events their effects post count in the proof
 * that every state can be left, as in `check`. */
int ac_cli_gen(int argc, char **argv, const ac_cli_handlers *handlers);
/* `cov_loader` (may be NULL) turns a --journal FILE into coverage counts;
 * returns 0 on success and fills counts sized to the tables. */
typedef int (*ac_cov_loader)(const char *journal, const ac_fsm_tables *t, uint32_t *trans_counts,
                             uint32_t *state_counts, char *err, size_t errcap);
int ac_cli_diagram(int argc, char **argv, ac_cov_loader cov_loader,
                   const ac_cli_handlers *handlers);

/* Loads, checks (the proof that every state can be left counting what the handlers' effects
 * post: `h` may be NULL) and prints diagnostics. Returns NULL after printing the reason;
 * *exit_code is 1 for spec errors, 2 for I/O problems. */
ac_spec *ac_cli_load_spec(const char *path, int *exit_code, int quiet_warnings,
                          const ac_cli_handlers *h);

/* The path recorded in generated files: relative to the repository root
 * (the nearest parent directory holding .git or .agentc-root), else the
 * file name. Written to `out`. */
void ac_spec_rel_path(const char *path, char *out, size_t cap);

#endif
