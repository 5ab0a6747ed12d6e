/*
 * stateref.h - references into a session's State and into the user's message,
 * as they appear in tool-call arguments and in "_outputPath" (docs/state.md).
 *
 * Grammar (one kind of operator per expression; spaces allowed around it):
 *
 *   expr    = operand *( ("||" / "&&") operand )      at most AC_REF_MAX_OPERANDS
 *   operand = "†" root *step                          "†" is U+2020 (E2 80 A0)
 *   root    = "state" / "input"
 *   step    = "." key / "[" index "]" / "[" quoted "]"   at most AC_REF_MAX_STEPS
 *   key     = 1*( ALPHA / DIGIT / "_" / "-" / "$" )
 *   index   = 1*9DIGIT
 *   quoted  = DQUOTE *( any byte >= 0x20 but DQUOTE and "\" / "\" DQUOTE / "\\" ) DQUOTE
 *
 * Examples: †state.user.name, †state.items[2], †state["a key"].x,
 * †state.receipt || †state.error, †input.order.id.
 *
 * A string argument is an expression when it begins with one "†"; one that
 * begins with "††" is the literal text with its first dagger removed ("††"
 * escapes a dagger); any other string is literal.
 */
#ifndef AGENTC_TOOLS_STATEREF_H
#define AGENTC_TOOLS_STATEREF_H

#include <stddef.h>
#include <jansson.h>

#define AC_REF_DAGGER "\xE2\x80\xA0"
#define AC_REF_MAX_OPERANDS 16
#define AC_REF_MAX_STEPS 64
#define AC_REF_MAX_TEXT 4096
/* The most bytes the values of one call's references may take, written out (each use
 * counted): past it the call fails. */
#define AC_REF_MAX_RESOLVED ((size_t)16 << 20)

enum ac_ref_root { AC_REF_STATE = 0, AC_REF_INPUT = 1 };
enum ac_ref_op { AC_REF_ONE = 0, AC_REF_OR = 1, AC_REF_AND = 2 };

typedef struct ac_ref_step {
    char *key;  /* NULL for an array index */
    long index; /* >= 0 when key is NULL */
} ac_ref_step;

typedef struct ac_ref_path {
    int root; /* enum ac_ref_root */
    size_t n;
    ac_ref_step *steps;
} ac_ref_path;

typedef struct ac_ref_expr {
    int op; /* enum ac_ref_op */
    size_t n;
    ac_ref_path *paths;
} ac_ref_expr;

/* What a string argument is: 0 literal, 1 escaped ("††..."), 2 an expression. */
int ac_ref_kind(const char *s, size_t len);

/* Parses an expression (the whole text; it must begin with a dagger). 0 with
 * *out filled (free with ac_ref_expr_free), or -1 with a message in err naming
 * the byte offset. */
int ac_ref_parse(const char *text, size_t len, ac_ref_expr *out, char *err, size_t errcap);
void ac_ref_expr_free(ac_ref_expr *e);

/* The canonical text of a path ("†state.a[2]"), truncated to cap. */
void ac_ref_path_text(const ac_ref_path *p, char *buf, size_t cap);

/* The value at p under root (borrowed), NULL when it does not exist. */
json_t *ac_ref_lookup(json_t *root, const ac_ref_path *p);

/* Evaluates an expression: the value (borrowed) or NULL with "unresolved
 * reference ..." in err. ONE: the path; OR: the first path that exists; AND:
 * every path must exist, the last is taken. input may be NULL (not JSON). */
json_t *ac_ref_eval(const ac_ref_expr *e, json_t *state, json_t *input, char *err, size_t errcap);

/* Sets the value at p (a State path) in *doc to value (a reference is taken).
 * Missing objects on the way are created; an index may replace an element or
 * append one (index == size). The root path needs an object (it replaces the
 * document). Changes nothing on failure: -1 with a message in err. */
int ac_ref_set(json_t **doc, const ac_ref_path *p, json_t *value, char *err, size_t errcap);

/* True when one path is a prefix of the other (same root): a write to one
 * changes what the other reads. */
int ac_ref_overlap(const ac_ref_path *a, const ac_ref_path *b);

/* Replaces every expression string in v (objects and arrays searched to any
 * depth) by its value, and every escaped one by its literal. *out is a new
 * reference (values taken from state and input are shared, not copied).
 * 0, or -1 with the first failure in err ("unresolved reference †state.x",
 * "invalid reference ...", "the references expand to more than 16777216 bytes
 * (the limit)": their values written out, each use counted, over
 * AC_REF_MAX_RESOLVED). */
int ac_ref_resolve(json_t *v, json_t *state, json_t *input, json_t **out, char *err, size_t errcap);

/* Calls fn for every State path that v reads (expression strings, any depth).
 * Returns -1 at the first expression that does not parse (message in err). */
int ac_ref_reads(json_t *v, void (*fn)(void *ud, const ac_ref_path *p), void *ud, char *err,
                 size_t errcap);

#endif
