/*
 * test_spec_v2.c - the spec language's v2 forms on a real engine and session:
 * the events a waiting session accepts (the embedding API, from the tables),
 * answering an outside event, per-call decisions (approve one call, deny one,
 * edit one; decisions that do not fit refused), a stuck session failing at once with its state
 * named, comparison guards over facts and `after` timers, and ac_session_fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "facts.h"
#include "io/loop.h"
#include "spec.h"

static ac_fsm_tables *compile(const char *path, const char *text)
{
    ac_spec *spec = text ? ac_spec_parse(path, text, strlen(text)) : ac_spec_load(path);
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors)
        ac_spec_print_diags(spec, stderr);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, path);
    assert_non_null(t);
    ac_spec_free(spec);
    return t;
}

typedef struct rig {
    ac_loop *loop;
    ac_engine *e;
    ac_session *s;
    ac_fsm_tables *t;
} rig;

static void rig_open(rig *r, ac_fsm_tables *t, const char *script)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->loop = ac_loop_new();
    assert_non_null(r->loop);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    cfg.tables = t;
    ac_error err = {0};
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fprintf(stderr, "%s\n", err.text);
    assert_non_null(r->e);
    r->s = ac_session_new(r->e, "v2", NULL, &err);
    assert_non_null(r->s);
}

static void rig_close(rig *r)
{
    ac_session_free(r->s);
    ac_engine_free(r->e);
    ac_loop_free(r->loop);
    ac_spec_tables_free(r->t);
}

/* Runs the loop until the session settles or waits for the outside (bounded). */
static int run_until_waiting(rig *r)
{
    for (int i = 0; i < 200; i++) {
        if (ac_session_settled(r->s))
            return AC_WAIT_NONE;
        int w = ac_session_wait_state(r->s, NULL);
        if (w != AC_WAIT_NONE)
            return w;
        ac_loop_run_once(r->loop, 20);
    }
    fail_msg("the session neither settled nor waited");
    return -1;
}

static const char *two_calls =
    "{\"content\": \"\", \"tool_calls\": [{\"id\": \"c1\", \"name\": \"nope\", \"arguments\": "
    "\"{}\"}]}\n{\"content\": \"done\"}\n";

static void test_outside_events(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("examples/specs/approve_tools.fsm", NULL), two_calls);
    assert_int_equal(ac_session_send(r.s, "hi"), 0);
    assert_int_equal(run_until_waiting(&r), AC_WAIT_OUTSIDE);
    const char *st = NULL;
    assert_int_equal(ac_session_wait_state(r.s, &st), AC_WAIT_OUTSIDE);
    assert_string_equal(st, "AWAITING_APPROVAL");
    const char *names[32];
    assert_int_equal(ac_session_accepted_events(r.s, names, 8, 1), 2);
    assert_string_equal(names[0], "approve");
    assert_string_equal(names[1], "deny");
    assert_int_equal(ac_session_waiting_events(r.s, names, 8), 2);
    /* all accepted events, deepest state first: approve and deny, then the machines above */
    size_t all = ac_session_accepted_events(r.s, names, 32, 0);
    assert_true(all > 2);
    assert_string_equal(names[0], "approve");
    int has_cancel = 0;
    for (size_t i = 0; i < all && i < 32; i++)
        has_cancel |= strcmp(names[i], "cancel") == 0;
    assert_true(has_cancel);
    const char *ids[4];
    assert_int_equal(ac_session_pending_tool_calls(r.s, ids, 4), 1);
    /* deny: the call is answered, the turn goes on to the answer */
    assert_int_equal(ac_session_post(r.s, "deny", NULL, 0), 0);
    assert_int_equal(run_until_waiting(&r), AC_WAIT_NONE);
    assert_int_equal(ac_session_status(r.s), AC_SESSION_IDLE);
    assert_string_equal(ac_session_answer(r.s), "done");
    int denied = 0;
    for (size_t i = 0; i < ac_session_message_count(r.s); i++) {
        const char *role, *m = ac_session_message(r.s, i, &role);
        denied |= !strcmp(role, "tool") && strstr(m, "denied by the user") != NULL;
    }
    assert_true(denied);
    rig_close(&r);
}

static const char *three_sums = "{\"content\": \"\", \"tool_calls\": ["
                                "{\"id\": \"c1\", \"name\": \"calculator\", \"arguments\": "
                                "\"{\\\"expression\\\": \\\"1+1\\\"}\"},"
                                "{\"id\": \"c2\", \"name\": \"calculator\", \"arguments\": "
                                "\"{\\\"expression\\\": \\\"2+2\\\"}\"},"
                                "{\"id\": \"c3\", \"name\": \"calculator\", \"arguments\": "
                                "\"{\\\"expression\\\": \\\"3+3\\\"}\"}"
                                "]}\n{\"content\": \"done\"}\n";

/* Whether a tool message after message `from` reads `text` (the results come in the order
 * they were given: a denial at once, the others when their tool ran). */
static int has_tool_result(ac_session *s, size_t from, const char *text)
{
    for (size_t i = from; i < ac_session_message_count(s); i++) {
        const char *role, *m = ac_session_message(s, i, &role);
        if (!strcmp(role, "tool") && !strcmp(m, text))
            return 1;
    }
    return 0;
}

/* approve(decisions): decisions that do not fit are refused with the reason and change
 * nothing; then one call approved, one denied with a reason, one edited. */
static void test_per_call_decisions(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("examples/specs/approve_tools.fsm", NULL), three_sums);
    ac_error err = {0};
    assert_int_equal(ac_engine_add_tools(r.e, "builtin:calculator", &err), 0);
    assert_int_equal(ac_session_send(r.s, "sums"), 0);
    assert_int_equal(run_until_waiting(&r), AC_WAIT_OUTSIDE);
    assert_true(ac_session_event_takes_decisions(r.s, "approve"));
    assert_false(ac_session_event_takes_decisions(r.s, "deny"));
    size_t before = ac_session_message_count(r.s);
    static const char *const bad[][2] = {
        {"{\"calls\": {\"c9\": \"approve\"}}", "call 'c9' is not pending (pending: c1, c2, c3)"},
        {"{\"calls\": {\"c1\": \"maybe\"}}", "call 'c1': a decision is"},
        {"{\"calls\": [\"c1\"]}", "the decisions are {\"calls\""},
        {"{\"calls\": {\"c3\": {\"arguments\": {\"expression\": 5}}}}",
         "call 'c3': the edited arguments do not fit the schema of calculator: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *d = json_loads(bad[i][0], 0, NULL);
        assert_non_null(d);
        char why[600];
        assert_int_equal(ac_session_check_decisions(r.s, "approve", d, why, sizeof why), -1);
        assert_non_null(strstr(why, bad[i][1]));
        assert_int_equal(ac_session_post(r.s, "approve", d, 0), AC_EINVAL);
        assert_int_equal(ac_session_wait_state(r.s, NULL), AC_WAIT_OUTSIDE);
        assert_int_equal(ac_session_pending_tool_calls(r.s, NULL, 0), 3);
    }
    json_t *d = json_loads("{\"calls\": {\"c1\": \"approve\", \"c2\": {\"deny\": \"too easy\"}, "
                           "\"c3\": {\"arguments\": {\"expression\": \"6*7\"}}}}",
                           0, NULL);
    assert_int_equal(ac_session_check_decisions(r.s, "approve", d, NULL, 0), 0);
    assert_int_equal(ac_session_post(r.s, "approve", d, 0), AC_OK);
    assert_int_equal(run_until_waiting(&r), AC_WAIT_NONE);
    assert_string_equal(ac_session_answer(r.s), "done");
    assert_true(has_tool_result(r.s, before, "2"));
    assert_true(has_tool_result(r.s, before, "denied by the user: too easy"));
    assert_true(
        has_tool_result(r.s, before, "arguments edited by the user: {\"expression\":\"6*7\"}\n42"));
    const char *args = NULL;
    assert_string_equal(ac_session_tool_call_name(r.s, "c3", &args), "calculator");
    assert_non_null(strstr(args, "3+3")); /* the conversation keeps the model's */
    rig_close(&r);
}

/* Posted from another thread, decisions are not checked first: a decision of another shape
 * and an edit the schema refuses fail their calls without running them; the rest run. */
static void test_decisions_threadsafe(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("examples/specs/approve_tools.fsm", NULL), three_sums);
    ac_error err = {0};
    assert_int_equal(ac_engine_add_tools(r.e, "builtin:calculator", &err), 0);
    assert_int_equal(ac_session_send(r.s, "sums"), 0);
    assert_int_equal(run_until_waiting(&r), AC_WAIT_OUTSIDE);
    size_t before = ac_session_message_count(r.s);
    json_t *d = json_loads("{\"calls\": {\"c1\": \"maybe\", \"c2\": {\"arguments\": "
                           "{\"expression\": 5}}, \"c9\": \"approve\"}}",
                           0, NULL);
    assert_int_equal(ac_session_post_threadsafe(r.s, "approve", d, 0), AC_QUEUED);
    for (int i = 0; i < 200 && !ac_session_settled(r.s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_string_equal(ac_session_answer(r.s), "done");
    assert_true(
        has_tool_result(r.s, before, "not run: the user's decision for it was not understood"));
    int refused = 0;
    for (size_t i = before; i < ac_session_message_count(r.s); i++) {
        const char *role, *m = ac_session_message(r.s, i, &role);
        refused |=
            !strcmp(role, "tool") &&
            !strncmp(m, "arguments edited by the user: {\"expression\":5}\ninvalid arguments",
                     strlen("arguments edited by the user: {\"expression\":5}\ninvalid "
                            "arguments"));
    }
    assert_true(refused);
    assert_true(has_tool_result(r.s, before, "6"));
    rig_close(&r);
}

/* src with the first `old` replaced by `repl` (malloc'd) */
static char *replace(const char *src, const char *old, const char *repl)
{
    const char *p = strstr(src, old);
    assert_non_null(p);
    size_t pre = (size_t)(p - src);
    char *out = malloc(strlen(src) + strlen(repl) + 1);
    assert_non_null(out);
    memcpy(out, src, pre);
    strcpy(out + pre, repl);
    strcat(out, p + strlen(old));
    return out;
}

/* The event index of name in t. */
static uint16_t event_of(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 1; i < t->n_events; i++)
        if (strcmp(t->event_names[i], name) == 0)
            return i;
    fail_msg("no event %s", name);
    return 0;
}

/* approve_tools with the approval state's ways out on events nothing sends there: the checker
 * refuses the spec at the state's line; tables made another way (here: edited in memory) run
 * and the session fails at once */
static void test_stuck_fails_at_once(void **state)
{
    (void)state;
    ac_spec *spec = ac_spec_load("examples/specs/approve_tools.fsm");
    assert_non_null(spec);
    char *src = strndup(spec->src, spec->src_len);
    ac_spec_free(spec);
    char *a = replace(src, "AWAITING_APPROVAL -> TOOL_EXECUTING on approve / apply_decisions",
                      "AWAITING_APPROVAL -> TOOL_EXECUTING on timer.fired");
    char *b = replace(a, "AWAITING_APPROVAL -> SUCCESS on deny",
                      "AWAITING_APPROVAL -> SUCCESS on compaction.done");
    free(src);
    free(a);
    spec = ac_spec_parse("stuck.fsm", b, strlen(b));
    assert_non_null(spec);
    assert_int_equal(ac_spec_check(spec), 1);
    assert_non_null(spec->diags);
    assert_non_null(strstr(spec->diags[0].msg,
                           "state 'AWAITING_APPROVAL' can never be left: it waits for timer.fired "
                           "(posted by backoff_timer), compaction.done (posted by compact)"));
    int line = 1; /* at the state's declaration */
    for (const char *c = b; c < strstr(b, "state AWAITING_APPROVAL"); c++)
        line += *c == '\n';
    assert_int_equal(spec->diags[0].line, line);
    ac_spec_free(spec);
    free(b);
    ac_fsm_tables *t = compile("examples/specs/approve_tools.fsm", NULL);
    uint16_t approve = event_of(t, "approve"), deny = event_of(t, "deny");
    for (uint16_t i = 0; i < t->n_transitions; i++) {
        ac_fsm_transition *tr = (ac_fsm_transition *)&t->transitions[i];
        if (tr->event == approve)
            tr->event = event_of(t, "timer.fired");
        else if (tr->event == deny)
            tr->event = event_of(t, "compaction.done");
    }
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = two_calls;
    cfg.tables = t;
    ac_error err = {0};
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ESPEC);
    assert_non_null(strstr(err.text, "state 'AWAITING_APPROVAL' can never be left: it waits for "
                                     "timer.fired (posted by backoff_timer), compaction.done "
                                     "(posted by compact)"));
    assert_int_equal(err.line, line);
    ac_spec_tables_free(t);
}

/* A state left only by guarded eventless transitions whose guards are all false, once the
 * session is there: no check can see it; the session fails at once, saying where it is. */
static void test_stuck_at_run_time(void **state)
{
    (void)state;
    ac_spec *spec = ac_spec_load("examples/specs/approve_tools.fsm");
    assert_non_null(spec);
    char *src = strndup(spec->src, spec->src_len);
    ac_spec_free(spec);
    char *a = replace(src, "AWAITING_APPROVAL -> TOOL_EXECUTING on approve / apply_decisions",
                      "AWAITING_APPROVAL -> TOOL_EXECUTING [turn.iterations > 100]");
    char *b =
        replace(a, "AWAITING_APPROVAL -> SUCCESS on deny / answer_calls(\"denied by the user\")",
                "AWAITING_APPROVAL -> SUCCESS [turn.iterations > 200]");
    free(src);
    free(a);
    rig r;
    rig_open(&r, compile("stuck.fsm", b), two_calls);
    free(b);
    assert_int_equal(ac_session_send(r.s, "hi"), 0);
    for (int i = 0; i < 100 && !ac_session_settled(r.s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_true(ac_session_settled(r.s));
    assert_int_equal(ac_session_status(r.s), AC_SESSION_ENDED); /* the engine gave up on it */
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_FAILED);
    assert_non_null(strstr(ac_session_error(r.s), "stuck in state process.AWAITING_APPROVAL"));
    rig_close(&r);
}

/* A comparison guard, a fail() reason with a param, an after timer and
 * ac_session_fail on a small spec of its own. */
static const char *small_spec =
    "param limit = 2\nparam patience = 50ms\nparam context_window = 0\n"
    "event spawn, user_message\n"
    "outside event tick, poke\n"
    "action init_session, append_user_message, finish_interaction, record_failure\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done, Failed\n"
    "    state Idle, Waiting, Counting\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Counting on user_message / append_user_message\n"
    "    Counting -> Failed on tick [context.messages > limit] / fail(\"more than {limit} "
    "messages\"), record_failure\n"
    "    Counting on tick\n"
    "    Counting -> Waiting on poke\n"
    "    Waiting -> Done after patience / finish_interaction\n"
    "    Waiting -> Failed on poke\n"
    "}\n";

static void test_compare_fail_after(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("small.fsm", small_spec), "");
    assert_int_equal(ac_session_send(r.s, "one"), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting");
    /* one message: the comparison (1 > 2) is false, tick is internal */
    assert_int_equal(ac_session_post(r.s, "tick", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting");
    assert_int_equal(ac_session_wait_state(r.s, NULL), AC_WAIT_OUTSIDE);
    /* the timer: poke -> Waiting, done after 50ms without another poke */
    assert_int_equal(ac_session_post(r.s, "poke", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Waiting");
    assert_int_equal(ac_session_wait_state(r.s, NULL), AC_WAIT_NONE); /* the timer runs */
    for (int i = 0; i < 100 && !ac_session_ended(r.s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_string_equal(ac_session_state(r.s, "s"), "Done");
    rig_close(&r);

    rig_open(&r, compile("small.fsm", small_spec), "");
    ac_session_send(r.s, "one");
    /* three messages in the context: the comparison holds, fail() gives the reason */
    ac_session_post(r.s, "user_message", NULL, 0); /* not handled in Counting: ignored */
    ac_session_fail(r.s, "given up");              /* the embedder gives up */
    assert_int_equal(ac_session_status(r.s), AC_SESSION_ENDED);
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_FAILED);
    assert_string_equal(ac_session_error(r.s), "given up");
    assert_true(ac_session_settled(r.s));
    assert_int_equal(ac_session_fail(r.s, "again"), -1);
    rig_close(&r);
}

static void test_fail_reason(void **state)
{
    (void)state;
    /* limit 0: one message is already more than the limit */
    char *text = strdup(small_spec);
    memcpy(strstr(text, "limit = 2"), "limit = 0", 9);
    rig r;
    rig_open(&r, compile("small0.fsm", text), "");
    free(text);
    ac_session_send(r.s, "one");
    assert_int_equal(ac_session_post(r.s, "tick", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Failed");
    assert_int_equal(ac_session_status(r.s), AC_SESSION_ENDED); /* a terminal state */
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_FAILED);
    assert_string_equal(ac_session_error(r.s), "more than 0 messages");
    rig_close(&r);
}

/* state.time counts from the last entry of the state: a self-transition enters it again. */
static const char *again_spec =
    "param patience = 100ms\nparam context_window = 0\n"
    "event spawn, user_message\noutside event again, check\n"
    "action init_session, append_user_message, finish_interaction\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done\n"
    "    state Idle, Counting\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Counting on user_message / append_user_message\n"
    "    Counting -> Counting on again\n"
    "    Counting -> Done on check [state.time >= patience] / finish_interaction\n"
    "    Counting on check\n"
    "}\n";

static void test_state_time_self_transition(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("again.fsm", again_spec), "");
    int64_t t0 = (int64_t)time(NULL) * 1000 + 10000;
    assert_int_equal(ac_session_post(r.s, "user_message", json_pack("{s:s}", "text", "go"), t0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting");
    assert_int_equal(ac_session_post(r.s, "again", NULL, t0 + 80), 0); /* entered again */
    assert_int_equal(ac_session_post(r.s, "check", NULL, t0 + 150), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting"); /* 70 ms, not 150 */
    assert_int_equal(ac_session_post(r.s, "check", NULL, t0 + 200), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Done"); /* 120 ms */
    rig_close(&r);
}

/* turn.time counts from the start of the running turn (a turn state entered), the turn's
 * definition: a turn a pause stopped and resume started again counts from the resume, not
 * from its message. */
static const char *turn_spec =
    "param patience = 100ms\nparam context_window = 0\n"
    "event spawn, user_message, pause, resume\noutside event check\n"
    "action init_session, append_user_message, finish_interaction\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done\n"
    "    state Idle, Paused\n"
    "    state Working { invoke w }\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Working on user_message / append_user_message\n"
    "    Working -> Paused on pause\n"
    "    Paused -> Working on resume\n"
    "    Working -> Done on check [turn.time >= patience] / finish_interaction\n"
    "    Working on check\n"
    "}\n"
    "machine w {\n"
    "    initial Wait\n"
    "    terminal End\n"
    "    Wait -> End on user_message\n"
    "}\n";

static void test_turn_time_from_resume(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("turn.fsm", turn_spec), "");
    int64_t t0 = (int64_t)time(NULL) * 1000 + 10000;
    assert_int_equal(ac_session_post(r.s, "user_message", json_pack("{s:s}", "text", "go"), t0), 0);
    assert_int_equal(ac_session_status(r.s), AC_SESSION_RUNNING);
    assert_int_equal(ac_session_post(r.s, "pause", NULL, t0 + 50), 0);
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_INTERRUPTED);
    assert_int_equal(ac_session_post(r.s, "resume", NULL, t0 + 90), 0); /* no new message */
    assert_int_equal(ac_session_status(r.s), AC_SESSION_RUNNING);
    assert_int_equal(ac_session_post(r.s, "check", NULL, t0 + 150), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Working"); /* 60 ms, not 150 */
    assert_int_equal(ac_session_post(r.s, "check", NULL, t0 + 195), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Done"); /* 105 ms */
    rig_close(&r);
}

/* A string fact against a string param (overridden) and a literal, read from the event. */
static const char *string_spec =
    "param want = \"stop\"\nparam context_window = 0\n"
    "event spawn, user_message\noutside event tick\n"
    "action init_session, append_user_message, finish_interaction\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done, Other\n"
    "    state Idle, Counting\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Counting on user_message / append_user_message\n"
    "    Counting -> Done on tick [llm.finish == want] / finish_interaction\n"
    "    Counting -> Other on tick [llm.finish == \"length\"]\n"
    "    Counting on tick\n"
    "}\n";

static void test_string_param(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, compile("strings.fsm", string_spec), "");
    ac_session_send(r.s, "one");
    assert_int_equal(
        ac_session_post(r.s, "tick", json_pack("{s:s}", "finish_reason", "tool_calls"), 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting");
    assert_int_equal(ac_session_post(r.s, "tick", json_pack("{s:s}", "finish_reason", "stop"), 0),
                     0);
    assert_string_equal(ac_session_state(r.s, "s"), "Done");
    rig_close(&r);
    rig_open(&r, compile("strings.fsm", string_spec), "");
    ac_session_send(r.s, "one");
    assert_int_equal(ac_session_post(r.s, "tick", json_pack("{s:s}", "finish_reason", "length"), 0),
                     0);
    assert_string_equal(ac_session_state(r.s, "s"), "Other");
    rig_close(&r);
}

/* The pin action: the spec pins the assistant message of a call to keep_*, and the
 * "importance" compaction keeps that call's result while it stubs the others. */
static void big_result(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    (void)args;
    char out[3000];
    memset(out, 'w', sizeof out - 1);
    out[sizeof out - 1] = 0;
    ac_tool_call_complete(h, 1, out);
}

static void test_pin_keeps(void **state)
{
    (void)state;
    ac_spec *spec = ac_spec_load("spec/agent.fsm");
    assert_non_null(spec);
    char *src = strndup(spec->src, spec->src_len);
    ac_spec_free(spec);
    char *a = replace(src, "action apply_compaction", "action pin\naction apply_compaction");
    char *b = replace(a, "    STREAMING -> TOOL_EXECUTING on llm.completed [has_tool_calls]",
                      "    STREAMING -> TOOL_EXECUTING on llm.completed [has_tool_calls && calls "
                      "\"keep_*\"] / record_assistant, pin\n"
                      "    STREAMING -> TOOL_EXECUTING on llm.completed [has_tool_calls]");
    free(src);
    free(a);
    const char *script =
        "{\"content\": \"\", \"tool_calls\": [{\"id\": \"k1\", \"name\": \"keep_note\", "
        "\"arguments\": \"{}\"}]}\n{\"content\": \"one\"}\n"
        "{\"content\": \"\", \"tool_calls\": [{\"id\": \"s1\", \"name\": \"search\", "
        "\"arguments\": \"{}\"}]}\n{\"content\": \"two\"}\n"
        "{\"content\": \"\", \"tool_calls\": [{\"id\": \"s2\", \"name\": \"search\", "
        "\"arguments\": \"{}\"}]}\n{\"content\": \"three\"}\n{\"content\": \"four\"}\n";
    ac_fsm_tables *t = compile("pin.fsm", b);
    free(b);
    rig r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.loop = ac_loop_new();
    const char *params[] = {"compaction=importance", "compact_threshold=1500", "compaction_keep=1",
                            NULL};
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    cfg.tables = t;
    cfg.params = params;
    ac_error err = {0};
    r.e = ac_engine_new(&cfg, &err);
    assert_non_null(r.e);
    assert_int_equal(
        ac_engine_add_callback_tool(r.e, "keep_note", "d", NULL, big_result, NULL, &err), 0);
    assert_int_equal(ac_engine_add_callback_tool(r.e, "search", "d", NULL, big_result, NULL, &err),
                     0);
    r.s = ac_session_new(r.e, "pin", NULL, &err);
    assert_non_null(r.s);
    const char *msgs[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ac_session_send(r.s, msgs[i]), 0);
        for (int k = 0; k < 200 && !ac_session_settled(r.s); k++)
            ac_loop_run_once(r.loop, 20);
        assert_true(ac_session_settled(r.s));
    }
    assert_string_equal(ac_session_answer(r.s), "four");
    char *js = ac_session_to_json(r.s);
    json_t *j = json_loads(js, 0, NULL);
    free(js);
    json_t *msgsj = json_object_get(json_object_get(j, "conversation"), "messages");
    int pinned = 0, kept = 0, stubs = 0;
    size_t i;
    json_t *m;
    json_array_foreach(msgsj, i, m)
    {
        const char *tc = json_string_value(json_object_get(m, "tool_call_id"));
        const char *content = json_string_value(json_object_get(m, "content"));
        pinned += json_is_true(json_object_get(m, "pinned"));
        if (tc && !strcmp(tc, "k1"))
            kept += !json_is_true(json_object_get(m, "cleared"));
        if (tc && content && !strcmp(content, "[result of search dropped: 3 KB]"))
            stubs++;
    }
    json_decref(j);
    assert_int_equal(pinned, 1); /* the message that called keep_note */
    assert_int_equal(kept, 1);
    assert_true(stubs >= 1);
    rig_close(&r);
}

/* ---- comparison guards compiled by the generator ---- */
static const char *typed_spec =
    "param limit = 2\nparam patience = 50ms\nparam context_window = 0\n"
    "event spawn, user_message\n"
    "outside event tick\n"
    "action init_session, append_user_message, finish_interaction\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done\n"
    "    state Idle, Counting\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Counting on user_message / append_user_message\n"
    "    Counting -> Done on tick [turn.tool_calls > limit || llm.status == 429] / "
    "finish_interaction\n"
    "    Counting -> Done on tick [calls \"shell_*\" && llm.error == \"http\"] / "
    "finish_interaction\n"
    "    Counting -> Done on tick [turn.time >= 30s || turn.cost_usd > 0.25] / "
    "finish_interaction\n"
    "    Counting -> Done on tick [state.time > patience] / finish_interaction\n"
    "    Counting on tick\n"
    "}\n";

static const ac_fsm_guard_op *op_named(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 0; i < t->n_guards; i++)
        if (strcmp(t->guard_names[i], name) == 0)
            return &t->guard_ops[i];
    fail_msg("no guard '%s'", name);
    return NULL;
}

static uint16_t param_of(const ac_fsm_tables *t, const char *name)
{
    for (uint16_t i = 0; i < t->n_params; i++)
        if (strcmp(t->params[i].name, name) == 0)
            return i;
    fail_msg("no param '%s'", name);
    return AC_FSM_NONE;
}

/* Every comparison is in the tables as (fact, operator, operand), its canonical text as its
 * name; the engine evaluates them without reading the text. */
static void test_typed_guards(void **state)
{
    (void)state;
    ac_fsm_tables *t = compile("typed.fsm", typed_spec);
    assert_int_equal(t->layout, AC_FSM_LAYOUT);
    assert_non_null(t->guard_ops);
    const ac_fsm_guard_op *op = op_named(t, "turn.tool_calls > limit");
    assert_int_equal(op->operand, AC_GOP_PARAM);
    assert_string_equal(ac_facts[op->fact].name, "turn.tool_calls");
    assert_int_equal(op->cmp, AC_CMP_GT);
    assert_int_equal(op->param, param_of(t, "limit"));
    op = op_named(t, "llm.status == 429");
    assert_int_equal(op->operand, AC_GOP_INT);
    assert_int_equal(op->cmp, AC_CMP_EQ);
    assert_int_equal(op->ival, 429);
    op = op_named(t, "calls \"shell_*\"");
    assert_int_equal(op->operand, AC_GOP_CALLS);
    assert_string_equal(op->sval, "shell_*");
    op = op_named(t, "llm.error == \"http\"");
    assert_int_equal(op->operand, AC_GOP_STRING);
    assert_string_equal(ac_facts[op->fact].name, "llm.error");
    assert_string_equal(op->sval, "http");
    op = op_named(t, "turn.time >= 30s");
    assert_int_equal(op->operand, AC_GOP_INT);
    assert_int_equal(op->cmp, AC_CMP_GE);
    assert_int_equal(op->ival, 30000);
    op = op_named(t, "turn.cost_usd > 0.25");
    assert_int_equal(op->operand, AC_GOP_USD);
    assert_true(op->usd == 0.25);
    op = op_named(t, "state.time > patience");
    assert_int_equal(op->param, param_of(t, "patience"));

    /* the compiled guards decide: patience (50ms) passes, the others do not hold */
    rig r;
    rig_open(&r, t, "");
    assert_int_equal(ac_session_send(r.s, "one"), 0);
    assert_int_equal(ac_session_post(r.s, "tick", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting");
    struct timespec nap = {0, 80 * 1000000L};
    nanosleep(&nap, NULL);
    assert_int_equal(ac_session_post(r.s, "tick", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Done");
    rig_close(&r);
}

/* Tables an older generator made (no layout), or whose compiled guards are missing or out
 * of range, are refused with a message that says what to do. */
static void test_tables_refused(void **state)
{
    (void)state;
    ac_fsm_tables *t = compile("typed.fsm", typed_spec);
    ac_fsm_tables old = *t;
    ac_fsm_guard_op *ops = calloc(t->n_guards, sizeof *ops);
    assert_non_null(ops);
    memcpy(ops, t->guard_ops, t->n_guards * sizeof *ops);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "";
    cfg.tables = &old;
    ac_error err = {0};

    old.layout = 0; /* before the layout had a version */
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ESPEC);
    assert_non_null(strstr(err.text, "layout 0, this engine reads layout 3"));
    assert_non_null(strstr(err.text, "regenerate"));
    old.layout = 2; /* before the built-in actions were compiled */
    assert_null(ac_engine_new(&cfg, &err));
    assert_non_null(strstr(err.text, "layout 2, this engine reads layout 3"));

    old.layout = AC_FSM_LAYOUT;
    old.guard_ops = NULL; /* comparisons named, none compiled */
    assert_null(ac_engine_new(&cfg, &err));
    assert_non_null(strstr(err.text, "has no compiled comparison"));

    old.guard_ops = ops;
    ops[0].fact = 200; /* no such fact */
    assert_null(ac_engine_new(&cfg, &err));
    assert_non_null(strstr(err.text, "is malformed in the tables"));

    memcpy(ops, t->guard_ops, t->n_guards * sizeof *ops); /* as generated: accepted */
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    ac_engine_free(e);
    free(ops);
    ac_spec_tables_free(t);
}

/* ---- built-in actions compiled by the generator ---- */
static const char *actions_spec =
    "param limit = 2\nparam context_window = 0\n"
    "event spawn, user_message\n"
    "outside event tick, poke, submit\n"
    "action init_session, append_user_message\n"
    "machine s {\n"
    "    initial Created\n"
    "    terminal Done\n"
    "    state Idle, Counting\n"
    "    Created -> Idle on spawn / init_session\n"
    "    Idle -> Counting on user_message / append_user_message\n"
    "    Counting on poke / note(\"poked, limit {limit}, {reason}\")\n"
    "    Counting on submit / answer_from_call(\"submit\", \"answer, final\")\n"
    "    Counting -> Done on tick / fail(\"over the limit ({limit})\")\n"
    "}\n";

/* Each built-in action is in the tables as which one and its strings (a comma inside a string
 * stays in it), the text as its name; the engine runs them without reading the text, and
 * refuses tables whose built-in actions were not compiled. */
static void test_typed_actions(void **state)
{
    (void)state;
    ac_fsm_tables *t = compile("actions.fsm", actions_spec);
    assert_non_null(t->action_ops);
    int seen = 0;
    for (uint16_t i = 0; i < t->n_actions; i++) {
        const ac_fsm_action_op *op = &t->action_ops[i];
        const char *n = t->action_names[i];
        if (strncmp(n, "note(", 5) == 0) {
            assert_int_equal(op->kind, AC_AOP_NOTE);
            assert_string_equal(op->args[0], "poked, limit {limit}, {reason}");
            assert_null(op->args[1]);
            seen |= 1;
        } else if (strncmp(n, "answer_from_call(", 17) == 0) {
            assert_int_equal(op->kind, AC_AOP_ANSWER_FROM_CALL);
            assert_string_equal(op->args[0], "submit");
            assert_string_equal(op->args[1], "answer, final");
            seen |= 2;
        } else if (strncmp(n, "fail(", 5) == 0) {
            assert_int_equal(op->kind, AC_AOP_FAIL);
            assert_string_equal(op->args[0], "over the limit ({limit})");
            seen |= 4;
        } else {
            assert_int_equal(op->kind, AC_AOP_NONE); /* bound to C by name */
        }
    }
    assert_int_equal(seen, 7);

    ac_fsm_tables old = *t; /* made without the compiled actions: refused, told what to do */
    old.action_ops = NULL;
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "";
    cfg.tables = &old;
    ac_error err = {0};
    assert_null(ac_engine_new(&cfg, &err));
    assert_int_equal(err.code, AC_ESPEC);
    assert_non_null(strstr(err.text, "has no compiled built-in action in the tables"));
    assert_non_null(strstr(err.text, "regenerate"));
    rig r;
    rig_open(&r, t, "");
    assert_int_equal(ac_session_send(r.s, "one"), 0);
    assert_int_equal(ac_session_post(r.s, "poke", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Counting"); /* a note fails nothing */
    assert_null(ac_session_error(r.s));
    assert_int_equal(ac_session_post(r.s, "submit", NULL, 0), 0);
    assert_int_equal(ac_session_post(r.s, "tick", NULL, 0), 0);
    assert_string_equal(ac_session_state(r.s, "s"), "Done");
    assert_string_equal(ac_session_error(r.s), "over the limit (2)");
    rig_close(&r); /* frees t */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outside_events),
        cmocka_unit_test(test_per_call_decisions),
        cmocka_unit_test(test_decisions_threadsafe),
        cmocka_unit_test(test_stuck_fails_at_once),
        cmocka_unit_test(test_stuck_at_run_time),
        cmocka_unit_test(test_compare_fail_after),
        cmocka_unit_test(test_fail_reason),
        cmocka_unit_test(test_state_time_self_transition),
        cmocka_unit_test(test_string_param),
        cmocka_unit_test(test_turn_time_from_resume),
        cmocka_unit_test(test_pin_keeps),
        cmocka_unit_test(test_typed_guards),
        cmocka_unit_test(test_tables_refused),
        cmocka_unit_test(test_typed_actions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
