/*  front.c - kennel-launch: the launcher's small front.

    The gateway execs kennel-launch once per kernel. With the fork server
    (a spec that names a "zygote"), this process only validates the spec,
    hands it to the zygote and stays as the proxy the gateway waits on
    (zygote_client.c): it needs no CPython, ZeroMQ or czmq. Linked with
    them, every exec loaded ~34 shared libraries and relocated libpython
    (~3.5 ms of CPU per start, `perf stat`, and libpython's relocated data
    in every proxy's PSS). This binary links only libconfine and jansson.

    Everything else (no zygote in the spec, an unreachable zygote, --python,
    --unconfined, --zygote, -- CMD, bad arguments) is the full launcher,
    kennel-launch-full (in $(pkglibexecdir) once installed, next to this
    binary in the build tree), exec'd with the same arguments; a spec it
    has read already goes along in a memfd. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FULL_NAME "kennel-launch-full"

/* argv[0] as this process got it: the full launcher keeps it, so ps and
   /proc/PID/cmdline show the same name as before the split */
static char *s_argv0;

/* Where the full launcher is, from where this binary is (/proc/self/exe,
   never PATH): installed in ROOT$(bindir), it is
   ROOT$(pkglibexecdir)/kennel-launch-full (ROOT is "" when installed, or
   a `make install DESTDIR=` staging directory); anywhere else (the build
   tree, a copy) it is the one next to this binary. */
static bool
full_path (char *path, size_t size)
{
    char self[PATH_MAX];
    errno = 0;
    ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
    char *slash = n > 0 ? memrchr (self, '/', (size_t) n) : NULL;
    if (!slash)
        return false;
    *slash = 0;
    size_t dir_len = (size_t) (slash - self), bindir_len = strlen (KENNEL_BINDIR);
    bool installed = dir_len >= bindir_len && strcmp (self + dir_len - bindir_len, KENNEL_BINDIR) == 0;
    int len = installed ? snprintf (path, size, "%.*s%s/%s", (int) (dir_len - bindir_len), self,
                                    KENNEL_PKGLIBEXECDIR, FULL_NAME)
                        : snprintf (path, size, "%s/%s", self, FULL_NAME);
    return len > 0 && (size_t) len < size;
}

_Noreturn static void
exec_full (char **argv)
{
    char path[PATH_MAX];
    if (!full_path (path, sizeof path)) {
        fprintf (stderr, "kennel-launch: cannot find %s: readlink /proc/self/exe: %s\n", FULL_NAME,
                 errno ? strerror (errno) : "no directory, or the path is too long");
        _exit (LAUNCH_EXIT_REFUSED);
    }
    argv[0] = s_argv0 ? s_argv0 : path;
    extern char **environ;
    execve (path, argv, environ);
    fprintf (stderr, "kennel-launch: exec %s: %s\n", path, strerror (errno));
    _exit (LAUNCH_EXIT_REFUSED);
}

/* The full launcher with a spec this process has read: the text goes in a
   memfd (inherited, read from the start) named by --spec-fd. */
_Noreturn static void
exec_full_with_spec (const char *text)
{
    int fd = memfd_create ("kennel-launch-spec", 0);
    size_t len = strlen (text), done = 0;
    while (fd >= 0 && done < len) {
        ssize_t n = write (fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close (fd);
            fd = -1;
            break;
        }
        done += (size_t) n;
    }
    if (fd < 0 || lseek (fd, 0, SEEK_SET) < 0) {
        fprintf (stderr, "kennel-launch: passing the launch spec on: memfd: %s\n", strerror (errno));
        _exit (LAUNCH_EXIT_REFUSED);
    }
    char num[16];
    snprintf (num, sizeof num, "%d", fd);
    char *args[] = { NULL, (char *) LAUNCH_ARG_SPEC_FD, num, NULL };
    exec_full (args);
}

/* The spec without its "zygote": the full launcher must not ask again the
   zygote that just could not be reached. */
static char *
spec_without_zygote (const char *text)
{
    json_t *spec = json_loads (text, 0, NULL);
    if (!spec)
        return NULL;
    json_object_del (spec, LAUNCH_SPEC_ZYGOTE);
    char *out = json_dumps (spec, JSON_COMPACT);
    json_decref (spec);
    return out;
}

static bool
spec_fd_arg (int argc, char **argv, int *fd)
{
    if (argc != 3 || strcmp (argv[1], LAUNCH_ARG_SPEC_FD) != 0)
        return false;
    char *end;
    errno = 0;
    long value = strtol (argv[2], &end, 10);
    if (errno || end == argv[2] || *end || value < 0 || value > INT_MAX)
        return false;
    *fd = (int) value;
    return true;
}

#define DECLINED (-2)

/* Proxies through the zygote when the spec asks for it and is valid;
   returns the exit status, -1 when the zygote could not take it (it said
   why on stderr), DECLINED when the full launcher must see the spec as it
   is (to report it, or to run an argv kernel directly as it says). */
static int
try_proxy (const char *text)
{
    char err[LAUNCH_ERR_MAX];
    int status_fd = -1;
    confine_policy_t *policy = confine_policy_new ();
    launch_kernel_t kernel = { 0 };
    int rc = DECLINED;
    /* an invalid spec, a bad status_fd or an argv kernel: the full launcher
       reports them exactly as it always has */
    if (launch_spec_parse (text, policy, &kernel, &status_fd, err, sizeof err) == 0 && kernel.zygote
        && kernel.builtin_python && status_fd >= 0 && fcntl (status_fd, F_GETFD) >= 0)
        rc = launch_zygote_proxy (kernel.zygote, text, status_fd);
    launch_kernel_free (&kernel);
    confine_policy_destroy (&policy);
    return rc;
}

int
main (int argc, char **argv)
{
    s_argv0 = argv[0];
    confine_alloc_json ();
    int spec_fd;
    if (!spec_fd_arg (argc, argv, &spec_fd))
        exec_full (argv);
    char err[LAUNCH_ERR_MAX];
    char *text = launch_spec_read_text (spec_fd, err, sizeof err);
    close (spec_fd);
    if (!text) {
        fprintf (stderr, "kennel-launch: %s\n", err);
        return LAUNCH_EXIT_REFUSED;
    }
    json_t *probe = json_loads (text, 0, NULL);
    bool zygote = json_is_string (json_object_get (probe, LAUNCH_SPEC_ZYGOTE));
    json_decref (probe);
    if (!zygote)
        exec_full_with_spec (text);
    int rc = try_proxy (text);
    if (rc >= 0) {
        free (text);
        return rc;
    }
    if (rc == DECLINED)
        exec_full_with_spec (text);
    char *direct = spec_without_zygote (text);
    exec_full_with_spec (direct ? direct : text);
}
