/* Serialized message fragments kept between requests (request_cache.h). An
 * open-addressing table keyed by message id; a build marks the entries it
 * uses, and a sweep drops the others (messages removed or changed). */
#include "context/request_cache.h"

#include "context/conv_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct rc_entry {
    char *id; /* NULL: empty slot */
    int kind;
    const ac_message *m;
    const char *content;
    unsigned flags;
    int role;
    int64_t created, updated;
    uint64_t *sig;
    size_t n_sig;
    char *frag;
    size_t len;
    int used;
} rc_entry;

struct ac_reqcache {
    rc_entry *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

static uint64_t rc_hash(const char *id, int kind)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

ac_reqcache *ac_reqcache_new(void)
{
    return calloc(1, sizeof(ac_reqcache));
}

static void rc_clear(rc_entry *e)
{
    free(e->id);
    free(e->sig);
    free(e->frag);
    memset(e, 0, sizeof *e);
}

void ac_reqcache_free(ac_reqcache *rc)
{
    if (!rc)
        return;
    for (size_t i = 0; i < rc->cap; i++)
        rc_clear(&rc->slots[i]);
    free(rc->slots);
    free(rc);
}

/* The slot holding (id, kind), or the empty slot where it would go. */
static rc_entry *rc_find(ac_reqcache *rc, const char *id, int kind)
{
    size_t mask = rc->cap - 1;
    for (size_t i = rc_hash(id, kind) & mask;; i = (i + 1) & mask) {
        rc_entry *e = &rc->slots[i];
        if (!e->id || (e->kind == kind && strcmp(e->id, id) == 0))
            return e;
    }
}

static int rc_matches(const rc_entry *e, const ac_reqcache_key *k)
{
    const ac_message *m = k->m;
    return e->m == m && e->content == m->content && e->flags == m->flags &&
           e->role == (int)m->role && e->created == m->created_at_ms &&
           e->updated == m->updated_at_ms && e->n_sig == k->n_sig &&
           (k->n_sig == 0 || memcmp(e->sig, k->sig, k->n_sig * sizeof *k->sig) == 0);
}

const char *ac_reqcache_get(ac_reqcache *rc, const ac_reqcache_key *k, size_t *len)
{
    if (!rc->cap || k->n_sig > AC_REQCACHE_MAX_SIG)
        return NULL;
    rc_entry *e = rc_find(rc, k->m->id, k->kind);
    if (!e->id || !rc_matches(e, k))
        return NULL;
    e->used = 1;
    *len = e->len;
    return e->frag;
}

static int rc_grow(ac_reqcache *rc)
{
    size_t cap = rc->cap ? rc->cap * 2 : 8;
    rc_entry *old = rc->slots;
    size_t old_cap = rc->cap;
    rc->slots = calloc(cap, sizeof *rc->slots);
    if (!rc->slots) {
        rc->slots = old;
        return -1;
    }
    rc->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].id)
            *rc_find(rc, old[i].id, old[i].kind) = old[i];
    free(old);
    return 0;
}

int ac_reqcache_put(ac_reqcache *rc, const ac_reqcache_key *k, const char *frag, size_t len)
{
    if (k->n_sig > AC_REQCACHE_MAX_SIG)
        return -1;
    if ((rc->count + 1) * 2 > rc->cap && rc_grow(rc))
        return -1;
    const ac_message *m = k->m;
    size_t id_len = strlen(m->id);
    char *id = malloc(id_len + 1), *f = malloc(len + 1);
    if (id)
        memcpy(id, m->id, id_len + 1);
    uint64_t *sig = k->n_sig ? malloc(k->n_sig * sizeof *sig) : NULL;
    if (!id || !f || (k->n_sig && !sig)) {
        free(id);
        free(f);
        free(sig);
        return -1;
    }
    memcpy(f, frag, len);
    f[len] = '\0';
    if (k->n_sig)
        memcpy(sig, k->sig, k->n_sig * sizeof *sig);
    rc_entry *e = rc_find(rc, m->id, k->kind);
    if (e->id)
        rc_clear(e);
    else
        rc->count++;
    *e = (rc_entry){
        id,  k->kind,  m, m->content, m->flags, (int)m->role, m->created_at_ms, m->updated_at_ms,
        sig, k->n_sig, f, len,        1};
    return 0;
}

void ac_reqcache_sweep(ac_reqcache *rc)
{
    size_t kept = 0;
    int dropped = 0;
    for (size_t i = 0; i < rc->cap; i++) {
        rc_entry *e = &rc->slots[i];
        if (!e->id)
            continue;
        if (!e->used) {
            rc_clear(e);
            dropped = 1;
        } else {
            e->used = 0;
            kept++;
        }
    }
    rc->count = kept;
    if (!dropped)
        return;
    /* removals break probe chains: re-place the survivors */
    rc_entry *old = rc->slots;
    size_t cap = rc->cap;
    rc->slots = calloc(cap, sizeof *rc->slots);
    if (!rc->slots) { /* keep nothing rather than a broken table */
        rc->slots = old;
        for (size_t i = 0; i < cap; i++)
            rc_clear(&rc->slots[i]);
        rc->count = 0;
        return;
    }
    for (size_t i = 0; i < cap; i++)
        if (old[i].id)
            *rc_find(rc, old[i].id, old[i].kind) = old[i];
    free(old);
}

size_t ac_reqcache_count(const ac_reqcache *rc)
{
    return rc ? rc->count : 0;
}

ac_reqcache *ac_conv__reqcache(const ac_conv *conv)
{
    /* a memo of the conversation's serialized form: changing it does not
     * change the conversation, so a const conversation may fill it */
    ac_conv *c = (ac_conv *)conv;
    if (!c->reqcache)
        c->reqcache = ac_reqcache_new();
    return c->reqcache;
}
