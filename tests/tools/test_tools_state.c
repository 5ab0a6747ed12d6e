/*
 * test_tools_state.c - the State through a real engine on a real loop (scripted
 * model, tools as child processes): the three-call plan (fetch a user, greet
 * by †state.user.name, an independent audit running alongside), output
 * paths (one, ||, &&), prescribed paths (const, enum), writes the State's
 * schema refuses, unresolved references, a cycle, the State in the session
 * JSON and in the request, and a replay that rebuilds the same State.
 * Tools leave timestamps and marker files: order and overlap are read from
 * what the tools wrote, not from how long things took.
 */
#include "session_rig.h"

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "session/state.h"

#define D "\\u2020" /* the dagger, as JSON text inside the scripted turns */

static void script(const char *name, const char *body, char *path, size_t cap)
{
    char text[2048];
    snprintf(text, sizeof text, "T='%s'\n%s\n", rig_tmp, body);
    rig_write(name, text, path, cap);
}

static long long stamp(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", rig_tmp, name);
    FILE *f = fopen(p, "r");
    if (!f)
        fail_msg("no %s: the tool did not run", name);
    long long v = 0;
    assert_int_equal(fscanf(f, "%lld", &v), 1);
    fclose(f);
    return v;
}

static int exists(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", rig_tmp, name);
    return access(p, F_OK) == 0;
}

static char *slurp(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", rig_tmp, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The session's State, from ac_session_to_json, as compact text (static). */
static const char *state_of(ac_session *s)
{
    static char out[8192];
    char *j = ac_session_to_json(s);
    json_t *o = json_loads(j, 0, NULL);
    free(j);
    assert_non_null(o);
    char *t = json_dumps(json_object_get(o, "state"), JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(out, sizeof out, "%s", t ? t : "(none)");
    free(t);
    json_decref(o);
    return out;
}

/* A tool file: "state" (JSON text or NULL) and the tools' entries. */
static void toolfile(char *path, size_t cap, const char *state, const char *tools)
{
    char text[8192];
    snprintf(text, sizeof text, "{%s%s%s \"tools\": [%s]}", state ? "\"state\": " : "",
             state ? state : "", state ? "," : "", tools);
    rig_write("tools.json", text, path, cap);
}

static void test_three_call_plan(void **st)
{
    (void)st;
    char fetch[512], greet[512], audit[512], tf[512];
    script("fetch.sh",
           "date +%s%N > \"$T/fetch.start\"; sleep 0.5; date +%s%N > \"$T/fetch.end\"\n"
           "echo '{\"name\":\"Ada\",\"id\":7}'",
           fetch, sizeof fetch);
    script("greet.sh", "date +%s%N > \"$T/greet.start\"; cat > \"$T/greet.args\"; echo '\"Hello\"'",
           greet, sizeof greet);
    script("audit.sh",
           "date +%s%N > \"$T/audit.start\"; sleep 0.5; date +%s%N > \"$T/audit.end\"; echo logged",
           audit, sizeof audit);
    char tools[2048];
    snprintf(tools, sizeof tools,
             "{\"name\":\"fetch_user\",\"description\":\"f\",\"command\":[\"sh\",\"%s\"]},"
             "{\"name\":\"greet\",\"description\":\"g\",\"parameters\":{\"type\":\"object\","
             "\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"],"
             "\"additionalProperties\":false},\"command\":[\"sh\",\"%s\"]},"
             "{\"name\":\"audit\",\"description\":\"a\",\"command\":[\"sh\",\"%s\"]}",
             fetch, greet, audit);
    toolfile(tf, sizeof tf, "{\"initial\":{\"log\":[]}}", tools);
    const char *tfs[] = {tf, NULL};
    /* the model's order: greet comes second but needs what fetch_user writes */
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"t1\",\"name\":\"fetch_user\",\"arguments\":\"{\\\"_outputPath\\\":\\\"" D
        "state.user\\\"}\"},"
        "{\"id\":\"t2\",\"name\":\"greet\",\"arguments\":\"{\\\"name\\\":\\\"" D
        "state.user.name\\\",\\\"_outputPath\\\":\\\"" D "state.greeting\\\"}\"},"
        "{\"id\":\"t3\",\"name\":\"audit\",\"arguments\":\"{\\\"_outputPath\\\":\\\"" D
        "state.log[0]\\\"}\"}]}\n"
        "{\"content\":\"greeted\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_send(r.s, "greet the user");
    rig_settle(&r);
    assert_string_equal(ac_session_answer(r.s), "greeted");
    assert_string_equal(rig_result(&r, "t2", 1), "\"Hello\"\n");
    /* greet ran after fetch_user ended, with the name from the State, not a reference */
    assert_true(stamp("greet.start") >= stamp("fetch.end"));
    assert_string_equal(slurp("greet.args"), "{\"name\":\"Ada\"}");
    /* audit, independent, ran alongside fetch_user */
    assert_true(stamp("audit.start") < stamp("fetch.end"));
    assert_true(stamp("fetch.start") < stamp("audit.end"));
    assert_string_equal(state_of(r.s), "{\"greeting\":\"Hello\",\"log\":[\"logged\\n\"],"
                                       "\"user\":{\"id\":7,\"name\":\"Ada\"}}");
    /* results go back in the model's order, every id answered */
    json_t *req = rig_request(ac_session_conv(r.s));
    const char *why = rig_openai_valid(req);
    if (why)
        fail_msg("%s", why);
    json_decref(req);
    rig_close(&r);
}

/* A tool that prints what $1 says ("ok": JSON, "fail": exit 1), and marks that it ran. */
static void echo_tool(char *tools, size_t cap, const char *extra_params)
{
    char sh[512];
    script("echo.sh",
           "touch \"$T/ran-$AGENTC_TOOL_CALL_ID\"\n"
           "args=$(cat)\n"
           "case \"$args\" in *fail*) echo 'it broke' >&2; exit 1;; esac\n"
           "echo \"$args\"",
           sh, sizeof sh);
    snprintf(tools, cap,
             "{\"name\":\"echo\",\"description\":\"e\",\"parameters\":{\"type\":\"object\","
             "\"properties\":{\"v\":{}%s}},\"command\":[\"sh\",\"%s\"]}",
             extra_params ? extra_params : "", sh);
}

static void test_output_paths(void **st)
{
    (void)st;
    char tools[2048], tf[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf, "{}", tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"one\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":1,\\\"_outputPath\\\":\\\"" D
        "state.one\\\"}\"},"
        "{\"id\":\"or_ok\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":2,\\\"_outputPath\\\":"
        "\\\"" D "state.receipt || " D "state.error\\\"}\"},"
        "{\"id\":\"or_fail\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"fail\\\","
        "\\\"_outputPath\\\":\\\"" D "state.r2 || " D "state.e2\\\"}\"},"
        "{\"id\":\"and\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":3,\\\"_outputPath\\\":\\\"" D
        "state.x.a && " D "state.x.b && " D "state.y\\\"}\"},"
        "{\"id\":\"one_fail\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"fail\\\","
        "\\\"_outputPath\\\":\\\"" D "state.nothing\\\"}\"},"
        "{\"id\":\"text\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D D
        "literal\\\",\\\"_other\\\":1,\\\"_outputPath\\\":\\\"" D "state.t\\\"}\"},"
        "{\"id\":\"badpath\",\"name\":\"echo\",\"arguments\":\"{\\\"_outputPath\\\":\\\"" D
        "input.x\\\"}\"},"
        "{\"id\":\"verbatim\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\": 1.50,  \\\"w\\\":[ "
        "]}\"}]}\n"
        "{\"content\":\"ok\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    /* meta-properties never reach the tool; the escaped dagger arrives as one */
    assert_string_equal(rig_result(&r, "one", 1), "{\"v\":1}\n");
    assert_string_equal(rig_result(&r, "text", 1), "{\"v\":\"\xE2\x80\xA0literal\"}\n");
    assert_string_equal(rig_result(&r, "or_fail", 0), "it broke\n");
    assert_non_null(strstr(rig_result(&r, "badpath", 0), "only \xE2\x80\xA0state paths"));
    assert_false(exists("ran-badpath"));
    /* arguments with nothing to resolve or remove reach the tool as the model wrote them */
    assert_string_equal(rig_result(&r, "verbatim", 1), "{\"v\": 1.50,  \"w\":[ ]}\n");
    assert_string_equal(
        state_of(r.s),
        "{\"e2\":{\"error\":\"it broke\\n\"},\"one\":{\"v\":1},\"receipt\":{\"v\":2},"
        "\"t\":{\"v\":\"\xE2\x80\xA0literal\"},\"x\":{\"a\":{\"v\":3},\"b\":{\"v\":3}},"
        "\"y\":{\"v\":3}}");
    rig_close(&r);
}

static void test_prescribed_paths(void **st)
{
    (void)st;
    char tools[2048], tf[512], extra[256];
    snprintf(extra, sizeof extra, ",\"_outputPath\":{\"enum\":[\"%s\",\"%s\"]}",
             "\xE2\x80\xA0state.a", "\xE2\x80\xA0state.b");
    echo_tool(tools, sizeof tools, extra);
    /* a second tool whose path is fixed by const */
    size_t n = strlen(tools);
    char sh[512];
    script("pay.sh", "touch \"$T/ran-$AGENTC_TOOL_CALL_ID\"; echo '{\"paid\":true}'", sh,
           sizeof sh);
    snprintf(tools + n, sizeof tools - n,
             ",{\"name\":\"pay\",\"description\":\"p\",\"parameters\":{\"type\":\"object\","
             "\"properties\":{\"_outputPath\":{\"const\":\"\xE2\x80\xA0state.receipt\"}}},"
             "\"command\":[\"sh\",\"%s\"]}",
             sh);
    toolfile(tf, sizeof tf, NULL, tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"enum_ok\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":1,\\\"_outputPath\\\":"
        "\\\"" D "state.b\\\"}\"},"
        "{\"id\":\"enum_bad\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":2,\\\"_outputPath\\\":"
        "\\\"" D "state.c\\\"}\"},"
        "{\"id\":\"const_default\",\"name\":\"pay\",\"arguments\":\"{}\"},"
        "{\"id\":\"const_bad\",\"name\":\"pay\",\"arguments\":\"{\\\"_outputPath\\\":\\\"" D
        "state.elsewhere\\\"}\"}]}\n"
        "{\"content\":\"ok\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    rig_result(&r, "enum_ok", 1);
    rig_result(&r, "const_default", 1);
    assert_non_null(strstr(rig_result(&r, "enum_bad", 0), "refused _outputPath"));
    assert_non_null(strstr(rig_result(&r, "const_bad", 0), "refused _outputPath"));
    assert_false(exists("ran-enum_bad"));
    assert_false(exists("ran-const_bad"));
    assert_true(exists("ran-enum_ok"));
    assert_string_equal(state_of(r.s), "{\"b\":{\"v\":1},\"receipt\":{\"paid\":true}}");
    rig_close(&r);
}

static void test_schema_refuses_write(void **st)
{
    (void)st;
    char tools[2048], tf[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf,
             "{\"initial\":{\"count\":1},\"schema\":{\"type\":\"object\",\"properties\":{"
             "\"count\":{\"type\":\"integer\"},\"user\":{\"type\":\"object\",\"properties\":"
             "{\"v\":{\"type\":\"string\"}}}}}}",
             tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"refused\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":5,\\\"_outputPath\\\":"
        "\\\"" D "state.user\\\"}\"},"
        "{\"id\":\"refused2\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"s\\\","
        "\\\"_outputPath\\\":\\\"" D "state.user && " D "state.count\\\"}\"},"
        "{\"id\":\"accepted\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"s\\\","
        "\\\"_outputPath\\\":\\\"" D "state.user\\\"}\"}]}\n"
        "{\"content\":\"ok\"}\n";
    const char *params[] = {"max_parallel_tools=1", NULL};
    rig r;
    rig_open(&r, turns, params, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    const char *m = rig_result(&r, "refused", 0);
    assert_non_null(strstr(m, "not stored at \xE2\x80\xA0state.user (nothing was written)"));
    assert_non_null(strstr(m, "schema refuses"));
    rig_result(&r, "refused2", 0); /* the first place was fine, the second was not: neither */
    rig_result(&r, "accepted", 1);
    assert_string_equal(state_of(r.s), "{\"count\":1,\"user\":{\"v\":\"s\"}}");
    rig_close(&r);
}

static void test_unresolved_and_cycle(void **st)
{
    (void)st;
    char tools[2048], tf[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf, "{\"initial\":{\"user\":{\"name\":\"Ada\"}}}", tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"c1\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.b\\\",\\\"_outputPath\\\":\\\"" D "state.a\\\"}\"},"
        "{\"id\":\"c2\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.a.x\\\",\\\"_outputPath\\\":\\\"" D "state.b\\\"}\"},"
        "{\"id\":\"missing\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.user.id\\\"}\"},"
        "{\"id\":\"bad\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D "state..x\\\"}\"},"
        "{\"id\":\"fine\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.user.name\\\"}\"}]}\n"
        "{\"content\":\"ok\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    const char *m1 = rig_result(&r, "c1", 0);
    assert_non_null(strstr(m1, "cycle (c1 (echo) waits for c2 (echo) waits for c1 (echo))"));
    const char *m2 = rig_result(&r, "c2", 0);
    assert_non_null(strstr(m2, "cycle (c2 (echo) waits for c1 (echo) waits for c2 (echo))"));
    assert_string_equal(rig_result(&r, "missing", 0),
                        "unresolved reference \xE2\x80\xA0state.user.id");
    assert_non_null(strstr(rig_result(&r, "bad", 0), "invalid reference"));
    assert_string_equal(rig_result(&r, "fine", 1), "{\"v\":\"Ada\"}\n");
    assert_false(exists("ran-c1"));
    assert_false(exists("ran-c2"));
    assert_false(exists("ran-missing"));
    assert_false(exists("ran-bad"));
    rig_close(&r);
}

/* The State as the model sees it: in the request, cut with a note, off by param. */
static void test_state_in_context(void **st)
{
    (void)st;
    char tools[2048], tf[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf, "{\"initial\":{\"where\":\"step 2 of 3\",\"pad\":\"0123456789\"}}",
             tools);
    const char *tfs[] = {tf, NULL};
    rig r;
    rig_open(&r, "{\"content\":\"ok\"}\n", NULL, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    char *note = ac_state_context_text(r.s);
    assert_non_null(note);
    assert_non_null(strstr(note, "{\"where\":\"step 2 of 3\",\"pad\":\"0123456789\"}"));
    assert_null(strstr(note, "cut"));
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "m";
    o.context_note = note;
    char err[256];
    char *body = ac_request_openai(ac_session_conv(r.s), &o, err, sizeof err);
    json_t *j = json_loads(body, 0, NULL);
    json_t *msgs = json_object_get(j, "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "role")), "system");
    assert_string_equal(json_string_value(json_object_get(last, "content")), note);
    json_decref(j);
    free(body);
    body = ac_request_anthropic(ac_session_conv(r.s), &o, err, sizeof err);
    j = json_loads(body, 0, NULL);
    assert_non_null(strstr(json_string_value(json_object_get(j, "system")), "step 2 of 3"));
    json_decref(j);
    free(body);
    free(note);
    rig_close(&r);

    const char *cut[] = {"state_context_max=20", NULL};
    rig_open(&r, "{\"content\":\"ok\"}\n", cut, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    note = ac_state_context_text(r.s);
    assert_non_null(
        strstr(note, "{\"where\":\"step 2 of \n[the State is cut here: 20 of 42 bytes"));
    free(note);
    rig_close(&r);

    const char *off[] = {"state_in_context=0", NULL};
    rig_open(&r, "{\"content\":\"ok\"}\n", off, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    assert_null(ac_state_context_text(r.s));
    rig_close(&r);
}

/* A journaled run replayed: the same State, byte for byte, from the writes alone. */
static void test_replay_same_state(void **st)
{
    (void)st;
    char tools[2048], tf[512], journal[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf, "{\"initial\":{\"n\":0}}", tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"w1\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":[1,2],\\\"_outputPath\\\":"
        "\\\"" D "state.a\\\"}\"},"
        "{\"id\":\"w2\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.a.v[1]\\\",\\\"_outputPath\\\":\\\"" D "state.b && " D "state.n\\\"}\"}]}\n"
        "{\"content\":\"ok\"}\n";
    snprintf(journal, sizeof journal, "%s/j.jsonl", rig_tmp);
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_free(r.s);
    ac_error err;
    r.s = ac_session_new(r.e, "s1", journal, &err);
    assert_non_null(r.s);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    char *live = ac_session_state_save(r.s);
    assert_string_equal(live, "{\"n\":{\"v\":2},\"a\":{\"v\":[1,2]},\"b\":{\"v\":2}}");
    ac_session_free(r.s);
    r.s = NULL;
    ac_replay_result res;
    ac_session *rs = NULL;
    assert_int_equal(ac_session_replay(r.e, journal, AC_REPLAY_CHECK, &res, &rs), AC_REPLAY_MATCH);
    char *again = ac_session_state_save(rs);
    assert_string_equal(again, live);
    /* a snapshot restored into another session */
    char why[256];
    assert_int_equal(ac_session_state_restore(rs, "{\"fresh\":1}", why, sizeof why), 0);
    char *fresh = ac_session_state_save(rs);
    assert_string_equal(fresh, "{\"fresh\":1}");
    assert_int_equal(ac_session_state_restore(rs, "[1]", why, sizeof why), -1);
    assert_int_equal(ac_session_state_restore(rs, "{bad", why, sizeof why), -1);
    free(fresh);
    fresh = ac_session_state_save(rs);
    assert_string_equal(fresh, "{\"fresh\":1}");
    free(fresh);
    /* the whole State (document, schema, declared) as a snapshot part, into a new session */
    json_t *part = ac_state_snapshot_save(rs);
    ac_session *s2 = ac_session_new(r.e, "s3", NULL, &err);
    assert_non_null(s2);
    assert_int_equal(ac_state_snapshot_restore(s2, part, why, sizeof why), AC_OK);
    char *restored = ac_session_state_save(s2);
    assert_string_equal(restored, "{\"fresh\":1}");
    free(restored);
    json_t *bad = json_pack("{s:b, s:{s:s}, s:{s:s}}", "declared", 1, "doc", "n", "x", "schema",
                            "type", "array");
    assert_int_equal(ac_state_snapshot_restore(s2, bad, why, sizeof why), AC_EINVAL);
    assert_non_null(strstr(why, "refused by its schema"));
    json_decref(bad);
    json_decref(part);
    ac_session_free(s2);
    free(again);
    free(live);
    ac_session_free(rs);
    r.s = ac_session_new(r.e, "s2", NULL, &err); /* rig_close frees one */
    rig_close(&r);
}

/* One State per engine: a second tool file declaring one is refused. */
static void test_one_declaration(void **st)
{
    (void)st;
    char a[512], b[512];
    rig_write("a.json", "{\"state\": {}, \"tools\": []}", a, sizeof a);
    rig_write("b.json", "{\"state\": {\"initial\": {\"x\": 1}}, \"tools\": []}", b, sizeof b);
    const char *one[] = {a, NULL};
    rig r;
    rig_open(&r, "{\"content\":\"ok\"}\n", NULL, one, NULL);
    ac_error err;
    assert_int_not_equal(ac_engine_add_tools(r.e, b, &err), 0);
    assert_non_null(strstr(err.text, "\"state\" is declared by another tool file too"));
    rig_close(&r);
}

static void settle_s(rig *r, ac_session *s)
{
    for (int i = 0; i < 3000 && !ac_session_settled(s); i++)
        ac_loop_run_once(r->loop, 20);
    assert_true(ac_session_settled(s));
    for (int i = 0; i < 5; i++) /* the store's end-of-turn commit timer */
        ac_loop_run_once(r->loop, 1);
}

/* A stored session: the State comes back from a snapshot (taken after every event
 * here) and from the journal alone, and a later turn reads what an earlier one wrote. */
static void test_store_keeps_state(void **st)
{
    (void)st;
    char tools[2048], tf[512], db[512];
    echo_tool(tools, sizeof tools, NULL);
    toolfile(tf, sizeof tf, "{\"initial\":{\"n\":0},\"schema\":{\"type\":\"object\"}}", tools);
    const char *tfs[] = {tf, NULL};
    const char *turns =
        "{\"tool_calls\":[{\"id\":\"w1\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"Ada\\\","
        "\\\"_outputPath\\\":\\\"" D "state.user\\\"}\"}]}\n"
        "{\"content\":\"stored\"}\n"
        "{\"tool_calls\":[{\"id\":\"r1\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"" D
        "state.user.v\\\",\\\"_outputPath\\\":\\\"" D "state.again\\\"}\"}]}\n"
        "{\"content\":\"read\"}\n";
    snprintf(db, sizeof db, "%s/s.db", rig_tmp);
    for (int every = 1; every <= 1000; every += 999) { /* a snapshot each event; none */
        rig r;
        rig_open(&r, turns, NULL, tfs, NULL);
        ac_session_free(r.s); /* the stored session is the one used */
        r.s = NULL;
        ac_store_options opt;
        memset(&opt, 0, sizeof opt);
        opt.snapshot_every = (uint64_t)every;
        ac_error err;
        unlink(db);
        ac_store *store = ac_store_open(db, &opt, &err);
        if (!store)
            fail_msg("store: %s", err.text);
        ac_session *s = ac_store_session(store, r.e, "k1", 0, &err);
        if (!s)
            fail_msg("session: %s", err.text);
        ac_session_send(s, "first");
        settle_s(&r, s);
        char *live = ac_session_state_save(s);
        assert_string_equal(live, "{\"n\":0,\"user\":{\"v\":\"Ada\"}}");
        ac_session_free(s);
        ac_store_session_info info;
        assert_int_equal(ac_store_info(store, "k1", &info, &err), AC_OK);
        if (every == 1)
            assert_true(info.snapshot_seq > 0);
        else
            assert_int_equal(info.snapshot_seq, 0);
        /* rebuilt: the same State, then a turn that reads it */
        s = ac_store_session(store, r.e, "k1", AC_STORE_MUST_EXIST, &err);
        if (!s)
            fail_msg("again: %s", err.text);
        char *back = ac_session_state_save(s);
        assert_string_equal(back, live);
        ac_session_send(s, "second");
        settle_s(&r, s);
        assert_string_equal(ac_session_answer(s), "read");
        char *after = ac_session_state_save(s);
        assert_string_equal(after, "{\"n\":0,\"user\":{\"v\":\"Ada\"},\"again\":{\"v\":\"Ada\"}}");
        ac_session_free(s);
        char *json = ac_store_session_json(store, r.e, "k1", &err);
        assert_non_null(json);
        assert_non_null(strstr(json, "\"state\":{\"n\":0,\"user\":{\"v\":\"Ada\"},\"again\""));
        free(json);
        free(after);
        free(back);
        free(live);
        ac_store_close(store);
        r.s = ac_session_new(r.e, "other", NULL, &err); /* rig_close frees one */
        rig_close(&r);
    }
}

/* Calls writing one path run in call order: the slowest, first, does not win by ending last.
 * The whole State is written only by a tool that declares _outputPath. */
static void test_write_order_and_root(void **st)
{
    (void)st;
    char sh[512], tools[4096], tf[512];
    script("slow.sh",
           "touch \"$T/ran-$AGENTC_TOOL_CALL_ID\"\n"
           "args=$(cat)\n"
           "case \"$args\" in *slow*) sleep 0.4;; esac\n"
           "echo \"$args\"",
           sh, sizeof sh);
    snprintf(tools, sizeof tools,
             "{\"name\":\"echo\",\"description\":\"e\",\"parameters\":{\"type\":\"object\"},"
             "\"command\":[\"sh\",\"%s\"]},"
             "{\"name\":\"reset\",\"description\":\"r\",\"parameters\":{\"type\":\"object\","
             "\"properties\":{\"_outputPath\":{\"type\":\"string\"}}},\"command\":[\"sh\",\"%s\"]}",
             sh, sh);
    toolfile(tf, sizeof tf, "{\"initial\":{\"keep\":1}}", tools);
    const char *tfs[] = {tf, NULL};
    const char *turns = "{\"tool_calls\":["
                        "{\"id\":\"w0\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":\\\"slow\\\","
                        "\\\"_outputPath\\\":\\\"" D "state.w\\\"}\"},"
                        "{\"id\":\"w1\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":1,"
                        "\\\"_outputPath\\\":\\\"" D "state.w.v\\\"}\"},"
                        "{\"id\":\"w2\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":2,"
                        "\\\"_outputPath\\\":\\\"" D "state.w\\\"}\"},"
                        "{\"id\":\"root\",\"name\":\"echo\",\"arguments\":\"{\\\"v\\\":3,"
                        "\\\"_outputPath\\\":\\\"" D "state\\\"}\"}]}\n"
                        "{\"tool_calls\":["
                        "{\"id\":\"declared\",\"name\":\"reset\",\"arguments\":\"{\\\"w\\\":\\\"" D
                        "state.w\\\",\\\"_outputPath\\\":\\\"" D "state\\\"}\"}]}\n"
                        "{\"content\":\"ok\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tfs, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    assert_non_null(strstr(rig_result(&r, "root", 0), "the whole State"));
    assert_false(exists("ran-root"));
    assert_string_equal(rig_result(&r, "w0", 1), "{\"v\":\"slow\"}\n");
    /* w0, then w1 into it, then w2: the last call's write stays, not w0's (which ends last
     * when nothing orders them); the declared tool then replaced the whole State with it */
    assert_string_equal(state_of(r.s), "{\"w\":{\"v\":2}}");
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_call_plan, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_output_paths, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_prescribed_paths, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_schema_refuses_write, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_unresolved_and_cycle, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_state_in_context, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_replay_same_state, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_store_keeps_state, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_one_declaration, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_write_order_and_root, rig_setup, rig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
