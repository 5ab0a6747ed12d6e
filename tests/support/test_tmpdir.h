/*
 * test_tmpdir.h - a test program's scratch folder: made under /tmp by its group setup
 * (test_tmpdir_make), removed with all it holds by its group teardown (test_tmpdir_teardown,
 * a cmocka group teardown as it is). Include once, in the test program's one file.
 */
#ifndef AGENTC_TEST_TMPDIR_H
#define AGENTC_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char tmpdir[256];

/* Makes /tmp/NAME_XXXXXX into tmpdir: tmpdir, or NULL when it cannot be made. */
static inline char *test_tmpdir_make(const char *name)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/%s_XXXXXX", name);
    return mkdtemp(tmpdir);
}

static inline int test_tmpdir_teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
