/* Token estimates with per-conversation calibration; see tokens.h. */
#include "context/tokens.h"

#include "context/conv_internal.h"

#include <stdlib.h>
#include <string.h>

static int64_t bytes_to_tokens(size_t bytes)
{
    return (int64_t)((bytes + 3) / 4);
}

int64_t ac_tokens_message(const ac_conv *conv, size_t i)
{
    const ac_message *m = ac_conv_message(conv, i);
    if (!m)
        return 0;
    int64_t t = AC_TOKENS_PER_MESSAGE + bytes_to_tokens(strlen(m->content));
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const ac_tool_call *c = ac_conv_tool_call(conv, m->tool_call_ids[k]);
        if (c)
            t += AC_TOKENS_PER_CALL + bytes_to_tokens(strlen(c->name) + strlen(c->arguments));
    }
    return t;
}

int64_t ac_tokens_request_raw(const ac_conv *conv, const ac_request_opts *opts)
{
    size_t *idx, n;
    if (ac_conv_visible(conv, &idx, &n))
        return -1;
    int64_t t = AC_TOKENS_PER_REQUEST;
    for (size_t i = 0; i < n; i++)
        t += ac_tokens_message(conv, idx[i]);
    free(idx);
    for (size_t i = 0; i < conv->n_tools; i++) {
        const ac_tool_def *d = &conv->tools[i];
        if (!ac_request_tool_allowed(opts, d->name))
            continue;
        t += AC_TOKENS_PER_TOOL +
             bytes_to_tokens(strlen(d->name) + strlen(d->description) + strlen(d->schema_json));
    }
    return t;
}

int64_t ac_tokens_scale(const ac_conv *conv, int64_t raw)
{
    if (raw <= 0)
        return raw;
    return (raw * conv->scale_milli + AC_TOKENS_SCALE_ONE / 2) / AC_TOKENS_SCALE_ONE;
}

int64_t ac_tokens_estimate(const ac_conv *conv, const ac_request_opts *opts)
{
    return ac_tokens_scale(conv, ac_tokens_request_raw(conv, opts));
}

int64_t ac_tokens_begin_request(ac_conv *conv, const ac_request_opts *opts)
{
    int64_t raw = ac_tokens_request_raw(conv, opts);
    if (raw < 0)
        return -1;
    conv->est_last_raw = raw;
    return ac_tokens_scale(conv, raw);
}

void ac_tokens_calibrate(ac_conv *conv, int64_t reported_input)
{
    int64_t raw = conv->est_last_raw;
    if (raw <= 0 || reported_input <= 0)
        return;
    /* Guard the multiplication; such counts are not real anyway. */
    if (reported_input > INT64_MAX / AC_TOKENS_SCALE_ONE)
        reported_input = INT64_MAX / AC_TOKENS_SCALE_ONE;
    int64_t observed = (reported_input * AC_TOKENS_SCALE_ONE + raw / 2) / raw;
    if (observed < AC_TOKENS_SCALE_MIN)
        observed = AC_TOKENS_SCALE_MIN;
    if (observed > AC_TOKENS_SCALE_MAX)
        observed = AC_TOKENS_SCALE_MAX;
    if (conv->calib_samples == 0)
        conv->scale_milli = observed;
    else
        conv->scale_milli = (conv->scale_milli + observed + 1) / 2;
    conv->calib_samples++;
    conv->est_last_raw = 0; /* one calibration per request */
}

int64_t ac_tokens_scale_milli(const ac_conv *conv)
{
    return conv->scale_milli;
}
