/*
 * test_tools_args.c - arguments are checked before a tool runs: arguments
 * that break the schema or are not JSON, and calls to unknown tools, become
 * failure results the model can read, and the tool's process never starts
 * (each run leaves a marker file named after its call id).
 */
#include "session_rig.h"

static void marker_path(const char *id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/ran-%s", rig_tmp, id);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    char path[512], text[2048];
    snprintf(text, sizeof text,
             "{\"tools\":[{\"name\":\"mark\",\"description\":\"writes a marker\","
             "\"parameters\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":"
             "\"integer\",\"minimum\":1}},\"required\":[\"count\"],"
             "\"additionalProperties\":false},"
             "\"command\":[\"sh\",\"-c\",\"touch '%s/ran-'\\\"$AGENTC_TOOL_CALL_ID\\\"; "
             "echo marked\"]}]}",
             rig_tmp);
    rig_write("mark.json", text, path, sizeof path);
    const char *tools[] = {path, NULL};
    const char *turns =
        "{\"tool_calls\":["
        "{\"id\":\"wrongtype\",\"name\":\"mark\",\"arguments\":\"{\\\"count\\\":\\\"three\\\"}\"},"
        "{\"id\":\"missing\",\"name\":\"mark\",\"arguments\":\"{}\"},"
        "{\"id\":\"extra\",\"name\":\"mark\",\"arguments\":\"{\\\"count\\\":1,\\\"x\\\":2}\"},"
        "{\"id\":\"notjson\",\"name\":\"mark\",\"arguments\":\"{count: 3\"},"
        "{\"id\":\"unknown\",\"name\":\"no_such_tool\",\"arguments\":\"{}\"},"
        "{\"id\":\"good\",\"name\":\"mark\",\"arguments\":\"{\\\"count\\\":2}\"}]}\n"
        "{\"content\":\"checked\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tools, NULL);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "idle");
    assert_string_equal(ac_session_answer(r.s), "checked");

    const char *res = rig_result(&r, "wrongtype", 0);
    assert_non_null(strstr(res, "invalid arguments"));
    assert_non_null(strstr(res, "count"));
    res = rig_result(&r, "missing", 0);
    assert_non_null(strstr(res, "count"));
    res = rig_result(&r, "extra", 0);
    assert_non_null(strstr(res, "x"));
    res = rig_result(&r, "notjson", 0);
    assert_non_null(strstr(res, "not JSON"));
    res = rig_result(&r, "unknown", 0);
    assert_non_null(strstr(res, "unknown tool"));
    assert_non_null(strstr(res, "no_such_tool"));
    assert_string_equal(rig_result(&r, "good", 1), "marked\n");

    static const char *const never[] = {"wrongtype", "missing", "extra", "notjson", "unknown"};
    char mp[600];
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        marker_path(never[i], mp, sizeof mp);
        if (access(mp, F_OK) == 0)
            fail_msg("the tool ran for %s", never[i]);
    }
    marker_path("good", mp, sizeof mp);
    assert_int_equal(access(mp, F_OK), 0);

    /* the model sees the failures as tool results, in a valid request */
    json_t *req = rig_request(ac_session_conv(r.s));
    assert_null(rig_openai_valid(req));
    assert_int_equal(rig_count_role(req, "tool"), 6);
    char *body = json_dumps(req, JSON_COMPACT);
    assert_non_null(strstr(body, "Error: invalid arguments"));
    free(body);
    json_decref(req);
    rig_close(&r);
}

static void test_reserved_names(void **state)
{
    (void)state;
    char path[512];
    ac_error err;
    rig_write("reserved.json",
              "{\"tools\":[{\"name\":\"load_tool_calls\",\"description\":\"x\","
              "\"command\":[\"true\"]}]}",
              path, sizeof path);
    rig r;
    rig_open(&r, "{\"content\":\"x\"}\n", NULL, NULL, NULL);
    assert_int_not_equal(ac_engine_add_tools(r.e, path, &err), 0);
    assert_non_null(strstr(err.text, "reserved"));
    assert_int_not_equal(ac_engine_add_tools(r.e, "builtin:nothing", &err), 0);
    assert_non_null(strstr(err.text, "builtin:context"));
    assert_int_equal(err.code, AC_ECONFIG);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_reserved_names),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
