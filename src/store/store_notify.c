/*
 * store_notify.c - the connection of a process's wake-ups (store_notify.h): connected in the
 * background (PQconnectStartParams, PQconnectPoll on the loop, within CONNECT_MS), then
 * LISTEN; statements queued and sent one at a time (PQsendQueryParams, PQflush while the
 * socket takes more), their results and the notifications read when the socket is readable
 * (PQconsumeInput, PQgetResult while not busy, PQnotifies). Nothing here waits for the
 * server. A lost connection fails the statement in flight and those of its transaction, then
 * is made again after a backoff (100 ms, doubled to at most 5 s).
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/loop.h"
#include "obs/metrics_int.h"
#include "store_int.h"
#include "store_notify.h"
#include "util/buf.h"

#define CONNECT_MS 10000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define PAYLOAD_MAX 7900 /* PostgreSQL's limit is 8000 bytes */
#define LINES_MAX 4096   /* lines waiting for the next interval (more: dropped, polled) */

typedef struct query {
    struct query *next;
    char *sql;
    char **vals;
    int n;
    int tx;    /* part of a transaction: failed, not sent again, when the connection is lost */
    int again; /* a read: sent again on the next connection when its connection is lost */
    ac_notify_query_fn fn;
    void *ud;
} query;

typedef struct line {
    char kind;
    char *a, *b;
} line;

enum { NT_DOWN, NT_CONNECTING, NT_UP };

struct ac_notify {
    ac_loop *loop;
    ac_notify_fn fn;
    void *ud;
    char *conninfo;
    char channel[80];
    char search_path[100], listen[100]; /* the statements of a new connection */
    PGconn *conn;
    int state;
    int listening; /* LISTEN done on this connection */
    int was_up;
    int fd;
    uint64_t watch, retry_timer, connect_timer, flush_timer;
    int64_t backoff_ms;
    query *head, **tail; /* waiting */
    query **next_at;     /* where a "next" statement goes */
    query *inflight;
    PGresult *result; /* the in-flight statement's last result */
    line *lines;
    size_t n_lines, cap_lines;
    int flushing;
    int64_t last_flush_ms;
    uint64_t batches, lines_queued;
    ac_metrics *metrics; /* NULL: none */
};

static void count(ac_notify *nt, int metric, const char *label, double v)
{
    const char *l[1] = {label};
    ac_metrics_add(nt->metrics, metric, l, v);
}

static void start_connect(void *ud);
static void send_next(ac_notify *nt);
static void on_fd(void *ud, int fd, int revents);

static void query_free(query *q)
{
    for (int i = 0; i < q->n; i++)
        free(q->vals[i]);
    free(q->vals);
    free(q->sql);
    free(q);
}

static void tell(query *q, const PGresult *r, const char *error)
{
    if (q->fn)
        q->fn(q->ud, r, error);
}

static void set_watch(ac_notify *nt, int events)
{
    int fd = nt->conn ? PQsocket(nt->conn) : -1;
    if (nt->watch && fd == nt->fd) {
        ac_loop_watch_events(nt->loop, nt->watch, events);
        return;
    }
    if (nt->watch)
        ac_loop_unwatch(nt->loop, nt->watch);
    nt->watch = 0;
    nt->fd = fd;
    if (fd >= 0)
        nt->watch = ac_loop_watch_fd(nt->loop, fd, events, on_fd, nt);
}

/* The connection is gone: the statement in flight and the queued ones of its transaction
 * fail; the others wait for the next connection, made after the backoff. */
static void lost(ac_notify *nt)
{
    char why[300];
    snprintf(why, sizeof why, "the wake-up connection failed: %s",
             nt->conn ? PQerrorMessage(nt->conn) : "");
    for (char *p = why; *p; p++)
        if (*p == '\n')
            *p = ' ';
    if (nt->watch)
        ac_loop_unwatch(nt->loop, nt->watch);
    nt->watch = 0;
    ac_loop_cancel_timer(nt->loop, nt->connect_timer);
    nt->connect_timer = 0;
    PQfinish(nt->conn);
    nt->conn = NULL;
    nt->state = NT_DOWN;
    nt->listening = 0;
    nt->flushing = 0;
    PQclear(nt->result);
    nt->result = NULL;
    query *q = nt->inflight;
    nt->inflight = NULL;
    if (q && q->again && !q->tx) { /* first again on the next connection */
        q->again = 0;
        q->next = nt->head;
        nt->head = q;
    } else if (q) {
        tell(q, NULL, why);
        query_free(q);
    }
    for (query **pp = &nt->head; *pp;) {
        query *t = *pp;
        if (!t->tx) {
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        tell(t, NULL, why);
        query_free(t);
    }
    nt->tail = &nt->head;
    while (*nt->tail)
        nt->tail = &(*nt->tail)->next;
    nt->next_at = &nt->head;
    if (nt->backoff_ms == BACKOFF_MIN_MS && nt->fn) /* the outage's first failure */
        nt->fn(nt->ud, '!', why, "");
    nt->retry_timer = ac_loop_timer(nt->loop, nt->backoff_ms, start_connect, nt);
    nt->backoff_ms = nt->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : nt->backoff_ms * 2;
}

static void on_connect_timeout(void *ud)
{
    ac_notify *nt = ud;
    nt->connect_timer = 0;
    if (nt->state == NT_CONNECTING)
        lost(nt);
}

static void quiet(void *ud, const char *msg)
{
    (void)ud, (void)msg;
}

static void start_connect(void *ud)
{
    ac_notify *nt = ud;
    nt->retry_timer = 0;
    /* the default before the URI: its own application_name wins */
    const char *keys[] = {"application_name", "dbname", NULL};
    const char *vals[] = {"agentc-listen", nt->conninfo, NULL};
    nt->conn = PQconnectStartParams(keys, vals, 1);
    if (!nt->conn || PQstatus(nt->conn) == CONNECTION_BAD) {
        lost(nt);
        return;
    }
    PQsetNoticeProcessor(nt->conn, quiet, NULL);
    nt->state = NT_CONNECTING;
    nt->connect_timer = ac_loop_timer(nt->loop, CONNECT_MS, on_connect_timeout, nt);
    set_watch(nt, AC_LOOP_WRITE);
}

/* LISTEN done: from now on nothing sent on the channel is missed. */
static void on_listen(void *ud, const PGresult *r, const char *error)
{
    ac_notify *nt = ud;
    (void)error;
    nt->listening = r != NULL;
    if (nt->listening && nt->was_up && nt->fn) /* what was sent while it was down is lost */
        nt->fn(nt->ud, '*', "", "");
    nt->was_up |= nt->listening;
}

static void connected(ac_notify *nt)
{
    ac_loop_cancel_timer(nt->loop, nt->connect_timer);
    nt->connect_timer = 0;
    if (PQsetnonblocking(nt->conn, 1) != 0) {
        lost(nt);
        return;
    }
    nt->state = NT_UP;
    nt->backoff_ms = BACKOFF_MIN_MS;
    nt->next_at = &nt->head;
    set_watch(nt, AC_LOOP_READ);
    ac_notify_query(nt, nt->search_path, 0, NULL, 1, NULL, NULL);
    ac_notify_query(nt, "SET statement_timeout = 30000", 0, NULL, 1, NULL, NULL); /* bounded */
    ac_notify_query(nt, nt->listen, 0, NULL, 1, on_listen, nt);
    send_next(nt);
}

static void connecting(ac_notify *nt)
{
    switch (PQconnectPoll(nt->conn)) {
    case PGRES_POLLING_READING:
        set_watch(nt, AC_LOOP_READ);
        break;
    case PGRES_POLLING_WRITING:
        set_watch(nt, AC_LOOP_WRITE);
        break;
    case PGRES_POLLING_OK:
        connected(nt);
        break;
    default:
        lost(nt);
        break;
    }
}

static void flush_out(ac_notify *nt)
{
    int f = PQflush(nt->conn);
    if (f < 0)
        lost(nt);
    else
        set_watch(nt, f ? AC_LOOP_READ | AC_LOOP_WRITE : AC_LOOP_READ);
}

static void send_next(ac_notify *nt)
{
    if (nt->state != NT_UP || nt->inflight || !nt->head)
        return;
    query *q = nt->head;
    nt->head = q->next;
    if (!nt->head)
        nt->tail = &nt->head;
    if (nt->next_at == &q->next)
        nt->next_at = &nt->head;
    q->next = NULL;
    nt->inflight = q;
    if (!PQsendQueryParams(nt->conn, q->sql, q->n, NULL, (const char *const *)q->vals, NULL, NULL,
                           0)) {
        lost(nt);
        return;
    }
    flush_out(nt);
}

/* "K A" or "e SESSION N" lines of a payload to the callback (A may hold spaces: a holder's
 * name). */
static void deliver(ac_notify *nt, char *payload)
{
    for (char *p = payload; p && *p;) {
        char *end = strchr(p, '\n');
        if (end)
            *end = 0;
        char *b = p[0] == 'e' && p[1] == ' ' ? strrchr(p + 2, ' ') : NULL;
        if (b)
            *b++ = 0;
        if (p[0] && p[1] == ' ' && nt->fn)
            nt->fn(nt->ud, p[0], p + 2, b ? b : "");
        p = end ? end + 1 : NULL;
    }
}

/* A statement's end (its last result kept): told, then the next sent. */
static void finished(ac_notify *nt)
{
    query *q = nt->inflight;
    PGresult *r = nt->result;
    nt->inflight = NULL;
    nt->result = NULL;
    nt->next_at = &nt->head; /* the "next" ones of this result's callback go first */
    ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    int ok = t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK;
    char why[300];
    snprintf(why, sizeof why, "%s", r ? PQresultErrorMessage(r) : "no result");
    if (q) {
        tell(q, ok ? r : NULL, ok ? NULL : why);
        query_free(q);
    }
    PQclear(r);
    nt->next_at = &nt->head;
    send_next(nt);
}

static void read_input(ac_notify *nt)
{
    if (!PQconsumeInput(nt->conn)) {
        lost(nt);
        return;
    }
    while (nt->conn && nt->inflight && !PQisBusy(nt->conn)) {
        PGresult *r = PQgetResult(nt->conn);
        if (!r) {
            finished(nt);
            continue;
        }
        PQclear(nt->result);
        nt->result = r;
    }
    PGnotify *n;
    while (nt->conn && (n = PQnotifies(nt->conn))) {
        if (n->be_pid != PQbackendPID(nt->conn)) { /* our own come back too: not news */
            count(nt, AC_M_STORE_NOTIFICATIONS, "received", 1);
            deliver(nt, n->extra);
        }
        PQfreemem(n);
    }
    if (nt->conn && PQstatus(nt->conn) == CONNECTION_BAD)
        lost(nt);
}

static void on_fd(void *ud, int fd, int revents)
{
    ac_notify *nt = ud;
    (void)fd;
    if (nt->state == NT_CONNECTING) {
        connecting(nt);
        return;
    }
    if (nt->state != NT_UP)
        return;
    if (revents & AC_LOOP_WRITE)
        flush_out(nt);
    if (nt->state == NT_UP && (revents & (AC_LOOP_READ | AC_LOOP_ERROR)))
        read_input(nt);
}

int ac_notify_query(ac_notify *nt, const char *sql, int n, const char *const *vals, int next,
                    ac_notify_query_fn fn, void *ud)
{
    query *q = calloc(1, sizeof *q);
    int bad =
        !q || !(q->sql = strdup(sql)) || (n && !(q->vals = calloc((size_t)n, sizeof *q->vals)));
    for (int i = 0; !bad && i < n; i++, q->n++)
        bad = vals[i] && !(q->vals[i] = strdup(vals[i]));
    if (bad) {
        if (q)
            query_free(q);
        return -1;
    }
    q->tx = (next & AC_NOTIFY_NEXT) != 0;
    q->again = (next & AC_NOTIFY_AGAIN) != 0;
    next = q->tx;
    q->fn = fn;
    q->ud = ud;
    if (next) {
        q->next = *nt->next_at;
        *nt->next_at = q;
        nt->next_at = &q->next;
        if (!q->next)
            nt->tail = &q->next;
    } else {
        *nt->tail = q;
        nt->tail = &q->next;
    }
    send_next(nt);
    return 0;
}

/* ---- notifications: lines of an interval, one statement ---- */

/* An array literal's element "v" (" and \ escaped) appended to b. */
static void element(ac_buf *b, const char *v, size_t n)
{
    ac_buf_add(b, b->n > 1 ? ",\"" : "\"", b->n > 1 ? 2 : 1);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"' || v[i] == '\\')
            ac_buf_add(b, "\\", 1);
        ac_buf_add(b, &v[i], 1);
    }
    ac_buf_add(b, "\"", 1);
}

static void flushed(void *ud, const PGresult *r, const char *error)
{
    ac_notify *nt = ud;
    (void)r, (void)error; /* a failed one is lost: the readers' poll finds what it told */
    nt->flushing = 0;
}

static void lines_clear(ac_notify *nt)
{
    for (size_t i = 0; i < nt->n_lines; i++) {
        free(nt->lines[i].a);
        free(nt->lines[i].b);
    }
    nt->n_lines = 0;
}

static void on_flush(void *ud);

static void arm_flush(ac_notify *nt)
{
    if (nt->flush_timer || !nt->n_lines)
        return;
    int64_t wait = nt->last_flush_ms + AC_NOTIFY_INTERVAL_MS - ac_loop_now_ms(nt->loop);
    nt->flush_timer = ac_loop_timer(nt->loop, wait, on_flush, nt);
}

/* The lines queued, as payloads of at most PAYLOAD_MAX bytes, in one statement. */
static void on_flush(void *ud)
{
    ac_notify *nt = ud;
    nt->flush_timer = 0;
    if (nt->state != NT_UP || nt->flushing) { /* the last one is still on its way */
        nt->last_flush_ms = ac_loop_now_ms(nt->loop);
        arm_flush(nt);
        return;
    }
    ac_buf arr, pay;
    ac_buf_init(&arr, AC_BUF_MAX);
    ac_buf_init(&pay, PAYLOAD_MAX + 1024);
    ac_buf_add(&arr, "{", 1);
    for (size_t i = 0; i < nt->n_lines; i++) {
        line *l = &nt->lines[i];
        size_t len = 3 + strlen(l->a) + (l->b ? 1 + strlen(l->b) : 0);
        if (pay.n && pay.n + 1 + len > PAYLOAD_MAX) {
            element(&arr, pay.p, pay.n);
            ac_buf_clear(&pay);
        }
        ac_buf_printf(&pay, "%s%c %s%s%s", pay.n ? "\n" : "", l->kind, l->a, l->b ? " " : "",
                      l->b ? l->b : "");
    }
    if (pay.n)
        element(&arr, pay.p, pay.n);
    ac_buf_add(&arr, "}", 1);
    size_t n_lines = nt->n_lines;
    lines_clear(nt);
    const char *vals[2] = {nt->channel, arr.p};
    if (arr.p && ac_notify_query(nt, "SELECT pg_notify($1, p) FROM unnest($2::text[]) p", 2, vals,
                                 0, flushed, nt) == 0) {
        nt->flushing = 1;
        nt->batches++;
        count(nt, AC_M_STORE_NOTIFICATIONS, "sent", 1);
        count(nt, AC_M_STORE_NOTIFY_LINES, "sent", (double)n_lines);
    }
    nt->last_flush_ms = ac_loop_now_ms(nt->loop);
    ac_buf_free(&arr);
    ac_buf_free(&pay);
}

void ac_notify_send(ac_notify *nt, char kind, const char *a, const char *b)
{
    if (!nt)
        return;
    nt->lines_queued++;
    for (size_t i = 0; i < nt->n_lines; i++) {
        line *l = &nt->lines[i];
        if (l->kind == kind && !strcmp(l->a, a)) { /* once: a session's with its last event */
            count(nt, AC_M_STORE_NOTIFY_LINES, "coalesced", 1);
            if (kind == 'e' && b && (!l->b || strtoull(b, NULL, 10) > strtoull(l->b, NULL, 10))) {
                char *v = strdup(b);
                if (v) {
                    free(l->b);
                    l->b = v;
                }
            }
            return;
        }
    }
    if (nt->n_lines == nt->cap_lines) {
        size_t cap = nt->cap_lines ? nt->cap_lines * 2 : 16;
        line *g = cap <= LINES_MAX ? realloc(nt->lines, cap * sizeof *g) : NULL;
        if (!g)
            return; /* dropped: the readers' poll finds it */
        nt->lines = g;
        nt->cap_lines = cap;
    }
    line *l = &nt->lines[nt->n_lines];
    l->kind = kind;
    l->a = strdup(a);
    l->b = b ? strdup(b) : NULL;
    if (!l->a || (b && !l->b)) {
        free(l->a);
        free(l->b);
        return;
    }
    nt->n_lines++;
    arm_flush(nt);
}

uint64_t ac_notify_batches(const ac_notify *nt, uint64_t *lines)
{
    if (lines)
        *lines = nt ? nt->lines_queued : 0;
    return nt ? nt->batches : 0;
}

void ac_notify_set_metrics(ac_notify *nt, ac_metrics *m)
{
    if (nt)
        nt->metrics = m;
}

int ac_notify_ready(const ac_notify *nt)
{
    return nt && nt->state == NT_UP && nt->listening;
}

ac_notify *ac_notify_open(ac_loop *loop, const char *uri, ac_notify_fn fn, void *ud, ac_error *err)
{
    ac_notify *nt = calloc(1, sizeof *nt);
    if (!nt) {
        ac_store_err(err, AC_ENOMEM, "out of memory");
        return NULL;
    }
    char schema[64];
    if (ac_store_pg_split_uri(uri, &nt->conninfo, schema, sizeof schema, err) != AC_OK) {
        free(nt);
        return NULL;
    }
    nt->loop = loop;
    nt->fn = fn;
    nt->ud = ud;
    nt->fd = -1;
    nt->tail = nt->next_at = &nt->head;
    nt->backoff_ms = BACKOFF_MIN_MS;
    snprintf(nt->channel, sizeof nt->channel, "agentc_%s", schema);
    snprintf(nt->search_path, sizeof nt->search_path, "SET search_path TO \"%s\"", schema);
    snprintf(nt->listen, sizeof nt->listen, "LISTEN %s", nt->channel);
    start_connect(nt);
    return nt;
}

void ac_notify_free(ac_notify *nt)
{
    if (!nt)
        return;
    if (nt->watch)
        ac_loop_unwatch(nt->loop, nt->watch);
    ac_loop_cancel_timer(nt->loop, nt->retry_timer);
    ac_loop_cancel_timer(nt->loop, nt->connect_timer);
    ac_loop_cancel_timer(nt->loop, nt->flush_timer);
    PQfinish(nt->conn);
    PQclear(nt->result);
    if (nt->inflight) {
        tell(nt->inflight, NULL, "closing");
        query_free(nt->inflight);
    }
    while (nt->head) {
        query *q = nt->head;
        nt->head = q->next;
        tell(q, NULL, "closing");
        query_free(q);
    }
    lines_clear(nt);
    free(nt->lines);
    free(nt->conninfo);
    free(nt);
}
