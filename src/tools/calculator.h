/* The built-in calculator tool: exact arithmetic on decimal expressions.
 *
 * Grammar (whitespace allowed between tokens):
 *   expr    -> term (('+' | '-') term)*
 *   term    -> unary (('*' | '/' | '%') unary)*
 *   unary   -> ('+' | '-') unary | primary
 *   primary -> number | '(' expr ')'
 *   number  -> digits ['.' [digits]] | '.' digits        e.g. 17, 0.1, .5, 3.
 *
 * Values are exact rationals over arbitrary-precision integers (capped at
 * AC_CALC_MAX_DIGITS decimal digits per numerator/denominator; beyond that the
 * result is the error "number too large"). So 0.1 + 0.2 = 0.3 and
 * 17 * 23 = 391 exactly.
 *
 * a % b is a - b * trunc(a / b): the result has the sign of a, as in C, and
 * works on fractions too (5.5 % 2 = 1.5, -7 % 2 = -1).
 *
 * Output: an integer ("391"), an exact terminating decimal ("0.3", "-1.25"),
 * or, when the decimal expansion does not terminate, the reduced fraction and
 * an approximation rounded to 12 decimals: "1/3 (≈ 0.333333333333)".
 */
#ifndef AGENTC_TOOLS_CALCULATOR_H
#define AGENTC_TOOLS_CALCULATOR_H

#include <stddef.h>

#define AC_CALC_MAX_INPUT 4096 /* bytes of expression text */
#define AC_CALC_MAX_DEPTH 64   /* nesting of parentheses and unary signs */
#define AC_CALC_MAX_DIGITS 6000

/* Evaluates expr and writes the result to out. Returns 0 on success, -1 with
 * a message in err (syntax errors carry a 1-based column: "unexpected ')' at
 * column 7"). Never writes more than outcap/errcap bytes. */
int ac_calc_eval(const char *expr, char *out, size_t outcap, char *err, size_t errcap);

#endif
