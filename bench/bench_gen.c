/*
 * bench_gen.c - how fast the spec compiler is on a large spec.
 *
 * Builds a synthetic spec of 1,000 states and 10,000 transitions (guards,
 * actions, effects with params, '*' rows), then measures in process, best
 * of N runs: parse, check, lower, and emitting the C header and source.
 * As a baseline measured in the same run on the same machine it times
 * `cc -fsyntax-only` on the generated C, and prints check+gen as a ratio
 * of that baseline (a ratio well below 1 means generating the tables costs
 * less than the C compiler merely parsing them).
 *
 * usage: bench_gen [-n RUNS] [-s STATES] [-t TRANSITIONS_PER_STATE] [-k]
 *   -k keeps the generated files in the temporary directory it prints.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "spec.h"

#ifndef AGENTC_BENCH_CC
#define AGENTC_BENCH_CC "cc"
#endif
#ifndef AGENTC_BENCH_INCLUDE
#define AGENTC_BENCH_INCLUDE "include"
#endif

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static int sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_add(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1 << 16;
        while (cap < b->n + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { N_EVENTS = 200, N_GUARDS = 40, N_ACTIONS = 60, N_EFFECTS = 8, N_PARAMS = 8 };

/* A valid spec: S0 .. S{n-1} in a ring of forward edges, each state with
 * `per` transitions on distinct events (some guarded, with actions), the
 * last of them to DONE; every tenth state has a body. The `*` rows give
 * every state a way to FAILED and an internal ping. */
static int make_spec(sbuf *b, int n_states, int per)
{
    int rc = 0;
    rc |= sb_add(b, "# synthetic spec: %d states, %d transitions per state\n", n_states, per);
    for (int i = 0; i < N_PARAMS; i++)
        rc |= sb_add(b, "param p%d = %d%s\n", i, 100 + i, i % 2 ? "ms" : "");
    for (int i = 0; i < N_EVENTS; i++)
        rc |= sb_add(b, "event ev%d\n", i);
    rc |= sb_add(b, "event finish, abort, ping\n");
    for (int i = 0; i < N_GUARDS; i++)
        rc |= sb_add(b, "guard g%d\n", i);
    for (int i = 0; i < N_ACTIONS; i++)
        rc |= sb_add(b, "action a%d\n", i);
    for (int i = 0; i < N_EFFECTS; i++)
        rc |= sb_add(b, "effect f%d\n", i);
    rc |= sb_add(b, "machine big {\n    initial S0\n    terminal DONE, FAILED\n");
    for (int s = 0; s < n_states; s++) {
        if (s % 10 == 0)
            rc |= sb_add(b, "    state S%d { enter a%d  exit a%d  effect f%d(p%d, p%d), f%d }\n", s,
                         s % N_ACTIONS, (s + 1) % N_ACTIONS, s % N_EFFECTS, s % N_PARAMS,
                         (s + 3) % N_PARAMS, (s + 1) % N_EFFECTS);
        else
            rc |= sb_add(b, "    state S%d\n", s);
    }
    /* two '*' rules expand to two rows per state: count them in `per` */
    int own = per - 2;
    for (int s = 0; s < n_states; s++) {
        for (int j = 0; j < own - 1; j++) {
            int ev = (s * 7 + j) % N_EVENTS;
            int to = (s + 1 + j) % n_states;
            if (j % 3 == 0)
                rc |= sb_add(b, "    S%d -> S%d on ev%d [g%d && !g%d || g%d] / a%d, a%d\n", s, to,
                             ev, j % N_GUARDS, (s + j) % N_GUARDS, (s * 3) % N_GUARDS,
                             (s + j) % N_ACTIONS, j % N_ACTIONS);
            else if (j % 3 == 1)
                rc |= sb_add(b, "    S%d on ev%d / a%d\n", s, ev, (s * 5 + j) % N_ACTIONS);
            else
                rc |= sb_add(b, "    S%d -> S%d on ev%d\n", s, to, ev);
        }
        rc |= sb_add(b, "    S%d -> DONE on finish [g%d] / a%d\n", s, s % N_GUARDS, s % N_ACTIONS);
    }
    rc |= sb_add(b, "    * -> FAILED on abort\n    * on ping / a0\n}\n");
    return rc;
}

typedef struct timing {
    double parse, check, lower, emit, total;
} timing;

/* One full check + gen in memory; the C text goes to `hdr` and `src`. */
static int run_once(const sbuf *spec_text, timing *tm, char **hdr, size_t *hlen, char **src,
                    size_t *slen)
{
    double t0 = now();
    ac_spec *spec = ac_spec_parse("bench/big.fsm", spec_text->p, spec_text->n);
    double t1 = now();
    if (!spec || spec->n_errors) {
        if (spec)
            ac_spec_print_diags(spec, stderr);
        ac_spec_free(spec);
        return -1;
    }
    ac_spec_check(spec);
    double t2 = now();
    if (spec->n_errors) {
        ac_spec_print_diags(spec, stderr);
        ac_spec_free(spec);
        return -1;
    }
    ac_fsm_tables *t = ac_spec_lower(spec, "bench/big.fsm");
    double t3 = now();
    FILE *h = open_memstream(hdr, hlen);
    FILE *c = open_memstream(src, slen);
    int rc = !t || !h || !c || ac_emit_c_header(t, "big", h) || ac_emit_c_source(t, "big", c);
    if (h)
        fclose(h);
    if (c)
        fclose(c);
    double t4 = now();
    ac_spec_tables_free(t);
    ac_spec_free(spec);
    tm->parse = t1 - t0;
    tm->check = t2 - t1;
    tm->lower = t3 - t2;
    tm->emit = t4 - t3;
    tm->total = t4 - t0;
    return rc ? -1 : 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

/* Wall time of `cc -fsyntax-only` on the generated source, or < 0. */
static double time_cc(const char *dir)
{
    char src[512], inc[512];
    snprintf(src, sizeof src, "%s/big_fsm.c", dir);
    snprintf(inc, sizeof inc, "-I%s", dir);
    double t0 = now();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp(AGENTC_BENCH_CC, AGENTC_BENCH_CC, "-std=c11", "-fsyntax-only",
               "-I" AGENTC_BENCH_INCLUDE, inc, src, (char *)NULL);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -1;
    return now() - t0;
}

int main(int argc, char **argv)
{
    int runs = 5, n_states = 1000, per = 10, keep = 0;
    int opt;
    while ((opt = getopt(argc, argv, "n:s:t:k")) != -1) {
        switch (opt) {
        case 'n':
            runs = (int)bench_arg(optarg, 1, 1000, "-n RUNS");
            break;
        case 's':
            n_states = (int)bench_arg(optarg, 2, 60000, "-s STATES");
            break;
        case 't':
            per = (int)bench_arg(optarg, 1, 1000, "-t PER_STATE");
            break;
        case 'k':
            keep = 1;
            break;
        default:
            fprintf(stderr, "usage: bench_gen [-n RUNS] [-s STATES] [-t PER_STATE] [-k]\n");
            return 2;
        }
    }
    if (runs < 1 || n_states < 2 || per < 4) {
        fprintf(stderr, "bench_gen: need RUNS >= 1, STATES >= 2, PER_STATE >= 4\n");
        return 2;
    }
    sbuf spec = {0};
    if (make_spec(&spec, n_states, per) != 0) {
        fprintf(stderr, "bench_gen: out of memory\n");
        return 1;
    }

    timing best = {1e9, 1e9, 1e9, 1e9, 1e9};
    char *hdr = NULL, *src = NULL;
    size_t hlen = 0, slen = 0;
    for (int r = 0; r < runs; r++) {
        timing tm;
        free(hdr);
        free(src);
        hdr = src = NULL;
        if (run_once(&spec, &tm, &hdr, &hlen, &src, &slen) != 0) {
            fprintf(stderr, "bench_gen: the synthetic spec did not compile\n");
            return 1;
        }
        if (tm.total < best.total)
            best = tm;
    }

    char dir[] = "/tmp/agentc-bench-gen-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_gen: mkdtemp");
        return 1;
    }
    char hpath[600], cpath[600], spath[600];
    snprintf(hpath, sizeof hpath, "%s/big_fsm.h", dir);
    snprintf(cpath, sizeof cpath, "%s/big_fsm.c", dir);
    snprintf(spath, sizeof spath, "%s/big.fsm", dir);
    if (write_file(hpath, hdr, hlen) || write_file(cpath, src, slen) ||
        write_file(spath, spec.p, spec.n)) {
        fprintf(stderr, "bench_gen: cannot write to %s\n", dir);
        return 1;
    }
    double cc = 1e9;
    for (int r = 0; r < (runs < 3 ? runs : 3); r++) {
        double t = time_cc(dir);
        if (t < 0) {
            fprintf(stderr, "bench_gen: %s -fsyntax-only failed on %s\n", AGENTC_BENCH_CC, cpath);
            return 1;
        }
        if (t < cc)
            cc = t;
    }

    size_t lines = 0;
    for (size_t i = 0; i < spec.n; i++)
        lines += spec.p[i] == '\n';
    printf("spec: %d states, %d transitions per state (%zu lines, %zu bytes)\n", n_states, per,
           lines, spec.n);
    printf("generated C: %zu bytes header, %zu bytes source\n", hlen, slen);
    printf("check+gen in process, best of %d: %.1f ms\n", runs, best.total * 1e3);
    printf("  parse %.1f ms, check %.1f ms, lower %.1f ms, emit C %.1f ms\n", best.parse * 1e3,
           best.check * 1e3, best.lower * 1e3, best.emit * 1e3);
    printf("baseline: %s -fsyntax-only on the generated C: %.1f ms\n", AGENTC_BENCH_CC, cc * 1e3);
    printf("ratio check+gen / cc -fsyntax-only: %.3f\n", best.total / cc);
    printf("target check+gen under 1 s: %s\n", best.total < 1.0 ? "met" : "NOT met");

    if (keep) {
        printf("files kept in %s\n", dir);
    } else {
        unlink(hpath);
        unlink(cpath);
        unlink(spath);
        rmdir(dir);
    }
    free(hdr);
    free(src);
    free(spec.p);
    return 0;
}
