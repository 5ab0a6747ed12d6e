/*
 * tracing.c - the command line's tracer: made from the OTEL_* variables (agentc/otel.h) for
 * the command's one loop when its first engine is built, and shut down before that loop is
 * freed, adding at most a second to the command's exit; and its metrics, counted when a
 * command asks for them (batch --metrics, serve's /metrics).
 */
#include <stdio.h>

#include <stdlib.h>
#include <strings.h>

#include "agentc/metrics.h"
#include "agentc/otel.h"
#include "engine_opts.h"

#define FLUSH_BOUND_MS 1000

static ac_tracer *tracer;
static ac_loop *tracer_loop;
static int tried;
static ac_metrics *metrics;

ac_tracer *ac_cli_tracer(ac_loop *loop)
{
    if (!loop)
        return NULL;
    if (tracer_loop == loop)
        return tracer;
    if (tried && tracer_loop != loop)
        return NULL; /* one loop per command: the tracer stays with the first */
    tried = 1;
    tracer_loop = loop;
    ac_error err;
    tracer = ac_tracer_from_env(loop, &err);
    if (!tracer && err.code != AC_OK)
        fprintf(stderr, "agentc: traces are off: %s\n", err.text);
    return tracer;
}

void ac_cli_tracer_finish(ac_loop *loop)
{
    if (!loop || loop != tracer_loop)
        return;
    ac_tracer_stats st;
    int say = tracer && getenv("OTEL_LOG_LEVEL") &&
              (!strcasecmp(getenv("OTEL_LOG_LEVEL"), "info") ||
               !strcasecmp(getenv("OTEL_LOG_LEVEL"), "debug"));
    ac_tracer_shutdown_stats(tracer, FLUSH_BOUND_MS, &st);
    if (say) /* OTEL_LOG_LEVEL=info: what the exporter did */
        fprintf(stderr,
                "agentc: traces: %llu spans exported (%llu bytes), %llu dropped, longest export "
                "step %.3f ms\n",
                (unsigned long long)st.exported, (unsigned long long)st.bytes,
                (unsigned long long)st.dropped, (double)st.longest_step_us / 1000.0);
    tracer = NULL;
    tracer_loop = NULL;
    tried = 0;
}

ac_metrics *ac_cli_metrics(int create)
{
    if (!metrics && create)
        metrics = ac_metrics_new();
    return metrics;
}

char *ac_cli_metrics_text(void)
{
    return ac_metrics_render(metrics, ac_tracer_dropped(tracer));
}

int ac_cli_metrics_write(const char *path)
{
    char *text = ac_cli_metrics_text();
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    return ok ? 0 : -1;
}

void ac_cli_metrics_free(void)
{
    ac_metrics_free(metrics);
    metrics = NULL;
}
