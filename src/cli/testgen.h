/*
 * testgen.h - the parts of `agentc testgen` (testgen.c): which transitions the engine's posting
 * rules let happen at all (testgen_reach.c), the search for scenarios on the real engine
 * (testgen_search.c), writing scenarios and reading them back (testgen_emit.c), and running
 * them through `agentc run` (testgen_run.c).
 */
#ifndef AGENTC_CLI_TESTGEN_H
#define AGENTC_CLI_TESTGEN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agentc/fsm_tables.h"
#include "cli.h"
#include "util/buf.h"

/* One scenario: what the run is given and the path it is expected to take. */
typedef struct tg_scenario {
    char name[64];
    char *builds; /* what inputs it constructs (its stimuli, said) */
    char *script; /* the scripted model's turns, JSON Lines */
    char *schema; /* an output schema (JSON), NULL: none */
    char *guards; /* the guardrails' tool file (guards.json), NULL: none */
    char *args;   /* the run's options, one a line: "--param\nx=1\n--post-at\n..." */
    char *path;   /* the expected path: one transition identity a line (tg_ident_*) */
    int new_transitions;
} tg_scenario;

typedef struct tg_suite {
    tg_scenario *sc;
    size_t n, cap;
} tg_suite;

void tg_suite_free(tg_suite *s);
/* A new scenario at the end of s (zeroed), NULL when out of memory. */
tg_scenario *tg_suite_add(tg_suite *s);

/* ---- reach (testgen_reach.c) ---- */

/* Whether effect `effect` of t posts event ev as the engine's built-in handlers' contracts
 * say: 1, 0, or -1 (an effect the program binds itself: may post anything). */
int tg_effect_posts(void *t, uint16_t effect, uint16_t ev);
/* Per row of t: NULL when the row can happen, else why no outside or engine event can take it
 * (malloc'd array of n_transitions static strings; NULL array when out of memory). */
const char **tg_unreachable(const ac_fsm_tables *t);

/* ---- search (testgen_search.c) ---- */

typedef struct tg_bounds {
    int depth;         /* stimuli in a candidate, at most */
    int64_t time_ms;   /* the search's time, at most */
    const char *tools; /* --tools FILE (an absolute path): given to every run, NULL: none */
} tg_bounds;

typedef struct tg_search_stats {
    size_t candidates; /* run on the engine */
    size_t alphabet;   /* stimuli derived from the spec */
    int64_t ms;        /* time taken */
    int bounded;       /* the time or depth bound stopped it before the frontier emptied */
} tg_search_stats;

/* Searches shortest first for inputs that take transitions of the spec at spec_path (tables t)
 * not yet taken, running each candidate in process on the real engine (scripted provider, fast
 * timers); each one that takes a new transition becomes a scenario of out. taken (n_transitions
 * entries) gets the rows taken. 0, or -1 with err filled. */
int tg_search(const char *spec_path, const ac_fsm_tables *t, const tg_bounds *b, tg_suite *out,
              uint8_t *taken, tg_search_stats *st, char *err, size_t errcap);

/* ---- emit (testgen_emit.c) ---- */

/* A transition's identity as replay identifies it (machine, source, event, target, guard,
 * actions; not its line), one line, appended to b: from row r of t, or from a journal step
 * [machine, from, event, to, line, guard, actions]. */
void tg_ident_row(const ac_fsm_tables *t, uint16_t r, ac_buf *b);
void tg_ident_step(const json_t *step, ac_buf *b);

/* Writes each scenario of s into its folder under out (script.jsonl, schema.json, args,
 * expected.path). 0, or -1 with err filled. */
int tg_emit(const tg_suite *s, const char *out, char *err, size_t errcap);
/* Reads the scenarios written under dir back (folders in name order). 0, or -1 with err. */
int tg_load(const char *dir, tg_suite *s, char *err, size_t errcap);
/* Removes what tg_emit and the runs wrote under out, and out. */
void tg_remove(const tg_suite *s, const char *out);

/* ---- run (testgen_run.c) ---- */

/* Runs scenario sc (written under out) twice with `agentc run` on spec, replays the first
 * journal with --check, compares both runs' steps and the path taken with the expected one,
 * and adds the journal to c. Its JSON result ({name, builds, exit, new_transitions, problem?,
 * stderr?}). */
json_t *tg_run_scenario(ac_loop *loop, const char *spec, const tg_scenario *sc, const char *out,
                        ac_cov *c);

#endif
