/*
 * replay.c - `agentc replay`: rebuilds a session from its journal with no
 * I/O, and with --check compares every transition with the recorded one.
 * Also loads journals as coverage for `agentc diagram --journal`.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session/session_int.h"

typedef struct journal {
    json_t *header;
    json_t *lines; /* every line after the header */
} journal;

static int journal_load(const char *path, journal *j, char *err, size_t errcap)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errcap, "cannot read journal '%s': %m", path);
        return -1;
    }
    j->header = NULL;
    j->lines = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        lineno++;
        json_error_t jerr;
        json_t *v = json_loadb(line, (size_t)n, 0, &jerr);
        if (!json_is_object(v)) {
            json_decref(v);
            /* a torn last line (crash while writing) is tolerated */
            int c = fgetc(f);
            if (c == EOF)
                break;
            snprintf(err, errcap, "%s:%d: not a journal line (%s)", path, lineno,
                     jerr.text[0] ? jerr.text : "not an object");
            free(line);
            fclose(f);
            json_decref(j->lines);
            json_decref(j->header);
            return -1;
        }
        if (!j->header)
            j->header = v;
        else
            json_array_append_new(j->lines, v);
    }
    free(line);
    fclose(f);
    if (!j->header || !json_is_integer(json_object_get(j->header, "agentc_journal"))) {
        snprintf(err, errcap, "%s: not an agentc journal (no header line)", path);
        json_decref(j->lines);
        json_decref(j->header);
        return -1;
    }
    return 0;
}

int ac_journal_coverage(const char *path, const ac_fsm_tables *t, uint32_t *tc, uint32_t *sc,
                        char *err, size_t errcap)
{
    journal j;
    if (journal_load(path, &j, err, errcap) < 0)
        return -1;
    size_t i;
    json_t *l;
    sc[t->machines[t->root].initial]++;
    json_array_foreach(j.lines, i, l)
    {
        json_t *tr = json_object_get(l, "tr");
        size_t k;
        json_t *step;
        json_array_foreach(tr, k, step)
        {
            const char *m = json_string_value(json_array_get(step, 0));
            const char *from = json_string_value(json_array_get(step, 1));
            const char *ev = json_string_value(json_array_get(step, 2));
            const char *to = json_string_value(json_array_get(step, 3));
            int line = (int)json_integer_value(json_array_get(step, 4));
            if (!m || !from || !ev || !to)
                continue;
            for (uint16_t s = 0; s < t->n_states; s++)
                if (strcmp(t->states[s].name, to) == 0 &&
                    strcmp(t->machines[t->states[s].machine].name, m) == 0)
                    sc[s]++;
            for (uint16_t r = 0; r < t->n_transitions; r++) {
                const ac_fsm_transition *row = &t->transitions[r];
                const ac_fsm_state *src = &t->states[row->source];
                if (row->line == line && strcmp(src->name, from) == 0 &&
                    strcmp(t->machines[src->machine].name, m) == 0 &&
                    strcmp(t->states[row->target].name, to) == 0 &&
                    strcmp(row->event ? t->event_names[row->event] : "", ev) == 0)
                    tc[r]++;
            }
        }
    }
    json_decref(j.header);
    json_decref(j.lines);
    return 0;
}

/* An output trace makes the session trace its transitions into s->steps,
 * which --check compares; the records themselves are not needed here. */
static void collect(void *ud, ac_session *s, const ac_trace_rec *r)
{
    (void)ud;
    (void)s;
    (void)r;
}

int ac_cli_replay(int argc, char **argv)
{
    const char *path = NULL, *spec_path = NULL;
    int check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(
                "usage: agentc replay JOURNAL [--spec FILE] [--check]\n\n"
                "Rebuilds a session by re-dispatching its journal's events through the built-in\n"
                "tables (or those of --spec FILE), with no I/O, and prints the final state of\n"
                "each machine. --check compares each transition with the recorded one and\n"
                "exits 1 at the first divergence.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--spec") && i + 1 < argc)
            spec_path = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "agentc replay: unknown option '%s'\n", argv[i]);
            return 2;
        } else
            path = argv[i];
    }
    if (!path) {
        fprintf(stderr,
                "agentc replay: missing JOURNAL (usage: agentc replay JOURNAL [--check])\n");
        return 2;
    }
    char err[2048];
    journal j;
    if (journal_load(path, &j, err, sizeof err) < 0) {
        fprintf(stderr, "agentc replay: %s\n", err);
        return 3;
    }
    ac_fsm_tables *owned = NULL;
    if (spec_path && !(owned = ac_cli_tables_from_spec(spec_path)))
        return 3;
    json_t *params = json_object_get(j.header, "params");
    const char *pv[64];
    size_t np = 0;
    char pbuf[64][256];
    const char *key;
    json_t *val;
    json_object_foreach(params, key, val)
    {
        if (np < 63 && json_is_string(val)) {
            snprintf(pbuf[np], sizeof pbuf[np], "%s=%s", key, json_string_value(val));
            pv[np] = pbuf[np];
            np++;
        }
    }
    pv[np] = NULL;
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = owned;
    cfg.params = pv;
    ac_output out;
    memset(&out, 0, sizeof out);
    out.trace = collect;
    cfg.output = &out;
    ac_engine *e = ac_engine_new(&cfg, err, sizeof err);
    if (!e) {
        fprintf(stderr, "agentc replay: %s\n", err);
        ac_spec_tables_free(owned);
        json_decref(j.header);
        json_decref(j.lines);
        return 3;
    }
    const char *hash = json_string_value(json_object_get(j.header, "spec_hash"));
    int same = hash && strcmp(hash, ac_engine_tables(e)->hash) == 0;
    int rc = 0;
    if (!same && !check) {
        fprintf(stderr,
                "agentc replay: the journal was recorded with spec hash %s, these tables have %s;\n"
                "  replay it against this spec with --check to see where the behaviour differs\n",
                hash ? hash : "?", ac_engine_tables(e)->hash);
        rc = 1;
        goto done;
    }
    if (!same)
        fprintf(stderr, "agentc replay: note: spec hash differs from the recording (%s vs %s)\n",
                hash ? hash : "?", ac_engine_tables(e)->hash);
    const char *sid = json_string_value(json_object_get(j.header, "session"));
    ac_session *s = ac_session_new_replay(e, sid ? sid : "replay", err, sizeof err);
    if (!s) {
        fprintf(stderr, "agentc replay: %s\n", err);
        rc = 3;
        goto done;
    }
    size_t i, events = 0;
    json_t *l;
    json_array_foreach(j.lines, i, l)
    {
        json_t *evname = json_object_get(l, "ev");
        if (!json_is_string(evname))
            continue;
        events++;
        json_t *data = json_object_get(l, "data");
        int64_t t = json_integer_value(json_object_get(l, "t"));
        json_t *recorded = NULL;
        json_t *next = json_array_get(j.lines, i + 1);
        if (next && json_object_get(next, "tr"))
            recorded = json_object_get(next, "tr");
        s->steps = json_array();
        int prc = ac_session_post(s, json_string_value(evname), json_incref(data), t);
        json_t *got = s->steps;
        s->steps = NULL;
        if (prc == -2) {
            fprintf(stderr, "agentc replay: event %zu: '%s' is not an event of this spec\n", events,
                    json_string_value(evname));
            json_decref(got);
            rc = 1;
            break;
        }
        if (check && recorded && !json_equal(got, recorded)) {
            size_t k = 0;
            while (k < json_array_size(got) && k < json_array_size(recorded) &&
                   json_equal(json_array_get(got, k), json_array_get(recorded, k)))
                k++;
            char *a = json_dumps(json_array_get(recorded, k), JSON_COMPACT | JSON_ENCODE_ANY);
            char *b = json_dumps(json_array_get(got, k), JSON_COMPACT | JSON_ENCODE_ANY);
            printf("divergence at event %zu (%s), step %zu:\n  recorded: %s\n  replayed: %s\n",
                   events, json_string_value(evname), k + 1, a ? a : "(none)", b ? b : "(none)");
            free(a);
            free(b);
            json_decref(got);
            rc = 1;
            break;
        }
        json_decref(got);
    }
    if (rc == 0) {
        const ac_fsm_tables *t = ac_engine_tables(e);
        printf("replayed %zu events from %s\n", events, path);
        for (uint16_t m = 0; m < t->n_machines; m++) {
            const char *st = ac_session_state(s, t->machines[m].name);
            printf("  %-8s %s\n", t->machines[m].name, st ? st : "(not active)");
        }
        printf("  status   %s\n", ac_session_status_name(ac_session_status(s)));
        if (check)
            printf("check: every transition matches the recording\n");
    }
    ac_session_free(s);
done:
    ac_engine_free(e);
    ac_spec_tables_free(owned);
    json_decref(j.header);
    json_decref(j.lines);
    return rc;
}
