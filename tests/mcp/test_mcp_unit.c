/* The MCP client's parts on their own: the text a result becomes, the "mcp"
 * entries of tool files, and the client driven directly against
 * tests/mcp/test_server.js (node): concurrent calls multiplexed by id,
 * pagination, list_changed, ping, the 2026-07-28 probe and its fallback,
 * cancellation, faults and the restart backoff. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/loop.h"
#include "mcp/mcp.h"

/* ---- results ---- */

static char *text_of(const char *json, int *ok)
{
    json_t *r = json_loads(json, 0, NULL);
    assert_non_null(r);
    char *t = ac_mcp_result_text(r, ok);
    json_decref(r);
    assert_non_null(t);
    return t;
}

static void test_result_text(void **st)
{
    (void)st;
    int ok;
    char *t = text_of(
        "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]}",
        &ok);
    assert_string_equal(t, "a\nb");
    assert_int_equal(ok, 1);
    free(t);
    t = text_of("{\"content\":[{\"type\":\"text\",\"text\":\"bad\"}],\"isError\":true}", &ok);
    assert_int_equal(ok, 0);
    assert_string_equal(t, "bad");
    free(t);
    /* 8 base64 chars with one '=' pad = 5 bytes */
    t = text_of(
        "{\"content\":[{\"type\":\"image\",\"data\":\"aGVsbG8=\",\"mimeType\":\"image/png\"},"
        "{\"type\":\"audio\",\"data\":\"aGk\",\"mimeType\":\"audio/wav\"},"
        "{\"type\":\"resource_link\",\"uri\":\"file:///a\",\"name\":\"a\"},"
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"mem://t\",\"text\":\"inside\"}},"
        "{\"type\":\"resource\",\"resource\":{\"uri\":\"mem://b\",\"blob\":\"AAAA\","
        "\"mimeType\":\"x/y\"}},{\"type\":\"hologram\",\"x\":1}]}",
        &ok);
    assert_string_equal(t, "[image content: image/png, 5 bytes, not shown]\n"
                           "[audio content: audio/wav, 2 bytes, not shown]\n"
                           "[resource link: file:///a (a)]\n"
                           "[resource mem://t]\ninside\n"
                           "[resource mem://b: x/y, 3 bytes, not shown]\n"
                           "[hologram content block, 25 bytes of JSON, not shown]");
    free(t);
    /* structuredContent: added as JSON, unless a text block already carries it */
    t = text_of(
        "{\"content\":[{\"type\":\"text\",\"text\":\"see\"}],\"structuredContent\":{\"n\":1}}",
        &ok);
    assert_string_equal(t, "see\n{\"n\":1}");
    free(t);
    t = text_of("{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"n\\\": 1}\"}],"
                "\"structuredContent\":{\"n\":1}}",
                &ok);
    assert_string_equal(t, "{\"n\": 1}");
    free(t);
    /* the filesystem server's read_text_file: the text, and the same text as
     * {"content": TEXT}: sent once */
    t = text_of("{\"content\":[{\"type\":\"text\",\"text\":\"hello from a file\\n\"}],"
                "\"structuredContent\":{\"content\":\"hello from a file\\n\"}}",
                &ok);
    assert_string_equal(t, "hello from a file\n");
    free(t);
    /* one member, another text: both sent */
    t = text_of("{\"content\":[{\"type\":\"text\",\"text\":\"a\"}],"
                "\"structuredContent\":{\"content\":\"b\"}}",
                &ok);
    assert_string_equal(t, "a\n{\"content\":\"b\"}");
    free(t);
    t = text_of("{\"structuredContent\":[1,2]}", &ok);
    assert_string_equal(t, "[1,2]");
    free(t);
    t = text_of("{}", &ok);
    assert_string_equal(t, "");
    free(t);
}

/* ---- configuration ---- */

static int parse(const char *json, char *err, size_t cap, ac_mcp_config **v, size_t *n)
{
    json_t *a = json_loads(json, 0, NULL);
    assert_non_null(a);
    int rc = ac_mcp_config_parse(a, "dir/t.json", v, n, err, cap);
    json_decref(a);
    return rc;
}

static void free_cfgs(ac_mcp_config *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ac_mcp_config_clear(&v[i]);
    free(v);
}

static void test_config(void **st)
{
    (void)st;
    char err[512];
    ac_mcp_config *v;
    size_t n;
    assert_int_equal(
        parse("[{\"name\":\"fs\",\"command\":[\"./srv\",\"-x\"],\"env\":{\"TOKEN\":\"s3\"},"
              "\"timeout\":\"2s\",\"idempotent\":true},"
              "{\"name\":\"web\",\"url\":\"http://127.0.0.1:9/mcp\","
              "\"headers\":{\"Authorization\":\"Bearer zz\"}}]",
              err, sizeof err, &v, &n),
        0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].argv[0], "dir/./srv");
    assert_string_equal(v[0].env[0], "TOKEN=s3");
    assert_int_equal(v[0].timeout_ms, 2000);
    assert_int_equal(v[0].start_timeout_ms, AC_MCP_START_TIMEOUT_MS); /* 5 s */
    assert_int_equal(v[0].idempotent, 1);
    assert_int_equal(v[1].idempotent, -1);
    assert_string_equal(v[1].headers[0], "Authorization: Bearer zz");
    free_cfgs(v, n);
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"[{\"command\":[\"x\"]}]", "dir/t.json: mcp[0]: \"name\" must be"},
        {"[{\"name\":\"a__b\",\"command\":[\"x\"]}]", "no \"__\""},
        {"[{\"name\":\"_a\",\"command\":[\"x\"]}]", "not first or last"},
        {"[{\"name\":\"a\"}]", "needs either \"command\" (stdio) or \"url\""},
        {"[{\"name\":\"a\",\"command\":[\"x\"],\"url\":\"http://h\"}]", "needs either"},
        {"[{\"name\":\"a\",\"url\":\"ftp://h\"}]", "\"url\" must be an http:// or https:// URL"},
        {"[{\"name\":\"a\",\"command\":[]}]", "\"command\" must be a non-empty array"},
        {"[{\"name\":\"a\",\"command\":[\"x\"],\"cmd\":1}]", "unknown key \"cmd\""},
        {"[{\"name\":\"a\",\"command\":[\"x\"],\"timeout\":\"soon\"}]", "\"timeout\" must be"},
        {"[{\"name\":\"a\",\"url\":\"http://h\",\"headers\":{\"X\":\"bad\\nSECRETVALUE\"}}]",
         "\"headers\": bad header \"X\""},
        {"[{\"name\":\"a\",\"url\":\"http://h\",\"env\":{\"A\":\"b\"}}]", "\"env\" is for stdio"},
        {"[{\"name\":\"a\",\"command\":[\"x\"],\"headers\":{\"A\":\"b\"}}]",
         "\"headers\" is for HTTP"},
        {"[{\"name\":\"a\",\"command\":[\"x\"]},{\"name\":\"a\",\"url\":\"http://h\"}]",
         "mcp[1] (\"a\"): duplicate server name (also mcp[0])"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(parse(bad[i].doc, err, sizeof err, &v, &n), -1);
        if (!strstr(err, bad[i].msg))
            fail_msg("case %zu: got \"%s\", expected \"%s\"", i, err, bad[i].msg);
        assert_null(strstr(err, "SECRETVALUE"));
    }
}

/* ---- the client against tests/mcp/test_server.js ---- */

typedef struct done_rec {
    int n, ok[64];
    char text[64][512];
    int progress;
} done_rec;

typedef struct one {
    done_rec *r;
    int slot;
} one;

static void on_done(void *ud, int ok, const char *content)
{
    one *o = ud;
    o->r->ok[o->slot] = ok;
    snprintf(o->r->text[o->slot], sizeof o->r->text[o->slot], "%s", content);
    o->r->n++;
}

static void on_progress(void *ud, double p, double total, const char *msg)
{
    one *o = ud;
    (void)p;
    (void)total;
    (void)msg;
    o->r->progress++;
}

static int node_ok(void)
{
    return system("node --version >/dev/null 2>&1") == 0;
}

static ac_mcp_server *server(ac_loop *loop, const char *const *extra, const char *log)
{
    const char *argv[16] = {"node", "tests/mcp/test_server.js"};
    size_t k = 2;
    if (log) {
        argv[k++] = "--log";
        argv[k++] = log;
    }
    for (; extra && *extra && k < 15; extra++)
        argv[k++] = *extra;
    argv[k] = NULL;
    ac_mcp_config c = {0};
    c.name = "t";
    c.argv = (char **)argv;
    c.timeout_ms = 20000;
    c.start_timeout_ms = 30000;
    c.idempotent = -1;
    ac_mcp_server *s = ac_mcp_server_new(loop, &c);
    assert_non_null(s);
    return s;
}

static void run_until(ac_loop *loop, const int *n, int want, int64_t ms)
{
    int64_t end = ac_loop_now_ms(loop) + ms;
    while (*n < want && ac_loop_now_ms(loop) < end)
        ac_loop_run_once(loop, 50);
}

static void on_tools_seen(void *ud, ac_mcp_server *s)
{
    (void)s;
    (*(int *)ud)++;
}

/* Starts s and runs the loop until its first listing or its first failure (on_tools says
 * both). 0 when ready, else -1 with the reason. */
static int wait_ready(ac_loop *loop, ac_mcp_server *s, int64_t ms, char *err, size_t cap)
{
    int seen = 0;
    ac_mcp_server_on_tools(s, on_tools_seen, &seen);
    ac_mcp_server_start(s);
    run_until(loop, &seen, 1, ms);
    ac_mcp_server_on_tools(s, NULL, NULL);
    snprintf(err, cap, "%s", ac_mcp_server_error(s));
    return ac_mcp_server_ready(s) ? 0 : -1;
}

static json_t *args(const char *json)
{
    json_t *a = json_loads(json, 0, NULL);
    assert_non_null(a);
    return a;
}

static void test_multiplexing(void **st)
{
    (void)st;
    if (!node_ok())
        skip();
    ac_loop *loop = ac_loop_new();
    char err[512];
    const char *pages[] = {"--page-size", "2", NULL};
    ac_mcp_server *s = server(loop, pages, NULL);
    assert_int_equal(wait_ready(loop, s, 40000, err, sizeof err), 0);
    /* pagination: every page was followed */
    assert_int_equal(ac_mcp_server_tool_count(s), 15);
    assert_string_equal(ac_mcp_server_version(s), AC_MCP_VERSION_2025);
    assert_int_equal(ac_mcp_server_tool(s, 0)->idempotent_hint, 1);
    assert_int_equal(ac_mcp_server_tool(s, 1)->idempotent_hint, 0);
    /* 20 calls at once, answered in the reverse order: each gets its own answer */
    done_rec r = {0};
    one o[20];
    for (int i = 0; i < 20; i++) {
        char a[64];
        o[i] = (one){&r, i};
        snprintf(a, sizeof a, "{\"ms\": %d, \"steps\": 2}", 600 - i * 25);
        json_t *j = args(a);
        assert_non_null(ac_mcp_call_tool(s, "slow", j, 0, on_done, on_progress, &o[i]));
        json_decref(j);
    }
    run_until(loop, &r.n, 20, 10000);
    assert_int_equal(r.n, 20);
    for (int i = 0; i < 20; i++) {
        char want[64];
        snprintf(want, sizeof want, "slept %d ms", 600 - i * 25);
        assert_int_equal(r.ok[i], 1);
        assert_string_equal(r.text[i], want);
    }
    assert_int_equal(r.progress, 40);
    /* a JSON-RPC error and an isError result are failures the model sees */
    done_rec r2 = {0};
    one a0 = {&r2, 0}, a1 = {&r2, 1}, a2 = {&r2, 2}, a3 = {&r2, 3};
    json_t *none = args("{}");
    ac_mcp_call_tool(s, "rpcerror", none, 0, on_done, NULL, &a0);
    ac_mcp_call_tool(s, "fail", none, 0, on_done, NULL, &a1);
    ac_mcp_call_tool(s, "ping_me", none, 0, on_done, NULL, &a2);
    ac_mcp_call_tool(s, "noise", none, 0, on_done, NULL, &a3);
    run_until(loop, &r2.n, 4, 10000);
    assert_int_equal(r2.ok[0], 0);
    assert_string_equal(r2.text[0], "MCP error -32602: bad params on purpose");
    assert_int_equal(r2.ok[1], 0);
    assert_string_equal(r2.text[1], "the tool failed on purpose");
    assert_string_equal(r2.text[2], "the client answered ping");
    assert_string_equal(r2.text[3], "sent 1000 notifications");
    /* list_changed: the list is fetched again */
    done_rec r3 = {0};
    one b0 = {&r3, 0};
    ac_mcp_call_tool(s, "add_tool", none, 0, on_done, NULL, &b0);
    run_until(loop, &r3.n, 1, 5000);
    int64_t end = ac_loop_now_ms(loop) + 5000;
    while (ac_mcp_server_tool_count(s) != 16 && ac_loop_now_ms(loop) < end)
        ac_loop_run_once(loop, 50);
    assert_int_equal(ac_mcp_server_tool_count(s), 16);
    assert_string_equal(ac_mcp_server_tool(s, 15)->name, "extra");
    json_decref(none);
    assert_int_equal(ac_mcp_server_starts(s), 1);
    ac_mcp_server_free(s);
    ac_loop_free(loop);
}

static void test_probe_and_cancel(void **st)
{
    (void)st;
    if (!node_ok())
        skip();
    char log[] = "/tmp/mcp_unit_log_XXXXXX";
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    close(fd);
    ac_loop *loop = ac_loop_new();
    char err[512];
    const char *disc[] = {"--discover", NULL};
    ac_mcp_server *s = server(loop, disc, log);
    assert_int_equal(wait_ready(loop, s, 40000, err, sizeof err), 0);
    assert_string_equal(ac_mcp_server_version(s), AC_MCP_VERSION_2026);
    done_rec r = {0};
    one o0 = {&r, 0}, o1 = {&r, 1};
    json_t *a = args("{\"ms\": 5000}");
    ac_mcp_call *c = ac_mcp_call_tool(s, "slow", a, 0, on_done, NULL, &o0);
    json_decref(a);
    a = args("{\"text\": \"hi\"}");
    ac_mcp_call_tool(s, "echo", a, 0, on_done, NULL, &o1);
    json_decref(a);
    run_until(loop, &r.n, 1, 5000);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.text[1], "hi");
    ac_mcp_call_cancel(c, "stopped by the test");
    for (int i = 0; i < 10; i++)
        ac_loop_run_once(loop, 20);
    ac_mcp_server_free(s);
    ac_loop_free(loop);
    /* the log shows: no initialize, _meta with the version in requests, the cancellation */
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[4096];
    int init = 0, meta = 0, cancelled = 0;
    while (fgets(line, sizeof line, f)) {
        init += strstr(line, "\"initialize\"") != NULL;
        meta += strstr(line, "\"tools/call\"") && strstr(line, "2026-07-28");
        cancelled += strstr(line, "notifications/cancelled") && strstr(line, "stopped by the test");
    }
    fclose(f);
    unlink(log);
    assert_int_equal(init, 0);
    assert_int_equal(meta, 2);
    assert_int_equal(cancelled, 1);
    assert_int_equal(r.n, 1); /* the cancelled call's done never ran */

    /* a server that ignores server/discover: the probe times out, initialize follows */
    loop = ac_loop_new();
    const char *quiet[] = {"--no-discover-answer", NULL};
    s = server(loop, quiet, NULL);
    assert_int_equal(wait_ready(loop, s, 40000, err, sizeof err), 0);
    assert_string_equal(ac_mcp_server_version(s), AC_MCP_VERSION_2025);
    ac_mcp_server_free(s);
    ac_loop_free(loop);
}

static void test_faults(void **st)
{
    (void)st;
    if (!node_ok())
        skip();
    ac_loop *loop = ac_loop_new();
    char err[512];
    ac_mcp_server *s = server(loop, NULL, NULL);
    assert_int_equal(wait_ready(loop, s, 40000, err, sizeof err), 0);
    json_t *none = args("{}");
    static const struct {
        const char *tool, *msg;
    } faults[] = {
        {"crash", "MCP server 't' exited (exit status 7): test server: crashing on purpose"},
        {"garbage", "MCP server 't' wrote a line that is not JSON-RPC (\"<<this is not json>>\")"},
        {"flood", "MCP server 't' sent a message over 16777216 bytes"},
    };
    for (size_t i = 0; i < 3; i++) {
        done_rec r = {0};
        one o0 = {&r, 0}, o1 = {&r, 1};
        json_t *a = args("{\"ms\": 15000}"); /* never answered before the fault */
        /* a call in flight on the same server fails with the same fault */
        ac_mcp_call_tool(s, "slow", a, 0, on_done, NULL, &o1);
        json_decref(a);
        ac_mcp_call_tool(s, faults[i].tool, none, 0, on_done, NULL, &o0);
        run_until(loop, &r.n, 2, 10000);
        assert_int_equal(r.n, 2);
        assert_int_equal(r.ok[0], 0);
        if (strncmp(r.text[0], faults[i].msg, strlen(faults[i].msg)) != 0)
            fail_msg("%s: got \"%s\"", faults[i].tool, r.text[0]);
        assert_string_equal(r.text[1], r.text[0]);
        /* the next call restarts the server: at once after the first fault, later after more */
        done_rec r2 = {0};
        one p = {&r2, 0};
        a = args("{\"text\": \"back\"}");
        ac_mcp_call_tool(s, "echo", a, 0, on_done, NULL, &p);
        json_decref(a);
        run_until(loop, &r2.n, 1, 10000);
        assert_int_equal(r2.n, 1);
        assert_int_equal(r2.ok[0], 1);
        assert_string_equal(r2.text[0], "back");
        assert_int_equal(ac_mcp_server_starts(s), i + 2);
    }
    /* two faults in a row: the next call fails at once (backoff), one after it restarts */
    done_rec r = {0};
    one o[3] = {{&r, 0}, {&r, 1}, {&r, 2}};
    ac_mcp_call_tool(s, "crash", none, 0, on_done, NULL, &o[0]);
    run_until(loop, &r.n, 1, 10000);
    ac_mcp_call_tool(s, "crash", none, 0, on_done, NULL, &o[1]);
    run_until(loop, &r.n, 2, 10000);
    unsigned starts = ac_mcp_server_starts(s);
    ac_mcp_call_tool(s, "echo", none, 0, on_done, NULL, &o[2]);
    run_until(loop, &r.n, 3, 10000);
    assert_int_equal(r.ok[2], 0);
    assert_non_null(strstr(r.text[2], "(next restart in "));
    assert_int_equal(ac_mcp_server_starts(s), starts);
    usleep((AC_MCP_BACKOFF_MIN_MS + 50) * 1000);
    ac_loop_run_once(loop, 0); /* the loop's clock moves on */
    done_rec r2 = {0};
    one p = {&r2, 0};
    json_t *a = args("{\"text\": \"again\"}");
    ac_mcp_call_tool(s, "echo", a, 0, on_done, NULL, &p);
    json_decref(a);
    run_until(loop, &r2.n, 1, 10000);
    assert_string_equal(r2.text[0], "again");
    json_decref(none);
    ac_mcp_server_free(s);

    /* will not start; exits at start; never answers; writes garbage first */
    static const struct {
        const char *flag, *msg;
    } starts_bad[] = {
        {NULL, "MCP server 't' could not start: cannot run 'no-such-mcp-server-cmd': No such file"},
        {"--exit-at-start",
         "MCP server 't' exited (exit status 3): test server: refusing to start"},
        {"--silent", "MCP server 't' did not complete the handshake within 1500 ms"},
        {"--garbage-at-start", "MCP server 't' wrote a line that is not JSON-RPC (\"Hello! I am"},
    };
    for (size_t i = 0; i < 4; i++) {
        const char *argv[] = {i == 0 ? "no-such-mcp-server-cmd" : "node",
                              "tests/mcp/test_server.js", starts_bad[i].flag, NULL};
        ac_mcp_config c = {0};
        c.name = "t";
        c.argv = (char **)argv;
        c.timeout_ms = 1500;
        /* only the silent server waits for the whole start timeout: the others fail sooner, however
         * slowly node starts on a loaded machine */
        c.start_timeout_ms =
            starts_bad[i].flag && !strcmp(starts_bad[i].flag, "--silent") ? 1500 : 30000;
        s = ac_mcp_server_new(loop, &c);
        assert_int_equal(wait_ready(loop, s, 40000, err, sizeof err), -1);
        if (strncmp(err, starts_bad[i].msg, strlen(starts_bad[i].msg)) != 0)
            fail_msg("case %zu: got \"%s\"", i, err);
        ac_mcp_server_free(s);
    }
    ac_loop_free(loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_text),  cmocka_unit_test(test_config),
        cmocka_unit_test(test_multiplexing), cmocka_unit_test(test_probe_and_cancel),
        cmocka_unit_test(test_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
