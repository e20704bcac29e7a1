/*  oom_check.h - the allocation policy seen from outside, shared by the unit
    tests of libwire and libconfine: a child process allocates what cannot
    be had and must die by SIGABRT with "kennel: out of memory" on stderr,
    never go on with a NULL. */
#ifndef OOM_CHECK_H_INCLUDED
#define OOM_CHECK_H_INCLUDED

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* More than any malloc can give (and over ASan's limit). */
#define OOM_SIZE ((size_t) 1 << 62)

/* Runs this program again as `prog --oom-child what`; 0 when it died as
   the policy says. */
static int
oom_check (const char *what)
{
    int fds[2];
    if (pipe (fds) < 0)
        return 1;
    pid_t pid = fork ();
    if (pid == 0) {
        dup2 (fds[1], STDERR_FILENO);
        /* ASan otherwise reports the size itself instead of returning NULL. */
        setenv ("ASAN_OPTIONS", "allocator_may_return_null=1:detect_leaks=0", 1);
        execl ("/proc/self/exe", "oom-child", "--oom-child", what, (char *) NULL);
        _exit (127);
    }
    close (fds[1]);
    char out[512] = "";
    size_t len = 0;
    ssize_t n;
    while (len < sizeof out - 1 && (n = read (fds[0], out + len, sizeof out - 1 - len)) > 0)
        len += (size_t) n;
    out[len] = 0;
    close (fds[0]);
    int status = 0;
    waitpid (pid, &status, 0);
    bool ok = WIFSIGNALED (status) && WTERMSIG (status) == SIGABRT && strstr (out, "kennel: out of memory\n");
    printf (" * out of memory in %s: %s\n", what, ok ? "OK" : "FAILED");
    if (!ok)
        fprintf (stderr, "status %#x, stderr: %s\n", status, out);
    return ok ? 0 : 1;
}

#endif
