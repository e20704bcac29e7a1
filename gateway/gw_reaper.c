/*  gw_reaper.c - a private state dir removed however its process ends.

    A process with a state dir of its own in /tmp (`kennel kernel`,
    `kennel mcp`) removes it at a clean exit; a SIGKILL, a crash or the
    OOM killer leave it. The reaper is a child forked at start that waits
    for EOF on a pipe whose write end only that process holds
    (close-on-exec, so no launcher or tool command keeps it), then removes
    the dir. Its own session, with SIGINT, SIGTERM and SIGHUP ignored: a
    signal to the front end's process group leaves it to finish. It shares
    the front end's pid namespace: when that namespace is torn down (its
    PID 1 ends) the reaper is killed with the rest and the dir stays. It
    costs a sleeping process and two fds.
*/
#include "gw_reaper.h"
#include "gw_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static void
reaper_run (int fd, const char *dir)
{
    int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
    for (int i = 0; null >= 0 && i < 3; i++)
        dup2 (null, i); /* the front end's pipes see EOF when the process ends */
    setsid ();
    signal (SIGINT, SIG_IGN);
    signal (SIGTERM, SIG_IGN);
    signal (SIGHUP, SIG_IGN);
    char c;
    while (read (fd, &c, 1) < 0 && errno == EINTR)
        ;
    gw_fs_remove_tree (dir);
    _exit (0);
}

int
gw_reaper_start (const char *dir)
{
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork ();
    if (pid == 0) {
        close (fds[1]);
        reaper_run (fds[0], dir);
    }
    close (fds[0]);
    if (pid < 0) {
        close (fds[1]);
        return -1;
    }
    return 0; /* fds[1] stays open until this process ends */
}
