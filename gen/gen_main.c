/*
 * gen_main.c - agentc-gen, the bootstrap generator: the spec subcommands
 * of agentc without the runtime, used by the build to generate the
 * engine's tables before the engine exists.
 */
#include <stdio.h>
#include <string.h>

#include "gen_cli.h"

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("usage: agentc-gen check|gen|diagram ... (see agentc --help)\n");
        return argc < 2 ? AC_EXIT_USAGE : AC_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("agentc-gen %s\n", AGENTC_VERSION_STRING);
        return AC_EXIT_OK;
    }
    if (strcmp(argv[1], "check") == 0)
        return ac_cli_check(argc - 1, argv + 1, NULL);
    if (strcmp(argv[1], "gen") == 0)
        return ac_cli_gen(argc - 1, argv + 1, NULL);
    if (strcmp(argv[1], "diagram") == 0)
        return ac_cli_diagram(argc - 1, argv + 1, NULL, NULL);
    fprintf(stderr, "agentc-gen: unknown command '%s'\n", argv[1]);
    return AC_EXIT_USAGE;
}
