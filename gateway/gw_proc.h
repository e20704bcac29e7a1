/*  gw_proc.h - a kernel's cost read from /proc (gw_proc.c).
*/
#ifndef GW_PROC_H_INCLUDED
#define GW_PROC_H_INCLUDED

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Kernel cpu seconds (utime+stime of the kernel and reaped children), rss, peak rss. */
void gw_proc_usage (pid_t pid, double *cpu_seconds, int64_t *rss_bytes, int64_t *max_rss_bytes);
void gw_proc_reset_peak (pid_t pid);
/* One execution's reading: /proc/PID/stat and status held open from start
   to end. */
typedef struct {
    int stat_fd; /* -1 when none */
    int status_fd;
    bool held;   /* counted in the fds held by executions */
    pid_t pid;
    double cpu_start;
} gw_proc_watch_t;
/* Opens both (at most 64 executions hold them: others read by pid at the
   end), reads the kernel's stat, resets its peak rss. */
void gw_proc_watch_start (gw_proc_watch_t *self, pid_t pid);
/* cpu seconds since the start and the peak rss since then (0 when the
   kernel is gone); closes the fds. */
void gw_proc_watch_end (gw_proc_watch_t *self, double *cpu_seconds, int64_t *max_rss_bytes);
void gw_proc_watch_close (gw_proc_watch_t *self);

#endif
