/*
 * run_agent.h - the agent a stored session runs with on `agentc run --session`
 * and `agentc resume` (run_agent.c): the record the store keeps for it, with
 * the options given on this command line laid over it; what changed, recorded
 * in the session's journal (agent.changed) before the turn that uses it.
 */
#ifndef AGENTC_CLI_RUN_AGENT_H
#define AGENTC_CLI_RUN_AGENT_H

#include <jansson.h>

#include "agent.h"
#include "agentc/store.h"

typedef struct run_agent {
    ac_cli_agent_hold hold;
    ac_cli_engine_opts stored; /* the stored agent's options (valid when stored_rec) */
    ac_cli_engine_opts eff;    /* what this run's engine is built from */
    char *stored_rec;          /* the session's agent record; NULL: none (new, or stored
                                  before agents were recorded) */
    char *rec;                 /* the record of eff: the session's agent from now on */
    json_t *what;              /* the keys rec differs from stored_rec in (NULL, []: none) */
    int exists;                /* the store has the session */
    int at_rest;               /* ... and it is between turns */
    const char *name;          /* the agent's name from now on (NULL: the stored one's) */
    char refused[600];         /* why ac_cli_run_agent_change refused the change ("": it did not) */
} run_agent;

/* Fills ra for the session id of st (id NULL: a new one) and the options given: laid over
 * the stored agent (overlay: run, resume), or the whole agent from now on (serve: its one
 * engine's). 0, or an exit status after printing why (cmd names the command): with overlay,
 * a change asked of a session stopped mid-turn is refused. ra is freed with
 * ac_cli_run_agent_free either way. */
int ac_cli_run_agent(ac_store *st, const char *id, const ac_cli_engine_opts *given, int overlay,
                     const char *cmd, run_agent *ra);
/* The same, the agent called name (run --agent NAME, --agent-name) from now on; name NULL:
 * the stored agent's name, else "default". */
int ac_cli_run_agent_named(ac_store *st, const char *id, const ac_cli_engine_opts *given,
                           const char *name, const char *cmd, run_agent *ra);

/* ra->rec made of ra->eff when ac_cli_run_agent did not (a new session, one stored without
 * an agent: after its engine was built, whose errors about the files come first). 0, or an
 * exit status after printing why. */
int ac_cli_run_agent_record(run_agent *ra, const char *cmd);

void ac_cli_run_agent_free(run_agent *ra);

/* The change of ra recorded in the stored session id: opened on an engine of its stored
 * agent on loop (its past rebuilt under what recorded it), the record agent.changed made at
 * rest, the session closed. 0, or an exit status after printing why. Nothing to do when ra
 * changes nothing or the session is mid-turn. */
int ac_cli_run_agent_change(ac_store *st, const char *id, ac_loop *loop, run_agent *ra,
                            const char *cmd);

/* An engine built from an agent record (agent.h), and what it points into. */
typedef struct record_engine {
    ac_cli_agent_hold hold;
    ac_cli_engine_opts opts;
    ac_cli_engine_base base;
    ac_fsm_tables *tables; /* ac_cli_record_engine_offline's */
    ac_engine *e;
} record_engine;

/* re->e built from the record (either form of agent.h) on loop (may be NULL), output to out
 * (may be NULL). 0, or an exit status after printing why (after cmd). re is freed with
 * ac_cli_record_engine_free either way. */
int ac_cli_record_engine(const char *record, ac_loop *loop, const ac_output *out, const char *cmd,
                         record_engine *re);
/* re->e an engine with no loop of the record's spec text and params, nothing else (a
 * rebuild, a replay: nothing runs). 0, or -1 with err filled. re is freed with
 * ac_cli_record_engine_free either way. */
int ac_cli_record_engine_offline(const char *record, record_engine *re, char *err, size_t errcap);
/* The same with the record's system prompt and output schema, reporting to out (may be
 * NULL): the engine a session changing to that agent is tried on, and a replay's. */
int ac_cli_record_engine_replay(const char *record, const ac_output *out, record_engine *re,
                                char *err, size_t errcap);
void ac_cli_record_engine_free(record_engine *re);

#endif
