/*
 * subagents.h - the command line's opener of sub-agents (docs/composition.md): the child
 * session a call of a tool file's agent::NAME runs, on an engine built from the entry's agent
 * by the one engine builder (engine_opts.c) and the one agent loader (agent.c).
 */
#ifndef AGENTC_CLI_SUBAGENTS_H
#define AGENTC_CLI_SUBAGENTS_H

#include "agent.h"
#include "agentc/agentc.h"
#include "agentc/store.h"
#include "engine_opts.h"

typedef struct ac_cli_subagents ac_cli_subagents;
/* An opener for the sessions of engines built from top (the command's agent, borrowed):
 * children on loop, reporting to out (may be NULL), stored in st (NULL: journaled beside
 * their parent's journal, if it has one); an entry that names an agent of agents (may be
 * NULL) without describing one runs that agent. NULL when out of memory. */
ac_cli_subagents *ac_cli_subagents_new(const ac_cli_engine_opts *top, ac_loop *loop,
                                       const ac_output *out, ac_store *st,
                                       const ac_cli_agents *agents);
/* What ac_engine_config.subagents takes (set it on the command's engine). */
const ac_subagent_opener *ac_cli_subagents_opener(ac_cli_subagents *sa);
/* A stored session a handoff paused (ac_session_handoff): moved to the agent it names (the
 * change recorded with reason "handoff", *sp freed and opened again on that agent's engine)
 * and resumed, so a new turn answers the same user message. 1 when moved, 0 when no handoff
 * waits, -1 with err (*sp: the session as it stands; NULL when it could not be opened again). */
int ac_cli_subagents_handoff(ac_cli_subagents *sa, ac_session **sp, ac_error *err);
/* A tool file's agent entry's agent as JSON text (malloc'd; NULL: out of memory) and in
 * *base_dir the directory its paths are taken from: the entry less the keys of composition,
 * read from dir, or, when it gives nothing but its name and agents (may be NULL) has that
 * name, that agent. */
char *ac_cli_subagents_entry_agent(const ac_cli_agents *agents, const char *entry, const char *dir,
                                   const char **base_dir);
/* Frees the engines it built: after every session and engine that used it. */
void ac_cli_subagents_free(ac_cli_subagents *sa);

#endif
