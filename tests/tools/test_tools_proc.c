/*
 * test_tools_proc.c - what happens to a tool's child process, seen through
 * the engine: a failing exit reports its stderr tail, a timeout kills the
 * whole process group, huge output is cut and marked, and binary output is
 * made valid UTF-8 before it reaches the conversation and the request.
 */
#include <signal.h>

#include "session_rig.h"

static int utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80         ? 1
                   : (*p >> 5) == 6  ? 2
                   : (*p >> 4) == 14 ? 3
                   : (*p >> 3) == 30 ? 4
                                     : 0;
        if (!n)
            return 0;
        for (size_t k = 1; k < n; k++)
            if ((p[k] & 0xC0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

/* A pid is gone when kill(0) fails or it is a zombie nobody reaped yet. */
static int pid_gone(long pid)
{
    if (kill((pid_t)pid, 0) != 0)
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] == 'Z';
}

static void test_outcomes(void **state)
{
    (void)state;
    char path[512], text[4096];
    snprintf(text, sizeof text,
             "{\"tools\":["
             "{\"name\":\"fails\",\"description\":\"exits 3\",\"command\":[\"sh\",\"-c\","
             "\"echo some output; echo 'boom: the disk is on fire' >&2; exit 3\"]},"
             "{\"name\":\"hangs\",\"description\":\"never ends\",\"timeout\":\"300ms\","
             "\"command\":[\"sh\",\"-c\",\"sleep 30 & echo $! > '%s/bg.pid'; sleep 30\"]},"
             "{\"name\":\"floods\",\"description\":\"3 MB\",\"max_output\":\"100KB\","
             "\"command\":[\"sh\",\"-c\",\"head -c 3000000 /dev/zero | tr '\\\\0' x\"]},"
             "{\"name\":\"binary\",\"description\":\"bytes\",\"command\":[\"printf\","
             "\"ok\\\\377\\\\376\\\\000\\\\300\\\\257end\"]}]}",
             rig_tmp);
    rig_write("proc.json", text, path, sizeof path);
    const char *tools[] = {path, NULL};
    const char *turns = "{\"tool_calls\":["
                        "{\"id\":\"f\",\"name\":\"fails\",\"arguments\":\"{}\"},"
                        "{\"id\":\"h\",\"name\":\"hangs\",\"arguments\":\"{}\"},"
                        "{\"id\":\"o\",\"name\":\"floods\",\"arguments\":\"{}\"},"
                        "{\"id\":\"b\",\"name\":\"binary\",\"arguments\":\"{}\"}]}\n"
                        "{\"content\":\"seen\"}\n";
    rig r;
    rig_open(&r, turns, NULL, tools, NULL);
    double t0 = rig_now();
    ac_session_send(r.s, "go");
    rig_settle(&r);
    double took = rig_now() - t0;
    assert_string_equal(ac_session_answer(r.s), "seen");
    assert_true(took < 5.0); /* the 30 s sleeper did not hold the turn */

    const char *res = rig_result(&r, "f", 0);
    assert_non_null(strstr(res, "boom: the disk is on fire"));

    res = rig_result(&r, "h", 0);
    assert_non_null(strstr(res, "timed out"));
    char pidfile[600];
    snprintf(pidfile, sizeof pidfile, "%s/bg.pid", rig_tmp);
    FILE *f = fopen(pidfile, "r");
    assert_non_null(f);
    long bg = 0;
    assert_int_equal(fscanf(f, "%ld", &bg), 1);
    fclose(f);
    assert_true(bg > 0);
    int gone = 0;
    for (int i = 0; i < 100 && !(gone = pid_gone(bg)); i++)
        usleep(10000);
    assert_true(gone); /* the background child of the group was killed too */
    assert_int_equal(ac_proc_active(r.loop), 0);

    res = rig_result(&r, "o", 1);
    size_t n = strlen(res);
    assert_true(n >= 100000 && n < 100200);
    assert_non_null(strstr(res, "[output cut at 100000 bytes]"));
    assert_int_equal(strspn(res, "x"), 100000);

    res = rig_result(&r, "b", 1);
    assert_true(utf8_valid(res));
    assert_true(strncmp(res, "ok", 2) == 0);
    assert_non_null(strstr(res, "end"));
    assert_non_null(strstr(res, "\xEF\xBF\xBD")); /* replacement characters */

    json_t *req = rig_request(ac_session_conv(r.s));
    assert_null(rig_openai_valid(req));
    json_decref(req);
    rig_close(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes),
    };
    return cmocka_run_group_tests(tests, rig_setup, rig_teardown);
}
