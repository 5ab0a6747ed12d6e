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
        if (find_param(spec, name) || strcmp(name, "reason") == 0)
            continue; /* {reason}: what a tripped guardrail said */
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

/* ---- guardrails ---- */

static const char *declare_event(ac_spec *spec, const char *ev, const ac_name *at)
{
    const char *nm = ac_spec_strdup(spec, ev, strlen(ev));
    declare(&spec->events, (ac_name){nm, at->line, at->col});
    return nm;
}

/* Appends rule r (sources, actions owned by it) to m. */
static void add_rule(ac_machine_decl *m, ac_trans_decl r)
{
    r.order = (unsigned)m->n_trans;
    if (ac_grow((void **)&m->trans, &m->cap_trans, m->n_trans + 1, sizeof r) == 0)
        m->trans[m->n_trans++] = r;
    else {
        free(r.sources.v);
        free(r.actions.v);
    }
}

/* The guardrail's effect `guardrail(KIND, NAME)` (`guardrail(input, NAME, parallel)`), which
 * posts guardrail.passed or guardrail.tripped, declared with what it posts. */
static ac_effect_decl guardrail_effect(ac_spec *spec, const ac_guardrail_decl *g)
{
    char buf[400];
    snprintf(buf, sizeof buf, "guardrail(%s, %s%s)", g->output ? "output" : "input", g->name.s,
             g->parallel ? ", parallel" : "");
    ac_name eff = {ac_spec_strdup(spec, buf, strlen(buf)), g->name.line, g->name.col};
    declare(&spec->handlers[HK_EFFECT], eff);
    ac_posts po = {eff, {0}};
    push_name(&po.events, (ac_name){declare_event(spec, "guardrail.passed", &g->name), g->name.line,
                                    g->name.col});
    push_name(&po.events, (ac_name){declare_event(spec, "guardrail.tripped", &g->name),
                                    g->name.line, g->name.col});
    if (ac_grow((void **)&spec->posts, &spec->cap_posts, spec->n_posts + 1, sizeof po) == 0)
        spec->posts[spec->n_posts++] = po;
    else
        free(po.events.v);
    return (ac_effect_decl){eff, {0}};
}

static void add_effect(ac_state_decl *st, ac_effect_decl e)
{
    if (ac_grow((void **)&st->effects, &st->cap_effects, st->n_effects + 1, sizeof e) == 0)
        st->effects[st->n_effects++] = e;
}

/* The guardrail's state, with its effect; NULL when reported. */
static ac_state_decl *guardrail_state(ac_spec *spec, ac_machine_decl *m, const ac_guardrail_decl *g)
{
    if (state_named(m, g->name.s)) {
        ac_spec_diag(spec, 1, g->name.line, g->name.col,
                     "guardrail '%s': machine '%s' already has a state of that name", g->name.s,
                     m->name.s);
        return NULL;
    }
    ac_effect_decl e = guardrail_effect(spec, g);
    ac_state_decl st;
    memset(&st, 0, sizeof st);
    st.name = g->name;
    st.declared_by_state = 1;
    if (ac_grow((void **)&m->states, &m->cap_states, m->n_states + 1, sizeof st) < 0)
        return NULL;
    m->states[m->n_states] = st;
    ac_state_decl *sp = &m->states[m->n_states++];
    add_effect(sp, e);
    return sp;
}

/* The rules a guardrail stands in front of: an input guardrail the eventless rules out of
 * the initial state, an output guardrail the rules into a terminal state other than FAILED;
 * never the rules out of a guardrail's state. */
static int guarded(ac_machine_decl *m, const ac_trans_decl *tr, int output)
{
    if (tr->kind != AC_TR_EXTERNAL || !tr->target.s)
        return 0;
    for (size_t i = 0; i < m->n_guardrails; i++)
        for (size_t k = 0; k < tr->sources.n; k++)
            if (strcmp(tr->sources.v[k].s, m->guardrails[i].name.s) == 0)
                return 0; /* a guardrail's own way out */
    if (!output)          /* an input guardrail's; a parallel one stands where an output one does */
        return !tr->event.s && !tr->after.s && !tr->star && tr->sources.n == 1 && m->initial.s &&
               strcmp(tr->sources.v[0].s, m->initial.s) == 0;
    const ac_state_decl *t = state_named(m, tr->target.s);
    return t && t->terminal && strcmp(t->name.s, "FAILED") != 0;
}

static int same_names(const ac_names *a, const ac_names *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i].s, b->v[i].s) != 0)
            return 0;
    return 1;
}

/* A state of machine m that runs tools: one with the effect run_tools, or one invoking a machine
 * that has one (depth-bounded); its name in *where. */
static int runs_tools(const ac_spec *spec, const ac_machine_decl *m, const char **where, int depth)
{
    for (size_t i = 0; i < m->n_states && depth < 8; i++) {
        const ac_state_decl *st = &m->states[i];
        for (size_t e = 0; e < st->n_effects; e++)
            if (strcmp(st->effects[e].name.s, "run_tools") == 0) {
                *where = st->name.s;
                return 1;
            }
        for (size_t k = 0; st->invoke.s && k < spec->n_machines; k++)
            if (strcmp(spec->machines[k].name.s, st->invoke.s) == 0 &&
                runs_tools(spec, &spec->machines[k], where, depth + 1))
                return 1;
    }
    return 0;
}

static ac_trans_decl guardrail_rule(const ac_guardrail_decl *g, int kind, const char *event)
{
    ac_trans_decl r;
    memset(&r, 0, sizeof r);
    r.line = g->name.line;
    r.col = g->name.col;
    r.kind = kind;
    r.event = (ac_name){event, g->name.line, g->name.col};
    return r;
}

/* `[turn.guardrails_passed > 0]`, rewritten with the other comparisons. */
static ac_gexpr *passed_guard(ac_spec *spec, const ac_guardrail_decl *g)
{
    ac_gexpr *x = ac_spec_alloc(spec, sizeof *x);
    if (!x)
        return NULL;
    memset(x, 0, sizeof *x);
    x->kind = GX_CMP;
    x->pred = (ac_name){"turn.guardrails_passed", g->name.line, g->name.col};
    x->op = (ac_name){">", g->name.line, g->name.col};
    x->rhs = (ac_name){"0", g->name.line, g->name.col};
    x->rhs_kind = TK_NUMBER;
    return x;
}

/* `guardrail input NAME parallel`: the guardrail's effect also runs in every other state of the
 * machine but the initial and terminal ones (one run per turn: an effect of both ends of a
 * transition keeps running), beside the model call, which does not wait for it; its state
 * NAME, before the answer is accepted, goes on at once when it passed already, else waits for
 * it. A trip leaves from wherever the machine is. The checker warns when those states run
 * tools: they may fire before it trips. */
static void rewrite_parallel(ac_spec *spec, ac_machine_decl *m, const ac_guardrail_decl *g,
                             const ac_state_decl *gs, ac_name target, const ac_names *actions)
{
    ac_effect_decl e = gs->effects[0];
    ac_machine_decl self = *m;
    const char *where = NULL;
    ac_trans_decl ig = guardrail_rule(g, AC_TR_IGNORE, "guardrail.passed");
    for (size_t i = 0; i < m->n_states; i++) {
        ac_state_decl *st = &m->states[i];
        if (st->terminal || (m->initial.s && strcmp(st->name.s, m->initial.s) == 0) ||
            strcmp(st->name.s, g->name.s) == 0)
            continue;
        self.states = st;
        self.n_states = 1;
        if (!where)
            runs_tools(spec, &self, &where, 0);
        add_effect(st, e);
        push_name(&ig.sources, st->name);
    }
    if (where)
        ac_spec_diag(spec, 0, g->name.line, g->name.col,
                     "guardrail '%s' is parallel: tools may run (in state '%s') before it trips; "
                     "drop 'parallel' to run it before anything else",
                     g->name.s, where);
    if (ig.sources.n)
        add_rule(m, ig);
    ac_trans_decl r = guardrail_rule(g, AC_TR_EXTERNAL, NULL);
    push_name(&r.sources, g->name);
    r.target = target;
    r.guard = passed_guard(spec, g);
    for (size_t k = 0; k < actions->n; k++)
        push_name(&r.actions, actions->v[k]);
    add_rule(m, r);
}

/* Routes the guarded rules through the guardrail's state: they enter it instead of their
 * target, which it enters on guardrail.passed (an output guardrail's rules' actions run
 * then, once the answer passed); on guardrail.tripped, unless the machine says where,
 * it fails the turn with the guardrail's reason. */
/* The guardrail's state and rules, the guarded rules routed through it (see below). */
static void route(ac_spec *spec, ac_machine_decl *m, const ac_guardrail_decl *g, ac_name target,
                  ac_names actions, ac_name failed, int has_tripped)
{
    int later = g->output || g->parallel; /* the guarded rules' actions wait for it */
    ac_state_decl *gs = guardrail_state(spec, m, g);
    if (!gs) {
        free(actions.v);
        return;
    }
    for (size_t i = 0; i < m->n_trans; i++) {
        ac_trans_decl *tr = &m->trans[i];
        if (!guarded(m, tr, later) || strcmp(tr->target.s, g->name.s) == 0)
            continue;
        tr->target = g->name;
        if (later)
            tr->actions.n = 0;
    }
    if (g->parallel)
        rewrite_parallel(spec, m, g, gs, target, &actions);
    ac_trans_decl r = guardrail_rule(g, AC_TR_EXTERNAL, "guardrail.passed");
    push_name(&r.sources, g->name);
    r.target = target;
    r.actions = actions;
    add_rule(m, r);
    if (has_tripped)
        return;
    char buf[400];
    snprintf(buf, sizeof buf, "fail(\"guardrail %s: {reason}\")", g->name.s);
    r = guardrail_rule(g, AC_TR_EXTERNAL, "guardrail.tripped");
    if (g->parallel)
        r.star = 1; /* wherever the machine is */
    else
        push_name(&r.sources, g->name);
    r.target = failed;
    push_name(&r.actions,
              (ac_name){ac_spec_strdup(spec, buf, strlen(buf)), g->name.line, g->name.col});
    add_rule(m, r);
}

/* Routes the guarded rules through the guardrail's state: they enter it instead of their
 * target, which it enters on guardrail.passed (an output or parallel guardrail's rules'
 * actions run then); on guardrail.tripped, unless the machine says where, it fails the turn
 * with the guardrail's reason. */
static void rewrite_guardrail(ac_spec *spec, ac_machine_decl *m, const ac_guardrail_decl *g)
{
    ac_trans_decl *first = NULL;
    int has_tripped = 0, later = g->output || g->parallel;
    for (size_t i = 0; i < m->n_trans; i++) {
        ac_trans_decl *tr = &m->trans[i];
        has_tripped |=
            tr->event.s && strcmp(tr->event.s, "guardrail.tripped") == 0 &&
            (g->parallel ? tr->star
                         : tr->sources.n == 1 && strcmp(tr->sources.v[0].s, g->name.s) == 0);
        if (!guarded(m, tr, later))
            continue;
        if (first && (strcmp(first->target.s, tr->target.s) != 0 ||
                      (later && !same_names(&first->actions, &tr->actions)))) {
            ac_spec_diag(spec, 1, tr->line, tr->col,
                         "guardrail '%s' stands before rules of one target and the same "
                         "actions: this rule differs from the one at line %d",
                         g->name.s, first->line);
            return;
        }
        if (!first)
            first = tr;
    }
    if (!first) {
        ac_spec_diag(spec, 1, g->name.line, g->name.col,
                     later ? "guardrail '%s': no rule of machine '%s' enters a terminal state "
                             "other than FAILED"
                           : "guardrail input '%s': machine '%s' has no eventless rule out of "
                             "its initial state",
                     g->name.s, m->name.s);
        return;
    }
    ac_state_decl *fs = state_named(m, "FAILED");
    if (!has_tripped && !(fs && fs->terminal)) {
        ac_spec_diag(spec, 1, g->name.line, g->name.col,
                     "guardrail '%s': machine '%s' has no terminal state FAILED; say where a "
                     "tripped guardrail goes ('%s -> STATE on guardrail.tripped')",
                     g->name.s, m->name.s, g->parallel ? "*" : g->name.s);
        return;
    }
    ac_names actions = {0};
    for (size_t k = 0; later && k < first->actions.n; k++)
        push_name(&actions, first->actions.v[k]);
    route(spec, m, g, first->target, actions, fs ? fs->name : g->name, has_tripped);
}

/* A parallel guardrail is its machine's only one: the others' events are the same. 0, or -1
 * (reported). */
static int parallel_alone(ac_spec *spec, const ac_machine_decl *m)
{
    for (size_t i = 0; i < m->n_guardrails; i++)
        if (m->guardrails[i].parallel && m->n_guardrails > 1) {
            ac_spec_diag(spec, 1, m->guardrails[i].name.line, m->guardrails[i].name.col,
                         "guardrail '%s' is parallel: it must be the only guardrail of machine "
                         "'%s' (they all post guardrail.passed and guardrail.tripped)",
                         m->guardrails[i].name.s, m->name.s);
            return -1;
        }
    return 0;
}

void ac_spec_desugar(ac_spec *spec)
{
    for (size_t mi = 0; mi < spec->n_machines; mi++)
        for (size_t g = 0;
             parallel_alone(spec, &spec->machines[mi]) == 0 && g < spec->machines[mi].n_guardrails;
             g++)
            rewrite_guardrail(spec, &spec->machines[mi], &spec->machines[mi].guardrails[g]);
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
