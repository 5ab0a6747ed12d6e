/*
 * spec.h - the spec compiler's front end: tokens, the parsed spec
 * (intermediate representation), diagnostics, and the passes over it.
 *
 * Pipeline: ac_spec_parse (Ragel lexer + recursive-descent parser)
 *        -> ac_spec_check (semantic rules, reachability)
 *        -> ac_spec_lower (in-memory ac_fsm_tables)
 *        -> emitters (C tables, DOT, Mermaid, Markdown).
 * All strings in the IR are owned by the spec's arena and live until
 * ac_spec_free.
 */
#ifndef AGENTC_GEN_SPEC_H
#define AGENTC_GEN_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agentc/fsm_tables.h"
#include "agentc/version.h"

#define AC_SPEC_MAX_ERRORS 50

/* ---- tokens (lexer.rl) ---- */
enum ac_tok {
    TK_EOF = 0,
    TK_IDENT,  /* name, may contain dots: llm.delta */
    TK_NUMBER, /* digits with an optional unit suffix: 10, 500ms, 10q */
    TK_STRING, /* "..." (text holds the unescaped value) */
    TK_LBRACE,
    TK_RBRACE,
    TK_LBRACK,
    TK_RBRACK,
    TK_LPAREN,
    TK_RPAREN,
    TK_COMMA,
    TK_EQ,
    TK_ARROW,
    TK_SLASH,
    TK_BANG,
    TK_AND,
    TK_OR,
    TK_STAR,
    TK_CMP,  /* == != < <= > >= (text holds the operator) */
    TK_ERROR /* lexical error; text holds the message */
};

typedef struct ac_token {
    int kind;
    int line, col;
    int first_on_line; /* first token of its line (used for error recovery) */
    const char *text;  /* arena string */
    size_t len;
} ac_token;

const char *ac_tok_describe(int kind);

/* ---- diagnostics ---- */
typedef struct ac_diag {
    int line, col;
    int error; /* 1 error, 0 warning */
    char *msg;
    unsigned seq;
} ac_diag;

/* ---- IR ---- */
typedef struct ac_name {
    const char *s;
    int line, col;
} ac_name;

typedef struct ac_names {
    ac_name *v;
    size_t n, cap;
} ac_names;

enum ac_gexpr_kind { GX_PRED, GX_NOT, GX_AND, GX_OR, GX_CMP, GX_CALLS };
typedef struct ac_gexpr {
    int kind;
    ac_name pred; /* GX_PRED: the guard; GX_CMP: the fact; GX_CALLS: the word `calls` */
    struct ac_gexpr *a, *b;
    ac_name op;   /* GX_CMP: the operator */
    ac_name rhs;  /* GX_CMP: a param name, a number or a string; GX_CALLS: the pattern */
    int rhs_kind; /* TK_IDENT, TK_NUMBER or TK_STRING */
} ac_gexpr;

typedef struct ac_effect_decl {
    ac_name name;
    ac_names args; /* param names */
} ac_effect_decl;

typedef struct ac_state_decl {
    ac_name name;
    int declared_by_state; /* saw a `state` statement */
    int terminal;
    ac_names enter, exit;
    ac_effect_decl *effects;
    size_t n_effects, cap_effects;
    ac_name invoke; /* s == NULL when none */
    /* filled by the checker */
    int index;
} ac_state_decl;

typedef struct ac_trans_decl {
    int line, col;
    int kind; /* enum ac_fsm_transition_kind */
    int star; /* sources = every non-terminal state */
    ac_names sources;
    ac_name target; /* external only */
    ac_name event;  /* s == NULL: eventless */
    ac_name after;  /* `after X`: a param name or a duration (s == NULL: none) */
    int after_kind; /* TK_IDENT or TK_NUMBER */
    ac_gexpr *guard;
    ac_names actions;
    unsigned order; /* declaration order within the machine */
    int reported;   /* a conflict was reported for this rule */
} ac_trans_decl;

typedef struct ac_posts {
    ac_name effect;
    ac_names events;
} ac_posts;

typedef struct ac_machine_decl {
    ac_name name;
    ac_name initial;
    ac_state_decl *states;
    size_t n_states, cap_states;
    ac_trans_decl *trans;
    size_t n_trans, cap_trans;
    int index;
} ac_machine_decl;

typedef struct ac_param_decl {
    ac_name name;
    int type; /* enum ac_fsm_param_type */
    int64_t ival;
    const char *sval;
    int bad; /* value failed to parse (reported) */
} ac_param_decl;

enum ac_handler_kind { HK_GUARD = 0, HK_ACTION = 1, HK_EFFECT = 2 };
#define AC_HK_COUNT 3

/* The spec keyword of a handler kind ("guard", "action", "effect"), which
 * is also the word used for it in diagnostics and generated code. */
static inline const char *ac_handler_kind_name(int kind)
{
    return kind == HK_GUARD ? "guard" : kind == HK_ACTION ? "action" : "effect";
}

/* The prefix of a handler kind's enum constants in generated headers. */
static inline const char *ac_handler_kind_prefix(int kind)
{
    return kind == HK_GUARD ? "G_" : kind == HK_ACTION ? "A_" : "F_";
}

typedef struct ac_spec {
    const char *path; /* as given for messages */
    char *src;
    size_t src_len;
    /* arena */
    struct ac_arena_block *arena;
    /* declarations */
    ac_param_decl *params;
    size_t n_params, cap_params;
    ac_names events;
    ac_names handlers[AC_HK_COUNT]; /* by enum ac_handler_kind */
    ac_names outside;               /* events only the outside sends (`outside event ...`) */
    ac_names decisions;             /* those of them that carry per-call decisions:
                                       `outside event approve(decisions)` */
    struct ac_posts *posts;         /* `effect E posts ev, ...` */
    size_t n_posts, cap_posts;
    ac_machine_decl *machines;
    size_t n_machines, cap_machines;
    /* diagnostics */
    ac_diag *diags;
    size_t n_diags, cap_diags;
    size_t n_errors, n_warnings;
    int too_many;
    unsigned diag_seq;
    /* the contracts of the handlers the spec will run with (NULL: none): the events their
     * effects post count in the proof that every state can be left (leave.c); set before
     * ac_spec_check */
    const struct ac_contract *contracts;
    size_t n_contracts;
    /* filled by ac_spec_check when there are no errors */
    struct ac_resolved *res;
} ac_spec;

/* Resolved model (check.c), the input of lowering. Indexes are global. */
typedef struct ac_row {
    int state, event, target, kind;
    const ac_trans_decl *decl;
} ac_row;

typedef struct ac_resolved {
    size_t n_states;
    ac_state_decl **states; /* global state index -> decl */
    int *state_machine;
    size_t n_events;
    const char **event_names; /* [0] = "" (eventless) */
    ac_row *rows;             /* grouped by state, declaration order */
    size_t n_rows;
    int *state_first_row, *state_n_rows;
    int root;
    int *machine_depth;
    int *machine_first_state;
} ac_resolved;

/* Index of a name among the declared handlers/params/events, -1 if none. */
int ac_spec_handler_index(const ac_spec *spec, int kind, const char *name);
int ac_spec_param_index(const ac_spec *spec, const char *name);

/* Parse `src` (copied). Never NULL except on out-of-memory; check n_errors. */
ac_spec *ac_spec_parse(const char *path, const char *src, size_t len);
/* Read a file and parse it; NULL with errno set when the file is unreadable. */
ac_spec *ac_spec_load(const char *path);
void ac_spec_free(ac_spec *spec);

/* Semantic checks; adds diagnostics. Returns the number of errors. */
size_t ac_spec_check(ac_spec *spec);
void ac_spec_free_resolved(ac_spec *spec);

/* Print diagnostics sorted by position as PATH:LINE:COL: error: MSG. */
void ac_spec_print_diags(const ac_spec *spec, FILE *out);

void ac_spec_diag(ac_spec *spec, int error, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Arena helpers. */
void *ac_spec_alloc(ac_spec *spec, size_t n);
const char *ac_spec_strdup(ac_spec *spec, const char *s, size_t n);

/* Lexer: tokenizes spec->src into a token array (arena-owned). */
ac_token *ac_spec_lex(ac_spec *spec, size_t *n_out);

/* Lowering: builds heap tables from a checked spec (no errors).
 * `rel_path` is recorded as the spec path. Free with ac_spec_tables_free. */
ac_fsm_tables *ac_spec_lower(const ac_spec *spec, const char *rel_path);
void ac_spec_tables_free(ac_fsm_tables *t);

/* Hex digest of the spec's meaning (names and structure, not layout). */
void ac_spec_hash(const ac_fsm_tables *t, char out[17]);

/* Emitters. `name` is the base name (agent for agent.fsm). Return 0 on success. */
int ac_emit_c_header(const ac_fsm_tables *t, const char *name, FILE *out);
int ac_emit_c_source(const ac_fsm_tables *t, const char *name, FILE *out);

/* Path coverage for diagrams (counts per transition row / state); NULL for a plain diagram. */
typedef struct ac_diagram_cov {
    const uint32_t *transition_count; /* n_transitions entries */
    const uint32_t *state_count;      /* n_states entries */
} ac_diagram_cov;

int ac_emit_dot(const ac_fsm_tables *t, int machine /* -1 all */, const ac_diagram_cov *cov,
                FILE *out);
int ac_emit_mermaid(const ac_fsm_tables *t, int machine, const ac_diagram_cov *cov, FILE *out);
int ac_emit_markdown(const ac_fsm_tables *t, int machine, FILE *out);
/* The machines and who invokes whom (Mermaid flowchart). */
int ac_emit_overview(const ac_fsm_tables *t, FILE *out);

/* Guard program to text, e.g. "retryable && !exhausted". */
void ac_guard_to_text(const ac_fsm_tables *t, uint16_t off, char *buf, size_t cap);

#define AGENTC_VERSION_STRING AGENTC_VERSION /* agentc/version.h */

#endif
