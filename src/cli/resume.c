/*
 * resume.c - `agentc resume ID [OPTIONS]`: run's options; the turn a crash
 * interrupted is finished.
 */
#include "cli.h"
#include "run_common.h"
#include "run_opts.h"

int ac_cli_resume(int argc, char **argv)
{
    run_opts o;
    int rc = ac_cli_parse_run(argc, argv, &o, 0);
    if (!rc) {
        o.session = o.prompt;
        o.resume = 1;
        rc = ac_cli_run_one(&o, 0);
    }
    ac_cli_run_opts_free(&o);
    return rc < 0 ? 0 : ac_cli_finish_output(rc);
}
