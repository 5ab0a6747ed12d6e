/*
 * store_cli.c - how run, resume and batch find their store (--db, AGENTC_DB,
 * the default path; --no-store or AGENTC_DB=off for none) and open a session
 * in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/store.h"
#include "cli.h"

int ac_cli_store_open(const char *db, int no_store, ac_store **out)
{
    *out = NULL;
    const char *env = getenv("AGENTC_DB");
    if (no_store || (!db && env && !strcmp(env, "off")))
        return 0;
    ac_error err;
    *out = ac_store_open(db, NULL, &err);
    if (!*out) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return AC_EXIT_CONFIG;
    }
    return 0;
}

ac_session *ac_cli_session_open(ac_store *st, ac_engine *e, const char *id, unsigned flags,
                                const char *journal, const char *agent, ac_error *err)
{
    if (!st)
        return ac_session_new(e, id ? id : "s1", journal, err);
    ac_session_options opts = {0};
    opts.agent = agent;
    return ac_store_session_opts(st, e, id, flags, &opts, err);
}
