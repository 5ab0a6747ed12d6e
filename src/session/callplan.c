/*
 * callplan.c - the dependency scheduler of a turn's calls (callplan.h).
 * Cycles are strongly connected components (Tarjan) of more than one call;
 * the cycle reported for a call is the shortest way back to it inside its
 * component.
 */
#include "session/callplan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

typedef struct wait_edge {
    size_t on;
    int skip;
} wait_edge;

typedef struct cp_call {
    wait_edge *w;
    size_t nw, capw;
    int state; /* 0 waiting, 1 started, 2 ok, 3 failed */
} cp_call;

struct ac_callplan {
    size_t n;
    cp_call *c;
};

ac_callplan *ac_callplan_new(size_t n)
{
    ac_callplan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n;
    p->c = calloc(n ? n : 1, sizeof *p->c);
    if (!p->c) {
        free(p);
        return NULL;
    }
    return p;
}

void ac_callplan_free(ac_callplan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->c[i].w);
    free(p->c);
    free(p);
}

int ac_callplan_waits(const ac_callplan *p, size_t j, size_t i)
{
    if (!p || j >= p->n)
        return 0;
    for (size_t k = 0; k < p->c[j].nw; k++)
        if (p->c[j].w[k].on == i)
            return 1;
    return 0;
}

int ac_callplan_wait(ac_callplan *p, size_t j, size_t i, int skip_if_failed)
{
    if (!p || j >= p->n || i >= p->n)
        return -1;
    if (i == j)
        return 0;
    cp_call *c = &p->c[j];
    for (size_t k = 0; k < c->nw; k++)
        if (c->w[k].on == i) {
            c->w[k].skip |= skip_if_failed != 0;
            return 0;
        }
    if (ac_grow((void **)&c->w, &c->capw, c->nw + 1, sizeof *c->w))
        return -1;
    c->w[c->nw].on = i;
    c->w[c->nw].skip = skip_if_failed != 0;
    c->nw++;
    return 0;
}

/* Tarjan's algorithm, iteratively (a turn may hold many calls). */
typedef struct tarjan {
    size_t *index, *low, *stack, *comp, *it;
    unsigned char *on;
    size_t sp, next, ncomp;
} tarjan;

static void strongconnect(const ac_callplan *p, tarjan *t, size_t v0, size_t *call_stack)
{
    size_t csp = 0;
    call_stack[csp++] = v0;
    t->index[v0] = t->low[v0] = ++t->next;
    t->stack[t->sp++] = v0;
    t->on[v0] = 1;
    t->it[v0] = 0;
    while (csp) {
        size_t v = call_stack[csp - 1];
        if (t->it[v] < p->c[v].nw) {
            size_t w = p->c[v].w[t->it[v]++].on;
            if (!t->index[w]) {
                t->index[w] = t->low[w] = ++t->next;
                t->stack[t->sp++] = w;
                t->on[w] = 1;
                t->it[w] = 0;
                call_stack[csp++] = w;
            } else if (t->on[w] && t->index[w] < t->low[v])
                t->low[v] = t->index[w];
            continue;
        }
        if (t->low[v] == t->index[v]) {
            size_t w;
            do {
                w = t->stack[--t->sp];
                t->on[w] = 0;
                t->comp[w] = t->ncomp;
            } while (w != v);
            t->ncomp++;
        }
        csp--;
        if (csp) {
            size_t u = call_stack[csp - 1];
            if (t->low[v] < t->low[u])
                t->low[u] = t->low[v];
        }
    }
}

size_t ac_callplan_check(ac_callplan *p,
                         void (*on_cycle)(void *ud, size_t call, const size_t *cycle, size_t len),
                         void *ud)
{
    if (!p || p->n == 0)
        return 0;
    size_t n = p->n;
    tarjan t;
    memset(&t, 0, sizeof t);
    t.index = calloc(n, sizeof *t.index);
    t.low = calloc(n, sizeof *t.low);
    t.stack = calloc(n, sizeof *t.stack);
    t.comp = calloc(n, sizeof *t.comp);
    t.it = calloc(n, sizeof *t.it);
    t.on = calloc(n, 1);
    size_t *cs = calloc(n, sizeof *cs), *size = calloc(n, sizeof *size);
    size_t *parent = calloc(n, sizeof *parent), *queue = calloc(n, sizeof *queue);
    size_t *cycle = calloc(n + 1, sizeof *cycle);
    size_t reported = 0;
    if (!t.index || !t.low || !t.stack || !t.comp || !t.it || !t.on || !cs || !size || !parent ||
        !queue || !cycle)
        goto out;
    for (size_t v = 0; v < n; v++)
        if (!t.index[v])
            strongconnect(p, &t, v, cs);
    for (size_t v = 0; v < n; v++)
        size[t.comp[v]]++;
    for (size_t v = 0; v < n; v++) {
        if (size[t.comp[v]] < 2)
            continue;
        /* shortest way from v back to v inside its component (breadth first) */
        for (size_t k = 0; k < n; k++)
            parent[k] = SIZE_MAX;
        size_t qh = 0, qt = 0, found = SIZE_MAX;
        queue[qt++] = v;
        while (qh < qt && found == SIZE_MAX) {
            size_t u = queue[qh++];
            for (size_t k = 0; k < p->c[u].nw; k++) {
                size_t w = p->c[u].w[k].on;
                if (t.comp[w] != t.comp[v])
                    continue;
                if (w == v) {
                    found = u;
                    break;
                }
                if (parent[w] == SIZE_MAX) {
                    parent[w] = u;
                    queue[qt++] = w;
                }
            }
        }
        size_t len = 0;
        if (found != SIZE_MAX) {
            /* v waits for ... waits for found waits for v: walk back from found */
            size_t *back = queue; /* the search is over: its queue is reused */
            size_t nb = 0;
            for (size_t u = found; u != v && nb < n; u = parent[u])
                back[nb++] = u;
            cycle[len++] = v;
            while (nb)
                cycle[len++] = back[--nb];
        }
        if (on_cycle)
            on_cycle(ud, v, cycle, len);
        reported++;
    }
    /* calls on a cycle wait for nothing: they fail when they start */
    for (size_t v = 0; v < n; v++)
        if (size[t.comp[v]] >= 2)
            p->c[v].nw = 0;
out:
    free(t.index);
    free(t.low);
    free(t.stack);
    free(t.comp);
    free(t.it);
    free(t.on);
    free(cs);
    free(size);
    free(parent);
    free(queue);
    free(cycle);
    return reported;
}

long ac_callplan_next(ac_callplan *p, size_t *failed_dep)
{
    *failed_dep = (size_t)-1;
    if (!p)
        return -1;
    for (size_t j = 0; j < p->n; j++) {
        cp_call *c = &p->c[j];
        if (c->state != 0)
            continue;
        int ready = 1;
        size_t failed = (size_t)-1;
        for (size_t k = 0; k < c->nw && ready; k++) {
            int st = p->c[c->w[k].on].state;
            if (st < 2)
                ready = 0;
            else if (st == 3 && c->w[k].skip && failed == (size_t)-1)
                failed = c->w[k].on;
        }
        if (!ready)
            continue;
        c->state = 1;
        *failed_dep = failed;
        return (long)j;
    }
    return -1;
}

void ac_callplan_done(ac_callplan *p, size_t i, int ok)
{
    if (p && i < p->n)
        p->c[i].state = ok ? 2 : 3;
}
