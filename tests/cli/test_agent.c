/*
 * test_agent.c - the agent format (src/cli/agent.h): clear refusals, a record
 * without a secret, a record rebuilding its engine once the files it came
 * from are gone, the keys two records differ in, overrides, --agents FILE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "agent.h"
#include "session/tools_internal.h"
#include "tools/schema.h"
#include "test_tmpdir.h"

static void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ac_cli_agent_opts of json fails with a message holding want. */
static void refused(const char *json, const char *want)
{
    ac_cli_agent_hold h;
    ac_cli_engine_opts o;
    char err[512] = "";
    assert_int_equal(ac_cli_agent_opts(json, tmpdir, &h, &o, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("for %s: '%s' lacks '%s'", json, err, want);
    assert_null(h.doc); /* nothing held after a refusal */
}

static void parse_errors_are_clear(void **state)
{
    (void)state;
    refused("{\"name\": \"a\", \"modle\": \"x\"}", "agent 'a': unknown key \"modle\"");
    refused("{\"name\": \"a\", \"model\": 5}", "agent 'a': \"model\" must be a string");
    refused("{\"tools\": \"calc\"}", "\"tools\" must be an array");
    refused("{\"params\": {\"max_tool_calls\": [1]}}", "\"params\".max_tool_calls must be");
    refused("{\"request\": {\"temprature\": 1}}", "unknown setting \"temprature\"");
    refused("{\"request\": {\"temperature\": \"hot\"}}",
            "\"request\".temperature must be a number");
    refused("{\"provider\": \"openia\"}", "unknown provider 'openia'");
    refused("{\"name\": \"bad name!\"}", "\"name\" must be 1 to 64 letters");
    refused("{\"overridable\": [\"name\"]}", "'name' is not a key a session may override");
    refused("{\"name\": \"a\", \"model\": 1,", "agent: 1:");
    refused("[1]", "must be a JSON object");
    /* secrets: never in an agent */
    refused("{\"name\": \"a\", \"api_key_env\": \"sk-proj-abcdefghijkl\"}",
            "\"api_key_env\" looks like a secret");
    refused("{\"model\": \"sk-proj-abcdefghijkl\"}", "looks like a secret");
    refused("{\"api_key\": \"x\"}", "never holds an API key");
    refused("{\"base_url\": \"http://u:pw@127.0.0.1:1/v1\"}", "\"base_url\" holds credentials");
    refused("{\"headers\": [\"Authorization: Bearer abcdefgh\"]}", "names a header only");
    refused("{\"headers\": [\"X-Org: 1234567\"]}", "names a header only");
    refused("{\"params\": {\"token\": \"ghp_abcdefghijklmnop\"}}", "looks like a secret");
}

static void file_form_reads_all_keys(void **state)
{
    (void)state;
    ac_cli_agent_hold h;
    ac_cli_engine_opts o;
    char err[512] = "";
    const char *json =
        "{\"name\": \"support\", \"spec\": \"s.fsm\", \"provider\": \"openai\", \"base_url\": "
        "\"http://127.0.0.1:9/v1\", \"api_key_env\": \"SUPPORT_KEY\", \"model\": \"m1\", "
        "\"system\": \"@prompt.txt\", \"tools\": [\"t.json\", \"builtin:calculator\"], "
        "\"params\": {\"max_tool_calls\": 3, \"label\": \"x\", \"on\": true}, \"request\": "
        "{\"temperature\": 0.5, \"stop\": [\"END\"], \"seed\": 7, \"parallel_tool_calls\": "
        "false, \"request_json\": {\"user\": \"u\"}}, \"output_schema\": {\"type\": "
        "\"object\"}, \"overridable\": [\"model\", \"request\"]}";
    assert_int_equal(ac_cli_agent_opts(json, "/base", &h, &o, err, sizeof err), 0);
    assert_string_equal(h.name, "support");
    assert_string_equal(o.spec, "/base/s.fsm");
    assert_string_equal(o.system, "@/base/prompt.txt");
    assert_string_equal(o.tools[0], "/base/t.json");
    assert_string_equal(o.tools[1], "builtin:calculator");
    assert_int_equal(o.n_tools, 2);
    assert_int_equal(o.n_params, 3);
    assert_string_equal(o.params[0], "max_tool_calls=3");
    assert_string_equal(o.params[2], "on=true");
    assert_true(o.req.has_temperature && o.req.temperature == 0.5);
    assert_string_equal(o.req.stop[0], "END");
    assert_int_equal(o.req.parallel_tool_calls, -1);
    assert_string_equal(o.req.request_json, "{\"user\":\"u\"}");
    assert_string_equal(o.output_schema_text, "{\"type\":\"object\"}");
    assert_string_equal(o.api_key_env, "SUPPORT_KEY");
    ac_cli_agent_hold_free(&h);
}

#define MCP_ENV_SECRET "mcp-env-secret-4711"
#define MCP_HDR_SECRET "mcp-header-secret-0815"
#define TOOL_ENV_SECRET "tool-env-secret-2323"
#define CLI_HDR_SECRET "cli-header-secret-9999"

static const char tools_json[] =
    "{\"tools\": [{\"name\": \"hello\", \"description\": \"says hello\", \"command\": "
    "[\"./hello.sh\"], \"env\": {\"TOKEN\": \"" TOOL_ENV_SECRET "\"}}],\n"
    " \"mcp\": [{\"name\": \"fs\", \"command\": [\"node\", \"srv.js\"], \"env\": {\"API\": "
    "\"" MCP_ENV_SECRET "\"}},\n"
    "          {\"name\": \"web\", \"url\": \"http://127.0.0.1:1/mcp\", \"headers\": "
    "{\"Authorization\": \"Bearer " MCP_HDR_SECRET "\"}}]}\n";

/* A configuration over files in tmpdir/a: the shipped spec copied, a tool file, a prompt. */
static void setup_files(ac_cli_engine_opts *o, char *spec, char *tools, char *prompt)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/a' && cp examples/specs/tool_budget.fsm '%s/a/agent.fsm'", tmpdir,
             tmpdir);
    assert_int_equal(system(cmd), 0);
    write_file("a/tools.json", tools_json);
    write_file("a/prompt.txt", "You are terse.");
    sprintf(spec, "%s/a/agent.fsm", tmpdir);
    sprintf(tools, "%s/a/tools.json", tmpdir);
    sprintf(prompt, "@%s/a/prompt.txt", tmpdir);
    memset(o, 0, sizeof *o);
    o->spec = spec;
    o->tools[0] = tools;
    o->tools[1] = "builtin:calculator";
    o->n_tools = 2;
    o->system = prompt;
    o->provider = "openai";
    o->base_url = "http://user:basic-pw-secret@127.0.0.1:1/v1";
    o->model = "m1";
    o->params[0] = "max_tool_calls=2";
    o->n_params = 1;
    o->headers[0] = "X-Api: " CLI_HDR_SECRET;
    o->n_headers = 1;
    o->req.has_temperature = true;
    o->req.temperature = 0.25;
}

static void record_has_no_secret(void **state)
{
    (void)state;
    char spec[300], tools[300], prompt[300], err[512] = "";
    ac_cli_engine_opts o;
    setup_files(&o, spec, tools, prompt);
    char *rec = ac_cli_agent_record(&o, "support", err, sizeof err);
    assert_non_null(rec);
    assert_null(strstr(rec, MCP_ENV_SECRET));
    assert_null(strstr(rec, MCP_HDR_SECRET));
    assert_null(strstr(rec, TOOL_ENV_SECRET));
    assert_null(strstr(rec, CLI_HDR_SECRET));
    assert_null(strstr(rec, "basic-pw-secret"));
    assert_null(strstr(rec, "user:"));
    /* what it keeps instead */
    assert_non_null(strstr(rec, "\"headers\":[\"X-Api\"]"));
    assert_non_null(strstr(rec, "\"base_url\":\"http://127.0.0.1:1/v1\""));
    assert_non_null(strstr(rec, "{\\\"$from\\\":\\\"tool_file\\\"}"));
    assert_non_null(strstr(rec, "\"system\":{\"text\":\"You are terse.\"}"));
    assert_non_null(strstr(rec, "\"name\":\"support\""));
    json_t *j = json_loads(rec, 0, NULL);
    assert_non_null(j);
    assert_int_equal(strlen(json_string_value(json_object_get(json_object_get(j, "spec"), "hash"))),
                     16);
    json_decref(j);
    free(rec);
}

/* The record read back, an engine built from it (b must outlive it). */
static ac_engine *engine_of(const char *rec, ac_cli_agent_hold *h, ac_cli_engine_base *b,
                            ac_loop *loop, char *err)
{
    ac_cli_engine_opts o;
    assert_int_equal(ac_cli_agent_opts(rec, NULL, h, &o, err, 512), 0);
    assert_int_equal(ac_cli_engine_resolve(&o, "test", b), 0);
    ac_engine *e = NULL;
    ac_error ae;
    assert_int_equal(ac_cli_engine_build(b, loop, NULL, "test", &e, &ae), 0);
    return e;
}

static void record_rebuilds_after_files_moved(void **state)
{
    (void)state;
    char spec[300], tools[300], prompt[300], err[512] = "";
    ac_cli_engine_opts o;
    setup_files(&o, spec, tools, prompt);
    /* no secrets kept in the tool file for this one: it will be gone */
    write_file("a/tools.json", "{\"tools\": [{\"name\": \"hello\", \"description\": \"hi\", "
                               "\"command\": [\"./hello.sh\", \"x\"]}]}");
    o.headers[0] = NULL;
    o.n_headers = 0;
    char *rec = ac_cli_agent_record(&o, NULL, err, sizeof err);
    assert_non_null(rec);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mv '%s/a' '%s/moved'", tmpdir, tmpdir);
    assert_int_equal(system(cmd), 0);

    ac_loop *loop = ac_loop_new();
    ac_cli_agent_hold h;
    ac_cli_engine_base b;
    ac_engine *e = engine_of(rec, &h, &b, loop, err);
    const ac_tool *t = ac_tools_find(e, "hello");
    assert_non_null(t);
    char want[400];
    snprintf(want, sizeof want, "%s/a/./hello.sh", tmpdir); /* resolved as when recorded */
    assert_string_equal(t->argv[0], want);
    assert_non_null(ac_tools_find(e, "calculator"));
    assert_int_equal(ac_engine_param_int(e, "max_tool_calls", -1), 2);
    /* the same record again: nothing differs */
    ac_engine_free(e);
    ac_cli_engine_base_free(&b);
    ac_cli_agent_hold_free(&h);
    ac_loop_free(loop);
    free(rec);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/moved'", tmpdir);
    assert_int_equal(system(cmd), 0);
}

static void references_read_again(void **state)
{
    (void)state;
    char spec[300], tools[300], prompt[300], err[512] = "";
    ac_cli_engine_opts o;
    setup_files(&o, spec, tools, prompt);
    char *rec = ac_cli_agent_record(&o, NULL, err, sizeof err);
    assert_non_null(rec);
    ac_cli_agent_hold h;
    ac_cli_engine_opts back;
    assert_int_equal(ac_cli_agent_opts(rec, NULL, &h, &back, err, sizeof err), 0);
    assert_non_null(strstr(back.tool_texts[0], MCP_ENV_SECRET));
    assert_non_null(strstr(back.tool_texts[0], MCP_HDR_SECRET));
    assert_non_null(strstr(back.tool_texts[0], TOOL_ENV_SECRET));
    assert_null(back.tool_texts[1]);
    assert_string_equal(back.tools[1], "builtin:calculator");
    assert_string_equal(back.system_text, "You are terse.");
    assert_int_equal(back.n_headers, 1); /* a name only: not sent until given again */
    assert_string_equal(back.headers[0], "X-Api");
    /* a record of the rebuilt options is the same record */
    char *rec2 = ac_cli_agent_record(&back, NULL, err, sizeof err);
    assert_non_null(rec2);
    json_t *d = ac_cli_agent_diff(rec, rec2);
    char *ds = json_dumps(d, 0);
    if (json_array_size(d))
        fail_msg("differs: %s", ds);
    free(ds);
    json_decref(d);
    free(rec2);
    ac_cli_agent_hold_free(&h);
    /* the servers reordered in the file: each value found by its server's name */
    write_file("a/tools.json",
               "{\"mcp\": [{\"name\": \"web\", \"url\": \"http://127.0.0.1:1/mcp\", "
               "\"headers\": {\"Authorization\": \"Bearer " MCP_HDR_SECRET "\"}},\n"
               "  {\"name\": \"fs\", \"command\": [\"node\", \"srv.js\"], \"env\": {\"API\": "
               "\"" MCP_ENV_SECRET "\"}}],\n"
               " \"tools\": [{\"name\": \"hello\", \"description\": \"says hello\", "
               "\"command\": [\"./hello.sh\"], \"env\": {\"TOKEN\": \"" TOOL_ENV_SECRET "\"}}]}");
    assert_int_equal(ac_cli_agent_opts(rec, NULL, &h, &back, err, sizeof err), 0);
    json_t *t = json_loads(back.tool_texts[0], 0, NULL);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_array_get(json_object_get(t, "mcp"), 0), "env"), "API")),
        MCP_ENV_SECRET); /* "fs" is first in the record */
    json_decref(t);
    ac_cli_agent_hold_free(&h);
    /* the file no longer has a value: refused, naming it (not its value) */
    write_file("a/tools.json", "{\"tools\": [{\"name\": \"hello\", \"description\": \"hi\", "
                               "\"command\": [\"./hello.sh\"], \"env\": {}}], \"mcp\": []}");
    assert_int_equal(ac_cli_agent_opts(rec, NULL, &h, &back, err, sizeof err), -1);
    assert_non_null(strstr(err, "\"TOKEN\""));
    assert_non_null(strstr(err, "no longer has it"));
    snprintf(tools, sizeof tools, "rm -rf '%s/a'", tmpdir);
    assert_int_equal(system(tools), 0);
    assert_int_equal(ac_cli_agent_opts(rec, NULL, &h, &back, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot be read"));
    free(rec);
}

/* A system prompt that begins with '@' is kept as text, never read as a file name. */
static void system_text_with_at(void **state)
{
    (void)state;
    ac_cli_engine_opts o, back;
    ac_cli_agent_hold h;
    char err[512] = "";
    memset(&o, 0, sizeof o);
    o.system_text = "@channel: be brief";
    char *rec = ac_cli_agent_record(&o, NULL, err, sizeof err);
    assert_non_null(rec);
    assert_int_equal(ac_cli_agent_opts(rec, NULL, &h, &back, err, sizeof err), 0);
    assert_string_equal(back.system_text, "@channel: be brief");
    assert_null(back.system);
    ac_cli_agent_hold_free(&h);
    free(rec);
}

static void diff_names_keys(void **state)
{
    (void)state;
    const char *a = "{\"name\":\"default\",\"model\":\"m1\",\"params\":{\"max_tool_calls\":\"3\"},"
                    "\"request\":{},\"tools\":[\"builtin:clock\"]}";
    const char *b = "{\"name\":\"default\",\"model\":\"m2\",\"params\":{\"max_tool_calls\":\"2\","
                    "\"x\":\"1\"},\"request\":{\"temperature\":0.5},\"tools\":[]}";
    json_t *d = ac_cli_agent_diff(a, b);
    char *s = json_dumps(d, JSON_COMPACT);
    assert_string_equal(
        s, "[\"model\",\"tools\",\"params.max_tool_calls\",\"params.x\",\"request.temperature\"]");
    free(s);
    json_decref(d);
    d = ac_cli_agent_diff(NULL, b);
    assert_string_equal(json_string_value(json_array_get(d, 0)), "agent");
    json_decref(d);
}

static void overlay_and_overridable(void **state)
{
    (void)state;
    ac_cli_agent_hold h;
    ac_cli_engine_opts base, given;
    char err[512] = "";
    assert_int_equal(ac_cli_agent_opts("{\"name\": \"support\", \"model\": \"m1\", \"params\": "
                                       "{\"a\": 1, \"b\": 2}, \"overridable\": [\"model\", "
                                       "\"request\"]}",
                                       NULL, &h, &base, err, sizeof err),
                     0);
    memset(&given, 0, sizeof given);
    given.model = "m2";
    given.req.has_temperature = true;
    given.req.temperature = 0.1;
    assert_int_equal(ac_cli_agent_check_overrides(&h, &given, err, sizeof err), 0);
    ac_cli_engine_opts_overlay(&base, &given);
    assert_string_equal(base.model, "m2");
    assert_true(base.req.has_temperature);
    given.params[0] = "b=5";
    given.n_params = 1;
    assert_int_equal(ac_cli_agent_check_overrides(&h, &given, err, sizeof err), -1);
    assert_non_null(strstr(err, "agent 'support' does not let \"params\" be overridden"));
    assert_non_null(strstr(err, "[\"model\",\"request\"]"));
    ac_cli_engine_opts_overlay(&base, &given);
    assert_int_equal(base.n_params, 2);
    assert_string_equal(base.params[1], "b=5");
    assert_string_equal(base.params[0], "a=1");
    ac_cli_agent_hold_free(&h);
}

static void agents_file(void **state)
{
    (void)state;
    char path[400], err[512] = "";
    snprintf(path, sizeof path, "%s/agents.json", tmpdir);
    write_file("agents.json", "{\"agents\": [{\"name\": \"a\", \"model\": \"m1\", \"tools\": "
                              "[\"t.json\"]}, {\"name\": \"b\", \"model\": \"m2\"}]}");
    ac_cli_agents *a = ac_cli_agents_load(path, err, sizeof err);
    assert_non_null(a);
    assert_int_equal(ac_cli_agents_count(a), 2);
    assert_string_equal(ac_cli_agents_name(a, 1), "b");
    assert_non_null(ac_cli_agents_find(a, "a"));
    assert_null(ac_cli_agents_find(a, "c"));
    ac_cli_agents_unknown(a, "c", err, sizeof err);
    assert_string_equal(err, "unknown agent 'c' (the agents are: a, b)");
    ac_cli_agent_hold h;
    ac_cli_engine_opts o;
    assert_int_equal(ac_cli_agent_opts(ac_cli_agents_find(a, "a"), ac_cli_agents_dir(a), &h, &o,
                                       err, sizeof err),
                     0);
    char want[400];
    snprintf(want, sizeof want, "%s/t.json", ac_cli_agents_dir(a));
    assert_string_equal(o.tools[0], want);
    ac_cli_agent_hold_free(&h);
    ac_cli_agents_free(a);

    write_file("agents.json", "{\"agents\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}");
    assert_null(ac_cli_agents_load(path, err, sizeof err));
    assert_non_null(strstr(err, "agents[1]: the name 'a' is taken by agents[0]"));
    write_file("agents.json", "{\"agents\": [{\"name\": \"a\", \"modle\": \"x\"}]}");
    assert_null(ac_cli_agents_load(path, err, sizeof err));
    assert_non_null(strstr(err, "agents.json: agents[0]: agent 'a': unknown key \"modle\""));
    write_file("agents.json", "{\"agent\": []}");
    assert_null(ac_cli_agents_load(path, err, sizeof err));
    assert_non_null(strstr(err, "unknown key \"agent\""));
}

/* docs/agent.schema.json, compiled by the project's own validator. */
static ac_schema *agent_schema(void)
{
    json_error_t je;
    json_t *doc = json_load_file("docs/agent.schema.json", 0, &je);
    if (!doc)
        fail_msg("docs/agent.schema.json:%d: %s", je.line, je.text);
    char err[512] = "";
    ac_schema *sc = ac_schema_compile(doc, err, sizeof err);
    json_decref(doc);
    if (!sc)
        fail_msg("docs/agent.schema.json does not compile: %s", err);
    return sc;
}

/* The example agents file: the schema accepts it, and so does --agents FILE. */
static void example_matches_schema(void **state)
{
    (void)state;
    ac_schema *sc = agent_schema();
    json_t *ex = json_load_file("examples/agents/agents.json", 0, NULL);
    assert_non_null(ex);
    char err[512] = "";
    if (!ac_schema_validate(sc, ex, err, sizeof err))
        fail_msg("examples/agents/agents.json: %s", err);
    json_decref(ex);
    ac_cli_agents *a = ac_cli_agents_load("examples/agents/agents.json", err, sizeof err);
    if (!a)
        fail_msg("%s", err);
    assert_int_equal(ac_cli_agents_count(a), 2);
    ac_cli_agents_free(a);
    ac_schema_free(sc);
}

/* Bad agents files: the schema refuses each, and --agents FILE too. */
static void schema_refuses_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "{\"agents\": []}",
        "{\"agents\": [{\"model\": \"m\"}]}",
        "{\"agents\": [{\"name\": \"a\", \"api_key\": \"x\"}]}",
        "{\"agents\": [{\"name\": \"a\", \"base_url\": \"http://u:p@h/v1\"}]}",
        "{\"agents\": [{\"name\": \"a\", \"request\": {\"temperature\": \"hot\"}}]}",
        "{\"agents\": [{\"name\": \"a\", \"tools\": [\"builtin:clocks\"]}]}",
        "{\"agents\": [{\"name\": \"a\", \"overridable\": [\"name\"]}]}",
        "{\"agents\": [{\"name\": \"a\", \"headers\": [\"X-A: 1\"]}]}",
        "{\"agents\": [{\"name\": \"a b\"}]}",
        "{\"agents\": [{\"name\": \"a\"}], \"extra\": 1}",
    };
    ac_schema *sc = agent_schema();
    char err[512], path[400];
    snprintf(path, sizeof path, "%s/bad.json", tmpdir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *doc = json_loads(bad[i], 0, NULL);
        assert_non_null(doc);
        if (ac_schema_validate(sc, doc, err, sizeof err))
            fail_msg("the schema accepts %s", bad[i]);
        json_decref(doc);
        write_file("bad.json", bad[i]);
        ac_cli_agents *a = ac_cli_agents_load(path, err, sizeof err);
        if (a)
            fail_msg("--agents accepts %s", bad[i]);
        ac_cli_agents_free(a);
    }
    ac_schema_free(sc);
}

static int setup(void **state)
{
    (void)state;
    return test_tmpdir_make("agentc_agent") ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_errors_are_clear),
        cmocka_unit_test(file_form_reads_all_keys),
        cmocka_unit_test(record_has_no_secret),
        cmocka_unit_test(record_rebuilds_after_files_moved),
        cmocka_unit_test(references_read_again),
        cmocka_unit_test(system_text_with_at),
        cmocka_unit_test(diff_names_keys),
        cmocka_unit_test(overlay_and_overridable),
        cmocka_unit_test(agents_file),
        cmocka_unit_test(example_matches_schema),
        cmocka_unit_test(schema_refuses_bad),
    };
    return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
