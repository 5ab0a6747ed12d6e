/*
 * test_store_where.h - where a store test keeps its store: an SQLite file NAME in the test's
 * scratch folder (test_tmpdir.h), or, when AGENTC_TEST_PG names a PostgreSQL URI, a schema of
 * its own in that database (NAME's letters and digits, the process id and the time: each run
 * starts empty). Include after test_tmpdir.h.
 */
#ifndef AGENTC_TEST_STORE_WHERE_H
#define AGENTC_TEST_STORE_WHERE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* True when the tests run against PostgreSQL. */
static inline int test_store_pg(void)
{
    const char *pg = getenv("AGENTC_TEST_PG");
    return pg && *pg;
}

/* The store named NAME, into buf. */
static inline void test_store_where(char *buf, size_t cap, const char *name)
{
    if (!test_store_pg()) {
        snprintf(buf, cap, "%s/%s", tmpdir, name);
        return;
    }
    const char *pg = getenv("AGENTC_TEST_PG");
    char schema[64];
    size_t k = 0;
    for (const char *p = name; *p && *p != '.' && k < 24; p++)
        if (isalnum((unsigned char)*p))
            schema[k++] = (char)tolower((unsigned char)*p);
    schema[k] = 0;
    snprintf(buf, cap, "%s%sschema=t_%s_%ld_%ld", pg, strchr(pg, '?') ? "&" : "?", schema,
             (long)getpid(), (long)time(NULL));
}

#endif
