/*
 * test_tools_subagent.c - sub-agents and handoffs through the embedding API
 * (docs/composition.md), on a real loop with the scripted provider: a child session on the
 * caller's engine (no opener) answers its call; max_depth refuses the call past it; an opener
 * puts the child on an engine of its own, whose tool process a cancel of the parent's turn
 * kills; a pause of the parent pauses the child, and the call again after the resume resumes
 * it; handoffs fail without pausing where no one moves sessions, and pause the session with
 * ac_session_handoff naming the entry where the opener does.
 */
#include <signal.h>

#include "session_rig.h"

/* What the output saw: each tool_end as "PATH|NAME|ok|CONTENT" (PATH "-" for the top). */
static char seen[16][600];
static int n_seen;

static void on_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t ms)
{
    (void)ud, (void)id, (void)ms;
    const char *path = ac_session_agent_path(s);
    if (n_seen < 16)
        snprintf(seen[n_seen++], sizeof seen[0], "%s|%s|%d|%s", path ? path : "-", name, ok,
                 content);
}

static const ac_output out = {.tool_end = on_tool_end};

static int saw(const char *prefix)
{
    for (int i = 0; i < n_seen; i++)
        if (!strncmp(seen[i], prefix, strlen(prefix)))
            return 1;
    return 0;
}

static void dump(void)
{
    for (int i = 0; i < n_seen; i++)
        fprintf(stderr, "  seen: %s\n", seen[i]);
}

#define SUB_CALL                                                                                   \
    "{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"agent__sub\", \"arguments\": "                 \
    "\"{\\\"task\\\": \\\"go\\\"}\"}]}\n"

/* No opener: the child is a session on the caller's engine, walking the same script; its
 * own call of agent::sub is past max_depth 1, so it answers "done", which answers c1. */
static void test_child_on_the_callers_engine(void **state)
{
    (void)state;
    n_seen = 0;
    char tools[512];
    rig_write(
        "agents.json",
        "{\"agents\": [{\"name\": \"sub\", \"description\": \"a sub-agent\", \"max_depth\": 1}]}",
        tools, sizeof tools);
    const char *tl[] = {tools, NULL};
    rig r;
    rig_open(&r, SUB_CALL "{\"content\": \"done\"}\n", NULL, tl, &out);
    ac_session_send(r.s, "go");
    rig_settle(&r);
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_COMPLETED);
    if (!saw("-|agent::sub|1|done") ||
        !saw("sub|agent::sub|0|not run: agent::sub would run at level 2 of sub-agents (sub/sub), "
             "past its max_depth 1")) {
        dump();
        fail_msg("the calls' results");
    }
    assert_null(ac_session_agent_path(r.s));
    assert_null(ac_session_parent(r.s));
    rig_close(&r);
}

/* A journaled parent: the child is journaled beside it, the model's call id encoded so that it
 * names a file there ("../c 1" -> "..%2Fc%201"), and agent.started names that journal. */
static void test_child_journal_name(void **state)
{
    (void)state;
    char tools[512], pj[600], cj[700];
    rig_write("agents.json",
              "{\"agents\": [{\"name\": \"sub\", \"description\": \"d\", \"max_depth\": 1}]}",
              tools, sizeof tools);
    rig r;
    const char *tl[] = {tools, NULL};
    rig_open(&r,
             "{\"tool_calls\": [{\"id\": \"../c 1\", \"name\": \"agent__sub\", \"arguments\": "
             "\"{\\\"task\\\": \\\"go\\\"}\"}]}\n{\"content\": \"done\"}\n",
             NULL, tl, &out);
    snprintf(pj, sizeof pj, "%s/p.jsonl", rig_tmp);
    ac_error err;
    ac_session *s = ac_session_new(r.e, "p", pj, &err);
    assert_non_null(s);
    ac_session_send(s, "go");
    for (int i = 0; i < 500 && !ac_session_settled(s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_string_equal(ac_session_answer(s), "done");
    ac_session_free(s);
    snprintf(cj, sizeof cj, "%s/p.sub...%%2Fc%%201.jsonl", rig_tmp);
    assert_int_equal(access(cj, R_OK), 0);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "grep -q '\"journal\":\"p.sub...%%2Fc%%201.jsonl\"' '%s'", pj);
    assert_int_equal(system(cmd), 0);
    rig_close(&r);
}

/* An opener: children on an engine of their own (a sleeper tool), counted. */
typedef struct opener_ud {
    ac_engine *e;
    int opened;
    char parent[256];
} opener_ud;

static ac_session *open_child(void *ud, ac_session *parent, const char *entry, const char *dir,
                              const char *id, const ac_session_options *opts, ac_error *err)
{
    opener_ud *o = ud;
    (void)entry, (void)dir, (void)parent;
    o->opened++;
    snprintf(o->parent, sizeof o->parent, "%s", opts->parent ? opts->parent : "");
    return ac_session_new_opts(o->e, id, opts, err);
}

static void test_opener_and_cancel(void **state)
{
    (void)state;
    n_seen = 0;
    char tools[512], sleeper[512], pidfile[512];
    snprintf(pidfile, sizeof pidfile, "%s/sleeper.pid", rig_tmp);
    char text[1024];
    snprintf(text, sizeof text,
             "{\"tools\": [{\"name\": \"sleeper\", \"description\": \"sleeps\", \"command\": "
             "[\"sh\", \"-c\", \"echo $$ >'%s'; exec sleep 30\"]}]}",
             pidfile);
    rig_write("sleeper.json", text, sleeper, sizeof sleeper);
    rig_write("agents.json", "{\"agents\": [{\"name\": \"sub\", \"description\": \"d\"}]}", tools,
              sizeof tools);
    rig r;
    const char *tl[] = {tools, NULL};
    rig_open(&r, SUB_CALL "{\"content\": \"done\"}\n", NULL, tl, &out);
    /* the children's engine: a call of the sleeper, then an answer */
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"tool_calls\": [{\"id\": \"z1\", \"name\": \"sleeper\", \"arguments\": "
                      "\"{}\"}]}\n{\"content\": \"slept\"}\n";
    cfg.output = &out;
    ac_error err;
    opener_ud o = {0};
    assert_non_null(o.e = ac_engine_new(&cfg, &err));
    assert_int_equal(ac_engine_add_tools(o.e, sleeper, &err), 0);
    ac_subagent_opener op = {&o, open_child, false, NULL};
    /* the opener is the engine's: a second engine for the parent, with it */
    cfg.script_text = SUB_CALL "{\"content\": \"done\"}\n";
    cfg.subagents = &op;
    ac_engine *pe = ac_engine_new(&cfg, &err);
    assert_non_null(pe);
    assert_int_equal(ac_engine_add_tools(pe, tools, &err), 0);
    ac_session *s = ac_session_new(pe, "p1", NULL, &err);
    assert_non_null(s);
    ac_session_send(s, "go");
    for (int i = 0; i < 500 && access(pidfile, F_OK) != 0; i++)
        ac_loop_run_once(r.loop, 20);
    assert_int_equal(o.opened, 1);
    assert_non_null(strstr(o.parent, "\"session\":\"p1\""));
    assert_non_null(strstr(o.parent, "\"path\":\"sub\""));
    FILE *f = NULL;
    int pid = 0;
    for (int i = 0; i < 100 && pid <= 0; i++) { /* the shell writes it as it starts */
        if ((f = fopen(pidfile, "r"))) {
            if (fscanf(f, "%d", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid <= 0)
            ac_loop_run_once(r.loop, 10);
    }
    assert_true(pid > 0);
    assert_int_equal(kill(pid, 0), 0);
    /* the parent's turn cancelled: the child's turn stops, its tool process with it */
    assert_int_equal(ac_session_cancel_turn(s), AC_OK);
    assert_int_equal(ac_session_last_turn(s, NULL), AC_TURN_CANCELLED);
    for (int i = 0; i < 10; i++)
        ac_loop_run_once(r.loop, 10);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        gone = kill(pid, 0) != 0;
        if (!gone)
            ac_loop_run_once(r.loop, 10);
    }
    assert_true(gone);
    ac_session_free(s);
    ac_engine_free(pe);
    ac_engine_free(o.e);
    rig_close(&r);
}

/* The opener's children kept to look at; given back through close (counted, then freed). */
typedef struct keep_ud {
    opener_ud o;
    ac_session *child;
    int closed;
} keep_ud;

static ac_session *open_kept(void *ud, ac_session *parent, const char *entry, const char *dir,
                             const char *id, const ac_session_options *opts, ac_error *err)
{
    keep_ud *k = ud;
    return k->child = open_child(&k->o, parent, entry, dir, id, opts, err);
}

static void close_kept(void *ud, ac_session *child)
{
    keep_ud *k = ud;
    k->closed++;
    if (child == k->child)
        k->child = NULL;
    ac_session_free(child);
}

static int read_pid(const char *pidfile, ac_loop *loop)
{
    int pid = 0;
    for (int i = 0; i < 200 && pid <= 0; i++) {
        FILE *f = fopen(pidfile, "r");
        if (f) {
            if (fscanf(f, "%d", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid <= 0)
            ac_loop_run_once(loop, 10);
    }
    return pid;
}

/* A pause of the parent mid-child pauses the child (its tool process stopped) and keeps it;
 * after the resume, the parent's call again of the same agent and task resumes that child
 * (no second one opened), whose answer answers the new call; then it is given back. */
static void test_pause_parks_the_child(void **state)
{
    (void)state;
    n_seen = 0;
    char tools[512], sleeper[512], pidfile[512], text[1024];
    snprintf(pidfile, sizeof pidfile, "%s/sleeper.pid", rig_tmp);
    snprintf(text, sizeof text,
             "{\"tools\": [{\"name\": \"sleeper\", \"description\": \"sleeps\", \"command\": "
             "[\"sh\", \"-c\", \"echo $$ >'%s'; exec sleep 30\"]}]}",
             pidfile);
    rig_write("sleeper.json", text, sleeper, sizeof sleeper);
    rig_write("agents.json", "{\"agents\": [{\"name\": \"sub\", \"description\": \"d\"}]}", tools,
              sizeof tools);
    rig r;
    const char *tl[] = {tools, NULL};
    rig_open(&r, "{\"content\": \"unused\"}\n", NULL, tl, &out);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"tool_calls\": [{\"id\": \"z1\", \"name\": \"sleeper\", \"arguments\": "
                      "\"{}\"}]}\n{\"content\": \"slept\"}\n";
    cfg.output = &out;
    ac_error err;
    keep_ud k = {0};
    assert_non_null(k.o.e = ac_engine_new(&cfg, &err));
    assert_int_equal(ac_engine_add_tools(k.o.e, sleeper, &err), 0);
    ac_subagent_opener op = {&k, open_kept, false, close_kept};
    cfg.script_text = SUB_CALL "{\"tool_calls\": [{\"id\": \"c2\", \"name\": \"agent__sub\", "
                               "\"arguments\": \"{\\\"task\\\": \\\"go\\\"}\"}]}\n"
                               "{\"content\": \"done\"}\n";
    cfg.subagents = &op;
    ac_engine *pe = ac_engine_new(&cfg, &err);
    assert_non_null(pe);
    assert_int_equal(ac_engine_add_tools(pe, tools, &err), 0);
    ac_session *s = ac_session_new(pe, "p1", NULL, &err);
    assert_non_null(s);
    ac_session_send(s, "go");
    int pid = read_pid(pidfile, r.loop);
    assert_true(pid > 0);
    assert_int_equal(ac_session_post(s, "pause", NULL, 0), 0);
    for (int i = 0; i < 200 && (kill(pid, 0) == 0 || !k.child ||
                                ac_session_status(k.child) != AC_SESSION_PAUSED);
         i++)
        ac_loop_run_once(r.loop, 10);
    assert_int_equal(ac_session_status(s), AC_SESSION_PAUSED);
    assert_non_null(k.child);
    assert_int_equal(ac_session_status(k.child), AC_SESSION_PAUSED);
    assert_int_not_equal(kill(pid, 0), 0);
    assert_int_equal(k.closed, 0);
    assert_int_equal(ac_session_post(s, "resume", NULL, 0), 0);
    for (int i = 0; i < 500 && !(ac_session_settled(s) && ac_session_status(s) == AC_SESSION_IDLE);
         i++)
        ac_loop_run_once(r.loop, 10);
    assert_string_equal(ac_session_answer(s), "done");
    assert_int_equal(k.o.opened, 1); /* the same child, resumed */
    assert_int_equal(k.closed, 1);
    if (!saw("-|agent::sub|1|slept")) {
        dump();
        fail_msg("the resumed child's answer");
    }
    ac_session_free(s);
    ac_engine_free(pe);
    ac_engine_free(k.o.e);
    rig_close(&r);
}

#define XFER_CALL                                                                                  \
    "{\"tool_calls\": [{\"id\": \"x1\", \"name\": \"transfer_to_b\", \"arguments\": \"{}\"}]}\n"

static ac_session *no_child(void *ud, ac_session *parent, const char *entry, const char *dir,
                            const char *id, const ac_session_options *opts, ac_error *err)
{
    (void)ud, (void)parent, (void)entry, (void)dir, (void)id, (void)opts;
    snprintf(err->text, sizeof err->text, "no children here");
    return NULL;
}

/* transfer_to_b: without an opener that moves sessions the call fails and the turn goes on;
 * with one, the session pauses behind the answer and ac_session_handoff names b's entry. */
static void test_handoff(void **state)
{
    (void)state;
    n_seen = 0;
    char tools[512];
    rig_write("handoff.json",
              "{\"agents\": [{\"name\": \"b\", \"description\": \"to b\", \"handoff\": true, "
              "\"system\": \"You are b.\"}]}",
              tools, sizeof tools);
    const char *tl[] = {tools, NULL};
    rig r;
    rig_open(&r, XFER_CALL "{\"content\": \"still a\"}\n", NULL, tl, &out);
    ac_session_send(r.s, "hi");
    rig_settle(&r);
    assert_int_equal(ac_session_last_turn(r.s, NULL), AC_TURN_COMPLETED);
    assert_string_equal(ac_session_answer(r.s), "still a");
    assert_true(saw("-|transfer_to_b|0|not run: this program does not move a session"));
    assert_null(ac_session_handoff(r.s, NULL));

    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = XFER_CALL "{\"content\": \"never\"}\n";
    ac_subagent_opener op = {NULL, no_child, true, NULL};
    cfg.subagents = &op;
    ac_error err;
    ac_engine *e = ac_engine_new(&cfg, &err);
    assert_non_null(e);
    assert_int_equal(ac_engine_add_tools(e, tools, &err), 0);
    ac_session *s = ac_session_new(e, "h1", NULL, &err);
    ac_session_send(s, "hi");
    for (int i = 0; i < 500 && !ac_session_settled(s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_int_equal(ac_session_status(s), AC_SESSION_PAUSED);
    const char *dir = NULL, *entry = ac_session_handoff(s, &dir);
    assert_non_null(entry);
    assert_non_null(strstr(entry, "\"name\":\"b\""));
    assert_string_equal(dir, rig_tmp);
    assert_string_equal(ac_session_answer(s), ""); /* the model was not called again */
    ac_session_free(s);
    ac_engine_free(e);
    rig_close(&r);
}

/* A child cannot hand its conversation on: its transfer fails, it answers its task. */
static void test_child_cannot_hand_off(void **state)
{
    (void)state;
    n_seen = 0;
    char agents[512], handoff[512];
    rig_write("agents.json", "{\"agents\": [{\"name\": \"sub\", \"description\": \"d\"}]}", agents,
              sizeof agents);
    rig_write("handoff.json",
              "{\"agents\": [{\"name\": \"b\", \"description\": \"to b\", \"handoff\": true}]}",
              handoff, sizeof handoff);
    rig r;
    rig_open(&r, "{\"content\": \"unused\"}\n", NULL, NULL, &out);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r.loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.output = &out;
    cfg.script_text = XFER_CALL "{\"content\": \"child done\"}\n";
    ac_error err;
    opener_ud o = {0};
    assert_non_null(o.e = ac_engine_new(&cfg, &err));
    assert_int_equal(ac_engine_add_tools(o.e, handoff, &err), 0);
    ac_subagent_opener op = {&o, open_child, true, NULL};
    cfg.script_text = SUB_CALL "{\"content\": \"done\"}\n";
    cfg.subagents = &op;
    ac_engine *pe = ac_engine_new(&cfg, &err);
    assert_non_null(pe);
    assert_int_equal(ac_engine_add_tools(pe, agents, &err), 0);
    ac_session *s = ac_session_new(pe, "p1", NULL, &err);
    ac_session_send(s, "go");
    for (int i = 0; i < 500 && !ac_session_settled(s); i++)
        ac_loop_run_once(r.loop, 20);
    assert_int_equal(ac_session_last_turn(s, NULL), AC_TURN_COMPLETED);
    if (!saw("sub|transfer_to_b|0|not run: a sub-agent (sub) cannot hand the conversation to b") ||
        !saw("-|agent::sub|1|child done")) {
        dump();
        fail_msg("the child's transfer");
    }
    ac_session_free(s);
    ac_engine_free(pe);
    ac_engine_free(o.e);
    rig_close(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_child_on_the_callers_engine, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_child_journal_name, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_opener_and_cancel, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_pause_parks_the_child, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_handoff, rig_setup, rig_teardown),
        cmocka_unit_test_setup_teardown(test_child_cannot_hand_off, rig_setup, rig_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
