/*
 * testgen.c - `agentc testgen SPEC [--out DIR] [--run] [--json] [--depth N] [--time-limit MS]
 * [--from DIR]`: scenarios that drive a spec through the built-in handlers, found by a search
 * on the real engine (testgen_search.c) and written to DIR (testgen_emit.c); with --run each
 * runs twice through `agentc run` (testgen_run.c), its journal replays with --check, both runs'
 * steps must be byte-identical and the path must be the expected one. The report gives the
 * transitions the engine's posting rules let happen (testgen_reach.c: `reachable: N of M`), how
 * many of them were taken, and why each one not taken was not. --from DIR runs the suite an
 * earlier `testgen --out DIR` wrote against SPEC (an edited spec: a path that differs shows the
 * edit).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testgen.h"

typedef struct tg_opts {
    const char *spec, *out, *from;
    int run, json, fail_fast;
    tg_bounds b;
    char tools[PATH_MAX]; /* --tools FILE, absolute */
} tg_opts;

static int usage(FILE *f, int rc)
{
    fprintf(f,
            "usage: agentc testgen SPEC [--handlers builtin] [--tools FILE] [--out DIR] [--run]\n"
            "                      [--json] [--depth N] [--time-limit MS] [--from DIR]\n"
            "                      [--fail-fast]\n\n"
            "Searches, shortest first, for runs that take every transition of SPEC the engine's\n"
            "posting rules let happen: model answers (text, tool calls, errors with their HTTP\n"
            "status and Retry-After, finish reasons, usage), params that make a guard's bound\n"
            "small, an output schema, short timers, and outside events posted as a state is\n"
            "entered (agentc run --post-at), each candidate run on the engine in process. Each\n"
            "run that takes a new transition is written to DIR as a scenario: script.jsonl,\n"
            "schema.json when it needs one, args (the options of its run) and expected.path.\n"
            "  --run            run each scenario twice with `agentc run` (into a temporary\n"
            "                   folder without --out), replay its journal\n"
            "                   (agentc replay --check), require identical steps and the\n"
            "                   expected path, and print the coverage\n"
            "  --json           {total, reachable, covered, scenarios, uncovered: [TRANSITION +\n"
            "                   reason], search}\n"
            "  --handlers builtin  the handlers the scenarios run with: the built-in ones (the\n"
            "                   only handlers `agentc run` has; the default)\n"
            "  --tools FILE     a tool file given to every run beside builtin:calculator (the\n"
            "                   tools a spec's `calls \"glob\"` guards name, its own tools)\n"
            "  --depth N        stimuli combined in one run, at most (default 4)\n"
            "  --time-limit MS  the search's time, at most (default 20000)\n"
            "  --from DIR       run the scenarios written in DIR (by --out) on SPEC instead of\n"
            "                   searching: a path that differs shows an edit of the spec\n"
            "  --fail-fast      stop running scenarios at the first that misbehaves\n\n"
            "exit status: 0 every reachable transition taken and every scenario as expected,\n"
            "1 otherwise, 2 bad usage, 3 the scenarios could not be written\n");
    return rc;
}

static int num(const char *v, long lo, long hi, long *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

static int tg_parse(int argc, char **argv, tg_opts *o)
{
    o->b.depth = 4;
    o->b.time_ms = 20000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, -1);
        if (!strcmp(a, "--run") || !strcmp(a, "--json") || !strcmp(a, "--fail-fast"))
            *(a[2] == 'r' ? &o->run : a[2] == 'j' ? &o->json : &o->fail_fast) = 1;
        else if (!strcmp(a, "--handlers") && i + 1 < argc) {
            if (strcmp(argv[++i], "builtin") != 0) {
                fprintf(stderr,
                        "agentc testgen: --handlers %s: the scenarios run through `agentc "
                        "run`, whose handlers are the built-in ones (--handlers builtin)\n",
                        argv[i]);
                return AC_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--tools") && i + 1 < argc) {
            if (!realpath(argv[++i], o->tools)) {
                fprintf(stderr, "agentc testgen: --tools %s: %s\n", argv[i], strerror(errno));
                return AC_EXIT_USAGE;
            }
            o->b.tools = o->tools;
        } else if ((!strcmp(a, "--out") || !strcmp(a, "--from")) && i + 1 < argc)
            *(a[2] == 'o' ? &o->out : &o->from) = argv[++i];
        else if (!strcmp(a, "--depth") && i + 1 < argc && !num(argv[i + 1], 0, 8, &n)) {
            o->b.depth = (int)n;
            i++;
        } else if (!strcmp(a, "--time-limit") && i + 1 < argc &&
                   !num(argv[i + 1], 1, 3600000, &n)) {
            o->b.time_ms = n;
            i++;
        } else if (a[0] == '-' || o->spec) {
            fprintf(stderr,
                    "agentc testgen: unexpected '%s' (--depth 0..8, --time-limit 1..3600000; "
                    "see agentc testgen --help)\n",
                    a);
            return AC_EXIT_USAGE;
        } else
            o->spec = a;
    }
    if (o->from && o->out) {
        fprintf(stderr, "agentc testgen: --from DIR runs the scenarios in DIR: no --out\n");
        return AC_EXIT_USAGE;
    }
    if (o->from)
        o->run = 1;
    if (!o->spec || (!o->out && !o->run))
        return usage(stderr, AC_EXIT_USAGE);
    return 0;
}

/* Why no scenario takes reachable row r. */
static const char *uncovered_reason(const tg_opts *o, const tg_search_stats *st)
{
    if (o->from)
        return "no scenario of the suite takes it";
    return st->bounded ? "beyond the search bound: no candidate within the depth and time "
                         "limits made its guard true there"
                       : "no candidate made its guard true there: the search ran out of "
                         "stimuli (a guard contradiction, or a fact no stimulus sets)";
}

static json_t *uncovered_json(const tg_opts *o, const ac_fsm_tables *t, const uint8_t *taken,
                              const char **why, const tg_search_stats *st)
{
    json_t *a = json_array();
    for (uint16_t r = 0; r < t->n_transitions; r++)
        if (ac_cov_counted(t, r) && !taken[r]) {
            json_t *x = ac_cov_transition_json(t, r);
            json_object_set_new(x, "reachable", json_boolean(!why[r]));
            json_object_set_new(x, "reason",
                                json_string(why[r] ? why[r] : uncovered_reason(o, st)));
            json_array_append_new(a, x);
        }
    return a;
}

/* "  machine From --event [guard]--> To  (line N): reason" */
static void print_uncovered(const json_t *x)
{
    const char *ev = json_string_value(json_object_get(x, "event"));
    const char *g = json_string_value(json_object_get(x, "guard"));
    printf("  %s %s --%s%s%s%s--> %s  (line %lld): %s\n",
           json_string_value(json_object_get(x, "machine")),
           json_string_value(json_object_get(x, "from")), ev && ev[0] ? ev : "(eventless)",
           g && g[0] ? " [" : "", g ? g : "", g && g[0] ? "]" : "",
           json_string_value(json_object_get(x, "to")),
           json_integer_value(json_object_get(x, "line")),
           json_string_value(json_object_get(x, "reason")));
}

typedef struct tally {
    unsigned total, reachable, covered, covered_reachable;
} tally;

static tally count(const ac_fsm_tables *t, const uint8_t *taken, const char **why)
{
    tally y = {0};
    for (uint16_t r = 0; r < t->n_transitions; r++)
        if (ac_cov_counted(t, r)) {
            y.total++;
            y.reachable += !why[r];
            y.covered += taken[r] != 0;
            y.covered_reachable += taken[r] && !why[r];
        }
    return y;
}

static void print_text(const tally *y, json_t *results, json_t *unc, const tg_search_stats *st,
                       int searched)
{
    size_t i;
    json_t *x;
    json_array_foreach(results, i, x)
    {
        const char *p = json_string_value(json_object_get(x, "problem"));
        printf("scenario %s %s (%lld new transitions: %s)%s%s\n",
               json_string_value(json_object_get(x, "name")), p ? "FAILED:" : "ok",
               json_integer_value(json_object_get(x, "new_transitions")),
               json_string_value(json_object_get(x, "builds")), p ? " " : "", p ? p : "");
    }
    if (searched)
        printf("search: %zu candidates over %zu stimuli in %lld ms%s\n", st->candidates,
               st->alphabet, (long long)st->ms, st->bounded ? " (stopped by its bound)" : "");
    printf("not taken by any scenario:\n");
    json_array_foreach(unc, i, x) print_uncovered(x);
    printf("reachable: %u of %u\n", y->reachable, y->total);
    printf("transitions: %u of %u taken (%.1f%%); of the reachable: %u of %u (%.1f%%)\n",
           y->covered, y->total, ac_cov_pct(y->covered, y->total), y->covered_reachable,
           y->reachable, ac_cov_pct(y->covered_reachable, y->reachable));
}

/* The report; 1 when a reachable transition was not taken or a scenario misbehaved. */
static int report(const tg_opts *o, const ac_fsm_tables *t, const uint8_t *taken, const char **why,
                  json_t *results, const tg_search_stats *st)
{
    tally y = count(t, taken, why);
    json_t *unc = uncovered_json(o, t, taken, why, st);
    int bad = y.covered_reachable < y.reachable;
    size_t i;
    json_t *x;
    json_array_foreach(results, i, x) bad |= json_object_get(x, "problem") != NULL;
    if (o->json) {
        json_t *j = json_pack("{s:i, s:i, s:i, s:i, s:O, s:O, s:{s:I, s:I, s:I, s:b}}", "total",
                              (int)y.total, "reachable", (int)y.reachable, "covered",
                              (int)y.covered, "covered_reachable", (int)y.covered_reachable,
                              "scenarios", results, "uncovered", unc, "search", "candidates",
                              (json_int_t)st->candidates, "alphabet", (json_int_t)st->alphabet,
                              "ms", (json_int_t)st->ms, "bounded", st->bounded);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
    } else
        print_text(&y, results, unc, st, !o->from);
    json_decref(unc);
    return bad;
}

/* Runs every scenario of s (written under out) and counts the rows their journals took into
 * taken. 0, or 1 when one misbehaved. results gets their JSON. */
static int run_all(const tg_opts *o, const ac_fsm_tables *t, const tg_suite *s, const char *out,
                   uint8_t *taken, json_t *results)
{
    ac_loop *loop = ac_loop_new();
    ac_cov c = {t, calloc((size_t)t->n_transitions + 1, sizeof(uint32_t)),
                calloc((size_t)t->n_states + 1, sizeof(uint32_t)), NULL};
    int rc = !loop || !c.tc || !c.sc ? -1 : 0;
    for (size_t i = 0; !rc && i < s->n; i++) {
        json_t *r = tg_run_scenario(loop, o->spec, &s->sc[i], out, &c);
        int bad = !r || json_object_get(r, "problem");
        json_array_append_new(results, r);
        if (bad && o->fail_fast)
            break;
    }
    memset(taken, 0, t->n_transitions);
    for (uint16_t r = 0; !rc && r < t->n_transitions; r++)
        taken[r] = c.tc[r] > 0;
    free(c.tc);
    free(c.sc);
    ac_loop_free(loop);
    return rc;
}

/* The suite: searched and written under *out (a temporary folder when none is given), or
 * read from --from. 0, or an exit status after saying why. */
static int make_suite(tg_opts *o, const ac_fsm_tables *t, tg_suite *s, uint8_t *taken,
                      tg_search_stats *st, char *tmp, size_t tmpcap)
{
    char err[512] = "";
    if (o->from) {
        if (tg_load(o->from, s, err, sizeof err) == 0)
            return 0;
        fprintf(stderr, "agentc testgen: %s\n", err);
        return AC_EXIT_CONFIG;
    }
    if (tg_search(o->spec, t, &o->b, s, taken, st, err, sizeof err) < 0) {
        fprintf(stderr, "agentc testgen: %s\n", err);
        return AC_EXIT_CONFIG;
    }
    if (!o->out) {
        const char *td = getenv("TMPDIR");
        snprintf(tmp, tmpcap, "%s/agentc-testgen-XXXXXX", td && td[0] ? td : "/tmp");
        o->out = mkdtemp(tmp);
        if (!o->out)
            tmp[0] = 0;
    } else if (mkdir(o->out, 0700) != 0 && errno != EEXIST)
        o->out = NULL;
    if (!o->out || tg_emit(s, o->out, err, sizeof err) < 0) {
        fprintf(stderr, "agentc testgen: %s\n", o->out ? err : strerror(errno));
        return AC_EXIT_CONFIG;
    }
    return 0;
}

int ac_cli_testgen(int argc, char **argv)
{
    tg_opts o;
    memset(&o, 0, sizeof o);
    int rc = tg_parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    ac_fsm_tables *t = ac_cli_tables_from_spec(o.spec);
    if (!t)
        return 1;
    const char **why = tg_unreachable(t);
    uint8_t *taken = calloc((size_t)t->n_transitions + 1, 1);
    json_t *results = json_array();
    tg_suite s = {0};
    tg_search_stats st = {0};
    char tmp[PATH_MAX] = "";
    if (!why || !taken || !results)
        rc = AC_EXIT_CONFIG;
    else
        rc = make_suite(&o, t, &s, taken, &st, tmp, sizeof tmp);
    if (!rc && o.run && run_all(&o, t, &s, o.from ? o.from : o.out, taken, results) < 0)
        rc = AC_EXIT_CONFIG;
    if (!rc && (o.run || o.json))
        rc = report(&o, t, taken, why, results, &st);
    else if (!rc)
        printf("%zu scenarios written to %s (search: %zu candidates in %lld ms)\n", s.n, o.out,
               st.candidates, (long long)st.ms);
    if (tmp[0])
        tg_remove(&s, tmp);
    tg_suite_free(&s);
    json_decref(results);
    free(taken);
    free(why);
    ac_spec_tables_free(t);
    return rc;
}
