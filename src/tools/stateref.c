/*
 * stateref.c - parsing and evaluating State references (grammar: stateref.h).
 */
#include "tools/stateref.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAGGER_LEN 3

static int is_dagger(const char *s, size_t len, size_t at)
{
    return at + DAGGER_LEN <= len && memcmp(s + at, AC_REF_DAGGER, DAGGER_LEN) == 0;
}

int ac_ref_kind(const char *s, size_t len)
{
    if (!s || !is_dagger(s, len, 0))
        return 0;
    return is_dagger(s, len, DAGGER_LEN) ? 1 : 2;
}

static int perr(char *err, size_t errcap, const char *fmt, ...)
{
    if (err && errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errcap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void path_free(ac_ref_path *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->steps[i].key);
    free(p->steps);
    p->steps = NULL;
    p->n = 0;
}

void ac_ref_expr_free(ac_ref_expr *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        path_free(&e->paths[i]);
    free(e->paths);
    memset(e, 0, sizeof *e);
}

static int key_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '$';
}

typedef struct cur {
    const char *s;
    size_t len, at;
    char *err;
    size_t errcap;
} cur;

static void skip_ws(cur *c)
{
    while (c->at < c->len && (c->s[c->at] == ' ' || c->s[c->at] == '\t'))
        c->at++;
}

static int add_step(ac_ref_path *p, char *key, long index, cur *c)
{
    if (p->n == AC_REF_MAX_STEPS) {
        free(key);
        return perr(c->err, c->errcap, "more than %d steps in a path (at byte %zu)",
                    AC_REF_MAX_STEPS, c->at);
    }
    ac_ref_step *v = realloc(p->steps, (p->n + 1) * sizeof *v);
    if (!v) {
        free(key);
        return perr(c->err, c->errcap, "out of memory");
    }
    p->steps = v;
    p->steps[p->n].key = key;
    p->steps[p->n].index = index;
    p->n++;
    return 0;
}

/* "[" already consumed: a quoted key up to and including "]". */
static int parse_quoted(cur *c, ac_ref_path *p)
{
    size_t start = ++c->at; /* past the opening quote */
    char *key = malloc(c->len - start + 1);
    if (!key)
        return perr(c->err, c->errcap, "out of memory");
    size_t k = 0;
    for (;;) {
        if (c->at >= c->len) {
            free(key);
            return perr(c->err, c->errcap, "unterminated quoted key (at byte %zu)", start - 1);
        }
        unsigned char ch = (unsigned char)c->s[c->at];
        if (ch == '"')
            break;
        if (ch < 0x20) {
            free(key);
            return perr(c->err, c->errcap, "control character in a quoted key (at byte %zu)",
                        c->at);
        }
        if (ch == '\\') {
            if (c->at + 1 >= c->len || (c->s[c->at + 1] != '"' && c->s[c->at + 1] != '\\')) {
                free(key);
                return perr(c->err, c->errcap,
                            "only \\\" and \\\\ escapes are allowed in a quoted key (at byte %zu)",
                            c->at);
            }
            c->at++;
            ch = (unsigned char)c->s[c->at];
        }
        key[k++] = (char)ch;
        c->at++;
    }
    key[k] = 0;
    c->at++; /* the closing quote */
    if (c->at >= c->len || c->s[c->at] != ']') {
        free(key);
        return perr(c->err, c->errcap, "expected ']' after a quoted key (at byte %zu)", c->at);
    }
    c->at++;
    return add_step(p, key, -1, c);
}

static int parse_operand(cur *c, ac_ref_path *p)
{
    memset(p, 0, sizeof *p);
    if (!is_dagger(c->s, c->len, c->at))
        return perr(c->err, c->errcap,
                    "expected a reference beginning with " AC_REF_DAGGER " (at byte %zu)", c->at);
    c->at += DAGGER_LEN;
    if (c->len - c->at >= 5 && memcmp(c->s + c->at, "state", 5) == 0) {
        p->root = AC_REF_STATE;
        c->at += 5;
    } else if (c->len - c->at >= 5 && memcmp(c->s + c->at, "input", 5) == 0) {
        p->root = AC_REF_INPUT;
        c->at += 5;
    } else
        return perr(c->err, c->errcap,
                    "a reference starts with " AC_REF_DAGGER "state or " AC_REF_DAGGER
                    "input (at byte %zu)",
                    c->at);
    while (c->at < c->len) {
        char ch = c->s[c->at];
        if (ch == '.') {
            size_t start = ++c->at;
            while (c->at < c->len && key_char((unsigned char)c->s[c->at]))
                c->at++;
            if (c->at == start)
                return perr(c->err, c->errcap,
                            "expected a key after '.' (at byte %zu; quote other keys: "
                            "[\"a key\"])",
                            start);
            char *key = malloc(c->at - start + 1);
            if (!key)
                return perr(c->err, c->errcap, "out of memory");
            memcpy(key, c->s + start, c->at - start);
            key[c->at - start] = 0;
            if (add_step(p, key, -1, c) < 0)
                return -1;
        } else if (ch == '[') {
            c->at++;
            if (c->at < c->len && c->s[c->at] == '"') {
                if (parse_quoted(c, p) < 0)
                    return -1;
                continue;
            }
            size_t start = c->at;
            long idx = 0;
            while (c->at < c->len && c->s[c->at] >= '0' && c->s[c->at] <= '9' &&
                   c->at - start < 9) {
                idx = idx * 10 + (c->s[c->at] - '0');
                c->at++;
            }
            if (c->at == start)
                return perr(c->err, c->errcap,
                            "expected an index (0 to 999999999) or a quoted key after '[' (at "
                            "byte %zu)",
                            start);
            if (c->at >= c->len || c->s[c->at] != ']')
                return perr(c->err, c->errcap, "expected ']' (at byte %zu)", c->at);
            c->at++;
            if (add_step(p, NULL, idx, c) < 0)
                return -1;
        } else
            break;
    }
    return 0;
}

int ac_ref_parse(const char *text, size_t len, ac_ref_expr *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return perr(err, errcap, "no text");
    if (len > AC_REF_MAX_TEXT)
        return perr(err, errcap, "a reference longer than %d bytes", AC_REF_MAX_TEXT);
    if (memchr(text, 0, len))
        return perr(err, errcap, "a NUL byte in a reference");
    cur c = {text, len, 0, err, errcap};
    out->paths = calloc(AC_REF_MAX_OPERANDS, sizeof *out->paths);
    if (!out->paths)
        return perr(err, errcap, "out of memory");
    for (;;) {
        skip_ws(&c);
        if (out->n == AC_REF_MAX_OPERANDS) {
            perr(err, errcap, "more than %d references in one expression", AC_REF_MAX_OPERANDS);
            goto fail;
        }
        int rc = parse_operand(&c, &out->paths[out->n]);
        out->n++; /* freed on failure, whatever it holds */
        if (rc < 0)
            goto fail;
        skip_ws(&c);
        if (c.at == c.len)
            return 0;
        int op;
        if (c.len - c.at >= 2 && memcmp(text + c.at, "||", 2) == 0)
            op = AC_REF_OR;
        else if (c.len - c.at >= 2 && memcmp(text + c.at, "&&", 2) == 0)
            op = AC_REF_AND;
        else {
            perr(err, errcap, "unexpected '%c' (at byte %zu; expected '.', '[', '||' or '&&')",
                 (unsigned char)text[c.at] >= 0x20 && (unsigned char)text[c.at] < 0x7f ? text[c.at]
                                                                                       : '?',
                 c.at);
            goto fail;
        }
        if (out->op != AC_REF_ONE && out->op != op) {
            perr(err, errcap, "'||' and '&&' mixed in one expression (at byte %zu)", c.at);
            goto fail;
        }
        out->op = op;
        c.at += 2;
    }
fail:
    ac_ref_expr_free(out);
    return -1;
}

static size_t put(char *buf, size_t cap, size_t at, const char *s, size_t n)
{
    for (size_t i = 0; i < n && at + 1 < cap; i++)
        buf[at++] = s[i];
    if (cap)
        buf[at < cap ? at : cap - 1] = 0;
    return at;
}

void ac_ref_path_text(const ac_ref_path *p, char *buf, size_t cap)
{
    if (!cap)
        return;
    buf[0] = 0;
    const char *root = p->root == AC_REF_INPUT ? AC_REF_DAGGER "input" : AC_REF_DAGGER "state";
    size_t at = put(buf, cap, 0, root, strlen(root));
    for (size_t i = 0; i < p->n; i++) {
        const ac_ref_step *st = &p->steps[i];
        if (!st->key) {
            char tmp[24];
            int k = snprintf(tmp, sizeof tmp, "[%ld]", st->index);
            at = put(buf, cap, at, tmp, k > 0 ? (size_t)k : 0);
            continue;
        }
        int plain = st->key[0] != 0;
        for (const char *k = st->key; *k && plain; k++)
            plain = key_char((unsigned char)*k);
        if (plain) {
            at = put(buf, cap, at, ".", 1);
            at = put(buf, cap, at, st->key, strlen(st->key));
        } else {
            at = put(buf, cap, at, "[\"", 2);
            for (const char *k = st->key; *k; k++) {
                if (*k == '"' || *k == '\\')
                    at = put(buf, cap, at, "\\", 1);
                at = put(buf, cap, at, k, 1);
            }
            at = put(buf, cap, at, "\"]", 2);
        }
    }
}

json_t *ac_ref_lookup(json_t *root, const ac_ref_path *p)
{
    json_t *v = root;
    for (size_t i = 0; v && i < p->n; i++) {
        const ac_ref_step *st = &p->steps[i];
        if (st->key)
            v = json_is_object(v) ? json_object_get(v, st->key) : NULL;
        else
            v = json_is_array(v) ? json_array_get(v, (size_t)st->index) : NULL;
    }
    return v;
}

static void unresolved(const ac_ref_path *p, json_t *input, char *err, size_t errcap)
{
    char t[512];
    ac_ref_path_text(p, t, sizeof t);
    perr(err, errcap, "unresolved reference %s%s", t,
         p->root == AC_REF_INPUT && !input ? " (the user message is not JSON)" : "");
}

json_t *ac_ref_eval(const ac_ref_expr *e, json_t *state, json_t *input, char *err, size_t errcap)
{
    json_t *got = NULL;
    for (size_t i = 0; i < e->n; i++) {
        const ac_ref_path *p = &e->paths[i];
        json_t *root = p->root == AC_REF_INPUT ? input : state;
        got = root ? ac_ref_lookup(root, p) : NULL;
        if (got && e->op == AC_REF_OR)
            return got;
        if (!got && e->op != AC_REF_OR) {
            unresolved(p, input, err, errcap);
            return NULL;
        }
    }
    if (!got && e->op == AC_REF_OR) {
        char t[1024] = "", one[256];
        size_t at = 0;
        for (size_t i = 0; i < e->n; i++) {
            ac_ref_path_text(&e->paths[i], one, sizeof one);
            at = put(t, sizeof t, at, i ? " || " : "", i ? 4 : 0);
            at = put(t, sizeof t, at, one, strlen(one));
        }
        perr(err, errcap, "unresolved reference %s (none of these exists)", t);
    }
    return got;
}

int ac_ref_set(json_t **doc, const ac_ref_path *p, json_t *value, char *err, size_t errcap)
{
    char t[512];
    if (p->root != AC_REF_STATE) {
        ac_ref_path_text(p, t, sizeof t);
        return perr(err, errcap, "cannot write %s: only " AC_REF_DAGGER "state paths are written",
                    t);
    }
    if (p->n == 0) {
        if (!json_is_object(value)) {
            return perr(err, errcap,
                        "cannot write " AC_REF_DAGGER "state: the whole State must be an object");
        }
        json_decref(*doc);
        *doc = json_incref(value);
        return 0;
    }
    /* check first, so a failure changes nothing */
    json_t *v = *doc;
    size_t i = 0;
    for (; i + 1 < p->n; i++) {
        const ac_ref_step *st = &p->steps[i];
        json_t *next;
        if (st->key) {
            if (!json_is_object(v))
                break;
            next = json_object_get(v, st->key);
        } else {
            if (!json_is_array(v))
                break;
            next = json_array_get(v, (size_t)st->index);
        }
        if (!next)
            break;
        v = next;
    }
    /* v: the deepest existing container on the way (steps 0..i-1 exist) */
    const ac_ref_step *st = &p->steps[i];
    int ok =
        st->key ? json_is_object(v) : json_is_array(v) && (size_t)st->index <= json_array_size(v);
    for (size_t k = i + 1; ok && k < p->n; k++)
        ok = p->steps[k].key != NULL; /* only objects are created */
    if (ok && i + 1 < p->n && !st->key && (size_t)st->index < json_array_size(v))
        ok = 0; /* an element exists there but is no container */
    if (!ok) {
        ac_ref_path_text(p, t, sizeof t);
        return perr(err, errcap, "cannot write %s: %s", t,
                    i + 1 < p->n || st->key || !json_is_array(v)
                        ? "a value on the way is not an object or array that holds it"
                        : "the index is past the end of the array");
    }
    for (size_t k = i; k < p->n; k++) {
        const ac_ref_step *s = &p->steps[k];
        int last = k + 1 == p->n;
        json_t *put_v = last ? json_incref(value) : json_object();
        if (!put_v)
            return perr(err, errcap, "out of memory");
        json_t *next = put_v;
        int rc;
        if (s->key)
            rc = json_object_set_new(v, s->key, put_v);
        else if ((size_t)s->index == json_array_size(v))
            rc = json_array_append_new(v, put_v);
        else
            rc = json_array_set_new(v, (size_t)s->index, put_v);
        if (rc)
            return perr(err, errcap, "out of memory");
        v = next;
    }
    return 0;
}

int ac_ref_overlap(const ac_ref_path *a, const ac_ref_path *b)
{
    if (a->root != b->root)
        return 0;
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        const ac_ref_step *x = &a->steps[i], *y = &b->steps[i];
        if ((x->key == NULL) != (y->key == NULL))
            return 0;
        if (x->key ? strcmp(x->key, y->key) != 0 : x->index != y->index)
            return 0;
    }
    return 1;
}

/* ac_ref_resolve with *left: the bytes the values of its references may still take. */
static int resolve(json_t *v, json_t *state, json_t *input, json_t **out, char *err, size_t errcap,
                   size_t *left)
{
    *out = NULL;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        int kind = ac_ref_kind(s, n);
        if (kind == 0) {
            *out = json_incref(v);
        } else if (kind == 1) {
            *out = json_stringn(s + DAGGER_LEN, n - DAGGER_LEN);
            if (!*out)
                return perr(err, errcap, "out of memory");
        } else {
            ac_ref_expr e;
            char why[400];
            if (ac_ref_parse(s, n, &e, why, sizeof why) < 0)
                return perr(err, errcap,
                            "invalid reference \"%.200s\": %s (write " AC_REF_DAGGER AC_REF_DAGGER
                            " for a literal dagger)",
                            s, why);
            json_t *got = ac_ref_eval(&e, state, input, err, errcap);
            ac_ref_expr_free(&e);
            if (!got)
                return -1;
            /* a value is shared here but written out once per use (the tool's input): a
             * few bytes of arguments must not expand without bound */
            size_t bytes = json_dumpb(got, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
            if (bytes > *left)
                return perr(err, errcap, "the references expand to more than %zu bytes (the limit)",
                            (size_t)AC_REF_MAX_RESOLVED);
            *left -= bytes;
            *out = json_incref(got);
        }
        return 0;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        if (!o)
            return perr(err, errcap, "out of memory");
        json_object_foreach(v, k, x)
        {
            json_t *r;
            if (resolve(x, state, input, &r, err, errcap, left) < 0 ||
                json_object_set_new(o, k, r) < 0) {
                json_decref(o);
                return -1;
            }
        }
        *out = o;
        return 0;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        if (!a)
            return perr(err, errcap, "out of memory");
        json_array_foreach(v, i, x)
        {
            json_t *r;
            if (resolve(x, state, input, &r, err, errcap, left) < 0 ||
                json_array_append_new(a, r) < 0) {
                json_decref(a);
                return -1;
            }
        }
        *out = a;
        return 0;
    }
    *out = json_incref(v);
    return 0;
}

int ac_ref_resolve(json_t *v, json_t *state, json_t *input, json_t **out, char *err, size_t errcap)
{
    size_t left = AC_REF_MAX_RESOLVED;
    return resolve(v, state, input, out, err, errcap, &left);
}

int ac_ref_reads(json_t *v, void (*fn)(void *ud, const ac_ref_path *p), void *ud, char *err,
                 size_t errcap)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (ac_ref_kind(s, n) != 2)
            return 0;
        ac_ref_expr e;
        char why[400];
        if (ac_ref_parse(s, n, &e, why, sizeof why) < 0)
            return perr(err, errcap,
                        "invalid reference \"%.200s\": %s (write " AC_REF_DAGGER AC_REF_DAGGER
                        " for a literal dagger)",
                        s, why);
        for (size_t i = 0; i < e.n; i++)
            if (e.paths[i].root == AC_REF_STATE)
                fn(ud, &e.paths[i]);
        ac_ref_expr_free(&e);
        return 0;
    }
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) if (ac_ref_reads(x, fn, ud, err, errcap) < 0) return -1;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) if (ac_ref_reads(x, fn, ud, err, errcap) < 0) return -1;
    }
    return 0;
}
