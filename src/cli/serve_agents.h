/*
 * serve_agents.h - the agents `agentc serve` hosts: the command line's agent and those of
 * --agents FILE, given to the server (server.h: ac_srv_agents) by serve_agents.c.
 */
#ifndef AGENTC_CLI_SERVE_AGENTS_H
#define AGENTC_CLI_SERVE_AGENTS_H

#include "agent.h"
#include "cli.h"
#include "server/server.h"

typedef struct serve_agents {
    ac_cli_agents *file;           /* --agents FILE (owned), or NULL */
    const ac_cli_engine_opts *cli; /* the command line's agent, or NULL: none */
    const char *cli_name;          /* its name (--agent-name, default "default") */
    json_t *cli_overridable;       /* --overridable, as an array */
    const char *default_name;      /* a session naming no agent runs this one */
    int script_delay_ms;           /* --script-delay-ms, for every agent */
} serve_agents;

/* Sets out's callbacks on sa (file, cli, cli_name and script_delay_ms set by the caller);
 * overridable is --overridable's comma-separated keys (may be NULL). 0, or an exit status
 * after printing why. */
int ac_cli_serve_agents_init(serve_agents *sa, ac_srv_agents *out, const char *overridable);

void ac_cli_serve_agents_free(serve_agents *sa);

#endif
