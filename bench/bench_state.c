/*
 * bench_state.c - resolving State references in a call's arguments.
 *
 * A 1 MB State of 1,000 entries (about 1 KB each); a call whose arguments
 * hold 1,000 references, one per entry ("†state.kN.v"), against the same call
 * with the 1,000 values written out literally. Both are timed the way a call
 * goes: the argument text parsed, references resolved (ac_ref_resolve walks
 * the literal arguments too), the result dumped as the tool's input. The
 * tool gets the same bytes either way. Prints min/median/max per call over
 * the runs and the ratio of medians (reference / literal).
 *
 * make bench_state && ./bench_state [runs]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench_args.h"
#include "tools/stateref.h"

#define ENTRIES 1000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One call: parse, resolve, dump. Returns the dumped size (checked equal). */
static size_t one_call(const char *args_text, json_t *state)
{
    json_t *args = json_loads(args_text, 0, NULL), *out = NULL;
    char err[256];
    if (!args || ac_ref_resolve(args, state, NULL, &out, err, sizeof err) < 0) {
        fprintf(stderr, "resolve failed: %s\n", args ? err : "not JSON");
        exit(1);
    }
    char *text = json_dumps(out, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    free(text);
    json_decref(out);
    json_decref(args);
    return n;
}

static void measure(const char *label, const char *args, json_t *state, int runs, double *med,
                    size_t *bytes)
{
    double *t = malloc((size_t)runs * sizeof *t);
    if (!t)
        exit(1);
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        *bytes = one_call(args, state);
        t[r] = now() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp);
    *med = t[runs / 2];
    printf("  %-34s min %8.3f ms  median %8.3f ms  max %8.3f ms  (tool input %zu bytes)\n", label,
           t[0] * 1e3, *med * 1e3, t[runs - 1] * 1e3, *bytes);
    free(t);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? (int)bench_arg(argv[1], 3, 100000, "runs") : 30;
    json_t *state = json_object(), *literal = json_object(), *refs = json_object();
    char pad[1001];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    for (int i = 0; i < ENTRIES; i++) {
        char k[32], ref[64], arg[32];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(arg, sizeof arg, "a%d", i);
        snprintf(ref, sizeof ref, AC_REF_DAGGER "state.k%d.v", i);
        json_t *v = json_pack("{s:i, s:s}", "n", i, "text", pad);
        json_object_set_new(state, k, json_pack("{s:o}", "v", v));
        json_object_set(literal, arg, v);
        json_object_set_new(refs, arg, json_string(ref));
    }
    char *st = json_dumps(state, JSON_COMPACT);
    char *lit = json_dumps(literal, JSON_COMPACT), *ref = json_dumps(refs, JSON_COMPACT);
    printf("State %zu bytes, %d entries; arguments: literal %zu bytes, references %zu bytes; "
           "%d runs\n",
           strlen(st), ENTRIES, strlen(lit), strlen(ref), runs);
    double m_lit, m_ref;
    size_t b_lit, b_ref;
    measure("literal values (baseline)", lit, state, runs, &m_lit, &b_lit);
    measure("1,000 references resolved", ref, state, runs, &m_ref, &b_ref);
    if (b_lit != b_ref) {
        fprintf(stderr, "the tool inputs differ (%zu vs %zu bytes)\n", b_lit, b_ref);
        return 1;
    }
    printf("  ratio (references / literal, medians): %.2fx\n", m_ref / m_lit);
    free(st);
    free(lit);
    free(ref);
    json_decref(state);
    json_decref(literal);
    json_decref(refs);
    return 0;
}
