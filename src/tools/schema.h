/* JSON Schema validator for tool parameters.
 *
 * A schema is compiled once (ac_schema_compile) into a tree of nodes with
 * resolved local $refs and compiled regexes, then used to validate any number
 * of instances (ac_schema_validate). The supported subset is the common core of
 * draft 7 and 2020-12:
 *
 *   type, properties, required, additionalProperties, patternProperties,
 *   propertyNames, minProperties, maxProperties, enum, const, items (schema or,
 *   as in draft 7, an array = tuple), prefixItems, additionalItems, contains,
 *   minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum,
 *   exclusiveMaximum (number form, and the draft-4 boolean form), multipleOf,
 *   minLength, maxLength, pattern, anyOf, oneOf, allOf, not, if/then/else,
 *   $ref (local only: "#", "#/$defs/x", "#/definitions/x", any JSON pointer),
 *   $defs, definitions, boolean schemas.
 *
 * Annotations accepted and ignored: title, description, default, examples,
 * $schema, $id (root only), $comment, format, readOnly, writeOnly, deprecated.
 * Any other keyword makes compilation fail with a message naming it and its
 * location, so no part of a schema is ever silently ignored.
 *
 * Semantics worth knowing:
 * - Numbers compare by value: 1 and 1.0 are equal (enum, const, uniqueItems),
 *   and "integer" accepts 1.0.
 * - multipleOf is decided in decimal on the shortest representation of each
 *   number, so 0.0075 is a multiple of 0.0001.
 * - minLength/maxLength count Unicode code points.
 * - pattern is an ECMA-262 regex matched by PCRE2 in UTF mode with ECMA
 *   options (schema_regex.c): lookaround, backreferences and named groups are
 *   accepted. Each match runs under match, depth and heap limits; a pattern
 *   that hits one fails validation with a message saying it was not checked,
 *   so no argument can stall the loop.
 * - When the root "$schema" names draft 4, 6 or 7, a "$ref" overrides its
 *   sibling keywords as those drafts say (the siblings are still checked for
 *   being supported). Otherwise siblings apply together with the $ref, as in
 *   2019-09 and later.
 * - $ref cycles and deep instances are bounded by a recursion limit
 *   (AC_SCHEMA_MAX_DEPTH), and the work of one validation by a step budget
 *   (AC_SCHEMA_MAX_STEPS: anyOf/oneOf under a recursive $ref could otherwise
 *   take time exponential in the nesting of the arguments); exceeding either
 *   is reported as an invalid instance.
 *
 * Messages for invalid instances name the instance location as a JSON pointer
 * ("(root)" for the document itself), e.g. `/items/2: expected integer, got
 * string` or `(root): missing required property "b"`.
 */
#ifndef AGENTC_TOOLS_SCHEMA_H
#define AGENTC_TOOLS_SCHEMA_H

#include <stddef.h>
#include <jansson.h>

/* Maximum nesting of schema objects at compile time, and of validation
 * steps (instance depth plus applicators and $refs) at validation time. */
#define AC_SCHEMA_MAX_DEPTH 256
/* Most schema nodes one validation may visit. */
#define AC_SCHEMA_MAX_STEPS 300000L

typedef struct ac_schema ac_schema;

/* Compiles `schema` (borrowed; an object or a boolean). The compiled schema
 * keeps its own reference to the document, so the caller may drop theirs.
 * Returns a new ac_schema, or NULL with a message in err. */
ac_schema *ac_schema_compile(const json_t *schema, char *err, size_t errcap);

/* Validates `instance` (borrowed). Returns 1 if valid, 0 if invalid with a
 * message in err saying where and what is wrong. Never modifies either. */
int ac_schema_validate(const ac_schema *schema, const json_t *instance, char *err, size_t errcap);

/* Frees a compiled schema. ac_schema_free(NULL) is a no-op. */
void ac_schema_free(ac_schema *schema);

#endif
