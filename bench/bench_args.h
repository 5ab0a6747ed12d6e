/* bench_args.h - checked numeric arguments for the benchmark programs. */
#ifndef AGENTC_BENCH_ARGS_H
#define AGENTC_BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The decimal integer in s, within [lo, hi]; anything else ends the program
 * with a message naming the argument. */
static inline long bench_arg(const char *s, long lo, long hi, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "bad %s '%s': expected an integer from %ld to %ld\n", what, s, lo, hi);
        exit(2);
    }
    return v;
}

#endif
