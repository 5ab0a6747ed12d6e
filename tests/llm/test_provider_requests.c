/* Model request settings and structured output through the HTTP providers, end to end: the
 * exact request bodies each provider receives for every setting, the settings refused at start,
 * and answers checked against an output schema (accepted, refused then accepted with the errors
 * in the next request, refused every time, not JSON). The fixture is provider_fixture.h. */
#include "provider_fixture.h"

/* ---- request settings over HTTP ---- */

/* The body of request i must be exactly head + messages + mid + tools + tail,
 * where messages and tools are what the body holds (checked elsewhere). */
static void assert_body(fx *f, size_t i, const char *head, const char *mid, const char *tail)
{
    req r;
    req_get(f, i, &r);
    char *msgs =
        json_dumps(json_object_get(r.json, "messages"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    char *tools = json_object_get(r.json, "tools") ? json_dumps(json_object_get(r.json, "tools"),
                                                                JSON_COMPACT | JSON_PRESERVE_ORDER)
                                                   : strdup("");
    size_t n = strlen(head) + strlen(msgs) + strlen(mid) + strlen(tools) + strlen(tail) + 1;
    char *want = malloc(n);
    snprintf(want, n, "%s%s%s%s%s", head, msgs, mid, tools, tail);
    if (strcmp(r.body, want) != 0)
        fail_msg("request %zu body:\n%s\nwant:\n%s", i, r.body, want);
    free(want);
    free(msgs);
    free(tools);
    req_free(&r);
}

static void test_settings_openai_over_http(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    const char *stop[] = {"END", "STOP", NULL};
    ac_request_settings st = {.has_temperature = true,
                              .temperature = 0.2,
                              .has_top_p = true,
                              .top_p = 0.95,
                              .stop = stop,
                              .has_seed = true,
                              .seed = 1234,
                              .tool_choice = "calculator",
                              .parallel_tool_calls = -1,
                              .reasoning_effort = "medium",
                              .request_json = "{\"user\":\"u-1\",\"seed\":99,\"logprobs\":true}"};
    f.request = &st;
    fx_engine(&f, AC_PROVIDER_OPENAI, NULL, KEY, NULL, NULL, 0);
    push_stream(&f, oa_text2("Hello", "."));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_answer(f.s), "Hello.");
    assert_body(&f, 0, "{\"model\":\"test-model\",\"messages\":",
                ",\"temperature\":0.2,\"top_p\":0.95,\"stop\":[\"END\",\"STOP\"],\"seed\":99,"
                "\"reasoning_effort\":\"medium\",\"stream\":true,\"stream_options\":"
                "{\"include_usage\":true},\"tools\":",
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"calculator\"}},"
                "\"parallel_tool_calls\":false,\"user\":\"u-1\",\"logprobs\":true}");
    fx_free(&f);

    /* none with the tool present, and required */
    const char *choices[] = {"none", "required"};
    for (int k = 0; k < 2; k++) {
        fx_base(&f);
        ac_request_settings tc = {.tool_choice = choices[k]};
        f.request = &tc;
        fx_engine(&f, AC_PROVIDER_OPENAI, NULL, KEY, NULL, NULL, 0);
        push_stream(&f, oa_text2("A", "."));
        fx_run(&f, NULL);
        char tail[64];
        snprintf(tail, sizeof tail, ",\"tool_choice\":\"%s\"}", choices[k]);
        assert_body(
            &f, 0, "{\"model\":\"test-model\",\"messages\":",
            ",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"tools\":", tail);
        fx_free(&f);
    }
}

static void test_settings_anthropic_over_http(void **state)
{
    (void)state;
    const char *stop[] = {"\n\nHuman:", NULL};
    struct {
        ac_request_settings st;
        const char *head, *tail;
    } cases[] = {
        {{.has_temperature = true,
          .temperature = 0.5,
          .has_top_p = true,
          .top_p = 0.8,
          .stop = stop,
          .tool_choice = "required",
          .parallel_tool_calls = -1,
          .request_json = "{\"top_k\":5,\"metadata\":{\"user_id\":\"u\"}}"},
         "{\"model\":\"test-model\",\"max_tokens\":4096,\"stream\":true,\"temperature\":0.5,"
         "\"top_p\":0.8,\"stop_sequences\":[\"\\n\\nHuman:\"],\"messages\":",
         ",\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},\"top_k\":5,"
         "\"metadata\":{\"user_id\":\"u\"}}"},
        {{.tool_choice = "calculator"},
         "{\"model\":\"test-model\",\"max_tokens\":4096,\"stream\":true,\"messages\":",
         ",\"tool_choice\":{\"type\":\"tool\",\"name\":\"calculator\"}}"},
        {{.tool_choice = "none", .parallel_tool_calls = 1},
         "{\"model\":\"test-model\",\"max_tokens\":4096,\"stream\":true,\"messages\":",
         ",\"tool_choice\":{\"type\":\"none\"}}"},
        {{.parallel_tool_calls = -1},
         "{\"model\":\"test-model\",\"max_tokens\":4096,\"stream\":true,\"messages\":",
         ",\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fx f;
        fx_base(&f);
        f.request = &cases[k].st;
        fx_engine(&f, AC_PROVIDER_ANTHROPIC, NULL, KEY, NULL, NULL, 0);
        push_stream(&f, an_text("Fine."));
        fx_run(&f, NULL);
        assert_string_equal(ac_session_answer(f.s), "Fine.");
        assert_body(&f, 0, cases[k].head, ",\"tools\":", cases[k].tail);
        fx_free(&f);
    }
}

/* A summary is asked without tools: the sampling settings go with it, the
 * tool settings do not. */
static void test_settings_summary_over_http(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    ac_request_settings st = {.has_temperature = true,
                              .temperature = 0.3,
                              .tool_choice = "calculator",
                              .parallel_tool_calls = -1};
    f.request = &st;
    fx_engine(&f, AC_PROVIDER_OPENAI, NULL, KEY, summarize_params, NULL, 0);
    push_stream(&f, oa_text2("Answer", " one."));
    fx_run(&f, "first question");
    push_stream(&f, oa_text2("Earlier", " one."));
    push_stream(&f, oa_text2("Answer", " two."));
    fx_run(&f, "second question");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    assert_body(&f, 1, "{\"model\":\"test-model\",\"messages\":",
                ",\"temperature\":0.3,\"stream\":true,\"stream_options\":{\"include_usage\":true}",
                "}");
    assert_body(&f, 2, "{\"model\":\"test-model\",\"messages\":",
                ",\"temperature\":0.3,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                "\"tools\":",
                ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"calculator\"}},"
                "\"parallel_tool_calls\":false}");
    fx_free(&f);
}

/* Settings a provider does not have, bad values and a tool_choice naming no
 * tool are refused before any call. */
static void test_settings_refused(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_ANTHROPIC;
    cfg.base_url = "http://127.0.0.1:9";
    cfg.api_key = KEY;
    cfg.model = "m";
    ac_request_settings st = {.has_seed = true, .seed = 1};
    cfg.request = &st;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_string_equal(ae.text, "seed is not a setting Anthropic has (OpenAI only)");
    ac_request_settings eff = {.reasoning_effort = "high"};
    cfg.request = &eff;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "reasoning_effort is not a setting Anthropic has"));
    ac_request_settings hot = {.has_temperature = true, .temperature = 1.2};
    cfg.request = &hot;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    cfg.provider = AC_PROVIDER_OPENAI;
    ac_engine *e = ac_engine_new(&cfg, &ae); /* 1.2 is fine for OpenAI */
    if (!e)
        fail_msg("%s", ae.text);
    ac_engine_free(e);
    ac_request_settings pass = {.request_json = "{\"messages\":[]}"};
    cfg.request = &pass;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "request JSON may not set \"messages\""));
    /* the script provider checks the values too */
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"x\"}\n";
    ac_request_settings far = {.has_top_p = true, .top_p = -1};
    cfg.request = &far;
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "top_p -1 is out of range"));
    /* tool_choice must name a tool the engine has when a session starts */
    cfg.provider = AC_PROVIDER_OPENAI;
    ac_request_settings one = {.tool_choice = "calculator"};
    cfg.request = &one;
    e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("%s", ae.text);
    assert_null(ac_session_new(e, "s", NULL, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "tool_choice 'calculator' names no configured tool"));
    assert_int_equal(ac_engine_add_tools(e, "builtin:calculator", &ae), 0);
    ac_session *s = ac_session_new(e, "s", NULL, &ae);
    if (!s)
        fail_msg("%s", ae.text);
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* ---- structured output (--output-schema) ---- */

#define OUT_SCHEMA                                                                                 \
    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"population\": "   \
    "{\"type\": \"integer\", \"minimum\": 0}}, \"required\": [\"city\", \"population\"], "         \
    "\"additionalProperties\": false}"

static char *oa_text1(const char *text)
{
    const char *pieces[] = {text, NULL};
    return oa_text_v(pieces, 12, 3);
}

/* The engine's request carries the schema natively: response_format, the schema as given. */
static void assert_response_format(const req *r)
{
    json_t *rf = json_object_get(r->json, "response_format");
    assert_non_null(rf);
    assert_string_equal(jstr(rf, "type"), "json_schema");
    json_t *js = json_object_get(rf, "json_schema");
    assert_string_equal(jstr(js, "name"), "output");
    assert_true(json_is_false(json_object_get(js, "strict")));
    json_t *want = json_loads(OUT_SCHEMA, 0, NULL);
    assert_non_null(want);
    assert_true(json_equal(json_object_get(js, "schema"), want));
    json_decref(want);
}

static void schema_setup(fx *f, const char *const *params, int journal)
{
    fx_base(f);
    fx_output_schema = OUT_SCHEMA;
    fx_engine(f, AC_PROVIDER_OPENAI, NULL, KEY, params, NULL, journal);
    fx_output_schema = NULL;
}

static void test_schema_valid_first_time(void **state)
{
    (void)state;
    fx f;
    schema_setup(&f, NULL, 0);
    push_stream(&f, oa_text2("{\"city\": \"Oslo\", ", "\"population\": 709000}"));
    fx_run(&f, "Largest city of Norway?");
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "{\"city\": \"Oslo\", \"population\": 709000}");
    assert_int_equal(f.rejected, 0);
    assert_int_equal(ac_httpd_request_count(f.h), 1);
    req r;
    req_get(&f, 0, &r);
    assert_response_format(&r);
    assert_string_equal(jstr(last_message(&r), "content"), "Largest city of Norway?");
    req_free(&r);
    fx_free(&f);
}

/* A refused answer goes back with its errors; the second request carries them after it. */
static void test_schema_invalid_then_valid(void **state)
{
    (void)state;
    fx f;
    schema_setup(&f, NULL, 1);
    push_stream(&f, oa_text1("{\"city\": \"Oslo\", \"population\": \"many\"}"));
    push_stream(&f, oa_text1("{\"city\": \"Oslo\", \"population\": 709000}"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "{\"city\": \"Oslo\", \"population\": 709000}");
    assert_int_equal(f.rejected, 1);
    assert_string_equal(f.last_rejection, "/population: expected integer, got string");
    assert_int_equal(ac_httpd_request_count(f.h), 2);
    req r;
    req_get(&f, 1, &r);
    assert_response_format(&r);
    json_t *msgs = json_object_get(r.json, "messages");
    size_t n = json_array_size(msgs);
    assert_true(n >= 3);
    json_t *refused = json_array_get(msgs, n - 2), *errors = json_array_get(msgs, n - 1);
    assert_string_equal(jstr(refused, "role"), "assistant");
    assert_string_equal(jstr(refused, "content"), "{\"city\": \"Oslo\", \"population\": \"many\"}");
    assert_string_equal(jstr(errors, "role"), "user");
    assert_non_null(strstr(jstr(errors, "content"), "/population: expected integer, got string"));
    req_free(&r);
    /* the journal replays to the same transitions: the schema is in its spawn event */
    ac_engine_config rc;
    memset(&rc, 0, sizeof rc);
    rc.provider = AC_PROVIDER_SCRIPT;
    ac_engine *re = ac_engine_new(&rc, &ae);
    assert_non_null(re);
    char err[512] = "";
    int events = 0;
    ac_session *rs = test_replay_journal(re, "t1", f.journal, &events, err, sizeof err);
    if (!rs)
        fail_msg("replay: %s", err);
    assert_string_equal(ac_session_answer(rs), ac_session_answer(f.s));
    ac_session_free(rs);
    ac_engine_free(re);
    fx_free(&f);
}

/* Refused every time: output_retries more tries, then the turn fails with the last errors. */
static void test_schema_invalid_every_time(void **state)
{
    (void)state;
    const char *const params[] = {"backoff_initial=10ms", "backoff_max=2s", "output_retries=2",
                                  NULL};
    fx f;
    schema_setup(&f, params, 0);
    push_stream(&f, oa_text1("{\"city\": \"Oslo\"}"));
    push_stream(&f, oa_text1("{\"city\": 1, \"population\": 2}"));
    push_stream(&f, oa_text1("{\"city\": \"Oslo\", \"population\": -1}"));
    fx_run(&f, NULL);
    assert_string_equal(ac_turn_outcome_name(ac_session_last_turn(f.s, NULL)), "failed");
    assert_int_equal(ac_httpd_request_count(f.h), 3);
    assert_int_equal(f.rejected, 2);
    const char *e = ac_session_error(f.s);
    assert_non_null(e);
    assert_non_null(strstr(e, "does not match the output schema"));
    assert_non_null(strstr(e, "after 2 retries"));
    assert_non_null(strstr(e, "/population")); /* the last answer's errors */
    assert_string_equal(ac_session_answer(f.s), "");
    req r;
    req_get(&f, 2, &r); /* the third request carries the second answer's errors */
    assert_non_null(strstr(jstr(last_message(&r), "content"), "/city: expected string"));
    req_free(&r);
    fx_free(&f);
}

static void test_schema_not_json(void **state)
{
    (void)state;
    fx f;
    schema_setup(&f, NULL, 0);
    push_stream(&f, oa_text1("Sure! The city is Oslo."));
    push_stream(&f, oa_text1(" {\"city\": \"Oslo\", \"population\": 709000}\n"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_int_equal(f.rejected, 1);
    assert_non_null(strstr(f.last_rejection, "the answer is not JSON"));
    assert_string_equal(ac_session_answer(f.s), " {\"city\": \"Oslo\", \"population\": 709000}\n");
    req r;
    req_get(&f, 1, &r);
    assert_non_null(strstr(jstr(last_message(&r), "content"), "the answer is not JSON"));
    req_free(&r);
    fx_free(&f);
}

/* A schema agentc's validator refuses, or that is not JSON, stops the engine at start. */
static void test_schema_refused_at_start(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = "http://127.0.0.1:9/v1";
    cfg.model = "m";
    cfg.output_schema = "{\"type\": \"object\", \"properties\": {\"a\": {\"pattern\": \"(a\"}}}";
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "output schema: "));
    assert_non_null(strstr(ae.text, "/properties/a"));
    cfg.output_schema = "{\"type\": \"object\", \"frobnicate\": true}";
    assert_null(ac_engine_new(&cfg, &ae));
    assert_int_equal(ae.code, AC_ECONFIG);
    assert_non_null(strstr(ae.text, "frobnicate"));
    cfg.output_schema = "{\"type\": ";
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "output schema: not JSON"));
    cfg.output_schema = "[1]";
    assert_null(ac_engine_new(&cfg, &ae));
    assert_non_null(strstr(ae.text, "must be an object"));
    cfg.output_schema = OUT_SCHEMA;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("%s", ae.text);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* Anthropic has no response_format: the schema goes to "system" as an instruction. */
static void test_schema_anthropic_instruction(void **state)
{
    (void)state;
    fx f;
    fx_base(&f);
    fx_output_schema = OUT_SCHEMA;
    fx_engine(&f, AC_PROVIDER_ANTHROPIC, NULL, KEY, NULL, NULL, 0);
    fx_output_schema = NULL;
    push_stream(&f, an_text("{\"city\": \"Oslo\", \"population\": 709000}"));
    fx_run(&f, NULL);
    assert_string_equal(ac_session_status_name(ac_session_status(f.s)), "idle");
    assert_string_equal(ac_session_answer(f.s), "{\"city\": \"Oslo\", \"population\": 709000}");
    req r;
    req_get(&f, 0, &r);
    assert_null(json_object_get(r.json, "response_format"));
    const char *sys = jstr(r.json, "system");
    assert_non_null(strstr(sys, "Reply with only a JSON value"));
    assert_non_null(strstr(sys, "\"required\":[\"city\",\"population\"]"));
    req_free(&r);
    fx_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_openai_over_http),
        cmocka_unit_test(test_settings_anthropic_over_http),
        cmocka_unit_test(test_settings_summary_over_http),
        cmocka_unit_test(test_settings_refused),
        cmocka_unit_test(test_schema_valid_first_time),
        cmocka_unit_test(test_schema_invalid_then_valid),
        cmocka_unit_test(test_schema_invalid_every_time),
        cmocka_unit_test(test_schema_not_json),
        cmocka_unit_test(test_schema_refused_at_start),
        cmocka_unit_test(test_schema_anthropic_instruction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
