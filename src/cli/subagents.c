/*
 * subagents.c - the command line's opener of sub-agents: see subagents.h.
 *
 * An entry of a tool file's "agents" is the agent format (agent.c) plus the keys of
 * composition. Its agent is the calling session's agent with what the entry gives laid over
 * it (ac_cli_engine_opts_overlay); an entry that gives nothing but its name and the keys of
 * composition, when an agents file has that name, is that agent. Each (calling engine, entry)
 * gets one engine, built once by ac_cli_engine_build and kept until the command ends.
 */
#include "subagents.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct built {
    struct built *next;
    const ac_engine *parent; /* the engine whose sessions call it */
    char *key;               /* the entry and its directory */
    ac_cli_engine_opts opts; /* the agent: the caller's with the entry's laid over it */
    ac_cli_agent_hold hold;
    ac_cli_engine_base base;
    char *rec; /* its record form: what the child's spawn records */
    ac_engine *e;
} built;

struct ac_cli_subagents {
    ac_subagent_opener opener;
    const ac_cli_engine_opts *top;
    ac_loop *loop;
    const ac_output *out;
    ac_store *st;
    const ac_cli_agents *agents;
    built *list;
};

static void set_err(ac_error *err, int code, const char *text)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    snprintf(err->text, sizeof err->text, "%s", text);
}

static const char *const composition_keys[] = {"description", "input_schema", "max_depth",
                                               "handoff"};

char *ac_cli_subagents_entry_agent(const ac_cli_agents *agents, const char *entry, const char *dir,
                                   const char **base_dir)
{
    json_t *a = json_loads(entry, 0, NULL);
    for (size_t i = 0; a && i < sizeof composition_keys / sizeof *composition_keys; i++)
        json_object_del(a, composition_keys[i]);
    const char *name = json_string_value(json_object_get(a, "name"));
    const char *named =
        agents && json_object_size(a) == 1 && name ? ac_cli_agents_find(agents, name) : NULL;
    *base_dir = named ? ac_cli_agents_dir(agents) : dir;
    char *text = named ? strdup(named) : a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return text;
}

static void built_free(built *b)
{
    ac_engine_free(b->e);
    ac_cli_engine_base_free(&b->base);
    ac_cli_agent_hold_free(&b->hold);
    free(b->rec);
    free(b->key);
    free(b);
}

/* The options of the agent whose engine is e: one this opener built, else the command's. */
static const ac_cli_engine_opts *opts_of(const ac_cli_subagents *sa, const ac_engine *e)
{
    for (const built *b = sa->list; b; b = b->next)
        if (b->e == e)
            return &b->opts;
    return sa->top;
}

/* The engine of entry for sessions of parent: built now (0), or -1 with err. */
static int build(ac_cli_subagents *sa, built *b, const char *entry, const char *dir, ac_error *err)
{
    const char *base_dir;
    char *agent = ac_cli_subagents_entry_agent(sa->agents, entry, dir, &base_dir);
    ac_cli_engine_opts given;
    char why[512] = "out of memory";
    int rc = agent ? ac_cli_agent_opts(agent, base_dir, &b->hold, &given, why, sizeof why) : -1;
    free(agent);
    if (rc < 0) {
        set_err(err, AC_ECONFIG, why);
        return -1;
    }
    b->opts = *opts_of(sa, b->parent);
    ac_cli_engine_opts_overlay(&b->opts, &given);
    if (ac_cli_engine_resolve(&b->opts, "agentc: sub-agent", &b->base)) {
        set_err(err, AC_ECONFIG, "its agent cannot be built (said above)");
        return -1;
    }
    b->base.cfg.subagents = &sa->opener;
    b->base.cfg.agent_name = b->hold.name;
    if (ac_cli_engine_build(&b->base, sa->loop, sa->out, NULL, &b->e, err))
        return -1;
    if (!(b->rec = ac_cli_agent_record(&b->opts, b->hold.name, why, sizeof why))) {
        set_err(err, AC_EIO, why);
        return -1;
    }
    return 0;
}

static built *engine_for(ac_cli_subagents *sa, const ac_engine *parent, const char *entry,
                         const char *dir, ac_error *err)
{
    size_t n = strlen(entry) + strlen(dir) + 2;
    char *key = malloc(n);
    if (key)
        snprintf(key, n, "%s\n%s", dir, entry);
    for (built *b = sa->list; key && b; b = b->next)
        if (b->parent == parent && !strcmp(b->key, key)) {
            free(key);
            return b;
        }
    built *b = key ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        free(key);
        set_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    b->parent = parent;
    b->key = key;
    if (build(sa, b, entry, dir, err) < 0) {
        built_free(b);
        return NULL;
    }
    b->next = sa->list;
    sa->list = b;
    return b;
}

static ac_session *open_child(void *ud, ac_session *parent, const char *entry, const char *dir,
                              const char *id, const ac_session_options *opts, ac_error *err)
{
    ac_cli_subagents *sa = ud;
    built *b = engine_for(sa, ac_session_engine(parent), entry, dir, err);
    if (!b)
        return NULL;
    ac_session_options o = *opts;
    o.agent = b->rec;
    return sa->st ? ac_store_session_opts(sa->st, b->e, id, 0, &o, err)
                  : ac_session_new_opts(b->e, id, &o, err);
}

/* What changed from the session's agent to rec, as JSON text (malloc'd). */
static char *what_changed(const ac_session *s, const char *rec)
{
    const char *old = ac_session_agent(s);
    json_t *w = old ? ac_cli_agent_diff(old, rec) : json_pack("[s]", "agent");
    char *text = w ? json_dumps(w, JSON_COMPACT) : NULL;
    json_decref(w);
    return text;
}

int ac_cli_subagents_handoff(ac_cli_subagents *sa, ac_session **sp, ac_error *err)
{
    ac_session *s = *sp;
    const char *dir, *entry = ac_session_handoff(s, &dir);
    if (!entry)
        return 0;
    if (!sa->st) {
        set_err(err, AC_ECONFIG,
                "a handoff moves a stored session to another agent: this one is not stored "
                "(run it with a store: --session ID, without --no-store)");
        return -1;
    }
    built *b = engine_for(sa, ac_session_engine(s), entry, dir, err);
    if (!b)
        return -1;
    char *what = what_changed(s, b->rec), *id = strdup(ac_session_id(s));
    int rc =
        what && id ? ac_session_change_agent_on(s, "handoff", what, b->rec, b->e, err) : AC_ENOMEM;
    free(what);
    if (rc != AC_OK) {
        if (rc == AC_ENOMEM)
            set_err(err, AC_ENOMEM, "out of memory");
        free(id);
        return -1;
    }
    ac_session_free(s); /* opened again on the new agent's engine, from the change's snapshot */
    *sp = ac_store_session_opts(sa->st, b->e, id, AC_STORE_MUST_EXIST, NULL, err);
    free(id);
    if (!*sp)
        return -1;
    if (ac_session_post(*sp, "resume", NULL, 0) < 0) {
        set_err(err, AC_ESPEC, "the session cannot resume under the new agent");
        return -1;
    }
    return 1;
}

ac_cli_subagents *ac_cli_subagents_new(const ac_cli_engine_opts *top, ac_loop *loop,
                                       const ac_output *out, ac_store *st,
                                       const ac_cli_agents *agents)
{
    ac_cli_subagents *sa = calloc(1, sizeof *sa);
    if (!sa)
        return NULL;
    sa->opener.ud = sa;
    sa->opener.open = open_child;
    sa->opener.handoffs = st != NULL; /* a session is moved by reopening it from the store */
    sa->top = top;
    sa->loop = loop;
    sa->out = out;
    sa->st = st;
    sa->agents = agents;
    return sa;
}

const ac_subagent_opener *ac_cli_subagents_opener(ac_cli_subagents *sa)
{
    return sa ? &sa->opener : NULL;
}

void ac_cli_subagents_free(ac_cli_subagents *sa)
{
    if (!sa)
        return;
    /* the deeper levels' engines first: an engine is built before the engines it calls */
    while (sa->list) {
        built *b = sa->list;
        sa->list = b->next;
        built_free(b);
    }
    free(sa);
}
