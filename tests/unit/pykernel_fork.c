/*  pykernel_fork.c - the fork-server path of libpykernel, for
    tests/kernel/test_c_channels.py: prepare CPython once, fork, and serve
    the connection file in the child; the parent waits and exits with the
    child's status. Usage: pykernel_fork -f CONNECTION_FILE */
#include "pykernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int
main (int argc, char *argv[])
{
    if (argc != 3 || strcmp (argv[1], "-f") != 0) {
        fprintf (stderr, "usage: pykernel_fork -f CONNECTION_FILE\n");
        return 2;
    }
    if (pykernel_prepare () != 0)
        return 1;
    pid_t pid = pykernel_fork ();
    if (pid < 0) {
        perror ("pykernel_fork: fork");
        return 1;
    }
    if (pid == 0)
        return pykernel_run (argv[2], NULL);
    fprintf (stderr, "pykernel_fork: serving in child %d\n", (int) pid);
    int status;
    while (waitpid (pid, &status, 0) < 0)
        ;
    return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}
