/*
 * test_stateref.c - State references: the grammar (accepted and refused
 * texts), lookups through objects and arrays, ||, &&, the †† escape, values
 * of any type, unresolved references, writes (created objects, appends,
 * refusals that change nothing) and path overlaps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tools/stateref.h"
#include "tools/toolfile.h"

#define D AC_REF_DAGGER

static json_t *doc(const char *text)
{
    json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(j);
    return j;
}

/* Resolves one argument value; returns the compact JSON of the result, or
 * "ERR:" + the message. */
static char *resolve(const char *args, const char *state, const char *input)
{
    json_t *a = doc(args), *st = doc(state), *in = input ? doc(input) : NULL, *out = NULL;
    char err[512];
    char *r;
    if (ac_ref_resolve(a, st, in, &out, err, sizeof err) < 0) {
        r = malloc(strlen(err) + 5);
        assert_non_null(r);
        memcpy(r, "ERR:", 4);
        memcpy(r + 4, err, strlen(err) + 1);
    } else {
        r = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
    }
    json_decref(a);
    json_decref(st);
    json_decref(in);
    json_decref(out);
    return r;
}

#define EXPECT(args, state, input, want)                                                           \
    do {                                                                                           \
        char *got_ = resolve(args, state, input);                                                  \
        if (strcmp(got_, want) != 0)                                                               \
            fail_msg("%s -> %s, expected %s", args, got_, want);                                   \
        free(got_);                                                                                \
    } while (0)

static const char *S = "{\"user\":{\"name\":\"Ada\",\"id\":7,\"tags\":[\"a\",\"b\",{\"x\":1}]},"
                       "\"n\":null,\"flag\":false,\"a key\":{\"q\\\"\":2},\"list\":[[1,2],[3]]}";

static void test_nested_and_arrays(void **st)
{
    (void)st;
    EXPECT("{\"v\":\"" D "state.user.name\"}", S, NULL, "{\"v\":\"Ada\"}");
    EXPECT("{\"v\":\"" D "state.user.id\"}", S, NULL, "{\"v\":7}");
    EXPECT("{\"v\":\"" D "state.user.tags[1]\"}", S, NULL, "{\"v\":\"b\"}");
    EXPECT("{\"v\":\"" D "state.user.tags[2].x\"}", S, NULL, "{\"v\":1}");
    EXPECT("{\"v\":\"" D "state.list[0][1]\"}", S, NULL, "{\"v\":2}");
    EXPECT("{\"v\":\"" D "state[\\\"a key\\\"][\\\"q\\\\\\\"\\\"]\"}", S, NULL, "{\"v\":2}");
    /* any type: objects, arrays, null, false; in nested arguments and arrays */
    EXPECT("{\"v\":\"" D "state.user.tags\"}", S, NULL, "{\"v\":[\"a\",\"b\",{\"x\":1}]}");
    EXPECT("{\"v\":\"" D "state.n\",\"w\":\"" D "state.flag\"}", S, NULL,
           "{\"v\":null,\"w\":false}");
    EXPECT("{\"o\":{\"deep\":[\"" D "state.user.id\",3]}}", S, NULL, "{\"o\":{\"deep\":[7,3]}}");
    EXPECT("{\"v\":\"" D "state\"}", "{\"a\":1}", NULL, "{\"v\":{\"a\":1}}");
    /* non-string values and literal strings are untouched */
    EXPECT("{\"v\":12,\"w\":[true,null],\"t\":\"hello " D "state.x\"}", S, NULL,
           "{\"v\":12,\"w\":[true,null],\"t\":\"hello " D "state.x\"}");
}

static void test_or_and(void **st)
{
    (void)st;
    EXPECT("{\"v\":\"" D "state.missing || " D "state.user.name\"}", S, NULL, "{\"v\":\"Ada\"}");
    EXPECT("{\"v\":\"" D "state.user.id||" D "state.user.name\"}", S, NULL, "{\"v\":7}");
    EXPECT("{\"v\":\"" D "state.user.id && " D "state.user.name\"}", S, NULL, "{\"v\":\"Ada\"}");
    EXPECT("{\"v\":\"" D "state.user.id && " D "state.nope\"}", S, NULL,
           "ERR:unresolved reference " D "state.nope");
    EXPECT("{\"v\":\"" D "state.x || " D "state.y\"}", S, NULL,
           "ERR:unresolved reference " D "state.x || " D "state.y (none of these exists)");
}

static void test_escape_and_input(void **st)
{
    (void)st;
    EXPECT("{\"v\":\"" D D "state.user\"}", S, NULL, "{\"v\":\"" D "state.user\"}");
    EXPECT("{\"v\":\"" D D "\"}", S, NULL, "{\"v\":\"" D "\"}");
    EXPECT("{\"v\":\"" D "input.order.id\"}", S, "{\"order\":{\"id\":\"o-9\"}}", "{\"v\":\"o-9\"}");
    EXPECT("{\"v\":\"" D "input.order\"}", S, NULL,
           "ERR:unresolved reference " D "input.order (the user message is not JSON)");
    EXPECT("{\"v\":\"" D "input.x || " D "state.user.id\"}", S, NULL, "{\"v\":7}");
}

static void test_unresolved(void **st)
{
    (void)st;
    EXPECT("{\"v\":\"" D "state.user.id.more\"}", S, NULL,
           "ERR:unresolved reference " D "state.user.id.more");
    EXPECT("{\"v\":\"" D "state.user.tags[3]\"}", S, NULL,
           "ERR:unresolved reference " D "state.user.tags[3]");
    EXPECT("{\"v\":\"" D "state.user[0]\"}", S, NULL,
           "ERR:unresolved reference " D "state.user[0]");
    EXPECT("[\"" D "state.user.nope\"]", S, NULL, "ERR:unresolved reference " D "state.user.nope");
}

static void refused(const char *text, const char *needle)
{
    ac_ref_expr e;
    char err[256] = "";
    if (ac_ref_parse(text, strlen(text), &e, err, sizeof err) == 0)
        fail_msg("accepted: %s", text);
    if (!strstr(err, needle))
        fail_msg("%s: message '%s' lacks '%s'", text, err, needle);
}

static void test_grammar(void **st)
{
    (void)st;
    refused(D "status.x", "starts with");
    refused(D "state.", "expected a key");
    refused(D "state.a b", "unexpected");
    refused(D "state[", "expected an index");
    refused(D "state[1", "expected ']'");
    refused(D "state[-1]", "expected an index");
    refused(D "state[1234567890]", "expected ']'");
    refused(D "state[\"abc", "unterminated");
    refused(D "state[\"a\\x\"]", "escapes");
    refused(D "state.a || " D "state.b && " D "state.c", "mixed");
    refused(D "state.a ||", "expected a reference");
    refused(D "state.a | " D "state.b", "unexpected");
    refused("state.a", "expected a reference");
    refused(D "state.a || state.b", "expected a reference");
    /* limits */
    char big[AC_REF_MAX_TEXT + 64];
    size_t at = (size_t)snprintf(big, sizeof big, D "state");
    for (int i = 0; i < AC_REF_MAX_STEPS + 1; i++)
        at += (size_t)snprintf(big + at, sizeof big - at, ".k");
    refused(big, "steps");
    at = 0;
    for (int i = 0; i < AC_REF_MAX_OPERANDS + 1; i++)
        at += (size_t)snprintf(big + at, sizeof big - at, "%s" D "state.a", i ? "||" : "");
    refused(big, "more than");
    memset(big, 'a', sizeof big - 1);
    memcpy(big, D "state.", 9);
    big[sizeof big - 1] = 0;
    refused(big, "longer than");
    /* an invalid reference in an argument is a failure the model can read */
    EXPECT("{\"v\":\"" D "nope\"}", S, NULL,
           "ERR:invalid reference \"" D "nope\": a reference starts with " D "state or " D
           "input (at byte 3) (write " D D " for a literal dagger)");
    /* canonical text round trip */
    ac_ref_expr e;
    char err[128], text[256];
    const char *src = D "state.a[3][\"b c\"].d_e-f$";
    assert_int_equal(ac_ref_parse(src, strlen(src), &e, err, sizeof err), 0);
    assert_int_equal(e.n, 1);
    assert_int_equal(e.paths[0].n, 4);
    ac_ref_path_text(&e.paths[0], text, sizeof text);
    assert_string_equal(text, src);
    ac_ref_expr_free(&e);
}

static void set_path(json_t **d, const char *path, const char *value, int want_rc,
                     const char *want_doc)
{
    ac_ref_expr e;
    char err[256];
    assert_int_equal(ac_ref_parse(path, strlen(path), &e, err, sizeof err), 0);
    json_t *v = doc(value);
    int rc = ac_ref_set(d, &e.paths[0], v, err, sizeof err);
    json_decref(v);
    ac_ref_expr_free(&e);
    if (rc != want_rc)
        fail_msg("set %s: rc %d (%s)", path, rc, err);
    char *got = json_dumps(*d, JSON_COMPACT);
    if (strcmp(got, want_doc) != 0)
        fail_msg("set %s: %s, expected %s", path, got, want_doc);
    free(got);
}

static void test_writes(void **st)
{
    (void)st;
    json_t *d = doc("{\"a\":{\"b\":1},\"l\":[1]}");
    set_path(&d, D "state.a.c", "2", 0, "{\"a\":{\"b\":1,\"c\":2},\"l\":[1]}");
    set_path(&d, D "state.x.y.z", "\"s\"", 0,
             "{\"a\":{\"b\":1,\"c\":2},\"l\":[1],\"x\":{\"y\":{\"z\":\"s\"}}}");
    set_path(&d, D "state.l[1]", "5", 0,
             "{\"a\":{\"b\":1,\"c\":2},\"l\":[1,5],\"x\":{\"y\":{\"z\":\"s\"}}}");
    set_path(&d, D "state.l[0]", "{\"k\":0}", 0,
             "{\"a\":{\"b\":1,\"c\":2},\"l\":[{\"k\":0},5],\"x\":{\"y\":{\"z\":\"s\"}}}");
    /* refused writes change nothing */
    const char *before =
        "{\"a\":{\"b\":1,\"c\":2},\"l\":[{\"k\":0},5],\"x\":{\"y\":{\"z\":\"s\"}}}";
    set_path(&d, D "state.l[5]", "1", -1, before);
    set_path(&d, D "state.a.b.c", "1", -1, before);
    set_path(&d, D "state.new[0]", "1", -1, before);
    set_path(&d, D "state.new.list[0].x", "1", -1, before);
    set_path(&d, D "state", "[1]", -1, before);
    set_path(&d, D "state", "{\"fresh\":true}", 0, "{\"fresh\":true}");
    json_decref(d);
}

static int overlap(const char *a, const char *b)
{
    ac_ref_expr x, y;
    char err[128];
    assert_int_equal(ac_ref_parse(a, strlen(a), &x, err, sizeof err), 0);
    assert_int_equal(ac_ref_parse(b, strlen(b), &y, err, sizeof err), 0);
    int r = ac_ref_overlap(&x.paths[0], &y.paths[0]);
    ac_ref_expr_free(&x);
    ac_ref_expr_free(&y);
    return r;
}

static void test_overlap(void **st)
{
    (void)st;
    assert_true(overlap(D "state.user", D "state.user.name"));
    assert_true(overlap(D "state.user.name", D "state.user"));
    assert_true(overlap(D "state", D "state.x"));
    assert_true(overlap(D "state.l[1]", D "state.l[1].a"));
    assert_false(overlap(D "state.l[1]", D "state.l[2]"));
    assert_false(overlap(D "state.user", D "state.users"));
    assert_false(overlap(D "input.user", D "state.user"));
}

static void toolfile_refuses(const char *text, const char *needle)
{
    char err[512] = "";
    ac_toolfile *tf = ac_toolfile_parse(text, "t.json", err, sizeof err);
    if (tf) {
        ac_toolfile_free(tf);
        fail_msg("accepted: %s", text);
    }
    if (!strstr(err, needle))
        fail_msg("%s: message '%s' lacks '%s'", text, err, needle);
}

/* The "state" key of a tool file. */
static void test_toolfile_state(void **st)
{
    (void)st;
    char err[512];
    ac_toolfile *tf = ac_toolfile_parse(
        "{\"state\": {\"initial\": {\"a\": 1}, \"schema\": {\"type\": \"object\"}}, \"tools\": []}",
        "t.json", err, sizeof err);
    assert_non_null(tf);
    char *d = json_dumps(tf->state, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(d, "{\"initial\":{\"a\":1},\"schema\":{\"type\":\"object\"}}");
    free(d);
    ac_toolfile_free(tf);
    tf = ac_toolfile_parse("{\"state\": {}, \"tools\": []}", "t.json", err, sizeof err);
    assert_non_null(tf);
    assert_true(json_is_object(json_object_get(tf->state, "initial")));
    ac_toolfile_free(tf);
    tf = ac_toolfile_parse("{\"tools\": []}", "t.json", err, sizeof err);
    assert_non_null(tf);
    assert_null(tf->state);
    ac_toolfile_free(tf);
    toolfile_refuses("{\"state\": [], \"tools\": []}", "t.json: state: must be an object");
    toolfile_refuses("{\"state\": {\"init\": {}}, \"tools\": []}", "unknown key \"init\"");
    toolfile_refuses("{\"state\": {\"initial\": [1]}, \"tools\": []}",
                     "\"initial\" must be an object");
    toolfile_refuses("{\"state\": {\"schema\": {\"type\": 5}}, \"tools\": []}",
                     "invalid \"schema\"");
    toolfile_refuses(
        "{\"state\": {\"initial\": {\"n\": \"x\"}, \"schema\": {\"properties\": {\"n\": "
        "{\"type\": \"integer\"}}}}, \"tools\": []}",
        "the schema refuses the initial State");
    toolfile_refuses("{\"stat\": {}, \"tools\": []}",
                     "only \"tools\", \"toolkits\", \"state\", \"mcp\" and \"agents\"");
}

/* A value shared by many references is written out once per use: the uses are counted
 * against AC_REF_MAX_RESOLVED, so a few bytes of arguments cannot expand to gigabytes. */
static void test_expansion_cap(void **st)
{
    (void)st;
    size_t big = (size_t)1 << 20;
    char *s = malloc(big + 1);
    assert_non_null(s);
    memset(s, 'x', big);
    s[big] = 0;
    json_t *state = json_pack("{s:s}", "big", s);
    free(s);
    json_t *refs = json_array(), *out = NULL;
    char err[300];
    for (int i = 0; i < 15; i++)
        json_array_append_new(refs, json_string(D "state.big"));
    json_t *args = json_pack("{s:O}", "l", refs);
    assert_int_equal(ac_ref_resolve(args, state, NULL, &out, err, sizeof err), 0);
    assert_int_equal(json_array_size(json_object_get(out, "l")), 15);
    json_decref(out);
    json_decref(args);
    for (int i = 0; i < 185; i++) /* 200 uses: 200 MiB written out */
        json_array_append_new(refs, json_string(D "state.big"));
    args = json_pack("{s:O}", "l", refs);
    out = NULL;
    assert_int_equal(ac_ref_resolve(args, state, NULL, &out, err, sizeof err), -1);
    assert_null(out);
    assert_string_equal(err, "the references expand to more than 16777216 bytes (the limit)");
    json_decref(args);
    json_decref(refs);
    json_decref(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_and_arrays), cmocka_unit_test(test_or_and),
        cmocka_unit_test(test_escape_and_input),  cmocka_unit_test(test_unresolved),
        cmocka_unit_test(test_grammar),           cmocka_unit_test(test_writes),
        cmocka_unit_test(test_overlap),           cmocka_unit_test(test_toolfile_state),
        cmocka_unit_test(test_expansion_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
