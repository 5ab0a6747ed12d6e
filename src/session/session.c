/*
 * session.c - sessions: posting events (journal first, then dispatch),
 * re-entrancy (events posted by handlers wait for the current dispatch),
 * tracing, and the session's JSON form.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "journal.h"
#include "obs/obs.h"
#include "session/tool_cache.h"
#include "obs/span.h"
#include "session/toolkits.h"
#include "session/state.h"
#include "session_int.h"
#include "session/decisions.h"
#include "session/guardrail.h"
#include "session/spec_rt.h"
#include "tools/schema.h"
#include "tools_internal.h"
#include "util/utf8.h"

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void set_str(char **slot, const char *v)
{
    char *d = xstrdup(v);
    free(*slot);
    *slot = d;
}

/* Trace: recorded as the event's steps, and forwarded to the output. */
static void on_trace(void *ud, const ac_trace_rec *r)
{
    ac_session *s = ud;
    if (s->journal)
        ac_journal_add_step(s->journal, s->e->t, r);
    if (s->hooks)
        s->hooks->step(s, r);
    if (s->step_fn)
        s->step_fn(s->step_ud, r);
    if (s->obs && !s->replaying)
        ac_obs_step(s->obs, r);
    if (s->e->has_output && s->e->out.trace)
        s->e->out.trace(s->e->out.ud, s, r);
}

/* A journal that could not be written fails the session: its record would be incomplete.
 * The first time, what runs is cancelled (the spec's cancel event, applied unrecorded while
 * the queue drains), the session ends failed (turn.c) and the error says why; from then on no
 * event is applied (AC_EIO). Returns 1 when the journal failed. */
static int journal_failed(ac_session *s)
{
    const char *why = s->journal ? ac_journal_error(s->journal) : NULL;
    if (!why && s->hooks)
        why = s->hooks->error(s);
    if (!why)
        return 0;
    if (!s->journal_failed) {
        int64_t now = ac_wall_now_ms();
        int stop = s->draining && !ac_session_settled(s) && s->e->ev_cancel != AC_FSM_NONE;
        ac_turn_fail_session(s, why, now); /* the turn under way fails with it */
        s->journal_failed = 1;
        if (stop) {
            ac_event ev = {s->e->ev_cancel, now, NULL};
            ac_fsm_dispatch(&s->fsm, &ev);
        }
        ac_turn_fail_session(s, why, now); /* whatever the cancel's actions said */
    }
    return 1;
}

int ac_session_journal_failed(ac_session *s)
{
    return journal_failed(s);
}

/* After an event: a received parent (ac_session_set_traceparent) becomes the turn's when a turn
 * began since it came (in this event: a turn state was entered); a turn's parent is forwarded
 * for that turn only. */
static void trace_leave(ac_session *s, uint32_t entries_before)
{
    uint32_t now = s->fsm.counted_entries;
    if (now != entries_before && s->tp_trace[0] && now != s->tp_entries) {
        memcpy(s->turn_trace, s->tp_trace, sizeof s->turn_trace);
        memcpy(s->turn_parent, s->tp_span, sizeof s->turn_parent);
        memcpy(s->turn_flags, s->tp_flags, sizeof s->turn_flags);
        s->turn_entries = now;
        s->tp_trace[0] = s->tp_span[0] = 0;
    }
    if (now != s->turn_entries || !ac_session_in_turn(s))
        s->turn_parent[0] = 0;
}

/* Records the event (journal, hooks): 0, or -1 when it could not be (never applied then). */
static int record(ac_session *s, uint16_t type, json_t *data, const ac_payload *p, int64_t t_ms)
{
    s->seq++;
    const char *name = s->e->t->event_names[type];
    if (s->journal)
        ac_journal_write_event(s->journal, s->seq, t_ms, name, data, p);
    if (s->hooks)
        s->hooks->event(s, s->seq, t_ms, name, data, p);
    return journal_failed(s) ? -1 : 0;
}

/* p: the event's typed payload (data is then NULL), NULL: none. */
static int apply(ac_session *s, uint16_t type, json_t *data, const ac_payload *p, int64_t t_ms)
{
    if (s->journal_failed || record(s, type, data, p, t_ms) < 0) {
        json_decref(data); /* never applied unrecorded */
        return AC_EIO;
    }
    int traced = s->obs && !s->replaying, was_in_turn = ac_session_in_turn(s);
    /* a handler of the program's may read ev->data, and the traces read a reply's */
    if (p && (s->e->custom_handlers || (traced && p->kind >= AC_PAYLOAD_COMPLETION)))
        data = ac_payload_json(p);
    s->payload = p;
    s->payload_type = type;
    if (type == s->e->ev_spawn) {
        ac_session_agent_from_spawn(s, data);
        ac_subagent_from_spawn(s, data);
        ac_client_tools_from_spawn(s, data);
    }
    ac_event ev = {type, t_ms, data};
    ac_turn_probe before;
    ac_turn_before_event(s, &before);
    if (type == s->e->ev_user_message && !was_in_turn) { /* one in a turn is the next's */
        const char *tid = json_string_value(json_object_get(data, "trace_id"));
        snprintf(s->turn_trace, sizeof s->turn_trace, "%s", tid && strlen(tid) == 32 ? tid : "");
    }
    if (traced)
        ac_obs_event(s->obs, s, s->e->t->event_names[type], t_ms, data, was_in_turn);
    uint32_t entries = s->fsm.counted_entries; /* turns begun (trace_leave) */
    ac_guardrail_before_event(s, &ev);
    uint16_t outer = s->dispatching;
    s->dispatching = (uint16_t)(type + 1);
    int rc = ac_fsm_dispatch(&s->fsm, &ev);
    s->dispatching = outer;
    ac_spec_rt_after_event(s, &ev);
    ac_turn_after_event(s, &before, t_ms);
    if (traced)
        ac_obs_event_done(s->obs, s, ac_session_in_turn(s));
    trace_leave(s, entries);
    if (s->journal)
        ac_journal_write_steps(s->journal, s->seq);
    if (s->hooks)
        s->hooks->steps_done(s, s->seq);
    s->payload = NULL;
    json_decref(data);
    if (s->pending_records) /* what stopped sub-agent calls record, after the event */
        ac_session_flush_records(s);
    return journal_failed(s) ? AC_EIO : rc;
}

/* ---- the event queue ----------------------------------------------------------------
 *
 * The one rule of event flow: nothing dispatches inside someone else's stack frame. Every
 * event reaches the session through its queue and is applied by drain(), which runs only
 * when nothing of the engine is on the stack: from the caller of a public post outside the
 * loop's callbacks, or as a deferred task of the loop right after the I/O callback (curl,
 * child process, timer, cross-thread post) that queued it returns. Two queues, as in SCXML:
 * events posted while the session dispatches (by handlers, output callbacks, effects that
 * start or stop) are raised and applied right after the current event, before anything that
 * arrived from outside; everything else waits in the inbox in arrival order. When an effect
 * stops, the events it queued and that were not applied yet are dropped with it. */

#define EV_FREE AC_FSM_NONE /* queue entry: ac_session_free() asked, free when reached */

static ac_queued_event *q_new(uint16_t type, json_t *data, int64_t t_ms, uint16_t origin)
{
    ac_queued_event *q = malloc(sizeof *q);
    if (!q) {
        json_decref(data);
        return NULL;
    }
    q->next = NULL;
    q->type = type;
    q->origin = origin;
    q->t_ms = t_ms ? t_ms : ac_wall_now_ms();
    q->data = data;
    q->pl.kind = AC_PAYLOAD_NONE;
    return q;
}

static void q_push(ac_event_queue *q, ac_queued_event *e)
{
    if (q->tail)
        q->tail->next = e;
    else
        q->head = e;
    q->tail = e;
}

static ac_queued_event *q_pop(ac_event_queue *q)
{
    ac_queued_event *e = q->head;
    if (e) {
        q->head = e->next;
        if (!q->head)
            q->tail = NULL;
    }
    return e;
}

/* Drops the entries for which keep() is false (all of them when keep is NULL). */
static void q_filter(ac_event_queue *q, uint16_t origin, int all)
{
    ac_queued_event **pp = &q->head, *last = NULL;
    while (*pp) {
        ac_queued_event *e = *pp;
        if (all || (e->origin == origin && e->type != EV_FREE)) {
            *pp = e->next;
            json_decref(e->data);
            free(e);
        } else {
            last = e;
            pp = &e->next;
        }
    }
    q->tail = last;
}

static void session_free_now(ac_session *s);
static void remote_forget(ac_session *s);

/* Applies queued events, raised ones first, until both queues are empty. Returns 1 when a
 * queued ac_session_free() freed the session (s is gone), else 0. *want_rc gets the result
 * of entry `want`. */
static int drain(ac_session *s, const ac_queued_event *want, int *want_rc)
{
    int64_t last_ms = ac_wall_now_ms();
    s->draining = 1;
    for (;;) {
        ac_queued_event *q = q_pop(&s->raised);
        if (!q)
            q = q_pop(&s->inbox);
        if (!q)
            break;
        if (q->type == EV_FREE) {
            free(q);
            session_free_now(s);
            return 1;
        }
        int rc = apply(s, q->type, q->data, q->pl.kind ? &q->pl : NULL, q->t_ms);
        last_ms = q->t_ms;
        if (q == want)
            *want_rc = rc;
        free(q);
    }
    ac_session_check_stuck(s, last_ms);
    s->draining = 0;
    if (s->journal && ac_session_settled(s)) {
        ac_journal_flush(s->journal); /* waiting for input: the loop may not turn soon */
        journal_failed(s);
    }
    if (s->hooks && ac_session_settled(s)) {
        s->hooks->settled(s); /* commits */
        journal_failed(s);
    }
    return 0;
}

static void drain_task(void *ud)
{
    drain(ud, NULL, NULL);
}

/* The inbox has something: drain now when nothing is on the stack, else right after the
 * running loop callback returns. */
static void schedule(ac_session *s)
{
    if (s->draining)
        return; /* the running drain takes it */
    if (s->e->loop && ac_loop_in_callback(s->e->loop))
        ac_loop_defer(s->e->loop, &s->drain_task);
    else
        drain(s, NULL, NULL);
}

/* Queues q (an event for the session, checked) from an I/O callback. */
static void enqueue(ac_session *s, ac_queued_event *q)
{
    if (s->draining) {
        q_push(&s->raised, q);
        return;
    }
    q_push(&s->inbox, q);
    schedule(s);
}

void ac_session_enqueue(ac_session *s, uint16_t type, json_t *data, int64_t t_ms, uint16_t origin)
{
    if (type == AC_FSM_NONE || type == 0 || type >= s->e->t->n_events) {
        json_decref(data);
        return;
    }
    ac_queued_event *q = q_new(type, data, t_ms, origin);
    if (q)
        enqueue(s, q);
}

/* An entry holding p, its strings copied after it: the one allocation of a typed event
 * (stamped now; origin as ac_session_enqueue's). NULL when out of memory. */
static ac_queued_event *typed_new(uint16_t type, const ac_payload *p, uint16_t origin)
{
    size_t id_at = p->n + 1, name_at = id_at + (p->id ? p->id_n + 1 : 0);
    ac_queued_event *q = malloc(sizeof *q + name_at + (p->name ? p->name_n + 1 : 0));
    if (!q)
        return NULL;
    q->next = NULL;
    q->type = type;
    q->origin = origin;
    q->t_ms = ac_wall_now_ms();
    q->data = NULL;
    q->pl = *p;
    q->pl.text = memcpy(q->text, p->text, p->n);
    q->text[p->n] = 0;
    if (p->id) {
        q->pl.id = memcpy(q->text + id_at, p->id, p->id_n);
        q->text[id_at + p->id_n] = 0;
    }
    if (p->name) {
        q->pl.name = memcpy(q->text + name_at, p->name, p->name_n);
        q->text[name_at + p->name_n] = 0;
    }
    return q;
}

static void enqueue_typed(ac_session *s, uint16_t type, const ac_payload *p, uint16_t origin)
{
    ac_queued_event *q = typed_new(type, p, origin);
    if (q)
        enqueue(s, q);
}

static int event_ok(const ac_session *s, uint16_t type)
{
    return type != AC_FSM_NONE && type != 0 && type < s->e->t->n_events;
}

/* *s, *n as UTF-8: unchanged, or repaired into *fixed (as the JSON string was). 0, or -1 when
 * out of memory or too long for a journal line. */
static int utf8_or_repaired(const char **s, size_t *n, char **fixed)
{
    *fixed = NULL;
    if (*n >= AC_JOURNAL_MAX_LINE)
        return -1;
    if (!*s || ac_utf8_valid_len(*s, *n) == *n)
        return 0;
    *s = *fixed = ac_utf8_repair(*s, *n, 0, n);
    return *fixed ? 0 : -1;
}

void ac_session_enqueue_delta(ac_session *s, uint16_t type, int kind, const char *text, size_t n,
                              uint16_t origin)
{
    if (!event_ok(s, type) || kind < 0 || kind >= AC_DELTA_TOOL_CALL)
        return;
    char *fixed;
    if (utf8_or_repaired(&text, &n, &fixed) < 0)
        return;
    ac_payload p = {.kind = AC_PAYLOAD_DELTA, .delta = (uint8_t)kind, .n = n, .text = text};
    enqueue_typed(s, type, &p, origin);
    free(fixed);
}

void ac_session_enqueue_tool_delta(ac_session *s, uint16_t type, int index, const char *id,
                                   const char *name, const char *args, size_t n, uint16_t origin)
{
    if (!event_ok(s, type))
        return;
    size_t id_n = id ? strlen(id) : 0, name_n = name ? strlen(name) : 0;
    char *f1, *f2 = NULL, *f3 = NULL;
    if (utf8_or_repaired(&args, &n, &f1) == 0 && utf8_or_repaired(&id, &id_n, &f2) == 0 &&
        utf8_or_repaired(&name, &name_n, &f3) == 0) {
        ac_payload p = {.kind = AC_PAYLOAD_DELTA,
                        .delta = AC_DELTA_TOOL_CALL,
                        .n = n,
                        .text = args,
                        .index = index,
                        .id = id,
                        .name = name,
                        .id_n = id_n,
                        .name_n = name_n};
        enqueue_typed(s, type, &p, origin);
    }
    free(f1);
    free(f2);
    free(f3);
}

void ac_session_enqueue_completion(ac_session *s, uint16_t type, const ac_completion *c,
                                   uint16_t origin)
{
    if (!event_ok(s, type))
        return;
    ac_queued_event *q = malloc(sizeof *q + ac_completion_size(c));
    const ac_completion *d = q ? ac_completion_pack(q->text, c) : NULL;
    if (!d) { /* out of memory: the event still comes, without its reply */
        free(q);
        ac_session_enqueue(s, type, NULL, 0, origin);
        return;
    }
    q->next = NULL;
    q->type = type;
    q->origin = origin;
    q->t_ms = ac_wall_now_ms();
    q->data = NULL;
    q->pl = (ac_payload){.kind = AC_PAYLOAD_COMPLETION, .text = "", .done = d};
    enqueue(s, q);
}

void ac_session_enqueue_tool_result(ac_session *s, uint16_t type, const char *id, int ok,
                                    const char *content, int64_t duration_ms, uint16_t origin)
{
    if (!event_ok(s, type))
        return;
    size_t id_n = strlen(id), n = strlen(content);
    char *f1, *f2 = NULL;
    ac_queued_event *q = NULL;
    if (utf8_or_repaired(&content, &n, &f1) == 0 && utf8_or_repaired(&id, &id_n, &f2) == 0) {
        ac_payload p = {.kind = AC_PAYLOAD_TOOL_RESULT,
                        .n = n,
                        .text = content,
                        .id = id,
                        .id_n = id_n,
                        .ok = ok,
                        .duration_ms = duration_ms};
        q = typed_new(type, &p, origin);
    }
    if (q)
        enqueue(s, q);
    else /* too long for a line (its writer says so) or out of memory: as JSON, never lost */
        ac_session_enqueue(s, type,
                           json_pack("{s:s, s:b, s:s, s:I}", "id", id, "ok", ok, "content", content,
                                     "duration_ms", (json_int_t)duration_ms),
                           0, origin);
    free(f1);
    free(f2);
}

void ac_session_enqueue_failure(ac_session *s, uint16_t type, const char *cls, int64_t status,
                                int retryable, int64_t retry_after_ms, const char *message,
                                uint16_t origin)
{
    if (!event_ok(s, type))
        return;
    size_t n = strlen(message), cls_n = strlen(cls);
    char *f1, *f2 = NULL;
    ac_queued_event *q = NULL;
    if (utf8_or_repaired(&message, &n, &f1) == 0 && utf8_or_repaired(&cls, &cls_n, &f2) == 0) {
        ac_payload p = {.kind = AC_PAYLOAD_FAILURE,
                        .n = n,
                        .text = message,
                        .name = cls,
                        .name_n = cls_n,
                        .ok = retryable,
                        .status = status,
                        .retry_after_ms = retry_after_ms};
        q = typed_new(type, &p, origin);
    }
    if (q) {
        enqueue(s, q);
    } else { /* out of memory: as JSON, never lost */
        json_t *j = json_pack("{s:s, s:I, s:b, s:s}", "class", cls, "status", (json_int_t)status,
                              "retryable", retryable, "message", message);
        if (j && retry_after_ms >= 0)
            json_object_set_new(j, "retry_after_ms", json_integer(retry_after_ms));
        ac_session_enqueue(s, type, j, 0, origin);
    }
    free(f1);
    free(f2);
}

void ac_session_enqueue_empty(ac_session *s, uint16_t type, uint16_t origin)
{
    if (!event_ok(s, type))
        return;
    ac_payload p = {.kind = AC_PAYLOAD_EMPTY, .text = ""};
    enqueue_typed(s, type, &p, origin);
}

void ac_session_forget(ac_session *s, uint16_t origin)
{
    if (origin) {
        q_filter(&s->raised, origin, 0);
        q_filter(&s->inbox, origin, 0);
    }
}

uint16_t ac_session_origin(const ac_session *s)
{
    return s->current_effect;
}

size_t ac_session_turn_base(const ac_session *s)
{
    return s->turn_base;
}

void **ac_session_provider_slot(ac_session *s)
{
    return &s->provider_state;
}

void **ac_session_effect_state(ac_session *s)
{
    return &s->effect_state[s->current_effect ? s->current_effect - 1 : 0];
}

/* Applies q (NULL: out of memory) as ac_session_post says: raised, queued, or at once. */
static int post_queued(ac_session *s, ac_queued_event *q)
{
    if (!q)
        return AC_ENOMEM;
    if (s->draining) {
        q_push(&s->raised, q);
        return AC_QUEUED;
    }
    q_push(&s->inbox, q);
    /* a replay session runs no effect: applying it here leaves nothing on anyone's stack */
    if (s->e->loop && ac_loop_in_callback(s->e->loop) && !s->replaying) {
        ac_loop_defer(s->e->loop, &s->drain_task);
        return AC_QUEUED;
    }
    int rc = AC_QUEUED;
    drain(s, q, &rc);
    return rc;
}

static int post_index(ac_session *s, uint16_t type, json_t *data, int64_t t_ms)
{
    if (type == AC_FSM_NONE || type == 0 || type >= s->e->t->n_events) {
        json_decref(data);
        return AC_EUNKNOWN_EVENT;
    }
    /* decisions that do not fit the pending calls are refused, unapplied: the session still
     * waits (a replay applies what was checked when it was recorded) */
    if (!s->replaying && s->e->t->event_flags && (s->e->t->event_flags[type] & AC_EV_DECISIONS) &&
        ac_session_check_decisions(s, s->e->t->event_names[type], data, NULL, 0) < 0) {
        json_decref(data);
        return AC_EINVAL;
    }
    return post_queued(s, q_new(type, data, t_ms, 0));
}

int ac_session_post_typed(ac_session *s, uint16_t type, const ac_payload *p, int64_t t_ms)
{
    if (!s || !p || !event_ok(s, type))
        return AC_EUNKNOWN_EVENT;
    ac_queued_event *q = typed_new(type, p, 0);
    if (q && t_ms)
        q->t_ms = t_ms;
    return post_queued(s, q);
}

const char *ac_strerror(int status)
{
    switch (status) {
    case AC_ESPEC:
        return "the spec cannot run here";
    case AC_ECONFIG:
        return "bad configuration";
    case AC_EIO:
        return "I/O error";
    case AC_OK:
        return "handled";
    case AC_UNHANDLED:
        return "not handled";
    case AC_QUEUED:
        return "queued";
    case AC_FAILED:
        return "dispatch failed";
    case AC_EUNKNOWN_EVENT:
        return "unknown event";
    case AC_ENOMEM:
        return "out of memory";
    case AC_EINVAL:
        return "invalid argument";
    case AC_ENOENT:
        return "no such session";
    case AC_EBUSY:
        return "in use by another holder";
    case AC_ESPEC_CHANGED:
        return "stopped mid-turn under another spec";
    default:
        return "unknown status";
    }
}

int ac_session_post(ac_session *s, const char *event, void *data, int64_t t_ms)
{
    if (!s || !event) {
        json_decref(data);
        return AC_EINVAL;
    }
    if (!strcmp(event, AC_AGENT_CHANGED)) /* a record of the engine's, not of the spec */
        return ac_session_agent_post(s, data, t_ms);
    if (!strcmp(event, AC_AGENT_STARTED) || !strcmp(event, AC_AGENT_DONE)) /* likewise */
        return ac_session_call_record(s, event, data, t_ms);
    return post_index(s, ac_engine_event_index(s->e, event), data, t_ms);
}

/* ---- posts from other threads -------------------------------------------------------
 *
 * The engine's remote inbox: a mutex-protected list of (session, event) woken through the
 * loop's thread-safe post. It is reference counted because a wake may still sit in the
 * loop's post queue when the engine is freed. */

typedef struct remote_event {
    struct remote_event *next;
    ac_session *s;
    uint16_t type;
    int64_t t_ms;
    json_t *data;
} remote_event;

struct ac_remote_inbox {
    pthread_mutex_t mu;
    int refs;         /* the engine's, plus one per wake in the loop's post queue */
    int wake_pending; /* a wake is queued: later posts ride on it */
    ac_engine *e;     /* NULL once the engine is freed */
    remote_event *head, *tail;
};

static void remote_unref(ac_remote_inbox *r)
{
    pthread_mutex_lock(&r->mu);
    int left = --r->refs;
    remote_event *list = left ? NULL : r->head;
    pthread_mutex_unlock(&r->mu);
    if (left)
        return;
    while (list) {
        remote_event *n = list->next;
        json_decref(list->data);
        free(list);
        list = n;
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

ac_remote_inbox *ac_remote_inbox_new(ac_engine *e)
{
    ac_remote_inbox *r = calloc(1, sizeof *r);
    if (!r || pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->refs = 1;
    r->e = e;
    return r;
}

void ac_remote_inbox_close(ac_remote_inbox *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->e = NULL;
    remote_event *list = r->head;
    r->head = r->tail = NULL;
    pthread_mutex_unlock(&r->mu);
    while (list) {
        remote_event *n = list->next;
        json_decref(list->data);
        free(list);
        list = n;
    }
    remote_unref(r);
}

/* On the loop thread: moves what arrived into the sessions' inboxes, in arrival order. */
static void remote_wake(void *ud)
{
    ac_remote_inbox *r = ud;
    pthread_mutex_lock(&r->mu);
    r->wake_pending = 0;
    remote_event *list = r->e ? r->head : NULL;
    if (list)
        r->head = r->tail = NULL;
    pthread_mutex_unlock(&r->mu);
    while (list) {
        remote_event *n = list->next;
        ac_session_enqueue(list->s, list->type, list->data, list->t_ms, 0);
        free(list);
        list = n;
    }
    remote_unref(r);
}

/* The session is being freed: what other threads posted to it and was not applied goes. */
static void remote_forget(ac_session *s)
{
    ac_remote_inbox *r = s->e->remote;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    remote_event **pp = &r->head, *last = NULL;
    while (*pp) {
        remote_event *ev = *pp;
        if (ev->s == s) {
            *pp = ev->next;
            json_decref(ev->data);
            free(ev);
        } else {
            last = ev;
            pp = &ev->next;
        }
    }
    r->tail = last;
    pthread_mutex_unlock(&r->mu);
}

int ac_session_post_threadsafe(ac_session *s, const char *event, void *data, int64_t t_ms)
{
    if (!s || !event) {
        json_decref(data);
        return AC_EINVAL;
    }
    ac_engine *e = s->e;
    uint16_t type = ac_engine_event_index(e, event);
    if (type == AC_FSM_NONE || type == 0) {
        json_decref(data);
        return AC_EUNKNOWN_EVENT;
    }
    ac_remote_inbox *r = e->remote;
    remote_event *ev = r ? malloc(sizeof *ev) : NULL;
    if (!ev) {
        json_decref(data);
        return r ? AC_ENOMEM : AC_EINVAL; /* no loop: nothing could apply it */
    }
    ev->next = NULL;
    ev->s = s;
    ev->type = type;
    ev->t_ms = t_ms ? t_ms : ac_wall_now_ms();
    ev->data = data;
    pthread_mutex_lock(&r->mu);
    if (r->tail)
        r->tail->next = ev;
    else
        r->head = ev;
    r->tail = ev;
    int wake = !r->wake_pending;
    if (wake) {
        r->wake_pending = 1;
        r->refs++;
    }
    pthread_mutex_unlock(&r->mu);
    if (wake && ac_loop_post(e->loop, remote_wake, r) != 0) {
        /* no memory for the wake: take the event back out */
        pthread_mutex_lock(&r->mu);
        r->wake_pending = 0;
        r->refs--;
        remote_event **pp = &r->head, *last = NULL;
        while (*pp && *pp != ev) {
            last = *pp;
            pp = &(*pp)->next;
        }
        if (*pp) {
            *pp = ev->next;
            if (r->tail == ev)
                r->tail = last;
        }
        pthread_mutex_unlock(&r->mu);
        json_decref(ev->data);
        free(ev);
        return AC_ENOMEM;
    }
    return AC_QUEUED;
}

int ac_session_send(ac_session *s, const char *text)
{
    if (!s || !text)
        return AC_EINVAL;
    json_t *d = json_pack("{s:s}", "text", text);
    /* the turn's trace id, when traced or given a parent (journals of others stay as they were) */
    if (d && (s->tp_trace[0] || (s->obs && s->e->obs->tracer))) {
        char tid[33];
        if (s->tp_trace[0])
            memcpy(tid, s->tp_trace, sizeof tid);
        else
            ac_span_random_hex(tid, 16);
        json_object_set_new(d, "trace_id", json_string(tid));
    }
    return post_index(s, s->e->ev_user_message, d, 0);
}

int ac_session_set_traceparent(ac_session *s, const char *header)
{
    if (!s || !ac_traceparent_parse(header, s->tp_trace, s->tp_span, s->tp_flags))
        return 0;
    s->tp_entries = s->fsm.counted_entries; /* for the next turn that begins */
    return 1;
}

int ac_session_cancel(ac_session *s)
{
    if (!s)
        return AC_EINVAL;
    return post_index(s, s->e->ev_cancel, NULL, 0);
}

int ac_session_cancel_turn(ac_session *s)
{
    if (!s)
        return AC_EINVAL;
    return post_index(s, s->e->ev_turn_cancel, NULL, 0);
}

/* The spawn event: the session's options over the engine's defaults, and the agent parsed
 * from them (stolen, NULL: none). */
static json_t *spawn_payload(ac_engine *e, const ac_session_options *opts, json_t *agent)
{
    const char *system = opts && opts->system_prompt ? opts->system_prompt : e->system_prompt;
    json_t *tools = json_array();
    ac_tools_add_defs(e, tools);
    json_t *d = json_pack("{s:o}", "tools", tools);
    if (d && system)
        json_object_set_new(d, "system", json_string(system));
    if (d && e->output_schema_text)
        json_object_set_new(d, "output_schema", json_loads(e->output_schema_text, 0, NULL));
    if (d && e->mcp) /* the MCP servers and the protocol version each one speaks */
        ac_mcp_spawn_info(e, d);
    json_t *kits = ac_toolkits_spawn_json(e); /* initial toolkit states (toolkits.c) */
    if (d && kits)
        json_object_set(d, "toolkits", kits);
    json_decref(kits);
    if (d && e->state_decl) /* the State starts from the event: a replay needs no tool file */
        json_object_set(d, "state", e->state_decl);
    if (d && agent)
        json_object_set(d, "agent", agent);
    json_decref(agent);
    json_t *hist = opts && opts->history ? json_loads(opts->history, 0, NULL) : NULL;
    if (d && json_is_array(hist) && json_array_size(hist))
        json_object_set(d, "history", hist);
    json_decref(hist);
    json_t *parent = ac_subagent_spawn_json(opts);
    if (d && parent)
        json_object_set(d, "parent", parent);
    json_decref(parent);
    json_t *client = ac_client_tools_spawn_json(opts); /* client_tools.c */
    if (d && client)
        json_object_set(d, "client_tools", client);
    json_decref(client);
    return d;
}

/* Frees what session_alloc and the journal's opening made of a session: all of a session that
 * did not start; ac_session_free frees the rest first. */
static void session_discard(ac_session *s)
{
    ac_toolkits_session_free(s);
    ac_tool_cache_free(s->tool_cache);
    json_decref(s->cache_hits);
    ac_decisions_forget(s);
    ac_conv_free(s->conv);
    json_decref(s->queued);
    json_decref(s->pending_records);
    free(s->turn_start);
    free(s->last_error);
    ac_schema_free(s->output_schema);
    free(s->output_schema_text);
    ac_journal_close(s->journal);
    free(s->answer);
    free(s->agent);
    ac_subagent_session_free(s);
    ac_client_tools_free(s);
    free(s->handoff_text);
    free(s->id);
    ac_obs_free(s->obs, ac_wall_now_ms());
    free(s);
}

/* A session's memory and its fields as a new session has them; NULL when out of memory. */
static ac_session *session_alloc(ac_engine *e, const char *id, int replay,
                                 const ac_session_hooks *hooks, void *hooks_ud)
{
    size_t n_effects = e->t->n_effects ? e->t->n_effects : 1;
    ac_session *s = calloc(1, sizeof *s + n_effects * sizeof s->effect_state[0]);
    if (!s)
        return NULL;
    s->e = e;
    s->hooks = hooks;
    s->hooks_ud = hooks_ud;
    s->id = strdup(id ? id : "s1");
    s->conv = ac_conv_new();
    s->queued = json_array();
    s->answer = strdup("");
    /* a new session is offered the engine's tools as they are now (its spawn event); one
     * whose events come from elsewhere (a store) checks its list before its next call */
    s->tools_rev = replay ? UINT64_MAX : ac_mcp_tools_rev(e);
    s->replaying = replay;
    if (e->obs && e->loop && s->id)
        s->obs = ac_obs_new(e->obs, s->id); /* no traces when it cannot keep them */
    if (!s->id || !s->conv || !s->queued || !s->answer) {
        session_discard(s);
        return NULL;
    }
    return s;
}

/* DIR/<id>.jsonl in buf, the id percent-encoded (agentc.h): one file per id. 0, or -1 with
 * err filled. */
static int journal_dir_path(const ac_engine *e, const char *id, char *buf, size_t cap, char *err,
                            size_t errcap)
{
    if (mkdir(e->journal_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errcap, "cannot create journal directory '%s': %s", e->journal_dir,
                 strerror(errno));
        return -1;
    }
    int k = snprintf(buf, cap, "%s/", e->journal_dir);
    if (k > 0 && (size_t)k < cap - 10)
        k += (int)ac_journal_name_encode(id, buf + k, cap - 10 - (size_t)k);
    if (k <= 0 || (size_t)k >= cap - 10) {
        snprintf(err, errcap, "journal directory path too long");
        return -1;
    }
    memcpy(buf + k, ".jsonl", 7);
    return 0;
}

/* Opens the session's journal (the given path, else one in the engine's journal_dir) and
 * writes its header; nothing in replay or without either. 0, or -1 with err filled. */
static int session_open_journal(ac_session *s, const char *journal_path, char *err, size_t errcap)
{
    ac_engine *e = s->e;
    char dir_path[4096];
    int exclusive = 0;
    if (s->replaying)
        return 0;
    if (!journal_path && e->journal_dir) {
        if (journal_dir_path(e, s->id, dir_path, sizeof dir_path, err, errcap) < 0)
            return -1;
        journal_path = dir_path;
        exclusive = 1;
    }
    if (!journal_path)
        return 0;
    s->journal = ac_journal_open(journal_path, exclusive, e->loop, err, errcap);
    if (!s->journal)
        return -1;
    if (ac_journal_write_header(s->journal, e->t, s->id, e->param_overrides) < 0) {
        snprintf(err, errcap, "%s",
                 ac_journal_error(s->journal) ? ac_journal_error(s->journal) : "out of memory");
        return -1;
    }
    return 0;
}

/* Starts the machines and queues spawn (not in replay), then applies what that raised, at
 * once or, from a loop callback, deferred. 0; -1 with err filled (the session is to be
 * discarded); 1 when the session was freed while it started. agent: opts' agent parsed
 * (stolen, NULL: none). */
static int session_start(ac_session *s, const ac_session_options *opts, json_t *agent, char *err,
                         size_t errcap)
{
    ac_engine *e = s->e;
    /* Tracing costs a call per transition: installed only when someone
     * listens (the journal's recorded steps, the output's trace, a replay). */
    int traced =
        s->journal || s->replaying || s->hooks || e->obs || (e->has_output && e->out.trace);
    ac_fsm_init(&s->fsm, &e->binding, s, traced ? on_trace : NULL, s);
    s->fsm.counted = e->turn_state; /* entries of turn states (turn.c) */
    s->drain_task.fn = drain_task;
    s->drain_task.ud = s;
    ac_event start = {0, ac_wall_now_ms(), NULL};
    s->draining = 1; /* what effects post while starting is raised */
    int started = ac_fsm_start(&s->fsm, &start);
    s->draining = 0;
    if (started != AC_FSM_HANDLED) {
        snprintf(err, errcap, "the spec failed to start (see the trace)");
        json_decref(agent);
        ac_event stop = {0, start.time_ms, NULL};
        s->draining = 1;
        ac_fsm_stop(&s->fsm, &stop);
        q_filter(&s->raised, 0, 1);
        return -1;
    }
    if (e->ev_spawn != AC_FSM_NONE && !s->replaying) {
        ac_queued_event *q = q_new(e->ev_spawn, spawn_payload(e, opts, agent), 0, 0);
        if (q)
            q_push(&s->inbox, q);
    } else {
        json_decref(agent);
    }
    if (s->raised.head || s->inbox.head) {
        if (e->loop && ac_loop_in_callback(e->loop) && !s->replaying) {
            ac_loop_defer(e->loop, &s->drain_task);
        } else if (drain(s, NULL, NULL)) {
            snprintf(err, errcap, "the session was freed while it started");
            return 1;
        }
    }
    return 0;
}

/* agent: opts' agent parsed by ac_session_opts_check (stolen, NULL: none). */
static ac_session *session_new(ac_engine *e, const char *id, const ac_session_options *opts,
                               json_t *agent, int replay, const ac_session_hooks *hooks,
                               void *hooks_ud, char *err, size_t errcap)
{
    ac_session *s = session_alloc(e, id, replay, hooks, hooks_ud);
    if (!s) {
        json_decref(agent);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    if (session_open_journal(s, opts ? opts->journal_path : NULL, err, errcap) < 0) {
        json_decref(agent);
        session_discard(s);
        return NULL;
    }
    int rc = session_start(s, opts, agent, err, errcap);
    if (rc < 0)
        session_discard(s);
    return rc ? NULL : s;
}

void ac_error_set(ac_error *err, int code, const char *text)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    err->code = code;
    snprintf(err->text, sizeof err->text, "%s", text ? text : "");
    /* "path:line:col: message" (script and tool files): the location, kept in the text too */
    const char *c1 = strchr(err->text, ':');
    if (c1 && c1 != err->text && (size_t)(c1 - err->text) < sizeof err->source) {
        char *end;
        long line = strtol(c1 + 1, &end, 10);
        if (end != c1 + 1 && *end == ':' && line > 0 && line < INT_MAX) {
            char *end2;
            long col = strtol(end + 1, &end2, 10);
            if (end2 != end + 1 && *end2 == ':' && col > 0 && col < INT_MAX) {
                memcpy(err->source, err->text, (size_t)(c1 - err->text));
                err->line = (int)line;
                err->column = (int)col;
            }
        }
    }
}

ac_session *ac_session_new(ac_engine *e, const char *id, const char *journal_path, ac_error *err)
{
    ac_session_options opts = {0};
    opts.journal_path = journal_path;
    return ac_session_new_opts(e, id, &opts, err);
}

/* A history option: an array of {"role": user|assistant, "content": string}. 0, or -1 said. */
static int history_check(const char *text, char *err, size_t errcap)
{
    json_t *h = text ? json_loads(text, 0, NULL) : NULL;
    int ok = text == NULL || json_is_array(h);
    size_t i;
    json_t *m;
    json_array_foreach(h, i, m)
    {
        const char *role = json_string_value(json_object_get(m, "role"));
        ok = ok && role && (!strcmp(role, "user") || !strcmp(role, "assistant")) &&
             json_is_string(json_object_get(m, "content"));
    }
    json_decref(h);
    if (!ok)
        snprintf(err, errcap,
                 "the session's history is not an array of {\"role\": user or "
                 "assistant, \"content\": text}");
    return ok ? 0 : -1;
}

int ac_session_opts_check(const ac_engine *e, const ac_session_options *opts, json_t **agent,
                          char *err, size_t errcap)
{
    const char *p = opts ? opts->system_prompt : NULL;
    size_t n = p ? strlen(p) : 0, ok = p ? ac_utf8_valid_len(p, n) : 0;
    if (ok != n) {
        snprintf(err, errcap, "the session's system prompt is not valid UTF-8 (byte %zu)", ok);
        return -1;
    }
    if (opts && history_check(opts->history, err, errcap))
        return -1;
    if (ac_client_tools_check(e, opts, err, errcap)) /* client_tools.c */
        return -1;
    return ac_session_agent_check(opts, agent, err, errcap);
}

ac_session *ac_session_new_opts(ac_engine *e, const char *id, const ac_session_options *opts,
                                ac_error *err)
{
    char text[512] = "";
    if (!e) {
        ac_error_set(err, AC_EINVAL, "ac_session_new needs an engine");
        return NULL;
    }
    json_t *agent = NULL;
    if (ac_session_opts_check(e, opts, &agent, text, sizeof text)) {
        ac_error_set(err, AC_EINVAL, text);
        return NULL;
    }
    if (e->tool_choice && !ac_tools_find(e, e->tool_choice)) {
        json_decref(agent);
        snprintf(text, sizeof text,
                 "tool_choice '%.128s' names no configured tool (auto, none, required, or the "
                 "name of a tool added to the engine)",
                 e->tool_choice);
        ac_error_set(err, AC_ECONFIG, text);
        return NULL;
    }
    ac_session *s = session_new(e, id, opts, agent, 0, NULL, NULL, text, sizeof text);
    if (!s)
        ac_error_set(err,
                     strstr(text, "out of memory") ? AC_ENOMEM
                     : strstr(text, "journal")     ? AC_EIO
                                                   : AC_ESPEC,
                     text);
    else if (err)
        memset(err, 0, sizeof *err);
    return s;
}

ac_session *ac_session_new_replayer(ac_engine *e, const char *id, ac_error *err)
{
    char text[512] = "";
    ac_session *s = e ? ac_session_new_replay(e, id, text, sizeof text) : NULL;
    if (!s)
        ac_error_set(err,
                     !e                              ? AC_EINVAL
                     : strstr(text, "out of memory") ? AC_ENOMEM
                                                     : AC_ESPEC,
                     e ? text : "ac_session_new_replayer needs an engine");
    else if (err)
        memset(err, 0, sizeof *err);
    return s;
}

ac_session *ac_session_new_replay(ac_engine *e, const char *id, char *err, size_t errcap)
{
    return session_new(e, id, NULL, NULL, 1, NULL, NULL, err, errcap);
}

ac_session *ac_session_new_hooked(ac_engine *e, const char *id, const ac_session_hooks *hooks,
                                  void *hooks_ud, int replay, char *err, size_t errcap)
{
    if (!replay)
        return ac_session_new_hooked_opts(e, id, hooks, hooks_ud, NULL, NULL, err, errcap);
    return session_new(e, id, NULL, NULL, 1, hooks, hooks_ud, err, errcap);
}

ac_session *ac_session_new_hooked_opts(ac_engine *e, const char *id, const ac_session_hooks *hooks,
                                       void *hooks_ud, const ac_session_options *opts,
                                       json_t *agent, char *err, size_t errcap)
{
    if (e->tool_choice && !ac_tools_find(e, e->tool_choice)) {
        json_decref(agent);
        snprintf(err, errcap, "tool_choice '%.128s' names no configured tool", e->tool_choice);
        return NULL;
    }
    /* opts were checked by the caller (ac_session_opts_check, before it touched its store),
     * which gave their agent parsed: its JSON is not parsed once more here */
    ac_session_options o = opts ? *opts : (ac_session_options){0};
    o.journal_path = NULL; /* the hooks keep the journal */
    return session_new(e, id, &o, agent, 0, hooks, hooks_ud, err, errcap);
}

void ac_session_set_step_hook(ac_session *s, ac_trace_fn fn, void *ud)
{
    s->step_fn = fn;
    s->step_ud = ud;
}

void ac_session_free(ac_session *s)
{
    if (!s)
        return;
    /* From a handler, an output callback or any loop callback: freed when the queue reaches
     * it, right after the current event (the session's other queued events go with it). */
    if (s->draining || (s->e->loop && ac_loop_in_callback(s->e->loop))) {
        ac_queued_event *q = q_new(EV_FREE, NULL, 1, 0);
        if (q) {
            q->next = s->raised.head;
            s->raised.head = q;
            if (!s->raised.tail)
                s->raised.tail = q;
            if (!s->draining)
                ac_loop_defer(s->e->loop, &s->drain_task);
            return;
        }
        /* no memory to queue it: freed now, as before queues existed */
    }
    session_free_now(s);
}

static void session_free_now(ac_session *s)
{
    ac_event ev = {0, 0, NULL};
    if (s->hooks)
        s->hooks->close(s); /* commits what is buffered, releases the lease */
    s->hooks = NULL;
    s->draining = 1; /* what stopping effects post is dropped below */
    ac_fsm_stop(&s->fsm, &ev);
    q_filter(&s->raised, 0, 1);
    q_filter(&s->inbox, 0, 1);
    if (s->e->loop)
        ac_loop_undefer(s->e->loop, &s->drain_task);
    remote_forget(s);
    if (s->provider_state && s->e->provider && s->e->provider->release)
        s->e->provider->release(s->e->provider, s->provider_state);
    ac_spec_facts_free(s);
    ac_state_free(s->state);
    free(s->partial);
    free(s->held);
    free(s->shown);
    free(s->error);
    session_discard(s);
}

const char *ac_session_id(const ac_session *s)
{
    return s ? s->id : NULL;
}
ac_engine *ac_session_engine(const ac_session *s)
{
    return s ? s->e : NULL;
}
ac_conv *ac_session_conv(ac_session *s)
{
    return s ? s->conv : NULL;
}
const ac_fsm *ac_session_fsm(const ac_session *s)
{
    return s ? &s->fsm : NULL;
}
void *ac_session_userdata(const ac_session *s)
{
    return s ? s->userdata : NULL;
}
void ac_session_set_userdata(ac_session *s, void *ud)
{
    if (s)
        s->userdata = ud;
}

const char *ac_session_state(const ac_session *s, const char *machine)
{
    if (!s || !machine)
        return NULL;
    const ac_fsm_tables *t = s->e->t;
    for (uint16_t m = 0; m < t->n_machines; m++)
        if (strcmp(t->machines[m].name, machine) == 0) {
            uint16_t st = ac_fsm_state_of(&s->fsm, m);
            return st == AC_FSM_NONE ? NULL : t->states[st].name;
        }
    return NULL;
}

const char *ac_session_answer(const ac_session *s)
{
    return s ? s->answer : "";
}
const char *ac_session_partial(const ac_session *s)
{
    return s && s->partial ? s->partial : "";
}

/* internal setters used by handlers */
void ac_session_set_answer(ac_session *s, const char *answer)
{
    set_str(&s->answer, answer ? answer : "");
}
void ac_session_set_error(ac_session *s, const char *error)
{
    set_str(&s->error, error);
}

char *ac_session_to_json(const ac_session *s)
{
    if (!s)
        return NULL;
    const ac_fsm_tables *t = s->e->t;
    json_t *states = json_array();
    for (uint8_t i = 0; i < s->fsm.depth; i++) {
        const ac_fsm_state *st = &t->states[s->fsm.state[i]];
        json_array_append_new(states, json_pack("[s s]", t->machines[st->machine].name, st->name));
    }
    char *conv = ac_conv_to_json(s->conv);
    json_error_t jerr;
    json_t *cj = conv ? json_loads(conv, 0, &jerr) : NULL;
    free(conv);
    json_t *o = json_pack(
        "{s:s, s:s, s:o, s:s, s:o, s:s, s:s?, s:O, s:i, s:o?}", "spec_hash", t->hash, "id", s->id,
        "states", states, "status", ac_session_status_name(ac_session_status(s)), "last_turn",
        ac_turn_json(s), "answer", s->answer, "error", ac_session_error(s), "queued", s->queued,
        "compacted", s->compacted_this_plan, "conversation", cj);
    if (o && ac_session_ended(s))
        json_object_set_new(o, "ended", ac_turn_end_json(s));
    if (o && s->e->price) /* its model is priced: what the session cost */
        json_object_set_new(o, "usage", json_pack("{s:f}", "cost_usd", s->cost_usd));
    json_t *kits = ac_toolkits_state_json(s);
    if (o && kits)
        json_object_set(o, "toolkits", kits);
    json_decref(kits);
    if (o && s->state) /* the State (state.h) */
        json_object_set(o, "state", s->state->doc);
    if (o && s->turn_start)
        json_object_set_new(o, "turn_start", json_string(s->turn_start));
    char *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return out;
}

int ac_session_traceparent(const ac_session *s, char *buf, size_t cap)
{
    if (!s || s->replaying)
        return 0;
    if (ac_obs_traceparent(s->obs, buf, cap))
        return 1;
    if (cap < 56 || !ac_session_in_turn(s))
        return 0;
    uint32_t now = s->fsm.counted_entries;      /* untraced: the received parent of the turn */
    if (s->tp_trace[0] && now != s->tp_entries) /* a turn began since it came: this one */
        snprintf(buf, cap, "00-%s-%s-%s", s->tp_trace, s->tp_span, s->tp_flags);
    else if (s->turn_parent[0] && now == s->turn_entries)
        snprintf(buf, cap, "00-%s-%s-%s", s->turn_trace, s->turn_parent, s->turn_flags);
    else
        return 0;
    return 1;
}

int ac_session_tool_traceparent(const ac_session *s, const char *call_id, char *buf, size_t cap)
{
    if (!s || s->replaying)
        return 0;
    return ac_obs_tool_traceparent(s->obs, call_id, buf, cap) ||
           ac_session_traceparent(s, buf, cap);
}

const char *ac_session_trace_id(const ac_session *s)
{
    const char *t = s ? ac_obs_trace_id(s->obs) : NULL;
    return t ? t : s && s->turn_trace[0] ? s->turn_trace : NULL;
}
