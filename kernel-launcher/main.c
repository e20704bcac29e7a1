/*  main.c - kennel-launch-full: the command line and its four modes; a
    confined launch ends in run.c, the fork server in zygote.c. See
    README.md for the command line and the launch spec. */
#include "launch.h"

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
        return launch_run_unconfined (opt.connection_file);
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
