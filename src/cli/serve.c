/*
 * serve.c - `agentc serve`: the options (the engine options of `agentc run`
 * plus the server's own), the engine the server builds once on its loop,
 * and the signals that stop it gracefully.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "cli.h"
#include "io/file.h"
#include "server/server.h"

typedef struct serve_opts {
    const char *provider, *base_url, *model, *api_key_env, *script, *system, *spec;
    const char *tools[32];
    size_t n_tools;
    const char *params[65];
    size_t n_params;
    const char *headers[33];
    size_t n_headers;
    int script_delay_ms;
    ac_fsm_tables *tables;
    char *system_text;
    const char *api_key;
    int provider_kind;
} serve_opts;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    if (g_stop) { /* a second signal: stop now */
        ac_proc_kill_all_now();
        _exit(128 + sig);
    }
    g_stop = sig;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: agentc serve [OPTIONS]\n\n"
            "Serves sessions over HTTP: a JSON API, Server-Sent Events, an OpenAI-compatible\n"
            "/v1/chat/completions and a live audit page at /. See docs/serve.md.\n\n"
            "  --listen ADDR:PORT   (default 127.0.0.1:8080; port 0 picks one)\n"
            "  --tokens FILE        bearer tokens, one a line: TOKEN [NAME]; required to\n"
            "                       listen on anything but loopback\n"
            "  --db PATH            keep sessions in this store (SQLite): they survive a\n"
            "                       restart or a crash, and idle ones leave memory; without\n"
            "                       it sessions live in memory only\n"
            "  --unload-after-ms N  --db: unload a settled session nobody reads after N ms\n"
            "                       (default 600000); the next request loads it again\n"
            "  --db-max-bytes N     --db: cap the store's file; a commit past it fails its\n"
            "                       session (its streams end with an error event)\n"
            "  --max-events N       without --db: events a session's journal keeps in memory\n"
            "                       (default 10000; older ones go at its snapshots)\n"
            "  --port-file FILE     write the bound port there once listening\n"
            "  --ping-ms N          SSE ': ping' interval (default 15000)\n"
            "  --max-body BYTES     request body cap (default 1048576)\n"
            "  --max-connections N  (default 1024)\n"
            "  --client-timeout S   idle/slow client timeout in seconds (default 30)\n"
            "  --sessions-per-token N        (default 1000)\n"
            "  --messages-per-minute N       per token (default 600)\n"
            "  --grace-ms N         SIGTERM: time running turns get to finish (default 10000)\n"
            "  --script-delay-ms N  --provider script: delay between streamed deltas\n"
            "  and the engine options of agentc run: --provider, --base-url, --model,\n"
            "  --api-key-env, --header, --script, --tools, --system, --spec, --param\n\n"
            "exit status: 0 stopped by SIGTERM/SIGINT, 1 cannot start, 2 bad usage, 3 bad\n"
            "configuration (tokens, provider, non-loopback address without --tokens)\n");
}

static ac_engine *make_engine(void *ud, ac_loop *loop, const ac_output *out, ac_error *err)
{
    serve_opts *o = ud;
    ac_engine_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tables = o->tables;
    cfg.loop = loop;
    cfg.params = o->params;
    cfg.provider = o->provider_kind;
    cfg.base_url = o->base_url;
    cfg.api_key = o->api_key;
    cfg.api_key_env = o->api_key_env;
    cfg.model = o->model;
    cfg.headers = o->headers;
    cfg.script_path = o->script;
    cfg.script_delay_ms = o->script_delay_ms;
    cfg.system_prompt = o->system_text ? o->system_text : o->system;
    cfg.output = out;
    ac_engine *e = ac_engine_new(&cfg, err);
    if (!e) {
        fprintf(stderr, "agentc serve: %s\n", err->text);
        return NULL;
    }
    for (size_t i = 0; i < o->n_tools; i++)
        if (ac_engine_add_tools(e, o->tools[i], err) < 0) {
            fprintf(stderr, "agentc serve: %s\n", err->text);
            ac_engine_free(e);
            return NULL;
        }
    return e;
}

static int parse_uint(const char *flag, const char *v, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 0 || n > max) {
        fprintf(stderr, "agentc serve: %s takes a number 0..%lld, not '%s'\n", flag, max, v);
        return -1;
    }
    *out = n;
    return 0;
}

int ac_cli_serve(int argc, char **argv)
{
    serve_opts o;
    memset(&o, 0, sizeof o);
    ac_srv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "agentc serve: %s needs a value (see agentc serve --help)\n", a);
            return AC_EXIT_USAGE;
        }
        const char *v = argv[++i];
        const char *const strs[] = {"--provider", "--base-url", "--model",    "--api-key-env",
                                    "--script",   "--system",   "--spec",     "--listen",
                                    "--tokens",   "--db",       "--port-file"};
        const char **slots[] = {&o.provider,      &o.base_url, &o.model,      &o.api_key_env,
                                &o.script,        &o.system,   &o.spec,       &cfg.listen,
                                &cfg.tokens_file, &cfg.db,     &cfg.port_file};
        size_t k = 0;
        while (k < sizeof strs / sizeof strs[0] && strcmp(a, strs[k]))
            k++;
        if (k < sizeof strs / sizeof strs[0]) {
            *slots[k] = v;
            continue;
        }
        if (!strcmp(a, "--tools") || !strcmp(a, "--param") || !strcmp(a, "--header")) {
            if ((!strcmp(a, "--tools") && o.n_tools >= 31) ||
                (!strcmp(a, "--param") && o.n_params >= 64) ||
                (!strcmp(a, "--header") && o.n_headers >= 32)) {
                fprintf(stderr, "agentc serve: too many %s options\n", a);
                return AC_EXIT_USAGE;
            }
            if (!strcmp(a, "--tools"))
                o.tools[o.n_tools++] = v;
            else if (!strcmp(a, "--param"))
                o.params[o.n_params++] = v;
            else
                o.headers[o.n_headers++] = v;
            continue;
        }
        const char *const nums[] = {
            "--ping-ms",        "--max-body",           "--max-connections",
            "--client-timeout", "--sessions-per-token", "--messages-per-minute",
            "--grace-ms",       "--script-delay-ms",    "--unload-after-ms",
            "--db-max-bytes",   "--max-events"};
        k = 0;
        while (k < sizeof nums / sizeof nums[0] && strcmp(a, nums[k]))
            k++;
        if (k == sizeof nums / sizeof nums[0]) {
            fprintf(stderr, "agentc serve: unknown option '%s' (see agentc serve --help)\n", a);
            return AC_EXIT_USAGE;
        }
        long long n;
        if (parse_uint(a, v, k == 1 || k == 9 ? (1LL << 40) : 100000000LL, &n))
            return AC_EXIT_USAGE;
        switch (k) {
        case 0:
            cfg.ping_ms = n;
            break;
        case 1:
            cfg.max_body = (size_t)n;
            break;
        case 2:
            cfg.max_connections = (unsigned)n;
            break;
        case 3:
            cfg.header_timeout_s = (unsigned)n;
            break;
        case 4:
            cfg.sessions_per_token = (size_t)n;
            break;
        case 5:
            cfg.messages_per_min = (unsigned)n;
            break;
        case 6:
            cfg.grace_ms = n;
            break;
        case 7:
            o.script_delay_ms = (int)n;
            break;
        case 8:
            cfg.unload_after_ms = n;
            break;
        case 9:
            cfg.db_max_bytes = n;
            break;
        default:
            cfg.max_events = n;
            break;
        }
    }
    const char *prov = o.provider ? o.provider : "openai";
    if (strcmp(prov, "openai") && strcmp(prov, "anthropic") && strcmp(prov, "script")) {
        fprintf(stderr, "agentc serve: unknown provider '%s' (openai, anthropic, script)\n", prov);
        return AC_EXIT_USAGE;
    }
    o.provider_kind = !strcmp(prov, "anthropic") ? AC_PROVIDER_ANTHROPIC
                      : !strcmp(prov, "script")  ? AC_PROVIDER_SCRIPT
                                                 : AC_PROVIDER_OPENAI;
    if (!o.model)
        o.model = getenv("AGENTC_MODEL");
    if (o.provider_kind != AC_PROVIDER_SCRIPT) {
        const char *env = o.api_key_env                              ? o.api_key_env
                          : o.provider_kind == AC_PROVIDER_ANTHROPIC ? "ANTHROPIC_API_KEY"
                                                                     : "OPENAI_API_KEY";
        o.api_key_env = env;
        o.api_key = getenv(env);
        if ((!o.api_key || !*o.api_key) && !o.base_url) {
            fprintf(stderr,
                    "agentc serve: no API key: set %s (or --api-key-env NAME), or\n"
                    "  point --base-url at a local OpenAI-compatible server\n",
                    env);
            return AC_EXIT_CONFIG;
        }
        if (!o.model) {
            fprintf(stderr, "agentc serve: no model: pass --model NAME or set AGENTC_MODEL\n");
            return AC_EXIT_CONFIG;
        }
    } else if (!o.script) {
        fprintf(stderr, "agentc serve: --provider script needs --script FILE\n");
        return AC_EXIT_USAGE;
    }
    int rc = 0;
    if (o.spec && !(o.tables = ac_cli_tables_from_spec(o.spec)))
        return AC_EXIT_CONFIG;
    if (o.system && o.system[0] == '@') {
        FILE *f = fopen(o.system + 1, "r");
        if (!f || !(o.system_text = ac_read_stream(f, (size_t)16 << 20, NULL))) {
            fprintf(stderr, "agentc serve: cannot read system prompt '%s': %s\n", o.system + 1,
                    strerror(errno));
            if (f)
                fclose(f);
            ac_spec_tables_free(o.tables);
            return AC_EXIT_CONFIG;
        }
        fclose(f);
    }
    cfg.make_engine = make_engine;
    cfg.engine_ud = &o;
    cfg.model_name = o.provider_kind == AC_PROVIDER_SCRIPT ? "agentc" : o.model;
    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &sa, &old[i]);
    struct sigaction ign, oldpipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &oldpipe); /* a client gone mid-write is an error, not a death */
    rc = ac_srv_run(&cfg, &g_stop);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    sigaction(SIGPIPE, &oldpipe, NULL);
    ac_spec_tables_free(o.tables);
    free(o.system_text);
    return rc;
}
