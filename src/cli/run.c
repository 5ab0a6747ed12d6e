/*
 * run.c - `agentc run`: one session on an engine built from the options,
 * its prompt sent and its turn run to the end on the event loop, then the
 * answer and the status shown (run_ui.c shows what happens meanwhile).
 * resume.c and demo.c run their session through ac_cli_run_one too.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "agentc/store.h"
#include "cli.h"
#include "io/file.h" /* reading the prompt from stdin whole, with a cap */
#include "run_agent.h"
#include "run_common.h"
#include "post_at.h"
#include "run_opts.h"
#include "run_ui.h"
#include "run_wait.h" /* --on, and asking which outside event to send */
#include "subagents.h"

/* What one run holds while its session lives. */
typedef struct run_ctx {
    const run_opts *o;
    ui u;
    ac_loop *loop;
    ac_engine *engine;
    ac_cli_engine_base base;
    run_agent agent; /* a stored session's agent (run_agent.h) */
    ac_store *store;
    ac_session *s;
    ac_cli_subagents *subs; /* the children its tool files' agents run (subagents.h) */
    char *prompt;           /* read from stdin (PROMPT -) */
    char *partial;          /* the partial answer of an interrupted turn */
    int interrupted;        /* the stop signal, or 0 */
    int kept;               /* interrupted: the turn was cancelled, the session kept */
    ac_post_at post_at;     /* --post-at */
} run_ctx;

static void run_free(run_ctx *r)
{
    ac_session_free(r->s);
    ac_engine_free(r->engine);
    ac_cli_subagents_free(r->subs); /* after the sessions that call them */
    ac_store_close(r->store);
    ac_cli_tracer_finish(r->loop);
    ac_loop_free(r->loop);
    ac_cli_engine_base_free(&r->base);
    ac_cli_run_agent_free(&r->agent);
    free(r->prompt);
    free(r->partial);
}

/* The prompt, the engine and the session. 0, or an exit status. */
static int run_open(run_ctx *r, const ac_output *out)
{
    const run_opts *o = r->o;
    if (!strcmp(o->prompt, "-") && !o->resume) {
        r->prompt = ac_read_stream(stdin, (size_t)64 << 20, NULL);
        if (!r->prompt) {
            fprintf(stderr, "agentc: cannot read the prompt from stdin: %s\n", strerror(errno));
            return AC_EXIT_CONFIG;
        }
        size_t n = strlen(r->prompt); /* the line end(s) of `echo hi |` are not the prompt's */
        while (n && (r->prompt[n - 1] == '\n' || r->prompt[n - 1] == '\r'))
            r->prompt[--n] = 0;
    }
    /* --journal alone records to its file only, as before stores */
    int rc =
        ac_cli_store_open(o->db, o->no_store || (o->journal && !o->session && !o->db), &r->store);
    if (rc)
        return rc;
    if (!(r->loop = ac_loop_new())) {
        fprintf(stderr, "agentc: cannot create the event loop\n");
        return AC_EXIT_CONFIG;
    }
    if (r->store && (rc = ac_cli_run_agent_named(r->store, o->session, &o->eng, o->agent_name,
                                                 "agentc", &r->agent)))
        return rc;
    if (r->store &&
        (rc = ac_cli_run_agent_change(r->store, o->session, r->loop, &r->agent, "agentc")))
        return rc;
    if ((rc = ac_cli_engine_resolve(r->store ? &r->agent.eff : &o->eng, "agentc", &r->base)))
        return rc;
    r->base.cfg.agent_name = o->agent_name ? o->agent_name : o->agent; /* the traces' */
    if (!(r->subs = ac_cli_subagents_new(r->store ? &r->agent.eff : &o->eng, r->loop, out, r->store,
                                         o->agents))) {
        fprintf(stderr, "agentc: out of memory\n");
        return AC_EXIT_CONFIG;
    }
    r->base.cfg.subagents = ac_cli_subagents_opener(r->subs);
    ac_error err = {0};
    if ((rc = ac_cli_engine_build(&r->base, r->loop, out, "agentc", &r->engine, &err)))
        return rc;
    r->u.t = ac_engine_tables(r->engine);
    char perr[512];
    if (ac_post_at_parse(&r->post_at, r->u.t, o->post_at, o->n_post_at, perr, sizeof perr) < 0) {
        fprintf(stderr, "agentc: %s\n", perr);
        return AC_EXIT_USAGE;
    }
    if (o->n_post_at)
        r->u.post_at = &r->post_at; /* from the session's creation on (its spawn) */
    if (r->store && (rc = ac_cli_run_agent_record(&r->agent, "agentc")))
        return rc;
    r->s = ac_cli_session_open(r->store, r->engine, o->session, o->resume ? AC_STORE_MUST_EXIST : 0,
                               o->journal, r->store ? r->agent.rec : NULL, &err);
    if (r->s && r->agent.exists && !r->agent.stored_rec && ac_session_settled(r->s))
        ac_session_change_agent(r->s, "option", "[\"agent\"]", r->agent.rec); /* from now on */
    if (!r->s) {
        fprintf(stderr, "agentc: %s\n", err.text);
        return err.code == AC_STORE_EBUSY || err.code == AC_STORE_ENOENT ? AC_EXIT_FAILED
                                                                         : AC_EXIT_CONFIG;
    }
    return 0;
}

/* Runs the loop until the turn settles (with --post-at: until the session is at rest, as an
 * event it posted may start another turn), a signal or an output error stops it, or a wait for
 * an outside event cannot be answered. 0, or -1 for the last. */
static int run_turn(run_ctx *r, ac_run_wait *wait)
{
    while ((!r->u.settled || r->o->n_post_at) && !ac_session_settled(r->s) && !ac_cli_interrupted &&
           !ac_cli_out_errno) {
        ac_loop_run_once(r->loop, r->u.spinner_armed ? 40 : 100);
        if (ac_run_wait_check(r->s, wait, stdin, stderr) < 0)
            return -1;
        ac_cli_spinner_tick(&r->u);
    }
    return 0;
}

/* A turn a handoff ended goes on under the agent it names, as often as agents hand it on
 * (docs/composition.md). 0, or -1 when the session could not be moved (said). */
static int run_handoffs(run_ctx *r, ac_run_wait *wait)
{
    ac_error err = {0};
    for (int n = 0; n < 32; n++) {
        int rc = ac_cli_subagents_handoff(r->subs, &r->s, &err);
        if (rc < 0)
            fprintf(stderr, "agentc: the handoff failed: %s\n", err.text);
        if (rc <= 0)
            return rc;
        r->u.settled = 0;
        if (run_turn(r, wait) < 0 || ac_cli_interrupted || ac_cli_out_errno)
            return -1;
    }
    fprintf(stderr, "agentc: 32 handoffs in one turn: stopped (the agents hand it on in a loop)\n");
    return -1;
}

/* The turn a crash interrupted (resumed), then the prompt's (unless resuming). */
static void run_passes(run_ctx *r, int resumed)
{
    const run_opts *o = r->o;
    ac_run_wait wait = {o->on, o->n_on, 0,
                        isatty(0) && isatty(2) && (!o->prompt || strcmp(o->prompt, "-"))};
    for (int pass = resumed ? 0 : 1; pass < 2; pass++) {
        if (pass == 1 && o->resume)
            break;
        r->u.settled = 0;
        if (pass == 1 && resumed && !o->jsonl) { /* the resumed turn's text set apart */
            if (r->u.wrote_text)
                fputc('\n', stdout);
            r->u.wrote_text = r->u.streamed = 0;
            ac_cli_out_flush();
            fprintf(stderr, "agentc: the interrupted turn is finished; now the new message\n");
        }
        if (pass == 1)
            ac_session_send(r->s, r->prompt ? r->prompt : o->prompt);
        if (run_turn(r, &wait) < 0 || ac_cli_interrupted || ac_cli_out_errno)
            break;
        if (run_handoffs(r, &wait) < 0)
            break;
    }
    ac_cli_spinner_disarm(&r->u);
    if (!o->jsonl) { /* a character cut at the very end, if any */
        if (r->u.tty)
            ac_cli_vis_write(stdout, "", 0, VIS_ANSWER, &r->u.text_carry, 1);
        if (r->u.err_tty)
            ac_cli_vis_write(stderr, "", 0, VIS_TEXT, &r->u.reason_carry, 1);
    }
}

/* A stop signal or a lost output stops the run: a stored session given by --session keeps
 * going (the spec's turn.cancel stops the turn only), any other is cancelled. The partial
 * answer of an interrupted turn is kept for the report. */
static void run_stop(run_ctx *r)
{
    r->interrupted = ac_cli_interrupted;
    if (!r->interrupted && ac_cli_out_errno && !ac_session_settled(r->s))
        ac_session_cancel(r->s); /* the output is gone: stop paying for the answer */
    if (!r->interrupted)
        return;
    /* the partial answer is read before the cancel drops it */
    r->partial = ac_session_answer(r->s)[0] ? NULL : strdup(ac_session_partial(r->s));
    /* both stop the transfer and kill tool processes before they return */
    int rc = r->store && r->o->session ? ac_session_cancel_turn(r->s) : AC_EUNKNOWN_EVENT;
    r->kept = rc == AC_OK || rc == AC_UNHANDLED;
    if (!r->kept)
        ac_session_cancel(r->s);
    if (!r->o->jsonl) {
        if (r->u.wrote_text)
            fputc('\n', stdout);
        r->u.wrote_text = 0;
        if (r->kept)
            fprintf(stderr, "[%s: turn cancelled; session %s kept]\n",
                    ac_cli_stop_signal_name(r->interrupted), ac_session_id(r->s));
        else
            fprintf(stderr, "[%s: session cancelled%s]\n", ac_cli_stop_signal_name(r->interrupted),
                    r->o->journal ? ", journal kept" : "");
    }
}

/* The done line of --jsonl. */
static void report_jsonl(run_ctx *r, const char *status, const char *answer, const char *error,
                         int turn_ok)
{
    ac_session_stats stats;
    ac_session_get_stats(r->s, &stats);
    if (error && !turn_ok)
        ac_cli_emit_json(json_pack("{s:s, s:s}", "type", "error", "message", error));
    json_t *done =
        json_pack("{s:s, s:s, s:I, s:{s:I, s:I}, s:s, s:s*, s:s?}", "type", "done", "status",
                  r->interrupted ? "cancelled" : status, "iterations", (json_int_t)stats.iterations,
                  "usage", "input", (json_int_t)stats.input_tokens, "output",
                  (json_int_t)stats.output_tokens, "answer", answer, "error",
                  turn_ok ? NULL : error, "session", r->store ? ac_session_id(r->s) : NULL);
    const char *trace = ac_session_trace_id(r->s); /* joins the stream and the trace */
    if (done && trace)
        json_object_set_new(done, "trace_id", json_string(trace));
    if (done && stats.has_cost) /* --prices: what it cost */
        json_object_set_new(json_object_get(done, "usage"), "cost_usd", json_real(stats.cost_usd));
    char *kits = ac_session_toolkits_json(r->s); /* toolkit states and contexts, if any */
    if (done && kits)
        json_object_set_new(done, "toolkits", json_loads(kits, 0, NULL));
    free(kits);
    char *state = ac_session_state_doc_json(r->s); /* the State, when there is one */
    if (done && state)
        json_object_set_new(done, "state", json_loads(state, 0, NULL));
    free(state);
    ac_cli_emit_json(done);
}

/* The end of the answer, and the failure, on a terminal or a pipe. */
static void report_text(run_ctx *r, const char *answer, const char *error, int turn_ok, int demo)
{
    ui *u = &r->u;
    /* the accepted answer; or one the spec took from elsewhere than streamed text */
    if ((u->hold_text || !u->streamed) && turn_ok && !r->interrupted && *answer) {
        if (u->tty)
            ac_cli_vis_write(stdout, answer, strlen(answer), VIS_ANSWER, &u->text_carry, 1);
        else
            fputs(answer, stdout);
        u->wrote_text = 1;
    }
    if (u->wrote_text || r->interrupted)
        fputc('\n', stdout);
    if (error && !turn_ok) {
        char *e = ac_cli_vis_dup(error);
        fprintf(stderr, "agentc: the agent failed: %s\n", e ? e : error);
        free(e);
    }
    const char *j = r->o->journal;
    if (demo && j)
        fprintf(stderr,
                "\njournal: %s\n"
                "  replay it:   agentc replay %s --check\n"
                "  draw it:     agentc diagram spec/agent.fsm --journal %s --format dot\n",
                j, j, j);
}

/* Shows how the turn ended (the session's last turn). The exit status. */
static int run_report(run_ctx *r, int demo)
{
    enum ac_session_status st = ac_session_status(r->s);
    enum ac_turn_outcome last = ac_session_last_turn(r->s, NULL);
    ac_session_end end;
    ac_session_get_end(r->s, &end);
    int turn_ok = last == AC_TURN_COMPLETED && !(end.ended && !strcmp(end.how, "failed"));
    const char *answer = ac_session_answer(r->s);
    if (r->interrupted && !*answer)
        answer = r->partial && *r->partial ? r->partial : ac_session_partial(r->s);
    else if (!turn_ok && !r->interrupted)
        answer = ""; /* a failed turn has no answer: the last one is an earlier turn's */
    const char *error = ac_session_error(r->s);
    char why[300];
    if (!turn_ok && !r->interrupted && (!error || !*error)) { /* never a failure without a reason */
        const char *state = NULL;
        ac_session_wait_state(r->s, &state);
        snprintf(why, sizeof why, "the session stopped with status %s in state %s",
                 ac_session_status_name(st), state ? state : "?");
        error = why;
    }
    const char *outcome = last == AC_TURN_NONE ? "failed" : ac_turn_outcome_name(last);
    if (r->o->jsonl)
        report_jsonl(r, turn_ok ? "completed" : outcome, answer, error, turn_ok);
    else
        report_text(r, answer, error, turn_ok, demo);
    return r->interrupted ? 128 + r->interrupted : turn_ok ? 0 : AC_EXIT_FAILED;
}

int ac_cli_run_one(const run_opts *o, int demo)
{
    run_ctx r;
    memset(&r, 0, sizeof r);
    r.o = o;
    ac_cli_ui_init(&r.u, o->jsonl, o->trace, o->eng.output_schema || o->eng.output_schema_text);
    ac_output out = ac_cli_ui_output(&r.u);
    int rc = run_open(&r, &out);
    if (rc) {
        run_free(&r);
        return rc;
    }
    int resumed = ac_store_session_resumed(r.s);
    if (r.store && !o->jsonl && (resumed || !o->session)) /* --jsonl: in the done line */
        fprintf(stderr,
                resumed ? "agentc: session %s (resuming its interrupted turn)\n"
                        : "agentc: session %s\n",
                ac_session_id(r.s));
    if (ac_session_ended(r.s)) { /* said as it is, never as a new failure */
        char text[600];
        ac_session_ended_text(r.s, NULL, text, sizeof text);
        fprintf(stderr, "agentc: %s\n", text);
        run_free(&r);
        return AC_EXIT_FAILED;
    }
    if (o->resume && !resumed) {
        printf("session %s has nothing to finish\n", ac_session_id(r.s));
        run_free(&r);
        return 0;
    }
    struct sigaction old[3];
    ac_cli_catch_stop_signals(old);
    ac_cli_ignore_sigpipe();
    run_passes(&r, resumed);
    run_stop(&r);
    ac_cli_restore_stop_signals(old);
    rc = run_report(&r, demo);
    run_free(&r);
    return rc;
}

int ac_cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = ac_cli_parse_run(argc, argv, &o, 0);
    if (!rc)
        rc = ac_cli_run_one(&o, 0);
    ac_cli_run_opts_free(&o);
    return rc < 0 ? 0 : ac_cli_finish_output(rc);
}
