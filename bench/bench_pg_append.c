/* bench_pg_append.c - journal events appended per second from one process by group commits
 * on the loop (the store interface's commit_start, as the sessions' writer commits them), on
 * two stores in one run, alternated: typically PostgreSQL (a URI) and SQLite (a file).
 *
 * Each group commit carries SESSIONS sessions' parts of PER events each (an llm.delta of
 * about 60 bytes with its steps, as a streaming session journals them); the next group is
 * started when the one before is done (the loop turns meanwhile). Events/s = EVENTS / wall
 * time. Prints min / median / max over REPS runs of each store and of the ratio A / B, and
 * RESULT lines for scripts.
 *
 *   bench_pg_append STORE_A STORE_B [EVENTS [SESSIONS [PER [REPS]]]]
 *   defaults 100000, 8, 64, 5; each run starts on fresh sessions */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "bench_args.h"
#include "io/loop.h"
#include "store/store_int.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(const char *name, double *v, int n, const char *unit)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("  %-30s min %12.1f  med %12.1f  max %12.1f %s\n", name, v[0], v[n / 2], v[n - 1], unit);
    printf("RESULT %s %.2f %.2f %.2f\n", name, v[0], v[n / 2], v[n - 1]);
}

typedef struct run {
    ac_store *st;
    ac_loop *loop;
    int sessions, per;
    long total, done_events;
    uint64_t *next; /* each session's next event number */
    char (*ids)[32];
    ac_store_commit *c;
    ac_store_event *evs;
    int *rcs, rc, busy, failed;
    ac_error *errs;
} run;

static const char DATA[] = "{\"kind\":\"text\",\"text\":\"a streamed piece of the answer, 40 b\"}";
static const char STEPS[] = "[[\"process\",\"STREAMING\",\"llm.delta\",\"STREAMING\",141,\"\","
                            "[\"append_delta\"]]]";

static void start(run *r);

static void done(void *ud)
{
    run *r = ud;
    r->busy = 0;
    for (int i = 0; i < r->sessions; i++)
        if (r->rcs[i] != AC_OK && !r->failed) {
            fprintf(stderr, "bench_pg_append: %s\n", r->errs[i].text);
            r->failed = 1;
        }
    r->done_events += (long)r->sessions * r->per;
}

static void start(run *r)
{
    for (int i = 0; i < r->sessions; i++) {
        ac_store_event *e = &r->evs[(size_t)i * (size_t)r->per];
        for (int k = 0; k < r->per; k++)
            e[k] = (ac_store_event){r->next[i]++, 1795000000000, "llm.delta", DATA, STEPS};
        ac_store_commit *c = &r->c[i];
        memset(c, 0, sizeof *c);
        c->id = r->ids[i];
        c->holder = r->st->holder;
        c->attempt = 1; /* its creator's taking of the lease (the fence of its writes) */
        c->lease_ms = 60000;
        c->evs = e;
        c->n_evs = (size_t)r->per;
        c->status = "running";
    }
    r->busy = 1;
    r->st->ops->commit_start(r->st, r->loop, r->c, (size_t)r->sessions, r->rcs, r->errs, &r->rc,
                             done, r);
}

/* One run on the store at path: events per second. */
static double one(const char *path, int rep, long total, int sessions, int per, ac_loop *loop)
{
    ac_error err;
    ac_store *st = ac_store_open(path, NULL, &err);
    if (!st) {
        fprintf(stderr, "bench_pg_append: %s\n", err.text);
        exit(1);
    }
    run r = {st,
             loop,
             sessions,
             per,
             total,
             0,
             calloc((size_t)sessions, sizeof(uint64_t)),
             calloc((size_t)sessions, 32),
             calloc((size_t)sessions, sizeof(ac_store_commit)),
             calloc((size_t)sessions * (size_t)per, sizeof(ac_store_event)),
             calloc((size_t)sessions, sizeof(int)),
             0,
             0,
             0,
             calloc((size_t)sessions, sizeof(ac_error))};
    for (int i = 0; i < sessions; i++) {
        snprintf(r.ids[i], 32, "bench-%d-%d-%d", (int)getpid(), rep, i);
        r.next[i] = 1;
        if (st->ops->create(st, r.ids[i], "h", NULL, st->holder, 60000, &err) != AC_OK) {
            fprintf(stderr, "bench_pg_append: %s\n", err.text);
            exit(1);
        }
    }
    double t0 = now_us();
    while (!r.failed && r.done_events < total) {
        start(&r);
        for (int i = 0; r.busy && i < 100000; i++) /* the socket watched, done a loop task */
            ac_loop_run_once(loop, 100);
        if (r.busy) {
            fprintf(stderr, "bench_pg_append: a commit took more than 10 s\n");
            exit(1);
        }
    }
    double us = now_us() - t0;
    ac_store_close(st);
    free(r.next), free(r.ids), free(r.c), free(r.evs), free(r.rcs), free(r.errs);
    if (r.failed)
        exit(1);
    return (double)r.done_events / (us / 1e6);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: bench_pg_append STORE_A STORE_B [EVENTS [SESSIONS [PER [REPS]]]]\n");
        return 2;
    }
    long total = argc > 3 ? bench_arg(argv[3], 1000, 100000000, "EVENTS") : 100000;
    int sessions = argc > 4 ? (int)bench_arg(argv[4], 1, 1000, "SESSIONS") : 8;
    int per = argc > 5 ? (int)bench_arg(argv[5], 1, 10000, "PER") : 64;
    int reps = argc > 6 ? (int)bench_arg(argv[6], 1, 100, "REPS") : 5;
    ac_loop *loop = ac_loop_new();
    double *a = calloc((size_t)reps, sizeof *a), *b = calloc((size_t)reps, sizeof *b),
           *ratio = calloc((size_t)reps, sizeof *ratio);
    one(argv[1], -1, total / 10, sessions, per, loop); /* warm */
    one(argv[2], -1, total / 10, sessions, per, loop);
    for (int i = 0; i < reps; i++) {
        a[i] = one(argv[1], i, total, sessions, per, loop);
        b[i] = one(argv[2], i, total, sessions, per, loop);
        ratio[i] = a[i] / b[i];
    }
    printf("journal events appended by group commits: %ld events, %d sessions x %d events a "
           "group, %d runs\n",
           total, sessions, per, reps);
    stats("events/s A", a, reps, "events/s");
    stats("events/s B", b, reps, "events/s");
    stats("ratio A / B", ratio, reps, "");
    ac_loop_free(loop);
    free(a), free(b), free(ratio);
    return 0;
}
