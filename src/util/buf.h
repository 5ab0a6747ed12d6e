/* buf.h - a growable string buffer with a cap, the one buffer type of the tree.
 *
 * Like curl's dynbuf, a buffer takes its maximum size when it is set up, so
 * text fed by a peer or a tool cannot grow it without bound. After the first
 * append p is NUL-terminated (p[n] == 0); before it p is NULL. Once an append
 * fails (out of memory, or the cap would be passed) the buffer is marked
 * failed: later appends do nothing and return -1, and what it holds is kept
 * (the caller decides whether a cut text is of use).
 *
 *   ac_buf b;
 *   ac_buf_init(&b, AC_BUF_MAX);
 *   ac_buf_printf(&b, "%d items", n);
 *   char *s = ac_buf_take(&b); // owned by the caller; NULL if the buffer failed
 */
#ifndef AGENTC_UTIL_BUF_H
#define AGENTC_UTIL_BUF_H

#include <stddef.h>

/* The cap of buffers that hold whole documents (a result, a request body). */
#define AC_BUF_MAX ((size_t)1 << 30)

typedef struct ac_buf {
    char *p;    /* the text, NUL-terminated; NULL until something is added */
    size_t n;   /* bytes before the terminator */
    size_t cap; /* bytes allocated at p */
    size_t max; /* the most n may reach */
    int failed; /* an append failed: out of memory, over max, or ac_buf_fail */
} ac_buf;

/* An empty buffer that may hold up to max bytes (the terminator not counted). */
void ac_buf_init(ac_buf *b, size_t max);

/* Room for more bytes after p[n] (and the terminator): afterwards the caller
 * may write up to more bytes at p + n and then call ac_buf_commit. 0, or -1
 * (the buffer is then failed). */
int ac_buf_reserve(ac_buf *b, size_t more);

/* Counts len bytes written at p + n after ac_buf_reserve(b, len or more), and
 * terminates the text. */
void ac_buf_commit(ac_buf *b, size_t len);

/* Appends s[0..len); s may be NULL when len is 0. 0, or -1. */
int ac_buf_add(ac_buf *b, const void *s, size_t len);

/* Appends the C string s. 0, or -1. */
int ac_buf_addstr(ac_buf *b, const char *s);

/* Appends printf-formatted text. 0, or -1 (a format error fails the buffer). */
int ac_buf_printf(ac_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Marks the buffer failed (a caller's own reason to give up on it). */
void ac_buf_fail(ac_buf *b);

/* The text, handed to the caller (free it), and the buffer emptied; "" (a
 * new allocation) when nothing was added; NULL if the buffer failed or
 * memory ran out (the text is then freed). *len gets its length when len is
 * not NULL. */
char *ac_buf_take(ac_buf *b, size_t *len);

/* Empties the text but keeps its memory for the next one (a line reader's
 * buffer); failed is cleared. */
void ac_buf_clear(ac_buf *b);

/* Frees the text and empties the buffer (its max kept, failed cleared). */
void ac_buf_free(ac_buf *b);

#endif
