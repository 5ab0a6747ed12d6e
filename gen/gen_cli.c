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

ac_spec *ac_cli_load_spec(const char *path, int *exit_code, int quiet_warnings)
{
    ac_spec *spec = ac_spec_load(path);
    if (!spec) {
        fprintf(stderr, "agentc: cannot read spec '%s': %s\n", path, strerror(errno));
        *exit_code = AC_EXIT_USAGE;
        return NULL;
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

static size_t check_contracts(ac_spec *spec, const char *path, const ac_contract *c, size_t n)
{
    char rel[1024];
    ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    if (!t) {
        fprintf(stderr, "agentc check: out of memory\n");
        return 1;
    }
    contract_loc loc = {spec, t};
    size_t bad = ac_contract_check(t, c, n, NULL, contract_located, &loc);
    ac_spec_tables_free(t);
    return bad;
}

int ac_cli_check(int argc, char **argv, const ac_contract *builtin, size_t n_builtin)
{
    const char *path = NULL;
    int handlers = 0;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: agentc check [--handlers builtin] SPEC\n\n"
                   "Checks a spec and prints every problem as FILE:LINE:COL: error|warning: MSG.\n"
                   "--handlers builtin also checks that this program's built-in handlers can run\n"
                   "it: every param, event and effect argument they need, with its type.\n"
                   "Exit status: 0 no errors (warnings allowed), 1 errors, 2 usage or I/O.\n");
            return AC_EXIT_OK;
        }
        if (strcmp(argv[i], "--handlers") == 0) {
            if (i + 1 >= argc || strcmp(argv[i + 1], "builtin") != 0) {
                fprintf(stderr, "agentc check: --handlers takes 'builtin' (the handlers this "
                                "program has)\n");
                return AC_EXIT_USAGE;
            }
            if (!builtin) {
                fprintf(stderr, "agentc check: this program has no built-in handlers; use "
                                "agentc check --handlers builtin\n");
                return AC_EXIT_USAGE;
            }
            handlers = 1;
            i++;
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
    ac_spec *spec = ac_cli_load_spec(path, &rc, handlers); /* warnings printed below */
    if (!spec)
        return rc;
    if (handlers)
        check_contracts(spec, path, builtin, n_builtin);
    if (handlers)
        ac_spec_print_diags(spec, stderr);
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

int ac_cli_gen(int argc, char **argv)
{
    const char *path = NULL, *outdir = NULL, *relpath = NULL;
    for (int i = 1; i < argc; i++) {
        if (is_help(argv[i])) {
            printf("usage: agentc gen SPEC -o DIR [--spec-path PATH]\n\n"
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
    ac_spec *spec = ac_cli_load_spec(path, &rc, 1);
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

int ac_cli_diagram(int argc, char **argv, ac_cov_loader cov_loader)
{
    const char *path = NULL, *format = "mermaid", *machine = NULL, *outpath = NULL;
    const char *journal = NULL, *relpath = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_help(a)) {
            printf("usage: agentc diagram SPEC [--format dot|mermaid|markdown|overview%s] [--machine NAME]\n"
                   "                      [-o FILE] [--spec-path PATH]%s\n\n"
                   "Draws the spec's machines (default format: mermaid) to stdout or FILE.\n"
                   "  --spec-path PATH   path recorded in the output (default: relative to the\n"
                   "  --format overview  the machines and which state invokes which (Mermaid)\n"
                   "                     repository root, else the file name)\n%s",
                   cov_loader ? "|svg" : "", cov_loader ? " [--journal JOURNAL]" : "",
                   cov_loader ? "  --journal JOURNAL  overlay the path a recorded session took:\n"
                                "                     counts on taken edges, unvisited parts grey\n"
                                "  --format svg       DOT rendered by Graphviz's dot (installed)\n"
                              : "");
            return AC_EXIT_OK;
        }
        const char **slot = NULL;
        if (strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0)
            slot = &format;
        else if (strcmp(a, "--machine") == 0 || strcmp(a, "-m") == 0)
            slot = &machine;
        else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0)
            slot = &outpath;
        else if (strcmp(a, "--journal") == 0 && cov_loader)
            slot = &journal;
        else if (strcmp(a, "--spec-path") == 0)
            slot = &relpath;
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
        if (path) {
            fprintf(stderr, "agentc diagram: one SPEC at a time\n");
            return AC_EXIT_USAGE;
        }
        path = a;
    }
    int svg = strcmp(format, "svg") == 0 && cov_loader;
    if (strcmp(format, "dot") && strcmp(format, "mermaid") && strcmp(format, "markdown") &&
        strcmp(format, "overview") && !svg) {
        fprintf(stderr, "agentc diagram: unknown format '%s' (dot, mermaid, markdown, overview%s)\n", format,
                cov_loader ? ", svg" : "");
        return AC_EXIT_USAGE;
    }
    if (!path) {
        fprintf(stderr, "agentc diagram: missing SPEC (usage: agentc diagram SPEC --format FMT)\n");
        return AC_EXIT_USAGE;
    }
    int rc;
    ac_spec *spec = ac_cli_load_spec(path, &rc, 1);
    if (!spec)
        return rc;
    char rel[PATH_MAX];
    if (relpath)
        snprintf(rel, sizeof rel, "%s", relpath);
    else
        ac_spec_rel_path(path, rel, sizeof rel);
    ac_fsm_tables *t = ac_spec_lower(spec, rel);
    ac_spec_free(spec);
    if (!t) {
        fprintf(stderr, "agentc diagram: out of memory\n");
        return AC_EXIT_USAGE;
    }
    int mi = -1;
    if (machine) {
        for (uint16_t m = 0; m < t->n_machines; m++)
            if (strcmp(t->machines[m].name, machine) == 0)
                mi = m;
        if (mi < 0) {
            fprintf(stderr, "agentc diagram: no machine '%s' in %s\n", machine, path);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE;
        }
    }
    uint32_t *tc = NULL, *sc = NULL;
    ac_diagram_cov cov, *covp = NULL;
    if (journal) {
        tc = calloc((size_t)t->n_transitions + 1, sizeof *tc);
        sc = calloc((size_t)t->n_states + 1, sizeof *sc);
        char err[512];
        if (!tc || !sc || cov_loader(journal, t, tc, sc, err, sizeof err) != 0) {
            fprintf(stderr, "agentc diagram: %s\n", tc && sc ? err : "out of memory");
            free(tc);
            free(sc);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE + 1; /* 3: bad configuration (unreadable journal) */
        }
        cov.transition_count = tc;
        cov.state_count = sc;
        covp = &cov;
    }
    FILE *out = stdout;
    FILE *pipe_out = NULL;
    char tmp[PATH_MAX + 16];
    tmp[0] = 0;
    if (svg) {
        char cmd[PATH_MAX * 2 + 64];
        if (system("command -v dot >/dev/null 2>&1") != 0) {
            fprintf(stderr, "agentc diagram: --format svg needs Graphviz's 'dot' (apt-get install "
                            "graphviz)\n");
            free(tc);
            free(sc);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE + 1;
        }
        if (outpath && strchr(outpath, '\'')) {
            fprintf(stderr, "agentc diagram: output path must not contain a quote\n");
            free(tc);
            free(sc);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE;
        }
        snprintf(cmd, sizeof cmd, "dot -Tsvg%s%s%s", outpath ? " -o '" : "", outpath ? outpath : "",
                 outpath ? "'" : "");
        fflush(stdout);
        pipe_out = popen(cmd, "w");
        if (!pipe_out) {
            fprintf(stderr, "agentc diagram: cannot run dot: %s\n", strerror(errno));
            free(tc);
            free(sc);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE;
        }
        out = pipe_out;
    } else if (outpath) {
        snprintf(tmp, sizeof tmp, "%s.tmp", outpath);
        out = fopen(tmp, "w");
        if (!out) {
            fprintf(stderr, "agentc diagram: cannot write '%s': %s\n", outpath, strerror(errno));
            free(tc);
            free(sc);
            ac_spec_tables_free(t);
            return AC_EXIT_USAGE;
        }
    }
    if (strcmp(format, "dot") == 0 || svg)
        rc = ac_emit_dot(t, mi, covp, out);
    else if (strcmp(format, "mermaid") == 0)
        rc = ac_emit_mermaid(t, mi, covp, out);
    else if (strcmp(format, "overview") == 0)
        rc = ac_emit_overview(t, out);
    else
        rc = ac_emit_markdown(t, mi, out);
    if (pipe_out) {
        int st = pclose(pipe_out);
        if (st != 0)
            rc = -1;
    } else if (outpath) {
        if (fclose(out) != 0)
            rc = -1;
        if (rc == 0 && rename(tmp, outpath) != 0)
            rc = -1;
        if (rc != 0)
            remove(tmp);
    } else if (fflush(stdout) != 0) {
        rc = -1;
    }
    free(tc);
    free(sc);
    ac_spec_tables_free(t);
    if (rc != 0) {
        fprintf(stderr, "agentc diagram: writing the diagram failed\n");
        return AC_EXIT_USAGE;
    }
    return AC_EXIT_OK;
}
