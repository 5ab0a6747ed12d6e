/*
 * sessions_fork.c - `agentc sessions fork ID --at TURN [--as NEW]`: a new
 * session made of a stored one's journal up to the end of its turn TURN, with
 * its agent as it was then (store.h: ac_store_fork); nothing is run again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc/store.h"
#include "cli.h"
#include "run_agent.h"

/* An engine of the agent the session ran with after event at (the built-in spec when it
 * recorded none), on loop (its MCP servers need one). 0, or an exit status after printing
 * why. */
static int agent_engine(ac_store *st, const char *id, uint64_t at, ac_loop *loop, record_engine *re)
{
    memset(re, 0, sizeof *re);
    ac_error err = {0};
    char *rec = ac_store_agent(st, id, at, &err);
    if (!rec && err.code != AC_OK) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return err.code == AC_STORE_ENOENT ? 1 : AC_EXIT_CONFIG;
    }
    if (!rec) { /* stored before agents were recorded: rebuilt on the built-in spec */
        re->e = ac_cli_engine_offline(NULL, NULL, &err);
        if (!re->e)
            fprintf(stderr, "agentc: %s\n", err.text);
        return re->e ? 0 : AC_EXIT_CONFIG;
    }
    int rc = ac_cli_record_engine(rec, loop, NULL, "agentc", re);
    free(rec);
    return rc;
}

/* The event that ended turn `turn` of the session, read with the tables of its agent now. 0,
 * or an exit status after printing why. */
static int turn_end(ac_store *st, const char *id, unsigned long long turn, ac_loop *loop,
                    uint64_t *at)
{
    record_engine re;
    int rc = agent_engine(st, id, 0, loop, &re);
    ac_error err = {0};
    if (!rc && ac_store_turn_end(st, re.e, id, turn, at, &err) != AC_OK) {
        fprintf(stderr, "agentc: %s\n", err.text);
        rc = err.code == AC_STORE_ENOENT || err.code == AC_EINVAL ? 1 : AC_EXIT_CONFIG;
    }
    ac_cli_record_engine_free(&re);
    return rc;
}

int ac_cli_sessions_fork(ac_store *st, const char *id, const char *at_turn, const char *as)
{
    char *end = NULL;
    unsigned long long turn = at_turn ? strtoull(at_turn, &end, 10) : 0;
    if (!at_turn || !*at_turn || *end || !turn || at_turn[0] == '-') {
        fprintf(stderr, "agentc sessions fork: --at TURN (a turn number from 1) is needed\n");
        return AC_EXIT_USAGE;
    }
    ac_loop *loop = ac_loop_new();
    if (!loop) {
        fprintf(stderr, "agentc: cannot create the event loop\n");
        return AC_EXIT_CONFIG;
    }
    char fresh[300];
    if (!as) {
        snprintf(fresh, sizeof fresh, "%.200s-fork-%llu-%lx", id, turn,
                 (unsigned long)time(NULL) ^ (unsigned long)getpid());
        as = fresh;
    }
    uint64_t at = 0;
    record_engine re;
    memset(&re, 0, sizeof re);
    int rc = turn_end(st, id, turn, loop, &at);
    if (!rc)
        rc = agent_engine(st, id, at, loop, &re); /* the agent as it was then */
    ac_error err = {0};
    if (!rc && ac_store_fork(st, re.e, id, at, turn, as, &err) != AC_OK) {
        fprintf(stderr, "agentc: %s\n", err.text);
        rc = err.code == AC_STORE_ENOENT || err.code == AC_EINVAL ? 1 : AC_EXIT_CONFIG;
    }
    ac_cli_record_engine_free(&re);
    ac_loop_free(loop);
    if (!rc) {
        printf("%s\n", as);
        fprintf(stderr, "agentc: forked %s at the end of turn %llu (event %llu) as %s\n", id, turn,
                (unsigned long long)at, as);
    }
    return rc;
}
