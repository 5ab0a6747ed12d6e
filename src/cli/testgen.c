/*
 * testgen.c - `agentc testgen SPEC [--out DIR] [--run] [--json]`: scenarios that drive a spec
 * through the built-in handlers, each a scripted model's turns, the params and the tools it
 * needs, written to DIR; with --run each one runs twice through the real engine (`agentc run`
 * as a child process), its journal is replayed with --check, the two runs' steps must be
 * byte-identical, and the coverage of all of them is printed with each transition no scenario
 * took and why.
 *
 * The scenarios construct the inputs the guards of the shipped spec read: a retry class by HTTP
 * status (503, 429 with Retry-After), a failure that is not retryable, retries exhausted, an
 * iteration budget, tool calls ending a turn or not, an output schema refusing an answer, a
 * compaction threshold, the context tools. Each says how many transitions it took first.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "io/proc.h"
#include "session/journal.h"
#include "util/buf.h"

#define CALC(n)                                                                                    \
    "{\"id\": \"c" #n                                                                              \
    "\", \"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"2 * "                 \
    "3\\\"}\"}"
#define ANSWER "{\"content\": \"6\", \"usage\": {\"input\": 10, \"output\": 2}}"
#define EXPAND(n) "{\"id\": \"x" #n "\", \"name\": \"expand_context\", \"arguments\": \"{}\"}"
#define LOAD(n)                                                                                    \
    "{\"id\": \"l" #n                                                                              \
    "\", \"name\": \"load_tool_calls\", \"arguments\": \"{\\\"ids\\\": [\\\"x1\\\"]}\"}"
#define E503 "{\"error\": {\"status\": 503, \"message\": \"unavailable\", \"retryable\": true}}"

typedef struct scenario {
    const char *name, *builds; /* what inputs it constructs */
    const char *script;        /* the model's turns, JSON Lines */
    const char *params[4];
    const char *schema; /* an output schema, NULL: none */
    const char *tools;  /* more tools than builtin:calculator, NULL: none */
} scenario;

static const scenario scenarios[] = {
    {"answer", "one answer, no tool", ANSWER "\n", {0}, NULL, NULL},
    {"tool_call",
     "a tool call, then the answer",
     "{\"tool_calls\": [" CALC(1) "]}\n" ANSWER "\n",
     {0},
     NULL,
     NULL},
    {"two_calls",
     "two tool calls in one answer (the first result is not the last)",
     "{\"tool_calls\": [" CALC(1) ", " CALC(2) "]}\n" ANSWER "\n",
     {0},
     NULL,
     NULL},
    {"retry_503",
     "HTTP 503 (retryable), then the answer",
     E503 "\n" ANSWER "\n",
     {"backoff_initial=1ms", "backoff_max=5ms"},
     NULL,
     NULL},
    {"retry_429",
     "HTTP 429 with Retry-After, then the answer",
     "{\"error\": {\"status\": 429, \"message\": \"slow down\", \"retryable\": true, "
     "\"retry_after_ms\": 5}}\n" ANSWER "\n",
     {"backoff_initial=1ms", "backoff_max=5ms"},
     NULL,
     NULL},
    {"partial_retry",
     "a streamed part, then HTTP 503 (retryable)",
     "{\"error\": {\"status\": 503, \"message\": \"cut\", \"retryable\": true, \"partial\": "
     "\"half \"}}\n" ANSWER "\n",
     {"backoff_initial=1ms", "backoff_max=5ms"},
     NULL,
     NULL},
    {"fatal_400",
     "HTTP 400 (not retryable)",
     "{\"error\": {\"status\": 400, \"message\": \"bad request\", \"retryable\": false}}\n",
     {0},
     NULL,
     NULL},
    {"partial_fatal",
     "a streamed part, then a failure that is not retryable",
     "{\"error\": {\"status\": 400, \"message\": \"cut\", \"retryable\": false, \"partial\": "
     "\"half \"}}\n",
     {0},
     NULL,
     NULL},
    {"retries_exhausted",
     "HTTP 503 past max_retries",
     E503 "\n" E503 "\n",
     {"max_retries=1", "backoff_initial=1ms", "backoff_max=5ms"},
     NULL,
     NULL},
    {"iteration_budget",
     "tool calls past max_iterations",
     "{\"tool_calls\": [" CALC(1) "]}\n{\"tool_calls\": [" CALC(2) "]}\n" ANSWER "\n",
     {"max_iterations=1"},
     NULL,
     NULL},
    {"compaction",
     "a request over compact_threshold",
     "{\"tool_calls\": [" CALC(1) "]}\n{\"content\": \"summary\"}\n" ANSWER "\n" ANSWER "\n",
     {"compact_threshold=1", "compaction_keep=0"},
     NULL,
     NULL},
    {"schema_reject",
     "an answer the output schema refuses, then one it takes",
     "{\"content\": \"not json\"}\n{\"content\": \"{\\\"n\\\": 6}\"}\n",
     {0},
     "{\"type\": \"object\", \"required\": [\"n\"]}",
     NULL},
    {"schema_fail",
     "answers the output schema refuses past output_retries",
     "{\"content\": \"no\"}\n{\"content\": \"no\"}\n",
     {"output_retries=1"},
     "{\"type\": \"object\", \"required\": [\"n\"]}",
     NULL},
    {"context_tools",
     "the context tools, each as the last call of an answer and not",
     "{\"tool_calls\": [" EXPAND(1) ", " LOAD(1) "]}\n{\"tool_calls\": [" LOAD(2) ", " EXPAND(
         2) "]}\n" ANSWER "\n",
     {0},
     NULL,
     "builtin:context"},
};
#define N_SCENARIOS (sizeof scenarios / sizeof scenarios[0])

/* Events only the outside or the engine's own API sends: no scripted run posts them. */
static const char *const outside_events[] = {"pause",        "resume",      "cancel",
                                             "close",        "ping",        "tools.changed",
                                             "rollback",     "turn.cancel", "inactivity_timeout",
                                             "user_message", "spawn",       NULL};

static int write_file(const char *dir, const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}

/* The scenario's folder: script.jsonl, schema.json, and argv (the run's options, one a line).
 * 0, or -1 with err filled. */
static int write_scenario(const scenario *sc, const char *out, char *dir, size_t cap, char *err,
                          size_t errcap)
{
    char p[PATH_MAX];
    snprintf(dir, cap, "%s/%s", out, sc->name);
    if ((mkdir(dir, 0700) != 0 && errno != EEXIST) ||
        write_file(dir, "script.jsonl", sc->script, p, sizeof p) != 0 ||
        (sc->schema && write_file(dir, "schema.json", sc->schema, p, sizeof p) != 0)) {
        snprintf(err, errcap, "cannot write %s: %s", dir, strerror(errno));
        return -1;
    }
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_printf(&b,
                  "# %s\n--provider\nscript\n--script\nscript.jsonl\n--tools\n"
                  "builtin:calculator\n",
                  sc->builds);
    if (sc->tools)
        ac_buf_printf(&b, "--tools\n%s\n", sc->tools);
    for (int i = 0; i < 4 && sc->params[i]; i++)
        ac_buf_printf(&b, "--param\n%s\n", sc->params[i]);
    if (sc->schema)
        ac_buf_printf(&b, "--output-schema\nschema.json\n");
    int rc = b.failed ? -1 : write_file(dir, "args", b.p, p, sizeof p);
    ac_buf_free(&b);
    if (rc)
        snprintf(err, errcap, "cannot write %s/args", dir);
    return rc;
}

#define RUN_LIMIT_MS 10000

typedef struct child {
    ac_loop *loop;
    int done, code;
    char err[512];
} child;

static void child_done(void *ud, const ac_proc_result *r)
{
    child *c = ud;
    c->done = 1;
    c->code = r->timed_out ? -2 : r->exited ? r->exit_code : -1;
    snprintf(c->err, sizeof c->err, "%.*s", (int)(r->err_len < 400 ? r->err_len : 400),
             r->err_tail ? r->err_tail : "");
    ac_loop_stop(c->loop);
}

/* Runs argv to its end on loop: its exit status, -1 when it did not exit, -2 when it ran
 * longer than RUN_LIMIT_MS (a scripted run takes milliseconds; a spec that loops does not end). */
static int run_child(ac_loop *loop, const char *const *argv, char *err, size_t errcap)
{
    child c = {.loop = loop};
    ac_proc_spec spec = {.argv = argv, .timeout_ms = RUN_LIMIT_MS};
    if (!ac_proc_spawn(loop, &spec, child_done, &c, err, errcap))
        return -1;
    while (!c.done)
        ac_loop_run(loop);
    snprintf(err, errcap, "%s", c.err);
    return c.code;
}

/* The steps lines of a journal, in order (one text). NULL when unreadable. */
static char *steps_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    char line[65536];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "{\"steps\"", 8))
            ac_buf_printf(&b, "%s", line);
    fclose(f);
    if (b.failed) {
        ac_buf_free(&b);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}

typedef struct tg_opts {
    const char *spec, *out;
    int run, json;
} tg_opts;

/* One run of the scenario in dir into journal; the child's exit status (0 completed, 1 the
 * agent failed: both runs), or -1. */
static int run_scenario(ac_loop *loop, const tg_opts *o, const scenario *sc, const char *dir,
                        const char *journal, char *err, size_t errcap)
{
    char script[PATH_MAX], schema[PATH_MAX], exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    snprintf(script, sizeof script, "%s/script.jsonl", dir);
    snprintf(schema, sizeof schema, "%s/schema.json", dir);
    const char *argv[32] = {exe,
                            "run",
                            "--no-store",
                            "--spec",
                            o->spec,
                            "--provider",
                            "script",
                            "--script",
                            script,
                            "--tools",
                            "builtin:calculator",
                            "--journal",
                            journal};
    int k = 13;
    if (sc->tools) {
        argv[k++] = "--tools";
        argv[k++] = sc->tools;
    }
    for (int i = 0; i < 4 && sc->params[i]; i++) {
        argv[k++] = "--param";
        argv[k++] = sc->params[i];
    }
    if (sc->schema) {
        argv[k++] = "--output-schema";
        argv[k++] = schema;
    }
    argv[k++] = "compute 2 * 3";
    argv[k] = NULL;
    return run_child(loop, argv, err, errcap);
}

/* Runs sc twice and replays the first journal; adds it to c. A JSON result of the scenario. */
static json_t *check_scenario(ac_loop *loop, const tg_opts *o, const scenario *sc, const char *dir,
                              ac_cov *c)
{
    char j1[PATH_MAX], j2[PATH_MAX], exe[PATH_MAX], err[512] = "";
    snprintf(j1, sizeof j1, "%s/run1.journal", dir);
    snprintf(j2, sizeof j2, "%s/run2.journal", dir);
    unlink(j1);
    unlink(j2);
    const char *problem = NULL;
    int r1 = run_scenario(loop, o, sc, dir, j1, err, sizeof err);
    int r2 = r1 == 0 || r1 == 1 ? run_scenario(loop, o, sc, dir, j2, err, sizeof err) : -1;
    char *s1 = steps_text(j1), *s2 = steps_text(j2);
    if (r1 == -2)
        problem = "did not end within 10 s";
    else if ((r1 != 0 && r1 != 1) || !s1)
        problem = "did not run";
    else if (r2 != r1 || !s2 || strcmp(s1, s2) != 0)
        problem = "a second run took another path";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    const char *rargv[] = {exe, "replay", j1, "--spec", o->spec, "--check", NULL};
    if (!problem && run_child(loop, rargv, err, sizeof err) != 0)
        problem = "replay --check diverged";
    char p[PATH_MAX];
    if (s1)
        write_file(dir, "expected.steps", s1, p, sizeof p);
    size_t before = 0, after = 0;
    for (uint16_t r = 0; r < c->t->n_transitions; r++)
        before += c->tc[r] > 0;
    char cerr[256];
    if (!problem && ac_cov_journal(c, j1, cerr, sizeof cerr) != 0)
        problem = "the journal does not read";
    for (uint16_t r = 0; r < c->t->n_transitions; r++)
        after += c->tc[r] > 0;
    free(s1);
    free(s2);
    return json_pack("{s:s, s:s, s:i, s:i, s:s*, s:s*}", "name", sc->name, "builds", sc->builds,
                     "exit", r1, "new_transitions", (int)(after - before), "problem", problem,
                     "stderr", problem ? err : NULL);
}

/* Why no scenario takes row r. */
static const char *uncovered_reason(const ac_fsm_tables *t, uint16_t r)
{
    const char *ev = t->transitions[r].event ? t->event_names[t->transitions[r].event] : "";
    char g[512];
    ac_journal_guard_text(t, t->transitions[r].guard, g, sizeof g);
    if (strstr(g, "has_queued_message"))
        return "needs a message queued from outside while a turn runs (serve, the embedding API)";
    for (int i = 0; outside_events[i]; i++)
        if (!strcmp(ev, outside_events[i]))
            return "its event is sent from outside a run (serve, the embedding API): no "
                   "generated scenario sends it";
    return "beyond the search bound: no scenario of the library constructs its inputs";
}

static json_t *uncovered_json(const ac_cov *c)
{
    json_t *a = json_array();
    for (uint16_t r = 0; r < c->t->n_transitions; r++)
        if (ac_cov_counted(c->t, r) && !c->tc[r]) {
            json_t *o = ac_cov_transition_json(c->t, r);
            json_object_set_new(o, "reason", json_string(uncovered_reason(c->t, r)));
            json_array_append_new(a, o);
        }
    return a;
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: agentc testgen SPEC [--out DIR] [--run] [--json]\n\n"
               "Writes scenarios that drive SPEC through the built-in handlers into DIR, one\n"
               "folder each: the scripted model's turns (script.jsonl), an output schema when it\n"
               "needs one, and the options of its run (args). --run (into a temporary folder\n"
               "without --out) runs each twice with `agentc run`, replays the first journal\n"
               "(`agentc replay --check`), requires the two runs' steps to be byte-identical\n"
               "(expected.steps), and prints the coverage and every transition no scenario took, "
               "with the reason.\n"
               "--json: {total, covered, scenarios, uncovered: [TRANSITION + reason]}. Exit 1\n"
               "when a scenario did not behave.\n");
    return rc;
}

static int tg_parse(int argc, char **argv, tg_opts *o)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout, -1);
        if (!strcmp(argv[i], "--run"))
            o->run = 1;
        else if (!strcmp(argv[i], "--json"))
            o->json = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            o->out = argv[++i];
        else if (argv[i][0] == '-' || o->spec) {
            fprintf(stderr, "agentc testgen: unexpected '%s' (see agentc testgen --help)\n",
                    argv[i]);
            return AC_EXIT_USAGE;
        } else
            o->spec = argv[i];
    }
    if (!o->spec || (!o->out && !o->run))
        return usage(stderr, AC_EXIT_USAGE);
    return 0;
}

/* Removes what testgen wrote under out (a temporary folder). */
static void remove_tree(const char *out)
{
    static const char *const files[] = {"script.jsonl",   "schema.json",  "args",
                                        "expected.steps", "run1.journal", "run2.journal"};
    char p[PATH_MAX];
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
            snprintf(p, sizeof p, "%s/%s/%s", out, scenarios[i].name, files[k]);
            unlink(p);
        }
        snprintf(p, sizeof p, "%s/%s", out, scenarios[i].name);
        rmdir(p);
    }
    rmdir(out);
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

static void print_report(const tg_opts *o, const ac_cov *c, json_t *results)
{
    unsigned n, m;
    ac_cov_tally(c, -1, &n, &m);
    json_t *unc = uncovered_json(c);
    if (o->json) {
        json_t *j = json_pack("{s:i, s:i, s:O, s:O}", "total", (int)m, "covered", (int)n,
                              "scenarios", results, "uncovered", unc);
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(j);
        json_decref(unc);
        return;
    }
    size_t i;
    json_t *x;
    json_array_foreach(results, i, x)
    {
        const char *p = json_string_value(json_object_get(x, "problem"));
        printf("scenario %-18s %s (%lld new transitions)%s%s\n",
               json_string_value(json_object_get(x, "name")), p ? "FAILED:" : "ok",
               json_integer_value(json_object_get(x, "new_transitions")), p ? " " : "", p ? p : "");
    }
    printf("not taken by any scenario:\n");
    json_array_foreach(unc, i, x) print_uncovered(x);
    printf("transitions: %u of %u taken (%.1f%%)\n", n, m, ac_cov_pct(n, m));
    json_decref(unc);
}

/* Runs every scenario written under o->out. 0, or 1 when one did not behave. */
static int run_all(const tg_opts *o, ac_fsm_tables *t)
{
    ac_loop *loop = ac_loop_new();
    ac_cov c = {t, calloc((size_t)t->n_transitions + 1, sizeof(uint32_t)),
                calloc((size_t)t->n_states + 1, sizeof(uint32_t)), NULL};
    json_t *results = json_array();
    int rc = 0;
    if (!loop || !c.tc || !c.sc || !results) {
        fprintf(stderr, "agentc testgen: out of memory\n");
        rc = AC_EXIT_CONFIG;
    }
    for (size_t i = 0; rc != AC_EXIT_CONFIG && i < N_SCENARIOS; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", o->out, scenarios[i].name);
        json_t *r = check_scenario(loop, o, &scenarios[i], dir, &c);
        if (r && json_object_get(r, "problem"))
            rc = 1;
        json_array_append_new(results, r);
    }
    if (rc != AC_EXIT_CONFIG)
        print_report(o, &c, results);
    json_decref(results);
    free(c.tc);
    free(c.sc);
    ac_loop_free(loop);
    return rc;
}

int ac_cli_testgen(int argc, char **argv)
{
    tg_opts o = {0};
    int rc = tg_parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    ac_fsm_tables *t = ac_cli_tables_from_spec(o.spec);
    if (!t)
        return 1;
    char tmp[PATH_MAX] = "";
    if (!o.out) {
        const char *td = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/agentc-testgen-XXXXXX", td && td[0] ? td : "/tmp");
        o.out = mkdtemp(tmp);
    } else if (mkdir(o.out, 0700) != 0 && errno != EEXIST)
        o.out = NULL;
    char err[512] = "";
    for (size_t i = 0; o.out && i < N_SCENARIOS && !err[0]; i++) {
        char dir[PATH_MAX];
        write_scenario(&scenarios[i], o.out, dir, sizeof dir, err, sizeof err);
    }
    if (!o.out || err[0]) {
        fprintf(stderr, "agentc testgen: %s\n", o.out ? err : strerror(errno));
        rc = AC_EXIT_CONFIG;
    } else if (o.run)
        rc = run_all(&o, t);
    else
        printf("%zu scenarios written to %s\n", N_SCENARIOS, o.out);
    if (tmp[0] && o.out)
        remove_tree(o.out);
    ac_spec_tables_free(t);
    return rc;
}
