/*
 * run_wait.h - answering a session that waits for an outside event, for
 * `agentc run` (run_wait.c).
 */
#ifndef AGENTC_CLI_RUN_WAIT_H
#define AGENTC_CLI_RUN_WAIT_H

#include <stdint.h>
#include <stdio.h>

#include "agentc/agentc.h"

typedef struct ac_run_wait {
    const char *const *on; /* "STATE=EVENT" answers (--on), at most 64 */
    size_t n_on;
    uint64_t used; /* entries already used */
    int interactive; /* ask on the terminal */
} ac_run_wait;

/* 0: the session does not wait for the outside; 1: an event was sent; -1: the session
 * failed (no answer; its error says which state waits for which events). */
int ac_run_wait_check(ac_session *s, ac_run_wait *w, FILE *in, FILE *err);

#endif
