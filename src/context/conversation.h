/* Conversation data model: the messages, tool definitions and tool call
 * records of one session, plus the ReAct loop's context (window, compaction
 * floor, current iteration's calls) and its counters.
 *
 * The runtime's actions mutate a conversation. Actions are deterministic, so
 * nothing here reads a clock or draws random numbers: every time is passed in
 * (int64 milliseconds since the epoch, taken from the event) and ids are
 * derived from per-conversation sequence numbers ("m1", "m2", ...).
 *
 * Ownership: an ac_conv owns everything reachable from it. Every string passed
 * in is copied, with any byte that is not valid UTF-8 replaced by U+FFFD (so
 * tool output of any kind can be stored and sent as JSON). Pointers handed
 * out (messages, records, ids, strings) are borrowed and stay valid until the
 * object they belong to is removed or the conversation is freed; message
 * pointers survive insertions, record pointers live as long as the
 * conversation (records are never removed). Message indices shift when a
 * message is inserted earlier in time or a range is replaced.
 *
 * Internal-tool calls (AC_MSG_INTERNAL rounds) do get a record, so they can
 * be answered and sent like any call, but they are flagged internal and
 * history search never returns them.
 *
 * Invariants:
 * - messages are sorted by created_at_ms, stable by insertion order;
 * - a tool message exists only for a call that has a result, and at most one
 *   per call; its content is the record's result unless it was cleared;
 * - tool call ids are unique within a conversation.
 */
#ifndef AGENTC_CONTEXT_CONVERSATION_H
#define AGENTC_CONTEXT_CONVERSATION_H

#include <stddef.h>
#include <stdint.h>

typedef struct ac_conv ac_conv;

/* ORDER ROLE: values are stored in the JSON form by name (ac_role_name). */
typedef enum ac_role {
    AC_ROLE_SYSTEM = 0,
    AC_ROLE_USER = 1,
    AC_ROLE_ASSISTANT = 2,
    AC_ROLE_TOOL = 3
} ac_role;

/* Message flags. */
#define AC_MSG_SUMMARY 0x1u  /* a compaction summary */
#define AC_MSG_CLEARED 0x2u  /* tool message: content replaced by a marker */
#define AC_MSG_INTERNAL 0x4u /* part of an internal-tool round */
#define AC_MSG_PINNED 0x8u   /* kept by the "importance" compaction (the spec's pin action) */
#define AC_MSG_FLAGS_ALL 0xFu

typedef enum ac_call_state {
    AC_CALL_NONE = 0, /* issued, no result yet */
    AC_CALL_SUCCESS = 1,
    AC_CALL_FAILURE = 2
} ac_call_state;

/* Status codes of the mutating functions. Values are stable. */
typedef enum ac_conv_status {
    AC_CONV_OK = 0,
    AC_CONV_ENOMEM = -1,    /* allocation failed; the conversation is unchanged */
    AC_CONV_EINVAL = -2,    /* bad argument (NULL, empty name, wrong role, ...) */
    AC_CONV_ENOTFOUND = -3, /* unknown tool call id or message index */
    AC_CONV_EDUP = -4,      /* a second result for the same call */
    AC_CONV_ESPLIT = -5     /* the edit would separate a tool call from its result */
} ac_conv_status;

/* A message, read-only for callers. */
typedef struct ac_message {
    const char *id; /* "m<seq>" */
    ac_role role;
    unsigned flags;        /* AC_MSG_* */
    const char *content;   /* never NULL; "" when none */
    const char *reasoning; /* assistant only; NULL when none */
    /* assistant only: the Anthropic thinking blocks of the turn, a JSON array
     * text sent back verbatim with it (the API checks their signatures);
     * NULL when none */
    const char *thinking;
    /* Assistant: ids of the calls it issued, in the model's order. */
    const char *const *tool_call_ids;
    size_t n_tool_calls;
    const char *tool_call_id; /* tool message only; NULL otherwise */
    int64_t created_at_ms;
    int64_t updated_at_ms;
} ac_message;

/* A tool call record, read-only for callers. */
typedef struct ac_tool_call {
    const char *id;
    const char *name;
    const char *arguments; /* as the model sent it; "" when none */
    int64_t called_at_ms;
    ac_call_state state;
    const char *result; /* content or error text; NULL while AC_CALL_NONE */
    int64_t received_at_ms;
    int internal; /* an internal tool: shown to the model, hidden from search */
} ac_tool_call;

/* A call as the model issued it (input to ac_conv_add_assistant). */
typedef struct ac_tool_call_in {
    const char *id; /* NULL or "" -> "call_<seq>" is generated */
    const char *name;
    const char *arguments; /* NULL -> "" */
    int internal;
} ac_tool_call_in;

typedef struct ac_tool_def {
    const char *name;
    const char *description;
    const char *schema_json; /* compact JSON object, normalized on entry */
} ac_tool_def;

/* A replacement message for ac_conv_replace_range. */
typedef struct ac_message_in {
    ac_role role; /* not AC_ROLE_TOOL */
    const char *content;
    unsigned flags; /* AC_MSG_SUMMARY and/or AC_MSG_INTERNAL */
} ac_message_in;

/* A search over tool call records. Zero fields match everything: name and
 * text NULL, from_ms/to_ms 0 (no bound). The time range is inclusive and
 * applies to called_at_ms. text is a case-sensitive substring of the
 * arguments or the result. */
typedef struct ac_call_query {
    const char *name;
    const char *text;
    int64_t from_ms;
    int64_t to_ms;
    size_t skip; /* matches to skip before filling out (paging) */
} ac_call_query;

const char *ac_role_name(ac_role role);
/* Returns 0 and sets *out, or -1 for an unknown name. */
int ac_role_parse(const char *name, ac_role *out);
const char *ac_conv_strerror(int status);

ac_conv *ac_conv_new(void);
void ac_conv_free(ac_conv *conv);

/* --- messages --- */

/* Appends a system, user or assistant message (no tool calls) at its place in
 * time order. Returns the new message's id (borrowed), or NULL when role is
 * AC_ROLE_TOOL, content is NULL or memory runs out. A message older than the
 * message at the compaction floor lands below the floor (the floor moves up
 * by one), since it belongs to history the last compaction already covered. */
const char *ac_conv_add_message(ac_conv *conv, ac_role role, const char *content, int64_t t_ms);
const char *ac_conv_add_message_flags(ac_conv *conv, ac_role role, const char *content,
                                      unsigned flags, int64_t t_ms);

/* Appends an assistant message that issued `n` tool calls. Each call gets a
 * record (state none, called_at = t_ms) and its id is added to the current
 * iteration's list. content and reasoning may be NULL. A missing id is
 * generated ("call_<seq>"); an id already used in this conversation is made
 * unique by appending "_<seq>" (some servers reuse ids across turns), so read
 * the final ids from the new message. The message is flagged internal when
 * every call is internal. Returns AC_CONV_OK or a status; on error nothing
 * changed. */
/* Sets (NULL: clears) the thinking blocks of assistant message `index`:
 * blocks_json must be a JSON array. AC_CONV_EINVAL for another role or text
 * that is not an array. */
int ac_conv_set_thinking(ac_conv *conv, size_t index, const char *blocks_json);

int ac_conv_add_assistant(ac_conv *conv, const char *content, const char *reasoning,
                          const ac_tool_call_in *calls, size_t n, int64_t t_ms);
/* The same with the turn's thinking blocks (NULL: none; else a JSON array,
 * AC_CONV_EINVAL otherwise), set on the new message whatever its place. */
int ac_conv_add_assistant_thinking(ac_conv *conv, const char *content, const char *reasoning,
                                   const char *thinking, const ac_tool_call_in *calls, size_t n,
                                   int64_t t_ms);

/* Records the result of call `call_id` (ok: success, else failure with
 * `content` as the error text) and appends the tool message for it.
 * AC_CONV_ENOTFOUND for an unknown id, AC_CONV_EDUP when the call already has
 * a result. */
int ac_conv_set_tool_result(ac_conv *conv, const char *call_id, int ok, const char *content,
                            int64_t t_ms);

size_t ac_conv_message_count(const ac_conv *conv);
/* NULL when i is out of range. */
const ac_message *ac_conv_message(const ac_conv *conv, size_t i);
/* Index of the message with this id, or (size_t)-1. Linear. */
size_t ac_conv_find_message(const ac_conv *conv, const char *id);

/* --- tool calls --- */

/* O(1) lookup by id; NULL when unknown. */
const ac_tool_call *ac_conv_tool_call(const ac_conv *conv, const char *id);
size_t ac_conv_tool_call_count(const ac_conv *conv);
/* Records in the order they were issued; NULL when out of range. */
const ac_tool_call *ac_conv_tool_call_at(const ac_conv *conv, size_t i);

/* Fills out[0..cap) with matching non-internal records, newest first, and
 * returns the total number of matches after `skip` (may exceed cap). */
size_t ac_conv_search_calls(const ac_conv *conv, const ac_call_query *q, const ac_tool_call **out,
                            size_t cap);

/* --- tool definitions --- */

/* Adds a tool, or replaces the one with the same name. schema_json must be a
 * JSON object; it is stored in compact form. Returns AC_CONV_EINVAL (with
 * nothing changed) for an empty name or a schema that is not an object. */
int ac_conv_add_tool_def(ac_conv *conv, const char *name, const char *description,
                         const char *schema_json);
size_t ac_conv_tool_def_count(const ac_conv *conv);
const ac_tool_def *ac_conv_tool_def(const ac_conv *conv, size_t i);
const ac_tool_def *ac_conv_find_tool_def(const ac_conv *conv, const char *name);
/* Removes every tool definition (the list is then given again, in order). */
void ac_conv_clear_tool_defs(ac_conv *conv);
/* 1 when the conversation's tool definitions are exactly `defs`, in order: a JSON array of
 * {"name", "description", "parameters"} (the parameters compared in compact form). */
struct json_t;
int ac_conv_tool_defs_equal(const ac_conv *conv, const struct json_t *defs);

/* --- compaction helpers --- */

/* Replaces messages [from, to) by `n` plain messages (new ids). The
 * replacements take the creation time of the first replaced message (or of
 * their neighbour for a pure insertion) so time order holds, and
 * updated_at = t_ms. The range must not separate a call from its result:
 * every tool message inside must answer a call issued inside, and every call
 * issued inside must have its tool message inside (AC_CONV_ESPLIT otherwise).
 * Records stay (history search still finds them). The floor follows: a floor
 * inside the replaced range moves to `from`, one after it shifts. */
int ac_conv_replace_range(ac_conv *conv, size_t from, size_t to, const ac_message_in *repl,
                          size_t n, int64_t t_ms);

/* Replaces the content of tool message `msg_index` by `marker` and flags it
 * cleared; the record keeps the full result. */
int ac_conv_clear_tool_result(ac_conv *conv, size_t msg_index, const char *marker, int64_t t_ms);
/* Flags message msg_index pinned (AC_MSG_PINNED): the "importance" compaction keeps it,
 * and a tool call's result when its call message or its result is pinned. */
int ac_conv_pin(ac_conv *conv, size_t msg_index, int64_t t_ms);
/* Brings a cleared tool message's content back from its record. */
int ac_conv_restore_tool_result(ac_conv *conv, size_t msg_index, int64_t t_ms);

/* --- ReAct context --- */

/* Context window in messages; 0 = everything since the compaction floor. */
size_t ac_conv_window(const ac_conv *conv);
void ac_conv_set_window(ac_conv *conv, size_t messages);
/* Index of the first message after the last compaction. */
size_t ac_conv_floor(const ac_conv *conv);
/* AC_CONV_EINVAL when floor > message count. */
int ac_conv_set_floor(ac_conv *conv, size_t floor);

/* Calls issued in the current loop iteration (by ac_conv_add_assistant). */
size_t ac_conv_iter_call_count(const ac_conv *conv);
const char *ac_conv_iter_call(const ac_conv *conv, size_t i);
/* How many of them have no result yet. */
size_t ac_conv_iter_pending(const ac_conv *conv);
/* Starts a new iteration: clears the list and increments the counter. */
void ac_conv_next_iteration(ac_conv *conv);

/* Indices of the messages the model sees, ascending, in a new malloc'd array
 * (*idx_out, NULL when *n_out is 0). The window is the messages since the
 * floor, limited to the last `window` ones; it is then extended back so no
 * tool message is separated from the assistant message that issued its call,
 * and before it are kept: every non-summary system message, and the first
 * user message and any summary at or after the floor. Tool messages whose
 * call was issued below the floor are left out. Returns AC_CONV_OK or
 * AC_CONV_ENOMEM. */
int ac_conv_visible(const ac_conv *conv, size_t **idx_out, size_t *n_out);

/* --- counters --- */

int64_t ac_conv_last_llm_call_ms(const ac_conv *conv);
void ac_conv_set_last_llm_call_ms(ac_conv *conv, int64_t t_ms);
int64_t ac_conv_iteration(const ac_conv *conv);
void ac_conv_set_iteration(ac_conv *conv, int64_t n);
int64_t ac_conv_retries(const ac_conv *conv);
void ac_conv_set_retries(ac_conv *conv, int64_t n);

/* Adds one response's reported usage to the totals; remembers `input` as the
 * last reported input tokens. Negative values are ignored. */
void ac_conv_add_usage(ac_conv *conv, int64_t input, int64_t output);
int64_t ac_conv_usage_input(const ac_conv *conv);
int64_t ac_conv_usage_output(const ac_conv *conv);
int64_t ac_conv_last_input_tokens(const ac_conv *conv);

/* --- JSON --- */

/* The whole conversation as compact JSON with a fixed key order; the same
 * conversation always gives the same bytes. Returns a malloc'd string (free
 * it), NULL when memory runs out. */
char *ac_conv_to_json(const ac_conv *conv);
/* One message and one tool call record as they appear in that form (new references, NULL
 * when out of memory): what reads a conversation a part at a time serializes. */
struct json_t *ac_conv_message_json(const ac_message *m);
struct json_t *ac_conv_call_json(const ac_tool_call *r);
/* Rebuilds a conversation from ac_conv_to_json output, validating every
 * field and every cross reference. Returns a new conversation, or NULL with a
 * message naming the offending location in err. */
ac_conv *ac_conv_from_json(const char *json, char *err, size_t errcap);

#endif
