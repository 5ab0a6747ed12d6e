/*
 * testgen_search.h - the stimuli of `agentc testgen`'s search (testgen_alpha.c,
 * testgen_posts.c), which the search (testgen_search.c) combines into candidates.
 */
#ifndef AGENTC_CLI_TESTGEN_SEARCH_H
#define AGENTC_CLI_TESTGEN_SEARCH_H

#include "testgen.h"

#define TG_MAX_ALPHA 8192

enum tg_stim_kind {
    TG_TURN = 0,   /* value: one scripted model turn (JSON) */
    TG_PARAM = 1,  /* value: "name=value" lines */
    TG_POST = 2,   /* value: "MACHINE.STATE=EVENT[:PAYLOAD]" (--post-at) */
    TG_SCHEMA = 3, /* value: an output schema (JSON) */
    TG_SLOW = 4,   /* value: "name=1ms" of an `after` timer; the model answers slowly */
    TG_TRIP = 5    /* value: a guardrail's name: its command trips (the others pass) */
};

typedef struct tg_stim {
    int kind;         /* enum tg_stim_kind */
    char *label;      /* what it constructs, said */
    char *value;      /* as the kind says */
    const char *tool; /* TG_TURN: the --tools it needs besides builtin:calculator, NULL */
    uint16_t state;   /* TG_POST: the state it posts at (AC_FSM_NONE for the others) */
} tg_stim;

typedef struct tg_alpha {
    tg_stim *s;
    size_t n, cap;
} tg_alpha;

/* Every stimulus the spec's tables suggest, into a. */
void tg_alpha_derive(tg_alpha *a, const ac_fsm_tables *t);
void tg_alpha_add_post(tg_alpha *a, uint16_t state, const char *label, char *value);
void tg_alpha_free(tg_alpha *a);
/* The tool file the spec's guardrails need (guards.json): a command per guardrail that passes,
 * or trips when named in trip (n of them). NULL when the spec has no guardrail. */
char *tg_guard_tools(const ac_fsm_tables *t, const char *const *trip, size_t n);
/* The events posted as states are entered (testgen_posts.c). */
void tg_alpha_posts(tg_alpha *a, const ac_fsm_tables *t);
/* The params every candidate runs with: the durations of the timers inside a turn (a retry's
 * backoff) made short. Appended to b as "--param\nNAME=2ms\n" lines. */
void tg_fast_timers(const ac_fsm_tables *t, ac_buf *b);

#endif
