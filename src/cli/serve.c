/*
 * serve.c - `agentc serve`: the options (the engine options of `agentc run`,
 * engine_opts.c, plus the server's own), the one engine the server builds on
 * its loop (the command line's one builder), and the signals that stop it
 * gracefully.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentc/agentc.h"
#include "cli.h"
#include "engine_opts.h"
#include "serve_agents.h"
#include "server/server.h"
#include "store/store_int.h"

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
            "  --allowed-hosts LIST more Host names to answer to (comma-separated, NAME or\n"
            "                       NAME:PORT), e.g. a load balancer's; IP addresses,\n"
            "                       localhost and --listen's host always are\n"
            "  --db PATH|URI        keep sessions in this store (an SQLite file, one server\n"
            "                       each, or postgresql://..., shared by any number of\n"
            "                       workers): they survive a restart or a crash, and idle\n"
            "                       ones leave memory (default: $AGENTC_DB; without\n"
            "                       either, or with AGENTC_DB=off, sessions live in memory)\n"
            "  --worker-id NAME     this worker's id, the holder of its sessions' leases\n"
            "                       (default: agentc RANDOM:PID@HOST)\n"
            "  --lease-ms N         a session's lease (default 10000), renewed every third;\n"
            "                       a worker gone this long has its turns finished by another\n"
            "  --unload-after-ms N  --db: unload a settled session nobody reads after N ms\n"
            "                       (default 600000); the next request loads it again\n"
            "  --db-listen URL      --db postgresql://: the connection that wakes streams and\n"
            "                       forwards requests between workers (LISTEN/NOTIFY); a\n"
            "                       direct one, not through a pooler (default: --db); in\n"
            "                       --db's schema (a schema= key naming another is refused)\n"
            "  --forward-timeout-ms N  a request for a session another worker runs waits\n"
            "                       this long for its answer, then 504 (default 5000)\n"
            "  --db-max-bytes N     --db: cap the store's file; a commit past it fails its\n"
            "                       session (its streams end with an error event)\n"
            "  --max-events N       without --db: events a session's journal keeps in memory\n"
            "                       (default 10000; older ones go at its snapshots)\n"
            "  --port-file FILE     write the bound port there once listening\n"
            "  --metrics-token T    GET /metrics (Prometheus text) takes this bearer token\n"
            "                       (default: any token of --tokens; none without them)\n"
            "  --ping-ms N          SSE ': ping' interval (default 15000)\n"
            "  --max-body BYTES     request body cap (default 1048576)\n"
            "  --max-connections N  (default 1024)\n"
            "  --client-timeout S   seconds a request (headers and body) has to arrive\n"
            "                       (default 30)\n"
            "  --client-tool-timeout S  the OpenAI-compatible front: seconds a turn waits for\n"
            "                       the client's results of its tools' calls (default 600);\n"
            "                       past it the calls fail (\"the client did not answer\")\n"
            "  --sessions-per-token N        (default 1000)\n"
            "  --messages-per-minute N       per token (default 600)\n"
            "  --events-per-minute N         events posted per token (default 600)\n"
            "  --max-event-bytes N  an event's payload (default 65536)\n"
            "  --streams-per-token N         SSE streams open at once (default 64)\n"
            "  --grace-ms N         SIGTERM: time running turns get to finish (default 10000);\n"
            "                       /readyz answers 503 from the signal on, and the leases\n"
            "                       of turns left mid-way go to the other workers\n"
            "  --script-delay-ms N  --provider script: delay between streamed deltas\n"
            "  --agents FILE        host the agents of FILE (docs/agents.md): a session\n"
            "                       picks one ({\"agent\": NAME}), the OpenAI-compatible\n"
            "                       front by its \"model\"\n"
            "  --agent-name NAME    the name of the agent the engine options describe\n"
            "                       (default: default); with --agents it is hosted when\n"
            "                       engine options are given, and is the default agent\n"
            "  --overridable KEYS   the keys (comma-separated) a session may override of\n"
            "                       that agent (default: none)\n"
            "  and the engine options of agentc run: --provider, --base-url, --model,\n"
            "  --api-key-env, --header, --script, --tools, --system, --spec, --prices,\n"
            "  --param, --output-schema and the model request settings --temperature,\n"
            "  --top-p, --stop, --seed, --tool-choice, --parallel-tool-calls,\n"
            "  --reasoning-effort, --request-json\n\n"
            "exit status: 0 stopped by SIGTERM/SIGINT, 1 cannot start, 2 bad usage, 3 bad\n"
            "configuration (tokens, provider, non-loopback address without --tokens)\n");
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

/* A number option of the server (or --script-delay-ms). 1 when a is one, 0
 * when it is not, or -(exit status). */
static int serve_number(const char *a, const char *v, ac_srv_config *cfg, ac_cli_engine_opts *eo)
{
    const char *const nums[] = {"--ping-ms",
                                "--max-body",
                                "--max-connections",
                                "--client-timeout",
                                "--sessions-per-token",
                                "--messages-per-minute",
                                "--grace-ms",
                                "--script-delay-ms",
                                "--unload-after-ms",
                                "--db-max-bytes",
                                "--max-events",
                                "--lease-ms",
                                "--events-per-minute",
                                "--max-event-bytes",
                                "--streams-per-token",
                                "--forward-timeout-ms",
                                "--client-tool-timeout"};
    size_t k = 0;
    while (k < sizeof nums / sizeof nums[0] && strcmp(a, nums[k]))
        k++;
    if (k == sizeof nums / sizeof nums[0])
        return 0;
    long long n;
    if (parse_uint(a, v, k == 1 ? (1LL << 30) : k == 9 ? (1LL << 40) : 100000000LL, &n))
        return -AC_EXIT_USAGE;
    switch (k) {
    case 0:
        cfg->ping_ms = n;
        break;
    case 1:
        cfg->max_body = (size_t)n;
        break;
    case 2:
        cfg->max_connections = (unsigned)n;
        break;
    case 3:
        cfg->header_timeout_s = (unsigned)n;
        break;
    case 4:
        cfg->sessions_per_token = (size_t)n;
        break;
    case 5:
        cfg->messages_per_min = (unsigned)n;
        break;
    case 6:
        cfg->grace_ms = n;
        break;
    case 7:
        eo->script_delay_ms = (int)n;
        break;
    case 8:
        cfg->unload_after_ms = n;
        break;
    case 9:
        cfg->db_max_bytes = n;
        break;
    case 10:
        cfg->max_events = n;
        break;
    case 11:
        if (n < 30) {
            fprintf(stderr, "agentc serve: --lease-ms takes at least 30, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        cfg->lease_ms = n;
        break;
    case 12:
        cfg->events_per_min = (unsigned)n;
        break;
    case 13:
        cfg->max_event_bytes = (size_t)n;
        break;
    case 14:
        cfg->streams_per_token = (unsigned)n;
        break;
    case 15:
        cfg->forward_timeout_ms = n;
        break;
    default:
        if (n < 1) {
            fprintf(stderr, "agentc serve: --client-tool-timeout takes at least 1, not '%s'\n", v);
            return -AC_EXIT_USAGE;
        }
        cfg->client_tool_timeout_ms = n * 1000;
        break;
    }
    return 1;
}

/* The options naming agents: --agents, --agent-name, --overridable. */
typedef struct agent_flags {
    const char *file, *name, *overridable;
} agent_flags;

/* Every option takes a value. 0, -1 after --help, or an exit status. */
static int serve_parse(int argc, char **argv, ac_cli_engine_opts *eo, ac_srv_config *cfg,
                       agent_flags *af)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "agentc serve: %s needs a value (see agentc serve --help)\n", a);
            return AC_EXIT_USAGE;
        }
        int r = ac_cli_engine_flag(argc, argv, &i, eo, "agentc serve");
        if (!r)
            r = ac_cli_request_flag(argc, argv, &i, eo);
        if (r < 0)
            return -r;
        if (r)
            continue;
        const char *v = argv[++i];
        const char *const strs[] = {"--listen",      "--tokens",        "--db",
                                    "--port-file",   "--agents",        "--agent-name",
                                    "--overridable", "--metrics-token", "--allowed-hosts",
                                    "--worker-id",   "--db-listen"};
        const char **slots[] = {&cfg->listen,     &cfg->tokens_file,   &cfg->db,
                                &cfg->port_file,  &af->file,           &af->name,
                                &af->overridable, &cfg->metrics_token, &cfg->allowed_hosts,
                                &cfg->worker_id,  &cfg->db_listen};
        size_t k = 0, n = sizeof strs / sizeof strs[0];
        while (k < n && strcmp(a, strs[k]))
            k++;
        if (k < n) {
            *slots[k] = v;
            continue;
        }
        if ((r = serve_number(a, v, cfg, eo)) < 0)
            return -r;
        if (!r) {
            fprintf(stderr, "agentc serve: unknown option '%s' (see agentc serve --help)\n", a);
            return AC_EXIT_USAGE;
        }
    }
    return 0;
}

/* Runs the server until SIGTERM/SIGINT (a second signal: at once). */
static int serve_run(ac_srv_config *cfg)
{
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
    int rc = ac_srv_run(cfg, &g_stop);
    for (int i = 0; i < 3; i++)
        sigaction(sigs[i], &old[i], NULL);
    sigaction(SIGPIPE, &oldpipe, NULL);
    return rc;
}

/* The command line's agent: hosted without --agents, or with it when engine options or
 * --agent-name are given. */
static int hosts_cli_agent(const ac_cli_engine_opts *eo, const agent_flags *af)
{
    json_t *given = ac_cli_engine_opts_given(eo);
    int any = json_array_size(given) > 0;
    json_decref(given);
    return !af->file || af->name || any;
}

/* A worker id: what a lease's holder column and a log line can show (1..100 printable). */
static int valid_worker_id(const char *id)
{
    size_t n = strlen(id);
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return n >= 1 && n <= 100;
}

/* --db-listen, which only a PostgreSQL --db takes, in --db's schema: a URL without schema=
 * is given --db's (*owned, malloc'd), one naming another schema is refused. 0, or an exit
 * status after saying why. */
static int serve_listen(ac_srv_config *cfg, char **owned)
{
    if (!cfg->db_listen)
        return 0;
    if (!ac_store_is_pg_uri(cfg->db) || !ac_store_is_pg_uri(cfg->db_listen)) {
        fprintf(stderr, "agentc serve: --db-listen is for workers of a PostgreSQL store: a "
                        "postgresql:// URL, with --db postgresql://...\n");
        return AC_EXIT_USAGE;
    }
    char want[64], got[64], *ci = NULL;
    ac_error err = {0};
    int rc = ac_store_pg_split_uri(cfg->db, &ci, want, sizeof want, &err);
    free(ci);
    if (rc != AC_OK)
        return 0; /* --db's own error, said when the store is opened */
    rc = ac_store_pg_split_uri(cfg->db_listen, &ci, got, sizeof got, &err);
    free(ci);
    if (rc != AC_OK) {
        fprintf(stderr, "agentc serve: --db-listen: %s\n", err.text);
        return AC_EXIT_CONFIG;
    }
    if (!strcmp(want, got))
        return 0;
    const char *q = strchr(cfg->db_listen, '?');
    if (q && (!strncmp(q + 1, "schema=", 7) || strstr(q, "&schema="))) {
        fprintf(stderr,
                "agentc serve: --db-listen names schema '%s', --db schema '%s': the "
                "wake-ups must be of the store's schema\n",
                got, want);
        return AC_EXIT_USAGE;
    }
    size_t n = strlen(cfg->db_listen) + strlen(want) + 9;
    if (!(*owned = malloc(n)))
        return AC_EXIT_FAILED;
    snprintf(*owned, n, "%s%cschema=%s", cfg->db_listen, q ? '&' : '?', want);
    cfg->db_listen = *owned;
    return 0;
}

int ac_cli_serve(int argc, char **argv)
{
    ac_cli_engine_opts eo;
    memset(&eo, 0, sizeof eo);
    ac_srv_config cfg;
    memset(&cfg, 0, sizeof cfg);
    agent_flags af = {0};
    int rc = serve_parse(argc, argv, &eo, &cfg, &af);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (!cfg.db)
        cfg.db = ac_cli_store_env();
    if (cfg.worker_id && !valid_worker_id(cfg.worker_id)) {
        fprintf(stderr, "agentc serve: --worker-id takes 1 to 100 printable characters\n");
        return AC_EXIT_USAGE;
    }
    serve_agents sa;
    memset(&sa, 0, sizeof sa);
    char err[1024];
    if (af.file && !(sa.file = ac_cli_agents_load(af.file, err, sizeof err))) {
        fprintf(stderr, "agentc serve: %s\n", err);
        return AC_EXIT_CONFIG;
    }
    sa.cli = hosts_cli_agent(&eo, &af) ? &eo : NULL;
    if (af.overridable && !sa.cli) {
        fprintf(stderr, "agentc serve: --overridable is of the command line's agent, which "
                        "--agents alone does not host (give its engine options or --agent-name)\n");
        ac_cli_agents_free(sa.file);
        return AC_EXIT_USAGE;
    }
    sa.cli_name = af.name ? af.name : "default";
    sa.script_delay_ms = eo.script_delay_ms;
    ac_srv_agents agents;
    char *listen_uri = NULL;
    if (!(rc = serve_listen(&cfg, &listen_uri)) &&
        !(rc = ac_cli_serve_agents_init(&sa, &agents, af.overridable))) {
        cfg.agents = &agents;
        cfg.loop_done = ac_cli_tracer_finish;
        cfg.metrics = ac_cli_metrics(1) ? ac_cli_metrics_text : NULL;
        cfg.metrics_registry = ac_cli_metrics(0);
        /* the command line's agent also answers to its --model name on the front */
        const char *prov = eo.provider ? eo.provider : "openai";
        cfg.model_name = !sa.cli ? NULL : !strcmp(prov, "script") ? "agentc" : eo.model;
        if (sa.cli && !cfg.model_name)
            cfg.model_name = getenv("AGENTC_MODEL");
        rc = serve_run(&cfg);
    }
    ac_cli_serve_agents_free(&sa);
    ac_cli_metrics_free();
    free(listen_uri);
    return rc;
}
