/* Cost of building the next request of a long conversation (ac_request_openai
 * and ac_request_anthropic) at 10, 100 and 1,000 messages, against a baseline
 * measured in the same run: copying the request's bytes (memcpy), the least any
 * builder must do. Each turn of the conversation is a user message, an
 * assistant message with one tool call, its result and an assistant answer.
 * Between two builds one message is added, as in a live session; the figure
 * is the CPU time of the build after it. Not a test: it prints figures
 * (min/median/max over the runs) and asserts nothing about time.
 *
 *   bench_request [RUNS]   (default 7) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "context/conversation.h"
#include "context/request.h"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void mmm(double *v, int n, double out[3])
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    out[0] = v[0];
    out[1] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    out[2] = v[n - 1];
}

static const char TEXT[] =
    "Please look at the quarterly figures in the attached report and tell me which regions grew "
    "faster than the average, with the numbers, and whether the trend held in the last month.";

/* Adds message k of the conversation (4 kinds in turn). */
static void add_message(ac_conv *c, size_t k, int64_t t)
{
    char id[32], args[96], res[160];
    switch (k % 4) {
    case 0:
        ac_conv_add_message(c, AC_ROLE_USER, TEXT, t);
        break;
    case 1: {
        snprintf(id, sizeof id, "call_%zu", k);
        snprintf(args, sizeof args, "{\"path\": \"reports/q%zu.csv\", \"rows\": %zu}", k % 7, k);
        ac_tool_call_in call = {id, "read_file", args, 0};
        ac_conv_add_assistant(c, "Reading the report.", NULL, &call, 1, t);
        break;
    }
    case 2:
        snprintf(id, sizeof id, "call_%zu", k - 1);
        snprintf(res, sizeof res, "region,q1,q2\nnorth,%zu,%zu\nsouth,%zu,%zu\n", k, k + 3, k * 2,
                 k + 1);
        ac_conv_set_tool_result(c, id, 1, res, t);
        break;
    default:
        ac_conv_add_message(c, AC_ROLE_ASSISTANT,
                            "North grew 12% against an average of 7%; the trend held in March.", t);
        break;
    }
}

static volatile size_t sink;

int main(int argc, char **argv)
{
    int runs = argc > 1 ? (int)bench_arg(argv[1], 1, 64, "runs") : 7;
    static const size_t sizes[] = {10, 100, 1000};
    ac_request_opts o = {0};
    o.model = "bench-model";
    o.stream = 1;
    printf("request building after one message is added (CPU per build, %d runs: min / median / "
           "max)\n",
           runs);
    for (int anth = 0; anth < 2; anth++) {
        double base_med[3] = {0}, build_med[3] = {0};
        for (size_t si = 0; si < 3; si++) {
            size_t n = sizes[si];
            double tb[64], tc[64], ratio[64];
            size_t len = 0;
            for (int r = 0; r < runs; r++) {
                ac_conv *c = ac_conv_new();
                ac_conv_add_tool_def(c, "read_file", "Reads a file of the workspace.",
                                     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":"
                                     "\"string\"}}}");
                int64_t t = 1000;
                for (size_t k = 0; k + 1 < n; k++)
                    add_message(c, k, t++);
                char err[256];
                /* the previous request, as a live session would have built it */
                char *prev = anth ? ac_request_anthropic(c, &o, err, sizeof err)
                                  : ac_request_openai(c, &o, err, sizeof err);
                free(prev);
                add_message(c, n - 1, t++);
                double t0 = cpu_us();
                char *body = anth ? ac_request_anthropic(c, &o, err, sizeof err)
                                  : ac_request_openai(c, &o, err, sizeof err);
                tb[r] = cpu_us() - t0;
                if (!body) {
                    fprintf(stderr, "request: %s\n", err);
                    return 1;
                }
                len = strlen(body);
                char *copy = malloc(len + 1);
                t0 = cpu_us();
                for (int i = 0; i < 100; i++) {
                    memcpy(copy, body, len + 1);
                    sink += (unsigned char)copy[i % (len + 1)];
                }
                tc[r] = (cpu_us() - t0) / 100;
                ratio[r] = tb[r] / (tc[r] > 0.001 ? tc[r] : 0.001);
                free(copy);
                free(body);
                ac_conv_free(c);
            }
            double b[3], cp[3], ra[3];
            mmm(tb, runs, b);
            mmm(tc, runs, cp);
            mmm(ratio, runs, ra);
            base_med[si] = cp[1];
            build_med[si] = b[1];
            printf("  %-9s %5zu messages, %7zu bytes: build %8.1f / %8.1f / %8.1f us; memcpy "
                   "%6.2f us; build/memcpy %.0f / %.0f / %.0fx\n",
                   anth ? "Anthropic" : "OpenAI", n, len, b[0], b[1], b[2], cp[1], ra[0], ra[1],
                   ra[2]);
        }
        printf("  %-9s growth 10 -> 1,000 messages: build %.0fx (memcpy %.0fx)\n",
               anth ? "Anthropic" : "OpenAI", build_med[2] / build_med[0],
               base_med[2] / (base_med[0] > 0.001 ? base_med[0] : 0.001));
    }
    printf("(checksum %zu)\n", (size_t)sink);
    return 0;
}
