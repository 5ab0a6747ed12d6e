/* Context filters: named, declarative steps that turn a list of context
 * values into the enum a parameter offers (ctxfilter.c). A toolkit declares
 * them in its tool file and a parameter chains them:
 *
 *   "filters": {"active_only": {"where": {"active": true}},
 *               "by_name":     {"sort": "name"},
 *               "recent":      {"sort": "-updated", "limit": 20},
 *               "names":       {"map": "name", "unique": true}}
 *   "x-enum-from": {"path": "users", "filters": ["active_only", "by_name", "names"]}
 *
 * A filter has any of these steps, applied in this order:
 *   where   {"dot.path": VALUE | {"eq"|"ne": V, "in": [V...], "lt"|"lte"|"gt"|"gte": N|S,
 *            "exists": true|false}, ...}   every condition must hold ("." is the item)
 *   sort    "dot.path" ascending, "-dot.path" descending (numbers by value, strings
 *           bytewise; items without the key last; stable)
 *   map     "dot.path": each item replaced by its value there (items without it dropped)
 *   unique  true: later duplicates dropped
 *   limit   N >= 1: the first N kept
 * A comparison holds only between two numbers or two strings. */
#ifndef AGENTC_TOOLS_CTXFILTER_H
#define AGENTC_TOOLS_CTXFILTER_H

#include <stddef.h>
#include <jansson.h>

/* A dotted path: words of printable characters without spaces or quotes,
 * separated by single dots, at most 256 bytes ("a.b"); with dot_alone, "."
 * (the item itself) too. */
int ac_ctxfilter_path_ok(const char *s, int dot_alone);

/* Checks a toolkit's "filters" object (names and steps). 0, or -1 with the
 * reason in why naming the filter. */
int ac_ctxfilter_check_decl(const json_t *filters, char *why, size_t whycap);

/* The items (an array, borrowed) after the filters named by chain (an array
 * of names, borrowed) of filters: a new array. Names not in filters are
 * skipped (the file's checks refuse them). NULL only when out of memory. */
json_t *ac_ctxfilter_apply(const json_t *filters, const json_t *chain, const json_t *items);

/* A JSON Schema describing a sample value (the type of each key of its
 * objects, the union over an array's elements): what the checks use when a
 * toolkit has no context_schema. New reference. */
json_t *ac_ctxfilter_shape(const json_t *value);

typedef void (*ac_ctxfilter_report_fn)(void *ud, const char *message);

/* Walks chain over items whose schema is item_schema (borrowed; NULL when
 * unknown, which checks nothing), reporting through fn each step that names a
 * key the items do not have, compares with a value of another type, or reads
 * keys of items that are not objects; then, when enum_kind is not NULL, a
 * result of another kind ("string", "number", "boolean": what the enum's
 * parameter takes). who prefixes messages. Returns how many were reported. */
size_t ac_ctxfilter_check_chain(const json_t *filters, const json_t *chain,
                                const json_t *item_schema, const char *enum_kind, const char *who,
                                ac_ctxfilter_report_fn fn, void *ud);

#endif
