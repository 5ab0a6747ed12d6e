/*
 * run_wait.c - `agentc run` when the session waits for an event only the
 * outside sends (an approval, a denial): answered from --on STATE=EVENT, or
 * asked on the terminal (the pending tool calls shown first), or, with
 * neither, the run fails at once with a message naming the state and the
 * events it waits for.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
        show_calls(s, err);
        for (;;) {
            fprintf(err, "state %s waits for %s; which event? ", state, list);
            fflush(err);
            char line[256];
            if (!fgets(line, sizeof line, in))
                break;
            line[strcspn(line, "\r\n")] = 0;
            if (event_in(line, evs, n))
                return ac_session_post(s, line, NULL, 0) < 0 ? -1 : 1;
            fprintf(err, "'%s' is not one of them\n", line);
        }
    }
    char msg[800];
    snprintf(msg, sizeof msg,
             "the session waits in state %s for %s, which only the outside sends (no terminal to "
             "ask: answer with --on %s=EVENT)",
             state, list, state);
    ac_session_fail(s, msg);
    return -1;
}
