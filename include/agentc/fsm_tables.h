/*
 * fsm_tables.h - the shape of a compiled spec.
 *
 * Both the C tables that `agentc gen` writes and the tables built in memory
 * from a spec file at run time (`agentc run --spec FILE`) have this shape, so
 * one dispatcher executes either. Everything here is read-only data.
 *
 * Conventions:
 *   - Event 0 is the "eventless" pseudo-event (transitions taken on entry).
 *   - List offsets index `lists`: lists[off] is the count, the items follow.
 *     Offset 0 is the empty list. `n_lists` is the number of entries, so
 *     every list lies in lists[0 .. n_lists - 1].
 *   - Guards are small postfix programs in `guard_code` (see AC_G_*),
 *     AC_FSM_NONE means "no guard". Each program ends with AC_G_END within
 *     the first `n_guard_code` entries.
 *   - The transitions of a state are contiguous, in declaration order, so
 *     "guards tried in declared order" is a forward scan.
 *   - A guard the spec writes as a comparison (`turn.tool_calls > max_tool_calls`,
 *     `llm.error == "http"`, `calls "shell_*"`) is compiled by the generator into
 *     `guard_ops[i]` (fact, operator, operand); its name in `guard_names` is its
 *     canonical text, which journals, replay and coverage use. Other guards are
 *     bound to C functions by name.
 *   - A built-in action with arguments (`fail("why")`, `answer_from_call("tool",
 *     "argument")`) is compiled into `action_ops[i]` (which action, its strings);
 *     its name in `action_names` is its text as written. Other actions are bound
 *     to C functions by name.
 *   - `layout` is AC_FSM_LAYOUT of the generator that made the tables; the
 *     engine refuses any other (regenerate the tables with this version).
 */
#ifndef AGENTC_FSM_TABLES_H
#define AGENTC_FSM_TABLES_H

#include <stdint.h>

#define AC_FSM_NONE 0xFFFFu
#define AC_FSM_EVENTLESS 0u
#define AC_FSM_MAX_DEPTH 8 /* deepest chain of invoked machines */
#define AC_FSM_GUARD_STACK 16

/* The version of this layout. 2: `layout` and `guard_ops` (typed comparison
 * guards); 3: `action_ops` (the built-in actions' arguments); tables without
 * `layout` (0) came from an older generator. */
#define AC_FSM_LAYOUT 3u

/* Guard program opcodes: high 2 bits of each uint16_t. */
#define AC_G_PRED 0x0000u /* push guard (low 14 bits = guard index) */
#define AC_G_NOT 0x4000u
#define AC_G_AND 0x8000u
#define AC_G_OR 0xC000u
#define AC_G_OPMASK 0xC000u
#define AC_G_ARGMASK 0x3FFFu
#define AC_G_END 0xFFFFu

enum ac_fsm_transition_kind {
    AC_TR_EXTERNAL = 0, /* exit source, actions, enter target */
    AC_TR_INTERNAL = 1, /* actions only, no exit/entry */
    AC_TR_IGNORE = 2    /* consumed, nothing happens */
};

/* event_flags bits */
#define AC_EV_OUTSIDE 0x01u /* only the outside sends it (`outside event`) */
#define AC_EV_TIMER 0x02u   /* an `after` timer of the spec posts it */
#define AC_EV_DECISIONS                                                                            \
    0x04u /* an outside event that carries per-call decisions                                      \
             (`outside event approve(decisions)`) */

enum ac_fsm_param_type { AC_PARAM_INT = 0, AC_PARAM_DURATION = 1, AC_PARAM_STRING = 2 };

typedef struct ac_fsm_param {
    const char *name;
    uint8_t type;     /* enum ac_fsm_param_type */
    int64_t ival;     /* integer, or duration in milliseconds */
    const char *sval; /* string value, NULL for numbers */
} ac_fsm_param;

/* The operator of a comparison guard. */
enum ac_fsm_cmp {
    AC_CMP_EQ = 0,
    AC_CMP_NE = 1,
    AC_CMP_LT = 2,
    AC_CMP_LE = 3,
    AC_CMP_GT = 4,
    AC_CMP_GE = 5
};

/* What a guard compares its fact with. AC_GOP_NONE: not a comparison, a guard
 * bound to a C function by name. */
enum ac_fsm_operand {
    AC_GOP_NONE = 0,
    AC_GOP_INT = 1,    /* `ival`: a count, or a duration in ms */
    AC_GOP_USD = 2,    /* `usd`: an amount in US dollars */
    AC_GOP_PARAM = 3,  /* `param`: a param's index (its value when the engine runs) */
    AC_GOP_STRING = 4, /* `sval`: a string (== and != only) */
    AC_GOP_CALLS = 5   /* `sval`: a glob a tool call's name matches (`calls "shell_*"`) */
};

/* One guard compiled by the generator: `fact cmp operand`, or `calls "glob"`.
 * `fact` is a session fact's id (the generator's facts table). */
typedef struct ac_fsm_guard_op {
    uint8_t operand;  /* enum ac_fsm_operand */
    uint8_t fact;     /* unused for AC_GOP_CALLS */
    uint8_t cmp;      /* enum ac_fsm_cmp; unused for AC_GOP_CALLS */
    uint16_t param;   /* AC_GOP_PARAM */
    int64_t ival;     /* AC_GOP_INT */
    double usd;       /* AC_GOP_USD */
    const char *sval; /* AC_GOP_STRING, AC_GOP_CALLS */
} ac_fsm_guard_op;

/* Which built-in action an action is. AC_AOP_NONE: an action bound to C by name. */
enum ac_fsm_action_kind {
    AC_AOP_NONE = 0,
    AC_AOP_FAIL = 1,             /* fail("why"): args[0] */
    AC_AOP_NOTE = 2,             /* note("text"): args[0] */
    AC_AOP_ANSWER_CALLS = 3,     /* answer_calls("result"): args[0] */
    AC_AOP_ANSWER_FROM_CALL = 4, /* answer_from_call("tool", "argument"): args[0], args[1] */
    AC_AOP_APPLY_DECISIONS = 5   /* apply_decisions: none */
};

/* One built-in action compiled by the generator: which one and its arguments'
 * text (the strings between the quotes; NULL past its count). */
typedef struct ac_fsm_action_op {
    uint8_t kind; /* enum ac_fsm_action_kind */
    const char *args[2];
} ac_fsm_action_op;

typedef struct ac_fsm_transition {
    uint16_t source;  /* state index */
    uint16_t event;   /* event index, AC_FSM_EVENTLESS for eventless */
    uint16_t target;  /* state index (== source for internal and ignore) */
    uint16_t guard;   /* offset into guard_code, or AC_FSM_NONE */
    uint16_t actions; /* list offset of action indexes */
    uint16_t line;    /* spec line of the declaration */
    uint8_t kind;     /* enum ac_fsm_transition_kind */
} ac_fsm_transition;

typedef struct ac_fsm_effect_use {
    uint16_t effect; /* effect index */
    uint16_t args;   /* list offset of param indexes passed to the effect */
} ac_fsm_effect_use;

typedef struct ac_fsm_state {
    const char *name;
    uint16_t machine;
    uint16_t first_transition;
    uint16_t n_transitions;
    uint16_t enter;   /* list offset of action indexes */
    uint16_t exit;    /* list offset of action indexes */
    uint16_t effects; /* list offset of effect-use indexes */
    uint16_t invoke;  /* machine index or AC_FSM_NONE */
    uint16_t line;
    uint8_t terminal;
} ac_fsm_state;

typedef struct ac_fsm_machine {
    const char *name;
    uint16_t initial;     /* state index */
    uint16_t first_state; /* states of a machine are contiguous */
    uint16_t n_states;
    uint16_t depth; /* 0 for the root machine */
} ac_fsm_machine;

typedef struct ac_fsm_tables {
    uint16_t layout;       /* AC_FSM_LAYOUT of the generator that made them */
    const char *spec_path; /* repo-relative path the tables came from */
    const char *hash;      /* hex digest of the spec's meaning */
    uint16_t n_machines, n_states, n_events, n_transitions;
    uint16_t n_guards, n_actions, n_effects, n_params, n_effect_uses;
    uint16_t n_lists, n_guard_code; /* entries in `lists` and `guard_code` */
    uint16_t root;                  /* root machine index */
    const ac_fsm_machine *machines;
    const ac_fsm_state *states;
    const ac_fsm_transition *transitions;
    const ac_fsm_effect_use *effect_uses;
    const ac_fsm_param *params;
    const uint16_t *guard_code;
    const uint16_t *lists;
    const char *const *event_names;
    const char *const *guard_names;
    const char *const *action_names;
    const char *const *effect_names;
    /* per event, AC_EV_* bits (NULL: none set). Tables generated before this
     * field existed leave it NULL. */
    const uint8_t *event_flags;
    /* per guard, its compiled comparison (n_guards entries); NULL when the
     * spec has no comparison guard */
    const ac_fsm_guard_op *guard_ops;
    /* per action, the built-in action it is (n_actions entries); NULL when the
     * spec uses none */
    const ac_fsm_action_op *action_ops;
} ac_fsm_tables;

#endif
