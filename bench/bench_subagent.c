/*
 * bench_subagent.c - what a sub-agent call costs (docs/composition.md): a session whose
 * model calls agent::sub, nested D levels deep (each level a child session of the level
 * above, the deepest refused by max_depth), against the same model calls done inline by one
 * session (calculator calls instead of sub-agent calls). Scripted provider, no network, no
 * journal: what is measured is the engine. Per depth: CPU per run (process CPU time) and the
 * peak heap in use during a run (mallinfo2), nested and inline, and the difference per level,
 * next to what a session of its own costs (the target: a level costs no more than that).
 * With --store every session is a stored one (an SQLite file in a temporary directory, as
 * `agentc serve --db`), the children too (an opener that opens them in the store, as serve's
 * does): the cost of durable children against durable inline work.
 * Usage: bench_subagent [runs] [--store]
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "bench_args.h"

#define MAX_DEPTH 4

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks;
}

static ac_store *g_st; /* --store: where every session is */
static int g_run;

/* --store: a child opened in the store (serve's children are), removed when let go. */
static ac_session *open_child(void *ud, ac_session *parent, const char *entry, const char *dir,
                              const char *id, const ac_session_options *opts, ac_error *err)
{
    (void)ud, (void)entry, (void)dir;
    return ac_store_session_opts(g_st, ac_session_engine(parent), id, 0, opts, err);
}

static void close_child(void *ud, ac_session *child)
{
    (void)ud;
    char *id = strdup(ac_session_id(child));
    ac_session_free(child);
    if (id)
        ac_store_rm(g_st, id, NULL);
    free(id);
}

static const ac_subagent_opener g_opener = {NULL, open_child, false, close_child};

/* An engine of the shipped spec on loop, its script and tools given. */
static ac_engine *engine(ac_loop *loop, const char *script, const char *tools)
{
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    cfg.model = "script";
    cfg.subagents = g_st ? &g_opener : NULL;
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (e && ac_engine_add_tools(e, "builtin:calculator", &err) == 0 &&
        (!tools || ac_engine_add_tools_text(e, "bench_agents.json", tools, &err) == 0))
        return e;
    fprintf(stderr, "engine: %s\n", err.text);
    exit(1);
}

/* One run: a session sent "go", the loop run until it settles. Its peak heap over base. */
static size_t run_once(ac_engine *e, ac_loop *loop, size_t base)
{
    ac_error err = {0};
    char id[32];
    snprintf(id, sizeof id, "bench-%d", ++g_run);
    ac_session *s = g_st ? ac_store_session_opts(g_st, e, id, 0, NULL, &err)
                         : ac_session_new(e, "bench", NULL, &err);
    if (!s) {
        fprintf(stderr, "session: %s\n", err.text);
        exit(1);
    }
    ac_session_send(s, "go");
    size_t peak = 0;
    for (int i = 0; i < 100000 && !ac_session_settled(s); i++) {
        ac_loop_run_once(loop, 100);
        size_t h = heap_in_use();
        peak = h > peak ? h : peak;
    }
    if (ac_session_last_turn(s, NULL) != AC_TURN_COMPLETED) {
        fprintf(stderr, "the run did not complete: %s\n", ac_session_error(s));
        exit(1);
    }
    ac_session_free(s);
    for (int i = 0; i < 10; i++)
        ac_loop_run_once(loop, 0); /* what was deferred */
    if (g_st)
        ac_store_rm(g_st, id, NULL);
    return peak > base ? peak - base : 0;
}

/* runs runs of e: CPU per run (s) and the largest peak heap (bytes). */
static void measure(ac_engine *e, ac_loop *loop, int runs, double *cpu, size_t *heap)
{
    run_once(e, loop, 0); /* warm */
    size_t base = heap_in_use(), worst = 0;
    double t0 = cpu_s();
    for (int r = 0; r < runs; r++) {
        size_t h = run_once(e, loop, base);
        worst = h > worst ? h : worst;
    }
    *cpu = (cpu_s() - t0) / runs;
    *heap = worst;
}

int main(int argc, char **argv)
{
    int store = argc > 1 && !strcmp(argv[argc - 1], "--store");
    int runs = argc > 1 + store ? (int)bench_arg(argv[1], 1, 100000, "runs") : 300;
    char dir[] = "/tmp/bench_subagent.XXXXXX", path[64];
    if (store) {
        ac_error err = {0};
        snprintf(path, sizeof path, "%s/sessions.db", mkdtemp(dir) ? dir : "/tmp");
        if (!(g_st = ac_store_open(path, NULL, &err))) {
            fprintf(stderr, "store: %s\n", err.text);
            return 1;
        }
    }
    ac_loop *loop = ac_loop_new();
    const char *call = "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"agent__sub\", "
                       "\"arguments\": \"{\\\"task\\\": \\\"go\\\"}\"}]}\n"
                       "{\"content\": \"done\"}\n";
    printf("sub-agent calls nested D levels vs the same %s, %d runs each%s\n",
           "model calls inline (one session)", runs,
           store ? ", every session stored (SQLite file)" : "");
    /* the target: a level costs what a session of its own costs (one turn: a call, an answer) */
    ac_engine *eb = engine(loop,
                           "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"calculator\", "
                           "\"arguments\": \"{\\\"expression\\\": \\\"1\\\"}\"}]}\n"
                           "{\"content\": \"done\"}\n",
                           NULL);
    double cb;
    size_t hb;
    measure(eb, loop, runs, &cb, &hb);
    ac_engine_free(eb);
    printf("a session of its own (one turn: a tool call, an answer): %.1f us, %.1f KiB\n", cb * 1e6,
           hb / 1024.0);
    printf("%5s %12s %12s %14s %12s %12s %14s\n", "depth", "nested us", "inline us", "us per level",
           "nested KiB", "inline KiB", "KiB per level");
    for (int d = 1; d <= MAX_DEPTH; d++) {
        char tools[200], inl[4096] = "";
        snprintf(tools, sizeof tools,
                 "{\"agents\": [{\"name\": \"sub\", \"description\": \"d\", \"max_depth\": %d}]}",
                 d);
        /* inline: as many model calls as the D+1 sessions make, 2 each */
        for (int k = 0; k < 2 * d + 1; k++)
            snprintf(inl + strlen(inl), sizeof inl - strlen(inl),
                     "{\"tool_calls\": [{\"id\": \"k%d\", \"name\": \"calculator\", "
                     "\"arguments\": \"{\\\"expression\\\": \\\"1+%d\\\"}\"}]}\n",
                     k, k);
        snprintf(inl + strlen(inl), sizeof inl - strlen(inl), "{\"content\": \"done\"}\n");
        ac_engine *en = engine(loop, call, tools), *ei = engine(loop, inl, NULL);
        double cn, ci;
        size_t hn, hi;
        measure(en, loop, runs, &cn, &hn);
        measure(ei, loop, runs, &ci, &hi);
        printf("%5d %12.1f %12.1f %14.1f %12.1f %12.1f %14.1f\n", d, cn * 1e6, ci * 1e6,
               (cn - ci) * 1e6 / d, hn / 1024.0, hi / 1024.0,
               ((double)hn - (double)hi) / 1024.0 / d);
        ac_engine_free(en);
        ac_engine_free(ei);
    }
    ac_loop_free(loop);
    if (store) {
        ac_store_close(g_st);
        char side[96];
        snprintf(side, sizeof side, "%s-holders", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        unlink(side);
        unlink(path);
        rmdir(dir);
    }
    return 0;
}
