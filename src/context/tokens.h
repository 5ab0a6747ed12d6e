/* Token estimates for context decisions (when to compact, how much fits).
 *
 * The raw estimate is byte-based: ceil(bytes / 4) plus a fixed overhead per
 * message, per tool call and per tool definition. Providers count
 * differently, so each conversation carries a calibration scale: after a
 * response reports the real input tokens of a request, the scale moves
 * towards real / raw (clamped to [0.25, 4], averaged with the previous scale
 * after the first sample). Everything is integer arithmetic on data stored in
 * the conversation, so estimates replay identically.
 */
#ifndef AGENTC_CONTEXT_TOKENS_H
#define AGENTC_CONTEXT_TOKENS_H

#include <stdint.h>

#include "context/conversation.h"
#include "context/request.h"

#define AC_TOKENS_PER_MESSAGE 4
#define AC_TOKENS_PER_CALL 8
#define AC_TOKENS_PER_TOOL 8
#define AC_TOKENS_PER_REQUEST 3
#define AC_TOKENS_SCALE_MIN 250 /* thousandths */
#define AC_TOKENS_SCALE_MAX 4000

/* Raw (unscaled) estimate of message i of conv: its content, and for an
 * assistant message the names and arguments of its calls. 0 when i is out of
 * range. */
int64_t ac_tokens_message(const ac_conv *conv, size_t i);

/* Raw estimate of a request: the visible messages (ac_conv_visible) and the
 * tool definitions offered under opts (NULL: all). -1 when memory runs out. */
int64_t ac_tokens_request_raw(const ac_conv *conv, const ac_request_opts *opts);

/* raw scaled by the conversation's calibration. */
int64_t ac_tokens_scale(const ac_conv *conv, int64_t raw);

/* Calibrated estimate of a request: ac_tokens_scale(ac_tokens_request_raw). */
int64_t ac_tokens_estimate(const ac_conv *conv, const ac_request_opts *opts);

/* Call when a request is sent: remembers its raw estimate for the next
 * ac_tokens_calibrate and returns the calibrated estimate (-1 on OOM). */
int64_t ac_tokens_begin_request(ac_conv *conv, const ac_request_opts *opts);

/* Call when the provider reports the request's input tokens. Updates the
 * scale from the raw estimate remembered by ac_tokens_begin_request; does
 * nothing when there is none or reported <= 0. */
void ac_tokens_calibrate(ac_conv *conv, int64_t reported_input);

/* Current scale in thousandths (1000 = 1.0). */
int64_t ac_tokens_scale_milli(const ac_conv *conv);

#endif
