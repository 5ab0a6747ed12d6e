/* idmap.c - open-addressing map from non-zero uint64_t ids to pointers;
 * see idmap.h. */
#include "io/idmap.h"

#include <stdlib.h>
#include <string.h>

static size_t idmap_slot(uint64_t key, size_t cap)
{
    /* splitmix64 finaliser: ids are sequential, pointers aligned; spread both. */
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return (size_t)key & (cap - 1);
}

void *ac_idmap_get(const ac_idmap *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    for (size_t i = idmap_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return NULL;
    }
}

static int idmap_grow(ac_idmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 16;
    uint64_t *keys = calloc(ncap, sizeof *keys);
    void **vals = calloc(ncap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == 0)
            continue;
        size_t j = idmap_slot(m->keys[i], ncap);
        while (keys[j] != 0)
            j = (j + 1) & (ncap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = ncap;
    return 0;
}

int ac_idmap_reserve(ac_idmap *m, size_t more)
{
    while ((m->len + more) * 4 > m->cap * 3) /* load <= 3/4 */
        if (idmap_grow(m) != 0)
            return -1;
    return 0;
}

uint64_t ac_idmap_str_key(const char *s)
{
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

int ac_idmap_put(ac_idmap *m, uint64_t key, void *val)
{
    if (key == 0)
        return -1;
    if (ac_idmap_reserve(m, 1) != 0)
        return -1;
    size_t i = idmap_slot(key, m->cap);
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == 0)
        m->len++;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

void *ac_idmap_del(ac_idmap *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = idmap_slot(key, m->cap);
    while (m->keys[i] != key) {
        if (m->keys[i] == 0)
            return NULL;
        i = (i + 1) & mask;
    }
    void *val = m->vals[i];
    /* Backward-shift deletion: no tombstones, lookups stay short. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (m->keys[j] == 0)
            break;
        size_t home = idmap_slot(m->keys[j], m->cap);
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        int in_between = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (in_between)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        i = j;
    }
    m->keys[i] = 0;
    m->vals[i] = NULL;
    m->len--;
    return val;
}

void *ac_idmap_any(const ac_idmap *m, uint64_t *key)
{
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] != 0) {
            if (key)
                *key = m->keys[i];
            return m->vals[i];
        }
    }
    return NULL;
}

void ac_idmap_clear(ac_idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
