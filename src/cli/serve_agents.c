/*
 * serve_agents.c - the agents `agentc serve` hosts (docs/agents.md): the command line's
 * agent and those of --agents FILE, given to the server as ac_srv_agents. Each engine is
 * made from an agent's record by the command line's one builder (engine_opts.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run_agent.h"
#include "serve_agents.h"
#include "subagents.h"

/* A session's overrides come from HTTP clients: they may not name the server's files. */
static int names_files(const ac_cli_engine_opts *g, char *err, size_t errcap)
{
    const char *what = g->spec && !g->spec_text                     ? "spec"
                       : g->script                                  ? "script"
                       : g->system                                  ? "system (@FILE)"
                       : g->output_schema && !g->output_schema_text ? "output_schema (a path)"
                                                                    : NULL;
    for (size_t i = 0; !what && i < g->n_tools; i++)
        if (g->tool_texts[i] || strncmp(g->tools[i], "builtin:", 8))
            what = "tools (other than builtin: names)";
    if (what)
        snprintf(err, errcap,
                 "a session's overrides may not name the server's files: %s (an output schema "
                 "is given inline, tools as builtin: names)",
                 what);
    return what != NULL;
}

/* The agent called name into o (hold: what o points to and the agent's overridable). */
static int agent_opts(serve_agents *sa, const char *name, ac_cli_agent_hold *hold,
                      ac_cli_engine_opts *o, ac_error *err)
{
    memset(hold, 0, sizeof *hold);
    if (sa->cli && !strcmp(name, sa->cli_name)) {
        *o = *sa->cli;
        o->req.stop = o->n_stop ? o->stop : NULL;
        hold->name = sa->cli_name;
        hold->overridable = sa->cli_overridable;
        return 0;
    }
    const char *json = sa->file ? ac_cli_agents_find(sa->file, name) : NULL;
    if (!json) {
        err->code = AC_ENOENT;
        if (sa->file)
            ac_cli_agents_unknown(sa->file, name, err->text, sizeof err->text);
        else
            snprintf(err->text, sizeof err->text, "unknown agent '%s' (the agent is: %s)", name,
                     sa->cli_name);
        return -1;
    }
    err->code = AC_ECONFIG;
    return ac_cli_agent_opts(json, ac_cli_agents_dir(sa->file), hold, o, err->text,
                             sizeof err->text);
}

/* The record of the agent called name with overrides laid over it (from a client: checked
 * against the agent's overridable and for the server's files). */
static char *make_record(serve_agents *sa, const char *name, const char *overrides, int from_client,
                         ac_error *err)
{
    ac_cli_agent_hold hold, gh;
    ac_cli_engine_opts o, given;
    if (!name)
        name = sa->default_name;
    if (agent_opts(sa, name, &hold, &o, err) < 0)
        return NULL;
    char *rec = NULL;
    memset(&gh, 0, sizeof gh);
    err->code = AC_EINVAL;
    if (!overrides ||
        (ac_cli_agent_opts(overrides, NULL, &gh, &given, err->text, sizeof err->text) == 0 &&
         (!from_client ||
          (!names_files(&given, err->text, sizeof err->text) &&
           ac_cli_agent_check_overrides(&hold, &given, err->text, sizeof err->text) == 0)))) {
        if (overrides)
            ac_cli_engine_opts_overlay(&o, &given);
        err->code = AC_ECONFIG;
        rec = ac_cli_agent_record(&o, name, err->text, sizeof err->text);
    }
    ac_cli_agent_hold_free(&gh);
    if (hold.doc)
        ac_cli_agent_hold_free(&hold);
    return rec;
}

static char *agent_record(void *ud, const char *name, const char *overrides, ac_error *err)
{
    return make_record(ud, name, overrides, 1, err);
}

/* The server's agent for a stored record: the agent of its name, with the record's values
 * of the keys that agent lets a session override (a session keeps what it chose); a record
 * naming no agent of the server is kept as it is. */
static char *current_record(serve_agents *sa, const char *stored, ac_error *err)
{
    json_t *r = stored ? json_loads(stored, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(r, "name"));
    int known = !name || (sa->cli && !strcmp(name, sa->cli_name)) ||
                (sa->file && ac_cli_agents_find(sa->file, name));
    if (!known) {
        json_decref(r);
        return strdup(stored);
    }
    int cli = sa->cli && name && !strcmp(name, sa->cli_name);
    json_t *agent = !cli && name ? json_loads(ac_cli_agents_find(sa->file, name), 0, NULL) : NULL;
    const json_t *over = cli ? sa->cli_overridable : json_object_get(agent, "overridable");
    json_t *kept = json_object();
    size_t i;
    json_t *k;
    json_array_foreach(over, i, k) if (json_object_get(r, json_string_value(k)))
        json_object_set(kept, json_string_value(k), json_object_get(r, json_string_value(k)));
    char *text = json_object_size(kept) ? json_dumps(kept, JSON_COMPACT) : NULL;
    char *rec = make_record(sa, name, text, 0, err);
    free(text);
    json_decref(kept);
    json_decref(agent);
    json_decref(r);
    return rec;
}

/* A stored session's agent brought to the server's before it loads (server.h: load). */
static char *agent_load(void *ud, ac_store *st, const char *id, ac_loop *loop, ac_error *err)
{
    run_agent ra;
    memset(&ra, 0, sizeof ra);
    ac_store_session_info info;
    if (ac_store_info(st, id, &info, err) != AC_OK)
        return NULL;
    ra.exists = 1;
    ra.at_rest = info.at_rest;
    memset(err, 0, sizeof *err);
    ra.stored_rec = ac_store_agent(st, id, 0, err);
    if (!ra.stored_rec && err->code != AC_OK)
        return NULL;
    if (ra.stored_rec && !ra.at_rest) /* its turn is finished under its own agent */
        return ra.stored_rec;
    char *rec = current_record(ud, ra.stored_rec, err);
    int rc = 0;
    if (rec && ra.stored_rec) {
        ra.rec = rec;
        ra.what = ac_cli_agent_diff(ra.stored_rec, rec);
        rc = ac_cli_run_agent_change(st, id, loop, &ra, "agentc serve");
        ra.rec = NULL; /* rec is the caller's */
    }
    char refused[sizeof ra.refused];
    snprintf(refused, sizeof refused, "%s", ra.refused);
    ac_cli_run_agent_free(&ra);
    if (rc) {
        free(rec);
        err->code = AC_ECONFIG;
        snprintf(err->text, sizeof err->text, "%s",
                 refused[0] ? refused
                            : "its stored agent cannot be brought to the server's (the server's "
                              "log says why)");
        return NULL;
    }
    return rec;
}

/* An engine and what it points to. */
typedef struct built {
    ac_cli_agent_hold hold;
    ac_cli_engine_opts o;
    ac_cli_engine_base base;
} built;

static void release(void *ud, ac_engine *e, void *hold)
{
    (void)ud;
    built *b = hold;
    ac_engine_free(e);
    ac_cli_engine_base_free(&b->base);
    ac_cli_agent_hold_free(&b->hold);
    free(b);
}

static ac_engine *build(void *ud, const char *record, ac_loop *loop, const ac_output *out,
                        const ac_subagent_opener *subagents, void **hold, ac_error *err)
{
    serve_agents *sa = ud;
    built *b = calloc(1, sizeof *b);
    ac_engine *e = NULL;
    err->code = AC_ENOMEM;
    snprintf(err->text, sizeof err->text, "out of memory");
    if (!b)
        return NULL;
    err->code = AC_ECONFIG;
    if (ac_cli_agent_opts(record, NULL, &b->hold, &b->o, err->text, sizeof err->text) == 0) {
        b->o.script_delay_ms = sa->script_delay_ms;
        if (sa->cli)
            ac_cli_engine_opts_secrets_from(&b->o, sa->cli);
        if (ac_cli_engine_resolve(&b->o, "agentc serve", &b->base) == 0) {
            b->base.cfg.subagents = subagents;
            ac_cli_engine_build(&b->base, loop, out, NULL, &e, err);
        } else
            snprintf(err->text, sizeof err->text,
                     "its configuration does not resolve (the "
                     "server's log says why)");
    }
    if (!e) {
        release(ud, NULL, b);
        return NULL;
    }
    *hold = b;
    return e;
}

/* An engine with no loop of a record (server.h: replay). */
static ac_engine *replay(void *ud, const char *record, const ac_output *out, void **hold,
                         ac_error *err)
{
    (void)ud;
    record_engine *re = calloc(1, sizeof *re);
    err->code = AC_ECONFIG;
    if (re && ac_cli_record_engine_replay(record, out, re, err->text, sizeof err->text) == 0) {
        *hold = re;
        return re->e;
    }
    if (re)
        ac_cli_record_engine_free(re);
    free(re);
    return NULL;
}

static void replay_release(void *ud, ac_engine *e, void *hold)
{
    (void)ud, (void)e; /* e is hold's */
    ac_cli_record_engine_free(hold);
    free(hold);
}

/* A tool file's agent entry called by a session of the agent caller (server.h: entry): the
 * entry's agent (subagents.c's reading, the agents of --agents by name) over the caller's. */
static char *entry_record(void *ud, const char *caller, const char *entry, const char *dir,
                          char **what, ac_error *err)
{
    serve_agents *sa = ud;
    const char *base_dir;
    char *agent = ac_cli_subagents_entry_agent(sa->file, entry, dir, &base_dir);
    ac_cli_agent_hold ch, gh;
    ac_cli_engine_opts o, given;
    memset(&ch, 0, sizeof ch);
    memset(&gh, 0, sizeof gh);
    char *rec = NULL;
    err->code = AC_ECONFIG;
    snprintf(err->text, sizeof err->text, "out of memory");
    if (agent && ac_cli_agent_opts(caller, NULL, &ch, &o, err->text, sizeof err->text) == 0 &&
        ac_cli_agent_opts(agent, base_dir, &gh, &given, err->text, sizeof err->text) == 0) {
        ac_cli_engine_opts_overlay(&o, &given);
        rec = ac_cli_agent_record(&o, gh.name, err->text, sizeof err->text);
    }
    if (rec && what) {
        json_t *w = ac_cli_agent_diff(caller, rec);
        *what = w ? json_dumps(w, JSON_COMPACT) : NULL;
        json_decref(w);
    }
    free(agent);
    ac_cli_agent_hold_free(&gh);
    ac_cli_agent_hold_free(&ch);
    return rec;
}

/* The command line's agent as GET /v1/agents lists it: its record with the spec and tool
 * files named by path (their texts left out). */
static json_t *cli_listed(serve_agents *sa)
{
    char err[512];
    char *rec = ac_cli_agent_record(sa->cli, sa->cli_name, err, sizeof err);
    json_t *r = rec ? json_loads(rec, 0, NULL) : NULL;
    free(rec);
    if (!r)
        return json_pack("{s:s}", "name", sa->cli_name);
    json_t *spec = json_object_get(r, "spec");
    if (spec)
        json_object_set(r, "spec", json_object_get(spec, "path"));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(r, "tools"), i, t) if (json_is_object(t))
        json_array_set(json_object_get(r, "tools"), i, json_object_get(t, "path"));
    json_object_set(r, "overridable", sa->cli_overridable);
    return r;
}

static char *list(void *ud)
{
    serve_agents *sa = ud;
    json_t *arr = json_array();
    if (sa->cli)
        json_array_append_new(arr, cli_listed(sa));
    for (size_t i = 0; i < ac_cli_agents_count(sa->file); i++)
        json_array_append(arr, (json_t *)ac_cli_agents_get(sa->file, i));
    char *s = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return s;
}

/* --overridable KEY,KEY...: the command line's agent's "overridable". 0, or -1 (said). */
static int parse_overridable(serve_agents *sa, const char *list)
{
    sa->cli_overridable = json_array();
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ","), k = 0;
        while (ac_cli_agent_keys[k] &&
               (strlen(ac_cli_agent_keys[k]) != n || strncmp(ac_cli_agent_keys[k], p, n)))
            k++;
        if (!ac_cli_agent_keys[k] || !strcmp(ac_cli_agent_keys[k], "name") ||
            !strcmp(ac_cli_agent_keys[k], "overridable")) {
            fprintf(stderr,
                    "agentc serve: --overridable: '%.*s' is not a key a session may override "
                    "(spec, provider, script, base_url, api_key_env, model, system, tools, "
                    "params, request, output_schema, headers)\n",
                    (int)n, p);
            return -1;
        }
        json_array_append_new(sa->cli_overridable, json_string(ac_cli_agent_keys[k]));
        p += n + (p[n] == ',');
    }
    return 0;
}

int ac_cli_serve_agents_init(serve_agents *sa, ac_srv_agents *out, const char *overridable)
{
    if (parse_overridable(sa, overridable) < 0)
        return AC_EXIT_USAGE;
    if (sa->cli && sa->file && ac_cli_agents_find(sa->file, sa->cli_name)) {
        fprintf(stderr,
                "agentc serve: the command line's agent is called '%s', as one of --agents; "
                "name it with --agent-name\n",
                sa->cli_name);
        return AC_EXIT_USAGE;
    }
    sa->default_name = sa->cli ? sa->cli_name : ac_cli_agents_name(sa->file, 0);
    memset(out, 0, sizeof *out);
    out->ud = sa;
    out->list = list;
    out->record = agent_record;
    out->build = build;
    out->release = release;
    out->load = agent_load;
    out->replay = replay;
    out->replay_release = replay_release;
    out->entry = entry_record;
    return 0;
}

void ac_cli_serve_agents_free(serve_agents *sa)
{
    ac_cli_agents_free(sa->file);
    json_decref(sa->cli_overridable);
    memset(sa, 0, sizeof *sa);
}
