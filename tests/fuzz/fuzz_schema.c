/* libFuzzer target for the schema validator. The input is JSON: either
 * [schema, instance] or a single document used as both schema and instance. */
#include <stddef.h>
#include <stdint.h>

#include "tools/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!doc)
        return 0;
    json_t *schema = doc, *instance = doc;
    if (json_is_array(doc) && json_array_size(doc) == 2) {
        schema = json_array_get(doc, 0);
        instance = json_array_get(doc, 1);
    }
    char err[256];
    ac_schema *s = ac_schema_compile(schema, err, sizeof err);
    if (s) {
        (void)ac_schema_validate(s, instance, err, sizeof err);
        (void)ac_schema_validate(s, schema, NULL, 0);
        ac_schema_free(s);
    }
    json_decref(doc);
    return 0;
}
