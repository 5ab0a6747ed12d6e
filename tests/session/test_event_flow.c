/*
 * test_event_flow.c - the session's event queue: posts from other threads into
 * many streaming sessions (each event journaled once, in each thread's order),
 * and cancels posted from an output callback and from another thread while a
 * call streams over HTTP, after which nothing is left on the loop (no transfer,
 * timer or child process).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <pthread.h>

#include "agentc/agentc.h"
#include "io/loop.h"
#include "test_httpd.h"

static ac_error ae; /* the last error of the engine and session calls below */

#define N_SESSIONS 100
#define N_THREADS 4
#define N_POSTS 30 /* per thread and session */

static char tmpdir[256];

static ac_engine *script_engine(ac_loop *loop, const char *turns, int delay_ms)
{
    ac_engine_config cfg = {0};
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.script_delay_ms = delay_ms;
    cfg.seed = 7;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("engine: %s", ae.text);
    return e;
}

/* ---- 4 threads x 100 streaming sessions ---- */

typedef struct poster {
    ac_session **sessions;
    int thread;
    int failures;
} poster;

static void *post_thread(void *ud)
{
    poster *p = ud;
    for (int k = 0; k < N_POSTS; k++)
        for (int i = 0; i < N_SESSIONS; i++) {
            json_t *d = json_pack("{s:i, s:i}", "thread", p->thread, "k", k);
            if (ac_session_post_threadsafe(p->sessions[i], "ping", d, 0) != AC_QUEUED)
                p->failures++;
        }
    return NULL;
}

static int all_settled(ac_session **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ac_session_settled(s[i]))
            return 0;
    return 1;
}

/* Reads a journal: counts the pings of each thread, checks they come in the order posted and
 * that event numbers run 1, 2, 3... */
static void check_journal(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int next_k[N_THREADS] = {0};
    json_int_t n_expected = 1;
    while (getline(&line, &cap, f) > 0) {
        json_error_t jerr;
        json_t *j = json_loads(line, 0, &jerr);
        if (!j)
            fail_msg("%s: bad line: %s", path, jerr.text);
        json_t *ev = json_object_get(j, "ev");
        if (json_is_string(ev)) {
            assert_int_equal(json_integer_value(json_object_get(j, "n")), n_expected);
            n_expected++;
            if (strcmp(json_string_value(ev), "ping") == 0) {
                json_t *d = json_object_get(j, "data");
                int t = (int)json_integer_value(json_object_get(d, "thread"));
                int k = (int)json_integer_value(json_object_get(d, "k"));
                assert_true(t >= 0 && t < N_THREADS);
                assert_int_equal(k, next_k[t]); /* once each, in the order posted */
                next_k[t]++;
            }
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    for (int t = 0; t < N_THREADS; t++)
        assert_int_equal(next_k[t], N_POSTS);
}

static void posts_from_threads_into_streaming_sessions(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    assert_non_null(loop);
    /* a long answer streamed in 12-byte deltas, 1 ms apart: the sessions stream while the
     * threads post */
    char turn[1200];
    int k = snprintf(turn, sizeof turn, "{\"content\": \"");
    for (int i = 0; i < 600; i++)
        turn[k++] = (char)('a' + i % 26);
    snprintf(turn + k, sizeof turn - (size_t)k, "\"}\n");
    ac_engine *e = script_engine(loop, turn, 1);
    ac_session *s[N_SESSIONS];
    char path[N_SESSIONS][300];
    for (int i = 0; i < N_SESSIONS; i++) {
        char id[32];
        snprintf(id, sizeof id, "t%d", i);
        snprintf(path[i], sizeof path[i], "%s/threads-%d.jsonl", tmpdir, i);
        s[i] = ac_session_new(e, id, path[i], &ae);
        if (!s[i])
            fail_msg("session: %s", ae.text);
        assert_int_equal(ac_session_send(s[i], "go"), AC_OK);
    }
    pthread_t th[N_THREADS];
    poster p[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        p[t].sessions = s;
        p[t].thread = t;
        p[t].failures = 0;
        assert_int_equal(pthread_create(&th[t], NULL, post_thread, &p[t]), 0);
    }
    /* The loop runs while the threads post; a bound keeps a bug from hanging the test. */
    for (int i = 0; i < 200 && !all_settled(s, N_SESSIONS); i++)
        ac_loop_run_once(loop, 50);
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(p[t].failures, 0);
    }
    /* what the threads posted after the sessions settled */
    for (int i = 0; i < 100; i++)
        ac_loop_run_once(loop, 0);
    for (int i = 0; i < N_SESSIONS; i++) {
        assert_true(ac_session_settled(s[i]));
        assert_string_equal(ac_session_status_name(ac_session_status(s[i])), "idle");
        ac_session_free(s[i]);
    }
    for (int i = 0; i < N_SESSIONS; i++)
        check_journal(path[i]);
    ac_engine_free(e);
    ac_loop_free(loop);
}

/* ---- cancels while a call streams over HTTP ---- */

static char *openai_stream(int pieces)
{
    size_t cap = (size_t)pieces * 128 + 256;
    char *b = malloc(cap);
    size_t n = 0;
    for (int i = 0; i < pieces; i++)
        n += (size_t)snprintf(b + n, cap - n,
                              "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}"
                              "\n\n",
                              i);
    n += (size_t)snprintf(b + n, cap - n,
                          "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
                          "\"stop\"}]}\n\ndata: [DONE]\n\n");
    return b;
}

typedef struct cancel_rig {
    ac_session *s;
    int texts;
    int cancel_at; /* cancel from the text callback at this delta (0: never) */
    int cancel_rc;
    int finished;
} cancel_rig;

static void on_text(void *ud, ac_session *s, const char *delta, size_t n)
{
    (void)delta;
    (void)n;
    cancel_rig *r = ud;
    if (__atomic_add_fetch(&r->texts, 1, __ATOMIC_RELAXED) == r->cancel_at)
        r->cancel_rc = ac_session_cancel(s); /* inside a dispatch: raised */
}

static void on_finished(void *ud, ac_session *s)
{
    (void)s;
    ((cancel_rig *)ud)->finished++;
}

typedef struct thread_cancel {
    ac_session *s;
    cancel_rig *r;
    int rc;
} thread_cancel;

static void *cancel_thread(void *ud)
{
    thread_cancel *tc = ud;
    /* wait until text streams, then cancel from this thread (volatile read of a counter the
     * loop thread writes: a benign wait bounded by 5 s) */
    for (int i = 0; i < 5000 && __atomic_load_n(&tc->r->texts, __ATOMIC_RELAXED) < 3; i++)
        usleep(1000);
    tc->rc = ac_session_post_threadsafe(tc->s, "cancel", NULL, 0);
    return NULL;
}

static void cancel_while_streaming(int from_thread)
{
    ac_httpd *h = ac_httpd_start();
    assert_non_null(h);
    char *body = openai_stream(200);
    ac_httpd_resp resp = AC_HTTPD_RESP_INIT;
    resp.headers = "Content-Type: text/event-stream\r\n";
    resp.body = body;
    resp.body_len = strlen(body);
    resp.chunk_size = 64;
    resp.chunk_delay_ms = 5;
    ac_httpd_push(h, &resp);

    ac_loop *loop = ac_loop_new();
    cancel_rig r = {0};
    r.cancel_at = from_thread ? 0 : 3;
    ac_output out = {0};
    out.ud = &r;
    out.text = on_text;
    out.finished = on_finished;
    char base[128];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", ac_httpd_port(h));
    ac_engine_config cfg = {0};
    cfg.loop = loop;
    cfg.provider = AC_PROVIDER_OPENAI;
    cfg.base_url = base;
    cfg.api_key = "sk-test";
    cfg.model = "m";
    cfg.output = &out;
    ac_engine *e = ac_engine_new(&cfg, &ae);
    if (!e)
        fail_msg("engine: %s", ae.text);
    char path[300];
    snprintf(path, sizeof path, "%s/cancel-%d.jsonl", tmpdir, from_thread);
    ac_session *s = ac_session_new(e, "c", path, &ae);
    assert_non_null(s);
    r.s = s;
    assert_int_equal(ac_session_send(s, "go"), AC_OK);
    pthread_t th;
    thread_cancel tc = {s, &r, 0};
    if (from_thread)
        assert_int_equal(pthread_create(&th, NULL, cancel_thread, &tc), 0);
    for (int i = 0; i < 400 && !ac_session_ended(s); i++)
        ac_loop_run_once(loop, 50);
    if (from_thread) {
        pthread_join(th, NULL);
        assert_int_equal(tc.rc, AC_QUEUED);
    } else {
        assert_int_equal(r.cancel_rc, AC_QUEUED);
        assert_int_equal(r.texts, 3); /* nothing streamed after the cancel was applied */
    }
    assert_true(ac_session_ended(s));
    assert_string_equal(ac_session_state(s, "session"), "Cancelled");
    assert_true(r.texts >= 3 && r.texts < 200);
    /* nothing left behind: no transfer, no timer, no child process */
    assert_int_equal(ac_loop_pending(loop), 0);
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
    ac_httpd_stop(h);
    free(body);
}

static void cancel_from_output_callback_while_streaming(void **state)
{
    (void)state;
    cancel_while_streaming(0);
}

static void cancel_from_another_thread_while_streaming(void **state)
{
    (void)state;
    cancel_while_streaming(1);
}

/* ---- the rules of ac_session_post ---- */

typedef struct post_rig {
    int rc_in_callback;
    ac_session *s;
} post_rig;

static void post_from_timer(void *ud)
{
    post_rig *p = ud;
    p->rc_in_callback = ac_session_post(p->s, "ping", NULL, 0); /* a loop callback: queued */
}

static void post_results(void **state)
{
    (void)state;
    ac_loop *loop = ac_loop_new();
    ac_engine *e = script_engine(loop, "{\"content\": \"hi\"}\n", 0);
    ac_session *s = ac_session_new(e, "p", NULL, &ae);
    assert_non_null(s);
    assert_int_equal(ac_session_post(s, "ping", NULL, 0), AC_OK);
    assert_int_equal(ac_session_post(s, "no.such.event", NULL, 0), AC_EUNKNOWN_EVENT);
    assert_int_equal(ac_session_post_threadsafe(s, "no.such.event", NULL, 0), AC_EUNKNOWN_EVENT);
    assert_int_equal(ac_session_post(s, "resume", NULL, 0), AC_UNHANDLED); /* Idle: none */
    assert_int_equal(ac_session_post(s, "pause", NULL, 0), AC_OK);
    post_rig p = {-100, s};
    ac_loop_timer(loop, 0, post_from_timer, &p);
    ac_loop_run_once(loop, 100);
    assert_int_equal(p.rc_in_callback, AC_QUEUED);
    assert_string_equal(ac_strerror(AC_QUEUED), "queued");
    assert_string_equal(ac_strerror(AC_EUNKNOWN_EVENT), "unknown event");
    assert_string_equal(ac_strerror(12345), "unknown status");
    ac_session_free(s);
    ac_engine_free(e);
    ac_loop_free(loop);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/agentc-flow-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(post_results),
        cmocka_unit_test(posts_from_threads_into_streaming_sessions),
        cmocka_unit_test(cancel_from_output_callback_while_streaming),
        cmocka_unit_test(cancel_from_another_thread_while_streaming),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
