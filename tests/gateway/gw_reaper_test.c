/*  gw_reaper_test.c - self-test of the state dir's reaper (make check):

    gw_reaper  a child makes a dir with files in it, starts its reaper and
               ends: by exit, and by SIGKILL (no code of its own runs). Each
               time the dir is gone within 10 s; while the child lives (it
               waits on a pipe) the dir stays, and a SIGTERM to the child's
               process group ends the child but not the reaper.

    Exit 0 when every check passed; each failure prints one line.
*/
#include "gateway/gw_reaper.h"
#include "tests/gateway/gw_check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool
exists (const char *path)
{
    struct stat st;
    return lstat (path, &st) == 0;
}

static bool
gone_within (const char *path, int seconds)
{
    for (int i = 0; i < seconds * 100; i++) {
        if (!exists (path))
            return true;
        nanosleep (&(struct timespec) {0, 10 * 1000 * 1000}, NULL);
    }
    return false;
}

/* A child in a process group of its own: a dir with a file, its reaper,
   then it waits for the parent's byte (or its end). */
static pid_t
child_with_reaper (const char *dir, int *go)
{
    int fds[2];
    if (pipe (fds) < 0)
        return -1;
    pid_t pid = fork ();
    if (pid == 0) {
        close (fds[1]);
        setpgid (0, 0);
        char file[300];
        snprintf (file, sizeof file, "%s/state", dir);
        if (mkdir (dir, 0700) < 0 || close (open (file, O_WRONLY | O_CREAT, 0600)) < 0 || gw_reaper_start (dir) < 0)
            _exit (2);
        char c;
        _exit (read (fds[0], &c, 1) == 1 ? 0 : 3);
    }
    close (fds[0]);
    *go = fds[1];
    return pid;
}

static void
test_end (const char *base, const char *how)
{
    char dir[256];
    snprintf (dir, sizeof dir, "%s/%s", base, how);
    int go;
    pid_t pid = child_with_reaper (dir, &go);
    CHECK (pid > 0);
    for (int i = 0; i < 500 && !exists (dir); i++)
        nanosleep (&(struct timespec) {0, 10 * 1000 * 1000}, NULL);
    nanosleep (&(struct timespec) {0, 100 * 1000 * 1000}, NULL);
    CHECK (exists (dir)); /* the child lives: its dir stays */
    if (strcmp (how, "exit") == 0)
        CHECK (write (go, "x", 1) == 1);
    else if (strcmp (how, "sigkill") == 0)
        kill (pid, SIGKILL);
    else
        kill (-pid, SIGTERM); /* the group: the reaper has a session of its own */
    int status;
    CHECK (waitpid (pid, &status, 0) == pid);
    CHECK (gone_within (dir, 10));
    close (go);
}

int
main (void)
{
    char base[] = "/tmp/gw_reaper_test-XXXXXX";
    if (!mkdtemp (base)) {
        perror ("mkdtemp");
        return 1;
    }
    test_end (base, "exit");
    test_end (base, "sigkill");
    test_end (base, "sigterm-group");
    CHECK (rmdir (base) == 0);
    printf ("gw_reaper_test: %s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
