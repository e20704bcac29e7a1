/*  kennel_launch.h - the names and numbers that cross the boundary between
    the gateway (kennel) and kennel-launch: the launcher's command line, the
    launch spec, the status and "ended" lines, what the sandbox sees at
    /run/kennel, the fork server's readiness line, the exit codes. Both sides
    use these macros and nothing else; docs/PROTOCOL.md section 10 (and 11,
    12, named at each group) is the prose.

    It lives with the launcher because the launcher defines this interface
    and the gateway is its client: gateway/ includes
    "kernel-launcher/kennel_launch.h", and nothing in kernel-launcher/,
    confine/ or wire/ includes anything of gateway/, so no folder includes
    upward. Macros only, and its one #include is confine_paths.h (macros
    too): the gateway gets none of the launcher's or confine's internals
    (launch.h, confine.h) with it.

    The spec's "policy" object is a confine policy: its field names belong to
    confine (confine/README.md, "Policy") and are not repeated here. */
#ifndef KENNEL_LAUNCH_H_INCLUDED
#define KENNEL_LAUNCH_H_INCLUDED

#include "confine_paths.h"

/* ---- the command line (PROTOCOL.md 10, "How the gateway starts a launcher"; 11) ---- */

/* The program's name: the gateway's default launcher, found beside the
   kennel binary or on PATH. */
#define LAUNCH_PROGRAM "kennel-launch"
#define LAUNCH_ARG_SPEC_FD "--spec-fd"
#define LAUNCH_ARG_ZYGOTE "--zygote"
#define LAUNCH_ARG_PRELOAD "--preload"
/* The fds the gateway places the spec pipe's read end and the status
   pipe's write end on (the launcher takes any number it is told). */
#define LAUNCH_SPEC_FD 3
#define LAUNCH_STATUS_FD 4

/* ---- the launch spec, one JSON object on the spec fd (PROTOCOL.md 10, "Launch spec") ---- */

#define LAUNCH_SPEC_MAX (1 << 20) /* bytes, read to EOF */
#define LAUNCH_SPEC_POLICY "policy"
#define LAUNCH_SPEC_WORKSPACE "workspace"
#define LAUNCH_SPEC_RUN_DIR "run_dir"
#define LAUNCH_SPEC_KERNEL "kernel"
#define LAUNCH_SPEC_ENV "env"
#define LAUNCH_SPEC_STATUS_FD "status_fd"
#define LAUNCH_SPEC_ZYGOTE "zygote"
/* inside "kernel": {"builtin": "python", "settings": {...}} or {"argv": [...]} */
#define LAUNCH_KERNEL_BUILTIN "builtin"
#define LAUNCH_KERNEL_SETTINGS "settings"
#define LAUNCH_KERNEL_ARGV "argv"
#define LAUNCH_BUILTIN_PYTHON "python"
/* in an argv, replaced by LAUNCH_CONNECTION_FILE */
#define LAUNCH_ARGV_CONNECTION_FILE "{connection_file}"

/* ---- the status line and the "ended" line on the status fd (PROTOCOL.md 10, "Status line") ---- */

#define LAUNCH_STATUS "status"
#define LAUNCH_STATUS_CONFINED "confined" /* with "pid", "layers" */
#define LAUNCH_STATUS_ERROR "error"       /* with "stage", "errno", "message" */
#define LAUNCH_STATUS_ENDED "ended"       /* with "wait_status", "oom_kills", "memory_bytes" */
#define LAUNCH_STATUS_PID "pid"
#define LAUNCH_STATUS_LAYERS "layers"
#define LAUNCH_STATUS_STAGE "stage"
#define LAUNCH_STATUS_ERRNO "errno"
#define LAUNCH_STATUS_MESSAGE "message"
#define LAUNCH_STATUS_WAIT_STATUS "wait_status"
#define LAUNCH_STATUS_OOM_KILLS "oom_kills"
#define LAUNCH_STATUS_MEMORY_BYTES "memory_bytes"

/* ---- what the sandbox sees (PROTOCOL.md 12) ---- */

/* The spec's run_dir is bound here; the gateway writes the kernel's
   connection file into it before the launch, with ip LAUNCH_KERNEL_IP, so
   the kernel's sockets are k-1 .. k-5 in it (on the host: run_dir/k-N). */
#define LAUNCH_RUN_DIR CONFINE_RUN_DIR
#define LAUNCH_CONNECTION_NAME "kernel.json"
#define LAUNCH_CONNECTION_FILE LAUNCH_RUN_DIR "/" LAUNCH_CONNECTION_NAME
#define LAUNCH_KERNEL_IP_NAME "k"
#define LAUNCH_KERNEL_IP LAUNCH_RUN_DIR "/" LAUNCH_KERNEL_IP_NAME
/* one socket's name in the run dir, from its port (ipc naming: ip-port) */
#define LAUNCH_KERNEL_SOCKET LAUNCH_KERNEL_IP_NAME "-%d"

/* ---- the kernel's output (PROTOCOL.md 10, "The kernel's output") ---- */

/* The most bytes of kernel output one launch writes to the launcher's stderr. */
#define LAUNCH_LOG_MAX (8 << 20)

/* ---- the fork server (PROTOCOL.md 11) ---- */

/* Its stderr line "kennel-launch: zygote PID ready on PATH (preloaded: ...)"
   contains this once it accepts launches. */
#define LAUNCH_ZYGOTE_READY " ready on "

/* ---- exit codes (PROTOCOL.md 10, "Exit codes") ---- */

/* kennel-launch's own; any other status is the kernel's. */
#define LAUNCH_EXIT_USAGE 2
#define LAUNCH_EXIT_REFUSED 125 /* bad spec, confinement failed, launcher or zygote lost */
#define LAUNCH_EXIT_NOEXEC 127  /* the kernel (or, from the gateway's child, the launcher) could not be exec'd */
/* The gateway's forked child, before the exec: the same status the gateway
   waits on, so these follow the shell's convention beside the launcher's. */
#define LAUNCH_EXIT_ORPHANED 125 /* the gateway was already gone */
#define LAUNCH_EXIT_NOFDS 126    /* the spec and status fds could not be placed */

#endif
