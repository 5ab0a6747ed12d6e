/* libFuzzer target for the built-in calculator. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/calculator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > AC_CALC_MAX_INPUT + 16)
        return 0;
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = 0;
    char out[512], small[8], err[256];
    (void)ac_calc_eval(expr, out, sizeof out, err, sizeof err);
    (void)ac_calc_eval(expr, small, sizeof small, NULL, 0);
    free(expr);
    return 0;
}
