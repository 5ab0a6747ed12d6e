/*
 * test_replay_output.c - ac_session_replay reports what the run reported: every output
 * callback a run fires (scripted model, real loop, real tools, journal on disk) is recorded
 * with its arguments, the run's journal is replayed on an engine with no loop, and the two
 * records must be equal, name for name and argument for argument, in the same order. The
 * callbacks agentc.h marks RUN ONLY (retry) are the only difference allowed, and only where
 * the run fired them. Specs: the shipped one (the demo's turns, parallel calls) and gallery
 * specs (approve_tools, retry_429).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "io/loop.h"
#include "spec.h"

static char tmpdir[256];
static const char *agentc_bin; /* the agentc command (argv[1]) */

/* ---- the record: one JSON array per callback, [name, arguments...] ---- */

static void rec(void *ud, json_t *entry)
{
    assert_non_null(entry);
    assert_int_equal(json_array_append_new((json_t *)ud, entry), 0);
}

static void o_text(void *ud, ac_session *s, const char *d, size_t n)
{
    (void)s;
    rec(ud, json_pack("[s, s%]", "text", d, n));
}

static void o_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    (void)s;
    rec(ud, json_pack("[s, s%]", "reasoning", d, n));
}

static void o_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                         const char *args)
{
    (void)s;
    rec(ud, json_pack("[s, s, s, s]", "tool_start", id, name, args));
}

static void o_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                       const char *content, int64_t ms)
{
    (void)s;
    rec(ud, json_pack("[s, s, s, b, s, I]", "tool_end", id, name, ok, content, (json_int_t)ms));
}

static void o_retry(void *ud, ac_session *s, int attempt, int64_t delay, const char *reason)
{
    (void)s;
    rec(ud, json_pack("[s, i, I, s]", "retry", attempt, (json_int_t)delay, reason));
}

static void o_discarded(void *ud, ac_session *s, size_t len)
{
    (void)s;
    rec(ud, json_pack("[s, I]", "discarded", (json_int_t)len));
}

static void o_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    (void)s;
    rec(ud,
        json_pack("[s, s, I, I]", "compacted", strategy, (json_int_t)before, (json_int_t)after));
}

static void o_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    (void)s;
    rec(ud, json_pack("[s, i, i, i, i, i, i]", "trace", r->kind, r->machine, r->from, r->to,
                      r->event, r->line));
}

static void o_finished(void *ud, ac_session *s)
{
    (void)s;
    rec(ud, json_pack("[s]", "finished"));
}

static void o_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    (void)s;
    rec(ud, json_pack("[s, i, s]", "rejected", attempt, errors));
}

static void o_progress(void *ud, ac_session *s, const char *id, double p, double total,
                       const char *msg)
{
    (void)s;
    rec(ud, json_pack("[s, s, f, f, s?]", "tool_progress", id, p, total, msg));
}

static ac_output recorder(json_t *log)
{
    ac_output o = {log,         o_text,      o_reasoning, o_tool_start, o_tool_end, o_retry,
                   o_discarded, o_compacted, o_trace,     o_finished,   o_rejected, o_progress};
    return o;
}

/* ---- a run, and the replay of its journal ---- */

typedef struct scenario {
    const char *name;
    const char *spec;  /* a gallery spec, or NULL for the shipped one */
    const char *turns; /* the scripted model's turns */
    const char *const *params;
    const char *outside; /* posted each time the session waits for the outside, or NULL */
} scenario;

static ac_engine *engine(const scenario *sc, const ac_fsm_tables *t, ac_loop *loop,
                         const ac_output *out)
{
    ac_engine_config cfg = {0};
    cfg.loop = loop;
    cfg.tables = t;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = sc->turns;
    cfg.params = sc->params;
    cfg.seed = 7;
    cfg.output = out;
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e)
        fail_msg("engine: %s", err.text);
    if (ac_engine_add_tools(e, "builtin:calculator", &err) != 0)
        fail_msg("tools: %s", err.text);
    return e;
}

/* Runs one user message to the end (bounded), answering the outside as the scenario says. */
static void run(const scenario *sc, const ac_fsm_tables *t, const char *journal, json_t *log)
{
    ac_loop *loop = ac_loop_new();
    assert_non_null(loop);
    ac_output out = recorder(log);
    ac_engine *e = engine(sc, t, loop, &out);
    ac_error err = {0};
    ac_session *s = ac_session_new(e, sc->name, journal, &err);
    if (!s)
        fail_msg("session: %s", err.text);
    assert_int_equal(ac_session_send(s, "What is 17 * 23, plus 19?"), AC_OK);
    int i;
    for (i = 0; i < 4000 && ac_session_status(s) == AC_SESSION_RUNNING; i++) {
        if (sc->outside && ac_session_wait_state(s, NULL) == AC_WAIT_OUTSIDE)
            assert_true(ac_session_post(s, sc->outside, NULL, 0) >= 0);
        ac_loop_run_once(loop, 10);
    }
    assert_true(i < 4000);
    assert_int_equal(ac_session_status(s), AC_SESSION_IDLE);
    ac_session_free(s);
    ac_engine_free(e);
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_loop_free(loop);
}

static void replay(const scenario *sc, const ac_fsm_tables *t, const char *journal, json_t *log)
{
    ac_output out = recorder(log);
    ac_engine *e = engine(sc, t, NULL, &out);
    ac_replay_result res;
    int rc = ac_session_replay(e, journal, AC_REPLAY_CHECK, &res, NULL);
    if (rc != AC_REPLAY_MATCH)
        fail_msg("replay of %s: %d %s (event %zu %s)", journal, rc, res.error, res.event,
                 res.event_name);
    ac_engine_free(e);
}

static size_t count(const json_t *log, const char *name)
{
    size_t i, n = 0;
    json_t *v;
    json_array_foreach(log, i, v) n += strcmp(json_string_value(json_array_get(v, 0)), name) == 0;
    return n;
}

/* The log without the RUN ONLY callbacks (agentc.h): retry. */
static json_t *without_run_only(const json_t *log)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(log, i, v) if (strcmp(json_string_value(json_array_get(v, 0)), "retry"))
        json_array_append(out, v);
    return out;
}

/* Runs the scenario, replays its journal, checks the records are equal but for RUN ONLY
 * callbacks, and returns the run's record (the caller checks what it must hold). */
static json_t *run_and_replay(const scenario *sc)
{
    ac_fsm_tables *t = NULL;
    if (sc->spec) {
        ac_spec *spec = ac_spec_load(sc->spec);
        assert_non_null(spec);
        if (spec->n_errors == 0)
            ac_spec_check(spec);
        assert_int_equal(spec->n_errors, 0);
        t = ac_spec_lower(spec, sc->spec);
        assert_non_null(t);
        ac_spec_free(spec);
    }
    char journal[512];
    snprintf(journal, sizeof journal, "%s/%s.journal", tmpdir, sc->name);
    json_t *live = json_array(), *replayed = json_array();
    run(sc, t, journal, live);
    replay(sc, t, journal, replayed);
    json_t *comparable = without_run_only(live);
    char *a = json_dumps(comparable, JSON_COMPACT), *b = json_dumps(replayed, JSON_COMPACT);
    if (!json_equal(comparable, replayed))
        fail_msg("%s: the run reported\n%s\nthe replay reported\n%s", sc->name, a, b);
    free(a);
    free(b);
    json_decref(comparable);
    json_decref(replayed);
    ac_spec_tables_free(t);
    return live;
}

/* The demo's turns (agentc demo): a reasoning, a text, two rounds of one calculator call. */
static const char demo_turns[] =
    "{\"reasoning\": \"The user wants 17 * 23 and then that plus 19. I will use the calculator "
    "for both.\", \"content\": \"Let me work that out.\", \"tool_calls\": [{\"id\": \"call_1\", "
    "\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"17 * 23\\\"}\"}], "
    "\"usage\": {\"input\": 120, \"output\": 32}}\n"
    "{\"content\": \"\", \"tool_calls\": [{\"id\": \"call_2\", \"name\": \"calculator\", "
    "\"arguments\": \"{\\\"expression\\\": \\\"391 + 19\\\"}\"}], \"usage\": {\"input\": 170, "
    "\"output\": 20}}\n"
    "{\"content\": \"17 x 23 = 391, and 391 + 19 = 410.\", \"usage\": {\"input\": 210, "
    "\"output\": 40}}\n";

/* tool_start precedes tool_end for each id, and each id has one of each. */
static void assert_tools_paired(const json_t *log, size_t calls)
{
    assert_int_equal(count(log, "tool_start"), calls);
    assert_int_equal(count(log, "tool_end"), calls);
    size_t i;
    json_t *v;
    json_array_foreach(log, i, v)
    {
        if (strcmp(json_string_value(json_array_get(v, 0)), "tool_end"))
            continue;
        const char *id = json_string_value(json_array_get(v, 1));
        int started = 0;
        for (size_t k = 0; k < i; k++) {
            json_t *w = json_array_get(log, k);
            started |= !strcmp(json_string_value(json_array_get(w, 0)), "tool_start") &&
                       !strcmp(json_string_value(json_array_get(w, 1)), id);
        }
        if (!started)
            fail_msg("tool_end of %s with no tool_start before it", id);
    }
}

static void test_demo(void **state)
{
    (void)state;
    scenario sc = {"demo", NULL, demo_turns, NULL, NULL};
    json_t *live = run_and_replay(&sc);
    assert_tools_paired(live, 2);
    assert_int_equal(count(live, "reasoning") > 0, 1);
    assert_int_equal(count(live, "finished"), 1);
    json_t *first = json_array_get(live, 0);
    assert_string_equal(json_string_value(json_array_get(first, 0)), "trace");
    json_decref(live);
}

/* Three calls in one round, one at a time: the round's starts come first, in the model's
 * order, in the run as in the replay. */
static void test_parallel_calls(void **state)
{
    (void)state;
    static const char turns[] =
        "{\"tool_calls\": [{\"id\": \"a\", \"name\": \"calculator\", \"arguments\": "
        "\"{\\\"expression\\\": \\\"1 + 1\\\"}\"}, {\"id\": \"b\", \"name\": \"calculator\", "
        "\"arguments\": \"{\\\"expression\\\": \\\"2 + 2\\\"}\"}, {\"id\": \"c\", \"name\": "
        "\"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"3 + 3\\\"}\"}]}\n"
        "{\"content\": \"2, 4, 6\"}\n";
    static const char *const params[] = {"max_parallel_tools=1", NULL};
    scenario sc = {"parallel", NULL, turns, params, NULL};
    json_t *live = run_and_replay(&sc);
    assert_tools_paired(live, 3);
    const char *order[6];
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(live, i, v)
    {
        const char *what = json_string_value(json_array_get(v, 0));
        if (n < 6 && (!strcmp(what, "tool_start") || !strcmp(what, "tool_end")))
            order[n++] = json_string_value(json_array_get(v, 1));
    }
    assert_int_equal(n, 6);
    assert_string_equal(order[0], "a");
    assert_string_equal(order[1], "b");
    assert_string_equal(order[2], "c");
    assert_string_equal(order[3], "a");
    json_decref(live);
}

/* An entry of the record as `agentc --jsonl` prints the same callback, or NULL for the
 * callbacks it prints otherwise or not at all (trace, finished). */
static json_t *as_cli(const json_t *v)
{
    const char *what = json_string_value(json_array_get(v, 0));
    if (!strcmp(what, "text") || !strcmp(what, "reasoning") || !strcmp(what, "discarded") ||
        !strcmp(what, "tool_start"))
        return json_deep_copy(v);
    if (!strcmp(what, "tool_end")) /* id, ok, content */
        return json_pack("[s, O, O, O]", what, json_array_get(v, 1), json_array_get(v, 3),
                         json_array_get(v, 4));
    return NULL;
}

/* A line of `agentc --jsonl` in the record's form, or NULL for the other lines. */
static json_t *from_cli(const json_t *o)
{
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!type)
        return NULL;
    if (!strcmp(type, "text") || !strcmp(type, "reasoning"))
        return json_pack("[s, O]", type, json_object_get(o, "delta"));
    if (!strcmp(type, "discarded"))
        return json_pack("[s, O]", type, json_object_get(o, "bytes"));
    if (!strcmp(type, "tool_call"))
        return json_pack("[s, O, O, O]", "tool_start", json_object_get(o, "id"),
                         json_object_get(o, "name"), json_object_get(o, "arguments"));
    if (!strcmp(type, "tool_result"))
        return json_pack("[s, O, O, O]", "tool_end", json_object_get(o, "id"),
                         json_object_get(o, "ok"), json_object_get(o, "content"));
    return NULL;
}

/* The demo itself: what `agentc demo --jsonl` reported equals what ac_session_replay of its
 * journal reports (text, reasoning, tool calls and results, in order). */
static void test_cli_demo(void **state)
{
    (void)state;
    if (!agentc_bin)
        skip();
    char journal[512], cmd[1400];
    snprintf(journal, sizeof journal, "%s/cli_demo.journal", tmpdir);
    snprintf(cmd, sizeof cmd, "timeout 60 '%s' demo --jsonl --journal '%s' 2>/dev/null", agentc_bin,
             journal);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_t *cli = json_array(), *replayed = json_array(), *line;
    json_error_t je;
    while ((line = json_loadf(p, JSON_DISABLE_EOF_CHECK, &je)) != NULL) {
        json_t *v = from_cli(line);
        if (v)
            json_array_append_new(cli, v);
        json_decref(line);
    }
    assert_int_equal(pclose(p), 0);
    scenario sc = {"cli_demo", NULL, "", NULL, NULL};
    replay(&sc, NULL, journal, replayed);
    json_t *mapped = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(replayed, i, v)
    {
        json_t *m = as_cli(v);
        if (m)
            json_array_append_new(mapped, m);
    }
    char *a = json_dumps(cli, JSON_COMPACT), *b = json_dumps(mapped, JSON_COMPACT);
    if (!json_equal(cli, mapped))
        fail_msg("agentc demo printed\n%s\nits replay reported\n%s", a, b);
    free(a);
    free(b);
    assert_int_equal(count(cli, "tool_start"), 2);
    assert_int_equal(count(cli, "tool_end"), 2);
    json_decref(cli);
    json_decref(replayed);
    json_decref(mapped);
}

/* approve_tools: the calls start only once approved; a denied call ends without starting. */
static void test_gallery_approve(void **state)
{
    (void)state;
    static const char turns[] =
        "{\"content\": \"Asking.\", \"tool_calls\": [{\"id\": \"k1\", \"name\": \"calculator\", "
        "\"arguments\": \"{\\\"expression\\\": \\\"17 * 23\\\"}\"}]}\n"
        "{\"content\": \"391.\"}\n";
    scenario approve = {"approve", "examples/specs/approve_tools.fsm", turns, NULL, "approve"};
    json_t *live = run_and_replay(&approve);
    assert_tools_paired(live, 1);
    json_decref(live);
    scenario deny = {"deny", "examples/specs/approve_tools.fsm", turns, NULL, "deny"};
    live = run_and_replay(&deny);
    assert_int_equal(count(live, "tool_start"), 0);
    assert_int_equal(count(live, "tool_end"), 1);
    json_decref(live);
}

/* retry_429: a 429 after a partial answer, then the answer. The run reports the retry (RUN
 * ONLY); the discarded partial answer is reported in both. */
static void test_gallery_retry(void **state)
{
    (void)state;
    static const char turns[] =
        "{\"error\": {\"status\": 429, \"message\": \"slow down\", \"retryable\": true, "
        "\"partial\": \"HALF-ANSWER \"}}\n"
        "{\"content\": \"FULL ANSWER\"}\n";
    static const char *const params[] = {"rate_limit_backoff=10ms", NULL};
    scenario sc = {"retry429", "examples/specs/retry_429.fsm", turns, params, NULL};
    json_t *live = run_and_replay(&sc);
    assert_int_equal(count(live, "retry"), 1);
    assert_int_equal(count(live, "discarded"), 1);
    json_decref(live);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/agentc_replay_out_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    agentc_bin = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo),           cmocka_unit_test(test_cli_demo),
        cmocka_unit_test(test_parallel_calls), cmocka_unit_test(test_gallery_approve),
        cmocka_unit_test(test_gallery_retry),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
