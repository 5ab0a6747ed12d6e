/*
 * store.c - the store's public functions (agentc/store.h) over its backend
 * (store_int.h): opening by path, the default path, listing, removing and
 * exporting sessions.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "io/loop.h"
#include "store_append.h"
#include "store_int.h"
#include "util/random.h"

int ac_store_default_path(char *buf, size_t cap)
{
    const char *db = getenv("AGENTC_DB");
    int n;
    if (db && *db) {
        n = snprintf(buf, cap, "%s", db);
    } else {
        const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            n = snprintf(buf, cap, "%s/agentc/sessions.db", xdg);
        else if (home && *home)
            n = snprintf(buf, cap, "%s/.local/state/agentc/sessions.db", home);
        else
            return -1;
    }
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* mkdir -p of path's directory, 0700 for what is created. */
static int make_parent(const char *path)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(dir, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* "agentc RANDOM:PID@HOST": the random instance id tells apart two processes with the same
 * PID and host name (containers). */
static void make_holder(char *buf, size_t cap)
{
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "localhost");
    unsigned long long r = 0;
    ac_random_bytes(&r, sizeof r);
    snprintf(buf, cap, "agentc %016llx:%ld@%s", r, (long)getpid(), host);
}

ac_store *ac_store_open(const char *path, const ac_store_options *opt, ac_error *err)
{
    char def[4096];
    if (!path) {
        if (ac_store_default_path(def, sizeof def) != 0) {
            ac_store_err(err, AC_ECONFIG, "no store path: set --db or AGENTC_DB (HOME is unset)");
            return NULL;
        }
        path = def;
    }
    int pg = ac_store_is_pg_uri(path);
    if (!pg && !(opt && opt->read_only) && make_parent(path) != 0) {
        ac_store_err(err, AC_EIO, "cannot create the directory of store '%s': %s", path,
                     strerror(errno));
        return NULL;
    }
    char holder[128];
    if (opt && opt->holder && *opt->holder)
        snprintf(holder, sizeof holder, "%s", opt->holder);
    else
        make_holder(holder, sizeof holder);
    ac_store *st = NULL;
    if ((pg ? ac_store_pg_open(path, opt, holder, &st, err)
            : ac_store_sqlite_open(path, opt, holder, &st, err)) != AC_OK)
        return NULL;
    st->lease_ms = opt && opt->lease_ms > 0 ? opt->lease_ms : 30000;
    st->snapshot_every = opt && opt->snapshot_every > 0 ? opt->snapshot_every : 1000;
    if (err)
        memset(err, 0, sizeof *err);
    return st;
}

const char *ac_store_name(const ac_store *st)
{
    return st ? st->path : "";
}

const char *ac_store_holder(const ac_store *st)
{
    return st ? st->holder : "";
}

void ac_store_close(ac_store *st)
{
    if (st) {
        ac_store_group_free(st);
        st->ops->close(st);
    }
}

void ac_store_commit_at_once(ac_store *st, ac_loop *loop, const ac_store_commit *c, size_t n,
                             int *rcs, ac_error *errs, int *rc, void (*done)(void *ud), void *ud)
{
    (void)loop;
    *rc = st->ops->commit_many(st, c, n, rcs, errs);
    done(ud);
}

int ac_store_list(ac_store *st, ac_store_list_fn fn, void *ud, ac_error *err)
{
    if (!st || !fn) {
        ac_store_err(err, AC_EINVAL, "ac_store_list needs a store and a function");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, NULL);
    return st->ops->list(st, fn, ud, err);
}

int ac_store_events(ac_store *st, const char *id, uint64_t after, ac_store_event_fn fn, void *ud,
                    ac_error *err)
{
    if (!st || !id || !fn) {
        ac_store_err(err, AC_EINVAL, "ac_store_events needs a store, an id and a function");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    return st->ops->events(st, id, after, fn, ud, err);
}

int ac_store_forget(ac_store *st, const char *id, uint64_t upto, ac_error *err)
{
    ac_store_session_info info;
    int rc = ac_store_info(st, id, &info, err);
    if (rc != AC_OK)
        return rc;
    if (upto > info.snapshot_seq) {
        ac_store_err(err, AC_EINVAL,
                     "session '%s': events up to %llu cannot go, its latest snapshot is at %llu",
                     id, (unsigned long long)upto, (unsigned long long)info.snapshot_seq);
        return AC_EINVAL;
    }
    return st->ops->forget(st, id, upto, err);
}

void ac_store_set_observer(ac_store *st, ac_store_observer_fn fn, void *ud)
{
    if (st) {
        st->observer = fn;
        st->observer_ud = ud;
    }
}

void ac_store_set_append_hook(ac_store *st, ac_store_append_fn fn, void *ud)
{
    if (st) {
        st->append = fn;
        st->append_ud = ud;
    }
}

int ac_store_info(ac_store *st, const char *id, ac_store_session_info *out, ac_error *err)
{
    if (!st || !id || !out) {
        ac_store_err(err, AC_EINVAL, "ac_store_info needs a store, an id and an output");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    return st->ops->info(st, id, out, err);
}

int ac_store_rm(ac_store *st, const char *id, ac_error *err)
{
    if (!st || !id) {
        ac_store_err(err, AC_EINVAL, "ac_store_rm needs a store and an id");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    return st->ops->rm(st, id, st->holder, 0, err);
}

int ac_store_rm_fenced(ac_store *st, const char *id, int64_t attempt, ac_error *err)
{
    if (!st || !id) {
        ac_store_err(err, AC_EINVAL, "ac_store_rm_fenced needs a store and an id");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    return st->ops->rm(st, id, st->holder, attempt > 0 ? attempt : 0, err);
}

/* ---- export: the journal format of src/session/journal.h ---- */

typedef struct export_ctx {
    FILE *f;
    json_t *notes; /* [[after, kind, body, t], ...] in order */
    size_t next_note;
    int failed;
} export_ctx;

static void put_line(export_ctx *c, json_t *line)
{
    if (!line || json_dumpf(line, c->f, JSON_COMPACT) != 0 || fputc('\n', c->f) == EOF)
        c->failed = 1;
    json_decref(line);
}

static void notes_upto(export_ctx *c, uint64_t n)
{
    for (; c->next_note < json_array_size(c->notes); c->next_note++) {
        json_t *nt = json_array_get(c->notes, c->next_note);
        if ((uint64_t)json_integer_value(json_array_get(nt, 0)) > n)
            break;
        json_t *body = json_loads(json_string_value(json_array_get(nt, 2)), 0, NULL);
        put_line(c, json_pack("{s:O, s:O, s:O, s:o?}", "note", json_array_get(nt, 1), "after",
                              json_array_get(nt, 0), "t", json_array_get(nt, 3), "data", body));
    }
}

static int collect_note(void *ud, const ac_store_event *ev)
{
    export_ctx *c = ud;
    json_array_append_new(c->notes, json_pack("[I s s I]", (json_int_t)ev->n, ev->ev,
                                              ev->data ? ev->data : "{}", (json_int_t)ev->t_ms));
    return 0;
}

static int export_event(void *ud, const ac_store_event *ev)
{
    export_ctx *c = ud;
    notes_upto(c, ev->n - 1);
    json_t *data = ev->data ? json_loads(ev->data, JSON_DECODE_ANY, NULL) : NULL;
    put_line(c, json_pack("{s:I, s:I, s:s, s:o?}", "n", (json_int_t)ev->n, "t",
                          (json_int_t)ev->t_ms, "ev", ev->ev, "data", data));
    if (ev->steps) { /* an event whose steps were not committed has none (a crash) */
        json_t *steps = json_loads(ev->steps, 0, NULL);
        put_line(c, json_pack("{s:I, s:o}", "steps", (json_int_t)ev->n, "tr",
                              steps ? steps : json_array()));
    }
    return c->failed ? AC_EIO : 0;
}

int ac_store_export(ac_store *st, const char *id, const char *path, ac_error *err)
{
    if (!st || !id || !path) {
        ac_store_err(err, AC_EINVAL, "ac_store_export needs a store, an id and a path");
        return AC_EINVAL;
    }
    ac_store_group_sync(st, id);
    ac_store_session_info info;
    int rc = st->ops->info(st, id, &info, err);
    if (rc != AC_OK)
        return rc;
    char *meta = NULL;
    if ((rc = st->ops->params(st, id, &meta, err)) != AC_OK)
        return rc;
    json_t *m = json_loads(meta, 0, NULL);
    free(meta);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        ac_store_err(err, AC_EIO, "cannot create '%s': %s", path, strerror(errno));
        json_decref(m);
        return AC_EIO;
    }
    export_ctx c = {fdopen(fd, "w"), json_array(), 0, 0};
    if (!c.f) {
        close(fd);
        json_decref(m);
        json_decref(c.notes);
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return AC_ENOMEM;
    }
    /* the header: the spec the session started under (a later change is a note) */
    json_t *params = json_object_get(m, "params");
    put_line(&c, json_pack("{s:i, s:s, s:s, s:s, s:O?}", "agentc_journal", 2, "spec",
                           json_string_value(json_object_get(m, "spec"))
                               ? json_string_value(json_object_get(m, "spec"))
                               : "",
                           "spec_hash", info.spec_hash, "session", id, "params",
                           json_is_object(params) ? params : NULL));
    json_decref(m);
    rc = st->ops->notes(st, id, collect_note, &c, err);
    if (rc == AC_OK)
        rc = st->ops->events(st, id, 0, export_event, &c, err);
    notes_upto(&c, UINT64_MAX);
    json_decref(c.notes);
    if (fclose(c.f) != 0)
        c.failed = 1;
    if (rc == AC_OK && c.failed) {
        ac_store_err(err, AC_EIO, "cannot write '%s': %s", path, strerror(errno));
        rc = AC_EIO;
    }
    if (rc != AC_OK)
        unlink(path);
    return rc;
}
