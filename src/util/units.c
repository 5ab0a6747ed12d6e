/* units.c - duration, size and time parsing; see units.h. */
#include "util/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Reads the leading decimal digits of s into *num; returns a pointer to the
 * unit suffix, or NULL if there are no digits. *overflow is set when the
 * number does not fit in 64 bits. */
static const char *units_number(const char *s, unsigned long long *num, int *overflow)
{
    unsigned long long v = 0;
    const char *p = s;
    *overflow = 0;
    if (!s || *p < '0' || *p > '9')
        return NULL;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            *overflow = 1;
        else
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
    int overflow;
    const char *suffix = units_number(s, &v, &overflow);
    if (!suffix || !out)
        return AC_UNITS_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(suffix, units[i].name) != 0)
            continue;
        if (overflow || v > max / units[i].mult)
            return AC_UNITS_ERANGE;
        *out = v * units[i].mult;
        return AC_UNITS_OK;
    }
    return AC_UNITS_EUNIT;
}

int ac_parse_duration_ms(const char *s, long long *out)
{
    static const unit units[] = {
        {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    unsigned long long v;
    if (!out)
        return AC_UNITS_EINVAL;
    int rc = units_parse(s, units, sizeof units / sizeof units[0], INT64_MAX, &v);
    if (rc == AC_UNITS_OK)
        *out = (long long)v;
    return rc;
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
    if (!out)
        return AC_UNITS_EINVAL;
    int rc = units_parse(s, units, sizeof units / sizeof units[0], SIZE_MAX, &v);
    if (rc == AC_UNITS_OK)
        *out = (size_t)v;
    return rc;
}

int ac_parse_time(const char *s, int64_t *out_ms)
{
    if (!s || !*s || !out_ms)
        return AC_UNITS_EINVAL;
    size_t k = strspn(s, "0123456789");
    if (s[k] == 0 && k < 19) {
        *out_ms = strtoll(s, NULL, 10);
        return AC_UNITS_OK;
    }
    int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10)
        return AC_UNITS_EINVAL;
    const char *p = s + used;
    int64_t frac = 0;
    if (*p == 'T' || *p == ' ') {
        if (sscanf(p + 1, "%2d:%2d%n", &h, &mi, &used) != 2 || used != 5)
            return AC_UNITS_EINVAL;
        p += 1 + used;
        if (*p == ':') {
            if (sscanf(p + 1, "%2d%n", &sec, &used) != 1 || used != 2)
                return AC_UNITS_EINVAL;
            p += 1 + used;
        }
        if (*p == '.') {
            int digits = 0;
            for (p++; *p >= '0' && *p <= '9'; p++)
                if (digits++ < 3)
                    frac = frac * 10 + (*p - '0');
            while (digits++ < 3)
                frac *= 10;
        }
    }
    int64_t offset = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &used) != 2 || used != 5)
            return AC_UNITS_EINVAL;
        offset = (int64_t)(oh * 60 + om) * 60000 * (*p == '-' ? -1 : 1);
        p += 1 + used;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return AC_UNITS_EINVAL;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    *out_ms = (int64_t)timegm(&tm) * 1000 + frac - offset;
    return AC_UNITS_OK;
}
