/*
 * test_journal.c - the journal module and ac_session_replay: a recorded
 * journal replays with no divergence against its spec and against edits that
 * only move transitions; a real edit diverges with both spec lines; the
 * reader skips a torn last line, reports a malformed one by line number, and
 * still reads format version 1; an event's line is in the file before the
 * effects it starts run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
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
    ac_fsm_tables *t = edited_tables("", "[turn_complete && answer_valid]",
                                     "[turn_complete && answer_valid && !needs_compaction]");
    ac_engine *e = replay_engine(t);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, recorded, AC_REPLAY_CHECK, &res, NULL),
                     AC_REPLAY_DIVERGED);
    assert_string_equal(res.recorded.guard, "turn_complete && answer_valid");
    assert_string_equal(res.replayed.guard, "turn_complete && answer_valid && !needs_compaction");
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

    /* replayed as far as it goes; a check refuses it: it is incomplete */
    ac_engine *e = replay_engine(NULL);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(e, torn, 0, &res, NULL), AC_REPLAY_MATCH);
    assert_true(res.torn);
    assert_int_equal((int)res.events, events);
    assert_int_equal(ac_session_replay(e, torn, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_true(res.torn);
    assert_non_null(strstr(res.error, "torn line"));
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

/* ---- honest journals ---------------------------------------------------------- */

static ac_loop *w_loop;
static ac_engine *w_engine;

/* An engine recording into journal_dir (NULL: none) with a long answer. */
static ac_engine *writer_engine(const char *journal_dir)
{
    static char big[60000];
    memset(big, 0, sizeof big);
    strcpy(big, "{\"content\":\"");
    memset(big + strlen(big), 'Z', 50000);
    strcat(big, "\"}\n");
    w_loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = w_loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = big;
    cfg.journal_dir = journal_dir;
    w_engine = ac_engine_new(&cfg, &ae);
    if (!w_engine)
        fail_msg("engine: %s", ae.text);
    return w_engine;
}

static void writer_free(void)
{
    ac_engine_free(w_engine);
    ac_loop_free(w_loop);
}

static void settle(ac_session *s)
{
    for (int i = 0; i < 2000 && !ac_session_settled(s); i++)
        ac_loop_run_once(w_loop, 50);
    assert_true(ac_session_settled(s));
}

/* A journal that cannot be written at all: the session is refused, with why. */
static void test_journal_dev_full(void **state)
{
    (void)state;
    ac_engine *e = writer_engine(NULL);
    ac_session *s = ac_session_new(e, "full", "/dev/full", &ae);
    assert_null(s);
    assert_int_equal(ae.code, AC_EIO);
    assert_non_null(strstr(ae.text, "cannot write journal '/dev/full'"));
    assert_non_null(strstr(ae.text, strerror(ENOSPC)));
    writer_free();
}

/* A journal that fills up during the turn (RLIMIT_FSIZE): the session fails
 * with the reason, what ran is cancelled, and later posts are refused. */
static void test_journal_fills_up(void **state)
{
    (void)state;
    char path[512];
    tmp_path(path, sizeof path, "capped.journal");
    ac_engine *e = writer_engine(NULL);
    struct rlimit old, cap;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    cap = old;
    cap.rlim_cur = 8192;
    void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &cap), 0);
    ac_session *s = ac_session_new(e, "capped", path, &ae);
    if (s) {
        ac_session_send(s, "hi");
        settle(s);
    }
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, oldsig);
    if (!s)
        fail_msg("session: %s", ae.text);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "ended");
    ac_session_end end;
    ac_session_get_end(s, &end);
    assert_string_equal(end.how, "failed");
    assert_non_null(ac_session_error(s));
    assert_non_null(strstr(ac_session_error(s), "cannot write journal"));
    assert_non_null(strstr(ac_session_error(s), strerror(EFBIG)));
    assert_int_equal(ac_session_send(s, "more"), AC_EIO);
    assert_string_equal(ac_session_status_name(ac_session_status(s)), "ended");
    ac_session_free(s);
    writer_free();
    /* what it wrote is a journal a check refuses, never "every transition matches" */
    ac_engine *re = replay_engine(NULL);
    ac_replay_result res;
    assert_int_equal(ac_session_replay(re, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    ac_engine_free(re);
}

/* Journals are created 0600 and never through a symbolic link; journal_dir is
 * created 0700. */
static void test_journal_mode_and_symlink(void **state)
{
    (void)state;
    char target[512], link[512], path[512], dir[512];
    tmp_path(target, sizeof target, "target.txt");
    tmp_path(link, sizeof link, "link.journal");
    tmp_path(path, sizeof path, "mode.journal");
    tmp_path(dir, sizeof dir, "jd-new");
    write_file(target, "precious\n");
    assert_int_equal(symlink(target, link), 0);
    ac_engine *e = writer_engine(dir);
    assert_null(ac_session_new(e, "l", link, &ae));
    assert_int_equal(ae.code, AC_EIO);
    assert_non_null(strstr(ae.text, "symbolic link"));
    char *text = slurp(target);
    assert_string_equal(text, "precious\n");
    free(text);

    mode_t um = umask(022);
    ac_session *s = ac_session_new(e, "m", path, &ae);
    ac_session *d = ac_session_new(e, "in-dir", NULL, &ae);
    umask(um);
    assert_non_null(s);
    assert_non_null(d);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    char in_dir[600];
    snprintf(in_dir, sizeof in_dir, "%s/in-dir.jsonl", dir);
    assert_int_equal(stat(in_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    ac_session_free(s);
    ac_session_free(d);
    writer_free();
}

/* journal_dir: ids that differ name different files (percent-encoding), and
 * a second session with an id already journaled there is refused. */
static void test_journal_dir_ids_distinct(void **state)
{
    (void)state;
    char dir[512];
    tmp_path(dir, sizeof dir, "jd-ids");
    ac_engine *e = writer_engine(dir);
    const char *ids[] = {"team/alice", "team_alice", "team%2Falice", "Team/Alice"};
    ac_session *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = ac_session_new(e, ids[i], NULL, &ae);
        if (!s[i])
            fail_msg("session %s: %s", ids[i], ae.text);
    }
    assert_null(ac_session_new(e, "team/alice", NULL, &ae));
    assert_int_equal(ae.code, AC_EIO);
    assert_non_null(strstr(ae.text, "exists"));
    const char *files[] = {"team%2Falice.jsonl", "team_alice.jsonl", "team%252Falice.jsonl",
                           "Team%2FAlice.jsonl"};
    for (int i = 0; i < 4; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        char *text = slurp(path);
        char want[64];
        snprintf(want, sizeof want, "\"session\":\"%s\"", ids[i]);
        if (!strstr(text, want))
            fail_msg("%s does not hold session %s", files[i], ids[i]);
        assert_non_null(strstr(text, "\"ev\":\"spawn\""));
        free(text);
        ac_session_free(s[i]);
    }
    writer_free();
}

/* The recorded journal with lines dropped or added, written to name. */
static void broken_copy(const char *name, char *path, size_t cap, int drop_steps, int drop_event_n,
                        const char *tail)
{
    tmp_path(path, cap, name);
    char *text = slurp(recorded);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    char needle[32];
    snprintf(needle, sizeof needle, "{\"n\":%d,", drop_event_n);
    int skip_steps = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (drop_steps && strncmp(line, "{\"steps\"", 8) == 0)
            continue;
        if (drop_event_n && strncmp(line, needle, strlen(needle)) == 0) {
            skip_steps = 1;
            continue;
        }
        if (skip_steps && strncmp(line, "{\"steps\"", 8) == 0) {
            skip_steps = 0;
            continue;
        }
        fprintf(f, "%s\n", line);
    }
    if (tail)
        fputs(tail, f);
    fclose(f);
    free(text);
}

/* Replay with a check refuses journals that do not record every transition. */
static void test_check_refuses_broken_journals(void **state)
{
    (void)state;
    char path[512];
    ac_engine *e = replay_engine(NULL);
    ac_replay_result res;

    /* empty */
    tmp_path(path, sizeof path, "empty.journal");
    write_file(path, "");
    assert_int_equal(ac_session_replay(e, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "no header line"));
    /* a header and nothing else */
    char *text = slurp(recorded);
    *strchr(text, '\n') = 0;
    tmp_path(path, sizeof path, "header.journal");
    write_file(path, text);
    free(text);
    assert_int_equal(ac_session_replay(e, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "records no event"));
    /* every steps line removed */
    broken_copy("nosteps.journal", path, sizeof path, 1, 0, NULL);
    assert_int_equal(ac_session_replay(e, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "event 1 (spawn) has no steps line"));
    assert_int_equal(ac_session_replay(e, path, 0, &res, NULL), AC_REPLAY_MATCH);
    /* the last steps line cut off */
    broken_copy("cut.journal", path, sizeof path, 0, 0, NULL);
    text = slurp(path);
    char *last = strstr(text, "{\"steps\"");
    for (char *p = last; (p = strstr(p + 1, "{\"steps\""));)
        last = p;
    *last = 0;
    write_file(path, text);
    free(text);
    assert_int_equal(ac_session_replay(e, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "has no steps line"));
    /* an event (and its steps) missing in the middle: in both modes */
    broken_copy("gap.journal", path, sizeof path, 0, 3, NULL);
    assert_int_equal(ac_session_replay(e, path, 0, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "event 4 where event 3 was expected"));
    /* garbage after the last line (no newline): torn, refused by a check */
    broken_copy("garbage.journal", path, sizeof path, 0, 0, "\x01\xff garbage \x80\x90");
    assert_int_equal(ac_session_replay(e, path, AC_REPLAY_CHECK, &res, NULL), AC_REPLAY_ERROR);
    assert_true(res.torn);
    /* garbage in the middle: refused in both modes */
    broken_copy("garbage2.journal", path, sizeof path, 0, 0, "\x01\xff garbage\n{\"n\":1}\n");
    assert_int_equal(ac_session_replay(e, path, 0, &res, NULL), AC_REPLAY_ERROR);
    assert_non_null(strstr(res.error, "not a journal line"));
    ac_engine_free(e);
}

/* A line longer than the limit is refused, without reading all of it. */
static void test_reader_line_limit(void **state)
{
    (void)state;
    char path[512], err[256];
    broken_copy("long.journal", path, sizeof path, 0, 0, NULL);
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"n\":999,\"t\":1,\"ev\":\"", f);
    for (int i = 0; i < 1000; i++)
        fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
              "xxxxxxxxxxxxxxxxxxxx",
              f);
    fclose(f);
    ac_journal_reader *r = ac_journal_reader_open(path, err, sizeof err);
    assert_non_null(r);
    ac_journal_reader_set_max_line(r, 50000);
    ac_journal_line l;
    int rc;
    while ((rc = ac_journal_reader_next(r, &l, err, sizeof err)) > 0)
        ;
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "line longer than 50000 bytes"));
    assert_false(ac_journal_reader_torn(r));
    ac_journal_reader_close(r);
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
        cmocka_unit_test(test_journal_dev_full),
        cmocka_unit_test(test_journal_fills_up),
        cmocka_unit_test(test_journal_mode_and_symlink),
        cmocka_unit_test(test_journal_dir_ids_distinct),
        cmocka_unit_test(test_check_refuses_broken_journals),
        cmocka_unit_test(test_reader_line_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
