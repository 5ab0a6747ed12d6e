/*
 * test_journal.c - the journal module and ac_session_replay: a recorded
 * journal replays with no divergence against its spec and against edits that
 * only move transitions; a real edit diverges with both spec lines; the
 * reader skips a torn last line, reports a malformed one by line number, and
 * still reads format version 1; an event's line is in the file before the
 * effects it starts run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agentc/agentc.h"
#include "session/journal.h"
#include "spec.h"

static ac_error ae; /* the last error of the engine and session calls below */

static char tmpdir[256];
static char recorded[512]; /* the journal every test reads, recorded once */

static const char *turns = "{\"tool_calls\":[{\"id\":\"c1\",\"name\":\"calculator\","
                           "\"arguments\":\"{\\\"expression\\\":\\\"17 * 23\\\"}\"}]}\n"
                           "{\"content\":\"The answer is 391.\"}\n";

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

/* spec/agent.fsm's text with `prefix` before it and the first `from` replaced
 * by `to` (from NULL: unchanged), compiled to tables. */
static ac_fsm_tables *edited_tables(const char *prefix, const char *from, const char *to)
{
    char *src = slurp("spec/agent.fsm");
    size_t n = strlen(prefix) + strlen(src) + (to ? strlen(to) : 0) + 1;
    char *text = malloc(n);
    assert_non_null(text);
    char *p = from ? strstr(src, from) : NULL;
    if (from)
        assert_non_null(p);
    if (p) {
        *p = 0;
        snprintf(text, n, "%s%s%s%s", prefix, src, to, p + strlen(from));
    } else
        snprintf(text, n, "%s%s", prefix, src);
    free(src);
    ac_spec *spec = ac_spec_parse("edited.fsm", text, strlen(text));
    free(text);
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors)
        ac_spec_print_diags(spec, stderr);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "edited.fsm");
    ac_spec_free(spec);
    assert_non_null(t);
    return t;
}

/* An engine with no loop (tables NULL: the built-in ones). */
static ac_engine *replay_engine(const ac_fsm_tables *t)
{
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = t;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("engine: %s", ae.text);
    return e;
}

/* The line of spec/agent.fsm that holds `text`. */
static int spec_line_of(const char *text)
{
    char *src = slurp("spec/agent.fsm");
    char *p = strstr(src, text);
    assert_non_null(p);
    int line = 1;
    for (char *c = src; c < p; c++)
        line += *c == '\n';
    free(src);
    return line;
}

static void record(const char *path)
{
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.seed = 7;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("engine: %s", ae.text);
    assert_int_equal(ac_engine_add_tools(e, "builtin:calculator", &ae), 0);
    ac_session *s = ac_session_new(e, "j1", path, &ae);
    if (!s)
        fail_msg("session: %s", ae.text);
    /* the event line is in the file before the effect it starts (the LLM
     * call) runs, with no loop turn in between */
    ac_session_send(s, "What is 17 * 23?");
    char *text = slurp(path);
    assert_non_null(strstr(text, "\"ev\":\"user_message\""));
    free(text);
    for (int i = 0; i < 2000 && !ac_session_settled(s); i++)
        ac_loop_run_once(loop, 50);
    assert_true(ac_session_settled(s));
    assert_string_equal(ac_session_answer(s), "The answer is 391.");
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

static void test_replay_matches(void **state)
{
    (void)state;
    ac_engine *e = replay_engine(NULL);
    ac_replay_result res;
    ac_session *s = NULL;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, &s), AC_REPLAY_MATCH);
    assert_true(res.events > 5);
    assert_true(res.same_spec);
    assert_false(res.torn);
    assert_int_equal(res.event, 0);
    assert_non_null(s);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "idle");
    assert_string_equal(ac_session_answer(s), "The answer is 391.");
    assert_string_equal(ac_session_id(s), "j1");
    ac_session_free(s);
    /* without a session out-parameter the session is freed */
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_MATCH);
    ac_engine_free(e);
}

/* An engine with a loop replays too: the replay session's effects do nothing. */
static void test_replay_on_engine_with_loop(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"never asked\"}\n";
    ac_engine *e = ac_engine_new(&cfg, &ae);
    assert_non_null(e);
    ac_replay_result res;
    ac_session *s = NULL;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, &s), AC_REPLAY_MATCH);
    assert_int_equal(ac_loop_run_once(loop, 0), 0); /* nothing was started */
    assert_string_equal(ac_session_answer(s), "The answer is 391.");
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* Comment lines on top move every transition: no divergence. */
static void test_moved_lines_do_not_diverge(void **state)
{
    (void)state;
    ac_fsm_tables *t = edited_tables("# one\n\n# two\n", NULL, NULL);
    ac_engine *e = replay_engine(t);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_MATCH);
    ac_engine_free(e);
    ac_spec_tables_free(t);
}

/* Another target: the first event diverges, with both steps and lines. */
static void test_real_edit_diverges(void **state)
{
    (void)state;
    int line = spec_line_of("Created -> Idle    on spawn");
    ac_fsm_tables *t =
        edited_tables("\n", "Created -> Idle    on spawn", "Created -> Paused  on spawn");
    ac_engine *e = replay_engine(t);
    ac_replay_result res;
    ac_session *s = NULL;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, &s), AC_REPLAY_DIVERGED);
    assert_non_null(s); /* as far as it got */
    ac_session_free(s);
    assert_int_equal(res.event, 1);
    assert_string_equal(res.event_name, "spawn");
    assert_int_equal(res.step, 1);
    assert_true(res.recorded.present);
    assert_true(res.replayed.present);
    assert_string_equal(res.recorded.machine, "session");
    assert_string_equal(res.recorded.from, "Created");
    assert_string_equal(res.recorded.event, "spawn");
    assert_string_equal(res.recorded.to, "Idle");
    assert_string_equal(res.recorded.guard, "");
    assert_string_equal(res.recorded.actions, "init_session");
    assert_string_equal(res.replayed.to, "Paused");
    assert_int_equal(res.recorded.line, line);
    assert_int_equal(res.replayed.line, line + 1);
    ac_engine_free(e);
    ac_spec_tables_free(t);
}

/* Another guard on the same edge diverges too (identity includes the guard). */
static void test_guard_edit_diverges(void **state)
{
    (void)state;
    ac_fsm_tables *t = edited_tables("", "[turn_complete]", "[turn_complete && !needs_compaction]");
    ac_engine *e = replay_engine(t);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, NULL),
                     AC_REPLAY_DIVERGED);
    assert_string_equal(res.recorded.guard, "turn_complete");
    assert_string_equal(res.replayed.guard, "turn_complete && !needs_compaction");
    assert_string_equal(res.recorded.to, res.replayed.to);
    assert_int_equal(res.recorded.line, res.replayed.line);
    /* without AC_REPLAY_CHECK the whole journal replays */
    assert_int_equal(ac_session_replay(e, recorded, 0, &res, NULL), AC_REPLAY_MATCH);
    ac_engine_free(e);
    ac_spec_tables_free(t);
}

static void test_reader_torn_last_line(void **state)
{
    (void)state;
    char torn[512], err[256];
    tmp_path(torn, sizeof torn, "torn.journal");
    char *text = slurp(recorded);
    size_t n = strlen(text) + 64;
    char *t2 = malloc(n);
    snprintf(t2, n, "%s{\"n\":99,\"t\":1,\"ev\":\"user_mes", text);
    write_file(torn, t2);
    free(t2);
    free(text);

    ac_journal_reader *r = ac_journal_reader_open(torn, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(ac_journal_reader_header(r)->version, AC_JOURNAL_VERSION);
    assert_string_equal(ac_journal_reader_header(r)->session, "j1");
    ac_journal_line l;
    int rc, events = 0, steps = 0;
    while ((rc = ac_journal_reader_next(r, &l, err, sizeof err)) > 0) {
        events += l.kind == AC_JOURNAL_EVENT;
        steps += l.kind == AC_JOURNAL_STEPS;
    }
    assert_int_equal(rc, 0);
    assert_true(ac_journal_reader_torn(r));
    assert_true(events > 5);
    assert_int_equal(events, steps);
    ac_journal_reader_close(r);

    ac_engine *e = replay_engine(NULL);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, torn, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_MATCH);
    assert_true(res.torn);
    assert_int_equal((int)res.events, events);
    ac_engine_free(e);
}

static void test_reader_malformed_line(void **state)
{
    (void)state;
    char bad[512], err[256];
    tmp_path(bad, sizeof bad, "bad.journal");
    char *text = slurp(recorded);
    char *third = strchr(strchr(text, '\n') + 1, '\n') + 1; /* line 3 */
    size_t n = strlen(text) + 64;
    char *t2 = malloc(n);
    snprintf(t2, n, "%.*snot json\n%s", (int)(third - text), text, third);
    write_file(bad, t2);
    free(t2);
    free(text);

    ac_journal_reader *r = ac_journal_reader_open(bad, err, sizeof err);
    assert_non_null(r);
    ac_journal_line l;
    assert_int_equal(ac_journal_reader_next(r, &l, err, sizeof err), 1);
    assert_int_equal(l.lineno, 2);
    assert_int_equal(l.kind, AC_JOURNAL_EVENT);
    assert_string_equal(l.event, "spawn");
    assert_int_equal(ac_journal_reader_next(r, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad.journal:3: not a journal line"));
    assert_false(ac_journal_reader_torn(r));
    ac_journal_reader_close(r);

    ac_engine *e = replay_engine(NULL);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, bad, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "bad.journal:3:"));
    ac_engine_free(e);
}

static void test_reader_refuses(void **state)
{
    (void)state;
    char path[512], err[256];
    tmp_path(path, sizeof path, "none.journal");
    assert_null(ac_journal_reader_open(path, err, sizeof err));
    assert_non_null(strstr(err, "cannot read journal"));
    write_file(path, "{\"n\":1,\"t\":1,\"ev\":\"spawn\"}\n");
    assert_null(ac_journal_reader_open(path, err, sizeof err));
    assert_non_null(strstr(err, "no header line"));
    write_file(path, "{\"agentc_journal\":99,\"spec\":\"spec/agent.fsm\"}\n");
    assert_null(ac_journal_reader_open(path, err, sizeof err));
    assert_non_null(strstr(err, "version 99"));
}

/* Format version 1 (steps without guard and actions) is still read. */
static void test_reader_version_1(void **state)
{
    (void)state;
    char old[512], err[256];
    tmp_path(old, sizeof old, "v1.journal");
    ac_journal_reader *r = ac_journal_reader_open(recorded, err, sizeof err);
    assert_non_null(r);
    FILE *f = fopen(old, "w");
    assert_non_null(f);
    json_t *hdr = json_deep_copy(ac_journal_reader_header(r)->json);
    json_object_set_new(hdr, "agentc_journal", json_integer(1));
    char *s = json_dumps(hdr, JSON_COMPACT);
    fprintf(f, "%s\n", s);
    free(s);
    json_decref(hdr);
    ac_journal_line l;
    while (ac_journal_reader_next(r, &l, err, sizeof err) > 0) {
        json_t *v = json_deep_copy(l.json);
        size_t i;
        json_t *step;
        json_array_foreach(json_object_get(v, "tr"), i, step)
        {
            json_array_remove(step, 6);
            json_array_remove(step, 5);
        }
        s = json_dumps(v, JSON_COMPACT);
        fprintf(f, "%s\n", s);
        free(s);
        json_decref(v);
    }
    fclose(f);
    ac_journal_reader_close(r);

    ac_fsm_tables *t = edited_tables("# moved\n", NULL, NULL);
    ac_engine *e = replay_engine(t);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, old, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_MATCH);
    ac_engine_free(e);
    ac_spec_tables_free(t);
    t = edited_tables("", "Created -> Idle    on spawn", "Created -> Paused  on spawn");
    e = replay_engine(t);
    assert_int_equal(ac_session_replay(e, old, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_DIVERGED);
    assert_string_equal(res.recorded.guard, "?");
    assert_string_equal(res.recorded.actions, "?");
    ac_engine_free(e);
    ac_spec_tables_free(t);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/agentc-journal-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    tmp_path(recorded, sizeof recorded, "recorded.journal");
    record(recorded);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_matches),
        cmocka_unit_test(test_replay_on_engine_with_loop),
        cmocka_unit_test(test_moved_lines_do_not_diverge),
        cmocka_unit_test(test_real_edit_diverges),
        cmocka_unit_test(test_guard_edit_diverges),
        cmocka_unit_test(test_reader_torn_last_line),
        cmocka_unit_test(test_reader_malformed_line),
        cmocka_unit_test(test_reader_refuses),
        cmocka_unit_test(test_reader_version_1),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
