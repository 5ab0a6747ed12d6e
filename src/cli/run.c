/*
 * run.c - `agentc run`, `agentc demo` and `agentc batch`: configure an
 * engine from flags and environment, run sessions on one event loop, and
 * show what happens (streaming text, tool calls, retries, trace) on a
 * terminal or as JSON Lines.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io/loop.h"
#include "session/session_int.h"

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

typedef struct ui {
    int jsonl, trace, color, tty;
    int spinner_on;
    int wrote_text;
    int64_t first_token_wait;
    const ac_fsm_tables *t;
} ui;

static void emit_json(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    if (s) {
        puts(s);
        fflush(stdout);
        free(s);
    }
    json_decref(o);
}

static void ui_text(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s%}", "type", "text", "delta", d, n));
        return;
    }
    fwrite(d, 1, n, stdout);
    fflush(stdout);
    u->wrote_text = 1;
}

static void ui_reasoning(void *ud, ac_session *s, const char *d, size_t n)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s%}", "type", "reasoning", "delta", d, n));
        return;
    }
    if (u->color)
        fputs("\033[2m", stderr);
    fwrite(d, 1, n, stderr);
    if (u->color)
        fputs("\033[0m", stderr);
}

static void short_text(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in);
    if (n < cap) {
        memcpy(out, in, n + 1);
    } else {
        memcpy(out, in, cap - 4);
        memcpy(out + cap - 4, "...", 4);
    }
    for (char *p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static void ui_tool_start(void *ud, ac_session *s, const char *id, const char *name,
                          const char *args)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s, s:s, s:s}", "type", "tool_call", "id", id, "name", name,
                            "arguments", args));
        return;
    }
    char a[80];
    short_text(args, a, sizeof a);
    if (u->wrote_text)
        fputc('\n', stdout);
    u->wrote_text = 0;
    fprintf(stdout, "%s-> %s %s%s\n", u->color ? "\033[36m" : "", name, a,
            u->color ? "\033[0m" : "");
    fflush(stdout);
}

static void ui_tool_end(void *ud, ac_session *s, const char *id, const char *name, int ok,
                        const char *content, int64_t ms)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:s, s:b, s:s}", "type", "tool_result", "id", id, "ok", ok,
                            "content", content));
        return;
    }
    char c[80];
    short_text(content, c, sizeof c);
    fprintf(stdout, "%s<- %s %s (%lld ms): %s%s\n", u->color ? (ok ? "\033[32m" : "\033[31m") : "",
            name, ok ? "ok" : "failed", (long long)ms, c, u->color ? "\033[0m" : "");
    fflush(stdout);
}

static void ui_retry(void *ud, ac_session *s, int attempt, int64_t delay, const char *reason)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl) {
        emit_json(json_pack("{s:s, s:i, s:I, s:s}", "type", "retry", "attempt", attempt,
                            "delay_ms", (json_int_t)delay, "reason", reason));
        return;
    }
    fprintf(stderr, "%sretry %d in %lld ms: %s%s\n", u->color ? "\033[33m" : "", attempt,
            (long long)delay, reason, u->color ? "\033[0m" : "");
}

static void ui_discarded(void *ud, ac_session *s, size_t n)
{
    ui *u = ud;
    (void)s;
    if (!u->jsonl && u->wrote_text) {
        fprintf(stdout, "\n[partial answer of %zu bytes discarded, retrying]\n", n);
        u->wrote_text = 0;
    }
}

static void ui_compacted(void *ud, ac_session *s, const char *strategy, size_t before,
                         size_t after)
{
    ui *u = ud;
    (void)s;
    if (u->jsonl)
        emit_json(json_pack("{s:s, s:s?, s:I, s:I}", "type", "compacted", "strategy", strategy,
                            "before", (json_int_t)before, "after", (json_int_t)after));
    else
        fprintf(stderr, "[context compacted (%s): %zu -> %zu messages]\n",
                strategy ? strategy : "?", before, after);
}

static void ui_trace(void *ud, ac_session *s, const ac_trace_rec *r)
{
    ui *u = ud;
    (void)s;
    if (!u->trace)
        return;
    const ac_fsm_tables *t = u->t;
    const char *m = t->machines[r->machine].name;
    const char *from = r->from == AC_FSM_NONE ? "*" : t->states[r->from].name;
    const char *to = t->states[r->to].name;
    const char *ev = r->event ? t->event_names[r->event] : "";
    if (u->jsonl) {
        const char *kind = r->kind == AC_TRACE_UNHANDLED ? "unhandled"
                           : r->kind == AC_TRACE_ERROR   ? "error"
                                                         : "transition";
        emit_json(json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i}", "type", "state", "kind", kind,
                            "machine", m, "from", from, "event", ev, "to", to, "line",
                            (int)r->line));
        return;
    }
    if (r->kind == AC_TRACE_INTERNAL || r->kind == AC_TRACE_IGNORED)
        return; /* deltas and the like: too chatty for a trace line each */
    if (u->wrote_text) {
        fputc('\n', stdout);
        fflush(stdout);
        u->wrote_text = 0;
    }
    if (r->from == AC_FSM_NONE)
        fprintf(stderr, "%s%s starts in %s%s\n", u->color ? "\033[2m" : "", m, to,
                u->color ? "\033[0m" : "");
    else if (r->kind == AC_TRACE_UNHANDLED)
        fprintf(stderr, "%s%s %s: unhandled %s%s\n", u->color ? "\033[2m" : "", m, from, ev,
                u->color ? "\033[0m" : "");
    else if (r->kind == AC_TRACE_ERROR)
        fprintf(stderr, "%s %s: error: %s\n", m, from, r->message ? r->message : "");
    else
        fprintf(stderr, "%s%s %s --%s--> %s (%s:%u)%s\n", u->color ? "\033[2m" : "", m, from, ev,
                to, t->spec_path, r->line, u->color ? "\033[0m" : "");
}

static int g_settled;
static void ui_finished(void *ud, ac_session *s)
{
    (void)ud;
    (void)s;
    g_settled = 1;
}

static char *read_all(FILE *f, size_t cap)
{
    size_t len = 0, sz = 4096;
    char *buf = malloc(sz);
    size_t r;
    while (buf && (r = fread(buf + len, 1, sz - len - 1, f)) > 0) {
        len += r;
        if (len + 1 == sz) {
            if (sz >= cap) {
                free(buf);
                errno = EFBIG;
                return NULL;
            }
            char *nb = realloc(buf, sz * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            sz *= 2;
        }
    }
    if (buf)
        buf[len] = 0;
    return buf;
}

ac_fsm_tables *ac_cli_tables_from_spec(const char *path)
{
    int rc;
    ac_spec *spec = ac_cli_load_spec(path, &rc, 1);
    if (!spec)
        return NULL;
    char rel[4096];
    ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    ac_spec_free(spec);
    if (!t)
        fprintf(stderr, "agentc: out of memory\n");
    return t;
}

typedef struct run_opts {
    const char *provider, *base_url, *model, *api_key_env, *script, *system, *spec, *journal;
    const char *tools[32];
    size_t n_tools;
    const char *params[64];
    size_t n_params;
    const char *headers[32];
    size_t n_headers;
    int trace, jsonl;
    int concurrency;
    const char *prompt;
} run_opts;

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: agentc run [OPTIONS] PROMPT      (PROMPT - reads stdin)\n\n"
            "  --provider openai|anthropic|script   (default openai)\n"
            "  --base-url URL       OpenAI-compatible: with /v1 (default $OPENAI_BASE_URL or\n"
            "                       https://api.openai.com/v1); Anthropic: https://api.anthropic.com\n"
            "  --model NAME         (default $AGENTC_MODEL)\n"
            "  --api-key-env NAME   read the API key from $NAME (default OPENAI_API_KEY or\n"
            "                       ANTHROPIC_API_KEY)\n"
            "  --header 'N: V'      extra HTTP header (repeatable)\n"
            "  --script FILE        turns for --provider script (JSON Lines)\n"
            "  --tools FILE|builtin:calculator|builtin:clock   (repeatable)\n"
            "  --system TEXT | --system @FILE\n"
            "  --spec FILE          run an edited spec without rebuilding\n"
            "  --param NAME=VALUE   override a spec param (repeatable)\n"
            "  --journal FILE       record every event (replay with agentc replay)\n"
            "  --trace              print every transition to stderr\n"
            "  --jsonl              one JSON object per line on stdout\n\n"
            "exit status: 0 completed, 1 the agent failed, 2 bad usage, 3 bad configuration,\n"
            "130 interrupted\n");
}

/* Returns 0, or an exit status. */
static int parse_run(int argc, char **argv, run_opts *o, int batch)
{
    memset(o, 0, sizeof *o);
    o->concurrency = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--trace")) {
            o->trace = 1;
            continue;
        }
        if (!strcmp(a, "--jsonl")) {
            o->jsonl = 1;
            continue;
        }
        const char **slot = NULL;
        const char *const names[] = {"--provider", "--base-url", "--model",   "--api-key-env",
                                     "--script",   "--system",   "--spec",    "--journal"};
        const char **slots[] = {&o->provider, &o->base_url, &o->model, &o->api_key_env,
                                &o->script,   &o->system,   &o->spec,  &o->journal};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            if (!strcmp(a, names[k]))
                slot = slots[k];
        int is_list = !strcmp(a, "--tools") || !strcmp(a, "--param") || !strcmp(a, "--header") ||
                      (batch && !strcmp(a, "--concurrency"));
        if (slot || is_list) {
            if (i + 1 >= argc) {
                fprintf(stderr, "agentc: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            const char *v = argv[++i];
            if (slot)
                *slot = v;
            else if (!strcmp(a, "--tools") && o->n_tools < 31)
                o->tools[o->n_tools++] = v;
            else if (!strcmp(a, "--param") && o->n_params < 63)
                o->params[o->n_params++] = v;
            else if (!strcmp(a, "--header") && o->n_headers < 31)
                o->headers[o->n_headers++] = v;
            else if (!strcmp(a, "--concurrency")) {
                char *end;
                long n = strtol(v, &end, 10);
                if (*end || n < 1 || n > 10000) {
                    fprintf(stderr, "agentc batch: --concurrency must be 1..10000\n");
                    return AC_EXIT_USAGE;
                }
                o->concurrency = (int)n;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc: unknown option '%s' (see agentc %s --help)\n", a,
                    batch ? "batch" : "run");
            return AC_EXIT_USAGE;
        }
        if (o->prompt) {
            fprintf(stderr, "agentc: one %s only (quote it)\n", batch ? "FILE" : "PROMPT");
            return AC_EXIT_USAGE;
        }
        o->prompt = a;
    }
    if (!o->prompt) {
        fprintf(stderr, "agentc %s: missing %s (see agentc %s --help)\n", batch ? "batch" : "run",
                batch ? "FILE" : "PROMPT", batch ? "batch" : "run");
        return AC_EXIT_USAGE;
    }
    if (o->provider && strcmp(o->provider, "openai") && strcmp(o->provider, "anthropic") &&
        strcmp(o->provider, "script")) {
        fprintf(stderr, "agentc: unknown provider '%s' (openai, anthropic, script)\n",
                o->provider);
        return AC_EXIT_USAGE;
    }
    return 0;
}

typedef struct engine_bundle {
    ac_loop *loop;
    ac_engine *engine;
    ac_fsm_tables *tables;
    char *system;
} engine_bundle;

static void bundle_free(engine_bundle *b)
{
    ac_engine_free(b->engine);
    ac_loop_free(b->loop);
    ac_spec_tables_free(b->tables);
    free(b->system);
}

static int make_engine(const run_opts *o, const ac_output *out, const char *script_text,
                       int delay_ms, engine_bundle *b)
{
    memset(b, 0, sizeof *b);
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char err[4096];
    const char *prov = o->provider ? o->provider : (script_text ? "script" : "openai");
    cfg.provider = !strcmp(prov, "anthropic") ? AC_PROVIDER_ANTHROPIC
                   : !strcmp(prov, "script")  ? AC_PROVIDER_SCRIPT
                                              : AC_PROVIDER_OPENAI;
    if (o->spec && !(b->tables = ac_cli_tables_from_spec(o->spec)))
        return AC_EXIT_CONFIG;
    cfg.tables = b->tables;
    cfg.script_path = o->script;
    cfg.script_text = script_text;
    cfg.script_delay_ms = delay_ms;
    cfg.base_url = o->base_url;
    cfg.model = o->model ? o->model : getenv("AGENTC_MODEL");
    cfg.headers = o->headers;
    if (cfg.provider != AC_PROVIDER_SCRIPT) {
        const char *env = o->api_key_env ? o->api_key_env
                          : cfg.provider == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_API_KEY"
                                                                  : "OPENAI_API_KEY";
        cfg.api_key = getenv(env);
        const char *base_env = cfg.provider == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_BASE_URL"
                                                                     : "OPENAI_BASE_URL";
        if ((!cfg.api_key || !*cfg.api_key) && !o->base_url && !getenv(base_env)) {
            fprintf(stderr,
                    "agentc: no API key: set %s (or name another variable with --api-key-env),\n"
                    "  or point --base-url at a local OpenAI-compatible server (llama.cpp, vLLM,\n"
                    "  Ollama: --base-url http://127.0.0.1:11434/v1), or try the offline\n"
                    "  demo: agentc demo\n",
                    env);
            return AC_EXIT_CONFIG;
        }
        if (!cfg.model) {
            fprintf(stderr, "agentc: no model: pass --model NAME or set AGENTC_MODEL\n");
            return AC_EXIT_CONFIG;
        }
    } else if (!o->script && !script_text) {
        fprintf(stderr, "agentc: --provider script needs --script FILE\n");
        return AC_EXIT_USAGE;
    }
    if (o->system && o->system[0] == '@') {
        FILE *f = fopen(o->system + 1, "r");
        if (!f || !(b->system = read_all(f, (size_t)16 << 20))) {
            fprintf(stderr, "agentc: cannot read system prompt '%s': %s\n", o->system + 1,
                    strerror(errno));
            if (f)
                fclose(f);
            return AC_EXIT_CONFIG;
        }
        fclose(f);
        cfg.system_prompt = b->system;
    } else {
        cfg.system_prompt = o->system;
    }
    const char *params[65];
    memcpy(params, o->params, o->n_params * sizeof *params);
    params[o->n_params] = NULL;
    cfg.params = params;
    cfg.output = out;
    b->loop = ac_loop_new();
    if (!b->loop) {
        fprintf(stderr, "agentc: cannot create the event loop\n");
        return AC_EXIT_CONFIG;
    }
    cfg.loop = b->loop;
    b->engine = ac_engine_new(&cfg, err, sizeof err);
    if (!b->engine) {
        fprintf(stderr, "agentc: %s\n", err);
        return strstr(err, "--param") || strstr(err, "unknown param") ? AC_EXIT_USAGE : AC_EXIT_CONFIG;
    }
    for (size_t i = 0; i < o->n_tools; i++)
        if (ac_engine_add_tools(b->engine, o->tools[i], err, sizeof err) < 0) {
            fprintf(stderr, "agentc: %s\n", err);
            return AC_EXIT_CONFIG;
        }
    return 0;
}

static int run_one(const run_opts *o, const char *script_text, int delay_ms, int demo)
{
    ui u;
    memset(&u, 0, sizeof u);
    u.jsonl = o->jsonl;
    u.trace = o->trace;
    u.tty = isatty(1);
    u.color = u.tty && !getenv("NO_COLOR") && !o->jsonl;
    ac_output out = {&u,          ui_text,         ui_reasoning, ui_tool_start, ui_tool_end,
                     ui_retry,    ui_discarded,    ui_compacted, ui_trace,      ui_finished};
    char *prompt = NULL;
    if (!strcmp(o->prompt, "-")) {
        prompt = read_all(stdin, (size_t)64 << 20);
        if (!prompt) {
            fprintf(stderr, "agentc: cannot read the prompt from stdin: %s\n", strerror(errno));
            return AC_EXIT_CONFIG;
        }
    }
    engine_bundle b;
    int rc = make_engine(o, &out, script_text, delay_ms, &b);
    if (rc) {
        bundle_free(&b);
        free(prompt);
        return rc;
    }
    u.t = ac_engine_tables(b.engine);
    char err[1024];
    ac_session *s = ac_session_new(b.engine, "s1", o->journal, err, sizeof err);
    if (!s) {
        fprintf(stderr, "agentc: %s\n", err);
        bundle_free(&b);
        free(prompt);
        return AC_EXIT_CONFIG;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &old);
    g_interrupted = 0;
    g_settled = 0;
    ac_session_send(s, prompt ? prompt : o->prompt);
    while (!g_settled && !ac_session_settled(s) && !g_interrupted)
        ac_loop_run_once(b.loop, 100);
    int interrupted = g_interrupted;
    if (interrupted) {
        ac_session_cancel(s);
        if (!o->jsonl)
            fprintf(stderr, "\n[interrupted: session cancelled]\n");
    }
    sigaction(SIGINT, &old, NULL);
    const char *status = ac_session_status(s);
    const char *answer = ac_session_answer(s);
    if (interrupted && !*answer)
        answer = ac_session_partial(s);
    const char *error = ac_session_error(s);
    ac_conv *conv = ac_session_conv(s);
    if (o->jsonl) {
        if (error && strcmp(status, "idle"))
            emit_json(json_pack("{s:s, s:s}", "type", "error", "message", error));
        emit_json(json_pack("{s:s, s:s, s:I, s:{s:I, s:I}, s:s}", "type", "done", "status",
                            interrupted ? "cancelled" : (!strcmp(status, "idle") ? "completed" : status),
                            "iterations", (json_int_t)ac_conv_iteration(conv), "usage", "input",
                            (json_int_t)ac_conv_usage_input(conv), "output",
                            (json_int_t)ac_conv_usage_output(conv), "answer", answer));
    } else {
        if (u.wrote_text || interrupted)
            fputc('\n', stdout);
        if (error && strcmp(status, "idle"))
            fprintf(stderr, "agentc: the agent failed: %s\n", error);
        if (demo && o->journal) {
            fprintf(stderr,
                    "\njournal: %s\n"
                    "  replay it:   agentc replay %s --check\n"
                    "  draw it:     agentc diagram spec/agent.fsm --journal %s --format mermaid\n",
                    o->journal, o->journal, o->journal);
        }
    }
    rc = interrupted ? AC_EXIT_INTERRUPTED : !strcmp(status, "idle") ? 0 : AC_EXIT_FAILED;
    ac_session_free(s);
    bundle_free(&b);
    free(prompt);
    return rc;
}

int ac_cli_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run(argc, argv, &o, 0);
    if (rc)
        return rc < 0 ? 0 : rc;
    return run_one(&o, NULL, 0, 0);
}

static const char demo_script[] =
    "{\"reasoning\": \"The user wants 17 * 23 and then that plus 19. I will use the calculator "
    "for both.\", \"content\": \"Let me work that out.\", \"tool_calls\": [{\"id\": \"call_1\", "
    "\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\": \\\"17 * 23\\\"}\"}], "
    "\"usage\": {\"input\": 120, \"output\": 32}}\n"
    "{\"content\": \"\", \"tool_calls\": [{\"id\": \"call_2\", \"name\": \"calculator\", "
    "\"arguments\": \"{\\\"expression\\\": \\\"391 + 19\\\"}\"}], \"usage\": {\"input\": 170, "
    "\"output\": 20}}\n"
    "{\"content\": \"17 x 23 = 391, and 391 + 19 = 410. Both results come from the calculator "
    "tool, run through the same spec-driven loop a real model would use.\", \"usage\": "
    "{\"input\": 210, \"output\": 40}}\n";

int ac_cli_demo(int argc, char **argv)
{
    const char *journal = "agentc-demo.journal";
    int jsonl = 0, trace = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: agentc demo [--journal FILE] [--jsonl] [--no-trace]\n\n"
                   "Runs an agent offline: a scripted model that calls the built-in calculator\n"
                   "tool through the full spec, streaming its answer, with a short trace.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--journal") && i + 1 < argc)
            journal = argv[++i];
        else if (!strcmp(argv[i], "--jsonl"))
            jsonl = 1;
        else if (!strcmp(argv[i], "--no-trace"))
            trace = 0;
        else {
            fprintf(stderr, "agentc demo: unknown option '%s'\n", argv[i]);
            return AC_EXIT_USAGE;
        }
    }
    run_opts o;
    memset(&o, 0, sizeof o);
    o.provider = "script";
    o.tools[o.n_tools++] = "builtin:calculator";
    o.system = "You are a careful assistant. Use the calculator for arithmetic.";
    o.journal = journal;
    o.trace = trace;
    o.jsonl = jsonl;
    o.prompt = "What is 17 * 23, plus 19?";
    if (!jsonl)
        fprintf(stderr, "agentc demo: offline, scripted model, real tool path, spec %s\n\n> %s\n\n",
                "spec/agent.fsm", o.prompt);
    return run_one(&o, demo_script, isatty(1) ? 25 : 0, 1);
}

/* ---- batch ---- */

typedef struct batch_item {
    json_t *id;
    char *prompt;
    ac_session *s;
    int done;
    json_t *result;
} batch_item;

int ac_cli_batch(int argc, char **argv)
{
    run_opts o;
    int rc = parse_run(argc, argv, &o, 1);
    if (rc)
        return rc < 0 ? 0 : rc;
    FILE *f = strcmp(o.prompt, "-") ? fopen(o.prompt, "r") : stdin;
    if (!f) {
        fprintf(stderr, "agentc batch: cannot read '%s': %s\n", o.prompt, strerror(errno));
        return AC_EXIT_CONFIG;
    }
    batch_item *items = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    int lineno = 0;
    while ((len = getline(&line, &lcap, f)) > 0) {
        lineno++;
        if (len <= 1)
            continue;
        json_error_t jerr;
        json_t *v = json_loadb(line, (size_t)len, 0, &jerr);
        const char *p = json_string_value(json_object_get(v, "prompt"));
        if (!p) {
            fprintf(stderr, "agentc batch: %s:%d: expected {\"id\": ..., \"prompt\": \"...\"}\n",
                    o.prompt, lineno);
            json_decref(v);
            free(line);
            for (size_t i = 0; i < n; i++) {
                json_decref(items[i].id);
                free(items[i].prompt);
            }
            free(items);
            if (f != stdin)
                fclose(f);
            return AC_EXIT_CONFIG;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            items = realloc(items, cap * sizeof *items);
        }
        memset(&items[n], 0, sizeof items[n]);
        items[n].id = json_incref(json_object_get(v, "id"));
        if (!items[n].id)
            items[n].id = json_integer(lineno);
        items[n].prompt = strdup(p);
        n++;
        json_decref(v);
    }
    free(line);
    if (f != stdin)
        fclose(f);
    ac_output out;
    memset(&out, 0, sizeof out);
    engine_bundle b;
    rc = make_engine(&o, &out, NULL, 0, &b);
    if (rc) {
        bundle_free(&b);
        for (size_t i = 0; i < n; i++) {
            json_decref(items[i].id);
            free(items[i].prompt);
        }
        free(items);
        return rc;
    }
    size_t next = 0, running = 0, finished = 0, failures = 0;
    int tty = isatty(2);
    int64_t t0 = ac_wall_now_ms();
    while (finished < n) {
        while (next < n && running < (size_t)o.concurrency) {
            char id[64], err[512];
            snprintf(id, sizeof id, "b%zu", next + 1);
            items[next].s = ac_session_new(b.engine, id, NULL, err, sizeof err);
            if (items[next].s) {
                ac_session_send(items[next].s, items[next].prompt);
                running++;
            } else {
                items[next].done = 1;
                items[next].result = json_pack("{s:O, s:s, s:s}", "id", items[next].id,
                                               "status", "failed", "error", err);
                finished++;
                failures++;
            }
            next++;
        }
        ac_loop_run_once(b.loop, 50);
        for (size_t i = 0; i < next; i++) {
            batch_item *it = &items[i];
            if (it->done || !it->s || !ac_session_settled(it->s))
                continue;
            ac_conv *conv = ac_session_conv(it->s);
            const char *st = ac_session_status(it->s);
            int ok = !strcmp(st, "idle");
            it->result = json_pack(
                "{s:O, s:s, s:s, s:I, s:I, s:{s:I, s:I}, s:s?}", "id", it->id, "status",
                ok ? "completed" : "failed", "answer", ac_session_answer(it->s), "iterations",
                (json_int_t)ac_conv_iteration(conv), "tool_calls",
                (json_int_t)ac_conv_tool_call_count(conv), "usage", "input",
                (json_int_t)ac_conv_usage_input(conv), "output",
                (json_int_t)ac_conv_usage_output(conv), "error",
                ok ? NULL : ac_session_error(it->s));
            it->done = 1;
            failures += !ok;
            ac_session_free(it->s);
            it->s = NULL;
            running--;
            finished++;
            emit_json(json_incref(it->result)); /* as they finish */
        }
        if (tty) {
            double secs = (double)(ac_wall_now_ms() - t0) / 1000.0;
            double rate = secs > 0 ? (double)finished / secs : 0;
            fprintf(stderr, "\r[%zu/%zu] %.1f/s, %zu failed, ETA %.0fs   ", finished, n, rate,
                    failures, rate > 0 ? (double)(n - finished) / rate : 0.0);
        }
    }
    if (tty)
        fputc('\n', stderr);
    for (size_t i = 0; i < n; i++) {
        json_decref(items[i].id);
        json_decref(items[i].result);
        free(items[i].prompt);
    }
    free(items);
    bundle_free(&b);
    return failures ? AC_EXIT_FAILED : 0;
}
