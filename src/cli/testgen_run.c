/*
 * testgen_run.c - a scenario of `agentc testgen` run through the real engine as a user runs it:
 * `agentc run` as a child process, twice, with the options of its args file; the first journal
 * replayed with `agentc replay --check`; both runs' steps compared byte for byte, and the path
 * the first took (its steps' transition identities) compared with the expected one.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/proc.h"
#include "session/journal.h"
#include "testgen.h"

#define RUN_LIMIT_MS 10000
#define PROMPT "compute 2 * 3"

typedef struct child {
    ac_loop *loop;
    int done, code;
    char err[512];
} child;

static void child_done(void *ud, const ac_proc_result *r)
{
    child *c = ud;
    c->done = 1;
    c->code = r->timed_out ? -2 : r->exited ? r->exit_code : -1;
    snprintf(c->err, sizeof c->err, "%.*s", (int)(r->err_len < 400 ? r->err_len : 400),
             r->err_tail ? r->err_tail : "");
    ac_loop_stop(c->loop);
}

/* Runs argv to its end on loop: its exit status, -1 when it did not exit, -2 when it ran
 * longer than RUN_LIMIT_MS (a scripted run takes milliseconds; a spec that loops does not). */
static int run_child(ac_loop *loop, const char *const *argv, char *err, size_t errcap)
{
    child c = {.loop = loop};
    ac_proc_spec spec = {.argv = argv, .timeout_ms = RUN_LIMIT_MS};
    if (!ac_proc_spawn(loop, &spec, child_done, &c, err, errcap))
        return -1;
    while (!c.done)
        ac_loop_run(loop);
    snprintf(err, errcap, "%s", c.err);
    return c.code;
}

static const char *self_exe(void)
{
    static char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    return exe;
}

/* One run of sc into journal: the child's exit status (0 completed, 1 the agent failed), or
 * -1, -2 as run_child. The args file's file names are the scenario folder's. */
static int run_once(ac_loop *loop, const char *spec, const tg_scenario *sc, const char *dir,
                    const char *journal, char *err, size_t errcap)
{
    enum { MAX_ARGS = 160 };
    const char *argv[MAX_ARGS + 12] = {self_exe(), "run",       "--no-store", "--spec",
                                       spec,       "--journal", journal};
    int k = 7;
    char *args = strdup(sc->args), *save = NULL, files[6][PATH_MAX];
    int nf = 0, want = 0; /* 1: the value is a file of the folder; 2: unless builtin: (an
                           * absolute path, as --tools FILE gives, is taken as it is) */
    for (char *l = args ? strtok_r(args, "\n", &save) : NULL; l && k < MAX_ARGS;
         l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '#')
            continue;
        const char *v = l;
        if ((want == 1 || (want == 2 && strncmp(l, "builtin:", 8))) && l[0] != '/' && nf < 6) {
            snprintf(files[nf], PATH_MAX, "%s/%s", dir, l);
            v = files[nf++];
        }
        want = want                                                      ? 0
               : !strcmp(l, "--script") || !strcmp(l, "--output-schema") ? 1
               : !strcmp(l, "--tools")                                   ? 2
                                                                         : 0;
        argv[k++] = v;
    }
    argv[k++] = PROMPT;
    argv[k] = NULL;
    int rc = args ? run_child(loop, argv, err, errcap) : -1;
    free(args);
    return rc;
}

/* The steps lines of a journal, in order (one text), and the path they take (identities, the
 * machines' starts left out). NULL when unreadable. */
static char *steps_text(const char *path, ac_buf *ids)
{
    char err[256];
    ac_journal_reader *rd = ac_journal_reader_open(path, err, sizeof err);
    if (!rd)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_journal_line l;
    while (ac_journal_reader_next(rd, &l, err, sizeof err) > 0) {
        if (l.kind != AC_JOURNAL_STEPS)
            continue;
        char *s = json_dumps(l.steps, JSON_COMPACT);
        ac_buf_printf(&b, "%s\n", s ? s : "");
        free(s);
        size_t i;
        json_t *step;
        json_array_foreach(l.steps, i, step) if (json_string_length(json_array_get(step, 1)))
            tg_ident_step(step, ids);
    }
    ac_journal_reader_close(rd);
    if (b.failed) {
        ac_buf_free(&b);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}

/* What went wrong with the two runs, NULL: nothing. */
static const char *judge(int r1, int r2, const char *s1, const char *s2, const char *path,
                         const char *expected)
{
    if (r1 == -2)
        return "did not end within 10 s";
    if ((r1 != 0 && r1 != 1) || !s1)
        return "did not run";
    if (r2 != r1 || !s2 || strcmp(s1, s2) != 0)
        return "a second run took another path";
    if (strcmp(path, expected) != 0)
        return "the path differs from the expected one";
    return NULL;
}

json_t *tg_run_scenario(ac_loop *loop, const char *spec, const tg_scenario *sc, const char *out,
                        ac_cov *c)
{
    char dir[PATH_MAX], j1[PATH_MAX], j2[PATH_MAX], err[512] = "";
    snprintf(dir, sizeof dir, "%s/%s", out, sc->name);
    snprintf(j1, sizeof j1, "%s/run1.journal", dir);
    snprintf(j2, sizeof j2, "%s/run2.journal", dir);
    unlink(j1);
    unlink(j2);
    int r1 = run_once(loop, spec, sc, dir, j1, err, sizeof err);
    int r2 = r1 == 0 || r1 == 1 ? run_once(loop, spec, sc, dir, j2, err, sizeof err) : -1;
    ac_buf p1, p2;
    ac_buf_init(&p1, AC_BUF_MAX);
    ac_buf_init(&p2, AC_BUF_MAX);
    char *s1 = steps_text(j1, &p1), *s2 = steps_text(j2, &p2);
    const char *problem = judge(r1, r2, s1, s2, p1.p ? p1.p : "", sc->path);
    int differs = problem && s1 && s2 && !strcmp(s1, s2) && strcmp(p1.p ? p1.p : "", sc->path);
    const char *rargv[] = {self_exe(), "replay", j1, "--spec", spec, "--check", NULL};
    if (!problem && run_child(loop, rargv, err, sizeof err) != 0)
        problem = "replay --check diverged";
    char cerr[256];
    if (!problem && c && ac_cov_journal(c, j1, cerr, sizeof cerr) != 0)
        problem = "the journal does not read";
    json_t *r = json_pack("{s:s, s:s, s:i, s:i, s:s*, s:s*}", "name", sc->name, "builds",
                          sc->builds, "exit", r1, "new_transitions", sc->new_transitions, "problem",
                          problem, "stderr", problem ? err : NULL);
    if (r && differs)
        json_object_set_new(r, "path", json_string(p1.p ? p1.p : ""));
    free(s1);
    free(s2);
    ac_buf_free(&p1);
    ac_buf_free(&p2);
    return r;
}
