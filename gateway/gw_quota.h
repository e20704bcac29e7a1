/*  gw_quota.h - a workspace's limits: a tmpfs mounted on it (gw_quota.c).
*/
#ifndef GW_QUOTA_H_INCLUDED
#define GW_QUOTA_H_INCLUDED

#include "gw_config.h"
#include "gw_util.h"
#include <stdbool.h>
#include <stdint.h>

/* Once, before any thread: the gateway enters a mount namespace of its own
   (an unprivileged one a user namespace too, where it may mount), slave of
   the host's: nothing it mounts is seen outside or outlives its processes.
   Else every later mount fails with the reason, naming the fix. */
void gw_quota_prepare (void);
/* Why this gateway cannot mount workspaces, or NULL. */
const char *gw_quota_unavailable (void);
/* Mounts a tmpfs of bytes with files inodes on dir (a kept one gets the
   new limits): a workspace gets its policy's workspace_bytes and
   workspace_files, a run dir GW_RUN_DIR_BYTES and GW_RUN_DIR_FILES (what
   kernel.json and five sockets need). 0; or -1 with *errmsg (malloc'd,
   naming the layer "quota" and the host setting) unless the config's
   allow_degraded names "quota", which logs and returns 0 with no mount. */
#define GW_RUN_DIR_BYTES (1 << 20)
#define GW_RUN_DIR_FILES 64
GW_MUST_CHECK int gw_quota_apply (const gw_config_t *config, const char *dir, int64_t bytes, int64_t files,
                                  char **errmsg);
/* Detaches the tmpfs on dir, if any; its pages go when the kernel's last
   process has left it. */
void gw_quota_unmount (const char *dir);
/* Bytes and files in use on dir's tmpfs: false when dir has none. */
bool gw_quota_usage (const char *dir, int64_t *bytes, int64_t *files);

#endif
