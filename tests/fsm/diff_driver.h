/*
 * diff_driver.h - drives one spec's tables through the reference dispatcher
 * (ref_dispatch.h) and the real one under four configurations (the plan's
 * dense index or a row scan, each traced and untraced), with the same
 * random events and guard results, and compares every handler call.
 */
#ifndef AGENTC_TESTS_DIFF_DRIVER_H
#define AGENTC_TESTS_DIFF_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "agentc/fsm_tables.h"

#define DIFF_MAX_HANDLERS 64 /* guards and actions each; specs with more are skipped */

typedef struct diff_stats {
    unsigned long calls;    /* handler calls the reference made */
    unsigned long restarts; /* times the root machine ended or failed and was restarted */
} diff_stats;

/* 1: all five agree; 0: they differ (msg says where); -1: skipped (too many
 * handlers) or out of memory (msg says which). */
int diff_run(const ac_fsm_tables *t, uint64_t seed, int steps, diff_stats *stats, char *msg,
             size_t cap);

/* The same, with `tamper` applied to the dense plan once it is built: how
 * a test shows the comparison catches a wrong plan. */
struct ac_fsm_plan;
int diff_run_tampered(const ac_fsm_tables *t, uint64_t seed, int steps, diff_stats *stats,
                      char *msg, size_t cap, void (*tamper)(struct ac_fsm_plan *dense));

#endif
