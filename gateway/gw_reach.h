/*  gw_reach.h - whether a listener's clients can reach it from outside
    this network namespace (gw_reach.c).
*/
#ifndef GW_REACH_H_INCLUDED
#define GW_REACH_H_INCLUDED

/* NULL when a listener on ip:port may be reachable from outside this
   network namespace, else why it is not and the fix (malloc'd). Only the
   certain case is named: a wildcard address (0.0.0.0, ::) in a namespace
   whose every interface with an address is loopback. */
char *gw_reach_check (const char *ip, int port);

#endif
