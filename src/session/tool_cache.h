/*
 * tool_cache.h - the tool-result cache (tool_cache.c): what a cached tool's
 * successful calls returned, by key, in one scope (a session's, or the
 * engine's, which all its sessions share). A hit answers a call without
 * running the tool; the run_tools effect (tools_run.c) asks and fills it,
 * and journals a hit as tool.completed with "cached": true and the id of the
 * call the result came from.
 *
 * Only idempotent tools (or MCP tools the server marks read-only) are
 * cached, failed calls never. The cache lives in memory: a process that
 * starts again starts with it empty. Loop thread only.
 */
#ifndef AGENTC_SESSION_TOOL_CACHE_H
#define AGENTC_SESSION_TOOL_CACHE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/toolfile.h"

typedef struct ac_tool_cache ac_tool_cache;

ac_tool_cache *ac_tool_cache_new(void);    /* NULL when out of memory */
void ac_tool_cache_free(ac_tool_cache *c); /* NULL: nothing */

/* The key of a call (malloc'd, NULL when out of memory): the tool's name, its
 * arguments in canonical form (keys sorted, numbers normalised: 1.0 is 1) and,
 * for a toolkit's tool, its context in the same form. Arguments that read the
 * State are keyed as resolved, so the State paths a call reads are part of
 * its key. */
char *ac_tool_cache_key(const char *name, const json_t *args, const char *context_json);

/* A fresh entry for key at now_ms: 1 with its content and the id of the call
 * it came from (borrowed, valid until the next change of c); 0 otherwise (an
 * expired entry is dropped). A hit makes the entry the most recently used. */
int ac_tool_cache_get(ac_tool_cache *c, const char *key, int64_t now_ms, const char **content,
                      const char **source_id);

/* Keeps content under key for decl's ttl from now_ms; the tool's oldest used
 * entries beyond decl's max_entries are dropped. Returns how many were dropped
 * (evictions). */
size_t ac_tool_cache_put(ac_tool_cache *c, const char *tool, const char *key, const char *content,
                         const char *source_id, const ac_cache_decl *decl, int64_t now_ms);

#endif
