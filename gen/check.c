/*
 * check.c - semantic checks of a parsed spec, and name resolution.
 *
 * Every rule reports at the location of the offending declaration and the
 * checker goes on, so one run lists all problems (capped at
 * AC_SPEC_MAX_ERRORS). When there are no errors, spec->res holds the
 * resolved model that lowering turns into tables.
 *
 * ac_spec_check runs one function per phase, in this order; each rule is
 * tagged with the function that enforces it (parser.c: found while parsing).
 *
 * Rules (error unless marked):
 *   duplicate param / event / guard / action / effect      declare_names
 *   duplicate machine; missing initial state; no machine
 *     at all; more than 65534 states or 255 machines       number_states
 *   duplicate state / initial / terminal                    parser.c
 *   unknown machine in `invoke`; a terminal state that
 *     invokes; an event declared under the name of an
 *     arrival event (M.S)                                   add_arrival_events
 *   invoke cycle; more than one root machine; no root
 *     machine; nesting too deep (AC_FSM_MAX_DEPTH)          check_invoke_tree
 *   unknown action / effect / param in a state body         check_state_bodies
 *   unknown state, event (or arrival event M.S that is not
 *     terminal or never arrives), guard, action in a
 *     transition; transition out of a terminal state;
 *     guard too deep to evaluate (AC_FSM_GUARD_STACK)       resolve_rows
 *   two unguarded transitions for the same (state, event);
 *     a transition made dead by an earlier unguarded one    check_row_conflicts
 *   machine without a terminal state; unreachable state;
 *     non-terminal state with no outgoing transition;
 *     state from which no terminal state can be reached;
 *     eventless cycle with no guard                         check_graph
 *   warning: event no state handles; declared handler
 *     never used (only for a spec without errors)           warn_unused
 *   an edge on an event that carries decisions entering a
 *     state that runs run_tools without apply_decisions;
 *     apply_decisions elsewhere                             ac_spec_check_decisions
 *                                                           (decisions.c)
 *   two names that become the same C identifier in the
 *     generated code                                        check_c_names
 *   tables beyond their 16-bit limits (events,
 *     transitions, handlers, params, list and guard code
 *     sizes, effect uses)                                   check_limits
 *
 * Graph rules (reachability, ways out, reaching a terminal state) are left
 * out for a machine with unresolved transitions: an unknown name already
 * explains the problem, and the graph without that edge would only add
 * misleading follow-up errors.
 */
#include <stdlib.h>
#include <string.h>

#include "facts.h"
#include "sugar.h"
#include "names.h"
#include "spec.h"
#include "util/grow.h"

typedef struct checker {
    ac_spec *spec;
    ac_strmap params, events, handlers[AC_HK_COUNT], machines;
    ac_strmap *states; /* per machine: name -> global index */
    ac_resolved *res;
    char *event_used, *handler_used[AC_HK_COUNT];
    char *machine_unresolved; /* a transition of the machine did not resolve */
    char *machine_invoked;    /* some state invokes the machine */
    ac_row *rows;             /* resolve_rows -> group_rows: rows in expansion order */
    size_t n_rows;
} checker;

/* The i-th of n names `stride` bytes apart: an ac_name array, or the
 * name member of an array of declarations. */
static const ac_name *name_at(const ac_name *first, size_t stride, size_t i)
{
    return (const ac_name *)(const void *)((const char *)first + i * stride);
}

/* Maps declared names to first_value, first_value + 1, ... and reports
 * each name declared again. */
static int map_decls(checker *ck, ac_strmap *map, const ac_name *names, size_t n, size_t stride,
                     int first_value, const char *what)
{
    if (ac_strmap_init(map, n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const ac_name *nm = name_at(names, stride, i);
        int prev = ac_strmap_put(map, nm->s, (int)i + first_value);
        if (prev >= 0)
            ac_spec_diag(ck->spec, 1, nm->line, nm->col,
                         "duplicate %s '%s' (first declared at line %d)", what, nm->s,
                         name_at(names, stride, (size_t)(prev - first_value))->line);
    }
    return 0;
}

int ac_spec_handler_index(const ac_spec *spec, int kind, const char *name)
{
    const ac_names *ns = &spec->handlers[kind];
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i].s, name) == 0)
            return (int)i;
    return -1;
}

int ac_spec_param_index(const ac_spec *spec, const char *name)
{
    for (size_t i = 0; i < spec->n_params; i++)
        if (strcmp(spec->params[i].name.s, name) == 0)
            return (int)i;
    return -1;
}

static void use_handler(checker *ck, int kind, const ac_name *n)
{
    int i = ac_strmap_get(&ck->handlers[kind], n->s);
    if (i < 0) {
        ac_spec *spec = ck->spec;
        const char *kn = ac_handler_kind_name(kind);
        for (int k = 0; k < AC_HK_COUNT; k++)
            if (k != kind && ac_strmap_get(&ck->handlers[k], n->s) >= 0) {
                ac_spec_diag(spec, 1, n->line, n->col, "'%s' is %s %s, not %s %s", n->s,
                             k == HK_ACTION ? "an" : "a", ac_handler_kind_name(k),
                             kind == HK_ACTION ? "an" : "a", kn);
                return;
            }
        if (kind == HK_GUARD && ac_fact_find(n->s) >= 0) {
            ac_spec_diag(spec, 1, n->line, n->col,
                         "'%s' is a session fact (%s): compare it, as in [%s > 0]", n->s,
                         ac_fact_type_name(ac_facts[ac_fact_find(n->s)].type), n->s);
            return;
        }
        if (ac_spec_param_index(spec, n->s) >= 0) {
            ac_spec_diag(spec, 1, n->line, n->col, "'%s' is a param, not %s %s", n->s,
                         kind == HK_ACTION ? "an" : "a", kn);
            return;
        }
        const ac_names *ns = &spec->handlers[kind];
        const char *near =
            ns->n ? ac_spec_closest(n->s, &ns->v[0].s, ns->n, sizeof ns->v[0]) : NULL;
        if (near)
            ac_spec_diag(spec, 1, n->line, n->col, "unknown %s '%s' (did you mean '%s'?)", kn, n->s,
                         near);
        else
            ac_spec_diag(spec, 1, n->line, n->col, "unknown %s '%s' (declare it with '%s %s')", kn,
                         n->s, kn, n->s);
        return;
    }
    ck->handler_used[kind][i] = 1;
}

static void check_guard(checker *ck, const ac_gexpr *g)
{
    if (!g)
        return;
    if (g->kind == GX_PRED)
        use_handler(ck, HK_GUARD, &g->pred);
    check_guard(ck, g->a);
    check_guard(ck, g->b);
}

/* Evaluation stack a guard's postfix program needs (lower.c emits the left
 * operand, then the right one, then the operator). */
static int guard_stack_depth(const ac_gexpr *g)
{
    if (!g)
        return 0;
    if (g->kind == GX_PRED)
        return 1;
    int a = guard_stack_depth(g->a), b = guard_stack_depth(g->b);
    return g->kind == GX_NOT ? a : (a > b + 1 ? a : b + 1);
}

/* Number of opcodes in a guard's postfix program. */
static size_t guard_code_len(const ac_gexpr *g)
{
    if (!g)
        return 0;
    return 1 + guard_code_len(g->a) + guard_code_len(g->b);
}

/* Entries a list of n items takes in the `lists` table (count + items). */
static size_t list_entries(size_t n)
{
    return n ? n + 1 : 0;
}

/* ---- C names ----
 * The C emitter turns every name into an upper-case identifier ('.' -> '_'),
 * prefixed by its kind: M_ machine, S_<MACHINE>_ state, E_ event, G_/A_/F_
 * handler, P_ param (and PARAM_<NAME>[_MS] for defaults). Two spec names
 * that differ only in case or in '.' versus '_' would give one C name twice
 * and generated code that does not compile, so they are reported here. */
typedef struct cname_owner {
    const char *what; /* "event", "state", ... */
    const char *name; /* the spec name, e.g. "llm.delta" */
    int line;
} cname_owner;

typedef struct cnames {
    ac_strmap map; /* C name -> owner index */
    cname_owner *owners;
    size_t n, cap;
} cnames;

static int cname_owner_push(cnames *cn, cname_owner o)
{
    if (ac_grow((void **)&cn->owners, &cn->cap, cn->n + 1, sizeof *cn->owners))
        return -1;
    cn->owners[cn->n++] = o;
    return 0;
}

static void cname_add(checker *ck, cnames *cn, const char *prefix, const char *mid,
                      const char *what, const ac_name *n, const char *shown)
{
    size_t len = strlen(prefix) + (mid ? 4 * strlen(mid) + 1 : 0) + 4 * strlen(n->s) + 1;
    char *key = ac_spec_alloc(ck->spec, len);
    if (!key)
        return;
    size_t o = 0;
    for (const char *p = prefix; *p; p++)
        key[o++] = *p;
    if (mid) {
        o += ac_cname(mid, key + o);
        key[o++] = '_';
    }
    o += ac_cname(n->s, key + o);
    key[o] = 0;
    if (cname_owner_push(cn, (cname_owner){what, shown ? shown : n->s, n->line}) < 0)
        return;
    int prev = ac_strmap_put(&cn->map, key, (int)cn->n - 1);
    if (prev < 0) /* new name (or out of memory) */
        return;
    cn->n--;
    const cname_owner *o2 = &cn->owners[prev];
    if (strcmp(o2->what, what) == 0 && strcmp(o2->name, shown ? shown : n->s) == 0)
        return; /* the same name declared twice: reported as a duplicate */
    if (o2->line == 0)
        ac_spec_diag(ck->spec, 1, n->line, n->col,
                     "%s '%s' clashes with the generated name %s in the C code (rename it)", what,
                     shown ? shown : n->s, key);
    else
        ac_spec_diag(ck->spec, 1, n->line, n->col,
                     "%s '%s' and %s '%s' (line %d) both become %s in the generated C (names "
                     "must differ in more than case and '.' versus '_')",
                     what, shown ? shown : n->s, o2->what, o2->name, o2->line, key);
}

static void check_c_names(checker *ck)
{
    ac_spec *spec = ck->spec;
    cnames cn;
    memset(&cn, 0, sizeof cn);
    size_t expect = 64 + spec->n_machines + ck->res->n_states + spec->events.n + spec->n_params * 2;
    for (int k = 0; k < AC_HK_COUNT; k++)
        expect += spec->handlers[k].n;
    if (ac_strmap_init(&cn.map, expect) < 0)
        return;
    /* names the emitter uses itself (line 0 = reserved) */
    static const char *const reserved[] = {"M__COUNT", "S__COUNT", "E__COUNT", "E_NONE",
                                           "G__COUNT", "A__COUNT", "F__COUNT", "P__COUNT"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (cname_owner_push(&cn, (cname_owner){"", reserved[i], 0}) == 0)
            ac_strmap_put(&cn.map, reserved[i], (int)cn.n - 1);
    for (size_t m = 0; m < spec->n_machines; m++) {
        const ac_machine_decl *md = &spec->machines[m];
        cname_add(ck, &cn, "M_", NULL, "machine", &md->name, NULL);
        for (size_t s = 0; s < md->n_states; s++)
            cname_add(ck, &cn, "S_", md->name.s, "state", &md->states[s].name, NULL);
    }
    for (size_t i = 0; i < spec->events.n; i++)
        cname_add(ck, &cn, "E_", NULL, "event", &spec->events.v[i], NULL);
    for (size_t e = spec->events.n + 1; e < ck->res->n_events; e++) {
        /* arrival events M.S: located at the terminal state they stand for */
        const char *nm = ck->res->event_names[e];
        const char *dot = strrchr(nm, '.');
        ac_name at = {nm, 1, 1};
        for (size_t m = 0; dot && m < spec->n_machines; m++) {
            const ac_machine_decl *md = &spec->machines[m];
            if (strlen(md->name.s) != (size_t)(dot - nm) ||
                strncmp(md->name.s, nm, (size_t)(dot - nm)))
                continue;
            for (size_t s = 0; s < md->n_states; s++)
                if (strcmp(md->states[s].name.s, dot + 1) == 0) {
                    at.line = md->states[s].name.line;
                    at.col = md->states[s].name.col;
                }
        }
        cname_add(ck, &cn, "E_", NULL, "arrival event", &at, NULL);
    }
    for (int k = 0; k < AC_HK_COUNT; k++)
        for (size_t i = 0; i < spec->handlers[k].n; i++)
            cname_add(ck, &cn, ac_handler_kind_prefix(k), NULL, ac_handler_kind_name(k),
                      &spec->handlers[k].v[i], NULL);
    for (size_t i = 0; i < spec->n_params; i++) {
        const ac_param_decl *p = &spec->params[i];
        cname_add(ck, &cn, "P_", NULL, "param", &p->name, NULL);
        if (p->type == AC_PARAM_DURATION) {
            size_t len = strlen(p->name.s) + 4;
            char *nm = ac_spec_alloc(spec, len);
            if (nm) {
                snprintf(nm, len, "%s_ms", p->name.s);
                ac_name n = {nm, p->name.line, p->name.col};
                cname_add(ck, &cn, "PARAM_", NULL, "param", &n, p->name.s);
            }
        } else {
            cname_add(ck, &cn, "PARAM_", NULL, "param", &p->name, NULL);
        }
    }
    ac_strmap_free(&cn.map);
    free(cn.owners);
}

/* State name -> global index within machine m, or -1 with a diagnostic. */
static int resolve_state(checker *ck, size_t m, const ac_name *n)
{
    int s = ac_strmap_get(&ck->states[m], n->s);
    if (s < 0) {
        const ac_machine_decl *md = &ck->spec->machines[m];
        const char *near = md->n_states ? ac_spec_closest(n->s, &md->states[0].name.s, md->n_states,
                                                          sizeof md->states[0])
                                        : NULL;
        if (near)
            ac_spec_diag(ck->spec, 1, n->line, n->col,
                         "unknown state '%s' in machine '%s' (did you mean '%s'?)", n->s,
                         md->name.s, near);
        else
            ac_spec_diag(ck->spec, 1, n->line, n->col,
                         "unknown state '%s' in machine '%s' (declare it with 'state %s' in the "
                         "machine)",
                         n->s, md->name.s, n->s);
    }
    return s;
}

/* Event name -> index; `M.S` names the arrival of machine M in terminal S. */
static int resolve_event(checker *ck, const ac_name *n)
{
    int e = ac_strmap_get(&ck->events, n->s);
    if (e >= 0) {
        if (e <= (int)ck->spec->events.n)
            ck->event_used[e] = 1;
        return e;
    }
    const char *dot = strrchr(n->s, '.');
    if (dot) {
        char mname[256];
        size_t ml = (size_t)(dot - n->s);
        if (ml < sizeof mname) {
            memcpy(mname, n->s, ml);
            mname[ml] = 0;
            int mi = ac_strmap_get(&ck->machines, mname);
            if (mi >= 0) {
                int s = ac_strmap_get(&ck->states[mi], dot + 1);
                if (s < 0)
                    ac_spec_diag(ck->spec, 1, n->line, n->col,
                                 "unknown state '%s' in machine '%s' (event '%s')", dot + 1, mname,
                                 n->s);
                else if (!ck->res->states[s]->terminal)
                    ac_spec_diag(ck->spec, 1, n->line, n->col,
                                 "event '%s': state '%s' of machine '%s' is not terminal", n->s,
                                 dot + 1, mname);
                else
                    ac_spec_diag(ck->spec, 1, n->line, n->col,
                                 "event '%s' never arrives: machine '%s' is not invoked by any "
                                 "state",
                                 n->s, mname);
                return -1;
            }
        }
    }
    const ac_names *evs = &ck->spec->events;
    const char *near =
        evs->n ? ac_spec_closest(n->s, &evs->v[0].s, evs->n, sizeof evs->v[0]) : NULL;
    if (near)
        ac_spec_diag(ck->spec, 1, n->line, n->col, "unknown event '%s' (did you mean '%s'?)", n->s,
                     near);
    else
        ac_spec_diag(ck->spec, 1, n->line, n->col,
                     "unknown event '%s' (declare it with 'event %s')", n->s, n->s);
    return -1;
}

static void free_resolved(ac_resolved *r)
{
    if (!r)
        return;
    free(r->states);
    free(r->state_machine);
    free(r->event_names);
    free(r->rows);
    free(r->state_first_row);
    free(r->state_n_rows);
    free(r->machine_depth);
    free(r->machine_first_state);
    free(r);
}

/* DFS colouring for cycle detection over a small adjacency list. */
typedef struct graph {
    int n;
    int *head, *next, *to, *edge_id;
    int ne, cap;
} graph;

static int graph_init(graph *g, int n, int cap)
{
    g->n = n;
    g->ne = 0;
    g->cap = cap > 0 ? cap : 1;
    g->head = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    g->next = malloc(sizeof(int) * (size_t)g->cap);
    g->to = malloc(sizeof(int) * (size_t)g->cap);
    g->edge_id = malloc(sizeof(int) * (size_t)g->cap);
    if (!g->head || !g->next || !g->to || !g->edge_id)
        return -1;
    for (int i = 0; i < n; i++)
        g->head[i] = -1;
    return 0;
}

static void graph_free(graph *g)
{
    free(g->head);
    free(g->next);
    free(g->to);
    free(g->edge_id);
}

static void graph_add(graph *g, int from, int to, int id)
{
    if (g->ne >= g->cap)
        return;
    g->to[g->ne] = to;
    g->edge_id[g->ne] = id;
    g->next[g->ne] = g->head[from];
    g->head[from] = g->ne++;
}

/* Iterative DFS; returns the edge id closing the first cycle found from
 * `start`, or -1. colour: 0 white, 1 on stack, 2 done. */
static int find_cycle(const graph *g, int start, char *colour, int *stack_node, int *stack_edge,
                      int *cycle_from)
{
    int sp = 0;
    if (colour[start])
        return -1;
    stack_node[sp] = start;
    stack_edge[sp] = g->head[start];
    colour[start] = 1;
    sp++;
    while (sp > 0) {
        int v = stack_node[sp - 1];
        int e = stack_edge[sp - 1];
        if (e < 0) {
            colour[v] = 2;
            sp--;
            continue;
        }
        stack_edge[sp - 1] = g->next[e];
        int w = g->to[e];
        if (colour[w] == 1) {
            *cycle_from = v;
            return g->edge_id[e];
        }
        if (colour[w] == 0) {
            colour[w] = 1;
            stack_node[sp] = w;
            stack_edge[sp] = g->head[w];
            sp++;
        }
    }
    return -1;
}

/* The tables index everything with uint16_t (AC_FSM_NONE reserved) and
 * guard opcodes keep 14 bits for the guard index: report a spec that does
 * not fit instead of emitting wrapped indexes. */
static void check_limits(checker *ck)
{
    ac_spec *spec = ck->spec;
    const ac_resolved *res = ck->res;
    size_t nr = res->n_rows;
    const size_t max = AC_FSM_NONE - 1;
    struct {
        const char *what;
        size_t n, limit;
    } lim[] = {
        {"events (declared and arrival)", res->n_events, max},
        {"transitions (after expanding sources)", nr, max},
        {"guards", spec->handlers[HK_GUARD].n, AC_G_ARGMASK + 1},
        {"actions", spec->handlers[HK_ACTION].n, max},
        {"effects", spec->handlers[HK_EFFECT].n, max},
        {"params", spec->n_params, max},
        {"list entries (actions, effects and arguments)", 0, max},
        {"guard opcodes", 0, max},
    };
    size_t lists = 1, effect_uses = 0, guard_code = 0;
    for (size_t s = 0; s < res->n_states; s++) {
        const ac_state_decl *sd = res->states[s];
        lists += list_entries(sd->enter.n) + list_entries(sd->exit.n) + list_entries(sd->n_effects);
        for (size_t e = 0; e < sd->n_effects; e++)
            lists += list_entries(sd->effects[e].args.n);
        effect_uses += sd->n_effects;
    }
    for (size_t r = 0; r < nr; r++) {
        const ac_row *rw = &res->rows[r];
        lists += list_entries(rw->decl->actions.n);
        /* lower.c shares the program of consecutive rows of one declaration */
        if (rw->decl->guard && !(r > 0 && res->rows[r - 1].decl == rw->decl))
            guard_code += guard_code_len(rw->decl->guard) + 1;
    }
    lim[6].n = lists;
    lim[7].n = guard_code;
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].n > lim[i].limit) {
            ac_spec_diag(spec, 1, 1, 1, "spec too large: %zu %s (the limit is %zu)", lim[i].n,
                         lim[i].what, lim[i].limit);
            return;
        }
    if (effect_uses > max)
        ac_spec_diag(spec, 1, 1, 1,
                     "spec too large: %zu effect uses in state bodies (the limit "
                     "is %zu)",
                     effect_uses, max);
}

/* ---- the phases of ac_spec_check, in the order it runs them ----
 * Each phase adds its diagnostics in a fixed order (the cap on errors keeps
 * the first ones). A phase returning -1 stops the check: later phases need
 * what it failed to build (out of memory, or a spec too large to number). */

/* Params, events and handlers: name -> index maps, duplicates reported.
 * Events are numbered from 1; 0 is the eventless pseudo-event. */
static void declare_names(checker *ck)
{
    ac_spec *spec = ck->spec;
    map_decls(ck, &ck->params, spec->n_params ? &spec->params[0].name : NULL, spec->n_params,
              sizeof *spec->params, 0, "param");
    map_decls(ck, &ck->events, spec->events.v, spec->events.n, sizeof *spec->events.v, 1, "event");
    for (int k = 0; k < AC_HK_COUNT; k++) {
        map_decls(ck, &ck->handlers[k], spec->handlers[k].v, spec->handlers[k].n,
                  sizeof *spec->handlers[k].v, 0, ac_handler_kind_name(k));
        ck->handler_used[k] = calloc(spec->handlers[k].n + 1, 1);
    }
}

/* Machines and their states: one global numbering of the states, with the
 * states of a machine contiguous. */
static int number_states(checker *ck)
{
    ac_spec *spec = ck->spec;
    ac_resolved *res = ck->res;
    ac_strmap_init(&ck->machines, spec->n_machines);
    ck->states = calloc(spec->n_machines + 1, sizeof *ck->states);
    ck->machine_unresolved = calloc(spec->n_machines + 1, 1);
    res->machine_first_state = calloc(spec->n_machines + 1, sizeof(int));
    res->machine_depth = calloc(spec->n_machines + 1, sizeof(int));
    size_t n_states = 0;
    for (size_t m = 0; m < spec->n_machines; m++)
        n_states += spec->machines[m].n_states;
    res->states = calloc(n_states + 1, sizeof *res->states);
    res->state_machine = calloc(n_states + 1, sizeof(int));
    if (!ck->states || !res->machine_first_state || !res->states || !res->state_machine ||
        !res->machine_depth || !ck->machine_unresolved) {
        spec->n_errors++;
        return -1;
    }
    n_states = 0;
    for (size_t m = 0; m < spec->n_machines; m++) {
        ac_machine_decl *md = &spec->machines[m];
        md->index = (int)m;
        int prev = ac_strmap_put(&ck->machines, md->name.s, (int)m);
        if (prev >= 0)
            ac_spec_diag(spec, 1, md->name.line, md->name.col,
                         "duplicate machine '%s' (first declared at line %d)", md->name.s,
                         spec->machines[prev].name.line);
        ac_strmap_init(&ck->states[m], md->n_states);
        res->machine_first_state[m] = (int)n_states;
        for (size_t s = 0; s < md->n_states; s++) {
            ac_state_decl *sd = &md->states[s];
            sd->index = (int)n_states;
            ac_strmap_put(&ck->states[m], sd->name.s, (int)n_states);
            res->states[n_states] = sd;
            res->state_machine[n_states] = (int)m;
            n_states++;
        }
        if (!md->initial.s)
            ac_spec_diag(spec, 1, md->name.line, md->name.col,
                         "machine '%s' has no initial state (add 'initial STATE')", md->name.s);
    }
    res->n_states = n_states;
    if (spec->n_machines == 0)
        ac_spec_diag(spec, 1, 1, 1, "the spec declares no machine (add 'machine NAME { ... }')");
    if (n_states >= AC_FSM_NONE) {
        ac_spec_diag(spec, 1, 1, 1, "spec too large: %zu states (the limit is %u)", n_states,
                     AC_FSM_NONE - 1);
        return -1;
    }
    if (spec->n_machines >= 256) {
        ac_spec_diag(spec, 1, 1, 1, "spec too large: %zu machines (the limit is 255)",
                     spec->n_machines);
        return -1;
    }
    return 0;
}

/* Which machines are invoked, and their arrival events: M.S for every
 * terminal state S of every invoked machine M, numbered after the declared
 * events. */
static int add_arrival_events(checker *ck)
{
    ac_spec *spec = ck->spec;
    ac_resolved *res = ck->res;
    size_t n_states = res->n_states;
    size_t n_events = spec->events.n + 1;
    char *invoked = ck->machine_invoked = calloc(spec->n_machines + 1, 1);
    if (!invoked) {
        spec->n_errors++;
        return -1;
    }
    for (size_t s = 0; s < n_states; s++) {
        ac_state_decl *sd = res->states[s];
        if (!sd->invoke.s)
            continue;
        int mi = ac_strmap_get(&ck->machines, sd->invoke.s);
        if (mi < 0) {
            ac_spec_diag(spec, 1, sd->invoke.line, sd->invoke.col, "unknown machine '%s'",
                         sd->invoke.s);
            continue;
        }
        if (sd->terminal)
            ac_spec_diag(spec, 1, sd->invoke.line, sd->invoke.col,
                         "terminal state '%s' cannot invoke a machine", sd->name.s);
        invoked[mi] = 1;
    }
    res->event_names = calloc(n_events + n_states + 1, sizeof(char *));
    ck->event_used = calloc(n_events + n_states + 1, 1);
    if (!res->event_names || !ck->event_used) {
        spec->n_errors++;
        return -1;
    }
    res->event_names[0] = "";
    for (size_t i = 0; i < spec->events.n; i++)
        res->event_names[i + 1] = spec->events.v[i].s;
    for (size_t m = 0; m < spec->n_machines; m++) {
        if (!invoked[m])
            continue;
        ac_machine_decl *md = &spec->machines[m];
        for (size_t s = 0; s < md->n_states; s++) {
            if (!md->states[s].terminal)
                continue;
            size_t len = strlen(md->name.s) + strlen(md->states[s].name.s) + 2;
            char *nm = ac_spec_alloc(spec, len);
            if (!nm)
                continue;
            snprintf(nm, len, "%s.%s", md->name.s, md->states[s].name.s);
            int prev = ac_strmap_put(&ck->events, nm, (int)n_events);
            if (prev >= 0) {
                const ac_name *at = prev >= 1 && (size_t)prev <= spec->events.n
                                        ? &spec->events.v[prev - 1]
                                        : &md->name;
                ac_spec_diag(spec, 1, at->line, at->col,
                             "event '%s' is declared, but it is the arrival event of machine "
                             "'%s' in state '%s' (remove the declaration)",
                             nm, md->name.s, md->states[s].name.s);
                continue;
            }
            res->event_names[n_events++] = nm;
        }
    }
    res->n_events = n_events;
    return 0;
}

/* The machine that no state invokes is the root; there must be exactly
 * one, invokes must not form a cycle, and nesting has a depth limit. */
static void check_invoke_tree(checker *ck)
{
    ac_spec *spec = ck->spec;
    ac_resolved *res = ck->res;
    size_t n_states = res->n_states;
    res->root = -1;
    for (size_t m = 0; m < spec->n_machines; m++) {
        if (ck->machine_invoked[m] ||
            ac_strmap_get(&ck->machines, spec->machines[m].name.s) != (int)m)
            continue; /* invoked, or a duplicate (reported) */
        if (res->root < 0)
            res->root = (int)m;
        else
            ac_spec_diag(spec, 1, spec->machines[m].name.line, spec->machines[m].name.col,
                         "machine '%s' is never invoked, but '%s' is already the root machine "
                         "(invoke it from a state with 'invoke %s')",
                         spec->machines[m].name.s, spec->machines[res->root].name.s,
                         spec->machines[m].name.s);
    }
    graph g;
    int nm = (int)spec->n_machines;
    if (graph_init(&g, nm, (int)n_states + 1) == 0) {
        for (size_t s = 0; s < n_states; s++) {
            ac_state_decl *sd = res->states[s];
            int mi = sd->invoke.s ? ac_strmap_get(&ck->machines, sd->invoke.s) : -1;
            if (mi >= 0)
                graph_add(&g, res->state_machine[s], mi, (int)s);
        }
        char *colour = calloc((size_t)nm + 1, 1);
        int *sn = malloc(sizeof(int) * ((size_t)nm + 1));
        int *se = malloc(sizeof(int) * ((size_t)nm + 1));
        int from;
        for (int m = 0; colour && sn && se && m < nm; m++) {
            int edge = find_cycle(&g, m, colour, sn, se, &from);
            if (edge >= 0) {
                ac_state_decl *sd = res->states[edge];
                ac_spec_diag(spec, 1, sd->invoke.line, sd->invoke.col,
                             "invoke cycle: state '%s' of machine '%s' invokes '%s', which "
                             "leads back to '%s'",
                             sd->name.s, spec->machines[from].name.s, sd->invoke.s,
                             spec->machines[from].name.s);
            }
        }
        if (res->root < 0 && nm > 0 && spec->n_errors == 0)
            ac_spec_diag(spec, 1, spec->machines[0].name.line, spec->machines[0].name.col,
                         "no root machine: every machine is invoked by another");
        /* depth from the root */
        if (res->root >= 0 && colour) {
            for (int m = 0; m < nm; m++)
                res->machine_depth[m] = -1;
            res->machine_depth[res->root] = 0;
            int changed = 1, rounds = 0;
            while (changed && rounds++ < nm + 1) {
                changed = 0;
                for (size_t s = 0; s < n_states; s++) {
                    ac_state_decl *sd = res->states[s];
                    int mi = sd->invoke.s ? ac_strmap_get(&ck->machines, sd->invoke.s) : -1;
                    int pm = res->state_machine[s];
                    if (mi >= 0 && res->machine_depth[pm] >= 0 && res->machine_depth[mi] < 0) {
                        res->machine_depth[mi] = res->machine_depth[pm] + 1;
                        changed = 1;
                        if (res->machine_depth[mi] >= AC_FSM_MAX_DEPTH)
                            ac_spec_diag(spec, 1, sd->invoke.line, sd->invoke.col,
                                         "machines nest too deep (the limit is %d levels)",
                                         AC_FSM_MAX_DEPTH);
                    }
                }
            }
        }
        free(colour);
        free(sn);
        free(se);
    }
    graph_free(&g);
}

/* State bodies: enter and exit actions, effects and their param arguments
 * name declared handlers and params. */
static void check_state_bodies(checker *ck)
{
    ac_spec *spec = ck->spec;
    for (size_t s = 0; s < ck->res->n_states; s++) {
        ac_state_decl *sd = ck->res->states[s];
        for (size_t i = 0; i < sd->enter.n; i++)
            use_handler(ck, HK_ACTION, &sd->enter.v[i]);
        for (size_t i = 0; i < sd->exit.n; i++)
            use_handler(ck, HK_ACTION, &sd->exit.v[i]);
        for (size_t e = 0; e < sd->n_effects; e++) {
            use_handler(ck, HK_EFFECT, &sd->effects[e].name);
            for (size_t a = 0; a < sd->effects[e].args.n; a++) {
                ac_name *pn = &sd->effects[e].args.v[a];
                if (ac_strmap_get(&ck->params, pn->s) < 0)
                    ac_spec_diag(spec, 1, pn->line, pn->col,
                                 "unknown param '%s' (declare it with 'param %s = VALUE')", pn->s,
                                 pn->s);
            }
        }
    }
}

/* Transitions: resolve event, target, guard and actions, and expand the
 * sources (a list, or `*`) into one row per source state, in ck->rows. */
static int resolve_rows(checker *ck)
{
    ac_spec *spec = ck->spec;
    ac_resolved *res = ck->res;
    size_t n_rows_cap = 0;
    for (size_t m = 0; m < spec->n_machines; m++) {
        ac_machine_decl *md = &spec->machines[m];
        for (size_t t = 0; t < md->n_trans; t++)
            n_rows_cap += md->trans[t].star ? md->n_states : md->trans[t].sources.n;
    }
    ac_row *rows = ck->rows = calloc(n_rows_cap + 1, sizeof *rows);
    res->state_first_row = calloc(res->n_states + 1, sizeof(int));
    res->state_n_rows = calloc(res->n_states + 1, sizeof(int));
    if (!rows || !res->state_first_row || !res->state_n_rows) {
        spec->n_errors++;
        return -1;
    }
    size_t nr = 0;
    for (size_t m = 0; m < spec->n_machines; m++) {
        ac_machine_decl *md = &spec->machines[m];
        for (size_t t = 0; t < md->n_trans; t++) {
            ac_trans_decl *td = &md->trans[t];
            int ev = 0, target = -1;
            int ok = 1;
            if (td->event.s) {
                ev = resolve_event(ck, &td->event);
                ok &= ev >= 0;
            }
            if (td->kind == AC_TR_EXTERNAL) {
                target = resolve_state(ck, m, &td->target);
                ok &= target >= 0;
            }
            if (!ok)
                ck->machine_unresolved[m] = 1;
            check_guard(ck, td->guard);
            if (guard_stack_depth(td->guard) > AC_FSM_GUARD_STACK)
                ac_spec_diag(spec, 1, td->line, td->col,
                             "guard is nested too deeply: it needs %d evaluation slots, the limit "
                             "is %d (write it with fewer right-nested parentheses)",
                             guard_stack_depth(td->guard), AC_FSM_GUARD_STACK);
            for (size_t a = 0; a < td->actions.n; a++)
                use_handler(ck, HK_ACTION, &td->actions.v[a]);
            if (td->star) {
                for (size_t s = 0; s < md->n_states; s++) {
                    if (md->states[s].terminal || !ok)
                        continue;
                    int si = md->states[s].index;
                    rows[nr++] =
                        (ac_row){si, ev, td->kind == AC_TR_EXTERNAL ? target : si, td->kind, td};
                }
                continue;
            }
            for (size_t k = 0; k < td->sources.n; k++) {
                int si = resolve_state(ck, m, &td->sources.v[k]);
                if (si < 0) {
                    ck->machine_unresolved[m] = 1;
                    continue;
                }
                if (res->states[si]->terminal) {
                    ac_spec_diag(spec, 1, td->sources.v[k].line, td->sources.v[k].col,
                                 "transition out of terminal state '%s'", td->sources.v[k].s);
                    continue;
                }
                if (ok)
                    rows[nr++] =
                        (ac_row){si, ev, td->kind == AC_TR_EXTERNAL ? target : si, td->kind, td};
            }
        }
    }
    ck->n_rows = nr;
    return 0;
}

/* Rows grouped by source state into res->rows, each state's rows in
 * declaration order across `*` and named rules. */
static int group_rows(checker *ck)
{
    ac_resolved *res = ck->res;
    size_t n_states = res->n_states, nr = ck->n_rows;
    const ac_row *rows = ck->rows;
    /* counting sort by state keeps the order of expansion within a state */
    for (size_t r = 0; r < nr; r++)
        res->state_n_rows[rows[r].state]++;
    int acc = 0;
    for (size_t s = 0; s < n_states; s++) {
        res->state_first_row[s] = acc;
        acc += res->state_n_rows[s];
    }
    res->rows = calloc(nr + 1, sizeof *res->rows);
    int *fill = calloc(n_states + 1, sizeof(int));
    if (!res->rows || !fill) {
        free(fill);
        ck->spec->n_errors++;
        return -1;
    }
    for (size_t r = 0; r < nr; r++) {
        int s = rows[r].state;
        res->rows[res->state_first_row[s] + fill[s]++] = rows[r];
    }
    free(fill);
    free(ck->rows);
    ck->rows = NULL;
    res->n_rows = nr;
    for (size_t s = 0; s < n_states; s++) {
        ac_row *rs = res->rows + res->state_first_row[s];
        int n = res->state_n_rows[s];
        for (int i = 1; i < n; i++) { /* insertion sort by declaration order: n is small */
            ac_row x = rs[i];
            int j = i - 1;
            while (j >= 0 && rs[j].decl->order > x.decl->order) {
                rs[j + 1] = rs[j];
                j--;
            }
            rs[j + 1] = x;
        }
    }
    return 0;
}

/* Per state: two unguarded rows for one event, and rows made dead by an
 * earlier unguarded one (one report per declaration). */
static void check_row_conflicts(checker *ck)
{
    ac_spec *spec = ck->spec;
    const ac_resolved *res = ck->res;
    for (size_t s = 0; s < res->n_states; s++) {
        ac_row *rs = res->rows + res->state_first_row[s];
        int n = res->state_n_rows[s];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < i; j++) {
                if (rs[j].event != rs[i].event || rs[j].decl->guard)
                    continue;
                if (rs[i].decl->reported)
                    break;
                ((ac_trans_decl *)rs[i].decl)->reported = 1;
                const char *ev = rs[i].event ? res->event_names[rs[i].event] : "(eventless)";
                if (!rs[i].decl->guard)
                    ac_spec_diag(spec, 1, rs[i].decl->line, rs[i].decl->col,
                                 "two unguarded transitions for state '%s' on '%s' (the other "
                                 "is at line %d)",
                                 res->states[s]->name.s, ev, rs[j].decl->line);
                else
                    ac_spec_diag(spec, 1, rs[i].decl->line, rs[i].decl->col,
                                 "transition is dead in state '%s': the unguarded transition at "
                                 "line %d always takes '%s' first",
                                 res->states[s]->name.s, rs[j].decl->line, ev);
                break;
            }
        }
    }
}

/* Marks in seen the states reachable from init (queue: scratch). */
static void reach_forward(const ac_resolved *res, int init, char *seen, int *queue)
{
    int qh = 0, qt = 0;
    if (init >= 0) {
        seen[init] = 1;
        queue[qt++] = init;
    }
    while (qh < qt) {
        int v = queue[qh++];
        for (int i = 0; i < res->state_n_rows[v]; i++) {
            ac_row *rw = &res->rows[res->state_first_row[v] + i];
            if (rw->kind == AC_TR_EXTERNAL && !seen[rw->target]) {
                seen[rw->target] = 1;
                queue[qt++] = rw->target;
            }
        }
    }
}

/* Marks in to_term the states of md from which a terminal state can be
 * reached (rev: the reversed transitions). */
static void reach_terminal(const ac_machine_decl *md, const graph *rev, char *to_term, int *queue)
{
    int qh = 0, qt = 0;
    for (size_t s = 0; s < md->n_states; s++)
        if (md->states[s].terminal) {
            to_term[md->states[s].index] = 1;
            queue[qt++] = md->states[s].index;
        }
    while (qh < qt) {
        int v = queue[qh++];
        for (int e = rev->head[v]; e >= 0; e = rev->next[e]) {
            int w = rev->to[e];
            if (!to_term[w]) {
                to_term[w] = 1;
                queue[qt++] = w;
            }
        }
    }
}

/* The diagnostics of one state: unreachable, no way out, no terminal ahead. */
static void check_state_graph(checker *ck, const ac_machine_decl *md, const ac_state_decl *sd,
                              int init, int has_terminal, const char *seen, const char *to_term)
{
    ac_spec *spec = ck->spec;
    const ac_resolved *res = ck->res;
    int si = sd->index;
    if (!sd->declared_by_state && !sd->terminal &&
        !(md->initial.s && strcmp(md->initial.s, sd->name.s) == 0))
        return;
    if (init >= 0 && !seen[si])
        ac_spec_diag(spec, 1, sd->name.line, sd->name.col,
                     "state '%s' is unreachable from the initial state '%s'", sd->name.s,
                     md->initial.s);
    if (sd->terminal)
        return;
    int out = 0;
    for (int i = 0; i < res->state_n_rows[si]; i++)
        out |= res->rows[res->state_first_row[si] + i].kind == AC_TR_EXTERNAL;
    if (!out)
        ac_spec_diag(spec, 1, sd->name.line, sd->name.col,
                     "non-terminal state '%s' has no outgoing transition", sd->name.s);
    else if (has_terminal && !to_term[si])
        ac_spec_diag(spec, 1, sd->name.line, sd->name.col,
                     "no terminal state can be reached from state '%s'", sd->name.s);
}

/* Machine m: a terminal state, and every state reachable, with a way out
 * and a terminal state ahead. */
static void check_machine_graph(checker *ck, size_t m, const graph *rev, char *seen, char *to_term,
                                int *queue)
{
    ac_spec *spec = ck->spec;
    ac_machine_decl *md = &spec->machines[m];
    int init = md->initial.s ? ac_strmap_get(&ck->states[m], md->initial.s) : -1;
    int has_terminal = 0;
    for (size_t s = 0; s < md->n_states; s++)
        has_terminal |= md->states[s].terminal;
    if (!has_terminal)
        ac_spec_diag(spec, 1, md->name.line, md->name.col,
                     "machine '%s' has no terminal state (add 'terminal STATE')", md->name.s);
    reach_forward(ck->res, init, seen, queue);
    reach_terminal(md, rev, to_term, queue);
    for (size_t s = 0; s < md->n_states && !ck->machine_unresolved[m]; s++)
        check_state_graph(ck, md, &md->states[s], init, has_terminal, seen, to_term);
}

/* Eventless rows without guards (evl) must form no cycle. */
static void check_eventless_cycles(checker *ck, const graph *evl, size_t n_states)
{
    const ac_resolved *res = ck->res;
    char *colour = calloc(n_states + 1, 1);
    int *sn = malloc(sizeof(int) * (n_states + 1));
    int *se = malloc(sizeof(int) * (n_states + 1));
    int from;
    for (size_t s = 0; colour && sn && se && s < n_states; s++) {
        int edge = find_cycle(evl, (int)s, colour, sn, se, &from);
        if (edge >= 0) {
            const ac_trans_decl *td = res->rows[edge].decl;
            ac_spec_diag(ck->spec, 1, td->line, td->col,
                         "eventless transitions without guards form a cycle through "
                         "state '%s' (add a guard or an event)",
                         res->states[res->rows[edge].state]->name.s);
        }
    }
    free(colour);
    free(sn);
    free(se);
}

/* The graph of each machine: a terminal state exists, every state is
 * reachable from the initial one, has a way out and can reach a terminal
 * state; and eventless rows without guards form no cycle. */
static void check_graph(checker *ck)
{
    const ac_resolved *res = ck->res;
    size_t n_states = res->n_states, nr = res->n_rows;
    char *seen = calloc(n_states + 1, 1);
    char *to_term = calloc(n_states + 1, 1);
    int *queue = malloc(sizeof(int) * (n_states + 1));
    graph rev, evl;
    int gok = graph_init(&rev, (int)n_states, (int)nr + 1) == 0;
    gok &= graph_init(&evl, (int)n_states, (int)nr + 1) == 0;
    if (seen && to_term && queue && gok) {
        for (size_t r = 0; r < nr; r++) {
            ac_row *rw = &res->rows[r];
            if (rw->kind != AC_TR_EXTERNAL)
                continue;
            graph_add(&rev, rw->target, rw->state, (int)r);
            if (rw->event == 0 && !rw->decl->guard)
                graph_add(&evl, rw->state, rw->target, (int)r);
        }
        for (size_t m = 0; m < ck->spec->n_machines; m++)
            check_machine_graph(ck, m, &rev, seen, to_term, queue);
        check_eventless_cycles(ck, &evl, n_states);
    }
    graph_free(&rev);
    graph_free(&evl);
    free(seen);
    free(to_term);
    free(queue);
}

/* Warnings, only for a spec without errors: declared events no state
 * handles, declared handlers nothing uses. */
static void warn_unused(checker *ck)
{
    ac_spec *spec = ck->spec;
    if (spec->n_errors != 0)
        return;
    for (size_t i = 0; i < spec->events.n; i++)
        if (!ck->event_used[i + 1])
            ac_spec_diag(spec, 0, spec->events.v[i].line, spec->events.v[i].col,
                         "event '%s' is not handled by any state", spec->events.v[i].s);
    for (int k = 0; k < AC_HK_COUNT; k++)
        for (size_t i = 0; i < spec->handlers[k].n; i++)
            if (!ck->handler_used[k][i])
                ac_spec_diag(spec, 0, spec->handlers[k].v[i].line, spec->handlers[k].v[i].col,
                             "%s '%s' is declared but never used", ac_handler_kind_name(k),
                             spec->handlers[k].v[i].s);
}

static void checker_free(checker *ck)
{
    ac_strmap_free(&ck->params);
    ac_strmap_free(&ck->events);
    ac_strmap_free(&ck->machines);
    for (int k = 0; k < AC_HK_COUNT; k++) {
        ac_strmap_free(&ck->handlers[k]);
        free(ck->handler_used[k]);
    }
    if (ck->states)
        for (size_t m = 0; m < ck->spec->n_machines; m++)
            ac_strmap_free(&ck->states[m]);
    free(ck->states);
    free(ck->event_used);
    free(ck->machine_unresolved);
    free(ck->machine_invoked);
    free(ck->rows);
}

size_t ac_spec_check(ac_spec *spec)
{
    checker ck;
    memset(&ck, 0, sizeof ck);
    ck.spec = spec;
    ck.res = calloc(1, sizeof *ck.res);
    if (!ck.res)
        return ++spec->n_errors;

    ac_spec_desugar(spec);
    declare_names(&ck);
    if (number_states(&ck) == 0 && add_arrival_events(&ck) == 0) {
        check_invoke_tree(&ck);
        check_state_bodies(&ck);
        if (resolve_rows(&ck) == 0 && group_rows(&ck) == 0) {
            check_row_conflicts(&ck);
            check_graph(&ck);
            ac_spec_check_decisions(spec, ck.res);
            check_c_names(&ck);
            check_limits(&ck);
            if (spec->n_errors == 0) /* not a follow-up of another error */
                ac_spec_check_leave(spec, ck.res);
            warn_unused(&ck);
        }
    }

    checker_free(&ck);
    if (spec->n_errors == 0)
        spec->res = ck.res;
    else
        free_resolved(ck.res);
    return spec->n_errors;
}

void ac_spec_free_resolved(ac_spec *spec)
{
    free_resolved(spec->res);
    spec->res = NULL;
}
