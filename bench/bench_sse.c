/* Throughput of the SSE scanner and OpenAI stream assembly on large generated
 * streams, as ratios to a plain memchr line-splitting baseline measured in the
 * same run. Not a test: it prints figures and asserts nothing about time.
 *
 *   bench_sse [MiB]   (default 64) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/sse.h"
#include "llm/stream.h"

#define CHUNK 16384 /* what libcurl hands a write callback at most */
#define RUNS 5

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n)
{
    if (b->cap - b->len < n) {
        while (b->cap - b->len < n)
            b->cap = b->cap ? b->cap * 2 : 1 << 20;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            perror("realloc");
            exit(1);
        }
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void puts_(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Appends n bytes of JSON-safe text (words and spaces). */
static void put_text(buf *b, size_t n, uint64_t *seed)
{
    static const char *const words[] = {"the ",     "stream ", "of ",    "tokens ", "arrives ",
                                        "quickly ", "and ",    "every ", "delta ",  "counts "};
    size_t done = 0;
    while (done < n) {
        const char *w = words[rng(seed) % 10];
        size_t k = strlen(w);
        if (k > n - done)
            k = n - done;
        put(b, w, k);
        done += k;
    }
}

static const char HEAD[] = "data: {\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":"
                           "\"chat.completion.chunk\",\"created\":1741570283,\"model\":\"gpt-4o-"
                           "2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\",\"choices\":[{"
                           "\"index\":0,\"delta\":{\"content\":\"";
static const char TAIL[] = "\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n";

/* A recorded-like OpenAI stream of about total bytes, content_len bytes per chunk. */
static buf make_stream(size_t total, size_t content_len, uint64_t seed)
{
    buf b = {0};
    while (b.len < total) {
        puts_(&b, HEAD);
        put_text(&b, content_len, &seed);
        puts_(&b, TAIL);
    }
    puts_(&b, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
              "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    return b;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile size_t sink_total; /* keeps results observable */

/* Baseline: split the body into lines with memchr, as a minimal hand parser would
 * (a line cut by a chunk boundary is simply counted twice). */
static double run_memchr(const buf *b)
{
    double t0 = now();
    size_t lines = 0, data_lines = 0;
    for (size_t off = 0; off < b->len; off += CHUNK) {
        size_t n = b->len - off < CHUNK ? b->len - off : CHUNK;
        const char *p = b->p + off, *end = p + n;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl)
                break;
            lines++;
            data_lines += nl - p >= 5 && memcmp(p, "data:", 5) == 0;
            p = nl + 1;
        }
    }
    sink_total += lines + data_lines;
    return now() - t0;
}

static int on_event(void *ud, const ac_sse_event *ev)
{
    size_t *n = ud;
    *n += ev->data_len;
    return 0;
}

static double run_sse(const buf *b)
{
    size_t bytes = 0;
    ac_sse *s = ac_sse_new(4u << 20, 4u << 20, on_event, NULL, &bytes);
    double t0 = now();
    for (size_t off = 0; off < b->len; off += CHUNK) {
        size_t n = b->len - off < CHUNK ? b->len - off : CHUNK;
        if (ac_sse_feed(s, b->p + off, n) != 0) {
            fprintf(stderr, "sse: %s\n", ac_sse_strerror(ac_sse_finish(s)));
            exit(1);
        }
    }
    int rc = ac_sse_finish(s);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "sse finish: %s\n", ac_sse_strerror(rc));
        exit(1);
    }
    sink_total += bytes;
    ac_sse_free(s);
    return t;
}

static double run_stream(const buf *b)
{
    ac_stream *st = ac_stream_new_ex(AC_WIRE_OPENAI, NULL, (size_t)1 << 30, 4u << 20, 4u << 20);
    double t0 = now();
    for (size_t off = 0; off < b->len; off += CHUNK) {
        size_t n = b->len - off < CHUNK ? b->len - off : CHUNK;
        if (ac_stream_feed(st, b->p + off, n) != 0) {
            fprintf(stderr, "stream: %s\n", ac_stream_error(st));
            exit(1);
        }
    }
    int rc = ac_stream_finish(st);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "stream finish: %s\n", ac_stream_error(st));
        exit(1);
    }
    sink_total += ac_stream_turn_get(st)->text_len;
    ac_stream_free(st);
    return t;
}

static double best(double (*fn)(const buf *), const buf *b)
{
    double t = 1e30;
    for (int i = 0; i < RUNS; i++) {
        double x = fn(b);
        if (x < t)
            t = x;
    }
    return t;
}

static void report(const char *name, const buf *b)
{
    double mib = (double)b->len / (1024.0 * 1024.0);
    double base = best(run_memchr, b);
    double sse = best(run_sse, b);
    double asm_ = best(run_stream, b);
    printf("%s (%.1f MiB, %d KiB chunks, best of %d)\n", name, mib, CHUNK / 1024, RUNS);
    printf("  %-28s %9.0f MiB/s  1.00x\n", "memchr line split (baseline)", mib / base);
    printf("  %-28s %9.0f MiB/s  %.2fx\n", "ac_sse scan", mib / sse, base / sse);
    printf("  %-28s %9.0f MiB/s  %.3fx\n", "ac_sse + OpenAI assembly", mib / asm_, base / asm_);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 64;
    if (mib == 0)
        mib = 64;
    size_t total = mib << 20;
    buf small = make_stream(total, 256, 42);
    report("OpenAI chunks, 256-byte content", &small);
    free(small.p);
    buf large = make_stream(total, 1u << 20, 7);
    report("OpenAI chunks, 1 MiB data lines", &large);
    free(large.p);
    printf("(ratio = baseline time / time; higher is faster; checksum %zu)\n", (size_t)sink_total);
    return 0;
}
