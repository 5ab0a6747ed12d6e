/* Tests for the event scanners (src/llm/delta.rl, stream_fast.c): every
 * recorded stream in tests/llm/streams/ assembles byte-identically with the
 * scanners and with jansson alone (whole, fed in small chunks, and by a stream
 * reset after reading it), the scanners do read the events of those streams
 * they know, and hand-made events at
 * the edges of JSON (escapes, surrogates, bad UTF-8, duplicate members, big
 * numbers) come out identical too, read by the scanner or left to jansson as
 * expected. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "llm/delta.h"
#include "stream_compare.h"

#define STREAMS_DIR "tests/llm/streams"

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (run from the repository root)", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Both readings of in, compared; returns the events the scanners read. */
static size_t check_same(const char *what, ac_wire wire, const char *in, size_t len,
                         size_t max_turn)
{
    size_t fast = 0, fast1 = 0, slow = 0;
    char *a = sc_run(wire, in, len, 0, 1, max_turn, &fast);
    char *b = sc_run(wire, in, len, 0, 0, max_turn, &slow);
    char *c = sc_run(wire, in, len, 7, 1, max_turn, &fast1);
    /* a stream reset after reading the same bytes reads them as a new one */
    char *r = sc_run_on(wire, in, len, 0, 1, max_turn, NULL, 1);
    if (strcmp(a, r) != 0)
        fail_msg("%s: a reset stream differs\n--- new\n%s\n--- reset\n%s", what, a, r);
    free(r);
    assert_int_equal(slow, 0);
    if (strcmp(a, b) != 0)
        fail_msg("%s: scanner and jansson differ\n--- scanner\n%s\n--- jansson\n%s", what, a, b);
    if (strcmp(a, c) != 0)
        fail_msg("%s: scanner fed in 7-byte chunks differs\n--- whole\n%s\n--- chunks\n%s", what, a,
                 c);
    assert_int_equal(fast, fast1);
    free(a);
    free(b);
    free(c);
    return fast;
}

/* Recorded streams whose delta events the scanners must read. */
static const char *const hot[] = {
    "openai_text",        "openai_tools", "anthropic_text", "anthropic_tools", "anthropic_thinking",
    "deepseek_reasoning", "vllm_tools",   "llamacpp_text",  "lmstudio_text",   "openai_refusal"};

static void test_recorded_streams(void **state)
{
    (void)state;
    DIR *d = opendir(STREAMS_DIR);
    assert_non_null(d);
    struct dirent *e;
    int n = 0, n_hot = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".sse") != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", STREAMS_DIR, e->d_name);
        size_t len;
        char *in = read_file(path, &len);
        ac_wire wire = strncmp(e->d_name, "anthropic", 9) == 0 ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI;
        size_t fast = check_same(e->d_name, wire, in, len, 0);
        /* and with a turn cap small enough to fail midway */
        check_same(e->d_name, wire, in, len, 24);
        for (size_t i = 0; i < sizeof hot / sizeof hot[0]; i++)
            if (strlen(hot[i]) == l - 4 && memcmp(hot[i], e->d_name, l - 4) == 0) {
                if (fast == 0)
                    fail_msg("%s: no event read by the scanner", e->d_name);
                n_hot++;
            }
        free(in);
        n++;
    }
    closedir(d);
    assert_true(n >= 16);
    assert_int_equal(n_hot, sizeof hot / sizeof hot[0]);
}

typedef struct edge {
    ac_wire wire;
    int fast; /* 1: the scanner must read it */
    const char *data;
} edge;

#define OA AC_WIRE_OPENAI
#define AN AC_WIRE_ANTHROPIC
#define CH(d)                                                                                      \
    "{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":" d    \
    "}]}"

static const edge edges[] = {
    {OA, 1, CH("{\"content\":\"plain\"}")},
    {OA, 1,
     CH("{\"content\":\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\\u0000z\"}")},
    {OA, 1, CH("{\"content\":\"Bogot\xc3\xa1 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \x7f\"}")},
    {OA, 1, CH("{\"reasoning_content\":\"\",\"reasoning\":\"think\"}")},
    {OA, 1, CH("{\"reasoning_content\":\"rc\",\"reasoning\":\"r\"}")},
    {OA, 1, CH("{\"reasoning\":12,\"content\":null}")},
    {OA, 1, CH("{\"refusal\":\"no\",\"role\":\"assistant\"}")},
    {OA, 1,
     CH("{\"tool_calls\":[{\"index\":3,\"id\":\"c\\u0031\",\"type\":\"function\",\"function\":{"
        "\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}")},
    {OA, 1,
     CH("{\"tool_calls\":[{\"index\":0,\"id\":\"\",\"function\":{\"name\":null,\"arguments\":null}}"
        "]}")},
    {OA, 1, CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\"}}]}")},
    {OA, 1, CH("{\"tool_calls\":null,\"content\":\"x\"}")},
    {OA, 1,
     "{\"choices\":[{\"delta\":{},\"finish_reason\":\"max_tokens\"}],\"usage\":null,\"error\":"
     "null}"},
    {OA, 1, "{\"choices\":[{\"delta\":{},\"finish_reason\":\"\"}]}"},
    {OA, 1, "{\"choices\":[{\"delta\":null,\"finish_reason\":\"st\\u0000op\"}]}"},
    {OA, 1,
     " \t{ \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"w\" } } ] ,"
     " \"a\" : true , \"b\" : false , \"c\" : -12 , \"d\" : 0 , \"e\" : null } \t "},
    /* data lines joined by a line feed */
    {OA, 1, "{\"choices\":[{\"delta\":\n{\"content\":\"two lines\"}}]}"},
    {OA, 1, "{\"object\":\"chat.completion.chunk\",\"created\":-0}"},
    {OA, 1, "{}"},
    /* usage with token details: the cache and reasoning counts */
    {OA, 1,
     "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":-3,\"total_tokens\":12,"
     "\"prompt_tokens_details\":{\"cached_tokens\":0},\"x\":\"y\"}}"},
    {OA, 1,
     "{\"choices\":[],\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":30,"
     "\"prompt_tokens_details\":{\"cached_tokens\":64,\"audio_tokens\":0},"
     "\"completion_tokens_details\":{\"reasoning_tokens\":12,\"audio_tokens\":0,"
     "\"accepted_prediction_tokens\":0}}}"},
    {OA, 1,
     "{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":7},\"completion_tokens\":1,"
     "\"completion_tokens_details\":null}}"},
    {OA, 1, "{\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\":7},\"total_tokens\":1}}"},
    {OA, 1,
     "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":\"7\"},"
     "\"completion_tokens_details\":{\"reasoning_tokens\":null}}}"},
    {OA, 1, "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":3}}"},
    {OA, 0,
     "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":1,"
     "\"cached_tokens\":2}}}"},
    {OA, 0,
     "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":1},"
     "\"prompt_tokens_details\":{}}}"},
    {OA, 0, "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens_details\":{\"cached_tokens\":1.5}}}"},
    {OA, 1,
     "{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":-3,\"total_tokens\":12,"
     "\"x\":\"y\"}}"},
    {OA, 1,
     "{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":"
     "123456789012345678}}"},
    {OA, 1, "{\"usage\":{\"prompt_tokens\":null,\"total_tokens\":3}}"},
    {OA, 1, "{\"usage\":{}}"},
    /* left to jansson */
    {OA, 0, CH("{\"content\":\"a\",\"content\":\"b\"}")},
    {OA, 0, "{\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"choices\":[]}"},
    {OA, 0, CH("{\"content\":\"lone \\ud800 high\"}")},
    {OA, 0, CH("{\"content\":\"lone \\udc00 low\"}")},
    {OA, 0, CH("{\"content\":\"pair \\ud800\\u0041\"}")},
    {OA, 0, CH("{\"content\":\"overlong \xc0\x80\"}")},
    {OA, 0, CH("{\"content\":\"surrogate \xed\xa0\x80\"}")},
    {OA, 0, CH("{\"content\":\"high \xf5\x80\x80\x80\"}")},
    {OA, 0, CH("{\"content\":\"cut \xe6\x97\"}")},
    {OA, 0, CH("{\"content\":\"ctl \x01\"}")},
    {OA, 0, CH("{\"content\":\"bad \\x escape\"}")},
    {OA, 0, CH("{\"content\":5}")},
    {OA, 0, CH("{\"con\\u0074ent\":\"escaped key\"}")},
    {OA, 0, CH("{\"refusal\":[]}")},
    {OA, 0, CH("{\"tool_calls\":[{\"index\":5000,\"function\":{\"arguments\":\"x\"}}]}")},
    {OA, 0, CH("{\"tool_calls\":[{\"function\":{\"arguments\":\"no index\"}}]}")},
    {OA, 0, CH("{\"tool_calls\":[{\"index\":0},{\"index\":1}]}")},
    {OA, 0, CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":{\"a\":1}}}]}")},
    {OA, 0, "{\"temperature\":0.5,\"choices\":[{\"delta\":{\"content\":\"r\"}}]}"},
    {OA, 0, "{\"n\":99999999999999999999,\"choices\":[{\"delta\":{\"content\":\"r\"}}]}"},
    {OA, 0, "{\"object\":\"error\",\"message\":\"boom\",\"type\":\"server_error\"}"},
    {OA, 0, "{\"error\":{\"message\":\"overloaded\"}}"},
    {OA, 0, "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"second\"}}]}"},
    {OA, 0, "{\"choices\":[],\"usage\":{\"prompt_tokens\":3.0,\"completion_tokens\":4}}"},
    {OA, 0, "{\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":2}}"},
    {OA, 0, "{\"usage\":{\"d\":{\"e\":{}}}}"},
    {OA, 0, "{\"usage\":{\"prompt_tokens\":1234567890123456789}}"},
    {OA, 0, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"x_groq\":{\"id\":\"q\"}}"},
    {OA, 0, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]} x"},
    {OA, 0, "{\"choices\":[{\"delta\":{\"content\":\"x\"}}]"},
    {OA, 0, "[1]"},
    {OA, 0, "{\"a\":01}"},
    {OA, 0, "{\"a\":nul}"},
    {AN, 1,
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
     "\"hi \\u00e9\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\","
     "\"thinking\":\"hmm\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"signature_delta\","
     "\"signature\":\"c2ln\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
     "\"partial_json\":\"{\\\"q\\\": \"}}"},
    {AN, 1,
     "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\","
     "\"partial_json\":\"\"}}"},
    {AN, 1,
     "{\"delta\":{\"text\":\"order\",\"type\":\"text_delta\",\"x\":1},\"index\":0,\"type\":"
     "\"content_block_delta\"}"},
    {AN, 0, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":7}"
     "}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\","
     "\"thinking\":\"x\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"input_json_delta\","
     "\"partial_json\":\"x\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":2000000,\"delta\":{\"type\":\"text_delta\","
     "\"text\":\"x\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_del\\u0074a\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
     "\"text\":\"x\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\","
     "\"citation\":{}}}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":0,\"index\":1,\"delta\":{\"type\":\"text_delta\","
     "\"text\":\"x\"}}"},
    {AN, 1, "{\"type\":\"ping\"}"},
    {AN, 1, "{ \"type\" : \"message_stop\" , \"x\" : 1 }"},
    {AN, 1,
     "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":"
     "\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":"
     "null,\"usage\":{\"input_tokens\":472,\"cache_creation_input_tokens\":10,"
     "\"cache_read_input_tokens\":2000,\"output_tokens\":1,\"service_tier\":\"standard\","
     "\"cache_creation\":{\"ephemeral_5m_input_tokens\":10}}}}"},
    {AN, 1,
     "{\"type\":\"message_start\",\"message\":{\"id\":\"m\\u00e9\\u0000x\",\"model\":7,\"usage\":"
     "{\"input_tokens\":null,\"cache_read_input_tokens\":3,\"output_tokens\":\"2\"}}}"},
    {AN, 1,
     "{\"type\":\"message_start\",\"message\":{\"usage\":{\"cache_read_input_tokens\":3,"
     "\"input_tokens\":-4}}}"},
    {AN, 1, "{\"type\":\"message_start\",\"message\":{\"usage\":null}}"},
    {AN, 1, "{\"type\":\"message_start\",\"message\":{}}"},
    {AN, 0, "{\"type\":\"message_start\"}"},
    {AN, 0, "{\"type\":\"message_start\",\"message\":{\"content\":[{\"type\":\"text\"}]}}"},
    {AN, 0,
     "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"input_tokens\":2}"
     "}}"},
    {AN, 0, "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1.5}}}"},
    {AN, 1,
     "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
     "\"usage\":{\"output_tokens\":15}}"},
    {AN, 1, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null},\"usage\":null}"},
    {AN, 1, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"\"},\"usage\":{}}"},
    {AN, 1, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"a\\u0000b\"}}"},
    {AN, 1,
     "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3,\"input_tokens\":9,"
     "\"cache_creation_input_tokens\":1}}"},
    {AN, 0, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":{}}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":"
     "\"start \\\"text\\\"\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":"
     "null,\"citations\":[]}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"thinking\","
     "\"thinking\":\"Then \\u00e9\",\"signature\":\"c2\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":"
     "\"redacted_thinking\",\"data\":\"RW1\\u0000zz\",\"thinking\":\"ignored\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":"
     "\"redacted_thinking\"}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\","
     "\"id\":\"toolu_\\u0031\",\"name\":\"get\",\"input\":{}}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\","
     "\"id\":5,\"input\":{\"a\":1}}}"},
    {AN, 1,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":"
     "\"server_tool_use\",\"id\":\"srv\",\"name\":\"web_search\",\"input\":{}}}"},
    {AN, 1, "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\"}}"},
    {AN, 0, "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":1}}"},
    {AN, 0, "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{}}"},
    {AN, 0, "{\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_start\",\"index\":3000000,\"content_block\":{\"type\":\"text\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"te\\u0078t\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\","
     "\"input\":{\"a\":{\"b\":1}}}}"},
    {AN, 0,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\"},"
     "\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}"},
    {AN, 0,
     "{\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":"
     "\"a\",\"text\":\"b\"}}"},
    {AN, 1, "{\"type\":\"content_block_stop\",\"index\":2}"},
    {AN, 1, "{\"type\":\"content_block_stop\",\"index\":0}"},
    {AN, 1, "{\"type\":\"content_block_stop\",\"index\":77}"},
    {AN, 0, "{\"type\":\"content_block_stop\"}"},
    {AN, 0, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"o\"}}"},
    {AN, 0, "{\"type\":\"something_new\"}"},
    {AN, 0, "{\"index\":0}"},
    {AN, 0,
     "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":"
     "\"\\ud83d\"}}"},
};

static const char OA_HEAD[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
static const char OA_TAIL[] = "data: [DONE]\n\n";
static const char AN_HEAD[] =
    "event: message_start\ndata: "
    "{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":"
    "5,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,"
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}}\n\n";
static const char AN_TAIL[] = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/* Events of the head the scanner reads, for the wire. */
static size_t head_fast(int an)
{
    const char *head = an ? AN_HEAD : OA_HEAD;
    return check_same("head", an ? AC_WIRE_ANTHROPIC : AC_WIRE_OPENAI, head, strlen(head), 0);
}

static void test_edges(void **state)
{
    (void)state;
    size_t base[2] = {head_fast(0), head_fast(1)};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        const edge *e = &edges[i];
        int an = e->wire == AC_WIRE_ANTHROPIC;
        size_t dl = strlen(e->data);
        size_t cap = dl + 4096;
        char *in = malloc(cap);
        assert_non_null(in);
        /* a line feed in the data becomes a second data line */
        int n = snprintf(in, cap, "%sdata: ", an ? AN_HEAD : OA_HEAD);
        for (const char *c = e->data; *c; c++)
            n += *c == '\n' ? snprintf(in + n, cap - (size_t)n, "\ndata: ")
                            : snprintf(in + n, cap - (size_t)n, "%c", *c);
        n += snprintf(in + n, cap - (size_t)n, "\n\n%s", an ? AN_TAIL : OA_TAIL);
        assert_true(n > 0 && (size_t)n < cap);
        char what[64];
        snprintf(what, sizeof what, "edge case %zu", i);
        check_same(what, e->wire, in, (size_t)n, 0);
        /* the events the scanner read, up to the edge's (the tail is not read after an error) */
        size_t fast = check_same(what, e->wire, in, (size_t)n - strlen(an ? AN_TAIL : OA_TAIL), 0);
        size_t want = (size_t)e->fast + base[an];
        if (fast != want)
            fail_msg("%s (%s): %zu events read by the scanner, expected %zu", what, e->data, fast,
                     want);
        free(in);
    }
}

/* The first event names the response: its id and model, read by the scanner
 * as the decoder reads them (escapes, NULs, other types, long names). */
static void test_first_event(void **state)
{
    (void)state;
    char model[400];
    memset(model, 'm', sizeof model - 1);
    model[sizeof model - 1] = '\0';
    char big[600];
    snprintf(big, sizeof big, "{\"id\":\"c\",\"model\":\"%s\",\"choices\":[]}", model);
    const struct {
        int fast;
        const char *data;
    } first[] = {
        {1, "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,"
            "\"model\":\"gpt-x\",\"system_fingerprint\":\"fp\",\"choices\":[{\"index\":0,"
            "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},"
            "\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"},
        {1, "{\"id\":\"c\\u00e9\\u0000x\",\"model\":\"m\\/1\",\"choices\":[]}"},
        {1, "{\"id\":12,\"model\":null}"},
        {1, "{\"choices\":[{\"delta\":{\"content\":\"no names\"}}]}"},
        {1, big},
        {0, "{\"id\":\"a\",\"id\":\"b\",\"choices\":[]}"},
        {0, "{\"id\":\"a\",\"model\":{\"n\":1},\"choices\":[]}"},
        {0, "{\"id\":\"a\",\"object\":\"error\",\"message\":\"no\"}"},
    };
    for (size_t i = 0; i < sizeof first / sizeof first[0]; i++) {
        char in[2048];
        int n = snprintf(in, sizeof in,
                         "data: %s\n\ndata: {\"id\":\"later\",\"model\":\"other\","
                         "\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n%s",
                         first[i].data, OA_TAIL);
        assert_true(n > 0 && (size_t)n < sizeof in);
        char what[64];
        snprintf(what, sizeof what, "first event %zu", i);
        size_t fast = check_same(what, AC_WIRE_OPENAI, in, (size_t)n, 0);
        if (fast != (size_t)first[i].fast + 1)
            fail_msg("%s: %zu events read by the scanner", what, fast);
    }
}

/* The decoder of escapes against the strings jansson would make. */
static void test_unescape(void **state)
{
    (void)state;
    ac_dspan s = {"a\\u00e9\\ud83d\\ude00\\/\\u0000b", 0, 1, 1};
    s.n = strlen(s.p);
    char out[64];
    long n = ac_delta_unescape(&s, out);
    assert_int_equal(n, 1 + 2 + 4 + 1 + 1 + 1);
    assert_memory_equal(out, "a\xc3\xa9\xf0\x9f\x98\x80/\0b", 11);
    ac_dspan bad = {"\\ud83dx", 7, 1, 1};
    assert_int_equal(ac_delta_unescape(&bad, out), -1);
    ac_dspan cut = {"\\ud83d", 6, 1, 1};
    assert_int_equal(ac_delta_unescape(&cut, out), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorded_streams),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_first_event),
        cmocka_unit_test(test_unescape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
