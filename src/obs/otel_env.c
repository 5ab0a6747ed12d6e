/* otel_env.c - a tracer configured by the standard OTEL_* variables (otel.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentc/otel.h"

#define MAX_HEADERS 32

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int env_true(const char *name)
{
    const char *v = env(name);
    return v && !strcasecmp(v, "true");
}

static int hexval(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* "k=v" percent-decoded into "k: v" (malloc'd); NULL when it has no '='. */
static char *header_of(const char *p, size_t len)
{
    const char *eq = memchr(p, '=', len);
    if (!eq || eq == p)
        return NULL;
    char *out = malloc(len + 2);
    if (!out)
        return NULL;
    size_t o = 0;
    for (const char *q = p; q < eq; q++)
        if (!isspace((unsigned char)*q))
            out[o++] = *q;
    out[o++] = ':';
    out[o++] = ' ';
    for (const char *q = eq + 1; q < p + len; q++) {
        int hi, lo;
        if (*q == '%' && q + 2 < p + len && (hi = hexval(q[1])) >= 0 && (lo = hexval(q[2])) >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            q += 2;
        } else {
            out[o++] = *q;
        }
    }
    out[o] = 0;
    return out;
}

/* OTEL_EXPORTER_OTLP_HEADERS into h (NULL-terminated). -1 when one has no '=' (the text
 * names its position, never its value). */
static int parse_headers(const char *v, char **h, ac_error *err)
{
    size_t n = 0, k = 0;
    for (const char *p = v; p && *p; k++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && n < MAX_HEADERS) {
            if (!(h[n] = header_of(p, len))) {
                snprintf(err->text, sizeof err->text,
                         "OTEL_EXPORTER_OTLP_HEADERS: entry %zu is not NAME=VALUE", k + 1);
                err->code = AC_ECONFIG;
                return -1;
            }
            n++;
        }
        p = end ? end + 1 : NULL;
    }
    h[n] = NULL;
    return 0;
}

static void free_headers(char **h)
{
    for (size_t i = 0; h[i]; i++)
        free(h[i]);
}

/* The batch span processor's OTEL_BSP_* variables (positive integers; unset: the default). 0, or
 * -1 with err naming the malformed one. */
static int bsp_of(ac_tracer_config *cfg, ac_error *err)
{
    static const char *const names[] = {"OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
                                        "OTEL_BSP_SCHEDULE_DELAY", "OTEL_BSP_EXPORT_TIMEOUT"};
    long long v[4] = {0};
    for (size_t i = 0; i < 4; i++) {
        const char *s = env(names[i]);
        char *end;
        if (!s)
            continue;
        v[i] = strtoll(s, &end, 10);
        if (*end || v[i] <= 0 || v[i] > 100000000) {
            err->code = AC_EINVAL;
            snprintf(err->text, sizeof err->text, "%s is not a positive integer", names[i]);
            return -1;
        }
    }
    cfg->queue_max = (int)v[0];
    cfg->batch_max = (int)v[1];
    cfg->delay_ms = v[2];
    cfg->timeout_ms = v[3];
    return 0;
}

ac_tracer *ac_tracer_from_env(ac_loop *loop, ac_error *err)
{
    ac_error local;
    if (!err)
        err = &local;
    memset(err, 0, sizeof *err);
    const char *exporter = env("OTEL_TRACES_EXPORTER");
    if (env_true("OTEL_SDK_DISABLED") || (exporter && !strcasecmp(exporter, "none")))
        return NULL;
    const char *traces = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    const char *base = env("OTEL_EXPORTER_OTLP_ENDPOINT");
    if (!traces && !base)
        return NULL;
    char url[2048];
    if (traces)
        snprintf(url, sizeof url, "%s", traces);
    else
        snprintf(url, sizeof url, "%s%sv1/traces", base, base[strlen(base) - 1] == '/' ? "" : "/");
    char *headers[MAX_HEADERS + 1] = {NULL};
    if (parse_headers(env("OTEL_EXPORTER_OTLP_HEADERS"), headers, err) != 0) {
        free_headers(headers);
        return NULL;
    }
    ac_tracer_config cfg = {.url = url,
                            .headers = (const char *const *)headers,
                            .service_name = env("OTEL_SERVICE_NAME"),
                            .resource_attributes = env("OTEL_RESOURCE_ATTRIBUTES"),
                            .capture_content =
                                env_true("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")};
    if (bsp_of(&cfg, err) != 0) {
        free_headers(headers);
        return NULL;
    }
    ac_tracer *t = ac_tracer_new(loop, &cfg, err);
    if (!t && err->code == AC_EINVAL)
        snprintf(err->text, sizeof err->text, "OTEL_EXPORTER_OTLP_%sENDPOINT is not an http(s) URL",
                 traces ? "TRACES_" : "");
    free_headers(headers);
    return t;
}
