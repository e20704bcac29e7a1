/*  confine_paths.h - where the sandbox puts what the caller hands it: the
    paths a confined process sees for the policy's workspace and run_dir.
    Macros only, no #include: kernel-launcher/kennel_launch.h passes them on
    to the gateway (which writes the kernel's connection file with paths
    inside /run/kennel) without bringing the rest of confine.h along. */
#ifndef CONFINE_PATHS_H_INCLUDED
#define CONFINE_PATHS_H_INCLUDED

/* policy->workspace is bound here (else a private tmpfs); the working
   directory and HOME. */
#define CONFINE_WORKSPACE_DIR "/workspace"
/* policy->run_dir is bound here, read-write (none without a run_dir). */
#define CONFINE_RUN_DIR "/run/kennel"

#endif
