/*
 * run_ui.c - what `agentc run` shows of a session: streamed text and
 * reasoning, tool calls, retries, the trace and a spinner on a terminal
 * (made safe: no escape sequence from a model or a tool reaches it), or
 * one JSON object per line with --jsonl.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "run_common.h"
#include "post_at.h"
#include "run_ui.h"

/* ---- text from the model or a tool, made safe for a terminal ----
 * Control characters (C0, DEL, and C1 as UTF-8) and bytes that are not
 * UTF-8 are written visibly (\x1b, \u009b, \xff), so no escape sequence
 * from a model, a server or a tool reaches the terminal (window title,
 * clipboard, cleared screen, forged lines). --jsonl and pipes stay exact. */

/* One unit at p[0..n): bytes consumed (its visible form in out, *olen
 * bytes), or 0 if p holds the start of a character cut at n and !final. */
static size_t vis_unit(const unsigned char *p, size_t n, int mode, int final, char out[8],
                       size_t *olen)
{
    unsigned char c = p[0];
    *olen = 1;
    if (c == '\n' || c == '\t' || c == '\r') {
        int keep = mode == VIS_ANSWER || (mode == VIS_TEXT && c != '\r');
        out[0] = keep ? (char)c : mode == VIS_LINE ? ' ' : 0;
        if (out[0])
            return 1;
    }
    if (c < 0x20 || c == 0x7f) {
        *olen = (size_t)snprintf(out, 8, "\\x%02x", c);
        return 1;
    }
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    size_t k = 1;
    while (len && k < len && k < n && p[k] >= (k == 1 ? lo : 0x80) && p[k] <= (k == 1 ? hi : 0xbf))
        k++;
    if (len && k == len) {
        if (c == 0xc2 && p[1] < 0xa0) { /* U+0080..U+009F: the C1 controls (0x9b is CSI) */
            *olen = (size_t)snprintf(out, 8, "\\u%04x", p[1]);
            return 2;
        }
        memcpy(out, p, len);
        *olen = len;
        return len;
    }
    if (len && k == n && !final)
        return 0;
    *olen = (size_t)snprintf(out, 8, "\\x%02x", c);
    return 1;
}

/* Writes d[0..n) to f visibly; final: nothing follows (a cut character is
 * written as bytes). */
void ac_cli_vis_write(FILE *f, const char *d, size_t n, int mode, vis_carry *cy, int final)
{
    unsigned char head[8];
    char ob[4096], u[8];
    size_t on = 0, ulen;
    /* the carried bytes and the start of d first, then d itself */
    while (cy->n) {
        size_t take = n < 4 ? n : 4;
        memcpy(head, cy->b, cy->n);
        memcpy(head + cy->n, d, take);
        size_t c = vis_unit(head, cy->n + take, mode, final, u, &ulen);
        if (!c) { /* still cut: all of d is the character's start */
            memcpy(cy->b + cy->n, d, n);
            cy->n += n;
            return;
        }
        fwrite(u, 1, ulen, f);
        if (c >= cy->n) {
            d += c - cy->n;
            n -= c - cy->n;
            cy->n = 0;
        } else {
            memmove(cy->b, cy->b + c, cy->n - c);
            cy->n -= c;
        }
    }
    const unsigned char *p = (const unsigned char *)d;
    for (size_t i = 0; i < n;) {
        size_t c = vis_unit(p + i, n - i, mode, final, u, &ulen);
        if (!c) { /* a character cut at the end of this delta */
            memcpy(cy->b, p + i, n - i);
            cy->n = n - i;
            break;
        }
        if (on + ulen > sizeof ob) {
            fwrite(ob, 1, on, f);
            on = 0;
        }
        memcpy(ob + on, u, ulen);
        on += ulen;
        i += c;
    }
    fwrite(ob, 1, on, f);
}

void ac_cli_vis_line(const char *in, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t n = strlen(in), on = 0, ulen;
    char u[8];
    for (size_t i = 0; i < n;) {
        size_t c = vis_unit(p + i, n - i, VIS_LINE, 1, u, &ulen);
        if (on + ulen > cap - 4 && !(i + c == n && on + ulen < cap)) {
            memcpy(out + on, "...", 3);
            on += 3;
            break;
        }
        memcpy(out + on, u, ulen);
        on += ulen;
        i += c;
    }
    out[on] = 0;
}

/* The visible form of a diagnostic (server error text, say), newlines kept;
 * the caller frees it. */
char *ac_cli_vis_dup(const char *in)
{
    if (!in)
        return NULL;
    size_t n = strlen(in), on = 0, ulen;
    char *out = malloc(4 * n + 1), u[8];
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t c = vis_unit((const unsigned char *)in + i, n - i, VIS_TEXT, 1, u, &ulen);
        memcpy(out + on, u, ulen);
        on += ulen;
        i += c;
    }
    out[on] = 0;
    return out;
}

/* ---- spinner: shown on stderr while the model has not sent its first token ---- */

static void spinner_clear(ui *u)
{
    if (u->spinner_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        u->spinner_shown = 0;
    }
}

static void spinner_arm(ui *u)
{
    if (!u->spinner || u->spinner_armed)
        return;
    u->spinner_armed = 1;
    u->wait_since = ac_cli_wall_ms();
    u->last_frame = 0;
}

void ac_cli_spinner_disarm(ui *u)
{
    u->spinner_armed = 0;
    spinner_clear(u);
}

/* Draws the next frame if one is due; called from the loop between events. */
void ac_cli_spinner_tick(ui *u)
{
    static const char *const ascii[] = {"|", "/", "-", "\\"};
    static const char *const braille[] = {"\u280b", "\u2819", "\u2839", "\u2838", "\u283c",
                                          "\u2834", "\u2826", "\u2827", "\u2807", "\u280f"};
    if (!u->spinner_armed)
        return;
    int64_t now = ac_cli_wall_ms();
    if (now - u->wait_since < 150 || now - u->last_frame < 80)
        return; /* fast answers never flash a spinner */
    u->last_frame = now;
    const char *f = u->utf8 ? braille[u->spinner_frame % 10] : ascii[u->spinner_frame % 4];
    u->spinner_frame++;
    if (u->wrote_text) { /* keep the spinner off the line the answer is on */
        fputc('\n', stdout);
        ac_cli_out_flush();
        u->wrote_text = 0;
    }
    fprintf(stderr, "\r\033[K\033[2m%s waiting for the model (%.1fs)\033[0m", f,
            (double)(now - u->wait_since) / 1000.0);
    fflush(stderr);
    u->spinner_shown = 1;
}

static int utf8_locale(void)
{
    const char *vars[] = {"LC_ALL", "LC_CTYPE", "LANG"};
    for (size_t i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") ||
                   strstr(v, "utf-8");
    }
    return 0;
}

/* On a terminal, a sub-agent's tool lines begin with its path: "[researcher] " ("" for the
 * run's own session). */
static const char *whose(ac_session *s, char *buf, size_t cap)
{
    const char *path = ac_session_agent_path(s);
    char p[64];
    if (!path)
        return "";
    ac_cli_vis_line(path, p, sizeof p);
    snprintf(buf, cap, "[%s] ", p);
    return buf;
}

/* A --jsonl line of session s: a child session's (a sub-agent's) says whose, "agent": its
 * path. */
static void emit(ac_session *s, json_t *o)
{
    const char *path = ac_session_agent_path(s);
    if (o && path)
        json_object_set_new(o, "agent", json_string(path));
    ac_cli_emit_json(o);
}

static void ui_text(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    if (u->jsonl) {
        emit(s, json_pack("{s:s, s:s%}", "type", "text", "delta", d, n));
        return;
    }
    if (ac_session_agent_path(s))
        return; /* a sub-agent's answer is its call's result */
    ac_cli_spinner_disarm(u);
    if (u->hold_text)
        return;
    if (u->reasoning_open) { /* the reasoning (stderr) ends on its own line before the answer */
        fputc('\n', stderr);
        u->reasoning_open = 0;
    }
    if (u->tty)
        ac_cli_vis_write(stdout, d, n, VIS_ANSWER, &u->text_carry, 0);
    else
        fwrite(d, 1, n, stdout); /* a pipe or a file gets the answer exactly */
    ac_cli_out_flush();
    u->wrote_text = u->streamed = 1;
}

static void ui_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    if (u->jsonl) {
        emit(s, json_pack("{s:s, s:s%}", "type", "reasoning", "delta", d, n));
        return;
    }
    if (ac_session_agent_path(s))
        return;
    ac_cli_spinner_disarm(u);
    if (u->color)
        fputs("\033[2m", stderr);
    if (u->err_tty)
        ac_cli_vis_write(stderr, d, n, VIS_TEXT, &u->reason_carry, 0);
    else
        fwrite(d, 1, n, stderr);
    if (u->color)
        fputs("\033[0m", stderr);
    u->reasoning_open = n > 0 && d[n - 1] != '\n';
}

/* FNV-1a: a call id as ui.started keeps it. */
static uint64_t id_hash(const char *id)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)id; p && *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static int was_started(const ui *u, const char *id)
{
    size_t n = u->n_started < 1024 ? u->n_started : 1024;
    uint64_t h = id_hash(id);
    for (size_t k = 0; k < n; k++)
        if (u->started[k] == h)
            return 1;
    return 0;
}

static void ui_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *args)
{
    ui *u = ud;
    u->started[u->n_started++ % 1024] = id_hash(id);
    if (u->n_open < 32 && strlen(id) < sizeof u->open[0])
        snprintf(u->open[u->n_open++], sizeof u->open[0], "%s", id);
    if (u->jsonl) {
        emit(s, json_pack("{s:s, s:s, s:s, s:s}", "type", "tool_call", "id", id, "name", name,
                          "arguments", args));
        return;
    }
    ac_cli_spinner_disarm(u);
    char a[80], nm[80], w[80];
    ac_cli_vis_line(args, a, sizeof a);
    ac_cli_vis_line(name, nm, sizeof nm);
    if (u->wrote_text)
        fputc('\n', stdout);
    u->wrote_text = u->streamed = 0;
    fprintf(stdout, "%s-> %s%s %s%s\n", u->color ? "\033[36m" : "", whose(s, w, sizeof w), nm, a,
            u->color ? "\033[0m" : "");
    ac_cli_out_flush();
}

static void ui_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t ms)
{
    ui *u = ud;
    if (!was_started(u, id)) { /* answered without running (denied): its call shown first */
        const char *args = NULL;
        ac_session_tool_call_name(s, id, &args);
        ui_tool_start(u, s, id, name, args ? args : "{}");
    }
    for (size_t k = 0; k < u->n_open; k++)
        if (!strcmp(u->open[k], id)) {
            memmove(u->open[k], u->open[k + 1], (u->n_open - k - 1) * sizeof u->open[0]);
            u->n_open--;
            break;
        }
    if (u->jsonl) {
        json_t *line = json_pack("{s:s, s:s, s:b, s:s}", "type", "tool_result", "id", id, "ok", ok,
                                 "content", content);
        const char *from = ac_session_tool_call_cached(s, id);
        if (line && from) { /* answered from the result cache */
            json_object_set_new(line, "cached", json_true());
            json_object_set_new(line, "cached_from", json_string(from));
        }
        emit(s, line);
        return;
    }
    spinner_clear(u);
    char c[80], nm[80], w[80];
    ac_cli_vis_line(content, c, sizeof c);
    ac_cli_vis_line(name, nm, sizeof nm);
    fprintf(stdout, "%s<- %s%s %s (%lld ms): %s%s\n",
            u->color ? (ok ? "\033[32m" : "\033[31m") : "", whose(s, w, sizeof w), nm,
            ok ? "ok" : "failed", (long long)ms, c, u->color ? "\033[0m" : "");
    ac_cli_out_flush();
}

static void ui_tool_progress(void *ud, ac_session *s, const char *id, double progress, double total,
                             const char *message)
{
    ui *u = ud;
    if (!u->jsonl)
        return; /* the terminal shows the call and its result only */
    json_t *j =
        json_pack("{s:s, s:s, s:f}", "type", "tool_progress", "id", id, "progress", progress);
    if (j && total >= 0)
        json_object_set_new(j, "total", json_real(total));
    if (j && message)
        json_object_set_new(j, "message", json_string(message));
    emit(s, j);
}

static void ui_retry(void *ud, ac_session *s, int attempt, int64_t delay, const char *reason)
{
    ui *u = ud;
    if (u->jsonl) {
        emit(s, json_pack("{s:s, s:i, s:I, s:s}", "type", "retry", "attempt", attempt, "delay_ms",
                          (json_int_t)delay, "reason", reason));
        return;
    }
    spinner_clear(u);
    char *r = ac_cli_vis_dup(reason);
    fprintf(stderr, "%sretry %d in %lld ms: %s%s\n", u->color ? "\033[33m" : "", attempt,
            (long long)delay, r ? r : "", u->color ? "\033[0m" : "");
    free(r);
}

static void ui_discarded(void *ud, ac_session *s, size_t n)
{
    ui *u = ud;
    if (u->jsonl) {
        /* the text deltas streamed so far in this call are void (a retry or a failure follows),
         * or the turn's (a parallel input guardrail tripped: reason guardrail_tripped) */
        const char *why = NULL;
        ac_session_discarding(s, &why);
        emit(s, json_pack("{s:s, s:I, s:s?}", "type", "discarded", "bytes", (json_int_t)n, "reason",
                          why));
        return;
    }
    if (u->wrote_text) {
        /* the retry line (ui_retry) says whether a retry follows: a failure discards too */
        fprintf(stdout, "\n[partial answer of %zu bytes discarded]\n", n);
        u->wrote_text = 0;
    }
    u->streamed = 0;
}

static void ui_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    ui *u = ud;
    if (u->jsonl)
        emit(s, json_pack("{s:s, s:s?, s:I, s:I}", "type", "compacted", "strategy", strategy,
                          "before", (json_int_t)before, "after", (json_int_t)after));
    else {
        spinner_clear(u);
        fprintf(stderr, "[context compacted (%s): %zu -> %zu messages]\n",
                strategy ? strategy : "?", before, after);
    }
}

static void ui_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    ui *u = ud;
    const ac_fsm_tables *t = s ? ac_engine_tables(ac_session_engine(s)) : u->t; /* its spec's */
    if (s && !ac_session_agent_path(s))
        ac_post_at_seen(u->post_at, s, r);
    if (u->spinner && r->kind == AC_TRACE_TRANSITION && r->to < t->n_states &&
        (!strcmp(t->states[r->to].name, "CALLING") || !strcmp(t->states[r->to].name, "RETRYING")))
        spinner_arm(u);
    if (!u->trace)
        return;
    const char *m = t->machines[r->machine].name;
    const char *from = r->from == AC_FSM_NONE ? "*" : t->states[r->from].name;
    const char *to = t->states[r->to].name;
    const char *ev = r->event ? t->event_names[r->event] : "";
    if (u->jsonl) {
        const char *kind = r->kind == AC_TRACE_UNHANDLED ? "unhandled"
                           : r->kind == AC_TRACE_ERROR   ? "error"
                                                         : "transition";
        emit(s, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "type", "state", "kind", kind,
                          "machine", m, "from", from, "event", ev, "to", to, "line", (int)r->line));
        return;
    }
    if (r->kind == AC_TRACE_INTERNAL || r->kind == AC_TRACE_IGNORED)
        return; /* deltas and the like: too chatty for a trace line each */
    if (u->wrote_text) {
        fputc('\n', stdout);
        ac_cli_out_flush();
        u->wrote_text = 0;
    }
    spinner_clear(u);
    if (r->from == AC_FSM_NONE)
        fprintf(stderr, "%s%s starts in %s%s\n", u->color ? "\033[2m" : "", m, to,
                u->color ? "\033[0m" : "");
    else if (r->kind == AC_TRACE_UNHANDLED)
        fprintf(stderr, "%s%s %s: unhandled %s%s\n", u->color ? "\033[2m" : "", m, from, ev,
                u->color ? "\033[0m" : "");
    else if (r->kind == AC_TRACE_ERROR) {
        char *msg = ac_cli_vis_dup(r->message);
        fprintf(stderr, "%s %s: error: %s\n", m, from, msg ? msg : "");
        free(msg);
    } else
        fprintf(stderr, "%s%s %s --%s--> %s (%s:%u)%s\n", u->color ? "\033[2m" : "", m, from, ev,
                to, t->spec_path, r->line, u->color ? "\033[0m" : "");
}

/* --output-schema: an answer the schema refused, sent back to the model */
static void ui_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    ui *u = ud;
    if (u->jsonl) {
        emit(s, json_pack("{s:s, s:i, s:s}", "type", "rejected", "attempt", attempt, "errors",
                          errors));
        return;
    }
    ac_cli_spinner_disarm(u);
    char *e = ac_cli_vis_dup(errors);
    fprintf(stderr, "[answer %d refused by the output schema: %s]\n", attempt, e ? e : errors);
    free(e);
}

/* The calls of a turn that ended before their results (it failed, was cancelled or rolled
 * back): each gets its failed result, so every call shown has one. */
static void close_open_calls(ui *u, ac_session *s)
{
    const char *why = NULL;
    enum ac_turn_outcome o = ac_session_last_turn(s, &why);
    ac_session_end end;
    ac_session_get_end(s, &end);
    if (o != AC_TURN_FAILED && o != AC_TURN_CANCELLED && o != AC_TURN_ROLLED_BACK && !end.ended)
        return;
    char msg[400], id[128];
    snprintf(msg, sizeof msg, "no result: the turn ended first (%s)",
             why                        ? why
             : o == AC_TURN_CANCELLED   ? "cancelled"
             : o == AC_TURN_ROLLED_BACK ? "rolled back"
             : end.ended && end.how     ? end.how
                                        : "ended");
    while (u->n_open) {
        snprintf(id, sizeof id, "%s", u->open[0]);
        const char *name = ac_session_tool_call_name(s, id, NULL);
        ui_tool_end(u, s, id, name ? name : "?", 0, msg, 0); /* takes it off the list */
    }
}

static void ui_finished(void *ud, ac_session *s)
{
    ui *u = ud;
    if (ac_session_agent_path(s))
        return; /* a sub-agent's turn, not the run's */
    close_open_calls(u, s);
    ac_cli_spinner_disarm(u);
    u->settled = 1;
}

void ac_cli_ui_init(ui *u, int jsonl, int trace, int hold_text)
{
    memset(u, 0, sizeof *u);
    u->jsonl = jsonl;
    u->trace = trace;
    u->tty = isatty(1);
    u->err_tty = isatty(2);
    u->color = u->tty && !getenv("NO_COLOR") && !jsonl;
    u->spinner = isatty(2) && !getenv("NO_COLOR") && !jsonl;
    u->utf8 = utf8_locale();
    u->hold_text = hold_text && !jsonl;
}

ac_output ac_cli_ui_output(ui *u)
{
    ac_output out = {u,           ui_text,     ui_reasoning, ui_tool_start,
                     ui_tool_end, ui_retry,    ui_discarded, ui_compacted,
                     ui_trace,    ui_finished, ui_rejected,  ui_tool_progress};
    return out;
}
