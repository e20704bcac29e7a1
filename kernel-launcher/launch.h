/*  launch.h - kennel-launch's parts: the launch spec and the status line. */
#ifndef LAUNCH_H_INCLUDED
#define LAUNCH_H_INCLUDED

#include "confine.h"
#include "kennel_launch.h"
#include <jansson.h>

/* One error line of the launcher (spec, policy, zygote request). */
#define LAUNCH_ERR_MAX 512

/* The kernel a launch runs after confinement. */
typedef struct {
    bool builtin_python;        /* the embedded kernel (pykernel_run) */
    json_t *settings;           /* its settings (owned; may be NULL) */
    char **argv;                /* else: this command (owned, NULL-terminated) */
    char *connection_file;      /* for the builtin kernel, as seen inside */
    char *zygote;               /* spec "zygote": the fork server's socket (owned; may be NULL) */
    bool forked;                /* runs in a zygote's child: CPython is already up */
    bool from_spec;             /* a launch spec's (the gateway's): log pump, "ended" line */
} launch_kernel_t;

void launch_kernel_free (launch_kernel_t *kernel);

/* Reads the gateway's launch spec from fd until EOF (at most 1 MiB): a
   NUL-terminated string to free, or NULL with one line in err. */
char *launch_spec_read_text (int fd, char *err, size_t errlen);

/* Parses a launch spec into policy and kernel; *status_fd gets the spec's
   status_fd (-1 when absent, also known on error). Returns 0, or -1 with
   one line in err. */
int launch_spec_parse (const char *text, confine_policy_t *policy, launch_kernel_t *kernel, int *status_fd,
                       char *err, size_t errlen);

/* ---- confinement and the kernel (run.c): where main.c and the zygote's
   child both end ---- */

/* Confines this process with policy and runs kernel in it; never returns.
   status_fd (or -1) gets the status line. Takes both. */
_Noreturn void launch_confine_and_run (confine_policy_t *policy, launch_kernel_t *kernel, int status_fd);
/* The development mode: the built-in Python kernel with no sandbox at all,
   after a warning on stderr. Returns the exit status. */
int launch_run_unconfined (const char *connection_file);

/* ---- the fork server (zygote.c) and its client (zygote_client.c) ---- */

/* kennel-launch --zygote PATH [--preload a,b]: serves launch requests on
   the unix socket PATH until SIGTERM/SIGINT. Returns the exit status. */
int launch_zygote_serve (const char *socket_path, const char *preload);

/* In a zygote's child, confined, before the kernel runs: the interpreter
   prepared in the zygote takes this process's environment and fresh
   random state. 0, or -1 with one line on stderr. */
int launch_zygote_child_fixup (void);

/* Hands the spec (text) and status_fd to the zygote at kernel->zygote and
   then proxies for the kernel: forwards signals, returns its exit status
   (or dies of its signal). Returns -1 without side effects when the zygote
   cannot be reached (the caller then starts the kernel itself). */
int launch_zygote_proxy (const char *socket_path, const char *text, int status_fd);

/* ---- the kernel's output to the host log (logpump.c) ---- */

/* Before confinement: fds 1 and 2 become a pipe that a pump process
   (outside the sandbox) copies to the launcher's fd 2, each line marked
   "[kernel] ", at most LAUNCH_LOG_MAX bytes. 0, or -1 (fds unchanged). */
int launch_logpump_start (void);
/* The launcher's own fds 1 and 2 back, then waits (bounded) for the pump
   to log what the ended sandbox wrote. Without a pump: nothing. */
void launch_logpump_finish (void);

/* ---- the waiter's part (waiter.c) ---- */

/* Before confinement: sets policy->on_exit (the waiter's end: pump
   finished, OOM kills said, the "ended" line) and, for a launch spec's
   kernel, starts the log pump and keeps status_fd for that line. -1 when
   the pump cannot be set up (the caller refuses: never the log file
   inside). */
int launch_waiter_prepare (confine_policy_t *policy, const launch_kernel_t *kernel, int status_fd);

/* ---- the status line (status.c) ---- */

/* Writes all of data to fd (retries short writes and EINTR; stops at an error). */
void launch_write_all (int fd, const char *data, size_t len);

/* One JSON line on fd, then closes it unless it is 0, 1 or 2 (fd < 0: nothing). */
void launch_status_confined (int fd, const confine_report_t *report);
/* The same in two steps: the line made now, written (and taken) later. */
json_t *launch_status_confined_json (const confine_report_t *report);
void launch_status_write (int fd, json_t *line);
void launch_status_error (int fd, const char *stage, int err, const char *message);
/* The waiter's last line, once the sandbox ended: {"status": "ended",
   "wait_status": W, "oom_kills": K (-1: no count), "memory_bytes": N};
   closes fd. */
void launch_status_ended (int fd, int wait_status, long oom_kills, unsigned long long memory_bytes);

#endif
