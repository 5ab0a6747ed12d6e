/*
 * coverage.c - `agentc coverage SPEC JOURNAL… [--db PATH|URL [--session ID…]]`: which
 * transitions of a spec recorded sessions took, and how often. A recorded step names its
 * transition as replay does (machine, source, event, target, guard, actions), so counts
 * survive comment, layout and reorder edits; steps the spec no longer has are reported.
 * Also loads journals as coverage for `agentc diagram --journal`.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/store.h"
#include "cli.h"
#include "session/journal.h"

typedef ac_cov cov_acc;

static const char *const kind_names[] = {"external", "internal", "ignore"};

/* The TRANSITION shape `coverage --json` shares with `testgen`. */
json_t *ac_cov_transition_json(const ac_fsm_tables *t, uint16_t r)
{
    const ac_fsm_transition *tr = &t->transitions[r];
    char guard[512];
    ac_journal_guard_text(t, tr->guard, guard, sizeof guard);
    json_t *acts = json_array();
    const uint16_t *l = t->lists + tr->actions;
    for (uint16_t i = 1; i <= l[0]; i++)
        json_array_append_new(acts, json_string(t->action_names[l[i]]));
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:o, s:s, s:i}", "machine",
        t->machines[t->states[tr->source].machine].name, "from", t->states[tr->source].name,
        "event", tr->event ? t->event_names[tr->event] : "", "to", t->states[tr->target].name,
        "guard", guard, "actions", acts, "kind",
        kind_names[tr->kind <= AC_TR_IGNORE ? tr->kind : AC_TR_EXTERNAL], "line", (int)tr->line);
}

/* A recorded step the tables have no row for, as a TRANSITION (kind unknown: null). */
static json_t *step_json(const json_t *step)
{
    json_t *acts = json_array_get(step, 6);
    return json_pack("{s:O, s:O, s:O, s:O, s:s, s:o, s:n, s:O}", "machine", json_array_get(step, 0),
                     "from", json_array_get(step, 1), "event", json_array_get(step, 2), "to",
                     json_array_get(step, 3), "guard",
                     json_string_value(json_array_get(step, 5))
                         ? json_string_value(json_array_get(step, 5))
                         : "",
                     "actions", json_is_array(acts) ? json_copy(acts) : json_array(), "kind",
                     "line", json_array_get(step, 4));
}

static void count_stale(cov_acc *c, const json_t *step)
{
    json_t *id = json_array();
    for (size_t i = 0; i < 7; i++) /* the identity: all but the line */
        if (i != 4)
            json_array_append(id, json_array_get(step, i) ? json_array_get(step, i) : json_null());
    char *key = json_dumps(id, JSON_COMPACT);
    json_decref(id);
    if (!key)
        return;
    json_t *e = json_object_get(c->stale, key);
    if (!e) {
        e = json_pack("{s:o, s:i}", "transition", step_json(step), "count", 0);
        json_object_set_new(c->stale, key, e);
    }
    json_object_set_new(e, "count",
                        json_integer(json_integer_value(json_object_get(e, "count")) + 1));
    free(key);
}

static void count_step(cov_acc *c, const json_t *step)
{
    const ac_fsm_tables *t = c->t;
    const char *m = json_string_value(json_array_get(step, 0));
    const char *from = json_string_value(json_array_get(step, 1));
    const char *to = json_string_value(json_array_get(step, 3));
    if (!m || !from || !to)
        return;
    for (uint16_t s = 0; s < t->n_states; s++)
        if (strcmp(t->states[s].name, to) == 0 &&
            strcmp(t->machines[t->states[s].machine].name, m) == 0)
            c->sc[s]++;
    if (!from[0]) /* a machine's start: no row */
        return;
    uint16_t r = ac_journal_step_row(t, step);
    if (r != AC_FSM_NONE)
        c->tc[r]++;
    else if (c->stale)
        count_stale(c, step);
}

static void count_steps(cov_acc *c, const json_t *steps)
{
    size_t k;
    json_t *step;
    json_array_foreach(steps, k, step) count_step(c, step);
}

int ac_cov_journal(ac_cov *c, const char *path, char *err, size_t errcap)
{
    ac_journal_reader *rd = ac_journal_reader_open(path, err, errcap);
    if (!rd)
        return -1;
    c->sc[c->t->machines[c->t->root].initial]++;
    ac_journal_line l;
    int rc;
    while ((rc = ac_journal_reader_next(rd, &l, err, errcap)) > 0)
        if (l.kind == AC_JOURNAL_STEPS)
            count_steps(c, l.steps);
    ac_journal_reader_close(rd);
    return rc < 0 ? -1 : 0;
}

int ac_journal_coverage(const char *path, const ac_fsm_tables *t, uint32_t *tc, uint32_t *sc,
                        char *err, size_t errcap)
{
    cov_acc c = {t, tc, sc, NULL};
    return ac_cov_journal(&c, path, err, errcap);
}

/* ---- stored sessions ---- */

static int stored_event(void *ud, const ac_store_event *ev)
{
    if (!ev->steps)
        return 0;
    json_t *steps = json_loads(ev->steps, 0, NULL);
    if (json_is_array(steps))
        count_steps(ud, steps);
    json_decref(steps);
    return 0;
}

static int stored_session(cov_acc *c, ac_store *st, const char *id)
{
    ac_error err = {0};
    c->sc[c->t->machines[c->t->root].initial]++;
    if (ac_store_events(st, id, 0, stored_event, c, &err) != AC_OK) {
        fprintf(stderr, "agentc coverage: session '%s': %s\n", id, err.text);
        return AC_EXIT_CONFIG;
    }
    return 0;
}

typedef struct list_ctx {
    cov_acc *c;
    ac_store *st;
    int rc;
} list_ctx;

static int listed(void *ud, const ac_store_session_info *info)
{
    list_ctx *x = ud;
    x->rc = stored_session(x->c, x->st, info->id);
    return x->rc;
}

/* The sessions ids names (none: all) of the store db. 0, or an exit status. */
static int cov_store(cov_acc *c, const char *db, const char *const *ids, size_t n)
{
    ac_store *st;
    char path[4096];
    int rc = ac_cli_store_open_existing(db, 1, &st, path, sizeof path);
    if (rc)
        return rc;
    if (!st) {
        fprintf(stderr, "agentc coverage: no store at %s\n", path);
        return AC_EXIT_CONFIG;
    }
    list_ctx x = {c, st, 0};
    ac_error err = {0};
    for (size_t i = 0; i < n && !rc; i++) {
        ac_store_session_info info;
        if (ac_store_info(st, ids[i], &info, &err) != AC_OK) {
            fprintf(stderr, "agentc coverage: session '%s': %s\n", ids[i], err.text);
            rc = AC_EXIT_CONFIG;
        } else
            rc = stored_session(c, st, ids[i]);
    }
    if (!n && ac_store_list(st, listed, &x, &err) != AC_OK && !x.rc) {
        fprintf(stderr, "agentc coverage: %s\n", err.text);
        rc = AC_EXIT_CONFIG;
    }
    ac_store_close(st);
    return rc ? rc : x.rc;
}

/* ---- the report ---- */

typedef struct cov_opts {
    const char *spec, *db, *format;
    const char **journals, **ids;
    size_t n_journals, n_ids;
    int json;
    double fail_under; /* < 0: none */
} cov_opts;

int ac_cov_counted(const ac_fsm_tables *t, uint16_t r)
{
    return t->transitions[r].kind != AC_TR_IGNORE; /* an ignored event records no step */
}

double ac_cov_pct(unsigned n, unsigned m)
{
    return m ? 100.0 * n / m : 100.0;
}

/* Taken and total of machine mi (-1: all). */
void ac_cov_tally(const ac_cov *c, int mi, unsigned *taken, unsigned *total)
{
    const ac_fsm_tables *t = c->t;
    *taken = *total = 0;
    for (uint16_t r = 0; r < t->n_transitions; r++) {
        if (!ac_cov_counted(t, r) || (mi >= 0 && t->states[t->transitions[r].source].machine != mi))
            continue;
        (*total)++;
        *taken += c->tc[r] > 0;
    }
}

static json_t *report_json(const cov_acc *c)
{
    const ac_fsm_tables *t = c->t;
    unsigned n, m;
    ac_cov_tally(c, -1, &n, &m);
    json_t *trs = json_array(), *states = json_array(), *machines = json_object();
    for (uint16_t r = 0; r < t->n_transitions; r++)
        if (ac_cov_counted(t, r)) {
            json_t *o = ac_cov_transition_json(t, r);
            json_object_set_new(o, "count", json_integer(c->tc[r]));
            json_array_append_new(trs, o);
        }
    for (uint16_t s = 0; s < t->n_states; s++)
        json_array_append_new(states, json_pack("{s:s, s:s, s:i}", "machine",
                                                t->machines[t->states[s].machine].name, "state",
                                                t->states[s].name, "count", (int)c->sc[s]));
    for (uint16_t mi = 0; mi < t->n_machines; mi++) {
        unsigned a, b;
        ac_cov_tally(c, mi, &a, &b);
        json_object_set_new(machines, t->machines[mi].name,
                            json_pack("{s:i, s:i}", "total", (int)b, "covered", (int)a));
    }
    json_t *stale = json_array();
    const char *k;
    json_t *e;
    json_object_foreach(c->stale, k, e)
    {
        json_t *o = json_deep_copy(json_object_get(e, "transition"));
        json_object_set(o, "count", json_object_get(e, "count"));
        json_array_append_new(stale, o);
    }
    return json_pack("{s:i, s:i, s:f, s:o, s:o, s:o, s:o}", "total", (int)m, "covered", (int)n,
                     "percent", ac_cov_pct(n, m), "machines", machines, "transitions", trs,
                     "states", states, "not_in_spec", stale);
}

static void print_tr(const json_t *o)
{
    const char *g = json_string_value(json_object_get(o, "guard"));
    const json_t *acts = json_object_get(o, "actions");
    printf("  %5lld  %s %s --%s%s%s%s", json_integer_value(json_object_get(o, "count")),
           json_string_value(json_object_get(o, "machine")),
           json_string_value(json_object_get(o, "from")),
           json_string_value(json_object_get(o, "event"))[0]
               ? json_string_value(json_object_get(o, "event"))
               : "(eventless)",
           g && g[0] ? " [" : "", g ? g : "", g && g[0] ? "]" : "");
    size_t i;
    json_t *a;
    json_array_foreach(acts, i, a) printf("%s%s", i ? ", " : " / ", json_string_value(a));
    printf("--> %s  (line %lld)\n", json_string_value(json_object_get(o, "to")),
           json_integer_value(json_object_get(o, "line")));
}

static void report_text(const cov_acc *c, const cov_opts *o, const json_t *j)
{
    const ac_fsm_tables *t = c->t;
    size_t i;
    json_t *x;
    printf("%s: every transition and the times it was taken\n", o->spec);
    json_array_foreach(json_object_get(j, "transitions"), i, x) print_tr(x);
    if (json_array_size(json_object_get(j, "not_in_spec"))) {
        printf("taken but not in this spec (recorded under another):\n");
        json_array_foreach(json_object_get(j, "not_in_spec"), i, x) print_tr(x);
    }
    int none = 1;
    for (uint16_t s = 0; s < t->n_states; s++)
        if (!c->sc[s]) {
            printf("%s%s.%s", none ? "states never entered: " : ", ",
                   t->machines[t->states[s].machine].name, t->states[s].name);
            none = 0;
        }
    printf("%s", none ? "" : "\n");
    for (uint16_t mi = 0; mi < t->n_machines; mi++) {
        unsigned a, b;
        ac_cov_tally(c, mi, &a, &b);
        printf("  %s: %u of %u taken (%.1f%%)\n", t->machines[mi].name, a, b, ac_cov_pct(a, b));
    }
    unsigned n, m;
    ac_cov_tally(c, -1, &n, &m);
    printf("transitions: %u of %u taken (%.1f%%)\n", n, m, ac_cov_pct(n, m));
}

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: agentc coverage SPEC [JOURNAL…] [--db PATH|URL [--session ID…]]\n"
               "                        [--json] [--fail-under P] [--format dot|mermaid]\n\n"
               "Counts how often the recorded sessions (journals, exports, stored sessions: all\n"
               "of the store's, or those --session names) took each transition of SPEC, matched\n"
               "by identity (machine, source, event, target, guard, actions), and prints them,\n"
               "the states never entered, the transitions taken that SPEC does not have, and\n"
               "`transitions: N of M taken (P%%)` overall and per machine. --json gives\n"
               "{total, covered, percent, machines, transitions, states, not_in_spec};\n"
               "--format draws the diagram with the counts (untaken edges dashed and grey);\n"
               "--fail-under P exits 1 when fewer than P percent were taken.\n");
    return rc;
}

/* 0, -1 after --help, or an exit status. */
static int parse(int argc, char **argv, cov_opts *o)
{
    o->fail_under = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, -1);
        if (!strcmp(a, "--json"))
            o->json = 1;
        else if (!strcmp(a, "--db") && v)
            o->db = argv[++i];
        else if (!strcmp(a, "--session") && v)
            o->ids[o->n_ids++] = argv[++i];
        else if (!strcmp(a, "--format") && v)
            o->format = argv[++i];
        else if (!strcmp(a, "--fail-under") && v) {
            o->fail_under = strtod(argv[++i], &end);
            if (!end || *end || end == v || o->fail_under < 0 || o->fail_under > 100) {
                fprintf(stderr, "agentc coverage: --fail-under takes a percentage (0-100)\n");
                return AC_EXIT_USAGE;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc coverage: unknown option or missing value '%s'\n", a);
            return AC_EXIT_USAGE;
        } else if (!o->spec)
            o->spec = a;
        else
            o->journals[o->n_journals++] = a;
    }
    if (o->format && strcmp(o->format, "dot") && strcmp(o->format, "mermaid")) {
        fprintf(stderr, "agentc coverage: unknown format '%s' (dot, mermaid)\n", o->format);
        return AC_EXIT_USAGE;
    }
    if (o->n_ids && !o->db) {
        fprintf(stderr, "agentc coverage: --session needs --db\n");
        return AC_EXIT_USAGE;
    }
    if (!o->spec || (!o->n_journals && !o->db))
        return usage(stderr, AC_EXIT_USAGE);
    return 0;
}

/* Gathers the counts of every source o names. 0, or an exit status. */
static int gather(cov_acc *c, const cov_opts *o)
{
    char err[512];
    for (size_t i = 0; i < o->n_journals; i++)
        if (ac_cov_journal(c, o->journals[i], err, sizeof err) != 0) {
            fprintf(stderr, "agentc coverage: %s\n", err);
            return AC_EXIT_CONFIG;
        }
    return o->db ? cov_store(c, o->db, o->ids, o->n_ids) : 0;
}

static int emit(const cov_acc *c, const cov_opts *o)
{
    if (o->format) {
        ac_diagram_cov d = {c->tc, c->sc};
        return !strcmp(o->format, "dot") ? ac_emit_dot(c->t, -1, &d, stdout)
                                         : ac_emit_mermaid(c->t, -1, &d, stdout);
    }
    json_t *j = report_json(c);
    if (!j)
        return -1;
    if (o->json) {
        char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (s)
            printf("%s\n", s);
        free(s);
    } else
        report_text(c, o, j);
    json_decref(j);
    return 0;
}

int ac_cli_coverage(int argc, char **argv)
{
    cov_opts o = {0};
    o.journals = calloc((size_t)argc + 1, sizeof *o.journals);
    o.ids = calloc((size_t)argc + 1, sizeof *o.ids);
    cov_acc c = {0};
    ac_fsm_tables *t = NULL;
    int rc = o.journals && o.ids ? parse(argc, argv, &o) : AC_EXIT_CONFIG;
    if (!rc && !(c.t = t = ac_cli_tables_from_spec(o.spec)))
        rc = 1;
    if (!rc) {
        c.tc = calloc((size_t)c.t->n_transitions + 1, sizeof *c.tc);
        c.sc = calloc((size_t)c.t->n_states + 1, sizeof *c.sc);
        c.stale = json_object();
        rc = c.tc && c.sc && c.stale ? gather(&c, &o) : AC_EXIT_CONFIG;
    }
    if (!rc && emit(&c, &o) != 0) {
        fprintf(stderr, "agentc coverage: out of memory\n");
        rc = AC_EXIT_CONFIG;
    }
    if (!rc && o.fail_under >= 0) {
        unsigned n, m;
        ac_cov_tally(&c, -1, &n, &m);
        if (ac_cov_pct(n, m) < o.fail_under) {
            fprintf(stderr, "agentc coverage: %.1f%% of the transitions taken, under %g%%\n",
                    ac_cov_pct(n, m), o.fail_under);
            rc = 1;
        }
    }
    json_decref(c.stale);
    free(c.tc);
    free(c.sc);
    if (t)
        ac_spec_tables_free(t);
    free(o.journals);
    free(o.ids);
    return rc < 0 ? 0 : rc;
}
