/*
 * gen_cli.c - `agentc check | gen | diagram`: no network, no handlers.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen_cli.h"

static int is_help(const char *a)
{
    return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

ac_spec *ac_cli_load_spec(const char *path, int *exit_code, int quiet_warnings,
                          const ac_cli_handlers *h)
{
    ac_spec *spec = ac_spec_load(path);
    if (!spec) {
        fprintf(stderr, "agentc: cannot read spec '%s': %s\n", path, strerror(errno));
        *exit_code = AC_EXIT_USAGE;
        return NULL;
    }
    if (h) {
        spec->contracts = h->contracts;
        spec->n_contracts = h->n_contracts;
    }
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors || !quiet_warnings)
        ac_spec_print_diags(spec, stderr);
    if (spec->n_errors) {
        fprintf(stderr, "%s: %zu error%s, %zu warning%s\n", path, spec->n_errors,
                spec->n_errors == 1 ? "" : "s", spec->n_warnings, spec->n_warnings == 1 ? "" : "s");
        ac_spec_free(spec);
        *exit_code = AC_EXIT_ERRORS;
        return NULL;
    }
    *exit_code = AC_EXIT_OK;
    return spec;
}

void ac_spec_rel_path(const char *path, char *out, size_t cap)
{
    char abs[PATH_MAX];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!realpath(path, abs)) {
        snprintf(out, cap, "%s", base);
        return;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", abs);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        *slash = 0;
        char probe[PATH_MAX + 32];
        struct stat st;
        snprintf(probe, sizeof probe, "%s/.git", dir[0] ? dir : "");
        int found = stat(probe, &st) == 0;
        snprintf(probe, sizeof probe, "%s/.agentc-root", dir[0] ? dir : "");
        found |= stat(probe, &st) == 0;
        if (found) {
            snprintf(out, cap, "%s", abs + strlen(dir) + 1);
            return;
        }
        if (!dir[0])
            break;
    }
    snprintf(out, cap, "%s", base);
}

/* ---- --handlers builtin: the spec against the built-in handlers' contracts ---- */

typedef struct contract_loc {
    ac_spec *spec;
    const ac_fsm_tables *t;
} contract_loc;

static const ac_state_decl *find_state_decl(const ac_spec *spec, const char *machine,
                                            const char *state)
{
    for (size_t m = 0; m < spec->n_machines; m++) {
        const ac_machine_decl *md = &spec->machines[m];
        if (strcmp(md->name.s, machine) != 0)
            continue;
        for (size_t i = 0; i < md->n_states; i++)
            if (strcmp(md->states[i].name.s, state) == 0)
                return &md->states[i];
    }
    return NULL;
}

/* Places the problem at what it concerns: the argument or the effect in the state's body, else
 * the handler's declaration. */
static void contract_located(void *ud, const ac_contract_problem *p)
{
    contract_loc *c = ud;
    int line = 1, col = 1;
    const ac_names *decls = &c->spec->handlers[p->kind];
    for (size_t i = 0; i < decls->n; i++)
        if (strcmp(decls->v[i].s, p->handler) == 0) {
            line = decls->v[i].line;
            col = decls->v[i].col;
        }
    if (p->state != AC_FSM_NONE) {
        const ac_fsm_state *st = &c->t->states[p->state];
        const ac_state_decl *sd =
            find_state_decl(c->spec, c->t->machines[st->machine].name, st->name);
        for (size_t i = 0; sd && i < sd->n_effects; i++) {
            const ac_effect_decl *ed = &sd->effects[i];
            if (strcmp(ed->name.s, p->handler) != 0)
                continue;
            const ac_name *at =
                p->arg >= 0 && (size_t)p->arg < ed->args.n ? &ed->args.v[p->arg] : &ed->name;
            line = at->line;
            col = at->col;
            break;
        }
    }
    ac_spec_diag(c->spec, 1, line, col, "%s (the built-in handlers could not run it)", p->msg);
}

/* Every handler the spec declares is one the program has, or one the spec defines itself (a
 * comparison, a built-in action with arguments, apply_decisions, a timer): what ac_engine_new
 * binds. Reported at the declaration. */
static void check_bound(ac_spec *spec, const ac_fsm_tables *t, const ac_cli_handlers *h)
{
    for (int k = 0; k < AC_HK_COUNT && h->has; k++) {
        uint16_t n = k == HK_GUARD ? t->n_guards : k == HK_ACTION ? t->n_actions : t->n_effects;
        const char *const *names = k == HK_GUARD    ? t->guard_names
                                   : k == HK_ACTION ? t->action_names
                                                    : t->effect_names;
        for (uint16_t i = 0; i < n; i++) {
            if (h->has(k, names[i]))
                continue;
            const ac_names *decls = &spec->handlers[k];
            for (size_t d = 0; d < decls->n; d++)
                if (strcmp(decls->v[d].s, names[i]) == 0)
                    ac_spec_diag(spec, 1, decls->v[d].line, decls->v[d].col,
                                 "%s %s: this program has no handler of that name, so it "
                                 "cannot run the spec (a spec meant for a program with its own "
                                 "handlers is checked with --handlers none)",
                                 ac_handler_kind_name(k), names[i]);
        }
    }
}

static size_t check_contracts(ac_spec *spec, const char *path, const ac_cli_handlers *h)
{
    char rel[1024];
    ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    if (!t) {
        fprintf(stderr, "agentc check: out of memory\n");
        return 1;
    }
    contract_loc loc = {spec, t};
    size_t bad = ac_contract_check(t, h->contracts, h->n_contracts, NULL, contract_located, &loc);
    check_bound(spec, t, h);
    ac_spec_tables_free(t);
    return bad;
}

static void check_usage(const ac_cli_handlers *builtin)
{
    printf("usage: agentc check [--handlers builtin|none] SPEC\n\n"
           "Checks a spec and prints every problem as FILE:LINE:COL: error|warning: MSG.\n");
    if (builtin)
        printf(
            "By default (--handlers builtin) it also checks that this program's built-in\n"
            "handlers can run it: every handler it names exists, every param, event and\n"
            "effect argument they need is there with its type, what an effect needs has run\n"
            "on every way in, and the events their effects post count in the proof that\n"
            "every state can be left. A spec it passes is one `agentc run --spec` runs.\n"
            "--handlers none checks a spec meant for a program with its own handlers: its\n"
            "effects post what their `posts` declare.\n"
            "agentc check --tools FILE [--start] checks a tool file instead (docs/toolkits.md):\n"
            "its references, every toolkit tool reachable; --start starts its MCP servers\n"
            "and names those that cannot start.\n");
    else
        printf("This program has no handlers (--handlers none): effects post what their\n"
               "`posts` declare.\n");
    printf("Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage or I/O.\n");
}

/* --handlers WHICH: 1 builtin, 0 none, -1 after printing why not. */
static int handlers_arg(const char *which, const ac_cli_handlers *builtin)
{
    if (which && strcmp(which, "none") == 0)
        return 0;
    if (!which || strcmp(which, "builtin") != 0) {
        fprintf(stderr, "agentc check: --handlers takes 'builtin' (the handlers this program "
                        "has) or 'none'\n");
        return -1;
    }
    if (!builtin) {
        fprintf(stderr, "agentc check: this program has no built-in handlers (the agentc "
                        "program has them)\n");
        return -1;
    }
    return 1;
}

int ac_cli_check(int argc, char **argv, const ac_cli_handlers *builtin)
{
    const char *path = NULL;
    int handlers = builtin != NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            check_usage(builtin);
            return AC_EXIT_OK;
        }
        if (strcmp(argv[i], "--handlers") == 0) {
            handlers = handlers_arg(i + 1 < argc ? argv[++i] : NULL, builtin);
            if (handlers < 0)
                return AC_EXIT_USAGE;
            continue;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "agentc check: unknown option '%s' (see agentc check --help)\n",
                    argv[i]);
            return AC_EXIT_USAGE;
        }
        if (path) {
            fprintf(stderr, "agentc check: one SPEC at a time (see agentc check --help)\n");
            return AC_EXIT_USAGE;
        }
        path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "agentc check: missing SPEC (usage: agentc check SPEC)\n");
        return AC_EXIT_USAGE;
    }
    int rc;
    /* warnings printed below */
    ac_spec *spec = ac_cli_load_spec(path, &rc, handlers, handlers ? builtin : NULL);
    if (!spec)
        return rc;
    if (handlers) {
        check_contracts(spec, path, builtin);
        ac_spec_print_diags(spec, stderr);
    }
    if (spec->n_errors) {
        fprintf(stderr, "%s: %zu error%s (for the built-in handlers)\n", path, spec->n_errors,
                spec->n_errors == 1 ? "" : "s");
        ac_spec_free(spec);
        return AC_EXIT_ERRORS;
    }
    size_t ns = 0;
    for (size_t m = 0; m < spec->n_machines; m++)
        ns += spec->machines[m].n_states;
    fprintf(stderr, "%s: ok (%zu machine%s, %zu states, %zu warning%s)\n", path, spec->n_machines,
            spec->n_machines == 1 ? "" : "s", ns, spec->n_warnings,
            spec->n_warnings == 1 ? "" : "s");
    ac_spec_free(spec);
    return AC_EXIT_OK;
}

static void base_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    snprintf(out, cap, "%s", b);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = 0;
}

/* The base name prefixes every generated identifier (agent -> AGENT_S_...,
 * agent_fsm) and names the header in an #include. */
static int c_name_ok(const char *name)
{
    if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') ||
          name[0] == '_'))
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return 1;
}

/* Writes one output to a new temporary file beside path (DIR/.NAME.XXXXXX, mode as a
 * plain fopen would give). 0 with its name in tmp, else -1 with no file left. */
static int write_temp(const char *path, int (*emit)(const ac_fsm_tables *, const char *, FILE *),
                      const ac_fsm_tables *t, const char *name, char *tmp, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    snprintf(tmp, cap, "%.*s.%s.XXXXXX", (int)dirlen, path, slash ? slash + 1 : path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "agentc gen: cannot write '%s': %s\n", tmp, strerror(errno));
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, 0666 & ~um);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "agentc gen: cannot write '%s': %s\n", tmp, strerror(errno));
        close(fd);
        remove(tmp);
        return -1;
    }
    int rc = emit(t, name, f);
    int werr = ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !werr)
        werr = errno;
    if (rc != 0 || werr) {
        fprintf(stderr, "agentc gen: error writing '%s'%s%s\n", tmp, werr ? ": " : "",
                werr ? strerror(werr) : "");
        remove(tmp);
        return -1;
    }
    return 0;
}

/* Writes the header and the tables as a pair: both go to temporary files in the
 * output folder, and only when both are complete are they renamed over the old
 * pair (the .c first; if the .h then cannot be renamed, the old .c is put back),
 * so a failed run never leaves a new header beside old tables. */
static int write_pair(const char *hpath, const char *cpath, const ac_fsm_tables *t,
                      const char *name)
{
    char htmp[PATH_MAX + 320], ctmp[PATH_MAX + 320], cold[PATH_MAX + 320];
    if (write_temp(hpath, ac_emit_c_header, t, name, htmp, sizeof htmp) < 0)
        return -1;
    if (write_temp(cpath, ac_emit_c_source, t, name, ctmp, sizeof ctmp) < 0) {
        remove(htmp);
        return -1;
    }
    /* a hard link keeps the old tables until the header is in place */
    snprintf(cold, sizeof cold, "%s.old.XXXXXX", ctmp);
    int have_old = 0;
    int fd = mkstemp(cold);
    if (fd >= 0) {
        close(fd);
        remove(cold);
        have_old = link(cpath, cold) == 0;
    }
    if (rename(ctmp, cpath) != 0) {
        fprintf(stderr, "agentc gen: cannot rename to '%s': %s\n", cpath, strerror(errno));
        remove(ctmp);
        remove(htmp);
        if (have_old)
            remove(cold);
        return -1;
    }
    if (rename(htmp, hpath) != 0) {
        fprintf(stderr, "agentc gen: cannot rename to '%s': %s\n", hpath, strerror(errno));
        remove(htmp);
        if (have_old)
            rename(cold, cpath); /* the old pair again */
        else
            remove(cpath); /* no old tables: none rather than mismatched ones */
        return -1;
    }
    if (have_old)
        remove(cold);
    return 0;
}

int ac_cli_gen(int argc, char **argv, const ac_cli_handlers *handlers)
{
    const char *path = NULL, *outdir = NULL, *relpath = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: agentc gen SPEC -o|--output DIR [--spec-path PATH]\n\n"
                   "Writes DIR/<name>_fsm.h and DIR/<name>_fsm.c, <name> being the spec file's\n"
                   "base name. Writes nothing when the spec has errors.\n"
                   "  --spec-path PATH  path recorded in the output (default: relative to the\n"
                   "                    repository root, else the file name)\n");
            return AC_EXIT_OK;
        }
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc) {
                fprintf(stderr, "agentc gen: -o needs a directory\n");
                return AC_EXIT_USAGE;
            }
            outdir = argv[i];
        } else if (strcmp(argv[i], "--spec-path") == 0) {
            if (++i >= argc) {
                fprintf(stderr, "agentc gen: --spec-path needs a value\n");
                return AC_EXIT_USAGE;
            }
            relpath = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "agentc gen: unknown option '%s' (see agentc gen --help)\n", argv[i]);
            return AC_EXIT_USAGE;
        } else if (path) {
            fprintf(stderr, "agentc gen: one SPEC at a time\n");
            return AC_EXIT_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path || !outdir) {
        fprintf(stderr, "agentc gen: usage: agentc gen SPEC -o DIR\n");
        return AC_EXIT_USAGE;
    }
    struct stat st;
    if (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "agentc gen: output directory '%s' does not exist\n", outdir);
        return AC_EXIT_USAGE;
    }
    char rel[PATH_MAX], name[256], hpath[PATH_MAX + 300], cpath[PATH_MAX + 300];
    base_name(path, name, sizeof name);
    if (!c_name_ok(name)) {
        fprintf(stderr,
                "agentc gen: the spec file name '%s' cannot name C identifiers (use letters, "
                "digits, '_', '-' and '.', starting with a letter or '_')\n",
                name);
        return AC_EXIT_USAGE;
    }
    int rc;
    ac_spec *spec = ac_cli_load_spec(path, &rc, 1, handlers);
    if (!spec)
        return rc;
    if (relpath)
        snprintf(rel, sizeof rel, "%s", relpath);
    else
        ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    if (!t) {
        fprintf(stderr, "agentc gen: out of memory\n");
        ac_spec_free(spec);
        return AC_EXIT_USAGE;
    }
    snprintf(hpath, sizeof hpath, "%s/%s_fsm.h", outdir, name);
    snprintf(cpath, sizeof cpath, "%s/%s_fsm.c", outdir, name);
    rc = AC_EXIT_OK;
    if (write_pair(hpath, cpath, t, name) < 0)
        rc = AC_EXIT_USAGE;
    ac_spec_tables_free(t);
    ac_spec_free(spec);
    return rc;
}

typedef struct diag_opts {
    const char *path, *format, *machine, *outpath, *relpath;
    const char **journals; /* each --journal, in order (argc entries) */
    size_t n_journals;
    ac_cov_loader cov_loader;
    const ac_cli_handlers *handlers; /* NULL: none */
    int svg;
} diag_opts;

static void diagram_usage(ac_cov_loader cov_loader)
{
    printf("usage: agentc diagram SPEC [--format dot|mermaid|markdown|overview%s] "
           "[--machine NAME]\n"
           "                      [-o FILE] [--spec-path PATH]%s\n\n"
           "Draws the spec's machines (default format: mermaid) to stdout or FILE.\n"
           "  -f, --format F     the format; -m, --machine NAME: that machine alone;\n"
           "  -o, --output FILE  write there\n"
           "  --spec-path PATH   path recorded in the output (default: relative to the\n"
           "                     repository root, else the file name)\n"
           "  --format overview  the machines and which state invokes which (Mermaid)\n%s",
           cov_loader ? "|svg" : "", cov_loader ? " [--journal JOURNAL]" : "",
           cov_loader ? "  --journal JOURNAL  overlay the path a recorded session took:\n"
                        "                     counts on taken edges, unvisited parts grey\n"
                        "                     (edges dashed); given again, the sessions' sums\n"
                        "  --format svg       DOT rendered by Graphviz's dot (installed)\n"
                        "agentc diagram --tools FILE draws a tool file's toolkit states instead\n"
                        "(DOT; docs/toolkits.md)\n"
                      : "");
}

/* 0, -1 after --help, or an exit status. */
static int diagram_parse(int argc, char **argv, diag_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            diagram_usage(o->cov_loader);
            return -1;
        }
        const char **slot = NULL;
        if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0)
            slot = &o->format;
        else if (strcmp(a, "--machine") == 0 || strcmp(a, "-m") == 0)
            slot = &o->machine;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
            slot = &o->outpath;
        else if (strcmp(a, "--journal") == 0 && o->cov_loader)
            slot = &o->journals[o->n_journals++];
        else if (strcmp(a, "--spec-path") == 0)
            slot = &o->relpath;
        if (slot) {
            if (++i >= argc) {
                fprintf(stderr, "agentc diagram: %s needs a value\n", a);
                return AC_EXIT_USAGE;
            }
            *slot = argv[i];
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "agentc diagram: unknown option '%s' (see agentc diagram --help)\n", a);
            return AC_EXIT_USAGE;
        }
        if (o->path) {
            fprintf(stderr, "agentc diagram: one SPEC at a time\n");
            return AC_EXIT_USAGE;
        }
        o->path = a;
    }
    const char *f = o->format;
    o->svg = strcmp(f, "svg") == 0 && o->cov_loader;
    if (strcmp(f, "dot") && strcmp(f, "mermaid") && strcmp(f, "markdown") &&
        strcmp(f, "overview") && !o->svg) {
        fprintf(stderr,
                "agentc diagram: unknown format '%s' (dot, mermaid, markdown, overview%s)\n", f,
                o->cov_loader ? ", svg" : "");
        return AC_EXIT_USAGE;
    }
    if (!o->path) {
        fprintf(stderr, "agentc diagram: missing SPEC (usage: agentc diagram SPEC --format FMT)\n");
        return AC_EXIT_USAGE;
    }
    return 0;
}

/* What is drawn: the tables, the machine (-1: all) and the journal's coverage. */
typedef struct diag_input {
    ac_fsm_tables *t;
    int mi;
    uint32_t *tc, *sc;
    ac_diagram_cov cov;
} diag_input;

static void diagram_input_free(diag_input *in)
{
    free(in->tc);
    free(in->sc);
    ac_spec_tables_free(in->t);
}

/* 0, or an exit status. */
static int diagram_load(const diag_opts *o, diag_input *in)
{
    int rc;
    ac_spec *spec = ac_cli_load_spec(o->path, &rc, 1, o->handlers);
    if (!spec)
        return rc;
    char rel[PATH_MAX];
    if (o->relpath)
        snprintf(rel, sizeof rel, "%s", o->relpath);
    else
        ac_spec_rel_path(o->path, rel, sizeof rel);
    in->t = ac_spec_lower(spec, rel);
    ac_spec_free(spec);
    if (!in->t) {
        fprintf(stderr, "agentc diagram: out of memory\n");
        return AC_EXIT_USAGE;
    }
    const ac_fsm_tables *t = in->t;
    in->mi = -1;
    if (o->machine) {
        for (uint16_t m = 0; m < t->n_machines; m++)
            if (strcmp(t->machines[m].name, o->machine) == 0)
                in->mi = m;
        if (in->mi < 0) {
            fprintf(stderr, "agentc diagram: no machine '%s' in %s\n", o->machine, o->path);
            return AC_EXIT_USAGE;
        }
    }
    if (!o->n_journals)
        return 0;
    in->tc = calloc((size_t)t->n_transitions + 1, sizeof *in->tc);
    in->sc = calloc((size_t)t->n_states + 1, sizeof *in->sc);
    char err[512];
    for (size_t i = 0; i < o->n_journals; i++)
        if (!in->tc || !in->sc ||
            o->cov_loader(o->journals[i], t, in->tc, in->sc, err, sizeof err) != 0) {
            fprintf(stderr, "agentc diagram: %s\n", in->tc && in->sc ? err : "out of memory");
            return AC_EXIT_USAGE + 1; /* 3: bad configuration (unreadable journal) */
        }
    in->cov.transition_count = in->tc;
    in->cov.state_count = in->sc;
    return 0;
}

/* Where the diagram goes: stdout, a temporary file renamed at the end, or a
 * pipe to Graphviz's dot. */
typedef struct diag_out {
    FILE *f, *pipe;
    char tmp[PATH_MAX + 16];
} diag_out;

/* 0, or an exit status. */
static int diagram_open(const diag_opts *o, diag_out *d)
{
    d->f = stdout;
    d->pipe = NULL;
    d->tmp[0] = 0;
    if (o->svg) {
        char cmd[PATH_MAX * 2 + 64];
        if (system("command -v dot >/dev/null 2>&1") != 0) {
            fprintf(stderr, "agentc diagram: --format svg needs Graphviz's 'dot' (apt-get install "
                            "graphviz)\n");
            return AC_EXIT_USAGE + 1;
        }
        if (o->outpath && strchr(o->outpath, '\'')) {
            fprintf(stderr, "agentc diagram: output path must not contain a quote\n");
            return AC_EXIT_USAGE;
        }
        snprintf(cmd, sizeof cmd, "dot -Tsvg%s%s%s", o->outpath ? " -o '" : "",
                 o->outpath ? o->outpath : "", o->outpath ? "'" : "");
        fflush(stdout);
        if (!(d->pipe = popen(cmd, "w"))) {
            fprintf(stderr, "agentc diagram: cannot run dot: %s\n", strerror(errno));
            return AC_EXIT_USAGE;
        }
        d->f = d->pipe;
    } else if (o->outpath) {
        snprintf(d->tmp, sizeof d->tmp, "%s.tmp", o->outpath);
        if (!(d->f = fopen(d->tmp, "w"))) {
            fprintf(stderr, "agentc diagram: cannot write '%s': %s\n", o->outpath, strerror(errno));
            return AC_EXIT_USAGE;
        }
    }
    return 0;
}

/* Ends the output; rc -1 if anything failed (the temporary file is removed). */
static int diagram_close(const diag_opts *o, diag_out *d, int rc)
{
    if (d->pipe) {
        if (pclose(d->pipe) != 0)
            rc = -1;
    } else if (o->outpath) {
        if (fclose(d->f) != 0)
            rc = -1;
        if (rc == 0 && rename(d->tmp, o->outpath) != 0)
            rc = -1;
        if (rc != 0)
            remove(d->tmp);
    } else if (fflush(stdout) != 0) {
        rc = -1;
    }
    return rc;
}

int ac_cli_diagram(int argc, char **argv, ac_cov_loader cov_loader, const ac_cli_handlers *handlers)
{
    diag_opts o = {.format = "mermaid", .cov_loader = cov_loader, .handlers = handlers};
    o.journals = calloc((size_t)argc + 1, sizeof *o.journals);
    int rc = o.journals ? diagram_parse(argc, argv, &o) : AC_EXIT_USAGE;
    if (rc) {
        free(o.journals);
        return rc < 0 ? AC_EXIT_OK : rc;
    }
    diag_input in;
    memset(&in, 0, sizeof in);
    diag_out d;
    if ((rc = diagram_load(&o, &in)) || (rc = diagram_open(&o, &d))) {
        diagram_input_free(&in);
        free(o.journals);
        return rc;
    }
    const ac_diagram_cov *covp = o.n_journals ? &in.cov : NULL;
    if (strcmp(o.format, "dot") == 0 || o.svg)
        rc = ac_emit_dot(in.t, in.mi, covp, d.f);
    else if (strcmp(o.format, "mermaid") == 0)
        rc = ac_emit_mermaid(in.t, in.mi, covp, d.f);
    else if (strcmp(o.format, "overview") == 0)
        rc = ac_emit_overview(in.t, d.f);
    else
        rc = ac_emit_markdown(in.t, in.mi, d.f);
    rc = diagram_close(&o, &d, rc);
    diagram_input_free(&in);
    free(o.journals);
    if (rc != 0) {
        fprintf(stderr, "agentc diagram: writing the diagram failed\n");
        return AC_EXIT_USAGE;
    }
    return AC_EXIT_OK;
}
