/*  gw_kernel.h - one kernel instance: its run dir with a kernel.json of its
    own key, and its kennel-launch process.

    An instance is owned by one owner at a time: the warm pool while it is
    pooled, then the conversation that claimed it (gw_kernel_adopt hands
    its launch events over), or a conversation from the start. It is never
    shared, and its run dir is never reused by another instance.
*/
#ifndef GW_KERNEL_H_INCLUDED
#define GW_KERNEL_H_INCLUDED

#include "gw_config.h"
#include "gw_launch.h"
#include "wire.h"

typedef struct gw_kernel gw_kernel_t;

/* A fresh run dir under runs (a short random name, so that the socket
   paths in it fit GW_SUN_PATH_MAX; its own small tmpfs: gw_quota_apply)
   with a kernel.json of a fresh key; no process yet. NULL + *errmsg (what
   was made of the run dir removed). */
gw_kernel_t *gw_kernel_new (const gw_config_t *config, const char *runs, const char *kernel_name, char **errmsg);
/* Kills the process (if any, reaped later by the loop) and frees; the run
   dir stays: its owner removes it (gw_kernel_run_dir) as it sees fit. */
void gw_kernel_destroy (gw_kernel_t **self_p);
/* Starts kennel-launch with spec (gw_launch_start): 0, or -1 + *errmsg. */
int gw_kernel_launch (gw_kernel_t *self, zloop_t *loop, const char *launcher, json_t *spec, const char *log_path,
                      gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg, char **errmsg);
/* The launch's later events go to the new owner's callbacks. */
void gw_kernel_adopt (gw_kernel_t *self, gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg);
/* The process is killed and forgotten (reaped later); the run dir stays. */
void gw_kernel_end (gw_kernel_t *self);
const char *gw_kernel_run_dir (const gw_kernel_t *self);
/* The kernel's connection (ipc in its run dir, its key): from memory,
   never read back from the run dir, which the kernel owns. */
const wire_connection_t *gw_kernel_conn (const gw_kernel_t *self);
/* The launch, NULL when none runs (self may be NULL). */
gw_launch_t *gw_kernel_launch_of (const gw_kernel_t *self);
/* Monotonic seconds of the launch. */
double gw_kernel_started (const gw_kernel_t *self);
/* The launch spec of a kernel (confine policy from the config and policy,
   the builtin kernel's settings with tools). */
json_t *gw_kernel_spec (const gw_config_t *config, const char *kernel_name, const gw_policy_t *policy,
                        json_t *tools, const char *workspace, const char *run_dir);

#endif
