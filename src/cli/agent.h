/*
 * agent.h - the agent format (docs/agents.md, docs/agent.schema.json): one
 * JSON object describing what a session runs with, mapped one to one onto the
 * command line's engine options (engine_opts.h).
 *
 * Two forms of the same format:
 * - the file form (`--agents FILE`, {"agents": [AGENT, ...]}): paths relative
 *   to the file, "system" text or "@file", "output_schema" a path or a schema;
 * - the record form (what a session stores, ac_cli_agent_record): self-contained.
 *   "spec" is {"path", "hash", "text"}, each tool file {"path", "hash", "dir",
 *   "text"} (its content; the values of "env" and "headers" replaced by
 *   {"$from": "tool_file"}, re-read from the file at "path" when rebuilt),
 *   "system" {"text"}, "output_schema" the schema, "base_url" without userinfo,
 *   "headers" names only, "api_key_env" only. Never a secret.
 * ac_cli_agent_opts reads either form (a key's JSON type tells which).
 */
#ifndef AGENTC_CLI_AGENT_H
#define AGENTC_CLI_AGENT_H

#include <jansson.h>
#include <stddef.h>

#include "engine_opts.h"

/* What the engine options read from an agent point into: free with
 * ac_cli_agent_hold_free once the options (and anything resolved from them)
 * are no longer used. ac_cli_agent_opts sets it up. */
typedef struct ac_cli_agent_hold {
    json_t *doc;  /* the agent as parsed (its strings are borrowed by the options) */
    char **owned; /* strings made for the options ("name=value" params, texts) */
    size_t n_owned, cap_owned;
    const char *name;          /* the agent's "name" (NULL: none given) */
    const json_t *overridable; /* its "overridable" array, or NULL */
} ac_cli_agent_hold;

/* The keys of the format, in the order of docs/agents.md. */
extern const char *const ac_cli_agent_keys[];

/* Either form of one agent (JSON text) into o, which is zeroed first. The
 * file form's relative paths are taken from base_dir (NULL: the current
 * directory). Record-form spec and tool texts are handed to the builder as
 * texts (spec_text, tool_texts); a tool text's {"$from": "tool_file"} values are
 * read again from the tool file now. 0, or -1 with err: syntax, an unknown
 * key, a wrong type, a secret-looking value, a reference the tool file no
 * longer has. The strings o points to are owned by hold (freed on failure too). */
int ac_cli_agent_opts(const char *agent_json, const char *base_dir, ac_cli_agent_hold *hold,
                      ac_cli_engine_opts *o, char *err, size_t errcap);

void ac_cli_agent_hold_free(ac_cli_agent_hold *hold);

/* The record form of the configuration o under name (NULL: "default"), as
 * new compact JSON text: the spec and tool files read now. NULL with err when
 * a file cannot be read. It holds no API key, header value, URL userinfo or
 * tool env/header value. */
char *ac_cli_agent_record(const ac_cli_engine_opts *o, const char *name, char *err, size_t errcap);

/* What was given (on this command line, in a session's overrides) wins over
 * base (a stored or selected agent): every option given replaces base's;
 * params merge by name; tools, headers and stop sequences given replace the
 * list. Both keep pointing to their own strings. */
void ac_cli_engine_opts_overlay(ac_cli_engine_opts *base, const ac_cli_engine_opts *given);

/* What a record does not keep, taken again from the options given (a command line): the
 * value of every header o names without one, and the base URL's userinfo when from's base
 * URL is o's with it. o then points to from's strings. */
void ac_cli_engine_opts_secrets_from(ac_cli_engine_opts *o, const ac_cli_engine_opts *from);

/* The keys of the format that given sets (options it holds), each once, as
 * a new array of strings ("model", "params", "request", ...). */
json_t *ac_cli_engine_opts_given(const ac_cli_engine_opts *given);

/* 0 when every key that given sets is in the agent's "overridable" list, else
 * -1 with err naming the first one that is not (agent names the agent). */
int ac_cli_agent_check_overrides(const ac_cli_agent_hold *agent, const ac_cli_engine_opts *given,
                                 char *err, size_t errcap);

/* The keys that differ between two records, as a new array ("model",
 * "params.max_tool_calls", "request.temperature", "tools", "spec", ...); an
 * unreadable record differs in everything ("agent"). */
json_t *ac_cli_agent_diff(const char *old_record, const char *new_record);

/* ---- --agents FILE: {"agents": [AGENT, ...]} ---- */

typedef struct ac_cli_agents ac_cli_agents;

/* Loads and checks every agent of the file (each must have a distinct
 * "name"). NULL with err naming the file and the agent. */
ac_cli_agents *ac_cli_agents_load(const char *path, char *err, size_t errcap);
void ac_cli_agents_free(ac_cli_agents *a);

size_t ac_cli_agents_count(const ac_cli_agents *a);
/* The name of agent i (borrowed). */
const char *ac_cli_agents_name(const ac_cli_agents *a, size_t i);
/* The agent called name as JSON text (borrowed), or NULL when there is none. */
const char *ac_cli_agents_find(const ac_cli_agents *a, const char *name);
/* The directory the file's relative paths are taken from (borrowed). */
const char *ac_cli_agents_dir(const ac_cli_agents *a);
/* Agent i as it is listed (GET /v1/agents): the file form as written, which
 * holds no secret (ac_cli_agents_load refuses one). Borrowed. */
const json_t *ac_cli_agents_get(const ac_cli_agents *a, size_t i);

/* "unknown agent 'NAME' (the file has: a, b)" into err. */
void ac_cli_agents_unknown(const ac_cli_agents *a, const char *name, char *err, size_t errcap);

#endif
