/*
 * test_compaction.c - compaction through a real engine: a long conversation
 * with tool rounds and a small compact_threshold, for each strategy. The
 * request the provider would send after compaction must still be valid for
 * the OpenAI API (every tool message right after its assistant call, in
 * order) and smaller than before; summarize asks the provider (the next
 * scripted turn) and puts one marked summary message in place.
 */
#include "../tools/session_rig.h"

typedef struct capture {
    size_t before_size; /* request size when COMPACTING was entered */
    const char *bad;    /* request invalid when COMPACTING was entered */
    int compactions;
    size_t msgs_before, msgs_after;
    char strategy[32];
} capture;

static void on_trace(void *ud, ac_session *s, const ac_trace_rec *rec)
{
    capture *c = ud;
    const ac_fsm_tables *t = ac_engine_tables(ac_session_engine(s));
    if (rec->kind == AC_TRACE_TRANSITION && strcmp(t->states[rec->to].name, "COMPACTING") == 0 &&
        c->before_size == 0) {
        json_t *req = rig_request(ac_session_conv(s));
        c->bad = rig_openai_valid(req);
        json_decref(req);
        c->before_size = rig_request_size(ac_session_conv(s));
    }
}

static void on_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    (void)s;
    capture *c = ud;
    if (c->compactions++ == 0) {
        c->msgs_before = before;
        c->msgs_after = after;
        snprintf(c->strategy, sizeof c->strategy, "%s", strategy ? strategy : "");
    }
}

/* 30 earlier interactions with a big tool result each, written straight into
 * the session's conversation (times in the past, in order). */
static void prefill(ac_conv *conv, int rounds)
{
    int64_t t = 1700000000000;
    char big[2100], q[64], id[32], args[64];
    memset(big, 'r', 2000);
    big[2000] = 0;
    for (int i = 0; i < rounds; i++) {
        snprintf(q, sizeof q, "question %d", i);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_USER, q, t++));
        snprintf(id, sizeof id, "old%d", i);
        snprintf(args, sizeof args, "{\"path\":\"file%d\"}", i);
        ac_tool_call_in calls[2] = {{id, "read", args, 0}, {NULL, "read", "{}", 0}};
        assert_int_equal(ac_conv_add_assistant(conv, "", NULL, calls, 2, t++), AC_CONV_OK);
        const ac_message *a = ac_conv_message(conv, ac_conv_message_count(conv) - 1);
        /* results arrive in reverse order */
        assert_int_equal(ac_conv_set_tool_result(conv, a->tool_call_ids[1], 1, "small", t++),
                         AC_CONV_OK);
        assert_int_equal(ac_conv_set_tool_result(conv, a->tool_call_ids[0], 1, big, t++),
                         AC_CONV_OK);
        snprintf(q, sizeof q, "answer %d", i);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_ASSISTANT, q, t++));
    }
}

static void run_strategy(const char *strategy, const char *turns, capture *cap, rig *r)
{
    char p1[64];
    snprintf(p1, sizeof p1, "compaction=%s", strategy);
    const char *params[] = {p1, "compact_threshold=3000", "compaction_keep=2", NULL};
    const char *tools[] = {"builtin:calculator", NULL};
    memset(cap, 0, sizeof *cap);
    static ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = cap;
    out.trace = on_trace;
    out.compacted = on_compacted;
    rig_open(r, turns, params, tools, &out);
    prefill(ac_session_conv(r->s), 30);
    ac_session_send(r->s, "and now?");
    rig_settle(r);
    assert_string_equal(ac_session_status_name(ac_session_status(r->s)), "idle");
    if (cap->bad)
        fail_msg("request before compaction invalid: %s", cap->bad);
    assert_true(cap->compactions >= 1);
    assert_string_equal(cap->strategy, strategy);
    json_t *req = rig_request(ac_session_conv(r->s));
    const char *bad = rig_openai_valid(req);
    if (bad)
        fail_msg("%s: request after compaction invalid: %s", strategy, bad);
    json_decref(req);
    size_t after = rig_request_size(ac_session_conv(r->s));
    print_message("%s: request %zu -> %zu bytes, messages %zu -> %zu\n", strategy, cap->before_size,
                  after, cap->msgs_before, cap->msgs_after);
    assert_true(after < cap->before_size / 2);
}

static const char *tool_then_answer =
    "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"calculator\",\"arguments\":"
    "\"{\\\"expression\\\":\\\"6*7\\\"}\"}]}\n"
    "{\"content\":\"42, as before.\"}\n";

static void test_sliding_window(void **state)
{
    (void)state;
    capture cap;
    rig r;
    run_strategy("sliding_window", tool_then_answer, &cap, &r);
    assert_true(cap.msgs_after < cap.msgs_before);
    assert_string_equal(ac_session_answer(r.s), "42, as before.");
    /* the records stay: history search still finds the dropped calls */
    ac_call_query q;
    memset(&q, 0, sizeof q);
    q.name = "read";
    const ac_tool_call *hits[4];
    assert_int_equal(ac_conv_search_calls(ac_session_conv(r.s), &q, hits, 4), 60);
    rig_close(&r);
}

static void test_clear_tool_results(void **state)
{
    (void)state;
    capture cap;
    rig r;
    run_strategy("clear_tool_results", tool_then_answer, &cap, &r);
    assert_int_equal(cap.msgs_after, cap.msgs_before);
    ac_conv *conv = ac_session_conv(r.s);
    size_t cleared = 0;
    for (size_t i = 0; i < ac_conv_message_count(conv); i++)
        if (ac_conv_message(conv, i)->flags & AC_MSG_CLEARED)
            cleared++;
    assert_true(cleared >= 58);
    /* the full result is still in the record */
    assert_int_equal(strlen(ac_conv_tool_call(conv, "old0")->result), 2000);
    rig_close(&r);
}

static void test_summarize(void **state)
{
    (void)state;
    capture cap;
    rig r;
    const char *turns = "{\"content\":\"The user asked 30 questions; each answer read a file.\"}\n"
                        "{\"tool_calls\":[{\"id\":\"n1\",\"name\":\"calculator\",\"arguments\":"
                        "\"{\\\"expression\\\":\\\"6*7\\\"}\"}]}\n"
                        "{\"content\":\"42, as before.\"}\n";
    run_strategy("summarize", turns, &cap, &r);
    assert_int_equal(cap.compactions, 1);
    assert_string_equal(ac_session_answer(r.s), "42, as before.");
    ac_conv *conv = ac_session_conv(r.s);
    size_t summaries = 0;
    const char *text = NULL;
    for (size_t i = 0; i < ac_conv_message_count(conv); i++)
        if (ac_conv_message(conv, i)->flags & AC_MSG_SUMMARY) {
            summaries++;
            text = ac_conv_message(conv, i)->content;
        }
    assert_int_equal(summaries, 1);
    char want[80];
    snprintf(want, sizeof want, "[summary of %zu earlier messages] The user asked 30",
             cap.msgs_before - cap.msgs_after + 1);
    assert_non_null(text);
    if (strncmp(text, want, strlen(want)) != 0)
        fail_msg("summary message: '%s', expected it to start with '%s'", text, want);
    /* the summary is in the request the model gets */
    json_t *req = rig_request(conv);
    char *body = json_dumps(req, JSON_COMPACT);
    assert_non_null(strstr(body, "[summary of "));
    free(body);
    json_decref(req);
    rig_close(&r);
}

/* A failed summary request does not stop the turn: compaction is skipped. */
static void test_summarize_failure(void **state)
{
    (void)state;
    capture cap;
    rig r;
    const char *turns = "{\"error\":{\"status\":500,\"message\":\"summary backend down\"}}\n"
                        "{\"content\":\"answered anyway\"}\n";
    const char *params[] = {"compaction=summarize", "compact_threshold=3000", "compaction_keep=2",
                            NULL};
    memset(&cap, 0, sizeof cap);
    static ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = &cap;
    out.compacted = on_compacted;
    rig_open(&r, turns, params, NULL, &out);
    prefill(ac_session_conv(r.s), 30);
    ac_session_send(r.s, "and now?");
    rig_settle(&r);
    assert_string_equal(ac_session_answer(r.s), "answered anyway");
    assert_int_equal(cap.compactions, 0);
    rig_close(&r);
}

static void test_importance(void **state)
{
    (void)state;
    capture cap;
    rig r;
    run_strategy("importance", tool_then_answer, &cap, &r);
    assert_int_equal(cap.msgs_after, cap.msgs_before); /* stubs in place: nothing moves */
    ac_conv *conv = ac_session_conv(r.s);
    const ac_message *m = ac_conv_message(conv, 3); /* old0's result */
    assert_string_equal(m->tool_call_id, "old0");
    assert_string_equal(m->content, "[result of read dropped: 2 KB]");
    assert_int_equal(strlen(ac_conv_tool_call(conv, "old0")->result), 2000); /* the record */
    assert_string_equal(ac_session_answer(r.s), "42, as before.");
    rig_close(&r);
}

/* 14 rounds with a 2 KB result each: k3 fails, k1's value is repeated by its answer, k5
 * writes the State (an _outputPath argument) and k10 too (note prescribes it), k7 is pinned
 * on its call and k9 on its result; then importance compacts at threshold. Fails unless each
 * of kept is whole and each of stubbed a stub. */
static void importance_case(const char *threshold, const char *const *kept,
                            const char *const *stubbed)
{
    char p2[64];
    snprintf(p2, sizeof p2, "compact_threshold=%s", threshold);
    const char *params[] = {"compaction=importance", p2, "compaction_keep=2", NULL};
    char path[512];
    rig_write("note.json",
              "{\"tools\": [{\"name\": \"note\", \"description\": \"d\", \"command\": "
              "[\"true\"], \"parameters\": {\"type\": \"object\", \"properties\": "
              "{\"_outputPath\": {\"const\": \"\xe2\x80\xa0state.notes\"}}}}]}",
              path, sizeof path);
    const char *tools[] = {path, NULL};
    rig r;
    rig_open(&r, tool_then_answer, params, tools, NULL);
    ac_conv *conv = ac_session_conv(r.s);
    int64_t t = 1700000000000;
    char big[2100], id[16], q[64];
    for (int i = 0; i < 14; i++) {
        snprintf(q, sizeof q, "question %d", i);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_USER, q, t++));
        snprintf(id, sizeof id, "k%d", i);
        const char *args = i == 5 ? "{\"path\":\"f\",\"_outputPath\":\"/notes\"}" : "{}";
        ac_tool_call_in calls[1] = {{id, i == 10 ? "note" : "read", args, 0}};
        assert_int_equal(ac_conv_add_assistant(conv, "", NULL, calls, 1, t++), AC_CONV_OK);
        if (i == 7) /* pinned on the call */
            assert_int_equal(ac_conv_pin(conv, ac_conv_message_count(conv) - 1, t), AC_CONV_OK);
        memset(big, 'x', 2000);
        big[2000] = 0;
        snprintf(big, sizeof big, "vault %d opens with code-%d%d ", i, i, i * 7);
        big[strlen(big)] = 'x';
        assert_int_equal(ac_conv_set_tool_result(conv, id, i != 3, big, t++), AC_CONV_OK);
        if (i == 9) /* pinned on the result */
            assert_int_equal(ac_conv_pin(conv, ac_conv_message_count(conv) - 1, t), AC_CONV_OK);
        char ans[64];
        snprintf(ans, sizeof ans, i == 1 ? "noted code-%d%d" : "answer %d", i, i * 7);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_ASSISTANT, ans, t++));
    }
    ac_session_send(r.s, "and now?");
    rig_settle(&r);
    for (size_t i = 0; i < ac_conv_message_count(conv); i++) {
        const ac_message *m = ac_conv_message(conv, i);
        for (int k = 0; m->tool_call_id && kept[k]; k++)
            if (!strcmp(m->tool_call_id, kept[k]) && (m->flags & AC_MSG_CLEARED))
                fail_msg("%s was stubbed: %s", kept[k], m->content);
        for (int k = 0; m->tool_call_id && stubbed[k]; k++)
            if (!strcmp(m->tool_call_id, stubbed[k]) &&
                strcmp(m->content, !strcmp(stubbed[k], "k10") ? "[result of note dropped: 2 KB]"
                                                              : "[result of read dropped: 2 KB]"))
                fail_msg("%s was kept: %.60s", stubbed[k], m->content);
    }
    /* every user message is there */
    json_t *req = rig_request(conv);
    assert_int_equal(rig_count_role(req, "user"), 15);
    assert_null(rig_openai_valid(req));
    json_decref(req);
    rig_close(&r);
}

/* What importance keeps: user messages, tool errors, results a later assistant message
 * repeats a value of, the results of calls writing the State, pinned results (on the result
 * or the call), and the latest turns; the rest becomes stubs. */
static void test_importance_keeps(void **state)
{
    (void)state;
    const char *kept[] = {"k1", "k3", "k5", "k7", "k9", "k10", NULL};
    const char *stubbed[] = {"k0", "k2", "k4", "k6", "k8", "k11", "k12", "k13", NULL};
    importance_case("6000", kept, stubbed);
}

/* With a smaller budget the results kept softly (referred to, writing the State) go too,
 * oldest first, until the estimate is under 3/4 of it; errors and pins stay. */
static void test_importance_budget(void **state)
{
    (void)state;
    const char *kept[] = {"k3", "k7", "k9", "k10", NULL};
    const char *stubbed[] = {"k0", "k1", "k2", "k4", "k5", "k6", "k8", "k11", NULL};
    importance_case("4000", kept, stubbed);
}

/* ---- the property: no strategy ever separates a call from its result ---- */

static unsigned rnd(unsigned *st)
{
    *st = *st * 1103515245u + 12345u;
    return (*st >> 16) & 0x7fff;
}

/* A random conversation: rounds of a user message, an assistant message with 0 to 3 calls
 * whose results arrive in a random order (random sizes, some failures, some values the
 * answer repeats, some pins), and an answer. */
static void random_fill(ac_conv *conv, unsigned seed)
{
    unsigned st = seed;
    int64_t t = 1700000000000;
    int rounds = 8 + (int)(rnd(&st) % 30);
    char *body = malloc(4000);
    assert_non_null(body);
    for (int i = 0; i < rounds; i++) {
        char q[64], ids[3][24];
        snprintf(q, sizeof q, "question %d", i);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_USER, q, t++));
        int nc = (int)(rnd(&st) % 4);
        ac_tool_call_in calls[3];
        for (int k = 0; k < nc; k++) {
            snprintf(ids[k], sizeof ids[k], "r%d_%d", i, k);
            calls[k] = (ac_tool_call_in){ids[k], k ? "search" : "read",
                                         rnd(&st) % 5 ? "{}" : "{\"_outputPath\":\"/x\"}", 0};
        }
        if (nc) {
            assert_int_equal(ac_conv_add_assistant(conv, "", NULL, calls, (size_t)nc, t++),
                             AC_CONV_OK);
            if (rnd(&st) % 7 == 0)
                ac_conv_pin(conv, ac_conv_message_count(conv) - 1, t);
        }
        for (int done = 0, order = (int)rnd(&st); done < nc; done++) {
            int k = (order + done) % nc;
            size_t len = 10 + rnd(&st) % 3000;
            memset(body, 'a' + (char)(rnd(&st) % 26), len);
            body[len] = 0;
            snprintf(body, 40, "id-%d%d ", i, k);
            body[strlen(body)] = 'z';
            assert_int_equal(ac_conv_set_tool_result(conv, ids[k], rnd(&st) % 6 != 0, body, t++),
                             AC_CONV_OK);
            if (rnd(&st) % 9 == 0)
                ac_conv_pin(conv, ac_conv_message_count(conv) - 1, t);
        }
        snprintf(q, sizeof q, rnd(&st) % 4 ? "answer %d" : "answer id-%d0", i);
        assert_non_null(ac_conv_add_message(conv, AC_ROLE_ASSISTANT, q, t++));
    }
    free(body);
}

static void test_pairs_never_separated(void **state)
{
    (void)state;
    const char *strategies[] = {"sliding_window", "clear_tool_results", "importance"};
    for (unsigned seed = 1; seed <= 40; seed++)
        for (size_t k = 0; k < 3; k++) {
            char p1[64], p2[64];
            snprintf(p1, sizeof p1, "compaction=%s", strategies[k]);
            snprintf(p2, sizeof p2, "compaction_keep=%u", seed % 4);
            const char *params[] = {p1, "compact_threshold=2000", p2, NULL};
            const char *tools[] = {"builtin:calculator", NULL};
            rig r;
            rig_open(&r, tool_then_answer, params, tools, NULL);
            ac_conv *conv = ac_session_conv(r.s);
            random_fill(conv, seed);
            size_t users = 0;
            for (size_t i = 0; i < ac_conv_message_count(conv); i++)
                users += ac_conv_message(conv, i)->role == AC_ROLE_USER;
            ac_session_send(r.s, "and now?");
            rig_settle(&r);
            json_t *req = rig_request(conv);
            const char *bad = rig_openai_valid(req);
            if (bad)
                fail_msg("seed %u, %s: %s", seed, strategies[k], bad);
            if (k == 2) { /* importance: no user message and no pinned result lost */
                assert_int_equal(rig_count_role(req, "user"), users + 1);
                for (size_t i = 0; i < ac_conv_message_count(conv); i++) {
                    const ac_message *m = ac_conv_message(conv, i);
                    if ((m->flags & AC_MSG_PINNED) && (m->flags & AC_MSG_CLEARED))
                        fail_msg("seed %u: pinned %s stubbed", seed, m->id);
                }
            }
            json_decref(req);
            rig_close(&r);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sliding_window),    cmocka_unit_test(test_clear_tool_results),
        cmocka_unit_test(test_summarize),         cmocka_unit_test(test_summarize_failure),
        cmocka_unit_test(test_importance),        cmocka_unit_test(test_importance_keeps),
        cmocka_unit_test(test_importance_budget), cmocka_unit_test(test_pairs_never_separated),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
