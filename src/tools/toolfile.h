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
    char **env;         /* "NAME=value" strings, NULL-terminated; NULL: no "env" key */
    char **inherit_env; /* names and PREFIX* patterns, NULL-terminated; NULL: the default */
} ac_toolfile_tool;

/* The variables a tool inherits when its entry has no "inherit_env". */
extern const char *const ac_toolfile_default_inherit[];

typedef struct ac_toolfile {
    ac_toolfile_tool *tools;
    size_t n;
    json_t *mcp; /* the "mcp" array as written (MCP servers, src/mcp/mcp_config.c), or NULL */
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

#endif
