/*
 * fuzz_spec.c - libFuzzer target for the spec compiler: lexer, parser,
 * checker, lowering and every emitter, on arbitrary bytes.
 *
 * Build with -DAGENTC_FUZZ=ON and clang; `ctest -R fuzz_spec_60s` runs it
 * for a minute from a seed corpus of the shipped and test specs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    if (!null)
        abort();
    return null;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20) /* specs are small; keep runs fast */
        return 0;
    ac_spec *spec = ac_spec_parse("fuzz.fsm", (const char *)data, size);
    if (!spec)
        return 0;
    if (spec->n_errors == 0)
        ac_spec_check(spec);
    FILE *out = sink();
    ac_spec_print_diags(spec, out);
    if (spec->n_errors == 0) {
        ac_fsm_tables *t = ac_spec_lower(spec, "fuzz.fsm");
        if (!t) /* a checked spec always lowers */
            abort();
        if (ac_emit_c_header(t, "fuzz", out) || ac_emit_c_source(t, "fuzz", out) ||
            ac_emit_dot(t, -1, NULL, out) || ac_emit_mermaid(t, -1, NULL, out) ||
            ac_emit_markdown(t, -1, out))
            abort();
        for (uint16_t m = 0; m < t->n_machines; m++)
            if (ac_emit_dot(t, m, NULL, out) || ac_emit_mermaid(t, m, NULL, out))
                abort();
        ac_spec_tables_free(t);
    } else if (spec->n_diags == 0) {
        abort(); /* an error without a message */
    }
    ac_spec_free(spec);
    return 0;
}
