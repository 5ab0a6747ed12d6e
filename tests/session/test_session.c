/*
 * test_session.c - sessions on a real loop with the scripted provider:
 * answers and tool results, journal replay (in-process and with the CLI),
 * retries, failures, budgets, and cancellation from every reachable state.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "context/conversation.h"
#include "io/http.h"
#include "io/loop.h"
#include "io/proc.h"
#include "journal_replay.h"
#include "session/snapshot.h"

static const char *agentc_bin;
static char tmpdir[256];

static const char *tool_turns = "{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"calculator\","
                                "\"arguments\":\"{\\\"expression\\\":\\\"17 * 23\\\"}\"}]}\n"
                                "{\"content\":\"The answer is 391.\"}\n";

typedef struct rig {
    ac_loop *loop;
    ac_engine *e;
    ac_session *s;
    char journal[512];
} rig;

static const ac_output *rig_out;    /* output for the next rig_open, if any */
static const char *rig_journal_dir; /* journal_dir for the next rig_open, if any */

static void rig_open(rig *r, const char *turns, const char *const *params, int delay_ms,
                     const char *tools, const char *name)
{
    ac_error err = {0};
    memset(r, 0, sizeof *r);
    r->loop = ac_loop_new();
    assert_non_null(r->loop);
    ac_engine_config cfg = {0};
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.script_delay_ms = delay_ms;
    cfg.params = params;
    cfg.seed = 7;
    cfg.output = rig_out;
    cfg.journal_dir = rig_journal_dir;
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
    if (ac_engine_add_tools(r->e, "builtin:calculator", &err) != 0)
        fail_msg("tools: %s", err.text);
    if (tools && ac_engine_add_tools(r->e, tools, &err) != 0)
        fail_msg("tools: %s", err.text);
    snprintf(r->journal, sizeof r->journal, "%s/%s.journal", tmpdir, name);
    r->s = ac_session_new(r->e, name, rig_journal_dir ? NULL : r->journal, &err);
    if (!r->s)
        fail_msg("session: %s", err.text);
}

/* Runs the loop until the session settles (bounded). */
static void run_until_settled(rig *r)
{
    for (int i = 0; i < 2000 && !ac_session_settled(r->s); i++)
        ac_loop_run_once(r->loop, 50);
    assert_true(ac_session_settled(r->s));
}

/* Runs the loop until `machine` is in `state` (bounded). */
static void run_until_state(rig *r, const char *machine, const char *state)
{
    for (int i = 0; i < 2000; i++) {
        const char *st = ac_session_state(r->s, machine);
        if (st && strcmp(st, state) == 0)
            return;
        ac_loop_run_once(r->loop, 10);
    }
    fail_msg("%s never reached %s", machine, state);
}

/* The next message runs a turn that answers `answer` and whose request held `earlier`, the
 * message of a turn before it (the history survived that turn's end). */
static void next_turn_sees_history(rig *r, const char *earlier, const char *answer)
{
    assert_int_equal(ac_session_send(r->s, "and now?"), AC_OK);
    run_until_settled(r);
    assert_string_equal(ac_session_status_name(ac_session_status(r->s)), "idle");
    assert_int_equal(ac_session_last_turn(r->s, NULL), AC_TURN_COMPLETED);
    assert_null(ac_session_error(r->s));
    assert_string_equal(ac_session_answer(r->s), answer);
    ac_conv *c = ac_session_conv(r->s);
    int seen = 0;
    for (size_t i = 0; i < ac_conv_message_count(c); i++)
        seen |= ac_conv_message(c, i)->role == AC_ROLE_USER &&
                strcmp(ac_conv_message(c, i)->content, earlier) == 0;
    assert_true(seen);
}

static void rig_close(rig *r)
{
    ac_session_free(r->s);
    ac_engine_free(r->e);
    assert_int_equal(ac_loop_pending(r->loop), 0);
    ac_loop_free(r->loop);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        if (n == 0)
            break;
        len += n;
    }
    buf[len] = 0;
    fclose(f);
    return buf;
}

/* A replay session fed with every event line of the journal. */
static ac_session *replay_journal(ac_engine *e, const char *id, const char *path)
{
    ac_error err = {0};
    int events = 0;
    ac_session *s = test_replay_journal(e, id, path, &events, err.text, sizeof err.text);
    if (!s)
        fail_msg("replay: %s", err.text);
    assert_true(events > 3);
    return s;
}

/* Replays the rig's journal on an engine without a loop (no effects), with the same script
 * and tools, and checks the session comes out as the live one: byte for byte. */
static void assert_replays_same(rig *r, const char *turns, const char *tools, const char *id)
{
    char *live = ac_session_to_json(r->s);
    assert_non_null(live);
    ac_error err = {0};
    ac_engine_config cfg = {0};
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    ac_engine *e2 = ac_engine_new(&cfg, &err);
    if (!e2)
        fail_msg("engine: %s", err.text);
    assert_int_equal(ac_engine_add_tools(e2, "builtin:calculator", &err), 0);
    if (tools)
        assert_int_equal(ac_engine_add_tools(e2, tools, &err), 0);
    ac_session *s2 = replay_journal(e2, id, r->journal);
    char *replayed = ac_session_to_json(s2);
    assert_non_null(replayed);
    assert_string_equal(live, replayed);
    free(replayed);
    free(live);
    ac_session_free(s2);
    ac_engine_free(e2);
}

static void test_answer_and_replay(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, tool_turns, NULL, 0, NULL, "answer");
    assert_int_equal(ac_session_send(r.s, "What is 17 * 23?"), AC_FSM_HANDLED);
    run_until_settled(&r);
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "idle");
    assert_string_equal(ac_session_state(r.s, "session"), "Idle");
    assert_string_equal(ac_session_answer(r.s), "The answer is 391.");
    char *live = ac_session_to_json(r.s);
    assert_non_null(live);
    /* the tool's result is in the conversation */
    assert_non_null(strstr(live, "\"tool\""));
    assert_non_null(strstr(live, "391"));
    free(live);
    char *jtext = slurp(r.journal);
    assert_non_null(strstr(jtext, "\"tool.completed\""));
    free(jtext);

    /* replay: no loop, no effects, same session */
    assert_replays_same(&r, tool_turns, NULL, "answer");
    rig_close(&r);
}

static int run_cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_cmd(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    assert_true(st != -1 && WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void test_cli_replay(void **state)
{
    (void)state;
    if (!agentc_bin)
        skip();
    char j[512], spec[512], out[512];
    snprintf(j, sizeof j, "%s/demo.journal", tmpdir);
    snprintf(spec, sizeof spec, "%s/agent2.fsm", tmpdir);
    snprintf(out, sizeof out, "%s/replay.out", tmpdir);
    assert_int_equal(run_cmd("'%s' demo --journal '%s' >/dev/null 2>&1", agentc_bin, j), 0);
    assert_int_equal(run_cmd("'%s' replay '%s' --check >/dev/null 2>&1", agentc_bin, j), 0);
    /* the same spec with a smaller budget diverges */
    char *text = slurp("spec/agent.fsm");
    char *p = strstr(text, "param max_iterations     = 10");
    assert_non_null(p);
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fwrite(text, 1, (size_t)(p - text), f);
    fputs("param max_iterations = 2 ", f);
    fputs(p + strlen("param max_iterations     = 10"), f);
    fclose(f);
    free(text);
    assert_int_equal(
        run_cmd("'%s' replay '%s' --check --spec '%s' >'%s' 2>&1", agentc_bin, j, spec, out), 1);
    char *o = slurp(out);
    assert_non_null(strstr(o, "divergence at event"));
    free(o);
}

static void test_retry(void **state)
{
    (void)state;
    static const char *const params[] = {"backoff_initial=5ms", "backoff_max=50ms", NULL};
    rig r;
    rig_open(&r,
             "{\"error\":{\"status\":503,\"message\":\"overloaded\",\"retryable\":true,"
             "\"retry_after_ms\":5}}\n"
             "{\"content\":\"ok\"}\n",
             params, 0, NULL, "retry");
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "idle");
    assert_string_equal(ac_session_answer(r.s), "ok");
    char *j = slurp(r.journal);
    assert_non_null(strstr(j, "RETRYING"));
    assert_non_null(strstr(j, "\"timer.fired\""));
    free(j);
    rig_close(&r);
}

static void test_fatal_error(void **state)
{
    (void)state;
    rig r;
    rig_open(&r,
             "{\"error\":{\"status\":400,\"message\":\"bad request here\",\"retryable\":false}}\n"
             "{\"content\":\"ok again\"}\n",
             NULL, 0, NULL, "fatal");
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    /* the turn failed, the session did not: at rest, the failure recorded */
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "idle");
    assert_string_equal(ac_session_state(r.s, "session"), "Idle");
    const char *why = NULL;
    assert_int_equal(ac_session_last_turn(r.s, &why), AC_TURN_FAILED);
    assert_non_null(why);
    assert_non_null(strstr(why, "bad request here"));
    assert_non_null(ac_session_error(r.s));
    assert_non_null(strstr(ac_session_error(r.s), "bad request here"));
    char *j = ac_session_to_json(r.s);
    assert_non_null(strstr(j, "\"status\":\"idle\",\"last_turn\":{\"outcome\":\"failed\","
                              "\"error\":\"bad request here"));
    free(j);
    /* the next message works and its request holds the history */
    next_turn_sees_history(&r, "hi", "ok again");
    rig_close(&r);
}

static void test_budget(void **state)
{
    (void)state;
    static const char *const params[] = {"max_iterations=1", NULL};
    rig r;
    rig_open(&r, tool_turns, params, 0, NULL, "budget");
    ac_session_send(r.s, "What is 17 * 23?");
    run_until_settled(&r);
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "idle");
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_FAILED);
    assert_non_null(ac_session_error(r.s));
    assert_non_null(strstr(ac_session_error(r.s), "max_iterations (1)"));
    /* the next turn runs (its call answers the one the failed turn left) */
    next_turn_sees_history(&r, "What is 17 * 23?", "The answer is 391.");
    rig_close(&r);
}

/* ---- cancellation ---- */

static void cancel_and_check(rig *r)
{
    int running = ac_session_in_turn(r->s);
    ac_session_cancel(r->s);
    assert_string_equal(ac_session_status_name(ac_session_status(r->s)), "ended");
    assert_string_equal(ac_session_state(r->s, "session"), "Cancelled");
    ac_session_end end;
    ac_session_get_end(r->s, &end);
    assert_true(end.ended);
    assert_string_equal(end.how, "cancelled");
    assert_true(end.at_ms > 0);
    if (running)
        assert_int_equal(ac_session_last_turn(r->s, NULL), AC_TURN_CANCELLED);
    assert_null(ac_session_state(r->s, "agent"));
    assert_int_equal(ac_proc_active(r->loop), 0);
    assert_int_equal(ac_http_active(r->loop), 0);
    /* nothing it left behind fires into it later */
    for (int i = 0; i < 3; i++)
        ac_loop_run_once(r->loop, 10);
    assert_string_equal(ac_session_state(r->s, "session"), "Cancelled");
    rig_close(r);
}

static void test_cancel_idle(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, tool_turns, NULL, 0, NULL, "c_idle");
    assert_string_equal(ac_session_state(r.s, "session"), "Idle");
    cancel_and_check(&r);
}

static void test_cancel_calling(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "{\"content\":\"a long answer that streams slowly\"}\n", NULL, 200, NULL,
             "c_calling");
    ac_session_send(r.s, "hi");
    assert_string_equal(ac_session_state(r.s, "process"), "CALLING");
    cancel_and_check(&r);
}

static void test_cancel_streaming(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "{\"content\":\"a long answer that streams slowly, chunk after chunk\"}\n", NULL,
             200, NULL, "c_streaming");
    ac_session_send(r.s, "hi");
    run_until_state(&r, "process", "STREAMING");
    cancel_and_check(&r);
}

static void test_cancel_tool(void **state)
{
    (void)state;
    char tools[512];
    snprintf(tools, sizeof tools, "%s/tools.json", tmpdir);
    FILE *f = fopen(tools, "w");
    assert_non_null(f);
    fputs("{\"tools\":[{\"name\":\"nap\",\"description\":\"sleeps\","
          "\"command\":[\"sleep\",\"5\"]}]}\n",
          f);
    fclose(f);
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"nap\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"done\"}\n",
             NULL, 0, tools, "c_tool");
    ac_session_send(r.s, "nap");
    run_until_state(&r, "process", "TOOL_EXECUTING");
    for (int i = 0; i < 100 && ac_proc_active(r.loop) == 0; i++)
        ac_loop_run_once(r.loop, 10);
    assert_int_equal(ac_proc_active(r.loop), 1);
    cancel_and_check(&r);
}

static void test_cancel_retrying(void **state)
{
    (void)state;
    rig r;
    rig_open(&r,
             "{\"error\":{\"status\":503,\"message\":\"overloaded\",\"retryable\":true,"
             "\"retry_after_ms\":5000}}\n"
             "{\"content\":\"ok\"}\n",
             NULL, 0, NULL, "c_retry");
    ac_session_send(r.s, "hi");
    run_until_state(&r, "process", "RETRYING");
    cancel_and_check(&r);
}

static void test_cancel_compacting(void **state)
{
    (void)state;
    static const char *const params[] = {"compact_threshold=1", "compaction=summarize", NULL};
    rig r;
    rig_open(&r, "{\"content\":\"summary\"}\n{\"content\":\"ok\"}\n", params, 200, NULL,
             "c_compacting");
    ac_session_send(r.s, "hi");
    run_until_state(&r, "agent", "COMPACTING");
    cancel_and_check(&r);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* turn.cancel stops the turn and keeps the session: back at rest, nothing left running, the
 * turn recorded as cancelled, a later turn fine (its request with the history). */
static void cancel_turn_and_check(rig *r, const char *earlier, const char *answer)
{
    assert_true(ac_session_in_turn(r->s));
    assert_int_equal(ac_session_cancel_turn(r->s), AC_OK);
    assert_string_equal(ac_session_status_name(ac_session_status(r->s)), "idle");
    assert_string_equal(ac_session_state(r->s, "session"), "Idle");
    assert_null(ac_session_state(r->s, "agent"));
    assert_false(ac_session_ended(r->s));
    assert_int_equal(ac_session_last_turn(r->s, NULL), AC_TURN_CANCELLED);
    assert_int_equal(ac_proc_active(r->loop), 0);
    assert_int_equal(ac_http_active(r->loop), 0);
    for (int i = 0; i < 3; i++)
        ac_loop_run_once(r->loop, 10);
    assert_string_equal(ac_session_state(r->s, "session"), "Idle");
    assert_int_equal(ac_session_cancel_turn(r->s), AC_UNHANDLED); /* no turn runs */
    next_turn_sees_history(r, earlier, answer);
    rig_close(r);
}

static void test_cancel_turn_streaming(void **state)
{
    (void)state;
    rig r;
    rig_open(&r,
             "{\"content\":\"a long answer that streams slowly, chunk after chunk\"}\n"
             "{\"content\":\"after\"}\n",
             NULL, 100, NULL, "t_streaming");
    ac_session_send(r.s, "hi");
    run_until_state(&r, "process", "STREAMING");
    cancel_turn_and_check(&r, "hi", "after");
}

static void test_cancel_turn_tool(void **state)
{
    (void)state;
    char tools[512];
    snprintf(tools, sizeof tools, "%s/tools_t.json", tmpdir);
    write_file(tools, "{\"tools\":[{\"name\":\"nap\",\"description\":\"sleeps\","
                      "\"command\":[\"sleep\",\"5\"]}]}\n");
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"nap\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"after\"}\n",
             NULL, 0, tools, "t_tool");
    ac_session_send(r.s, "nap");
    run_until_state(&r, "process", "TOOL_EXECUTING");
    for (int i = 0; i < 100 && ac_proc_active(r.loop) == 0; i++)
        ac_loop_run_once(r.loop, 10);
    assert_int_equal(ac_proc_active(r.loop), 1);
    cancel_turn_and_check(&r, "nap", "after");
    /* the call the cancel stopped was answered before the next request, not left open */
}

/* close ends the session; a message to it is refused, the text saying how and when. */
static void test_close(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "{\"content\":\"one\"}\n", NULL, 0, NULL, "t_close");
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    assert_int_equal(ac_session_post(r.s, "close", NULL, 0), AC_OK);
    assert_string_equal(ac_session_status_name(ac_session_status(r.s)), "ended");
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_COMPLETED); /* the last turn */
    char text[256];
    assert_true(ac_session_ended_text(r.s, NULL, text, sizeof text) > 0);
    assert_non_null(strstr(text, "session t_close ended (closed) at 20"));
    assert_non_null(strstr(text, "Z; start a new one"));
    char *j = ac_session_to_json(r.s);
    assert_non_null(strstr(j, "\"ended\":{\"how\":\"closed\",\"at_ms\":"));
    free(j);
    rig_close(&r);
}

/* A snapshot carries how the last turn and the session ended; one of the release before (a
 * "status" in its turn part) restores its failure as the last turn's. */
static ac_session *restored(rig *r, const char *body)
{
    ac_error err = {0};
    ac_session *s = ac_session_new_replayer(r->e, "restored", &err);
    assert_non_null(s);
    char why[256];
    uint64_t calls;
    assert_int_equal(ac_session_snapshot_restore(s, body, &calls, why, sizeof why), AC_OK);
    return s;
}

static void test_snapshot_turn(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "{\"error\":{\"status\":400,\"message\":\"refused\",\"retryable\":false}}\n", NULL,
             0, NULL, "t_snap");
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    char *body = ac_session_snapshot_save(r.s, 1);
    assert_non_null(body);
    ac_session *s = restored(&r, body);
    const char *why = NULL;
    assert_int_equal(ac_session_last_turn(s, &why), AC_TURN_FAILED);
    assert_string_equal(why, "refused");
    assert_int_equal(ac_session_status(s), AC_SESSION_IDLE);
    ac_session_free(s);
    /* the release before: {"status": 2 (failed), "error": WHY} */
    json_t *doc = json_loads(body, 0, NULL);
    json_t *turn = json_object_get(doc, "turn");
    json_object_del(turn, "last_outcome");
    json_object_del(turn, "last_error");
    json_object_set_new(turn, "status", json_integer(2));
    json_object_set_new(turn, "error", json_string("an old failure"));
    char *old = json_dumps(doc, JSON_COMPACT);
    s = restored(&r, old);
    assert_int_equal(ac_session_last_turn(s, &why), AC_TURN_FAILED);
    assert_string_equal(why, "an old failure");
    assert_int_equal(ac_session_status(s), AC_SESSION_IDLE);
    ac_session_free(s);
    free(old);
    json_decref(doc);
    free(body);
    /* closed: how and when */
    assert_int_equal(ac_session_post(r.s, "close", NULL, 1795700000000), AC_OK);
    body = ac_session_snapshot_save(r.s, 1);
    s = restored(&r, body);
    ac_session_end end;
    ac_session_get_end(s, &end);
    assert_true(end.ended);
    assert_string_equal(end.how, "closed");
    assert_true(end.at_ms == 1795700000000);
    ac_session_free(s);
    free(body);
    rig_close(&r);
}

/* Pausing a running session stops the agent (and its call); resuming runs
 * the unfinished turn again; cancelling a paused session leaves nothing. */
static void test_pause_resume_and_cancel_paused(void **state)
{
    (void)state;
    rig r;
    rig_open(&r, "{\"content\":\"first\"}\n{\"content\":\"second\"}\n", NULL, 50, NULL, "c_paused");
    ac_session_send(r.s, "hi");
    run_until_state(&r, "process", "STREAMING");
    ac_session_post(r.s, "pause", NULL, 0);
    assert_string_equal(ac_session_state(r.s, "session"), "Paused");
    assert_null(ac_session_state(r.s, "agent"));
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(r.loop, 20);
    assert_string_equal(ac_session_state(r.s, "session"), "Paused");
    ac_session_post(r.s, "resume", NULL, 0);
    assert_string_equal(ac_session_state(r.s, "session"), "Running");
    run_until_settled(&r);
    /* the interrupted call's partial text is gone; the resumed call answered */
    assert_string_equal(ac_session_answer(r.s), "second");
    ac_session_post(r.s, "pause", NULL, 0);
    assert_string_equal(ac_session_state(r.s, "session"), "Paused");
    cancel_and_check(&r);
}

static const ac_tool_call *only_call(rig *r, const char *id)
{
    const ac_tool_call *c = ac_conv_tool_call(ac_session_conv(r->s), id);
    assert_non_null(c);
    return c;
}

/* Tool output that is not well-formed UTF-8 (here an encoded surrogate)
 * still answers the call, with U+FFFD in place of the bad bytes. */
static void test_tool_output_bad_utf8(void **state)
{
    (void)state;
    char tools[512];
    snprintf(tools, sizeof tools, "%s/bad_utf8.json", tmpdir);
    write_file(tools, "{\"tools\":[{\"name\":\"bad\",\"description\":\"prints bad bytes\","
                      "\"command\":[\"printf\",\"a\\\\355\\\\240\\\\200b\"]}]}\n");
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"b1\",\"name\":\"bad\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"done\"}\n",
             NULL, 0, tools, "bad_utf8");
    ac_session_send(r.s, "go");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "done");
    const ac_tool_call *c = only_call(&r, "b1");
    assert_int_equal(c->state, AC_CALL_SUCCESS);
    assert_string_equal(c->result, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                   "b");
    rig_close(&r);
}

/* A call the model sent without a name is recorded and answered (unknown
 * tool); the turn is not lost and the session does not wait forever. */
static void test_tool_call_without_name(void **state)
{
    (void)state;
    rig r;
    rig_open(&r,
             "{\"content\":\"calling\",\"tool_calls\":[{\"id\":\"c1\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"done\"}\n",
             NULL, 0, NULL, "no_name");
    ac_session_send(r.s, "go");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "done");
    const ac_tool_call *c = only_call(&r, "c1");
    assert_int_equal(c->state, AC_CALL_FAILURE);
    assert_non_null(strstr(c->result, "unknown tool"));
    rig_close(&r);
}

/* Cancelling the session from the tool_start output callback (while the round's
 * calls are reported, before any runs) stops everything; nothing is touched after.
 * The round's three starts are reported together, the cancel is applied after them. */
static int starts;
static void cancel_on_second_start(void *ud, ac_session *s, const char *id, const char *name,
                                   const char *args)
{
    (void)ud;
    (void)id;
    (void)name;
    (void)args;
    if (++starts == 2)
        ac_session_cancel(s);
}

static void test_cancel_from_tool_start(void **state)
{
    (void)state;
    static const char *const params[] = {"max_parallel_tools=1", NULL};
    ac_output out = {0};
    out.tool_start = cancel_on_second_start;
    rig_out = &out;
    starts = 0;
    rig r;
    rig_open(&r,
             "{\"tool_calls\":["
             "{\"id\":\"k1\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"1+"
             "1\\\"}\"},"
             "{\"id\":\"k2\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"2+"
             "2\\\"}\"},"
             "{\"id\":\"k3\",\"name\":\"calculator\",\"arguments\":\"{\\\"expression\\\":\\\"3+"
             "3\\\"}\"}]}\n"
             "{\"content\":\"done\"}\n",
             params, 0, NULL, "cancel_tool_start");
    rig_out = NULL;
    ac_session_send(r.s, "go");
    for (int i = 0; i < 200 && !ac_session_ended(r.s); i++)
        ac_loop_run_once(r.loop, 10);
    assert_string_equal(ac_session_state(r.s, "session"), "Cancelled");
    assert_int_equal(starts, 3);
    rig_close(&r);
}

/* Freeing the session from the `finished` output callback (inside a
 * dispatch) is deferred until the event is done. */
static ac_session *freed_in_callback;
static void free_on_finished(void *ud, ac_session *s)
{
    (void)ud;
    freed_in_callback = s;
    ac_session_free(s);
}

static void test_free_from_finished(void **state)
{
    (void)state;
    ac_output out = {0};
    out.finished = free_on_finished;
    rig_out = &out;
    freed_in_callback = NULL;
    rig r;
    rig_open(&r, tool_turns, NULL, 0, NULL, "free_finished");
    rig_out = NULL;
    ac_session *s = r.s;
    ac_session_send(s, "What is 17 * 23?");
    for (int i = 0; i < 500 && !freed_in_callback; i++)
        ac_loop_run_once(r.loop, 10);
    assert_ptr_equal(freed_in_callback, s);
    r.s = NULL; /* gone: rig_close frees the rest */
    for (int i = 0; i < 5; i++)
        ac_loop_run_once(r.loop, 10);
    rig_close(&r);
}

/* A pause while a tool runs, then resume: the interrupted call is answered
 * as interrupted (the model sees it), and the turn goes on. */
static void test_pause_during_tools_then_resume(void **state)
{
    (void)state;
    char tools[512];
    snprintf(tools, sizeof tools, "%s/nap.json", tmpdir);
    write_file(tools, "{\"tools\":[{\"name\":\"nap\",\"description\":\"sleeps\","
                      "\"command\":[\"sleep\",\"5\"]}]}\n");
    rig r;
    rig_open(&r,
             "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"nap\",\"arguments\":\"{}\"}]}\n"
             "{\"content\":\"after resume\"}\n",
             NULL, 0, tools, "pause_tools");
    ac_session_send(r.s, "nap");
    run_until_state(&r, "process", "TOOL_EXECUTING");
    for (int i = 0; i < 100 && ac_proc_active(r.loop) == 0; i++)
        ac_loop_run_once(r.loop, 10);
    ac_session_post(r.s, "pause", NULL, 0);
    assert_string_equal(ac_session_state(r.s, "session"), "Paused");
    assert_int_equal(ac_proc_active(r.loop), 0);
    ac_session_post(r.s, "resume", NULL, 0);
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "after resume");
    const ac_tool_call *c = only_call(&r, "n1");
    assert_int_equal(c->state, AC_CALL_FAILURE);
    assert_non_null(strstr(c->result, "interrupted"));
    rig_close(&r);
}

/* Every call of every assistant message has its tool message: the conversation is one a
 * provider accepts. */
static void assert_calls_answered(ac_conv *c)
{
    for (size_t i = 0; i < ac_conv_message_count(c); i++) {
        const ac_message *m = ac_conv_message(c, i);
        for (size_t k = 0; k < m->n_tool_calls; k++) {
            int answered = 0;
            for (size_t j = i + 1; j < ac_conv_message_count(c); j++) {
                const ac_message *t = ac_conv_message(c, j);
                answered |=
                    t->role == AC_ROLE_TOOL && !strcmp(t->tool_call_id, m->tool_call_ids[k]);
            }
            if (!answered)
                fail_msg("call %s of message %zu has no tool message", m->tool_call_ids[k], i);
        }
    }
}

/* rollback while a tool runs, and again while paused mid-turn: the turn stops, its tool
 * process goes, every message it added is removed (its tool calls with the assistant
 * messages that made them), the earlier turn stays, and the next message runs on the
 * conversation as it was; a message queued during the turn starts the next one at once.
 * The journal replays to the same session. */
static void test_rollback_turn(void **state)
{
    (void)state;
    char tools[512];
    snprintf(tools, sizeof tools, "%s/nap2.json", tmpdir);
    write_file(tools, "{\"tools\":[{\"name\":\"nap\",\"description\":\"sleeps\","
                      "\"command\":[\"sleep\",\"5\"]}]}\n");
    const char *turns = "{\"content\":\"first answer\"}\n"
                        "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"nap\",\"arguments\":\"{}\"}]}\n"
                        "{\"content\":\"after the rollback\"}\n"
                        "{\"tool_calls\":[{\"id\":\"n2\",\"name\":\"nap\",\"arguments\":\"{}\"}]}\n"
                        "{\"content\":\"after the second rollback\"}\n"
                        "{\"content\":\"six, never seen\"}\n"
                        "{\"content\":\"the queued one\"}\n";
    rig r;
    rig_open(&r, turns, NULL, 0, tools, "rollback");
    ac_session_send(r.s, "one");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "first answer");
    size_t kept = ac_conv_message_count(ac_session_conv(r.s));
    assert_int_equal(kept, 2);

    ac_session_send(r.s, "two");
    run_until_state(&r, "process", "TOOL_EXECUTING");
    for (int i = 0; i < 100 && ac_proc_active(r.loop) == 0; i++)
        ac_loop_run_once(r.loop, 10);
    assert_int_equal(ac_proc_active(r.loop), 1);
    assert_int_equal(ac_session_post(r.s, "rollback", NULL, 0), AC_FSM_HANDLED);
    assert_string_equal(ac_session_state(r.s, "session"), "Idle");
    assert_int_equal(ac_proc_active(r.loop), 0);
    ac_conv *c = ac_session_conv(r.s);
    assert_int_equal(ac_conv_message_count(c), kept);
    assert_string_equal(ac_conv_message(c, 1)->content, "first answer");
    assert_calls_answered(c);

    ac_session_send(r.s, "three");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "after the rollback");
    assert_int_equal(ac_conv_message_count(c), kept + 2);
    assert_string_equal(ac_conv_message(c, kept)->content, "three");
    kept = ac_conv_message_count(c);

    /* paused mid-turn, a message added while paused: both go */
    ac_session_send(r.s, "four");
    run_until_state(&r, "process", "TOOL_EXECUTING");
    ac_session_post(r.s, "pause", NULL, 0);
    ac_session_send(r.s, "four, more");
    assert_string_equal(ac_session_state(r.s, "session"), "Paused");
    assert_int_equal(ac_session_post(r.s, "rollback", NULL, 0), AC_FSM_HANDLED);
    assert_string_equal(ac_session_state(r.s, "session"), "Idle");
    assert_int_equal(ac_conv_message_count(c), kept);
    assert_calls_answered(c);
    /* idle: nothing to roll back, nothing removed */
    assert_int_equal(ac_session_post(r.s, "rollback", NULL, 0), AC_FSM_UNHANDLED);
    assert_int_equal(ac_conv_message_count(c), kept);
    ac_session_send(r.s, "five");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "after the second rollback");
    assert_calls_answered(c);
    kept = ac_conv_message_count(c);
    /* a message queued while the turn ran starts the next turn right after the rollback */
    ac_session_send(r.s, "six");
    assert_string_equal(ac_session_state(r.s, "process"), "CALLING");
    ac_session_send(r.s, "seven");
    assert_int_equal(ac_session_post(r.s, "rollback", NULL, 0), AC_FSM_HANDLED);
    assert_string_equal(ac_session_state(r.s, "session"), "Running");
    assert_int_equal(ac_conv_message_count(c), kept + 1);
    assert_string_equal(ac_conv_message(c, kept)->content, "seven");
    run_until_settled(&r);
    assert_string_equal(ac_session_answer(r.s), "the queued one");
    assert_int_equal(ac_conv_message_count(c), kept + 2);

    assert_replays_same(&r, turns, tools, "rollback");
    rig_close(&r);
}

/* A negative context_window means the whole conversation, not a wrapped
 * huge-or-tiny window. */
static void test_negative_context_window(void **state)
{
    (void)state;
    static const char *const params[] = {"context_window=-5", NULL};
    rig r;
    rig_open(&r, "{\"content\":\"ok\"}\n", params, 0, NULL, "neg_window");
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    assert_int_equal(ac_conv_window(ac_session_conv(r.s)), 0);
    assert_string_equal(ac_session_answer(r.s), "ok");
    rig_close(&r);
}

/* The engine's journal_dir names a journal for sessions created without a
 * path: DIR/<id>.jsonl, the id percent-encoded. */
static void test_journal_dir(void **state)
{
    (void)state;
    rig_journal_dir = tmpdir;
    rig r;
    rig_open(&r, "{\"content\":\"ok\"}\n", NULL, 0, NULL, "a/b c");
    rig_journal_dir = NULL;
    ac_session_send(r.s, "hi");
    run_until_settled(&r);
    char path[600];
    snprintf(path, sizeof path, "%s/a%%2Fb%%20c.jsonl", tmpdir);
    char *text = slurp(path);
    assert_non_null(strstr(text, "\"agentc_journal\""));
    assert_non_null(strstr(text, "\"user_message\""));
    free(text);
    rig_close(&r);
}

/* A spec without the context.* events still answers the context tools
 * (through tool.completed): the session does not wait forever. */
static void test_context_tools_without_context_events(void **state)
{
    (void)state;
    if (!agentc_bin)
        skip();
    char *spec = slurp("spec/agent.fsm");
    char spec_path[512], script[512], cmd[2048];
    snprintf(spec_path, sizeof spec_path, "%s/noctx.fsm", tmpdir);
    FILE *f = fopen(spec_path, "w");
    assert_non_null(f);
    for (char *line = strtok(spec, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "on context."))
            continue;
        if (strstr(line, "event tool.completed, context.expanded, context.loaded"))
            line = "event tool.completed, timer.fired";
        if (strstr(line, "effect run_tools posts"))
            line = "effect run_tools posts tool.completed";
        fprintf(f, "%s\n", line);
    }
    fclose(f);
    free(spec);
    snprintf(script, sizeof script, "%s/noctx.jsonl", tmpdir);
    write_file(script, "{\"tool_calls\":[{\"id\":\"e1\",\"name\":\"expand_context\","
                       "\"arguments\":\"{}\"}]}\n{\"content\":\"done\"}\n");
    snprintf(cmd, sizeof cmd,
             "timeout 30 %s run --spec %s --provider script --script %s --tools builtin:context "
             "hi >%s/noctx.out 2>&1",
             agentc_bin, spec_path, script, tmpdir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/noctx.out", tmpdir);
    char *out = slurp(cmd);
    assert_non_null(strstr(out, "done"));
    free(out);
}

/* Every journal the tests above recorded replays with no divergence against
 * edits of spec/agent.fsm that change no behaviour (comments, whitespace,
 * reordering): steps are matched by identity, not by spec line. */
static void test_spec_edits_replay_every_journal(void **state)
{
    (void)state;
    if (!agentc_bin)
        skip();
    assert_int_equal(run_cmd("bash tests/cli/spec_edits.sh '%s' '%s'/*.journal '%s'/*.jsonl "
                             ">'%s/edits.out' 2>&1",
                             agentc_bin, tmpdir, tmpdir, tmpdir),
                     0);
    char path[512];
    snprintf(path, sizeof path, "%s/edits.out", tmpdir);
    char *out = slurp(path);
    int n = 0;
    assert_int_equal(sscanf(out, "spec_edits: %d journals", &n), 1);
    free(out);
    print_message("spec edits: %d journals replayed\n", n);
    assert_true(n >= 10);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/agentc-session-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    agentc_bin = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_and_replay),
        cmocka_unit_test(test_cli_replay),
        cmocka_unit_test(test_retry),
        cmocka_unit_test(test_fatal_error),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_cancel_idle),
        cmocka_unit_test(test_cancel_calling),
        cmocka_unit_test(test_cancel_streaming),
        cmocka_unit_test(test_cancel_tool),
        cmocka_unit_test(test_cancel_retrying),
        cmocka_unit_test(test_cancel_compacting),
        cmocka_unit_test(test_pause_resume_and_cancel_paused),
        cmocka_unit_test(test_cancel_turn_streaming),
        cmocka_unit_test(test_cancel_turn_tool),
        cmocka_unit_test(test_close),
        cmocka_unit_test(test_snapshot_turn),
        cmocka_unit_test(test_tool_output_bad_utf8),
        cmocka_unit_test(test_tool_call_without_name),
        cmocka_unit_test(test_cancel_from_tool_start),
        cmocka_unit_test(test_free_from_finished),
        cmocka_unit_test(test_pause_during_tools_then_resume),
        cmocka_unit_test(test_rollback_turn),
        cmocka_unit_test(test_journal_dir),
        cmocka_unit_test(test_negative_context_window),
        cmocka_unit_test(test_context_tools_without_context_events),
        cmocka_unit_test(test_spec_edits_replay_every_journal), /* last: uses every journal */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
