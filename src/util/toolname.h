/* Names of namespaced tools (toolkits, and any tool set registered under a
 * prefix, such as an MCP server's tools).
 *
 * A namespaced tool has two names:
 *   display  "prefix::tool"  everywhere a person reads it: the CLI, journals,
 *                            the conversation, diagrams, error messages;
 *   wire     "prefix__tool"  in provider requests and responses, because the
 *                            OpenAI and Anthropic APIs accept only
 *                            ^[a-zA-Z0-9_-]{1,64}$.
 * A prefix is letters, digits, '-' and single '_' (no "__", no leading or
 * trailing '_'), so the first "__" of a wire name always ends the prefix.
 * The tool part is any name of 1 to 64 letters, digits, '_' or '-'. A pair
 * whose wire name would exceed 64 characters is refused.
 */
#ifndef AGENTC_UTIL_TOOLNAME_H
#define AGENTC_UTIL_TOOLNAME_H

#include <stddef.h>

#define AC_TOOLNAME_MAX 64
#define AC_TOOLNAME_SEP "::"
#define AC_TOOLNAME_WIRE_SEP "__"

/* 1 when s is a valid prefix (see above). */
int ac_toolname_prefix_ok(const char *s);
/* 1 when s is a valid plain tool name: 1-64 of [a-zA-Z0-9_-]. */
int ac_toolname_plain_ok(const char *s);

/* Composes "prefix::tool" into out (cap >= 2 * AC_TOOLNAME_MAX + 3 is always
 * enough). 0, or -1 with a reason in why (invalid prefix or tool name, or a
 * wire name "prefix__tool" longer than 64 characters). */
int ac_toolname_compose(const char *prefix, const char *tool, char *out, size_t cap, char *why,
                        size_t whycap);

/* The wire form of a name: "::" becomes "__" (names without "::" are copied
 * as they are). 0, or -1 when out is too small. */
int ac_toolname_to_wire(const char *name, char *out, size_t cap);

/* The display form of a wire name: when wire contains "__" and
 * known(ud, "prefix::tool") says such a tool exists, out gets that; otherwise
 * out gets wire unchanged. Returns 1 when mapped, 0 when copied, -1 when out
 * is too small. */
int ac_toolname_from_wire(const char *wire, int (*known)(void *ud, const char *display), void *ud,
                          char *out, size_t cap);

/* Splits a display name at its first "::": the prefix length in *plen and the
 * tool part; NULL when the name has no "::". */
const char *ac_toolname_split(const char *display, size_t *plen);

#endif
