/*
 * test_toolkits.c - toolkits through the whole engine: a real session talking
 * to the loopback model server (provider_fixture.h), which records what each
 * request offered; tools are child processes (sh scripts) or C callbacks.
 *
 * Yggdrasil's behaviours: the login -> select project -> edit chain, select /
 * deselect through a forbidden state, a pipeline in one turn, a failing
 * middle call, the reasons for unavailable tools, enums from the context,
 * parallel groups and a toolkit's calls in sequence, 100 tools with a
 * 1,000-value enum; then sessions kept apart, journal replay, context
 * updates checked by the schema, callbacks, and the restore API.
 */
#include "provider_fixture.h"

#include <sys/stat.h>

#include "context/conversation.h"

static char dir[64];

/* ---- the tool file ---- */

static const char *plane_sh =
    "#!/bin/sh\n"
    "args=$(cat)\n"
    "case \"$1\" in\n"
    "login) echo \"logged in\" ;;\n"
    "select) p=$(printf '%s' \"$args\" | sed -n 's/.*\"project\" *: *\"\\([^\"]*\\)\".*/\\1/p')\n"
    "  printf '{\"result\": \"selected %s\", \"context\": {\"selected_project\": \"%s\"}}\\n' "
    "\"$p\" \"$p\" ;;\n"
    "deselect) echo deselected ;;\n"
    "edit) printf 'edited with %s' \"$AGENTC_CONTEXT\" ;;\n"
    "explode) echo 'boom' >&2; exit 3 ;;\n"
    "badupdate) echo '{\"result\": \"x\", \"context\": {\"selected_project\": 5}}' ;;\n"
    "approve) echo '{\"result\": \"approved\", \"context\": {\"approved\": true}}' ;;\n"
    "activate) echo '{\"result\": \"ok\", \"context\": {\"users\": [{\"name\": \"al\", "
    "\"active\": true, \"updated\": 1}, {\"name\": \"bo\", \"active\": true, \"updated\": 2}, "
    "{\"name\": \"cy\", \"active\": true, \"updated\": 3}]}}' ;;\n"
    "stamp) echo \"$2 start $(date +%s%N)\" >> \"$STAMPS\"; sleep 0.3;"
    " echo \"$2 end $(date +%s%N)\" >> \"$STAMPS\"; echo \"$2\" ;;\n"
    "esac\n";

static void write_file(const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *tool(const char *name, const char *cmd, const char *extra)
{
    static char b[16][1024];
    static int k;
    char *o = b[k++ % 16];
    snprintf(o, 1024,
             "{\"name\": \"%s\", \"description\": \"%s\", \"command\": [\"./plane.sh\", \"%s\"], "
             "\"env\": {\"STAMPS\": \"%s/stamps\"}%s%s}",
             name, name, cmd, dir, *extra ? ", " : "", extra);
    return o;
}

/* The plane toolkit, a "kb" toolkit for enums, a "slow" toolkit and three
 * independent tools; path gets the file. */
static void plane_file(char *path, size_t cap)
{
    char sh[256];
    write_file("plane.sh", plane_sh, sh, sizeof sh);
    chmod(sh, 0755);
    char *t = malloc(32768);
    assert_non_null(t);
    snprintf(
        t, 32768,
        "{\"toolkits\": [{\"prefix\": \"plane\", \"initial_states\": [],"
        " \"context\": {\"projects\": [\"alpha\", \"beta\"]},"
        " \"context_schema\": {\"type\": \"object\", \"properties\": {"
        "   \"projects\": {\"type\": \"array\"}, \"selected_project\": {\"type\": \"string\"},"
        "   \"approved\": {\"type\": \"boolean\"}}},"
        " \"tools\": [%s, %s, %s, %s, %s, %s, %s, %s]},"
        " {\"prefix\": \"kb\", \"context\": {\"a\": [\"x\", \"y\"], \"b\": [\"y\", \"z\"]},"
        "  \"context_schema\": {\"type\": \"object\", \"properties\": {\"a\": {}, \"b\": {},"
        "   \"missing\": {}}},"
        "  \"tools\": [{\"name\": \"pick\", \"description\": \"pick\", \"command\": [\"echo\"],"
        "   \"parameters\": {\"type\": \"object\", \"properties\": {"
        "     \"v\": {\"type\": \"string\", \"x-enum-from\": [\"a\", \"b\"]},"
        "     \"w\": {\"type\": \"string\", \"x-enum-from\": \"missing\"}}}}]},"
        " {\"prefix\": \"slow\", \"tools\": [%s, %s]}],"
        " \"tools\": [%s, %s, %s]}",
        tool("login", "login",
             "\"forbidden_states\": [\"authenticated\"], \"enables_states\": [\"authenticated\"]"),
        tool("select_project", "select",
             "\"parameters\": {\"type\": \"object\", \"properties\": {\"project\": {\"type\": "
             "\"string\", \"x-enum-from\": \"projects\"}}, \"required\": [\"project\"]},"
             "\"required_states\": [\"authenticated\"], \"forbidden_states\": "
             "[\"project_selected\"], \"enables_states\": [\"project_selected\"], "
             "\"updates_context\": true"),
        tool("deselect_project", "deselect",
             "\"required_states\": [\"project_selected\"], \"disables_states\": "
             "[\"project_selected\"]"),
        tool("edit", "edit",
             "\"required_states\": [\"authenticated\", \"project_selected\"], "
             "\"required_context\": [\"selected_project\"]"),
        tool("explode", "explode", "\"required_states\": [\"authenticated\"]"),
        tool("badupdate", "badupdate",
             "\"required_states\": [\"authenticated\"], \"updates_context\": true"),
        tool("approve", "approve", "\"updates_context\": true"),
        tool("publish", "login", "\"required_context\": [\"approved\"]"),
        tool("a", "stamp\", \"ka", ""), tool("b", "stamp\", \"kb", ""),
        tool("s1", "stamp\", \"s1", ""), tool("s2", "stamp\", \"s2", ""),
        tool("s3", "stamp\", \"s3", ""));
    write_file("tools.json", t, path, cap);
    free(t);
}

/* ---- canned model turns ---- */

/* An OpenAI stream issuing the calls given as id, wire name, arguments triples. */
static char *oa_calls(const char *const *c)
{
    sbuf b = {0};
    json_t *calls = json_array();
    for (int i = 0; c[3 * i]; i++)
        json_array_append_new(calls, json_pack("{s:i, s:s, s:s, s:{s:s, s:s}}", "index", i, "id",
                                               c[3 * i], "type", "function", "function", "name",
                                               c[3 * i + 1], "arguments", c[3 * i + 2]));
    sb_event(&b, NULL,
             json_pack("{s:[{s:i, s:{s:s, s:o}, s:n}]}", "choices", "index", 0, "delta", "role",
                       "assistant", "tool_calls", calls, "finish_reason"));
    oa_finish(&b, "tool_calls", 10, 5);
    return b.p;
}

static void push_calls(fx *f, const char *const *c)
{
    push_stream(f, oa_calls(c));
}

static void push_text(fx *f, const char *text)
{
    push_stream(f, oa_text2(text, ""));
}

/* ---- engine and sessions ---- */

static char tools_path[256];
static int cb_calls;

static void setup_engine(fx *f, int journal, const char *const *params)
{
    fx_base(f);
    snprintf(f->base, sizeof f->base, "http://127.0.0.1:%d/v1", f->port);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = f->loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = f->base;
    cfg.api_key = KEY;
    cfg.model = "test-model";
    cfg.params = params ? params : quick_params;
    cfg.output = &f->out;
    f->e = ac_engine_new(&cfg, &ae);
    if (!f->e)
        fail_msg("ac_engine_new: %s", ae.text);
    if (ac_engine_add_tools(f->e, tools_path, &ae) != 0)
        fail_msg("add_tools: %s", ae.text);
    if (journal) {
        snprintf(f->journal, sizeof f->journal, "/tmp/agentc_toolkits_journal_XXXXXX");
        int fd = mkstemp(f->journal);
        assert_true(fd >= 0);
        close(fd);
    }
    f->s = ac_session_new(f->e, "t1", journal ? f->journal : NULL, &ae);
    if (!f->s)
        fail_msg("ac_session_new: %s", ae.text);
}

/* The names request i offered, sorted into one comma-separated string. */
static char *offered(fx *f, size_t i, json_t **tools_out)
{
    req r;
    req_get(f, i, &r);
    json_t *tools = json_object_get(r.json, "tools");
    static char out[16384];
    out[0] = 0;
    size_t n = json_array_size(tools);
    const char **names = calloc(n + 1, sizeof *names);
    for (size_t k = 0; k < n; k++)
        names[k] = json_string_value(
            json_object_get(json_object_get(json_array_get(tools, k), "function"), "name"));
    for (size_t a = 0; a < n; a++)
        for (size_t b = a + 1; b < n; b++)
            if (strcmp(names[a], names[b]) > 0) {
                const char *x = names[a];
                names[a] = names[b];
                names[b] = x;
            }
    for (size_t k = 0; k < n; k++) {
        if (strlen(out) + strlen(names[k]) + 2 >= sizeof out)
            break;
        if (k)
            strcat(out, ",");
        strcat(out, names[k]);
    }
    free(names);
    if (tools_out)
        *tools_out = json_incref(tools);
    req_free(&r);
    return out;
}

/* The schema of the offered tool wire in request i (new reference). */
static json_t *offered_schema(fx *f, size_t i, const char *wire)
{
    json_t *tools;
    offered(f, i, &tools);
    json_t *found = NULL;
    for (size_t k = 0; k < json_array_size(tools); k++) {
        json_t *fn = json_object_get(json_array_get(tools, k), "function");
        if (!strcmp(json_string_value(json_object_get(fn, "name")), wire))
            found = json_incref(json_object_get(fn, "parameters"));
    }
    json_decref(tools);
    if (!found)
        fail_msg("%s not offered in request %zu", wire, i);
    return found;
}

static const char *result(fx *f, const char *id, int *ok)
{
    const ac_tool_call *c = ac_conv_tool_call(ac_session_conv(f->s), id);
    if (!c)
        fail_msg("no call %s", id);
    if (ok)
        *ok = c->state == AC_CALL_SUCCESS;
    return c->result ? c->result : "";
}

static void assert_result(fx *f, const char *id, int want_ok, const char *want_part)
{
    int ok;
    const char *r = result(f, id, &ok);
    if (ok != want_ok || !strstr(r, want_part))
        fail_msg("call %s: ok=%d result '%s'; wanted ok=%d and '%s'", id, ok, r, want_ok,
                 want_part);
}

static json_t *kits(fx *f)
{
    char *t = ac_session_toolkits_json(f->s);
    assert_non_null(t);
    json_t *j = json_loads(t, 0, NULL);
    free(t);
    assert_non_null(j);
    return j;
}

static char *states_of(fx *f, const char *prefix)
{
    static char out[256];
    json_t *j = kits(f);
    char *t = json_dumps(json_object_get(json_object_get(j, prefix), "states"), JSON_COMPACT);
    snprintf(out, sizeof out, "%s", t);
    free(t);
    json_decref(j);
    return out;
}

#define INDEP "s1,s2,s3,slow__a,slow__b"

/* ---- the behaviours ---- */

static void test_chain_offers(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "plane__login", "{}", NULL};
    const char *t2[] = {"c2", "plane__select_project", "{\"project\": \"alpha\"}", NULL};
    const char *t3[] = {"c3", "plane__edit", "{}", NULL};
    push_calls(&f, t1);
    push_calls(&f, t2);
    push_calls(&f, t3);
    push_text(&f, "edited");
    fx_run(&f, "edit alpha");
    assert_string_equal(ac_session_answer(f.s), "edited");
    /* only login at first (with the independent tools, the kb tool and the slow toolkit) */
    assert_string_equal(offered(&f, 0, NULL), "kb__pick,plane__approve,plane__login," INDEP);
    assert_string_equal(offered(&f, 1, NULL),
                        "kb__pick,plane__approve,plane__badupdate,plane__explode,"
                        "plane__select_project," INDEP);
    assert_string_equal(offered(&f, 2, NULL),
                        "kb__pick,plane__approve,plane__badupdate,plane__deselect_project,"
                        "plane__edit,plane__explode," INDEP);
    /* the enum of select_project is the context's projects */
    json_t *sch = offered_schema(&f, 1, "plane__select_project");
    json_t *en =
        json_object_get(json_object_get(json_object_get(sch, "properties"), "project"), "enum");
    char *es = json_dumps(en, JSON_COMPACT);
    assert_string_equal(es, "[\"alpha\",\"beta\"]");
    assert_null(json_object_get(json_object_get(json_object_get(sch, "properties"), "project"),
                                "x-enum-from"));
    free(es);
    json_decref(sch);
    /* the model's earlier calls go back under their wire names; the conversation has the
     * display names */
    req r;
    req_get(&f, 1, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    json_t *asst = json_array_get(msgs, json_array_size(msgs) - 2);
    assert_string_equal(
        jstr(json_object_get(json_array_get(json_object_get(asst, "tool_calls"), 0), "function"),
             "name"),
        "plane__login");
    req_free(&r);
    assert_string_equal(ac_conv_tool_call(ac_session_conv(f.s), "c1")->name, "plane::login");
    assert_result(&f, "c3", 1, "\"selected_project\":\"alpha\"");
    assert_string_equal(states_of(&f, "plane"), "[\"authenticated\",\"project_selected\"]");
    /* the session's JSON reports them */
    json_t *sj = session_json(&f);
    assert_non_null(json_object_get(json_object_get(sj, "toolkits"), "plane"));
    json_decref(sj);
    fx_free(&f);
}

static void test_toggle(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "plane__login", "{}", NULL};
    const char *t2[] = {"c2", "plane__select_project", "{\"project\": \"alpha\"}", NULL};
    const char *t3[] = {"c3", "plane__deselect_project", "{}", NULL};
    const char *t4[] = {"c4", "plane__select_project", "{\"project\": \"beta\"}", NULL};
    push_calls(&f, t1);
    push_calls(&f, t2);
    push_calls(&f, t3);
    push_calls(&f, t4);
    push_text(&f, "ok");
    fx_run(&f, "toggle");
    assert_non_null(strstr(offered(&f, 2, NULL), "plane__deselect_project"));
    assert_null(strstr(offered(&f, 2, NULL), "plane__select_project"));
    assert_non_null(strstr(offered(&f, 3, NULL), "plane__select_project"));
    assert_null(strstr(offered(&f, 3, NULL), "plane__deselect_project"));
    assert_null(strstr(offered(&f, 4, NULL), "plane__select_project"));
    assert_result(&f, "c4", 1, "selected beta");
    json_t *j = kits(&f);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(j, "plane"), "context"),
                                          "selected_project")),
        "beta");
    json_decref(j);
    fx_free(&f);
}

static void test_pipeline_one_turn(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {
        "c1", "plane__login", "{}", "c2", "plane__select_project", "{\"project\": \"beta\"}",
        "c3", "plane__edit",  "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "all at once");
    assert_result(&f, "c1", 1, "logged in");
    assert_result(&f, "c2", 1, "selected beta");
    assert_result(&f, "c3", 1, "\"selected_project\":\"beta\""); /* saw c2's context update */
    fx_free(&f);
}

static void test_failing_middle(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "plane__login",          "{}",
                        "c2", "plane__explode",        "{}",
                        "c3", "plane__select_project", "{\"project\": \"alpha\"}",
                        NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "fail in the middle");
    assert_result(&f, "c1", 1, "logged in");
    assert_result(&f, "c2", 0, "boom");
    assert_result(&f, "c3", 0, "not run: an earlier call of toolkit plane failed");
    assert_string_equal(states_of(&f, "plane"), "[\"authenticated\"]"); /* c1's update kept */
    /* every id answered, in the model's order */
    req r;
    req_get(&f, 1, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    size_t n = json_array_size(msgs);
    assert_true(n >= 3);
    assert_string_equal(jstr(json_array_get(msgs, n - 3), "tool_call_id"), "c1");
    assert_string_equal(jstr(json_array_get(msgs, n - 2), "tool_call_id"), "c2");
    assert_string_equal(jstr(json_array_get(msgs, n - 1), "tool_call_id"), "c3");
    req_free(&r);
    assert_non_null(strstr(offered(&f, 1, NULL), "plane__select_project"));
    fx_free(&f);
}

static void test_reasons(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    /* one plane call per turn: a failing call stops the toolkit's later calls of its turn */
    const char *t1[] = {"c1", "plane__edit", "{}", "c2", "nope__x", "{}", NULL};
    const char *t2[] = {"c3", "plane__nothing", "{}", NULL};
    const char *t3[] = {"c4", "plane__publish", "{}", NULL};
    const char *t4[] = {"c5", "plane__login", "{}", NULL};
    const char *t5[] = {"c6", "plane__login", "{}", NULL};
    push_calls(&f, t1);
    push_calls(&f, t2);
    push_calls(&f, t3);
    push_calls(&f, t4);
    push_calls(&f, t5);
    push_text(&f, "done");
    fx_run(&f, "reasons");
    assert_result(&f, "c1", 0, "missing required states: authenticated, project_selected");
    assert_result(&f, "c2", 0, "unknown toolkit 'nope'");
    assert_result(&f, "c3", 0, "toolkit 'plane' has no tool 'nothing'");
    assert_result(&f, "c4", 0, "missing required context: approved");
    assert_result(&f, "c5", 1, "logged in");
    assert_result(&f, "c6", 0, "forbidden states are on: authenticated");
    fx_free(&f);
}

static void test_enums(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "kb__pick", "{\"v\": \"q\"}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "enums");
    json_t *sch = offered_schema(&f, 0, "kb__pick");
    json_t *props = json_object_get(sch, "properties");
    char *v = json_dumps(json_object_get(json_object_get(props, "v"), "enum"), JSON_COMPACT);
    assert_string_equal(v, "[\"x\",\"y\",\"z\"]"); /* union, duplicates removed, in order */
    free(v);
    assert_null(json_object_get(json_object_get(props, "w"), "enum")); /* missing key */
    assert_string_equal(jstr(json_object_get(props, "w"), "type"), "string");
    json_decref(sch);
    assert_result(&f, "c1", 0, "is not one of the values of context");
    fx_free(&f);
}

/* start and end times (ns) of each stamp tool, from the file the tools write */
typedef struct stamp {
    char name[8];
    long long start, end;
} stamp;

static size_t read_stamps(stamp *v, size_t cap)
{
    char path[128];
    snprintf(path, sizeof path, "%s/stamps", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char name[16], what[16];
    long long t;
    size_t n = 0;
    while (fscanf(fp, "%15s %15s %lld", name, what, &t) == 3) {
        size_t i;
        for (i = 0; i < n && strcmp(v[i].name, name); i++)
            ;
        if (i == n && n < cap) {
            memset(&v[n], 0, sizeof v[n]);
            snprintf(v[n].name, sizeof v[n].name, "%s", name);
            n++;
        }
        if (i < n) {
            if (!strcmp(what, "start"))
                v[i].start = t;
            else
                v[i].end = t;
        }
    }
    fclose(fp);
    return n;
}

static const stamp *find_stamp(const stamp *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, name))
            return &v[i];
    fail_msg("no stamps of %s", name);
    return NULL;
}

static void test_parallel_and_sequence(void **st)
{
    (void)st;
    char path[128];
    snprintf(path, sizeof path, "%s/stamps", dir);
    unlink(path);
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "s1", "{}",      "c2", "s2", "{}",      "c3", "s3",
                        "{}", "c4", "slow__a", "{}", "c5", "slow__b", "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    int64_t t0 = mono_ms();
    fx_run(&f, "time it");
    int64_t took = mono_ms() - t0;
    stamp v[8];
    size_t n = read_stamps(v, 8);
    assert_int_equal(n, 5);
    const stamp *s1 = find_stamp(v, n, "s1"), *s2 = find_stamp(v, n, "s2"),
                *s3 = find_stamp(v, n, "s3"), *a = find_stamp(v, n, "ka"),
                *b = find_stamp(v, n, "kb");
    /* the three independent tools overlap: each started before any of them ended */
    long long last_start = s1->start > s2->start ? s1->start : s2->start;
    last_start = last_start > s3->start ? last_start : s3->start;
    long long first_end = s1->end < s2->end ? s1->end : s2->end;
    first_end = first_end < s3->end ? first_end : s3->end;
    assert_true(last_start < first_end);
    /* the toolkit's two calls one after the other, and in parallel with the others */
    assert_true(b->start >= a->end);
    assert_true(a->start < first_end);
    /* results in the model's order */
    req r;
    req_get(&f, 1, &r);
    json_t *msgs = json_object_get(r.json, "messages");
    size_t m = json_array_size(msgs);
    const char *ids[] = {"c1", "c2", "c3", "c4", "c5"};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(jstr(json_array_get(msgs, m - 5 + i), "tool_call_id"), ids[i]);
    req_free(&r);
    long long first_start = s1->start < s2->start ? s1->start : s2->start;
    first_start = first_start < s3->start ? first_start : s3->start;
    long long last_end = s1->end > s2->end ? s1->end : s2->end;
    last_end = last_end > s3->end ? last_end : s3->end;
    print_message("three 0.3 s tools ran from first start to last end in %lld ms; the toolkit's "
                  "two took %lld ms; the whole session %lld ms\n",
                  (last_end - first_start) / 1000000, (b->end - a->start) / 1000000,
                  (long long)took);
    fx_free(&f);
}

static void test_hundred_tools(void **st)
{
    (void)st;
    /* a toolkit of 100 tools whose parameter takes its enum from 1,000 context values */
    size_t cap = 1 << 20;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t k = (size_t)snprintf(t, cap,
                                "{\"toolkits\": [{\"prefix\": \"big\", \"context\": "
                                "{\"items\": [");
    for (int i = 0; i < 1000; i++)
        k += (size_t)snprintf(t + k, cap - k, "%s\"v%04d\"", i ? "," : "", i);
    k += (size_t)snprintf(t + k, cap - k, "]}, \"tools\": [");
    for (int i = 0; i < 100; i++)
        k += (size_t)snprintf(
            t + k, cap - k,
            "%s{\"name\": \"t%03d\", \"description\": \"d\", \"command\": [\"echo\"], "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"item\": {\"type\": "
            "\"string\", \"x-enum-from\": \"items\"}}}}",
            i ? "," : "", i);
    snprintf(t + k, cap - k, "]}]}");
    char saved[256];
    snprintf(saved, sizeof saved, "%s", tools_path);
    write_file("big.json", t, tools_path, sizeof tools_path);
    free(t);
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "big__t099", "{\"item\": \"v0999\"}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "big");
    json_t *tools;
    offered(&f, 0, &tools);
    assert_int_equal(json_array_size(tools), 100);
    for (size_t i = 0; i < 100; i++) {
        json_t *fn = json_object_get(json_array_get(tools, i), "function");
        json_t *en = json_object_get(
            json_object_get(json_object_get(json_object_get(fn, "parameters"), "properties"),
                            "item"),
            "enum");
        assert_int_equal(json_array_size(en), 1000);
    }
    json_decref(tools);
    assert_result(&f, "c1", 1, "");
    fx_free(&f);
    snprintf(tools_path, sizeof tools_path, "%s", saved);
}

/* A parameter's enum through the toolkit's filters, recomputed when a call
 * changes the context: two model calls see two enums. */
static void test_filtered_enum(void **st)
{
    (void)st;
    const char *t = "{\"toolkits\": [{\"prefix\": \"crm\","
                    " \"context\": {\"users\": [{\"name\": \"al\", \"active\": true, "
                    "\"updated\": 1}, {\"name\": \"bo\", \"active\": false, \"updated\": 2}]},"
                    " \"filters\": {\"active_only\": {\"where\": {\"active\": true}},"
                    "  \"recent\": {\"sort\": \"-updated\", \"limit\": 20},"
                    "  \"names\": {\"map\": \"name\", \"unique\": true}},"
                    " \"tools\": [{\"name\": \"activate\", \"description\": \"d\","
                    "   \"command\": [\"./plane.sh\", \"activate\"], \"updates_context\": true},"
                    "  {\"name\": \"pick\", \"description\": \"d\", \"command\": [\"cat\"],"
                    "   \"parameters\": {\"type\": \"object\", \"properties\": {\"user\": "
                    "{\"type\": \"string\", \"x-enum-from\": {\"path\": \"users\", \"filters\": "
                    "[\"active_only\", \"recent\", \"names\"]}}}}}]}]}";
    char saved[256];
    snprintf(saved, sizeof saved, "%s", tools_path);
    write_file("crm.json", t, tools_path, sizeof tools_path);
    fx f;
    setup_engine(&f, 0, NULL);
    snprintf(tools_path, sizeof tools_path, "%s", saved); /* loaded: the next tests' file */
    const char *t1[] = {"c1", "crm__pick", "{\"user\": \"bo\"}", NULL};
    const char *t2[] = {"c2", "crm__activate", "{}", NULL};
    const char *t3[] = {"c3", "crm__pick", "{\"user\": \"bo\"}", NULL};
    push_calls(&f, t1);
    push_calls(&f, t2);
    push_calls(&f, t3);
    push_text(&f, "done");
    fx_run(&f, "pick");
    const char *want[] = {"[\"al\"]", "[\"al\"]", "[\"cy\",\"bo\",\"al\"]"};
    for (size_t i = 0; i < 3; i++) {
        json_t *sch = offered_schema(&f, i, "crm__pick");
        char *en = json_dumps(
            json_object_get(json_object_get(json_object_get(sch, "properties"), "user"), "enum"),
            JSON_COMPACT);
        if (!en || strcmp(en, want[i]))
            fail_msg("request %zu offered %s, wanted %s", i, en ? en : "no enum", want[i]);
        free(en);
        json_decref(sch);
    }
    /* the live values check the arguments too: bo is inactive, then active */
    assert_result(&f, "c1", 0, "is not one of the values of context");
    assert_result(&f, "c3", 1, "bo");
    fx_free(&f);
}

static void test_sessions_apart(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    ac_session *other = ac_session_new(f.e, "t2", NULL, &ae);
    assert_non_null(other);
    const char *t1[] = {"c1", "plane__login", "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "in");
    fx_run(&f, "log in");
    assert_string_equal(states_of(&f, "plane"), "[\"authenticated\"]");
    /* the other session still starts logged out */
    ac_session *first = f.s;
    f.s = other;
    push_text(&f, "hello");
    fx_run(&f, "hi");
    assert_string_equal(offered(&f, 2, NULL), "kb__pick,plane__approve,plane__login," INDEP);
    assert_string_equal(states_of(&f, "plane"), "[]");
    f.s = first;
    ac_session_free(other);
    fx_free(&f);
}

static void test_journal_replay(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 1, NULL);
    const char *t1[] = {
        "c1", "plane__login", "{}", "c2", "plane__select_project", "{\"project\": \"beta\"}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "journal it");
    char *live = ac_session_toolkits_json(f.s);
    char err[512];
    int events = 0;
    ac_session *re = test_replay_journal(f.e, "t1", f.journal, &events, err, sizeof err);
    if (!re)
        fail_msg("replay: %s", err);
    char *replayed = ac_session_toolkits_json(re);
    assert_non_null(replayed);
    assert_string_equal(live, replayed);
    assert_non_null(strstr(replayed, "\"selected_project\":\"beta\""));
    /* the journal names tools prefix::tool */
    FILE *jf = fopen(f.journal, "r");
    assert_non_null(jf);
    char *line = NULL;
    size_t lcap = 0;
    int saw_display = 0, saw_call = 0, saw_wire = 0;
    while (getline(&line, &lcap, jf) > 0) {
        saw_display |= strstr(line, "\"toolkit\"") && strstr(line, "\"prefix\":\"plane\"") &&
                       strstr(line, "\"tool\":\"plane::login\"");
        saw_call |= strstr(line, "\"name\":\"plane::select_project\"") != NULL;
        saw_wire |= strstr(line, "plane__") != NULL;
    }
    assert_true(saw_call);
    assert_false(saw_wire); /* the journal never shows the wire names */
    free(line);
    fclose(jf);
    assert_true(saw_display);
    free(live);
    free(replayed);
    ac_session_free(re);
    fx_free(&f);
}

static void test_context_schema_violation(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "plane__login",   "{}", "c2", "plane__badupdate", "{}",
                        "c3", "plane__approve", "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "bad update");
    assert_result(&f, "c2", 0, "does not match the toolkit's context_schema");
    assert_result(&f, "c3", 0, "not run: an earlier call of toolkit plane failed");
    json_t *j = kits(&f);
    json_t *ctx = json_object_get(json_object_get(j, "plane"), "context");
    assert_null(json_object_get(ctx, "selected_project")); /* nothing changed */
    assert_int_equal(json_object_size(ctx), 1);
    json_decref(j);
    fx_free(&f);
}

/* a toolkit callback tool: reads the context and updates it */
static void cb_note(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    (void)args;
    cb_calls++;
    const char *ctx = ac_tool_call_context(h);
    char saw[512];
    snprintf(saw, sizeof saw, "saw %s", ctx ? ctx : "nothing");
    json_t *o = json_pack("{s:s, s:{s:s}}", "result", saw, "context", "note", "written");
    char *out = json_dumps(o, JSON_COMPACT);
    ac_tool_call_complete(h, 1, out);
    free(out);
    json_decref(o);
}

static void test_callback_tool(void **st)
{
    (void)st;
    char saved[256];
    snprintf(saved, sizeof saved, "%s", tools_path);
    write_file("cb.json",
               "{\"toolkits\": [{\"prefix\": \"memo\", \"context\": {\"n\": 1},"
               " \"tools\": [{\"name\": \"note\", \"description\": \"d\", \"callback\": true,"
               " \"updates_context\": true, \"enables_states\": [\"noted\"]},"
               " {\"name\": \"read\", \"description\": \"d\", \"callback\": true,"
               " \"required_states\": [\"noted\"], \"required_context\": [\"note\"]}]}]}",
               tools_path, sizeof tools_path);
    fx f;
    fx_base(&f);
    snprintf(f.base, sizeof f.base, "http://127.0.0.1:%d/v1", f.port);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = f.loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = f.base;
    cfg.api_key = KEY;
    cfg.model = "test-model";
    cfg.params = quick_params;
    cfg.output = &f.out;
    f.e = ac_engine_new(&cfg, &ae);
    assert_non_null(f.e);
    assert_int_equal(ac_engine_add_tools(f.e, tools_path, &ae), 0);
    assert_int_equal(ac_engine_add_callback_tool(f.e, "memo::note", NULL, NULL, cb_note, NULL, &ae),
                     0);
    f.s = ac_session_new(f.e, "t1", NULL, &ae);
    assert_non_null(f.s);
    const char *t1[] = {"c1", "memo__note", "{}", "c2", "memo__read", "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "note");
    assert_int_equal(cb_calls, 1);
    assert_result(&f, "c1", 1, "saw {\"n\":1}");
    assert_result(&f, "c2", 0, "no callback is registered for tool 'memo::read'");
    json_t *j = kits(&f);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(j, "memo"), "context"), "note")),
                        "written");
    json_decref(j);
    fx_free(&f);
    snprintf(tools_path, sizeof tools_path, "%s", saved);
}

static void test_restore_api(void **st)
{
    (void)st;
    fx f;
    setup_engine(&f, 0, NULL);
    assert_int_equal(
        ac_session_toolkits_restore(f.s,
                                    "{\"plane\": {\"states\": [\"authenticated\"], \"context\": "
                                    "{\"projects\": [\"gamma\"]}}}",
                                    &ae),
        0);
    assert_int_equal(ac_session_toolkits_restore(f.s, "{\"nope\": {}}", &ae), -1);
    assert_non_null(strstr(ae.text, "unknown toolkit 'nope'"));
    assert_int_equal(ac_session_toolkits_restore(f.s, "{\"plane\": {\"states\": 3}}", &ae), -1);
    push_text(&f, "hi");
    fx_run(&f, "restored");
    assert_non_null(strstr(offered(&f, 0, NULL), "plane__select_project"));
    json_t *sch = offered_schema(&f, 0, "plane__select_project");
    char *en = json_dumps(
        json_object_get(json_object_get(json_object_get(sch, "properties"), "project"), "enum"),
        JSON_COMPACT);
    assert_string_equal(en, "[\"gamma\"]");
    free(en);
    json_decref(sch);
    fx_free(&f);
}

/* a context whose JSON is over what one environment variable may hold is not passed: the
 * call fails with the reason and nothing changes */
static void test_context_too_big(void **st)
{
    (void)st;
    size_t big = 140 * 1024;
    char *t = malloc(big + 512);
    assert_non_null(t);
    int k = snprintf(t, 512, "{\"toolkits\": [{\"prefix\": \"huge\", \"context\": {\"blob\": \"");
    memset(t + k, 'x', big);
    snprintf(t + k + big, 512,
             "\"}, \"tools\": [{\"name\": \"look\", \"description\": \"d\", "
             "\"command\": [\"true\"], \"enables_states\": [\"looked\"]}]}]}");
    char saved[256];
    snprintf(saved, sizeof saved, "%s", tools_path);
    write_file("huge.json", t, tools_path, sizeof tools_path);
    free(t);
    fx f;
    setup_engine(&f, 0, NULL);
    const char *t1[] = {"c1", "huge__look", "{}", NULL};
    push_calls(&f, t1);
    push_text(&f, "done");
    fx_run(&f, "look");
    assert_result(&f, "c1", 0,
                  "not run: the toolkit's context is 143371 bytes of JSON, more than the 131040");
    assert_string_equal(states_of(&f, "huge"), "[]");
    fx_free(&f);
    snprintf(tools_path, sizeof tools_path, "%s", saved);
}

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/agentc_toolkits_XXXXXX");
    assert_non_null(mkdtemp(dir));
    plane_file(tools_path, sizeof tools_path);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    const char *files[] = {"plane.sh", "tools.json", "stamps",  "big.json",
                           "cb.json",  "huge.json",  "crm.json"};
    char p[256];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_offers),
        cmocka_unit_test(test_toggle),
        cmocka_unit_test(test_pipeline_one_turn),
        cmocka_unit_test(test_failing_middle),
        cmocka_unit_test(test_reasons),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_parallel_and_sequence),
        cmocka_unit_test(test_hundred_tools),
        cmocka_unit_test(test_filtered_enum),
        cmocka_unit_test(test_sessions_apart),
        cmocka_unit_test(test_journal_replay),
        cmocka_unit_test(test_context_schema_violation),
        cmocka_unit_test(test_callback_tool),
        cmocka_unit_test(test_restore_api),
        cmocka_unit_test(test_context_too_big),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
