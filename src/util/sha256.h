/* sha256.h - SHA-256 (FIPS 180-4) of a buffer: names derived from secrets (a bearer token's
 * tenant) that say nothing of them. */
#ifndef AGENTC_UTIL_SHA256_H
#define AGENTC_UTIL_SHA256_H

#include <stddef.h>

/* The digest of the n bytes at p, in out. */
void ac_sha256(const void *p, size_t n, unsigned char out[32]);

#endif
