/*  gw_launch.h - one kennel-launch process and its status line (gw_launch.c).
*/
#ifndef GW_LAUNCH_H_INCLUDED
#define GW_LAUNCH_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <sys/types.h>

typedef struct gw_launch gw_launch_t;
typedef enum { GW_LAUNCH_WAITING, GW_LAUNCH_CONFINED, GW_LAUNCH_FAILED, GW_LAUNCH_EXITED } gw_launch_state_t;
/* Called from the loop when the status line arrived (or the launcher failed
   before sending one) and when the process has exited. */
typedef void (gw_launch_fn) (gw_launch_t *launch, void *arg);

/* fork+exec launcher --spec-fd 3 with spec written on fd 3 and the status
   line read from fd 4; stdout and stderr go to log_path. NULL with *errmsg. */
gw_launch_t *gw_launch_start (zloop_t *loop, const char *launcher, json_t *spec, const char *log_path,
                              gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg, char **errmsg);
/* Removes log_path and the older log a launch rotated it to (log_path.1). */
void gw_launch_log_remove (const char *log_path);
/* In a forked child whose fds are in place: a new session that dies with the
   gateway, default signals, an environment with nothing of the gateway's
   (PATH and the sanitizers' settings only), then exec of launcher with argv.
   Never returns (exit 125 when the gateway is already gone, 127 when exec
   fails). Used for kernels' launchers and for the zygote. */
_Noreturn void gw_launch_exec (const char *launcher, const char *const argv[]);
/* fork () for a child that calls gw_launch_exec: it remembers the gateway's
   pid, by which the child tells whether the gateway is still its parent. */
pid_t gw_launch_fork (void);
/* Kills the whole process group with SIGKILL and forgets the callbacks; the
   process is reaped later by the loop (gw_launch_reap_all at exit). Frees self
   once reaped. */
void gw_launch_abandon (gw_launch_t **self_p);
/* Hands a running launch to another owner (a warm-pool kernel claimed by a
   conversation): later events go to the new callbacks. */
void gw_launch_rebind (gw_launch_t *self, gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg);
/* Waits (bounded) for every abandoned launcher; for a clean exit. */
void gw_launch_reap_all (double timeout_s);
gw_launch_state_t gw_launch_state (const gw_launch_t *self);
pid_t gw_launch_pid (const gw_launch_t *self);        /* the launcher */
pid_t gw_launch_kernel_pid (const gw_launch_t *self); /* from the status line, or 0 */
/* The status line (object) or NULL. Owned by self. */
json_t *gw_launch_status (const gw_launch_t *self);
/* After GW_LAUNCH_EXITED: "exit status 3", "killed by signal 9 (SIGKILL)". */
const char *gw_launch_cause (const gw_launch_t *self);
/* The last output of this launch in its log (the launcher's lines and its
   kernel's "[kernel] ..."), for an error: its last 5 lines, at most 800
   bytes, joined by " | ", printable ASCII; "" when there is none. */
#define GW_LAUNCH_TAIL_SIZE 820
void gw_launch_output_tail (const gw_launch_t *self, char *out, size_t size);
/* After GW_LAUNCH_EXITED: whether the memory limit killed the kernel (the
   cause then says "out of memory"). */
bool gw_launch_out_of_memory (const gw_launch_t *self);
/* Whether gw_launch_kill found the kernel already gone: its exit, not the
   kill, says why it ended. */
bool gw_launch_found_dead (const gw_launch_t *self);
/* A one-line reason for GW_LAUNCH_FAILED (stage + message). */
const char *gw_launch_error (const gw_launch_t *self);
/* SIGKILL to the kernel; the launcher's session too if it lingers. */
void gw_launch_kill (gw_launch_t *self);
/* Sends sig to the kernel (falls back to the launcher). */
int gw_launch_signal (gw_launch_t *self, int sig);

#endif
