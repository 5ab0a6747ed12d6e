/*
 * cost.h - what a model call costs: a model's prices from a prices document
 * ({"models": {"NAME": {"input", "output", "cached_input"?, "cache_write"?}}}, USD per million
 * tokens; a missing cache price is the input price), applied to a journaled usage
 * ({"input", "output", "cached"?, "cache_write"?}: input counts every prompt token).
 */
#ifndef AGENTC_OBS_COST_H
#define AGENTC_OBS_COST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ac_price {
    double input, output, cached_input, cache_write; /* USD per million tokens */
} ac_price;

/* The prices of model in the document text. 1 found, 0 the document has no price for it,
 * -1 a malformed document (err says where). */
int ac_price_lookup(const char *text, const char *model, ac_price *out, char *err, size_t errcap);

/* The cost in USD of usage at price p, by the providers' accounting: the prompt tokens not read
 * from or written to the cache at the input price, cache reads at cached_input, cache writes
 * at cache_write, output at output. */
double ac_price_cost(const ac_price *p, const json_t *usage);
/* The same from the counts (a typed reply's). */
double ac_price_cost_of(const ac_price *p, int64_t input, int64_t output, int64_t cached,
                        int64_t cache_write);

#endif
