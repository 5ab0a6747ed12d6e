/*
 * journal.c - the session journal's writer and reader (format: journal.h).
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/payload.h"
#include "util/buf.h"
#include "util/json_text.h"

/* ---- writer ---------------------------------------------------------------- */

struct ac_journal {
    FILE *f;
    char *path;
    int failed;      /* a line did not reach the file: nothing is written after it */
    char error[768]; /* why, when failed */
    ac_loop *loop;
    uint64_t timer; /* the pending flush, 0 when none */
    int dirty;      /* lines buffered since the last flush */
    json_t *steps;  /* steps of the open event, NULL when none is open */
    /* per transition row, its guard text and action names, built on first use
     * (a step line refers to them instead of rendering them again) */
    json_t **guards, **actions;
    uint16_t n_rows;
    ac_buf line; /* a typed event's line, reused */
};

static void flush_timer(void *ud)
{
    ac_journal *j = ud;
    j->timer = 0;
    ac_journal_flush(j);
}

/* Remembers the first failure; the journal writes nothing after it. */
static void fail(ac_journal *j, const char *why)
{
    if (j->failed)
        return;
    j->failed = 1;
    snprintf(j->error, sizeof j->error, "cannot write journal '%.500s': %s", j->path, why);
}

const char *ac_journal_error(const ac_journal *j)
{
    return j && j->failed ? j->error : NULL;
}

void ac_journal_flush(ac_journal *j)
{
    if (!j || !j->dirty)
        return;
    if (!j->failed && fflush(j->f) != 0)
        fail(j, strerror(errno));
    j->dirty = 0;
    if (j->timer) {
        ac_loop_cancel_timer(j->loop, j->timer);
        j->timer = 0;
    }
}

/* One line of n bytes (txt; NULL: out of memory) and its newline. */
static void write_text(ac_journal *j, const char *txt, size_t n)
{
    if (!txt) {
        fail(j, "out of memory");
        return;
    }
    if (n > AC_JOURNAL_MAX_LINE) {
        char why[128];
        snprintf(why, sizeof why, "a line of %zu bytes exceeds the limit of %d", n,
                 AC_JOURNAL_MAX_LINE);
        fail(j, why);
    } else if (fwrite(txt, 1, n, j->f) != n || fputc('\n', j->f) == EOF)
        fail(j, strerror(errno));
    j->dirty = 1;
    if (j->loop && !j->timer)
        j->timer = ac_loop_timer(j->loop, 0, flush_timer, j);
}

static void write_line(ac_journal *j, json_t *line)
{
    if (j->failed)
        return;
    char *txt = line ? json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    write_text(j, txt, txt ? strlen(txt) : 0);
    free(txt);
}

ac_journal *ac_journal_open(const char *path, int exclusive, ac_loop *loop, char *err,
                            size_t errcap)
{
    ac_journal *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    ac_buf_init(&j->line, AC_BUF_MAX); /* past AC_JOURNAL_MAX_LINE: write_text says so */
    /* never through a symbolic link (a planted one would aim the journal, and the
     * secrets it holds, at any file); readable by the owner only */
    int fd = open(
        path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC), 0600);
    if (fd < 0) {
        int e = errno;
        struct stat st;
        if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            snprintf(err, errcap, "cannot write journal '%s': it is a symbolic link (refused)",
                     path);
        else if (e == EEXIST)
            snprintf(err, errcap,
                     "cannot write journal '%s': the file exists (a journal is never "
                     "overwritten)",
                     path);
        else
            snprintf(err, errcap, "cannot write journal '%s': %s", path, strerror(e));
        free(j);
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077))
        (void)fchmod(fd, 0600); /* an existing file it overwrites */
    j->f = fdopen(fd, "w");
    j->path = strdup(path);
    if (!j->f || !j->path) {
        snprintf(err, errcap, "out of memory");
        if (j->f)
            fclose(j->f);
        else
            close(fd);
        free(j->path);
        free(j);
        return NULL;
    }
    j->loop = loop;
    return j;
}

void ac_journal_close(ac_journal *j)
{
    if (!j)
        return;
    ac_journal_flush(j);
    fclose(j->f);
    free(j->path);
    json_decref(j->steps);
    for (uint16_t i = 0; i < j->n_rows; i++) {
        json_decref(j->guards[i]);
        json_decref(j->actions[i]);
    }
    free(j->guards);
    free(j->actions);
    ac_buf_free(&j->line);
    free(j);
}

int ac_journal_write_header(ac_journal *j, const ac_fsm_tables *t, const char *session,
                            json_t *params)
{
    json_t *hdr =
        json_pack("{s:i, s:s, s:s, s:s, s:O?}", "agentc_journal", AC_JOURNAL_VERSION, "spec",
                  t->spec_path, "spec_hash", t->hash, "session", session, "params", params);
    if (!hdr)
        return -1;
    write_line(j, hdr);
    json_decref(hdr);
    ac_journal_flush(j);
    return j->failed ? -1 : 0;
}

/* An event line with a typed payload, written by the compact writer into the journal's own
 * buffer: the bytes json_dumps writes for the line the JSON payload made. */
static void write_typed(ac_journal *j, uint64_t n, int64_t t_ms, const char *event,
                        const ac_payload *p)
{
    if (j->failed)
        return;
    ac_buf_clear(&j->line);
    ac_buf_printf(&j->line,
                  "{\"n\":%" JSON_INTEGER_FORMAT ",\"t\":%" JSON_INTEGER_FORMAT ",\"ev\":",
                  (json_int_t)n, (json_int_t)t_ms);
    ac_json_put_string(&j->line, event, strlen(event), AC_JSON_ASCII);
    ac_buf_addstr(&j->line, ",\"data\":");
    ac_payload_put(&j->line, p, AC_JSON_ASCII);
    ac_buf_add(&j->line, "}", 1);
    write_text(j, j->line.failed ? NULL : j->line.p, j->line.n);
}

void ac_journal_write_event(ac_journal *j, uint64_t n, int64_t t_ms, const char *event,
                            json_t *data, const ac_payload *p)
{
    if (p && !data) {
        write_typed(j, n, t_ms, event, p);
    } else {
        json_t *line = json_pack("{s:I, s:I, s:s, s:O?}", "n", (json_int_t)n, "t", (json_int_t)t_ms,
                                 "ev", event, "data", data);
        write_line(j, line);
        json_decref(line);
    }
    json_decref(j->steps);
    j->steps = json_array();
}

static json_t *row_identity(const ac_fsm_tables *t, uint16_t row, char *guard, size_t cap);

void ac_journal_add_step(ac_journal *j, const ac_fsm_tables *t, const ac_trace_rec *r)
{
    if (!j->steps || (r->kind != AC_TRACE_TRANSITION && r->kind != AC_TRACE_INTERNAL))
        return;
    if (r->row == AC_FSM_NONE || r->row >= t->n_transitions) {
        json_t *step = ac_journal_step_json(t, r);
        if (step)
            json_array_append_new(j->steps, step);
        return;
    }
    if (!j->guards) {
        j->guards = calloc(t->n_transitions, sizeof *j->guards);
        j->actions = calloc(t->n_transitions, sizeof *j->actions);
        if (!j->guards || !j->actions) {
            free(j->guards);
            free(j->actions);
            j->guards = j->actions = NULL;
            return;
        }
        j->n_rows = t->n_transitions;
    }
    if (!j->guards[r->row]) {
        char guard[512];
        j->actions[r->row] = row_identity(t, r->row, guard, sizeof guard);
        j->guards[r->row] = json_string(guard);
    }
    json_t *step = json_pack("[s s s s i O O]", t->machines[r->machine].name,
                             r->from == AC_FSM_NONE ? "" : t->states[r->from].name,
                             r->event ? t->event_names[r->event] : "", t->states[r->to].name,
                             (int)r->line, j->guards[r->row], j->actions[r->row]);
    if (step)
        json_array_append_new(j->steps, step);
}

void ac_journal_write_steps(ac_journal *j, uint64_t n)
{
    if (!j->steps)
        return;
    json_t *line = json_pack("{s:I, s:o}", "steps", (json_int_t)n, "tr", j->steps);
    j->steps = NULL;
    write_line(j, line);
    json_decref(line);
    if (!j->loop)
        ac_journal_flush(j);
}

/* ---- steps ------------------------------------------------------------------- */

void ac_journal_guard_text(const ac_fsm_tables *t, uint16_t off, char *buf, size_t cap)
{
    /* postfix -> infix; prec: 3 atom or negation, 2 and, 1 or */
    char stack[AC_FSM_GUARD_STACK][256];
    int prec[AC_FSM_GUARD_STACK];
    int sp = 0;
    buf[0] = 0;
    if (off == AC_FSM_NONE)
        return;
    for (uint16_t i = off; t->guard_code[i] != AC_G_END; i++) {
        uint16_t op = t->guard_code[i];
        char tmp[256];
        if ((op & AC_G_OPMASK) == AC_G_PRED) {
            if (sp == AC_FSM_GUARD_STACK)
                return;
            snprintf(stack[sp], sizeof stack[sp], "%s", t->guard_names[op & AC_G_ARGMASK]);
            prec[sp++] = 3;
        } else if ((op & AC_G_OPMASK) == AC_G_NOT) {
            if (sp < 1)
                return;
            snprintf(tmp, sizeof tmp, prec[sp - 1] < 3 ? "!(%.250s)" : "!%.250s", stack[sp - 1]);
            memcpy(stack[sp - 1], tmp, sizeof tmp);
        } else {
            if (sp < 2)
                return;
            int p = (op & AC_G_OPMASK) == AC_G_AND ? 2 : 1;
            int pl = prec[sp - 2] < p, pr = prec[sp - 1] <= p && prec[sp - 1] != 3;
            snprintf(tmp, sizeof tmp, "%s%.120s%s %s %s%.120s%s", pl ? "(" : "", stack[sp - 2],
                     pl ? ")" : "", p == 2 ? "&&" : "||", pr ? "(" : "", stack[sp - 1],
                     pr ? ")" : "");
            sp--;
            memcpy(stack[sp - 1], tmp, sizeof tmp);
            prec[sp - 1] = p;
        }
    }
    if (sp == 1)
        snprintf(buf, cap, "%s", stack[0]);
}

/* [guard, [actions]] of a row: the part of a step's identity the row holds. */
static json_t *row_identity(const ac_fsm_tables *t, uint16_t row, char *guard, size_t cap)
{
    json_t *acts = json_array();
    guard[0] = 0;
    if (row == AC_FSM_NONE || row >= t->n_transitions)
        return acts;
    const ac_fsm_transition *tr = &t->transitions[row];
    ac_journal_guard_text(t, tr->guard, guard, cap);
    const uint16_t *l = t->lists + tr->actions;
    for (uint16_t i = 1; i <= l[0]; i++)
        json_array_append_new(acts, json_string(t->action_names[l[i]]));
    return acts;
}

json_t *ac_journal_step_json(const ac_fsm_tables *t, const ac_trace_rec *r)
{
    if (r->kind != AC_TRACE_TRANSITION && r->kind != AC_TRACE_INTERNAL)
        return NULL;
    char guard[512];
    json_t *acts = row_identity(t, r->row, guard, sizeof guard);
    return json_pack("[s s s s i s o]", t->machines[r->machine].name,
                     r->from == AC_FSM_NONE ? "" : t->states[r->from].name,
                     r->event ? t->event_names[r->event] : "", t->states[r->to].name, (int)r->line,
                     guard, acts);
}

int ac_journal_step_same(const json_t *a, const json_t *b)
{
    if (!json_is_array(a) || !json_is_array(b))
        return 0;
    for (size_t i = 0; i < 4; i++)
        if (!json_equal(json_array_get(a, i), json_array_get(b, i)))
            return 0;
    for (size_t i = 5; i < 7; i++) { /* guard, actions: absent from version 1 */
        json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        if (x && y && !json_equal(x, y))
            return 0;
    }
    return 1;
}

uint16_t ac_journal_step_row(const ac_fsm_tables *t, const json_t *step)
{
    uint16_t found = AC_FSM_NONE;
    int line = (int)json_integer_value(json_array_get(step, 4));
    for (uint16_t r = 0; r < t->n_transitions; r++) {
        const ac_fsm_transition *row = &t->transitions[r];
        const ac_fsm_state *src = &t->states[row->source];
        ac_trace_rec rec = {row->kind == AC_TR_INTERNAL ? AC_TRACE_INTERNAL : AC_TRACE_TRANSITION,
                            src->machine,
                            row->source,
                            row->target,
                            row->event,
                            row->line,
                            r,
                            NULL};
        json_t *mine = ac_journal_step_json(t, &rec);
        int same = ac_journal_step_same(mine, step);
        json_decref(mine);
        if (!same)
            continue;
        if (json_array_size(step) > 5 || row->line == line)
            return r; /* the identity names one row (version 1: the line decides) */
        if (found == AC_FSM_NONE)
            found = r;
    }
    return found;
}

/* ---- reader ------------------------------------------------------------------ */

struct ac_journal_reader {
    FILE *f;
    char *path;
    ac_buf line; /* the current line, capped at max_line */
    size_t max_line;
    char chunk[65536]; /* read ahead */
    size_t chunk_at, chunk_len;
    int eof;
    int lineno;
    int torn;               /* line number of the torn last line, 0 when none */
    json_t *cur;            /* the line last returned */
    ac_journal_line header; /* its json owned here */
};

/* Reads the next line into r->line, never more than max_line bytes of it: its
 * length (newline excluded), -1 at the end, -2 when it is longer than the limit.
 * *nl tells whether it ended with a newline. */
static long long get_line(ac_journal_reader *r, int *nl)
{
    ac_buf_clear(&r->line);
    *nl = 0;
    for (;;) {
        if (r->chunk_at == r->chunk_len) {
            if (r->eof)
                break;
            r->chunk_len = fread(r->chunk, 1, sizeof r->chunk, r->f);
            r->chunk_at = 0;
            if (r->chunk_len == 0) {
                r->eof = 1;
                break;
            }
        }
        const char *p = r->chunk + r->chunk_at;
        size_t avail = r->chunk_len - r->chunk_at;
        const char *e = memchr(p, '\n', avail);
        size_t take = e ? (size_t)(e - p) : avail;
        if (ac_buf_add(&r->line, p, take) != 0)
            return -2; /* over max_line (or out of memory) */
        r->chunk_at += take + (e ? 1 : 0);
        if (e) {
            *nl = 1;
            break;
        }
    }
    if (r->line.n == 0 && !*nl)
        return -1;
    return (long long)r->line.n;
}

static void classify(json_t *v, int lineno, ac_journal_line *out)
{
    memset(out, 0, sizeof *out);
    out->json = v;
    out->lineno = lineno;
    json_t *x;
    if ((x = json_object_get(v, "agentc_journal"))) {
        out->kind = AC_JOURNAL_HEADER;
        out->version = (int)json_integer_value(x);
        out->spec = json_string_value(json_object_get(v, "spec"));
        out->spec_hash = json_string_value(json_object_get(v, "spec_hash"));
        out->session = json_string_value(json_object_get(v, "session"));
        out->params = json_object_get(v, "params");
    } else if (json_is_string(x = json_object_get(v, "ev"))) {
        out->kind = AC_JOURNAL_EVENT;
        out->event = json_string_value(x);
        out->n = (uint64_t)json_integer_value(json_object_get(v, "n"));
        out->t_ms = json_integer_value(json_object_get(v, "t"));
        out->data = json_object_get(v, "data");
    } else if (json_is_array(x = json_object_get(v, "tr"))) {
        out->kind = AC_JOURNAL_STEPS;
        out->steps = x;
        out->n = (uint64_t)json_integer_value(json_object_get(v, "steps"));
    } else
        out->kind = AC_JOURNAL_OTHER;
}

/* 1 a line, 0 the end (or a torn last line), -1 malformed or too long. */
static int read_line(ac_journal_reader *r, json_t **v, char *err, size_t errcap)
{
    long long n;
    int nl;
    while ((n = get_line(r, &nl)) != -1) {
        r->lineno++;
        if (n == -2) {
            snprintf(err, errcap, "%s:%d: line longer than %zu bytes (the journal's limit)",
                     r->path, r->lineno, r->max_line);
            return -1;
        }
        if (n == 0)
            continue; /* blank line */
        json_error_t jerr;
        *v = json_loadb(r->line.p, (size_t)n, 0, &jerr);
        if (json_is_object(*v))
            return 1;
        json_decref(*v);
        *v = NULL;
        if (!nl) { /* a crash while writing the last line */
            r->torn = r->lineno;
            return 0;
        }
        snprintf(err, errcap, "%s:%d: not a journal line (%s)", r->path, r->lineno,
                 jerr.text[0] ? jerr.text : "not an object");
        return -1;
    }
    return 0;
}

ac_journal_reader *ac_journal_reader_open(const char *path, char *err, size_t errcap)
{
    ac_journal_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    r->max_line = AC_JOURNAL_MAX_LINE;
    ac_buf_init(&r->line, r->max_line);
    r->f = fopen(path, "r");
    if (!r->f) {
        snprintf(err, errcap, "cannot read journal '%s': %s", path, strerror(errno));
        goto fail;
    }
    json_t *v = NULL;
    int rc = read_line(r, &v, err, errcap);
    if (rc < 0)
        goto fail;
    if (rc == 0 || !json_is_integer(json_object_get(v, "agentc_journal"))) {
        json_decref(v);
        snprintf(err, errcap, "%s: not an agentc journal (no header line)", path);
        goto fail;
    }
    classify(v, r->lineno, &r->header);
    if (r->header.version < 1 || r->header.version > AC_JOURNAL_VERSION) {
        snprintf(err, errcap, "%s: journal format version %d (this agentc reads 1 to %d)", path,
                 r->header.version, AC_JOURNAL_VERSION);
        goto fail;
    }
    return r;
fail:
    ac_journal_reader_close(r);
    return NULL;
}

const ac_journal_line *ac_journal_reader_header(const ac_journal_reader *r)
{
    return &r->header;
}

int ac_journal_reader_next(ac_journal_reader *r, ac_journal_line *out, char *err, size_t errcap)
{
    json_decref(r->cur);
    r->cur = NULL;
    json_t *v = NULL;
    int rc = read_line(r, &v, err, errcap);
    if (rc <= 0)
        return rc;
    r->cur = v;
    classify(v, r->lineno, out);
    if (out->kind == AC_JOURNAL_HEADER) {
        snprintf(err, errcap, "%s:%d: a second header line", r->path, r->lineno);
        return -1;
    }
    return 1;
}

int ac_journal_reader_torn(const ac_journal_reader *r)
{
    return r->torn;
}

void ac_journal_reader_set_max_line(ac_journal_reader *r, size_t max_line)
{
    r->max_line = max_line;
    ac_buf_free(&r->line); /* the line read last is of no more use */
    ac_buf_init(&r->line, max_line);
}

void ac_journal_reader_close(ac_journal_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    json_decref(r->cur);
    json_decref(r->header.json);
    ac_buf_free(&r->line);
    free(r->path);
    free(r);
}

const char *ac_journal_path(const ac_journal *j)
{
    return j ? j->path : NULL;
}

size_t ac_journal_name_encode(const char *name, char *buf, size_t cap)
{
    size_t k = 0;
    const char *c = name;
    for (; *c && k + 4 <= cap; c++) {
        unsigned char b = (unsigned char)*c;
        if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') ||
            b == '.' || b == '_' || b == '-')
            buf[k++] = (char)b;
        else
            k += (size_t)snprintf(buf + k, 4, "%%%02X", b);
    }
    if (*c) /* cut: said by a length that fills buf */
        return cap;
    if (k < cap)
        buf[k] = 0;
    return k;
}
