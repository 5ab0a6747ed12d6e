/*
 * contracts.h - the built-in handlers' contracts (contracts.c), for the engine
 * and for `agentc check --handlers builtin`.
 */
#ifndef AGENTC_SESSION_CONTRACTS_H
#define AGENTC_SESSION_CONTRACTS_H

#include "contract.h"

extern const ac_contract ac_builtin_contracts[];
extern const size_t ac_n_builtin_contracts;

#endif
