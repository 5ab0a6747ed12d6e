/*
 * emit_diagram.c - diagrams of a compiled spec: Graphviz DOT, Mermaid
 * stateDiagram-v2, and a Markdown transition table per machine.
 *
 * Both diagrams show every state, event, guard and action, mark initial and
 * terminal states, and show which state invokes which machine (the child
 * machine is drawn inside the invoking state). With coverage counts (from a
 * journal) taken edges carry their counts and unvisited parts are grey (edges dashed).
 */
#include <string.h>

#include "spec.h"
#include "util/buf.h"

void ac_guard_to_text(const ac_fsm_tables *t, uint16_t off, char *buf, size_t cap)
{
    /* postfix -> infix with a small stack of strings kept in one buffer */
    char stack[AC_FSM_GUARD_STACK][256];
    int prec[AC_FSM_GUARD_STACK]; /* 3 atom/not, 2 and, 1 or */
    int sp = 0;
    buf[0] = 0;
    if (off == AC_FSM_NONE)
        return;
    for (uint16_t i = off; t->guard_code[i] != AC_G_END && sp <= AC_FSM_GUARD_STACK; i++) {
        uint16_t op = t->guard_code[i];
        char tmp[256];
        switch (op & AC_G_OPMASK) {
        case AC_G_PRED:
            if (sp == AC_FSM_GUARD_STACK)
                return;
            snprintf(stack[sp], sizeof stack[sp], "%s", t->guard_names[op & AC_G_ARGMASK]);
            prec[sp++] = 3;
            break;
        case AC_G_NOT:
            if (sp < 1)
                return;
            if (prec[sp - 1] < 3)
                snprintf(tmp, sizeof tmp, "!(%s)", stack[sp - 1]);
            else
                snprintf(tmp, sizeof tmp, "!%s", stack[sp - 1]);
            memcpy(stack[sp - 1], tmp, sizeof tmp);
            prec[sp - 1] = 3;
            break;
        default: {
            if (sp < 2)
                return;
            int p = (op & AC_G_OPMASK) == AC_G_AND ? 2 : 1;
            const char *sym = p == 2 ? "&&" : "||";
            char l[256], r[256];
            if (prec[sp - 2] < p)
                snprintf(l, sizeof l, "(%s)", stack[sp - 2]);
            else
                snprintf(l, sizeof l, "%s", stack[sp - 2]);
            if (prec[sp - 1] <= p && prec[sp - 1] != 3)
                snprintf(r, sizeof r, "(%s)", stack[sp - 1]);
            else
                snprintf(r, sizeof r, "%s", stack[sp - 1]);
            snprintf(tmp, sizeof tmp, "%.120s %s %.120s", l, sym, r);
            sp--;
            memcpy(stack[sp - 1], tmp, sizeof tmp);
            prec[sp - 1] = p;
            break;
        }
        }
    }
    if (sp == 1)
        snprintf(buf, cap, "%s", stack[0]);
}

/* An event as diagrams show it: a timer's `after(X)@M.S` reads `after X`. */
static const char *event_text(const ac_fsm_tables *t, uint16_t ev, char *buf, size_t cap)
{
    const char *n = t->event_names[ev];
    const char *at = strchr(n, '@');
    if (strncmp(n, "after(", 6) != 0 || !at || at[-1] != ')')
        return n;
    snprintf(buf, cap, "after %.*s", (int)(at - 1 - (n + 6)), n + 6);
    return buf;
}

static int is_timer_effect(const char *name)
{
    return strncmp(name, "after(", 6) == 0 && strchr(name, '@') != NULL;
}

static void list_text(const ac_fsm_tables *t, uint16_t off, const char *const *names, char *buf,
                      size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint16_t i = 1; i <= t->lists[off] && o < cap; i++) {
        int n = snprintf(buf + o, cap - o, "%s%s", i > 1 ? ", " : "", names[t->lists[off + i]]);
        if (n < 0)
            break;
        o += (size_t)n;
    }
}

static void effects_text(const ac_fsm_tables *t, uint16_t off, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint16_t i = 1; i <= t->lists[off] && o < cap; i++) {
        const ac_fsm_effect_use *u = &t->effect_uses[t->lists[off + i]];
        if (is_timer_effect(t->effect_names[u->effect]))
            continue; /* drawn as its `after` transition */
        int n = snprintf(buf + o, cap - o, "%s%s", o ? ", " : "", t->effect_names[u->effect]);
        if (n < 0)
            break;
        o += (size_t)n;
        if (t->lists[u->args] && o < cap) {
            char args[512];
            size_t ao = 0;
            args[0] = 0;
            for (uint16_t a = 1; a <= t->lists[u->args] && ao < sizeof args; a++) {
                int k = snprintf(args + ao, sizeof args - ao, "%s%s", a > 1 ? ", " : "",
                                 t->params[t->lists[u->args + a]].name);
                if (k < 0)
                    break;
                ao += (size_t)k;
            }
            n = snprintf(buf + o, cap - o, "(%s)", args);
            if (n > 0)
                o += (size_t)n;
        }
    }
}

/* "event [guard] / actions" */
static void edge_label(const ac_fsm_tables *t, const ac_fsm_transition *tr, char *buf, size_t cap)
{
    char g[300], a[400], e[300];
    ac_guard_to_text(t, tr->guard, g, sizeof g);
    list_text(t, tr->actions, t->action_names, a, sizeof a);
    snprintf(buf, cap, "%s%s%s%s%s%s%s",
             tr->event ? event_text(t, tr->event, e, sizeof e) : "(eventless)", g[0] ? " [" : "", g,
             g[0] ? "]" : "", a[0] ? " / " : "", a,
             tr->kind == AC_TR_INTERNAL ? " (internal)" : "");
}

/* The k-th transition of st when it is drawn as an edge (neither ignored nor internal: those
 * are listed inside their state), its label in buf and its index in *ti; else NULL. */
static const ac_fsm_transition *drawn_edge(const ac_fsm_tables *t, const ac_fsm_state *st,
                                           uint16_t k, uint16_t *ti, char *buf, size_t cap)
{
    *ti = (uint16_t)(st->first_transition + k);
    const ac_fsm_transition *tr = &t->transitions[*ti];
    if (tr->kind == AC_TR_IGNORE || tr->kind == AC_TR_INTERNAL)
        return NULL;
    edge_label(t, tr, buf, cap);
    return tr;
}

/* The internal transitions of state s, listed inside it rather than drawn as
 * self-loops: "on EVENT [guard] / actions", one per line (joined by sep); with loops, its
 * external self-loops too, marked "(re-enters)" (Graphviz would pile their labels up). */
static void internal_text(const ac_fsm_tables *t, const ac_fsm_state *st, const ac_diagram_cov *cov,
                          int loops, const char *sep, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (uint16_t k = 0; k < st->n_transitions && o < cap; k++) {
        uint16_t ti = (uint16_t)(st->first_transition + k);
        const ac_fsm_transition *tr = &t->transitions[ti];
        int loop = loops && tr->kind == AC_TR_EXTERNAL && tr->source == tr->target;
        if (tr->kind != AC_TR_INTERNAL && !loop)
            continue;
        char g[300], a[400], e[300];
        ac_guard_to_text(t, tr->guard, g, sizeof g);
        list_text(t, tr->actions, t->action_names, a, sizeof a);
        int n = snprintf(buf + o, cap - o, "%son %s%s%s%s%s%s%s", o ? sep : "",
                         event_text(t, tr->event, e, sizeof e), g[0] ? " [" : "", g,
                         g[0] ? "]" : "", a[0] ? " / " : "", a, loop ? " (re-enters)" : "");
        if (n < 0 || (size_t)n >= cap - o)
            break;
        o += (size_t)n;
        if (cov) {
            n = snprintf(buf + o, cap - o, " (%ux)", cov->transition_count[ti]);
            if (n > 0 && (size_t)n < cap - o)
                o += (size_t)n;
        }
    }
}

/* Machines drawn inside the state that invokes them: only when exactly one
 * state invokes the machine; otherwise they are drawn at top level. */
static int sole_invoker(const ac_fsm_tables *t, uint16_t m)
{
    int found = -1;
    for (uint16_t s = 0; s < t->n_states; s++)
        if (t->states[s].invoke == m) {
            if (found >= 0)
                return -2;
            found = s;
        }
    return found;
}

/* ---------------- DOT ---------------- */

static void dot_escape(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
}

/* One more line of a state's label ("\\nenter / a, b"), when there is text. */
static void dot_detail(FILE *out, const char *head, const char *text)
{
    if (!text[0])
        return;
    fputs("\\n", out);
    fputs(head, out);
    dot_escape(out, text);
}

static void dot_machine(const ac_fsm_tables *t, uint16_t m, const ac_diagram_cov *cov, FILE *out,
                        int indent, int single);

static void dot_state(const ac_fsm_tables *t, uint16_t s, const ac_diagram_cov *cov, FILE *out,
                      int indent, int single)
{
    const ac_fsm_state *st = &t->states[s];
    const char *mn = t->machines[st->machine].name;
    char enter[400], exit_[400], eff[600], ign[600];
    list_text(t, st->enter, t->action_names, enter, sizeof enter);
    list_text(t, st->exit, t->action_names, exit_, sizeof exit_);
    effects_text(t, st->effects, eff, sizeof eff);
    char inner[4000];
    internal_text(t, st, cov, 1, "\n", inner, sizeof inner);
    size_t io = 0;
    ign[0] = 0;
    for (uint16_t i = 0; i < st->n_transitions; i++) {
        const ac_fsm_transition *tr = &t->transitions[st->first_transition + i];
        if (tr->kind == AC_TR_IGNORE && io < sizeof ign) {
            int n = snprintf(ign + io, sizeof ign - io, "%s%s", io ? ", " : "",
                             t->event_names[tr->event]);
            if (n > 0)
                io += (size_t)n;
        }
    }
    int grey = cov && cov->state_count[s] == 0;
    if (st->invoke != AC_FSM_NONE && !single && sole_invoker(t, st->invoke) == s) {
        fprintf(out, "%*ssubgraph \"cluster_%s.%s\" {\n", indent, "", mn, st->name);
        fprintf(out, "%*s  label=\"", indent, "");
        dot_escape(out, st->name);
        if (cov)
            fprintf(out, " (%ux)", cov->state_count[s]);
        fprintf(out, " (invoke %s)", t->machines[st->invoke].name);
        dot_detail(out, "enter / ", enter);
        dot_detail(out, "exit / ", exit_);
        dot_detail(out, "effect ", eff);
        dot_detail(out, "", inner);
        dot_detail(out, "ignore ", ign);
        fprintf(out, "\";%s\n", grey ? " color=gray; fontcolor=gray;" : "");
        fprintf(out, "%*s  style=rounded;\n", indent, "");
        fprintf(out, "%*s  \"%s.%s\" [shape=point, width=0.05, style=invis, label=\"\"];\n", indent,
                "", mn, st->name);
        dot_machine(t, st->invoke, cov, out, indent + 2, 0);
        fprintf(out, "%*s}\n", indent, "");
        return;
    }
    fprintf(out, "%*s\"%s.%s\" [label=\"", indent, "", mn, st->name);
    dot_escape(out, st->name);
    if (cov)
        fprintf(out, " (%ux)", cov->state_count[s]);
    dot_detail(out, "enter / ", enter);
    dot_detail(out, "exit / ", exit_);
    dot_detail(out, "effect ", eff);
    if (st->invoke != AC_FSM_NONE)
        fprintf(out, "\\ninvoke %s", t->machines[st->invoke].name);
    dot_detail(out, "", inner);
    dot_detail(out, "ignore ", ign);
    fprintf(out, "\", shape=%s%s];\n", st->terminal ? "doublecircle" : "box, style=rounded",
            grey ? ", color=gray, fontcolor=gray" : "");
}

/* Node a transition into/out of state s attaches to. */
static void dot_node(const ac_fsm_tables *t, uint16_t s, FILE *out)
{
    fprintf(out, "\"%s.%s\"", t->machines[t->states[s].machine].name, t->states[s].name);
}

/* True when transition tr is drawn to or from the box of a machine its state invokes. */
static int cluster_edge(const ac_fsm_tables *t, const ac_fsm_transition *tr, int single)
{
    const ac_fsm_state *src = &t->states[tr->source], *dst = &t->states[tr->target];
    return tr->source != tr->target && !single &&
           ((src->invoke != AC_FSM_NONE && sole_invoker(t, src->invoke) == tr->source) ||
            (dst->invoke != AC_FSM_NONE && sole_invoker(t, dst->invoke) == tr->target));
}

/* The edges of state st. Edges to or from a machine's box that join the same two states are
 * drawn as one, a label line each: Graphviz loses parallel edges between clusters ("lost
 * edge", a crash in its router). */
static void dot_edges(const ac_fsm_tables *t, const ac_fsm_machine *mm, const ac_fsm_state *st,
                      const ac_diagram_cov *cov, FILE *out, int indent, int single)
{
    for (uint16_t k = 0; k < st->n_transitions; k++) {
        uint16_t ti, tj = 0;
        char label[800];
        const ac_fsm_transition *tr = drawn_edge(t, st, k, &ti, label, sizeof label);
        if (!tr || tr->source == tr->target)
            continue; /* self-loops are listed inside the state */
        int merge = cluster_edge(t, tr, single), drawn = 0, used = cov && cov->transition_count[ti];
        for (uint16_t j = 0; merge && j < k && !drawn; j++) {
            const ac_fsm_transition *o = drawn_edge(t, st, j, &tj, label, sizeof label);
            drawn = o && o->target == tr->target;
        }
        if (drawn)
            continue; /* on the first one's edge */
        edge_label(t, tr, label, sizeof label);
        fprintf(out, "%*s  ", indent, "");
        dot_node(t, tr->source, out);
        fputs(" -> ", out);
        dot_node(t, tr->target, out);
        fputs(" [label=\"", out);
        for (uint16_t j = k; j < st->n_transitions; j++) {
            const ac_fsm_transition *o = j == k  ? tr
                                         : merge ? drawn_edge(t, st, j, &tj, label, sizeof label)
                                                 : NULL;
            if (j > k && (!o || o->target != tr->target))
                continue;
            if (j > k) {
                fputs("\\n", out);
                used |= cov && cov->transition_count[tj];
            }
            dot_escape(out, label);
            if (cov && cov->transition_count[j == k ? ti : tj])
                fprintf(out, " (%ux)", cov->transition_count[j == k ? ti : tj]);
        }
        fputs("\"", out);
        const ac_fsm_state *src = &t->states[tr->source], *dst = &t->states[tr->target];
        if (merge && src->invoke != AC_FSM_NONE && sole_invoker(t, src->invoke) == tr->source)
            fprintf(out, ", ltail=\"cluster_%s.%s\"", mm->name, src->name);
        if (merge && dst->invoke != AC_FSM_NONE && sole_invoker(t, dst->invoke) == tr->target)
            fprintf(out, ", lhead=\"cluster_%s.%s\"", mm->name, dst->name);
        if (cov && !used)
            fputs(", color=gray, fontcolor=gray, style=dashed", out);
        else if (cov)
            fputs(", penwidth=2", out);
        fputs("];\n", out);
    }
}

static void dot_machine(const ac_fsm_tables *t, uint16_t m, const ac_diagram_cov *cov, FILE *out,
                        int indent, int single)
{
    const ac_fsm_machine *mm = &t->machines[m];
    fprintf(out, "%*ssubgraph \"cluster_%s\" {\n", indent, "", mm->name);
    fprintf(out, "%*s  label=\"machine %s\";\n", indent, "", mm->name);
    fprintf(out, "%*s  \"%s.__initial\" [shape=point, width=0.15, label=\"\"];\n", indent, "",
            mm->name);
    for (uint16_t i = 0; i < mm->n_states; i++)
        dot_state(t, (uint16_t)(mm->first_state + i), cov, out, indent + 2, single);
    fprintf(out, "%*s  \"%s.__initial\" -> ", indent, "", mm->name);
    dot_node(t, mm->initial, out);
    const ac_fsm_state *ini = &t->states[mm->initial];
    if (ini->invoke != AC_FSM_NONE && !single && sole_invoker(t, ini->invoke) == mm->initial)
        fprintf(out, " [lhead=\"cluster_%s.%s\"]", mm->name, ini->name);
    fputs(";\n", out);
    for (uint16_t i = 0; i < mm->n_states; i++)
        dot_edges(t, mm, &t->states[mm->first_state + i], cov, out, indent, single);
    fprintf(out, "%*s}\n", indent, "");
}

int ac_emit_dot(const ac_fsm_tables *t, int machine, const ac_diagram_cov *cov, FILE *out)
{
    fprintf(out, "// Generated by agentc %s from %s.\n", AGENTC_VERSION_STRING, t->spec_path);
    fputs("digraph agentc {\n  compound=true;\n  rankdir=LR;\n"
          "  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n",
          out);
    for (uint16_t m = 0; m < t->n_machines; m++) {
        if (machine >= 0 && m != machine)
            continue;
        if (machine < 0 && sole_invoker(t, m) >= 0)
            continue; /* drawn inside its invoking state */
        dot_machine(t, m, cov, out, 2, machine >= 0);
    }
    fputs("}\n", out);
    return ferror(out) ? -1 : 0;
}

/* ---------------- Mermaid ---------------- */

static void mmd_text(FILE *out, const char *s)
{
    /* Mermaid labels: avoid characters that end or confuse a label. */
    for (; *s; s++) {
        switch (*s) {
        case ';':
            fputc(',', out);
            break;
        case '#':
            fputs("no.", out);
            break;
        case '"':
            fputc('\'', out);
            break;
        case '\n':
            fputc(' ', out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

static void mmd_id(const ac_fsm_tables *t, uint16_t s, FILE *out)
{
    const char *p = t->machines[t->states[s].machine].name;
    for (; *p; p++)
        fputc(*p == '.' ? '_' : *p, out);
    fputc('_', out);
    for (p = t->states[s].name; *p; p++)
        fputc(*p == '.' ? '_' : *p, out);
}

static void mmd_machine(const ac_fsm_tables *t, uint16_t m, const ac_diagram_cov *cov, FILE *out,
                        int indent, int single);

/* The states of machine m, an invoked machine drawn inside its sole invoker. */
static void mmd_states(const ac_fsm_tables *t, uint16_t m, const ac_diagram_cov *cov, FILE *out,
                       int indent, int single)
{
    const ac_fsm_machine *mm = &t->machines[m];
    for (uint16_t i = 0; i < mm->n_states; i++) {
        uint16_t s = (uint16_t)(mm->first_state + i);
        const ac_fsm_state *st = &t->states[s];
        fprintf(out, "%*sstate \"%s", indent, "", st->name);
        if (cov)
            fprintf(out, " (%ux)", cov->state_count[s]);
        fputs("\" as ", out);
        mmd_id(t, s, out);
        fputc('\n', out);
        if (st->invoke != AC_FSM_NONE && !single && sole_invoker(t, st->invoke) == s) {
            fprintf(out, "%*sstate ", indent, "");
            mmd_id(t, s, out);
            fputs(" {\n", out);
            fprintf(out, "%*s%%%% invoke %s\n", indent + 4, "", t->machines[st->invoke].name);
            mmd_machine(t, st->invoke, cov, out, indent + 4, 0);
            fprintf(out, "%*s}\n", indent, "");
        }
    }
}

/* The external transitions of state s, and its way to [*] if terminal. */
static void mmd_edges(const ac_fsm_tables *t, uint16_t s, const ac_diagram_cov *cov, FILE *out,
                      int indent)
{
    const ac_fsm_state *st = &t->states[s];
    for (uint16_t k = 0; k < st->n_transitions; k++) {
        uint16_t ti;
        char label[800];
        const ac_fsm_transition *tr = drawn_edge(t, st, k, &ti, label, sizeof label);
        if (!tr)
            continue; /* internal ones are listed in the state's note */
        fprintf(out, "%*s", indent, "");
        mmd_id(t, tr->source, out);
        fputs(" --> ", out);
        mmd_id(t, tr->target, out);
        fputs(" : ", out);
        mmd_text(out, label);
        if (cov)
            fprintf(out, " (%ux)", cov->transition_count[ti]);
        fputc('\n', out);
    }
    if (st->terminal) {
        fprintf(out, "%*s", indent, "");
        mmd_id(t, s, out);
        fputs(" --> [*]\n", out);
    }
}

/* The note of state s: entry/exit actions, effects, invokes drawn elsewhere,
 * ignores, internal transitions; one item a line (nothing when empty). */
static void mmd_note(const ac_fsm_tables *t, uint16_t s, const ac_diagram_cov *cov, FILE *out,
                     int indent, int single)
{
    const ac_fsm_state *st = &t->states[s];
    char enter[400], exit_[400], eff[600], inner[2000];
    internal_text(t, st, cov, 0, "\n", inner, sizeof inner);
    list_text(t, st->enter, t->action_names, enter, sizeof enter);
    list_text(t, st->exit, t->action_names, exit_, sizeof exit_);
    effects_text(t, st->effects, eff, sizeof eff);
    ac_buf b;
    ac_buf_init(&b, AC_BUF_MAX);
    if (enter[0])
        ac_buf_printf(&b, "%senter / %s", b.n ? "\n" : "", enter);
    if (exit_[0])
        ac_buf_printf(&b, "%sexit / %s", b.n ? "\n" : "", exit_);
    if (eff[0])
        ac_buf_printf(&b, "%seffect %s", b.n ? "\n" : "", eff);
    if (st->invoke != AC_FSM_NONE && (single || sole_invoker(t, st->invoke) != s))
        ac_buf_printf(&b, "%sinvoke %s", b.n ? "\n" : "", t->machines[st->invoke].name);
    for (uint16_t k = 0; k < st->n_transitions; k++) {
        const ac_fsm_transition *tr = &t->transitions[st->first_transition + k];
        if (tr->kind == AC_TR_IGNORE)
            ac_buf_printf(&b, "%signore %s", b.n ? "\n" : "", t->event_names[tr->event]);
    }
    if (inner[0])
        ac_buf_printf(&b, "%s%s", b.n ? "\n" : "", inner);
    if (b.n && !b.failed) {
        /* one item a line: internal transitions, effects and the rest stay readable */
        fprintf(out, "%*snote right of ", indent, "");
        mmd_id(t, s, out);
        fputc('\n', out);
        for (char *line = b.p, *nl; line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            fprintf(out, "%*s    ", indent, "");
            mmd_text(out, line);
            fputc('\n', out);
        }
        fprintf(out, "%*send note\n", indent, "");
    }
    ac_buf_free(&b);
}

static void mmd_machine(const ac_fsm_tables *t, uint16_t m, const ac_diagram_cov *cov, FILE *out,
                        int indent, int single)
{
    const ac_fsm_machine *mm = &t->machines[m];
    mmd_states(t, m, cov, out, indent, single);
    fprintf(out, "%*s[*] --> ", indent, "");
    mmd_id(t, mm->initial, out);
    fputc('\n', out);
    for (uint16_t i = 0; i < mm->n_states; i++)
        mmd_edges(t, (uint16_t)(mm->first_state + i), cov, out, indent);
    for (uint16_t i = 0; i < mm->n_states; i++)
        mmd_note(t, (uint16_t)(mm->first_state + i), cov, out, indent, single);
}

int ac_emit_mermaid(const ac_fsm_tables *t, int machine, const ac_diagram_cov *cov, FILE *out)
{
    fputs("stateDiagram-v2\n", out);
    /* Mermaid has one start and one end node per level: several machines
     * at the top level each get a composite state of their own, so their
     * [*] nodes stay apart. Ids M<index> cannot clash with state ids,
     * which always hold a '_'. */
    int top = 0;
    for (uint16_t m = 0; m < t->n_machines; m++)
        top += machine >= 0 ? m == machine : sole_invoker(t, m) < 0;
    for (uint16_t m = 0; m < t->n_machines; m++) {
        if (machine >= 0 && m != machine)
            continue;
        if (machine < 0 && sole_invoker(t, m) >= 0)
            continue;
        fprintf(out, "    %%%% machine %s\n", t->machines[m].name);
        if (top > 1) {
            fprintf(out, "    state \"machine %s\" as M%u {\n", t->machines[m].name, m);
            mmd_machine(t, m, cov, out, 8, machine >= 0);
            fputs("    }\n", out);
        } else {
            mmd_machine(t, m, cov, out, 4, machine >= 0);
        }
    }
    if (cov) {
        fputs("    classDef unvisited fill:#eee,stroke:#bbb,color:#999\n", out);
        for (uint16_t s = 0; s < t->n_states; s++) {
            if (machine >= 0 && t->states[s].machine != machine)
                continue;
            if (cov->state_count[s] == 0) {
                fputs("    class ", out);
                mmd_id(t, s, out);
                fputs(" unvisited\n", out);
            }
        }
    }
    return ferror(out) ? -1 : 0;
}

/* ---------------- Markdown ---------------- */

static void md_cell(FILE *out, const char *s)
{
    if (!*s) {
        fputs(" ", out);
        return;
    }
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else
            fputc(*s, out);
    }
}

int ac_emit_markdown(const ac_fsm_tables *t, int machine, FILE *out)
{
    const char *base = strrchr(t->spec_path, '/');
    base = base ? base + 1 : t->spec_path;
    fprintf(out, "<!-- Generated by agentc %s from %s. -->\n\n", AGENTC_VERSION_STRING,
            t->spec_path);
    for (uint16_t m = 0; m < t->n_machines; m++) {
        if (machine >= 0 && m != machine)
            continue;
        const ac_fsm_machine *mm = &t->machines[m];
        fprintf(out, "## machine `%s`\n\n", mm->name);
        fprintf(out, "Initial state: `%s`. Terminal states:", t->states[mm->initial].name);
        int any = 0;
        for (uint16_t i = 0; i < mm->n_states; i++)
            if (t->states[mm->first_state + i].terminal) {
                fprintf(out, "%s `%s`", any ? "," : "", t->states[mm->first_state + i].name);
                any = 1;
            }
        fputs(any ? ".\n\n" : " none.\n\n", out);
        fputs("| State | Enter | Exit | Effects | Invokes | Line |\n", out);
        fputs("|---|---|---|---|---|---|\n", out);
        for (uint16_t i = 0; i < mm->n_states; i++) {
            const ac_fsm_state *st = &t->states[mm->first_state + i];
            char enter[400], exit_[400], eff[600];
            list_text(t, st->enter, t->action_names, enter, sizeof enter);
            list_text(t, st->exit, t->action_names, exit_, sizeof exit_);
            effects_text(t, st->effects, eff, sizeof eff);
            fprintf(out, "| `%s`%s%s | ", st->name,
                    mm->initial == mm->first_state + i ? " (initial)" : "",
                    st->terminal ? " (terminal)" : "");
            md_cell(out, enter);
            fputs(" | ", out);
            md_cell(out, exit_);
            fputs(" | ", out);
            md_cell(out, eff);
            fprintf(out, " | %s | %s:%u |\n",
                    st->invoke != AC_FSM_NONE ? t->machines[st->invoke].name : " ", base, st->line);
        }
        fputs("\n| # | From | Event | Guard | Actions | To | Kind | Line |\n", out);
        fputs("|---|---|---|---|---|---|---|---|\n", out);
        for (uint16_t i = 0; i < mm->n_states; i++) {
            const ac_fsm_state *st = &t->states[mm->first_state + i];
            for (uint16_t k = 0; k < st->n_transitions; k++) {
                uint16_t ti = (uint16_t)(st->first_transition + k);
                const ac_fsm_transition *tr = &t->transitions[ti];
                char g[300], a[400];
                ac_guard_to_text(t, tr->guard, g, sizeof g);
                list_text(t, tr->actions, t->action_names, a, sizeof a);
                char e[300];
                fprintf(out, "| %u | `%s` | %s | ", ti, st->name,
                        tr->event ? event_text(t, tr->event, e, sizeof e) : "(eventless)");
                md_cell(out, g);
                fputs(" | ", out);
                md_cell(out, a);
                fprintf(out, " | `%s` | %s | %s:%u |\n", t->states[tr->target].name,
                        tr->kind == AC_TR_INTERNAL ? "internal"
                        : tr->kind == AC_TR_IGNORE ? "ignore"
                                                   : "external",
                        base, tr->line);
            }
        }
        fputc('\n', out);
    }
    return ferror(out) ? -1 : 0;
}

/* ---------------- Overview ---------------- */

/* The machines and who invokes whom: a Mermaid flowchart, one node per
 * machine (its state count), one edge per invoking state. */
int ac_emit_overview(const ac_fsm_tables *t, FILE *out)
{
    fputs("flowchart LR\n", out);
    for (uint16_t m = 0; m < t->n_machines; m++) {
        const ac_fsm_machine *mm = &t->machines[m];
        unsigned terminals = 0;
        for (uint16_t i = 0; i < mm->n_states; i++)
            terminals += t->states[mm->first_state + i].terminal;
        fprintf(out, "    M%u[\"machine ", m);
        mmd_text(out, mm->name);
        fprintf(out, "%s<br/>%u states, %u terminal\"]\n", m == t->root ? " (root)" : "",
                mm->n_states, terminals);
    }
    for (uint16_t s = 0; s < t->n_states; s++) {
        const ac_fsm_state *st = &t->states[s];
        if (st->invoke == AC_FSM_NONE)
            continue;
        fprintf(out, "    M%u -- \"", st->machine);
        mmd_text(out, st->name);
        fprintf(out, " invokes\" --> M%u\n", st->invoke);
    }
    return ferror(out) ? -1 : 0;
}
