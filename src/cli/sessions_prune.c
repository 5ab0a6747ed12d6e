/*
 * sessions_prune.c - agentc sessions prune --older-than DURATION
 * [--status STATUS]... [--dry-run]: the store kept tidy. Removes the
 * sessions not updated for DURATION (of the statuses given), never one in
 * use by a running process, and says what it removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/store.h"
#include "cli.h"
#include "run_ui.h"
#include "util/units.h"

/* The name of status k, NULL past the last (the numbers run from 0 unbroken). */
static const char *status_name(int k)
{
    const char *s = k < 64 ? ac_session_status_name((enum ac_session_status)k) : NULL;
    return s && strncmp(s, "unknown", 7) ? s : NULL;
}

/* A status name a session can have: one ac_session_status_name gives. */
static int known_status(const char *name, size_t n)
{
    for (int k = 0; status_name(k); k++)
        if (strlen(status_name(k)) == n && !strncmp(status_name(k), name, n))
            return 1;
    return 0;
}

/* Every name of the lists (each "a" or "a,b"), or -1 after naming a bad one. */
static int check_statuses(const char *const *status, size_t n_status)
{
    for (size_t k = 0; k < n_status; k++)
        for (const char *p = status[k];; p++) {
            size_t n = strcspn(p, ",");
            if (!known_status(p, n)) {
                fprintf(stderr, "agentc sessions prune: unknown status '%.*s' (", (int)n, p);
                for (int j = 0; status_name(j); j++)
                    fprintf(stderr, "%s%s", j ? ", " : "", status_name(j));
                fprintf(stderr, ")\n");
                return -1;
            }
            p += n;
            if (!*p)
                break;
        }
    return 0;
}

int ac_cli_prune_args(const char *older_than, const char *const *status, size_t n_status,
                      long long *ms)
{
    int rc = ac_parse_duration_ms(older_than, ms);
    if (rc != AC_UNITS_OK) {
        fprintf(stderr,
                "agentc sessions prune: --older-than %s: %s (a number and a unit: 90s, 30m, "
                "12h, 7d)\n",
                older_than, rc == AC_UNITS_ERANGE ? "too large" : "not a duration");
        return AC_EXIT_USAGE;
    }
    return check_statuses(status, n_status) ? AC_EXIT_USAGE : 0;
}

/* True when the session's status is one of the lists' (or none was given). */
static int status_matches(const char *st, const char *const *status, size_t n_status)
{
    size_t len = strlen(st);
    for (size_t k = 0; k < n_status; k++)
        for (const char *p = status[k];; p++) {
            size_t n = strcspn(p, ",");
            if (n == len && !strncmp(p, st, n))
                return 1;
            p += n;
            if (!*p)
                break;
        }
    return n_status == 0;
}

static void say(const char *what, const ac_store_session_info *i)
{
    char id[1040], u[32];
    ac_cli_vis_line(i->id, id, sizeof id);
    ac_cli_fmt_time(i->updated_ms, u, sizeof u);
    printf("%s %s (%s, updated %s)\n", what, id, i->status, u);
}

/* Removes (or with dry_run, names) one session: 0 removed, 1 kept in use,
 * 2 gone meanwhile, or -(exit status) after saying why. */
static int prune_one(ac_store *st, const ac_store_session_info *i, int dry_run)
{
    ac_error err;
    int r = dry_run ? (i->holder[0] ? AC_STORE_EBUSY : AC_OK) : ac_store_rm(st, i->id, &err);
    if (r == AC_OK) {
        say(dry_run ? "would remove" : "removed", i);
        return 0;
    }
    if (r == AC_STORE_ENOENT)
        return 2;
    char id[1040], why[300];
    ac_cli_vis_line(i->id, id, sizeof id);
    if (r != AC_STORE_EBUSY) {
        ac_cli_vis_line(err.text, why, sizeof why);
        fprintf(stderr, "agentc: %s\n", why);
        return -AC_EXIT_CONFIG;
    }
    if (dry_run)
        snprintf(err.text, sizeof err.text, "in use by %s", i->holder);
    ac_cli_vis_line(err.text, why, sizeof why);
    fprintf(stderr, "agentc: kept %s: %s\n", id, why);
    return 1;
}

int ac_cli_sessions_prune(ac_store *st, long long older_ms, const char *const *status,
                          size_t n_status, int dry_run)
{
    ac_store_session_info *v;
    size_t n, count[3] = {0, 0, 0};
    int rc = ac_cli_sessions_collect(st, &v, &n);
    if (rc)
        return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    for (size_t k = 0; k < n && !rc; k++) {
        const ac_store_session_info *i = &v[k];
        if (now_ms - i->updated_ms < older_ms || !status_matches(i->status, status, n_status))
            continue;
        int r = prune_one(st, i, dry_run);
        if (r < 0)
            rc = -r;
        else
            count[r]++;
    }
    free(v);
    fprintf(stderr, "%s %zu session%s", dry_run ? "would remove" : "removed", count[0],
            count[0] == 1 ? "" : "s");
    if (count[1])
        fprintf(stderr, "; kept %zu in use by a running process", count[1]);
    fputc('\n', stderr);
    return rc ? rc : count[1] ? 1 : 0;
}
