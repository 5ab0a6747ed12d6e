/*
 * bench_toolkits.c - the cost of toolkits per model call: building the
 * request body (OpenAI shape) for a conversation offering a toolkit of 100
 * tools whose parameter takes a 1,000-value enum from the live context
 * (availability checked and enums filled on every call), against, in the
 * same run:
 *   plain   the same 100 tools as independent tools without an enum
 *           (the request without toolkits), and
 *   static  the same 100 tools as independent tools with the 1,000 values
 *           written into their schema (the same bytes on the wire).
 * Prints min/median/max microseconds per request over several runs and the
 * ratios of the medians. Usage: bench_toolkits [runs] [requests-per-run]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agentc/agentc.h"
#include "bench_args.h"
#include "context/conversation.h"
#include "context/request.h"
#include "io/loop.h"
#include "session/toolkits.h"

#define TOOLS 100
#define VALUES 1000

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void write_tools(const char *path, int kind)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    char values[VALUES * 10];
    size_t k = 0;
    for (int i = 0; i < VALUES; i++)
        k += (size_t)snprintf(values + k, sizeof values - k, "%s\"v%04d\"", i ? "," : "", i);
    if (kind == 0)
        fprintf(
            f, "{\"toolkits\": [{\"prefix\": \"big\", \"context\": {\"items\": [%s]}, \"tools\": [",
            values);
    else
        fprintf(f, "{\"tools\": [");
    for (int i = 0; i < TOOLS; i++) {
        char prop[VALUES * 10 + 64];
        if (kind == 0)
            snprintf(prop, sizeof prop, "\"type\": \"string\", \"x-enum-from\": \"items\"");
        else if (kind == 1)
            snprintf(prop, sizeof prop, "\"type\": \"string\"");
        else
            snprintf(prop, sizeof prop, "\"type\": \"string\", \"enum\": [%s]", values);
        fprintf(f,
                "%s{\"name\": \"%s%03d\", \"description\": \"tool %d\", \"command\": [\"true\"], "
                "\"parameters\": {\"type\": \"object\", \"properties\": {\"item\": {%s}}}}",
                i ? "," : "", kind == 0 ? "t" : "big__t", i, i, prop);
    }
    fprintf(f, kind == 0 ? "]}]}\n" : "]}\n");
    fclose(f);
}

typedef struct setup {
    ac_loop *loop;
    ac_engine *e;
    ac_session *s;
} setup;

static void open_setup(setup *st, const char *tools)
{
    ac_error err = {0};
    st->loop = ac_loop_new();
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = st->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = "{\"content\":\"x\"}\n";
    st->e = ac_engine_new(&cfg, &err);
    if (!st->e || ac_engine_add_tools(st->e, tools, &err) != 0) {
        fprintf(stderr, "engine: %s\n", err.text);
        exit(1);
    }
    st->s = ac_session_new(st->e, "b", NULL, &err);
    if (!st->s) {
        fprintf(stderr, "session: %s\n", err.text);
        exit(1);
    }
    for (int i = 0; i < 10; i++)
        ac_loop_run_once(st->loop, 1);
    ac_conv_add_message(ac_session_conv(st->s), AC_ROLE_USER, "pick an item", 0);
}

static void close_setup(setup *st)
{
    ac_session_free(st->s);
    ac_engine_free(st->e);
    ac_loop_free(st->loop);
}

/* Microseconds per request over n requests; *bytes gets one body's size. */
static double run(setup *st, int toolkits, int n, size_t *bytes)
{
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "m";
    o.stream = 1;
    if (toolkits) {
        o.tool_offer = ac_toolkits_offer;
        o.tool_offer_ud = st->s;
    }
    char err[256];
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        char *body = ac_request_openai(ac_session_conv(st->s), &o, err, sizeof err);
        if (!body) {
            fprintf(stderr, "request: %s\n", err);
            exit(1);
        }
        *bytes = strlen(body);
        free(body);
    }
    return (now_us() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? (int)bench_arg(argv[1], 3, 101, "runs") : 7;
    int n = argc > 2 ? (int)bench_arg(argv[2], 1, 100000, "requests per run") : 50;
    char dir[] = "/tmp/agentc_bench_toolkits_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char paths[3][96];
    const char *names[3] = {"toolkit (enums from context)", "plain (no toolkits, no enum)",
                            "static (1,000-value enum in the file)"};
    setup st[3];
    for (int k = 0; k < 3; k++) {
        snprintf(paths[k], sizeof paths[k], "%s/tools%d.json", dir, k);
        write_tools(paths[k], k);
        open_setup(&st[k], paths[k]);
    }
    double *t[3];
    size_t bytes[3] = {0};
    for (int k = 0; k < 3; k++)
        t[k] = calloc((size_t)runs, sizeof *t[k]);
    for (int r = 0; r < runs; r++) /* the three alternate within each run */
        for (int k = 0; k < 3; k++)
            t[k][r] = run(&st[k], k == 0, n, &bytes[k]);
    double med[3];
    printf("request body for %d tools, %d requests per run, %d runs (us per request)\n", TOOLS, n,
           runs);
    for (int k = 0; k < 3; k++) {
        qsort(t[k], (size_t)runs, sizeof *t[k], cmp);
        med[k] = t[k][runs / 2];
        printf("  %-40s min %9.1f  median %9.1f  max %9.1f   body %zu bytes\n", names[k], t[k][0],
               med[k], t[k][runs - 1], bytes[k]);
    }
    printf("ratio toolkit/plain  (median): %.2f\n", med[0] / med[1]);
    printf("ratio toolkit/static (median): %.2f\n", med[0] / med[2]);
    for (int k = 0; k < 3; k++) {
        close_setup(&st[k]);
        remove(paths[k]);
        free(t[k]);
    }
    remove(dir);
    return 0;
}
