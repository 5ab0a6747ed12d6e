/*
 * store_copy.c - `agentc store copy FROM TO [--session ID] [--force]`: every
 * session of one store (an SQLite file or a PostgreSQL URI) copied into another
 * (ac_store_copy), a line per session on stderr and a summary on stdout. Stores
 * are named as messages name them: a URI without its password.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agentc/store.h"
#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: agentc store copy FROM TO [--session ID] [--force]\n\n"
            "Copies every stored session (or the one ID) of the store FROM into the store TO,\n"
            "either an SQLite file or a postgresql:// URI: rows, events, notes, snapshots,\n"
            "tool calls, params and agents; `sessions export` of a copy equals the original's.\n"
            "A session TO has already is refused (nothing is copied) unless --force replaces\n"
            "it. Copy sessions nobody runs.\n");
}

static void progress(void *ud, const char *id, uint64_t events)
{
    (void)ud;
    fprintf(stderr, "agentc store copy: %s: %" PRIu64 " events\n", id, events);
}

static int copy(const char *from_path, const char *to_path, const char *id, int force)
{
    ac_error err;
    ac_store_options ro = {0};
    ro.read_only = 1; /* FROM is only read: a file others own, or a read-only one, will do */
    ac_store *from = ac_store_open(from_path, &ro, &err);
    if (!from) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return AC_EXIT_CONFIG;
    }
    ac_store *to = ac_store_open(to_path, NULL, &err);
    if (!to) {
        fprintf(stderr, "agentc: %s\n", err.text);
        ac_store_close(from);
        return AC_EXIT_CONFIG;
    }
    ac_store_copy_stats n;
    int rc = ac_store_copy(from, to, id, force, progress, NULL, &n, &err);
    if (rc == AC_OK)
        printf("copied %" PRIu64 " sessions (%" PRIu64 " events, %" PRIu64 " notes, %" PRIu64
               " snapshots, %" PRIu64 " tool calls) from %s to %s\n",
               n.sessions, n.events, n.notes, n.snapshots, n.tool_calls, ac_store_name(from),
               ac_store_name(to));
    else
        fprintf(stderr, "agentc: store copy: %s (%" PRIu64 " sessions copied before)\n", err.text,
                n.sessions);
    ac_store_close(to);
    ac_store_close(from);
    return rc == AC_OK ? 0 : AC_EXIT_FAILED;
}

int ac_cli_store(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "copy") != 0) {
        usage(stderr);
        return AC_EXIT_USAGE;
    }
    const char *paths[2] = {NULL, NULL}, *id = NULL;
    int force = 0, n = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--force")) {
            force = 1;
        } else if (!strcmp(argv[i], "--session") && i + 1 < argc) {
            id = argv[++i];
        } else if (argv[i][0] != '-' && n < 2) {
            paths[n++] = argv[i];
        } else {
            fprintf(stderr, "agentc store copy: unexpected '%s'\n", argv[i]);
            usage(stderr);
            return AC_EXIT_USAGE;
        }
    }
    if (n != 2) {
        usage(stderr);
        return AC_EXIT_USAGE;
    }
    return copy(paths[0], paths[1], id, force);
}
