/*
 * run.c - `agentc run`, `agentc demo` and `agentc batch`: configure an
 * engine from flags and environment, run sessions on one event loop, and
 * show what happens (streaming text, tool calls, retries, trace) on a
 * terminal or as JSON Lines.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "io/file.h" /* reading a prompt or a system prompt whole, with a cap */
#include "cli.h"
#include "run_wait.h" /* --on, and asking which outside event to send */

/* The signal that asked us to stop (SIGINT, SIGTERM, SIGHUP), or 0. */
static volatile sig_atomic_t g_interrupted;

/* The first error writing stdout (an errno value), or 0. It stops the
 * session(s) like a signal does: nobody reads the answer any more, so the
 * model is not paid to go on. EPIPE ends the process by SIGPIPE (141),
 * the same whether or not a tool was spawned (the tool layer sets SIGPIPE
 * to ignored); any other error gives AC_EXIT_OUTPUT with a message. */
static int g_out_errno;
static struct sigaction g_old_sigpipe;

static void out_flush(void)
{
    if ((fflush(stdout) == EOF || ferror(stdout)) && !g_out_errno)
        g_out_errno = errno ? errno : EIO;
}

/* SIGPIPE is ignored while sessions run, so a closed pipe is an error we
 * see (and cancel on) rather than a death that skips the cleanup. */
static void ignore_sigpipe(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, &g_old_sigpipe);
    g_out_errno = 0;
}

/* The exit status once the sessions are over: stdout flushed and checked,
 * a closed pipe re-raised as SIGPIPE, other write errors reported. */
static int finish_output(int rc)
{
    out_flush();
    if (g_out_errno == EPIPE) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGPIPE, &sa, NULL);
        raise(SIGPIPE);
        return 128 + SIGPIPE;
    }
    if (g_out_errno) {
        fprintf(stderr, "agentc: cannot write the output: %s\n", strerror(g_out_errno));
        return rc > 128 ? rc : AC_EXIT_OUTPUT; /* a signal that stopped us first stays */
    }
    sigaction(SIGPIPE, &g_old_sigpipe, NULL);
    if (ferror(stderr) && !rc)
        return AC_EXIT_OUTPUT; /* diagnostics lost: nowhere left to say so */
    return rc;
}

/* Wall clock in ms, for the terminal UI and batch timing (never for events). */
static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The first SIGINT (Ctrl-C), SIGTERM or SIGHUP cancels the session(s)
 * cleanly (journal intact with its cancel event, tools killed, partial
 * answer shown) and the exit status is 128 + the signal; a second one exits
 * at once, killing the tool process groups first. */
static void on_stop_signal(int sig)
{
    if (g_interrupted) {
        ac_proc_kill_all_now(); /* no tool process outlives us */
        _exit(128 + sig);
    }
    g_interrupted = sig;
}

static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

static void catch_stop_signals(struct sigaction old[3])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaddset(&sa.sa_mask, stop_signals[i]);
    g_interrupted = 0;
    for (int i = 0; i < 3; i++)
        sigaction(stop_signals[i], &sa, &old[i]);
}

static void restore_stop_signals(const struct sigaction old[3])
{
    for (int i = 0; i < 3; i++)
        sigaction(stop_signals[i], &old[i], NULL);
}

static const char *stop_signal_name(int sig)
{
    return sig == SIGTERM ? "terminated" : sig == SIGHUP ? "hangup" : "interrupted";
}

/* ---- text from the model or a tool, made safe for a terminal ----
 * Control characters (C0, DEL, and C1 as UTF-8) and bytes that are not
 * UTF-8 are written visibly (\x1b, \u009b, \xff), so no escape sequence
 * from a model, a server or a tool reaches the terminal (window title,
 * clipboard, cleared screen, forged lines). --jsonl and pipes stay exact. */
enum { VIS_ANSWER /* keeps \n \t \r */, VIS_TEXT /* keeps \n \t */, VIS_LINE /* all to ' ' */ };

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
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
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

/* A character cut between two deltas waits here for its end. */
typedef struct vis_carry {
    unsigned char b[4];
    size_t n;
} vis_carry;

/* Writes d[0..n) to f visibly; final: nothing follows (a cut character is
 * written as bytes). */
static void vis_write(FILE *f, const char *d, size_t n, int mode, vis_carry *cy, int final)
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

/* The visible, one-line form of in, cut to fit cap bytes with "...". */
static void vis_line(const char *in, char *out, size_t cap)
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
static char *vis_dup(const char *in)
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

typedef struct ui {
    int jsonl, trace, color, tty;
    int err_tty;                         /* stderr is a terminal */
    vis_carry text_carry, reason_carry; /* characters cut between deltas (on a terminal) */
    int spinner;       /* spinner enabled: stderr is a terminal, no NO_COLOR, no --jsonl */
    int spinner_armed; /* waiting for the model's first token */
    int spinner_shown; /* a frame is on the screen */
    int spinner_frame;
    int utf8;
    int64_t wait_since, last_frame;
    int wrote_text;
    int reasoning_open; /* reasoning written to stderr, its line not ended yet */
    const ac_fsm_tables *t;
    int hold_text; /* --output-schema without --jsonl: only the accepted answer is printed */
} ui;

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
    u->wait_since = wall_ms();
    u->last_frame = 0;
}

static void spinner_disarm(ui *u)
{
    u->spinner_armed = 0;
    spinner_clear(u);
}

/* Draws the next frame if one is due; called from the loop between events. */
static void spinner_tick(ui *u)
{
    static const char *const ascii[] = {"|", "/", "-", "\\"};
    static const char *const braille[] = {"\u280b", "\u2819", "\u2839", "\u2838", "\u283c",
                                          "\u2834", "\u2826", "\u2827", "\u2807", "\u280f"};
    if (!u->spinner_armed)
        return;
    int64_t now = wall_ms();
    if (now - u->wait_since < 150 || now - u->last_frame < 80)
        return; /* fast answers never flash a spinner */
    u->last_frame = now;
    const char *f = u->utf8 ? braille[u->spinner_frame % 10] : ascii[u->spinner_frame % 4];
    u->spinner_frame++;
    if (u->wrote_text) { /* keep the spinner off the line the answer is on */
        fputc('\n', stdout);
        out_flush();
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

static void emit_json(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (s) {
        puts(s);
        out_flush();
        free(s);
    }
    json_decref(o);
}

static void ui_text(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s%}", "type", "text", "delta", d, n));
        return;
    }
    spinner_disarm(u);
    if (u->hold_text)
        return;
    if (u->reasoning_open) { /* the reasoning (stderr) ends on its own line before the answer */
        fputc('\n', stderr);
        u->reasoning_open = 0;
    }
    if (u->tty)
        vis_write(stdout, d, n, VIS_ANSWER, &u->text_carry, 0);
    else
        fwrite(d, 1, n, stdout); /* a pipe or a file gets the answer exactly */
    out_flush();
    u->wrote_text = 1;
}

static void ui_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s%}", "type", "reasoning", "delta", d, n));
        return;
    }
    spinner_disarm(u);
    if (u->color)
        fputs("\033[2m", stderr);
    if (u->err_tty)
        vis_write(stderr, d, n, VIS_TEXT, &u->reason_carry, 0);
    else
        fwrite(d, 1, n, stderr);
    if (u->color)
        fputs("\033[0m", stderr);
    u->reasoning_open = n > 0 && d[n - 1] != '\n';
}

static void ui_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *args)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s, s:s, s:s}", "type", "tool_call", "id", id, "name", name,
                            "arguments", args));
        return;
    }
    spinner_disarm(u);
    char a[80], nm[80];
    vis_line(args, a, sizeof a);
    vis_line(name, nm, sizeof nm);
    if (u->wrote_text)
        fputc('\n', stdout);
    u->wrote_text = 0;
    fprintf(stdout, "%s-> %s %s%s\n", u->color ? "\033[36m" : "", nm, a,
            u->color ? "\033[0m" : "");
    out_flush();
}

static void ui_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t ms)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s, s:b, s:s}", "type", "tool_result", "id", id, "ok", ok,
                            "content", content));
        return;
    }
    spinner_clear(u);
    char c[80], nm[80];
    vis_line(content, c, sizeof c);
    vis_line(name, nm, sizeof nm);
    fprintf(stdout, "%s<- %s %s (%lld ms): %s%s\n", u->color ? (ok ? "\033[32m" : "\033[31m") : "",
            nm, ok ? "ok" : "failed", (long long)ms, c, u->color ? "\033[0m" : "");
    out_flush();
}

static void ui_tool_progress(void *ud, ac_session *s, const char *id, double progress,
                             double total, const char *message)
{
    ui *u = ud;
    (void)s;
    if (!u->jsonl)
        return; /* the terminal shows the call and its result only */
    json_t *j = json_pack("{s:s, s:s, s:f}", "type", "tool_progress", "id", id, "progress", progress);
    if (j && total >= 0)
        json_object_set_new(j, "total", json_real(total));
    if (j && message)
        json_object_set_new(j, "message", json_string(message));
    emit_json(j);
}

static void ui_retry(void *ud, ac_session *s, int attempt, int64_t delay, const char *reason)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:i, s:I, s:s}", "type", "retry", "attempt", attempt, "delay_ms",
                            (json_int_t)delay, "reason", reason));
        return;
    }
    spinner_clear(u);
    char *r = vis_dup(reason);
    fprintf(stderr, "%sretry %d in %lld ms: %s%s\n", u->color ? "\033[33m" : "", attempt,
            (long long)delay, r ? r : "", u->color ? "\033[0m" : "");
    free(r);
}

static void ui_discarded(void *ud, ac_session *s, size_t n)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        /* the text deltas streamed so far in this call are void (a retry or a failure follows) */
        emit_json(json_pack("{s:s, s:I}", "type", "discarded", "bytes", (json_int_t)n));
        return;
    }
    if (u->wrote_text) {
        /* the retry line (ui_retry) says whether a retry follows: a failure discards too */
        fprintf(stdout, "\n[partial answer of %zu bytes discarded]\n", n);
        u->wrote_text = 0;
    }
}

static void ui_compacted(void *ud, ac_session *s, const char *strategy, size_t before, size_t after)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl)
        emit_json(json_pack("{s:s, s:s?, s:I, s:I}", "type", "compacted", "strategy", strategy,
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
    (void)s;
    const ac_fsm_tables *t = u->t;
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
        emit_json(json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "type", "state", "kind", kind,
                            "machine", m, "from", from, "event", ev, "to", to, "line",
                            (int)r->line));
        return;
    }
    if (r->kind == AC_TRACE_INTERNAL || r->kind == AC_TRACE_IGNORED)
        return; /* deltas and the like: too chatty for a trace line each */
    if (u->wrote_text) {
        fputc('\n', stdout);
        out_flush();
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
        char *msg = vis_dup(r->message);
        fprintf(stderr, "%s %s: error: %s\n", m, from, msg ? msg : "");
        free(msg);
    }
    else
        fprintf(stderr, "%s%s %s --%s--> %s (%s:%u)%s\n", u->color ? "\033[2m" : "", m, from, ev,
                to, t->spec_path, r->line, u->color ? "\033[0m" : "");
}

/* --output-schema: an answer the schema refused, sent back to the model */
static void ui_rejected(void *ud, ac_session *s, int attempt, const char *errors)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:i, s:s}", "type", "rejected", "attempt", attempt, "errors",
                            errors));
        return;
    }
    spinner_disarm(u);
    char *e = vis_dup(errors);
    fprintf(stderr, "[answer %d refused by the output schema: %s]\n", attempt, e ? e : errors);
    free(e);
}

static int g_settled;
static void ui_finished(void *ud, ac_session *s)
{
    (void)s;
    spinner_disarm(ud);
    g_settled = 1;
}

ac_fsm_tables *ac_cli_tables_from_spec(const char *path)
{
    int rc;
    ac_spec *spec = ac_cli_load_spec(path, &rc, 1);
    if (!spec)
        return NULL;
    char rel[4096];
    ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    ac_spec_free(spec);
    if (!t)
        fprintf(stderr, "agentc: out of memory\n");
    return t;
}

typedef struct run_opts {
    const char *provider, *base_url, *model, *api_key_env, *script, *system, *spec, *journal;
    const char *tools[32];
    size_t n_tools;
    const char *params[64];
    size_t n_params;
    const char *headers[32];
    size_t n_headers;
    int trace, jsonl;
    int concurrency;
    int ordered;             /* batch: print results in input order */
    const char *journal_dir; /* batch: one journal per session */
    const char *prompt;
    const char *output_schema; /* --output-schema FILE */
    /* model request settings: --temperature ... --request-json */
    ac_request_settings req;
    const char *stop[32]; /* NULL-terminated */
    size_t n_stop;
    const char *session, *db; /* durable sessions (store_cli.c) */
    int no_store, resume;
    const char *on[64]; /* --on STATE=EVENT: answers to a session waiting for the outside */
    size_t n_on;
} run_opts;

/* The model request flags. Returns 1 when a is one (i moves past its value), 0
 * when it is not, or -(exit status) on a bad value. */
static int parse_request_flag(int argc, char **argv, int *i, run_opts *o)
{
    const char *a = argv[*i];
    const char *const names[] = {"--temperature",
                                 "--top-p",
                                 "--stop",
                                 "--seed",
                                 "--tool-choice",
                                 "--parallel-tool-calls",
                                 "--reasoning-effort",
                                 "--request-json"};
    size_t k = 0;
    while (k < sizeof names / sizeof names[0] && strcmp(a, names[k]))
        k++;
    if (k == sizeof names / sizeof names[0])
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "agentc: %s needs a value\n", a);
        return -AC_EXIT_USAGE;
    }
    const char *v = argv[++*i];
    char *end = NULL;
    ac_request_settings *r = &o->req;
    switch (k) {
    case 0:
    case 1: {
        errno = 0;
        double d = strtod(v, &end);
        if (!*v || *end || errno) {
            fprintf(stderr, "agentc: %s takes a number, not '%s'\n", a, v);
            return -AC_EXIT_USAGE;
        }
        if (k == 0) {
            r->has_temperature = true;
            r->temperature = d;
        } else {
            r->has_top_p = true;
            r->top_p = d;
        }
        break;
    }
    case 2:
        if (o->n_stop >= 31) {
            fprintf(stderr, "agentc: at most 31 --stop sequences\n");
            return -AC_EXIT_USAGE;
        }
        o->stop[o->n_stop++] = v;
        r->stop = o->stop;
        break;
    case 3:
        errno = 0;
        r->seed = strtoll(v, &end, 10);
        if (!*v || *end || errno) {
            fprintf(stderr, "agentc: --seed takes an integer, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        r->has_seed = true;
        break;
    case 4:
        r->tool_choice = v;
        break;
    case 5:
        if (strcmp(v, "true") && strcmp(v, "false")) {
            fprintf(stderr, "agentc: --parallel-tool-calls takes true or false, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        r->parallel_tool_calls = !strcmp(v, "true") ? 1 : -1;
        break;
    case 6:
        r->reasoning_effort = v;
        break;
    default:
        r->request_json = v;
        break;
    }
    return 1;
}

static void batch_usage(FILE *out)
{
    fprintf(
        out,
        "usage: agentc batch FILE [OPTIONS]      (FILE - reads stdin)\n\n"
        "FILE holds one JSON object per line: {\"id\": ..., \"prompt\": \"...\"} (ids unique,\n"
        "optional: the line number). Every session runs on one event loop; each prints one\n"
        "JSON line on stdout, {\"id\", \"status\", \"answer\", \"iterations\", \"tool_calls\", "
        "\"usage\",\n"
        "\"error\"?, \"journal\"?}, in the order the sessions finish (--ordered: input order).\n"
        "A failing session never stops the others. A progress bar goes to stderr when it\n"
        "is a terminal.\n\n"
        "  --concurrency N      sessions running at once (default 8)\n"
        "  --ordered            print results in input order\n"
        "  --journal-dir DIR    one journal per session, DIR/b<line>.journal\n"
        "  --db PATH            store every session under its input id (agentc sessions)\n"
        "  and the options of agentc run (--provider, --base-url, --model, --api-key-env,\n"
        "  --header, --script, --tools, --system, --spec, --param, --on, --output-schema, and the\n"
        "  model request settings --temperature ... --request-json)\n\n"
        "exit status: 0 all completed, 1 some failed, 2 bad usage, 3 bad configuration,\n"
        "130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (running sessions are cancelled\n"
        "and reported), 4 the output could not be written (141: a closed pipe)\n");
}

static void run_usage(FILE *out)
{
    fprintf(
        out,
        "usage: agentc run [OPTIONS] PROMPT      (PROMPT - reads stdin)\n\n"
        "  --provider openai|anthropic|script   (default openai)\n"
        "  --base-url URL       OpenAI-compatible: with /v1 (default $OPENAI_BASE_URL or\n"
        "                       https://api.openai.com/v1); Anthropic: https://api.anthropic.com\n"
        "  --model NAME         (default $AGENTC_MODEL)\n"
        "  --api-key-env NAME   read the API key from $NAME (default OPENAI_API_KEY or\n"
        "                       ANTHROPIC_API_KEY)\n"
        "  --header 'N: V'      extra HTTP header (repeatable)\n"
        "  --script FILE        turns for --provider script (JSON Lines)\n"
        "  --tools FILE|builtin:calculator|builtin:clock|builtin:context   (repeatable;\n"
        "                       builtin:context: tools that change the agent's own context)\n"
        "  --system TEXT | --system @FILE\n"
        "  --spec FILE          run an edited spec without rebuilding\n"
        "  --param NAME=VALUE   override a spec param (repeatable)\n"
        "  --on STATE=EVENT     when the session waits in STATE for an outside event, send\n"
        "                       EVENT (repeatable; without it a terminal is asked)\n"
        "  --journal FILE       record every event (replay with agentc replay)\n"
        "  --session ID         create or continue the stored session ID\n"
        "  --db PATH            the store (default: $AGENTC_DB, else\n"
        "                       $XDG_STATE_HOME/agentc/sessions.db); --no-store: none\n"
        "  --trace              print every transition to stderr\n"
        "  --jsonl              one JSON object per line on stdout\n"
        "  --output-schema FILE the answer must be JSON matching this JSON Schema; a refused\n"
        "                       answer goes back to the model (param output_retries)\n\n"
        "model request settings (README: what each provider receives):\n"
        "  --temperature T      0..2 (Anthropic 0..1)\n"
        "  --top-p P            0..1\n"
        "  --stop TEXT          stop sequence (repeatable)\n"
        "  --seed N             OpenAI only\n"
        "  --tool-choice auto|none|required|NAME\n"
        "  --parallel-tool-calls true|false\n"
        "  --reasoning-effort none|minimal|low|medium|high|xhigh   OpenAI only\n"
        "  --request-json '{...}'   merged into the request body last (not messages,\n"
        "                       tools, stream, stream_options or system)\n\n"
        "exit status: 0 completed, 1 the agent failed, 2 bad usage, 3 bad configuration,\n"
        "130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (the session is cancelled: tools\n"
        "killed, journal kept), 4 the output could not be written (141: a closed pipe;\n"
        "either way the session is cancelled)\n");
}

/* Returns 0, or an exit status. */
static int parse_run(int argc, char **argv, run_opts *o, int batch)
{
    memset(o, 0, sizeof *o);
    o->concurrency = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (batch)
                batch_usage(stdout);
            else
                run_usage(stdout);
            return -1;
        }
        if (batch && !strcmp(a, "--ordered")) {
            o->ordered = 1;
            continue;
        }
        if (batch && !strcmp(a, "--journal-dir")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agentc: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            o->journal_dir = argv[++i];
            continue;
        }
        if (!strcmp(a, "--trace")) {
            o->trace = 1;
            continue;
        }
        if (!strcmp(a, "--no-store")) {
            o->no_store = 1;
            continue;
        }
        if (!strcmp(a, "--jsonl")) {
            o->jsonl = 1;
            continue;
        }
        if (!strcmp(a, "--output-schema")) { /* structured output */
            if (i + 1 >= argc) {
                fprintf(stderr, "agentc: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            o->output_schema = argv[++i];
            continue;
        }
        int req = parse_request_flag(argc, argv, &i, o);
        if (req < 0)
            return -req;
        if (req)
            continue;
        const char **slot = NULL;
        const char *const names[] = {"--provider", "--base-url", "--model", "--api-key-env",
                                     "--script",   "--system",   "--spec",  "--journal",
                                     "--db",       batch ? "" : "--session"};
        const char **slots[] = {&o->provider, &o->base_url, &o->model, &o->api_key_env,
                                &o->script,   &o->system,   &o->spec,  &o->journal,
                                &o->db,       &o->session};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (!strcmp(a, names[k]))
                slot = slots[k];
        int is_list = !strcmp(a, "--tools") || !strcmp(a, "--param") || !strcmp(a, "--header") ||
                      !strcmp(a, "--on") || (batch && !strcmp(a, "--concurrency"));
        if (slot || is_list) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agentc: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (slot)
                *slot = v;
            else if (!strcmp(a, "--tools") && o->n_tools < 31)
                o->tools[o->n_tools++] = v;
            else if (!strcmp(a, "--param") && o->n_params < 63)
                o->params[o->n_params++] = v;
            else if (!strcmp(a, "--on") && o->n_on < 64)
                o->on[o->n_on++] = v;
            else if (!strcmp(a, "--header") && o->n_headers < 31)
                o->headers[o->n_headers++] = v;
            else if (!strcmp(a, "--concurrency")) {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > 10000) {
                    fprintf(stderr, "agentc batch: --concurrency must be 1..10000\n");
                    return AC_EXIT_USAGE;
                }
                o->concurrency = (int)n;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc: unknown option '%s' (see agentc %s --help)\n", a,
                    batch ? "batch" : "run");
            return AC_EXIT_USAGE;
        }
        if (o->prompt) {
            fprintf(stderr, "agentc: one %s only (quote it)\n", batch ? "FILE" : "PROMPT");
            return AC_EXIT_USAGE;
        }
        o->prompt = a;
    }
    if (!o->prompt) {
        fprintf(stderr, "agentc %s: missing %s (see agentc %s --help)\n", batch ? "batch" : "run",
                batch ? "FILE" : "PROMPT", batch ? "batch" : "run");
        return AC_EXIT_USAGE;
    }
    if (o->provider && strcmp(o->provider, "openai") && strcmp(o->provider, "anthropic") &&
        strcmp(o->provider, "script")) {
        fprintf(stderr, "agentc: unknown provider '%s' (openai, anthropic, script)\n", o->provider);
        return AC_EXIT_USAGE;
    }
    return 0;
}

typedef struct engine_bundle {
    ac_loop *loop;
    ac_engine *engine;
    ac_fsm_tables *tables;
    char *system;
    char *output_schema;
} engine_bundle;

static void bundle_free(engine_bundle *b)
{
    ac_engine_free(b->engine);
    ac_loop_free(b->loop);
    ac_spec_tables_free(b->tables);
    free(b->system);
    free(b->output_schema);
}

static int make_engine(const run_opts *o, const ac_output *out, const char *script_text,
                       int delay_ms, engine_bundle *b)
{
    memset(b, 0, sizeof *b);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    ac_error err = {0};
    const char *prov = o->provider ? o->provider : (script_text ? "script" : "openai");
    cfg.provider = !strcmp(prov, "anthropic") ? AC_PROVIDER_ANTHROPIC
                   : !strcmp(prov, "script")  ? AC_PROVIDER_SCRIPT
                                              : AC_PROVIDER_OPENAI;
    if (o->spec && !(b->tables = ac_cli_tables_from_spec(o->spec)))
        return AC_EXIT_CONFIG;
    cfg.tables = b->tables;
    cfg.script_path = o->script;
    cfg.script_text = script_text;
    cfg.script_delay_ms = delay_ms;
    cfg.base_url = o->base_url;
    cfg.model = o->model ? o->model : getenv("AGENTC_MODEL");
    cfg.headers = o->headers;
    if (cfg.provider != AC_PROVIDER_SCRIPT) {
        const char *env = o->api_key_env                          ? o->api_key_env
                          : cfg.provider == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_API_KEY"
                                                                  : "OPENAI_API_KEY";
        cfg.api_key = getenv(env);
        cfg.api_key_env = env; /* kept from tool processes */
        const char *base_env =
            cfg.provider == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_BASE_URL" : "OPENAI_BASE_URL";
        if ((!cfg.api_key || !*cfg.api_key) && !o->base_url && !getenv(base_env)) {
            fprintf(stderr,
                    "agentc: no API key: set %s (or name another variable with --api-key-env),\n"
                    "  or point --base-url at a local OpenAI-compatible server (llama.cpp, vLLM,\n"
                    "  Ollama: --base-url http://127.0.0.1:11434/v1), or try the offline\n"
                    "  demo: agentc demo\n",
                    env);
            return AC_EXIT_CONFIG;
        }
        if (!cfg.model) {
            fprintf(stderr, "agentc: no model: pass --model NAME or set AGENTC_MODEL\n");
            return AC_EXIT_CONFIG;
        }
    } else if (!o->script && !script_text) {
        fprintf(stderr, "agentc: --provider script needs --script FILE\n");
        return AC_EXIT_USAGE;
    }
    if (o->system && o->system[0] == '@') {
        FILE *f = fopen(o->system + 1, "r");
        if (!f || !(b->system = ac_read_stream(f, (size_t)16 << 20, NULL))) {
            fprintf(stderr, "agentc: cannot read system prompt '%s': %s\n", o->system + 1,
                    strerror(errno));
            if (f)
                fclose(f);
            return AC_EXIT_CONFIG;
        }
        fclose(f);
        cfg.system_prompt = b->system;
    } else {
        cfg.system_prompt = o->system;
    }
    if (o->output_schema) {
        FILE *f = fopen(o->output_schema, "r");
        if (!f || !(b->output_schema = ac_read_stream(f, (size_t)16 << 20, NULL))) {
            fprintf(stderr, "agentc: cannot read output schema '%s': %s\n", o->output_schema,
                    strerror(errno));
            if (f)
                fclose(f);
            return AC_EXIT_CONFIG;
        }
        fclose(f);
        cfg.output_schema = b->output_schema;
    }
    const char *params[65];
    memcpy(params, o->params, o->n_params * sizeof *params);
    params[o->n_params] = NULL;
    cfg.params = params;
    cfg.output = out;
    cfg.request = &o->req;
    b->loop = ac_loop_new();
    if (!b->loop) {
        fprintf(stderr, "agentc: cannot create the event loop\n");
        return AC_EXIT_CONFIG;
    }
    cfg.loop = b->loop;
    b->engine = ac_engine_new(&cfg, &err);
    if (!b->engine) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return strstr(err.text, "--param") || strstr(err.text, "unknown param") ? AC_EXIT_USAGE
                                                                      : AC_EXIT_CONFIG;
    }
    for (size_t i = 0; i < o->n_tools; i++)
        if (ac_engine_add_tools(b->engine, o->tools[i], &err) < 0) {
            fprintf(stderr, "agentc: %s\n", err.text);
            return AC_EXIT_CONFIG;
        }
    return 0;
}

static int run_one(const run_opts *o, const char *script_text, int delay_ms, int demo)
{
    ui u;
    memset(&u, 0, sizeof u);
    u.jsonl = o->jsonl;
    u.trace = o->trace;
    u.tty = isatty(1);
    u.err_tty = isatty(2);
    u.color = u.tty && !getenv("NO_COLOR") && !o->jsonl;
    u.spinner = isatty(2) && !getenv("NO_COLOR") && !o->jsonl;
    u.utf8 = utf8_locale();
    u.hold_text = o->output_schema && !o->jsonl;
    ac_output out = {&u,       ui_text,      ui_reasoning, ui_tool_start, ui_tool_end, ui_retry,
                     ui_discarded, ui_compacted, ui_trace,      ui_finished,    ui_rejected,
                     ui_tool_progress};
    char *prompt = NULL;
    if (!strcmp(o->prompt, "-")) {
        prompt = ac_read_stream(stdin, (size_t)64 << 20, NULL);
        if (!prompt) {
            fprintf(stderr, "agentc: cannot read the prompt from stdin: %s\n", strerror(errno));
            return AC_EXIT_CONFIG;
        }
    }
    char *interrupted_partial = NULL;
    engine_bundle b;
    int rc = make_engine(o, &out, script_text, delay_ms, &b);
    if (rc) {
        bundle_free(&b);
        free(prompt);
        return rc;
    }
    u.t = ac_engine_tables(b.engine);
    ac_error err = {0};
    ac_store *store = NULL; /* --journal alone records to its file only, as before stores */
    rc = ac_cli_store_open(o->db, o->no_store || (o->journal && !o->session && !o->db), &store);
    ac_session *s = rc ? NULL
                       : ac_cli_session_open(store, b.engine, o->session,
                                             o->resume ? AC_STORE_MUST_EXIST : 0, o->journal, &err);
    if (!s) {
        if (!rc)
            fprintf(stderr, "agentc: %s\n", err.text);
        ac_store_close(store);
        bundle_free(&b);
        free(prompt);
        return rc ? rc : err.code == AC_STORE_EBUSY || err.code == AC_STORE_ENOENT ? AC_EXIT_FAILED
                                                                                   : AC_EXIT_CONFIG;
    }
    int resumed = ac_store_session_resumed(s);
    if (store && !o->jsonl && (resumed || !o->session)) /* --jsonl: in the done line */
        fprintf(stderr, resumed ? "agentc: session %s (resuming its interrupted turn)\n"
                                : "agentc: session %s\n", ac_session_id(s));
    if (o->resume && !resumed) {
        printf("session %s has nothing to finish\n", ac_session_id(s));
        ac_session_free(s);
        ac_store_close(store);
        bundle_free(&b);
        return 0;
    }
    struct sigaction old[3];
    catch_stop_signals(old);
    ignore_sigpipe();
    ac_run_wait wait = {o->on, o->n_on, 0, isatty(0) && isatty(2) && (!o->prompt || strcmp(o->prompt, "-"))};
    int wait_failed = 0;
    for (int pass = resumed ? 0 : 1; pass < 2; pass++) {
        /* pass 0 finishes the turn a crash interrupted, pass 1 runs the prompt */
        if (pass == 1 && o->resume)
            break;
        g_settled = 0;
        if (pass == 1)
            ac_session_send(s, prompt ? prompt : o->prompt);
        while (!g_settled && !ac_session_settled(s) && !g_interrupted && !g_out_errno) {
            ac_loop_run_once(b.loop, u.spinner_armed ? 40 : 100);
            if (ac_run_wait_check(s, &wait, stdin, stderr) < 0) {
                wait_failed = 1;
                break;
            }
            spinner_tick(&u);
        }
        if (g_interrupted || g_out_errno || wait_failed)
            break;
    }
    spinner_disarm(&u);
    if (!o->jsonl) { /* a character cut at the very end, if any */
        if (u.tty)
            vis_write(stdout, "", 0, VIS_ANSWER, &u.text_carry, 1);
        if (u.err_tty)
            vis_write(stderr, "", 0, VIS_TEXT, &u.reason_carry, 1);
    }
    int interrupted = g_interrupted;
    if (!interrupted && g_out_errno && !ac_session_settled(s))
        ac_session_cancel(s); /* the output is gone: stop paying for the answer */
    if (interrupted) {
        /* the partial answer is read before the cancel drops it */
        char *partial = ac_session_answer(s)[0] ? NULL : strdup(ac_session_partial(s));
        ac_session_cancel(s); /* stops the transfer and kills tool processes */
        if (!o->jsonl) {
            if (u.wrote_text)
                fputc('\n', stdout);
            u.wrote_text = 0;
            fprintf(stderr, "[%s: session cancelled%s]\n", stop_signal_name(interrupted),
                    o->journal ? ", journal kept" : "");
        }
        interrupted_partial = partial;
    }
    restore_stop_signals(old);
    enum ac_session_status st = ac_session_status(s);
    int turn_ok = st == AC_SESSION_IDLE || st == AC_SESSION_COMPLETED;
    const char *status = turn_ok ? "completed" : ac_session_status_name(st);
    const char *answer = ac_session_answer(s);
    if (interrupted && !*answer)
        answer = interrupted_partial && *interrupted_partial ? interrupted_partial
                                                             : ac_session_partial(s);
    const char *error = ac_session_error(s);
    char why[300];
    if (!turn_ok && !interrupted && (!error || !*error)) { /* never a failure without a reason */
        const char *state = NULL;
        ac_session_wait_state(s, &state);
        snprintf(why, sizeof why, "the session stopped with status %s in state %s",
                 ac_session_status_name(st), state ? state : "?");
        error = why;
    }
    ac_session_stats stats;
    ac_session_get_stats(s, &stats);
    if (o->jsonl) {
        if (error && !turn_ok)
            emit_json(json_pack("{s:s, s:s}", "type", "error", "message", error));
        json_t *done = json_pack(
            "{s:s, s:s, s:I, s:{s:I, s:I}, s:s, s:s*, s:s?}", "type", "done", "status",
            interrupted ? "cancelled" : status, "iterations", (json_int_t)stats.iterations,
            "usage", "input", (json_int_t)stats.input_tokens, "output",
            (json_int_t)stats.output_tokens, "answer", answer, "error", turn_ok ? NULL : error,
            "session", store ? ac_session_id(s) : NULL);
        char *kits = ac_session_toolkits_json(s); /* toolkit states and contexts, if any */
        if (done && kits)
            json_object_set_new(done, "toolkits", json_loads(kits, 0, NULL));
        free(kits);
        char *state = ac_session_state_doc_json(s); /* the State, when there is one */
        if (done && state)
            json_object_set_new(done, "state", json_loads(state, 0, NULL));
        free(state);
        emit_json(done);
    } else {
        /* the accepted answer; or one the spec took from elsewhere than streamed text */
        if ((u.hold_text || !u.wrote_text) && turn_ok && !interrupted && *answer) {
            if (u.tty)
                vis_write(stdout, answer, strlen(answer), VIS_ANSWER, &u.text_carry, 1);
            else
                fputs(answer, stdout);
            u.wrote_text = 1;
        }
        if (u.wrote_text || interrupted)
            fputc('\n', stdout);
        if (error && !turn_ok) {
            char *e = vis_dup(error);
            fprintf(stderr, "agentc: the agent failed: %s\n", e ? e : error);
            free(e);
        }
        if (demo && o->journal) {
            fprintf(stderr,
                    "\njournal: %s\n"
                    "  replay it:   agentc replay %s --check\n"
                    "  draw it:     agentc diagram spec/agent.fsm --journal %s --format mermaid\n",
                    o->journal, o->journal, o->journal);
        }
    }
    rc = interrupted ? 128 + interrupted : turn_ok ? 0 : AC_EXIT_FAILED;
    ac_session_free(s);
    ac_store_close(store);
    bundle_free(&b);
    free(prompt);
    free(interrupted_partial);
    return rc;
}

int ac_cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run(argc, argv, &o, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    return finish_output(run_one(&o, NULL, 0, 0));
}

/* agentc resume ID [OPTIONS]: run's options; the turn a crash interrupted is finished. */
int ac_cli_resume(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run(argc, argv, &o, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    o.session = o.prompt;
    o.resume = 1;
    return finish_output(run_one(&o, NULL, 0, 0));
}

static const char demo_script[] =
    "{\"reasoning\": \"The user wants 17 * 23 and then that plus 19. I will use the calculator "
    "for both.\", \"content\": \"Let me work that out.\", \"tool_calls\": [{\"id\": \"call_1\", "
    "\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"17 * 23\\\"}\"}], "
    "\"usage\": {\"input\": 120, \"output\": 32}}\n"
    "{\"content\": \"\", \"tool_calls\": [{\"id\": \"call_2\", \"name\": \"calculator\", "
    "\"arguments\": \"{\\\"expression\\\": \\\"391 + 19\\\"}\"}], \"usage\": {\"input\": 170, "
    "\"output\": 20}}\n"
    "{\"content\": \"17 x 23 = 391, and 391 + 19 = 410. Both results come from the calculator "
    "tool, run through the same spec-driven loop a real model would use.\", \"usage\": "
    "{\"input\": 210, \"output\": 40}}\n";

int ac_cli_demo(int argc, char **argv)
{
    const char *journal = "agentc-demo.journal";
    int jsonl = 0, trace = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: agentc demo [--journal FILE] [--jsonl] [--no-trace]\n\n"
                   "Runs an agent offline: a scripted model that calls the built-in calculator\n"
                   "tool through the full spec, streaming its answer, with a short trace.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--journal") && i + 1 < argc)
            journal = argv[++i];
        else if (!strcmp(argv[i], "--jsonl"))
            jsonl = 1;
        else if (!strcmp(argv[i], "--no-trace"))
            trace = 0;
        else {
            fprintf(stderr, "agentc demo: unknown option '%s'\n", argv[i]);
            return AC_EXIT_USAGE;
        }
    }
    run_opts o;
    memset(&o, 0, sizeof o);
    o.provider = "script";
    o.tools[o.n_tools++] = "builtin:calculator";
    o.system = "You are a careful assistant. Use the calculator for arithmetic.";
    o.journal = journal;
    o.trace = trace;
    o.jsonl = jsonl;
    o.prompt = "What is 17 * 23, plus 19?";
    if (!jsonl)
        fprintf(stderr, "agentc demo: offline, scripted model, real tool path, spec %s\n\n> %s\n\n",
                "spec/agent.fsm", o.prompt);
    return finish_output(run_one(&o, demo_script, isatty(1) ? 25 : 0, 1));
}

/* ---- batch ---- */

typedef struct batch_item {
    json_t *id;
    char *prompt; /* freed once sent */
    int line;     /* in the input: names the session b<line> and its journal */
    ac_session *s;
    int done;
    json_t *result; /* until printed */
} batch_item;

typedef struct batch {
    batch_item *items;
    size_t n;
    size_t *ready; /* indexes of sessions whose turn finished, not yet collected */
    size_t n_ready;
} batch;

static void batch_free_items(batch *bt)
{
    for (size_t i = 0; i < bt->n; i++) {
        ac_session_free(bt->items[i].s);
        json_decref(bt->items[i].id);
        json_decref(bt->items[i].result);
        free(bt->items[i].prompt);
    }
    free(bt->items);
    free(bt->ready);
}

/* Called from inside a dispatch: only note the session; it is collected
 * (and freed) after the loop iteration. */
static void batch_finished(void *ud, ac_session *s)
{
    batch *bt = ud;
    size_t i = (size_t)(uintptr_t)ac_session_userdata(s);
    if (i < bt->n && bt->n_ready < bt->n)
        bt->ready[bt->n_ready++] = i;
}

/* Reads the JSON Lines input. 0, or an exit status. */
static int batch_read(const char *path, batch *bt)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "agentc batch: cannot read '%s': %s\n", path, strerror(errno));
        return AC_EXIT_CONFIG;
    }
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    json_t *seen = json_object(); /* canonical id -> its line: duplicates are refused */
    while ((len = getline(&line, &lcap, f)) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)len)
            continue;
        json_error_t jerr;
        json_t *v = json_loadb(line, (size_t)len, 0, &jerr);
        const char *p = json_string_value(json_object_get(v, "prompt"));
        if (!p) {
            fprintf(stderr, "agentc batch: %s:%d: expected {\"id\": ..., \"prompt\": \"...\"}\n",
                    path, lineno);
            json_decref(v);
            rc = AC_EXIT_CONFIG;
            break;
        }
        if (bt->n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            batch_item *ni = realloc(bt->items, ncap * sizeof *ni);
            if (!ni) {
                json_decref(v);
                fprintf(stderr, "agentc batch: out of memory\n");
                rc = AC_EXIT_CONFIG;
                break;
            }
            bt->items = ni;
            cap = ncap;
        }
        batch_item *it = &bt->items[bt->n];
        memset(it, 0, sizeof *it);
        it->id = json_incref(json_object_get(v, "id"));
        if (!it->id)
            it->id = json_integer(lineno);
        it->line = lineno;
        it->prompt = strdup(p);
        bt->n++;
        json_decref(v);
        /* two results with one id could not be told apart */
        char *key = json_dumps(it->id, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
        json_t *first = key ? json_object_get(seen, key) : NULL;
        if (first) {
            fprintf(stderr,
                    "agentc batch: %s:%d: duplicate id %.200s (first on line %d); ids must be "
                    "unique (a line without an id has its line number)\n",
                    path, lineno, key, (int)json_integer_value(first));
            free(key);
            rc = AC_EXIT_CONFIG;
            break;
        }
        if (!key || !it->prompt || json_object_set_new(seen, key, json_integer(lineno))) {
            free(key);
            fprintf(stderr, "agentc batch: out of memory\n");
            rc = AC_EXIT_CONFIG;
            break;
        }
        free(key);
    }
    json_decref(seen);
    free(line);
    if (f != stdin)
        fclose(f);
    if (!rc && !(bt->ready = malloc((bt->n ? bt->n : 1) * sizeof *bt->ready))) {
        fprintf(stderr, "agentc batch: out of memory\n");
        rc = AC_EXIT_CONFIG;
    }
    return rc;
}

/* Turns a settled (or cancelled) session into its result line and frees it. */
static int batch_collect(batch_item *it, const char *journal, int cancelled)
{
    ac_session_stats stats;
    ac_session_get_stats(it->s, &stats);
    enum ac_session_status st = ac_session_status(it->s);
    int ok = !cancelled && (st == AC_SESSION_IDLE || st == AC_SESSION_COMPLETED);
    const char *status = ok                                       ? "completed"
                         : cancelled || st == AC_SESSION_CANCELLED ? "cancelled"
                                                                   : "failed";
    const char *error = ok                        ? NULL
                        : cancelled               ? "interrupted"
                        : ac_session_error(it->s) ? ac_session_error(it->s)
                                                  : "the agent failed";
    it->result = json_pack(
        "{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s?, s:s?}", "id", it->id, "status", status,
        "answer", ac_session_answer(it->s), "iterations", (json_int_t)stats.iterations,
        "tool_calls", (json_int_t)stats.tool_calls, "usage", "input",
        (json_int_t)stats.input_tokens, "output", (json_int_t)stats.output_tokens,
        "error", error, "journal", journal);
    it->done = 1;
    ac_session_free(it->s);
    it->s = NULL;
    return ok;
}

static void batch_progress(size_t finished, size_t n, size_t failures, int64_t t0, int final)
{
    double secs = (double)(wall_ms() - t0) / 1000.0;
    double rate = secs > 0 ? (double)finished / secs : 0;
    char bar[31];
    size_t fill = n ? finished * 30 / n : 30;
    for (size_t i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r\033[K[%s] %zu/%zu  %.1f/s  %zu failed  ", bar, finished, n, rate, failures);
    if (final)
        fprintf(stderr, "%.1fs\n", secs);
    else if (rate > 0)
        fprintf(stderr, "ETA %.0fs", (double)(n - finished) / rate);
    fflush(stderr);
}

/* Sessions running at once need descriptors: a connection each, a journal each with
 * --journal-dir, and a few for the loop and stdio. The soft limit is raised to the hard one; a
 * concurrency the limit still cannot serve is lowered, with a note, rather than failing sessions
 * with a misleading "Couldn't connect". Tool processes take more, and report EMFILE as such. */
static int clamp_to_descriptors(int concurrency, int journals)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return concurrency;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    if (rl.rlim_cur == RLIM_INFINITY)
        return concurrency;
    long per = journals ? 2 : 1, spare = 32;
    long fit = ((long)rl.rlim_cur - spare) / per;
    if (fit < 1)
        fit = 1;
    if (concurrency <= fit)
        return concurrency;
    fprintf(stderr,
            "agentc batch: --concurrency %d lowered to %ld: this process may open %ld files "
            "(ulimit -n) and each running session needs %ld\n",
            concurrency, fit, (long)rl.rlim_cur, per);
    return (int)fit;
}

int ac_cli_batch(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run(argc, argv, &o, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.journal_dir && mkdir(o.journal_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "agentc batch: cannot create '%s': %s\n", o.journal_dir, strerror(errno));
        return AC_EXIT_CONFIG;
    }
    batch bt;
    memset(&bt, 0, sizeof bt);
    if ((rc = batch_read(o.prompt, &bt))) {
        batch_free_items(&bt);
        return rc;
    }
    ac_output out;
    memset(&out, 0, sizeof out);
    out.ud = &bt;
    out.finished = batch_finished;
    engine_bundle b;
    rc = make_engine(&o, &out, NULL, 0, &b);
    if (rc) {
        bundle_free(&b);
        batch_free_items(&bt);
        return rc;
    }
    ac_store *store = NULL; /* --db: every session stored under its input id */
    if (o.db && (rc = ac_cli_store_open(o.db, 0, &store)) != 0) {
        bundle_free(&b);
        batch_free_items(&bt);
        return rc;
    }
    o.concurrency = clamp_to_descriptors(o.concurrency, o.journal_dir != NULL);
    size_t n = bt.n, next = 0, running = 0, finished = 0, failures = 0, printed = 0;
    int tty = isatty(2);
    int64_t t0 = wall_ms(), last_scan = t0, last_bar = 0;
    struct sigaction old[3];
    catch_stop_signals(old);
    ignore_sigpipe();
    char journal[4096];
    while (finished < n && !g_interrupted && !g_out_errno) {
        while (next < n && running < (size_t)o.concurrency) {
            batch_item *it = &bt.items[next];
            char id[64];
            ac_error err;
            snprintf(id, sizeof id, "b%d", it->line);
            if (o.journal_dir)
                snprintf(journal, sizeof journal, "%s/%s.journal", o.journal_dir, id);
            const char *sid = store && json_is_string(it->id) ? json_string_value(it->id) : id;
            /* created and closed with the loop turn's group commit (store.h) */
            it->s = ac_cli_session_open(store, b.engine, sid, AC_STORE_GROUPED,
                                        o.journal_dir ? journal : NULL,
                                        &err);
            if (!it->s && err.code == AC_ECONFIG && next == 0) {
                /* the configuration (a tool_choice naming no tool): no session can run */
                fprintf(stderr, "agentc: %s\n", err.text);
                restore_stop_signals(old);
                batch_free_items(&bt);
                ac_store_close(store);
                bundle_free(&b);
                return AC_EXIT_CONFIG;
            }
            if (it->s) {
                ac_session_set_userdata(it->s, (void *)(uintptr_t)next);
                ac_session_send(it->s, it->prompt);
                free(it->prompt);
                it->prompt = NULL;
                running++;
            } else {
                it->done = 1;
                it->result = json_pack("{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s}", "id", it->id,
                                       "status", "failed", "answer", "", "iterations",
                                       (json_int_t)0, "tool_calls", (json_int_t)0, "usage", "input",
                                       (json_int_t)0, "output", (json_int_t)0, "error", err.text);
                finished++;
                failures++;
                if (!o.ordered) {
                    emit_json(it->result);
                    it->result = NULL;
                }
            }
            next++;
        }
        ac_loop_run_once(b.loop, 50);
        /* Sessions report through the finished hook; an edited spec may not
         * call it, so every 250 ms the running sessions are also polled. */
        int64_t now = wall_ms();
        if (now - last_scan >= 250) {
            last_scan = now;
            for (size_t i = 0; i < next; i++) {
                /* waiting for an outside event: the first --on answer for its state, or it
                 * fails naming the state (a batch never asks) */
                ac_run_wait bw = {o.on, o.n_on, 0, 0};
                if (bt.items[i].s && !bt.items[i].done && !ac_session_settled(bt.items[i].s))
                    ac_run_wait_check(bt.items[i].s, &bw, NULL, NULL);
            }
            bt.n_ready = 0;
            for (size_t i = 0; i < next; i++)
                if (bt.items[i].s && ac_session_settled(bt.items[i].s))
                    bt.ready[bt.n_ready++] = i;
        }
        for (size_t k = 0; k < bt.n_ready; k++) {
            batch_item *it = &bt.items[bt.ready[k]];
            if (it->done || !it->s || !ac_session_settled(it->s))
                continue;
            if (o.journal_dir)
                snprintf(journal, sizeof journal, "%s/b%d.journal", o.journal_dir, it->line);
            failures += !batch_collect(it, o.journal_dir ? journal : NULL, 0);
            running--;
            finished++;
            if (!o.ordered) { /* as they finish, and not kept */
                emit_json(it->result);
                it->result = NULL;
            }
        }
        bt.n_ready = 0;
        if (o.ordered) /* the longest finished prefix, in input order */
            for (; printed < n && bt.items[printed].done; printed++) {
                emit_json(bt.items[printed].result);
                bt.items[printed].result = NULL;
            }
        if (tty && now - last_bar >= 100) {
            last_bar = now;
            batch_progress(finished, n, failures, t0, 0);
        }
    }
    int interrupted = g_interrupted;
    if (interrupted || g_out_errno) {
        /* Every session still running is cancelled and reported; the ones
         * never started are reported as cancelled too. */
        for (size_t i = 0; i < n; i++) {
            batch_item *it = &bt.items[i];
            if (it->done)
                continue;
            if (it->s) {
                ac_session_cancel(it->s);
                if (o.journal_dir)
                    snprintf(journal, sizeof journal, "%s/b%d.journal", o.journal_dir, it->line);
                batch_collect(it, o.journal_dir ? journal : NULL, 1);
            } else {
                it->done = 1;
                it->result = json_pack(
                    "{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s}", "id", it->id, "status",
                    "cancelled", "answer", "", "iterations", (json_int_t)0, "tool_calls",
                    (json_int_t)0, "usage", "input", (json_int_t)0, "output", (json_int_t)0,
                    "error", "not started");
            }
            failures++;
            finished++;
            if (!o.ordered) {
                emit_json(it->result);
                it->result = NULL;
            }
        }
    }
    if (o.ordered)
        for (; printed < n; printed++) {
            emit_json(bt.items[printed].result);
            bt.items[printed].result = NULL;
        }
    if (tty)
        batch_progress(finished, n, failures, t0, 1);
    if (interrupted)
        fprintf(stderr, "agentc batch: %s: running sessions cancelled\n",
                stop_signal_name(interrupted));
    restore_stop_signals(old);
    batch_free_items(&bt);
    ac_store_close(store);
    bundle_free(&b);
    return finish_output(interrupted ? 128 + interrupted : failures ? AC_EXIT_FAILED : 0);
}
