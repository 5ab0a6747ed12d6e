/*
 * run_agent.c - the agent of a stored session on `agentc run --session` and
 * `agentc resume` (run_agent.h). The store keeps the agent record each session
 * runs with; a run builds its engine from that record, with what this command
 * line gives laid over it. When the two differ, or a tool file the record
 * names has changed, the change is recorded in the session's journal
 * (agent.changed) at rest, by the session opened on its stored agent's
 * engine, before the next turn runs on the new one: the turns before are never
 * judged again under the new agent (store.h: ac_store_agent).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "run_agent.h"

void ac_cli_run_agent_free(run_agent *ra)
{
    ac_cli_agent_hold_free(&ra->hold);
    free(ra->stored_rec);
    free(ra->rec);
    json_decref(ra->what);
    memset(ra, 0, sizeof *ra);
}

/* The stored tool files read again where they still are (a file that changed is used from
 * this turn on; one gone or moved keeps its recorded text). */
static void tools_from_files(ac_cli_engine_opts *o, const ac_cli_engine_opts *given)
{
    if (given->n_tools)
        return; /* given on this command line: read from its files already */
    for (size_t i = 0; i < o->n_tools; i++)
        if (o->tool_texts[i] && access(o->tools[i], R_OK) == 0)
            o->tool_texts[i] = NULL;
}

/* The stored record read into ra->stored, and ra->eff laid over it. 0, or -1 with err. */
static int from_record(run_agent *ra, const ac_cli_engine_opts *given, char *err, size_t cap)
{
    if (ac_cli_agent_opts(ra->stored_rec, NULL, &ra->hold, &ra->stored, err, cap) < 0)
        return -1;
    ra->eff = ra->stored;
    if (ra->at_rest) /* mid-turn the turn is finished under its own agent */
        tools_from_files(&ra->eff, given);
    ac_cli_engine_opts_overlay(&ra->eff, given);
    return 0;
}

/* "a, b, c" of the keys that changed. */
static void what_text(const json_t *what, char *buf, size_t cap)
{
    size_t k, at = 0;
    json_t *v;
    buf[0] = 0;
    json_array_foreach(what, k, v)
    {
        int n = snprintf(buf + at, cap - at, "%s%s", k ? ", " : "", json_string_value(v));
        if (n < 0 || (size_t)n >= cap - at)
            break;
        at += (size_t)n;
    }
}

static int run_agent_fill(ac_store *st, const char *id, const ac_cli_engine_opts *given,
                          int overlay, const char *name, const char *cmd, run_agent *ra)
{
    memset(ra, 0, sizeof *ra);
    ra->name = name;
    ra->eff = *given;
    ra->at_rest = 1;
    char err[600] = "";
    ac_error e = {0};
    ac_store_session_info info;
    if (id && ac_store_info(st, id, &info, &e) == AC_OK) {
        ra->exists = 1;
        ra->at_rest = info.at_rest;
        ra->stored_rec = ac_store_agent(st, id, 0, &e);
        if (!ra->stored_rec && e.code != AC_OK) {
            fprintf(stderr, "%s: %s\n", cmd, e.text);
            return AC_EXIT_CONFIG;
        }
    } else if (id && e.code != AC_STORE_ENOENT) {
        fprintf(stderr, "%s: %s\n", cmd, e.text);
        return AC_EXIT_CONFIG;
    }
    if (ra->stored_rec && overlay && from_record(ra, given, err, sizeof err) < 0) {
        fprintf(stderr, "%s: session %s: its stored agent cannot be used: %s\n", cmd, id, err);
        return AC_EXIT_CONFIG;
    }
    if (!ra->stored_rec) /* its record is made once its engine is built: ac_cli_run_agent_record */
        return 0;
    int rc = ac_cli_run_agent_record(ra, cmd);
    if (rc)
        return rc;
    ra->what = ac_cli_agent_diff(ra->stored_rec, ra->rec);
    if (json_array_size(ra->what) && !ra->at_rest && overlay) {
        char keys[400];
        what_text(ra->what, keys, sizeof keys);
        fprintf(stderr,
                "%s: session %s stopped mid-turn; the options given change its agent (%s), which "
                "happens only between turns: `agentc resume %s` with no options finishes that "
                "turn under its own agent first\n",
                cmd, id, keys, id);
        return AC_EXIT_CONFIG;
    }
    return 0;
}

int ac_cli_run_agent(ac_store *st, const char *id, const ac_cli_engine_opts *given, int overlay,
                     const char *cmd, run_agent *ra)
{
    return run_agent_fill(st, id, given, overlay, NULL, cmd, ra);
}

int ac_cli_run_agent_named(ac_store *st, const char *id, const ac_cli_engine_opts *given,
                           const char *name, const char *cmd, run_agent *ra)
{
    return run_agent_fill(st, id, given, 1, name, cmd, ra);
}

int ac_cli_run_agent_record(run_agent *ra, const char *cmd)
{
    char err[600] = "";
    const char *name = ra->name ? ra->name : ra->hold.name;
    if (!ra->rec && !(ra->rec = ac_cli_agent_record(&ra->eff, name, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return AC_EXIT_CONFIG;
    }
    return 0;
}

/* The session on an engine of its stored agent, the change recorded: tried first on an
 * engine of the new agent (`to`), nothing recorded when the session cannot go on there. 0, or
 * an exit status after printing why. */
static int record_change(ac_store *st, const char *id, ac_engine *e, ac_engine *to, run_agent *ra,
                         const char *cmd)
{
    ac_error err = {0};
    ac_session *s = ac_store_session(st, e, id, AC_STORE_MUST_EXIST | AC_STORE_NO_RESUME, &err);
    if (!s) {
        fprintf(stderr, "%s: %s\n", cmd, err.text);
        return err.code == AC_STORE_EBUSY ? AC_EXIT_FAILED : AC_EXIT_CONFIG;
    }
    char *what = json_dumps(ra->what, JSON_COMPACT);
    int rc = ac_session_change_agent_on(s, "option", what, ra->rec, to, &err);
    free(what);
    ac_session_free(s); /* commits the record and its snapshot */
    char keys[400];
    what_text(ra->what, keys, sizeof keys);
    if (rc == AC_ESPEC) {
        snprintf(ra->refused, sizeof ra->refused,
                 "session %s cannot change its agent (%s): it cannot go on under the new spec: "
                 "%s; nothing was recorded, the session keeps its agent",
                 id, keys, err.text);
        fprintf(stderr, "%s: %s\n", cmd, ra->refused);
        return AC_EXIT_CONFIG;
    }
    if (rc != AC_OK) {
        fprintf(stderr, "%s: session %s: cannot record its agent change: %s\n", cmd, id,
                ac_strerror(rc));
        return AC_EXIT_FAILED;
    }
    fprintf(stderr, "%s: session %s: the agent changes from this turn on (%s)\n", cmd, id, keys);
    return 0;
}

int ac_cli_run_agent_change(ac_store *st, const char *id, ac_loop *loop, run_agent *ra,
                            const char *cmd)
{
    if (!ra->stored_rec || !json_array_size(ra->what) || !ra->at_rest)
        return 0;
    record_engine re, to;
    memset(&to, 0, sizeof to);
    char why[600] = "";
    int rc = ac_cli_record_engine(ra->stored_rec, loop, NULL, cmd, &re);
    if (!rc && ac_cli_record_engine_replay(ra->rec, NULL, &to, why, sizeof why) < 0) {
        fprintf(stderr, "%s: session %s: the new agent cannot be used: %s\n", cmd, id, why);
        rc = AC_EXIT_CONFIG;
    } else if (!rc) {
        rc = record_change(st, id, re.e, to.e, ra, cmd);
    }
    ac_cli_record_engine_free(&to);
    ac_cli_record_engine_free(&re);
    return rc;
}

int ac_cli_record_engine(const char *record, ac_loop *loop, const ac_output *out, const char *cmd,
                         record_engine *re)
{
    memset(re, 0, sizeof *re);
    char err[600] = "";
    if (ac_cli_agent_opts(record, NULL, &re->hold, &re->opts, err, sizeof err) < 0) {
        fprintf(stderr, "%s: the stored agent cannot be used: %s\n", cmd, err);
        return AC_EXIT_CONFIG;
    }
    int rc = ac_cli_engine_resolve(&re->opts, cmd, &re->base);
    ac_error e = {0};
    return rc ? rc : ac_cli_engine_build(&re->base, loop, out, cmd, &re->e, &e);
}

int ac_cli_record_engine_offline(const char *record, record_engine *re, char *err, size_t errcap)
{
    return ac_cli_record_engine_replay(record, NULL, re, err, errcap);
}

int ac_cli_record_engine_replay(const char *record, const ac_output *out, record_engine *re,
                                char *err, size_t errcap)
{
    memset(re, 0, sizeof *re);
    ac_error e = {0};
    if (ac_cli_agent_opts(record, NULL, &re->hold, &re->opts, err, errcap) < 0)
        return -1;
    if (re->opts.spec_text &&
        !(re->tables = ac_cli_tables_from_spec_text(re->opts.spec, re->opts.spec_text))) {
        snprintf(err, errcap, "its spec does not load");
        return -1;
    }
    if (!(re->e = ac_cli_engine_offline_agent(re->tables, &re->opts, out, &e)))
        snprintf(err, errcap, "%s", e.text);
    return re->e ? 0 : -1;
}

void ac_cli_record_engine_free(record_engine *re)
{
    ac_engine_free(re->e);
    ac_spec_tables_free(re->tables);
    ac_cli_engine_base_free(&re->base);
    ac_cli_agent_hold_free(&re->hold);
    memset(re, 0, sizeof *re);
}
