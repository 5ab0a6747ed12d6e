/*
 * replay.c - `agentc replay`: rebuilds a session from its journal with no
 * I/O, and with --check compares every transition with the recorded one.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_fsm.h"
#include "cli.h"
#include "engine_opts.h"
#include "run_agent.h"
#include "session/journal.h"

/* "machine From --event [guard] / actions--> To  (path:line)" */
static void print_step(const char *label, const ac_replay_step *st, const char *spec)
{
    if (!st->present) {
        printf("  %s: (no step)\n", label);
        return;
    }
    printf("  %s: %s %s --%s%s%s%s%s%s--> %s  (%s:%d)\n", label, st->machine,
           st->from[0] ? st->from : "(initial)", st->event, st->guard[0] ? " [" : "", st->guard,
           st->guard[0] ? "]" : "", st->actions[0] ? " / " : "", st->actions, st->to,
           spec ? spec : "?", st->line);
}

/* 0, -1 after --help, or an exit status. */
static int replay_parse(int argc, char **argv, const char **path, const char **spec_path,
                        int *check)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(
                "usage: agentc replay JOURNAL [--spec FILE] [--check]\n\n"
                "Rebuilds a session by re-dispatching its journal's events, each part on the\n"
                "agent that recorded it (a journal that records none: the built-in tables, or\n"
                "those of the spec its header names when it is another and its file is there,\n"
                "as recorded or beside JOURNAL), or all on --spec FILE; with no I/O; and prints\n"
                "the final state of each machine. --check compares each transition with the\n"
                "recorded one and exits 1 at the first divergence.\n");
            return -1;
        }
        if (!strcmp(argv[i], "--check"))
            *check = 1;
        else if (!strcmp(argv[i], "--spec") && i + 1 < argc)
            *spec_path = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "agentc replay: unknown option '%s'\n", argv[i]);
            return 2;
        } else
            *path = argv[i];
    }
    if (!*path) {
        fprintf(stderr, "agentc replay: missing JOURNAL (usage: agentc replay JOURNAL [--spec "
                        "FILE] [--check])\n");
        return 2;
    }
    return 0;
}

/* The engine replay runs on: the given tables (NULL: built-in) and the params
 * the journal's header recorded (none made when have_one: the journal's agent gave
 * one); the recorded spec's name in recorded_spec. 0, or an exit status. */
static int replay_engine(const char *path, const ac_fsm_tables *tables, int have_one,
                         char *recorded_spec, size_t cap, ac_engine **e)
{
    ac_error err = {0};
    ac_journal_reader *rd = ac_journal_reader_open(path, err.text, sizeof err.text);
    if (!rd) {
        fprintf(stderr, "agentc replay: %s\n", err.text);
        return 3;
    }
    const ac_journal_line *hdr = ac_journal_reader_header(rd);
    const char *pv[64];
    size_t np = 0;
    char pbuf[64][256];
    const char *key;
    json_t *val;
    json_object_foreach(hdr->params, key, val)
    {
        if (np < 63 && json_is_string(val)) {
            snprintf(pbuf[np], sizeof pbuf[np], "%s=%s", key, json_string_value(val));
            pv[np] = pbuf[np];
            np++;
        }
    }
    pv[np] = NULL;
    snprintf(recorded_spec, cap, "%s", hdr->spec ? hdr->spec : "?");
    *e = have_one ? NULL : ac_cli_engine_offline(tables, pv, &err);
    ac_journal_reader_close(rd); /* hdr is gone from here on */
    if (!*e && !have_one) {
        fprintf(stderr, "agentc replay: %s\n", err.text);
        return 3;
    }
    return 0;
}

/* ---- the engines of the agents a journal records ---- */

#define MAX_AGENTS 64

/* The engines made for the journal's agents (spawn's, each agent.changed's), freed after the
 * replay and its session. */
typedef struct replay_agents {
    record_engine re[MAX_AGENTS];
    size_t n;
} replay_agents;

/* An engine with no loop of the agent record's spec text and params (ac_replay_agent_fn);
 * NULL, said on stderr, when there is none to make. */
static ac_engine *agent_engine(void *ud, const char *agent)
{
    replay_agents *ra = ud;
    if (!agent || ra->n == MAX_AGENTS)
        return NULL;
    record_engine *re = &ra->re[ra->n];
    char why[600] = "";
    if (ac_cli_record_engine_offline(agent, re, why, sizeof why) == 0) {
        ra->n++;
        return re->e;
    }
    fprintf(stderr,
            "agentc replay: note: the journal's agent cannot be rebuilt (%s): replayed under the "
            "engine before it\n",
            why);
    ac_cli_record_engine_free(re);
    return NULL;
}

static void replay_agents_free(replay_agents *ra)
{
    for (size_t k = 0; k < ra->n; k++)
        ac_cli_record_engine_free(&ra->re[k]);
}

/* The agent spawn (the journal's first event) recorded, as JSON text (free it); NULL: none. */
static char *spawn_agent(const char *path)
{
    char err[256];
    ac_journal_reader *rd = ac_journal_reader_open(path, err, sizeof err);
    ac_journal_line l;
    char *out = NULL;
    while (rd && ac_journal_reader_next(rd, &l, err, sizeof err) > 0) {
        if (l.kind != AC_JOURNAL_EVENT)
            continue;
        json_t *a = json_object_get(l.data, "agent");
        if (!strcmp(l.event, "spawn") && json_is_object(a))
            out = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER);
        break;
    }
    ac_journal_reader_close(rd);
    return out;
}

/* The machines' final states, the status and the State. */
static void replay_print(const ac_fsm_tables *t, ac_session *s, const char *path, size_t events)
{
    printf("replayed %zu events from %s\n", events, path);
    for (uint16_t m = 0; m < t->n_machines; m++) {
        const char *ms = ac_session_state(s, t->machines[m].name);
        printf("  %-8s %s\n", t->machines[m].name, ms ? ms : "(not active)");
    }
    ac_session_end end;
    ac_session_get_end(s, &end);
    printf("  status   %s%s%s%s\n", ac_session_status_name(ac_session_status(s)),
           end.ended ? " (" : "", end.ended ? end.how : "", end.ended ? ")" : "");
    const char *why = NULL;
    enum ac_turn_outcome last = ac_session_last_turn(s, &why);
    if (last != AC_TURN_NONE)
        printf("  turn     %s\n", ac_turn_outcome_name(last)); /* how the last turn ended */
    if (ac_session_error(s))
        printf("  error    %s\n", ac_session_error(s)); /* why it failed */
    char *state_text = ac_session_state_doc_json(s);    /* the State rebuilt from the writes */
    if (state_text)
        printf("  state    %s\n", state_text);
    free(state_text);
}

/* What the replay found, said; the exit status. */
static int replay_report(const ac_fsm_tables *t, int st, const ac_replay_result *res, ac_session *s,
                         const char *path, const char *recorded_spec, int check)
{
    if (st == AC_REPLAY_ERROR) {
        fprintf(stderr, "agentc replay: %s\n", res->error);
        return 3;
    }
    const char *hash = res->spec_hash[0] ? res->spec_hash : "?";
    if (!res->same_spec && !check) {
        fprintf(stderr,
                "agentc replay: the journal was recorded with spec hash %s, these tables have %s;\n"
                "  replay it against this spec with --check to see where the behaviour differs\n",
                hash, t->hash);
        return 1;
    }
    if (!res->same_spec)
        fprintf(stderr, "agentc replay: note: spec hash differs from the recording (%s vs %s)\n",
                hash, t->hash);
    if (res->torn)
        fprintf(stderr, "agentc replay: note: %s ends with a torn line (skipped)\n", path);
    if (st == AC_REPLAY_DIVERGED && res->step == 0) {
        fprintf(stderr, "agentc replay: event %zu: '%s' is not an event of this spec\n", res->event,
                res->event_name);
        return 1;
    }
    if (st == AC_REPLAY_DIVERGED) {
        printf("divergence at event %zu (%s), step %zu:\n", res->event, res->event_name, res->step);
        print_step("recorded", &res->recorded, recorded_spec);
        print_step("replayed", &res->replayed, t->spec_path);
        return 1;
    }
    replay_print(t, s, path, res->events);
    if (check)
        printf("check: every transition matches the recording\n");
    return 0;
}

/* The spec the journal's header names when the built-in tables are not it (another hash)
 * and its file is there (as recorded, else beside the journal): its tables (said on stderr),
 * else NULL (the built-in tables, with a note on the hash). */
static ac_fsm_tables *recorded_tables(const char *journal)
{
    char err[256], spec[4096] = "", hash[80] = "";
    ac_journal_reader *rd = ac_journal_reader_open(journal, err, sizeof err);
    const ac_journal_line *hdr = rd ? ac_journal_reader_header(rd) : NULL;
    if (hdr && hdr->spec && hdr->spec_hash) {
        snprintf(spec, sizeof spec, "%s", hdr->spec);
        snprintf(hash, sizeof hash, "%s", hdr->spec_hash);
    }
    ac_journal_reader_close(rd);
    if (!spec[0] || !strcmp(hash, agent_fsm.hash))
        return NULL;
    char beside[8192];
    const char *slash = strrchr(journal, '/');
    snprintf(beside, sizeof beside, "%.*s/%s", slash ? (int)(slash - journal) : 1,
             slash ? journal : ".", spec);
    const char *p = access(spec, R_OK) == 0                       ? spec
                    : spec[0] != '/' && access(beside, R_OK) == 0 ? beside
                                                                  : NULL;
    ac_fsm_tables *t = p ? ac_cli_tables_from_spec(p) : NULL;
    if (t)
        fprintf(stderr, "agentc replay: the spec the journal names: %s\n", p);
    return t;
}

/* One journal replayed (under --spec, else under the agents it records): the exit status. */
static int replay_one(const char *path, const char *spec_path, int check)
{
    int rc;
    ac_fsm_tables *owned = NULL;
    if (spec_path && !(owned = ac_cli_tables_from_spec(spec_path)))
        return 3;
    /* each part under the agent that recorded it: spawn's, then each change's (--spec: that
     * spec and the header's params throughout) */
    replay_agents *ra = calloc(1, sizeof *ra);
    char *first = spec_path || !ra ? NULL : spawn_agent(path);
    ac_engine *start = first ? agent_engine(ra, first) : NULL;
    free(first);
    if (!spec_path && !start) /* a journal that records no agent: the spec its header names */
        owned = recorded_tables(path);
    char recorded_spec[512];
    ac_engine *e = NULL;
    if ((rc = replay_engine(path, owned, start != NULL, recorded_spec, sizeof recorded_spec, &e))) {
        if (ra)
            replay_agents_free(ra);
        free(ra);
        ac_spec_tables_free(owned);
        return rc;
    }
    ac_session *s = NULL;
    ac_replay_result res;
    int st = ac_session_replay_agents(start ? start : e, path, check ? AC_REPLAY_CHECK : 0,
                                      ra && !spec_path ? agent_engine : NULL, ra, &res, &s);
    ac_engine *last = s ? ac_session_engine(s) : start ? start : e;
    rc = replay_report(ac_engine_tables(last), st, &res, s, path, recorded_spec, check);
    ac_session_free(s);
    if (ra)
        replay_agents_free(ra);
    free(ra);
    ac_engine_free(e);
    ac_spec_tables_free(owned);
    return rc;
}

/* The child sessions the journal at path records (agent.started, docs/composition.md), each
 * replayed from its own journal beside it, and theirs: the worst exit status. */
static int replay_children(const char *path, int check, int depth)
{
    char err[512];
    ac_journal_reader *rd = ac_journal_reader_open(path, err, sizeof err);
    ac_journal_line l;
    int worst = 0, n = 0;
    const char *slash = strrchr(path, '/');
    while (rd && ac_journal_reader_next(rd, &l, err, sizeof err) > 0) {
        const char *j = json_string_value(json_object_get(l.data, "journal"));
        if (l.kind != AC_JOURNAL_EVENT || strcmp(l.event, AC_AGENT_STARTED) || !j)
            continue;
        if (strchr(j, '/')) { /* a child's journal is beside its parent's */
            fprintf(stderr, "agentc replay: %s: a child journal '%s' not beside it: skipped\n",
                    path, j);
            worst = worst > 1 ? worst : 1;
            continue;
        }
        char child[4096];
        snprintf(child, sizeof child, "%.*s%s%s", slash ? (int)(slash - path) : 0, path,
                 slash ? "/" : "", j);
        printf("\n%*schild %s (agent %s, call %s):\n", depth * 2, "",
               json_string_value(json_object_get(l.data, "session")),
               json_string_value(json_object_get(l.data, "agent")),
               json_string_value(json_object_get(l.data, "call")));
        fflush(stdout);
        int rc = replay_one(child, NULL, check);
        if (rc == 0 && depth < 32)
            rc = replay_children(child, check, depth + 1);
        worst = rc > worst ? rc : worst;
        n++;
    }
    ac_journal_reader_close(rd);
    if (n && check && worst == 0)
        printf("check: %d child session%s of %s match%s the recording\n", n, n == 1 ? "" : "s",
               path, n == 1 ? "es" : "");
    return worst;
}

int ac_cli_replay(int argc, char **argv)
{
    const char *path = NULL, *spec_path = NULL;
    int check = 0;
    int rc = replay_parse(argc, argv, &path, &spec_path, &check);
    if (rc)
        return rc < 0 ? 0 : rc;
    rc = replay_one(path, spec_path, check);
    if (rc == 0 && !spec_path) /* a sub-agent's journal under its own agent, not --spec */
        rc = replay_children(path, check, 0);
    return rc;
}
