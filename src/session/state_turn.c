/*
 * state_turn.c - the State's part in running a turn's calls (docs/state.md):
 *
 * - meta-properties: "_"-prefixed argument properties are taken out before
 *   the tool's schema checks the arguments and before the tool sees them;
 *   "_outputPath" says where the result goes, checked against the tool's own
 *   declaration of it when it has one ("const"/"enum" prescribe it);
 * - the plan: a call that reads (†state.PATH) what another call of the turn
 *   writes (its "_outputPath") waits for it (callplan.c); cycles fail every
 *   call on them, before anything runs;
 * - references are resolved when a call starts, against the State with the
 *   writes of the calls that ended before it (the run's projection, which is
 *   what the State becomes once their events are applied);
 * - writes are checked against the State's schema when the call ends; a
 *   refusal fails the call and writes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/callplan.h"
#include "session/state.h"
#include "session/tools_internal.h"
#include "tools/schema.h"
#include "tools/stateref.h"

#define OUTPUT_PATH "_outputPath"

int ac_tool_meta_compile(ac_tool *t, char *err, size_t errcap)
{
    json_t *props = json_object_get(t->parameters, "properties");
    json_t *stripped = NULL;
    const char *k;
    json_t *v;
    if (json_is_object(props)) {
        int any = 0;
        json_object_foreach(props, k, v) any |= k[0] == '_';
        if (any) {
            stripped = json_deep_copy(t->parameters);
            json_t *sp = json_object_get(stripped, "properties");
            json_t *req = json_object_get(stripped, "required");
            void *tmp;
            if (!stripped) {
                snprintf(err, errcap, "out of memory");
                return -1;
            }
            json_object_foreach_safe(sp, tmp, k, v)
            {
                if (k[0] != '_')
                    continue;
                if (strcmp(k, OUTPUT_PATH) == 0)
                    t->out_decl = json_incref(v);
                json_object_del(sp, k);
            }
            for (size_t i = json_array_size(req); i-- > 0;) {
                const char *r = json_string_value(json_array_get(req, i));
                if (r && r[0] == '_') {
                    if (strcmp(r, OUTPUT_PATH) == 0)
                        t->out_required = 1;
                    json_array_remove(req, i);
                }
            }
        }
    }
    t->schema = ac_schema_compile(stripped ? stripped : t->parameters, err, errcap);
    json_decref(stripped);
    if (!t->schema)
        return -1;
    if (t->out_decl) {
        char why[256];
        t->out_schema = ac_schema_compile(t->out_decl, why, sizeof why);
        if (!t->out_schema) {
            snprintf(err, errcap, "tool '%s': the \"" OUTPUT_PATH "\" property: %s", t->name, why);
            return -1;
        }
    }
    return 0;
}

/* ---- the plan ---- */

typedef struct call_prep {
    char *id;
    const char *name;
    json_t *args;    /* parsed, meta-properties removed; NULL when not JSON */
    char *bad;       /* why it fails without running, or NULL */
    int rewritten;   /* meta-properties removed or references in it: the tool gets new text */
    ac_ref_expr out; /* where the result goes; n == 0: nowhere */
} call_prep;

struct ac_turn_plan {
    ac_session *s;
    size_t n;
    call_prep *c;
    ac_callplan *cp;
    json_t *proj;  /* the State with the writes of the calls that ended; NULL: none yet */
    json_t *input; /* the user's message parsed as JSON, NULL when it is not JSON */
};

void ac_turn_plan_free(ac_turn_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->c[i].id);
        json_decref(p->c[i].args);
        free(p->c[i].bad);
        ac_ref_expr_free(&p->c[i].out);
    }
    free(p->c);
    ac_callplan_free(p->cp);
    json_decref(p->proj);
    json_decref(p->input);
    free(p);
}

static json_t *current(const ac_turn_plan *p)
{
    return p->proj ? p->proj : p->s->state ? p->s->state->doc : NULL;
}

static void set_bad(call_prep *c, const char *fmt, const char *a, const char *b)
{
    if (c->bad)
        return;
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    c->bad = malloc(n);
    if (c->bad)
        snprintf(c->bad, n, fmt, a, b);
}

/* The "_outputPath" of call c (tool t): checked and parsed into c->out. */
static void prep_output(call_prep *c, const ac_tool *t, json_t *opath)
{
    char why[400];
    if (!opath && t && t->out_decl) {
        json_t *cst = json_object_get(t->out_decl, "const");
        if (json_is_string(cst))
            opath = cst; /* prescribed: the model need not say it */
        else if (t->out_required) {
            set_bad(c, "missing " OUTPUT_PATH ": the tool '%s' needs one%s", t->name, "");
            return;
        }
    }
    if (!opath)
        return;
    if (t && t->out_schema && !ac_schema_validate(t->out_schema, opath, why, sizeof why)) {
        char *v = json_dumps(opath, JSON_ENCODE_ANY | JSON_COMPACT);
        set_bad(c, "refused " OUTPUT_PATH " %.300s: %s", v ? v : "?", why);
        free(v);
        return;
    }
    if (!json_is_string(opath) ||
        ac_ref_kind(json_string_value(opath), json_string_length(opath)) != 2) {
        set_bad(c,
                "invalid " OUTPUT_PATH ": it must be a string \"" AC_REF_DAGGER
                "state.PATH\", \"A || B\" or \"A && B\"%s%s",
                "", "");
        return;
    }
    const char *s = json_string_value(opath);
    if (ac_ref_parse(s, json_string_length(opath), &c->out, why, sizeof why) < 0) {
        set_bad(c, "invalid " OUTPUT_PATH " \"%.300s\": %s", s, why);
        return;
    }
    int bad_root = 0;
    for (size_t i = 0; i < c->out.n; i++)
        bad_root |= c->out.paths[i].root != AC_REF_STATE;
    int whole = 0; /* the whole State: only where the tool's own declaration allows it */
    for (size_t i = 0; i < c->out.n; i++)
        whole |= c->out.paths[i].n == 0;
    if (bad_root)
        set_bad(c, "invalid " OUTPUT_PATH " \"%.300s\": %s", s,
                "only " AC_REF_DAGGER "state paths can be written");
    else if (whole && !(t && t->out_decl))
        set_bad(c, "invalid " OUTPUT_PATH " \"%.300s\": %s", s,
                "the whole State (" AC_REF_DAGGER "state) is written only by a tool whose "
                "parameters declare " OUTPUT_PATH);
    else if (c->out.op == AC_REF_OR && c->out.n != 2)
        set_bad(c, "invalid " OUTPUT_PATH " \"%.300s\": %s", s,
                "\"A || B\" takes exactly two paths (success to A, failure to B)");
    if (c->bad)
        ac_ref_expr_free(&c->out);
}

typedef struct edge_ctx {
    ac_turn_plan *p;
    size_t j;
    int oom;
} edge_ctx;

/* Call j reads path: it waits for every other call that writes an overlapping one. */
static void on_read(void *ud, const ac_ref_path *path)
{
    edge_ctx *x = ud;
    for (size_t i = 0; i < x->p->n; i++) {
        const call_prep *w = &x->p->c[i];
        if (i == x->j)
            continue;
        for (size_t k = 0; k < w->out.n; k++)
            if (ac_ref_overlap(path, &w->out.paths[k])) {
                x->oom |= ac_callplan_wait(x->p->cp, x->j, i, 0) < 0;
                break;
            }
    }
}

/* Calls that write overlapping paths run in their call order (each waits for the earlier
 * ones), so the last call's write is the one that stays, whichever ends first. */
static int order_writes(ac_turn_plan *p, size_t j)
{
    const call_prep *cj = &p->c[j];
    for (size_t i = 0; i < j; i++) {
        const call_prep *ci = &p->c[i];
        int overlap = 0;
        for (size_t a = 0; a < cj->out.n && !overlap; a++)
            for (size_t b = 0; b < ci->out.n && !overlap; b++)
                overlap = ac_ref_overlap(&cj->out.paths[a], &ci->out.paths[b]);
        if (overlap && ac_callplan_wait(p->cp, j, i, 0) < 0)
            return -1;
    }
    return 0;
}

/* True when a string of v (any depth) begins with a dagger (a reference or an escape). */
static int has_daggers(json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;
    if (json_is_string(v))
        return ac_ref_kind(json_string_value(v), json_string_length(v)) != 0;
    if (json_is_object(v)) {
        json_object_foreach(v, k, x) if (has_daggers(x)) return 1;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) if (has_daggers(x)) return 1;
    }
    return 0;
}

static void no_read(void *ud, const ac_ref_path *path)
{
    (void)ud, (void)path; /* the first pass only checks that the references parse */
}

static void on_cycle(void *ud, size_t call, const size_t *cycle, size_t len)
{
    ac_turn_plan *p = ud;
    call_prep *c = &p->c[call];
    char text[1024];
    size_t at = 0;
    for (size_t k = 0; k <= len && at < sizeof text; k++) {
        const call_prep *x = &p->c[cycle[k % len]];
        int w = snprintf(text + at, sizeof text - at, "%s%s (%s)", k ? " waits for " : "", x->id,
                         x->name);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    free(c->bad); /* the cycle is the reason given */
    c->bad = NULL;
    set_bad(c,
            "not run: the calls of this turn form a cycle (%s): each reads a State path the next "
            "one writes%s",
            len ? text : "?", "");
}

ac_turn_plan *ac_turn_plan_new(ac_session *s, char *const *ids, size_t n)
{
    ac_turn_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->s = s;
    p->n = n;
    p->c = calloc(n ? n : 1, sizeof *p->c);
    p->cp = ac_callplan_new(n);
    if (!p->c || !p->cp) {
        ac_turn_plan_free(p);
        return NULL;
    }
    /* the user's message, when it is JSON: †input */
    for (size_t m = ac_conv_message_count(s->conv); m-- > 0;) {
        const ac_message *msg = ac_conv_message(s->conv, m);
        if (msg->role == AC_ROLE_USER && !(msg->flags & (AC_MSG_INTERNAL | AC_MSG_SUMMARY))) {
            p->input = json_loads(msg->content, JSON_DECODE_ANY, NULL);
            break;
        }
    }
    for (size_t i = 0; i < n; i++) {
        call_prep *c = &p->c[i];
        const ac_tool_call *tc = ac_conv_tool_call(s->conv, ids[i]);
        c->id = strdup(ids[i]);
        c->name = tc ? tc->name : "";
        if (!c->id) {
            ac_turn_plan_free(p);
            return NULL;
        }
        c->args = json_loads(ac_call_arguments(s, tc), JSON_DECODE_ANY, NULL);
        if (!c->args)
            continue; /* reported when it starts, as before */
        const ac_tool *t = ac_tools_find(s->e, c->name);
        json_t *opath = NULL;
        if (json_is_object(c->args)) {
            opath = json_incref(json_object_get(c->args, OUTPUT_PATH));
            const char *k;
            json_t *v;
            void *tmp;
            json_object_foreach_safe(c->args, tmp, k, v) if (k[0] == '_')
            {
                json_object_del(c->args, k);
                c->rewritten = 1;
            }
        }
        c->rewritten |= has_daggers(c->args);
        prep_output(c, t, opath);
        json_decref(opath);
        char why[600];
        if (ac_ref_reads(c->args, no_read, NULL, why, sizeof why) < 0)
            set_bad(c, "%s%s", why, "");
    }
    /* waits: after every output path is known */
    for (size_t j = 0; j < n; j++) {
        edge_ctx x = {p, j, 0};
        char why[64];
        if (p->c[j].args && !p->c[j].bad)
            (void)ac_ref_reads(p->c[j].args, on_read, &x, why, sizeof why);
        if (!p->c[j].bad && order_writes(p, j) < 0)
            x.oom = 1;
        if (x.oom) {
            ac_turn_plan_free(p);
            return NULL;
        }
    }
    return p;
}

int ac_turn_plan_wait(ac_turn_plan *p, size_t j, size_t i, int skip_if_failed)
{
    return ac_callplan_wait(p->cp, j, i, skip_if_failed);
}

void ac_turn_plan_seal(ac_turn_plan *p)
{
    ac_callplan_check(p->cp, on_cycle, p);
}

long ac_turn_plan_next(ac_turn_plan *p, char **fail, size_t *failed_dep)
{
    size_t dep;
    *fail = NULL;
    long i = ac_callplan_next(p->cp, &dep);
    *failed_dep = i >= 0 ? dep : (size_t)-1;
    if (i >= 0 && p->c[i].bad)
        *fail = strdup(p->c[i].bad);
    return i;
}

json_t *ac_turn_plan_args(ac_turn_plan *p, size_t i, int *rewritten, char *msg, size_t cap)
{
    call_prep *c = &p->c[i];
    *rewritten = c->rewritten;
    if (!c->args) {
        const ac_tool_call *tc = ac_conv_tool_call(p->s->conv, c->id);
        json_error_t je;
        json_t *again = json_loads(tc ? ac_call_arguments(p->s, tc) : "", JSON_DECODE_ANY, &je);
        json_decref(again);
        snprintf(msg, cap, "invalid arguments: not JSON (%s)", je.text);
        return NULL;
    }
    json_t *out = NULL;
    if (ac_ref_resolve(c->args, current(p), p->input, &out, msg, cap) < 0)
        return NULL;
    return out;
}

/* Applies the writes to a copy of the State (or in place when a failure cannot
 * leave it half-changed) and checks the schema. 0, or -1 with why. */
static int apply_writes(ac_turn_plan *p, const ac_ref_path *const *to, size_t n, json_t *value,
                        char *why, size_t cap)
{
    const ac_state *st = p->s->state;
    json_t *base = current(p);
    if (!base)
        return snprintf(why, cap, "the session has no State"), -1;
    int copy = n > 1 || (st && st->schema) || !p->proj;
    json_t *doc = copy ? json_deep_copy(base) : base;
    if (!doc)
        return snprintf(why, cap, "out of memory"), -1;
    for (size_t k = 0; k < n; k++) {
        /* each place gets its own value: a later write under one must not change another */
        json_t *v = k ? json_deep_copy(value) : json_incref(value);
        int rc =
            v ? ac_ref_set(&doc, to[k], v, why, cap) : (snprintf(why, cap, "out of memory"), -1);
        json_decref(v);
        if (rc < 0) {
            if (copy)
                json_decref(doc);
            return -1;
        }
    }
    char err[400];
    if (copy && !ac_state_accepts(st, doc, err, sizeof err)) {
        snprintf(why, cap, "the State's schema refuses it: %s", err);
        json_decref(doc);
        return -1;
    }
    if (copy) {
        json_decref(p->proj);
        p->proj = doc;
    } else if (doc != p->proj) {
        p->proj = doc; /* the root was replaced */
    }
    return 0;
}

json_t *ac_turn_plan_finish(ac_turn_plan *p, size_t i, int *ok, const char *content,
                            char **override)
{
    *override = NULL;
    call_prep *c = &p->c[i];
    json_t *writes = NULL;
    const ac_ref_path *to[AC_REF_MAX_OPERANDS];
    size_t n = 0;
    if (c->out.n) {
        if (c->out.op == AC_REF_OR)
            to[n++] = &c->out.paths[*ok ? 0 : 1];
        else if (*ok)
            for (size_t k = 0; k < c->out.n; k++)
                to[n++] = &c->out.paths[k];
    }
    if (n) {
        json_t *value = *ok ? json_loads(content, JSON_DECODE_ANY, NULL) : NULL;
        if (!value)
            value = *ok ? json_string(content) : json_pack("{s:s}", "error", content);
        char why[600];
        if (!value) {
            snprintf(why, sizeof why, "out of memory");
        } else if (apply_writes(p, to, n, value, why, sizeof why) == 0) {
            writes = json_array();
            for (size_t k = 0; writes && k < n; k++) {
                char path[2 * AC_REF_MAX_TEXT + 64]; /* whole: the journal replays it */
                ac_ref_path_text(to[k], path, sizeof path);
                json_array_append_new(
                    writes, json_pack("{s:s, s:o}", "path", path, "value", json_deep_copy(value)));
            }
            why[0] = 0;
        }
        json_decref(value);
        if (why[0]) {
            char path[512];
            ac_ref_path_text(to[0], path, sizeof path);
            size_t cap = strlen(why) + strlen(path) + strlen(content) + 128;
            *override = malloc(cap);
            if (*override) {
                if (*ok)
                    snprintf(*override, cap,
                             "the result was not stored at %s (nothing was written): %s", path,
                             why);
                else
                    snprintf(*override, cap,
                             "%s\n[the failure was not stored at %s (nothing was written): %s]",
                             content, path, why);
            }
            *ok = 0;
        }
    }
    ac_callplan_done(p->cp, i, *ok);
    return writes;
}
