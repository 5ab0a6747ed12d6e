/*
 * test_tools_parallel.c - the calls of one turn run at once: three child
 * processes finishing in reverse order are sent back in call order, and the
 * tool phase lasts about as long as the slowest call; max_parallel_tools=1
 * runs them one after the other.
 */
#include "session_rig.h"

static const char *turns = "{\"tool_calls\":["
                           "{\"id\":\"t1\",\"name\":\"slow\",\"arguments\":\"{}\"},"
                           "{\"id\":\"t2\",\"name\":\"medium\",\"arguments\":\"{}\"},"
                           "{\"id\":\"t3\",\"name\":\"fast\",\"arguments\":\"{}\"}]}\n"
                           "{\"content\":\"all done\"}\n";

typedef struct phase {
    double first_start, last_end;
    int started, ended;
} phase;

static void on_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *args)
{
    (void)s, (void)id, (void)name, (void)args;
    phase *p = ud;
    if (p->started++ == 0)
        p->first_start = rig_now();
}

static void on_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t ms)
{
    (void)s, (void)id, (void)name, (void)ok, (void)content, (void)ms;
    phase *p = ud;
    p->ended++;
    p->last_end = rig_now();
}

static double run_turn(const char *max_parallel, int expect_reverse)
{
    char path[512];
    rig_write("par.json",
              "{\"tools\":["
              "{\"name\":\"slow\",\"description\":\"0.9 s\",\"command\":[\"sh\",\"-c\","
              "\"sleep 0.9; echo a\"]},"
              "{\"name\":\"medium\",\"description\":\"0.6 s\",\"command\":[\"sh\",\"-c\","
              "\"sleep 0.6; echo b\"]},"
              "{\"name\":\"fast\",\"description\":\"0.3 s\",\"command\":[\"sh\",\"-c\","
              "\"sleep 0.3; echo c\"]}]}",
              path, sizeof path);
    const char *tools[] = {path, NULL};
    const char *params[] = {max_parallel, NULL};
    phase p;
    memset(&p, 0, sizeof p);
    ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = &p;
    out.tool_start = on_tool_start;
    out.tool_end = on_tool_end;
    rig r;
    rig_open(&r, turns, params, tools, &out);
    assert_int_equal(ac_session_send(r.s, "run them"), AC_FSM_HANDLED);
    rig_settle(&r);
    assert_string_equal(ac_session_answer(r.s), "all done");
    assert_int_equal(p.started, 3);
    assert_int_equal(p.ended, 3);
    assert_string_equal(rig_result(&r, "t1", 1), "a\n");
    assert_string_equal(rig_result(&r, "t2", 1), "b\n");
    assert_string_equal(rig_result(&r, "t3", 1), "c\n");

    /* arrival order in the conversation */
    ac_conv *conv = ac_session_conv(r.s);
    const char *arrived[3];
    size_t k = 0;
    for (size_t i = 0; i < ac_conv_message_count(conv); i++) {
        const ac_message *m = ac_conv_message(conv, i);
        if (m->role == AC_ROLE_TOOL && k < 3)
            arrived[k++] = m->tool_call_id;
    }
    assert_int_equal(k, 3);
    if (expect_reverse) {
        assert_string_equal(arrived[0], "t3");
        assert_string_equal(arrived[2], "t1");
    } else {
        assert_string_equal(arrived[0], "t1");
        assert_string_equal(arrived[2], "t3");
    }
    /* the request sends them in call order, right after the call */
    json_t *req = rig_request(conv);
    const char *bad = rig_openai_valid(req);
    if (bad)
        fail_msg("invalid request: %s", bad);
    json_t *msgs = json_object_get(req, "messages");
    size_t a = (size_t)-1;
    for (size_t i = 0; i < json_array_size(msgs); i++)
        if (json_object_get(json_array_get(msgs, i), "tool_calls")) {
            a = i;
            break;
        }
    assert_true(a != (size_t)-1);
    static const char *const want[] = {"t1", "t2", "t3"};
    for (size_t i = 0; i < 3; i++) {
        json_t *m = json_array_get(msgs, a + 1 + i);
        assert_string_equal(json_string_value(json_object_get(m, "role")), "tool");
        assert_string_equal(json_string_value(json_object_get(m, "tool_call_id")), want[i]);
    }
    json_decref(req);
    rig_close(&r);
    return p.last_end - p.first_start;
}

static void test_parallel(void **state)
{
    (void)state;
    double t = run_turn("max_parallel_tools=4", 1);
    /* wide margins: this is a behaviour check on a shared machine, not a benchmark */
    print_message("parallel tool phase: %.3f s (slowest call 0.9 s, sum 1.8 s)\n", t);
    assert_true(t >= 0.88);
    assert_true(t < 1.5);
}

static void test_sequential(void **state)
{
    (void)state;
    double t = run_turn("max_parallel_tools=1", 0);
    print_message("sequential tool phase: %.3f s\n", t);
    assert_true(t >= 1.8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_sequential),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
