/*  gw_process.h - a gateway process's set-up, before anything else runs.
*/
#ifndef GW_PROCESS_H
#define GW_PROCESS_H

/* SIGPIPE ignored, the fd limit lifted, the mount namespace of its own
   where it mounts workspaces (gw_quota_prepare, before ZeroMQ's threads),
   ZeroMQ, the log opened (exit 2 when it cannot be). `kennel serve`,
   `kennel kernel`, `kennel selftest` and `kennel mcp` (its embedded
   gateway) alike. */
void gw_process_setup (const char *log_file);

#endif
