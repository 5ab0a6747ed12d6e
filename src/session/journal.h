/*
 * journal.h - the session journal: one writer, one reader, one format.
 *
 * Internal to the library (the CLI and the tests use it too). Embedders
 * replay a journal with ac_session_replay (agentc.h).
 *
 * Format, version AC_JOURNAL_VERSION. A journal is JSON Lines, one object
 * per line, written in this order:
 *
 *   header   {"agentc_journal": 2, "spec": PATH, "spec_hash": HEX,
 *             "session": ID, "params": {"name": "value", ...}}
 *            first line only: the spec the session ran (its repo-relative
 *            path and the hash of its meaning) and the param overrides.
 *   event    {"n": N, "t": MS, "ev": NAME, "data": JSON}
 *            one per event applied, numbered from 1, written before the
 *            event is dispatched. "t" is the event's time, "data" its
 *            payload (absent when it has none).
 *   steps    {"steps": N, "tr": [STEP, ...]}
 *            follows event N: the transitions it caused, in order (internal
 *            ones included, ignored and unhandled events not).
 *   STEP     [MACHINE, FROM, EVENT, TO, LINE, GUARD, [ACTION, ...]]
 *            FROM is "" for a machine's initial entry, EVENT "" for an
 *            eventless step. LINE is where the transition is declared in the
 *            recorded spec, for people only. GUARD is the guard as text ("" when
 *            none), the actions are the transition's own (not exit or entry).
 *            A step's identity is every field but LINE, so a spec edit that
 *            moves a transition (comments, blank lines, reordering) still
 *            matches it.
 *
 * Version 1 wrote STEP as [MACHINE, FROM, EVENT, TO, LINE]. It is still read;
 * its steps are matched on the four names only.
 *
 * A line is at most AC_JOURNAL_MAX_LINE bytes (its newline excluded): the
 * writer fails rather than write a longer one, the reader refuses one.
 *
 * A process that crashes while writing leaves a torn last line (one with no
 * newline that does not parse): the reader skips it and says so
 * (ac_journal_reader_torn). Replay with AC_REPLAY_CHECK refuses such a journal,
 * and one whose events are not numbered 1, 2, 3... or lack their steps lines.
 *
 * Files are created 0600, never through a symbolic link (replay.c, session.c).
 */
#ifndef AGENTC_JOURNAL_H
#define AGENTC_JOURNAL_H

#include <jansson.h>
#include <stdint.h>

#include "agentc/fsm.h"
#include "io/loop.h"

#define AC_JOURNAL_VERSION 2
#define AC_JOURNAL_MAX_LINE (256 * 1024 * 1024)

/* ---- writer ---------------------------------------------------------------- */

typedef struct ac_journal ac_journal;

/* Creates the file, mode 0600 (an existing file is truncated and its mode
 * tightened to 0600; with exclusive, an existing file is an error). A symbolic
 * link at path is refused. Lines are buffered; see ac_journal_flush for
 * when they reach the kernel. With a loop, the writer also flushes from a 0 ms
 * timer armed by the first line buffered in a loop turn; without one, each
 * event is flushed once its steps line is written. NULL with a message in err. */
ac_journal *ac_journal_open(const char *path, int exclusive, ac_loop *loop, char *err,
                            size_t errcap);
/* The path the journal writes (borrowed). */
const char *ac_journal_path(const ac_journal *j);
/* name as a file name: every byte other than ASCII letters, digits, '.', '_' and '-' as %XX
 * (so distinct names give distinct files, and none holds a '/'), into buf (NUL-terminated when
 * it fits). The length written; cap when it did not fit. */
size_t ac_journal_name_encode(const char *name, char *buf, size_t cap);
/* NULL while every line written reached the file (as far as fflush knows), else
 * why not ("cannot write journal 'PATH': ..."). After the first failure the
 * journal writes nothing more; the session checks this after each event and
 * fails (session.c). */
const char *ac_journal_error(const ac_journal *j);
/* Flushes, cancels the timer and closes. NULL is a no-op. A failure here is
 * not reported: the session flushes before it settles, and checks then. */
void ac_journal_close(ac_journal *j);
/* params is borrowed. 0 on success. */
int ac_journal_write_header(ac_journal *j, const ac_fsm_tables *t, const char *session,
                            json_t *params);
struct ac_payload;
/* Writes event n and opens its list of steps. data is borrowed, may be NULL; p, when not
 * NULL, is the event's typed payload instead (session/payload.h), written as the JSON it
 * stands for. */
void ac_journal_write_event(ac_journal *j, uint64_t n, int64_t t_ms, const char *event,
                            json_t *data, const struct ac_payload *p);
/* Adds one step to the open event (transitions and internal transitions only;
 * nothing when no event is open, e.g. while the session starts). */
void ac_journal_add_step(ac_journal *j, const ac_fsm_tables *t, const ac_trace_rec *r);
/* Writes the steps line of event n and closes its list. */
void ac_journal_write_steps(ac_journal *j, uint64_t n);
/* Hands every buffered line to the kernel (fflush). Cheap when nothing is
 * buffered. The session calls it before an effect starts or stops, when a
 * post leaves the session settled, and on close. */
void ac_journal_flush(ac_journal *j);

/* ---- steps ------------------------------------------------------------------- */

/* A trace record as a STEP (new reference), or NULL for a record that is not
 * a step (ignored, unhandled, error). */
json_t *ac_journal_step_json(const ac_fsm_tables *t, const ac_trace_rec *r);
/* True when two STEPs are the same transition: equal machine, source, event,
 * target, guard and actions, whatever their lines. Fields a version 1 step
 * lacks are not compared. */
int ac_journal_step_same(const json_t *a, const json_t *b);
/* The transition row of t a recorded STEP names, or AC_FSM_NONE. */
uint16_t ac_journal_step_row(const ac_fsm_tables *t, const json_t *step);
/* The guard program at offset off as text ("" for AC_FSM_NONE). */
void ac_journal_guard_text(const ac_fsm_tables *t, uint16_t off, char *buf, size_t cap);

/* ---- reader ------------------------------------------------------------------ */

enum ac_journal_line_kind {
    AC_JOURNAL_HEADER = 0,
    AC_JOURNAL_EVENT = 1,
    AC_JOURNAL_STEPS = 2,
    AC_JOURNAL_OTHER = 3 /* an object of neither shape: skipped by replay */
};

/* One parsed line. Pointers are borrowed from the reader and valid until the
 * next call of ac_journal_reader_next (the header's until close). */
typedef struct ac_journal_line {
    int kind; /* enum ac_journal_line_kind */
    int lineno;
    json_t *json; /* the whole line */
    /* header */
    int version;
    const char *spec, *spec_hash, *session; /* NULL when absent */
    json_t *params;                         /* NULL when absent */
    /* event */
    uint64_t n;
    int64_t t_ms;
    const char *event;
    json_t *data; /* NULL when absent */
    /* steps: of event n */
    json_t *steps; /* array of STEP */
} ac_journal_line;

typedef struct ac_journal_reader ac_journal_reader;

/* Opens a journal and reads its header line. NULL with a message in err (a
 * missing file, no header, a version newer than AC_JOURNAL_VERSION). */
ac_journal_reader *ac_journal_reader_open(const char *path, char *err, size_t errcap);
const ac_journal_line *ac_journal_reader_header(const ac_journal_reader *r);
/* The next line after the header: 1 with *out filled, 0 at the end, -1 for a
 * malformed line or one longer than the limit ("PATH:LINE: message" in err). A
 * malformed last line without its newline is a torn write, not an error: the
 * reader ends there and remembers it. */
int ac_journal_reader_next(ac_journal_reader *r, ac_journal_line *out, char *err, size_t errcap);
/* The line number of the torn last line the reader skipped, 0 when none. */
int ac_journal_reader_torn(const ac_journal_reader *r);
/* Lowers the line limit (default AC_JOURNAL_MAX_LINE) for the lines after the
 * header: for tests. */
void ac_journal_reader_set_max_line(ac_journal_reader *r, size_t max_line);
void ac_journal_reader_close(ac_journal_reader *r);

#endif
