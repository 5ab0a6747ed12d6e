/* Runs the official JSON-Schema-Test-Suite (draft 7 and draft 6 folders)
 * against the schema validator.
 *
 * Usage: tools_schema_suite [SUITE_TESTS_DIR]   (default /usr/share/json-schema-test-suite/tests)
 *
 * A group whose schema does not compile because it uses something the
 * validator does not support (an unsupported keyword or a remote $ref) is
 * skipped and counted; a group that fails to compile for any other reason is a
 * failure, and every case of a compiled group must give the expected verdict.
 * Groups of the core keyword files must all compile. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/schema.h"

static const char *suite_root = "/usr/share/json-schema-test-suite/tests";

typedef struct counts {
    int files, groups, groups_skipped, passed, failed, skipped, compile_errors;
} counts;

/* Files whose every group must compile: the core keywords. */
static const char *const core_files[] = {
    "type.json",
    "properties.json",
    "required.json",
    "additionalProperties.json",
    "enum.json",
    "const.json",
    "items.json",
    "minItems.json",
    "maxItems.json",
    "uniqueItems.json",
    "minimum.json",
    "maximum.json",
    "exclusiveMinimum.json",
    "exclusiveMaximum.json",
    "multipleOf.json",
    "minLength.json",
    "maxLength.json",
    "pattern.json",
    "anyOf.json",
    "oneOf.json",
    "allOf.json",
    "not.json",
    "boolean_schema.json",
    "additionalItems.json",
    "patternProperties.json",
    "default.json",
    "minProperties.json",
    "maxProperties.json",
    "propertyNames.json",
    "contains.json",
    "if-then-else.json",
};

static int is_core(const char *name)
{
    for (size_t i = 0; i < sizeof core_files / sizeof core_files[0]; i++)
        if (strcmp(name, core_files[i]) == 0)
            return 1;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *dir, const char *name, const char *dialect, counts *c)
{
    char path[1400];
    int w = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= sizeof path) {
        c->failed++;
        return;
    }
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) {
        printf("  %s: cannot load: %s\n", path, je.text);
        c->failed++;
        return;
    }
    c->files++;
    size_t gi;
    json_t *group;
    json_array_foreach(doc, gi, group)
    {
        json_t *schema = json_deep_copy(json_object_get(group, "schema"));
        json_t *tests = json_object_get(group, "tests");
        const char *gdesc = json_string_value(json_object_get(group, "description"));
        if (json_is_object(schema) && !json_object_get(schema, "$schema"))
            json_object_set_new(schema, "$schema", json_string(dialect));
        char err[512];
        ac_schema *s = ac_schema_compile(schema, err, sizeof err);
        c->groups++;
        if (!s) {
            if (strstr(err, "unsupported") && !is_core(name)) {
                printf("  skip %s [%s]: %s\n", name, gdesc, err);
                c->groups_skipped++;
                c->skipped += (int)json_array_size(tests);
            } else {
                printf("  FAIL compile %s [%s]: %s\n", name, gdesc, err);
                c->compile_errors++;
                c->failed += (int)json_array_size(tests);
            }
            json_decref(schema);
            continue;
        }
        size_t ti;
        json_t *t;
        json_array_foreach(tests, ti, t)
        {
            int want = json_is_true(json_object_get(t, "valid"));
            int got = ac_schema_validate(s, json_object_get(t, "data"), err, sizeof err);
            if (got == want) {
                c->passed++;
                /* an invalid verdict always comes with a message */
                if (!got && err[0] == 0) {
                    printf("  FAIL %s [%s] / [%s]: invalid without a message\n", name, gdesc,
                           json_string_value(json_object_get(t, "description")));
                    c->passed--;
                    c->failed++;
                }
            } else {
                c->failed++;
                printf("  FAIL %s [%s] / [%s]: expected %s, got %s (%s)\n", name, gdesc,
                       json_string_value(json_object_get(t, "description")),
                       want ? "valid" : "invalid", got ? "valid" : "invalid", got ? "" : err);
            }
        }
        ac_schema_free(s);
        json_decref(schema);
    }
    json_decref(doc);
}

static void run_dir(const char *draft, const char *dialect, counts *c)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", suite_root, draft);
    DIR *d = opendir(dir);
    if (!d) {
        printf("  %s: not found\n", dir);
        c->failed++;
        return;
    }
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_names);
    for (size_t i = 0; i < n; i++) {
        run_file(dir, names[i], dialect, c);
        free(names[i]);
    }
}

static void check_draft(const char *draft, const char *dialect)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", suite_root, draft);
    DIR *d = opendir(dir);
    if (!d) {
        printf("%s not installed\n", dir);
        skip();
    }
    closedir(d);
    counts c = {0};
    run_dir(draft, dialect, &c);
    printf("JSON-Schema-Test-Suite %s: %d files, %d groups (%d skipped), cases: %d passed, "
           "%d failed, %d skipped\n",
           draft, c.files, c.groups, c.groups_skipped, c.passed, c.failed, c.skipped);
    assert_int_equal(c.compile_errors, 0);
    assert_int_equal(c.failed, 0);
    assert_true(c.files > 0);
    assert_true(c.passed > 0);
    /* most of the suite is within the supported subset */
    assert_true(c.groups_skipped * 4 < c.groups);
}

static void test_draft7(void **state)
{
    (void)state;
    check_draft("draft7", "http://json-schema.org/draft-07/schema#");
}

static void test_draft6(void **state)
{
    (void)state;
    check_draft("draft6", "http://json-schema.org/draft-06/schema#");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        suite_root = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draft7),
        cmocka_unit_test(test_draft6),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
