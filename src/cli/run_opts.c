/*
 * run_opts.c - the options of `agentc run`, `resume`, `demo` and `batch`:
 * the engine options (engine_opts.c) and the ones of running sessions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "run_opts.h"

static void batch_usage(FILE *out)
{
    fprintf(out,
            "usage: agentc batch FILE [OPTIONS]      (FILE - reads stdin)\n\n"
            "FILE holds one JSON object per line: {\"id\": ..., \"prompt\": \"...\"} (ids unique,\n"
            "optional: the line number). Every session runs on one event loop; each prints one\n"
            "JSON line on stdout, {\"id\", \"status\", \"answer\", \"iterations\", \"tool_calls\", "
            "\"usage\",\n"
            "\"error\", \"journal\"} (null when none), in the order the sessions finish\n"
            "(--ordered: input order).\n"
            "A failing session never stops the others. A progress bar goes to stderr when it\n"
            "is a terminal.\n\n"
            "  --concurrency N      sessions running at once (default 8)\n"
            "  --ordered            print results in input order\n"
            "  --journal-dir DIR    one journal per session, DIR/b<line>.journal\n"
            "  --db PATH|URI        store every session under its input id (agentc sessions;\n"
            "                       default: $AGENTC_DB, unless it is off)\n"
            "  --metrics FILE       write the metrics (Prometheus text) to FILE at the end\n"
            "  --no-store           store nothing (the default without --db and $AGENTC_DB)\n"
            "  and the options of agentc run (--provider, --base-url, --model, --api-key-env,\n"
            "  --header, --script, --script-delay-ms, --tools, --system, --spec, --prices,\n"
            "  --param, --on, --output-schema, --agents FILE --agent NAME, --agent-name, and the\n"
            "  model request settings --temperature, --top-p, --stop, --seed, --tool-choice,\n"
            "  --parallel-tool-calls, --reasoning-effort, --request-json)\n\n"
            "exit status: 0 all completed, 1 some failed, 2 bad usage, 3 bad configuration,\n"
            "130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (running sessions are cancelled\n"
            "and reported), 4 the output could not be written (141: a closed pipe)\n");
}

static void run_usage(FILE *out)
{
    fprintf(
        out,
        "usage: agentc run [OPTIONS] PROMPT      (PROMPT - reads stdin)\n\n"
        "  --provider openai|anthropic|script   (default openai)\n"
        "  --base-url URL       OpenAI-compatible: with /v1 (default $OPENAI_BASE_URL or\n"
        "                       https://api.openai.com/v1); Anthropic: https://api.anthropic.com\n"
        "  --model NAME         (default $AGENTC_MODEL)\n"
        "  --api-key-env NAME   read the API key from $NAME (default OPENAI_API_KEY or\n"
        "                       ANTHROPIC_API_KEY)\n"
        "  --header 'N: V'      extra HTTP header (repeatable)\n"
        "  --script FILE        turns for --provider script (JSON Lines)\n"
        "  --script-delay-ms N  --provider script: wait N ms between streamed deltas\n"
        "  --tools FILE|builtin:calculator|builtin:clock|builtin:context   (repeatable;\n"
        "                       builtin:context: tools that change the agent's own context)\n"
        "  --system TEXT | --system @FILE\n"
        "  --spec FILE          run an edited spec without rebuilding\n"
        "  --prices FILE        the models' prices: usage.cost_usd (docs/observability.md)\n"
        "  --param NAME=VALUE   override a spec param (repeatable)\n"
        "  --agents FILE --agent NAME   run the agent NAME of an agents file (docs/agents.md);\n"
        "                       options given change its keys where it lets them\n"
        "  --agent-name NAME    the name of the agent the options describe (default: default)\n"
        "  --on STATE=EVENT     when the session waits in STATE for an outside event, send\n"
        "                       EVENT (repeatable; without it a terminal is asked, call by\n"
        "                       call for an event that carries decisions: approve, deny,\n"
        "                       edit or all)\n"
        "  --post-at STATE=EVENT[:PAYLOAD]   post EVENT once, when the session first enters\n"
        "                       STATE (MACHINE.STATE when several machines have one), right\n"
        "                       after the event that entered it (repeatable; for tests and\n"
        "                       audits: a pause, a queued message, an outside event at a given\n"
        "                       point; PAYLOAD: JSON, or a text sent as {\"text\": PAYLOAD});\n"
        "                       the run then goes on until the session is at rest\n"
        "  --journal FILE       record every event (replay with agentc replay)\n"
        "  --session ID         create or continue the stored session ID\n"
        "  --db PATH|URI        the store, an SQLite file or postgresql://... (default:\n"
        "                       $AGENTC_DB, else $XDG_STATE_HOME/agentc/sessions.db)\n"
        "  --no-store           no store: the session is kept nowhere\n"
        "  --trace              print every transition to stderr\n"
        "  --jsonl              one JSON object per line on stdout\n"
        "  --output-schema FILE the answer must be JSON matching this JSON Schema; a refused\n"
        "                       answer goes back to the model (param output_retries)\n\n"
        "model request settings (README: what each provider receives):\n"
        "  --temperature T      0..2 (Anthropic 0..1)\n"
        "  --top-p P            0..1\n"
        "  --stop TEXT          stop sequence (repeatable)\n"
        "  --seed N             OpenAI only\n"
        "  --tool-choice auto|none|required|NAME\n"
        "  --parallel-tool-calls true|false\n"
        "  --reasoning-effort none|minimal|low|medium|high|xhigh   OpenAI only\n"
        "  --request-json '{...}'   merged into the request body last (not messages,\n"
        "                       tools, stream, stream_options or system)\n\n"
        "exit status: 0 completed, 1 the agent failed, 2 bad usage, 3 bad configuration,\n"
        "130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (the session is cancelled: tools\n"
        "killed, journal kept; with --session only the turn is, the session kept; a second\n"
        "signal exits at once), 4 the output could not be written (141: a closed pipe;\n"
        "either way the session is cancelled)\n");
}

static void resume_usage(FILE *out)
{
    fprintf(out,
            "usage: agentc resume ID [OPTIONS]\n\n"
            "Finishes the turn of the stored session ID that a crash stopped mid-turn (agentc\n"
            "sessions list shows it as stopped): a model call in flight is issued again, a tool\n"
            "call with a recorded result is never run again. OPTIONS are those of agentc run\n"
            "(agentc run --help), without PROMPT; --db PATH names the store.\n\n"
            "exit status: as agentc run's; 1 also when the session is unknown or in use\n");
}

/* A run option that is not an engine option: 1 when argv[*i] is one (*i
 * moves past its value), 0 when it is not, or -(exit status). */
static int run_flag(int argc, char **argv, int *i, run_opts *o, int batch)
{
    const char *a = argv[*i];
    /* batch: no --trace, --jsonl or --journal (its output is JSON lines, its journals
     * --journal-dir's); --no-store is its default without --db */
    int *flags[] = {batch ? NULL : &o->trace, &o->no_store, batch ? NULL : &o->jsonl,
                    batch ? &o->ordered : NULL};
    const char *const flag_names[] = {"--trace", "--no-store", "--jsonl", "--ordered"};
    for (size_t k = 0; k < 4; k++)
        if (flags[k] && !strcmp(a, flag_names[k])) {
            *flags[k] = 1;
            return 1;
        }
    const char **slot = NULL;
    const char *const names[] = {batch ? NULL : "--journal",
                                 "--db",
                                 batch ? "--journal-dir" : "--session",
                                 "--agents",
                                 "--agent",
                                 "--agent-name",
                                 batch ? "--metrics" : NULL};
    const char **slots[] = {&o->journal,     &o->db,    batch ? &o->journal_dir : &o->session,
                            &o->agents_file, &o->agent, &o->agent_name,
                            &o->metrics_file};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (names[k] && !strcmp(a, names[k]))
            slot = slots[k];
    int on = !strcmp(a, "--on"), post_at = !batch && !strcmp(a, "--post-at");
    int conc = batch && !strcmp(a, "--concurrency");
    int delay = !strcmp(a, "--script-delay-ms");
    if (!slot && !on && !post_at && !conc && !delay)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "agentc: %s needs a value\n", a);
        return -AC_EXIT_USAGE;
    }
    const char *v = argv[++*i];
    if (slot) {
        *slot = v;
    } else if (on) {
        if (o->n_on < AC_CLI_MAX_ON)
            o->on[o->n_on++] = v;
    } else if (post_at) {
        if (o->n_post_at >= AC_CLI_MAX_ON) {
            fprintf(stderr, "agentc: --post-at: at most %d\n", AC_CLI_MAX_ON);
            return -AC_EXIT_USAGE;
        }
        o->post_at[o->n_post_at++] = v;
    } else {
        char *end;
        long lo = conc ? 1 : 0, hi = conc ? 10000 : 100000000;
        long n = strtol(v, &end, 10);
        if (!*v || *end || n < lo || n > hi) {
            fprintf(stderr, "agentc: %s must be %ld..%ld\n", a, lo, hi);
            return -AC_EXIT_USAGE;
        }
        *(conc ? &o->concurrency : &o->eng.script_delay_ms) = (int)n;
    }
    return 1;
}

/* A store is needed for a stored session, and refused when turned off:
 * 0, or an exit status after saying why. */
static int check_store(const run_opts *o, const char *cmd)
{
    const char *env = getenv("AGENTC_DB");
    const char *sess = !strcmp(cmd, "resume") ? "a stored session" : "--session ID";
    if ((o->session || !strcmp(cmd, "resume")) && o->no_store) {
        fprintf(stderr, "agentc %s: %s needs the store, which --no-store turns off (drop %s)\n",
                cmd, sess,
                o->session ? "--no-store, or --session for a session kept nowhere" : "--no-store");
        return AC_EXIT_USAGE;
    }
    if ((o->session || !strcmp(cmd, "resume")) && !o->db && env && !strcmp(env, "off")) {
        fprintf(stderr,
                "agentc %s: %s needs the store, which AGENTC_DB=off turns off "
                "(give --db PATH)\n",
                cmd, sess);
        return AC_EXIT_USAGE;
    }
    return 0;
}

/* --agents, --agent and --agent-name. 0, or an exit status after printing why. */
static int parse_agent(run_opts *o)
{
    if (o->agent && !o->agents_file) {
        fprintf(stderr, "agentc: --agent NAME picks an agent of --agents FILE\n");
        return AC_EXIT_USAGE;
    }
    if (o->agent && o->agent_name) {
        fprintf(stderr, "agentc: --agent-name names the agent the options describe; with "
                        "--agent NAME the agent is NAME\n");
        return AC_EXIT_USAGE;
    }
    if (!o->agents_file)
        return 0;
    if (!o->agent) {
        fprintf(stderr, "agentc: --agents FILE needs --agent NAME\n");
        return AC_EXIT_USAGE;
    }
    o->agent_name = o->agent;
    return ac_cli_select_agent(o->agents_file, o->agent, &o->eng, &o->agents, &o->agent_hold,
                               "agentc");
}

int ac_cli_parse_run(int argc, char **argv, run_opts *o, int batch)
{
    memset(o, 0, sizeof *o);
    o->concurrency = 8;
    const char *cmd = batch ? "batch" : argc && !strcmp(argv[0], "resume") ? "resume" : "run";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            (batch ? batch_usage : !strcmp(cmd, "resume") ? resume_usage : run_usage)(stdout);
            return -1;
        }
        int r = run_flag(argc, argv, &i, o, batch);
        if (!r)
            r = ac_cli_engine_flag(argc, argv, &i, &o->eng, "agentc");
        if (!r)
            r = ac_cli_request_flag(argc, argv, &i, &o->eng);
        if (r < 0)
            return -r;
        if (r)
            continue;
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc: unknown option '%s' (see agentc %s --help)\n", a, cmd);
            return AC_EXIT_USAGE;
        }
        const char *what = batch ? "FILE" : !strcmp(cmd, "resume") ? "ID" : "PROMPT";
        if (o->prompt) {
            fprintf(stderr, "agentc %s: one %s only%s\n", cmd, what,
                    strcmp(what, "PROMPT") ? "" : " (quote it)");
            return AC_EXIT_USAGE;
        }
        o->prompt = a;
    }
    if (!o->prompt) {
        fprintf(stderr, "agentc %s: missing %s (see agentc %s --help)\n", cmd,
                batch                    ? "FILE"
                : !strcmp(cmd, "resume") ? "ID"
                                         : "PROMPT",
                cmd);
        return AC_EXIT_USAGE;
    }
    if (check_store(o, cmd))
        return AC_EXIT_USAGE;
    const char *p = o->eng.provider;
    if (p && strcmp(p, "openai") && strcmp(p, "anthropic") && strcmp(p, "script")) {
        fprintf(stderr, "agentc: unknown provider '%s' (openai, anthropic, script)\n", p);
        return AC_EXIT_USAGE;
    }
    return parse_agent(o);
}

void ac_cli_run_opts_free(run_opts *o)
{
    ac_cli_agent_hold_free(&o->agent_hold);
    ac_cli_agents_free(o->agents);
    o->agents = NULL;
}

int ac_cli_select_agent(const char *file, const char *name, ac_cli_engine_opts *eng,
                        ac_cli_agents **agents, ac_cli_agent_hold *hold, const char *cmd)
{
    char err[1024];
    if (!(*agents = ac_cli_agents_load(file, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return AC_EXIT_CONFIG;
    }
    const char *json = ac_cli_agents_find(*agents, name);
    if (!json) {
        ac_cli_agents_unknown(*agents, name, err, sizeof err);
        fprintf(stderr, "%s: %s\n", cmd, err);
        return AC_EXIT_USAGE;
    }
    ac_cli_engine_opts given = *eng;
    if (ac_cli_agent_opts(json, ac_cli_agents_dir(*agents), hold, eng, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return AC_EXIT_CONFIG;
    }
    if (ac_cli_agent_check_overrides(hold, &given, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", cmd, err);
        return AC_EXIT_USAGE;
    }
    ac_cli_engine_opts_overlay(eng, &given);
    return 0;
}
