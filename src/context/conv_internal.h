/* Private layout of ac_conv, shared by the files of src/context only
 * (conversation.c, conv_json.c, request.c, tokens.c). */
#ifndef AGENTC_CONTEXT_CONV_INTERNAL_H
#define AGENTC_CONTEXT_CONV_INTERNAL_H

#include "context/conversation.h"

/* Token-estimate scale is fixed point, in thousandths. */
#define AC_TOKENS_SCALE_ONE 1000

/* An open-addressing index of strings by their position in an array (call ids, tool names):
 * slot value = position + 1, 0 = empty; n a power of two, or 0. */
typedef struct ac_conv_index {
    uint32_t *slots;
    size_t n;
} ac_conv_index;

struct ac_conv {
    /* Messages in time order. A tool message that is not cleared borrows its
     * content from its record; every other string is owned by its message. */
    ac_message **msgs;
    size_t n_msgs, cap_msgs;

    /* Records in issue order (never removed), and an open-addressing index
     * of them by id: slot value = record index + 1, 0 = empty. */
    ac_tool_call **calls;
    size_t n_calls, cap_calls;
    ac_conv_index call_idx;

    /* Tool definitions in the order added, and their index by name. */
    ac_tool_def *tools;
    size_t n_tools, cap_tools;
    ac_conv_index tool_idx;

    char **iter_calls; /* owned copies of ids */
    size_t n_iter, cap_iter;

    size_t window;
    size_t floor;
    uint64_t next_msg_seq;  /* last message sequence number used */
    uint64_t next_call_seq; /* last generated call sequence number used */

    int64_t last_llm_call_ms;
    int64_t iteration;
    int64_t retries;
    int64_t usage_input;
    int64_t usage_output;
    int64_t last_input;

    /* Token estimate calibration (tokens.c). */
    int64_t est_last_raw; /* raw estimate of the last request sent, 0 = none */
    int64_t scale_milli;  /* AC_TOKENS_SCALE_ONE = 1.0 */
    int64_t calib_samples;

    /* Serialized messages kept between requests (request_cache.c). */
    struct ac_reqcache *reqcache;
};

/* Record index for an id, or (size_t)-1. */
size_t ac_conv__call_index(const ac_conv *conv, const char *id);

/* For each record, the index of the message that issued it, or (size_t)-1
 * (malloc'd array of n_calls entries in *out; NULL when there are none). */
int ac_conv__issuers(const ac_conv *conv, size_t **out);

/* Low-level builders used by the JSON loader. They take ownership of the
 * malloc'd object on success and on failure. */
int ac_conv__push_message(ac_conv *conv, ac_message *m);
int ac_conv__push_call(ac_conv *conv, ac_tool_call *c);
int ac_conv__push_iter_call(ac_conv *conv, const char *id);
void ac_conv__message_free(ac_message *m);
void ac_conv__call_free(ac_tool_call *c);

/* Normalizes a schema string to compact JSON; NULL if not an object. */
char *ac_conv__normalize_schema(const char *schema_json);

char *ac_conv__strdup(const char *s);

#endif
