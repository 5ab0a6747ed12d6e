/* A trivial MCP server over stdio for bench_mcp: answers initialize, tools/list (one tool,
 * "echo"; with an argument N, N tools "t0" .. "tN-1" besides, for bench_mcp_tools) and
 * tools/call (the arguments back as text); everything else is ignored. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void answer(json_t *id, json_t *result)
{
    json_t *m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    char *t = json_dumps(m, JSON_COMPACT);
    fputs(t, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(t);
    json_decref(m);
}

/* The tools/list result: "echo" and n more. */
static json_t *tool_list(long n)
{
    json_t *tools = json_pack("[{s:s, s:s, s:{s:s}}]", "name", "echo", "description", "echo",
                              "inputSchema", "type", "object");
    for (long i = 0; tools && i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%ld", i);
        json_array_append_new(tools,
                              json_pack("{s:s, s:s, s:{s:s, s:{s:{s:s}}}}", "name", name,
                                        "description", "a listed tool", "inputSchema", "type",
                                        "object", "properties", "x", "type", "string"));
    }
    return json_pack("{s:o}", "tools", tools);
}

int main(int argc, char **argv)
{
    long extra = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) > 0) {
        json_t *m = json_loads(line, 0, NULL);
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *id = json_object_get(m, "id");
        if (!method || !id) {
            json_decref(m);
            continue;
        }
        if (!strcmp(method, "initialize"))
            answer(id, json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}", "protocolVersion", "2025-11-25",
                                 "capabilities", "tools", "serverInfo", "name", "trivial",
                                 "version", "1"));
        else if (!strcmp(method, "tools/list"))
            answer(id, tool_list(extra));
        else if (!strcmp(method, "tools/call")) {
            char *a = json_dumps(json_object_get(json_object_get(m, "params"), "arguments"),
                                 JSON_COMPACT);
            answer(id, json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", a));
            free(a);
        } else {
            json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                                  "code", -32601, "message", "Method not found");
            char *t = json_dumps(e, JSON_COMPACT);
            printf("%s\n", t);
            fflush(stdout);
            free(t);
            json_decref(e);
        }
        json_decref(m);
    }
    free(line);
    return 0;
}
