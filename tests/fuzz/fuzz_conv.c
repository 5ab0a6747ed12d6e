/*
 * fuzz_conv.c - libFuzzer target for the conversation's JSON form and the
 * request builders: any input either fails with a message or loads into a
 * conversation that serializes, reloads to the same bytes, and builds
 * OpenAI and Anthropic requests without crashing; the Anthropic request
 * built from the request cache is byte for byte the one built whole, with
 * thinking off and on, and again from a warm cache; and both bodies as the
 * compact writer makes them are those of the JSON value's path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "context/request.h"
#include "context/request_cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char err[256];
    ac_conv *c = ac_conv_from_json(text, err, sizeof err);
    free(text);
    if (!c)
        return 0;
    char *a = ac_conv_to_json(c);
    if (a) {
        ac_conv *c2 = ac_conv_from_json(a, err, sizeof err);
        if (!c2)
            abort(); /* our own output must load */
        char *b = ac_conv_to_json(c2);
        if (!b || strcmp(a, b) != 0)
            abort(); /* and round-trip byte for byte */
        free(b);
        ac_conv_free(c2);
        free(a);
    }
    ac_request_opts o;
    memset(&o, 0, sizeof o);
    o.model = "m";
    o.stream = 1;
    /* an empty pass-through takes the JSON value's path: the compact writer's bytes are its */
    ac_request_settings pass_st;
    memset(&pass_st, 0, sizeof pass_st);
    pass_st.request_json = "{}";
    ac_request_opts ref = o;
    ref.settings = &pass_st;
    char *oa = ac_request_openai(c, &o, err, sizeof err);
    char *oa_ref = ac_request_openai(c, &ref, err, sizeof err);
    if (!oa != !oa_ref || (oa && strcmp(oa, oa_ref) != 0))
        abort();
    free(oa);
    free(oa_ref);
    for (int pass = 0; pass < 3; pass++) {
        o.thinking_budget = ref.thinking_budget = pass == 1 ? 2048 : 0;
        char *cached = ac_request_anthropic(c, &o, err, sizeof err);
        char *whole = ac_request__anthropic(c, &o, 0, err, sizeof err);
        char *json = ac_request__anthropic(c, &ref, 0, err, sizeof err);
        if (!cached != !whole || (cached && strcmp(cached, whole) != 0))
            abort(); /* the cache must not change a byte */
        if (!json != !whole || (json && strcmp(json, whole) != 0))
            abort(); /* nor the compact writer */
        free(cached);
        free(whole);
        free(json);
    }
    ac_conv_free(c);
    return 0;
}
