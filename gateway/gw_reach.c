/*  gw_reach.c - whether a listener's clients can reach it from outside
    this network namespace.

    `kennel serve --http 0.0.0.0:8888` under systemd's PrivateNetwork=yes
    (or in a container with no network) binds, listens and would report
    itself healthy, in a namespace whose only interface is lo: no client
    outside it can ever connect. What can be known for certain from inside
    is only that negative: an interface that is up, not loopback and has an
    address of the listener's family may still be firewalled or unrouted,
    so its presence proves nothing, and nothing is claimed then. A loopback
    address is the operator's word that clients share the namespace (a unit
    with systemd's JoinsNamespaceOf=); any other address is this host's or
    the bind fails (http_server.c says why).
*/
#include "gw_reach.h"
#include "wire.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

/* 0.0.0.0, ::, or another spelling of them: AF_INET or AF_INET6; else 0 */
static int
wildcard_family (const char *ip)
{
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton (AF_INET, ip, &v4) == 1)
        return v4.s_addr == htonl (INADDR_ANY) ? AF_INET : 0;
    if (inet_pton (AF_INET6, ip, &v6) == 1)
        return IN6_IS_ADDR_UNSPECIFIED (&v6) ? AF_INET6 : 0;
    return 0;
}

/* An interface up, not loopback, with an address a listener of family
   accepts (a :: listener takes IPv4 too, unless IPV6_V6ONLY) */
static bool
outside_interface (int family)
{
    struct ifaddrs *all;
    if (getifaddrs (&all) < 0)
        return true; /* cannot tell: claim nothing */
    bool found = false;
    for (struct ifaddrs *ifa = all; ifa && !found; ifa = ifa->ifa_next) {
        if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK))
            continue;
        int f = ifa->ifa_addr->sa_family;
        found = f == family || (family == AF_INET6 && f == AF_INET);
    }
    freeifaddrs (all);
    return found;
}

char *
gw_reach_check (const char *ip, int port)
{
    int family = wildcard_family (ip);
    if (!family || outside_interface (family))
        return NULL;
    return wire_xasprintf ("HTTP on %s:%d: this network namespace has no interface but loopback, so no client "
                           "outside it can reach the listener (kennel.service's PrivateNetwork=yes makes such a "
                           "namespace: install its drop-in, " KENNEL_DATA_DIR "/kennel-http.conf, as "
                           "/etc/systemd/system/kennel.service.d/http.conf and restart; a container needs a "
                           "network); listen on 127.0.0.1 if the clients share this namespace",
                           ip, port);
}
