/*
 * names.h - a small string -> int map (open addressing) for the checker
 * and lowering: resolving thousands of names must stay linear.
 */
#ifndef AGENTC_GEN_NAMES_H
#define AGENTC_GEN_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ac_strmap {
    const char **keys;
    int *vals;
    size_t cap, n;
} ac_strmap;

static inline uint64_t ac_strhash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static inline int ac_strmap_init(ac_strmap *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2 + 1)
        cap *= 2;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->cap = cap;
    m->n = 0;
    if (m->keys && m->vals)
        return 0;
    /* an empty map: lookups find nothing, the next put tries again */
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = 0;
    return -1;
}

static inline void ac_strmap_free(ac_strmap *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
}

/* Returns the existing value, or inserts `val` and returns -1. The map
 * never fills: it is sized for its expected count up front. */
static inline int ac_strmap_put(ac_strmap *m, const char *key, int val)
{
    if (m->n * 2 + 2 > m->cap) {
        ac_strmap bigger;
        if (ac_strmap_init(&bigger, m->cap) < 0)
            return -2;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i])
                ac_strmap_put(&bigger, m->keys[i], m->vals[i]);
        ac_strmap_free(m);
        *m = bigger;
    }
    size_t i = ac_strhash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return -1;
}

static inline int ac_strmap_get(const ac_strmap *m, const char *key)
{
    if (!m->cap)
        return -1;
    size_t i = ac_strhash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

#endif
