/*
 * test_session_opts.c - a session's options (ac_session_new_opts, ac_store_session_opts): a
 * NULL options struct or field takes the engine's system prompt; a prompt of odd bytes (quotes,
 * control characters, non-ASCII, 300 KB) is the session's first message exactly, and comes back
 * from the store; a prompt that is not UTF-8 (the engine's or a session's) is refused with an
 * error naming it, and no session is stored for it. A history is the session's messages after its
 * system prompt, and comes back from the store; a malformed one is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/agentc.h"
#include "agentc/store.h"

static ac_engine *engine(const char *system, ac_error *err)
{
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"hi\"}\n";
    cfg.system_prompt = system;
    return ac_engine_new(&cfg, err);
}

/* The session's system message ("" when it has none). */
static char *system_of(const ac_session *s)
{
    char *js = ac_session_to_json(s);
    assert_non_null(js);
    json_t *o = json_loads(js, 0, NULL);
    free(js);
    assert_non_null(o);
    json_t *m = json_array_get(json_object_get(json_object_get(o, "conversation"), "messages"), 0);
    const char *role = json_string_value(json_object_get(m, "role"));
    const char *c = json_string_value(json_object_get(m, "content"));
    char *out = strdup(role && !strcmp(role, "system") && c ? c : "");
    json_decref(o);
    return out;
}

static void assert_system(const ac_session *s, const char *want)
{
    char *got = system_of(s);
    assert_string_equal(got, want);
    free(got);
}

static char *odd_prompt(void)
{
    const char *piece =
        "\"quoted\" \\ back\tslash\nnew line \x01\x1f caf\xc3\xa9 \xf0\x9f\x98\x80 ";
    size_t n = strlen(piece), total = 300 * 1024;
    char *p = malloc(total + n + 1);
    assert_non_null(p);
    size_t k = 0;
    while (k < total) {
        memcpy(p + k, piece, n);
        k += n;
    }
    p[k] = 0;
    return p;
}

static void test_defaults_and_odd_bytes(void **state)
{
    (void)state;
    ac_error err;
    ac_engine *e = engine("ENGINE PROMPT", &err);
    assert_non_null(e);
    ac_session *s = ac_session_new_opts(e, "a", NULL, &err);
    assert_non_null(s);
    assert_system(s, "ENGINE PROMPT");
    ac_session_free(s);
    ac_session_options o = {0};
    s = ac_session_new_opts(e, "b", &o, &err);
    assert_non_null(s);
    assert_system(s, "ENGINE PROMPT");
    ac_session_free(s);
    char *odd = odd_prompt();
    o.system_prompt = odd;
    s = ac_session_new_opts(e, "c", &o, &err);
    assert_non_null(s);
    assert_system(s, odd);
    ac_session_free(s);
    free(odd);
    ac_engine_free(e);
}

static void test_not_utf8_refused(void **state)
{
    (void)state;
    ac_error err;
    memset(&err, 0, sizeof err);
    assert_null(engine("caf\xe9 latin-1", &err));
    assert_int_equal(err.code, AC_ECONFIG);
    assert_non_null(strstr(err.text, "UTF-8"));
    ac_engine *e = engine(NULL, &err);
    assert_non_null(e);
    ac_session_options o = {0};
    o.system_prompt = "ok so far \xff\xfe then not";
    memset(&err, 0, sizeof err);
    assert_null(ac_session_new_opts(e, "a", &o, &err));
    assert_int_equal(err.code, AC_EINVAL);
    assert_non_null(strstr(err.text, "UTF-8"));
    assert_non_null(strstr(err.text, "byte 10"));
    ac_engine_free(e);
}

static void test_store(void **state)
{
    (void)state;
    ac_error err;
    ac_engine *e = engine("ENGINE PROMPT", &err);
    assert_non_null(e);
    ac_store *st = ac_store_open(":memory:", NULL, &err);
    assert_non_null(st);
    char *odd = odd_prompt();
    ac_session_options o = {0};
    o.system_prompt = odd;
    ac_session *s = ac_store_session_opts(st, e, "odd", 0, &o, &err);
    assert_non_null(s);
    assert_system(s, odd);
    ac_session_free(s);
    s = ac_store_session(st, e, "odd", AC_STORE_MUST_EXIST, &err); /* the prompt comes back */
    assert_non_null(s);
    assert_system(s, odd);
    ac_session_free(s);
    free(odd);
    s = ac_store_session_opts(st, e, "plain", 0, NULL, &err);
    assert_non_null(s);
    assert_system(s, "ENGINE PROMPT");
    ac_session_free(s);
    o.system_prompt = "\xc0\xaf overlong";
    memset(&err, 0, sizeof err);
    assert_null(ac_store_session_opts(st, e, "bad", 0, &o, &err));
    assert_int_equal(err.code, AC_EINVAL);
    assert_non_null(strstr(err.text, "UTF-8"));
    ac_store_session_info info;
    assert_int_equal(ac_store_info(st, "bad", &info, NULL), AC_STORE_ENOENT);
    ac_store_close(st);
    ac_engine_free(e);
}

/* The session's messages as "role:content" lines. */
static char *messages_of(const ac_session *s)
{
    char *js = ac_session_to_json(s), out[512] = "";
    json_t *o = json_loads(js, 0, NULL);
    free(js);
    size_t i, at = 0;
    json_t *m;
    json_array_foreach(json_object_get(json_object_get(o, "conversation"), "messages"), i, m) at +=
        (size_t)snprintf(out + at, sizeof out - at, "%s:%s\n",
                         json_string_value(json_object_get(m, "role")),
                         json_string_value(json_object_get(m, "content")));
    json_decref(o);
    return strdup(out);
}

static void test_history(void **state)
{
    (void)state;
    ac_error err;
    ac_engine *e = engine("SYS", &err);
    assert_non_null(e);
    ac_store *st = ac_store_open(":memory:", NULL, &err);
    assert_non_null(st);
    ac_session_options o = {0};
    o.history = "[{\"role\": \"user\", \"content\": \"first\"}, "
                "{\"role\": \"assistant\", \"content\": \"ok \\\"1\\\"\"}]";
    ac_session *s = ac_store_session_opts(st, e, "h", 0, &o, &err);
    assert_non_null(s);
    char *got = messages_of(s);
    assert_string_equal(got, "system:SYS\nuser:first\nassistant:ok \"1\"\n");
    free(got);
    ac_session_free(s);
    s = ac_store_session(st, e, "h", AC_STORE_MUST_EXIST, &err); /* it comes back */
    assert_non_null(s);
    got = messages_of(s);
    assert_string_equal(got, "system:SYS\nuser:first\nassistant:ok \"1\"\n");
    free(got);
    ac_session_free(s);
    const char *bad[] = {"{}", "[{\"role\": \"tool\", \"content\": \"x\"}]",
                         "[{\"role\": \"user\"}]", "not json"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        o.history = bad[k];
        memset(&err, 0, sizeof err);
        assert_null(ac_session_new_opts(e, "bad", &o, &err));
        assert_int_equal(err.code, AC_EINVAL);
        assert_non_null(strstr(err.text, "history"));
    }
    ac_store_close(st);
    ac_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_odd_bytes),
        cmocka_unit_test(test_not_utf8_refused),
        cmocka_unit_test(test_store),
        cmocka_unit_test(test_history),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
