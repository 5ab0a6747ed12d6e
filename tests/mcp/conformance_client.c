/* The client side of @modelcontextprotocol/conformance (tests/mcp/conformance.sh): run as
 * `mcp_conformance_client URL` by the conformance runner, it connects to URL with agentc's MCP
 * client (Streamable HTTP), lists the tools and calls each one with arguments made from its
 * input schema (numbers 2 and 3 in turn, strings "x", booleans true), printing each result.
 * Exit 0 when the handshake, the listing and every call worked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/loop.h"
#include "mcp/mcp.h"

static json_t *args_for(const json_t *schema)
{
    json_t *a = json_object();
    const char *k;
    json_t *p;
    int n = 2;
    json_object_foreach(json_object_get(schema, "properties"), k, p)
    {
        const char *t = json_string_value(json_object_get(p, "type"));
        if (!t)
            continue;
        if (!strcmp(t, "number") || !strcmp(t, "integer"))
            json_object_set_new(a, k, json_integer(n++));
        else if (!strcmp(t, "string"))
            json_object_set_new(a, k, json_string("x"));
        else if (!strcmp(t, "boolean"))
            json_object_set_new(a, k, json_true());
    }
    return a;
}

static void done(void *ud, int ok, const char *content)
{
    int *st = ud;
    *st = ok ? 1 : -1;
    printf("result (%s): %s\n", ok ? "ok" : "failed", content);
}

static void on_tools(void *ud, ac_mcp_server *s)
{
    (void)s;
    *(int *)ud = 1;
}

/* Starts s and runs the loop until its first listing or failure. 0 when ready. */
static int connect_server(ac_loop *loop, ac_mcp_server *s, char *err, size_t cap)
{
    int seen = 0;
    ac_mcp_server_on_tools(s, on_tools, &seen);
    ac_mcp_server_start(s);
    for (int k = 0; k < 300 && !seen; k++)
        ac_loop_run_once(loop, 50);
    ac_mcp_server_on_tools(s, NULL, NULL);
    snprintf(err, cap, "%s", seen ? ac_mcp_server_error(s) : "no answer within 15 s");
    return ac_mcp_server_ready(s) ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mcp_conformance_client URL\n");
        return 2;
    }
    ac_loop *loop = ac_loop_new();
    ac_mcp_config c = {0};
    c.name = "conformance";
    c.url = argv[argc - 1];
    c.timeout_ms = 10000;
    c.start_timeout_ms = 10000;
    c.idempotent = -1;
    ac_mcp_server *s = ac_mcp_server_new(loop, &c);
    char err[512];
    int rc = 0;
    if (!s || connect_server(loop, s, err, sizeof err) < 0) {
        fprintf(stderr, "connect: %s\n", s ? err : "out of memory");
        rc = 1;
    }
    if (s && !rc)
        printf("connected: protocol %s, %zu tools\n", ac_mcp_server_version(s),
               ac_mcp_server_tool_count(s));
    for (size_t i = 0; s && !rc && i < ac_mcp_server_tool_count(s); i++) {
        const ac_mcp_tool *t = ac_mcp_server_tool(s, i);
        json_t *a = args_for(t->input_schema);
        int st = 0;
        printf("call %s\n", t->name);
        ac_mcp_call_tool(s, t->name, a, 0, done, NULL, &st);
        json_decref(a);
        for (int k = 0; k < 300 && !st; k++)
            ac_loop_run_once(loop, 50);
        if (st != 1)
            rc = 1;
    }
    ac_mcp_server_free(s);
    ac_loop_free(loop);
    return rc;
}
