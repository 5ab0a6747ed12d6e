/* bench_store.c - the SQLite store of durable sessions (agentc/store.h), in one run:
 *
 * 1. Journal appends while streaming: one stored session per round trip streams DELTAS
 *    content deltas from the loopback server (tests/support/test_httpd, in-process); every
 *    delta is one journaled event, committed in groups (one transaction per loop turn).
 *    Events/s = events written / wall time of the round trip; the same round trip without a
 *    store is measured alternately. Baselines, same file settings (WAL,
 *    synchronous=NORMAL), same row sizes: a bare sqlite3 INSERT loop in one transaction
 *    (the fastest the file can take rows) and one transaction per row (what committing
 *    each delta would cost).
 * 2. Bytes stored per turn at turns 10, 100 and 1,000 of one long scripted conversation
 *    (file size growth over the 10 turns before each mark, WAL checkpointed): linear
 *    growth means a flat number.
 * 3. Loading that session (about 10,000 events): latest snapshot + journal tail against a
 *    full replay of the journal.
 *
 *   bench_store [DELTAS [REPS [DIR]]]   defaults 5000, 9, /tmp
 *
 * Prints min / median / max over REPS runs and RESULT lines for scripts. */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "bench_args.h"
#include "test_httpd.h"

char *ac_store_session_json_full(ac_store *st, ac_engine *e, const char *id, ac_error *err);

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
    printf("  %-34s min %12.1f  med %12.1f  max %12.1f %s\n", name, v[0], v[n / 2], v[n - 1], unit);
    printf("RESULT %s %.1f %.1f %.1f\n", name, v[0], v[n / 2], v[n - 1]);
}

static char *make_answer(int deltas, size_t *len)
{
    static const char d1[] =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":"
        "[{\"index\":0,\"delta\":{\"content\":\"";
    static const char d2[] = "\"},\"finish_reason\":null}]}\n\n";
    static const char tail[] =
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
        "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    size_t cap = (size_t)deltas * (sizeof d1 + sizeof d2 + 16) + sizeof tail;
    char *b = malloc(cap);
    size_t n = 0;
    for (int i = 0; i < deltas; i++)
        n += (size_t)snprintf(b + n, cap - n, "%sw%d %s", d1, i % 1000, d2);
    n += (size_t)snprintf(b + n, cap - n, "%s", tail);
    *len = n;
    return b;
}

static void rm_db(const char *path)
{
    char p[600];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* The bare sqlite3 baseline: n rows like the store's event rows, one transaction (per_row 0)
 * or one per row. Returns rows/s. */
static double bare_inserts(const char *path, int n, int per_row)
{
    rm_db(path);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return 0;
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                 "CREATE TABLE events(session TEXT NOT NULL, n INTEGER NOT NULL, t_ms INTEGER "
                 "NOT NULL, ev TEXT NOT NULL, data TEXT, steps TEXT, PRIMARY KEY(session, n)) "
                 "WITHOUT ROWID;",
                 NULL, NULL, NULL);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db, "INSERT INTO events VALUES(?,?,?,?,?,?)", -1, &q, NULL);
    double t0 = now_us();
    if (!per_row)
        sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (int i = 0; i < n; i++) {
        if (per_row)
            sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
        sqlite3_reset(q);
        sqlite3_bind_text(q, 1, "bench", -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 2, i + 1);
        sqlite3_bind_int64(q, 3, 1795000000000 + i);
        sqlite3_bind_text(q, 4, "llm.delta", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 5, "{\"text\":\"w123 \"}", -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 6,
                          "[[\"process\",\"STREAMING\",\"llm.delta\",\"STREAMING\",120,\"\","
                          "[\"append_delta\"]]]",
                          -1, SQLITE_STATIC);
        sqlite3_step(q);
        if (per_row)
            sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    }
    if (!per_row)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double t1 = now_us();
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n / ((t1 - t0) / 1e6);
}

static long file_bytes(ac_store *st, const char *path)
{
    (void)st;
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_stmt *q;
    long v = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT page_count FROM pragma_page_count) - (SELECT "
                           "freelist_count FROM pragma_freelist_count)",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = (long)sqlite3_column_int64(q, 0) * 4096;
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

int main(int argc, char **argv)
{
    int deltas = argc > 1 ? (int)bench_arg(argv[1], 1, 10000000, "DELTAS") : 5000;
    int reps = argc > 2 ? (int)bench_arg(argv[2], 1, 1000, "REPS") : 9;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    char path[512], bare[512];
    snprintf(path, sizeof path, "%s/agentc-bench-store-%d.db", dir, (int)getpid());
    snprintf(bare, sizeof bare, "%s/agentc-bench-bare-%d.db", dir, (int)getpid());
    ac_error err;

    /* ---- 1. appends while streaming ---- */
    size_t alen;
    char *answer = make_answer(deltas, &alen);
    ac_httpd *h = ac_httpd_start();
    ac_loop *loop = ac_loop_new();
    char base[96];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", ac_httpd_port(h));
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = base;
    cfg.api_key = "sk-bench";
    cfg.model = "bench-model";
    cfg.seed = 1;
    ac_engine *e = ac_engine_new(&cfg, &err);
    if (!e) {
        fprintf(stderr, "engine: %s\n", err.text);
        return 1;
    }
    rm_db(path);
    ac_store *st = ac_store_open(path, NULL, &err);
    if (!st) {
        fprintf(stderr, "store: %s\n", err.text);
        return 1;
    }
    double *evs = calloc((size_t)reps, sizeof(double)),
           *plain = calloc((size_t)reps, sizeof(double));
    double *b1 = calloc((size_t)reps, sizeof(double)), *bn = calloc((size_t)reps, sizeof(double));
    double *ratio = calloc((size_t)reps, sizeof(double)),
           *su = calloc((size_t)reps, sizeof(double));
    for (int i = -1; i < reps; i++) {
        for (int m = 0; m < 2; m++) {
            int stored = (i & 1) ? 1 - m : m;
            ac_httpd_resp r = AC_HTTPD_RESP_INIT;
            r.headers = "Content-Type: text/event-stream\r\n";
            r.body = answer;
            r.body_len = alen;
            ac_httpd_push(h, &r);
            char id[32];
            snprintf(id, sizeof id, "s%d", i + 1);
            double t0 = now_us();
            ac_session *s =
                stored ? ac_store_session(st, e, id, 0, &err) : ac_session_new(e, id, NULL, &err);
            if (!s || ac_session_send(s, "hi") < 0) {
                fprintf(stderr, "session: %s\n", err.text);
                return 1;
            }
            while (!ac_session_settled(s))
                ac_loop_run_once(loop, 1000);
            if (ac_session_status(s) == AC_SESSION_ENDED) {
                fprintf(stderr, "failed: %s\n", ac_session_error(s));
                return 1;
            }
            ac_session_free(s);
            double t1 = now_us();
            if (i >= 0) {
                double rate = (deltas + 5) / ((t1 - t0) / 1e6);
                (stored ? evs : plain)[i] = rate;
            }
        }
        if (i >= 0) {
            b1[i] = bare_inserts(bare, deltas, 0);
            bn[i] = bare_inserts(bare, deltas < 2000 ? deltas : 2000, 1);
            ratio[i] = evs[i] / b1[i];
            su[i] = evs[i] / plain[i];
        }
    }
    printf("1. %d streamed deltas per session (one event each), %d runs\n", deltas, reps);
    stats("events/s stored session", evs, reps, "events/s");
    stats("events/s unstored session", plain, reps, "events/s");
    stats("rows/s bare sqlite3, 1 transaction", b1, reps, "rows/s");
    stats("rows/s bare sqlite3, 1 txn per row", bn, reps, "rows/s");
    stats("stored / bare 1-transaction", ratio, reps, "x");
    stats("stored / unstored session", su, reps, "x");
    ac_store_close(st);
    ac_engine_free(e);
    ac_httpd_stop(h);
    free(answer);

    /* ---- 2. bytes per turn, 3. load ---- */
    int turns = 1000;
    size_t cap = (size_t)turns * 400 + 1;
    char *script = malloc(cap);
    size_t n = 0;
    for (int t = 0; t < turns; t++)
        n += (size_t)snprintf(script + n, cap - n,
                              "{\"content\":\"turn %d: a short answer of some two hundred "
                              "bytes, the length of a typical reply in a chat, so that the "
                              "stored size per turn means something measurable here.\"}\n",
                              t);
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = script;
    cfg.seed = 1;
    e = ac_engine_new(&cfg, &err);
    rm_db(path);
    ac_store_options so = {0};
    st = ac_store_open(path, &so, &err);
    ac_session *s = e && st ? ac_store_session(st, e, "long", 0, &err) : NULL;
    if (!s) {
        fprintf(stderr, "long session: %s\n", err.text);
        return 1;
    }
    long size_at[1001] = {0};
    printf("2. one conversation of %d turns (user message ~60 bytes, answer ~200 bytes)\n", turns);
    for (int t = 1; t <= turns; t++) {
        ac_session_send(s, "a user message of about sixty bytes, every turn the same.");
        while (!ac_session_settled(s))
            ac_loop_run_once(loop, 100);
        for (int k = 0; k < 3; k++)
            ac_loop_run_once(loop, 0);
        if (t == 1 || t == 9 || t == 10 || t == 90 || t == 100 || t == 990 || t == 1000)
            size_at[t] = file_bytes(st, path);
    }
    ac_session_free(s);
    int marks[] = {10, 100, 1000};
    for (int k = 0; k < 3; k++) {
        int t = marks[k], from = t == 10 ? 1 : t - 10;
        double per = (double)(size_at[t] - size_at[from]) / (t - from);
        printf("  bytes per turn at turn %-5d %8.0f   (file %ld bytes)\n", t, per, size_at[t]);
        printf("RESULT bytes_per_turn_%d %.0f\n", t, per);
    }
    ac_store_session_info info;
    ac_store_info(st, "long", &info, &err);
    double *snap = calloc((size_t)reps, sizeof(double)),
           *full = calloc((size_t)reps, sizeof(double));
    double *lr = calloc((size_t)reps, sizeof(double));
    for (int i = 0; i < reps; i++) {
        double t0 = now_us();
        char *a = ac_store_session_json(st, e, "long", &err);
        double t1 = now_us();
        char *b = ac_store_session_json_full(st, e, "long", &err);
        double t2 = now_us();
        if (!a || !b || strcmp(a, b) != 0) {
            fprintf(stderr, "load mismatch\n");
            return 1;
        }
        free(a);
        free(b);
        snap[i] = (t1 - t0) / 1e3;
        full[i] = (t2 - t1) / 1e3;
        lr[i] = full[i] / snap[i];
    }
    printf("3. load the session: %llu events, snapshot at event %llu\n",
           (unsigned long long)info.events, (unsigned long long)info.snapshot_seq);
    stats("load ms snapshot + tail", snap, reps, "ms");
    stats("load ms full replay", full, reps, "ms");
    stats("full replay / snapshot + tail", lr, reps, "x");
    ac_store_close(st);
    ac_engine_free(e);
    ac_loop_free(loop);
    rm_db(path);
    rm_db(bare);
    free(script);
    return 0;
}
