/*  gw_proc.c - what a kernel costs, from /proc: cpu time, rss, peak rss.

    Every execute_reply carries metadata.kennel (cpu_seconds, max_rss_bytes),
    so these reads are on the hot path. An execution opens its kernel's
    /proc/PID/stat and /proc/PID/status when it starts (the request is
    already on its way to the kernel) and reads them with pread when the
    reply is held for sending: two system calls on that path, no stdio, no
    scanf. Before, each execution cost ~30 system calls here
    (fopen/fread/fgets/sscanf of stat and status at both ends). The fds are
    held only while an execution runs, so idle conversations hold none, and
    by at most WATCH_MAX executions at once (gw_capacity.c reserves them);
    beyond that an execution reads by pid, opening the files each time. An fd on /proc/PID names that
    process, not the number: once the kernel is gone the read fails rather
    than reading a recycled pid.
*/
#include "gw_proc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WATCH_MAX 64
static int s_watching; /* executions holding their two fds */

static int
s_open_proc (pid_t pid, const char *name, int flags)
{
    char path[64];
    snprintf (path, sizeof path, "/proc/%d/%s", (int) pid, name);
    return open (path, flags | O_CLOEXEC);
}

/* The whole of a small /proc file from offset 0, NUL-terminated; length or -1. */
static ssize_t
s_read_all (int fd, char *buf, size_t size)
{
    ssize_t n = pread (fd, buf, size - 1, 0);
    buf[n > 0 ? n : 0] = 0;
    return n;
}

/* utime + stime + cutime + cstime (fields 14-17) of a stat line, in seconds. */
static double
s_stat_cpu (const char *buf)
{
    const char *p = strrchr (buf, ')'); /* comm may hold spaces and parentheses */
    if (!p)
        return 0;
    p++;
    /* after ')': state is field 3, so utime (14) is the 12th token */
    for (int field = 3; field < 14 && p; field++)
        p = strchr (p + 1, ' ');
    if (!p)
        return 0;
    unsigned long long ticks = 0;
    char *end = (char *) p;
    for (int i = 0; i < 4; i++) {
        long long v = strtoll (end, &end, 10);
        ticks += v > 0 ? (unsigned long long) v : 0;
    }
    static long hz;
    if (!hz)
        hz = sysconf (_SC_CLK_TCK);
    return (double) ticks / (double) hz;
}

/* The value in kB of "Name:" in a status text, in bytes, or 0. */
static int64_t
s_status_kb (const char *buf, const char *name)
{
    const char *p = strstr (buf, name);
    return p ? (int64_t) strtoll (p + strlen (name), NULL, 10) * 1024 : 0;
}

static void
s_status_read (int fd, int64_t *rss_bytes, int64_t *max_rss_bytes)
{
    char buf[4096];
    if (fd >= 0 && s_read_all (fd, buf, sizeof buf) > 0) {
        if (rss_bytes)
            *rss_bytes = s_status_kb (buf, "\nVmRSS:");
        *max_rss_bytes = s_status_kb (buf, "\nVmHWM:");
    }
}

static void
s_status (pid_t pid, int64_t *rss_bytes, int64_t *max_rss_bytes)
{
    int fd = s_open_proc (pid, "status", O_RDONLY);
    s_status_read (fd, rss_bytes, max_rss_bytes);
    if (fd >= 0)
        close (fd);
}

void
gw_proc_usage (pid_t pid, double *cpu_seconds, int64_t *rss_bytes, int64_t *max_rss_bytes)
{
    *cpu_seconds = 0;
    *rss_bytes = *max_rss_bytes = 0;
    if (pid <= 0)
        return;
    char buf[1024];
    int fd = s_open_proc (pid, "stat", O_RDONLY);
    if (fd >= 0) {
        if (s_read_all (fd, buf, sizeof buf) > 0)
            *cpu_seconds = s_stat_cpu (buf);
        close (fd);
    }
    s_status (pid, rss_bytes, max_rss_bytes);
}

/* Resets the kernel's peak RSS (VmHWM) so that the next reading is the
   peak of one execution, not of the kernel's life (proc(5) clear_refs). */
void
gw_proc_reset_peak (pid_t pid)
{
    if (pid <= 0)
        return;
    int fd = s_open_proc (pid, "clear_refs", O_WRONLY);
    if (fd >= 0) {
        ssize_t rc = write (fd, "5", 1);
        (void) rc; /* without the permission the peak is the kernel's lifetime peak */
        close (fd);
    }
}

void
gw_proc_watch_start (gw_proc_watch_t *self, pid_t pid)
{
    *self = (gw_proc_watch_t){.stat_fd = -1, .status_fd = -1, .pid = pid};
    if (pid <= 0)
        return;
    if (s_watching < WATCH_MAX) {
        char buf[1024];
        self->stat_fd = s_open_proc (pid, "stat", O_RDONLY);
        self->status_fd = s_open_proc (pid, "status", O_RDONLY);
        if (self->stat_fd >= 0 && s_read_all (self->stat_fd, buf, sizeof buf) > 0)
            self->cpu_start = s_stat_cpu (buf);
        self->held = true;
        s_watching++;
    }
    else {
        int64_t rss, hwm;
        gw_proc_usage (pid, &self->cpu_start, &rss, &hwm);
    }
    gw_proc_reset_peak (pid);
}

void
gw_proc_watch_end (gw_proc_watch_t *self, double *cpu_seconds, int64_t *max_rss_bytes)
{
    *cpu_seconds = 0;
    *max_rss_bytes = 0;
    char buf[1024];
    double cpu = 0;
    if (self->stat_fd >= 0 && s_read_all (self->stat_fd, buf, sizeof buf) > 0) {
        cpu = s_stat_cpu (buf) - self->cpu_start;
        s_status_read (self->status_fd, NULL, max_rss_bytes);
    }
    else if (!self->held && self->pid > 0) {
        int64_t rss;
        gw_proc_usage (self->pid, &cpu, &rss, max_rss_bytes);
        cpu -= self->cpu_start;
    }
    *cpu_seconds = cpu > 0 ? cpu : 0;
    gw_proc_watch_close (self);
}

void
gw_proc_watch_close (gw_proc_watch_t *self)
{
    if (self->stat_fd >= 0)
        close (self->stat_fd);
    if (self->status_fd >= 0)
        close (self->status_fd);
    self->stat_fd = self->status_fd = -1;
    if (self->held)
        s_watching--;
    self->held = false;
}
