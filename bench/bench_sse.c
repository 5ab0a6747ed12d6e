/* Throughput of the SSE scanner and stream assembly (OpenAI and Anthropic) on
 * large generated streams, as ratios to a plain memchr line-splitting baseline
 * measured in the same run, and the assembly with the hot-delta scanners
 * against the same assembly reading every event with jansson. Not a test: it
 * prints figures (min/median/max over the runs) and asserts nothing about time.
 *
 *   bench_sse [MiB [RUNS]]   (default 64 MiB, 7 runs) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm/sse.h"
#include "llm/stream.h"
#include "llm/stream_internal.h"

#define CHUNK 16384 /* what libcurl hands a write callback at most */
static int RUNS = 7;

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

/* One generated stream: its wire and how each delta event is framed. */
typedef struct shape {
    const char *name;
    ac_wire wire;
    const char *head, *tail; /* around each delta's text */
    const char *start, *end; /* the events before the first and after the last delta */
    int escapes;             /* the text holds JSON escapes (tool arguments) */
} shape;

static const shape OPENAI_TEXT = {
    "OpenAI text deltas",
    AC_WIRE_OPENAI,
    "data: {\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\","
    "\"created\":1741570283,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\","
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
    "\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
    0};

static const shape OPENAI_TOOL = {
    "OpenAI tool-argument deltas",
    AC_WIRE_OPENAI,
    "data: {\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\","
    "\"created\":1741570283,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\","
    "\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"",
    "\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
    "\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
    "\"type\":\"function\",\"function\":{\"name\":\"write\",\"arguments\":\"\"}}]},"
    "\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
    "\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
    1};

static const shape ANTHROPIC_TEXT = {
    "Anthropic text deltas",
    AC_WIRE_ANTHROPIC,
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{"
    "\"type\":\"text_delta\",\"text\":\"",
    "\"}}\n\n",
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":"
    "\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\","
    "\"stop_reason\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    0};

/* Appends n bytes of JSON string body: words, and with escapes quoted words. */
static void put_body(buf *b, size_t n, uint64_t *seed, int escapes)
{
    static const char *const quoted[] = {"{\\\"path\\\": ", "\\\"notes.txt\\\", ", "\\n",
                                         "\\\"text\\\": \\\"", "caf\\u00e9 ", "\\\"} "};
    if (!escapes) {
        put_text(b, n, seed);
        return;
    }
    size_t done = 0;
    while (done < n) {
        uint64_t r = rng(seed);
        if (r % 4 == 0 && n - done > 20) {
            const char *w = quoted[(r >> 8) % 6];
            puts_(b, w);
            done += strlen(w);
        } else {
            size_t k = n - done < 8 ? n - done : 8;
            put_text(b, k, seed);
            done += k;
        }
    }
}

/* A stream of about total bytes, content_len bytes of text per delta event. */
static buf make_stream(const shape *sh, size_t total, size_t content_len, uint64_t seed)
{
    buf b = {0};
    puts_(&b, sh->start);
    while (b.len < total) {
        puts_(&b, sh->head);
        put_body(&b, content_len, &seed, sh->escapes);
        puts_(&b, sh->tail);
    }
    puts_(&b, sh->end);
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
static double run_memchr(const buf *b, const shape *sh, int fast)
{
    (void)sh;
    (void)fast;
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

static double run_sse(const buf *b, const shape *sh, int fast)
{
    (void)sh;
    (void)fast;
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

static size_t last_fast, last_events;

static double run_stream(const buf *b, const shape *sh, int fast)
{
    ac_stream *st = ac_stream_new_ex(sh->wire, NULL, (size_t)1 << 30, 4u << 20, 4u << 20);
    ac_stream__set_fast(st, fast);
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
    const ac_stream_turn *turn = ac_stream_turn_get(st);
    sink_total += turn->text_len + (turn->n_tool_calls ? turn->tool_calls[0].arguments_len : 0);
    last_fast = ac_stream__fast_events(st);
    last_events = ac_stream_events(st);
    ac_stream_free(st);
    return t;
}

/* Separate functions so a profiler can select one (callgrind --toggle-collect). */
__attribute__((noinline)) static double run_fast(const buf *b, const shape *sh, int fast)
{
    (void)fast;
    return run_stream(b, sh, 1);
}

__attribute__((noinline)) static double run_jansson(const buf *b, const shape *sh, int fast)
{
    (void)fast;
    return run_stream(b, sh, 0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct mmm {
    double min, med, max;
} mmm;

static mmm summarize(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    mmm r = {v[0], n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[n - 1]};
    return r;
}

static void report(const shape *sh, const char *what, const buf *b)
{
    enum { MAXR = 64 };
    double mib = (double)b->len / (1024.0 * 1024.0);
    double t[4][MAXR], ratio_base[MAXR], ratio_json[MAXR];
    double (*fns[4])(const buf *, const shape *, int) = {run_memchr, run_sse, run_fast,
                                                         run_jansson};
    size_t fast = 0, events = 0;
    for (int k = 0; k < 4; k++) /* warm-up: first-touch page faults are not measured */
        fns[k](b, sh, 0);
    for (int r = 0; r < RUNS; r++) {
        /* the four measures alternate, so load on the machine hits them alike */
        for (int k = 0; k < 4; k++) {
            t[k][r] = fns[k](b, sh, 0);
            if (k == 2)
                fast = last_fast, events = last_events;
        }
        ratio_base[r] = t[0][r] / t[2][r];
        ratio_json[r] = t[3][r] / t[2][r];
        for (int k = 0; k < 4; k++)
            t[k][r] = mib / t[k][r];
    }
    static const char *const names[4] = {"memchr line split (baseline)", "ac_sse scan",
                                          "assembly, hot-delta scanner", "assembly, jansson only"};
    printf("%s, %s (%.1f MiB, %d KiB chunks, %d runs; %zu of %zu events by the scanner)\n",
           sh->name, what, mib, CHUNK / 1024, RUNS, fast, events);
    for (int k = 0; k < 4; k++) {
        mmm m = summarize(t[k], RUNS);
        printf("  %-30s %8.0f / %8.0f / %8.0f MiB/s (min/median/max)\n", names[k], m.min, m.med,
               m.max);
    }
    mmm rb = summarize(ratio_base, RUNS), rj = summarize(ratio_json, RUNS);
    printf("  scanner assembly speed / jansson-only: %.2f / %.2f / %.2fx;"
           " / memchr: %.3f / %.3f / %.3fx\n",
           rj.min, rj.med, rj.max, rb.min, rb.med, rb.max);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 64;
    if (mib == 0)
        mib = 64;
    if (argc > 2)
        RUNS = (int)strtol(argv[2], NULL, 10);
    if (RUNS < 1 || RUNS > 64)
        RUNS = 7;
    size_t total = mib << 20;
    const shape *shapes[] = {&OPENAI_TEXT, &ANTHROPIC_TEXT, &OPENAI_TOOL};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        buf small = make_stream(shapes[i], total, 256, 42 + i);
        report(shapes[i], "256-byte deltas", &small);
        free(small.p);
    }
    buf large = make_stream(&OPENAI_TEXT, total, 1u << 20, 7);
    report(&OPENAI_TEXT, "1 MiB deltas", &large);
    free(large.p);
    printf("(checksum %zu)\n", (size_t)sink_total);
    return 0;
}
