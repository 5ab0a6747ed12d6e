/* Tool definition files: the JSON document that declares which external
 * commands a model may call, with a JSON Schema for their arguments.
 *
 *   {"tools": [{"name": "grep",                      required, ^[a-zA-Z0-9_-]{1,64}$
 *               "description": "Search files",       required, string
 *               "parameters": {JSON Schema},         default {"type": "object"}
 *               "command": ["grep", "-n"],           required, non-empty array of strings
 *               "timeout": "10s",                    default "30s" (ms, s, m, h)
 *               "max_output": "1MB",                 default "1MB" (B/KB/MB/GB = 1000-based,
 *                                                               KiB/MiB/GiB = 1024-based)
 *               "idempotent": true,                  default false
 *               "cache": {"ttl": "10m",              optional, needs "idempotent": true:
 *                         "scope": "session",        a result cache (ac_cache_decl below)
 *                         "max_entries": 100},
 *               "env": {"NAME": "value"},            default {}: variables set for the tool
 *               "inherit_env": ["PATH", "LC_*"]}]}   default PATH HOME USER LOGNAME LANG
 *                                                    LC_* TZ TMPDIR: the variables of the
 *                                                    agent's environment the tool sees
 *                                                    (NAME or a PREFIX* pattern; "*" = all)
 *
 * "inherit_env" replaces the default list (it does not add to it). Whatever
 * the list, variables that hold the provider's credentials are never
 * inherited (see the engine, session/tool_env.c); "env" values are passed
 * exactly as written.
 *
 * "mcp": [...] declares MCP servers whose tools are added too (src/mcp/mcp_config.c
 * checks it); "tools" may then be left out.
 *
 * "agents": [{"name", "description", "input_schema"?, "max_depth"?, "handoff"?, ...}] declares
 * sub-agents, each offered as the tool agent::NAME (or, with "handoff": true, transfer_to_NAME);
 * the rest of an entry is the agent format (docs/agents.md, docs/composition.md); "tools" may
 * then be left out too.
 *
 * Everything else is refused: unknown keys, wrong types, a schema that does not
 * compile, duplicate tool names, duplicate JSON keys. Messages name the file
 * and the entry, e.g. `tools.json: tools[2] ("grep"): unknown key "cmd"`, and
 * syntax errors carry jansson's line:column.
 */
#ifndef AGENTC_TOOLS_TOOLFILE_H
#define AGENTC_TOOLS_TOOLFILE_H

#include <stddef.h>
#include <jansson.h>

#include "tools/schema.h"

/* A tool's result cache: a successful result stands for later calls with the same key
 * (name, canonical arguments, toolkit context) for ttl_ms. */
enum { AC_CACHE_DECL_SESSION, AC_CACHE_DECL_ENGINE };
typedef struct ac_cache_decl {
    long long ttl_ms;   /* 0: no cache */
    int scope;          /* AC_CACHE_DECL_SESSION or AC_CACHE_DECL_ENGINE */
    size_t max_entries; /* per tool and scope; the oldest used goes first */
} ac_cache_decl;

#define AC_CACHE_DEFAULT_TTL "5m"
#define AC_CACHE_DEFAULT_MAX 100

/* Parses {"ttl": "10m", "scope": "session" | "engine", "max_entries": N} (each
 * optional: "5m", "session", 100) into *out. 0, or -1 with the reason. */
int ac_toolfile_parse_cache(const json_t *j, ac_cache_decl *out, char *why, size_t whycap);

/* One tool. Every pointer is owned by the ac_toolfile that holds it. */
typedef struct ac_toolfile_tool {
    char *name, *description;
    json_t *parameters; /* the schema document (one reference owned here) */
    ac_schema *schema;  /* compiled parameters */
    char **argv;        /* argc strings plus a NULL terminator */
    size_t argc;
    long long timeout_ms;
    size_t max_output; /* bytes */
    int idempotent;
    ac_cache_decl cache; /* "cache" (ttl_ms 0: none) */
    char **env;          /* "NAME=value" strings, NULL-terminated; NULL: no "env" key */
    char **inherit_env;  /* names and PREFIX* patterns, NULL-terminated; NULL: the default */
    /* toolkits (toolkit_file.c): the index of the tool's toolkit in the file, -1 for an
     * independent tool; name is then "prefix::tool" and local its own part */
    int toolkit;
    char *local;
    char **required_states, **forbidden_states, **enables_states, **disables_states,
        **required_context; /* NULL-terminated; NULL outside toolkits */
    int updates_context;
    int callback;         /* no "command": bound to a C callback of the same name */
    json_t *enum_from;    /* {"param": ["path", ...]} from "x-enum-from", or NULL */
    json_t *enum_filters; /* {"param": ["filter", ...]} for the params that chain filters,
                           * or NULL (tools/ctxfilter.h) */
} ac_toolfile_tool;

/* One toolkit: tools sharing a prefix, state flags and a context. */
typedef struct ac_toolfile_toolkit {
    char *prefix;
    char **initial_states;  /* NULL-terminated */
    char **states;          /* "states" if declared, else NULL (see toolkit_file.c) */
    json_t *context;        /* the initial context, an object */
    json_t *context_schema; /* or NULL */
    ac_schema *ctx_schema;  /* compiled context_schema, or NULL */
    json_t *filters;        /* "filters": {"name": {steps}} (tools/ctxfilter.h), never NULL */
} ac_toolfile_toolkit;

/* The variables a tool inherits when its entry has no "inherit_env". */
extern const char *const ac_toolfile_default_inherit[];

typedef struct ac_toolfile {
    ac_toolfile_tool *tools; /* the toolkits' tools first, in file order, then "tools" */
    size_t n;
    json_t *mcp; /* the "mcp" array as written (MCP servers, src/mcp/mcp_config.c), or NULL */
    ac_toolfile_toolkit *toolkits;
    size_t n_toolkits;
    /* "state": {"initial": {...}, "schema": {...}} (both optional; the initial State
     * must be an object that the schema, when given, accepts), or NULL */
    json_t *state;
    /* "agents": the sub-agents and handoffs (toolfile_agents.c), the array as written with its
     * composition keys checked, or NULL */
    json_t *agents;
} ac_toolfile;

/* Loads and checks a tool file. Returns a new ac_toolfile (free with
 * ac_toolfile_free) or NULL with a message in err. */
ac_toolfile *ac_toolfile_load(const char *path, char *err, size_t errcap);

/* Same, from text in memory; path_for_messages only names the source in
 * messages (NULL: "<tools>"). */
ac_toolfile *ac_toolfile_parse(const char *json_text, const char *path_for_messages, char *err,
                               size_t errcap);

/* Finds a tool by name; returns a borrowed pointer or NULL. */
const ac_toolfile_tool *ac_toolfile_find(const ac_toolfile *tf, const char *name);

/* Frees the file and every tool in it. ac_toolfile_free(NULL) is a no-op. */
void ac_toolfile_free(ac_toolfile *tf);

/* ---- toolkits (toolkit_file.c, toolkit_check.c) ----
 *
 *   {"toolkits": [{"prefix": "plane",                 required, see util/toolname.h
 *                  "initial_states": ["a"],           default []
 *                  "states": ["a", "b"],              optional: every state the toolkit has
 *                  "context": {...},                  default {}: the initial context
 *                  "context_schema": {JSON Schema},   optional: checks every context update
 *                  "filters": {"name": {...}},        optional: context filters (ctxfilter.h)
 *                  "tools": [{...a tool as above, named without the prefix, and:
 *                     "required_states": [], "forbidden_states": [],
 *                     "enables_states": [], "disables_states": [],
 *                     "required_context": [],        context keys that must exist
 *                     "updates_context": false,      prints {"result": ..., "context": {...}}
 *                     "callback": true               instead of "command": a C callback
 *                  }]}]}                              registered under "prefix::tool"
 * A parameter's "x-enum-from": "key" or ["key", "a.b"] takes its enum from the
 * live context (see session/toolkits.c); {"path": "key" or [...], "filters":
 * ["name", ...]} passes the values through the toolkit's filters first. */

/* Parses one tool entry (toolfile.c). in_toolkit: the toolkit keys are allowed
 * (the caller reads them) and "callback": true may replace "command". */
int ac_toolfile__parse_tool(const char *path, const char *label, const json_t *e, int in_toolkit,
                            ac_toolfile_tool *d, char *err, size_t errcap);
/* Takes every "x-enum-from" out of params' properties into *out ({"param":
 * ["path", ...]}, NULL when none) and the filter chains into *filters
 * ({"param": ["name", ...]}, NULL when none). 0, or -1 with a reason. */
int ac_toolfile__take_enum_from(json_t *params, json_t **out, json_t **filters, char *why,
                                size_t whycap);
/* Parses the "toolkits" array into tf (tools appended to tf->tools). 0 or -1. */
int ac_toolfile__parse_toolkits(const json_t *arr, ac_toolfile *tf, const char *path, char *err,
                                size_t errcap);
void ac_toolfile__free_toolkit(ac_toolfile_toolkit *k);
/* Checks the "agents" array (names usable as agent::NAME and transfer_to_NAME, distinct; a
 * "description"; "input_schema" a schema that compiles; "max_depth" 1..32; "handoff" a
 * boolean) and keeps it in tf->agents. 0, or -1 with err naming the file and the entry. */
int ac_toolfile__parse_agents(const json_t *arr, ac_toolfile *tf, const char *path, char *err,
                              size_t errcap);
/* The value at a dot-separated context path ("a.b") in obj, or NULL
 * (toolkit_check.c; availability at run time uses it too). */
const json_t *ac_toolfile_context_at(const json_t *obj, const char *path);
void ac_toolfile__free_tool_parts(ac_toolfile_tool *d);

/* What `agentc check --tools` reports, one message at a time. */
typedef void (*ac_toolfile_report_fn)(void *ud, const char *message);
/* Reference problems: states nobody declares or sets, a tool requiring and
 * forbidding one state, required_context or x-enum-from paths the context
 * (schema or initial value) does not have. Returns how many were reported. */
size_t ac_toolfile_check_refs(const ac_toolfile *tf, ac_toolfile_report_fn fn, void *ud);
/* The reachability proof: every toolkit tool that no sequence of successful
 * calls from the initial states can make available, with the reason. Returns
 * how many. */
size_t ac_toolfile_check_reach(const ac_toolfile *tf, ac_toolfile_report_fn fn, void *ud);
/* DOT text of every toolkit's states and the tools moving between them
 * (malloc'd). */
char *ac_toolfile_diagram(const ac_toolfile *tf);

#endif
