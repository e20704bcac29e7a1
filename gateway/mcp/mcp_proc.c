/*  mcp_proc.c - the front's child processes: its gateway, host commands,
    forwarded MCP servers.

    Each child gets a session of its own (a timeout kills its whole group)
    and dies with the front (PR_SET_PDEATHSIG), and never writes on the
    front's stdout, which carries only protocol messages. It gets the
    front's environment but the HTTP front's token: a tool command works on
    what kernel code sends it, and needs no key to the daemon's API.
*/
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int
mcp_pidfd_open (pid_t pid)
{
    return (int) syscall (SYS_pidfd_open, pid, 0);
}

/* In the child: fd onto target, or /dev/null when fd is -1. */
static void
s_place (int fd, int target, int flags)
{
    if (fd < 0)
        fd = open ("/dev/null", flags | O_CLOEXEC);
    if (fd < 0 || dup2 (fd, target) < 0)
        _exit (126);
}

extern char **environ;

/* The environment without the variables that carry the HTTP token
   (http_settings.c); made before the fork, so the child allocates nothing. */
static char **
s_environment (void)
{
    static const char *secret[] = {"KENNEL_AUTH_TOKEN=", "KG_AUTH_TOKEN=", NULL};
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = wire_xcalloc (n + 1, sizeof *env);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        bool hidden = false;
        for (const char **s = secret; *s && !hidden; s++)
            hidden = strncmp (environ[i], *s, strlen (*s)) == 0;
        if (!hidden)
            env[kept++] = environ[i];
    }
    return env;
}

/* In the child: writes "0" into each cgroup.procs file of join (the
   child's cgroup: the wait for the kernel's RCU grace period is the
   child's, not the loop's). A failure is one line on fd 2 that the front
   recognizes (MCP_JOIN_FAILED), then exit 126. */
static void
s_join (const char *const *join)
{
    for (; join && *join; join++) {
        int fd = open (*join, O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && write (fd, "0", 1) == 1) {
            close (fd);
            continue;
        }
        char line[96];
        int n = snprintf (line, sizeof line, MCP_JOIN_FAILED " %d\n", errno);
        ssize_t rc = write (2, line, (size_t) n);
        (void) rc;
        _exit (126);
    }
}

pid_t
mcp_spawn (char *const argv[], int in_fd, int out_fd, int err_fd, const char *const *join)
{
    pid_t parent = getpid ();
    char **env = s_environment ();
    pid_t pid = fork ();
    if (pid != 0) {
        free (env);
        return pid;
    }
    setsid ();
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    if (getppid () != parent)
        _exit (125);
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    signal (SIGPIPE, SIG_DFL);
    s_place (in_fd, 0, O_RDONLY);
    s_place (out_fd >= 0 ? out_fd : 2, 1, O_WRONLY);
    if (err_fd >= 0)
        s_place (err_fd, 2, O_WRONLY);
    s_join (join);
    /* the front's sockets and pipes stay its own: all of them, since a
       daemon lifts its fd limit far above 1024 */
    if (syscall (SYS_close_range, 3, ~0U, 0) < 0)
        for (int fd = 3; fd < 65536; fd++)
            close (fd);
    execvpe (argv[0], argv, env);
    _exit (127);
}

void
mcp_tool_log (const char *via, const char *name, const char *status, double seconds, size_t bytes)
{
    /* kernel code makes calls at will: rate-limited, like the gateway's tool_call */
    gw_log_limited ("mcp/tool_call", "mcp_tool_call", "{s:s, s:s, s:s, s:f, s:I}", "via", via, "tool", name, "status",
                    status, "seconds", seconds, "bytes", (json_int_t) bytes);
}
