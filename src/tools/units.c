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

typedef struct unit {
    const char *name;
    unsigned long long mult;
} unit;

/* NUMBER UNIT with UNIT from the table; the product must fit under max. */
static int units_parse(const char *s, const unit *units, size_t n, unsigned long long max,
                       unsigned long long *out)
{
    unsigned long long v;
    const char *suffix = units_number(s, &v);
    if (!suffix || !out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(suffix, units[i].name) != 0)
            continue;
        if (v > max / units[i].mult)
            return -1;
        *out = v * units[i].mult;
        return 0;
    }
    return -1;
}

int ac_parse_duration_ms(const char *s, long long *out)
{
    static const unit units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    unsigned long long v;
    if (!out || units_parse(s, units, sizeof units / sizeof units[0], INT64_MAX, &v) < 0)
        return -1;
    *out = (long long)v;
    return 0;
}

int ac_parse_size(const char *s, size_t *out)
{
    static const unit units[] = {{"B", 1},
                                 {"KB", 1000ull},
                                 {"MB", 1000ull * 1000},
                                 {"GB", 1000ull * 1000 * 1000},
                                 {"KiB", 1024ull},
                                 {"MiB", 1024ull * 1024},
                                 {"GiB", 1024ull * 1024 * 1024}};
    unsigned long long v;
    if (!out || units_parse(s, units, sizeof units / sizeof units[0], SIZE_MAX, &v) < 0)
        return -1;
    *out = (size_t)v;
    return 0;
}
