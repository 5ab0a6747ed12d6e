/*
 * test_dispatch_diff.c - the dispatcher's plan and shortcuts change nothing.
 *
 * Every spec of the tree (the built-in one, the valid test specs, the
 * golden specs, the embedding example's) is driven with random events and
 * guard results through the reference dispatcher (tests/fsm/ref_dispatch.c:
 * the rules applied plainly, nothing precomputed) and through the real one
 * with the plan's dense index or a row scan, traced and untraced (the
 * one-call and straight paths). All five must make the same handler calls
 * in the same order, return the same results and end in the same states.
 * The spec files come as arguments (paths relative to the source tree).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_fsm.h"
#include "diff_driver.h"
#include "fsm/plan.h"
#include "spec.h"

static int n_files;
static char **files;

static void drive(const ac_fsm_tables *t, const char *name, int seeds, int steps)
{
    diff_stats st = {0, 0};
    char msg[256];
    for (int seed = 1; seed <= seeds; seed++) {
        int rc = diff_run(t, (uint64_t)seed, steps, &st, msg, sizeof msg);
        if (rc == -1)
            fail_msg("%s: %s", name, msg);
        if (rc == 0)
            fail_msg("%s, seed %d: %s", name, seed, msg);
    }
    /* the runs did something: several handler calls per event on average,
     * and the machine ended and started again along the way */
    printf("%s: %lu handler calls, %lu restarts\n", name, st.calls, st.restarts);
    assert_true(st.calls > (unsigned long)seeds * (unsigned long)steps);
}

static void test_builtin_spec(void **state)
{
    (void)state;
    drive(&agent_fsm, "spec/agent.fsm", 300, 400);
}

/* Compiles spec text and drives it (the spec must check clean). */
static void drive_text(const char *name, const char *text, size_t n, int seeds, int steps)
{
    ac_spec *spec = ac_spec_parse(name, text, n);
    assert_non_null(spec);
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors)
        ac_spec_print_diags(spec, stderr);
    assert_int_equal(spec->n_errors, 0);
    ac_fsm_tables *t = ac_spec_lower(spec, name);
    assert_non_null(t);
    drive(t, name, seeds, steps);
    ac_spec_tables_free(t);
    ac_spec_free(spec);
}

static void test_tree_specs(void **state)
{
    (void)state;
    assert_true(n_files >= 5);
    for (int i = 0; i < n_files; i++) {
        FILE *fp = fopen(files[i], "rb");
        assert_non_null(fp);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text, fp);
        fclose(fp);
        assert_true(n < sizeof text);
        drive_text(files[i], text, n, 60, 300);
    }
}

/* Specs at the edges: 70 equal effect uses handed over between two states
 * (and restarted by a self-transition), and a row whose calls are too many
 * for the straight run. */
static void test_edge_specs(void **state)
{
    (void)state;
    static char text[1 << 16];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "outside event quit\noutside event go, back, again\naction x\neffect e, f\n"
                          "machine m {\n initial S\n terminal Q\n * -> Q on quit\n state S {");
    for (int i = 0; i < 70; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, " effect e");
    n += (size_t)snprintf(text + n, sizeof text - n, " effect f }\n state T {");
    for (int i = 0; i < 70; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, " effect e");
    n += (size_t)snprintf(text + n, sizeof text - n, " exit x");
    for (int i = 1; i < 70; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, ", x");
    n += (size_t)snprintf(text + n, sizeof text - n,
                          " }\n S -> T on go\n T -> S on back\n T -> T on again\n}\n");
    assert_true(n < sizeof text - 1);
    drive_text("edge.fsm", text, n, 40, 200);
}

/* The comparison catches a wrong plan: one effect stop dropped from every
 * row that stops something, in the dense plan only. */
static void drop_stops(ac_fsm_plan *p)
{
    const ac_fsm_tables *t = &agent_fsm;
    for (uint16_t r = 0; r < t->n_transitions; r++) {
        ac_fsm_plan_row *pr = &p->rows[r];
        if (pr->stop && p->lists[pr->stop] > 0)
            p->lists[pr->stop]--; /* the general (traced) path's list */
        if (pr->straight && pr->n_stop > 0) {
            pr->n_stop--; /* the straight path's run: the stop is skipped... */
            pr->n_exit++; /* ...and its slot read as an exit action instead */
        }
    }
}

static void test_driver_catches_damage(void **state)
{
    (void)state;
    char msg[256];
    diff_stats st = {0, 0};
    int caught = 0;
    for (int seed = 1; seed <= 20 && !caught; seed++)
        caught = diff_run_tampered(&agent_fsm, (uint64_t)seed, 400, &st, msg, sizeof msg,
                                   drop_stops) == 0;
    assert_true(caught);
    printf("damaged plan caught: %s\n", msg);
}

int main(int argc, char **argv)
{
    n_files = argc - 1;
    files = argv + 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_spec),
        cmocka_unit_test(test_tree_specs),
        cmocka_unit_test(test_edge_specs),
        cmocka_unit_test(test_driver_catches_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
