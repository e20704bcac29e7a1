/*  gw_log.h - the event log: one JSON line per event (gw_log.c).
*/
#ifndef GW_LOG_H_INCLUDED
#define GW_LOG_H_INCLUDED

#include "wire.h"

/* Where events go: NULL path means stderr. 0 or -1 with errno. */
int gw_log_open (const char *path);
void gw_log_close (void);
/* event "open", fields as for json_pack ("{s:s, s:i}", ...), or NULL. */
void gw_log (const char *event, const char *fmt, ...);
/* The same for a line about bad input from source (e.g.
   "conversation/ID/shell/client"): rate-limited per source and in total,
   what is held back is counted in a log_dropped line once a second. */
void gw_log_limited (const char *source, const char *event, const char *fmt, ...);
/* A message of a conversation's channel refused (from "client" or
   "kernel"), rate-limited per conversation, channel and side. */
void gw_log_bad_message (const char *conversation, const char *channel, wire_error_t err, const char *from);
/* A message not sent: the receiver's queue was full (rate-limited). */
void gw_log_dropped (const char *conversation, const char *channel);

#endif
