/*
 * main.c - the agentc command: spec tools (check, gen, diagram), running
 * agents (run, demo, batch) and auditing them (replay).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent_fsm.h"
#include "cli.h"
#include "session/contracts.h"

static void usage(FILE *out)
{
    fprintf(
        out,
        "agentc %s - an LLM agent engine whose behaviour is a compiled spec\n\n"
        "usage: agentc COMMAND [OPTIONS]\n\n"
        "commands:\n"
        "  demo                       run the offline demo agent (no network, no keys)\n"
        "  run [OPTIONS] PROMPT       run an agent on one prompt (PROMPT - reads stdin)\n"
        "  batch FILE [OPTIONS]       run many prompts (JSON Lines) on one event loop\n"
        "  serve [OPTIONS]            serve sessions over HTTP (API, SSE, audit page)\n"
        "  replay JOURNAL [--check]   rebuild a session from its journal, no I/O\n"
        "  resume ID [OPTIONS]        finish the turn of a stored session a crash stopped\n"
        "  sessions list|show|close|rm|prune|export|fork\n"
        "                             the stored sessions (agentc sessions --help)\n"
        "  coverage SPEC JOURNAL…     the transitions recorded sessions took (--db: stored)\n"
        "  testgen SPEC --run         generate and run scenarios that take its transitions\n"
        "  store copy FROM TO         copy stored sessions between SQLite and PostgreSQL\n"
        "  check SPEC                 check a spec; errors as FILE:LINE:COL: MESSAGE\n"
        "  gen SPEC -o DIR            generate C transition tables from a spec\n"
        "  diagram SPEC [--format dot|mermaid|markdown|svg] [--journal J]…\n"
        "                             draw a spec, optionally with sessions' paths\n"
        "  check --tools FILE [--start]  check a tool file; prove every toolkit tool reachable;\n"
        "                             --start: start its MCP servers, name those that cannot\n"
        "  diagram --tools FILE       draw a tool file's toolkit states (DOT)\n\n"
        "  agentc COMMAND --help      options of a command\n"
        "  agentc --version\n",
        AGENTC_VERSION);
}

/* Every command's output is checked once more as it is closed: a write
 * error (a full disk, say) is an error, never a silent exit 0. */
static int close_stdout(int rc)
{
    int bad = ferror(stdout);
    errno = 0;
    if ((fclose(stdout) != 0 || bad) && rc == 0) {
        fprintf(stderr, "agentc: cannot write the output: %s\n", strerror(errno ? errno : EIO));
        return AC_EXIT_OUTPUT;
    }
    return rc;
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv)
{
    return close_stdout(dispatch(argc, argv));
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return AC_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("agentc %s (spec %s, hash %s)\n", AGENTC_VERSION, agent_fsm.spec_path,
               agent_fsm.hash);
        return 0;
    }
    if ((!strcmp(cmd, "check") || !strcmp(cmd, "diagram")) &&
        ac_cli_has_tools_arg(argc - 1, argv + 1))
        return !strcmp(cmd, "check") ? ac_cli_tools_check(argc - 1, argv + 1)
                                     : ac_cli_tools_diagram(argc - 1, argv + 1); /* tools_cmd.c */
    if (!strcmp(cmd, "check"))
        return ac_cli_check(argc - 1, argv + 1, &ac_builtin_cli_handlers);
    if (!strcmp(cmd, "gen"))
        return ac_cli_gen(argc - 1, argv + 1, &ac_builtin_cli_handlers);
    if (!strcmp(cmd, "diagram"))
        return ac_cli_diagram(argc - 1, argv + 1, ac_journal_coverage, &ac_builtin_cli_handlers);
    if (!strcmp(cmd, "run"))
        return ac_cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "resume"))
        return ac_cli_resume(argc - 1, argv + 1);
    if (!strcmp(cmd, "sessions"))
        return ac_cli_sessions(argc - 1, argv + 1);
    if (!strcmp(cmd, "store"))
        return ac_cli_store(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo"))
        return ac_cli_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "coverage"))
        return ac_cli_coverage(argc - 1, argv + 1);
    if (!strcmp(cmd, "testgen"))
        return ac_cli_testgen(argc - 1, argv + 1);
    if (!strcmp(cmd, "replay"))
        return ac_cli_replay(argc - 1, argv + 1);
    if (!strcmp(cmd, "batch"))
        return ac_cli_batch(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
        return ac_cli_serve(argc - 1, argv + 1);
    fprintf(stderr, "agentc: unknown command '%s' (see agentc --help)\n", cmd);
    return AC_EXIT_USAGE;
}
