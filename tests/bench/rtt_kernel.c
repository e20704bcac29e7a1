/*  rtt_kernel.c - a kernel started by bench_rtt itself, with no gateway in
    between: kennel-launch --unconfined --python -f FILE on free loopback tcp
    ports, the transport jupyter clients use towards the gateway too.
*/
#include "bench_rtt.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct rtt_kernel {
    char dir[64];
    char path[128];
    wire_connection_t *conn;
    pid_t pid;
};

/* n free loopback ports: all bound to port 0 at once so they differ, then
   closed for the kernel to bind (a race only with unrelated programs). */
static int
s_free_ports (int *ports, int n)
{
    int fds[8];
    int rc = 0, opened = 0;
    for (; opened < n && rc == 0; opened++) {
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK)};
        socklen_t len = sizeof addr;
        fds[opened] = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[opened] < 0 || bind (fds[opened], (struct sockaddr *) &addr, len) < 0
            || getsockname (fds[opened], (struct sockaddr *) &addr, &len) < 0)
            rc = -1;
        else
            ports[opened] = ntohs (addr.sin_port);
    }
    for (int i = 0; i < opened; i++)
        if (fds[i] >= 0)
            close (fds[i]);
    return rc;
}

static wire_connection_t *
s_connection (void)
{
    int ports[5];
    if (s_free_ports (ports, 5) < 0) {
        perror ("bench_rtt: free ports");
        return NULL;
    }
    /* tcp on 127.0.0.1 and hmac-sha256 are wire_connection_new's defaults */
    wire_connection_t *conn = wire_connection_new ();
    wire_key_t *key = wire_key_new_random ();
    if (!conn || !key) {
        wire_connection_destroy (&conn);
        wire_key_destroy (&key);
        return NULL;
    }
    free (conn->key);
    conn->key = strdup (wire_key_text (key));
    free (conn->kernel_name);
    conn->kernel_name = strdup ("kennel-bench");
    conn->shell_port = ports[0];
    conn->iopub_port = ports[1];
    conn->stdin_port = ports[2];
    conn->control_port = ports[3];
    conn->hb_port = ports[4];
    wire_key_destroy (&key);
    return conn;
}

/* The child: output to kernel.log in the directory, then exec. */
static void
s_exec (rtt_kernel_t *self, const char *launcher)
{
    char log[160];
    snprintf (log, sizeof log, "%s/kernel.log", self->dir);
    int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2 (fd, 1);
        dup2 (fd, 2);
    }
    execl (launcher, launcher, "--unconfined", "--python", "-f", self->path, (char *) NULL);
    fprintf (stderr, "bench_rtt: exec %s: %m\n", launcher);
    _exit (127);
}

rtt_kernel_t *
rtt_kernel_start (const char *launcher)
{
    rtt_kernel_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    snprintf (self->dir, sizeof self->dir, "/tmp/kennel-bench-rtt-XXXXXX");
    if (!mkdtemp (self->dir)) {
        perror ("bench_rtt: mkdtemp");
        free (self);
        return NULL;
    }
    snprintf (self->path, sizeof self->path, "%s/kernel.json", self->dir);
    self->conn = s_connection ();
    if (!self->conn || wire_connection_save (self->conn, self->path) < 0) {
        fprintf (stderr, "bench_rtt: cannot write %s\n", self->path);
        rtt_kernel_stop (&self);
        return NULL;
    }
    self->pid = fork ();
    if (self->pid == 0)
        s_exec (self, launcher);
    if (self->pid < 0) {
        perror ("bench_rtt: fork");
        rtt_kernel_stop (&self);
        return NULL;
    }
    return self;
}

const wire_connection_t *
rtt_kernel_connection (rtt_kernel_t *self)
{
    return self->conn;
}

/* Waits up to ms for the child; true when it was reaped. */
static bool
s_reap (pid_t pid, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        if (waitpid (pid, NULL, WNOHANG) == pid)
            return true;
        usleep (10000);
    }
    return false;
}

/* Copies the kernel's log to stderr: it ended before we stopped it. */
static void
s_dump_log (const char *path)
{
    FILE *log = fopen (path, "r");
    if (!log)
        return;
    fprintf (stderr, "bench_rtt: the kernel ended by itself; its log:\n");
    char line[512];
    while (fgets (line, sizeof line, log))
        fputs (line, stderr);
    fclose (log);
}

/* Removes the log, the connection file and the directory. */
static void
s_remove_dir (rtt_kernel_t *self, bool dump)
{
    char path[160];
    snprintf (path, sizeof path, "%s/kernel.log", self->dir);
    if (dump)
        s_dump_log (path);
    unlink (path);
    unlink (self->path);
    rmdir (self->dir);
}

void
rtt_kernel_stop (rtt_kernel_t **self_p)
{
    rtt_kernel_t *self = *self_p;
    if (!self)
        return;
    bool ended_early = self->pid > 0 && waitpid (self->pid, NULL, WNOHANG) == self->pid;
    if (self->pid > 0 && !ended_early) {
        kill (self->pid, SIGTERM);
        if (!s_reap (self->pid, 5000)) {
            kill (self->pid, SIGKILL);
            waitpid (self->pid, NULL, 0);
        }
    }
    s_remove_dir (self, ended_early);
    wire_connection_destroy (&self->conn);
    free (self);
    *self_p = NULL;
}
