/* obs_engine.c - what an engine keeps for its sessions' traces (obs.h): the tracer, the agent
 * name, the provider, the model and the request settings, copied from its config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs/obs.h"
#include "session/session_int.h"

typedef struct obs_engine {
    ac_obs_engine pub;
    char agent[128];
    char *model;
    ac_request_settings request;
    char **stop; /* the request's stop sequences, copied (NULL-terminated) */
} obs_engine;

/* A copy of a NULL-terminated array of strings (NULL: none or out of memory). */
static char **strings_copy(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **c = n ? calloc(n + 1, sizeof *c) : NULL;
    for (size_t i = 0; c && i < n; i++)
        if (!(c[i] = strdup(v[i]))) {
            while (i)
                free(c[--i]);
            free(c);
            return NULL;
        }
    return c;
}

/* The spec file's base name without its extension; "agent" for the built-in spec. */
static void agent_of(const ac_fsm_tables *t, const char *given, char *out, size_t cap)
{
    if (given && *given) {
        snprintf(out, cap, "%s", given);
        return;
    }
    const char *p = t->spec_path ? t->spec_path : "agent";
    const char *slash = strrchr(p, '/');
    p = slash ? slash + 1 : p;
    const char *dot = strchr(p, '.');
    snprintf(out, cap, "%.*s", (int)(dot && dot > p ? (size_t)(dot - p) : strlen(p)), p);
}

int ac_obs_engine_setup(ac_engine *e, const ac_engine_config *cfg)
{
    if ((!cfg->tracer && !cfg->metrics) || !e->loop)
        return 0;
    obs_engine *oe = calloc(1, sizeof *oe);
    if (!oe || !(oe->model = strdup(cfg->model ? cfg->model : ""))) {
        free(oe);
        return -1;
    }
    static const char *const providers[] = {"openai", "anthropic", "script"};
    agent_of(e->t, cfg->agent_name, oe->agent, sizeof oe->agent);
    if (cfg->request) {
        oe->request = *cfg->request;
        oe->stop = strings_copy(cfg->request->stop); /* borrowed strings are copied or dropped */
        oe->request.stop = (const char *const *)oe->stop;
        oe->request.tool_choice = oe->request.reasoning_effort = oe->request.request_json = NULL;
    }
    oe->pub.tracer = cfg->tracer;
    oe->pub.metrics = cfg->metrics;
    oe->pub.price = e->price;
    oe->pub.rows = calloc(e->t->n_transitions ? e->t->n_transitions : 1, sizeof *oe->pub.rows);
    oe->pub.t = e->t;
    oe->pub.agent = oe->agent;
    oe->pub.provider = cfg->provider >= 0 && cfg->provider <= 2 ? providers[cfg->provider] : "";
    oe->pub.model = oe->model;
    oe->pub.request = &oe->request;
    oe->pub.max_tokens = e->p_max_tokens ? e->p_max_tokens->ival : 0;
    e->obs = &oe->pub;
    return 0;
}

void ac_obs_engine_free(ac_engine *e)
{
    obs_engine *oe = (obs_engine *)e->obs;
    if (!oe)
        return;
    free(oe->pub.rows); /* their texts are the tracer's */
    for (size_t i = 0; oe->stop && oe->stop[i]; i++)
        free(oe->stop[i]);
    free(oe->stop);
    free(oe->model);
    free(oe);
    e->obs = NULL;
}
