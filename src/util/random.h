/*
 * random.h - random bytes for ids (random.c): session ids, holder names, trace and span ids.
 */
#ifndef AGENTC_UTIL_RANDOM_H
#define AGENTC_UTIL_RANDOM_H

#include <stddef.h>

/* Fills buf with n bytes from the kernel's generator (getrandom, retried when a signal
 * interrupts it, a bounded number of times), or, where it cannot give them, bytes mixed
 * from the clock, the PID and a counter: unique enough for ids, never a secret. */
void ac_random_bytes(void *buf, size_t n);

#endif
