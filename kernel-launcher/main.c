/*  main.c - kennel-launch: confines itself with libconfine, then runs a
    kernel in the same process (the built-in Python kernel) or execs a
    command. See README.md for the command line and the launch spec. */
#include "launch.h"
#ifdef KENNEL_LAUNCH_PYKERNEL
#include "pykernel.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *policy_file;
    int report_fd;
    int spec_fd;
    bool python;
    bool unconfined;
    const char *connection_file;
    const char *zygote;         /* --zygote SOCKET_PATH: be the fork server */
    const char *preload;        /* --preload mod1,mod2 (with --zygote) */
    char **argv;        /* the command after -- */
} options_t;

static void
usage (FILE *out)
{
    fprintf (out,
             "usage: kennel-launch [--policy FILE] [--report-fd N] -- CMD [ARGS...]\n"
             "       kennel-launch [--policy FILE] [--report-fd N] --python -f CONNECTION_FILE\n"
             "       kennel-launch --unconfined --python -f CONNECTION_FILE   (no sandbox: development only)\n"
             "       kennel-launch --spec-fd N                                (the gateway's launch spec)\n"
             "       kennel-launch --zygote SOCKET_PATH [--preload MOD1,MOD2]   (fork server for --spec-fd)\n");
}

static int
parse_fd (const char *text, int *fd)
{
    char *end;
    long value = strtol (text, &end, 10);
    if (!*text || *end || value < 0 || value > 1 << 20 || fcntl ((int) value, F_GETFD) < 0)
        return -1;
    *fd = (int) value;
    return 0;
}

static int
parse_args (int argc, char **argv, options_t *opt)
{
    memset (opt, 0, sizeof *opt);
    opt->report_fd = opt->spec_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp (arg, "--") == 0) {
            opt->argv = argv + i + 1;
            break;
        } else if (strcmp (arg, "--policy") == 0 && next) {
            opt->policy_file = next;
            i++;
        } else if ((strcmp (arg, "--report-fd") == 0 || strcmp (arg, LAUNCH_ARG_SPEC_FD) == 0) && next) {
            if (parse_fd (next, arg[2] == 'r' ? &opt->report_fd : &opt->spec_fd) < 0) {
                fprintf (stderr, "kennel-launch: %s %s: not an open file descriptor\n", arg, next);
                return -1;
            }
            i++;
        } else if (strcmp (arg, LAUNCH_ARG_ZYGOTE) == 0 && next) {
            opt->zygote = next;
            i++;
        } else if (strcmp (arg, LAUNCH_ARG_PRELOAD) == 0 && next) {
            opt->preload = next;
            i++;
        } else if (strcmp (arg, "--python") == 0)
            opt->python = true;
        else if (strcmp (arg, "--unconfined") == 0)
            opt->unconfined = true;
        else if (strcmp (arg, "-f") == 0 && next) {
            opt->connection_file = next;
            i++;
        } else if (strcmp (arg, "--help") == 0 || strcmp (arg, "-h") == 0) {
            usage (stdout);
            exit (0);
        } else {
            fprintf (stderr, "kennel-launch: unknown or incomplete argument \"%s\"\n", arg);
            return -1;
        }
    }
    int modes = (opt->argv && opt->argv[0]) + opt->python + (opt->spec_fd >= 0) + (opt->zygote != NULL);
    if (modes != 1 || (opt->preload && !opt->zygote)
        || (opt->zygote && (opt->policy_file || opt->report_fd >= 0 || opt->unconfined)) || (opt->python && !opt->connection_file) || (opt->unconfined && !opt->python)
        || (opt->spec_fd >= 0 && (opt->policy_file || opt->report_fd >= 0))) {
        usage (stderr);
        return -1;
    }
    return 0;
}

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

/* The development mode: the Python kernel with no sandbox at all. */
static int
run_unconfined (const options_t *opt)
{
    fprintf (stderr, "kennel-launch: WARNING: --unconfined: the kernel runs WITHOUT ANY SANDBOX, with "
                     "all the rights of uid %u. Development only; never for untrusted code.\n",
             (unsigned) getuid ());
    launch_kernel_t kernel = { .builtin_python = true, .connection_file = confine_xstrdup (opt->connection_file) };
    int status = run_python (&kernel);
    launch_kernel_free (&kernel);
    return status;
}

/* Builds the policy and the kernel from the command line or the spec
   (whose text stays in *text for a zygote). */
static int
prepare (const options_t *opt, confine_policy_t *policy, launch_kernel_t *kernel, int *status_fd, char **text)
{
    char err[LAUNCH_ERR_MAX];
    if (opt->spec_fd >= 0) {
        *text = launch_spec_read_text (opt->spec_fd, err, sizeof err);
        close (opt->spec_fd);
        int rc = *text ? launch_spec_parse (*text, policy, kernel, status_fd, err, sizeof err) : -1;
        if (rc < 0) {
            fprintf (stderr, "kennel-launch: %s\n", err);
            if (*status_fd >= 0 && fcntl (*status_fd, F_GETFD) >= 0)
                launch_status_error (*status_fd, "spec", 0, err);
            return -1;
        }
        if (*status_fd >= 0 && fcntl (*status_fd, F_GETFD) < 0) {
            fprintf (stderr, "kennel-launch: launch spec: status_fd %d is not open\n", *status_fd);
            return -1;
        }
        return 0;
    }
    *status_fd = opt->report_fd;
    if (opt->policy_file && confine_policy_load_file (policy, opt->policy_file, err, sizeof err) < 0) {
        fprintf (stderr, "kennel-launch: %s\n", err);
        launch_status_error (*status_fd, "policy", 0, err);
        return -1;
    }
    if (opt->python) {
        /* The connection file's directory becomes /run/kennel inside. */
        char *copy = confine_xstrdup (opt->connection_file), *copy2 = confine_xstrdup (opt->connection_file);
        char *dir = realpath (dirname (copy), NULL);
        size_t len = strlen (LAUNCH_RUN_DIR) + strlen (basename (copy2)) + 2;
        kernel->connection_file = confine_xmalloc (len);
        snprintf (kernel->connection_file, len, "%s/%s", LAUNCH_RUN_DIR, basename (copy2));
        free (copy);
        free (copy2);
        if (!dir) {
            fprintf (stderr, "kennel-launch: %s: %s\n", opt->connection_file, strerror (errno));
            return -1;
        }
        free (policy->run_dir);
        policy->run_dir = dir;
        kernel->builtin_python = true;
        return 0;
    }
    size_t n = 0;
    while (opt->argv[n])
        n++;
    kernel->argv = confine_xcalloc (n + 1, sizeof (char *));
    for (size_t i = 0; i < n; i++)
        kernel->argv[i] = confine_xstrdup (opt->argv[i]);
    return 0;
}

/* A spec that names a zygote: the kernel starts there and this process
   stays as its proxy. -1: not done (no zygote, or unreachable). */
static int
try_zygote (const launch_kernel_t *kernel, const char *text, int status_fd)
{
    if (!kernel->zygote)
        return -1;
    if (!kernel->builtin_python) {
        fprintf (stderr, "kennel-launch: the zygote serves only the builtin Python kernel; "
                         "starting this command directly\n");
        return -1;
    }
    return launch_zygote_proxy (kernel->zygote, text, status_fd);
}

int
main (int argc, char **argv)
{
    options_t opt;
    if (parse_args (argc, argv, &opt) < 0)
        return LAUNCH_EXIT_USAGE;
    if (opt.unconfined)
        return run_unconfined (&opt);
    if (opt.zygote)
        return launch_zygote_serve (opt.zygote, opt.preload);

    confine_policy_t *policy = confine_policy_new ();
    launch_kernel_t kernel = { 0 };
    int status_fd = -1;
    char *text = NULL;
    int rc = prepare (&opt, policy, &kernel, &status_fd, &text) < 0 ? LAUNCH_EXIT_REFUSED : try_zygote (&kernel, text, status_fd);
    free (text);
    if (rc >= 0) {
        launch_kernel_free (&kernel);
        confine_policy_destroy (&policy);
        return rc;
    }
    launch_confine_and_run (policy, &kernel, status_fd);
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
