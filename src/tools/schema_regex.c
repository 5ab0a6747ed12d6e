/* schema_regex.c - ECMA regex translation for JSON Schema "pattern"; see
 * schema_regex.h. */
#include "tools/schema_regex.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ac_schema__msg(char *err, size_t errcap, const char *fmt, ...)
{
    if (!err || errcap == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errcap, fmt, ap);
    va_end(ap);
}

typedef struct sc_buf {
    char *p;
    size_t n, cap;
} sc_buf;

static int sc_buf_put(sc_buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        while (nc < b->n + n + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np)
            return -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

static int sc_buf_puts(sc_buf *b, const char *s)
{
    return sc_buf_put(b, s, strlen(s));
}

static long sc_hex(const char *p, size_t avail, int ndigits)
{
    if (avail < (size_t)ndigits)
        return -1;
    long v = 0;
    for (int i = 0; i < ndigits; i++) {
        int h = ac_schema__hexval((unsigned char)p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static void sc_set_class(unsigned char *set, char cls)
{
    for (int c = 1; c < 128; c++) {
        int in = 0;
        switch (cls | 0x20) {
        case 'd':
            in = c >= '0' && c <= '9';
            break;
        case 'w':
            in = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 c == '_';
            break;
        case 's':
            in = c == ' ' || (c >= '\t' && c <= '\r');
            break;
        }
        if (cls >= 'A' && cls <= 'Z')
            in = !in;
        if (in)
            set[c] = 1;
    }
}

/* Parses an ECMA class body starting after '[' and emits a POSIX bracket
 * expression built from the set of ASCII bytes it denotes, ordered so that
 * ']', '^', '[' and '-' keep their literal meaning. */
static int sc_translate_class(const char *p, size_t len, size_t *pi, sc_buf *out, char *why,
                              size_t whycap)
{
    unsigned char set[128] = {0};
    size_t i = *pi;
    int neg = 0;
    if (i < len && p[i] == '^') {
        neg = 1;
        i++;
    }
    int closed = 0;
    while (i < len) {
        unsigned char c = (unsigned char)p[i];
        int single = -1;
        if (c == ']') {
            closed = 1;
            i++;
            break;
        }
        if (c >= 128) {
            ac_schema__msg(why, whycap, "non-ASCII character in a character class");
            return -1;
        }
        if (c == '\\') {
            if (i + 1 >= len) {
                ac_schema__msg(why, whycap, "trailing backslash");
                return -1;
            }
            char e = p[i + 1];
            i += 2;
            switch (e) {
            case 'd':
            case 'D':
            case 'w':
            case 'W':
            case 's':
            case 'S':
                sc_set_class(set, e);
                continue;
            case 'n':
                single = '\n';
                break;
            case 't':
                single = '\t';
                break;
            case 'r':
                single = '\r';
                break;
            case 'f':
                single = '\f';
                break;
            case 'v':
                single = '\v';
                break;
            case 'b':
                single = '\b';
                break;
            case 'u':
            case 'x': {
                int nd = e == 'u' ? 4 : 2;
                long v = sc_hex(p + i, len - i, nd);
                if (v < 0 || v == 0 || v >= 128) {
                    ac_schema__msg(why, whycap, "unsupported \\%c escape in a character class", e);
                    return -1;
                }
                i += (size_t)nd;
                single = (int)v;
                break;
            }
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') ||
                    (unsigned char)e >= 128) {
                    ac_schema__msg(why, whycap, "unsupported escape \\%c", e);
                    return -1;
                }
                single = (unsigned char)e;
            }
        } else {
            single = c;
            i++;
        }
        if (i + 1 < len && p[i] == '-' && p[i + 1] != ']') {
            /* the range end */
            size_t j = i + 1;
            int hi;
            unsigned char h = (unsigned char)p[j];
            if (h == '\\') {
                if (j + 1 >= len) {
                    ac_schema__msg(why, whycap, "trailing backslash");
                    return -1;
                }
                char e = p[j + 1];
                if (strchr("dDwWsS", e)) {
                    /* [a-\d]: '-' is literal in ECMA (Annex B) */
                    set[single] = 1;
                    set['-'] = 1;
                    i = j;
                    continue;
                }
                if (e == 'u' || e == 'x') {
                    int nd = e == 'u' ? 4 : 2;
                    long v = sc_hex(p + j + 2, len - j - 2, nd);
                    if (v <= 0 || v >= 128) {
                        ac_schema__msg(why, whycap, "unsupported \\%c escape in a character class",
                                       e);
                        return -1;
                    }
                    hi = (int)v;
                    j += 2 + (size_t)nd;
                } else if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') ||
                           (e >= '0' && e <= '9') || (unsigned char)e >= 128) {
                    const char *ctl = strchr("n\nt\tr\rf\fv\vb\b", e);
                    if (!ctl || (ctl - "n\nt\tr\rf\fv\vb\b") % 2) {
                        ac_schema__msg(why, whycap, "unsupported escape \\%c", e);
                        return -1;
                    }
                    hi = (unsigned char)ctl[1];
                    j += 2;
                } else {
                    hi = (unsigned char)e;
                    j += 2;
                }
            } else if (h >= 128) {
                ac_schema__msg(why, whycap, "non-ASCII character in a character class");
                return -1;
            } else {
                hi = h;
                j += 1;
            }
            if (hi < single) {
                ac_schema__msg(why, whycap, "character class range out of order");
                return -1;
            }
            for (int k = single; k <= hi; k++)
                set[k] = 1;
            i = j;
            continue;
        }
        set[single] = 1;
    }
    if (!closed) {
        ac_schema__msg(why, whycap, "missing ']'");
        return -1;
    }
    *pi = i;
    int count = 0;
    for (int c = 1; c < 128; c++)
        count += set[c];
    if (count == 0) {
        if (neg)
            return sc_buf_puts(out, "(.|\n)"); /* [^] matches anything */
        ac_schema__msg(why, whycap, "empty character class");
        return -1;
    }
    if (!neg && count == 1 && set['^'])
        return sc_buf_puts(out, "\\^");
    char tmp[160];
    size_t n = 0;
    tmp[n++] = '[';
    if (neg)
        tmp[n++] = '^';
    if (set[']'])
        tmp[n++] = ']';
    int first_is_caret = n == (size_t)(neg ? 2 : 1);
    if (first_is_caret && set['^'] && !neg) {
        /* '^' would come first; put '[' or '-' ahead of it */
        int caret_only = 1;
        for (int c = 1; c < 128; c++)
            if (set[c] && c != '^' && c != '[' && c != '-' && c != ']')
                caret_only = 0;
        if (caret_only) {
            if (set['-'])
                tmp[n++] = '-';
            if (set['['])
                tmp[n++] = '[';
            tmp[n++] = '^';
            tmp[n++] = ']';
            return sc_buf_put(out, tmp, n);
        }
    }
    for (int c = 1; c < 128; c++)
        if (set[c] && c != ']' && c != '^' && c != '[' && c != '-')
            tmp[n++] = (char)c;
    if (set['^'])
        tmp[n++] = '^';
    if (set['['])
        tmp[n++] = '[';
    if (set['-'])
        tmp[n++] = '-';
    tmp[n++] = ']';
    return sc_buf_put(out, tmp, n);
}

/* Size accounting for a translated regex: glibc's regcomp expands bounded
 * repetitions (and '+') by copying the repeated tree, so nested counts can
 * make it allocate without bound. Each atom weighs 1, a group weighs its
 * content, a quantifier multiplies the weight of what it repeats; a pattern
 * over SC_RX_BUDGET is refused. */
#define SC_RX_MAX_GROUPS 32
#define SC_RX_MAX_REPEAT 1000
#define SC_RX_BUDGET 10000

typedef struct sc_rxw {
    size_t tot[SC_RX_MAX_GROUPS + 1], last[SC_RX_MAX_GROUPS + 1];
    int depth, can_repeat;
} sc_rxw;

static int sc_rx_atom(sc_rxw *w, size_t n, char *why, size_t whycap)
{
    w->last[w->depth] = n;
    w->tot[w->depth] += n;
    w->can_repeat = 1;
    if (w->tot[w->depth] > SC_RX_BUDGET) {
        ac_schema__msg(why, whycap, "pattern too complex");
        return -1;
    }
    return 0;
}

static int sc_rx_quant(sc_rxw *w, unsigned long k, char *why, size_t whycap)
{
    if (!w->can_repeat) {
        ac_schema__msg(why, whycap, "nothing to repeat");
        return -1;
    }
    if (k > SC_RX_MAX_REPEAT) {
        ac_schema__msg(why, whycap, "repetition count too large (limit %d)", SC_RX_MAX_REPEAT);
        return -1;
    }
    if (k == 0)
        k = 1;
    int d = w->depth;
    w->tot[d] += w->last[d] * (k - 1);
    w->last[d] *= k;
    w->can_repeat = 0;
    if (w->tot[d] > SC_RX_BUDGET) {
        ac_schema__msg(why, whycap, "pattern too complex");
        return -1;
    }
    return 0;
}

/* Translates an ECMA-262 pattern into a POSIX extended regex. Returns a
 * malloc'd string, or NULL with the reason in why. */
static char *sc_translate_regex(const char *p, size_t len, char *why, size_t whycap)
{
    sc_buf out = {0};
    sc_rxw w = {0};
    if (sc_buf_puts(&out, "") < 0)
        goto oom;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)p[i];
        int rc = 0;
        if (c == 0) {
            ac_schema__msg(why, whycap, "NUL character in pattern");
            goto fail;
        } else if (c == '\\') {
            if (i + 1 >= len) {
                ac_schema__msg(why, whycap, "trailing backslash");
                goto fail;
            }
            char e = p[i + 1];
            i += 2;
            switch (e) {
            case 'd':
                rc = sc_buf_puts(&out, "[0-9]");
                break;
            case 'D':
                rc = sc_buf_puts(&out, "[^0-9]");
                break;
            case 'w':
                rc = sc_buf_puts(&out, "[A-Za-z0-9_]");
                break;
            case 'W':
                rc = sc_buf_puts(&out, "[^A-Za-z0-9_]");
                break;
            case 's':
                rc = sc_buf_puts(&out, "[[:space:]]");
                break;
            case 'S':
                rc = sc_buf_puts(&out, "[^[:space:]]");
                break;
            case 'n':
                rc = sc_buf_puts(&out, "\n");
                break;
            case 't':
                rc = sc_buf_puts(&out, "\t");
                break;
            case 'r':
                rc = sc_buf_puts(&out, "\r");
                break;
            case 'f':
                rc = sc_buf_puts(&out, "\f");
                break;
            case 'v':
                rc = sc_buf_puts(&out, "\v");
                break;
#ifdef __GLIBC__
            case 'b':
                rc = sc_buf_puts(&out, "\\b");
                break;
            case 'B':
                rc = sc_buf_puts(&out, "\\B");
                break;
#endif
            case 'u':
            case 'x': {
                int nd = e == 'u' ? 4 : 2;
                long v = sc_hex(p + i, len - i, nd);
                if (v <= 0 || (v >= 0xD800 && v <= 0xDFFF)) {
                    ac_schema__msg(why, whycap, "unsupported \\%c escape", e);
                    goto fail;
                }
                i += (size_t)nd;
                char u[8];
                size_t un = 0;
                if (v < 0x80) {
                    if (strchr(".[]{}()*+?^$|\\", (int)v))
                        u[un++] = '\\';
                    u[un++] = (char)v;
                } else if (v < 0x800) {
                    u[un++] = (char)(0xC0 | (v >> 6));
                    u[un++] = (char)(0x80 | (v & 0x3F));
                } else {
                    u[un++] = (char)(0xE0 | (v >> 12));
                    u[un++] = (char)(0x80 | ((v >> 6) & 0x3F));
                    u[un++] = (char)(0x80 | (v & 0x3F));
                }
                /* a multi-byte character must stay one atom for quantifiers */
                if (un > 1)
                    rc =
                        sc_buf_puts(&out, "(") || sc_buf_put(&out, u, un) || sc_buf_puts(&out, ")");
                else
                    rc = sc_buf_put(&out, u, un);
                break;
            }
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') ||
                    (unsigned char)e >= 128) {
                    if (e >= '1' && e <= '9')
                        ac_schema__msg(why, whycap, "backreferences are not supported");
                    else
                        ac_schema__msg(why, whycap, "unsupported escape \\%c", e);
                    goto fail;
                }
                if (strchr(".[]{}()*+?^$|\\", e)) {
                    char t[2] = {'\\', e};
                    rc = sc_buf_put(&out, t, 2);
                } else {
                    rc = sc_buf_put(&out, &e, 1);
                }
            }
            if (sc_rx_atom(&w, 1, why, whycap) < 0)
                goto fail;
        } else if (c == '[') {
            i++;
            if (sc_translate_class(p, len, &i, &out, why, whycap) < 0 ||
                sc_rx_atom(&w, 1, why, whycap) < 0)
                goto fail;
        } else if (c == '(') {
            if (w.depth == SC_RX_MAX_GROUPS) {
                ac_schema__msg(why, whycap, "groups nested too deeply (limit %d)",
                               SC_RX_MAX_GROUPS);
                goto fail;
            }
            w.depth++;
            w.tot[w.depth] = w.last[w.depth] = 0;
            w.can_repeat = 0;
            if (i + 1 < len && p[i + 1] == '?') {
                if (i + 2 < len && p[i + 2] == ':') {
                    rc = sc_buf_puts(&out, "(");
                    i += 3;
                } else {
                    ac_schema__msg(why, whycap,
                                   "lookaround and named groups '(?' are not supported");
                    goto fail;
                }
            } else {
                rc = sc_buf_puts(&out, "(");
                i++;
            }
        } else if (c == '*' || c == '+' || c == '?') {
            if (sc_rx_quant(&w, c == '+' ? 2 : 1, why, whycap) < 0)
                goto fail;
            rc = sc_buf_put(&out, (const char *)&p[i], 1);
            i++;
            if (i < len && p[i] == '?') /* lazy: same match/no-match answer */
                i++;
        } else if (c == '{') {
            size_t j = i + 1, d1 = 0;
            while (j < len && p[j] >= '0' && p[j] <= '9')
                j++, d1++;
            int ok = d1 > 0;
            if (ok && j < len && p[j] == ',') {
                j++;
                while (j < len && p[j] >= '0' && p[j] <= '9')
                    j++;
            }
            ok = ok && j < len && p[j] == '}';
            if (ok) {
                /* the repeat count that glibc expands: the upper bound, or
                 * the lower one plus one for {n,} */
                unsigned long lo = 0, hi = 0;
                size_t q = i + 1;
                for (; q < len && p[q] >= '0' && p[q] <= '9'; q++)
                    lo = lo > SC_RX_MAX_REPEAT ? lo : lo * 10 + (unsigned long)(p[q] - '0');
                if (p[q] == ',') {
                    q++;
                    if (p[q] == '}')
                        hi = lo + 1;
                    for (; q < len && p[q] >= '0' && p[q] <= '9'; q++)
                        hi = hi > SC_RX_MAX_REPEAT ? hi : hi * 10 + (unsigned long)(p[q] - '0');
                } else {
                    hi = lo;
                }
                if (sc_rx_quant(&w, hi > lo ? hi : lo, why, whycap) < 0)
                    goto fail;
                rc = sc_buf_put(&out, p + i, j + 1 - i);
                i = j + 1;
                if (i < len && p[i] == '?')
                    i++;
            } else {
                rc = sc_buf_puts(&out, "\\{");
                i++;
                if (sc_rx_atom(&w, 1, why, whycap) < 0)
                    goto fail;
            }
        } else if (c == '}' || c == '.') {
            rc = sc_buf_puts(&out, c == '}' ? "\\}" : "[^\n\r]");
            i++;
            if (sc_rx_atom(&w, 1, why, whycap) < 0)
                goto fail;
        } else if (c == ')') {
            if (w.depth == 0) {
                ac_schema__msg(why, whycap, "unmatched ')'");
                goto fail;
            }
            size_t inner = w.tot[w.depth--];
            if (sc_rx_atom(&w, inner ? inner : 1, why, whycap) < 0)
                goto fail;
            rc = sc_buf_puts(&out, ")");
            i++;
        } else if (c == '|' || c == '^' || c == '$') {
            w.can_repeat = 0;
            rc = sc_buf_put(&out, (const char *)&p[i], 1);
            i++;
        } else {
            if (sc_rx_atom(&w, 1, why, whycap) < 0)
                goto fail;
            rc = sc_buf_put(&out, (const char *)&p[i], 1);
            i++;
        }
        if (rc)
            goto oom;
    }
    if (w.depth != 0) {
        ac_schema__msg(why, whycap, "missing ')'");
        goto fail;
    }
    return out.p;
oom:
    ac_schema__msg(why, whycap, "out of memory");
fail:
    free(out.p);
    return NULL;
}

int ac_schema__regex_compile(ac_schema_regex *rx, const char *src, size_t len, char *why,
                             size_t whycap)
{
    char *posix = sc_translate_regex(src, len, why, whycap);
    if (!posix)
        return -1;
    int rc = regcomp(&rx->re, posix, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[128];
        regerror(rc, &rx->re, msg, sizeof msg);
        ac_schema__msg(why, whycap, "%s", msg);
        free(posix);
        return -1;
    }
    free(posix);
    rx->src = src;
    rx->compiled = 1;
    return 0;
}

int ac_schema__regex_match(const ac_schema_regex *rx, const char *s, size_t n)
{
#ifdef REG_STARTEND
    regmatch_t m[1];
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)n;
    return regexec(&rx->re, s, 1, m, REG_STARTEND) == 0;
#else
    (void)n;
    return regexec(&rx->re, s, 0, NULL, 0) == 0;
#endif
}
