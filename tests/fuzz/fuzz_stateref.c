/* libFuzzer target for State references: the parser, the canonical text,
 * evaluation against a fixed State, writes into a copy of it, and the
 * resolution of a JSON argument document when the input parses as JSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/stateref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *state_text =
    "{\"user\":{\"name\":\"Ada\",\"tags\":[\"a\",{\"x\":[1,2]}]},\"a key\":{\"b\":null},"
    "\"l\":[[0],[1,[2]]],\"n\":3}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > AC_REF_MAX_TEXT + 64)
        return 0;
    const char *text = (const char *)data;
    json_t *state = json_loads(state_text, 0, NULL);
    if (!state)
        return 0;
    char err[256], buf[512];
    (void)ac_ref_kind(text, size);
    ac_ref_expr e;
    if (ac_ref_parse(text, size, &e, err, sizeof err) == 0) {
        for (size_t i = 0; i < e.n; i++) {
            char small[7];
            ac_ref_path_text(&e.paths[i], small, sizeof small); /* truncation */
            ac_ref_path_text(&e.paths[i], buf, sizeof buf);
            /* the canonical text (when it fits) parses back to the same path */
            ac_ref_expr back;
            if (strlen(buf) < sizeof buf - 1) {
                if (ac_ref_parse(buf, strlen(buf), &back, err, sizeof err) != 0 || back.n != 1 ||
                    !ac_ref_overlap(&back.paths[0], &e.paths[i]) || back.paths[0].n != e.paths[i].n)
                    abort();
                ac_ref_expr_free(&back);
            }
            (void)ac_ref_overlap(&e.paths[i], &e.paths[0]);
        }
        (void)ac_ref_eval(&e, state, state, err, sizeof err);
        (void)ac_ref_eval(&e, state, NULL, err, sizeof err);
        json_t *copy = json_deep_copy(state), *v = json_integer(1);
        for (size_t i = 0; copy && v && i < e.n; i++)
            (void)ac_ref_set(&copy, &e.paths[i], v, err, sizeof err);
        json_decref(v);
        json_decref(copy);
        ac_ref_expr_free(&e);
    }
    json_t *args = json_loadb(text, size, JSON_DECODE_ANY, NULL);
    if (args) {
        json_t *out = NULL;
        if (ac_ref_resolve(args, state, NULL, &out, err, sizeof err) == 0)
            json_decref(out);
        json_decref(args);
    }
    json_decref(state);
    return 0;
}
