/*
 * engine_opts.c - the engine options of the command line and the one builder
 * of an engine from them (engine_opts.h), shared by run, batch, resume, demo
 * and serve.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine_opts.h"
#include "io/file.h"
#include "session/contracts.h" /* reading a system prompt or a schema whole, with a cap */

/* Parses and checks a spec's source, printing its diagnostics. */
static ac_spec *spec_from_text(const char *path, const char *text)
{
    ac_spec *spec = ac_spec_parse(path, text, strlen(text));
    if (!spec) {
        fprintf(stderr, "agentc: out of memory\n");
        return NULL;
    }
    spec->contracts = ac_builtin_contracts; /* what the built-in effects post */
    spec->n_contracts = ac_n_builtin_contracts;
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors) {
        ac_spec_print_diags(spec, stderr);
        fprintf(stderr, "%s: %zu error%s\n", path, spec->n_errors, spec->n_errors == 1 ? "" : "s");
        ac_spec_free(spec);
        return NULL;
    }
    return spec;
}

ac_fsm_tables *ac_cli_tables_from_spec_text(const char *path, const char *text)
{
    int rc;
    if (!path)
        path = "<spec>";
    ac_spec *spec = text ? spec_from_text(path, text)
                         : ac_cli_load_spec(path, &rc, 1, &ac_builtin_cli_handlers);
    if (!spec)
        return NULL;
    char rel[4096];
    ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    ac_spec_free(spec);
    if (!t)
        fprintf(stderr, "agentc: out of memory\n");
    return t;
}

ac_fsm_tables *ac_cli_tables_from_spec(const char *path)
{
    return ac_cli_tables_from_spec_text(path, NULL);
}

/* Adds v to a NULL-terminated list of at most max entries. */
static int add_to_list(const char **list, size_t *n, size_t max, const char *flag, const char *v,
                       const char *cmd)
{
    if (*n >= max) {
        fprintf(stderr, "%s: too many %s options (at most %zu)\n", cmd, flag, max);
        return -AC_EXIT_USAGE;
    }
    list[(*n)++] = v;
    list[*n] = NULL;
    return 1;
}

int ac_cli_engine_flag(int argc, char **argv, int *i, ac_cli_engine_opts *o, const char *cmd)
{
    const char *a = argv[*i];
    const char *const names[] = {"--provider", "--base-url", "--model", "--api-key-env",
                                 "--script",   "--system",   "--spec",  "--prices"};
    const char **slots[] = {&o->provider, &o->base_url, &o->model, &o->api_key_env,
                            &o->script,   &o->system,   &o->spec,  &o->prices};
    size_t k = 0, n = sizeof names / sizeof names[0];
    while (k < n && strcmp(a, names[k]))
        k++;
    int list = !strcmp(a, "--tools") || !strcmp(a, "--param") || !strcmp(a, "--header");
    if (k == n && !list)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", cmd, a);
        return -AC_EXIT_USAGE;
    }
    const char *v = argv[++*i];
    if (k < n) {
        *slots[k] = v;
        return 1;
    }
    if (!strcmp(a, "--tools"))
        return add_to_list(o->tools, &o->n_tools, AC_CLI_MAX_TOOLS, a, v, cmd);
    if (!strcmp(a, "--param"))
        return add_to_list(o->params, &o->n_params, AC_CLI_MAX_PARAMS, a, v, cmd);
    return add_to_list(o->headers, &o->n_headers, AC_CLI_MAX_HEADERS, a, v, cmd);
}

/* --temperature and --top-p: a number. */
static int parse_double(const char *flag, const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    *out = strtod(v, &end);
    if (!*v || *end || errno) {
        fprintf(stderr, "agentc: %s takes a number, not '%s'\n", flag, v);
        return -AC_EXIT_USAGE;
    }
    return 1;
}

static int set_request(ac_cli_engine_opts *o, size_t k, const char *a, const char *v)
{
    ac_request_settings *r = &o->req;
    char *end = NULL;
    switch (k) {
    case 0:
        r->has_temperature = true;
        return parse_double(a, v, &r->temperature);
    case 1:
        r->has_top_p = true;
        return parse_double(a, v, &r->top_p);
    case 2:
        if (o->n_stop >= AC_CLI_MAX_STOP) {
            fprintf(stderr, "agentc: at most %d --stop sequences\n", AC_CLI_MAX_STOP);
            return -AC_EXIT_USAGE;
        }
        o->stop[o->n_stop++] = v;
        r->stop = o->stop;
        return 1;
    case 3:
        errno = 0;
        r->seed = strtoll(v, &end, 10);
        if (!*v || *end || errno) {
            fprintf(stderr, "agentc: --seed takes an integer, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        r->has_seed = true;
        return 1;
    case 4:
        r->tool_choice = v;
        return 1;
    case 5:
        if (strcmp(v, "true") && strcmp(v, "false")) {
            fprintf(stderr, "agentc: --parallel-tool-calls takes true or false, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        r->parallel_tool_calls = !strcmp(v, "true") ? 1 : -1;
        return 1;
    case 6:
        r->reasoning_effort = v;
        return 1;
    case 7:
        r->request_json = v;
        return 1;
    default:
        o->output_schema = v;
        return 1;
    }
}

int ac_cli_request_flag(int argc, char **argv, int *i, ac_cli_engine_opts *o)
{
    const char *a = argv[*i];
    const char *const names[] = {"--temperature",
                                 "--top-p",
                                 "--stop",
                                 "--seed",
                                 "--tool-choice",
                                 "--parallel-tool-calls",
                                 "--reasoning-effort",
                                 "--request-json",
                                 "--output-schema"};
    size_t k = 0;
    while (k < sizeof names / sizeof names[0] && strcmp(a, names[k]))
        k++;
    if (k == sizeof names / sizeof names[0])
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "agentc: %s needs a value\n", a);
        return -AC_EXIT_USAGE;
    }
    return set_request(o, k, a, argv[++*i]);
}

/* The provider's key and model from the options and the environment. */
static int resolve_provider(const ac_cli_engine_opts *o, const char *cmd, ac_engine_config *cfg)
{
    const char *prov = o->provider ? o->provider : (o->script_text ? "script" : "openai");
    if (strcmp(prov, "openai") && strcmp(prov, "anthropic") && strcmp(prov, "script")) {
        fprintf(stderr, "%s: unknown provider '%s' (openai, anthropic, script)\n", cmd, prov);
        return AC_EXIT_USAGE;
    }
    cfg->provider = !strcmp(prov, "anthropic") ? AC_PROVIDER_ANTHROPIC
                    : !strcmp(prov, "script")  ? AC_PROVIDER_SCRIPT
                                               : AC_PROVIDER_OPENAI;
    cfg->model = o->model ? o->model : getenv("AGENTC_MODEL");
    if (cfg->provider == AC_PROVIDER_SCRIPT) {
        if (o->script || o->script_text)
            return 0;
        fprintf(stderr, "%s: --provider script needs --script FILE\n", cmd);
        return AC_EXIT_USAGE;
    }
    int anthropic = cfg->provider == AC_PROVIDER_ANTHROPIC;
    const char *env = o->api_key_env ? o->api_key_env
                      : anthropic    ? "ANTHROPIC_API_KEY"
                                     : "OPENAI_API_KEY";
    cfg->api_key = getenv(env);
    cfg->api_key_env = env; /* kept from tool processes */
    const char *base_env = anthropic ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
    if ((!cfg->api_key || !*cfg->api_key) && !o->base_url && !getenv(base_env)) {
        fprintf(stderr,
                "%s: no API key: set %s (or name another variable with --api-key-env),\n"
                "  or point --base-url at a local OpenAI-compatible server (llama.cpp, vLLM,\n"
                "  Ollama: --base-url http://127.0.0.1:11434/v1), or try the offline\n"
                "  demo: agentc demo\n",
                cmd, env);
        return AC_EXIT_CONFIG;
    }
    if (!cfg->model) {
        fprintf(stderr, "%s: no model: pass --model NAME or set AGENTC_MODEL\n", cmd);
        return AC_EXIT_CONFIG;
    }
    return 0;
}

/* A whole file (a system prompt, a schema) into *out. 0, or an exit status. */
static int read_whole(const char *path, const char *what, const char *cmd, char **out)
{
    FILE *f = fopen(path, "r");
    if (!f || !(*out = ac_read_stream(f, (size_t)16 << 20, NULL))) {
        fprintf(stderr, "%s: cannot read %s '%s': %s\n", cmd, what, path, strerror(errno));
        if (f)
            fclose(f);
        return AC_EXIT_CONFIG;
    }
    fclose(f);
    return 0;
}

/* The headers that have a value; a name alone (a stored agent's) is told of. */
static const char *const *resolve_headers(const ac_cli_engine_opts *o, const char *cmd,
                                          ac_cli_engine_base *b)
{
    size_t n = 0;
    for (size_t i = 0; i < o->n_headers; i++)
        if (strchr(o->headers[i], ':'))
            b->headers[n++] = o->headers[i];
        else
            fprintf(stderr,
                    "%s: header %s is not sent: its value is not stored; give it again with "
                    "--header '%s: VALUE'\n",
                    cmd, o->headers[i], o->headers[i]);
    b->headers[n] = NULL;
    return n ? b->headers : NULL;
}

int ac_cli_engine_resolve(const ac_cli_engine_opts *o, const char *cmd, ac_cli_engine_base *b)
{
    memset(b, 0, sizeof *b);
    ac_engine_config *cfg = &b->cfg;
    int rc = resolve_provider(o, cmd, cfg);
    if (rc)
        return rc;
    if ((o->spec || o->spec_text) &&
        !(b->tables = ac_cli_tables_from_spec_text(o->spec, o->spec_text)))
        return AC_EXIT_CONFIG;
    cfg->tables = b->tables;
    cfg->script_path = o->script;
    cfg->script_text = o->script_text;
    cfg->script_delay_ms = o->script_delay_ms;
    cfg->base_url = o->base_url;
    cfg->headers = resolve_headers(o, cmd, b);
    cfg->params = o->n_params ? o->params : NULL;
    cfg->request = &o->req;
    cfg->system_prompt = o->system_text ? o->system_text : o->system;
    if (!o->system_text && o->system && o->system[0] == '@') {
        if ((rc = read_whole(o->system + 1, "system prompt", cmd, &b->system)))
            return rc;
        cfg->system_prompt = b->system;
    }
    if (o->output_schema_text) {
        cfg->output_schema = o->output_schema_text;
    } else if (o->output_schema) {
        if ((rc = read_whole(o->output_schema, "output schema", cmd, &b->output_schema)))
            return rc;
        cfg->output_schema = b->output_schema;
    }
    if (o->prices_text) {
        cfg->prices = o->prices_text;
    } else if (o->prices) { /* --prices FILE */
        if ((rc = read_whole(o->prices, "prices", cmd, &b->prices)))
            return rc;
        cfg->prices = b->prices;
    }
    b->tools = o->tools;
    b->tool_texts = o->tool_texts;
    b->n_tools = o->n_tools;
    return 0;
}

int ac_cli_engine_build(const ac_cli_engine_base *b, ac_loop *loop, const ac_output *out,
                        const char *cmd, ac_engine **e, ac_error *err)
{
    ac_engine_config cfg = b->cfg;
    cfg.loop = loop;
    cfg.output = out;
    cfg.tracer = ac_cli_tracer(loop);
    cfg.metrics = ac_cli_metrics(0);
    *e = ac_engine_new(&cfg, err);
    if (!*e) {
        if (cmd)
            fprintf(stderr, "%s: %s\n", cmd, err->text);
        return strstr(err->text, "--param") || strstr(err->text, "unknown param") ? AC_EXIT_USAGE
                                                                                  : AC_EXIT_CONFIG;
    }
    for (size_t i = 0; i < b->n_tools; i++)
        if (ac_engine_add_tools_text(*e, b->tools[i], b->tool_texts ? b->tool_texts[i] : NULL,
                                     err) < 0) {
            if (cmd)
                fprintf(stderr, "%s: %s\n", cmd, err->text);
            ac_engine_free(*e);
            *e = NULL;
            return AC_EXIT_CONFIG;
        }
    return 0;
}

/* An engine with no loop: no provider, nothing runs. */
/* An engine that runs nothing; with an agent's options o (may be NULL): its params, system
 * prompt, output schema, and its model's prices (what its sessions cost, replayed). */
static ac_engine *offline(const ac_fsm_tables *tables, const char *const *params,
                          const ac_cli_engine_opts *o, const ac_output *out, ac_error *err)
{
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = tables;
    cfg.params = params;
    cfg.provider = AC_PROVIDER_SCRIPT; /* no loop, so no provider: nothing runs */
    if (o) {
        cfg.system_prompt = o->system_text;
        cfg.output_schema = o->output_schema_text;
        cfg.model = o->model;
        cfg.prices = o->prices_text;
    }
    cfg.output = out;
    return ac_engine_new(&cfg, err);
}

ac_engine *ac_cli_engine_offline(const ac_fsm_tables *tables, const char *const *params,
                                 ac_error *err)
{
    return offline(tables, params, NULL, NULL, err);
}

ac_engine *ac_cli_engine_offline_agent(const ac_fsm_tables *tables, const ac_cli_engine_opts *o,
                                       const ac_output *out, ac_error *err)
{
    return offline(tables, o->n_params ? o->params : NULL, o, out, err);
}

void ac_cli_engine_base_free(ac_cli_engine_base *b)
{
    ac_spec_tables_free(b->tables);
    free(b->system);
    free(b->output_schema);
    free(b->prices);
    memset(b, 0, sizeof *b);
}
