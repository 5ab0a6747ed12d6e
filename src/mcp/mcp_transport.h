/* The transports of the MCP client (mcp_client.c): stdio (mcp_stdio.c) and
 * Streamable HTTP (mcp_http.c). A transport carries whole JSON-RPC messages
 * both ways and reports what arrives through its callbacks, on the loop.
 * After closed() it reports nothing more; the client frees it later, never
 * from inside one of its callbacks. */
#ifndef AGENTC_MCP_TRANSPORT_H
#define AGENTC_MCP_TRANSPORT_H

#include <jansson.h>
#include <stddef.h>

#include "io/loop.h"
#include "mcp/mcp.h"

typedef struct mcp_transport_cb {
    void *ud;
    /* one message from the server (borrowed); the client may send from here */
    void (*message)(void *ud, json_t *msg);
    /* the transport is dead (process gone, protocol garbage): why names what happened */
    void (*closed)(void *ud, const char *why);
    /* HTTP: the server forgot the session (404): the client starts a new one and sends again
     * the requests that were not answered; no further callbacks */
    void (*expired)(void *ud);
} mcp_transport_cb;

typedef struct mcp_transport mcp_transport;
struct mcp_transport {
    /* Queues one message (compact JSON, no newline). -1 with err when the transport is dead
     * or out of memory. */
    int (*send)(mcp_transport *t, const char *data, size_t len, char *err, size_t errcap);
    /* The protocol version negotiated (HTTP sends it as MCP-Protocol-Version). May be NULL. */
    void (*set_version)(mcp_transport *t, const char *version);
    /* Stops whatever runs and frees the transport. */
    void (*free)(mcp_transport *t);
};

mcp_transport *ac_mcp_stdio_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                                char *err, size_t errcap);
mcp_transport *ac_mcp_http_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                               char *err, size_t errcap);

/* Printable, cut copy of untrusted bytes for messages: control bytes as '?', at most cap-1. */
void ac_mcp_printable(const char *in, size_t n, char *out, size_t cap);

#endif
