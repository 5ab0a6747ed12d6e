/*
 * run_opts.h - the options of `agentc run`, `resume`, `demo` and `batch`
 * (run_opts.c), and the one session run that run, resume and demo share
 * (run.c).
 */
#ifndef AGENTC_CLI_RUN_OPTS_H
#define AGENTC_CLI_RUN_OPTS_H

#include "engine_opts.h"

#define AC_CLI_MAX_ON 64

typedef struct run_opts {
    ac_cli_engine_opts eng;
    const char *journal;
    int trace, jsonl;
    int concurrency;          /* batch: sessions running at once */
    int ordered;              /* batch: print results in input order */
    const char *journal_dir;  /* batch: one journal per session */
    const char *prompt;       /* run: the prompt; batch: the input file; resume: the id */
    const char *session, *db; /* durable sessions (store_cli.c) */
    int no_store, resume;
    const char *on[AC_CLI_MAX_ON]; /* --on STATE=EVENT: answers to a session waiting */
    size_t n_on;
} run_opts;

/* Parses argv (batch: the batch command's options). 0, -1 after --help was
 * printed, or an exit status after printing why. */
int ac_cli_parse_run(int argc, char **argv, run_opts *o, int batch);

/* Runs one session of run, resume or demo (demo: a scripted turn and the
 * demo's closing hint). Returns the exit status. */
int ac_cli_run_one(const run_opts *o, int demo);

#endif
