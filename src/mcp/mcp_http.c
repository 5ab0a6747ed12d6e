#include <stdio.h>
#include "mcp/mcp_transport.h"
mcp_transport *ac_mcp_http_new(ac_loop *loop, const ac_mcp_config *cfg, const mcp_transport_cb *cb,
                               char *err, size_t errcap)
{
    (void)loop; (void)cfg; (void)cb;
    snprintf(err, errcap, "Streamable HTTP is not available");
    return NULL;
}
