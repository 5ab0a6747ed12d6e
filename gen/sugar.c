/*
 * sugar.c - the spec language's v2 forms, checked and rewritten into the
 * core language before the other checks run:
 *
 *   [turn.tool_calls >= max_tool_calls]   a comparison of a session fact
 *   [calls "shell_*"]                      a pending tool call matching a glob
 *       -> a guard whose name is the canonical text of the test (the
 *          engine compiles it when it binds the spec, gen/facts.h);
 *   / fail("why")                          a built-in action with arguments
 *       -> an action whose name is the canonical call text;
 *   A -> B after 30s | after PARAM         a timer
 *       -> per source state, an event and an effect both named
 *          `after(X)@MACHINE.STATE`, the effect used in the state (so it
 *          starts on entry and stops on exit like any effect) and the rule
 *          taken on that event.
 *
 * Every rewritten name is declared here, so later phases (resolution, C
 * names, lowering, the hash, diagrams) see an ordinary spec. Type errors are
 * reported at the operator or the operand.
 */
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "sugar.h"
#include "util/units.h"
#include "util/grow.h"

/* ---- did you mean ---- */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return cap + 1;
    /* optimal string alignment: a swap of two neighbours counts as one edit */
    unsigned char d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = d[i - 1][j - 1] + (size_t)(a[i - 1] != b[j - 1]);
            size_t del = d[i - 1][j] + 1u, ins = d[i][j - 1] + 1u;
            size_t v = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1u < v)
                v = d[i - 2][j - 2] + 1u;
            d[i][j] = (unsigned char)v;
        }
    return d[la][lb];
}

const char *ac_spec_closest(const char *name, const char *const *cands, size_t n, size_t stride)
{
    if (strlen(name) < 3)
        return NULL; /* every short name is near every other */
    size_t limit = strlen(name) <= 4 ? 1 : 2, best = limit + 1;
    const char *pick = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *c = *(const char *const *)(const void *)((const char *)cands + i * stride);
        if (!c || strcmp(c, name) == 0)
            continue;
        size_t d = edit_distance(name, c, limit);
        if (d < best) {
            best = d;
            pick = c;
        }
    }
    return pick;
}

/* ---- helpers ---- */
static void push_name(ac_names *ns, ac_name n)
{
    if (ac_grow((void **)&ns->v, &ns->cap, ns->n + 1, sizeof *ns->v) == 0)
        ns->v[ns->n++] = n;
}

static int has_name(const ac_names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, s) == 0)
            return 1;
    return 0;
}

static void declare(ac_names *ns, ac_name n)
{
    if (!has_name(ns, n.s))
        push_name(ns, n);
}

static const ac_param_decl *find_param(const ac_spec *spec, const char *name)
{
    for (size_t i = 0; i < spec->n_params; i++)
        if (strcmp(spec->params[i].name.s, name) == 0)
            return &spec->params[i];
    return NULL;
}

static int param_fact_type(int ptype)
{
    return ptype == AC_PARAM_INT        ? AC_FT_COUNT
           : ptype == AC_PARAM_DURATION ? AC_FT_DURATION
                                        : AC_FT_STRING;
}

/* An amount in USD: digits, and a decimal part after a '.' */
static int usd_literal(const char *s)
{
    size_t n = strspn(s, "0123456789");
    if (!n)
        return 0;
    if (s[n] == '.') {
        size_t d = strspn(s + n + 1, "0123456789");
        if (!d)
            return 0;
        n += 1 + d;
    }
    return s[n] == 0;
}

static int bad_text(const char *s)
{
    for (const char *c = s; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 || *c == '|' ||
            (c[0] == '*' && c[1] == '/') || (c[0] == '/' && c[1] == '*'))
            return 1;
    return 0;
}

/* The param whose name shares the longest start with name, of more than 5 characters
 * ({max_tools} for max_tool_calls), NULL if none. */
static const char *same_start(const ac_spec *spec, const char *name)
{
    const char *pick = NULL;
    size_t best = 5;
    for (size_t i = 0; i < spec->n_params; i++) {
        size_t k = 0;
        while (name[k] && name[k] == spec->params[i].name.s[k])
            k++;
        if (k > best) {
            best = k;
            pick = spec->params[i].name.s;
        }
    }
    return pick;
}

static void unknown_param(ac_spec *spec, const ac_name *n, const char *what)
{
    const char *near = spec->n_params ? ac_spec_closest(n->s, &spec->params[0].name.s,
                                                        spec->n_params, sizeof spec->params[0])
                                      : NULL;
    if (!near)
        near = same_start(spec, n->s);
    if (near)
        ac_spec_diag(spec, 1, n->line, n->col, "unknown param '%s' %s (did you mean '%s'?)", n->s,
                     what, near);
    else
        ac_spec_diag(spec, 1, n->line, n->col,
                     "unknown param '%s' %s (declare it with 'param %s = ...')", n->s, what, n->s);
}

static const char *fact_names[AC_FACT_COUNT];

static void list_facts(char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < AC_FACT_COUNT && o < cap; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", ac_facts[i].name);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* ---- guards ---- */
static void rewrite_guard(ac_spec *spec, ac_gexpr *g)
{
    if (!g)
        return;
    rewrite_guard(spec, g->a);
    rewrite_guard(spec, g->b);
    char buf[1200];
    if (g->kind == GX_CALLS) {
        if (bad_text(g->rhs.s) || !*g->rhs.s) {
            ac_spec_diag(spec, 1, g->rhs.line, g->rhs.col,
                         "a tool name pattern must be non-empty, without quotes, backslashes, "
                         "'|', comment marks or control characters");
            return;
        }
        snprintf(buf, sizeof buf, "calls \"%s\"", g->rhs.s);
    } else if (g->kind == GX_CMP) {
        int f = ac_fact_find(g->pred.s);
        if (f < 0) {
            char all[600];
            list_facts(all, sizeof all);
            for (int i = 0; i < AC_FACT_COUNT; i++)
                fact_names[i] = ac_facts[i].name;
            const char *near =
                ac_spec_closest(g->pred.s, fact_names, AC_FACT_COUNT, sizeof fact_names[0]);
            if (near)
                ac_spec_diag(spec, 1, g->pred.line, g->pred.col,
                             "unknown session fact '%s' (did you mean '%s'?)", g->pred.s, near);
            else
                ac_spec_diag(spec, 1, g->pred.line, g->pred.col,
                             "unknown session fact '%s' (the facts: %s)", g->pred.s, all);
            return;
        }
        int ft = ac_facts[f].type, rt;
        const char *rdesc = g->rhs.s;
        if (g->rhs_kind == TK_STRING) {
            rt = AC_FT_STRING;
            if (bad_text(g->rhs.s)) {
                ac_spec_diag(spec, 1, g->rhs.line, g->rhs.col,
                             "a compared string may not hold quotes, backslashes, '|', comment "
                             "marks or control characters");
                return;
            }
        } else if (g->rhs_kind == TK_NUMBER && ft == AC_FT_USD && usd_literal(g->rhs.s)) {
            rt = AC_FT_USD;
        } else if (g->rhs_kind == TK_NUMBER) {
            size_t nd = 0;
            while (g->rhs.s[nd] >= '0' && g->rhs.s[nd] <= '9')
                nd++;
            rt = g->rhs.s[nd] ? AC_FT_DURATION : AC_FT_COUNT;
            if (rt == AC_FT_DURATION) {
                long long ms;
                if (ac_parse_duration_ms(g->rhs.s, &ms) != AC_UNITS_OK) {
                    ac_spec_diag(spec, 1, g->rhs.line, g->rhs.col,
                                 "bad duration '%s' (use ms, s, m or h, as in 30s)", g->rhs.s);
                    return;
                }
            }
        } else {
            const ac_param_decl *p = find_param(spec, g->rhs.s);
            if (!p) {
                if (ac_fact_find(g->rhs.s) >= 0)
                    ac_spec_diag(spec, 1, g->rhs.line, g->rhs.col,
                                 "'%s' is a session fact: compare a fact with a param or a "
                                 "literal",
                                 g->rhs.s);
                else
                    unknown_param(spec, &g->rhs, "in the comparison");
                return;
            }
            rt = param_fact_type(p->type);
            if (ft == AC_FT_USD && rt == AC_FT_COUNT)
                rt = AC_FT_USD; /* whole dollars */
        }
        if (ft != rt) {
            ac_spec_diag(spec, 1, g->op.line, g->op.col, "cannot compare %s (%s) with %s (%s)",
                         g->pred.s, ac_fact_type_name(ft),
                         g->rhs_kind == TK_STRING ? "a string literal" : rdesc,
                         ac_fact_type_name(rt));
            return;
        }
        if (ft == AC_FT_STRING && strcmp(g->op.s, "==") != 0 && strcmp(g->op.s, "!=") != 0) {
            ac_spec_diag(spec, 1, g->op.line, g->op.col,
                         "%s is a string: compare it with '==' or '!=', not '%s'", g->pred.s,
                         g->op.s);
            return;
        }
        if (g->rhs_kind == TK_STRING)
            snprintf(buf, sizeof buf, "%s %s \"%s\"", g->pred.s, g->op.s, g->rhs.s);
        else
            snprintf(buf, sizeof buf, "%s %s %s", g->pred.s, g->op.s, g->rhs.s);
    } else {
        return;
    }
    ac_name n = {ac_spec_strdup(spec, buf, strlen(buf)), g->pred.line, g->pred.col};
    g->kind = GX_PRED;
    g->pred = n;
    declare(&spec->handlers[HK_GUARD], n);
}

/* ---- actions with arguments ---- */

/* Each {name} in the text of fail("...") or note("...") names a declared param (its value
 * replaces it when the action runs; anything else would be shown as written). */
static void check_text_params(ac_spec *spec, const ac_name *act)
{
    for (const char *c = strchr(act->s, '{'); c; c = strchr(c + 1, '{')) {
        size_t len =
            strspn(c + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (!len || c[1 + len] != '}')
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)len, c + 1);
        if (find_param(spec, name))
            continue;
        char what[160];
        snprintf(what, sizeof what, "in the text of %.*s(...)", (int)(strchr(act->s, '(') - act->s),
                 act->s);
        ac_name at = {ac_spec_strdup(spec, name, len), act->line, act->col + (int)(c + 1 - act->s)};
        unknown_param(spec, &at, what);
    }
}

static void declare_actions(ac_spec *spec, ac_names *ns)
{
    for (size_t i = 0; i < ns->n; i++) {
        const char *s = ns->v[i].s, *paren = strchr(s, '(');
        if (!paren) {
            if (strcmp(s, ac_arg_actions[AC_ACTION_APPLY_DECISIONS].name) == 0)
                declare(&spec->handlers[HK_ACTION], ns->v[i]); /* built in */
            continue;
        }
        int a = ac_arg_action_find(s, (size_t)(paren - s));
        if (a < 0) {
            char all[400];
            size_t o = 0;
            for (int k = 0; k < AC_ARG_ACTION_COUNT && o < sizeof all; k++) {
                if (!ac_arg_actions[k].n_args)
                    continue; /* apply_decisions: written without parentheses */
                int w = snprintf(all + o, sizeof all - o, "%s%s", k ? "; " : "",
                                 ac_arg_actions[k].usage);
                if (w > 0)
                    o += (size_t)w;
            }
            ac_spec_diag(spec, 1, ns->v[i].line, ns->v[i].col,
                         "'%.*s' takes no arguments: only the built-in actions do (%s)",
                         (int)(paren - s), s, all);
            declare(&spec->handlers[HK_ACTION], ns->v[i]); /* reported once, not as unknown too */
            continue;
        }
        int nargs = 1;
        for (const char *c = paren; *c; c++)
            nargs += *c == ',' && c[-1] == '"';
        if (nargs != ac_arg_actions[a].n_args) {
            ac_spec_diag(spec, 1, ns->v[i].line, ns->v[i].col,
                         "%s takes %d argument%s, not %d (%s)", ac_arg_actions[a].name,
                         ac_arg_actions[a].n_args, ac_arg_actions[a].n_args == 1 ? "" : "s", nargs,
                         ac_arg_actions[a].usage);
        }
        if (a == 0 || a == 1) /* fail, note */
            check_text_params(spec, &ns->v[i]);
        declare(&spec->handlers[HK_ACTION], ns->v[i]);
    }
}

/* ---- timers ---- */
static ac_state_decl *state_named(ac_machine_decl *m, const char *name)
{
    for (size_t i = 0; i < m->n_states; i++)
        if (strcmp(m->states[i].name.s, name) == 0)
            return &m->states[i];
    return NULL;
}

/* Adds the timer of `after` to state st (once per state and duration) and
 * returns the event's name. */
static const char *add_timer(ac_spec *spec, ac_machine_decl *m, ac_state_decl *st,
                             const ac_trans_decl *tr)
{
    char buf[700];
    snprintf(buf, sizeof buf, "after(%s)@%s.%s", tr->after.s, m->name.s, st->name.s);
    const char *nm = ac_spec_strdup(spec, buf, strlen(buf));
    ac_name n = {nm, tr->after.line, tr->after.col};
    if (has_name(&spec->events, nm))
        return nm;
    push_name(&spec->events, n);
    declare(&spec->handlers[HK_EFFECT], n);
    ac_effect_decl e;
    memset(&e, 0, sizeof e);
    e.name = n;
    if (tr->after_kind == TK_IDENT)
        push_name(&e.args, tr->after);
    if (ac_grow((void **)&st->effects, &st->cap_effects, st->n_effects + 1, sizeof e) == 0)
        st->effects[st->n_effects++] = e;
    else
        free(e.args.v);
    return nm;
}

static int check_after(ac_spec *spec, const ac_trans_decl *tr)
{
    if (tr->after_kind == TK_NUMBER) {
        long long ms = 0;
        size_t nd = strspn(tr->after.s, "0123456789");
        if (!tr->after.s[nd]) {
            ac_spec_diag(spec, 1, tr->after.line, tr->after.col,
                         "'after %s' needs a unit: a duration such as %sms or %ss", tr->after.s,
                         tr->after.s, tr->after.s);
            return -1;
        }
        if (ac_parse_duration_ms(tr->after.s, &ms) != AC_UNITS_OK) {
            ac_spec_diag(spec, 1, tr->after.line, tr->after.col,
                         "bad duration '%s' (use ms, s, m or h, as in 30s)", tr->after.s);
            return -1;
        }
        return 0;
    }
    const ac_param_decl *p = find_param(spec, tr->after.s);
    if (!p) {
        unknown_param(spec, &tr->after, "after 'after'");
        return -1;
    }
    if (p->type != AC_PARAM_DURATION) {
        ac_spec_diag(spec, 1, tr->after.line, tr->after.col,
                     "'after' needs a duration; param '%s' is %s", tr->after.s,
                     ac_fact_type_name(param_fact_type(p->type)));
        return -1;
    }
    return 0;
}

/* Splits each `after` rule into one rule per source state, each on the
 * timer event of its state. The rules keep their place in the order. */
static void rewrite_timers(ac_spec *spec, ac_machine_decl *m)
{
    size_t n_after = 0;
    for (size_t i = 0; i < m->n_trans; i++)
        n_after += m->trans[i].after.s != NULL;
    if (!n_after)
        return;
    ac_trans_decl *out = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < m->n_trans; i++) {
        ac_trans_decl tr = m->trans[i];
        if (!tr.after.s) {
            if (ac_grow((void **)&out, &cap, n + 1, sizeof tr) == 0)
                out[n++] = tr;
            continue;
        }
        int ok = check_after(spec, &tr) == 0;
        ac_names srcs = {0};
        if (tr.star) {
            for (size_t s = 0; s < m->n_states; s++)
                if (!m->states[s].terminal)
                    push_name(&srcs, (ac_name){m->states[s].name.s, tr.line, tr.col});
        } else {
            for (size_t s = 0; s < tr.sources.n; s++)
                push_name(&srcs, tr.sources.v[s]);
        }
        for (size_t s = 0; s < srcs.n; s++) {
            ac_trans_decl c = tr;
            c.star = 0;
            memset(&c.sources, 0, sizeof c.sources);
            push_name(&c.sources, srcs.v[s]);
            memset(&c.actions, 0, sizeof c.actions);
            for (size_t k = 0; k < tr.actions.n; k++)
                push_name(&c.actions, tr.actions.v[k]);
            ac_state_decl *st = state_named(m, srcs.v[s].s);
            if (!ok) { /* reported: the rule is left out (it would read as eventless) */
                free(c.sources.v);
                free(c.actions.v);
                continue;
            }
            if (ok && st && !st->terminal)
                c.event = (ac_name){add_timer(spec, m, st, &tr), tr.after.line, tr.after.col};
            else
                c.event = (ac_name){NULL, 0, 0}; /* reported below or by the checker */
            if (ok && !st)
                ac_spec_diag(spec, 1, srcs.v[s].line, srcs.v[s].col,
                             "unknown state '%s' in machine '%s'", srcs.v[s].s, m->name.s);
            if (ac_grow((void **)&out, &cap, n + 1, sizeof c) == 0)
                out[n++] = c;
            else {
                free(c.sources.v);
                free(c.actions.v);
            }
        }
        free(srcs.v);
        free(tr.sources.v);
        free(tr.actions.v);
    }
    for (size_t i = 0; i < n; i++)
        out[i].order = (unsigned)i;
    free(m->trans);
    m->trans = out;
    m->n_trans = n;
    m->cap_trans = cap;
}

void ac_spec_desugar(ac_spec *spec)
{
    for (size_t mi = 0; mi < spec->n_machines; mi++) {
        ac_machine_decl *m = &spec->machines[mi];
        for (size_t s = 0; s < m->n_states; s++) {
            declare_actions(spec, &m->states[s].enter);
            declare_actions(spec, &m->states[s].exit);
        }
        for (size_t t = 0; t < m->n_trans; t++) {
            rewrite_guard(spec, m->trans[t].guard);
            declare_actions(spec, &m->trans[t].actions);
        }
        rewrite_timers(spec, m);
    }
    for (size_t p = 0; p < spec->n_posts; p++)
        for (size_t k = 0; k < spec->posts[p].events.n; k++) {
            const ac_name *ev = &spec->posts[p].events.v[k];
            if (has_name(&spec->events, ev->s))
                continue;
            const char *near = spec->events.n
                                   ? ac_spec_closest(ev->s, &spec->events.v[0].s, spec->events.n,
                                                     sizeof spec->events.v[0])
                                   : NULL;
            if (near)
                ac_spec_diag(spec, 1, ev->line, ev->col,
                             "effect '%s' posts the unknown event '%s' (did you mean '%s'?)",
                             spec->posts[p].effect.s, ev->s, near);
            else
                ac_spec_diag(spec, 1, ev->line, ev->col,
                             "effect '%s' posts the unknown event '%s' (declare it with 'event "
                             "%s')",
                             spec->posts[p].effect.s, ev->s, ev->s);
        }
    for (size_t p = 0; p < spec->n_posts; p++)
        for (size_t q = 0; q < p; q++)
            if (strcmp(spec->posts[q].effect.s, spec->posts[p].effect.s) == 0) {
                ac_spec_diag(spec, 1, spec->posts[p].effect.line, spec->posts[p].effect.col,
                             "effect '%s' already says what it posts (line %d): one 'posts' "
                             "clause per effect",
                             spec->posts[p].effect.s, spec->posts[q].effect.line);
                break;
            }
    for (size_t i = 0; i < spec->outside.n; i++)
        for (size_t p = 0; p < spec->n_posts; p++)
            if (has_name(&spec->posts[p].events, spec->outside.v[i].s))
                ac_spec_diag(spec, 1, spec->outside.v[i].line, spec->outside.v[i].col,
                             "event '%s' is declared outside, but effect '%s' posts it (line %d)",
                             spec->outside.v[i].s, spec->posts[p].effect.s,
                             spec->posts[p].effect.line);
}
