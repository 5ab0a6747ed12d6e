/* buf.c - the growable string buffer with a cap (buf.h). */
#include "util/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ac_buf_init(ac_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

int ac_buf_reserve(ac_buf *b, size_t more)
{
    if (b->failed)
        return -1;
    if (more > b->max - b->n) {
        b->failed = 1;
        return -1;
    }
    if (b->n + more < b->cap)
        return 0;
    size_t need = b->n + more + 1, cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (b->max < SIZE_MAX && cap > b->max + 1)
        cap = b->max + 1; /* need <= max + 1 here */
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void ac_buf_commit(ac_buf *b, size_t len)
{
    b->n += len;
    b->p[b->n] = 0;
}

int ac_buf_add(ac_buf *b, const void *s, size_t len)
{
    if (ac_buf_reserve(b, len) != 0)
        return -1;
    if (len)
        memcpy(b->p + b->n, s, len);
    ac_buf_commit(b, len);
    return 0;
}

int ac_buf_addstr(ac_buf *b, const char *s)
{
    return ac_buf_add(b, s, strlen(s));
}

int ac_buf_printf(ac_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
        b->failed = 1;
        return -1;
    }
    if (ac_buf_reserve(b, (size_t)w) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)w + 1, fmt, ap);
    va_end(ap);
    ac_buf_commit(b, (size_t)w);
    return 0;
}

void ac_buf_fail(ac_buf *b)
{
    b->failed = 1;
}

char *ac_buf_take(ac_buf *b, size_t *len)
{
    char *p = b->failed ? NULL : b->p ? b->p : calloc(1, 1);
    if (len)
        *len = p ? b->n : 0;
    if (!p)
        free(b->p);
    ac_buf_init(b, b->max);
    return p;
}

void ac_buf_clear(ac_buf *b)
{
    b->n = 0;
    b->failed = 0;
    if (b->p)
        b->p[0] = 0;
}

void ac_buf_free(ac_buf *b)
{
    free(b->p);
    ac_buf_init(b, b->max);
}
