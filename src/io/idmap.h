/* idmap.h - open-addressing hash map from a non-zero uint64_t key to a
 * pointer, used for the loop's handles (timers, watches, transfers, child
 * processes, curl sockets) and, keyed by ac_idmap_str_key, for names (the
 * engine's tools). Linear probing with backward-shift deletion, no
 * tombstones; the capacity is a power of two and the load stays <= 3/4.
 *
 * Ownership: the map does not own the values. A zeroed ac_idmap is an empty
 * map; ac_idmap_clear() frees its storage and leaves it empty. */
#ifndef AGENTC_IO_IDMAP_H
#define AGENTC_IO_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct ac_idmap {
    uint64_t *keys; /* 0 = empty slot */
    void **vals;
    size_t cap; /* power of two, or 0 */
    size_t len;
} ac_idmap;

/* The value stored under key, NULL if absent (key 0 is never present). */
void *ac_idmap_get(const ac_idmap *m, uint64_t key);
/* 0 on success, -1 on allocation failure or key 0. Replaces an existing value. */
int ac_idmap_put(ac_idmap *m, uint64_t key, void *val);
/* Removes and returns the value, NULL if absent. */
void *ac_idmap_del(ac_idmap *m, uint64_t key);
/* Any one value (its key to *key when key is not NULL), NULL if empty: to
 * drain a map with repeated del calls. */
void *ac_idmap_any(const ac_idmap *m, uint64_t *key);
void ac_idmap_clear(ac_idmap *m);
/* Room for `more` further keys: the next `more` puts of new keys cannot fail. 0, or -1 when out
 * of memory (the map unchanged). */
int ac_idmap_reserve(ac_idmap *m, size_t more);
/* A key for a string (64-bit FNV-1a; never 0): a map keyed by names. Two names may share a
 * key, so the caller keeps the values of one key in a list and compares the names. */
uint64_t ac_idmap_str_key(const char *s);

#endif
