/* The order of a turn's calls; see tool_order.h. Quadratic in the number of
 * calls of one turn, which the model keeps small. */
#include "session/tool_order.h"

#include <stdlib.h>

enum { WAITING, STARTED, SUCCEEDED, FAILED, SKIPPED };

typedef struct edge {
    size_t i;
    int skip;
} edge;

typedef struct call {
    int state;
    size_t because; /* the failed call a skip comes from */
    edge *deps;
    size_t n_deps, cap_deps;
} call;

struct ac_tool_order {
    call *c;
    size_t n;
};

ac_tool_order *ac_tool_order_new(size_t n)
{
    ac_tool_order *o = calloc(1, sizeof *o);
    if (!o || !(o->c = calloc(n ? n : 1, sizeof *o->c))) {
        free(o);
        return NULL;
    }
    o->n = n;
    return o;
}

void ac_tool_order_free(ac_tool_order *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        free(o->c[i].deps);
    free(o->c);
    free(o);
}

int ac_tool_order_after(ac_tool_order *o, size_t j, size_t i, int skip_on_failure)
{
    if (!o || i >= o->n || j >= o->n || i == j)
        return -1;
    call *c = &o->c[j];
    if (c->n_deps == c->cap_deps) {
        size_t cap = c->cap_deps ? c->cap_deps * 2 : 2;
        edge *d = realloc(c->deps, cap * sizeof *d);
        if (!d)
            return -1;
        c->deps = d;
        c->cap_deps = cap;
    }
    c->deps[c->n_deps++] = (edge){i, skip_on_failure};
    return 0;
}

size_t ac_tool_order_next_skipped(ac_tool_order *o, size_t *because)
{
    for (size_t j = 0; o && j < o->n; j++) {
        call *c = &o->c[j];
        if (c->state != WAITING)
            continue;
        for (size_t k = 0; k < c->n_deps; k++) {
            const call *d = &o->c[c->deps[k].i];
            if (!c->deps[k].skip || (d->state != FAILED && d->state != SKIPPED))
                continue;
            c->state = SKIPPED;
            c->because = d->state == SKIPPED ? d->because : c->deps[k].i;
            if (because)
                *because = c->because;
            return j;
        }
    }
    return AC_ORDER_NONE;
}

size_t ac_tool_order_next_ready(ac_tool_order *o)
{
    for (size_t j = 0; o && j < o->n; j++) {
        call *c = &o->c[j];
        if (c->state != WAITING)
            continue;
        int ready = 1;
        for (size_t k = 0; k < c->n_deps && ready; k++) {
            int s = o->c[c->deps[k].i].state;
            ready = s == SUCCEEDED || ((s == FAILED || s == SKIPPED) && !c->deps[k].skip);
        }
        if (ready) {
            c->state = STARTED;
            return j;
        }
    }
    return AC_ORDER_NONE;
}

void ac_tool_order_done(ac_tool_order *o, size_t i, int ok)
{
    if (!o || i >= o->n || o->c[i].state == SKIPPED)
        return;
    o->c[i].state = ok ? SUCCEEDED : FAILED;
}
