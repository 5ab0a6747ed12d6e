/*
 * session_rig.h - helpers shared by the tool and compaction tests: a real
 * engine with the scripted provider on a real loop, a temporary folder for
 * tool files and markers, the requests the provider would send, and a check
 * that an OpenAI request keeps every tool message right after the assistant
 * call that issued it, in order.
 */
#ifndef AGENTC_TESTS_SESSION_RIG_H
#define AGENTC_TESTS_SESSION_RIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "agentc/agentc.h"
#include "context/conversation.h"
#include "context/request.h"
#include "io/loop.h"
#include "io/proc.h"

static char rig_tmp[256];

typedef struct rig {
    ac_loop *loop;
    ac_engine *e;
    ac_session *s;
} rig;

static inline int rig_setup(void **state)
{
    (void)state;
    snprintf(rig_tmp, sizeof rig_tmp, "/tmp/agentc-rig-XXXXXX");
    return mkdtemp(rig_tmp) ? 0 : -1;
}

static inline int rig_teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", rig_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static inline double rig_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes text to <tmp>/name and returns the path (static buffer per call site). */
static inline void rig_write(const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", rig_tmp, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Opens an engine and a session. tools: NULL-terminated list of
 * ac_engine_add_tools specs (may be NULL). */
static inline void rig_open(rig *r, const char *turns, const char *const *params,
                            const char *const *tools, const ac_output *out)
{
    ac_error err;
    memset(r, 0, sizeof *r);
    r->loop = ac_loop_new();
    assert_non_null(r->loop);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.loop = r->loop;
    cfg.provider = AC_PROVIDER_SCRIPT;
    cfg.script_text = turns;
    cfg.params = params;
    cfg.output = out;
    cfg.seed = 7;
    r->e = ac_engine_new(&cfg, &err);
    if (!r->e)
        fail_msg("engine: %s", err.text);
    for (const char *const *t = tools; t && *t; t++)
        if (ac_engine_add_tools(r->e, *t, &err) != 0)
            fail_msg("tools %s: %s", *t, err.text);
    r->s = ac_session_new(r->e, "s1", NULL, &err);
    if (!r->s)
        fail_msg("session: %s", err.text);
}

static inline void rig_settle(rig *r)
{
    for (int i = 0; i < 3000 && !ac_session_settled(r->s); i++)
        ac_loop_run_once(r->loop, 20);
    assert_true(ac_session_settled(r->s));
}

static inline void rig_close(rig *r)
{
    ac_session_free(r->s);
    ac_engine_free(r->e);
    for (int i = 0; i < 5 && ac_loop_pending(r->loop); i++)
        ac_loop_run_once(r->loop, 10);
    assert_int_equal(ac_loop_pending(r->loop), 0);
    ac_loop_free(r->loop);
}

/* The OpenAI request body for the conversation, parsed. */
static inline json_t *rig_request(ac_conv *conv)
{
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "test-model";
    char err[256];
    char *body = ac_request_openai(conv, &o, err, sizeof err);
    if (!body)
        fail_msg("request: %s", err);
    json_error_t jerr;
    json_t *j = json_loads(body, 0, &jerr);
    free(body);
    assert_non_null(j);
    return j;
}

static inline size_t rig_request_size(ac_conv *conv)
{
    json_t *j = rig_request(conv);
    char *t = json_dumps(j, JSON_COMPACT);
    size_t n = strlen(t);
    free(t);
    json_decref(j);
    return n;
}

/* NULL when every tool message directly follows the assistant message that
 * issued it (after its siblings, in the calls' order) and every call of an
 * assistant message gets its result; else what is wrong. */
static inline const char *rig_openai_valid(json_t *req)
{
    static char why[300];
    json_t *msgs = json_object_get(req, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return "no messages";
    json_t *calls = NULL;
    size_t next = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++) {
        json_t *m = json_array_get(msgs, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!role)
            return "a message without a role";
        if (strcmp(role, "tool") == 0) {
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            json_t *want = json_array_get(calls, next);
            const char *wid = json_string_value(json_object_get(want, "id"));
            if (!id || !wid || strcmp(id, wid) != 0) {
                snprintf(why, sizeof why, "message %zu: tool result %s where %s was due", i,
                         id ? id : "?", wid ? wid : "no result");
                return why;
            }
            next++;
            continue;
        }
        if (calls && next < json_array_size(calls)) {
            snprintf(why, sizeof why, "message %zu: call results missing before it", i);
            return why;
        }
        calls = strcmp(role, "assistant") == 0 ? json_object_get(m, "tool_calls") : NULL;
        next = 0;
    }
    if (calls && next < json_array_size(calls))
        return "the last assistant message's calls lack results";
    return NULL;
}

/* Number of messages in the request with this role. */
static inline size_t rig_count_role(json_t *req, const char *role)
{
    json_t *msgs = json_object_get(req, "messages");
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(msgs); i++)
        if (strcmp(json_string_value(json_object_get(json_array_get(msgs, i), "role")), role) == 0)
            n++;
    return n;
}

/* The result text of call id, asserting it finished. */
static inline const char *rig_result(rig *r, const char *id, int want_ok)
{
    const ac_tool_call *c = ac_conv_tool_call(ac_session_conv(r->s), id);
    if (!c)
        fail_msg("no call %s", id);
    if (c->state != (want_ok ? AC_CALL_SUCCESS : AC_CALL_FAILURE))
        fail_msg("call %s: state %d, result %s", id, (int)c->state, c->result ? c->result : "");
    return c->result;
}

#endif
