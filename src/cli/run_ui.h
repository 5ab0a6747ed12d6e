/*
 * run_ui.h - what `agentc run` shows of a session, on a terminal or as
 * JSON Lines (run_ui.c).
 */
#ifndef AGENTC_CLI_RUN_UI_H
#define AGENTC_CLI_RUN_UI_H

#include <stdint.h>
#include <stdio.h>

#include "agentc/agentc.h"

/* How ac_cli_vis_write shows control characters: all visibly but these. */
enum { VIS_ANSWER /* keeps \n \t \r */, VIS_TEXT /* keeps \n \t */, VIS_LINE /* all to ' ' */ };

/* A character cut between two deltas waits here for its end. */
typedef struct vis_carry {
    unsigned char b[4];
    size_t n;
} vis_carry;

typedef struct ui {
    int jsonl, trace, color, tty;
    int err_tty;                        /* stderr is a terminal */
    vis_carry text_carry, reason_carry; /* characters cut between deltas (on a terminal) */
    int spinner;       /* spinner enabled: stderr is a terminal, no NO_COLOR, no --jsonl */
    int spinner_armed; /* waiting for the model's first token */
    int spinner_shown; /* a frame is on the screen */
    int spinner_frame;
    int utf8;
    int64_t wait_since, last_frame;
    int wrote_text;     /* answer text on the current line (a newline is due before another) */
    int streamed;       /* answer text of this model call was printed (a trace line between
                           keeps it so: the answer is not printed again at the end) */
    int reasoning_open; /* reasoning written to stderr, its line not ended yet */
    const ac_fsm_tables *t;
    int hold_text; /* --output-schema without --jsonl: only the accepted answer is printed */
    int settled;   /* the session's turn ended (its finished callback) */
    /* the ids (hashed) of the calls last shown starting: a result whose call was not (a
     * spec's deny answers it without running it) is shown after its call */
    uint64_t started[1024];
    size_t n_started;
    /* the calls shown starting and not yet ended (the first 32): a turn that ends before
     * their results (failed, cancelled) shows each with a failed result */
    char open[32][128];
    size_t n_open;
    struct ac_post_at *post_at; /* --post-at: events posted as states are entered */
} ui;

/* u set up for a run: terminals and locale looked at; hold_text: only the
 * accepted answer is printed (--output-schema). */
void ac_cli_ui_init(ui *u, int jsonl, int trace, int hold_text);

/* The output callbacks that show a session through u. */
ac_output ac_cli_ui_output(ui *u);

/* The spinner: the next frame if one is due (call between loop turns); and
 * taken off the screen. */
void ac_cli_spinner_tick(ui *u);
void ac_cli_spinner_disarm(ui *u);

/* Writes d[0..n) to f visibly; final: nothing follows (a cut character is
 * then shown as bytes). */
void ac_cli_vis_write(FILE *f, const char *d, size_t n, int mode, vis_carry *cy, int final);

/* The visible, one-line form of in (newlines and tabs as spaces), cut to fit cap bytes
 * (cap >= 8) with "...". */
void ac_cli_vis_line(const char *in, char *out, size_t cap);

/* The visible form of a diagnostic, newlines kept (the caller frees it). */
char *ac_cli_vis_dup(const char *in);

#endif
