/*
 * sessions.c - agentc sessions list|show|close|rm|export: the sessions of a store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "agentc/store.h"
#include "cli.h"
#include "engine_opts.h"
#include "run_agent.h"
#include "spec.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: agentc sessions COMMAND [--db PATH]\n\n"
            "  list [--json]            the stored sessions, most recent first\n"
            "  show ID [--json] [--spec FILE]\n"
            "                           one session: where it stands and its conversation\n"
            "  close ID [--spec FILE]   end a session (the spec's close event, journaled):\n"
            "                           what is sent to it later is refused, saying so\n"
            "  rm ID                    remove a session and all that is stored for it\n"
            "  export ID [-o FILE]      write its journal (default ID.jsonl; agentc replay\n"
            "                           reads it)\n"
            "  fork ID --at TURN [--as NEW]\n"
            "                           a new session (its id printed) of ID's journal up to\n"
            "                           the end of its turn TURN, with its agent as it was\n"
            "                           then; nothing runs again, the two go on apart\n\n"
            "The store: --db PATH, else $AGENTC_DB, else $XDG_STATE_HOME/agentc/sessions.db\n"
            "(~/.local/state/agentc/sessions.db).\n"
            "exit status: 0 done, 1 no such session or it is in use, 2 bad usage, 3 the store\n"
            "cannot be opened\n");
}

static void fmt_time(int64_t ms, char *buf, size_t cap)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (!ms || !gmtime_r(&secs, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, cap, "-");
}

static json_t *info_json(const ac_store_session_info *i)
{
    char c[32], u[32];
    fmt_time(i->created_ms, c, sizeof c);
    fmt_time(i->updated_ms, u, sizeof u);
    return json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:I, s:I, s:s, s:s}", "id", i->id, "status",
                     i->status, "at_rest", i->at_rest, "spec_hash", i->spec_hash, "created", c,
                     "updated", u, "events", (json_int_t)i->events, "snapshot",
                     (json_int_t)i->snapshot_seq, "holder", i->holder, "title", i->title);
}

typedef struct list_ctx {
    int json, n;
} list_ctx;

static int list_one(void *ud, const ac_store_session_info *i)
{
    list_ctx *c = ud;
    c->n++;
    if (c->json) {
        json_t *o = info_json(i);
        char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(o);
        return 0;
    }
    char u[32];
    fmt_time(i->updated_ms, u, sizeof u);
    printf("%-28s %-9s %-7s %6llu  %s  %s%s\n", i->id, i->status, i->at_rest ? "rest" : "mid-turn",
           (unsigned long long)i->events, u, i->title, i->holder[0] ? "  [in use]" : "");
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
    if (json) {
        json_t *o = info_json(&info);
        json_object_set_new(o, "session", session);
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("%s\n", s ? s : "null");
        free(s);
        json_decref(o);
        return 0;
    }
    char c[32], u[32];
    fmt_time(info.created_ms, c, sizeof c);
    fmt_time(info.updated_ms, u, sizeof u);
    printf("session  %s\nstatus   %s (%s)\nspec     %.16s\ncreated  %s\nupdated  %s\n"
           "events   %llu (snapshot at %llu)\n",
           info.id, info.status, info.at_rest ? "at rest" : "stopped mid-turn: agentc resume",
           info.spec_hash, c, u, (unsigned long long)info.events,
           (unsigned long long)info.snapshot_seq);
    if (info.holder[0])
        printf("in use   by %s\n", info.holder);
    const char *kit;
    json_t *kv;
    json_object_foreach(json_object_get(session, "toolkits"), kit, kv)
    { /* toolkit states and contexts (docs/toolkits.md) */
        char *states = json_dumps(json_object_get(kv, "states"), JSON_COMPACT);
        char *cx = json_dumps(json_object_get(kv, "context"), JSON_COMPACT | JSON_PRESERVE_ORDER);
        printf("toolkit  %s: states %s, context %s\n", kit, states ? states : "[]", cx ? cx : "{}");
        free(states);
        free(cx);
    }
    json_t *msgs = json_object_get(json_object_get(session, "conversation"), "messages");
    size_t k;
    json_t *m;
    json_array_foreach(msgs, k, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        printf("\n[%s]\n%s\n", role ? role : "?", content ? content : "");
    }
    json_decref(session);
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

int ac_cli_sessions(int argc, char **argv)
{
    const char *cmd = NULL, *id = NULL, *db = NULL, *out = NULL, *spec = NULL, *at = NULL,
               *as = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--db") || !strcmp(a, "-o") || !strcmp(a, "--spec") ||
                   !strcmp(a, "--at") || !strcmp(a, "--as")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agentc: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            *(!strcmp(a, "--db")     ? &db
              : !strcmp(a, "-o")     ? &out
              : !strcmp(a, "--spec") ? &spec
              : !strcmp(a, "--at")   ? &at
                                     : &as) = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc: unknown option '%s' (see agentc sessions --help)\n", a);
            return AC_EXIT_USAGE;
        } else if (!cmd) {
            cmd = a;
        } else if (!id) {
            id = a;
        } else {
            fprintf(stderr, "agentc sessions: one ID only\n");
            return AC_EXIT_USAGE;
        }
    }
    int needs_id = cmd && strcmp(cmd, "list") != 0;
    if (!cmd ||
        (strcmp(cmd, "list") && strcmp(cmd, "show") && strcmp(cmd, "rm") && strcmp(cmd, "export") &&
         strcmp(cmd, "fork") && strcmp(cmd, "close")) ||
        (needs_id && !id) || (!needs_id && id)) {
        usage(stderr);
        return AC_EXIT_USAGE;
    }
    ac_error err;
    ac_store *st = ac_store_open(db, NULL, &err);
    if (!st) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return AC_EXIT_CONFIG;
    }
    int rc = 0;
    if (!strcmp(cmd, "list")) {
        list_ctx c = {json, 0};
        if (ac_store_list(st, list_one, &c, &err) != AC_OK) {
            fprintf(stderr, "agentc: %s\n", err.text);
            rc = AC_EXIT_CONFIG;
        } else if (!c.n && !json) {
            fprintf(stderr, "no sessions stored\n");
        }
    } else if (!strcmp(cmd, "show")) {
        rc = show(st, id, json, spec);
    } else if (!strcmp(cmd, "fork")) {
        rc = ac_cli_sessions_fork(st, id, at, as);
    } else if (!strcmp(cmd, "close")) {
        rc = close_session(st, id, spec);
    } else if (!strcmp(cmd, "rm")) {
        if (ac_store_rm(st, id, &err) != AC_OK) {
            fprintf(stderr, "agentc: %s\n", err.text);
            rc = err.code == AC_STORE_ENOENT || err.code == AC_STORE_EBUSY ? 1 : AC_EXIT_CONFIG;
        }
    } else {
        char path[4096];
        if (!out && strchr(id, '/')) {
            fprintf(stderr, "agentc: the id has a '/': name the file with -o FILE\n");
            ac_store_close(st);
            return AC_EXIT_USAGE;
        }
        if (!out)
            snprintf(path, sizeof path, "%s.jsonl", id);
        if (ac_store_export(st, id, out ? out : path, &err) != AC_OK) {
            fprintf(stderr, "agentc: %s\n", err.text);
            rc = err.code == AC_STORE_ENOENT ? 1 : AC_EXIT_CONFIG;
        } else {
            fprintf(stderr, "wrote %s\n", out ? out : path);
        }
    }
    ac_store_close(st);
    return rc;
}
