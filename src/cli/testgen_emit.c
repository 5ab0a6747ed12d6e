/*
 * testgen_emit.c - `agentc testgen`'s scenarios on disk: one folder each under the output
 * folder, holding the scripted model's turns (script.jsonl), an output schema when it needs one
 * (schema.json), the options of its run, one a line (args: --param, --post-at, --tools, ...),
 * and the path it is expected to take (expected.path: one transition identity a line, as replay
 * identifies a transition, so a comment or reorder edit of the spec keeps it). Read back for
 * `testgen --from DIR` (a suite run against an edited spec).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"
#include "session/journal.h"
#include "testgen.h"
#include "util/grow.h"

void tg_suite_free(tg_suite *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->sc[i].builds);
        free(s->sc[i].script);
        free(s->sc[i].schema);
        free(s->sc[i].guards);
        free(s->sc[i].args);
        free(s->sc[i].path);
    }
    free(s->sc);
    memset(s, 0, sizeof *s);
}

tg_scenario *tg_suite_add(tg_suite *s)
{
    if (ac_grow((void **)&s->sc, &s->cap, s->n + 1, sizeof *s->sc))
        return NULL;
    memset(&s->sc[s->n], 0, sizeof s->sc[0]);
    return &s->sc[s->n++];
}

static void ident(ac_buf *b, const char *m, const char *from, const char *ev, const char *to,
                  const char *guard, const char *const *acts, size_t n)
{
    ac_buf_printf(b, "%s %s --%s%s%s%s--> %s /", m, from, ev, guard[0] ? " [" : "", guard,
                  guard[0] ? "]" : "", to);
    for (size_t i = 0; i < n; i++)
        ac_buf_printf(b, "%s %s", i ? "," : "", acts[i]);
    ac_buf_printf(b, "\n");
}

void tg_ident_row(const ac_fsm_tables *t, uint16_t r, ac_buf *b)
{
    const ac_fsm_transition *tr = &t->transitions[r];
    char g[512];
    ac_journal_guard_text(t, tr->guard, g, sizeof g);
    const uint16_t *l = t->lists + tr->actions;
    const char *acts[64];
    size_t n = 0;
    for (uint16_t i = 1; i <= l[0] && n < 64; i++)
        acts[n++] = t->action_names[l[i]];
    ident(b, t->machines[t->states[tr->source].machine].name, t->states[tr->source].name,
          tr->event ? t->event_names[tr->event] : "", t->states[tr->target].name, g, acts, n);
}

void tg_ident_step(const json_t *step, ac_buf *b)
{
    const char *f[6];
    for (size_t i = 0; i < 6; i++) {
        f[i] = json_string_value(json_array_get(step, i));
        if (!f[i])
            f[i] = "";
    }
    const char *acts[64];
    size_t n = 0;
    json_t *a = json_array_get(step, 6);
    for (size_t i = 0; i < json_array_size(a) && n < 64; i++)
        acts[n++] =
            json_string_value(json_array_get(a, i)) ? json_string_value(json_array_get(a, i)) : "";
    ident(b, f[0], f[1], f[2], f[3], f[5], acts, n);
}

static int put(const char *dir, const char *name, const char *text)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}

int tg_emit(const tg_suite *s, const char *out, char *err, size_t errcap)
{
    for (size_t i = 0; i < s->n; i++) {
        const tg_scenario *sc = &s->sc[i];
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", out, sc->name);
        ac_buf a;
        ac_buf_init(&a, AC_BUF_MAX);
        ac_buf_printf(&a, "# %s\n%s", sc->builds, sc->args);
        int bad = a.failed || (mkdir(dir, 0700) != 0 && errno != EEXIST) ||
                  put(dir, "script.jsonl", sc->script) || put(dir, "args", a.p) ||
                  put(dir, "expected.path", sc->path) ||
                  (sc->schema && put(dir, "schema.json", sc->schema)) ||
                  (sc->guards && put(dir, "guards.json", sc->guards));
        ac_buf_free(&a);
        if (bad) {
            snprintf(err, errcap, "cannot write %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static char *slurp(const char *dir, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return ac_read_file(p, (size_t)16 << 20, NULL);
}

/* The scenario in folder dir/name into sc. 0, or -1 (its files do not read). */
static int load_one(const char *dir, const char *name, tg_scenario *sc)
{
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s/%s", dir, name);
    snprintf(sc->name, sizeof sc->name, "%s", name);
    char *args = slurp(d, "args");
    sc->script = slurp(d, "script.jsonl");
    sc->path = slurp(d, "expected.path");
    sc->schema = slurp(d, "schema.json");
    sc->guards = slurp(d, "guards.json");
    if (!args || !sc->script || !sc->path) {
        free(args);
        return -1;
    }
    char *nl = args[0] == '#' ? strchr(args, '\n') : NULL; /* "# what it builds" */
    sc->builds = strndup(nl ? args + 2 : "", nl ? (size_t)(nl - args - 2) : 0);
    sc->args = strdup(nl ? nl + 1 : args);
    free(args);
    return sc->builds && sc->args ? 0 : -1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int tg_load(const char *dir, tg_suite *s, char *err, size_t errcap)
{
    struct dirent **ents;
    int n = scandir(dir, &ents, NULL, by_name);
    if (n < 0) {
        snprintf(err, errcap, "cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s/args", dir, ents[i]->d_name);
        if (ents[i]->d_name[0] != '.' && !rc && access(p, R_OK) == 0) {
            tg_scenario *sc = tg_suite_add(s);
            if (!sc || load_one(dir, ents[i]->d_name, sc) < 0) {
                snprintf(err, errcap, "cannot read the scenario %s/%s", dir, ents[i]->d_name);
                rc = -1;
            }
        }
        free(ents[i]);
    }
    free(ents);
    if (!rc && !s->n) {
        snprintf(err, errcap, "%s holds no scenario (folders with an args file)", dir);
        rc = -1;
    }
    return rc;
}

void tg_remove(const tg_suite *s, const char *out)
{
    static const char *const files[] = {"script.jsonl",  "schema.json",  "args",
                                        "expected.path", "run1.journal", "run2.journal"};
    char p[PATH_MAX];
    for (size_t i = 0; i < s->n; i++) {
        for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
            snprintf(p, sizeof p, "%s/%s/%s", out, s->sc[i].name, files[k]);
            unlink(p);
        }
        snprintf(p, sizeof p, "%s/%s", out, s->sc[i].name);
        rmdir(p);
    }
    rmdir(out);
}
