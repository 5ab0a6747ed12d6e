/* libFuzzer target for the SSE scanner and both stream decoders. The input is fed
 * to an OpenAI and an Anthropic stream in chunks whose sizes come from a simple
 * generator seeded by the input, and once to a bare scanner with small caps. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "llm/sse.h"
#include "llm/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_event(void *ud, const ac_sse_event *ev)
{
    size_t *n = ud;
    *n += ev->data_len + ev->event_len + ev->id_len;
    return 0;
}

static void sink_text(void *ud, const char *s, size_t n)
{
    size_t *total = ud;
    if (n)
        *total += (unsigned char)s[n - 1];
}

static void sink_tool(void *ud, int index, const char *id, const char *name, const char *args,
                      size_t n)
{
    size_t *total = ud;
    *total += (size_t)index + (id ? strlen(id) : 0) + (name ? strlen(name) : 0) + n;
    if (n)
        *total += (unsigned char)args[n - 1];
}

static uint32_t seed_of(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size && i < 64; i++)
        h = (h ^ data[i]) * 16777619u;
    return h | 1;
}

static size_t next_chunk(uint32_t *x, size_t left)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    size_t n = 1 + (*x % 64);
    if ((*x >> 8) % 8 == 0)
        n = 1;
    return n < left ? n : left;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t total = 0;
    for (int w = 0; w < 2; w++) {
        ac_stream_sink sink = {&total, sink_text, sink_text, sink_text, sink_tool};
        ac_stream *st =
            ac_stream_new_ex(w ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI, &sink, 1 << 16, 4096, 1 << 16);
        if (!st)
            return 0;
        uint32_t x = seed_of(data, size) + (uint32_t)w;
        size_t off = 0;
        while (off < size) {
            size_t n = next_chunk(&x, size - off);
            if (ac_stream_feed(st, in + off, n) != 0)
                break;
            off += n;
        }
        ac_stream_finish(st);
        const ac_stream_turn *t = ac_stream_turn_get(st);
        total += t->text_len + t->reasoning_len + t->n_tool_calls + strlen(ac_stream_error(st));
        ac_stream_free(st);
    }
    ac_sse *s = ac_sse_new(32, 64, count_event, NULL, &total);
    if (s) {
        ac_sse_feed(s, in, size);
        ac_sse_finish(s);
        ac_sse_free(s);
    }
    return total == (size_t)-1; /* keeps total observable */
}
