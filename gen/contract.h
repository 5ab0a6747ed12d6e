/*
 * contract.h - what a handler needs from a spec, and the check that a spec
 * provides it.
 *
 * A C handler bound to a spec name may read params by name, expect events to
 * exist (an effect posts them), and, for an effect, take the params the spec
 * passes in its use (`effect llm_request(stall_timeout, connect_timeout)`) in
 * a given order and of given types, and need an action to have run on every way
 * into a state that runs it (run_tools runs the calls record_assistant
 * recorded). It also names the events it posts, which the checker's proof that
 * every state can be left (leave.c) counts as sendable where it runs. A
 * contract declares all of that as data;
 * ac_contract_check() compares it with compiled tables and reports every
 * problem, so a spec that renames a param a handler needs is refused before
 * anything runs (ac_engine_new, `agentc check --handlers builtin`) instead of
 * silently running with a C default. A param a contract gives a default for (param_defaults)
 * is that default when the spec does not declare it: the contract, not the C code, says its
 * value.
 */
#ifndef AGENTC_GEN_CONTRACT_H
#define AGENTC_GEN_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm_tables.h"

#define AC_CONTRACT_MAX 6

typedef struct ac_contract {
    const char *handler;                  /* the spec name it is bound to */
    int kind;                             /* 0 guard, 1 action, 2 effect (enum ac_handler_kind) */
    const char *params[AC_CONTRACT_MAX];  /* params read by name, NULL-terminated */
    uint8_t param_types[AC_CONTRACT_MAX]; /* enum ac_fsm_param_type of each */
    const char *events[AC_CONTRACT_MAX];  /* events it posts or needs, NULL-terminated */
    int nargs;                            /* effects: params each use passes; -1 unchecked */
    uint8_t arg_types[AC_CONTRACT_MAX];   /* enum ac_fsm_param_type of each argument */
    /* effects: events it also posts when the spec declares them (the spec need not),
     * NULL-terminated; with `events`, what the effect posts */
    const char *also_posts[AC_CONTRACT_MAX];
    /* effects: the action that must have run on every way into a state running it, since
     * the machine started (NULL: none); what that action gives it and what to do when it
     * is missing, for the message */
    const char *needs_action;
    const char *needs_what;
    const char *needs_hint;
    /* the value (in the spec's syntax: 16000, 10s) each param of `params` takes when the spec
     * does not declare it, checked as a spec's value is (NULL: the spec must declare it) */
    const char *param_defaults[AC_CONTRACT_MAX];
} ac_contract;

/* One problem. The location is given by what it concerns: the handler's declaration, or
 * (state != AC_FSM_NONE) the use of the effect in that state, argument `arg` (-1: the use). */
typedef struct ac_contract_problem {
    int kind;
    const char *handler;
    uint16_t state;
    int arg;
    char msg[512];
} ac_contract_problem;

typedef void (*ac_contract_report_fn)(void *ud, const ac_contract_problem *p);
/* Whether the handler of that kind and name is the one the contract describes (a program may
 * bind its own function to a name); NULL: always. */
typedef int (*ac_contract_applies_fn)(void *ud, int kind, const char *name);

/* Checks the handlers the spec declares against the contracts of the same kind and name.
 * Returns the number of problems, each reported in spec order. */
size_t ac_contract_check(const ac_fsm_tables *t, const ac_contract *c, size_t n,
                         ac_contract_applies_fn applies, ac_contract_report_fn report, void *ud);

/* Whether contract k says its effect posts ev (its `events` and `also_posts`). */
int ac_contract_posts(const ac_contract *k, const char *ev);

/* The events the engine itself posts for the outside (the embedding program, the CLI,
 * serve): spawn, user_message, pause, ... NULL-terminated. The stuck-state proof counts
 * them as sendable in every spec. */
extern const char *const ac_engine_events[];

/* "int", "duration", "string". */
const char *ac_param_type_name(int type);

#endif
