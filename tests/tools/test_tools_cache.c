/*
 * test_tools_cache.c - the tool-result cache through a real engine on a real
 * loop (scripted provider): tools are child processes that append a line to
 * a ledger each time they really run, so a hit is seen to skip the process.
 * Canonical keys, a failed call never cached, TTL expiry, session and engine
 * scopes (two sessions on one engine, as serve runs them), toolkit contexts
 * in the key, a callback tool cached through the API, the metrics, eviction,
 * and a journal with hits replayed exactly.
 */
#include "journal_replay.h"
#include "session_rig.h"

#include "agentc/metrics.h"
#include "agentc/otel.h"
#include "test_httpd.h"

static char tools_path[512];

/* The tool file: lookup (session scope), shared (engine scope), flaky (fails on its first
 * run), nap (not cached), tiny (max_entries 1), brief (ttl 1s), and a toolkit kb whose find
 * is keyed by the context that set_lang changes. */
static void write_tools(void)
{
    char text[8192];
    const char *run = "cat > \\\"$D/args.$AGENTC_TOOL_CALL_ID\\\"; echo \\\"$AGENTC_TOOL_NAME "
                      "$AGENTC_SESSION_ID $AGENTC_TOOL_CALL_ID\\\" >> \\\"$D/ledger\\\"; ";
    snprintf(
        text, sizeof text,
        "{\"toolkits\": [{\"prefix\": \"kb\", \"context\": {\"lang\": \"en\"},"
        "  \"tools\": [{\"name\": \"find\", \"description\": \"d\", \"idempotent\": true,"
        "    \"cache\": {\"ttl\": \"10m\"}, \"env\": {\"D\": \"%s\"},"
        "    \"command\": [\"sh\", \"-c\", \"%secho found-$AGENTC_CONTEXT\"]},"
        "   {\"name\": \"set_lang\", \"description\": \"d\", \"updates_context\": true,"
        "    \"command\": [\"sh\", \"-c\", \"cat >/dev/null; echo '{\\\"result\\\": \\\"ok\\\", "
        "\\\"context\\\": {\\\"lang\\\": \\\"fr\\\"}}'\"]}]}],"
        " \"state\": {\"initial\": {\"city\": \"paris\"}},"
        " \"tools\": ["
        "  {\"name\": \"weather\", \"description\": \"d\", \"idempotent\": true, \"cache\": {},"
        "   \"env\": {\"D\": \"%s\"}, \"command\": [\"sh\", \"-c\", \"%scat "
        "\\\"$D/args.$AGENTC_TOOL_CALL_ID\\\"\"]},"
        "  {\"name\": \"move\", \"description\": \"d\", \"command\": [\"sh\", \"-c\", "
        "\"cat >/dev/null; echo rome\"]},"
        "  {\"name\": \"lookup\", \"description\": \"d\", \"idempotent\": true,"
        "   \"cache\": {\"ttl\": \"10m\", \"scope\": \"session\"}, \"env\": {\"D\": \"%s\"},"
        "   \"command\": [\"sh\", \"-c\", \"%secho value-$AGENTC_TOOL_CALL_ID\"]},"
        "  {\"name\": \"shared\", \"description\": \"d\", \"idempotent\": true,"
        "   \"cache\": {\"ttl\": \"10m\", \"scope\": \"engine\"}, \"env\": {\"D\": \"%s\"},"
        "   \"command\": [\"sh\", \"-c\", \"%secho shared-$AGENTC_TOOL_CALL_ID\"]},"
        "  {\"name\": \"flaky\", \"description\": \"d\", \"idempotent\": true, \"cache\": {},"
        "   \"env\": {\"D\": \"%s\"}, \"command\": [\"sh\", \"-c\", \"%sif [ $(grep -c flaky "
        "\\\"$D/ledger\\\") = 1 ]; then echo down >&2; exit 1; fi; echo "
        "up-$AGENTC_TOOL_CALL_ID\"]},"
        "  {\"name\": \"tiny\", \"description\": \"d\", \"idempotent\": true,"
        "   \"cache\": {\"max_entries\": 1}, \"env\": {\"D\": \"%s\"},"
        "   \"command\": [\"sh\", \"-c\", \"%secho tiny-$AGENTC_TOOL_CALL_ID\"]},"
        "  {\"name\": \"brief\", \"description\": \"d\", \"idempotent\": true,"
        "   \"cache\": {\"ttl\": \"1s\"}, \"env\": {\"D\": \"%s\"},"
        "   \"command\": [\"sh\", \"-c\", \"%secho brief-$AGENTC_TOOL_CALL_ID\"]},"
        "  {\"name\": \"nap\", \"description\": \"d\", \"command\": [\"sh\", \"-c\", \"cat "
        ">/dev/null; sleep 1.5; echo rested\"]}]}",
        rig_tmp, run, rig_tmp, run, rig_tmp, run, rig_tmp, run, rig_tmp, run, rig_tmp, run, rig_tmp,
        run);
    rig_write("cache.json", text, tools_path, sizeof tools_path);
}

/* How many times tool (or any tool, NULL) really ran, by the ledger. */
static int ran(const char *tool)
{
    char path[600], line[512];
    snprintf(path, sizeof path, "%s/ledger", rig_tmp);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        size_t k = strcspn(line, " ");
        n += !tool || (strlen(tool) == k && !strncmp(line, tool, k));
    }
    if (f)
        fclose(f);
    return n;
}

static void reset_ledger(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/ledger", rig_tmp);
    unlink(path);
}

/* One model turn per line: the calls given as id, name, arguments triples (NULL ends a turn,
 * a second NULL ends the script), then the answer "done". */
static char *script(const char *const *c)
{
    static char out[8192];
    size_t k = 0;
    while (*c) {
        k += (size_t)snprintf(out + k, sizeof out - k, "{\"tool_calls\": [");
        for (int i = 0; *c; i++, c += 3) {
            json_t *a = json_string(c[2]);
            char *as = json_dumps(a, JSON_ENCODE_ANY);
            k += (size_t)snprintf(out + k, sizeof out - k,
                                  "%s{\"id\": \"%s\", \"name\": \"%s\", \"arguments\": %s}",
                                  i ? ", " : "", c[0], c[1], as);
            free(as);
            json_decref(a);
        }
        c++;
        k += (size_t)snprintf(out + k, sizeof out - k, "]}\n");
    }
    snprintf(out + k, sizeof out - k, "{\"content\": \"done\"}\n");
    return out;
}

typedef struct cx {
    rig r;
    ac_metrics *m;
    char journal[600];
} cx;

static void open_cx(cx *x, const char *turns, int journal)
{
    ac_error err;
    memset(x, 0, sizeof *x);
    reset_ledger();
    x->r.loop = ac_loop_new();
    x->m = ac_metrics_new();
    assert_non_null(x->m);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = x->r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.seed = 7;
    cfg.metrics = x->m;
    x->r.e = ac_engine_new(&cfg, &err);
    if (!x->r.e)
        fail_msg("engine: %s", err.text);
    if (ac_engine_add_tools(x->r.e, tools_path, &err) != 0)
        fail_msg("tools: %s", err.text);
    if (journal)
        snprintf(x->journal, sizeof x->journal, "%s/journal.jsonl", rig_tmp);
    x->r.s = ac_session_new(x->r.e, "s1", journal ? x->journal : NULL, &err);
    if (!x->r.s)
        fail_msg("session: %s", err.text);
}

static void run_turn(cx *x, ac_session *s)
{
    ac_session_send(s, "go");
    for (int i = 0; i < 3000 && !ac_session_settled(s); i++)
        ac_loop_run_once(x->r.loop, 20);
    assert_true(ac_session_settled(s));
    assert_string_equal(ac_session_answer(s), "done");
}

static void close_cx(cx *x)
{
    rig_close(&x->r);
    ac_metrics_free(x->m);
}

/* The value of a metric's series (its full line prefix), or -1. */
static double metric(cx *x, const char *series)
{
    char *text = ac_metrics_render(x->m, 0);
    assert_non_null(text);
    double v = -1;
    for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, series, strlen(series)) && l[strlen(series)] == ' ')
            v = strtod(l + strlen(series) + 1, NULL);
    free(text);
    return v;
}

static const char *cached(ac_session *s, const char *id)
{
    const char *from = ac_session_tool_call_cached(s, id);
    return from ? from : "(ran)";
}

static void test_hit_skips_process(void **st)
{
    (void)st;
    /* the same arguments with keys in another order and 1.0 for 1; then other ones */
    const char *c[] = {"c1",
                       "lookup",
                       "{\"q\": \"a\", \"n\": 1}",
                       NULL,
                       "c2",
                       "lookup",
                       "{\"n\": 1.0, \"q\": \"a\"}",
                       "c3",
                       "lookup",
                       "{\"q\": \"b\", \"n\": 1}",
                       NULL,
                       NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_int_equal(ran("lookup"), 2); /* c1 and c3: c2 did not start a process */
    assert_string_equal(rig_result(&x.r, "c1", 1), "value-c1\n");
    assert_string_equal(rig_result(&x.r, "c2", 1), "value-c1\n");
    assert_string_equal(rig_result(&x.r, "c3", 1), "value-c3\n");
    assert_string_equal(cached(x.r.s, "c2"), "c1");
    assert_string_equal(cached(x.r.s, "c1"), "(ran)");
    assert_string_equal(cached(x.r.s, "c3"), "(ran)");
    assert_true(metric(&x, "agentc_tool_cache_hits_total{tool=\"lookup\"}") == 1);
    assert_true(metric(&x, "agentc_tool_cache_misses_total{tool=\"lookup\"}") == 2);
    close_cx(&x);
}

static void test_failed_not_cached(void **st)
{
    (void)st;
    const char *c[] = {"f1", "flaky", "{}",    NULL, "f2", "flaky", "{}",
                       NULL, "f3",    "flaky", "{}", NULL, NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_non_null(strstr(rig_result(&x.r, "f1", 0), "down"));
    assert_string_equal(rig_result(&x.r, "f2", 1), "up-f2\n"); /* ran: the failure was not kept */
    assert_string_equal(rig_result(&x.r, "f3", 1), "up-f2\n");
    assert_string_equal(cached(x.r.s, "f2"), "(ran)");
    assert_string_equal(cached(x.r.s, "f3"), "f2");
    assert_int_equal(ran("flaky"), 2);
    close_cx(&x);
}

static void test_ttl(void **st)
{
    (void)st;
    /* within the second a hit; after a 1.5 s nap the entry is gone */
    const char *c[] = {"b1",  "brief", "{}", NULL, "b2",    "brief", "{}", "n1",
                       "nap", "{}",    NULL, "b3", "brief", "{}",    NULL, NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_string_equal(cached(x.r.s, "b2"), "b1");
    assert_string_equal(cached(x.r.s, "b3"), "(ran)");
    assert_string_equal(rig_result(&x.r, "b3", 1), "brief-b3\n");
    assert_int_equal(ran("brief"), 2);
    close_cx(&x);
}

static void test_scopes(void **st)
{
    (void)st;
    /* two sessions on one engine play the same script: the engine-scoped tool runs once for
     * both, the session-scoped one once in each */
    const char *c[] = {"k1", "shared", "{}", "k2", "lookup", "{}", NULL, NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    ac_error err;
    ac_session *other = ac_session_new(x.r.e, "s2", NULL, &err);
    assert_non_null(other);
    run_turn(&x, other);
    assert_int_equal(ran("shared"), 1);
    assert_int_equal(ran("lookup"), 2);
    assert_string_equal(cached(other, "k1"), "k1"); /* the first session's call */
    assert_string_equal(cached(other, "k2"), "(ran)");
    const ac_tool_call *k1 = ac_conv_tool_call(ac_session_conv(other), "k1");
    assert_string_equal(k1->result, "shared-k1\n");
    ac_session_free(other);
    close_cx(&x);
}

static void test_context_in_key(void **st)
{
    (void)st;
    /* kb::find is keyed by the toolkit's context: a new language is a new key */
    const char *c[] = {"d1",
                       "kb__find",
                       "{\"q\": \"x\"}",
                       NULL,
                       "d2",
                       "kb__find",
                       "{\"q\": \"x\"}",
                       NULL,
                       "s1",
                       "kb__set_lang",
                       "{}",
                       NULL,
                       "d3",
                       "kb__find",
                       "{\"q\": \"x\"}",
                       NULL,
                       NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_string_equal(cached(x.r.s, "d2"), "d1");
    assert_string_equal(cached(x.r.s, "d3"), "(ran)");
    assert_string_equal(rig_result(&x.r, "d3", 1), "found-{\"lang\":\"fr\"}\n");
    assert_int_equal(ran("kb::find"), 2);
    close_cx(&x);
}

static void test_state_in_key(void **st)
{
    (void)st;
    /* weather reads the State's city: keyed by the value it read, so after move wrote
     * another city the same call text runs again */
    const char *c[] = {"w1", "weather", "{\"city\": \"\xe2\x80\xa0state.city\"}",        NULL,
                       "w2", "weather", "{\"city\": \"\xe2\x80\xa0state.city\"}",        NULL,
                       "m1", "move",    "{\"_outputPath\": \"\xe2\x80\xa0state.city\"}", NULL,
                       "w3", "weather", "{\"city\": \"\xe2\x80\xa0state.city\"}",        NULL,
                       NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_string_equal(rig_result(&x.r, "w1", 1), "{\"city\":\"paris\"}");
    assert_string_equal(cached(x.r.s, "w2"), "w1");
    assert_string_equal(cached(x.r.s, "w3"), "(ran)");
    assert_string_equal(rig_result(&x.r, "w3", 1), "{\"city\":\"rome\\n\"}");
    assert_int_equal(ran("weather"), 2);
    close_cx(&x);
}

static void test_eviction(void **st)
{
    (void)st;
    /* max_entries 1: b evicts a, so a runs again (and evicts b); then a hit */
    const char *c[] = {"t1", "tiny", "{\"k\": \"a\"}", NULL, "t2", "tiny", "{\"k\": \"b\"}", NULL,
                       "t3", "tiny", "{\"k\": \"a\"}", NULL, "t4", "tiny", "{\"k\": \"a\"}", NULL,
                       NULL};
    cx x;
    open_cx(&x, script(c), 0);
    run_turn(&x, x.r.s);
    assert_int_equal(ran("tiny"), 3);
    assert_string_equal(cached(x.r.s, "t4"), "t3");
    assert_true(metric(&x, "agentc_tool_cache_evictions_total{tool=\"tiny\"}") == 2);
    assert_true(metric(&x, "agentc_tool_cache_misses_total{tool=\"tiny\"}") == 3);
    assert_true(metric(&x, "agentc_tool_cache_hits_total{tool=\"tiny\"}") == 1);
    close_cx(&x);
}

static int cb_runs;

static void cb_echo(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    cb_runs++;
    char out[300];
    snprintf(out, sizeof out, "cb %d %s", cb_runs, args);
    ac_tool_call_complete(h, 1, out);
}

static void test_callback_api(void **st)
{
    (void)st;
    const char *c[] = {"a1", "echo", "{\"x\": 1}", NULL, "a2", "echo", "{\"x\": 1}", NULL, NULL};
    cx x;
    open_cx(&x, script(c), 0);
    ac_error err;
    assert_int_equal(ac_engine_add_callback_tool(x.r.e, "echo", "echo", NULL, cb_echo, NULL, &err),
                     0);
    ac_tool_cache_options o = {60000, AC_CACHE_SESSION, 0};
    assert_int_equal(ac_engine_set_tool_cache(x.r.e, "echo", &o, &err), 0);
    ac_tool_cache_options bad = {-1, AC_CACHE_SESSION, 0};
    assert_int_equal(ac_engine_set_tool_cache(x.r.e, "echo", &bad, &err), -1);
    assert_int_equal(ac_engine_set_tool_cache(x.r.e, "nope", &o, &err), -1);
    assert_non_null(strstr(err.text, "no such tool"));
    cb_runs = 0;
    run_turn(&x, x.r.s);
    assert_int_equal(cb_runs, 1);
    assert_string_equal(cached(x.r.s, "a2"), "a1");
    assert_string_equal(rig_result(&x.r, "a2", 1), rig_result(&x.r, "a1", 1));
    close_cx(&x);
}

static void test_refused_when_not_idempotent(void **st)
{
    (void)st;
    char path[600];
    rig_write("bad.json",
              "{\"tools\": [{\"name\": \"w\", \"description\": \"d\", \"command\": [\"true\"],"
              " \"cache\": {\"ttl\": \"1m\"}}]}",
              path, sizeof path);
    rig r;
    rig_open(&r, "{\"content\": \"x\"}\n", NULL, NULL, NULL);
    ac_error err;
    assert_int_equal(ac_engine_add_tools(r.e, path, &err), -1);
    assert_non_null(strstr(err.text, "tools[0] (\"w\"): \"cache\" needs \"idempotent\": true"));
    rig_write("bad2.json",
              "{\"tools\": [{\"name\": \"w\", \"description\": \"d\", \"command\": [\"true\"],"
              " \"idempotent\": true, \"cache\": {\"scope\": \"world\"}}]}",
              path, sizeof path);
    assert_int_equal(ac_engine_add_tools(r.e, path, &err), -1);
    assert_non_null(strstr(err.text, "\"scope\" must be \"session\" or \"engine\""));
    rig_close(&r);
}

static void test_replay_exact(void **st)
{
    (void)st;
    const char *c[] = {"c1", "lookup", "{\"q\": \"a\"}", NULL, "c2", "lookup", "{\"q\": \"a\"}",
                       NULL, NULL};
    cx x;
    open_cx(&x, script(c), 1);
    run_turn(&x, x.r.s);
    assert_int_equal(ran("lookup"), 1);
    /* the journal says the hit is cached and where it came from */
    FILE *f = fopen(x.journal, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int hit_lines = 0;
    while (getline(&line, &cap, f) > 0)
        hit_lines += strstr(line, "\"id\":\"c2\"") && strstr(line, "\"cached\":true") &&
                     strstr(line, "\"cached_from\":\"c1\"");
    free(line);
    fclose(f);
    assert_int_equal(hit_lines, 1);
    char err[512];
    int events = 0;
    ac_session *re = test_replay_journal(x.r.e, "s1", x.journal, &events, err, sizeof err);
    if (!re)
        fail_msg("replay: %s", err);
    assert_int_equal(ran("lookup"), 1); /* a replay runs nothing */
    assert_string_equal(cached(re, "c2"), "c1");
    assert_string_equal(ac_conv_tool_call(ac_session_conv(re), "c2")->result, "value-c1\n");
    char *a = ac_session_to_json(x.r.s), *b = ac_session_to_json(re);
    assert_non_null(a);
    assert_non_null(b);
    json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
    assert_true(
        json_equal(json_object_get(ja, "conversation"), json_object_get(jb, "conversation")));
    json_decref(ja);
    json_decref(jb);
    free(a);
    free(b);
    ac_session_free(re);
    close_cx(&x);
}

/* A traced engine: the hit's execute_tool span names the call its result came from. */
static void test_traced_hit(void **st)
{
    (void)st;
    const char *c[] = {"c1", "lookup", "{}", NULL, "c2", "lookup", "{}", NULL, NULL};
    ac_httpd *collector = ac_httpd_start();
    assert_non_null(collector);
    for (int i = 0; i < 8; i++)
        ac_httpd_push_simple(collector, 200, NULL, "{}");
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/traces", ac_httpd_port(collector));
    ac_loop *loop = ac_loop_new();
    ac_tracer_config tc;
    memset(&tc, 0, sizeof tc);
    tc.url = url;
    tc.delay_ms = 10;
    ac_error err;
    ac_tracer *tr = ac_tracer_new(loop, &tc, &err);
    assert_non_null(tr);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script(c);
    cfg.tracer = tr;
    reset_ledger();
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    assert_int_equal(ac_engine_add_tools(e, tools_path, &err), 0);
    ac_session *s = ac_session_new(e, "traced", NULL, &err);
    assert_non_null(s);
    ac_session_send(s, "go");
    for (int i = 0; i < 3000 && !ac_session_settled(s); i++)
        ac_loop_run_once(loop, 20);
    assert_string_equal(cached(s, "c2"), "c1");
    ac_session_free(s);
    ac_engine_free(e);
    ac_tracer_shutdown(tr, 5000);
    int found = 0;
    for (size_t i = 0; i < ac_httpd_request_count(collector); i++) {
        char *body = NULL;
        ac_httpd_request(collector, i, NULL, NULL, NULL, &body, NULL);
        found |= body && strstr(body, "\"agentc.tool.cached_from\"") &&
                 strstr(body, "{\"stringValue\":\"c1\"}");
        free(body);
    }
    assert_true(found);
    ac_httpd_stop(collector);
    for (int i = 0; i < 5 && ac_loop_pending(loop); i++)
        ac_loop_run_once(loop, 10);
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_skips_process),
        cmocka_unit_test(test_failed_not_cached),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_context_in_key),
        cmocka_unit_test(test_state_in_key),
        cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_callback_api),
        cmocka_unit_test(test_refused_when_not_idempotent),
        cmocka_unit_test(test_replay_exact),
        cmocka_unit_test(test_traced_hit),
    };
    int rc = rig_setup(NULL);
    if (rc == 0)
        write_tools();
    rc = rc ? rc : cmocka_run_group_tests(tests, NULL, NULL);
    rig_teardown(NULL);
    return rc;
}
