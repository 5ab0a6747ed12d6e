/* http_missing.c - used only when the HTTP providers are not built. */
#include <stdio.h>

#include "llm/provider.h"

ac_provider *ac_provider_http_new(ac_engine *e, int kind, const ac_engine_config *cfg, char *err,
                                  size_t errcap)
{
    (void)e;
    (void)kind;
    (void)cfg;
    snprintf(err, errcap, "this build has no HTTP providers");
    return NULL;
}
