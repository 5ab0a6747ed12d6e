/*
 * bench_compaction.c - how many facts each compaction strategy keeps.
 *
 * One session of 200 turns against a scripted OpenAI model on loopback HTTP
 * (tests/support's server; each reply is queued when the session enters
 * CALLING, computed from the conversation). Each turn the user asks, the
 * model calls a tool (a callback tool returning ~1.6 KB of text) and answers.
 * 20 facts are planted, 4 of each kind:
 *   user      the user states it ("remember that ...")
 *   repeated  in a tool result whose value the model's answer repeats
 *   error     in a failed tool result
 *   pinned    in the result of keep_note, a call the spec pins (pin on
 *             llm.completed [calls "keep_*"])
 *   plain     in a tool result nothing refers to again
 * Turn 201 asks for them all; a fact counts as kept when its sentence is in
 * the body of that final request, as the server received it. Every strategy
 * runs with the same budget (compact_threshold) and compaction_keep.
 * summarize's summary is written by a deterministic extractive stub (the
 * sentences of the compacted messages that hold a number), not by a model:
 * a real model's figure depends on that model.
 *
 * make bench_compaction && ./bench_compaction [compact_threshold] [keep]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "agentc/agentc.h"
#include "bench_args.h"
#include "context/conversation.h"
#include "context/tokens.h"
#include "spec.h"
#include "io/loop.h"
#include "test_httpd.h"

#define TURNS 200
#define FACTS 20
#define KINDS 5

static const char *const kinds[KINDS] = {"user", "repeated", "error", "pinned", "plain"};

/* ---- the facts ---- */

/* The turn of fact k, and its sentence. */
static int fact_turn(int k)
{
    return 3 + 9 * k;
}

static void fact_text(int k, char *out, size_t cap)
{
    switch (k % KINDS) {
    case 0:
        snprintf(out, cap, "the badge number of agent K%d is %d", k, 7000 + k * 13);
        break;
    case 1:
        snprintf(out, cap, "the vault V%d combination is %d-%d", k, 4000 + k * 37, 8000 + k * 11);
        break;
    case 2:
        snprintf(out, cap, "mirror site M%d is down since build %d", k, 5000 + k * 7);
        break;
    case 3:
        snprintf(out, cap, "the launch window L%d opens at orbit %d", k, 3000 + k * 19);
        break;
    default:
        snprintf(out, cap, "the archive shelf S%d holds box %d", k, 6000 + k * 23);
    }
}

/* The fact planted at turn t, or -1. */
static int fact_at(int t)
{
    for (int k = 0; k < FACTS; k++)
        if (fact_turn(k) == t)
            return k;
    return -1;
}

/* ~1.6 KB of words without digits. */
static void filler(char *out, size_t cap, int t)
{
    static const char *const words[] = {"river",  "stone",  "lantern", "orchard", "copper",
                                        "meadow", "harbor", "thistle", "granite", "willow"};
    size_t n = 0;
    for (int i = 0; n + 16 < cap && n < 1600; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s ", words[(t * 7 + i * 3) % 10]);
}

/* ---- the tools (callbacks) ---- */

static void search_docs(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    json_t *a = json_loads(args, 0, NULL);
    int t = (int)json_integer_value(json_object_get(a, "turn")), k = fact_at(t);
    json_decref(a);
    char fill[2000], fact[200] = "", out[2400];
    filler(fill, sizeof fill, t);
    if (k >= 0 && k % KINDS == 2) {
        fact_text(k, fact, sizeof fact);
        snprintf(out, sizeof out, "error: %s. %s", fact, fill);
        ac_tool_call_complete(h, 0, out);
        return;
    }
    if (k >= 0 && (k % KINDS == 1 || k % KINDS == 4))
        fact_text(k, fact, sizeof fact);
    snprintf(out, sizeof out, "Results: %s%s%s%s", fill, *fact ? ". Also: " : "", fact,
             *fact ? "." : "");
    ac_tool_call_complete(h, 1, out);
}

static void keep_note(void *ud, const char *args, ac_tool_call_handle *h)
{
    (void)ud;
    json_t *a = json_loads(args, 0, NULL);
    int t = (int)json_integer_value(json_object_get(a, "turn")), k = fact_at(t);
    json_decref(a);
    char fill[2000], fact[200], out[2400];
    filler(fill, sizeof fill, t);
    fact_text(k >= 0 ? k : 0, fact, sizeof fact);
    snprintf(out, sizeof out, "Note kept: %s. %s", fact, fill);
    ac_tool_call_complete(h, 1, out);
}

/* ---- the scripted model ---- */

typedef struct bench {
    ac_loop *loop;
    ac_httpd *srv;
    ac_engine *e;
    ac_session *s;
    const char *strategy;
    int keep;
    int turn; /* the turn under way */
    int compactions, summaries;
} bench;

static void push_sse(bench *b, json_t *delta, const char *finish)
{
    char *d = json_dumps(delta, JSON_COMPACT);
    json_decref(delta);
    size_t n = strlen(d) + 600;
    char *body = malloc(n);
    /* the usage is the engine's own raw estimate, so calibration keeps the scale near 1 */
    ac_request_opts o = {0};
    o.model = "estimate";
    int64_t est = ac_tokens_request_raw(ac_session_conv(b->s), &o);
    snprintf(body, n,
             "data: {\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n"
             "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"%s\"}]}\n\n"
             "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":5,"
             "\"total_tokens\":%lld}}\n\ndata: [DONE]\n\n",
             d, finish, (long long)est, (long long)est + 5);
    ac_httpd_push_simple(b->srv, 200, "Content-Type: text/event-stream\r\n", body);
    free(body);
    free(d);
}

/* The reply to the request about to go: a tool call after the user's message, an answer
 * after the tool's result. */
static void push_reply(bench *b)
{
    const ac_conv *conv = ac_session_conv(b->s);
    const ac_message *last = ac_conv_message(conv, ac_conv_message_count(conv) - 1);
    int t = b->turn, k = fact_at(t);
    if (t >= TURNS) {
        push_sse(b, json_pack("{s:s, s:s}", "role", "assistant", "content", "Here they are."),
                 "stop");
        return;
    }
    if (last->role == AC_ROLE_TOOL) {
        char ans[200] = "Done.";
        if (k >= 0 && k % KINDS == 1)
            snprintf(ans, sizeof ans, "Noted: %d-%d.", 4000 + k * 37, 8000 + k * 11);
        push_sse(b, json_pack("{s:s, s:s}", "role", "assistant", "content", ans), "stop");
        return;
    }
    char args[100], id[32];
    snprintf(args, sizeof args, "{\"turn\": %d}", t);
    snprintf(id, sizeof id, "call_%d", t);
    const char *tool = k >= 0 && k % KINDS == 3 ? "keep_note" : "search_docs";
    push_sse(b,
             json_pack("{s:s, s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}", "role", "assistant",
                       "tool_calls", "index", 0, "id", id, "type", "function", "function", "name",
                       tool, "arguments", args),
             "tool_calls");
}

/* summarize's summary, by a deterministic extractive stub: the sentences holding a number of
 * the messages compaction replaces (after the first user message, before the latest keep
 * turns). */
static void push_summary(bench *b)
{
    const ac_conv *conv = ac_session_conv(b->s);
    size_t n = ac_conv_message_count(conv), from = 0, to = n, turns = 0;
    for (size_t i = ac_conv_floor(conv); i < n; i++)
        if (ac_conv_message(conv, i)->role == AC_ROLE_USER) {
            from = i + 1;
            break;
        }
    for (size_t i = n; i > from; i--) {
        ac_role r = ac_conv_message(conv, i - 1)->role;
        if ((r == AC_ROLE_USER || r == AC_ROLE_ASSISTANT) && ++turns >= (size_t)b->keep) {
            to = i - 1;
            break;
        }
    }
    size_t cap = 32000, len = 0;
    char *sum = calloc(1, cap);
    for (size_t i = from; i < to; i++) {
        const char *c = ac_conv_message(conv, i)->content;
        for (const char *p = c; p && *p;) {
            const char *end = strstr(p, ". ");
            size_t sl = end ? (size_t)(end - p) : strlen(p);
            int digit = 0;
            for (size_t j = 0; j < sl; j++)
                digit |= p[j] >= '0' && p[j] <= '9';
            if (digit && len + sl + 3 < cap) {
                memcpy(sum + len, p, sl);
                len += sl;
                memcpy(sum + len, ". ", 2);
                len += 2;
            }
            p = end ? end + 2 : p + sl;
        }
    }
    push_sse(b, json_pack("{s:s, s:s}", "role", "assistant", "content", len ? sum : "nothing"),
             "stop");
    b->summaries++;
    free(sum);
}

static void on_trace(void *ud, ac_session *s, const ac_trace_rec *rec)
{
    bench *b = ud;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    if (rec->kind != AC_TRACE_TRANSITION || !b->s)
        return;
    const char *to = t->states[rec->to].name;
    if (!strcmp(to, "CALLING"))
        push_reply(b);
    else if (!strcmp(to, "COMPACTING") && !strcmp(b->strategy, "summarize"))
        push_summary(b);
}

static void on_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    (void)s;
    (void)strategy;
    (void)before;
    (void)after;
    ((bench *)ud)->compactions++;
}

/* ---- the spec: the shipped one, and pin on a call to keep_* ---- */

static ac_fsm_tables *pinning_spec(void)
{
    FILE *f = fopen("spec/agent.fsm", "r");
    if (!f) {
        fprintf(stderr, "run from the repository root (spec/agent.fsm)\n");
        exit(1);
    }
    char *src = calloc(1, 1 << 20);
    size_t n = fread(src, 1, (1 << 20) - 4096, f);
    fclose(f);
    src[n] = 0;
    const char *rule = "    STREAMING -> TOOL_EXECUTING on llm.completed [has_tool_calls]";
    char *at = strstr(src, rule), *act = strstr(src, "action apply_compaction");
    if (!at || !act) {
        fprintf(stderr, "spec/agent.fsm changed: no place for pin\n");
        exit(1);
    }
    const char *ins = "    STREAMING -> TOOL_EXECUTING on llm.completed [has_tool_calls && calls "
                      "\"keep_*\"] / record_assistant, pin\n";
    size_t cap = n + 4096, a = (size_t)(act - src), r = (size_t)(at - src);
    char *out = malloc(cap);
    snprintf(out, cap, "%.*saction pin\n%.*s%s%s", (int)a, src, (int)(r - a), src + a, ins,
             src + r);
    free(src);
    ac_spec *spec = ac_spec_parse("bench/pinning.fsm", out, strlen(out));
    free(out);
    if (!spec)
        exit(1);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors) {
        ac_spec_print_diags(spec, stderr);
        exit(1);
    }
    ac_fsm_tables *t = ac_spec_lower(spec, "bench/pinning.fsm");
    ac_spec_free(spec);
    return t;
}

/* ---- one strategy ---- */

static void settle(bench *b)
{
    for (int i = 0; i < 200000 && !ac_session_settled(b->s); i++)
        ac_loop_run_once(b->loop, 50);
}

static int run(const char *strategy, ac_fsm_tables *tables, int threshold, int keep, int *kept_kind,
               size_t *final_bytes, int64_t *final_tokens, int *compactions)
{
    bench b = {0};
    b.strategy = strategy;
    b.keep = keep;
    b.loop = ac_loop_new();
    b.srv = ac_httpd_start();
    char base[64], p1[64], p2[64], p3[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", ac_httpd_port(b.srv));
    snprintf(p1, sizeof p1, "compaction=%s", strategy);
    snprintf(p2, sizeof p2, "compact_threshold=%d", threshold);
    snprintf(p3, sizeof p3, "compaction_keep=%d", keep);
    const char *params[] = {p1, p2, p3, NULL};
    ac_output out = {0};
    out.ud = &b;
    out.trace = on_trace;
    out.compacted = on_compacted;
    ac_engine_config cfg = {0};
    cfg.loop = b.loop;
    cfg.tables = tables;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = base;
    cfg.api_key = "bench-key";
    cfg.model = "bench-model";
    cfg.params = params;
    cfg.output = &out;
    ac_error err;
    b.e = ac_engine_new(&cfg, &err);
    const char *schema = "{\"type\":\"object\",\"properties\":{\"turn\":{\"type\":\"integer\"}}}";
    if (!b.e ||
        ac_engine_add_callback_tool(b.e, "search_docs", "Searches the docs", schema, search_docs,
                                    NULL, &err) ||
        ac_engine_add_callback_tool(b.e, "keep_note", "Keeps a note", schema, keep_note, NULL,
                                    &err) ||
        !(b.s = ac_session_new(b.e, "bench", NULL, &err))) {
        fprintf(stderr, "%s: %s\n", strategy, err.text);
        return -1;
    }
    for (int t = 0; t <= TURNS; t++) {
        char msg[300], fact[200];
        int k = fact_at(t);
        if (t == TURNS)
            snprintf(msg, sizeof msg, "final: list every fact you were given or found");
        else if (k >= 0 && k % KINDS == 0) {
            fact_text(k, fact, sizeof fact);
            snprintf(msg, sizeof msg, "step: please remember that %s. Then look it up.", fact);
        } else
            snprintf(msg, sizeof msg, "step: look up the next topic");
        b.turn = t;
        ac_session_send(b.s, msg);
        settle(&b);
        if (!ac_session_settled(b.s) ||
            strcmp(ac_session_status_name(ac_session_status(b.s)), "idle")) {
            fprintf(stderr, "%s: turn %d did not finish\n", strategy, t);
            return -1;
        }
    }
    if (!strcmp(strategy, "summarize") && b.summaries != b.compactions) {
        fprintf(stderr, "summarize: %d summaries queued for %d compactions\n", b.summaries,
                b.compactions);
        return -1;
    }
    if (strcmp(ac_session_answer(b.s), "Here they are.")) {
        fprintf(stderr, "%s: the model's replies went out of step\n", strategy);
        return -1;
    }
    char *body = NULL;
    size_t blen = 0;
    ac_httpd_request(b.srv, ac_httpd_request_count(b.srv) - 1, NULL, NULL, NULL, &body, &blen);
    int kept = 0;
    for (int k = 0; k < FACTS; k++) {
        char fact[200];
        fact_text(k, fact, sizeof fact);
        if (body && strstr(body, fact)) {
            kept++;
            kept_kind[k % KINDS]++;
        }
    }
    *final_bytes = blen;
    ac_request_opts o = {0};
    o.model = "estimate";
    *final_tokens = ac_tokens_estimate(ac_session_conv(b.s), &o);
    *compactions = b.compactions;
    free(body);
    ac_session_free(b.s);
    ac_engine_free(b.e);
    ac_httpd_stop(b.srv);
    for (int i = 0; i < 10 && ac_loop_pending(b.loop); i++)
        ac_loop_run_once(b.loop, 10);
    ac_loop_free(b.loop);
    return kept;
}

int main(int argc, char **argv)
{
    int threshold = argc > 1 ? (int)bench_arg(argv[1], 1000, 10000000, "compact_threshold") : 24000;
    int keep = argc > 2 ? (int)bench_arg(argv[2], 1, 1000, "compaction_keep") : 4;
    ac_fsm_tables *tables = pinning_spec();
    const char *strategies[] = {"sliding_window", "clear_tool_results", "summarize", "importance"};
    printf("%d turns, %d facts (4 of each kind), compact_threshold=%d, compaction_keep=%d\n\n",
           TURNS, FACTS, threshold, keep);
    printf("| strategy | facts kept | user | repeated | error | pinned | plain | final request "
           "| compactions |\n|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < 4; i++) {
        int kind[KINDS] = {0}, compactions = 0;
        size_t bytes = 0;
        int64_t tokens = 0;
        int kept = run(strategies[i], tables, threshold, keep, kind, &bytes, &tokens, &compactions);
        if (kept < 0)
            return 1;
        printf("| %s%s | %d/%d | %d | %d | %d | %d | %d | %zu KB, %lld tokens | %d |\n",
               strategies[i], i == 2 ? " (extractive stub)" : "", kept, FACTS, kind[0], kind[1],
               kind[2], kind[3], kind[4], (bytes + 500) / 1000, (long long)tokens, compactions);
        fflush(stdout);
    }
    (void)kinds;
    return 0;
}
