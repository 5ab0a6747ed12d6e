/*
 * engine_opts.h - the engine options of the command line (agentc run, batch,
 * resume, demo and serve) and the one builder of an engine from them.
 *
 * Options are parsed into an ac_cli_engine_opts; ac_cli_engine_resolve reads
 * what they name once (the environment, the spec, the system prompt and
 * output schema files) into an ac_cli_engine_base; ac_cli_engine_build makes
 * an engine from the base on a given loop, as often as a caller needs one.
 */
#ifndef AGENTC_CLI_ENGINE_OPTS_H
#define AGENTC_CLI_ENGINE_OPTS_H

#include "agentc/agentc.h"

#define AC_CLI_MAX_TOOLS 31
#define AC_CLI_MAX_PARAMS 64
#define AC_CLI_MAX_HEADERS 32
#define AC_CLI_MAX_STOP 31

typedef struct ac_cli_engine_opts {
    const char *provider, *base_url, *model, *api_key_env, *script, *system, *spec;
    const char *tools[AC_CLI_MAX_TOOLS + 1];
    size_t n_tools;
    const char *params[AC_CLI_MAX_PARAMS + 1]; /* NULL-terminated */
    size_t n_params;
    /* "Name: value", NULL-terminated; a name alone (a stored agent keeps no value)
     * is not sent, and ac_cli_engine_resolve says that its value must be given */
    const char *headers[AC_CLI_MAX_HEADERS + 1];
    size_t n_headers;
    const char *output_schema; /* --output-schema FILE (run, batch) */
    const char *prices;        /* --prices FILE: the models' prices (docs/observability.md) */
    const char *prices_text;   /* an agent's "prices" document (wins over prices) */
    /* model request settings: --temperature ... --request-json (run, batch) */
    ac_request_settings req;
    const char *stop[AC_CLI_MAX_STOP + 1]; /* NULL-terminated */
    size_t n_stop;
    const char *script_text; /* turns given inline (demo), instead of --script */
    int script_delay_ms;
    /* Texts instead of files (a stored agent, agent.h): each, when set, is used
     * and the file is not read. spec_text: the spec's source (spec, if set,
     * names it); tool_texts[i]: the content of the tool file tools[i] (whose
     * directory relative commands are taken from); system_text: the system
     * prompt as it is (no @FILE); output_schema_text: the schema's JSON. */
    const char *spec_text;
    const char *tool_texts[AC_CLI_MAX_TOOLS + 1];
    const char *system_text;
    const char *output_schema_text;
} ac_cli_engine_opts;

/* What the options resolve to: the configuration every engine built from
 * them shares (its loop and output are given per build). It points into the
 * options, which must outlive it. */
typedef struct ac_cli_engine_base {
    ac_engine_config cfg;
    ac_fsm_tables *tables;                       /* --spec (owned) */
    char *system;                                /* --system @FILE, read (owned) */
    char *output_schema;                         /* --output-schema FILE, read (owned) */
    char *prices;                                /* --prices FILE, read (owned) */
    const char *headers[AC_CLI_MAX_HEADERS + 1]; /* the headers that have a value */
    const char *const *tools;
    const char *const *tool_texts; /* parallel to tools: a content, or NULL (read tools[i]) */
    size_t n_tools;
} ac_cli_engine_base;

/* The engine flags at argv[*i]: --provider, --base-url, --model, --api-key-env,
 * --script, --system, --spec, --tools, --param and --header. cmd names the
 * command in messages ("agentc serve"). 1 when argv[*i] is one (*i moves past
 * its value), 0 when it is not, or -(exit status) after printing why. */
int ac_cli_engine_flag(int argc, char **argv, int *i, ac_cli_engine_opts *o, const char *cmd);

/* The model request flags (--temperature ... --request-json) and
 * --output-schema, returning as ac_cli_engine_flag does. */
int ac_cli_request_flag(int argc, char **argv, int *i, ac_cli_engine_opts *o);

/* Reads the environment and the files the options name into b. 0, or an exit
 * status after printing why (prefixed with cmd). b is freed with
 * ac_cli_engine_base_free either way. */
int ac_cli_engine_resolve(const ac_cli_engine_opts *o, const char *cmd, ac_cli_engine_base *b);

/* An engine from b on loop, reporting to out (may be NULL), with the tools
 * added. 0 and *e, or an exit status with err filled (AC_EXIT_USAGE for a bad
 * --param, else AC_EXIT_CONFIG) and, when cmd is not NULL, printed after it. */
int ac_cli_engine_build(const ac_cli_engine_base *b, ac_loop *loop, const ac_output *out,
                        const char *cmd, ac_engine **e, ac_error *err);

void ac_cli_engine_base_free(ac_cli_engine_base *b);

/* Traces (tracing.c): the tracer the OTEL_* variables configure, made for loop on first use
 * (NULL: tracing is off; a malformed variable is said on stderr once); every engine
 * ac_cli_engine_build makes on loop sends its spans to it. ac_cli_tracer_finish sends what is
 * left (a second at most) and frees it: call it after the engines are freed, before the loop. */
struct ac_tracer *ac_cli_tracer(ac_loop *loop);
void ac_cli_tracer_finish(ac_loop *loop);
/* The command's metrics (agentc/metrics.h): made on the first call with create (before the
 * engines are built: each engine built afterwards counts in them), else NULL until then. */
struct ac_metrics *ac_cli_metrics(int create);
/* Their Prometheus text (malloc'd; NULL without metrics), and that text written to path (0, or
 * -1 with errno). */
char *ac_cli_metrics_text(void);
int ac_cli_metrics_write(const char *path);
void ac_cli_metrics_free(void);

/* An engine with no loop, for rebuilding sessions (replay, agentc sessions):
 * tables (NULL: the built-in ones) and params (may be NULL). NULL with err
 * filled on failure. */
ac_engine *ac_cli_engine_offline(const ac_fsm_tables *tables, const char *const *params,
                                 ac_error *err);
/* The same with the system prompt and output schema (JSON text) of o's agent (its record
 * form: system_text, output_schema_text) and reporting to out (may be NULL): what a session
 * takes of an agent it changes to, and what a replay of it reports. */
ac_engine *ac_cli_engine_offline_agent(const ac_fsm_tables *tables, const ac_cli_engine_opts *o,
                                       const ac_output *out, ac_error *err);

#endif
