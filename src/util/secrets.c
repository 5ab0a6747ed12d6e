/* Configured credentials; see secrets.h. */
#include "util/secrets.h"
#include "util/grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct sec_list {
    char **v;
    size_t n, cap;
    int oom;
} sec_list;

static void sec_add(sec_list *l, const char *s, size_t n, size_t min_len)
{
    if (l->oom || n == 0 || n < min_len)
        return;
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == n && memcmp(l->v[i], s, n) == 0)
            return;
    if (ac_grow((void **)&l->v, &l->cap, l->n + 2, sizeof *l->v)) { /* and the NULL */
        l->oom = 1;
        return;
    }
    char *d = malloc(n + 1);
    if (!d) {
        l->oom = 1;
        return;
    }
    memcpy(d, s, n);
    d[n] = '\0';
    l->v[l->n++] = d;
    l->v[l->n] = NULL;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The userinfo of url's authority (after "://"; with scheme_optional, from the start when
 * there is none): 1 with *at and *len, else 0. */
static int url_userinfo(const char *url, int scheme_optional, const char **at, size_t *len)
{
    const char *p = url ? strstr(url, "://") : NULL;
    if (!p && !(url && scheme_optional))
        return 0;
    p = p ? p + 3 : url;
    size_t auth = strcspn(p, "/?#");
    const char *last = NULL;
    for (size_t i = 0; i < auth; i++)
        if (p[i] == '@')
            last = p + i;
    if (!last)
        return 0;
    *at = p;
    *len = (size_t)(last - p);
    return 1;
}

/* The Basic credentials curl sends for a URL's userinfo: base64 of "user:pass". */
static void sec_add_base64(sec_list *l, const char *s, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t cap = (n + 2) / 3 * 4 + 1;
    char *o = malloc(cap);
    if (!o) {
        l->oom = 1;
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        o[k++] = tab[v >> 18 & 63];
        o[k++] = tab[v >> 12 & 63];
        o[k++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        o[k++] = i + 2 < n ? tab[v & 63] : '=';
    }
    sec_add(l, o, k, AC_SECRET_MIN_LEN);
    memset(o, 0, cap);
    free(o);
}

static int by_length_desc(const void *a, const void *b)
{
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

char **ac_secrets_collect(const char *api_key, const char *base_url, const char *const *headers)
{
    sec_list l = {0};
    if (api_key)
        sec_add(&l, api_key, strlen(api_key), 1);
    for (const char *const *h = headers; h && *h; h++) {
        const char *colon = strchr(*h, ':');
        if (!colon)
            continue;
        const char *v = colon + 1, *e = v + strlen(v);
        while (v < e && is_blank(*v))
            v++;
        while (e > v && is_blank(e[-1]))
            e--;
        sec_add(&l, v, (size_t)(e - v), AC_SECRET_MIN_LEN);
        const char *sp = e;
        while (sp > v && !is_blank(sp[-1]))
            sp--;
        if (sp > v) /* "Scheme token": the token too */
            sec_add(&l, sp, (size_t)(e - sp), AC_SECRET_MIN_LEN);
    }
    const char *ui;
    size_t ul;
    if (url_userinfo(base_url, 0, &ui, &ul)) {
        sec_add(&l, ui, ul, AC_SECRET_MIN_LEN);
        if (ul >= AC_SECRET_MIN_LEN)
            sec_add_base64(&l, ui, ul);
        const char *c = memchr(ui, ':', ul);
        if (c)
            sec_add(&l, c + 1, ul - (size_t)(c + 1 - ui), AC_SECRET_MIN_LEN);
    }
    if (!l.oom && !l.v) {
        l.v = calloc(1, sizeof *l.v);
        if (!l.v)
            l.oom = 1;
    }
    if (l.oom) {
        ac_secrets_free(l.v);
        return NULL;
    }
    qsort(l.v, l.n, sizeof *l.v, by_length_desc);
    return l.v;
}

void ac_secrets_free(char **secrets)
{
    if (!secrets)
        return;
    for (char **s = secrets; *s; s++) {
        volatile char *c = *s;
        for (size_t i = 0; c[i]; i++)
            c[i] = 0;
        free(*s);
    }
    free(secrets);
}

int ac_secrets_match(char *const *secrets, const char *s)
{
    for (char *const *p = secrets; p && *p && s; p++)
        if (strcmp(*p, s) == 0)
            return 1;
    return 0;
}

char *ac_url_redact_userinfo(const char *url)
{
    static const char mask[] = "[redacted]";
    const char *ui;
    size_t ul;
    if (!url)
        return NULL;
    size_t n = strlen(url);
    if (!url_userinfo(url, 0, &ui, &ul)) {
        char *d = malloc(n + 1);
        if (d)
            memcpy(d, url, n + 1);
        return d;
    }
    size_t pre = (size_t)(ui - url), post = n - pre - ul;
    char *d = malloc(pre + sizeof mask - 1 + post + 1);
    if (!d)
        return NULL;
    memcpy(d, url, pre);
    memcpy(d + pre, mask, sizeof mask - 1);
    memcpy(d + pre + sizeof mask - 1, ui + ul, post + 1);
    return d;
}

char *ac_url_strip_userinfo(const char *url)
{
    const char *ui;
    size_t ul;
    if (!url)
        return NULL;
    size_t n = strlen(url);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (!url_userinfo(url, 1, &ui, &ul)) {
        memcpy(d, url, n + 1);
        return d;
    }
    size_t pre = (size_t)(ui - url);
    memcpy(d, url, pre);
    memcpy(d + pre, ui + ul + 1, n - pre - ul); /* past the '@', its NUL included */
    return d;
}
