/*
 * parser.c - recursive-descent parser for the spec language, plus the
 * spec's arena and diagnostics list.
 *
 * Grammar (docs/spec-language.md has the full text):
 *   spec       -> item*
 *   item       -> param | event | handler | machine
 *   param      -> 'param' NAME '=' (NUMBER | STRING)
 *   event      -> 'event' NAME (',' NAME)*
 *   handler    -> ('guard' | 'action' | 'effect') NAME (',' NAME)*
 *   machine    -> 'machine' NAME '{' mitem* '}'
 *   mitem      -> 'initial' NAME | 'terminal' names | state | rule
 *   state      -> 'state' names ('{' sitem* '}')?
 *   sitem      -> 'enter' names | 'exit' names | 'effect' effect (',' effect)* | 'invoke' NAME
 *   effect     -> NAME ('(' names ')')?
 *   rule       -> sources '->' NAME ('on' NAME)? guard? actions?      external
 *               | sources 'on' NAME guard? actions?                  internal
 *               | sources 'ignore' names                             ignore
 *   sources    -> '*' | names
 *   guard      -> '[' or ']'
 *   or         -> and ('||' and)*
 *   and        -> unary ('&&' unary)*
 *   unary      -> '!' unary | '(' or ')' | NAME
 *   actions    -> '/' names
 *   names      -> NAME (',' NAME)*
 *
 * On a syntax error the parser reports what it expected and resumes at the
 * next token that starts a line, so one run reports many errors.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "spec.h"
#include "util/buf.h"
#include "util/grow.h"
#include "util/units.h"

/* ---- arena ---- */
struct ac_arena_block {
    struct ac_arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *ac_spec_alloc(ac_spec *spec, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    struct ac_arena_block *b = spec->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = spec->arena;
        b->used = 0;
        b->cap = cap;
        spec->arena = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

const char *ac_spec_strdup(ac_spec *spec, const char *s, size_t n)
{
    char *d = ac_spec_alloc(spec, n + 1);
    if (!d)
        return "";
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* ---- diagnostics ---- */
void ac_spec_diag(ac_spec *spec, int error, int line, int col, const char *fmt, ...)
{
    if (error && spec->n_errors >= AC_SPEC_MAX_ERRORS) {
        spec->too_many = 1;
        spec->n_errors++;
        return;
    }
    if (ac_grow((void **)&spec->diags, &spec->cap_diags, spec->n_diags + 1, sizeof *spec->diags))
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ac_diag *d = &spec->diags[spec->n_diags];
    d->msg = strdup(buf);
    if (!d->msg)
        return;
    d->line = line;
    d->col = col;
    d->error = error;
    d->seq = spec->diag_seq++;
    spec->n_diags++;
    if (error)
        spec->n_errors++;
    else
        spec->n_warnings++;
}

static int diag_cmp(const void *a, const void *b)
{
    const ac_diag *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

void ac_spec_print_diags(const ac_spec *spec, FILE *out)
{
    if (spec->n_diags > 1) /* qsort must not get a NULL array */
        qsort(spec->diags, spec->n_diags, sizeof *spec->diags, diag_cmp);
    for (size_t i = 0; i < spec->n_diags; i++) {
        const ac_diag *d = &spec->diags[i];
        fprintf(out, "%s:%d:%d: %s: %s\n", spec->path, d->line, d->col,
                d->error ? "error" : "warning", d->msg);
    }
    if (spec->too_many)
        fprintf(out, "%s: too many errors (%zu), stopping after %d\n", spec->path, spec->n_errors,
                AC_SPEC_MAX_ERRORS);
}

const char *ac_tok_describe(int kind)
{
    switch (kind) {
    case TK_EOF:
        return "end of file";
    case TK_IDENT:
        return "a name";
    case TK_NUMBER:
        return "a number";
    case TK_STRING:
        return "a string";
    case TK_LBRACE:
        return "'{'";
    case TK_RBRACE:
        return "'}'";
    case TK_LBRACK:
        return "'['";
    case TK_RBRACK:
        return "']'";
    case TK_LPAREN:
        return "'('";
    case TK_RPAREN:
        return "')'";
    case TK_COMMA:
        return "','";
    case TK_EQ:
        return "'='";
    case TK_ARROW:
        return "'->'";
    case TK_SLASH:
        return "'/'";
    case TK_BANG:
        return "'!'";
    case TK_AND:
        return "'&&'";
    case TK_OR:
        return "'||'";
    case TK_STAR:
        return "'*'";
    case TK_CMP:
        return "a comparison operator";
    default:
        return "an invalid token";
    }
}

/* ---- growable arrays (heap, freed in ac_spec_free) ---- */
static void names_push(ac_names *ns, ac_name n)
{
    if (ac_grow((void **)&ns->v, &ns->cap, ns->n + 1, sizeof *ns->v) == 0)
        ns->v[ns->n++] = n;
}

/* ---- parser ---- */
typedef struct parser {
    ac_spec *spec;
    ac_token *t;
    size_t n, i;
    int panic;        /* suppress cascaded errors until recovery */
    ac_strmap states; /* state name -> index in the current machine */
    int states_ok;    /* the map is usable (else: linear search) */
} parser;

static ac_token *cur(parser *ps)
{
    return &ps->t[ps->i];
}

static int is_kw(const ac_token *t, const char *kw)
{
    return t->kind == TK_IDENT && strcmp(t->text, kw) == 0;
}

/* HK_* of a handler declaration keyword, -1 for any other token. */
static int handler_kind(const ac_token *t)
{
    for (int k = 0; k < AC_HK_COUNT; k++)
        if (is_kw(t, ac_handler_kind_name(k)))
            return k;
    return -1;
}

static const char *const keywords[] = {
    "param", "event", "guard", "action", "effect", "machine", "initial", "terminal",
    "state", "enter", "exit",  "invoke", "on",     "ignore",  "after",   NULL};

static int is_keyword(const ac_token *t)
{
    if (t->kind != TK_IDENT)
        return 0;
    for (int k = 0; keywords[k]; k++)
        if (strcmp(t->text, keywords[k]) == 0)
            return 1;
    return 0;
}

static void describe_tok(const ac_token *t, char *buf, size_t cap)
{
    if (is_keyword(t))
        snprintf(buf, cap, "the keyword '%s'", t->text);
    else if (t->kind == TK_IDENT || t->kind == TK_NUMBER)
        snprintf(buf, cap, "'%.40s'", t->text);
    else if (t->kind == TK_STRING)
        snprintf(buf, cap, "a string");
    else
        snprintf(buf, cap, "%s", ac_tok_describe(t->kind));
}

/* `calls shell*`: the pattern after `calls` is not a string. Reports it with the quoted form
 * and returns 1; 0 when `calls` is followed by something else (a guard named calls). */
static int unquoted_pattern(parser *ps)
{
    char pat[128] = "";
    size_t o = 0;
    const ac_token *c = cur(ps);
    for (const ac_token *t = c + 1;
         (t->kind == TK_IDENT || t->kind == TK_STAR || t->kind == TK_NUMBER) &&
         t->line == c->line && o < sizeof pat;
         t++) {
        int w = snprintf(pat + o, sizeof pat - o, "%s", t->kind == TK_STAR ? "*" : t->text);
        o += w > 0 ? (size_t)w : 0;
    }
    if (!o)
        return 0;
    if (!ps->panic)
        ac_spec_diag(ps->spec, 1, c[1].line, c[1].col,
                     "the tool name pattern after 'calls' is a string: write calls \"%s\"", pat);
    ps->panic = 1;
    return 1;
}

/* `effect E posts ...` for an effect declared before: the names from `first` on that were
 * declared before it say what they post; they are not declared twice. */
static void drop_redeclared(ac_names *ns, size_t first)
{
    size_t w = first;
    for (size_t i = first; i < ns->n; i++) {
        int before = 0;
        for (size_t j = 0; j < first && !before; j++)
            before = strcmp(ns->v[j].s, ns->v[i].s) == 0;
        if (!before)
            ns->v[w++] = ns->v[i];
    }
    ns->n = w;
}

static void expected(parser *ps, const char *what)
{
    ac_token *t = cur(ps);
    if (!ps->panic && t->kind != TK_ERROR) {
        char got[64];
        describe_tok(t, got, sizeof got);
        ac_spec_diag(ps->spec, 1, t->line, t->col, "expected %s, found %s", what, got);
    }
    ps->panic = 1;
}

/* Skip to the next token that starts a line, or to a closing brace, after
 * the item that began at token `start`. A '}' or a line start found after
 * the start is kept: it closes the enclosing block or begins the next item,
 * so "A -> B on\n}" reports one error, not a second one for the lost '}'.
 * Braces opened while skipping are skipped with their closing brace. The
 * item's first token is always skipped, so recovery always makes progress. */
static void recover(parser *ps, size_t start)
{
    int depth = 0;
    while (cur(ps)->kind != TK_EOF) {
        ac_token *t = cur(ps);
        if (ps->i > start && depth == 0 && (t->kind == TK_RBRACE || t->first_on_line))
            break;
        if (t->kind == TK_LBRACE)
            depth++;
        else if (t->kind == TK_RBRACE && depth > 0)
            depth--;
        ps->i++;
    }
    ps->panic = 0;
}

/* Top-level recovery: like recover(), but a '{ ... }' block met on the way
 * is skipped whole, so a misspelt or broken `machine` header costs one
 * error, not one per line of its body. */
static void recover_top(parser *ps, size_t start)
{
    int depth = 0;
    while (cur(ps)->kind != TK_EOF) {
        ac_token *t = cur(ps);
        if (depth == 0 && t->first_on_line && ps->i > start)
            break;
        ps->i++;
        if (t->kind == TK_LBRACE)
            depth++;
        else if (t->kind == TK_RBRACE && depth > 0 && --depth == 0)
            break;
    }
    ps->panic = 0;
}

static ac_name take_name(parser *ps)
{
    ac_token *t = cur(ps);
    ac_name n = {t->text, t->line, t->col};
    ps->i++;
    return n;
}

static int accept(parser *ps, int kind)
{
    if (cur(ps)->kind == kind) {
        ps->i++;
        return 1;
    }
    return 0;
}

/* NAME that is not a keyword */
static int name(parser *ps, const char *what, ac_name *out)
{
    ac_token *t = cur(ps);
    if (t->kind != TK_IDENT || is_keyword(t)) {
        expected(ps, what);
        return -1;
    }
    *out = take_name(ps);
    return 0;
}

/* names -> NAME (',' NAME)* */
static int names(parser *ps, const char *what, ac_names *out)
{
    ac_name n;
    if (name(ps, what, &n) < 0)
        return -1;
    names_push(out, n);
    while (accept(ps, TK_COMMA)) {
        if (name(ps, what, &n) < 0)
            return -1;
        names_push(out, n);
    }
    return 0;
}

static int parse_int(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* param -> 'param' NAME '=' (NUMBER | STRING) */
static void parse_param(parser *ps)
{
    ac_spec *spec = ps->spec;
    ac_param_decl p;
    memset(&p, 0, sizeof p);
    ps->i++;
    if (name(ps, "a parameter name", &p.name) < 0)
        return;
    if (!accept(ps, TK_EQ)) {
        expected(ps, "'=' and a value");
        return;
    }
    ac_token *v = cur(ps);
    if (v->kind == TK_STRING) {
        p.type = AC_PARAM_STRING;
        p.sval = v->text;
        ps->i++;
    } else if (v->kind == TK_NUMBER) {
        size_t nd = 0;
        while (nd < v->len && v->text[nd] >= '0' && v->text[nd] <= '9')
            nd++;
        const char *unit = v->text + nd;
        int64_t num = 0;
        int rc = AC_UNITS_OK;
        if (*unit == 0) {
            p.type = AC_PARAM_INT;
            if (parse_int(v->text, nd, &num) < 0)
                rc = AC_UNITS_ERANGE;
        } else {
            long long ms = 0;
            p.type = AC_PARAM_DURATION;
            rc = ac_parse_duration_ms(v->text, &ms);
            num = ms;
        }
        if (rc == AC_UNITS_EUNIT) {
            ac_spec_diag(spec, 1, v->line, v->col + (int)nd,
                         "bad value for param '%s': unknown unit '%s' (use ms, s, m or h)",
                         p.name.s, unit);
            p.bad = 1;
        } else if (rc != AC_UNITS_OK) {
            ac_spec_diag(spec, 1, v->line, v->col, "bad value for param '%s': %s is too large",
                         p.name.s, v->text);
            p.bad = 1;
        }
        p.ival = p.bad ? 0 : num;
        ps->i++;
    } else {
        expected(ps, "a value (integer, duration such as 500ms or 10s, or \"string\")");
        return;
    }
    if (ac_grow((void **)&spec->params, &spec->cap_params, spec->n_params + 1, sizeof p) == 0)
        spec->params[spec->n_params++] = p;
}

static ac_gexpr *gx_new(parser *ps, int kind)
{
    ac_gexpr *g = ac_spec_alloc(ps->spec, sizeof *g);
    if (g)
        g->kind = kind;
    return g;
}

static ac_gexpr *parse_or(parser *ps, int depth);

/* unary -> '!' unary | '(' or ')' | NAME */
static ac_gexpr *parse_unary(parser *ps, int depth)
{
    if (depth > 64) {
        expected(ps, "a shallower guard expression (nesting is limited to 64)");
        return NULL;
    }
    if (accept(ps, TK_BANG)) {
        ac_gexpr *a = parse_unary(ps, depth + 1);
        if (!a)
            return NULL;
        ac_gexpr *g = gx_new(ps, GX_NOT);
        if (g)
            g->a = a;
        return g;
    }
    if (accept(ps, TK_LPAREN)) {
        ac_gexpr *g = parse_or(ps, depth + 1);
        if (!g)
            return NULL;
        if (!accept(ps, TK_RPAREN)) {
            expected(ps, "')'");
            return NULL;
        }
        return g;
    }
    if (is_kw(cur(ps), "calls") && unquoted_pattern(ps))
        return NULL;
    if (is_kw(cur(ps), "calls") && ps->t[ps->i + 1].kind == TK_STRING) {
        /* calls "glob": a pending tool call whose name matches */
        ac_gexpr *g = gx_new(ps, GX_CALLS);
        if (!g)
            return NULL;
        g->pred = take_name(ps);
        ac_token *s = cur(ps);
        g->rhs = (ac_name){s->text, s->line, s->col};
        g->rhs_kind = TK_STRING;
        ps->i++;
        return g;
    }
    ac_gexpr *g = gx_new(ps, GX_PRED);
    if (!g || name(ps, "a guard name, a session fact, '!' or '('", &g->pred) < 0)
        return NULL;
    if (cur(ps)->kind == TK_EQ) {
        ac_token *e = cur(ps);
        if (!ps->panic)
            ac_spec_diag(ps->spec, 1, e->line, e->col,
                         "'=' is not a comparison: use '==' to compare");
        ps->panic = 1;
        return NULL;
    }
    if (cur(ps)->kind == TK_CMP) {
        ac_token *o = cur(ps);
        g->kind = GX_CMP;
        g->op = (ac_name){o->text, o->line, o->col};
        ps->i++;
        ac_token *r = cur(ps);
        if (r->kind != TK_NUMBER && r->kind != TK_STRING &&
            (r->kind != TK_IDENT || is_keyword(r))) {
            expected(ps, "a param name, a number, a duration or a string after the comparison");
            return NULL;
        }
        g->rhs = (ac_name){r->text, r->line, r->col};
        g->rhs_kind = r->kind;
        ps->i++;
    }
    return g;
}

/* An action, possibly with string arguments: NAME or NAME '(' STRING {',' STRING} ')'.
 * The name kept is the canonical call text, `fail("reason")`: it is what the
 * tables, diagrams and the hash see, and the engine reads the arguments back
 * from it when it binds the built-in action. */
static int action_name(parser *ps, const char *what, ac_name *out)
{
    if (name(ps, what, out) < 0)
        return -1;
    if (cur(ps)->kind != TK_LPAREN)
        return 0;
    ps->i++;
    char buf[1024];
    size_t o = (size_t)snprintf(buf, sizeof buf, "%s(", out->s);
    for (int k = 0;; k++) {
        ac_token *s = cur(ps);
        if (s->kind != TK_STRING) {
            expected(ps,
                     k ? "a string argument after ','" : "a string argument, as in fail(\"why\")");
            return -1;
        }
        for (const char *c = s->text; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || *c == '|' ||
                (c[0] == '*' && c[1] == '/') || (c[0] == '/' && c[1] == '*')) {
                ac_spec_diag(ps->spec, 1, s->line, s->col,
                             "an action argument may not hold quotes, backslashes, '|', "
                             "comment marks or control characters");
                break;
            }
        int w = snprintf(buf + o, sizeof buf - o, "%s\"%s\"", k ? ", " : "", s->text);
        if (w < 0 || (size_t)w >= sizeof buf - o) {
            ac_spec_diag(ps->spec, 1, s->line, s->col,
                         "action arguments too long (1000 bytes at most)");
            o = sizeof buf - 1;
        } else
            o += (size_t)w;
        ps->i++;
        if (!accept(ps, TK_COMMA))
            break;
    }
    if (!accept(ps, TK_RPAREN)) {
        expected(ps, "')' or ',' after an action argument");
        return -1;
    }
    if (o + 2 <= sizeof buf) {
        buf[o++] = ')';
        buf[o] = 0;
    }
    out->s = ac_spec_strdup(ps->spec, buf, strlen(buf));
    return 0;
}

/* action names -> action (',' action)* */
static int action_names(parser *ps, const char *what, ac_names *out)
{
    ac_name n;
    if (action_name(ps, what, &n) < 0)
        return -1;
    names_push(out, n);
    while (accept(ps, TK_COMMA)) {
        if (action_name(ps, what, &n) < 0)
            return -1;
        names_push(out, n);
    }
    return 0;
}

/* or  -> and ('||' and)*
 * and -> unary ('&&' unary)* */
static ac_gexpr *parse_binary(parser *ps, int depth, int is_and)
{
    int tok = is_and ? TK_AND : TK_OR, kind = is_and ? GX_AND : GX_OR;
    ac_gexpr *a = is_and ? parse_unary(ps, depth) : parse_binary(ps, depth, 1);
    while (a && accept(ps, tok)) {
        ac_gexpr *b = is_and ? parse_unary(ps, depth) : parse_binary(ps, depth, 1);
        if (!b)
            return NULL;
        ac_gexpr *g = gx_new(ps, kind);
        if (!g)
            return NULL;
        g->a = a;
        g->b = b;
        a = g;
    }
    return a;
}

static ac_gexpr *parse_or(parser *ps, int depth)
{
    return parse_binary(ps, depth, 0);
}

/* States are looked up by name through a map, so a machine with thousands
 * of states parses in linear time. */
static ac_state_decl *find_or_add_state(parser *ps, ac_machine_decl *m, ac_name n)
{
    if (ps->states_ok) {
        int i = ac_strmap_get(&ps->states, n.s);
        if (i >= 0)
            return &m->states[i];
    } else {
        for (size_t i = 0; i < m->n_states; i++)
            if (strcmp(m->states[i].name.s, n.s) == 0)
                return &m->states[i];
    }
    if (ac_grow((void **)&m->states, &m->cap_states, m->n_states + 1, sizeof *m->states) < 0)
        return NULL;
    if (ps->states_ok && ac_strmap_put(&ps->states, n.s, (int)m->n_states) == -2) {
        /* out of memory while growing the map: fall back to a linear search */
        ac_strmap_free(&ps->states);
        ps->states_ok = 0;
    }
    ac_state_decl *s = &m->states[m->n_states++];
    memset(s, 0, sizeof *s);
    s->name = n;
    return s;
}

/* state -> 'state' names ('{' sitem* '}')? */
static void parse_state(parser *ps, ac_machine_decl *m)
{
    ac_spec *spec = ps->spec;
    ac_names ns = {0};
    ps->i++;
    if (names(ps, "a state name", &ns) < 0) {
        free(ns.v);
        return;
    }
    size_t si = (size_t)-1;
    for (size_t i = 0; i < ns.n; i++) {
        ac_state_decl *s = find_or_add_state(ps, m, ns.v[i]);
        if (!s)
            break;
        if (s->declared_by_state)
            ac_spec_diag(spec, 1, ns.v[i].line, ns.v[i].col,
                         "duplicate state '%s' in machine '%s' (first declared at line %d)",
                         ns.v[i].s, m->name.s, s->name.line);
        else {
            s->declared_by_state = 1;
            s->name = ns.v[i];
        }
        if (si == (size_t)-1)
            si = (size_t)(s - m->states);
    }
    size_t nstates = ns.n;
    free(ns.v);
    if (si == (size_t)-1 || !accept(ps, TK_LBRACE))
        return;
    if (nstates != 1) {
        ac_token *t = &ps->t[ps->i - 1];
        ac_spec_diag(spec, 1, t->line, t->col, "a state body '{...}' belongs to one state only");
    }
    while (cur(ps)->kind != TK_RBRACE && cur(ps)->kind != TK_EOF) {
        size_t start = ps->i;
        ac_token *t = cur(ps);
        ac_state_decl *s = &m->states[si];
        int rc = 0;
        if (is_kw(t, "enter")) {
            ps->i++;
            rc = action_names(ps, "an action name", &s->enter);
        } else if (is_kw(t, "exit")) {
            ps->i++;
            rc = action_names(ps, "an action name", &s->exit);
        } else if (is_kw(t, "effect")) {
            ps->i++;
            do {
                ac_effect_decl e;
                memset(&e, 0, sizeof e);
                if ((rc = name(ps, "an effect name", &e.name)) < 0)
                    break;
                if (accept(ps, TK_LPAREN)) {
                    if ((rc = names(ps, "a param name", &e.args)) < 0) {
                        free(e.args.v);
                        break;
                    }
                    if (!accept(ps, TK_RPAREN)) {
                        free(e.args.v);
                        expected(ps, "')' or ','");
                        rc = -1;
                        break;
                    }
                }
                if (ac_grow((void **)&s->effects, &s->cap_effects, s->n_effects + 1, sizeof e) == 0)
                    s->effects[s->n_effects++] = e;
                else
                    free(e.args.v);
            } while (accept(ps, TK_COMMA));
        } else if (is_kw(t, "invoke")) {
            ps->i++;
            ac_name n;
            if ((rc = name(ps, "a machine name", &n)) == 0) {
                if (s->invoke.s)
                    ac_spec_diag(spec, 1, n.line, n.col,
                                 "state '%s' already invokes '%s' (one invoke per state)",
                                 s->name.s, s->invoke.s);
                else
                    s->invoke = n;
            }
        } else {
            expected(ps, "'enter', 'exit', 'effect', 'invoke' or '}'");
            rc = -1;
        }
        if (rc < 0 || ps->panic)
            recover(ps, start);
    }
    if (!accept(ps, TK_RBRACE))
        expected(ps, "'}' to close the state body");
}

/* rule -> sources ('->' NAME ('on' NAME)? | 'on' NAME | 'ignore' names) guard? actions? */
static int parse_rule(parser *ps, ac_machine_decl *m)
{
    ac_spec *spec = ps->spec;
    ac_trans_decl tr;
    memset(&tr, 0, sizeof tr);
    ac_token *start = cur(ps);
    tr.line = start->line;
    tr.col = start->col;
    tr.order = (unsigned)m->n_trans;
    if (accept(ps, TK_STAR))
        tr.star = 1;
    else if (names(ps, "a state name, '*', or one of 'state', 'initial', 'terminal'", &tr.sources) <
             0)
        goto fail;
    if (accept(ps, TK_ARROW)) {
        tr.kind = AC_TR_EXTERNAL;
        if (name(ps, "a target state name after '->'", &tr.target) < 0)
            goto fail;
        if (is_kw(cur(ps), "on")) {
            ps->i++;
            if (name(ps, "an event name after 'on'", &tr.event) < 0)
                goto fail;
        } else if (is_kw(cur(ps), "after")) {
            ps->i++;
            ac_token *d = cur(ps);
            if (d->kind != TK_NUMBER && (d->kind != TK_IDENT || is_keyword(d))) {
                expected(ps, "a duration (such as 30s) or a duration param after 'after'");
                goto fail;
            }
            tr.after = take_name(ps);
            tr.after_kind = d->kind;
        } else if (cur(ps)->kind == TK_IDENT && !cur(ps)->first_on_line && !is_keyword(cur(ps)) &&
                   ps->t[ps->i + 1].kind != TK_ARROW && ps->t[ps->i + 1].kind != TK_COMMA &&
                   !is_kw(&ps->t[ps->i + 1], "on") && !is_kw(&ps->t[ps->i + 1], "ignore")) {
            ac_token *t = cur(ps);
            ac_spec_diag(spec, 1, t->line, t->col,
                         "missing 'on' before the event '%s' (write '-> %s on %s')", t->text,
                         tr.target.s, t->text);
            ps->panic = 1;
            goto fail;
        }
    } else if (is_kw(cur(ps), "on")) {
        ps->i++;
        tr.kind = AC_TR_INTERNAL;
        if (name(ps, "an event name after 'on'", &tr.event) < 0)
            goto fail;
    } else if (is_kw(cur(ps), "ignore")) {
        ps->i++;
        ac_names evs = {0};
        if (names(ps, "an event name after 'ignore'", &evs) < 0) {
            free(evs.v);
            goto fail;
        }
        /* One ignore row per event. */
        for (size_t i = 0; i < evs.n; i++) {
            ac_trans_decl ig = tr;
            ig.kind = AC_TR_IGNORE;
            ig.event = evs.v[i];
            ig.order = (unsigned)m->n_trans;
            ig.sources.v = NULL;
            ig.sources.n = ig.sources.cap = 0;
            for (size_t k = 0; k < tr.sources.n; k++)
                names_push(&ig.sources, tr.sources.v[k]);
            if (ac_grow((void **)&m->trans, &m->cap_trans, m->n_trans + 1, sizeof ig) == 0)
                m->trans[m->n_trans++] = ig;
            else
                free(ig.sources.v);
        }
        free(evs.v);
        free(tr.sources.v);
        return 0;
    } else {
        expected(ps, "'->', 'on' or 'ignore'");
        goto fail;
    }
    if (accept(ps, TK_LBRACK)) {
        tr.guard = parse_or(ps, 0);
        if (!tr.guard)
            goto fail;
        if (!accept(ps, TK_RBRACK)) {
            expected(ps, "']' to close the guard, '&&' or '||'");
            goto fail;
        }
    }
    if (accept(ps, TK_SLASH)) {
        if (action_names(ps, "an action name after '/'", &tr.actions) < 0)
            goto fail;
    }
    if (ac_grow((void **)&m->trans, &m->cap_trans, m->n_trans + 1, sizeof tr) < 0)
        goto fail;
    m->trans[m->n_trans++] = tr;
    (void)spec;
    return 0;
fail:
    free(tr.sources.v);
    free(tr.actions.v);
    return -1;
}

/* machine -> 'machine' NAME '{' mitem* '}' */
static void parse_machine(parser *ps)
{
    ac_spec *spec = ps->spec;
    ps->i++;
    ac_name mname;
    if (name(ps, "a machine name", &mname) < 0)
        return;
    if (ac_grow((void **)&spec->machines, &spec->cap_machines, spec->n_machines + 1,
                sizeof *spec->machines) < 0)
        return;
    size_t mi = spec->n_machines++;
    ac_machine_decl *m = &spec->machines[mi];
    memset(m, 0, sizeof *m);
    m->name = mname;
    if (!accept(ps, TK_LBRACE)) {
        expected(ps, "'{' after the machine name");
        return;
    }
    ps->states_ok = ac_strmap_init(&ps->states, 16) == 0;
    while (cur(ps)->kind != TK_RBRACE && cur(ps)->kind != TK_EOF) {
        size_t start = ps->i;
        ac_token *t = cur(ps);
        int rc = 0;
        if (is_kw(t, "initial")) {
            ps->i++;
            ac_name n;
            if ((rc = name(ps, "a state name after 'initial'", &n)) == 0) {
                if (m->initial.s)
                    ac_spec_diag(
                        spec, 1, n.line, n.col,
                        "duplicate initial state in machine '%s' (already '%s' at line %d)",
                        m->name.s, m->initial.s, m->initial.line);
                else {
                    m->initial = n;
                    find_or_add_state(ps, m, n);
                }
            }
        } else if (is_kw(t, "terminal")) {
            ps->i++;
            ac_names ns = {0};
            if ((rc = names(ps, "a state name after 'terminal'", &ns)) == 0)
                for (size_t i = 0; i < ns.n; i++) {
                    ac_state_decl *s = find_or_add_state(ps, m, ns.v[i]);
                    if (!s)
                        break;
                    if (s->terminal)
                        ac_spec_diag(spec, 1, ns.v[i].line, ns.v[i].col,
                                     "duplicate terminal state '%s'", ns.v[i].s);
                    s->terminal = 1;
                }
            free(ns.v);
        } else if (is_kw(t, "state")) {
            parse_state(ps, m);
            rc = ps->panic ? -1 : 0;
        } else if (t->kind == TK_STAR || (t->kind == TK_IDENT && !is_keyword(t))) {
            rc = parse_rule(ps, m);
        } else {
            expected(ps, "'initial', 'terminal', 'state', a transition or '}'");
            rc = -1;
        }
        if (rc < 0 || ps->panic)
            recover(ps, start);
    }
    ac_strmap_free(&ps->states);
    ps->states_ok = 0;
    if (!accept(ps, TK_RBRACE))
        expected(ps, "'}' to close the machine");
}

/* The payload of an outside event: `approve(decisions)`. 0, or -1 (reported). */
static int outside_payload(parser *ps, ac_name ev)
{
    ac_name pl;
    if (name(ps, "a payload name (decisions)", &pl) < 0)
        return -1;
    if (strcmp(pl.s, "decisions") != 0)
        ac_spec_diag(ps->spec, 1, pl.line, pl.col,
                     "outside event '%s' takes the payload 'decisions', not '%s' (the only "
                     "payload there is: per-call decisions, applied by apply_decisions)",
                     ev.s, pl.s);
    else
        names_push(&ps->spec->decisions, ev);
    if (!accept(ps, TK_RPAREN)) {
        expected(ps, "')'");
        return -1;
    }
    return 0;
}

/* outside -> 'outside' 'event' NAME ['(' PAYLOAD ')'] (',' NAME ['(' PAYLOAD ')'])* */
static void parse_outside(parser *ps)
{
    ac_spec *spec = ps->spec;
    do {
        ac_name n;
        if (name(ps, "an event name", &n) < 0)
            return;
        names_push(&spec->events, n);
        names_push(&spec->outside, n);
        if (accept(ps, TK_LPAREN) && outside_payload(ps, n) < 0)
            return;
    } while (accept(ps, TK_COMMA));
}

static void parse_spec(parser *ps)
{
    ac_spec *spec = ps->spec;
    while (cur(ps)->kind != TK_EOF) {
        size_t start = ps->i;
        ac_token *t = cur(ps);
        if (is_kw(t, "param")) {
            parse_param(ps);
        } else if (is_kw(t, "event")) {
            ps->i++;
            names(ps, "an event name", &spec->events);
        } else if (is_kw(t, "outside") && is_kw(&ps->t[ps->i + 1], "event")) {
            ps->i += 2;
            parse_outside(ps);
        } else if (handler_kind(t) >= 0) {
            int k = handler_kind(t);
            ps->i++;
            size_t first = spec->handlers[k].n;
            names(ps,
                  k == HK_GUARD    ? "a guard name"
                  : k == HK_ACTION ? "an action name"
                                   : "an effect name",
                  &spec->handlers[k]);
            if (k == HK_EFFECT && !ps->panic && is_kw(cur(ps), "posts")) {
                ps->i++;
                ac_names evs = {0};
                if (names(ps, "an event name after 'posts'", &evs) == 0)
                    for (size_t i = first; i < spec->handlers[k].n; i++) {
                        if (ac_grow((void **)&spec->posts, &spec->cap_posts, spec->n_posts + 1,
                                    sizeof *spec->posts) < 0)
                            break;
                        ac_posts *p = &spec->posts[spec->n_posts++];
                        memset(p, 0, sizeof *p);
                        p->effect = spec->handlers[k].v[i];
                        for (size_t e = 0; e < evs.n; e++)
                            names_push(&p->events, evs.v[e]);
                    }
                free(evs.v);
                drop_redeclared(&spec->handlers[k], first);
            }
        } else if (is_kw(t, "machine")) {
            parse_machine(ps);
        } else {
            expected(ps, "'param', 'event', 'guard', 'action', 'effect' or 'machine'");
        }
        if (ps->panic)
            recover_top(ps, start);
    }
}

ac_spec *ac_spec_parse(const char *path, const char *src, size_t len)
{
    ac_spec *spec = calloc(1, sizeof *spec);
    if (!spec)
        return NULL;
    spec->path = strdup(path);
    spec->src = malloc(len + 1);
    if (!spec->path || !spec->src) {
        ac_spec_free(spec);
        return NULL;
    }
    if (len)
        memcpy(spec->src, src, len);
    spec->src[len] = 0;
    spec->src_len = len;
    size_t n = 0;
    ac_token *toks = ac_spec_lex(spec, &n);
    if (!toks) {
        ac_spec_free(spec);
        return NULL;
    }
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.spec = spec;
    ps.t = toks;
    ps.n = n;
    parse_spec(&ps);
    return spec;
}

ac_spec *ac_spec_load(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    ac_buf b;
    ac_buf_init(&b, (size_t)64 << 20); /* a spec is small; refuse giant files */
    size_t r = 1;
    errno = 0;
    while (r > 0 && ac_buf_reserve(&b, 4096) == 0) {
        r = fread(b.p + b.n, 1, 4096, f);
        ac_buf_commit(&b, r);
    }
    int err = ferror(f) ? (errno ? errno : EIO) : 0; /* EISDIR for a folder */
    fclose(f);
    if (b.failed || err) {
        if (!err)
            err = b.n + 4096 > b.max ? EFBIG : ENOMEM;
        ac_buf_free(&b);
        errno = err;
        return NULL;
    }
    ac_spec *spec = ac_spec_parse(path, b.p, b.n);
    ac_buf_free(&b);
    return spec;
}

void ac_spec_free(ac_spec *spec)
{
    if (!spec)
        return;
    ac_spec_free_resolved(spec);
    for (size_t i = 0; i < spec->n_machines; i++) {
        ac_machine_decl *m = &spec->machines[i];
        for (size_t s = 0; s < m->n_states; s++) {
            ac_state_decl *st = &m->states[s];
            free(st->enter.v);
            free(st->exit.v);
            for (size_t e = 0; e < st->n_effects; e++)
                free(st->effects[e].args.v);
            free(st->effects);
        }
        for (size_t t = 0; t < m->n_trans; t++) {
            free(m->trans[t].sources.v);
            free(m->trans[t].actions.v);
        }
        free(m->states);
        free(m->trans);
    }
    free(spec->machines);
    free(spec->params);
    free(spec->events.v);
    free(spec->outside.v);
    free(spec->decisions.v);
    for (size_t i = 0; i < spec->n_posts; i++)
        free(spec->posts[i].events.v);
    free(spec->posts);
    for (int k = 0; k < AC_HK_COUNT; k++)
        free(spec->handlers[k].v);
    for (size_t i = 0; i < spec->n_diags; i++)
        free(spec->diags[i].msg);
    free(spec->diags);
    while (spec->arena) {
        struct ac_arena_block *b = spec->arena;
        spec->arena = b->next;
        free(b);
    }
    free(spec->src);
    free((void *)spec->path);
    free(spec);
}
