/* grow.h - room in a growable array: the one way the tree grows its arrays.
 *
 *   if (ac_grow((void **)&v, &cap, n + 1, sizeof *v))
 *       return -1;   // out of memory: v and cap are as they were
 *   v[n++] = x;
 */
#ifndef AGENTC_UTIL_GROW_H
#define AGENTC_UTIL_GROW_H

#include <stddef.h>

/* Makes *v (an array of elem-byte items with room for *cap) hold at least
 * need items: the capacity doubles (from 8) until it does, and the new items
 * are zeroed. 0, or -1 when out of memory or the size overflows (then *v and
 * *cap are untouched). */
int ac_grow(void **v, size_t *cap, size_t need, size_t elem);

#endif
