/*
 * run_opts.h - the options of `agentc run`, `resume`, `demo` and `batch`
 * (run_opts.c), and the one session run that run, resume and demo share
 * (run.c).
 */
#ifndef AGENTC_CLI_RUN_OPTS_H
#define AGENTC_CLI_RUN_OPTS_H

#include "agent.h"
#include "engine_opts.h"

#define AC_CLI_MAX_ON 64

typedef struct run_opts {
    ac_cli_engine_opts eng;
    const char *journal;
    int trace, jsonl;
    int concurrency;          /* batch: sessions running at once */
    int ordered;              /* batch: print results in input order */
    const char *journal_dir;  /* batch: one journal per session */
    const char *metrics_file; /* batch: --metrics FILE, written at the end */
    const char *prompt;       /* run: the prompt; batch: the input file; resume: the id */
    const char *session, *db; /* durable sessions (store_cli.c) */
    int no_store, resume;
    const char *on[AC_CLI_MAX_ON]; /* --on STATE=EVENT: answers to a session waiting */
    size_t n_on;
    const char *post_at[AC_CLI_MAX_ON]; /* --post-at STATE=EVENT[:PAYLOAD] (post_at.h) */
    size_t n_post_at;
    /* --agents FILE --agent NAME: eng is that agent with the engine options given
     * laid over it (only the keys its "overridable" allows); agent_name is the
     * agent's name when one is given: NAME or --agent-name (NULL: the stored
     * session's, else "default") */
    const char *agents_file, *agent, *agent_name;
    ac_cli_agents *agents;
    ac_cli_agent_hold agent_hold;
} run_opts;

/* Parses argv (batch: the batch command's options). 0, -1 after --help was
 * printed, or an exit status after printing why. */
int ac_cli_parse_run(int argc, char **argv, run_opts *o, int batch);

/* Frees what ac_cli_parse_run loaded (the agents file). */
void ac_cli_run_opts_free(run_opts *o);

/* --agents FILE: the agent NAME of the file into eng, the options given in eng
 * laid over it where its "overridable" allows. cmd names the command in
 * messages. 0, or an exit status after printing why. */
int ac_cli_select_agent(const char *file, const char *name, ac_cli_engine_opts *eng,
                        ac_cli_agents **agents, ac_cli_agent_hold *hold, const char *cmd);

/* Runs one session of run, resume or demo (demo: a scripted turn and the
 * demo's closing hint). Returns the exit status. */
int ac_cli_run_one(const run_opts *o, int demo);

#endif
