/*
 * store_inbox.c - the inbox's statements (store_notify.h), on the wake-up connection: none
 * waits for the server. The table (store_pg.c's schema, version 2):
 *   inbox(id, session, holder, owner, method, route, body, state, status, reply, created_ms)
 * state: pending (put), taken (by its holder), done (answered). A row's sender deletes it when
 * it reads the answer or withdraws it; rows older than a minute (their sender gone) are
 * deleted by a sweep.
 */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_notify.h"

#define NOW "(extract(epoch from clock_timestamp()) * 1000)::bigint"

typedef struct call {
    ac_notify *nt;
    ac_inbox_id_fn id_fn;
    ac_inbox_answer_fn answer_fn;
    ac_inbox_take_fn take_fn;
    void *ud;
    char holder[128];
} call;

static call *call_new(ac_notify *nt, void *ud)
{
    call *c = calloc(1, sizeof *c);
    if (c) {
        c->nt = nt;
        c->ud = ud;
    }
    return c;
}

static int query(call *c, const char *sql, int n, const char *const *vals, ac_notify_query_fn fn)
{
    if (!c)
        return -1;
    if (ac_notify_query(c->nt, sql, n, vals, 0, fn, c) != 0) {
        free(c);
        return -1;
    }
    return 0;
}

static void on_put(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    int64_t id = r && PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    if (id)
        ac_notify_send(c->nt, 'i', c->holder, NULL);
    c->id_fn(c->ud, id, id ? NULL : error ? error : "no row");
    free(c);
}

int ac_inbox_put(ac_notify *nt, const ac_inbox_msg *m, const char *holder, ac_inbox_id_fn fn,
                 void *ud)
{
    call *c = call_new(nt, ud);
    if (c) {
        c->id_fn = fn;
        snprintf(c->holder, sizeof c->holder, "%s", holder);
    }
    const char *v[6] = {m->session, holder, m->owner, m->method, m->route, m->body};
    return query(c,
                 "INSERT INTO inbox(session, holder, owner, method, route, body, created_ms) "
                 "VALUES($1, $2, $3, $4, $5, $6, " NOW ") RETURNING id",
                 6, v, on_put);
}

/* The holder's HTTP status as the row stores it (0: it does not run the session; 500 when the
 * row holds neither). */
static int http_status(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    return end != v && !*end && (n == 0 || (n >= 100 && n <= 599)) ? (int)n : 500;
}

/* A poll's or a withdrawal's rows: (status, reply) of an answer read, or (withdrawn). */
static void on_answer(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    (void)error;
    if (!r)
        c->answer_fn(c->ud, AC_INBOX_FAILED, 0, NULL);
    else if (PQntuples(r) && PQnfields(r) == 2)
        c->answer_fn(c->ud, AC_INBOX_DONE, http_status(PQgetvalue(r, 0, 0)), PQgetvalue(r, 0, 1));
    else if (PQntuples(r))
        c->answer_fn(c->ud, AC_INBOX_WITHDRAWN, 0, NULL);
    else
        c->answer_fn(c->ud, PQnfields(r) == 2 ? AC_INBOX_PENDING : AC_INBOX_TAKEN, 0, NULL);
    free(c);
}

int ac_inbox_poll(ac_notify *nt, int64_t id, ac_inbox_answer_fn fn, void *ud)
{
    call *c = call_new(nt, ud);
    if (c)
        c->answer_fn = fn;
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)id);
    const char *v[1] = {num};
    return query(c,
                 "DELETE FROM inbox WHERE id = $1 AND state = 'done' RETURNING status, "
                 "coalesce(reply, '')",
                 1, v, on_answer);
}

int ac_inbox_withdraw(ac_notify *nt, int64_t id, ac_inbox_answer_fn fn, void *ud)
{
    call *c = call_new(nt, ud);
    if (c)
        c->answer_fn = fn;
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)id);
    const char *v[1] = {num};
    return query(c, "DELETE FROM inbox WHERE id = $1 AND state = 'pending' RETURNING id", 1, v,
                 on_answer);
}

static void on_take(void *ud, const PGresult *r, const char *error)
{
    call *c = ud;
    (void)error;
    for (int i = 0; r && i < PQntuples(r); i++) {
        ac_inbox_msg m = {strtoll(PQgetvalue(r, i, 0), NULL, 10),
                          PQgetvalue(r, i, 1),
                          PQgetvalue(r, i, 2),
                          PQgetvalue(r, i, 3),
                          PQgetvalue(r, i, 4),
                          PQgetvalue(r, i, 5)};
        c->take_fn(c->ud, &m);
    }
    c->take_fn(c->ud, NULL);
    free(c);
}

static void ignored(void *ud, const PGresult *r, const char *error)
{
    (void)ud, (void)r, (void)error;
}

int ac_inbox_take(ac_notify *nt, const char *holder, ac_inbox_take_fn fn, void *ud)
{
    call *c = call_new(nt, ud);
    if (c)
        c->take_fn = fn;
    const char *v[1] = {holder};
    return query(c,
                 "WITH t AS (UPDATE inbox SET state = 'taken' WHERE id IN (SELECT id FROM inbox "
                 "WHERE holder = $1 AND state = 'pending' ORDER BY id LIMIT 64 "
                 "FOR UPDATE SKIP LOCKED) RETURNING id, session, owner, method, route, body) "
                 "SELECT * FROM t ORDER BY id",
                 1, v, on_take);
}

int ac_inbox_sweep(ac_notify *nt)
{
    return ac_notify_query(nt, "DELETE FROM inbox WHERE created_ms < " NOW " - 60000", 0, NULL, 0,
                           ignored, NULL);
}

int ac_inbox_answer(ac_notify *nt, int64_t id, int status, const char *reply)
{
    char num[24], st[16];
    snprintf(num, sizeof num, "%lld", (long long)id);
    snprintf(st, sizeof st, "%d", status);
    const char *v[3] = {num, st, reply};
    if (ac_notify_query(nt,
                        "UPDATE inbox SET state = 'done', status = $2, reply = $3 WHERE id = $1", 3,
                        v, 0, ignored, NULL) != 0)
        return -1;
    ac_notify_send(nt, 'r', num, NULL);
    return 0;
}
