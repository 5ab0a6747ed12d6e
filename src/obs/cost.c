/* cost.c - prices and the cost of a model call (cost.h). */
#include "obs/cost.h"

#include <stdio.h>
#include <string.h>

static int number(const json_t *o, const char *key, double *out, int required)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return required ? -1 : 0;
    if (!json_is_number(v) || json_number_value(v) < 0)
        return -1;
    *out = json_number_value(v);
    return 1;
}

int ac_price_lookup(const char *text, const char *model, ac_price *out, char *err, size_t errcap)
{
    json_error_t je;
    json_t *doc = json_loads(text ? text : "", 0, &je);
    const json_t *models = json_object_get(doc, "models");
    if (!json_is_object(models)) {
        snprintf(err, errcap,
                 doc ? "prices: no \"models\" object" : "prices: not JSON (line %d: %s)", je.line,
                 je.text);
        json_decref(doc);
        return -1;
    }
    const char *name;
    const json_t *m;
    int found = 0;
    json_object_foreach((json_t *)models, name, m)
    {
        ac_price p = {0};
        if (!json_is_object(m) || number(m, "input", &p.input, 1) < 0 ||
            number(m, "output", &p.output, 1) < 0) {
            snprintf(err, errcap,
                     "prices: model '%s' needs \"input\" and \"output\", USD per million tokens "
                     "(numbers >= 0)",
                     name);
            json_decref(doc);
            return -1;
        }
        p.cached_input = p.cache_write = p.input;
        if (number(m, "cached_input", &p.cached_input, 0) < 0 ||
            number(m, "cache_write", &p.cache_write, 0) < 0) {
            snprintf(err, errcap, "prices: model '%s': a cache price is not a number >= 0", name);
            json_decref(doc);
            return -1;
        }
        if (model && !strcmp(name, model)) {
            *out = p;
            found = 1;
        }
    }
    json_decref(doc);
    return found;
}

double ac_price_cost(const ac_price *p, const json_t *usage)
{
    return ac_price_cost_of(p, json_integer_value(json_object_get(usage, "input")),
                            json_integer_value(json_object_get(usage, "output")),
                            json_integer_value(json_object_get(usage, "cached")),
                            json_integer_value(json_object_get(usage, "cache_write")));
}

double ac_price_cost_of(const ac_price *p, int64_t input, int64_t output, int64_t cached,
                        int64_t cache_write)
{
    double in = (double)input, out = (double)output, c = (double)cached,
           write = (double)cache_write;
    double plain = in - c - write;
    if (plain < 0)
        plain = 0;
    return (plain * p->input + c * p->cached_input + write * p->cache_write + out * p->output) /
           1e6;
}
