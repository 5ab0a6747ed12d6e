/*
 * guardrail.c - the effect `guardrail(input, NAME)` / `guardrail(output, NAME)`
 * that the spec language's guardrail forms put in their state (gen/sugar.c).
 *
 * It runs the tool file's command NAME with {"kind": "input"|"output", "text": T} on
 * stdin, T the turn's user message (input) or the answer (output), or asks the tool file's
 * sub-agent NAME (agent::NAME) that JSON text as its task, and posts
 * guardrail.passed when the command answers {"pass": true, ...}, else
 * guardrail.tripped with {"guardrail": NAME, "reason": R}: the command's reason, or why
 * it could not say (it failed, timed out, answered something else; the agent's turn
 * failed). Its answer is the command's output or the agent's answer. Nothing after the
 * state runs before then: a guardrail blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "io/proc.h"
#include "session/guardrail.h"
#include "session/tools_internal.h"
#include "util/grow.h"

typedef struct guard_run {
    ac_session *s;
    uint64_t proc;
    struct ac_subcall *sub; /* a sub-agent's call */
    uint16_t origin;
    int output;
    char name[200];
} guard_run;

int ac_guardrail_effect(const char *name)
{
    return strncmp(name, "guardrail(input, ", 17) == 0 ||
           strncmp(name, "guardrail(output, ", 18) == 0;
}

int ac_guardrail_posts(const char *ev)
{
    return strcmp(ev, "guardrail.passed") == 0 || strcmp(ev, "guardrail.tripped") == 0;
}

int ac_guardrail_named(const ac_engine *e, const char *tool)
{
    if (!strncmp(tool, "agent::", 7) || !strncmp(tool, "agent__", 7))
        tool += 7; /* a sub-agent that is a guardrail */
    size_t n = strlen(tool);
    for (uint16_t i = 0; i < e->t->n_effects; i++) {
        const char *en = e->t->effect_names[i];
        if (!ac_guardrail_effect(en))
            continue;
        const char *nm = en + (en[10] == 'o' ? 18 : 17);
        if (strncmp(nm, tool, n) == 0 && (nm[n] == ')' || nm[n] == ','))
            return 1;
    }
    return 0;
}

static void post(guard_run *g, int pass, const char *reason)
{
    ac_session *s = g->s;
    uint16_t ev = ac_engine_event_index(s->e, pass ? "guardrail.passed" : "guardrail.tripped");
    ac_session_enqueue(s, ev,
                       json_pack("{s:s, s:s, s:s}", "guardrail", g->name, "kind",
                                 g->output ? "output" : "input", "reason", reason),
                       0, g->origin);
}

/* The guardrail's answer: {"pass": bool, "reason": string}, else it trips. */
static void judge(guard_run *g, const char *out, size_t len)
{
    json_t *v = json_loadb(out, len, 0, NULL);
    json_t *pass = json_object_get(v, "pass");
    const char *reason = json_string_value(json_object_get(v, "reason"));
    if (!json_is_boolean(pass))
        post(g, 0, "the guardrail did not answer {\"pass\": bool, \"reason\": string}");
    else
        post(g, json_is_true(pass), reason ? reason : "");
    json_decref(v);
}

static void proc_done(void *ud, const ac_proc_result *res)
{
    guard_run *g = ud;
    g->proc = 0;
    char why[400];
    if (res->spawn_failed || res->timed_out || !res->exited || res->exit_code != 0) {
        snprintf(why, sizeof why, "the guardrail could not run (%s)",
                 res->spawn_failed ? "its command did not start"
                 : res->timed_out  ? "it timed out"
                                   : "its command failed");
        post(g, 0, why);
        return;
    }
    judge(g, res->out, res->out_len);
}

/* A sub-agent guardrail's child answered (its answer judged) or failed (it trips). */
static void agent_done(void *ud, int ok, const char *content)
{
    guard_run *g = ud;
    g->sub = NULL;
    if (ok) {
        judge(g, content, strlen(content));
        return;
    }
    char why[700];
    snprintf(why, sizeof why, "the guardrail could not run (%s)", content);
    post(g, 0, why);
}

/* The message the guardrail checks: the last of the role (NULL: none). */
static const ac_message *last_of(const ac_session *s, ac_role role)
{
    for (size_t i = ac_conv_message_count(s->conv); i-- > 0;) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if (m->role == role)
            return m;
    }
    return NULL;
}

/* A guardrail that is a sub-agent (agent::NAME): its child, PARENT.NAME.guardrail_KIND_MSG
 * (the same child when a crash's resume runs the check again), asked the JSON text task. */
static void start_agent(guard_run *g, const ac_tool *t, const ac_message *m, const char *task)
{
    char id[160], msg[600];
    snprintf(id, sizeof id, "guardrail_%s_%s", g->output ? "output" : "input",
             m && m->id ? m->id : "none");
    g->sub = ac_subagent_ask(g->s, t, id, task, agent_done, g, msg, sizeof msg);
    if (!g->sub) {
        char why[700];
        snprintf(why, sizeof why, "the guardrail could not run (%s)", msg);
        post(g, 0, why);
    }
}

static void start(ac_session *s, const ac_param_value *args, size_t n, const ac_event *ev)
{
    (void)args, (void)n, (void)ev;
    uint16_t origin = ac_session_origin(s);
    guard_run *g = origin ? calloc(1, sizeof *g) : NULL;
    if (!g)
        return;
    g->s = s;
    g->origin = origin;
    const char *en = s->e->t->effect_names[origin - 1];
    int output = g->output = en[10] == 'o';
    snprintf(g->name, sizeof g->name, "%.*s", (int)strcspn(en + (output ? 18 : 17), ",)"),
             en + (output ? 18 : 17));
    *ac_session_effect_state(s) = g;
    char agent[220];
    snprintf(agent, sizeof agent, "agent::%s", g->name);
    const ac_tool *t = ac_tools_find(s->e, g->name), *a = ac_tools_find(s->e, agent);
    if ((!t || t->kind != TK_EXTERNAL) && (!a || a->kind != TK_AGENT)) {
        post(g, 0, "no tool file command or agent of that name");
        return;
    }
    const ac_message *m = last_of(s, output ? AC_ROLE_ASSISTANT : AC_ROLE_USER);
    json_t *in = json_pack("{s:s, s:s}", "kind", output ? "output" : "input", "text",
                           m && m->content ? m->content : "");
    char *text = in ? json_dumps(in, JSON_COMPACT) : NULL;
    json_decref(in);
    if (!t || t->kind != TK_EXTERNAL) {
        start_agent(g, a, m, text ? text : "{}");
        free(text);
        return;
    }
    char **env = ac_tool_env(s->e, t); /* never the provider's credentials */
    char err[300];
    ac_proc_spec ps;
    memset(&ps, 0, sizeof ps);
    ps.argv = (const char *const *)t->argv;
    ps.env = (const char *const *)env;
    ps.stdin_data = text ? text : "{}";
    ps.stdin_len = strlen(ps.stdin_data);
    ps.timeout_ms = t->timeout_ms;
    ps.max_stdout = t->max_output;
    g->proc = env ? ac_proc_spawn(s->e->loop, &ps, proc_done, g, err, sizeof err) : 0;
    free(env);
    free(text);
    if (!g->proc)
        post(g, 0, "the guardrail could not run (its command did not start)");
}

static void stop(ac_session *s)
{
    guard_run **slot = (guard_run **)ac_session_effect_state(s);
    guard_run *g = *slot;
    if (!g)
        return;
    if (g->proc)
        ac_proc_kill(s->e->loop, g->proc);
    ac_subagent_stop(g->sub);
    free(g);
    *slot = NULL;
}

void ac_guardrail_bind(ac_engine *e, uint16_t index)
{
    e->e_start[index] = start;
    e->e_stop[index] = stop;
    if (strncmp(e->t->effect_names[index], "guardrail(output, ", 18) == 0)
        e->holds_text = 1;
    else
        e->retracts_text = 1;
}

/* ---- the text an output guardrail holds ---- */

void ac_guardrail_hold(ac_session *s, const char *text, size_t n)
{
    if (ac_grow((void **)&s->held, &s->held_cap, s->held_len + n + 1, 1) == 0) {
        memcpy(s->held + s->held_len, text, n);
        s->held[s->held_len += n] = 0;
    }
}

void ac_guardrail_unhold(ac_session *s, size_t n)
{
    s->held_len = n < s->held_len ? s->held_len - n : 0;
}

void ac_guardrail_shown(ac_session *s, const char *text, size_t n)
{
    if (ac_grow((void **)&s->shown, &s->shown_cap, s->shown_len + n + 1, 1) == 0) {
        memcpy(s->shown + s->shown_len, text, n);
        s->shown[s->shown_len += n] = 0;
    }
}

const char *ac_session_discarding(const ac_session *s, const char **reason)
{
    if (reason)
        *reason = s && s->retracting ? "guardrail_tripped" : NULL;
    return s && s->retracting ? s->shown : NULL;
}

/* An input guardrail's event: at a trip, the text the turn showed is taken back. */
static void retract(ac_session *s, const ac_event *ev)
{
    if (!ac_session_in_turn(s))
        s->shown_len = 0; /* an earlier turn's */
    const char *name = s->e->t->event_names[ev->type];
    const char *kind = json_string_value(json_object_get(ev->data, "kind"));
    if (!s->shown_len || strcmp(name, "guardrail.tripped") || !kind || strcmp(kind, "input"))
        return;
    if (s->e->has_output && s->e->out.discarded) {
        s->retracting = 1;
        s->e->out.discarded(s->e->out.ud, s, s->shown_len);
        s->retracting = 0;
    }
    s->shown_len = 0;
}

void ac_guardrail_before_event(ac_session *s, const ac_event *ev)
{
    if (s->e->retracts_text && !s->e->holds_text)
        retract(s, ev);
    if (!s->e->holds_text)
        return;
    const char *name = s->e->t->event_names[ev->type];
    const char *kind = json_string_value(json_object_get(ev->data, "kind"));
    int passed = strcmp(name, "guardrail.passed") == 0;
    int output = kind && strcmp(kind, "output") == 0;
    if (passed && output && s->held_len && s->e->has_output && s->e->out.text)
        s->e->out.text(s->e->out.ud, s, s->held, s->held_len); /* what it held, at once */
    if ((output && (passed || strcmp(name, "guardrail.tripped") == 0)) || !ac_session_in_turn(s))
        s->held_len = 0; /* shown, or never: the turn's text goes */
}
