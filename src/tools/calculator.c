/* Built-in calculator: a recursive-descent parser over exact rationals built
 * on a small arbitrary-precision unsigned integer. See calculator.h. */
#include "tools/calculator.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* log2(10) ~ 3.32 bits per digit, so 32-bit limbs hold ~9.63 digits. */
#define CALC_MAX_LIMBS ((AC_CALC_MAX_DIGITS * 10) / 96 + 1)
#define CALC_APPROX_DECIMALS 12

/* ------------------------------------------------------ unsigned bignums */

/* Magnitude, little-endian 32-bit limbs, no leading zero limbs (n == 0 is 0). */
typedef struct calc_bn {
    uint32_t *d;
    size_t n;
} calc_bn;

typedef struct calc_ctx {
    const char *src;
    size_t len, pos;
    int depth;
    const char *fail; /* first error; message in err */
    char *err;
    size_t errcap;
} calc_ctx;

static void calc_error(calc_ctx *c, const char *fmt, ...)
{
    if (c->fail)
        return;
    c->fail = "error";
    if (c->err && c->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errcap, fmt, ap);
        va_end(ap);
    }
}

static void bn_free(calc_bn *a)
{
    free(a->d);
    a->d = NULL;
    a->n = 0;
}

static void bn_trim(calc_bn *a)
{
    while (a->n && a->d[a->n - 1] == 0)
        a->n--;
}

/* Makes room for `limbs` limbs (contents undefined beyond the old ones). */
static int bn_reserve(calc_ctx *c, calc_bn *a, size_t limbs)
{
    if (limbs > CALC_MAX_LIMBS + 2) {
        calc_error(c, "number too large (more than %d digits)", AC_CALC_MAX_DIGITS);
        return -1;
    }
    uint32_t *d = realloc(a->d, (limbs ? limbs : 1) * sizeof *d);
    if (!d) {
        calc_error(c, "out of memory");
        return -1;
    }
    a->d = d;
    return 0;
}

/* Checks the size cap on a finished result. */
static int bn_check(calc_ctx *c, const calc_bn *a)
{
    if (a->n > CALC_MAX_LIMBS) {
        calc_error(c, "number too large (more than %d digits)", AC_CALC_MAX_DIGITS);
        return -1;
    }
    return 0;
}

static int bn_set_u32(calc_ctx *c, calc_bn *a, uint32_t v)
{
    if (bn_reserve(c, a, 1) < 0)
        return -1;
    a->d[0] = v;
    a->n = v ? 1 : 0;
    return 0;
}

static int bn_copy(calc_ctx *c, calc_bn *r, const calc_bn *a)
{
    if (bn_reserve(c, r, a->n) < 0)
        return -1;
    if (a->n)
        memcpy(r->d, a->d, a->n * sizeof *a->d);
    r->n = a->n;
    return 0;
}

static int bn_cmp(const calc_bn *a, const calc_bn *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    for (size_t i = a->n; i-- > 0;)
        if (a->d[i] != b->d[i])
            return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

static int bn_is_one(const calc_bn *a)
{
    return a->n == 1 && a->d[0] == 1;
}

/* a = a * m + add, in place. */
static int bn_mul_small(calc_ctx *c, calc_bn *a, uint32_t m, uint32_t add)
{
    uint64_t carry = add;
    for (size_t i = 0; i < a->n; i++) {
        uint64_t t = (uint64_t)a->d[i] * m + carry;
        a->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry) {
        if (bn_reserve(c, a, a->n + 1) < 0)
            return -1;
        a->d[a->n++] = (uint32_t)carry;
    }
    bn_trim(a);
    return bn_check(c, a);
}

/* a = a / m in place; returns the remainder. */
static uint32_t bn_div_small(calc_bn *a, uint32_t m)
{
    uint64_t rem = 0;
    for (size_t i = a->n; i-- > 0;) {
        uint64_t cur = (rem << 32) | a->d[i];
        a->d[i] = (uint32_t)(cur / m);
        rem = cur % m;
    }
    bn_trim(a);
    return (uint32_t)rem;
}

/* r = a + b (r may not alias). */
static int bn_add(calc_ctx *c, calc_bn *r, const calc_bn *a, const calc_bn *b)
{
    size_t n = a->n > b->n ? a->n : b->n;
    if (bn_reserve(c, r, n + 1) < 0)
        return -1;
    uint64_t carry = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = carry;
        if (i < a->n)
            t += a->d[i];
        if (i < b->n)
            t += b->d[i];
        r->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    r->d[n] = (uint32_t)carry;
    r->n = n + 1;
    bn_trim(r);
    return bn_check(c, r);
}

/* r = a - b, requires a >= b (r may not alias). */
static int bn_sub(calc_ctx *c, calc_bn *r, const calc_bn *a, const calc_bn *b)
{
    if (bn_reserve(c, r, a->n) < 0)
        return -1;
    uint64_t borrow = 0;
    for (size_t i = 0; i < a->n; i++) {
        uint64_t t = (uint64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        r->d[i] = (uint32_t)t;
        borrow = (t >> 63) & 1;
    }
    r->n = a->n;
    bn_trim(r);
    return 0;
}

/* r = a * b (r may not alias). */
static int bn_mul(calc_ctx *c, calc_bn *r, const calc_bn *a, const calc_bn *b)
{
    if (a->n == 0 || b->n == 0) {
        r->n = 0;
        return bn_reserve(c, r, 1);
    }
    size_t n = a->n + b->n;
    if (bn_reserve(c, r, n) < 0)
        return -1;
    memset(r->d, 0, n * sizeof *r->d);
    for (size_t i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (size_t j = 0; j < b->n; j++) {
            uint64_t t = (uint64_t)a->d[i] * b->d[j] + r->d[i + j] + carry;
            r->d[i + j] = (uint32_t)t;
            carry = t >> 32;
        }
        r->d[i + b->n] = (uint32_t)carry;
    }
    r->n = n;
    bn_trim(r);
    return bn_check(c, r);
}

static int bn_nlz(uint32_t x)
{
    int n = 0;
    while (!(x & 0x80000000u)) {
        x <<= 1;
        n++;
    }
    return n;
}

/* q = a / b, r = a % b for b != 0 (Knuth, TAOCP 4.3.1, algorithm D).
 * q and r may not alias a, b or each other; either may be NULL. */
static int bn_divmod(calc_ctx *c, calc_bn *q, calc_bn *r, const calc_bn *a, const calc_bn *b)
{
    const uint64_t base = 1ull << 32;
    size_t m = a->n, n = b->n;
    uint32_t *un = NULL, *vn = NULL;
    calc_bn qq = {0};
    if (bn_cmp(a, b) < 0) {
        if (q && bn_set_u32(c, q, 0) < 0)
            return -1;
        return r ? bn_copy(c, r, a) : 0;
    }
    if (bn_reserve(c, &qq, m - n + 1) < 0)
        goto fail;
    if (n == 1) {
        uint64_t k = 0;
        for (size_t j = m; j-- > 0;) {
            uint64_t cur = (k << 32) | a->d[j];
            qq.d[j] = (uint32_t)(cur / b->d[0]);
            k = cur % b->d[0];
        }
        qq.n = m;
        bn_trim(&qq);
        if (r && bn_set_u32(c, r, (uint32_t)k) < 0)
            goto fail;
    } else {
        int s = bn_nlz(b->d[n - 1]);
        un = calloc(m + 1, sizeof *un);
        vn = calloc(n, sizeof *vn);
        if (!un || !vn) {
            calc_error(c, "out of memory");
            goto fail;
        }
        for (size_t i = n; i-- > 0;)
            vn[i] = (b->d[i] << s) | (s && i ? (uint32_t)((uint64_t)b->d[i - 1] >> (32 - s)) : 0);
        un[m] = s ? (uint32_t)((uint64_t)a->d[m - 1] >> (32 - s)) : 0;
        for (size_t i = m; i-- > 0;)
            un[i] = (a->d[i] << s) | (s && i ? (uint32_t)((uint64_t)a->d[i - 1] >> (32 - s)) : 0);
        for (size_t j = m - n + 1; j-- > 0;) {
            uint64_t num = ((uint64_t)un[j + n] << 32) | un[j + n - 1];
            uint64_t qhat = num / vn[n - 1];
            uint64_t rhat = num % vn[n - 1];
            while (qhat >= base || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
                qhat--;
                rhat += vn[n - 1];
                if (rhat >= base)
                    break;
            }
            uint64_t borrow = 0, carry = 0;
            for (size_t i = 0; i < n; i++) {
                uint64_t p = qhat * vn[i] + carry;
                carry = p >> 32;
                uint64_t t = (uint64_t)un[i + j] - (p & 0xFFFFFFFFu) - borrow;
                un[i + j] = (uint32_t)t;
                borrow = (t >> 63) & 1;
            }
            uint64_t t = (uint64_t)un[j + n] - carry - borrow;
            un[j + n] = (uint32_t)t;
            if ((t >> 63) & 1) { /* qhat was one too large: add back */
                qhat--;
                uint64_t k = 0;
                for (size_t i = 0; i < n; i++) {
                    uint64_t sum = (uint64_t)un[i + j] + vn[i] + k;
                    un[i + j] = (uint32_t)sum;
                    k = sum >> 32;
                }
                un[j + n] = (uint32_t)((uint64_t)un[j + n] + k);
            }
            qq.d[j] = (uint32_t)qhat;
        }
        qq.n = m - n + 1;
        bn_trim(&qq);
        if (r) {
            if (bn_reserve(c, r, n) < 0)
                goto fail;
            for (size_t i = 0; i < n; i++)
                r->d[i] = (un[i] >> s) | (s ? (uint32_t)((uint64_t)un[i + 1] << (32 - s)) : 0);
            r->n = n;
            bn_trim(r);
        }
    }
    if (q) {
        bn_free(q);
        *q = qq;
    } else {
        bn_free(&qq);
    }
    free(un);
    free(vn);
    return 0;
fail:
    bn_free(&qq);
    free(un);
    free(vn);
    return -1;
}

/* r = gcd(a, b), Euclid. */
static int bn_gcd(calc_ctx *c, calc_bn *r, const calc_bn *a, const calc_bn *b)
{
    calc_bn x = {0}, y = {0}, t = {0};
    int rc = -1;
    if (bn_copy(c, &x, a) < 0 || bn_copy(c, &y, b) < 0)
        goto out;
    while (y.n) {
        if (bn_divmod(c, NULL, &t, &x, &y) < 0)
            goto out;
        calc_bn tmp = x;
        x = y;
        y = t;
        t = tmp;
    }
    rc = bn_copy(c, r, &x);
out:
    bn_free(&x);
    bn_free(&y);
    bn_free(&t);
    return rc;
}

/* Appends the decimal digits of a to buf (at most cap-1 chars, NUL-ended).
 * Returns the number of digits, or -1 if they do not fit. */
static int bn_to_dec(calc_ctx *c, const calc_bn *a, char *buf, size_t cap)
{
    calc_bn t = {0};
    if (bn_copy(c, &t, a) < 0)
        return -1;
    size_t nchunks = 0, maxchunks = a->n * 10 / 9 + 2;
    uint32_t *chunks = malloc(maxchunks * sizeof *chunks);
    if (!chunks) {
        bn_free(&t);
        calc_error(c, "out of memory");
        return -1;
    }
    while (t.n && nchunks < maxchunks)
        chunks[nchunks++] = bn_div_small(&t, 1000000000u);
    bn_free(&t);
    char tmp[16];
    size_t len = 0;
    if (nchunks == 0) {
        tmp[0] = '0';
        len = 1;
        if (cap < 2) {
            free(chunks);
            calc_error(c, "result too long");
            return -1;
        }
        memcpy(buf, tmp, 1);
    }
    for (size_t i = nchunks; i-- > 0;) {
        int w = snprintf(tmp, sizeof tmp, i == nchunks - 1 ? "%u" : "%09u", chunks[i]);
        if (w < 0 || len + (size_t)w + 1 > cap) {
            free(chunks);
            calc_error(c, "result too long");
            return -1;
        }
        memcpy(buf + len, tmp, (size_t)w);
        len += (size_t)w;
    }
    buf[len] = 0;
    free(chunks);
    return (int)len;
}

/* ------------------------------------------------------------- rationals */

/* num/den reduced, den > 0, zero is 0/1 with neg = 0. */
typedef struct calc_rat {
    int neg;
    calc_bn num, den;
} calc_rat;

static void rat_free(calc_rat *a)
{
    bn_free(&a->num);
    bn_free(&a->den);
}

static int rat_reduce(calc_ctx *c, calc_rat *a)
{
    if (a->num.n == 0) {
        a->neg = 0;
        return bn_set_u32(c, &a->den, 1);
    }
    if (bn_is_one(&a->den))
        return 0;
    calc_bn g = {0}, t = {0};
    int rc = -1;
    if (bn_gcd(c, &g, &a->num, &a->den) < 0)
        goto out;
    if (!bn_is_one(&g)) {
        if (bn_divmod(c, &t, NULL, &a->num, &g) < 0)
            goto out;
        bn_free(&a->num);
        a->num = t;
        t = (calc_bn){0};
        if (bn_divmod(c, &t, NULL, &a->den, &g) < 0)
            goto out;
        bn_free(&a->den);
        a->den = t;
        t = (calc_bn){0};
    }
    rc = 0;
out:
    bn_free(&g);
    bn_free(&t);
    return rc;
}

/* r = a + b (or a - b when negate_b). r must be fresh (zeroed). */
static int rat_add(calc_ctx *c, calc_rat *r, const calc_rat *a, const calc_rat *b, int negate_b)
{
    calc_bn x = {0}, y = {0};
    int rc = -1;
    int bneg = b->num.n ? b->neg ^ negate_b : 0;
    if (bn_mul(c, &x, &a->num, &b->den) < 0 || bn_mul(c, &y, &b->num, &a->den) < 0 ||
        bn_mul(c, &r->den, &a->den, &b->den) < 0)
        goto out;
    if (a->neg == bneg) {
        if (bn_add(c, &r->num, &x, &y) < 0)
            goto out;
        r->neg = a->neg;
    } else if (bn_cmp(&x, &y) >= 0) {
        if (bn_sub(c, &r->num, &x, &y) < 0)
            goto out;
        r->neg = a->neg;
    } else {
        if (bn_sub(c, &r->num, &y, &x) < 0)
            goto out;
        r->neg = bneg;
    }
    rc = rat_reduce(c, r);
out:
    bn_free(&x);
    bn_free(&y);
    return rc;
}

static int rat_mul(calc_ctx *c, calc_rat *r, const calc_rat *a, const calc_rat *b)
{
    if (bn_mul(c, &r->num, &a->num, &b->num) < 0 || bn_mul(c, &r->den, &a->den, &b->den) < 0)
        return -1;
    r->neg = a->neg ^ b->neg;
    return rat_reduce(c, r);
}

static int rat_div(calc_ctx *c, calc_rat *r, const calc_rat *a, const calc_rat *b)
{
    if (bn_mul(c, &r->num, &a->num, &b->den) < 0 || bn_mul(c, &r->den, &a->den, &b->num) < 0)
        return -1;
    r->neg = a->neg ^ b->neg;
    return rat_reduce(c, r);
}

/* r = a - b * trunc(a / b). */
static int rat_mod(calc_ctx *c, calc_rat *r, const calc_rat *a, const calc_rat *b)
{
    calc_bn x = {0}, y = {0};
    calc_rat q = {0}, bq = {0};
    int rc = -1;
    if (bn_mul(c, &x, &a->num, &b->den) < 0 || bn_mul(c, &y, &a->den, &b->num) < 0 ||
        bn_divmod(c, &q.num, NULL, &x, &y) < 0 || bn_set_u32(c, &q.den, 1) < 0)
        goto out;
    q.neg = q.num.n ? a->neg ^ b->neg : 0;
    if (rat_mul(c, &bq, b, &q) < 0 || rat_add(c, r, a, &bq, 1) < 0)
        goto out;
    rc = 0;
out:
    bn_free(&x);
    bn_free(&y);
    rat_free(&q);
    rat_free(&bq);
    return rc;
}

/* ---------------------------------------------------------------- parser */

static void calc_skip_ws(calc_ctx *c)
{
    while (c->pos < c->len && (c->src[c->pos] == ' ' || c->src[c->pos] == '\t' ||
                               c->src[c->pos] == '\n' || c->src[c->pos] == '\r'))
        c->pos++;
}

static void calc_unexpected(calc_ctx *c)
{
    if (c->pos >= c->len) {
        calc_error(c, "unexpected end of input at column %zu", c->pos + 1);
        return;
    }
    unsigned char ch = (unsigned char)c->src[c->pos];
    if (ch >= 0x20 && ch < 0x7F)
        calc_error(c, "unexpected '%c' at column %zu", ch, c->pos + 1);
    else
        calc_error(c, "unexpected byte 0x%02X at column %zu", ch, c->pos + 1);
}

static int calc_is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* number -> digits ['.' [digits]] | '.' digits */
static int calc_number(calc_ctx *c, calc_rat *r)
{
    size_t start = c->pos;
    size_t ndigits = 0, nfrac = 0;
    int seen_dot = 0;
    if (bn_set_u32(c, &r->num, 0) < 0 || bn_set_u32(c, &r->den, 1) < 0)
        return -1;
    while (c->pos < c->len) {
        char ch = c->src[c->pos];
        if (calc_is_digit(ch)) {
            if (bn_mul_small(c, &r->num, 10, (uint32_t)(ch - '0')) < 0)
                return -1;
            ndigits++;
            if (seen_dot)
                nfrac++;
        } else if (ch == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
        c->pos++;
    }
    if (ndigits == 0) {
        c->pos = start;
        calc_unexpected(c);
        return -1;
    }
    for (size_t i = 0; i < nfrac; i++)
        if (bn_mul_small(c, &r->den, 10, 0) < 0)
            return -1;
    r->neg = 0;
    return rat_reduce(c, r);
}

static int calc_expr(calc_ctx *c, calc_rat *r);

/* primary -> number | '(' expr ')' */
static int calc_primary(calc_ctx *c, calc_rat *r)
{
    calc_skip_ws(c);
    if (c->pos < c->len && c->src[c->pos] == '(') {
        size_t open = c->pos;
        c->pos++;
        if (calc_expr(c, r) < 0)
            return -1;
        calc_skip_ws(c);
        if (c->pos >= c->len) {
            calc_error(c, "missing ')' for '(' at column %zu", open + 1);
            return -1;
        }
        if (c->src[c->pos] != ')') {
            calc_unexpected(c);
            return -1;
        }
        c->pos++;
        return 0;
    }
    if (c->pos < c->len && (calc_is_digit(c->src[c->pos]) || c->src[c->pos] == '.'))
        return calc_number(c, r);
    calc_unexpected(c);
    return -1;
}

/* unary -> ('+' | '-') unary | primary */
static int calc_unary(calc_ctx *c, calc_rat *r)
{
    if (++c->depth > AC_CALC_MAX_DEPTH) {
        calc_error(c, "expression nested too deeply (limit %d) at column %zu", AC_CALC_MAX_DEPTH,
                   c->pos + 1);
        return -1;
    }
    calc_skip_ws(c);
    int rc;
    if (c->pos < c->len && (c->src[c->pos] == '-' || c->src[c->pos] == '+')) {
        int neg = c->src[c->pos] == '-';
        c->pos++;
        rc = calc_unary(c, r);
        if (rc == 0 && neg && r->num.n)
            r->neg = !r->neg;
    } else {
        rc = calc_primary(c, r);
    }
    c->depth--;
    return rc;
}

/* term -> unary (('*' | '/' | '%') unary)* */
static int calc_term(calc_ctx *c, calc_rat *r)
{
    if (calc_unary(c, r) < 0)
        return -1;
    for (;;) {
        calc_skip_ws(c);
        if (c->pos >= c->len)
            return 0;
        char op = c->src[c->pos];
        if (op != '*' && op != '/' && op != '%')
            return 0;
        size_t oppos = c->pos;
        c->pos++;
        calc_rat rhs = {0}, res = {0};
        int rc = calc_unary(c, &rhs);
        if (rc == 0 && op != '*' && rhs.num.n == 0) {
            calc_error(c, "%s by zero at column %zu", op == '/' ? "division" : "modulo", oppos + 1);
            rc = -1;
        }
        if (rc == 0)
            rc = op == '*' ? rat_mul(c, &res, r, &rhs)
                           : (op == '/' ? rat_div(c, &res, r, &rhs) : rat_mod(c, &res, r, &rhs));
        rat_free(&rhs);
        if (rc < 0) {
            rat_free(&res);
            return -1;
        }
        rat_free(r);
        *r = res;
    }
}

/* expr -> term (('+' | '-') term)* */
static int calc_expr(calc_ctx *c, calc_rat *r)
{
    if (++c->depth > AC_CALC_MAX_DEPTH) {
        calc_error(c, "expression nested too deeply (limit %d) at column %zu", AC_CALC_MAX_DEPTH,
                   c->pos + 1);
        return -1;
    }
    int rc = calc_term(c, r);
    while (rc == 0) {
        calc_skip_ws(c);
        if (c->pos >= c->len)
            break;
        char op = c->src[c->pos];
        if (op != '+' && op != '-')
            break;
        c->pos++;
        calc_rat rhs = {0}, res = {0};
        rc = calc_term(c, &rhs);
        if (rc == 0)
            rc = rat_add(c, &res, r, &rhs, op == '-');
        rat_free(&rhs);
        if (rc < 0) {
            rat_free(&res);
            break;
        }
        rat_free(r);
        *r = res;
    }
    c->depth--;
    return rc;
}

/* ---------------------------------------------------------------- output */

/* Writes an integer with `scale` implied decimals: 12345, scale 2 -> 123.45. */
static int calc_put_scaled(calc_ctx *c, const calc_bn *v, size_t scale, int neg, char *out,
                           size_t outcap, int strip)
{
    size_t cap = (size_t)v->n * 10 + scale + 4;
    char *dig = malloc(cap);
    if (!dig) {
        calc_error(c, "out of memory");
        return -1;
    }
    int nd = bn_to_dec(c, v, dig, cap);
    if (nd < 0) {
        free(dig);
        calc_error(c, "out of memory");
        return -1;
    }
    size_t n = (size_t)nd, o = 0;
    char *buf = malloc(n + scale + 4);
    if (!buf) {
        free(dig);
        calc_error(c, "out of memory");
        return -1;
    }
    if (neg)
        buf[o++] = '-';
    if (n <= scale) {
        buf[o++] = '0';
        buf[o++] = '.';
        for (size_t i = n; i < scale; i++)
            buf[o++] = '0';
        memcpy(buf + o, dig, n);
        o += n;
    } else {
        memcpy(buf + o, dig, n - scale);
        o += n - scale;
        if (scale) {
            buf[o++] = '.';
            memcpy(buf + o, dig + n - scale, scale);
            o += scale;
        }
    }
    if (strip && scale) {
        while (buf[o - 1] == '0')
            o--;
        if (buf[o - 1] == '.')
            o--;
    }
    buf[o] = 0;
    free(dig);
    size_t used = strlen(out);
    int rc = 0;
    if (used + o + 1 > outcap) {
        calc_error(c, "result too long for the output buffer (%zu bytes)", used + o + 1);
        rc = -1;
    } else {
        memcpy(out + used, buf, o + 1);
    }
    free(buf);
    return rc;
}

static int calc_append(calc_ctx *c, char *out, size_t outcap, const char *s)
{
    size_t used = strlen(out), n = strlen(s);
    if (used + n + 1 > outcap) {
        calc_error(c, "result too long for the output buffer (%zu bytes)", used + n + 1);
        return -1;
    }
    memcpy(out + used, s, n + 1);
    return 0;
}

/* round(num * 10^k / den), half away from zero, on magnitudes. */
static int calc_round_scaled(calc_ctx *c, const calc_rat *v, size_t k, calc_bn *q)
{
    calc_bn x = {0}, rem = {0}, twice = {0};
    int rc = -1;
    if (bn_copy(c, &x, &v->num) < 0)
        goto out;
    for (size_t i = 0; i < k; i++)
        if (bn_mul_small(c, &x, 10, 0) < 0)
            goto out;
    if (bn_divmod(c, q, &rem, &x, &v->den) < 0 || bn_add(c, &twice, &rem, &rem) < 0)
        goto out;
    if (bn_cmp(&twice, &v->den) >= 0 && bn_mul_small(c, q, 1, 1) < 0)
        goto out;
    rc = 0;
out:
    bn_free(&x);
    bn_free(&rem);
    bn_free(&twice);
    return rc;
}

static int calc_format(calc_ctx *c, const calc_rat *v, char *out, size_t outcap)
{
    out[0] = 0;
    if (bn_is_one(&v->den))
        return calc_put_scaled(c, &v->num, 0, v->neg, out, outcap, 0);
    /* terminating iff den = 2^i 5^j; then num * 10^max(i,j) / den is exact */
    calc_bn d = {0}, q = {0};
    int rc = -1;
    size_t twos = 0, fives = 0;
    if (bn_copy(c, &d, &v->den) < 0)
        goto out;
    for (;;) {
        calc_bn t = {0};
        if (bn_copy(c, &t, &d) < 0)
            goto out;
        if (bn_div_small(&t, 2) == 0) {
            bn_free(&d);
            d = t;
            twos++;
            continue;
        }
        bn_free(&t);
        if (bn_copy(c, &t, &d) < 0)
            goto out;
        if (bn_div_small(&t, 5) == 0) {
            bn_free(&d);
            d = t;
            fives++;
            continue;
        }
        bn_free(&t);
        break;
    }
    if (bn_is_one(&d)) {
        size_t k = twos > fives ? twos : fives;
        if (calc_round_scaled(c, v, k, &q) < 0)
            goto out;
        rc = calc_put_scaled(c, &q, k, v->neg, out, outcap, 0);
        goto out;
    }
    /* fraction and approximation */
    if ((v->neg && calc_append(c, out, outcap, "-") < 0) ||
        calc_put_scaled(c, &v->num, 0, 0, out, outcap, 0) < 0 ||
        calc_append(c, out, outcap, "/") < 0 ||
        calc_put_scaled(c, &v->den, 0, 0, out, outcap, 0) < 0 ||
        calc_append(c, out, outcap, " (\xE2\x89\x88 ") < 0)
        goto out;
    if (calc_round_scaled(c, v, CALC_APPROX_DECIMALS, &q) < 0)
        goto out;
    if (q.n) {
        if (calc_put_scaled(c, &q, CALC_APPROX_DECIMALS, v->neg, out, outcap, 1) < 0)
            goto out;
    } else {
        /* too small for 12 decimals: scientific notation with ~12 digits */
        char dd[32];
        int dn = 0, nn = 0;
        size_t k;
        char tmp[AC_CALC_MAX_DIGITS + 64];
        nn = bn_to_dec(c, &v->num, tmp, sizeof tmp);
        dn = bn_to_dec(c, &v->den, tmp, sizeof tmp);
        if (nn < 0 || dn < 0)
            goto out;
        k = (size_t)(dn - nn) + CALC_APPROX_DECIMALS;
        bn_free(&q);
        if (calc_round_scaled(c, v, k, &q) < 0)
            goto out;
        int qn = bn_to_dec(c, &q, tmp, sizeof tmp);
        if (qn < 1)
            goto out;
        long exp10 = (long)qn - 1 - (long)k;
        size_t mant = (size_t)qn;
        while (mant > 1 && tmp[mant - 1] == '0')
            mant--;
        snprintf(dd, sizeof dd, "e%ld", exp10);
        char m[64];
        snprintf(m, sizeof m, "%s%c%s%.*s", v->neg ? "-" : "", tmp[0], mant > 1 ? "." : "",
                 (int)(mant > 1 ? (mant - 1 > 20 ? 20 : mant - 1) : 0), tmp + 1);
        if (calc_append(c, out, outcap, m) < 0 || calc_append(c, out, outcap, dd) < 0)
            goto out;
    }
    rc = calc_append(c, out, outcap, ")");
out:
    bn_free(&d);
    bn_free(&q);
    return rc;
}

int ac_calc_eval(const char *expr, char *out, size_t outcap, char *err, size_t errcap)
{
    calc_ctx c = {.src = expr, .err = err, .errcap = errcap};
    calc_rat r = {0};
    if (err && errcap)
        err[0] = 0;
    if (!out || outcap == 0) {
        calc_error(&c, "no output buffer");
        return -1;
    }
    out[0] = 0;
    if (!expr) {
        calc_error(&c, "no expression");
        return -1;
    }
    c.len = strnlen(expr, AC_CALC_MAX_INPUT + 1);
    if (c.len > AC_CALC_MAX_INPUT) {
        calc_error(&c, "expression too long (limit %d bytes)", AC_CALC_MAX_INPUT);
        return -1;
    }
    calc_skip_ws(&c);
    if (c.pos == c.len) {
        calc_error(&c, "empty expression");
        return -1;
    }
    if (calc_expr(&c, &r) < 0)
        goto fail;
    calc_skip_ws(&c);
    if (c.pos < c.len) {
        calc_unexpected(&c);
        goto fail;
    }
    if (calc_format(&c, &r, out, outcap) < 0)
        goto fail;
    rat_free(&r);
    return 0;
fail:
    rat_free(&r);
    out[0] = 0;
    return -1;
}
