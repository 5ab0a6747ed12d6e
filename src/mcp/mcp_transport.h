/* The transports of the MCP client (mcp_client.c): stdio (mcp_stdio.c) and
 * Streamable HTTP (mcp_http.c). A transport carries whole JSON-RPC messages
 * both ways. What arrives is never reported from the I/O callback that read
 * it: it goes into the transport's inbox (mcp_inbox.c), which hands it to the
 * client from a task deferred on the loop, one message per call, in order.
 * The client may therefore send, and free the transport, from any of its
 * callbacks. After closed() or expired() it reports nothing more. */
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
    /* A W3C traceparent for the next message sent ("": none), set by the client around one
     * send: HTTP sends it as a header, stdio has none to send. */
    char traceparent[64];
};

/* What a transport received and has not handed to the client yet. */
typedef struct mcp_inbox {
    ac_loop *loop;
    mcp_transport_cb cb;
    ac_loop_task task;
    json_t *q; /* the messages, in order (a JSON array), from head on */
    size_t head;
    int end; /* 0, or the last report: MCP_INBOX_CLOSED, MCP_INBOX_EXPIRED */
    char why[900];
} mcp_inbox;
enum { MCP_INBOX_CLOSED = 1, MCP_INBOX_EXPIRED = 2 };

/* 0, or -1 when out of memory. */
int mcp_inbox_init(mcp_inbox *in, ac_loop *loop, const mcp_transport_cb *cb);
/* Queues one message (borrowed), or each of a batch (an array); nothing once ended. */
void mcp_inbox_push(mcp_inbox *in, json_t *msg);
/* Queues the last report, after the messages already queued: closed(why) or expired(). The
 * first end wins. */
void mcp_inbox_end(mcp_inbox *in, int end, const char *why);
/* Nonzero once an end is queued: the transport has stopped reading. */
int mcp_inbox_ended(const mcp_inbox *in);
/* Drops whatever waits (the transport is being freed). */
void mcp_inbox_clear(mcp_inbox *in);

mcp_transport *ac_mcp_stdio_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                                char *err, size_t errcap);
mcp_transport *ac_mcp_http_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                               char *err, size_t errcap);

/* Printable, cut copy of untrusted bytes for messages: control bytes as '?', at most cap-1. */
void ac_mcp_printable(const char *in, size_t n, char *out, size_t cap);

#endif
