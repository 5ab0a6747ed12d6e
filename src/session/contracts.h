/*
 * contracts.h - the built-in handlers' contracts (contracts.c), for the engine
 * and for `agentc check --handlers builtin`.
 */
#ifndef AGENTC_SESSION_CONTRACTS_H
#define AGENTC_SESSION_CONTRACTS_H

#include "agentc/agentc.h"
#include "contract.h"

#include "gen_cli.h"

extern const ac_contract ac_builtin_contracts[];
extern const size_t ac_n_builtin_contracts;

/* Whether a spec's handler of that kind (enum ac_handler_kind) and name is one ac_engine_new
 * binds without the program registering it: a built-in handler, or one the spec defines
 * itself (a comparison, a built-in action with arguments, a timer). */
int ac_builtin_has_handler(int kind, const char *name);

/* The payload contract: a built-in guard or action bound to a transition whose event is one
 * the providers and tools post reads only fields that event's payload carries (each read
 * field missing is reported once per transition and handler, msg naming handler, field,
 * event and line). applies says whether a name is bound to the built-in handler. */
typedef struct ac_payload_check {
    ac_contract_applies_fn applies;
    ac_contract_report_fn report;
    void *ud;
} ac_payload_check;
void ac_payload_contract_check(const ac_fsm_tables *t, const ac_payload_check *c);
/* The params the built-in handlers of the spec read that neither the spec (t) nor `have` (n_have
 * values) declares, with the default their contract declares (param_defaults): copied to out (at
 * most cap; names and strings are the contracts'), in contract order. Returns how many. */
size_t ac_builtin_param_defaults(const ac_fsm_tables *t, const ac_param_value *have, size_t n_have,
                                 ac_param_value *out, size_t cap);
/* How many params the contracts give defaults for: the most ac_builtin_param_defaults adds. */
size_t ac_builtin_param_defaults_max(void);

/* The built-in handlers, for `agentc check` and the specs the CLI runs. */
extern const ac_cli_handlers ac_builtin_cli_handlers;

/* The values the built-in handlers accept for the params they read: a minimum for numbers, the
 * allowed words for strings. Checked after the overrides, so a bad value is refused at start
 * instead of misbehaving when first used. */
typedef struct ac_param_rule {
    const char *name;
    int64_t min;              /* numbers: smallest value accepted */
    const char *const *words; /* strings: the accepted values, NULL-terminated; NULL: any */
    const char *meaning;      /* what the minimum means, for the message */
} ac_param_rule;

extern const ac_param_rule ac_builtin_param_rules[];
extern const size_t ac_n_builtin_param_rules;

#endif
