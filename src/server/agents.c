/*
 * agents.c - the agents of `agentc serve` (docs/agents.md): one engine per distinct agent
 * record, built on the server's loop by its caller's builder (ac_srv_agents) and shared by
 * the sessions running that agent; GET /v1/agents, GET /v1/models, and which agent a
 * request names.
 *
 * Every agent of the server is built when it starts (a bad one stops it there); a session
 * that overrides some of its agent's keys gets the engine of the resulting record, built the
 * first time and kept while sessions run on it. An engine no session uses any more is freed
 * by a timer, never at once: a session freed in a callback finishes freeing after it (the
 * loop's deferred tasks), still on its engine; and until the timer fires, a session asking
 * for the same record takes it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server_int.h"

/* Engines a server keeps for overridden agents, beyond its own agents. */
#define SRV_MAX_EXTRA_ENGINES 32

struct srv_engine {
    srv_engine *next;
    char *record; /* what it was built from: the cache's key */
    char *name;   /* the agent's name */
    ac_engine *engine;
    void *hold;
    size_t refs;
    int pinned; /* one of the server's agents: kept until it stops */
};

static void fill(ac_error *err, int code, const char *text)
{
    err->code = code;
    snprintf(err->text, sizeof err->text, "%s", text);
}

static void engine_free(srv *sv, srv_engine *e)
{
    if (e->engine)
        sv->cfg->agents->release(sv->cfg->agents->ud, e->engine, e->hold);
    free(e->record);
    free(e->name);
    free(e);
}

/* The engine of record, found or built (a reference taken). */
static srv_engine *engine_of(srv *sv, const char *name, char *record, ac_error *err)
{
    size_t extra = 0;
    for (srv_engine *e = sv->engines; e; e = e->next) {
        if (!strcmp(e->record, record)) {
            free(record);
            e->refs++;
            return e;
        }
        extra += !e->pinned && e->refs; /* unused ones are about to go */
    }
    if (extra >= SRV_MAX_EXTRA_ENGINES) {
        free(record);
        fill(err, AC_EBUSY,
             "too many distinct agents in use (overrides make each its own); "
             "end sessions that use others first");
        return NULL;
    }
    srv_engine *e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(name))) {
        free(e);
        free(record);
        fill(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    e->record = record;
    const ac_srv_agents *a = sv->cfg->agents;
    if (!(e->engine = a->build(a->ud, record, sv->loop, &sv->out, &sv->opener, &e->hold, err))) {
        engine_free(sv, e);
        return NULL;
    }
    e->refs = 1;
    e->next = sv->engines;
    sv->engines = e;
    return e;
}

srv_engine *srv_agent_engine(srv *sv, const char *name, const char *overrides, ac_error *err)
{
    const ac_srv_agents *a = sv->cfg->agents;
    char *record = a->record(a->ud, name, overrides, err);
    if (!record)
        return NULL;
    json_t *r = json_loads(record, 0, NULL);
    const char *nm = json_string_value(json_object_get(r, "name"));
    srv_engine *e = engine_of(sv, nm ? nm : (name ? name : "default"), record, err);
    json_decref(r);
    return e;
}

srv_engine *srv_agent_of_stored(srv *sv, const char *stored_id, ac_error *err)
{
    const ac_srv_agents *a = sv->cfg->agents;
    char *record = a->load(a->ud, sv->store, stored_id, sv->loop, err);
    if (!record)
        return NULL;
    json_t *r = json_loads(record, 0, NULL);
    const char *nm = json_string_value(json_object_get(r, "name"));
    srv_engine *e = engine_of(sv, nm ? nm : "default", record, err);
    json_decref(r);
    return e;
}

srv_engine *srv_agent_of_entry(srv *sv, const srv_engine *caller, const char *entry,
                               const char *dir, char **what, ac_error *err)
{
    const ac_srv_agents *a = sv->cfg->agents;
    if (!a->entry) {
        fill(err, AC_ECONFIG, "this server does not read agent entries");
        return NULL;
    }
    char *record = a->entry(a->ud, caller->record, entry, dir, what, err);
    if (!record)
        return NULL;
    json_t *r = json_loads(record, 0, NULL);
    const char *nm = json_string_value(json_object_get(r, "name"));
    srv_engine *e = engine_of(sv, nm ? nm : "default", record, err);
    json_decref(r);
    return e;
}

void srv_engine_hold(srv_engine *e)
{
    if (e)
        e->refs++;
}

/* Frees the engines no session uses (a timer: no session of theirs is being freed now). */
static void reap(void *ud)
{
    srv *sv = ud;
    sv->reap_timer = 0;
    for (srv_engine **pp = &sv->engines; *pp;) {
        srv_engine *e = *pp;
        if (e->refs || e->pinned) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        engine_free(sv, e);
    }
}

void srv_engine_release(srv *sv, srv_engine *e)
{
    if (!e || --e->refs || e->pinned || sv->reap_timer)
        return;
    sv->reap_timer = ac_loop_timer(sv->loop, 0, reap, sv); /* 0: kept until the server stops */
}

ac_engine *srv_engine_get(const srv_engine *e)
{
    return e->engine;
}

const char *srv_engine_name(const srv_engine *e)
{
    return e->name;
}

const char *srv_engine_record(const srv_engine *e)
{
    return e->record;
}

int srv_agents_start(srv *sv)
{
    const ac_srv_agents *a = sv->cfg->agents;
    char *list = a->list(a->ud);
    sv->agents = list ? json_loads(list, 0, NULL) : NULL;
    free(list);
    if (!json_array_size(sv->agents)) {
        fprintf(stderr, "agentc serve: no agent to serve\n");
        return 3;
    }
    size_t i;
    json_t *ag;
    json_array_foreach(sv->agents, i, ag)
    {
        ac_error err = {0};
        const char *name = json_string_value(json_object_get(ag, "name"));
        srv_engine *e = srv_agent_engine(sv, name, NULL, &err);
        if (!e) {
            fprintf(stderr, "agentc serve: agent '%s': %s\n", name ? name : "?", err.text);
            return 3;
        }
        e->pinned = 1;
        if (i == 0) {
            sv->default_engine = e;
            sv->engine = e->engine;
        }
    }
    return 0;
}

void srv_agents_stop(srv *sv)
{
    if (sv->reap_timer)
        ac_loop_cancel_timer(sv->loop, sv->reap_timer);
    sv->reap_timer = 0;
    while (sv->engines) {
        srv_engine *e = sv->engines;
        sv->engines = e->next;
        engine_free(sv, e);
    }
    sv->engine = NULL;
    sv->default_engine = NULL;
    json_decref(sv->agents);
    sv->agents = NULL;
}

const char *srv_agent_named(srv *sv, const char *model)
{
    size_t i;
    json_t *ag;
    json_array_foreach(sv->agents, i, ag)
    {
        const char *name = json_string_value(json_object_get(ag, "name"));
        if (model && name && !strcmp(model, name))
            return name;
    }
    if (!model || (sv->cfg->model_name && !strcmp(model, sv->cfg->model_name)))
        return srv_engine_name(sv->default_engine); /* the command line's --model name */
    return NULL;
}

enum MHD_Result srv_agents_list(srv *sv, struct MHD_Connection *c)
{
    return srv_reply_json(c, 200,
                          json_pack("{s:s, s:O, s:s}", "object", "list", "data", sv->agents,
                                    "default", srv_engine_name(sv->default_engine)));
}

enum MHD_Result srv_models(srv *sv, struct MHD_Connection *c)
{
    json_t *data = json_array();
    size_t i;
    json_t *ag;
    json_array_foreach(sv->agents, i, ag) json_array_append_new(
        data, json_pack("{s:O, s:s, s:i, s:s}", "id", json_object_get(ag, "name"), "object",
                        "model", "created", 0, "owned_by", "agentc"));
    return srv_reply_json(c, 200, json_pack("{s:s, s:o}", "object", "list", "data", data));
}
