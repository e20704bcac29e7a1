/*  run.c - the launcher's last part: confines this process, writes the
    status line, then runs the kernel in it (the built-in Python kernel) or
    execs the command. main.c and the zygote's child (zygote.c) both end
    here. */
#include "launch.h"
#ifdef KENNEL_LAUNCH_PYKERNEL
#include "pykernel.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The built-in kernel's status line waits until its sockets are bound
   (pykernel's on_bound): the gateway connects as soon as it reads it, and a
   connect to a socket not bound yet is retried only after ZeroMQ's
   reconnect interval. Written at the latest when the kernel returns. */
static struct {
    int fd;
    json_t *line;
} s_status = { -1, NULL };

static void
status_flush (void *arg)
{
    (void) arg;
    launch_status_write (s_status.fd, s_status.line);
    s_status.fd = -1;
    s_status.line = NULL;
}

static int
run_python (const launch_kernel_t *kernel)
{
#ifdef KENNEL_LAUNCH_PYKERNEL
    if (kernel->forked && launch_zygote_child_fixup () != 0) {
        status_flush (NULL);
        return LAUNCH_EXIT_REFUSED;
    }
    pykernel_options_t options = { .settings = kernel->settings, .on_bound = status_flush };
    int status = pykernel_run (kernel->connection_file, &options);
    status_flush (NULL);
    return status;
#else
    /* Until kernel-launcher/pykernel's library lands in this tree. */
    fprintf (stderr, "kennel-launch: this build has no built-in Python kernel (%s)\n", kernel->connection_file);
    return LAUNCH_EXIT_NOEXEC;
#endif
}

_Noreturn static void
run_kernel (launch_kernel_t *kernel, const confine_policy_t *policy)
{
    if (kernel->builtin_python) {
        int status = run_python (kernel);
        launch_kernel_free (kernel);
        exit (status);
    }
    if (!policy) {
        fprintf (stderr, "kennel-launch: no policy\n");
        _exit (LAUNCH_EXIT_REFUSED);
    }
    extern char **environ;
    if (confine_exec_limits (policy) < 0) {
        fprintf (stderr, "kennel-launch: setrlimit(RLIMIT_DATA): %s\n", strerror (errno));
        _exit (LAUNCH_EXIT_REFUSED);
    }
    execvpe (kernel->argv[0], kernel->argv, environ);
    fprintf (stderr, "kennel-launch: exec %s: %s\n", kernel->argv[0], strerror (errno));
    _exit (LAUNCH_EXIT_NOEXEC);
}

int
launch_run_unconfined (const char *connection_file)
{
    fprintf (stderr, "kennel-launch: WARNING: --unconfined: the kernel runs WITHOUT ANY SANDBOX, with "
                     "all the rights of uid %u. Development only; never for untrusted code.\n",
             (unsigned) getuid ());
    launch_kernel_t kernel = { .builtin_python = true, .connection_file = confine_xstrdup (connection_file) };
    int status = run_python (&kernel);
    launch_kernel_free (&kernel);
    return status;
}

/* Nothing runs: the launcher's own stderr and the status line say why. */
_Noreturn static void
refuse (confine_policy_t *policy, launch_kernel_t *kernel, int status_fd, const char *stage, int err,
        const char *message)
{
    launch_logpump_finish ();
    fprintf (stderr, "kennel-launch: confinement refused: %s: %s\n", stage, message);
    launch_status_error (status_fd, stage, err, message);
    launch_kernel_free (kernel);
    confine_policy_destroy (&policy);
    exit (LAUNCH_EXIT_REFUSED);
}

_Noreturn void
launch_confine_and_run (confine_policy_t *policy, launch_kernel_t *kernel, int status_fd)
{
    if (status_fd > 2) {
        /* Kept open through confinement, closed after the status line. */
        fcntl (status_fd, F_SETFD, FD_CLOEXEC);
        if (confine_policy_keep_fd (policy, status_fd) < 0)
            refuse (policy, kernel, status_fd, "fds", 0, "the policy keeps too many file descriptors open");
    }
    confine_report_t *report = NULL;
    confine_error_t error;
    fflush (NULL);
    if (launch_waiter_prepare (policy, kernel, status_fd) < 0) {
        int err = errno;
        char message[128];
        snprintf (message, sizeof message, "the kernel's log pipe (pipe, fork): %s", strerror (err));
        refuse (policy, kernel, status_fd, "setup", err, message);
    }
    if (confine_enter (policy, &report, &error) < 0)
        refuse (policy, kernel, status_fd, error.stage, error.err, error.message);
    /* Confined from here on. */
    if (kernel->builtin_python) {
        s_status.fd = status_fd;
        s_status.line = launch_status_confined_json (report);
    }
    else
        launch_status_confined (status_fd, report);
    confine_report_destroy (&report);
    if (kernel->builtin_python)
        confine_policy_destroy (&policy);
    run_kernel (kernel, policy);
}
