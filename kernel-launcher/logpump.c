/*  logpump.c - the kernel's stdout and stderr reach the host log through a
    pipe, never as the log file itself.

    The launcher's fds 1 and 2 are the host log (the gateway's
    conv/<id>/kernel.log). Handed to the sandbox as they are, the kernel
    could ftruncate that file or write lines that look like the launcher's.
    Before confinement the launcher keeps a private, close-on-exec copy of
    its fd 2, puts one pipe's write end at 1 and 2 (what the sandbox
    inherits: the sandbox closes every other fd) and forks the pump, a
    process outside the sandbox that copies the pipe into the log with each
    line marked "[kernel] ", control characters escaped, and at most
    LAUNCH_LOG_MAX bytes per launch: past that, output is read and dropped,
    so a kernel can neither fill the disk nor block on a full pipe. The
    waiter takes its own fds back in launch_logpump_finish, when the sandbox
    has ended, and waits for the pump to log the last bytes. */
#include "launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MARK "[kernel] "
#define FINISH_WAIT_MS 2000
/* One read of the pipe; the log buffer holds it escaped (a byte becomes at
   most 4, "\xNN") with room for a mark, so a read is usually one write. */
#define PUMP_READ 4096
#define PUMP_OUT (4 * PUMP_READ + 64)

static struct {
    int log_fd;     /* the launcher's own stderr (the log), kept aside */
    int out_fd;     /* and its own stdout */
    pid_t pid;      /* the pump */
} s_pump = { -1, -1, -1 };

typedef struct {
    int log_fd;
    unsigned long long written, dropped;
    bool line_start;
    char out[PUMP_OUT];
    size_t out_len;
} pump_t;

static void
pump_flush (pump_t *self)
{
    launch_write_all (self->log_fd, self->out, self->out_len);
    self->out_len = 0;
}

/* One byte of kernel output into the log's form; false once the cap is
   reached (the caller drops the rest). */
static bool
pump_byte (pump_t *self, unsigned char c)
{
    char piece[sizeof MARK + 8];
    size_t len = 0;
    if (self->line_start) {
        memcpy (piece, MARK, sizeof MARK - 1);
        len = sizeof MARK - 1;
    }
    if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f))
        piece[len++] = (char) c;
    else
        len += (size_t) snprintf (piece + len, sizeof piece - len, "\\x%02x", c);
    if (self->written + len + 1 > LAUNCH_LOG_MAX)
        return false;
    if (self->out_len + len > sizeof self->out)
        pump_flush (self);
    memcpy (self->out + self->out_len, piece, len);
    self->out_len += len;
    self->written += len;
    self->line_start = c == '\n';
    return true;
}

static void
pump_chunk (pump_t *self, const unsigned char *data, size_t len)
{
    size_t i = 0;
    if (!self->dropped)
        while (i < len && pump_byte (self, data[i]))
            i++;
    if (i == len) {
        pump_flush (self);
        return;
    }
    if (!self->dropped) {
        pump_flush (self);
        if (!self->line_start)
            launch_write_all (self->log_fd, "\n", 1);
        dprintf (self->log_fd, "kennel-launch: the kernel wrote more than %d bytes to this log: the rest is "
                 "dropped\n", LAUNCH_LOG_MAX);
    }
    self->dropped += len - i;
}

_Noreturn static void
pump_run (int read_fd, int log_fd)
{
    /* what the gateway sends the kernel is not for the pump: it ends at EOF */
    signal (SIGINT, SIG_IGN);
    signal (SIGTERM, SIG_IGN);
    signal (SIGHUP, SIG_IGN);
    signal (SIGPIPE, SIG_IGN);
    pump_t self = { .log_fd = log_fd, .line_start = true };
    unsigned char buf[PUMP_READ];
    for (;;) {
        ssize_t n = read (read_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        pump_chunk (&self, buf, (size_t) n);
    }
    pump_flush (&self);
    if (!self.line_start && !self.dropped)
        launch_write_all (log_fd, "\n", 1);
    if (self.dropped)
        dprintf (log_fd, "kennel-launch: %llu bytes of the kernel's output were dropped\n", self.dropped);
    _exit (0);
}

int
launch_logpump_start (void)
{
    int pipe_fds[2];
    s_pump.log_fd = fcntl (STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    s_pump.out_fd = fcntl (STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (s_pump.log_fd < 0 || s_pump.out_fd < 0 || pipe2 (pipe_fds, O_CLOEXEC) < 0)
        return -1;
    fflush (NULL);
    s_pump.pid = fork ();
    if (s_pump.pid < 0) {
        close (pipe_fds[0]);
        close (pipe_fds[1]);
        return -1;
    }
    if (s_pump.pid == 0) {
        /* the pump keeps the pipe's read end (0) and the log (1), nothing else */
        if (dup2 (pipe_fds[0], STDIN_FILENO) < 0 || dup2 (s_pump.log_fd, STDOUT_FILENO) < 0)
            _exit (1);
        close_range (STDERR_FILENO, ~0U, 0);
        pump_run (STDIN_FILENO, STDOUT_FILENO);
    }
    close (pipe_fds[0]);
    if (dup2 (pipe_fds[1], STDOUT_FILENO) < 0 || dup2 (pipe_fds[1], STDERR_FILENO) < 0) {
        close (pipe_fds[1]);
        launch_logpump_finish ();
        return -1;
    }
    close (pipe_fds[1]);
    return 0;
}

/* Waits up to FINISH_WAIT_MS for the pump: it ends once no process holds
   the pipe any more (the sandbox has ended when the waiter calls this). */
static void
pump_reap (void)
{
    for (int waited = 0; waitpid (s_pump.pid, NULL, WNOHANG) == 0; waited += 5) {
        if (waited >= FINISH_WAIT_MS) {
            kill (s_pump.pid, SIGKILL);
            waitpid (s_pump.pid, NULL, 0);
            break;
        }
        nanosleep (&(struct timespec) { 0, 5 * 1000 * 1000 }, NULL);
    }
    s_pump.pid = -1;
}

void
launch_logpump_finish (void)
{
    if (s_pump.out_fd >= 0) {
        dup2 (s_pump.out_fd, STDOUT_FILENO);
        close (s_pump.out_fd);
        s_pump.out_fd = -1;
    }
    if (s_pump.log_fd >= 0) {
        dup2 (s_pump.log_fd, STDERR_FILENO);
        close (s_pump.log_fd);
        s_pump.log_fd = -1;
    }
    if (s_pump.pid > 0)
        pump_reap ();
}
