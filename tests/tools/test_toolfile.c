/* Tests for tool definition files: a valid file, defaults, and every refusal
 * in tests/tools/data/invalid/<case>.json with the expected message part in
 * <case>.err. Run from the repository root. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/toolfile.h"

#define DATA_DIR "tests/tools/data"

static void test_valid_file(void **state)
{
    (void)state;
    char err[512] = "";
    ac_toolfile *tf = ac_toolfile_load(DATA_DIR "/tools_ok.json", err, sizeof err);
    if (!tf)
        fail_msg("load failed: %s", err);
    assert_int_equal(tf->n, 2);

    const ac_toolfile_tool *g = ac_toolfile_find(tf, "grep");
    assert_non_null(g);
    assert_string_equal(g->description, "Search files for a regular expression");
    assert_int_equal(g->argc, 3);
    assert_string_equal(g->argv[0], "grep");
    assert_string_equal(g->argv[2], "--");
    assert_null(g->argv[3]);
    assert_int_equal(g->timeout_ms, 10000);
    assert_int_equal(g->max_output, 64 * 1024);
    assert_int_equal(g->idempotent, 1);
    assert_non_null(g->schema);

    /* the compiled parameters schema is live */
    json_t *args = json_pack("{s:s, s:i}", "pattern", "TODO", "max_count", 3);
    assert_int_equal(ac_schema_validate(g->schema, args, err, sizeof err), 1);
    json_object_set_new(args, "max_count", json_string("3"));
    assert_int_equal(ac_schema_validate(g->schema, args, err, sizeof err), 0);
    assert_string_equal(err, "/max_count: expected integer, got string");
    json_decref(args);

    const ac_toolfile_tool *d = ac_toolfile_find(tf, "date");
    assert_non_null(d);
    assert_int_equal(d->timeout_ms, 30000);
    assert_int_equal(d->max_output, 1000000);
    assert_int_equal(d->idempotent, 0);
    assert_string_equal(json_string_value(json_object_get(d->parameters, "type")), "object");
    assert_null(ac_toolfile_find(tf, "nope"));
    ac_toolfile_free(tf);
    ac_toolfile_free(NULL);
}

static void test_invalid_cases(void **state)
{
    (void)state;
    DIR *dir = opendir(DATA_DIR "/invalid");
    assert_non_null(dir);
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(dir))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char path[512], errpath[512], want[512] = "", err[512] = "";
        snprintf(path, sizeof path, DATA_DIR "/invalid/%s", de->d_name);
        snprintf(errpath, sizeof errpath, DATA_DIR "/invalid/%.*s.err", (int)(len - 5), de->d_name);
        FILE *f = fopen(errpath, "r");
        if (!f)
            fail_msg("missing %s", errpath);
        if (!fgets(want, sizeof want, f))
            want[0] = 0;
        fclose(f);
        want[strcspn(want, "\n")] = 0;
        assert_true(want[0] != 0);

        ac_toolfile *tf = ac_toolfile_load(path, err, sizeof err);
        if (tf) {
            ac_toolfile_free(tf);
            fail_msg("%s was accepted", path);
        }
        if (!strstr(err, want))
            fail_msg("%s: message \"%s\" lacks \"%s\"", path, err, want);
        /* every message names the file */
        if (strncmp(err, path, strlen(path)) != 0)
            fail_msg("%s: message \"%s\" does not start with the path", path, err);
        cases++;
    }
    closedir(dir);
    printf("%d invalid tool files refused with the expected message\n", cases);
    assert_true(cases >= 10);
}

/* "env" and "inherit_env": parsed into NAME=value strings and patterns; bad ones refused. */
static void test_env_keys(void **state)
{
    (void)state;
    char err[512];
    ac_toolfile *tf = ac_toolfile_parse(
        "{\"tools\": [{\"name\": \"a\", \"description\": \"d\", \"command\": [\"x\"],"
        " \"env\": {\"FOO\": \"bar baz\", \"E\": \"\"}, \"inherit_env\": [\"PATH\", \"LC_*\", \"*\"]},"
        " {\"name\": \"b\", \"description\": \"d\", \"command\": [\"x\"]}]}",
        "t.json", err, sizeof err);
    assert_non_null(tf);
    assert_string_equal(tf->tools[0].env[0], "FOO=bar baz");
    assert_string_equal(tf->tools[0].env[1], "E=");
    assert_null(tf->tools[0].env[2]);
    assert_string_equal(tf->tools[0].inherit_env[1], "LC_*");
    assert_string_equal(tf->tools[0].inherit_env[2], "*");
    assert_null(tf->tools[0].inherit_env[3]);
    assert_null(tf->tools[1].env);
    assert_null(tf->tools[1].inherit_env);
    ac_toolfile_free(tf);
    static const char *const bad[][2] = {
        {"\"env\": [\"A=B\"]", "\"env\" must be an object"},
        {"\"env\": {\"1A\": \"x\"}", "bad variable name"},
        {"\"env\": {\"A=B\": \"x\"}", "bad variable name"},
        {"\"env\": {\"A\": 1}", "must be a string"},
        {"\"inherit_env\": \"PATH\"", "must be an array"},
        {"\"inherit_env\": [\"A=B\"]", "inherit_env\"[0]"},
        {"\"inherit_env\": [\"\"]", "inherit_env\"[0]"},
        {"\"inherit_env\": [\"A*B\"]", "inherit_env\"[0]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char doc[512];
        snprintf(doc, sizeof doc,
                 "{\"tools\": [{\"name\": \"a\", \"description\": \"d\", \"command\": [\"x\"], %s}]}",
                 bad[i][0]);
        err[0] = 0;
        assert_null(ac_toolfile_parse(doc, "t.json", err, sizeof err));
        if (!strstr(err, bad[i][1]))
            fail_msg("%s: got '%s'", bad[i][0], err);
    }
}

static void test_parse_from_memory(void **state)
{
    (void)state;
    char err[512] = "";
    ac_toolfile *tf = ac_toolfile_parse(
        "{\"tools\":[{\"name\":\"calc_1\",\"description\":\"x\",\"command\":[\"bc\"],"
        "\"timeout\":\"500ms\",\"max_output\":\"2MB\",\"idempotent\":false}]}",
        "mem.json", err, sizeof err);
    if (!tf)
        fail_msg("parse failed: %s", err);
    assert_int_equal(tf->tools[0].timeout_ms, 500);
    assert_int_equal(tf->tools[0].max_output, 2000000);
    ac_toolfile_free(tf);

    tf = ac_toolfile_parse("{\"tools\":[]}", NULL, err, sizeof err);
    assert_non_null(tf);
    assert_int_equal(tf->n, 0);
    ac_toolfile_free(tf);

    assert_null(ac_toolfile_parse("{\"tools\":[{\"name\":\"a\",\"description\":\"d\","
                                  "\"command\":[\"x\"],\"timeout\":\"0s\"}]}",
                                  NULL, err, sizeof err));
    assert_non_null(strstr(err, "<tools>: tools[0] (\"a\"): bad \"timeout\""));
    assert_null(ac_toolfile_parse("{\"tools\":[{\"name\":\"a\",\"description\":\"d\","
                                  "\"command\":[\"\"]}]}",
                                  "m.json", err, sizeof err));
    assert_non_null(strstr(err, "\"command\"[0] must not be empty"));
    assert_null(ac_toolfile_parse("{\"tools\":[{\"name\":\"a\",\"description\":\"d\","
                                  "\"command\":[\"x\\u0000y\"]}]}",
                                  "m.json", err, sizeof err));
    assert_non_null(strstr(err, "m.json:1:")); /* jansson refuses NUL escapes */
    assert_null(ac_toolfile_parse("{\"tools\":", "m.json", err, sizeof err));
    assert_non_null(strstr(err, "m.json:1:"));
    assert_null(ac_toolfile_parse(NULL, "m.json", err, sizeof err));
    assert_null(ac_toolfile_load(DATA_DIR "/does-not-exist.json", err, sizeof err));
    assert_non_null(strstr(err, "does-not-exist.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_invalid_cases),
        cmocka_unit_test(test_parse_from_memory),
        cmocka_unit_test(test_env_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
