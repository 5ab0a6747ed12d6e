/*
 * spec_rt.c - the run-time side of the spec language's v2 forms (gen/sugar.c):
 *
 *   - comparison guards (`turn.tool_calls >= max_tool_calls`, `calls "shell_*"`):
 *     each is compiled once, when the engine binds the spec, into a record
 *     (fact id, operator, the param's value slot or a literal) evaluated by a
 *     small per-slot function. The dispatcher sees an ordinary guard: one
 *     indirect call, no name lookup;
 *   - the built-in actions with arguments (fail("why"), note, answer_calls,
 *     answer_from_call), which the generator compiled too (the tables'
 *     action_ops: which one, its strings), bound the same way; and
 *     apply_decisions (decisions.c);
 *   - `after` timers: the effect `after(X)@M.S` posts the event of the same name
 *     once X has passed since the state was entered; leaving the state stops it;
 *   - the session facts, read from the conversation and from the events
 *     (times come from events, so a replay computes the same values).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "session/decisions.h"
#include "session/guardrail.h"
#include "session/spec_rt.h"
#include "session_int.h"
#include "util/units.h"

#define RT_SLOTS 128 /* comparison guards, and actions with arguments, per spec */

enum {
    OP_EQ = AC_CMP_EQ,
    OP_NE = AC_CMP_NE,
    OP_LT = AC_CMP_LT,
    OP_LE = AC_CMP_LE,
    OP_GT = AC_CMP_GT,
    OP_GE = AC_CMP_GE
};
enum { RHS_LIT, RHS_PARAM, RHS_STR, RHS_CALLS };

typedef struct rt_cond {
    uint8_t fact, op, rhs;
    int64_t lit;
    double usd; /* a literal amount of an AC_FT_USD fact */
    const ac_param_value *param;
    const char *str; /* the tables' string */
} rt_cond;

typedef struct rt_action {
    int kind;          /* enum ac_fsm_action_kind */
    const char *a, *b; /* its arguments: the tables' strings */
} rt_action;

struct ac_spec_rt {
    rt_cond conds[RT_SLOTS];
    size_t n_conds;
    rt_action acts[RT_SLOTS];
    size_t n_acts;
    uint16_t *after_event; /* per effect index: the event an `after` timer posts */
    int64_t *after_ms;     /* per effect index: a literal duration (-1: from the param) */
};

/* The per-session record of what the facts need between events. The turn facts count from
 * the start of the running turn as turn.c defines it (a turn state entered), so a turn a
 * pause stopped and `resume` started again counts from the resume, not from its message. */
struct ac_spec_facts {
    size_t seen_msgs;                /* messages scanned */
    int64_t turn_start_ms;           /* when the turn began (its event's time), 0: none yet */
    size_t turn_calls;               /* tool calls recorded since it began */
    size_t turn_passed;              /* guardrail.passed events since it began */
    int64_t tokens_in0, tokens_out0; /* session usage when the turn began */
    double cost0;                    /* the session's cost then */
    uint32_t turn_entries; /* the fsm's counted entries (turn states) as last seen (not saved:
                              a restored fsm counts from 0 again) */
    uint16_t state;        /* the deepest active state, as of the last event */
    uint32_t entries;      /* the machine's entry count then (ac_fsm.entries) */
    int64_t state_ms;      /* when it was entered */
    int64_t status;
    char klass[32], finish[32];
};

/* ---- session facts ---- */
static struct ac_spec_facts *facts_of(ac_session *s)
{
    if (!s->spec_facts) {
        s->spec_facts = calloc(1, sizeof *s->spec_facts);
        if (s->spec_facts)
            s->spec_facts->state = AC_FSM_NONE;
    }
    return s->spec_facts;
}

/* Brings the turn record up to date: a turn state entered since the last look began a turn
 * with this event (the messages before it are the last turn's); the new messages add their
 * tool calls. A conversation that shrank was compacted: what was counted stays counted. */
static void turn_scan(ac_session *s, struct ac_spec_facts *f, const ac_event *ev)
{
    size_t n = ac_conv_message_count(s->conv);
    if (f->turn_entries != s->fsm.counted_entries) { /* a turn began */
        f->turn_entries = s->fsm.counted_entries;
        f->turn_start_ms = ev->time_ms;
        f->turn_calls = 0;
        f->turn_passed = 0;
        f->seen_msgs = n;
        f->tokens_in0 = ac_conv_usage_input(s->conv);
        f->tokens_out0 = ac_conv_usage_output(s->conv);
        f->cost0 = s->cost_usd;
    }
    for (size_t i = f->seen_msgs; i < n; i++) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if (m && m->role == AC_ROLE_ASSISTANT)
            f->turn_calls += m->n_tool_calls;
    }
    f->seen_msgs = n;
}

/* Tool calls the event asks for that the conversation does not hold yet. */
static size_t new_calls(ac_session *s, const ac_event *ev)
{
    ac_calls_view v;
    ac_event_calls(s, ev, &v);
    size_t n = 0;
    for (size_t i = 0; i < v.n; i++) {
        const char *id = ac_calls_id(&v, i);
        if (!id || !ac_conv_tool_call(s->conv, id))
            n++;
    }
    return n;
}

static size_t pending_calls(ac_session *s)
{
    size_t n = ac_conv_iter_call_count(s->conv), k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
        k += c && c->state == AC_CALL_NONE;
    }
    return k;
}

static int64_t fact_num(ac_session *s, const ac_event *ev, int fact)
{
    struct ac_spec_facts *f = facts_of(s);
    if (!f)
        return 0;
    switch (fact) {
    case AC_FACT_TURN_ITERATIONS:
        return ac_conv_iteration(s->conv);
    case AC_FACT_TURN_RETRIES:
        return ac_conv_retries(s->conv);
    case AC_FACT_TURN_TOOL_CALLS:
        turn_scan(s, f, ev);
        return (int64_t)(f->turn_calls + new_calls(s, ev));
    case AC_FACT_SESSION_TOOL_CALLS:
        return (int64_t)(ac_conv_tool_call_count(s->conv) + new_calls(s, ev));
    case AC_FACT_TURN_TOKENS_IN:
        turn_scan(s, f, ev);
        return ac_conv_usage_input(s->conv) - f->tokens_in0;
    case AC_FACT_TURN_TOKENS_OUT:
        turn_scan(s, f, ev);
        return ac_conv_usage_output(s->conv) - f->tokens_out0;
    case AC_FACT_SESSION_TOKENS_IN:
        return ac_conv_usage_input(s->conv);
    case AC_FACT_SESSION_TOKENS_OUT:
        return ac_conv_usage_output(s->conv);
    case AC_FACT_TURN_TIME:
        turn_scan(s, f, ev);
        return f->turn_start_ms ? ev->time_ms - f->turn_start_ms : 0;
    case AC_FACT_STATE_TIME:
        return f->state == AC_FSM_NONE ? 0 : ev->time_ms - f->state_ms;
    case AC_FACT_CONTEXT_MESSAGES:
        return (int64_t)ac_conv_message_count(s->conv);
    case AC_FACT_TURN_GUARDRAILS:
        turn_scan(s, f, ev);
        return (int64_t)f->turn_passed;
    case AC_FACT_CALLS_PENDING:
        return (int64_t)(pending_calls(s) + new_calls(s, ev));
    case AC_FACT_LLM_STATUS: {
        ac_failure_view fl;
        ac_failure_of(s, ev, &fl);
        return fl.has_status ? fl.status : f->status;
    }
    default:
        return 0;
    }
}

/* turn.cost_usd and session.cost_usd: the model calls applied so far (as the token facts) */
static double fact_usd(ac_session *s, const ac_event *ev, int fact)
{
    struct ac_spec_facts *f = facts_of(s);
    if (!f)
        return 0;
    if (fact == AC_FACT_SESSION_COST)
        return s->cost_usd;
    turn_scan(s, f, ev);
    return s->cost_usd - f->cost0;
}

/* Whether op holds of a comparison's sign (cmp: -1 less, 0 equal, 1 greater). */
static bool op_holds(int op, int cmp)
{
    switch (op) {
    case OP_EQ:
        return cmp == 0;
    case OP_NE:
        return cmp != 0;
    case OP_LT:
        return cmp < 0;
    case OP_LE:
        return cmp <= 0;
    case OP_GT:
        return cmp > 0;
    default:
        return cmp >= 0;
    }
}

static bool cmp_usd(int op, double v, double r)
{
    return op_holds(op, (v > r) - (v < r));
}

static const char *fact_str(ac_session *s, const ac_event *ev, int fact)
{
    struct ac_spec_facts *f = facts_of(s);
    const char *key = fact == AC_FACT_LLM_ERROR ? "class" : "finish_reason";
    const ac_payload *p = ac_event_payload(s, ev);
    if (p && p->kind == AC_PAYLOAD_COMPLETION && fact != AC_FACT_LLM_ERROR &&
        p->done->finish_reason)
        return p->done->finish_reason;
    if (p && p->kind == AC_PAYLOAD_FAILURE && fact == AC_FACT_LLM_ERROR)
        return p->name;
    json_t *d = (json_t *)ev->data;
    json_t *v = d && json_is_object(d) ? json_object_get(d, key) : NULL;
    if (json_is_string(v))
        return json_string_value(v);
    if (!f)
        return "";
    return fact == AC_FACT_LLM_ERROR ? f->klass : f->finish;
}

static bool calls_match(ac_session *s, const ac_event *ev, const char *glob)
{
    ac_calls_view v;
    ac_event_calls(s, ev, &v);
    size_t i;
    for (i = 0; i < v.n; i++) {
        const char *name = ac_calls_name(&v, i);
        if (name && fnmatch(glob, name, 0) == 0)
            return true;
    }
    size_t n = ac_conv_iter_call_count(s->conv);
    for (i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *tc = id ? ac_conv_tool_call(s->conv, id) : NULL;
        if (tc && tc->state == AC_CALL_NONE && fnmatch(glob, tc->name, 0) == 0)
            return true;
    }
    return false;
}

static bool cond_eval(ac_session *s, const ac_event *ev, const rt_cond *c)
{
    if (c->rhs == RHS_CALLS)
        return calls_match(s, ev, c->str);
    if (c->rhs == RHS_STR || (c->rhs == RHS_PARAM && ac_facts[c->fact].type == AC_FT_STRING)) {
        const char *want = c->rhs == RHS_STR ? c->str : c->param->sval ? c->param->sval : "";
        bool eq = strcmp(fact_str(s, ev, c->fact), want) == 0;
        return c->op == OP_EQ ? eq : !eq;
    }
    if (ac_facts[c->fact].type == AC_FT_USD) /* an int param: whole dollars */
        return cmp_usd(c->op, fact_usd(s, ev, c->fact),
                       c->rhs == RHS_PARAM ? (double)c->param->ival : c->usd);
    int64_t v = fact_num(s, ev, c->fact), r = c->rhs == RHS_PARAM ? c->param->ival : c->lit;
    return op_holds(c->op, (v > r) - (v < r));
}

void ac_spec_rt_after_event(ac_session *s, const ac_event *ev)
{
    if (!s->e->spec_rt)
        return; /* the spec uses none of the v2 forms */
    struct ac_spec_facts *f = facts_of(s);
    if (!f)
        return;
    turn_scan(s, f, ev);
    f->turn_passed += strcmp(s->e->t->event_names[ev->type], "guardrail.passed") == 0;
    if (s->fsm.depth) {
        uint16_t st = s->fsm.state[s->fsm.depth - 1];
        if (st != f->state || s->fsm.entries != f->entries) { /* left, or entered again */
            f->state = st;
            f->state_ms = ev->time_ms;
        }
        f->entries = s->fsm.entries;
    }
    json_t *d = (json_t *)ev->data;
    if (d && json_is_object(d)) {
        json_t *v = json_object_get(d, "status");
        if (json_is_integer(v))
            f->status = json_integer_value(v);
        const char *k = json_string_value(json_object_get(d, "class"));
        if (k)
            snprintf(f->klass, sizeof f->klass, "%s", k);
        const char *fr = json_string_value(json_object_get(d, "finish_reason"));
        if (fr)
            snprintf(f->finish, sizeof f->finish, "%s", fr);
    }
    const ac_payload *p = ac_event_payload(s, ev);
    if (p && p->kind == AC_PAYLOAD_COMPLETION && p->done->finish_reason)
        snprintf(f->finish, sizeof f->finish, "%s", p->done->finish_reason);
    if (p && p->kind == AC_PAYLOAD_FAILURE) {
        f->status = p->status;
        snprintf(f->klass, sizeof f->klass, "%s", p->name);
    }
}

void ac_spec_facts_free(ac_session *s)
{
    free(s->spec_facts);
    s->spec_facts = NULL;
}

json_t *ac_spec_facts_save(const ac_session *s)
{
    const struct ac_spec_facts *f = s->spec_facts;
    if (!f)
        return json_object();
    const ac_fsm_tables *t = s->e->t;
    json_t *state = json_null();
    if (f->state != AC_FSM_NONE && f->state < t->n_states)
        state = json_pack("[s s]", t->machines[t->states[f->state].machine].name,
                          t->states[f->state].name);
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:I, s:I, s:s, s:s}", "seen_msgs",
                  (json_int_t)f->seen_msgs, "turn_start_ms", (json_int_t)f->turn_start_ms,
                  "turn_calls", (json_int_t)f->turn_calls, "tokens_in0", (json_int_t)f->tokens_in0,
                  "tokens_out0", (json_int_t)f->tokens_out0, "state", state, "entries",
                  (json_int_t)f->entries, "state_ms", (json_int_t)f->state_ms, "status",
                  (json_int_t)f->status, "class", f->klass, "finish", f->finish);
    if (o && f->turn_passed) /* only when a guardrail passed: other snapshots stay as they were */
        json_object_set_new(o, "turn_passed", json_integer((json_int_t)f->turn_passed));
    if (o && f->cost0 > 0) /* a priced session's cost when its turn began */
        json_object_set_new(o, "cost0", json_real(f->cost0));
    return o;
}

/* The index of state [machine, name] in these tables, AC_FSM_NONE when it has none. */
static uint16_t state_named(const ac_fsm_tables *t, json_t *v)
{
    const char *m = json_string_value(json_array_get(v, 0));
    const char *name = json_string_value(json_array_get(v, 1));
    for (uint16_t k = 0; m && name && k < t->n_states; k++)
        if (!strcmp(t->states[k].name, name) && !strcmp(t->machines[t->states[k].machine].name, m))
            return k;
    return AC_FSM_NONE;
}

static int64_t int_of(json_t *o, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(o, key));
}

int ac_spec_facts_restore(ac_session *s, json_t *v, char *err, size_t errcap)
{
    if (!json_is_object(v)) {
        snprintf(err, errcap, "\"facts\" is malformed");
        return AC_EINVAL;
    }
    if (!json_object_size(v))
        return AC_OK; /* none recorded yet */
    struct ac_spec_facts *f = facts_of(s);
    if (!f) {
        snprintf(err, errcap, "out of memory");
        return AC_ENOMEM;
    }
    f->seen_msgs = (size_t)int_of(v, "seen_msgs");
    f->turn_entries = s->fsm.counted_entries;
    f->turn_start_ms = int_of(v, "turn_start_ms");
    f->turn_calls = (size_t)int_of(v, "turn_calls");
    f->turn_passed = (size_t)int_of(v, "turn_passed");
    f->tokens_in0 = int_of(v, "tokens_in0");
    f->tokens_out0 = int_of(v, "tokens_out0");
    f->cost0 = json_number_value(json_object_get(v, "cost0"));
    f->state = state_named(s->e->t, json_object_get(v, "state")); /* another spec: none */
    f->entries = (uint32_t)int_of(v, "entries");
    f->state_ms = int_of(v, "state_ms");
    f->status = int_of(v, "status");
    const char *k = json_string_value(json_object_get(v, "class"));
    const char *fr = json_string_value(json_object_get(v, "finish"));
    snprintf(f->klass, sizeof f->klass, "%s", k ? k : "");
    snprintf(f->finish, sizeof f->finish, "%s", fr ? fr : "");
    return AC_OK;
}

/* ---- built-in actions with arguments ---- */
static void answer_pending(ac_session *s, const char *result, int ok, int64_t t_ms)
{
    size_t n = ac_conv_iter_call_count(s->conv);
    for (size_t i = 0; i < n; i++) {
        const char *id = ac_conv_iter_call(s->conv, i);
        const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
        if (c && c->state == AC_CALL_NONE) {
            if (ok)
                ac_conv_set_tool_result(s->conv, id, ok, result, t_ms);
            else
                ac_session_fail_tool_call(s, id, result, t_ms); /* the output reports it */
        }
    }
}

/* The text with each {param} replaced by the param's value (durations in ms), and {reason}
 * by the event's reason (a tripped guardrail's). */
static void expand(const ac_session *s, const ac_event *ev, const char *in, char *out, size_t cap)
{
    const ac_engine *e = s->e;
    size_t o = 0;
    const char *reason = json_string_value(json_object_get(ev->data, "reason"));
    while (*in && o + 1 < cap) {
        const char *close = *in == '{' ? strchr(in, '}') : NULL;
        const ac_param_value *p = NULL;
        if (close && reason && strncmp(in, "{reason}", 8) == 0) {
            int w = snprintf(out + o, cap - o, "%s", reason);
            o = w < 0 || (size_t)w >= cap - o ? cap - 1 : o + (size_t)w;
            in = close + 1;
            continue;
        }
        if (close)
            for (uint16_t i = 0; i < e->n_params && !p; i++)
                if (strlen(e->params[i].name) == (size_t)(close - in - 1) &&
                    strncmp(e->params[i].name, in + 1, (size_t)(close - in - 1)) == 0)
                    p = &e->params[i];
        if (!p) {
            out[o++] = *in++;
            continue;
        }
        long long v = (long long)p->ival;
        int w = p->type == AC_PARAM_STRING ? snprintf(out + o, cap - o, "%s", p->sval)
                : p->type == AC_PARAM_DURATION
                    ? (v % 60000 == 0 && v  ? snprintf(out + o, cap - o, "%lldm", v / 60000)
                       : v % 1000 == 0 && v ? snprintf(out + o, cap - o, "%llds", v / 1000)
                                            : snprintf(out + o, cap - o, "%lldms", v))
                    : snprintf(out + o, cap - o, "%lld", (long long)p->ival);
        if (w < 0 || (size_t)w >= cap - o) {
            o = cap - 1;
            break;
        }
        o += (size_t)w;
        in = close + 1;
    }
    out[o] = 0;
}

static void run_action(ac_session *s, const ac_event *ev, const rt_action *a)
{
    char text[1200];
    switch (a->kind) {
    case AC_AOP_FAIL: /* fail("why") */
    case AC_AOP_NOTE: /* note("text") */
        expand(s, ev, a->a, text, sizeof text);
        ac_session_set_error(s, text);
        break;
    case AC_AOP_ANSWER_CALLS: /* answer_calls("result") */
        answer_pending(s, a->a, 0, ev->time_ms);
        break;
    default: { /* answer_from_call("tool", "argument") */
        size_t n = ac_conv_iter_call_count(s->conv);
        const ac_tool_call *hit = NULL;
        for (size_t i = 0; i < n && !hit; i++) {
            const char *id = ac_conv_iter_call(s->conv, i);
            const ac_tool_call *c = id ? ac_conv_tool_call(s->conv, id) : NULL;
            if (c && c->state == AC_CALL_NONE && strcmp(c->name, a->a) == 0)
                hit = c;
        }
        if (!hit)
            break;
        json_t *args = json_loads(hit->arguments, 0, NULL);
        json_t *v = json_is_object(args) ? json_object_get(args, a->b) : NULL;
        char *dump = v && !json_is_string(v) ? json_dumps(v, JSON_COMPACT) : NULL;
        ac_session_set_answer(s, json_is_string(v) ? json_string_value(v) : dump ? dump : "");
        free(dump);
        json_decref(args);
        char *id = strdup(hit->id);
        if (id) {
            ac_conv_set_tool_result(s->conv, id, 1, "done", ev->time_ms);
            answer_pending(s, "not run: the turn ended", 0, ev->time_ms);
            free(id);
        }
        break;
    }
    }
}

/* One function per slot: the dispatcher calls guards and actions with the
 * session and the event only, so the slot number is in the function. */
#define SLOT8(X, b) X(b##0) X(b##1) X(b##2) X(b##3) X(b##4) X(b##5) X(b##6) X(b##7)
#define SLOTS(X)                                                                                   \
    SLOT8(X, 0)                                                                                    \
    SLOT8(X, 1)                                                                                    \
    SLOT8(X, 2)                                                                                    \
    SLOT8(X, 3)                                                                                    \
    SLOT8(X, 4)                                                                                    \
    SLOT8(X, 5)                                                                                    \
    SLOT8(X, 6)                                                                                    \
    SLOT8(X, 7)                                                                                    \
    SLOT8(X, 8) SLOT8(X, 9) SLOT8(X, 10) SLOT8(X, 11) SLOT8(X, 12) SLOT8(X, 13) SLOT8(X, 14)       \
        SLOT8(X, 15)
#define GUARD_FN(k)                                                                                \
    static bool rt_guard_##k(ac_session *s, const ac_event *ev)                                    \
    {                                                                                              \
        return cond_eval(s, ev, &s->e->spec_rt->conds[(k) / 10 * 8 + (k) % 10]);                   \
    }
#define ACTION_FN(k)                                                                               \
    static void rt_action_##k(ac_session *s, const ac_event *ev)                                   \
    {                                                                                              \
        run_action(s, ev, &s->e->spec_rt->acts[(k) / 10 * 8 + (k) % 10]);                          \
    }
SLOTS(GUARD_FN)
SLOTS(ACTION_FN)
#define GUARD_REF(k) rt_guard_##k,
#define ACTION_REF(k) rt_action_##k,
static const ac_guard_fn guard_slots[RT_SLOTS] = {SLOTS(GUARD_REF)};
static const ac_action_fn action_slots[RT_SLOTS] = {SLOTS(ACTION_REF)};

/* ---- `after` timers ---- */
typedef struct after_timer {
    ac_session *s;
    uint64_t timer;
    uint16_t origin, ev;
    int64_t ms;
} after_timer;

static void after_fire(void *ud)
{
    after_timer *t = ud;
    t->timer = 0;
    ac_session_enqueue(t->s, t->ev, json_pack("{s:I}", "after_ms", (json_int_t)t->ms), 0,
                       t->origin);
}

static void after_start(ac_session *s, const ac_param_value *args, size_t n, const ac_event *ev)
{
    (void)ev;
    uint16_t origin = ac_session_origin(s);
    ac_spec_rt *rt = s->e->spec_rt;
    if (!origin || !rt)
        return;
    uint16_t eff = (uint16_t)(origin - 1);
    after_timer *t = calloc(1, sizeof *t);
    if (!t)
        return;
    t->s = s;
    t->origin = origin;
    t->ev = rt->after_event[eff];
    t->ms = n ? args[0].ival : rt->after_ms[eff];
    if (t->ms < 0)
        t->ms = 0;
    t->timer = ac_loop_timer(s->e->loop, t->ms, after_fire, t);
    *ac_session_effect_state(s) = t;
}

static void after_stop(ac_session *s)
{
    after_timer **slot = (after_timer **)ac_session_effect_state(s);
    after_timer *t = *slot;
    if (!t)
        return;
    if (t->timer)
        ac_loop_cancel_timer(s->e->loop, t->timer);
    free(t);
    *slot = NULL;
}

/* ---- binding ---- */
static ac_spec_rt *rt_of(ac_engine *e)
{
    if (!e->spec_rt) {
        e->spec_rt = calloc(1, sizeof *e->spec_rt);
        if (e->spec_rt) {
            uint16_t n = e->t->n_effects ? e->t->n_effects : 1;
            e->spec_rt->after_event = calloc(n, sizeof *e->spec_rt->after_event);
            e->spec_rt->after_ms = calloc(n, sizeof *e->spec_rt->after_ms);
            if (!e->spec_rt->after_event || !e->spec_rt->after_ms) {
                ac_spec_rt_free(e);
                return NULL;
            }
        }
    }
    return e->spec_rt;
}

/* A comparison guard the generator compiled (the tables' guard_ops): its
 * record, with a param operand bound to the engine's value of the param. */
static int bind_cond(ac_engine *e, ac_spec_rt *rt, uint16_t index, char *err, size_t errcap)
{
    const ac_fsm_guard_op *op = &e->t->guard_ops[index];
    if (rt->n_conds == RT_SLOTS) {
        snprintf(err, errcap, "the spec has more than %d comparison guards", RT_SLOTS);
        return -1;
    }
    rt_cond *c = &rt->conds[rt->n_conds];
    memset(c, 0, sizeof *c);
    c->fact = op->fact;
    c->op = op->cmp;
    switch (op->operand) {
    case AC_GOP_CALLS:
    case AC_GOP_STRING:
        c->rhs = op->operand == AC_GOP_CALLS ? RHS_CALLS : RHS_STR;
        c->str = op->sval;
        break;
    case AC_GOP_PARAM:
        c->rhs = RHS_PARAM;
        c->param = op->param < e->t->n_params ? &e->params[op->param] : NULL;
        break;
    default:
        c->rhs = RHS_LIT;
        c->lit = op->ival;
        c->usd = op->usd;
        break;
    }
    if (c->fact >= AC_FACT_COUNT || c->op > AC_CMP_GE ||
        (c->rhs != RHS_CALLS && c->rhs != RHS_LIT && !c->str && !c->param) ||
        op->operand > AC_GOP_CALLS) {
        snprintf(err, errcap, "the guard '%s' is malformed in the tables (regenerate them)",
                 e->t->guard_names[index]);
        return -1;
    }
    rt->n_conds++;
    return 0;
}

/* A built-in action the generator compiled (the tables' action_ops): its record, with the
 * tables' strings as its arguments. */
static int bind_action(const ac_fsm_action_op *op, ac_spec_rt *rt, char *err, size_t errcap)
{
    if (rt->n_acts == RT_SLOTS) {
        snprintf(err, errcap, "the spec has more than %d actions with arguments", RT_SLOTS);
        return -1;
    }
    rt_action *a = &rt->acts[rt->n_acts++];
    a->kind = op->kind;
    a->a = op->args[0] ? op->args[0] : "";
    a->b = op->args[1] ? op->args[1] : "";
    return 0;
}

static int bind_after(ac_engine *e, ac_spec_rt *rt, uint16_t index, const char *name, char *err,
                      size_t errcap)
{
    uint16_t ev = AC_FSM_NONE;
    for (uint16_t i = 1; i < e->t->n_events; i++)
        if (strcmp(e->t->event_names[i], name) == 0)
            ev = i;
    if (ev == AC_FSM_NONE) {
        snprintf(err, errcap, "the timer '%s' has no event of its name", name);
        return -1;
    }
    rt->after_event[index] = ev;
    rt->after_ms[index] = -1;
    const char *arg = name + 6, *close = strchr(arg, ')');
    if (close && *arg >= '0' && *arg <= '9') {
        char buf[64];
        size_t l = (size_t)(close - arg);
        long long ms;
        if (l >= sizeof buf)
            return -1;
        memcpy(buf, arg, l);
        buf[l] = 0;
        if (ac_parse_duration_ms(buf, &ms) != AC_UNITS_OK) {
            snprintf(err, errcap, "the timer '%s' has a bad duration", name);
            return -1;
        }
        rt->after_ms[index] = ms;
    }
    e->e_start[index] = after_start;
    e->e_stop[index] = after_stop;
    return 0;
}

int ac_spec_rt_defines(int kind, const char *name)
{
    return kind == 0   ? (strchr(name, ' ') != NULL)
           : kind == 1 ? (strchr(name, '(') != NULL ||
                          strcmp(name, ac_arg_actions[AC_ACTION_APPLY_DECISIONS].name) == 0)
                       : ((strncmp(name, "after(", 6) == 0 && strchr(name, '@') != NULL) ||
                          ac_guardrail_effect(name));
}

int ac_spec_rt_bind(ac_engine *e, int kind, uint16_t index, const char *name, char *err,
                    size_t errcap)
{
    int typed = kind == 0 && e->t->guard_ops && e->t->guard_ops[index].operand != AC_GOP_NONE;
    if (!typed && !ac_spec_rt_defines(kind, name))
        return 0;
    if (kind == 2 && ac_guardrail_effect(name)) {
        ac_guardrail_bind(e, index);
        return 1;
    }
    if (kind == 0 && !typed) {
        snprintf(err, errcap,
                 "the guard '%s' has no compiled comparison in the tables (regenerate them)", name);
        return -1;
    }
    const ac_fsm_action_op *aop = kind == 1 && e->t->action_ops ? &e->t->action_ops[index] : NULL;
    if (kind == 1 && (!aop || aop->kind == AC_AOP_NONE || aop->kind > AC_AOP_APPLY_DECISIONS)) {
        snprintf(err, errcap,
                 "the action '%s' has no compiled built-in action in the tables (regenerate them)",
                 name);
        return -1;
    }
    if (aop && aop->kind == AC_AOP_APPLY_DECISIONS) {
        e->actions[index] = ac_decisions_apply; /* no argument: no slot */
        return 1;
    }
    ac_spec_rt *rt = rt_of(e);
    if (!rt) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    if (kind == 0) {
        if (bind_cond(e, rt, index, err, errcap) < 0)
            return -1;
        e->guards[index] = guard_slots[rt->n_conds - 1];
    } else if (kind == 1) {
        if (bind_action(aop, rt, err, errcap) < 0)
            return -1;
        e->actions[index] = action_slots[rt->n_acts - 1];
    } else if (bind_after(e, rt, index, name, err, errcap) < 0) {
        return -1;
    }
    return 1;
}

void ac_spec_rt_free(ac_engine *e)
{
    ac_spec_rt *rt = e->spec_rt;
    if (!rt)
        return;
    free(rt->after_event);
    free(rt->after_ms);
    free(rt);
    e->spec_rt = NULL;
}
