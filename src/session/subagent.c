/*
 * subagent.c - sub-agents as tools (docs/composition.md).
 *
 * A tool file's "agents" entry is offered as the tool agent::NAME. A call of it runs a child
 * session: opened by the engine's opener (ac_engine_config.subagents; without one, a new
 * session on the caller's engine), on the same loop, its parent call carried by its spawn
 * ({"session", "call", "path"}). The child gets the task as its user message; when its turn
 * ends, its answer is the call's result, its failure (with the reason) the call's failure.
 * The parent's journal records agent.started (the child's id) and agent.done around it,
 * outside any dispatch of the parent (from 0 ms timers). When the parent stops the call
 * (cancel, rollback, free), the child's turn is cancelled and the child let go (given back
 * to the opener, or freed), so no call is left unanswered in either conversation. A pause of
 * the parent pauses the child instead and keeps the call parked: the parent's next call of
 * the same agent and task resumes that child; the parent's turn ending lets it go. A child's level
 * is its parent's + 1; a call whose child would be deeper than the entry's max_depth (default 3)
 * fails without running.
 */
#include <stdlib.h>
#include <string.h>

#include "io/loop.h"
#include "agentc/otel.h"
#include "session/journal.h"
#include "session/sink.h"
#include "session/tools_internal.h"
#include "util/buf.h"
#include "util/toolname.h"

#define SUBAGENT_DEFAULT_DEPTH 3
#define SUBAGENT_TASK_SCHEMA                                                                       \
    "{\"type\":\"object\",\"properties\":{\"task\":{\"type\":\"string\",\"description\":"          \
    "\"what the agent is asked to do, with everything it needs to know\"}},"                       \
    "\"required\":[\"task\"],\"additionalProperties\":false}"

struct ac_subcall {
    ac_session *parent; /* NULL once detached (the parent stopped the call) */
    ac_tool_run *r;
    struct slot *sl;
    ac_loop *loop;
    ac_session *child;
    const ac_tool *t;
    const ac_subagent_opener *opener; /* what opened the child (NULL: none) */
    char *call_id, *child_id, *path, *task;
    uint64_t timer;
    ac_subagent_done_fn done; /* a guardrail's call: its answer goes there, not to a run */
    void *done_ud;
    struct ac_subcall *next_parked; /* in its parent's parked calls */
    int parked; /* stopped by its parent's pause: the child paused, kept for a call again */
};

static void done_fired(void *ud);
static struct ac_subcall *unpark_for(ac_session *s, const ac_tool *t, const char *task,
                                     const char *call_id);

/* The call lets go of its child: given back to the opener that opened it, else freed. */
static void child_release(struct ac_subcall *c, ac_session *child)
{
    if (child && c->opener && c->opener->close)
        c->opener->close(c->opener->ud, child);
    else
        ac_session_free(child);
}

/* ---- the child's side: its parent call ---- */

const char *ac_session_parent(const ac_session *s)
{
    return s ? s->parent : NULL;
}

const char *ac_session_agent_path(const ac_session *s)
{
    return s ? s->agent_path : NULL;
}

static void set_parent(ac_session *s, const json_t *p)
{
    free(s->parent);
    free(s->agent_path);
    s->parent = s->agent_path = NULL;
    s->depth = 0;
    const char *path = json_string_value(json_object_get(p, "path"));
    if (!json_is_object(p) || !path)
        return;
    s->parent = json_dumps(p, JSON_COMPACT | JSON_PRESERVE_ORDER);
    s->agent_path = strdup(path);
    s->depth = 1;
    for (const char *c = path; *c; c++)
        s->depth += *c == '/';
}

void ac_subagent_from_spawn(ac_session *s, const json_t *spawn_data)
{
    const json_t *p = json_object_get(spawn_data, "parent");
    if (p)
        set_parent(s, p);
}

json_t *ac_subagent_spawn_json(const ac_session_options *opts)
{
    return opts && opts->parent ? json_loads(opts->parent, 0, NULL) : NULL;
}

json_t *ac_subagent_snapshot_save(const ac_session *s)
{
    json_t *p = s->parent ? json_loads(s->parent, 0, NULL) : NULL;
    return p ? p : json_null();
}

int ac_subagent_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap)
{
    (void)err, (void)errcap;
    set_parent(s, v); /* null: a session of its own */
    return AC_OK;
}

void ac_subagent_session_free(ac_session *s)
{
    ac_subagent_unpark(s);
    struct ac_subcall *c = s->sub;
    if (c) { /* freed under a call that waits for it: the call fails (from a timer) */
        c->child = NULL;
        if (!c->timer && !c->parked) /* a parked call has no run to answer: it just goes */
            c->timer = ac_loop_timer(c->loop, 0, done_fired, c);
    }
    free(s->parent);
    free(s->agent_path);
}

/* ---- the tools ---- */

int ac_subagent_tools_add(ac_engine *e, const json_t *agents, const char *path, char *err,
                          size_t errcap)
{
    const char *slash = strrchr(path, '/');
    size_t i;
    const json_t *a;
    json_array_foreach(agents, i, a)
    {
        char name[160], why[200];
        const char *n = json_string_value(json_object_get(a, "name"));
        if (ac_toolname_compose("agent", n, name, sizeof name, why, sizeof why) < 0) {
            snprintf(err, errcap, "%s: agents[%zu]: %s", path, i, why);
            return -1;
        }
        int handoff = json_is_true(json_object_get(a, "handoff"));
        if (handoff)
            snprintf(name, sizeof name, "transfer_to_%s", n);
        const json_t *schema = json_object_get(a, "input_schema");
        char *text = schema && !handoff ? json_dumps(schema, JSON_COMPACT) : NULL;
        ac_tool *t = ac_tools_new(handoff ? TK_HANDOFF : TK_AGENT, name,
                                  json_string_value(json_object_get(a, "description")),
                                  text      ? text
                                  : handoff ? "{\"type\":\"object\"}"
                                            : SUBAGENT_TASK_SCHEMA,
                                  err, errcap);
        free(text);
        if (!t)
            return -1;
        t->agent = json_incref((json_t *)a);
        t->agent_dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
        t->idempotent = 1; /* run again after a crash, it opens the same child and goes on */
        if (!t->agent_dir) {
            ac_tools_free(t);
            snprintf(err, errcap, "out of memory");
            return -1;
        }
        if (ac_tools_add(e, t, err, errcap) < 0)
            return -1;
    }
    return 0;
}

/* ---- one call ---- */

static void call_free(struct ac_subcall *c)
{
    if (c->timer)
        ac_loop_cancel_timer(c->loop, c->timer);
    free(c->call_id);
    free(c->child_id);
    free(c->path);
    free(c->task);
    free(c);
}

/* The call answered (ok, content) and let go: the run completes it from its own timer. */
static void call_complete(struct ac_subcall *c, int ok, const char *content)
{
    if (c->parent && c->done) {
        c->done(c->done_ud, ok, content);
    } else if (c->parent) {
        *ac_tool_run_slot_sub(c->sl) = NULL;
        ac_tool_run_complete_later(c->r, c->sl, ok, content);
    }
    call_free(c);
}

/* A record of the call in the parent's journal (fields: the call, the agent, the child). */
static void call_record(struct ac_subcall *c, const char *name, json_t *more)
{
    json_t *d =
        json_pack("{s:s, s:s, s:s}", "call", c->call_id, "agent", c->path, "session", c->child_id);
    if (d && more)
        json_object_update(d, more);
    json_decref(more);
    if (d)
        ac_session_post(c->parent, name, d, 0);
}

/* The child's turn ended (or it ended): its answer, or why it failed, answers the call. */
static void done_fired(void *ud)
{
    struct ac_subcall *c = ud;
    c->timer = 0;
    ac_session *child = c->child;
    const char *why = NULL;
    enum ac_turn_outcome o = child ? ac_session_last_turn(child, &why) : AC_TURN_FAILED;
    ac_session_end end;
    ac_session_get_end(child, &end);
    int ok = child && o == AC_TURN_COMPLETED && (!end.ended || !end.error);
    const char *name = json_string_value(json_object_get(c->t->agent, "name"));
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (ok)
        ac_buf_addstr(&b, ac_session_answer(child));
    else if (!child)
        ac_buf_printf(&b, "agent %s failed: its session was freed", name);
    else if (o == AC_TURN_INTERRUPTED)
        ac_buf_printf(&b, "agent %s failed: its session paused and nothing resumes it", name);
    else
        ac_buf_printf(&b, "agent %s failed: %s", name,
                      why         ? why
                      : end.error ? end.error
                                  : ac_turn_outcome_name(o));
    if (child)
        child->sub = NULL;
    call_record(c, AC_AGENT_DONE,
                json_pack("{s:b, s:s}", "ok", ok, "outcome",
                          ac_turn_outcome_name(child ? o : AC_TURN_FAILED)));
    child_release(c, child);
    c->child = NULL;
    char *text = ac_buf_take(&b, NULL);
    call_complete(c, ok, text ? text : "out of memory");
    free(text);
}

void ac_subagent_child_finished(ac_session *s)
{
    struct ac_subcall *c = s->sub;
    if (!c || c->timer || c->parked)
        return; /* a paused child (its own spec paused it) fails the call too: nothing resumes it */
    c->timer = ac_loop_timer(c->loop, 0, done_fired, c);
}

/* The child's options: its parent call and its level's path. */
static char *parent_text(const struct ac_subcall *c)
{
    json_t *p = json_pack("{s:s, s:s, s:s}", "session", ac_session_id(c->parent), "call",
                          c->call_id, "path", c->path);
    char *text = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    return text;
}

/* The child's journal when its parent has one: beside it, the parent's name less ".jsonl"
 * then ".NAME.CALL.jsonl", the call id encoded (malloc'd; NULL: none). */
static char *child_journal(const struct ac_subcall *c)
{
    const char *pj = ac_journal_path(c->parent->journal);
    if (!pj)
        return NULL;
    size_t n = strlen(pj);
    if (n > 6 && !strcmp(pj + n - 6, ".jsonl"))
        n -= 6;
    char call[400]; /* the model's call id: never a '/' in a file name */
    if (ac_journal_name_encode(c->call_id, call, sizeof call) >= sizeof call)
        return NULL; /* too long for a file name: no journal of its own */
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_printf(&b, "%.*s.%s.%s.jsonl", (int)n, pj,
                  json_string_value(json_object_get(c->t->agent, "name")), call);
    return ac_buf_take(&b, NULL);
}

/* The child's turn is traced under the parent's execute_tool span of the call, in the parent's
 * trace. */
static void link_trace(struct ac_subcall *c)
{
    char tp[64];
    if (ac_session_tool_traceparent(c->parent, c->call_id, tp, sizeof tp))
        ac_session_set_traceparent(c->child, tp);
}

/* Opens the child (from a 0 ms timer: outside the parent's dispatch), records it, gives it the
 * task; a child that already ran it (reopened after a crash) answers as it stands. */
static void open_fired(void *ud)
{
    struct ac_subcall *c = ud;
    c->timer = 0;
    char *parent = parent_text(c), *journal = child_journal(c);
    ac_session_options opts = {0};
    opts.parent = parent;
    opts.journal_path = journal;
    ac_error err = {0};
    ac_engine *e = ac_session_engine(c->parent);
    char *entry = json_dumps(c->t->agent, JSON_COMPACT | JSON_PRESERVE_ORDER);
    c->opener = e->subagents;
    if (parent && entry)
        c->child = e->subagents ? e->subagents->open(e->subagents->ud, c->parent, entry,
                                                     c->t->agent_dir, c->child_id, &opts, &err)
                                : ac_session_new_opts(e, c->child_id, &opts, &err);
    free(parent);
    free(entry);
    if (!c->child) {
        char msg[700];
        snprintf(msg, sizeof msg, "%s could not start: %s", c->t->name,
                 err.text[0] ? err.text : "out of memory");
        call_complete(c, 0, msg);
        free(journal);
        return;
    }
    c->child->sub = c;
    const char *cj = ac_journal_path(c->child->journal), *slash = cj ? strrchr(cj, '/') : NULL;
    call_record(c, AC_AGENT_STARTED,
                cj ? json_pack("{s:s}", "journal", slash ? slash + 1 : cj) : NULL);
    free(journal);
    enum ac_turn_outcome o = ac_session_last_turn(c->child, NULL);
    if (ac_session_ended(c->child) || (o != AC_TURN_NONE && ac_session_settled(c->child)))
        ac_subagent_child_finished(c->child); /* it ran the task before a crash */
    else if (!ac_session_in_turn(c->child) &&
             (link_trace(c), ac_session_send(c->child, c->task) < 0))
        ac_subagent_child_finished(c->child);
}

/* The child's path and id: the parent's path and id, then this agent and call. */
static int call_names(struct ac_subcall *c, ac_session *parent, const char *name)
{
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (parent->agent_path)
        ac_buf_printf(&b, "%s/", parent->agent_path);
    ac_buf_addstr(&b, name);
    c->path = ac_buf_take(&b, NULL);
    ac_buf_init(&b, AC_BUF_MAX);
    ac_buf_printf(&b, "%s.%s.%s", ac_session_id(parent), name, c->call_id);
    c->child_id = ac_buf_take(&b, NULL);
    return c->path && c->child_id ? 0 : -1;
}

/* A call of t by s (its child opened from a timer), or NULL with msg: too deep, or out of
 * memory. task: the child's user message (owned by the call, even on failure). */
static struct ac_subcall *call_new(ac_session *s, const ac_tool *t, const char *call_id, char *task,
                                   char *msg, size_t cap)
{
    const char *name = json_string_value(json_object_get(t->agent, "name"));
    const json_t *md = json_object_get(t->agent, "max_depth");
    int max_depth = md ? (int)json_integer_value(md) : SUBAGENT_DEFAULT_DEPTH;
    if (s->depth + 1 > max_depth) {
        snprintf(msg, cap,
                 "not run: %s would run at level %d of sub-agents (%s%s%s), past its max_depth %d",
                 t->name, s->depth + 1, s->agent_path ? s->agent_path : "",
                 s->agent_path ? "/" : "", name, max_depth);
        free(task);
        return NULL;
    }
    struct ac_subcall *c = calloc(1, sizeof *c);
    if (c) {
        c->parent = s;
        c->loop = s->e->loop;
        c->t = t;
        c->call_id = strdup(call_id);
        c->task = task;
    }
    if (!c || !c->call_id || !task || call_names(c, s, name) < 0 ||
        !(c->timer = ac_loop_timer(c->loop, 0, open_fired, c))) {
        if (c)
            call_free(c);
        else
            free(task);
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    return c;
}

struct ac_subcall *ac_subagent_run(ac_tool_run *r, struct slot *sl, const char *call_id,
                                   const ac_tool *t, const json_t *args)
{
    ac_session *s = ac_tool_run_session(r);
    const json_t *task = json_object_get(args, "task");
    char msg[600];
    char *text = json_is_string(task) && !json_object_get(t->agent, "input_schema")
                     ? strdup(json_string_value(task))
                     : json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER);
    struct ac_subcall *c = text ? unpark_for(s, t, text, call_id) : NULL;
    if (c) {
        free(text);
        c->r = r;
        c->sl = sl;
        return c;
    }
    c = call_new(s, t, call_id, text, msg, sizeof msg);
    if (!c) {
        ac_tool_run_complete_later(r, sl, 0, msg);
        return NULL;
    }
    c->r = r;
    c->sl = sl;
    return c;
}

struct ac_subcall *ac_subagent_ask(ac_session *s, const ac_tool *t, const char *call_id,
                                   const char *task, ac_subagent_done_fn done, void *ud, char *msg,
                                   size_t cap)
{
    struct ac_subcall *c = call_new(s, t, call_id, strdup(task), msg, cap);
    if (c) {
        c->done = done;
        c->done_ud = ud;
    }
    return c;
}

/* ---- a pause of the parent: its calls' children pause, and a call again resumes them ---- */

/* The parked call's child paused (from a timer: outside its parent's dispatch); a child whose
 * spec has no pause goes on, its answer kept for the call again. */
static void pause_fired(void *ud)
{
    struct ac_subcall *c = ud;
    c->timer = 0;
    uint16_t pause = c->child ? ac_engine_event_index(c->child->e, "pause") : AC_FSM_NONE;
    if (pause != AC_FSM_NONE && ac_session_in_turn(c->child))
        ac_session_post(c->child, "pause", NULL, 0);
}

/* The parent's pause stopped the call: its agent.done says so (outcome paused), its child is
 * paused and kept; the parent's next call of the same agent with the same task resumes it. */
static void park(struct ac_subcall *c)
{
    json_t *d = json_pack("{s:s, s:s, s:s, s:b, s:s}", "call", c->call_id, "agent", c->path,
                          "session", c->child_id, "ok", 0, "outcome", "paused");
    if (d)
        ac_session_queue_record(c->parent, AC_AGENT_DONE, d);
    c->r = NULL;
    c->sl = NULL;
    c->parked = 1;
    c->next_parked = c->parent->parked;
    c->parent->parked = c;
    if (c->timer)
        ac_loop_cancel_timer(c->loop, c->timer);
    c->timer = ac_loop_timer(c->loop, 0, pause_fired, c);
}

/* The parked call is called again (call id new): recorded, and its child resumed. */
static void resume_fired(void *ud)
{
    struct ac_subcall *c = ud;
    c->timer = 0;
    call_record(c, AC_AGENT_STARTED, NULL);
    if (!c->child) { /* freed since (its session deleted): the call fails */
        done_fired(c);
        return;
    }
    enum ac_turn_outcome o = ac_session_last_turn(c->child, NULL);
    if (ac_session_status(c->child) == AC_SESSION_PAUSED && !ac_session_ended(c->child)) {
        if (ac_session_post(c->child, "resume", NULL, 0) < 0) /* applied after this */
            ac_subagent_child_finished(c->child);             /* it cannot resume: the call fails */
    } else if (ac_session_ended(c->child) || (o != AC_TURN_NONE && ac_session_settled(c->child))) {
        ac_subagent_child_finished(c->child);
    }
}

static struct ac_subcall *unpark_for(ac_session *s, const ac_tool *t, const char *task,
                                     const char *call_id)
{
    for (struct ac_subcall **pp = &s->parked; *pp; pp = &(*pp)->next_parked) {
        struct ac_subcall *c = *pp;
        if (strcmp(c->t->name, t->name) || strcmp(c->task, task) || !c->child)
            continue;
        char *id = strdup(call_id);
        if (!id)
            return NULL;
        *pp = c->next_parked;
        c->parked = 0;
        free(c->call_id);
        c->call_id = id;
        if (c->timer)
            ac_loop_cancel_timer(c->loop, c->timer);
        c->timer = ac_loop_timer(c->loop, 0, resume_fired, c);
        return c;
    }
    return NULL;
}

/* A detached call's child, freed once its cancel has been applied. */
static void detached_fired(void *ud)
{
    struct ac_subcall *c = ud;
    c->timer = 0;
    child_release(c, c->child);
    call_free(c);
}

static void let_go(struct ac_subcall *c);

void ac_subagent_stop(struct ac_subcall *c)
{
    if (!c)
        return;
    ac_session *p = c->parent;
    if (p && c->child && !c->done && p->dispatching &&
        p->dispatching - 1 == ac_engine_event_index(p->e, "pause") &&
        ac_session_in_turn(c->child)) {
        park(c); /* a pause: the child pauses with its parent */
        return;
    }
    if (c->parent && c->child) { /* its agent.started is answered in the parent's journal */
        json_t *d =
            json_pack("{s:s, s:s, s:s, s:b, s:s}", "call", c->call_id, "agent", c->path, "session",
                      c->child_id, "ok", 0, "outcome", ac_turn_outcome_name(AC_TURN_CANCELLED));
        if (d)
            ac_session_queue_record(c->parent, AC_AGENT_DONE, d);
    }
    let_go(c);
}

/* The call lets go of its child: its turn cancelled (journaled in the child), the child
 * released once that is applied. */
static void let_go(struct ac_subcall *c)
{
    c->parent = NULL;
    c->parked = 0;
    ac_session *child = c->child;
    if (c->timer)
        ac_loop_cancel_timer(c->loop, c->timer);
    c->timer = 0;
    if (!child) { /* not opened yet */
        call_free(c);
        return;
    }
    child->sub = NULL;
    if (ac_session_in_turn(child) || ac_session_status(child) == AC_SESSION_PAUSED)
        ac_session_cancel_turn(child); /* recorded in its journal: no call left unanswered */
    if (c->loop && ac_loop_in_callback(c->loop) &&
        (c->timer = ac_loop_timer(c->loop, 0, detached_fired, c)))
        return; /* the cancel is queued: the child goes after it is applied */
    child_release(c, child);
    call_free(c);
}

void ac_subagent_unpark(ac_session *s)
{
    while (s->parked) {
        struct ac_subcall *c = s->parked;
        s->parked = c->next_parked;
        let_go(c);
    }
}
