/*  gw_id.c - kernel and session ids, which a load balancer routes by.

    An id is a UUID's 8-4-4-4-12 lowercase hex digits (what Jupyter clients
    expect of a kernel id). With a shard configured ("shard", or
    KENNEL_SHARD), the first group is that shard, left-padded with zeros,
    and the other 24 digits (96 bits) are random: every id a gateway makes
    names the gateway, so a balancer in front of several (HAProxy with
    gateway/deploy/k8s/base/haproxy.cfg) picks the one holding a kernel
    from the request path alone, keeping no state of its own (README,
    "Many machines").
*/
#include "gw_util.h"
#include "wire.h"

#include <string.h>

void
gw_id_new (const char *shard, char out[GW_ID_UUID_SIZE])
{
    char hex[WIRE_ID_SIZE];
    wire_id_new (hex);
    if (shard && *shard) {
        size_t n = strlen (shard);
        memset (hex, '0', GW_SHARD_MAX - n);
        memcpy (hex + GW_SHARD_MAX - n, shard, n);
    }
    snprintf (out, GW_ID_UUID_SIZE, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}
