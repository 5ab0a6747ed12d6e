/*
 * engine.c - engines: the handler registry, binding a spec's handler names
 * to C functions, params (defaults and overrides), and the provider.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_fsm.h"
#include "journal.h"
#include "obs/cost.h"
#include "obs/obs.h"
#include "session_int.h"
#include "session/guardrail.h"
#include "session/spec_rt.h"
#include "context/request.h"
#include "session/contracts.h"
#include "leave.h"
#include "tools/schema.h"
#include "util/grow.h"
#include "util/secrets.h"
#include "util/units.h"
#include "util/utf8.h"

/* ---- registry ---- */

static int reg_put(ac_registry *r, const char *name, int kind, ac_reg_entry *tmpl)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == kind && strcmp(r->v[i].name, name) == 0) {
            char *nm = r->v[i].name;
            r->v[i] = *tmpl;
            r->v[i].name = nm;
            r->v[i].kind = kind;
            r->v[i].builtin = r->loading_builtin;
            return 0;
        }
    if (ac_grow((void **)&r->v, &r->cap, r->n + 1, sizeof *r->v))
        return -1;
    char *nm = strdup(name);
    if (!nm)
        return -1;
    r->v[r->n] = *tmpl;
    r->v[r->n].name = nm;
    r->v[r->n].kind = kind;
    r->v[r->n].builtin = r->loading_builtin;
    r->n++;
    return 0;
}

ac_registry *ac_registry_new(void)
{
    ac_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->loading_builtin = 1;
    ac_builtin_handlers(r);
    ac_effects_register(r);
    r->loading_builtin = 0;
    return r;
}

void ac_registry_free(ac_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].name);
    free(r->v);
    free(r);
}

int ac_registry_guard(ac_registry *r, const char *name, ac_guard_handler fn)
{
    ac_reg_entry e = {0};
    e.guard = fn;
    return fn ? reg_put(r, name, 0, &e) : -1;
}

int ac_registry_action(ac_registry *r, const char *name, ac_action_handler fn)
{
    ac_reg_entry e = {0};
    e.action = fn;
    return fn ? reg_put(r, name, 1, &e) : -1;
}

int ac_registry_effect_reporting(ac_registry *r, const char *name, ac_effect_start_handler start,
                                 ac_effect_stop_handler stop, ac_effect_start_handler report)
{
    ac_reg_entry e = {0};
    e.start = start;
    e.stop = stop;
    e.report = report;
    return start && stop ? reg_put(r, name, 2, &e) : -1;
}

int ac_registry_effect(ac_registry *r, const char *name, ac_effect_start_handler start,
                       ac_effect_stop_handler stop)
{
    return ac_registry_effect_reporting(r, name, start, stop, NULL);
}

static const ac_reg_entry *reg_find(const ac_registry *r, int kind, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].kind == kind && strcmp(r->v[i].name, name) == 0)
            return &r->v[i];
    return NULL;
}

/* ---- contracts: what the bound built-in handlers need from the spec ---- */

typedef struct contract_ctx {
    const ac_registry *reg;
    const ac_fsm_tables *t;
    char msg[2048];
    size_t len, n;
    int line; /* of the first problem at an effect use */
} contract_ctx;

static int contract_applies(void *ud, int kind, const char *name)
{
    const ac_reg_entry *r = reg_find(((contract_ctx *)ud)->reg, kind, name);
    return r && r->builtin;
}

static void contract_report(void *ud, const ac_contract_problem *p)
{
    contract_ctx *c = ud;
    c->n++;
    if (!c->line && p->state != AC_FSM_NONE)
        c->line = c->t->states[p->state].line;
    if (c->len < sizeof c->msg) {
        int w =
            snprintf(c->msg + c->len, sizeof c->msg - c->len, "%s%s", c->len ? "; " : "", p->msg);
        if (w > 0)
            c->len += (size_t)w;
    }
}

/* What effect `effect` posts, for the proof that every state can be left: a bound built-in
 * handler what its contract says, a timer only its own event (known by name), an effect the
 * program binds itself anything. */
static int engine_posts(void *ud, uint16_t effect, uint16_t ev)
{
    contract_ctx *c = ud;
    const char *name = c->t->effect_names[effect];
    if (ac_guardrail_effect(name))
        return ac_guardrail_posts(c->t->event_names[ev]);
    if (ac_spec_rt_defines(2, name))
        return 0;
    const ac_reg_entry *r = reg_find(c->reg, 2, name);
    for (size_t i = 0; r && r->builtin && i < ac_n_builtin_contracts; i++)
        if (ac_builtin_contracts[i].kind == 2 && strcmp(ac_builtin_contracts[i].handler, name) == 0)
            return ac_contract_posts(&ac_builtin_contracts[i], c->t->event_names[ev]);
    return -1;
}

/* A state that can never be left, or an event nothing sends, refuses the spec; a transition
 * waiting where its event cannot happen is the checker's to report (it knows `*` sources). */
static void leave_report(void *ud, const ac_leave_problem *p)
{
    if (p->kind == AC_LEAVE_ELSEWHERE)
        return;
    contract_ctx *c = ud;
    ac_contract_problem cp = {2, "", p->state, -1, ""};
    snprintf(cp.msg, sizeof cp.msg, "%s (line %u)", p->msg,
             p->transition != AC_FSM_NONE ? c->t->transitions[p->transition].line
                                          : c->t->states[p->state].line);
    contract_report(ud, &cp);
}

/* The params' values, after the overrides, against what the built-in handlers accept. */
static int check_param_values(const ac_engine *e, char *err, size_t errcap)
{
    for (size_t i = 0; i < ac_n_builtin_param_rules; i++) {
        const ac_param_rule *r = &ac_builtin_param_rules[i];
        const ac_param_value *p = ac_engine_param(e, r->name);
        if (!p)
            continue;
        if (p->type == AC_PARAM_STRING && r->words) {
            int ok = 0;
            for (const char *const *w = r->words; *w && !ok; w++)
                ok = p->sval && strcmp(p->sval, *w) == 0;
            if (ok)
                continue;
            size_t o = (size_t)snprintf(err, errcap, "param %s is '%s'; it must be one of", r->name,
                                        p->sval ? p->sval : "");
            for (const char *const *w = r->words; *w && o < errcap; w++)
                o += (size_t)snprintf(err + o, errcap - o, " %s", *w);
            return -1;
        }
        if (p->type != AC_PARAM_STRING && p->ival < r->min) {
            snprintf(err, errcap, "param %s is %lld; it must be at least %lld (%s)", r->name,
                     (long long)p->ival, (long long)r->min, r->meaning);
            return -1;
        }
    }
    return 0;
}

/* ---- effects hook: resolves the use's params and calls the handler ---- */

static void effect_hook(ac_session *s, uint16_t use, int start, const ac_event *ev)
{
    ac_engine *e = s->e;
    const ac_fsm_effect_use *u = &e->t->effect_uses[use];
    ac_param_value args[32];
    const uint16_t *l = e->t->lists + u->args;
    size_t n = l[0] < 32 ? l[0] : 32;
    for (size_t i = 0; start && i < n; i++)
        args[i] = e->params[l[1 + i]];
    if (start && e->e_report[u->effect]) /* run and replay alike: what the output is told */
        e->e_report[u->effect](s, args, n, ev);
    if (!e->loop || s->replaying)
        return; /* replay: no I/O */
    if (s->obs)
        ac_obs_effect(s->obs, s, e->t->effect_names[u->effect], start);
    /* what the effect does follows the journal line of the event that
     * started or stopped it (journal.h, docs/design.md) */
    ac_journal_flush(s->journal);
    if (s->hooks)
        s->hooks->flush(s); /* the store commits too (store.h) */
    uint16_t origin = (uint16_t)(u->effect + 1);
    uint16_t outer = s->current_effect; /* an effect's handler may run while another's runs */
    s->current_effect = origin;
    if (!start) {
        e->e_stop[u->effect](s);
        s->current_effect = outer;
        ac_session_forget(s, origin); /* what it queued and was not applied goes with it */
        return;
    }
    e->e_start[u->effect](s, args, n, ev);
    s->current_effect = outer;
}

/* ---- params ---- */

static int apply_override(ac_engine *e, const char *kv, char *err, size_t errcap)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        snprintf(err, errcap, "bad --param '%s': expected NAME=VALUE", kv);
        return -1;
    }
    size_t nl = (size_t)(eq - kv);
    const char *v = eq + 1;
    for (uint16_t i = 0; i < e->n_params; i++) {
        ac_param_value *p = &e->params[i];
        if (strlen(p->name) != nl || strncmp(p->name, kv, nl) != 0)
            continue;
        if (p->type == AC_PARAM_STRING) {
            char *dup = strdup(v);
            if (!dup)
                return -1;
            free(e->param_strings[i]);
            e->param_strings[i] = dup;
            p->sval = dup;
        } else if (p->type == AC_PARAM_DURATION) {
            long long ms;
            if (ac_parse_duration_ms(v, &ms) < 0) {
                snprintf(err, errcap,
                         "bad --param %s=%s: '%s' is a duration (for example 500ms, 10s, 10m, 1h)",
                         p->name, v, p->name);
                return -1;
            }
            p->ival = ms;
        } else {
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (errno || end == v || *end) {
                snprintf(err, errcap, "bad --param %s=%s: '%s' is an integer", p->name, v, p->name);
                return -1;
            }
            p->ival = n;
        }
        json_object_set_new(e->param_overrides, p->name, json_string(v));
        return 0;
    }
    snprintf(err, errcap, "unknown param '%.*s' (the spec's params:", (int)nl, kv);
    size_t o = strlen(err);
    for (uint16_t i = 0; i < e->n_params && o < errcap; i++) {
        int k = snprintf(err + o, errcap - o, " %s", e->params[i].name);
        if (k < 0)
            break;
        o += (size_t)k;
    }
    if (o < errcap)
        snprintf(err + o, errcap - o, ")");
    return -1;
}

const ac_param_value *ac_engine_param(const ac_engine *e, const char *name)
{
    if (!e || !name)
        return NULL;
    for (uint16_t i = 0; i < e->n_params; i++)
        if (strcmp(e->params[i].name, name) == 0)
            return &e->params[i];
    return NULL;
}

int64_t ac_engine_param_int(const ac_engine *e, const char *name, int64_t def)
{
    const ac_param_value *p = ac_engine_param(e, name);
    return p && p->type != AC_PARAM_STRING ? p->ival : def;
}

const char *ac_engine_param_str(const ac_engine *e, const char *name, const char *def)
{
    const ac_param_value *p = ac_engine_param(e, name);
    return p && p->type == AC_PARAM_STRING ? p->sval : def;
}

uint16_t ac_engine_event_index(const ac_engine *e, const char *name)
{
    for (uint16_t i = 1; i < e->t->n_events; i++)
        if (strcmp(e->t->event_names[i], name) == 0)
            return i;
    return AC_FSM_NONE;
}

uint64_t ac_engine_rand(ac_engine *e)
{
    /* xorshift64*: jitter only, never part of session data */
    uint64_t x = e->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    e->rng = x;
    return x * 2685821657736338717ull;
}

const ac_fsm_tables *ac_engine_tables(const ac_engine *e)
{
    return e ? e->t : NULL;
}

ac_loop *ac_engine_loop(const ac_engine *e)
{
    return e ? e->loop : NULL;
}

/* Compiles the structured-output schema: a schema the validator refuses is an error here,
 * never a surprise at the end of a turn. */
static int output_schema_load(ac_engine *e, const char *text, char *err, size_t errcap, int *code)
{
    json_error_t jerr;
    json_t *doc = json_loads(text, JSON_DECODE_ANY, &jerr);
    char why[512] = "";
    *code = AC_ECONFIG;
    if (!doc) {
        snprintf(err, errcap, "output schema: not JSON: %s (line %d, column %d)", jerr.text,
                 jerr.line, jerr.column);
        return -1;
    }
    if (!json_is_object(doc)) {
        snprintf(err, errcap, "output schema: a JSON Schema must be an object");
        json_decref(doc);
        return -1;
    }
    ac_schema *compiled = ac_schema_compile(doc, why, sizeof why);
    if (!compiled) {
        snprintf(err, errcap, "output schema: %s", why[0] ? why : "refused");
        json_decref(doc);
        return -1;
    }
    ac_schema_free(compiled); /* each session compiles its own, from its spawn event */
    e->output_schema_text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (!e->output_schema_text) {
        snprintf(err, errcap, "out of memory");
        *code = AC_ENOMEM;
        return -1;
    }
    /* a spec that never asks answer_valid would let any answer through */
    for (uint16_t i = 0; i < e->t->n_guards; i++)
        if (!strcmp(e->t->guard_names[i], "answer_valid"))
            return 0;
    snprintf(err, errcap,
             "output schema: the spec %s has no guard answer_valid, so the answer would not be "
             "checked (see spec/agent.fsm: OBSERVING -> COMPLETED [turn_complete && answer_valid])",
             e->t->spec_path);
    *code = AC_ESPEC;
    return -1;
}

/* "out of memory" as the failure; -1. */
static int engine_oom(char *err, size_t errcap, int *code)
{
    snprintf(err, errcap, "out of memory");
    *code = AC_ENOMEM;
    return -1;
}

/* The tables of handlers and params, sized to the spec. 0, or -1. */
static int engine_alloc(ac_engine *e, char *err, size_t errcap, int *code)
{
    const ac_fsm_tables *t = e->t;
    e->guards = calloc(t->n_guards + 1u, sizeof *e->guards);
    e->actions = calloc(t->n_actions + 1u, sizeof *e->actions);
    e->e_start = calloc(t->n_effects + 1u, sizeof *e->e_start);
    e->e_stop = calloc(t->n_effects + 1u, sizeof *e->e_stop);
    e->e_report = calloc(t->n_effects + 1u, sizeof *e->e_report);
    size_t n_params = t->n_params + ac_builtin_param_defaults_max() + 1u;
    e->params = calloc(n_params, sizeof *e->params);
    e->param_strings = calloc(n_params, sizeof *e->param_strings);
    e->param_overrides = json_object();
    if (!e->guards || !e->actions || !e->e_start || !e->e_stop || !e->e_report || !e->params ||
        !e->param_strings || !e->param_overrides)
        return engine_oom(err, errcap, code);
    if (t->n_effects > AC_MAX_EFFECTS) {
        *code = AC_ESPEC;
        snprintf(err, errcap, "the spec declares %u effects (the limit is %d)", t->n_effects,
                 AC_MAX_EFFECTS);
        return -1;
    }
    return 0;
}

/* Binds every handler name (kind k: guard, action, effect); every missing
 * name is collected in one message. 0, or -1. */
static int engine_bind(ac_engine *e, const ac_registry *reg, char *err, size_t errcap, int *code)
{
    const ac_fsm_tables *t = e->t;
    char missing[1024];
    size_t mo = 0, nmiss = 0;
    missing[0] = 0;
    static const char *const kinds[3] = {"guard", "action", "effect"};
    for (int k = 0; k < 3; k++) {
        uint16_t n = k == 0 ? t->n_guards : k == 1 ? t->n_actions : t->n_effects;
        const char *const *names = k == 0   ? t->guard_names
                                   : k == 1 ? t->action_names
                                            : t->effect_names;
        for (uint16_t i = 0; i < n; i++) {
            int sb = ac_spec_rt_bind(e, k, i, names[i], err, errcap);
            if (sb < 0) {
                *code = AC_ESPEC;
                return -1;
            }
            if (sb > 0)
                continue;
            const ac_reg_entry *r = reg_find(reg, k, names[i]);
            if (!r) {
                nmiss++;
                if (mo < sizeof missing) {
                    int w = snprintf(missing + mo, sizeof missing - mo, "%s%s %s", mo ? ", " : "",
                                     kinds[k], names[i]);
                    if (w > 0)
                        mo += (size_t)w;
                }
                continue;
            }
            if (!r->builtin)
                e->custom_handlers = 1;
            if (k == 0)
                e->guards[i] = r->guard;
            else if (k == 1)
                e->actions[i] = r->action;
            else {
                e->e_start[i] = r->start;
                e->e_stop[i] = r->stop;
                e->e_report[i] = r->report;
            }
        }
    }
    if (!nmiss)
        return 0;
    *code = AC_ESPEC;
    snprintf(err, errcap, "the spec %s names %zu handler%s this program lacks: %s", t->spec_path,
             nmiss, nmiss == 1 ? "" : "s", missing);
    return -1;
}

/* The built-in handlers' contracts against the spec; then the dispatch plan. 0, or -1. */
static int engine_check_and_plan(ac_engine *e, const ac_registry *reg, char *err, size_t errcap,
                                 int *code, int *line)
{
    const ac_fsm_tables *t = e->t;
    contract_ctx cc = {reg, t, "", 0, 0, 0};
    ac_contract_check(t, ac_builtin_contracts, ac_n_builtin_contracts, contract_applies,
                      contract_report, &cc);
    ac_payload_check pc = {contract_applies, contract_report, &cc};
    ac_payload_contract_check(t, &pc);
    contract_ctx lc = {reg, t, "", 0, 0, 0};
    if (!cc.n)
        ac_leave_check(t, engine_posts, leave_report, &lc);
    if (lc.n) {
        *code = AC_ESPEC;
        *line = lc.line;
        snprintf(err, errcap, "the spec %s cannot run (%zu problem%s): %s", t->spec_path, lc.n,
                 lc.n == 1 ? "" : "s", lc.msg);
        return -1;
    }
    if (cc.n) {
        *code = AC_ESPEC;
        *line = cc.line;
        snprintf(err, errcap,
                 "the spec %s does not give the built-in handlers what they need "
                 "(%zu problem%s): %s",
                 t->spec_path, cc.n, cc.n == 1 ? "" : "s", cc.msg);
        return -1;
    }
    e->plan = ac_fsm_plan_new(t);
    if (!e->plan)
        return engine_oom(err, errcap, code);
    e->binding.plan = e->plan;
    e->binding.t = t;
    e->binding.guards = e->guards;
    e->binding.actions = e->actions;
    e->binding.effect = effect_hook;
    return 0;
}

/* The spec's params with the overrides applied, checked, and the ones the
 * built-in handlers read looked up once. 0, or -1. */
static int engine_params(ac_engine *e, const ac_engine_config *cfg, char *err, size_t errcap)
{
    const ac_fsm_tables *t = e->t;
    for (uint16_t i = 0; i < t->n_params; i++) {
        e->params[i].name = t->params[i].name;
        e->params[i].type = t->params[i].type;
        e->params[i].ival = t->params[i].ival;
        e->params[i].sval = t->params[i].sval;
    }
    e->n_params = (uint16_t)(t->n_params + ac_builtin_param_defaults(
                                               t, e->params, t->n_params, e->params + t->n_params,
                                               ac_builtin_param_defaults_max()));
    for (const char *const *p = cfg->params; p && *p; p++)
        if (apply_override(e, *p, err, errcap) < 0)
            return -1;
    if (check_param_values(e, err, errcap) < 0)
        return -1;
    e->p_max_iterations = ac_engine_param(e, "max_iterations");
    e->p_max_retries = ac_engine_param(e, "max_retries");
    e->p_compact_threshold = ac_engine_param(e, "compact_threshold");
    e->p_context_window = ac_engine_param(e, "context_window");
    e->p_max_tokens = ac_engine_param(e, "max_tokens");
    e->p_thinking_budget = ac_engine_param(e, "thinking_budget");
    e->p_stall_timeout = ac_engine_param(e, "stall_timeout");
    e->p_connect_timeout = ac_engine_param(e, "connect_timeout");
    e->p_call_timeout = ac_engine_param(e, "call_timeout");
    e->p_output_retries = ac_engine_param(e, "output_retries");
    e->p_state_in_context = ac_engine_param(e, "state_in_context");
    e->p_state_context_max = ac_engine_param(e, "state_context_max");
    return 0;
}

/* The events the engine posts itself, by index. */
static void engine_events(ac_engine *e)
{
    e->ev_spawn = ac_engine_event_index(e, "spawn");
    e->ev_user_message = ac_engine_event_index(e, "user_message");
    e->ev_cancel = ac_engine_event_index(e, "cancel");
    e->ev_turn_cancel = ac_engine_event_index(e, "turn.cancel");
    e->ev_tool_completed = ac_engine_event_index(e, "tool.completed");
    e->ev_timer_fired = ac_engine_event_index(e, "timer.fired");
    e->ev_inactivity = ac_engine_event_index(e, "inactivity_timeout");
    e->ev_compaction_done = ac_engine_event_index(e, "compaction.done");
    e->ev_compaction_failed = ac_engine_event_index(e, "compaction.failed");
    e->ev_ctx_expanded = ac_engine_event_index(e, "context.expanded");
    e->ev_ctx_loaded = ac_engine_event_index(e, "context.loaded");
}

/* The configuration's strings the engine keeps, and the secrets it scrubs. 0, or -1. */
static int engine_copy_config(ac_engine *e, const ac_engine_config *cfg, char *err, size_t errcap,
                              int *code)
{
    const char *base_url = cfg->base_url;
    if (cfg->provider != AC_PROVIDER_SCRIPT && (!base_url || !*base_url))
        base_url = getenv(cfg->provider == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_BASE_URL"
                                                                 : "OPENAI_BASE_URL");
    size_t sys_n = cfg->system_prompt ? strlen(cfg->system_prompt) : 0;
    size_t sys_ok = sys_n ? ac_utf8_valid_len(cfg->system_prompt, sys_n) : 0;
    if (sys_ok != sys_n) { /* a JSON event cannot carry it: it would be dropped */
        snprintf(err, errcap, "system_prompt is not valid UTF-8 (byte %zu)", sys_ok);
        *code = AC_ECONFIG;
        return -1;
    }
    e->subagents = cfg->subagents;
    if ((cfg->system_prompt && !(e->system_prompt = strdup(cfg->system_prompt))) ||
        (cfg->journal_dir && !(e->journal_dir = strdup(cfg->journal_dir))) ||
        (cfg->api_key_env && !(e->api_key_env = strdup(cfg->api_key_env))) ||
        !(e->secrets = ac_secrets_collect(cfg->api_key, base_url, cfg->headers)))
        return engine_oom(err, errcap, code);
    const char *tc = cfg->request ? cfg->request->tool_choice : NULL;
    if (tc && strcmp(tc, "auto") && strcmp(tc, "none") && strcmp(tc, "required") &&
        !(e->tool_choice = strdup(tc)))
        return engine_oom(err, errcap, code);
    return 0;
}

/* The model provider (an engine without a loop has none: replay). 0, or -1. */
static int engine_provider(ac_engine *e, const ac_engine_config *cfg, char *err, size_t errcap,
                           int *code)
{
    if (!e->loop)
        return 0;
    if (cfg->provider == AC_PROVIDER_SCRIPT &&
        ac_request_settings_check(cfg->request, 0, err, errcap)) /* ranges: sent nowhere */
        e->provider = NULL;
    else if (cfg->provider == AC_PROVIDER_SCRIPT)
        e->provider = ac_provider_script_new(e, cfg->script_path, cfg->script_text,
                                             cfg->script_delay_ms, err, errcap);
    else
        e->provider = ac_provider_http_new(e, cfg->provider, cfg, err, errcap);
    if (!e->provider) {
        *code = strstr(err, "out of memory") ? AC_ENOMEM : AC_ECONFIG;
        return -1;
    }
    return 0;
}

/* The prices of the engine's model (cost.h). 0, or -1 for a malformed document. */
static int engine_price(ac_engine *e, const ac_engine_config *cfg, char *err, size_t errcap,
                        int *code)
{
    ac_price p;
    int rc = ac_price_lookup(cfg->prices, cfg->model, &p, err, errcap);
    if (rc < 0) {
        *code = AC_ECONFIG;
        return -1;
    }
    if (rc == 1 && !(e->price = malloc(sizeof *e->price)))
        return engine_oom(err, errcap, code);
    if (e->price)
        *e->price = p;
    return 0;
}

/* Builds the engine; on failure fills err, *code (enum ac_status) and, for a problem at an
 * effect use, *line (its state's spec line). */
static ac_engine *engine_new(const ac_engine_config *cfg, char *err, size_t errcap, int *code,
                             int *line)
{
    ac_engine *e = calloc(1, sizeof *e);
    ac_registry *own_reg = NULL;
    if (!e) {
        engine_oom(err, errcap, code);
        return NULL;
    }
    e->t = cfg->tables ? cfg->tables : &agent_fsm;
    e->loop = cfg->loop;
    if (cfg->output) {
        e->out = *cfg->output;
        e->has_output = 1;
    }
    e->rng = cfg->seed ? cfg->seed : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull + 1;
    const ac_registry *reg = cfg->registry;
    if (!reg)
        reg = own_reg = ac_registry_new();
    if ((e->loop && !(e->remote = ac_remote_inbox_new(e))) || !reg) {
        engine_oom(err, errcap, code);
        goto fail;
    }
    if (e->t->layout != AC_FSM_LAYOUT) {
        *code = AC_ESPEC;
        snprintf(err, errcap,
                 "the tables of %s have layout %u, this engine reads layout %u: they were "
                 "generated by another version of agentc_generate (regenerate them)",
                 e->t->spec_path ? e->t->spec_path : "the spec", e->t->layout, AC_FSM_LAYOUT);
        goto fail;
    }
    if (engine_alloc(e, err, errcap, code) || engine_bind(e, reg, err, errcap, code) ||
        engine_check_and_plan(e, reg, err, errcap, code, line) ||
        engine_params(e, cfg, err, errcap))
        goto fail;
    if (cfg->output_schema && output_schema_load(e, cfg->output_schema, err, errcap, code) < 0)
        goto fail;
    engine_events(e);
    if (ac_turn_states_build(e) < 0) {
        engine_oom(err, errcap, code);
        goto fail;
    }
    if (engine_copy_config(e, cfg, err, errcap, code) || engine_provider(e, cfg, err, errcap, code))
        goto fail;
    if (cfg->prices && engine_price(e, cfg, err, errcap, code) < 0)
        goto fail;
    if (ac_obs_engine_setup(e, cfg) < 0) {
        engine_oom(err, errcap, code);
        goto fail;
    }
    ac_registry_free(own_reg);
    return e;
fail:
    ac_registry_free(own_reg);
    ac_engine_free(e);
    return NULL;
}

ac_engine *ac_engine_new(const ac_engine_config *cfg, ac_error *err)
{
    char text[2048] = "";
    int code = AC_EINVAL, line = 0;
    ac_engine *e = cfg ? engine_new(cfg, text, sizeof text, &code, &line) : NULL;
    if (e) {
        if (err)
            memset(err, 0, sizeof *err);
        return e;
    }
    ac_error_set(err, code, cfg ? text : "no configuration");
    if (err && line && !err->line) { /* the spec line of the effect use at fault */
        const ac_fsm_tables *t = cfg->tables ? cfg->tables : &agent_fsm;
        snprintf(err->source, sizeof err->source, "%s", t->spec_path ? t->spec_path : "");
        err->line = line;
    }
    return NULL;
}

void ac_engine_free(ac_engine *e)
{
    if (!e)
        return;
    ac_remote_inbox_close(e->remote);
    if (e->provider)
        e->provider->free(e->provider);
    ac_tools_free_all(e);
    ac_mcp_set_free(e);
    free(e->guards);
    free(e->actions);
    free(e->e_start);
    free(e->e_stop);
    free(e->e_report);
    ac_fsm_plan_free(e->plan);
    free(e->turn_state);
    ac_spec_rt_free(e);
    if (e->param_strings)
        for (uint16_t i = 0; i < e->n_params; i++)
            free(e->param_strings[i]);
    free(e->param_strings);
    free(e->params);
    json_decref(e->param_overrides);
    free(e->system_prompt);
    free(e->output_schema_text);
    free(e->tool_choice);
    json_decref(e->state_decl);
    free(e->journal_dir);
    free(e->api_key_env);
    ac_secrets_free(e->secrets);
    ac_obs_engine_free(e);
    free(e->price);
    free(e);
}
