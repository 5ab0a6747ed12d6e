/* Duration and size parsing for tool files; see units.h. */
#include "tools/units.h"

#include <stdint.h>
#include <string.h>

/* Reads the leading decimal digits of s into *num; returns a pointer to the
 * unit suffix or NULL if there are no digits or the number overflows. */
static const char *units_number(const char *s, unsigned long long *num)
{
    unsigned long long v = 0;
    const char *p = s;
    if (!s || *p < '0' || *p > '9')
        return NULL;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return NULL;
        v = v * 10 + d;
    }
    *num = v;
    return p;
}

int ac_parse_duration_ms(const char *s, long long *out)
{
    static const struct {
        const char *name;
        unsigned long long ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    unsigned long long n;
    const char *unit = units_number(s, &n);
    if (!unit || !out)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) != 0)
            continue;
        if (n > (unsigned long long)INT64_MAX / units[i].ms)
            return -1;
        *out = (long long)(n * units[i].ms);
        return 0;
    }
    return -1;
}

int ac_parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *name;
        unsigned long long bytes;
    } units[] = {{"B", 1},
                 {"KB", 1000ull},
                 {"MB", 1000ull * 1000},
                 {"GB", 1000ull * 1000 * 1000},
                 {"KiB", 1024ull},
                 {"MiB", 1024ull * 1024},
                 {"GiB", 1024ull * 1024 * 1024}};
    unsigned long long n;
    const char *unit = units_number(s, &n);
    if (!unit || !out)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) != 0)
            continue;
        if (n > (unsigned long long)SIZE_MAX / units[i].bytes)
            return -1;
        *out = (size_t)(n * units[i].bytes);
        return 0;
    }
    return -1;
}
