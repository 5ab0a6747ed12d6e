/* Unit tests for the schema validator: messages, compile-time refusals,
 * numeric and Unicode subtleties, pattern translation, $ref handling and the
 * recursion limits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/schema.h"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return j;
}

static ac_schema *compile_ok(const char *schema_text)
{
    char err[512] = "";
    json_t *j = parse(schema_text);
    ac_schema *s = ac_schema_compile(j, err, sizeof err);
    json_decref(j);
    if (!s)
        fail_msg("schema %s did not compile: %s", schema_text, err);
    return s;
}

/* Compiles a schema that must be refused; returns the message. */
static void compile_fails(const char *schema_text, const char *expect_substring)
{
    char err[512] = "";
    json_t *j = parse(schema_text);
    ac_schema *s = ac_schema_compile(j, err, sizeof err);
    json_decref(j);
    if (s) {
        ac_schema_free(s);
        fail_msg("schema %s compiled but should not", schema_text);
    }
    if (!strstr(err, expect_substring))
        fail_msg("schema %s: message \"%s\" lacks \"%s\"", schema_text, err, expect_substring);
}

/* Validates and returns the verdict; err receives the message. */
static int check(const char *schema_text, const char *instance_text, char *err, size_t errcap)
{
    ac_schema *s = compile_ok(schema_text);
    json_t *inst = parse(instance_text);
    int ok = ac_schema_validate(s, inst, err, errcap);
    json_decref(inst);
    ac_schema_free(s);
    return ok;
}

static void expect_valid(const char *schema_text, const char *instance_text)
{
    char err[512] = "";
    if (check(schema_text, instance_text, err, sizeof err) != 1)
        fail_msg("%s should be valid against %s, got: %s", instance_text, schema_text, err);
}

static void expect_invalid(const char *schema_text, const char *instance_text,
                           const char *expect_msg)
{
    char err[512] = "";
    if (check(schema_text, instance_text, err, sizeof err) != 0)
        fail_msg("%s should be invalid against %s", instance_text, schema_text);
    if (expect_msg && strcmp(err, expect_msg) != 0)
        fail_msg("message for %s: got \"%s\", want \"%s\"", instance_text, err, expect_msg);
}

static void expect_invalid_sub(const char *schema_text, const char *instance_text,
                               const char *substring)
{
    char err[512] = "";
    if (check(schema_text, instance_text, err, sizeof err) != 0)
        fail_msg("%s should be invalid against %s", instance_text, schema_text);
    if (!strstr(err, substring))
        fail_msg("message for %s: \"%s\" lacks \"%s\"", instance_text, err, substring);
}

static void test_messages_name_location(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\","
                    "\"items\":{\"type\":\"integer\"}}},\"required\":[\"items\",\"b\"]}";
    expect_invalid(s, "{\"items\":[1,2,\"x\"],\"b\":0}", "/items/2: expected integer, got string");
    expect_invalid(s, "{\"items\":[]}", "(root): missing required property \"b\"");
    expect_invalid(s, "[1]", "(root): expected object, got array");
    expect_invalid("{\"properties\":{\"a/b\":{\"properties\":{\"c~d\":{\"type\":\"null\"}}}}}",
                   "{\"a/b\":{\"c~d\":1}}", "/a~1b/c~0d: expected null, got integer");
    expect_invalid("{\"type\":[\"string\",\"null\"]}", "1.5",
                   "(root): expected null or string, got number");
    expect_invalid("{\"additionalProperties\":false,\"properties\":{\"a\":{}}}",
                   "{\"a\":1,\"zz\":2}", "(root): unexpected property \"zz\"");
    expect_invalid_sub("{\"enum\":[\"red\",\"green\"]}", "\"blue\"", "[\"red\",\"green\"]");
    expect_invalid_sub("{\"minimum\":3}", "2", "2 is less than minimum 3");
    expect_invalid_sub("{\"exclusiveMaximum\":3}", "3", "3 must be less than 3");
    expect_invalid_sub("{\"maxLength\":2}", "\"abc\"", "more than maxLength 2");
    expect_invalid_sub("{\"minItems\":2}", "[1]", "fewer than minItems 2");
    expect_invalid_sub("{\"const\":{\"a\":1}}", "{\"a\":2}", "must be {\"a\":1}");
    expect_invalid_sub("{\"pattern\":\"^a+$\"}", "\"b\"", "does not match pattern \"^a+$\"");
    expect_invalid_sub("{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":10}]}", "3",
                       "[0] (root): expected string, got integer; [1] (root): 3 is less than "
                       "minimum 10");
    expect_invalid_sub("{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}", "3",
                       "more than one schema in oneOf (0 and 1)");
    expect_invalid_sub("{\"not\":{\"type\":\"string\"}}", "\"s\"", "must not match");
    expect_invalid("false", "1", "(root): no value is allowed here");
}

static void test_refuses_unsupported_keywords(void **state)
{
    (void)state;
    compile_fails("{\"properties\":{\"x\":{\"dependentRequired\":{}}}}",
                  "unsupported keyword 'dependentRequired' at /properties/x");
    compile_fails("{\"items\":[{\"unevaluatedItems\":false}]}",
                  "unsupported keyword 'unevaluatedItems' at /items/0");
    compile_fails("{\"$defs\":{\"a\":{\"maxContains\":1}}}", "at /$defs/a");
    compile_fails("{\"properties\":{\"x\":{\"$id\":\"x\"}}}", "'$id'");
    compile_fails("{\"$ref\":\"http://example.com/s.json\"}", "unsupported $ref");
    compile_fails("{\"$ref\":\"#foo\"}", "unsupported $ref");
    compile_fails("{\"$ref\":\"#/$defs/missing\"}", "unresolvable $ref");
    compile_fails("{\"type\":\"strin\"}", "unknown type");
    compile_fails("{\"minLength\":-1}", "minLength must be a non-negative integer");
    compile_fails("{\"maxItems\":1.5}", "maxItems");
    compile_fails("{\"required\":\"a\"}", "required must be an array");
    compile_fails("{\"multipleOf\":0}", "multipleOf must be a number greater than 0");
    compile_fails("{\"properties\":{\"a\":3}}", "a schema must be an object or a boolean");
    compile_fails("{\"anyOf\":[]}", "anyOf must be a non-empty array");
    compile_fails("5", "a schema must be an object or a boolean");
    /* annotations are accepted */
    ac_schema *s = compile_ok("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
                              "\"$id\":\"https://example.com/t\",\"title\":\"t\","
                              "\"description\":\"d\",\"default\":1,\"examples\":[1],"
                              "\"$comment\":\"c\",\"format\":\"email\",\"readOnly\":true,"
                              "\"writeOnly\":false,\"deprecated\":false}");
    ac_schema_free(s);
    ac_schema_free(NULL);
    char err[64];
    assert_null(ac_schema_compile(NULL, err, sizeof err));
}

static void test_numbers(void **state)
{
    (void)state;
    expect_valid("{\"type\":\"integer\"}", "1.0");
    expect_invalid_sub("{\"type\":\"integer\"}", "1.5", "expected integer, got number");
    expect_valid("{\"multipleOf\":0.0001}", "0.0075");
    expect_invalid_sub("{\"multipleOf\":0.0001}", "0.00751", "not a multiple of 0.0001");
    expect_valid("{\"multipleOf\":0.1}", "0.3");
    expect_valid("{\"multipleOf\":0.01}", "19.99");
    expect_valid("{\"multipleOf\":1.5}", "4.5");
    expect_invalid("{\"multipleOf\":1.5}", "35", NULL);
    expect_valid("{\"multipleOf\":2}", "-9223372036854775808");
    expect_valid("{\"multipleOf\":0.5}", "1e300");
    expect_invalid("{\"multipleOf\":0.123456789}", "1e308", NULL);
    expect_valid("{\"multipleOf\":1e-300}", "3e-299");
    expect_invalid("{\"multipleOf\":3e-299}", "1e-300", NULL);
    /* exact comparison between integers and reals */
    expect_invalid("{\"maximum\":9007199254740992}", "9007199254740993", NULL);
    expect_valid("{\"minimum\":1.5}", "2");
    expect_invalid("{\"exclusiveMinimum\":2.0}", "2", NULL);
    /* draft-4 boolean exclusive bounds */
    expect_invalid("{\"maximum\":5,\"exclusiveMaximum\":true}", "5", NULL);
    expect_valid("{\"maximum\":5,\"exclusiveMaximum\":true}", "4.9");
    expect_valid("{\"minimum\":5,\"exclusiveMinimum\":false}", "5");
    compile_fails("{\"exclusiveMinimum\":true}", "needs minimum");
}

static void test_equality_and_unique(void **state)
{
    (void)state;
    expect_valid("{\"const\":1}", "1.0");
    expect_valid("{\"enum\":[[1,{\"a\":2}]]}", "[1.0,{\"a\":2.0}]");
    expect_invalid("{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":1}", NULL);
    expect_invalid("{\"const\":false}", "0", NULL);
    expect_invalid_sub("{\"uniqueItems\":true}", "[1,2,1.0]", "items 0 and 2 are equal");
    expect_invalid("{\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]", NULL);
    expect_valid("{\"uniqueItems\":true}", "[{\"a\":1},{\"a\":2},[1],[\"1\"],\"1\",1,true]");
    expect_valid("{\"uniqueItems\":true}", "[0,false,null,\"\",[],{}]");

    /* a large array goes through the hashed path */
    json_t *arr = json_array();
    for (int i = 0; i < 20000; i++)
        json_array_append_new(arr, json_integer(i));
    ac_schema *s = compile_ok("{\"uniqueItems\":true}");
    char err[256];
    assert_int_equal(ac_schema_validate(s, arr, err, sizeof err), 1);
    json_array_append_new(arr, json_real(12345.0));
    assert_int_equal(ac_schema_validate(s, arr, err, sizeof err), 0);
    assert_non_null(strstr(err, "items 12345 and 20000 are equal"));
    ac_schema_free(s);
    json_decref(arr);
}

static void test_string_length_counts_code_points(void **state)
{
    (void)state;
    expect_valid("{\"maxLength\":1}", "\"\\u00e9\"");
    expect_valid("{\"maxLength\":2,\"minLength\":2}", "\"\\ud83d\\ude00x\"");
    expect_invalid_sub("{\"minLength\":2}", "\"\\u00e9\"", "has 1 characters");
    expect_valid("{\"minLength\":3}", "\"\\u65e5\\u672c\\u8a9e\"");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* {"s": "<n copies of unit><tail>"} */
static json_t *long_string(const char *unit, size_t n, const char *tail)
{
    size_t ul = strlen(unit), tl = strlen(tail);
    char *b = malloc(ul * n + tl + 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        memcpy(b + i * ul, unit, ul);
    memcpy(b + ul * n, tail, tl + 1);
    json_t *v = json_string(b);
    free(b);
    assert_non_null(v);
    return v;
}

/* A pattern's match has a bounded cost: a catastrophic pattern on an 80 KB
 * string is refused quickly with a clear message, and an ordinary one still
 * matches. */
static void test_pattern_limits(void **state)
{
    (void)state;
    ac_schema *s = compile_ok("{\"pattern\":\"^(a+)+$\"}");
    json_t *v = long_string("a", 80000, "b");
    char err[512] = "";
    double t0 = now_s();
    assert_int_equal(ac_schema_validate(s, v, err, sizeof err), 0);
    double dt = now_s() - t0;
    if (!strstr(err, "not checked") || !strstr(err, "backtracking"))
        fail_msg("unexpected message: %s", err);
    if (dt > 30.0) /* well under a second natively; generous for valgrind */
        fail_msg("the catastrophic pattern took %.1f s", dt);
    json_decref(v);
    ac_schema_free(s);

    /* regexec needed about 4 s for 20 KB of this, a minute for 80 KB */
    s = compile_ok("{\"pattern\":\"(\\\\w+\\\\s?)*$\"}");
    v = long_string("ab ", 27000, "!");
    t0 = now_s();
    assert_int_equal(ac_schema_validate(s, v, err, sizeof err), 0);
    dt = now_s() - t0;
    if (!strstr(err, "not checked") || !strstr(err, "backtracking"))
        fail_msg("unexpected message: %s", err);
    if (dt > 30.0)
        fail_msg("(\\w+\\s?)*$ on 80 KB took %.1f s", dt);
    json_decref(v);
    ac_schema_free(s);

    s = compile_ok("{\"pattern\":\"^[a-z ]+$\"}");
    v = long_string("ab ", 27000, "");
    assert_int_equal(ac_schema_validate(s, v, err, sizeof err), 1);
    json_decref(v);
    ac_schema_free(s);
}

static void test_patterns(void **state)
{
    (void)state;
    expect_valid("{\"pattern\":\"^\\\\d{3}-\\\\w+$\"}", "\"123-ab_c9\"");
    expect_invalid("{\"pattern\":\"^\\\\d{3}-\\\\w+$\"}", "\"12-abc\"", NULL);
    expect_valid("{\"pattern\":\"^\\\\S+\\\\s\\\\S+$\"}", "\"a\\tb\"");
    expect_valid("{\"pattern\":\"^[\\\\d.]+$\"}", "\"1.5.3\"");
    expect_invalid("{\"pattern\":\"^[\\\\d.]+$\"}", "\"1,5\"", NULL);
    expect_valid("{\"pattern\":\"^[^\\\\]]+$\"}", "\"abc\"");
    expect_invalid("{\"pattern\":\"^[^\\\\]]+$\"}", "\"a]c\"", NULL);
    expect_valid("{\"pattern\":\"^[\\\\-^a]+$\"}", "\"^-a\"");
    expect_valid("{\"pattern\":\"^[\\\\[\\\\]]$\"}", "\"[\"");
    expect_valid("{\"pattern\":\"^(?:ab)+?c$\"}", "\"ababc\"");
    expect_valid("{\"pattern\":\"^a\\\\.b\\\\/c$\"}", "\"a.b/c\"");
    expect_invalid("{\"pattern\":\"^a\\\\.b$\"}", "\"axb\"", NULL);
    expect_valid("{\"pattern\":\"^\\\\u0041\\\\x42{2}$\"}", "\"ABB\"");
    expect_valid("{\"pattern\":\"^[A-Z_][\\\\w-]{0,63}$\"}", "\"Tool-name_1\"");
    expect_valid("{\"pattern\":\"{x}\"}", "\"a{x}\"");
    expect_valid("{\"patternProperties\":{\"^x-\\\\d+$\":{\"type\":\"string\"}},"
                 "\"additionalProperties\":false}",
                 "{\"x-1\":\"a\",\"x-22\":\"b\"}");
    expect_invalid_sub("{\"patternProperties\":{\"^x-\\\\d+$\":{\"type\":\"string\"}},"
                       "\"additionalProperties\":false}",
                       "{\"x-1\":2}", "/x-1: expected string, got integer");
    /* an unanchored pattern matches anywhere, also past an embedded NUL */
    expect_valid("{\"pattern\":\"b\"}", "\"a\\u0000b\"");
    /* ECMA-262 features PCRE2 shares: lookaround, backreferences, named
     * groups, Unicode properties; `$` only at the very end */
    expect_valid("{\"pattern\":\"a(?=b)\"}", "\"ab\"");
    expect_invalid("{\"pattern\":\"a(?=b)\"}", "\"ac\"", NULL);
    expect_valid("{\"pattern\":\"^(a)\\\\1$\"}", "\"aa\"");
    expect_invalid("{\"pattern\":\"^(a)\\\\1$\"}", "\"ab\"", NULL);
    expect_valid("{\"pattern\":\"^\\\\p{L}+$\"}", "\"\u00e9t\u00e9\"");
    expect_valid("{\"pattern\":\"^(?<n>a)\\\\k<n>$\"}", "\"aa\"");
    expect_invalid("{\"pattern\":\"^a$\"}", "\"a\\n\"", NULL);
    expect_valid("{\"pattern\":\"^[^]$\"}", "\"\\n\"");
    compile_fails("{\"pattern\":\"[a\"}", "missing terminating ]");
    compile_fails("{\"pattern\":\"(a\"}", "unsupported or invalid pattern");
    compile_fails("{\"properties\":{\"p\":{\"pattern\":\"(?<n>a\"}}}", "at /properties/p");
    compile_fails("{\"patternProperties\":{\"a(?!b\":{}}}", "bad pattern");
    compile_fails("{\"pattern\":\"a++++++++++++++++++++++++++++++++++++++++\"}",
                  "quantifier does not follow a repeatable item");
    compile_fails("{\"pattern\":\"a{70000}\"}", "number too big");
    compile_fails("{\"pattern\":\"*a\"}", "quantifier does not follow a repeatable item");
    compile_fails("{\"pattern\":\"a)\"}", "unmatched closing parenthesis");
    expect_valid("{\"pattern\":\"^(ab|c){2,3}$\"}", "\"abcab\"");
    expect_invalid("{\"pattern\":\"^(ab|c){2,3}$\"}", "\"ab\"", NULL);
    expect_valid("{\"pattern\":\"^x{2,}$\"}", "\"xxxxx\"");
}

static void test_refs(void **state)
{
    (void)state;
    const char *s = "{\"$defs\":{\"pos\":{\"type\":\"integer\",\"minimum\":1},"
                    "\"a/b\":{\"type\":\"string\"},\"c~d\":{\"type\":\"boolean\"},"
                    "\"e%f\":{\"type\":\"null\"}},"
                    "\"definitions\":{\"old\":{\"$ref\":\"#/$defs/pos\"}},"
                    "\"properties\":{\"n\":{\"$ref\":\"#/$defs/pos\"},"
                    "\"m\":{\"$ref\":\"#/definitions/old\"},"
                    "\"s\":{\"$ref\":\"#/$defs/a~1b\"},\"b\":{\"$ref\":\"#/$defs/c~0d\"},"
                    "\"z\":{\"$ref\":\"#/$defs/e%25f\"},\"self\":{\"$ref\":\"#\"},"
                    "\"first\":{\"$ref\":\"#/properties/n\"}}}";
    expect_valid(s, "{\"n\":1,\"m\":2,\"s\":\"x\",\"b\":true,\"z\":null,\"self\":{\"n\":3},"
                    "\"first\":4}");
    expect_invalid(s, "{\"n\":0}", "/n: 0 is less than minimum 1");
    expect_invalid(s, "{\"m\":\"1\"}", "/m: expected integer, got string");
    expect_invalid(s, "{\"s\":1}", "/s: expected string, got integer");
    expect_invalid(s, "{\"b\":1}", "/b: expected boolean, got integer");
    expect_invalid(s, "{\"z\":1}", "/z: expected null, got integer");
    expect_invalid(s, "{\"self\":{\"self\":{\"n\":-1}}}",
                   "/self/self/n: -1 is less than minimum 1");
    /* 2020-12: siblings of $ref apply; draft 7: $ref overrides them */
    expect_invalid("{\"$defs\":{\"a\":{\"type\":\"array\"}},\"$ref\":\"#/$defs/a\",\"maxItems\":1}",
                   "[1,2]", NULL);
    expect_valid("{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
                 "\"definitions\":{\"a\":{\"type\":\"array\"}},"
                 "\"properties\":{\"p\":{\"$ref\":\"#/definitions/a\",\"maxItems\":1}}}",
                 "{\"p\":[1,2]}");
    /* $defs entries are checked even when unused */
    compile_fails("{\"$defs\":{\"unused\":{\"if\":{},\"contentMediaType\":\"x\"}}}",
                  "unsupported keyword 'contentMediaType' at /$defs/unused");
}

static void test_recursion_limits(void **state)
{
    (void)state;
    char err[256];
    /* a $ref cycle with no progress is stopped by the depth limit */
    assert_int_equal(check("{\"$ref\":\"#\"}", "1", err, sizeof err), 0);
    assert_non_null(strstr(err, "too deeply nested"));
    assert_int_equal(check("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"allOf\":[{\"$ref\""
                           ":\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}",
                           "{}", err, sizeof err),
                     0);
    assert_non_null(strstr(err, "too deeply nested"));

    /* a recursive tree schema validates shallow trees and stops deep ones */
    ac_schema *s = compile_ok("{\"type\":\"object\",\"properties\":{\"kids\":{\"type\":\"array\","
                              "\"items\":{\"$ref\":\"#\"}}}}");
    json_t *root = json_object(), *cur = root;
    for (int i = 0; i < 20; i++) {
        json_t *kid = json_object();
        json_object_set_new(cur, "kids", json_pack("[o]", kid));
        cur = kid;
    }
    assert_int_equal(ac_schema_validate(s, root, err, sizeof err), 1);
    for (int i = 0; i < 500; i++) {
        json_t *kid = json_object();
        json_object_set_new(cur, "kids", json_pack("[o]", kid));
        cur = kid;
    }
    assert_int_equal(ac_schema_validate(s, root, err, sizeof err), 0);
    assert_non_null(strstr(err, "too deeply nested"));
    json_decref(root);
    ac_schema_free(s);

    /* deeply nested schemas are refused at compile time */
    json_t *deep = json_true();
    for (int i = 0; i < AC_SCHEMA_MAX_DEPTH + 10; i++)
        deep = json_pack("{s:o}", "not", deep);
    assert_null(ac_schema_compile(deep, err, sizeof err));
    assert_non_null(strstr(err, "nested too deeply"));
    json_decref(deep);
}

static void test_items_forms(void **state)
{
    (void)state;
    const char *tuple = "{\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"integer\"}],"
                        "\"items\":false}";
    expect_valid(tuple, "[\"a\",1]");
    expect_valid(tuple, "[\"a\"]");
    expect_invalid(tuple, "[\"a\",\"b\"]", "/1: expected integer, got string");
    expect_invalid_sub(tuple, "[\"a\",1,2]", "too many items (at most 2 allowed)");
    expect_invalid("{\"prefixItems\":[{}],\"items\":{\"type\":\"null\"}}", "[1,null,2]",
                   "/2: expected null, got integer");
    expect_valid("{\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"integer\"}}",
                 "[\"a\",1,2]");
    expect_invalid("{\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"integer\"}}",
                   "[\"a\",1,\"b\"]", "/2: expected integer, got string");
    expect_valid("{\"items\":{\"type\":\"integer\"},\"additionalItems\":false}", "[1,2,3]");
    expect_valid("{\"contains\":{\"const\":3}}", "[1,3]");
    expect_invalid_sub("{\"contains\":{\"const\":3}}", "[1,2]", "no item matching");
    expect_valid("{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}",
                 "15");
    expect_invalid("{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":5},\"else\":{\"maximum\":3}}",
                   "4", NULL);
    expect_invalid_sub("{\"propertyNames\":{\"maxLength\":3}}", "{\"abcd\":1}",
                       "property name \"abcd\" is not allowed");
    expect_invalid_sub("{\"minProperties\":1}", "{}", "fewer than minProperties 1");
    compile_fails("{\"prefixItems\":[{}],\"items\":[{}]}", "items must be a schema");
}

/* anyOf under a recursive $ref would cost 2^depth on nested arguments: a
 * step budget ends it with a clear message, and "not" cannot turn the
 * aborted check into a pass. A shallow instance still validates. */
static void test_step_budget(void **state)
{
    (void)state;
    static const char schema[] = "{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},"
                                 "\"minItems\":1},{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}},"
                                 "{\"type\":\"integer\"}]}";
    char inst[256], err[512];
    size_t n = 0;
    for (int i = 0; i < 60; i++)
        inst[n++] = '[';
    memcpy(inst + n, "\"x\"", 3);
    n += 3;
    for (int i = 0; i < 60; i++)
        inst[n++] = ']';
    inst[n] = 0;
    assert_false(check(schema, inst, err, sizeof err));
    assert_non_null(strstr(err, "too costly to validate"));
    char negated[512];
    snprintf(negated, sizeof negated, "{\"not\":%s}", schema);
    assert_false(check(negated, inst, err, sizeof err));
    assert_non_null(strstr(err, "too costly to validate"));
    assert_true(check(schema, "[[[1]],[2]]", err, sizeof err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_messages_name_location),
        cmocka_unit_test(test_refuses_unsupported_keywords),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_equality_and_unique),
        cmocka_unit_test(test_string_length_counts_code_points),
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_pattern_limits),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_recursion_limits),
        cmocka_unit_test(test_items_forms),
        cmocka_unit_test(test_step_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
