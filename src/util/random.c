/*
 * random.c - random bytes for ids (random.h).
 */
#include "util/random.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Bytes from the clock, the PID and a counter, when the kernel gives none. */
static void mixed_bytes(unsigned char *b, size_t n)
{
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^
                 (uint64_t)getpid() * 2654435761u ^ ++counter * 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; /* xorshift64 */
        x ^= x >> 7;
        x ^= x << 17;
        b[i] = (unsigned char)x;
    }
}

void ac_random_bytes(void *buf, size_t n)
{
    unsigned char *b = buf;
    size_t got = 0;
    for (int tries = 0; got < n && tries < 8; tries++) {
        ssize_t k = getrandom(b + got, n - got, 0);
        if (k > 0)
            got += (size_t)k;
        else if (k < 0 && errno != EINTR)
            break;
    }
    if (got < n)
        mixed_bytes(b + got, n - got);
}
