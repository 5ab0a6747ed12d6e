/* request_cache.h - the serialized form of each message of a request, kept
 * between requests of one conversation so the next request serializes only
 * what changed (internal to src/context).
 *
 * An entry is found by its message's id and is valid while its key matches:
 * the message's content pointer, flags, role and times, and a signature of
 * whatever else its fragment was built from (for an assistant message with
 * tool calls: each call's record, state and result as sent). Every change
 * the conversation makes to a message gives it a new content pointer or a new
 * updated time, so a changed message misses and is serialized again.
 * Entries not used by a build are dropped by the next sweep. A system message has no
 * entry (request.c): its text is the conversation's, and a session's own prompt may be the
 * largest text the session holds, so it is serialized again instead of kept twice. */
#ifndef AGENTC_CONTEXT_REQUEST_CACHE_H
#define AGENTC_CONTEXT_REQUEST_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "context/conversation.h"

typedef struct ac_reqcache ac_reqcache;

/* Conversations shorter than this (visible messages) are serialized whole. */
#define AC_REQCACHE_MIN_MESSAGES 8

#define AC_REQCACHE_MAX_SIG 64 /* words of signature; longer keys are not cached */

typedef struct ac_reqcache_key {
    int kind; /* which request shape the fragment is for */
    const ac_message *m;
    uint64_t sig[AC_REQCACHE_MAX_SIG];
    size_t n_sig;
} ac_reqcache_key;

ac_reqcache *ac_reqcache_new(void);
void ac_reqcache_free(ac_reqcache *rc);

/* The fragment stored under k, or NULL; marks the entry used. */
const char *ac_reqcache_get(ac_reqcache *rc, const ac_reqcache_key *k, size_t *len);

/* Stores a copy of frag[0..len) under k (replacing an entry of the same
 * message), marked used. -1 when out of memory (the cache is unchanged). */
int ac_reqcache_put(ac_reqcache *rc, const ac_reqcache_key *k, const char *frag, size_t len);

/* Drops the entries not used since the last sweep. */
void ac_reqcache_sweep(ac_reqcache *rc);

/* The conversation's cache, made on first use (NULL when out of memory);
 * freed with the conversation. */
ac_reqcache *ac_conv__reqcache(const ac_conv *conv);

/* ac_request_anthropic, with use_cache 0: every message serialized anew,
 * the cache neither read nor changed (tests compare the two). */
struct ac_request_opts;
char *ac_request__anthropic(const ac_conv *conv, const struct ac_request_opts *opts, int use_cache,
                            char *err, size_t errcap);

/* Entries held (for tests). */
size_t ac_reqcache_count(const ac_reqcache *rc);

#endif
