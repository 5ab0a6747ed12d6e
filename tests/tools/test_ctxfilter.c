/* Context filters (tools/ctxfilter.h): each step, chains, the declarations
 * refused, and the chain typed over a schema of the items. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ctxfilter.h"

static const char *users =
    "[{\"name\": \"cy\", \"active\": true, \"age\": 41, \"updated\": 3, \"team\": {\"id\": "
    "\"red\"}},"
    " {\"name\": \"al\", \"active\": false, \"age\": 30, \"updated\": 9},"
    " {\"name\": \"bo\", \"active\": true, \"age\": 25.0, \"updated\": 7, \"team\": {\"id\": "
    "\"blue\"}},"
    " {\"name\": \"al\", \"active\": true, \"age\": 52, \"updated\": 1}]";

static json_t *load(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j)
        fail_msg("bad JSON in the test: %s: %s", je.text, text);
    return j;
}

/* The compact JSON of the chain's result over users. */
static char *run(const char *filters, const char *chain)
{
    static char out[2048];
    json_t *f = load(filters), *c = load(chain), *items = load(users);
    json_t *r = ac_ctxfilter_apply(f, c, items);
    assert_non_null(r);
    char *t = json_dumps(r, JSON_COMPACT);
    snprintf(out, sizeof out, "%s", t);
    free(t);
    json_decref(f);
    json_decref(c);
    json_decref(items);
    json_decref(r);
    return out;
}

#define NAMES "\"n\": {\"map\": \"name\"}"

static void test_where(void **st)
{
    (void)st;
    assert_string_equal(
        run("{\"a\": {\"where\": {\"active\": true}}, " NAMES "}", "[\"a\", \"n\"]"),
        "[\"cy\",\"bo\",\"al\"]");
    assert_string_equal(run("{\"a\": {\"where\": {\"name\": {\"in\": [\"bo\", \"cy\"]}}}, " NAMES
                            "}",
                            "[\"a\", \"n\"]"),
                        "[\"cy\",\"bo\"]");
    /* comparisons: numbers by value (25.0 is 25), both bounds */
    assert_string_equal(run("{\"a\": {\"where\": {\"age\": {\"gte\": 25, \"lt\": 41}}}, " NAMES "}",
                            "[\"a\", \"n\"]"),
                        "[\"al\",\"bo\"]");
    assert_string_equal(run("{\"a\": {\"where\": {\"age\": 25}}, " NAMES "}", "[\"a\", \"n\"]"),
                        "[\"bo\"]");
    assert_string_equal(
        run("{\"a\": {\"where\": {\"name\": {\"gt\": \"bo\"}}}, " NAMES "}", "[\"a\", \"n\"]"),
        "[\"cy\"]");
    /* a string never compares with a number */
    assert_string_equal(
        run("{\"a\": {\"where\": {\"age\": {\"gt\": \"1\"}}}, " NAMES "}", "[\"a\", \"n\"]"), "[]");
    /* existence and dot paths */
    assert_string_equal(
        run("{\"a\": {\"where\": {\"team\": {\"exists\": false}}}, " NAMES "}", "[\"a\", \"n\"]"),
        "[\"al\",\"al\"]");
    assert_string_equal(
        run("{\"a\": {\"where\": {\"team.id\": {\"ne\": \"red\"}}}, " NAMES "}", "[\"a\", \"n\"]"),
        "[\"al\",\"bo\",\"al\"]");
}

static void test_sort_map_unique_limit(void **st)
{
    (void)st;
    assert_string_equal(run("{\"s\": {\"sort\": \"name\"}, " NAMES "}", "[\"s\", \"n\"]"),
                        "[\"al\",\"al\",\"bo\",\"cy\"]"); /* stable: al (30) before al (52) */
    assert_string_equal(
        run("{\"s\": {\"sort\": \"-updated\", \"limit\": 2}, " NAMES "}", "[\"s\", \"n\"]"),
        "[\"al\",\"bo\"]");
    /* items without the key go last, whatever the direction */
    assert_string_equal(run("{\"s\": {\"sort\": \"-team.id\"}, " NAMES "}", "[\"s\", \"n\"]"),
                        "[\"cy\",\"bo\",\"al\",\"al\"]");
    assert_string_equal(run("{\"n\": {\"map\": \"name\", \"unique\": true}}", "[\"n\"]"),
                        "[\"cy\",\"al\",\"bo\"]");
    assert_string_equal(run("{\"n\": {\"map\": \"team.id\"}}", "[\"n\"]"), "[\"red\",\"blue\"]");
    assert_string_equal(
        run("{\"n\": {\"map\": \"name\", \"unique\": true, \"limit\": 2}}", "[\"n\"]"),
        "[\"cy\",\"al\"]");
    /* the item itself */
    assert_string_equal(
        run("{\"n\": {\"map\": \"name\"}, \"s\": {\"sort\": \"-.\", \"where\": {\".\": {\"ne\": "
            "\"bo\"}}}}",
            "[\"n\", \"s\"]"),
        "[\"cy\",\"al\",\"al\"]");
}

static void test_chain(void **st)
{
    (void)st;
    const char *f = "{\"active_only\": {\"where\": {\"active\": true}},"
                    " \"by_name\": {\"sort\": \"name\"},"
                    " \"recent\": {\"sort\": \"-updated\", \"limit\": 2},"
                    " \"names\": {\"map\": \"name\", \"unique\": true}}";
    assert_string_equal(run(f, "[\"active_only\", \"by_name\", \"names\"]"),
                        "[\"al\",\"bo\",\"cy\"]");
    assert_string_equal(run(f, "[\"active_only\", \"recent\", \"names\"]"), "[\"bo\",\"cy\"]");
    /* order matters: the two most recent, then only the active ones */
    assert_string_equal(run(f, "[\"recent\", \"active_only\", \"names\"]"), "[\"bo\"]");
    assert_int_equal(strncmp(run(f, "[]"), "[{\"name\":\"cy\"", 13), 0); /* no filter */
}

static void refused(const char *filters, const char *part)
{
    char why[400] = "";
    json_t *f = load(filters);
    if (ac_ctxfilter_check_decl(f, why, sizeof why) == 0)
        fail_msg("accepted: %s", filters);
    if (!strstr(why, part))
        fail_msg("'%s': wanted '%s'", why, part);
    json_decref(f);
}

static void test_declarations(void **st)
{
    (void)st;
    char why[400];
    json_t *ok = load("{\"a\": {\"where\": {\"x.y\": 1, \"z\": {\"in\": [1], \"exists\": true}},"
                      " \"sort\": \"-x\", \"map\": \".\", \"unique\": true, \"limit\": 3}}");
    assert_int_equal(ac_ctxfilter_check_decl(ok, why, sizeof why), 0);
    json_decref(ok);
    refused("[]", "\"filters\" must be an object");
    refused("{\"a\": {}}", "filter \"a\" must be an object of steps");
    refused("{\"a\": {\"grep\": 1}}", "unknown step \"grep\"");
    refused("{\"a\": {\"where\": []}}", "\"where\" must be an object");
    refused("{\"a\": {\"where\": {\"x..y\": 1}}}", "is not a dot path");
    refused("{\"a\": {\"where\": {\"x\": {\"like\": 1}}}}", "\"like\" is not an operator");
    refused("{\"a\": {\"where\": {\"x\": {\"in\": 1}}}}", "\"in\" is not an operator");
    refused("{\"a\": {\"where\": {\"x\": {\"gt\": true}}}}", "\"gt\" is not an operator");
    refused("{\"a\": {\"sort\": 1}}", "\"sort\" must be a dot path");
    refused("{\"a\": {\"limit\": 0}}", "\"limit\" must be an integer >= 1");
    refused("{\"a\": {\"unique\": 1}}", "\"unique\" must be true or false");
}

static char reports[4096];

static void collect(void *ud, const char *m)
{
    (void)ud;
    size_t n = strlen(reports);
    snprintf(reports + n, sizeof reports - n, "%s\n", m);
}

static size_t typed(const char *filters, const char *chain, const char *sample)
{
    reports[0] = 0;
    json_t *f = load(filters), *c = load(chain), *v = load(sample);
    json_t *shape = ac_ctxfilter_shape(v);
    json_t *items = json_incref(json_object_get(shape, "items"));
    size_t n =
        ac_ctxfilter_check_chain(f, c, items, "string", "kit::t: parameter \"p\"", collect, NULL);
    json_decref(f);
    json_decref(c);
    json_decref(v);
    json_decref(shape);
    json_decref(items);
    return n;
}

static void test_typed(void **st)
{
    (void)st;
    const char *f = "{\"active_only\": {\"where\": {\"active\": true}},"
                    " \"old\": {\"where\": {\"age\": {\"gt\": \"x\"}}},"
                    " \"by_mail\": {\"sort\": \"mail\"},"
                    " \"names\": {\"map\": \"name\"}, \"ages\": {\"map\": \"age\"},"
                    " \"deep\": {\"map\": \"name.first\"}}";
    assert_int_equal(typed(f, "[\"active_only\", \"names\"]", users), 0);
    assert_int_equal(typed(f, "[\"by_mail\", \"names\"]", users), 1);
    assert_non_null(strstr(reports, "kit::t: parameter \"p\": filter \"by_mail\": sort names "
                                    "\"mail\", which the items do not have"));
    assert_int_equal(typed(f, "[\"ages\"]", users), 1);
    assert_non_null(strstr(reports, "filter \"ages\": yields numbers, not strings, for an enum"));
    assert_int_equal(typed(f, "[\"active_only\"]", users), 1);
    assert_non_null(strstr(reports, "yields objects, not strings"));
    assert_int_equal(typed(f, "[\"old\", \"names\"]", users), 1);
    assert_non_null(
        strstr(reports, "where \"age\" gt: compares a string with values of type number"));
    assert_int_equal(typed(f, "[\"deep\"]", users), 1);
    assert_non_null(strstr(reports, "map reads \"name.first\" through a string, not an object"));
    /* strings mapped from strings: nothing to say; unknown items: nothing checked */
    assert_int_equal(typed(f, "[\"names\"]", "[]"), 0);
    assert_int_equal(typed(f, "[\"names\", \"names\"]", users), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_where), cmocka_unit_test(test_sort_map_unique_limit),
        cmocka_unit_test(test_chain), cmocka_unit_test(test_declarations),
        cmocka_unit_test(test_typed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
