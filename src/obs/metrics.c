/*
 * metrics.c - the metrics registry (agentc/metrics.h): families of counters, gauges and
 * histograms, each a short list of series keyed by their label values, and their Prometheus
 * text.
 */
#include "obs/metrics_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentc/version.h"
#include "util/buf.h"

#define MAX_LABELS 4
#define N_BUCKETS 14

static const double buckets[N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                          1,     2.5,  5,     10,   30,  60,   300};
static const double count_buckets[N_BUCKETS] = {1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100, 200};

typedef struct series {
    char *labels[MAX_LABELS];
    double value; /* counter, gauge; histogram: sum */
    uint64_t count, bucket[N_BUCKETS];
} series;

typedef struct family {
    const char *name, *help, *type; /* "counter", "gauge", "histogram" */
    const char *labels[MAX_LABELS];
    const double *bounds; /* histograms */
    series *v;
    size_t n, cap;
} family;

struct ac_metrics {
    family f[AC_M_COUNT];
};

static const family defs[AC_M_COUNT] = {
    [AC_M_TRANSITIONS] = {"agentc_transitions_total",
                          "External transitions of the spec taken.",
                          "counter",
                          {"machine", "from", "to", "event"},
                          NULL,
                          NULL,
                          0,
                          0},
    [AC_M_STATE_SECONDS] = {"agentc_state_seconds",
                            "Time spent in a state before leaving it.",
                            "histogram",
                            {"machine", "state"},
                            buckets,
                            NULL,
                            0,
                            0},
    [AC_M_TURNS] = {"agentc_turns_total",
                    "Turns ended, by outcome.",
                    "counter",
                    {"outcome"},
                    NULL,
                    NULL,
                    0,
                    0},
    [AC_M_TURN_ITERATIONS] = {"agentc_turn_iterations",
                              "Model calls (iterations) per turn.",
                              "histogram",
                              {NULL},
                              count_buckets,
                              NULL,
                              0,
                              0},
    [AC_M_LLM_CALLS] = {"agentc_llm_calls_total",
                        "Model calls, by outcome.",
                        "counter",
                        {"provider", "model", "outcome"},
                        NULL,
                        NULL,
                        0,
                        0},
    [AC_M_LLM_SECONDS] = {"agentc_llm_call_seconds",
                          "Duration of a model call.",
                          "histogram",
                          {"provider", "model"},
                          buckets,
                          NULL,
                          0,
                          0},
    [AC_M_TTFT] = {"agentc_time_to_first_token_seconds",
                   "Time from a model call's start to its first streamed event.",
                   "histogram",
                   {"provider", "model"},
                   buckets,
                   NULL,
                   0,
                   0},
    [AC_M_TOKENS] = {"agentc_llm_tokens_total",
                     "Tokens the provider reported, by type.",
                     "counter",
                     {"model", "type"},
                     NULL,
                     NULL,
                     0,
                     0},
    [AC_M_TOOL_CALLS] = {"agentc_tool_calls_total",
                         "Tool calls, by outcome.",
                         "counter",
                         {"tool", "outcome"},
                         NULL,
                         NULL,
                         0,
                         0},
    [AC_M_TOOL_SECONDS] = {"agentc_tool_call_seconds",
                           "Duration of a tool call.",
                           "histogram",
                           {"tool"},
                           buckets,
                           NULL,
                           0,
                           0},
    [AC_M_RETRIES] = {"agentc_retries_total",
                      "Model calls retried, by the failure's class.",
                      "counter",
                      {"class"},
                      NULL,
                      NULL,
                      0,
                      0},
    [AC_M_COMPACTIONS] = {"agentc_compactions_total",
                          "Compactions, by strategy.",
                          "counter",
                          {"strategy"},
                          NULL,
                          NULL,
                          0,
                          0},
    [AC_M_SESSIONS] = {"agentc_sessions",
                       "Sessions in memory, by status.",
                       "gauge",
                       {"status"},
                       NULL,
                       NULL,
                       0,
                       0},
    [AC_M_COST] = {"agentc_cost_usd_total",
                   "What the model calls cost, in US dollars.",
                   "counter",
                   {"model"},
                   NULL,
                   NULL,
                   0,
                   0},
    [AC_M_TOOL_CACHE_HITS] = {"agentc_tool_cache_hits_total",
                              "Tool calls answered from the result cache.",
                              "counter",
                              {"tool"},
                              NULL,
                              NULL,
                              0,
                              0},
    [AC_M_TOOL_CACHE_MISSES] = {"agentc_tool_cache_misses_total",
                                "Calls of cached tools that found no fresh result and ran.",
                                "counter",
                                {"tool"},
                                NULL,
                                NULL,
                                0,
                                0},
    [AC_M_TOOL_CACHE_EVICTIONS] = {"agentc_tool_cache_evictions_total",
                                   "Results dropped from the cache to keep max_entries.",
                                   "counter",
                                   {"tool"},
                                   NULL,
                                   NULL,
                                   0,
                                   0},
    [AC_M_COMPACTION_SAVED] = {"agentc_compaction_tokens_saved_total",
                               "Estimated conversation tokens compactions removed, by strategy.",
                               "counter",
                               {"strategy"},
                               NULL,
                               NULL,
                               0,
                               0},
    [AC_M_STORE_NOTIFICATIONS] = {"agentc_store_notifications_total",
                                  "Wake-ups between workers: notifying commits sent, "
                                  "notifications received.",
                                  "counter",
                                  {"direction"},
                                  NULL,
                                  NULL,
                                  0,
                                  0},
    [AC_M_STORE_NOTIFY_LINES] = {"agentc_store_notify_lines_total",
                                 "Wake-up lines queued: sent, or coalesced into one queued.",
                                 "counter",
                                 {"outcome"},
                                 NULL,
                                 NULL,
                                 0,
                                 0},
    [AC_M_STORE_BLOCKING] = {"agentc_store_blocking_statements_total",
                             "Calls of agentc serve's loop that waited for the database.",
                             "counter",
                             {"kind"},
                             NULL,
                             NULL,
                             0,
                             0},
};

ac_metrics *ac_metrics_new(void)
{
    ac_metrics *m = calloc(1, sizeof *m);
    if (m)
        memcpy(m->f, defs, sizeof defs);
    return m;
}

void ac_metrics_free(ac_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < AC_M_COUNT; i++) {
        for (size_t k = 0; k < m->f[i].n; k++)
            for (size_t l = 0; l < MAX_LABELS; l++)
                free(m->f[i].v[k].labels[l]);
        free(m->f[i].v);
    }
    free(m);
}

static size_t n_labels(const family *f)
{
    size_t n = 0;
    while (n < MAX_LABELS && f->labels[n])
        n++;
    return n;
}

/* Whether s has the label values vals (the family's n of them). */
static int same(const series *s, const char *const *vals, size_t n)
{
    for (size_t l = 0; l < n; l++)
        if (strcmp(s->labels[l], vals[l] ? vals[l] : "") != 0)
            return 0;
    return 1;
}

/* The series of f with these label values (made on first use); NULL when out of memory. */
static series *find(family *f, const char *const *vals)
{
    size_t nl = n_labels(f);
    for (size_t k = 0; k < f->n; k++)
        if (same(&f->v[k], vals, nl))
            return &f->v[k];
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        series *v = realloc(f->v, cap * sizeof *v);
        if (!v)
            return NULL;
        f->v = v;
        f->cap = cap;
    }
    series *s = &f->v[f->n];
    memset(s, 0, sizeof *s);
    for (size_t l = 0; l < nl; l++)
        if (!(s->labels[l] = strdup(vals[l] ? vals[l] : ""))) {
            for (size_t j = 0; j < l; j++)
                free(s->labels[j]);
            return NULL;
        }
    f->n++;
    return s;
}

void ac_metrics_add(ac_metrics *m, int metric, const char *const *labels, double v)
{
    const char *none[MAX_LABELS] = {NULL};
    series *s = m ? find(&m->f[metric], labels && m->f[metric].labels[0] ? labels : none) : NULL;
    if (s)
        s->value += v;
}

void ac_metrics_observe(ac_metrics *m, int metric, const char *const *labels, double v)
{
    const char *none[MAX_LABELS] = {NULL};
    series *s = m ? find(&m->f[metric], labels && m->f[metric].labels[0] ? labels : none) : NULL;
    if (!s)
        return;
    s->value += v;
    s->count++;
    for (size_t b = 0; b < N_BUCKETS; b++)
        if (v <= m->f[metric].bounds[b])
            s->bucket[b]++;
}

static void label_value(ac_buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            ac_buf_printf(b, "\\%c", *v);
        else if (*v == '\n')
            ac_buf_addstr(b, "\\n");
        else
            ac_buf_add(b, v, 1);
    }
}

/* {a="x",b="y"} with le="..." last when le is not NULL; nothing for no labels. */
static void labels(ac_buf *b, const family *f, const series *s, const char *le)
{
    int n = 0;
    for (size_t l = 0; l < MAX_LABELS && f->labels[l]; l++) {
        ac_buf_printf(b, "%s%s=\"", n++ ? "," : "{", f->labels[l]);
        label_value(b, s->labels[l]);
        ac_buf_addstr(b, "\"");
    }
    if (le)
        ac_buf_printf(b, "%sle=\"%s\"", n++ ? "," : "{", le);
    if (n)
        ac_buf_addstr(b, "}");
}

static void render_family(ac_buf *b, const family *f)
{
    ac_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name, f->type);
    for (size_t k = 0; k < f->n; k++) {
        const series *s = &f->v[k];
        if (!f->bounds) {
            ac_buf_addstr(b, f->name);
            labels(b, f, s, NULL);
            ac_buf_printf(b, " %.17g\n", s->value);
            continue;
        }
        for (size_t i = 0; i <= N_BUCKETS; i++) {
            char le[32];
            snprintf(le, sizeof le, i < N_BUCKETS ? "%g" : "+Inf",
                     i < N_BUCKETS ? f->bounds[i] : 0.0);
            ac_buf_printf(b, "%s_bucket", f->name);
            labels(b, f, s, le);
            ac_buf_printf(b, " %llu\n",
                          (unsigned long long)(i < N_BUCKETS ? s->bucket[i] : s->count));
        }
        ac_buf_printf(b, "%s_sum", f->name);
        labels(b, f, s, NULL);
        ac_buf_printf(b, " %.17g\n%s_count", s->value, f->name);
        labels(b, f, s, NULL);
        ac_buf_printf(b, " %llu\n", (unsigned long long)s->count);
    }
}

char *ac_metrics_render(const ac_metrics *m, uint64_t spans_dropped)
{
    if (!m)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    for (size_t i = 0; i < AC_M_COUNT; i++)
        render_family(&b, &m->f[i]);
    ac_buf_printf(&b,
                  "# HELP agentc_spans_dropped_total Spans dropped by the trace exporter.\n"
                  "# TYPE agentc_spans_dropped_total counter\nagentc_spans_dropped_total %llu\n"
                  "# HELP agentc_build_info The agentc version.\n# TYPE agentc_build_info gauge\n"
                  "agentc_build_info{version=\"%s\"} 1\n",
                  (unsigned long long)spans_dropped, AGENTC_VERSION);
    return ac_buf_take(&b, NULL);
}
