/*
 * compact_effect.c - the COMPACTING state's effect and its action.
 *
 * The effect decides (reading the conversation) and posts the plan in
 * compaction.done; the apply_compaction action carries it out. Plans name
 * messages by id and carry any text they add, so replaying the journal
 * applies the same plan without asking anyone again.
 * Strategies (param `compaction`):
 *   sliding_window      drop older turns after the first user message,
 *                       keeping system messages and the last `keep` turns;
 *                       a marker message says what was dropped
 *   clear_tool_results  replace all but the last `keep` tool results by a
 *                       marker; the record keeps the full result
 *   summarize           the same range as sliding_window, replaced by one
 *                       message flagged AC_MSG_SUMMARY holding a summary the
 *                       engine's provider wrote (a one-off completion)
 *   importance          keep what matters within the budget
 *                       (compact_threshold), a one-line stub for each other
 *                       tool result (compact_importance.c)
 * Ranges are cut at turn boundaries only (a user or assistant message with
 * no call of the range still waiting for its result), so no compaction
 * separates an assistant tool call from its results; ac_conv_replace_range
 * refuses such a range anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "context/tokens.h"
#include "session/compact_importance.h"
#include "session_int.h"

#define SUMMARY_MSG_CAP 2000                       /* bytes of one message in the transcript */
#define SUMMARY_TRANSCRIPT_CAP ((size_t)256 << 10) /* bytes of transcript sent */
#define SUMMARY_REPLY_CAP ((size_t)32 << 10)       /* bytes of summary kept */

static const char summary_instruction[] =
    "You compress conversations. Below is the earlier part of a conversation between a user "
    "and an assistant that uses tools. Write a concise summary that the assistant can "
    "continue from: the user's goals and requests, facts and numbers learned, tool results "
    "that still matter, decisions made and open questions. Reply with the summary only.";

size_t ac_session_estimate_tokens(ac_session *s)
{
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "estimate";
    int64_t n = ac_tokens_estimate(s->conv, &o);
    return n > 0 ? (size_t)n : 0;
}

/* The range [*from, *to) sliding_window and summarize replace: after the
 * first user message since the floor, up to the turn boundary that keeps the
 * last `keep` turns (or the nearest valid boundary before it). 0 when there
 * is nothing to replace. */
static int plan_range(ac_session *s, size_t keep, size_t *from_out, size_t *to_out)
{
    size_t n = ac_conv_message_count(s->conv), floor = ac_conv_floor(s->conv);
    size_t first_user = (size_t)-1;
    for (size_t i = floor; i < n; i++)
        if (ac_conv_message(s->conv, i)->role == AC_ROLE_USER) {
            first_user = i;
            break;
        }
    if (first_user == (size_t)-1)
        return 0;
    size_t from = first_user + 1;
    /* walk back over `keep` turn starts (user or assistant messages) */
    size_t want = n, turns = 0;
    for (size_t i = n; i > from; i--) {
        const ac_message *m = ac_conv_message(s->conv, i - 1);
        if (m->role == AC_ROLE_USER || m->role == AC_ROLE_ASSISTANT) {
            want = i - 1;
            if (++turns >= keep)
                break;
        }
    }
    if (want <= from)
        return 0;
    /* forward pass: a boundary is a user/assistant message at which every call
     * issued in [from, i) has had its result in [from, i) */
    json_t *open = json_object();
    if (!open)
        return 0;
    size_t cut = 0, outstanding = 0;
    int foreign = 0; /* a tool message in the range answers a call issued before it */
    for (size_t i = from; i <= want && i < n; i++) {
        const ac_message *m = ac_conv_message(s->conv, i);
        if ((m->role == AC_ROLE_USER || m->role == AC_ROLE_ASSISTANT) && outstanding == 0 &&
            !foreign && i > from)
            cut = i;
        if (m->role == AC_ROLE_ASSISTANT)
            for (size_t k = 0; k < m->n_tool_calls; k++) {
                json_object_set_new(open, m->tool_call_ids[k], json_true());
                outstanding++;
            }
        else if (m->role == AC_ROLE_TOOL && m->tool_call_id) {
            if (json_object_get(open, m->tool_call_id)) {
                json_object_del(open, m->tool_call_id);
                outstanding--;
            } else {
                foreign = 1;
            }
        }
    }
    json_decref(open);
    if (cut <= from)
        return 0;
    *from_out = from;
    *to_out = cut;
    return 1;
}

static json_t *plan_sliding(ac_session *s, size_t keep)
{
    size_t from, to;
    if (!plan_range(s, keep, &from, &to))
        return NULL;
    return json_pack("{s:s, s:s, s:s}", "strategy", "sliding_window", "from",
                     ac_conv_message(s->conv, from)->id, "to", ac_conv_message(s->conv, to)->id);
}

static json_t *plan_clear(ac_session *s, size_t keep)
{
    size_t n = ac_conv_message_count(s->conv), seen = 0;
    json_t *ids = json_array();
    for (size_t i = n; i > 0; i--) {
        const ac_message *m = ac_conv_message(s->conv, i - 1);
        if (m->role != AC_ROLE_TOOL || (m->flags & AC_MSG_CLEARED))
            continue;
        if (++seen > keep)
            json_array_append_new(ids, json_string(m->id));
    }
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "strategy", "clear_tool_results", "clear", ids);
}

/* ---- summarize: a one-off completion over a transcript of the range ---- */

typedef struct compact_run compact_run;

/* The compact effect's state: the 0 ms timer that plans outside the dispatch, then the
 * summary in flight, if any. */
typedef struct compact_effect {
    ac_session *s;
    uint64_t timer;
    uint16_t origin;
    const char *strategy; /* the arguments: compaction, compaction_keep, compact_threshold */
    size_t keep;
    int64_t budget;
    compact_run *run;
} compact_effect;

struct compact_run {
    compact_effect *fx;
    char *from, *to; /* message ids */
    uint64_t call;
};

static void run_free(compact_run *run)
{
    if (!run)
        return;
    free(run->from);
    free(run->to);
    free(run);
}

static void put_piece(FILE *out, const ac_message *m, const ac_conv *conv)
{
    const char *who = m->role == AC_ROLE_USER        ? "user"
                      : m->role == AC_ROLE_ASSISTANT ? "assistant"
                      : m->role == AC_ROLE_TOOL      ? "tool result"
                                                     : "system";
    size_t len = strlen(m->content);
    int cut = len > SUMMARY_MSG_CAP;
    if (cut) {
        len = SUMMARY_MSG_CAP;
        while (len > 0 && ((unsigned char)m->content[len] & 0xC0) == 0x80)
            len--;
    }
    if (m->role == AC_ROLE_TOOL && m->tool_call_id)
        fprintf(out, "[%s %s] ", who, m->tool_call_id);
    else
        fprintf(out, "[%s] ", who);
    fwrite(m->content, 1, len, out);
    if (cut)
        fputs(" [...]", out);
    for (size_t k = 0; k < m->n_tool_calls; k++) {
        const ac_tool_call *c = ac_conv_tool_call(conv, m->tool_call_ids[k]);
        if (c)
            fprintf(out, "\n(calls %s %.*s with %.500s)", c->id, 100, c->name, c->arguments);
    }
    fputs("\n\n", out);
}

/* The transcript of messages [from, to): the first message (an earlier
 * summary, often) and as many of the latest as fit the cap. */
static char *transcript(const ac_conv *conv, size_t from, size_t to)
{
    char *buf = NULL, *piece = NULL;
    size_t len = 0, plen = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return NULL;
    size_t total = 0, start = to;
    /* how far back the tail goes */
    while (start > from + 1) {
        FILE *p = open_memstream(&piece, &plen);
        if (!p)
            break;
        put_piece(p, ac_conv_message(conv, start - 1), conv);
        fclose(p);
        free(piece);
        piece = NULL;
        if (total + plen > SUMMARY_TRANSCRIPT_CAP)
            break;
        total += plen;
        start--;
    }
    put_piece(out, ac_conv_message(conv, from), conv);
    if (start > from + 1)
        fprintf(out, "[... %zu messages left out ...]\n\n", start - from - 1);
    for (size_t i = start; i < to; i++)
        put_piece(out, ac_conv_message(conv, i), conv);
    fclose(out);
    return buf;
}

static void summary_done(void *ud, int ok, const char *text)
{
    compact_run *run = ud;
    compact_effect *fx = run->fx;
    ac_session *s = fx->s;
    fx->run = NULL;
    json_t *d;
    if (ok && text && *text) {
        size_t n = strlen(text);
        if (n > SUMMARY_REPLY_CAP) {
            n = SUMMARY_REPLY_CAP;
            while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
                n--;
        }
        d = json_pack("{s:s, s:s, s:s, s:s%}", "strategy", "summarize", "from", run->from, "to",
                      run->to, "summary", text, n);
    } else {
        char msg[600];
        snprintf(msg, sizeof msg, "the summary request failed: %.500s",
                 text && *text ? text : "empty reply");
        d = json_pack("{s:s, s:s}", "strategy", "summarize", "message", msg);
        ok = 0;
    }
    run_free(run);
    ac_session_enqueue(s, ok ? s->e->ev_compaction_done : s->e->ev_compaction_failed, d, 0,
                       fx->origin);
}

/* 0 when the completion started; else a message in msg. */
static int start_summary(compact_effect *fx, size_t keep, char *msg, size_t msgcap)
{
    ac_session *s = fx->s;
    size_t from, to;
    if (!plan_range(s, keep, &from, &to)) {
        snprintf(msg, msgcap, "nothing to compact with 'summarize'");
        return -1;
    }
    if (!s->e->provider || !s->e->provider->complete) {
        snprintf(msg, msgcap, "the %s provider cannot write summaries",
                 s->e->provider ? s->e->provider->name : "(no)");
        return -1;
    }
    compact_run *run = calloc(1, sizeof *run);
    ac_conv *tmp = ac_conv_new();
    char *text = transcript(s->conv, from, to);
    if (!run || !tmp || !text || !(run->from = strdup(ac_conv_message(s->conv, from)->id)) ||
        !(run->to = strdup(ac_conv_message(s->conv, to)->id)) ||
        !ac_conv_add_message(tmp, AC_ROLE_SYSTEM, summary_instruction, 0) ||
        !ac_conv_add_message(tmp, AC_ROLE_USER, text, 0)) {
        snprintf(msg, msgcap, "out of memory");
        goto fail;
    }
    run->fx = fx;
    ac_llm_call_opts opts = {0};
    opts.stall_timeout_ms = s->e->p_stall_timeout->ival;
    opts.connect_timeout_ms = s->e->p_connect_timeout->ival;
    opts.call_timeout_ms = s->e->p_call_timeout->ival;
    opts.max_tokens = s->e->p_max_tokens->ival;
    opts.origin = fx->origin;
    fx->run = run;
    run->call = s->e->provider->complete(s->e->provider, s, tmp, &opts, summary_done, run);
    if (!run->call) {
        fx->run = NULL;
        snprintf(msg, msgcap, "the summary request could not start");
        goto fail;
    }
    free(text);
    ac_conv_free(tmp);
    return 0;
fail:
    run_free(run);
    free(text);
    ac_conv_free(tmp);
    return -1;
}

static void compact_fire(void *ud)
{
    compact_effect *fx = ud;
    ac_session *s = fx->s;
    fx->timer = 0;
    const char *strategy = fx->strategy;
    size_t keep = fx->keep;
    json_t *plan = NULL;
    char msg[300];
    if (strcmp(strategy, "summarize") == 0) {
        if (start_summary(fx, keep ? keep : 1, msg, sizeof msg) == 0)
            return;
        ac_session_enqueue(s, s->e->ev_compaction_failed,
                           json_pack("{s:s, s:s}", "strategy", strategy, "message", msg), 0,
                           fx->origin);
        return;
    }
    if (strcmp(strategy, "sliding_window") == 0)
        plan = plan_sliding(s, keep ? keep : 1);
    else if (strcmp(strategy, "clear_tool_results") == 0)
        plan = plan_clear(s, keep);
    else if (strcmp(strategy, "importance") == 0)
        plan = ac_compact_plan_importance(s, keep ? keep : 1, fx->budget);
    if (plan) {
        ac_session_enqueue(s, s->e->ev_compaction_done, plan, 0, fx->origin);
        return;
    }
    if (strcmp(strategy, "sliding_window") && strcmp(strategy, "clear_tool_results") &&
        strcmp(strategy, "importance"))
        snprintf(msg, sizeof msg,
                 "compaction strategy '%.100s' is not available (sliding_window, "
                 "clear_tool_results, summarize, importance)",
                 strategy);
    else
        snprintf(msg, sizeof msg, "nothing to compact with '%s'", strategy);
    ac_session_enqueue(s, s->e->ev_compaction_failed,
                       json_pack("{s:s, s:s}", "strategy", strategy, "message", msg), 0,
                       fx->origin);
}

void ac_compact_start(ac_session *s, const ac_param_value *args, size_t nargs, const ac_event *ev)
{
    (void)ev;
    compact_effect *fx = calloc(1, sizeof *fx);
    if (!fx) {
        ac_session_enqueue(s, s->e->ev_compaction_failed,
                           json_pack("{s:s}", "message", "out of memory"), 0, ac_session_origin(s));
        return;
    }
    fx->s = s;
    fx->origin = ac_session_origin(s);
    fx->strategy = args[0].sval; /* the engine's param string: lives as long as it */
    fx->keep = args[1].ival > 0 ? (size_t)args[1].ival : 0;
    fx->budget = nargs > 2 && args[2].type == AC_PARAM_INT ? args[2].ival : 0;
    fx->timer = ac_loop_timer(s->e->loop, 0, compact_fire, fx);
    *ac_session_effect_state(s) = fx;
}

void ac_compact_stop(ac_session *s)
{
    compact_effect **slot = (compact_effect **)ac_session_effect_state(s);
    compact_effect *fx = *slot;
    if (!fx)
        return;
    *slot = NULL;
    if (fx->timer)
        ac_loop_cancel_timer(s->e->loop, fx->timer);
    if (fx->run) {
        s->e->provider->cancel(s->e->provider, fx->run->call);
        run_free(fx->run);
    }
    free(fx);
}

/* Replaces [from, to) (message ids in the plan) by one marker message: the
 * summary, or (summary NULL) a note of what was removed. */
static int replace_by_marker(ac_session *s, json_t *plan, const char *summary, int64_t t_ms)
{
    size_t from = ac_conv_find_message(s->conv, json_string_value(json_object_get(plan, "from")));
    size_t to = ac_conv_find_message(s->conv, json_string_value(json_object_get(plan, "to")));
    if (from == (size_t)-1 || to == (size_t)-1 || to <= from)
        return -1;
    size_t blen = summary ? strlen(summary) : 0;
    size_t cap = blen + 128;
    char *marker = malloc(cap);
    if (!marker)
        return -1;
    if (summary)
        snprintf(marker, cap, "[summary of %zu earlier messages] %s", to - from, summary);
    else
        snprintf(marker, cap,
                 "[compaction: %zu earlier messages were removed to fit the context window]",
                 to - from);
    ac_message_in m = {AC_ROLE_USER, marker, AC_MSG_SUMMARY};
    int rc = ac_conv_replace_range(s->conv, from, to, &m, 1, t_ms);
    free(marker);
    return rc == AC_CONV_OK ? 0 : -1;
}

int ac_compact_apply(ac_session *s, json_t *plan, int64_t t_ms, size_t *before, size_t *after)
{
    *before = ac_conv_message_count(s->conv);
    *after = *before;
    const char *strategy = json_string_value(json_object_get(plan, "strategy"));
    if (!strategy)
        return -1;
    if (strcmp(strategy, "sliding_window") == 0) {
        if (replace_by_marker(s, plan, NULL, t_ms) != 0)
            return -1;
    } else if (strcmp(strategy, "summarize") == 0) {
        const char *summary = json_string_value(json_object_get(plan, "summary"));
        if (!summary || replace_by_marker(s, plan, summary, t_ms) != 0)
            return -1;
    } else if (strcmp(strategy, "clear_tool_results") == 0) {
        /* one pass over the messages (clearing moves none) */
        json_t *want = json_object();
        size_t i;
        json_t *id;
        json_array_foreach(json_object_get(plan, "clear"), i, id)
        {
            if (json_is_string(id))
                json_object_set_new(want, json_string_value(id), json_true());
        }
        for (size_t mi = 0; want && mi < ac_conv_message_count(s->conv); mi++) {
            const ac_message *m = ac_conv_message(s->conv, mi);
            if (m->role != AC_ROLE_TOOL || !json_object_get(want, m->id))
                continue;
            char marker[200];
            snprintf(marker, sizeof marker,
                     "[result cleared by compaction; call %s's full result is kept in history]",
                     m->tool_call_id ? m->tool_call_id : "?");
            ac_conv_clear_tool_result(s->conv, mi, marker, t_ms);
        }
        json_decref(want);
    } else if (strcmp(strategy, "importance") == 0) {
        size_t i;
        json_t *st;
        json_array_foreach(json_object_get(plan, "stub"), i, st)
        {
            size_t mi = ac_conv_find_message(s->conv, json_string_value(json_object_get(st, "id")));
            const char *text = json_string_value(json_object_get(st, "text"));
            if (mi != (size_t)-1 && text)
                ac_conv_clear_tool_result(s->conv, mi, text, t_ms);
        }
    } else {
        return -1;
    }
    *after = ac_conv_message_count(s->conv);
    return 0;
}
