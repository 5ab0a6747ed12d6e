/*
 * demo.c - `agentc demo`: an agent run offline, a scripted model that calls
 * the built-in calculator through the full spec, with a short trace.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "run_common.h"
#include "run_opts.h"

static const char demo_script[] =
    "{\"reasoning\": \"The user wants 17 * 23 and then that plus 19. I will use the calculator "
    "for both.\", \"content\": \"Let me work that out.\", \"tool_calls\": [{\"id\": \"call_1\", "
    "\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"17 * 23\\\"}\"}], "
    "\"usage\": {\"input\": 120, \"output\": 32}}\n"
    "{\"content\": \"\", \"tool_calls\": [{\"id\": \"call_2\", \"name\": \"calculator\", "
    "\"arguments\": \"{\\\"expression\\\": \\\"391 + 19\\\"}\"}], \"usage\": {\"input\": 170, "
    "\"output\": 20}}\n"
    "{\"content\": \"17 x 23 = 391, and 391 + 19 = 410. Both results come from the calculator "
    "tool, run through the same spec-driven loop a real model would use.\", \"usage\": "
    "{\"input\": 210, \"output\": 40}}\n";

int ac_cli_demo(int argc, char **argv)
{
    const char *journal = "agentc-demo.journal";
    int jsonl = 0, trace = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: agentc demo [--journal FILE] [--jsonl] [--no-trace]\n\n"
                   "Runs an agent offline: a scripted model that calls the built-in calculator\n"
                   "tool through the full spec, streaming its answer, with a short trace.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--journal") && i + 1 >= argc) {
            fprintf(stderr, "agentc demo: --journal needs a value\n");
            return AC_EXIT_USAGE;
        }
        if (!strcmp(argv[i], "--journal"))
            journal = argv[++i];
        else if (!strcmp(argv[i], "--jsonl"))
            jsonl = 1;
        else if (!strcmp(argv[i], "--no-trace"))
            trace = 0;
        else {
            fprintf(stderr, "agentc demo: unknown option '%s'\n", argv[i]);
            return AC_EXIT_USAGE;
        }
    }
    run_opts o;
    memset(&o, 0, sizeof o);
    o.eng.provider = "script";
    o.eng.tools[o.eng.n_tools++] = "builtin:calculator";
    o.eng.script_text = demo_script;
    o.eng.script_delay_ms = isatty(1) ? 25 : 0;
    o.eng.system = "You are a careful assistant. Use the calculator for arithmetic.";
    o.journal = journal;
    o.trace = trace;
    o.jsonl = jsonl;
    o.prompt = "What is 17 * 23, plus 19?";
    if (!jsonl)
        fprintf(stderr, "agentc demo: offline, scripted model, real tool path, spec %s\n\n> %s\n\n",
                "spec/agent.fsm", o.prompt);
    return ac_cli_finish_output(ac_cli_run_one(&o, 1));
}
