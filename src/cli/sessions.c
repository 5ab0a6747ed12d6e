/*
 * sessions.c - agentc sessions list|show|close|rm|prune|export|fork: the sessions
 * of a store (prune: sessions_prune.c, fork: sessions_fork.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agentc/store.h"
#include "cli.h"
#include "engine_opts.h"
#include "run_agent.h"
#include "run_ui.h"
#include "spec.h"
#include "util/grow.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: agentc sessions COMMAND [--db PATH]\n\n"
            "  list [--json]            the stored sessions, most recently updated first\n"
            "  show ID [--json] [--spec FILE]\n"
            "                           one session: where it stands, its conversation and\n"
            "                           its tool calls\n"
            "  close ID [--spec FILE]   end a session (the spec's close event, journaled):\n"
            "                           what is sent to it later is refused, saying so\n"
            "  rm ID                    remove a session and all that is stored for it\n"
            "  prune --older-than DURATION [--status STATUS]... [--dry-run]\n"
            "                           remove the sessions not updated for DURATION (90s,\n"
            "                           30m, 12h, 7d), only those with a STATUS given (idle,\n"
            "                           ended, ...; repeatable or a,b); one in use by a\n"
            "                           running process is kept; --dry-run: only say which\n"
            "  export ID [-o FILE] [--force]\n"
            "                           write its journal (agentc replay reads it) to standard\n"
            "                           output, or to FILE (-o -: standard output); an existing\n"
            "                           FILE is replaced only with --force\n"
            "  fork ID --at TURN [--as NEW]\n"
            "                           a new session (its id printed) of ID's journal up to\n"
            "                           the end of its turn TURN, with its agent as it was\n"
            "                           then; nothing runs again, the two go on apart\n\n"
            "The store: --db PATH, else $AGENTC_DB, else $XDG_STATE_HOME/agentc/sessions.db\n"
            "(~/.local/state/agentc/sessions.db). Text from models, tools and clients is shown\n"
            "visibly (\\x1b), never as escape sequences.\n"
            "exit status: 0 done, 1 no such session, a session in use, or the FILE exists,\n"
            "2 bad usage, 3 the store cannot be opened or read, or the journal not written\n");
}

void ac_cli_fmt_time(int64_t ms, char *buf, size_t cap)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (!ms || !gmtime_r(&secs, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, cap, "-");
}

/* JSON on stdout; on a terminal every character beyond ASCII is escaped,
 * so no control character (C1 included) reaches it raw. */
static void print_json(const json_t *o)
{
    size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER | (isatty(1) ? JSON_ENSURE_ASCII : 0);
    char *s = o ? json_dumps(o, flags) : NULL;
    printf("%s\n", s ? s : "null");
    free(s);
}

static json_t *info_json(const ac_store_session_info *i)
{
    char c[32], u[32];
    ac_cli_fmt_time(i->created_ms, c, sizeof c);
    ac_cli_fmt_time(i->updated_ms, u, sizeof u);
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I, s:s, s:s}", "id", i->id, "status",
                     i->status, "at_rest", i->at_rest, "spec_hash", i->spec_hash, "created", c,
                     "updated", u, "events", (json_int_t)i->events, "snapshot",
                     (json_int_t)i->snapshot_seq, "holder", i->holder, "title", i->title);
}

typedef struct list_acc {
    ac_store_session_info *v;
    size_t n, cap;
    int oom;
} list_acc;

static int collect_one(void *ud, const ac_store_session_info *i)
{
    list_acc *a = ud;
    if (ac_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v)) {
        a->oom = 1;
        return 1;
    }
    a->v[a->n++] = *i;
    return 0;
}

int ac_cli_sessions_collect(ac_store *st, ac_store_session_info **out, size_t *n)
{
    list_acc a = {NULL, 0, 0, 0};
    ac_error err;
    *out = NULL;
    *n = 0;
    if (ac_store_list(st, collect_one, &a, &err) != AC_OK || a.oom) {
        fprintf(stderr, "agentc: %s\n", a.oom ? "out of memory" : err.text);
        free(a.v);
        return AC_EXIT_CONFIG;
    }
    *out = a.v;
    *n = a.n;
    return 0;
}

/* What a listed session's turn is: at rest, running in a live process, or
 * stopped mid-turn by a crash (agentc resume finishes it). */
static const char *turn_word(const ac_store_session_info *i)
{
    return i->at_rest ? "at rest" : i->holder[0] ? "running" : "stopped";
}

/* The sessions as a table under a header row; text from outside (ids,
 * titles) is written visibly, never as escape sequences. */
static void list_table(const ac_store_session_info *v, size_t n)
{
    int w = 2, stopped = 0;
    char id[1040], title[80], u[32];
    for (size_t k = 0; k < n; k++) { /* the ID column fits ids up to 32 columns */
        ac_cli_vis_line(v[k].id, id, sizeof id);
        int len = (int)strlen(id);
        w = len > w ? (len < 32 ? len : 32) : w;
    }
    printf("%-*s  %-9s  %-7s  %6s  %-20s  %-6s  %s\n", w, "ID", "STATUS", "TURN", "EVENTS",
           "UPDATED", "IN USE", "TITLE");
    for (size_t k = 0; k < n; k++) {
        const ac_store_session_info *i = &v[k];
        ac_cli_vis_line(i->id, id, sizeof id);
        ac_cli_vis_line(i->title, title, sizeof title);
        ac_cli_fmt_time(i->updated_ms, u, sizeof u);
        printf("%-*s  %-9s  %-7s  %6llu  %-20s  %-6s  %s\n", w, id, i->status, turn_word(i),
               (unsigned long long)i->events, u, i->holder[0] ? "yes" : "no", title);
        stopped |= !i->at_rest && !i->holder[0];
    }
    if (stopped)
        fprintf(stderr, "stopped: a crash ended its process mid-turn; agentc resume ID "
                        "finishes the turn\n");
}

static int list(ac_store *st, int json)
{
    ac_store_session_info *v;
    size_t n;
    int rc = ac_cli_sessions_collect(st, &v, &n);
    if (rc)
        return rc;
    if (!n && !json)
        fprintf(stderr, "no sessions stored\n");
    else if (!json)
        list_table(v, n);
    for (size_t k = 0; json && k < n; k++) {
        json_t *o = info_json(&v[k]);
        print_json(o);
        json_decref(o);
    }
    free(v);
    return 0;
}

static ac_engine *inspect_engine(const char *spec, ac_fsm_tables **tables)
{
    *tables = NULL;
    if (spec && !(*tables = ac_cli_tables_from_spec(spec)))
        return NULL;
    ac_error err;
    ac_engine *e = ac_cli_engine_offline(*tables, NULL, &err); /* the session is only rebuilt */
    if (!e)
        fprintf(stderr, "agentc: %s\n", err.text);
    return e;
}

/* Text from a model, a tool or a client, written visibly (run_ui.c): no
 * escape sequence in it reaches the terminal. */
static void put_vis(const char *text, int mode)
{
    vis_carry cy = {{0}, 0};
    if (text)
        ac_cli_vis_write(stdout, text, strlen(text), mode, &cy, 1);
}

/* The call with this id among the session's tool calls, or NULL. */
static json_t *call_by_id(json_t *calls, const char *id)
{
    size_t k;
    json_t *c;
    json_array_foreach(calls, k, c)
    {
        const char *cid = json_string_value(json_object_get(c, "id"));
        if (id && cid && !strcmp(cid, id))
            return c;
    }
    return NULL;
}

/* One tool call as run shows it: "-> name arguments", or its result
 * "<- name ok|failed: result". */
static void put_call(json_t *call, int result)
{
    const char *state = json_string_value(json_object_get(call, "state"));
    put_vis(result ? "<- " : "-> ", VIS_LINE);
    put_vis(json_string_value(json_object_get(call, "name")), VIS_LINE);
    if (!result) {
        putchar(' ');
        put_vis(json_string_value(json_object_get(call, "arguments")), VIS_TEXT);
    } else if (state && !strcmp(state, "none")) {
        fputs(" (no result)", stdout);
    } else {
        printf(" %s: ", state && !strcmp(state, "success") ? "ok" : "failed");
        put_vis(json_string_value(json_object_get(call, "result")), VIS_TEXT);
    }
    putchar('\n');
}

/* The conversation: each message under its role, the calls an assistant
 * message made and the result a tool message carries. */
static void show_messages(json_t *conversation)
{
    json_t *calls = json_object_get(conversation, "tool_calls");
    size_t k, j;
    json_t *m, *id;
    json_array_foreach(json_object_get(conversation, "messages"), k, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        printf("\n[");
        put_vis(role ? role : "?", VIS_LINE);
        printf("]\n");
        if (content && content[0]) {
            put_vis(content, VIS_TEXT);
            putchar('\n');
        }
        json_array_foreach(json_object_get(m, "tool_calls"), j, id)
        {
            json_t *call = call_by_id(calls, json_string_value(id));
            if (call)
                put_call(call, 0);
        }
        json_t *result = call_by_id(calls, json_string_value(json_object_get(m, "tool_call_id")));
        if (result)
            put_call(result, 1);
    }
}

typedef struct family family;
static void show_family(const family *f);

static void show_text(const ac_store_session_info *info, json_t *session, const family *fam)
{
    char c[32], u[32];
    ac_cli_fmt_time(info->created_ms, c, sizeof c);
    ac_cli_fmt_time(info->updated_ms, u, sizeof u);
    fputs("session  ", stdout);
    put_vis(info->id, VIS_LINE);
    printf("\nstatus   %s (%s)\nspec     %.16s\ncreated  %s\nupdated  %s\n"
           "events   %llu (snapshot at %llu)\n",
           info->status, info->at_rest ? "at rest" : "stopped mid-turn: agentc resume",
           info->spec_hash, c, u, (unsigned long long)info->events,
           (unsigned long long)info->snapshot_seq);
    const json_t *cost = json_object_get(json_object_get(session, "usage"), "cost_usd");
    if (json_is_number(cost)) /* its agent prices its model */
        printf("cost     $%.6f\n", json_number_value(cost));
    if (info->holder[0]) {
        fputs("in use   by ", stdout);
        put_vis(info->holder, VIS_LINE);
        putchar('\n');
    }
    const char *kit;
    json_t *kv;
    json_object_foreach(json_object_get(session, "toolkits"), kit, kv)
    { /* toolkit states and contexts (docs/toolkits.md), ASCII JSON */
        size_t f = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII;
        char *states = json_dumps(json_object_get(kv, "states"), f);
        char *cx = json_dumps(json_object_get(kv, "context"), f);
        fputs("toolkit  ", stdout);
        put_vis(kit, VIS_LINE);
        printf(": states %s, context %s\n", states ? states : "[]", cx ? cx : "{}");
        free(states);
        free(cx);
    }
    show_family(fam);
    show_messages(json_object_get(session, "conversation"));
}

/* An engine to rebuild the session id on: of --spec's tables, else of its stored agent (the
 * built-in spec when it has none). Freed with inspected_free. */
typedef struct inspected {
    record_engine re;
    ac_fsm_tables *tables;
    ac_engine *e;
} inspected;

static ac_engine *inspect_session(ac_store *st, const char *id, const char *spec, inspected *in)
{
    memset(in, 0, sizeof *in);
    ac_error err;
    char *rec = spec ? NULL : ac_store_agent(st, id, 0, &err);
    char why[600] = "";
    if (rec && ac_cli_record_engine_offline(rec, &in->re, why, sizeof why) < 0) {
        fprintf(stderr, "agentc: its stored agent cannot be rebuilt (%s): the built-in spec\n",
                why);
        ac_cli_record_engine_free(&in->re);
    }
    free(rec);
    in->e = in->re.e ? in->re.e : inspect_engine(spec, &in->tables);
    return in->e;
}

static void inspected_free(inspected *in)
{
    if (!in->re.e)
        ac_engine_free(in->e);
    ac_cli_record_engine_free(&in->re);
    ac_spec_tables_free(in->tables);
}

/* The session's JSON form, rebuilt on inspect_session's engine. NULL with err filled ("" when
 * said already). */
static char *session_json(ac_store *st, const char *id, const char *spec, ac_error *err)
{
    inspected in;
    ac_engine *e = inspect_session(st, id, spec, &in);
    char *sj = e ? ac_store_session_json(st, e, id, err) : NULL;
    if (!e)
        err->text[0] = 0;
    inspected_free(&in);
    return sj;
}

/* The sub-agent calls of a session's journal (docs/composition.md): its parent call (spawn's
 * "parent") and its children, one per agent.started, with agent.done's outcome. */
struct family {
    json_t *parent;   /* {"session", "call", "path"} or NULL */
    json_t *children; /* [{"session", "agent", "call", "outcome"?}] */
};

static int family_event(void *ud, const ac_store_event *ev)
{
    family *f = ud;
    int started = !strcmp(ev->ev, AC_AGENT_STARTED), done = !strcmp(ev->ev, AC_AGENT_DONE);
    if (strcmp(ev->ev, "spawn") && !started && !done)
        return 0;
    json_t *d = ev->data ? json_loads(ev->data, 0, NULL) : NULL;
    const char *sid = json_string_value(json_object_get(d, "session"));
    if (!strcmp(ev->ev, "spawn") && json_is_object(json_object_get(d, "parent")))
        f->parent = json_incref(json_object_get(d, "parent"));
    if (started && sid)
        json_array_append_new(f->children, json_pack("{s:s, s:O, s:O}", "session", sid, "agent",
                                                     json_object_get(d, "agent"), "call",
                                                     json_object_get(d, "call")));
    size_t i;
    json_t *c;
    json_array_foreach(f->children, i, c)
    {
        if (done && sid && !strcmp(sid, json_string_value(json_object_get(c, "session"))))
            json_object_set(c, "outcome", json_object_get(d, "outcome"));
    }
    json_decref(d);
    return 0;
}

static void show_family(const family *f)
{
    if (f->parent) {
        fputs("parent   ", stdout);
        put_vis(json_string_value(json_object_get(f->parent, "session")), VIS_LINE);
        fputs(" (call ", stdout);
        put_vis(json_string_value(json_object_get(f->parent, "call")), VIS_LINE);
        fputs(", agent ", stdout);
        put_vis(json_string_value(json_object_get(f->parent, "path")), VIS_LINE);
        puts(")");
    }
    size_t i;
    json_t *c;
    json_array_foreach(f->children, i, c)
    {
        const char *o = json_string_value(json_object_get(c, "outcome"));
        fputs("child    ", stdout);
        put_vis(json_string_value(json_object_get(c, "session")), VIS_LINE);
        fputs(" (agent ", stdout);
        put_vis(json_string_value(json_object_get(c, "agent")), VIS_LINE);
        fputs(", call ", stdout);
        put_vis(json_string_value(json_object_get(c, "call")), VIS_LINE);
        printf("): %s\n",
               o ? o : "no agent.done recorded (running, or stopped with its parent's turn)");
    }
}

static int show(ac_store *st, const char *id, int json, const char *spec)
{
    ac_store_session_info info;
    ac_error err;
    if (ac_store_info(st, id, &info, &err) != AC_OK) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return err.code == AC_STORE_ENOENT ? 1 : AC_EXIT_CONFIG;
    }
    char *sj = session_json(st, id, spec, &err);
    if (!sj) {
        if (err.text[0])
            fprintf(stderr, "agentc: %s\n", err.text);
        return AC_EXIT_CONFIG;
    }
    json_t *session = json_loads(sj, 0, NULL);
    free(sj);
    family f = {NULL, json_array()};
    ac_store_events(st, id, 0, family_event, &f, &err);
    if (json) {
        json_t *o = info_json(&info);
        json_object_set_new(o, "session", session);
        json_object_set(o, "parent", f.parent ? f.parent : json_null());
        json_object_set(o, "children", f.children);
        print_json(o);
        json_decref(o);
    } else {
        show_text(&info, session, &f);
        json_decref(session);
    }
    json_decref(f.parent);
    json_decref(f.children);
    return 0;
}

/* Ends a stored session: its spec's `close` (a spec without one: `cancel`), journaled by
 * the store as any event. A session that had ended is left as it is, and said so. */
static int close_session(ac_store *st, const char *id, const char *spec)
{
    inspected in;
    ac_engine *e = inspect_session(st, id, spec, &in);
    ac_error err;
    ac_session *s =
        e ? ac_store_session(st, e, id, AC_STORE_MUST_EXIST | AC_STORE_NO_RESUME, &err) : NULL;
    int rc = 0;
    if (e && !s) {
        fprintf(stderr, "agentc: %s\n", err.text);
        rc = err.code == AC_STORE_ENOENT || err.code == AC_STORE_EBUSY ? 1 : AC_EXIT_CONFIG;
    } else if (!e) {
        rc = AC_EXIT_CONFIG;
    } else if (ac_session_ended(s)) {
        char text[600];
        ac_session_ended_text(s, NULL, text, sizeof text);
        fprintf(stderr, "agentc: %s\n", text);
    } else {
        int prc = ac_session_post(s, "close", NULL, 0);
        if (prc == AC_EUNKNOWN_EVENT) /* a spec older than `close` */
            prc = ac_session_cancel(s);
        if (!ac_session_ended(s)) {
            fprintf(stderr, "agentc: session %s was not closed: %s\n", id, ac_strerror(prc));
            rc = 1;
        } else {
            printf("session %s closed\n", id);
        }
    }
    ac_session_free(s); /* its store commits what it wrote */
    inspected_free(&in);
    return rc;
}

/* Writes the journal exported to path to stdout (visibly on a terminal). */
static int copy_out(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "agentc: cannot read '%s': %s\n", path, strerror(errno));
        return AC_EXIT_CONFIG;
    }
    char buf[16384];
    size_t n;
    int tty = isatty(1);
    vis_carry cy = {{0}, 0};
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (tty)
            ac_cli_vis_write(stdout, buf, n, VIS_ANSWER, &cy, 0);
        else
            fwrite(buf, 1, n, stdout);
    }
    if (tty)
        ac_cli_vis_write(stdout, "", 0, VIS_ANSWER, &cy, 1);
    fclose(f);
    return 0;
}

/* A new private folder for the journal on its way: in $TMPDIR for stdout,
 * else beside FILE (so it is renamed over FILE). 0, or -1 after saying why. */
static int export_tmpdir(const char *out, int to_stdout, char *dir, size_t cap)
{
    const char *tdir = getenv("TMPDIR"), *slash = to_stdout ? NULL : strrchr(out, '/');
    if (to_stdout)
        snprintf(dir, cap, "%s/agentc-export-XXXXXX", tdir && tdir[0] ? tdir : "/tmp");
    else
        snprintf(dir, cap, "%.*s/.agentc-export-XXXXXX", slash ? (int)(slash - out) : 1,
                 slash ? out : ".");
    if (mkdtemp(dir))
        return 0;
    fprintf(stderr, "agentc: cannot make a folder %s: %s\n", dir, strerror(errno));
    return -1;
}

/* export ID [-o FILE] [--force]: the journal to stdout (no -o, or -o -) or
 * to FILE; an existing FILE is replaced only with --force, and then at once
 * (written beside it, renamed over it). */
static int export_cmd(ac_store *st, const char *id, const char *out, int force)
{
    int to_stdout = !out || !strcmp(out, "-");
    struct stat sb;
    if (!to_stdout && !force && lstat(out, &sb) == 0) {
        fprintf(stderr, "agentc: '%s' exists: --force replaces it\n", out);
        return 1;
    }
    char dir[4096] = "", tmp[4200];
    if ((to_stdout || force) && export_tmpdir(out, to_stdout, dir, sizeof dir))
        return AC_EXIT_CONFIG;
    ac_error err;
    snprintf(tmp, sizeof tmp, "%s/journal.jsonl", dir);
    const char *path = to_stdout || force ? tmp : out;
    int rc = 0;
    if (ac_store_export(st, id, path, &err) != AC_OK) {
        fprintf(stderr, "agentc: %s\n", err.text);
        rc = err.code == AC_STORE_ENOENT ? 1 : AC_EXIT_CONFIG;
    } else if (to_stdout) {
        rc = copy_out(tmp);
    } else if (force && rename(tmp, out) != 0) {
        fprintf(stderr, "agentc: cannot replace '%s': %s\n", out, strerror(errno));
        rc = AC_EXIT_CONFIG;
    }
    if (to_stdout || force) {
        unlink(tmp);
        rmdir(dir);
    }
    if (!rc && !to_stdout)
        fprintf(stderr, "wrote %s\n", out);
    return rc;
}

/* The options of `agentc sessions`, and the commands each belongs to. */
typedef struct sess_args {
    const char *cmd, *id, *db, *out, *spec, *older_than, *at, *as;
    const char *status[16];
    size_t n_status;
    int json, dry_run, force;
} sess_args;

static const struct sess_opt {
    const char *name, *cmds; /* cmds: the commands taking it, "" for all */
    int value;
} sess_opts[] = {
    {"--db", "", 1},          {"--json", "list show", 0}, {"--spec", "show close", 1},
    {"-o", "export", 1},      {"--force", "export", 0},   {"--older-than", "prune", 1},
    {"--status", "prune", 1}, {"--dry-run", "prune", 0},  {"--at", "fork", 1},
    {"--as", "fork", 1},
};

/* Sets the option o (its value v) in a; 0, or an exit status after saying why. */
static int sess_set(sess_args *a, const struct sess_opt *o, const char *v)
{
    const char *n = o->name;
    if (!strcmp(n, "--status")) {
        if (a->n_status == sizeof a->status / sizeof a->status[0]) {
            fprintf(stderr, "agentc sessions: too many --status\n");
            return AC_EXIT_USAGE;
        }
        a->status[a->n_status++] = v;
        return 0;
    }
    const char **slots[] = {&a->db, &a->spec, &a->out, &a->older_than, &a->at, &a->as};
    const char *const slot_names[] = {"--db", "--spec", "-o", "--older-than", "--at", "--as"};
    int *flags[] = {&a->json, &a->force, &a->dry_run};
    const char *const flag_names[] = {"--json", "--force", "--dry-run"};
    for (size_t k = 0; k < 6; k++)
        if (!strcmp(n, slot_names[k]))
            *slots[k] = v;
    for (size_t k = 0; k < 3; k++)
        if (!strcmp(n, flag_names[k]))
            *flags[k] = 1;
    return 0;
}

/* True when the word w is in the space-separated list. */
static int in_list(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(list, w); p; p = strstr(p + 1, w))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}

/* The arguments; 0, -1 after --help, or an exit status after saying why. */
static int sess_parse(int argc, char **argv, sess_args *a, const struct sess_opt **given, int *ng)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        const struct sess_opt *o = NULL;
        if (!strcmp(w, "--help") || !strcmp(w, "-h")) {
            usage(stdout);
            return -1;
        }
        for (size_t k = 0; k < sizeof sess_opts / sizeof sess_opts[0]; k++)
            if (!strcmp(w, sess_opts[k].name))
                o = &sess_opts[k];
        if (o && o->value && i + 1 >= argc) {
            fprintf(stderr, "agentc: %s needs a value\n", w);
            return AC_EXIT_USAGE;
        }
        if (o && *ng == 64) {
            fprintf(stderr, "agentc sessions: too many options\n");
            return AC_EXIT_USAGE;
        }
        if (o) {
            given[(*ng)++] = o;
            int rc = sess_set(a, o, o->value ? argv[++i] : NULL);
            if (rc)
                return rc;
        } else if (w[0] == '-' && w[1]) {
            fprintf(stderr, "agentc: unknown option '%s' (see agentc sessions --help)\n", w);
            return AC_EXIT_USAGE;
        } else if (!a->cmd || !a->id) {
            *(!a->cmd ? &a->cmd : &a->id) = w;
        } else {
            fprintf(stderr, "agentc sessions: one ID only\n");
            return AC_EXIT_USAGE;
        }
    }
    return 0;
}

/* The command is known, has an ID when it needs one, and every option given
 * is one of its own. 0, or an exit status after saying why. */
static int sess_check(const sess_args *a, const struct sess_opt **given, int ng)
{
    static const char *const cmds[] = {"list", "show", "close", "rm", "prune", "export", "fork"};
    int known = 0, needs_id = a->cmd && strcmp(a->cmd, "list") && strcmp(a->cmd, "prune");
    for (size_t k = 0; a->cmd && k < sizeof cmds / sizeof cmds[0]; k++)
        known |= !strcmp(a->cmd, cmds[k]);
    if (!known || (needs_id && !a->id) || (!needs_id && a->id)) {
        usage(stderr);
        return AC_EXIT_USAGE;
    }
    for (int k = 0; k < ng; k++)
        if (given[k]->cmds[0] && !in_list(given[k]->cmds, a->cmd)) {
            fprintf(stderr,
                    "agentc sessions: %s is not an option of %s (see agentc sessions --help)\n",
                    given[k]->name, a->cmd);
            return AC_EXIT_USAGE;
        }
    if (!strcmp(a->cmd, "prune") && !a->older_than) {
        fprintf(stderr, "agentc sessions prune: --older-than DURATION is needed (30m, 12h, 7d)\n");
        return AC_EXIT_USAGE;
    }
    return 0;
}

int ac_cli_sessions(int argc, char **argv)
{
    sess_args a;
    const struct sess_opt *given[64];
    int ng = 0;
    int rc = sess_parse(argc, argv, &a, given, &ng);
    if (!rc)
        rc = sess_check(&a, given, ng);
    long long older_ms = 0;
    if (!rc && !strcmp(a.cmd, "prune"))
        rc = ac_cli_prune_args(a.older_than, a.status, a.n_status, &older_ms);
    if (rc)
        return rc < 0 ? 0 : rc;
    ac_error err;
    ac_store *st;
    char path[4096];
    /* what only reads opens it read-only: a store of another user's, or in a read-only
     * directory, can be listed, shown and exported */
    int reads = !strcmp(a.cmd, "list") || !strcmp(a.cmd, "show") || !strcmp(a.cmd, "export");
    if ((rc = ac_cli_store_open_existing(a.db, reads, &st, path, sizeof path)))
        return rc;
    if (!st) { /* no store: nothing stored */
        int reads_all = !strcmp(a.cmd, "list") || !strcmp(a.cmd, "prune");
        fprintf(stderr, "%s%s: no store at %s\n",
                reads_all ? "" : "agentc: ", reads_all ? "no sessions stored" : a.id, path);
        return reads_all ? 0 : 1;
    }
    if (!strcmp(a.cmd, "list")) {
        rc = list(st, a.json);
    } else if (!strcmp(a.cmd, "show")) {
        rc = show(st, a.id, a.json, a.spec);
    } else if (!strcmp(a.cmd, "close")) {
        rc = close_session(st, a.id, a.spec);
    } else if (!strcmp(a.cmd, "fork")) {
        rc = ac_cli_sessions_fork(st, a.id, a.at, a.as);
    } else if (!strcmp(a.cmd, "prune")) {
        rc = ac_cli_sessions_prune(st, older_ms, a.status, a.n_status, a.dry_run);
    } else if (!strcmp(a.cmd, "rm")) {
        if (ac_store_rm(st, a.id, &err) != AC_OK) {
            fprintf(stderr, "agentc: %s\n", err.text);
            rc = err.code == AC_STORE_ENOENT || err.code == AC_STORE_EBUSY ? 1 : AC_EXIT_CONFIG;
        }
    } else {
        rc = export_cmd(st, a.id, a.out, a.force);
    }
    ac_store_close(st);
    return rc;
}
