/*
 * test_binding.c - handler binding by name: a spec naming handlers the
 * binary lacks is refused with one message listing every missing name,
 * before anything runs; registering them makes the same spec run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentc/agentc.h"
#include "spec.h"

/* spec/agent.fsm with one guard, one action and one effect the binary lacks */
static ac_fsm_tables *edited_tables(void)
{
    ac_spec *spec = ac_spec_load("spec/agent.fsm");
    assert_non_null(spec);
    size_t n = spec->src_len;
    const char *extra = "\nguard budget_ok\naction audit_call\neffect audit_timer\n";
    char *src = malloc(n + strlen(extra) + 1);
    memcpy(src, spec->src, n);
    strcpy(src + n, extra);
    ac_spec_free(spec);
    /* use them: guard and action on PLANNING -> EXECUTING, effect in PLANNING */
    char *p = strstr(src, "PLANNING -> EXECUTING  / begin_iteration");
    assert_non_null(p);
    const char *repl = "PLANNING -> EXECUTING  [budget_ok] / begin_iteration, audit_call\n"
                       "    PLANNING -> FAILED / fail_budget";
    size_t pre = (size_t)(p - src), oldlen = strlen("PLANNING -> EXECUTING  / begin_iteration");
    char *out = malloc(strlen(src) + strlen(repl) + 64);
    memcpy(out, src, pre);
    strcpy(out + pre, repl);
    strcat(out, p + oldlen);
    char *st = strstr(out, "state PLANNING, OBSERVING");
    assert_non_null(st);
    memcpy(st, "state OBSERVING          ", strlen("state PLANNING, OBSERVING"));
    char *body = strstr(out, "machine agent {");
    assert_non_null(body);
    char *ins = strstr(body, "    state EXECUTING");
    assert_non_null(ins);
    const char *planning = "    state PLANNING { effect audit_timer }\n";
    char *final = malloc(strlen(out) + strlen(planning) + 1);
    size_t k = (size_t)(ins - out);
    memcpy(final, out, k);
    strcpy(final + k, planning);
    strcat(final, ins);
    ac_spec *edited = ac_spec_parse("edited.fsm", final, strlen(final));
    free(src);
    free(out);
    free(final);
    assert_non_null(edited);
    if (edited->n_errors == 0)
        ac_spec_check(edited);
    if (edited->n_errors)
        ac_spec_print_diags(edited, stderr);
    assert_int_equal(edited->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(edited, "edited.fsm");
    ac_spec_free(edited);
    assert_non_null(t);
    return t;
}

static bool budget_ok(ac_session *s, const ac_event *ev)
{
    (void)s;
    (void)ev;
    return true;
}
static void audit_call(ac_session *s, const ac_event *ev)
{
    (void)s;
    (void)ev;
}
static void audit_start(ac_session *s, const ac_param_value *a, size_t n, const ac_event *ev)
{
    (void)s;
    (void)a;
    (void)n;
    (void)ev;
}
static void audit_stop(ac_session *s)
{
    (void)s;
}

static void test_missing_handlers_listed(void **state)
{
    (void)state;
    ac_fsm_tables *t = edited_tables();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = t;
    ac_error err = {0};
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_null(e);
    assert_int_equal(err.code, AC_ESPEC);
    assert_non_null(strstr(err.text, "3 handlers"));
    assert_non_null(strstr(err.text, "guard budget_ok"));
    assert_non_null(strstr(err.text, "action audit_call"));
    assert_non_null(strstr(err.text, "effect audit_timer"));

    /* registered: the same spec binds and a session starts */
    ac_registry *r = ac_registry_new();
    assert_int_equal(ac_registry_guard(r, "budget_ok", budget_ok), 0);
    assert_int_equal(ac_registry_action(r, "audit_call", audit_call), 0);
    assert_int_equal(ac_registry_effect(r, "audit_timer", audit_start, audit_stop), 0);
    cfg.registry = r;
    e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_session *s = ac_session_new(e, "b1", NULL, &err);
    assert_non_null(s);
    assert_string_equal(ac_session_state(s, "session"), "Idle");
    ac_session_free(s);
    ac_engine_free(e);
    ac_registry_free(r);
    ac_spec_tables_free(t);
}

/* Errors at the public edge carry a code and, when they come from a file, where. */
static void test_error_codes_and_locations(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\": \"ok\"}\n\n  {\"content\": oops}\n";
    ac_error err;
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ECONFIG);
    assert_string_equal(err.source, "script");
    assert_int_equal(err.line, 3);
    assert_true(err.column > 1);
    /* a bad override: AC_EINVAL, no location */
    cfg.script_text = "{\"content\": \"ok\"}\n";
    const char *const bad[] = {"max_retries=many", NULL};
    cfg.params = bad;
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_EINVAL);
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.text, "max_retries"));
    /* an effect use the built-in contract refuses: AC_ESPEC at the state's spec line */
    ac_spec *spec = ac_spec_load("spec/agent.fsm");
    assert_non_null(spec);
    char *src = malloc(spec->src_len + 1);
    memcpy(src, spec->src, spec->src_len);
    src[spec->src_len] = 0;
    ac_spec_free(spec);
    char *use = strstr(src, "effect run_tools(max_parallel_tools)");
    assert_non_null(use);
    memcpy(use, "effect run_tools(stall_timeout)     ",
           strlen("effect run_tools(max_parallel_tools)"));
    int line = 1;
    for (const char *c = src; c < use; c++)
        line += *c == '\n';
    spec = ac_spec_parse("edited.fsm", src, strlen(src));
    free(src);
    assert_non_null(spec);
    ac_spec_check(spec);
    assert_int_equal(spec->n_errors, 0); /* well-formed: only the handlers cannot run it */
    ac_fsm_tables *t = ac_spec_lower(spec, "edited.fsm");
    ac_spec_free(spec);
    cfg.params = NULL;
    cfg.tables = t;
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ESPEC);
    assert_string_equal(err.source, "edited.fsm");
    assert_int_equal(err.line, line);
    assert_non_null(strstr(err.text, "argument 1 of effect run_tools must be an int param"));
    ac_spec_tables_free(t);
    assert_string_equal(ac_strerror(AC_ESPEC), "the spec cannot run here");
    ac_loop_free(loop);
}

/* spec/agent.fsm with `from` replaced by `to` (once), lowered; NULL when it does not check. */
static ac_fsm_tables *agent_with(const char *from, const char *to)
{
    ac_spec *spec = ac_spec_load("spec/agent.fsm");
    assert_non_null(spec);
    char *src = malloc(spec->src_len + strlen(to) + 1);
    memcpy(src, spec->src, spec->src_len);
    src[spec->src_len] = 0;
    ac_spec_free(spec);
    char *at = strstr(src, from);
    assert_non_null(at);
    memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
    memcpy(at, to, strlen(to));
    spec = ac_spec_parse("edited.fsm", src, strlen(src));
    free(src);
    assert_non_null(spec);
    ac_spec_check(spec);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "edited.fsm");
    ac_spec_free(spec);
    assert_non_null(t);
    return t;
}

static void custom_append_delta(ac_session *s, const ac_event *ev)
{
    (void)s;
    (void)ev;
}

/* The payload contract: a built-in handler bound to an event whose payload lacks a field it
 * reads is refused when the engine is made, naming handler, field, event and line; the same
 * name bound to the program's own function is the program's business. */
static void test_payload_contract(void **state)
{
    (void)state;
    /* append_delta (kind, text) on tool.completed (id, ok, content, ...) */
    ac_fsm_tables *t =
        agent_with("TOOL_EXECUTING on tool.completed / record_tool_result",
                   "TOOL_EXECUTING on tool.completed / record_tool_result, append_delta");
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = t;
    ac_error err = {0};
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ESPEC);
    assert_non_null(strstr(err.text, "action append_delta reads the payload field \"kind\", which "
                                     "event tool.completed does not carry (line 150)"));
    ac_registry *r = ac_registry_new();
    assert_int_equal(ac_registry_action(r, "append_delta", custom_append_delta), 0);
    cfg.registry = r;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_engine_free(e);
    ac_registry_free(r);
    ac_spec_tables_free(t);
    /* a guard: has_tool_calls (tool_calls) on llm.failed */
    t = agent_with("[retryable && retries_left]", "[retryable && retries_left && has_tool_calls]");
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = t;
    assert_null(ac_engine_new(&cfg, &err));
    assert_non_null(strstr(err.text, "guard has_tool_calls reads the payload field \"tool_calls\", "
                                     "which event llm.failed does not carry"));
    ac_spec_tables_free(t);
    /* the shipped spec: every read carried */
    memset(&cfg, 0, sizeof cfg);
    e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing_handlers_listed),
                                       cmocka_unit_test(test_error_codes_and_locations),
                                       cmocka_unit_test(test_payload_contract)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
