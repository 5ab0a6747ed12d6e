/*
 * store_cli.c - how run, resume and batch find their store (--db, AGENTC_DB,
 * the default path for run and resume; --no-store or AGENTC_DB=off for none) and open a session
 * in it; and how `agentc sessions` opens a store it only reads (never made).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

const char *ac_cli_store_env(void)
{
    const char *env = getenv("AGENTC_DB");
    return env && *env && strcmp(env, "off") ? env : NULL;
}

int ac_cli_store_open_existing(const char *db, int read_only, ac_store **out, char *path,
                               size_t cap)
{
    *out = NULL;
    const char *env = getenv("AGENTC_DB");
    if (!db && env && !strcmp(env, "off")) {
        fprintf(stderr, "agentc: AGENTC_DB=off: there is no store to read (give --db PATH)\n");
        return AC_EXIT_CONFIG;
    }
    if (db)
        snprintf(path, cap, "%s", db);
    else if (ac_store_default_path(path, cap) != 0) {
        fprintf(stderr, "agentc: no store path: HOME is not set (give --db PATH)\n");
        return AC_EXIT_CONFIG;
    }
    /* a file that is not there stores nothing, and reading it does not make it (a database
     * URI names a server, which says itself what it holds) */
    int file = strcmp(path, ":memory:") && strncmp(path, "postgresql://", 13) &&
               strncmp(path, "postgres://", 11);
    struct stat sb;
    if (file && stat(path, &sb) != 0 && errno == ENOENT)
        return 0;
    ac_error err;
    ac_store_options opt = {0};
    opt.read_only = read_only;
    if (!(*out = ac_store_open(path, &opt, &err))) {
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
