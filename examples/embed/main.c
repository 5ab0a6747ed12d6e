/*
 * main.c - embedding agentc with a human approval step before tools run.
 *
 * The behaviour comes from approval.fsm (spec/agent.fsm plus an
 * AWAITING_APPROVAL state), compiled into tables at build time. When the
 * model asks for tools the session stops in process.AWAITING_APPROVAL; this
 * program then posts `approve` (the tools run as usual) or `deny` (the
 * deny_tools action, registered below, answers every pending call with
 * "denied by the user", and the model is asked again with those results).
 *
 * The model is the scripted provider (approval.jsonl): the first turn calls
 * the built-in calculator, the second answers. No network, no keys.
 *
 *   embed_approval [--approve | --deny] [--script FILE] [PROMPT]
 *
 * Without --approve or --deny the decision is asked on the terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/agentc.h"
#include "approval_fsm.h"

#ifndef EMBED_DEFAULT_SCRIPT
#define EMBED_DEFAULT_SCRIPT "approval.jsonl"
#endif

#define DENIED_TEXT "denied by the user"
#define MAX_STEPS 4000 /* loop iterations (100 ms at most each) before giving up */

enum decision { DECIDE_ASK = 0, DECIDE_APPROVE = 1, DECIDE_DENY = 2 };

/* The deny_tools action: a failure result for every call still waiting. */
static void deny_tools(ac_session *s, const ac_event *ev)
{
    const char *ids[16];
    size_t n;
    while ((n = ac_session_pending_tool_calls(s, ids, 16)) > 0) {
        size_t done = 0;
        for (size_t i = 0; i < n && i < 16; i++)
            if (ac_session_fail_tool_call(s, ids[i], DENIED_TEXT, ev->time_ms) == 0)
                done++;
        if (done == 0)
            break; /* nothing could be answered: do not spin */
    }
}

static void on_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *arguments)
{
    (void)ud;
    (void)s;
    printf("tool %s running: %s %s\n", id, name, arguments ? arguments : "");
}

static void on_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t duration_ms)
{
    (void)ud;
    (void)s;
    (void)duration_ms;
    printf("tool %s result: %s %s: %s\n", id, name, ok ? "ok" : "failed", content);
}

/* Shows the pending calls and returns the decision for them. */
static enum decision decide(ac_session *s, enum decision preset)
{
    const char *ids[16];
    size_t n = ac_session_pending_tool_calls(s, ids, 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        const char *args = NULL;
        const char *name = ac_session_tool_call_name(s, ids[i], &args);
        printf("approval: the model wants to run %s %s (call %s)\n", name ? name : "?",
               args ? args : "", ids[i]);
    }
    if (preset != DECIDE_ASK)
        return preset;
    printf("approve? [y/N] ");
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        return DECIDE_DENY;
    return (line[0] == 'y' || line[0] == 'Y') ? DECIDE_APPROVE : DECIDE_DENY;
}

static void print_transcript(ac_session *s)
{
    printf("transcript:\n");
    size_t n = ac_session_message_count(s);
    for (size_t i = 0; i < n; i++) {
        const char *role = NULL;
        const char *content = ac_session_message(s, i, &role);
        printf("  [%s] %s\n", role ? role : "?", content ? content : "");
    }
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--approve | --deny] [--script FILE] [PROMPT]\n", prog);
    return 2;
}

int main(int argc, char **argv)
{
    enum decision preset = DECIDE_ASK;
    const char *script = EMBED_DEFAULT_SCRIPT;
    const char *prompt = "What is 17 * 23?";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--approve"))
            preset = DECIDE_APPROVE;
        else if (!strcmp(argv[i], "--deny"))
            preset = DECIDE_DENY;
        else if (!strcmp(argv[i], "--script") && i + 1 < argc)
            script = argv[++i];
        else if (argv[i][0] == '-')
            return usage(argv[0]);
        else
            prompt = argv[i];
    }

    ac_error err = {0};
    int rc = 1, approvals = 0;
    ac_loop *loop = NULL;
    ac_registry *reg = NULL;
    ac_engine *e = NULL;
    ac_session *s = NULL;

    loop = ac_loop_new();
    reg = ac_registry_new();
    if (!loop || !reg) {
        fprintf(stderr, "out of memory\n");
        goto fail;
    }
    if (ac_registry_action(reg, "deny_tools", deny_tools) != 0) {
        fprintf(stderr, "cannot register deny_tools\n");
        goto fail;
    }

    ac_output out = {0};
    out.tool_start = on_tool_start;
    out.tool_end = on_tool_end;

    ac_engine_config cfg = {0};
    cfg.tables = &approval_fsm;
    cfg.registry = reg;
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_path = script;
    cfg.system_prompt = "You are a careful assistant. Use the calculator for arithmetic.";
    cfg.output = &out;
    e = ac_engine_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", err.text);
        goto fail;
    }
    if (ac_engine_add_tools(e, "builtin:calculator", &err) != 0) {
        fprintf(stderr, "tools: %s\n", err.text);
        goto fail;
    }
    s = ac_session_new(e, "embed", NULL, &err);
    if (!s) {
        fprintf(stderr, "session: %s\n", err.text);
        goto fail;
    }

    printf("> %s\n", prompt);
    ac_session_send(s, prompt);
    int steps = 0;
    while (!ac_session_settled(s) && steps++ < MAX_STEPS) {
        const char *st = ac_session_state(s, "process");
        if (st && !strcmp(st, "AWAITING_APPROVAL")) {
            enum decision d = decide(s, preset);
            printf("approval: %s\n", d == DECIDE_APPROVE ? "approved" : "denied");
            approvals++;
            if (ac_session_post(s, d == DECIDE_APPROVE ? "approve" : "deny", NULL, 0) != 0) {
                fprintf(stderr, "the session did not take the decision\n");
                goto fail;
            }
            continue;
        }
        ac_loop_run_once(loop, 100);
    }
    if (!ac_session_settled(s)) {
        fprintf(stderr, "the session did not finish (state %s)\n",
                ac_session_state(s, "process") ? ac_session_state(s, "process") : "?");
        goto fail;
    }
    if (ac_session_last_turn(s, NULL) != AC_TURN_COMPLETED) {
        fprintf(stderr, "the turn ended %s: %s\n",
                ac_turn_outcome_name(ac_session_last_turn(s, NULL)),
                ac_session_error(s) ? ac_session_error(s) : "no error recorded");
        goto fail;
    }
    printf("answer: %s\n", ac_session_answer(s));
    print_transcript(s);
    printf("approval requests: %d\n", approvals);
    rc = 0;
fail:
    ac_session_free(s);
    ac_engine_free(e);
    ac_registry_free(reg);
    if (loop)
        ac_loop_free(loop);
    return rc;
}
