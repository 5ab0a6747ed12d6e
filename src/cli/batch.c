/*
 * batch.c - `agentc batch FILE`: one session per JSON line of the input, all
 * on one event loop and one engine, at most --concurrency running at once;
 * each prints one JSON line with its result.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "cli.h"
#include "run_common.h"
#include "run_opts.h"
#include "run_wait.h" /* --on answers to a session waiting for an outside event */
#include "util/grow.h"

typedef struct batch_item {
    json_t *id;
    char *prompt; /* freed once sent */
    int line;     /* in the input: names the session b<line> and its journal */
    ac_session *s;
    int done;
    json_t *result; /* until printed */
} batch_item;

typedef struct batch {
    batch_item *items;
    size_t n;
    size_t *ready; /* indexes of sessions whose turn finished, not yet collected */
    size_t n_ready;
    const run_opts *o;
    ac_engine *engine;
    ac_store *store;
    char *agent; /* --db: the agent record every session keeps */
    size_t next, running, finished, failures, printed;
} batch;

static void batch_free_items(batch *bt)
{
    for (size_t i = 0; i < bt->n; i++) {
        ac_session_free(bt->items[i].s);
        json_decref(bt->items[i].id);
        json_decref(bt->items[i].result);
        free(bt->items[i].prompt);
    }
    free(bt->items);
    free(bt->ready);
}

/* Called from inside a dispatch: only note the session; it is collected
 * (and freed) after the loop iteration. */
static void batch_finished(void *ud, ac_session *s)
{
    batch *bt = ud;
    size_t i = (size_t)(uintptr_t)ac_session_userdata(s);
    if (ac_session_agent_path(s))
        return; /* a sub-agent's child session (docs/composition.md): not an item */
    if (i < bt->n && bt->n_ready < bt->n)
        bt->ready[bt->n_ready++] = i;
}

/* Reads the JSON Lines input. 0, or an exit status. */
static int batch_read(const char *path, batch *bt)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "agentc batch: cannot read '%s': %s\n", path, strerror(errno));
        return AC_EXIT_CONFIG;
    }
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    json_t *seen = json_object(); /* canonical id -> its line: duplicates are refused */
    while ((len = getline(&line, &lcap, f)) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)len)
            continue;
        json_error_t jerr;
        json_t *v = json_loadb(line, (size_t)len, 0, &jerr);
        const char *p = json_string_value(json_object_get(v, "prompt"));
        if (!p) {
            fprintf(stderr, "agentc batch: %s:%d: expected {\"id\": ..., \"prompt\": \"...\"}\n",
                    path, lineno);
            json_decref(v);
            rc = AC_EXIT_CONFIG;
            break;
        }
        if (ac_grow((void **)&bt->items, &cap, bt->n + 1, sizeof *bt->items)) {
            json_decref(v);
            fprintf(stderr, "agentc batch: out of memory\n");
            rc = AC_EXIT_CONFIG;
            break;
        }
        batch_item *it = &bt->items[bt->n];
        memset(it, 0, sizeof *it);
        it->id = json_incref(json_object_get(v, "id"));
        if (!it->id)
            it->id = json_integer(lineno);
        it->line = lineno;
        it->prompt = strdup(p);
        bt->n++;
        json_decref(v);
        /* two results with one id could not be told apart */
        char *key = json_dumps(it->id, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        json_t *first = key ? json_object_get(seen, key) : NULL;
        if (first) {
            fprintf(stderr,
                    "agentc batch: %s:%d: duplicate id %.200s (first on line %d); ids must be "
                    "unique (a line without an id has its line number)\n",
                    path, lineno, key, (int)json_integer_value(first));
            free(key);
            rc = AC_EXIT_CONFIG;
            break;
        }
        if (!key || !it->prompt || json_object_set_new(seen, key, json_integer(lineno))) {
            free(key);
            fprintf(stderr, "agentc batch: out of memory\n");
            rc = AC_EXIT_CONFIG;
            break;
        }
        free(key);
    }
    json_decref(seen);
    free(line);
    if (f != stdin)
        fclose(f);
    if (!rc && !(bt->ready = malloc((bt->n ? bt->n : 1) * sizeof *bt->ready))) {
        fprintf(stderr, "agentc batch: out of memory\n");
        rc = AC_EXIT_CONFIG;
    }
    return rc;
}

/* Turns a settled (or cancelled) session into its result line and frees it. */
static int batch_collect(batch_item *it, const char *journal, int cancelled)
{
    ac_session_stats stats;
    ac_session_get_stats(it->s, &stats);
    const char *why = NULL;
    enum ac_turn_outcome last = ac_session_last_turn(it->s, &why);
    int ok = !cancelled && last == AC_TURN_COMPLETED;
    const char *status = ok                                       ? "completed"
                         : cancelled || last == AC_TURN_CANCELLED ? "cancelled"
                                                                  : "failed";
    const char *error = ok                        ? NULL
                        : cancelled               ? "interrupted"
                        : ac_session_error(it->s) ? ac_session_error(it->s)
                                                  : "the agent failed";
    it->result = json_pack("{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s?, s:s?}", "id", it->id,
                           "status", status, "answer", ac_session_answer(it->s), "iterations",
                           (json_int_t)stats.iterations, "tool_calls", (json_int_t)stats.tool_calls,
                           "usage", "input", (json_int_t)stats.input_tokens, "output",
                           (json_int_t)stats.output_tokens, "error", error, "journal", journal);
    if (it->result && stats.has_cost) /* --prices: what it cost */
        json_object_set_new(json_object_get(it->result, "usage"), "cost_usd",
                            json_real(stats.cost_usd));
    it->done = 1;
    ac_session_free(it->s);
    it->s = NULL;
    return ok;
}

static void batch_progress(size_t finished, size_t n, size_t failures, int64_t t0, int final)
{
    double secs = (double)(ac_cli_wall_ms() - t0) / 1000.0;
    double rate = secs > 0 ? (double)finished / secs : 0;
    char bar[31];
    size_t fill = n ? finished * 30 / n : 30;
    for (size_t i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r\033[K[%s] %zu/%zu  %.1f/s  %zu failed  ", bar, finished, n, rate, failures);
    if (final)
        fprintf(stderr, "%.1fs\n", secs);
    else if (rate > 0)
        fprintf(stderr, "ETA %.0fs", (double)(n - finished) / rate);
    fflush(stderr);
}

/* Sessions running at once need descriptors: a connection each, a journal each with
 * --journal-dir, and a few for the loop and stdio. The soft limit is raised to the hard one; a
 * concurrency the limit still cannot serve is lowered, with a note, rather than failing sessions
 * with a misleading "Couldn't connect". Tool processes take more, and report EMFILE as such. */
static int clamp_to_descriptors(int concurrency, int journals)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return concurrency;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    if (rl.rlim_cur == RLIM_INFINITY)
        return concurrency;
    long per = journals ? 2 : 1, spare = 32;
    long fit = ((long)rl.rlim_cur - spare) / per;
    if (fit < 1)
        fit = 1;
    if (concurrency <= fit)
        return concurrency;
    fprintf(stderr,
            "agentc batch: --concurrency %d lowered to %ld: this process may open %ld files "
            "(ulimit -n) and each running session needs %ld\n",
            concurrency, fit, (long)rl.rlim_cur, per);
    return (int)fit;
}

/* The journal path of an item (--journal-dir), or NULL. */
static const char *item_journal(const batch *bt, const batch_item *it, char *buf, size_t cap)
{
    if (!bt->o->journal_dir)
        return NULL;
    snprintf(buf, cap, "%s/b%d.journal", bt->o->journal_dir, it->line);
    return buf;
}

/* An item's result line, printed now unless --ordered keeps the order. */
static void item_done(batch *bt, batch_item *it, int failed)
{
    bt->finished++;
    bt->failures += failed != 0;
    if (!bt->o->ordered) { /* as they finish, and not kept */
        ac_cli_emit_json(it->result);
        it->result = NULL;
    }
}

/* The result of an item that never ran. */
static void item_not_run(batch_item *it, const char *status, const char *error)
{
    it->done = 1;
    it->result =
        json_pack("{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s}", "id", it->id, "status", status,
                  "answer", "", "iterations", (json_int_t)0, "tool_calls", (json_int_t)0, "usage",
                  "input", (json_int_t)0, "output", (json_int_t)0, "error", error);
}

/* Starts sessions up to the concurrency. 0, or an exit status when no
 * session can run (the configuration: a tool_choice naming no tool). */
static int batch_start(batch *bt)
{
    char journal[4096];
    while (bt->next < bt->n && bt->running < (size_t)bt->o->concurrency) {
        batch_item *it = &bt->items[bt->next];
        char id[64];
        ac_error err;
        snprintf(id, sizeof id, "b%d", it->line);
        const char *sid = bt->store && json_is_string(it->id) ? json_string_value(it->id) : id;
        /* created and closed with the loop turn's group commit (store.h) */
        it->s = ac_cli_session_open(bt->store, bt->engine, sid, AC_STORE_GROUPED,
                                    item_journal(bt, it, journal, sizeof journal), bt->agent, &err);
        if (!it->s && err.code == AC_ECONFIG && bt->next == 0) {
            fprintf(stderr, "agentc: %s\n", err.text);
            return AC_EXIT_CONFIG;
        }
        if (it->s) {
            ac_session_set_userdata(it->s, (void *)(uintptr_t)bt->next);
            ac_session_send(it->s, it->prompt);
            free(it->prompt);
            it->prompt = NULL;
            bt->running++;
        } else {
            item_not_run(it, "failed", err.text);
            item_done(bt, it, 1);
        }
        bt->next++;
    }
    return 0;
}

/* Sessions report through the finished hook; an edited spec may not call it,
 * so the running sessions are also polled. A session waiting for an outside
 * event gets the first --on answer for its state, or fails naming the state
 * (a batch never asks). */
static void batch_poll(batch *bt)
{
    for (size_t i = 0; i < bt->next; i++) {
        ac_run_wait bw = {bt->o->on, bt->o->n_on, 0, 0};
        if (bt->items[i].s && !bt->items[i].done && !ac_session_settled(bt->items[i].s))
            ac_run_wait_check(bt->items[i].s, &bw, NULL, NULL);
    }
    bt->n_ready = 0;
    for (size_t i = 0; i < bt->next; i++)
        if (bt->items[i].s && ac_session_settled(bt->items[i].s))
            bt->ready[bt->n_ready++] = i;
}

/* Collects the settled sessions, and prints what --ordered may print. */
static void batch_collect_ready(batch *bt)
{
    char journal[4096];
    for (size_t k = 0; k < bt->n_ready; k++) {
        batch_item *it = &bt->items[bt->ready[k]];
        if (it->done || !it->s || !ac_session_settled(it->s))
            continue;
        int ok = batch_collect(it, item_journal(bt, it, journal, sizeof journal), 0);
        bt->running--;
        item_done(bt, it, !ok);
    }
    bt->n_ready = 0;
    if (bt->o->ordered) /* the longest finished prefix, in input order */
        for (; bt->printed < bt->n && bt->items[bt->printed].done; bt->printed++) {
            ac_cli_emit_json(bt->items[bt->printed].result);
            bt->items[bt->printed].result = NULL;
        }
}

/* Every session still running is cancelled and reported; the ones never
 * started are reported as cancelled too. */
static void batch_cancel_rest(batch *bt)
{
    char journal[4096];
    for (size_t i = 0; i < bt->n; i++) {
        batch_item *it = &bt->items[i];
        if (it->done)
            continue;
        if (it->s) {
            ac_session_cancel(it->s);
            batch_collect(it, item_journal(bt, it, journal, sizeof journal), 1);
        } else {
            item_not_run(it, "cancelled", "not started");
        }
        item_done(bt, it, 1);
    }
}

/* Runs every session on the loop until all finished or a stop. 0, or an
 * exit status. */
static int batch_run(batch *bt, ac_loop *loop)
{
    int tty = isatty(2), rc = 0;
    int64_t t0 = ac_cli_wall_ms(), last_scan = t0, last_bar = 0;
    while (bt->finished < bt->n && !ac_cli_interrupted && !ac_cli_out_errno) {
        if ((rc = batch_start(bt)))
            return rc;
        ac_loop_run_once(loop, 50);
        int64_t now = ac_cli_wall_ms();
        if (now - last_scan >= 250) {
            last_scan = now;
            batch_poll(bt);
        }
        batch_collect_ready(bt);
        if (tty && now - last_bar >= 100) {
            last_bar = now;
            batch_progress(bt->finished, bt->n, bt->failures, t0, 0);
        }
    }
    if (ac_cli_interrupted || ac_cli_out_errno)
        batch_cancel_rest(bt);
    if (bt->o->ordered)
        for (; bt->printed < bt->n; bt->printed++) {
            ac_cli_emit_json(bt->items[bt->printed].result);
            bt->items[bt->printed].result = NULL;
        }
    if (tty)
        batch_progress(bt->finished, bt->n, bt->failures, t0, 1);
    return 0;
}

/* The engine and the store every session of the batch shares. 0, or an exit status. */
static int batch_open(batch *bt, run_opts *o, ac_cli_engine_base *base, ac_loop **loop)
{
    ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = bt;
    out.finished = batch_finished;
    int rc = ac_cli_engine_resolve(&o->eng, "agentc", base);
    if (rc)
        return rc;
    base->cfg.agent_name = o->agent_name ? o->agent_name : o->agent; /* the traces' */
    if (!(*loop = ac_loop_new())) {
        fprintf(stderr, "agentc: cannot create the event loop\n");
        return AC_EXIT_CONFIG;
    }
    ac_error err = {0};
    if (o->metrics_file && !ac_cli_metrics(1)) {
        fprintf(stderr, "agentc: out of memory\n");
        return AC_EXIT_CONFIG;
    }
    if ((rc = ac_cli_engine_build(base, *loop, &out, "agentc", &bt->engine, &err)))
        return rc;
    /* --db, else $AGENTC_DB: every session stored under its input id */
    const char *db = o->db ? o->db : ac_cli_store_env();
    if (db && !o->no_store && (rc = ac_cli_store_open(db, 0, &bt->store)) != 0)
        return rc;
    char why[600] = "";
    if (bt->store && !(bt->agent = ac_cli_agent_record(&o->eng, o->agent_name, why, sizeof why))) {
        fprintf(stderr, "agentc: %s\n", why);
        return AC_EXIT_CONFIG;
    }
    o->concurrency = clamp_to_descriptors(o->concurrency, o->journal_dir != NULL);
    return 0;
}

int ac_cli_batch(int argc, char **argv)
{
    run_opts o;
    int rc = ac_cli_parse_run(argc, argv, &o, 1);
    if (!rc && o.journal_dir && mkdir(o.journal_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "agentc batch: cannot create '%s': %s\n", o.journal_dir, strerror(errno));
        rc = AC_EXIT_CONFIG;
    }
    if (rc) {
        ac_cli_run_opts_free(&o);
        return rc < 0 ? 0 : rc;
    }
    batch bt;
    memset(&bt, 0, sizeof bt);
    bt.o = &o;
    ac_cli_engine_base base;
    memset(&base, 0, sizeof base);
    ac_loop *loop = NULL;
    int ran = 0;
    if (!(rc = batch_read(o.prompt, &bt)) && !(rc = batch_open(&bt, &o, &base, &loop))) {
        struct sigaction old[3];
        ac_cli_catch_stop_signals(old);
        ac_cli_ignore_sigpipe();
        rc = batch_run(&bt, loop);
        int interrupted = ac_cli_interrupted;
        if (interrupted)
            fprintf(stderr, "agentc batch: %s: running sessions cancelled\n",
                    ac_cli_stop_signal_name(interrupted));
        ac_cli_restore_stop_signals(old);
        ran = !rc;
        if (ran)
            rc = interrupted ? 128 + interrupted : bt.failures ? AC_EXIT_FAILED : 0;
    }
    if (ran && o.metrics_file && ac_cli_metrics_write(o.metrics_file) != 0) {
        fprintf(stderr, "agentc batch: cannot write the metrics to '%s': %s\n", o.metrics_file,
                strerror(errno));
        rc = rc ? rc : AC_EXIT_OUTPUT;
    }
    batch_free_items(&bt);
    ac_store_close(bt.store);
    free(bt.agent);
    ac_engine_free(bt.engine);
    ac_cli_tracer_finish(loop);
    ac_cli_metrics_free();
    ac_loop_free(loop);
    ac_cli_engine_base_free(&base);
    ac_cli_run_opts_free(&o);
    return ran ? ac_cli_finish_output(rc) : rc;
}
