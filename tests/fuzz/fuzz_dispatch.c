/*
 * fuzz_dispatch.c - libFuzzer target for the dispatcher: any spec that
 * checks clean is driven through the reference dispatcher and the real one
 * (dense index or row scan, traced or untraced) with random events and
 * guard results seeded from the input; any difference in handler calls,
 * results or states aborts.
 *
 * Build with -DAGENTC_FUZZ=ON and clang; `ctest -R fuzz_dispatch_30s`
 * runs it for 30 s from a seed corpus of the tree's specs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "diff_driver.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) /* specs are small; keep runs fast */
        return 0;
    ac_spec *spec = ac_spec_parse("fuzz.fsm", (const char *)data, size);
    if (!spec)
        return 0;
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    if (spec->n_errors == 0) {
        ac_fsm_tables *t = ac_spec_lower(spec, "fuzz.fsm");
        if (!t) /* a checked spec always lowers */
            abort();
        uint64_t seed = 14695981039346656037ull;
        for (size_t i = 0; i < size; i++)
            seed = (seed ^ data[i]) * 1099511628211ull;
        char msg[256];
        for (int k = 0; k < 4; k++) {
            if (diff_run(t, seed + (uint64_t)k, 200, NULL, msg, sizeof msg) == 0) {
                fprintf(stderr, "fuzz_dispatch: %s\n", msg);
                abort();
            }
        }
        ac_spec_tables_free(t);
    }
    ac_spec_free(spec);
    return 0;
}
