/* libFuzzer target: the event scanners (src/llm/delta.rl, stream_fast.c) against
 * jansson: the deltas and the other events they read (OpenAI's first chunk and
 * usage details; Anthropic's message_start, content_block_start and _stop,
 * message_delta, message_stop, ping).
 * Every input is assembled twice, once with the scanners and once with every
 * event read by jansson, and everything observable (sink calls, the turn, the
 * status and error text) must be byte-identical; also when fed in small chunks,
 * and to a stream reset after reading the same bytes (nothing of them left).
 * The first byte picks the wire (bit 0: Anthropic) and the form (bit 1: the
 * rest is one event's data, wrapped in a stream that opens text, thinking and
 * tool blocks; else the whole input is the event stream). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream_compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char OA_HEAD[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
    "data: ";
static const char OA_TAIL[] = "\n\ndata: [DONE]\n\n";
static const char AN_HEAD[] =
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,"
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\n\n"
    "data: ";
static const char AN_TAIL[] = "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static void compare(ac_wire wire, const char *in, size_t len, size_t max_turn)
{
    size_t fast = 0, slow = 0, fast_chunks = 0;
    char *a = sc_run(wire, in, len, 0, 1, max_turn, &fast);
    char *b = sc_run(wire, in, len, 0, 0, max_turn, &slow);
    char *c = sc_run(wire, in, len, 3, 1, max_turn, &fast_chunks);
    char *r = sc_run_on(wire, in, len, 0, 1, max_turn, NULL, 1);
    if (strcmp(a, b) != 0 || strcmp(a, c) != 0 || strcmp(a, r) != 0 || slow != 0 ||
        fast != fast_chunks)
        abort();
    free(r);
    free(a);
    free(b);
    free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ac_wire wire = data[0] & 1 ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    size_t max_turn = data[0] & 4 ? 40 : 0;
    if (!(data[0] & 2)) {
        compare(wire, rest, n, max_turn);
        return 0;
    }
    /* one event: line breaks in the data become data lines */
    const char *head = wire == AC_WIRE_ANTHROPIC ? AN_HEAD : OA_HEAD;
    const char *tail = wire == AC_WIRE_ANTHROPIC ? AN_TAIL : OA_TAIL;
    size_t hl = strlen(head), tl = strlen(tail);
    char *in = malloc(hl + 7 * n + tl + 1);
    if (!in)
        return 0;
    size_t k = 0;
    memcpy(in, head, hl);
    k = hl;
    for (size_t i = 0; i < n; i++) {
        if (rest[i] == '\n' || rest[i] == '\r') {
            memcpy(in + k, "\ndata: ", 7);
            k += 7;
        } else {
            in[k++] = rest[i];
        }
    }
    memcpy(in + k, tail, tl);
    k += tl;
    compare(wire, in, k, max_turn);
    free(in);
    return 0;
}
