/*
 * test_spec_robust.c - the spec front end on broken input, in process.
 *
 * Every truncation of spec/agent.fsm and a few thousand byte-flipped
 * variants go through parse -> check -> lower -> every emitter. Whatever
 * the input, the result is either "no errors" (and then the tables and all
 * outputs are produced) or at least one located diagnostic; never a crash
 * (run under ASan/UBSan in the sanitizer build, which also finds leaks).
 * Lowered tables keep every list and guard program within n_lists and
 * n_guard_code. Also: the 16-bit table limits and the C-name clash rule on
 * specs built in memory, and the diagnostics cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spec.h"

/* The count-prefixed list at `off` lies within the first n_lists entries. */
static void assert_list_in_bounds(const ac_fsm_tables *t, uint16_t off)
{
    assert_true(off < t->n_lists);
    assert_true((size_t)off + t->lists[off] < t->n_lists);
}

/* Every offset the tables hold points into `lists` or `guard_code` and
 * stays there: counts fit and each guard program ends in AC_G_END. */
static void assert_tables_in_bounds(const ac_fsm_tables *t)
{
    assert_true(t->n_lists >= 1);
    assert_int_equal(t->lists[0], 0);
    for (uint16_t i = 0; i < t->n_states; i++) {
        assert_list_in_bounds(t, t->states[i].enter);
        assert_list_in_bounds(t, t->states[i].exit);
        assert_list_in_bounds(t, t->states[i].effects);
    }
    for (uint16_t i = 0; i < t->n_effect_uses; i++)
        assert_list_in_bounds(t, t->effect_uses[i].args);
    for (uint16_t i = 0; i < t->n_transitions; i++) {
        const ac_fsm_transition *tr = &t->transitions[i];
        assert_list_in_bounds(t, tr->actions);
        if (tr->guard == AC_FSM_NONE)
            continue;
        uint16_t g = tr->guard;
        while (g < t->n_guard_code && t->guard_code[g] != AC_G_END)
            g++;
        assert_true(g < t->n_guard_code);
    }
}

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void buf_add(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_add(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)n + 1)
            cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    buf b = {0};
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&b, "%.*s", (int)r, chunk);
    fclose(f);
    *len = b.n;
    return b.p;
}

static size_t count_lines(const char *s, size_t len)
{
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += s[i] == '\n';
    return n;
}

/* Runs the whole pipeline. Returns 1 when the spec was accepted. */
static int run_pipeline(const char *src, size_t len)
{
    ac_spec *spec = ac_spec_parse("robust.fsm", src, len);
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    size_t lines = count_lines(src, len);
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    ac_spec_print_diags(spec, null);
    int accepted = spec->n_errors == 0;
    if (!accepted) {
        /* a failure always says where and why */
        assert_true(spec->n_diags > 0);
        for (size_t i = 0; i < spec->n_diags; i++) {
            const ac_diag *d = &spec->diags[i];
            assert_true(d->line >= 1 && (size_t)d->line <= lines);
            assert_true(d->col >= 1);
            assert_true(d->msg[0] != 0);
        }
        assert_null(spec->res);
    } else {
        assert_non_null(spec->res);
        ac_fsm_tables *t = ac_spec_lower(spec, "robust.fsm");
        assert_non_null(t);
        assert_tables_in_bounds(t);
        assert_int_equal(ac_emit_c_header(t, "robust", null), 0);
        assert_int_equal(ac_emit_c_source(t, "robust", null), 0);
        assert_int_equal(ac_emit_dot(t, -1, NULL, null), 0);
        assert_int_equal(ac_emit_mermaid(t, -1, NULL, null), 0);
        assert_int_equal(ac_emit_markdown(t, -1, null), 0);
        for (uint16_t m = 0; m < t->n_machines; m++) {
            assert_int_equal(ac_emit_dot(t, m, NULL, null), 0);
            assert_int_equal(ac_emit_mermaid(t, m, NULL, null), 0);
        }
        ac_spec_tables_free(t);
    }
    fclose(null);
    ac_spec_free(spec);
    return accepted;
}

static void test_every_truncation(void **state)
{
    (void)state;
    size_t len;
    char *src = read_file("spec/agent.fsm", &len);
    size_t accepted = 0, rejected = 0;
    for (size_t n = 0; n <= len; n++) {
        if (run_pipeline(src, n))
            accepted++;
        else
            rejected++;
    }
    /* the whole file is valid; most prefixes are not */
    assert_true(run_pipeline(src, len));
    assert_true(rejected > len / 2);
    print_message("truncations: %zu accepted, %zu rejected\n", accepted, rejected);
    free(src);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_byte_flips(void **state)
{
    (void)state;
    size_t len;
    char *src = read_file("spec/agent.fsm", &len);
    char *mut = malloc(len);
    assert_non_null(mut);
    /* bytes that matter to the grammar, plus arbitrary ones */
    static const char interesting[] = "{}[]()!&|,=/*->#\"\\\n .0123456789azAZ_\0\x80\xff";
    size_t accepted = 0;
    for (int round = 0; round < 2000; round++) {
        memcpy(mut, src, len);
        int flips = 1 + (int)(rng() % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rng() % len);
            uint64_t how = rng();
            if (how % 3 == 0)
                mut[at] = (char)(how >> 8);
            else
                mut[at] = interesting[(how >> 8) % (sizeof interesting - 1)];
        }
        accepted += (size_t)run_pipeline(mut, len);
    }
    print_message("byte flips: %zu of 2000 still valid\n", accepted);
    free(mut);
    free(src);
}

static int has_diag(const ac_spec *spec, const char *needle)
{
    for (size_t i = 0; i < spec->n_diags; i++)
        if (strstr(spec->diags[i].msg, needle))
            return 1;
    return 0;
}

static ac_spec *check_text(const char *src)
{
    ac_spec *spec = ac_spec_parse("mem.fsm", src, strlen(src));
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    return spec;
}

/* Guard indexes have 14 bits in the guard programs. */
static void test_too_many_guards(void **state)
{
    (void)state;
    buf b = {0};
    buf_add(&b, "outside event e\nmachine m {\n initial A\n terminal Z\n");
    size_t n = (size_t)AC_G_ARGMASK + 2;
    for (size_t i = 0; i < n; i++)
        buf_add(&b, " A -> Z on e [g%zu]\n", i);
    buf_add(&b, " A -> Z on e\n}\n");
    for (size_t i = 0; i < n; i++)
        buf_add(&b, "guard g%zu\n", i);
    ac_spec *spec = check_text(b.p);
    assert_true(spec->n_errors > 0);
    assert_true(has_diag(spec, "spec too large"));
    assert_true(has_diag(spec, "guards"));
    ac_spec_free(spec);

    /* one fewer fits */
    b.n = 0;
    buf_add(&b, "outside event e\nmachine m {\n initial A\n terminal Z\n");
    for (size_t i = 0; i < n - 1; i++)
        buf_add(&b, " A -> Z on e [g%zu]\n", i);
    buf_add(&b, " A -> Z on e\n}\n");
    for (size_t i = 0; i < n - 1; i++)
        buf_add(&b, "guard g%zu\n", i);
    spec = check_text(b.p);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "mem.fsm");
    assert_non_null(t);
    assert_tables_in_bounds(t);
    assert_int_equal(t->n_guards, n - 1);
    /* the last guard keeps its index: no overflow into the opcode bits */
    const ac_fsm_transition *last = &t->transitions[t->n_transitions - 2];
    assert_int_equal(t->guard_code[last->guard], AC_G_PRED | (uint16_t)(n - 2));
    ac_spec_tables_free(t);
    ac_spec_free(spec);
    free(b.p);
}

/* A state with more than 65534 states is refused before lowering. */
static void test_too_many_states(void **state)
{
    (void)state;
    buf b = {0};
    buf_add(&b, "machine m {\n initial S0\n terminal Z\n");
    for (size_t i = 0; i < AC_FSM_NONE; i++)
        buf_add(&b, " S%zu -> Z\n state S%zu\n", i, i);
    buf_add(&b, "}\n");
    ac_spec *spec = check_text(b.p);
    assert_true(spec->n_errors > 0);
    assert_true(has_diag(spec, "spec too large"));
    assert_true(has_diag(spec, "states"));
    ac_spec_free(spec);
    free(b.p);
}

/* One action list longer than the old fixed 256-entry buffer is kept whole. */
static void test_long_lists(void **state)
{
    (void)state;
    buf b = {0};
    buf_add(&b, "machine m {\n initial A\n terminal Z\n state A { enter ");
    for (int i = 0; i < 300; i++)
        buf_add(&b, "%sa%d", i ? ", " : "", i);
    buf_add(&b, " }\n A -> Z / ");
    for (int i = 0; i < 300; i++)
        buf_add(&b, "%sa%d", i ? ", " : "", 299 - i);
    buf_add(&b, "\n}\naction ");
    for (int i = 0; i < 300; i++)
        buf_add(&b, "%sa%d", i ? ", " : "", i);
    buf_add(&b, "\n");
    ac_spec *spec = check_text(b.p);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, "mem.fsm");
    assert_non_null(t);
    assert_tables_in_bounds(t);
    const ac_fsm_state *a = &t->states[t->machines[0].initial];
    assert_int_equal(t->lists[a->enter], 300);
    assert_int_equal(t->lists[a->enter + 300], 299);
    const ac_fsm_transition *tr = &t->transitions[a->first_transition];
    assert_int_equal(t->lists[tr->actions], 300);
    assert_int_equal(t->lists[tr->actions + 1], 299);
    assert_int_equal(t->lists[tr->actions + 300], 0);
    ac_spec_tables_free(t);
    ac_spec_free(spec);
    free(b.p);
}

/* The diagnostics list stops at AC_SPEC_MAX_ERRORS errors but counts all. */
static void test_error_cap(void **state)
{
    (void)state;
    buf b = {0};
    buf_add(&b, "machine m {\n initial A\n terminal Z\n A -> Z\n");
    for (int i = 0; i < 120; i++)
        buf_add(&b, " A on nope%d\n", i);
    buf_add(&b, "}\n");
    ac_spec *spec = check_text(b.p);
    assert_int_equal(spec->n_errors, 120);
    assert_true(spec->too_many);
    size_t errors = 0;
    for (size_t i = 0; i < spec->n_diags; i++)
        errors += (size_t)spec->diags[i].error;
    assert_int_equal(errors, AC_SPEC_MAX_ERRORS);
    ac_spec_free(spec);
    free(b.p);
}

/* Syntax errors: one per broken line, and the parser goes on. */
static void test_recovery_goes_on(void **state)
{
    (void)state;
    ac_spec *spec = check_text("event e\n"
                               "machine m {\n"
                               "  initial A\n"
                               "  terminal Z\n"
                               "  A -> on e\n"
                               "  A -> Z on e [x &&]\n"
                               "  A => Z\n"
                               "  state { }\n"
                               "  A -> Z on e\n"
                               "}\n"
                               "machine n { initial Q terminal R Q -> R }\n");
    assert_true(spec->n_errors >= 4);
    int seen[12] = {0};
    for (size_t i = 0; i < spec->n_diags; i++)
        if (spec->diags[i].line < 12)
            seen[spec->diags[i].line] = 1;
    assert_true(seen[5] && seen[6] && seen[7] && seen[8]);
    assert_false(seen[9] || seen[10] || seen[11]);
    /* the second machine was parsed after the errors in the first */
    assert_int_equal(spec->n_machines, 2);
    ac_spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_truncation), cmocka_unit_test(test_byte_flips),
        cmocka_unit_test(test_too_many_guards),  cmocka_unit_test(test_too_many_states),
        cmocka_unit_test(test_long_lists),       cmocka_unit_test(test_error_cap),
        cmocka_unit_test(test_recovery_goes_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
