/*
 * run_wait.c - `agentc run` when the session waits for an event only the
 * outside sends (an approval, a denial): answered from --on STATE=EVENT (for
 * all the pending calls at once), or asked on the terminal (the pending tool
 * calls shown first), or, with neither, the run fails at once with a message
 * naming the state and the events it waits for. On a terminal, an event that
 * carries per-call decisions (`outside event approve(decisions)`) is asked
 * call by call: approve, deny (with a reason), edit (the arguments as JSON,
 * checked against the tool's schema and asked again when refused), or all
 * (this call and the rest approved).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agentc/agentc.h"
#include "run_wait.h"

#define MAX_EVENTS 32

static int event_in(const char *ev, const char *const *evs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(evs[i], ev) == 0)
            return 1;
    return 0;
}

static void list_events(char *buf, size_t cap, const char *const *evs, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && o < cap; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? (i + 1 == n ? " or " : ", ") : "", evs[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* The --on answer for `state`: entries naming it are used in order, the last one again
 * once all were used. */
static const char *on_answer(ac_run_wait *w, const char *state)
{
    const char *last = NULL;
    for (size_t i = 0; i < w->n_on; i++) {
        const char *eq = strchr(w->on[i], '=');
        if (!eq || (size_t)(eq - w->on[i]) != strlen(state) ||
            strncmp(w->on[i], state, (size_t)(eq - w->on[i])) != 0)
            continue;
        last = eq + 1;
        if (!(w->used & (1ull << i))) {
            w->used |= 1ull << i;
            return eq + 1;
        }
    }
    return last;
}

static void show_calls(ac_session *s, FILE *err)
{
    const char *ids[16];
    size_t n = ac_session_pending_tool_calls(s, ids, 16);
    if (!n)
        return;
    fprintf(err, "pending tool call%s:\n", n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < 16; i++) {
        const char *args = NULL, *name = ac_session_tool_call_name(s, ids[i], &args);
        fprintf(err, "  %s %.300s\n", name ? name : "?", args ? args : "");
    }
}

/* A line from the terminal without its end: 1, 0 when a stop signal interrupted the read
 * (run.c cancels), -1 at the end of the input. */
static int read_line(FILE *in, char *line, size_t cap)
{
    if (!fgets(line, (int)cap, in)) {
        if (ferror(in) && errno == EINTR) {
            clearerr(in);
            return 0;
        }
        return -1;
    }
    line[strcspn(line, "\r\n")] = 0;
    return 1;
}

static int is_word(const char *line, const char *word)
{
    return !strcmp(line, word) || (line[0] == word[0] && !line[1]);
}

/* The edited arguments for call `id`, asked until the tool's schema takes them (an empty
 * line gives up: NULL). *rc gets read_line's result when the input ends or is interrupted. */
static json_t *ask_edit(ac_session *s, const char *event, const char *id, FILE *in, FILE *err,
                        int *rc)
{
    char line[4096];
    for (;;) {
        fprintf(err, "arguments of %s as JSON (empty: back)? ", id);
        fflush(err);
        if ((*rc = read_line(in, line, sizeof line)) <= 0 || !line[0])
            return NULL;
        json_error_t je;
        json_t *args = json_loads(line, 0, &je);
        char why[600];
        json_t *d = args ? json_pack("{s:{s:{s:O}}}", "calls", id, "arguments", args) : NULL;
        if (!args)
            snprintf(why, sizeof why, "not JSON: %s", je.text);
        else if (ac_session_check_decisions(s, event, d, why, sizeof why) == 0) {
            json_decref(d);
            return args;
        }
        json_decref(d);
        json_decref(args);
        fprintf(err, "refused: %s\n", why);
    }
}

/* One call's decision into calls[id]: 1 decided, 2 decided and the rest approved ("all"),
 * else read_line's 0 or -1. */
static int ask_call(ac_session *s, const char *event, const char *id, json_t *calls, FILE *in,
                    FILE *err)
{
    char line[1024];
    for (;;) {
        fprintf(err, "%s: approve, deny, edit or all (this one and the rest approved)? ", id);
        fflush(err);
        int rc = read_line(in, line, sizeof line);
        if (rc <= 0)
            return rc;
        if (is_word(line, "approve") || !strcmp(line, "all")) {
            json_object_set_new(calls, id, json_string("approve"));
            return strcmp(line, "all") ? 1 : 2;
        }
        if (is_word(line, "deny")) {
            fprintf(err, "reason (may be empty)? ");
            fflush(err);
            if ((rc = read_line(in, line, sizeof line)) <= 0)
                return rc;
            json_object_set_new(calls, id, json_pack("{s:s}", "deny", line));
            return 1;
        }
        if (is_word(line, "edit")) {
            json_t *args = ask_edit(s, event, id, in, err, &rc);
            if (rc <= 0)
                return rc;
            if (args) {
                json_object_set_new(calls, id, json_pack("{s:o}", "arguments", args));
                return 1;
            }
            continue;
        }
        fprintf(err, "'%s' is not one of them\n", line);
    }
}

/* Asks per pending call and posts `event` with the decisions: 1 sent, 0 interrupted, -1 the
 * input ended, -2 the post failed. */
static int ask_per_call(ac_session *s, const char *event, FILE *in, FILE *err)
{
    const char *ids[64];
    size_t n = ac_session_pending_tool_calls(s, ids, 64);
    json_t *calls = json_object();
    int rc = 1;
    for (size_t i = 0; i < n && i < 64 && rc == 1; i++) {
        const char *args = NULL, *name = ac_session_tool_call_name(s, ids[i], &args);
        fprintf(err, "tool call %zu of %zu (%s): %s %.300s\n", i + 1, n, ids[i], name ? name : "?",
                args ? args : "");
        rc = ask_call(s, event, ids[i], calls, in, err);
    }
    if (rc <= 0) {
        json_decref(calls);
        return rc;
    }
    return ac_session_post(s, event, json_pack("{s:o}", "calls", calls), 0) < 0 ? -2 : 1;
}

int ac_run_wait_check(ac_session *s, ac_run_wait *w, FILE *in, FILE *err)
{
    const char *state = NULL;
    int st = ac_session_wait_state(s, &state);
    if (st != AC_WAIT_OUTSIDE || !state)
        return 0;
    const char *evs[MAX_EVENTS];
    size_t n = ac_session_waiting_events(s, evs, MAX_EVENTS);
    if (n > MAX_EVENTS)
        n = MAX_EVENTS;
    char list[512];
    list_events(list, sizeof list, evs, n);
    const char *ans = on_answer(w, state);
    if (ans) {
        if (!event_in(ans, evs, n)) {
            char msg[800];
            snprintf(msg, sizeof msg, "--on %s=%s: state %s waits for %s, not '%s'", state, ans,
                     state, list, ans);
            ac_session_fail(s, msg);
            return -1;
        }
        return ac_session_post(s, ans, NULL, 0) < 0 ? -1 : 1;
    }
    if (w->interactive) {
        for (size_t i = 0; i < n; i++)
            if (ac_session_event_takes_decisions(s, evs[i]) &&
                ac_session_pending_tool_calls(s, NULL, 0)) {
                int rc = ask_per_call(s, evs[i], in, err);
                if (rc != -1)
                    return rc < 0 ? -1 : rc;
                goto no_answer; /* the input ended */
            }
        show_calls(s, err);
        for (;;) {
            fprintf(err, "state %s waits for %s; which event? ", state, list);
            fflush(err);
            char line[256];
            if (!fgets(line, sizeof line, in)) {
                if (ferror(in) && errno == EINTR) { /* a stop signal: run.c cancels */
                    clearerr(in);
                    return 0;
                }
                break;
            }
            line[strcspn(line, "\r\n")] = 0;
            if (event_in(line, evs, n))
                return ac_session_post(s, line, NULL, 0) < 0 ? -1 : 1;
            fprintf(err, "'%s' is not one of them\n", line);
        }
    }
no_answer:;
    char msg[800];
    snprintf(msg, sizeof msg,
             "the session waits in state %s for %s, which only the outside sends (no terminal to "
             "ask: answer with --on %s=EVENT)",
             state, list, state);
    ac_session_fail(s, msg);
    return -1;
}
