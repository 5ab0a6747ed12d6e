/*
 * testgen_search.c - `agentc testgen`'s search: breadth first over sequences of stimuli
 * (testgen_search.h), shortest first. A candidate is some model turns (followed by answers, so
 * that every turn ends) and a set of params, posted events, an output schema and short timers;
 * each runs in process on the real engine (the one engine builder, engine_opts.c, with the
 * scripted provider and the options `agentc run` gets from the scenario), the events it posts
 * posted as `agentc run --post-at` posts them (post_at.c). A candidate that takes a transition
 * no earlier one took becomes a scenario, with the path it took as the expected path. A
 * candidate is extended by one more stimulus when it took a new transition or a new pair of
 * consecutive transitions (a new way into a state: a queued message then a pause), until the
 * depth or time bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_opts.h"
#include "io/loop.h"
#include "post_at.h"
#include "testgen_search.h"
#include "util/grow.h"

#define TG_MAX_DEPTH 8
#define PAD 3                  /* answers after a candidate's turns */
#define CAND_LIMIT_MS 3000     /* one candidate's run, at most */
#define PROMPT "compute 2 * 3" /* as testgen_run.c gives `agentc run` */
#define MAX_PAIR_ROWS 2048     /* pairs of rows are tracked up to this many rows */

typedef struct cand {
    uint16_t s[TG_MAX_DEPTH]; /* stimuli: turns first, then the others in index order */
    uint8_t n;
} cand;

typedef struct cand_list {
    cand *c;
    size_t n, cap;
} cand_list;

typedef struct search {
    const ac_fsm_tables *t;
    tg_alpha al;
    ac_cli_engine_opts eo;
    ac_cli_engine_base base;
    ac_loop *loop;
    ac_buf fast; /* the params every candidate runs with, as args lines */
    uint8_t *taken, *pairs;
    uint8_t *entered; /* the states the running candidate entered */
    uint16_t *path;   /* the running candidate's rows */
    size_t n_path, cap_path;
    ac_post_at pa;
    uint64_t *seen; /* candidates generated: their canonical hashes (open addressing) */
    size_t n_seen, cap_seen;
    int hit_bound;     /* a candidate was not extended for the depth bound */
    const char *tools; /* the user's tool file (--tools), NULL: none */
} search;

static void on_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    search *S = ud;
    ac_post_at_seen(&S->pa, s, r);
    if (r->kind == AC_TRACE_TRANSITION && r->to < S->t->n_states)
        S->entered[r->to] = 1;
    if ((r->kind != AC_TRACE_TRANSITION && r->kind != AC_TRACE_INTERNAL) || r->row == AC_FSM_NONE ||
        r->from == AC_FSM_NONE || S->t->transitions[r->row].kind == AC_TR_IGNORE)
        return;
    if (ac_grow((void **)&S->path, &S->cap_path, S->n_path + 1, sizeof *S->path))
        return;
    S->path[S->n_path++] = r->row;
}

/* The scenario's pieces for candidate c: the script (turns, then the pad), the schema and the
 * args lines (fast timers, tools, params, posts, delay). */
static void candidate_text(const search *S, const cand *c, ac_buf *script, const char **schema,
                           ac_buf *args, ac_buf *builds, char **guards)
{
    *schema = NULL;
    int slow = 0;
    const char *trip[TG_MAX_DEPTH];
    size_t n_trip = 0;
    for (uint8_t i = 0; i < c->n; i++)
        if (S->al.s[c->s[i]].kind == TG_TRIP)
            trip[n_trip++] = S->al.s[c->s[i]].value;
    *guards = tg_guard_tools(S->t, trip, n_trip);
    for (uint8_t i = 0; i < c->n; i++)
        if (S->al.s[c->s[i]].kind == TG_SCHEMA)
            *schema = S->al.s[c->s[i]].value;
    ac_buf_printf(args,
                  "--provider\nscript\n--script\nscript.jsonl\n--tools\nbuiltin:calculator\n");
    if (S->tools)
        ac_buf_printf(args, "--tools\n%s\n", S->tools);
    if (*guards)
        ac_buf_printf(args, "--tools\nguards.json\n");
    const char *tools[TG_MAX_DEPTH] = {0};
    for (uint8_t i = 0; i < c->n; i++) {
        const tg_stim *st = &S->al.s[c->s[i]];
        ac_buf_printf(builds, "%s%s", i ? "; " : "", st->label);
        if (st->kind == TG_TURN)
            ac_buf_printf(script, "%s\n", st->value);
        int dup = 0;
        for (uint8_t k = 0; k < i && st->tool; k++)
            dup |= tools[k] && !strcmp(tools[k], st->tool);
        if (st->tool && !dup)
            ac_buf_printf(args, "--tools\n%s\n", tools[i] = st->tool);
    }
    if (!c->n)
        ac_buf_printf(builds, "one answer");
    for (int i = 0; i < PAD; i++)
        ac_buf_printf(script, "%s\n",
                      *schema ? "{\"content\": \"{\\\"n\\\": 6}\", \"usage\": {\"input\": 10, "
                                "\"output\": 2}}"
                              : "{\"content\": \"6\", \"usage\": {\"input\": 10, \"output\": 2}}");
    ac_buf_printf(args, "%s", S->fast.p ? S->fast.p : "");
    for (uint8_t i = 0; i < c->n; i++) {
        const tg_stim *st = &S->al.s[c->s[i]];
        if (st->kind == TG_PARAM || st->kind == TG_SLOW)
            for (const char *p = st->value; *p;) {
                size_t n = strcspn(p, "\n");
                ac_buf_printf(args, "--param\n%.*s\n", (int)n, p);
                p += n + (p[n] == '\n');
            }
        slow |= st->kind == TG_SLOW;
        if (st->kind == TG_POST)
            ac_buf_printf(args, "--post-at\n%s\n", st->value);
    }
    if (slow)
        ac_buf_printf(args, "--script-delay-ms\n20\n");
    if (*schema)
        ac_buf_printf(args, "--output-schema\nschema.json\n");
}

/* The engine options an args text gives (params, tools, posts, delay), pointing into args
 * (whose line ends become NULs). */
static void args_options(char *args, ac_engine_config *cfg, const char **params, size_t *np,
                         const char **tools, size_t *nt, const char **posts, size_t *npost)
{
    char *save = NULL, *opt = NULL;
    *np = *nt = *npost = 0;
    for (char *l = strtok_r(args, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (!opt) {
            opt = l;
            continue;
        }
        if (!strcmp(opt, "--param") && *np < AC_CLI_MAX_PARAMS)
            params[(*np)++] = l;
        else if (!strcmp(opt, "--tools") && *nt < AC_CLI_MAX_TOOLS)
            tools[(*nt)++] = l;
        else if (!strcmp(opt, "--post-at") && *npost < AC_POST_AT_MAX)
            posts[(*npost)++] = l;
        else if (!strcmp(opt, "--script-delay-ms")) {
            char *end;
            long ms = strtol(l, &end, 10); /* written by candidate_text: 0..60000 */
            cfg->script_delay_ms = *l && !*end && ms >= 0 && ms <= 60000 ? (int)ms : 0;
        }
        opt = NULL;
    }
    params[*np] = NULL;
}

/* Runs the session of an engine built for the candidate until it is at rest or waits for the
 * outside (as `agentc run` stops there). 0, or -1 when it did not within CAND_LIMIT_MS (its path
 * is cut: not a scenario). */
static int run_session(search *S, ac_engine *e)
{
    ac_error err = {0};
    ac_session *s = ac_session_new(e, "s1", NULL, &err);
    if (!s)
        return -1;
    if (!ac_session_ended(s))
        ac_session_send(s, PROMPT);
    int64_t end = ac_wall_now_ms() + CAND_LIMIT_MS;
    const char *ws;
    int rest;
    while (!(rest = ac_session_settled(s) || ac_session_wait_state(s, &ws) == AC_WAIT_OUTSIDE) &&
           ac_wall_now_ms() < end)
        ac_loop_run_once(S->loop, 10);
    ac_session_free(s);
    return rest ? 0 : -1;
}

/* Runs candidate c in process: S->path gets the rows it took. 0, or -1 (the engine refused
 * its options, a param out of range; or the run did not come to rest in time). */
static int run_candidate(search *S, const cand *c, ac_buf *script, const char **schema,
                         ac_buf *args, ac_buf *builds, char **guards)
{
    candidate_text(S, c, script, schema, args, builds, guards);
    if (script->failed || args->failed)
        return -1;
    char *a = strdup(args->p);
    const char *params[AC_CLI_MAX_PARAMS + 1], *tools[AC_CLI_MAX_TOOLS + 1], *posts[AC_POST_AT_MAX];
    size_t np, nt, npost;
    ac_cli_engine_base b = S->base;
    b.cfg.script_delay_ms = 0;
    if (!a)
        return -1;
    args_options(a, &b.cfg, params, &np, tools, &nt, posts, &npost);
    b.cfg.params = params;
    b.cfg.script_text = script->p;
    b.cfg.output_schema = *schema;
    const char *texts[AC_CLI_MAX_TOOLS + 1];
    for (size_t i = 0; i < nt; i++)
        texts[i] = !strcmp(tools[i], "guards.json") ? *guards : NULL;
    b.tools = tools;
    b.tool_texts = texts;
    b.n_tools = nt;
    char perr[512];
    ac_output out = {.ud = S, .trace = on_trace};
    ac_engine *e = NULL;
    ac_error err = {0};
    S->n_path = 0;
    memset(S->entered, 0, S->t->n_states);
    int rc = ac_post_at_parse(&S->pa, S->t, posts, npost, perr, sizeof perr) < 0 ||
                     ac_cli_engine_build(&b, S->loop, &out, NULL, &e, &err)
                 ? -1
                 : 0;
    if (!rc)
        rc = run_session(S, e);
    ac_engine_free(e);
    free(a);
    return rc;
}

/* New rows (counted) and new pairs of consecutive rows of the path just run, marked. */
static int novelty(search *S, int *new_pairs)
{
    int rows = 0;
    *new_pairs = 0;
    for (size_t i = 0; i < S->n_path; i++) {
        uint16_t r = S->path[i];
        rows += !S->taken[r];
        S->taken[r] = 1;
        if (i && S->pairs) {
            size_t k = (size_t)S->path[i - 1] * S->t->n_transitions + r;
            if (!(S->pairs[k / 8] & (1u << (k % 8))))
                *new_pairs = 1;
            S->pairs[k / 8] |= (uint8_t)(1u << (k % 8));
        }
    }
    return rows;
}

/* The candidate just run as scenario number i of out. -1 when out of memory. */
static int keep(const search *S, tg_suite *out, int rows, ac_buf *script, const char *schema,
                ac_buf *args, ac_buf *builds, char *guards)
{
    tg_scenario *sc = tg_suite_add(out);
    if (!sc)
        return -1;
    snprintf(sc->name, sizeof sc->name, "s%03zu", out->n);
    ac_buf p;
    ac_buf_init(&p, AC_BUF_MAX);
    for (size_t i = 0; i < S->n_path; i++)
        tg_ident_row(S->t, S->path[i], &p);
    sc->path = p.p ? p.p : strdup("");
    sc->script = strdup(script->p);
    sc->schema = schema ? strdup(schema) : NULL;
    sc->guards = guards ? strdup(guards) : NULL;
    sc->args = strdup(args->p);
    sc->builds = strdup(builds->p ? builds->p : "");
    sc->new_transitions = rows;
    return sc->path && sc->script && sc->args && sc->builds && (!schema || sc->schema) ? 0 : -1;
}

static int push(cand_list *l, const cand *c)
{
    if (ac_grow((void **)&l->c, &l->cap, l->n + 1, sizeof *l->c))
        return -1;
    l->c[l->n++] = *c;
    return 0;
}

/* A candidate's canonical hash: its turns in order, then its other stimuli sorted (a set). */
static uint64_t cand_hash(const search *S, const cand *c)
{
    uint16_t others[TG_MAX_DEPTH];
    size_t n = 0;
    uint64_t h = 1469598103934665603ull;
    for (uint8_t i = 0; i < c->n; i++) {
        if (S->al.s[c->s[i]].kind != TG_TURN) {
            size_t k = n++;
            for (; k > 0 && others[k - 1] > c->s[i]; k--)
                others[k] = others[k - 1];
            others[k] = c->s[i];
            continue;
        }
        h = (h ^ c->s[i]) * 1099511628211ull;
    }
    h = (h ^ 0xFFFFu) * 1099511628211ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ others[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Marks h seen: 1 when it was new, 0 when seen before, -1 when out of memory. */
static int seen_add(search *S, uint64_t h)
{
    if ((S->n_seen + 1) * 4 >= S->cap_seen * 3) {
        size_t cap = S->cap_seen ? S->cap_seen * 2 : 1024;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t)
            return -1;
        for (size_t i = 0; i < S->cap_seen; i++)
            for (size_t k = S->seen[i] % cap; S->seen[i]; k = (k + 1) % cap)
                if (!t[k]) {
                    t[k] = S->seen[i];
                    break;
                }
        free(S->seen);
        S->seen = t;
        S->cap_seen = cap;
    }
    for (size_t k = h % S->cap_seen;; k = (k + 1) % S->cap_seen) {
        if (S->seen[k] == h)
            return 0;
        if (!S->seen[k]) {
            S->seen[k] = h;
            S->n_seen++;
            return 1;
        }
    }
}

/* The children of c not seen yet: one more turn (while c has turns only), or one more of the
 * others (a set: each once); an event posted at a state c's run never entered is left out, as
 * it would never be posted (the run is c's up to the first post). */
static int extend(search *S, const cand *c, cand_list *next)
{
    int others = 0;
    for (uint8_t i = 0; i < c->n; i++)
        others |= S->al.s[c->s[i]].kind != TG_TURN;
    for (uint16_t k = 0; k < S->al.n; k++) {
        int turn = S->al.s[k].kind == TG_TURN, dup = 0;
        for (uint8_t i = 0; i < c->n && !turn; i++)
            dup |= c->s[i] == k;
        if ((turn && others) || dup ||
            (S->al.s[k].kind == TG_POST && !S->entered[S->al.s[k].state]))
            continue;
        cand d = *c;
        d.s[d.n++] = k;
        int fresh = seen_add(S, cand_hash(S, &d));
        if (fresh < 0 || (fresh && push(next, &d) < 0))
            return -1;
    }
    return 0;
}

/* One candidate: run, judged, kept, extended. -1 when out of memory. */
static int visit(search *S, const cand *c, int depth, const tg_bounds *bd, tg_suite *out,
                 cand_list *next)
{
    ac_buf script, args, builds;
    ac_buf_init(&script, AC_BUF_MAX);
    ac_buf_init(&args, AC_BUF_MAX);
    ac_buf_init(&builds, AC_BUF_MAX);
    const char *schema = NULL;
    char *guards = NULL;
    int rc = 0;
    if (run_candidate(S, c, &script, &schema, &args, &builds, &guards) == 0) {
        int pairs, rows = novelty(S, &pairs);
        if (rows)
            rc = keep(S, out, rows, &script, schema, &args, &builds, guards);
        int more = !rc && (rows || pairs || depth <= 1);
        if (more && depth < bd->depth && c->n < TG_MAX_DEPTH)
            rc = extend(S, c, next);
        else if (more)
            S->hit_bound = 1; /* it would have been extended */
    }
    ac_buf_free(&script);
    ac_buf_free(&args);
    ac_buf_free(&builds);
    free(guards);
    return rc;
}

static int bfs(search *S, const tg_bounds *bd, tg_suite *out, tg_search_stats *st)
{
    cand_list cur = {0}, next = {0};
    cand root = {{0}, 0};
    int rc = push(&cur, &root);
    int64_t start = ac_wall_now_ms();
    for (int depth = 0; !rc && cur.n; depth++) {
        for (size_t i = 0; !rc && i < cur.n; i++) {
            if (ac_wall_now_ms() - start > bd->time_ms) {
                st->bounded = 1;
                break;
            }
            rc = visit(S, &cur.c[i], depth, bd, out, &next);
            st->candidates++;
        }
        if (st->bounded)
            break;
        cand_list t = cur;
        cur = next;
        next = t;
        next.n = 0;
    }
    st->bounded |= S->hit_bound;
    st->ms = ac_wall_now_ms() - start;
    free(cur.c);
    free(next.c);
    return rc;
}

int tg_search(const char *spec_path, const ac_fsm_tables *t, const tg_bounds *b, tg_suite *out,
              uint8_t *taken, tg_search_stats *st, char *err, size_t errcap)
{
    search S;
    memset(&S, 0, sizeof S);
    memset(st, 0, sizeof *st);
    S.t = t;
    S.taken = taken;
    S.tools = b->tools;
    S.eo.provider = "script";
    S.eo.spec = spec_path;
    S.eo.script_text = "";
    ac_buf_init(&S.fast, AC_BUF_MAX);
    tg_fast_timers(t, &S.fast);
    tg_alpha_derive(&S.al, t);
    st->alphabet = S.al.n;
    S.entered = calloc((size_t)t->n_states + 1, 1);
    if (t->n_transitions <= MAX_PAIR_ROWS)
        S.pairs = calloc((size_t)t->n_transitions * t->n_transitions / 8 + 1, 1);
    int rc = -1;
    if (!S.entered || !(S.loop = ac_loop_new()))
        snprintf(err, errcap, "cannot create the event loop");
    else if (ac_cli_engine_resolve(&S.eo, "agentc testgen", &S.base))
        snprintf(err, errcap, "cannot read %s", spec_path);
    else if ((rc = bfs(&S, b, out, st)) < 0)
        snprintf(err, errcap, "out of memory");
    ac_cli_engine_base_free(&S.base);
    ac_loop_free(S.loop);
    tg_alpha_free(&S.al);
    ac_buf_free(&S.fast);
    free(S.pairs);
    free(S.path);
    free(S.seen);
    free(S.entered);
    return rc;
}
