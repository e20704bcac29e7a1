/*  gw_zygote.c - the gateway's one fork server (kennel-launch --zygote).

    Started by `kennel serve` (never in kernelspec mode), as the launchers
    are: same uid, a clean environment, its stderr into the gateway's log.
    Its stderr comes through a pipe into the loop: each line is logged as a
    JSON event (the log stays one JSON object per line), and its "ready on"
    line (written once CPython and the --preload modules are up and the
    socket listens) makes it ready; until then, and while it is being restarted,
    specs carry no "zygote" field and kernels start directly (the launcher's
    proxy also falls back by itself when the socket does not answer). A
    zygote that dies is logged and restarted, a bounded number of times.
    At shutdown it is stopped after the kernels, and its socket removed.
*/
#include "gw_zygote.h"
#include "gw_config.h"
#include "gw_launch.h"
#include "gw_log.h"
#include "gw_server_access.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ZYGOTE_LINE_MAX      2048
#define ZYGOTE_RESTART_MS    500
#define ZYGOTE_MAX_RESTARTS  5

struct gw_zygote {
    gw_server_t *server;
    char *socket_path;
    char *preload; /* "a,b" or NULL */
    pid_t pid;     /* 0 when not running */
    zmq_pollitem_t pid_item;
    zmq_pollitem_t err_item; /* read end of its stderr, fd -1 when closed */
    char line[ZYGOTE_LINE_MAX];
    size_t line_len;
    int restart_timer;
    int restarts;
    bool ready;
    double started;
};

static void zygote_spawn (gw_zygote_t *self);

static void
child_exec (const char *launcher, const char *socket_path, const char *preload, int err_w)
{
    int devnull = open ("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2 (devnull, 0);
        dup2 (devnull, 1);
    }
    dup2 (err_w, 2);
    closefrom (3);
    const char *argv[] = {launcher, LAUNCH_ARG_ZYGOTE, socket_path, preload ? LAUNCH_ARG_PRELOAD : NULL, preload, NULL};
    gw_launch_exec (launcher, argv);
}

static void
err_close (gw_zygote_t *self)
{
    if (self->err_item.fd < 0)
        return;
    zloop_poller_end (gw_server_loop (self->server), &self->err_item);
    close (self->err_item.fd);
    self->err_item.fd = -1;
    self->line_len = 0;
}

static void
on_line (gw_zygote_t *self, const char *line)
{
    gw_log ("fork_server_output", "{s:i, s:s}", "pid", (int) self->pid, "line", line);
    if (!self->ready && self->pid && strstr (line, LAUNCH_ZYGOTE_READY)) {
        self->ready = true;
        gw_log ("fork_server_ready", "{s:i, s:s, s:f}", "pid", (int) self->pid, "socket", self->socket_path,
                "seconds", gw_clock_mono () - self->started);
    }
}

/* Its stderr, split into lines (an overlong line is cut, never lost). */
static int
on_err_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_zygote_t *self = arg;
    char buf[4096];
    ssize_t n = read (self->err_item.fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        if (self->line_len) {
            self->line[self->line_len] = 0;
            on_line (self, self->line);
        }
        err_close (self);
        return 0;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || self->line_len == sizeof self->line - 1) {
            self->line[self->line_len] = 0;
            on_line (self, self->line);
            self->line_len = 0;
            if (buf[i] == '\n')
                continue;
        }
        self->line[self->line_len++] = buf[i];
    }
    return 0;
}

static int
on_restart (zloop_t *loop, int timer_id, void *arg)
{
    gw_zygote_t *self = arg;
    self->restart_timer = 0;
    zygote_spawn (self);
    return 0;
}

static void
describe_status (int status, char *out, size_t size)
{
    if (WIFEXITED (status))
        snprintf (out, size, "exit status %d", WEXITSTATUS (status));
    else if (WIFSIGNALED (status))
        snprintf (out, size, "killed by signal %d (SIG%s)", WTERMSIG (status), sigabbrev_np (WTERMSIG (status)) ?: "?");
    else
        snprintf (out, size, "wait status %d", status);
}

static int
on_exit_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_zygote_t *self = arg;
    int status = 0;
    if (waitpid (self->pid, &status, WNOHANG) != self->pid)
        return 0;
    zloop_poller_end (loop, &self->pid_item);
    close (self->pid_item.fd);
    self->pid_item.fd = -1;
    on_err_readable (loop, &self->err_item, self); /* its last words, if any are waiting */
    err_close (self);
    char cause[80];
    describe_status (status, cause, sizeof cause);
    bool retry = self->restarts < ZYGOTE_MAX_RESTARTS && !gw_server_stopping (self->server);
    gw_log ("fork_server_exited", "{s:i, s:s, s:b, s:i}", "pid", (int) self->pid, "cause", cause, "restarting",
            retry, "restarts", self->restarts);
    self->pid = 0;
    self->ready = false;
    /* a killed zygote leaves its socket: gone, kernels start directly, and
       the readiness check sees the next zygote's own */
    unlink (self->socket_path);
    if (retry) {
        self->restarts++;
        self->restart_timer = gw_timer_start (loop, ZYGOTE_RESTART_MS, 1, on_restart, self);
    }
    return 0;
}

static void
zygote_spawn (gw_zygote_t *self)
{
    unlink (self->socket_path);
    self->started = gw_clock_mono ();
    int err_pipe[2];
    if (pipe2 (err_pipe, O_CLOEXEC) < 0) {
        gw_log ("fork_server_failed", "{s:s, s:s}", "step", "pipe", "message", strerror (errno));
        return;
    }
    pid_t pid = gw_launch_fork ();
    if (pid < 0) {
        gw_log ("fork_server_failed", "{s:s, s:s}", "step", "fork", "message", strerror (errno));
        close (err_pipe[0]), close (err_pipe[1]);
        return;
    }
    if (pid == 0)
        child_exec (gw_server_config (self->server)->launcher, self->socket_path, self->preload, err_pipe[1]);
    close (err_pipe[1]);
    fcntl (err_pipe[0], F_SETFL, O_NONBLOCK);
    self->err_item = (zmq_pollitem_t){NULL, err_pipe[0], ZMQ_POLLIN, 0};
    zloop_poller (gw_server_loop (self->server), &self->err_item, on_err_readable, self);
    int pidfd = (int) syscall (SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {
        gw_log ("fork_server_failed", "{s:s, s:s}", "step", "pidfd_open", "message", strerror (errno));
        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
        return;
    }
    self->pid = pid;
    self->pid_item = (zmq_pollitem_t){NULL, pidfd, ZMQ_POLLIN, 0};
    zloop_poller (gw_server_loop (self->server), &self->pid_item, on_exit_readable, self);
    gw_log ("fork_server_start", "{s:i, s:s, s:s}", "pid", (int) pid, "socket", self->socket_path, "preload",
            self->preload ? self->preload : "");
}

gw_zygote_t *
gw_zygote_new (gw_server_t *server)
{
    gw_zygote_t *self = wire_xcalloc (1, sizeof *self);
    self->server = server;
    self->pid_item.fd = -1;
    self->err_item.fd = -1;
    self->socket_path = wire_xasprintf ("%s/zygote.sock", gw_server_state_dir (server));
    size_t n = json_array_size (gw_server_config (server)->fork_preload);
    for (size_t i = 0; i < n; i++) {
        const char *mod = json_string_value (json_array_get (gw_server_config (server)->fork_preload, i));
        char *joined = wire_xasprintf ("%s%s%s", self->preload ? self->preload : "", self->preload ? "," : "", mod);
        free (self->preload);
        self->preload = joined;
    }
    zygote_spawn (self);
    return self;
}

/* SIGTERM (the zygote removes its socket and its kernels end), a bounded
   wait, then SIGKILL. */
void
gw_zygote_destroy (gw_zygote_t **self_p)
{
    gw_zygote_t *self = *self_p;
    if (!self)
        return;
    zloop_t *loop = gw_server_loop (self->server);
    if (self->restart_timer)
        gw_timer_end (loop, self->restart_timer);
    if (self->pid) {
        zloop_poller_end (loop, &self->pid_item);
        close (self->pid_item.fd);
        kill (self->pid, SIGTERM);
        double deadline = gw_clock_mono () + 5.0;
        while (waitpid (self->pid, NULL, WNOHANG) == 0) {
            if (gw_clock_mono () > deadline) {
                kill (self->pid, SIGKILL);
                waitpid (self->pid, NULL, 0);
                break;
            }
            usleep (10000);
        }
        on_err_readable (loop, &self->err_item, self);
        gw_log ("fork_server_stopped", "{s:i}", "pid", (int) self->pid);
    }
    err_close (self);
    unlink (self->socket_path);
    free (self->socket_path);
    free (self->preload);
    free (self);
    *self_p = NULL;
}

const char *
gw_zygote_socket (const gw_zygote_t *self)
{
    return self && self->ready ? self->socket_path : NULL;
}

void
gw_zygote_apply (const gw_zygote_t *self, json_t *spec)
{
    json_t *kernel = json_object_get (spec, LAUNCH_SPEC_KERNEL);
    if (gw_zygote_socket (self) && json_object_get (kernel, LAUNCH_KERNEL_BUILTIN))
        json_object_set_new (spec, LAUNCH_SPEC_ZYGOTE, json_string (self->socket_path));
}

json_t *
gw_zygote_info (const gw_zygote_t *self, const gw_config_t *config)
{
    return json_pack ("{s:b, s:b, s:O, s:i, s:i}", "enabled", config->fork_server && self != NULL, "ready",
                      gw_zygote_socket (self) != NULL, "preload", config->fork_preload, "pid",
                      self ? (int) self->pid : 0, "restarts", self ? self->restarts : 0);
}
