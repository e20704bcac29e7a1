/*  launch.h - kennel-launch's parts: the launch spec and the status line. */
#ifndef LAUNCH_H_INCLUDED
#define LAUNCH_H_INCLUDED

#include "confine.h"
#include <jansson.h>

/* Where the run dir appears inside, and the connection file in it. */
#define LAUNCH_RUN_DIR "/run/kennel"
#define LAUNCH_CONNECTION_FILE LAUNCH_RUN_DIR "/kernel.json"

/* The kernel a launch runs after confinement. */
typedef struct {
    bool builtin_python;        /* the embedded kernel (pykernel_run) */
    json_t *settings;           /* its settings (owned; may be NULL) */
    char **argv;                /* else: this command (owned, NULL-terminated) */
    char *connection_file;      /* for the builtin kernel, as seen inside */
} launch_kernel_t;

void launch_kernel_free (launch_kernel_t *kernel);

/* Reads the gateway's launch spec from fd (until EOF) into policy and
   kernel; *status_fd gets the spec's status_fd (-1 when absent). Returns 0,
   or -1 with one line in err. */
int launch_spec_read (int fd, confine_policy_t *policy, launch_kernel_t *kernel, int *status_fd,
                      char *err, size_t errlen);

/* One JSON line on fd, then closes it unless it is 0, 1 or 2 (fd < 0: nothing). */
void launch_status_confined (int fd, const confine_report_t *report);
void launch_status_error (int fd, const char *stage, int err, const char *message);

#endif
