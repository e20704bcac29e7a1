/*  gw_launch.c - one kennel-launch process: fork+exec, the launch spec on a
    pipe, the one-line status on another, death seen at once through a pidfd.

    The child gets the spec on fd 3 and writes its status line on fd 4; it
    runs in its own session (so a terminal's SIGINT never reaches a kernel and
    the gateway can kill the whole group). stdout/stderr go to a log file in
    the conversation's run dir: kernels may print anything and the gateway's
    stderr is a stream of JSON lines. The launcher keeps that file outside
    the sandbox; the kernel's output reaches it through the launcher's pump.

    A launcher that ends without a status line failed before confinement
    began (a missing library, a crash): the reason is its exit status or
    signal and its last lines of output, so the pipe's end waits for its
    exit (the launch timeout still bounds a launcher that lives on).

    After the status line, the pipe stays open, unwatched: the launcher's
    waiter writes {"status": "ended", "oom_kills": K, ...} there before it
    exits, which tells a kernel the memory limit killed from any other
    SIGKILL. It is read when the launcher's exit is seen.
*/
#include "gw_launch.h"
#include "gw_config.h"
#include "gw_io.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "wire.h"
#include "confine/confine.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define STATUS_MAX 65536

struct gw_launch {
    zloop_t *loop;
    pid_t pid;
    pid_t kernel_pid;
    gw_launch_state_t state;
    bool exited;
    int wait_status;
    zmq_pollitem_t status_item; /* fd -1 when closed */
    zmq_pollitem_t pid_item;    /* the pidfd, -1 when closed */
    char *status_buf;
    size_t status_len;
    json_t *status;
    char *error;
    char cause[160];
    char *log_path;     /* the launcher's stdout and stderr, NULL when none */
    off_t log_from;     /* where this launch's output begins in it */
    bool ended;         /* the waiter's "ended" line was read: */
    int end_status;     /* the kernel's wait status, */
    long oom_kills;     /* its count (-1: no memory cgroup) */
    json_int_t memory_bytes;
    gw_launch_fn *on_status;
    gw_launch_fn *on_exit;
    void *arg;
    bool abandoned;
    int in_callback; /* abandon from inside a callback defers the free */
    int kill_timer;  /* escalation to the launcher's group, 0 when none */
    bool kernel_killed; /* gw_launch_kill's SIGKILL reached the kernel */
    bool found_dead;    /* it found the kernel already gone instead */
};

/* Launchers killed but not reaped yet (close, restart, shutdown). */
static zlistx_t *abandoned_list;

static void launch_free (gw_launch_t *self);

static int
pidfd_open_ (pid_t pid)
{
    return (int) syscall (SYS_pidfd_open, pid, 0);
}

gw_launch_state_t
gw_launch_state (const gw_launch_t *self)
{
    return self->state;
}
pid_t
gw_launch_pid (const gw_launch_t *self)
{
    return self->pid;
}
pid_t
gw_launch_kernel_pid (const gw_launch_t *self)
{
    return self->kernel_pid;
}
json_t *
gw_launch_status (const gw_launch_t *self)
{
    return self->status;
}
const char *
gw_launch_cause (const gw_launch_t *self)
{
    return self->cause;
}
const char *
gw_launch_error (const gw_launch_t *self)
{
    return self->error ? self->error : "";
}

/* The launch's fds go in the conversations' epoll set when the loop has
   one (gw_io.c), so an idle conversation's pidfd costs a wake-up nothing. */
static void
watch (gw_launch_t *self, zmq_pollitem_t *item, zloop_fn *handler)
{
    gw_io_t *io = gw_io_of (self->loop);
    if (io && gw_io_poller (io, item, handler, self) == 0)
        return;
    zloop_poller (self->loop, item, handler, self);
}

static void
unwatch (gw_launch_t *self, zmq_pollitem_t *item)
{
    gw_io_t *io = gw_io_of (self->loop);
    if (io)
        gw_io_poller_end (io, item->fd);
    zloop_poller_end (self->loop, item); /* when it went to zloop (no match: nothing) */
}

static void
describe_status (int status, char *out, size_t size)
{
    if (WIFSIGNALED (status)) {
        int sig = WTERMSIG (status);
        snprintf (out, size, "killed by signal %d (SIG%s)", sig, sigabbrev_np (sig) ? sigabbrev_np (sig) : "?");
    }
    else if (WIFEXITED (status))
        snprintf (out, size, "exit status %d", WEXITSTATUS (status));
    else
        snprintf (out, size, "wait status %d", status);
}

static bool
killed_by_sigkill (const gw_launch_t *self)
{
    int status = self->exited ? self->wait_status : self->end_status;
    return WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL;
}

/* A SIGKILL is "out of memory" only on the waiter's evidence: its cgroup
   counted OOM kills. Without a memory cgroup, nobody can know. */
bool
gw_launch_out_of_memory (const gw_launch_t *self)
{
    return killed_by_sigkill (self) && self->ended && self->oom_kills > 0;
}

bool
gw_launch_found_dead (const gw_launch_t *self)
{
    return self->found_dead;
}

static void
describe_exit (const gw_launch_t *self, char *out, size_t size)
{
    int status = self->exited ? self->wait_status : self->end_status;
    if (gw_launch_out_of_memory (self))
        snprintf (out, size, "out of memory (memory_bytes %lld)", (long long) self->memory_bytes);
    else if (killed_by_sigkill (self) && self->ended && self->oom_kills < 0)
        snprintf (out, size, "killed by signal 9 (SIGKILL); cause unknown: no memory cgroup");
    else
        describe_status (status, out, size);
}

static void
status_close (gw_launch_t *self)
{
    if (self->status_item.fd >= 0) {
        unwatch (self, &self->status_item);
        close (self->status_item.fd);
        self->status_item.fd = -1;
    }
}

/* The waiter's {"status":"ended",...} line, anywhere in what was read. */
static void
end_parse (gw_launch_t *self)
{
    for (size_t at = 0; at < self->status_len;) {
        char *nl = memchr (self->status_buf + at, '\n', self->status_len - at);
        size_t len = nl ? (size_t) (nl - (self->status_buf + at)) : self->status_len - at;
        json_t *obj = json_loadb (self->status_buf + at, len, 0, NULL);
        const char *status = json_string_value (json_object_get (obj, LAUNCH_STATUS));
        if (status && streq (status, LAUNCH_STATUS_ENDED) && json_is_integer (json_object_get (obj, LAUNCH_STATUS_OOM_KILLS))) {
            self->ended = true;
            self->end_status = (int) json_integer_value (json_object_get (obj, LAUNCH_STATUS_WAIT_STATUS));
            self->oom_kills = (long) json_integer_value (json_object_get (obj, LAUNCH_STATUS_OOM_KILLS));
            self->memory_bytes = json_integer_value (json_object_get (obj, LAUNCH_STATUS_MEMORY_BYTES));
        }
        json_decref (obj);
        at += len + 1;
    }
}

/* Whatever the launcher wrote before it exited is still in the pipe. */
static void
status_read_rest (gw_launch_t *self)
{
    while (self->status_item.fd >= 0 && self->status_len < STATUS_MAX) {
        ssize_t n = read (self->status_item.fd, self->status_buf + self->status_len, STATUS_MAX - self->status_len);
        if (n <= 0)
            break;
        self->status_len += (size_t) n;
    }
}

/* At most TAIL_LINES lines of TAIL_BYTES bytes, the earliest dropped,
   joined by " | ". Printable ASCII only (the launcher's environment has no
   locale; anything else is shown as '?'), so a message stays valid UTF-8
   wherever the cut fell. */
#define TAIL_LINES 5
#define TAIL_BYTES (GW_LAUNCH_TAIL_SIZE - 4 * TAIL_LINES)

void
gw_launch_output_tail (const gw_launch_t *self, char *out, size_t size)
{
    char buf[TAIL_BYTES];
    struct stat st;
    out[0] = 0;
    int fd = self->log_path ? open (self->log_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd < 0)
        return;
    ssize_t n = -1;
    off_t from = self->log_from;
    if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode)) {
        if (st.st_size - TAIL_BYTES > from)
            from = st.st_size - TAIL_BYTES;
        n = pread (fd, buf, sizeof buf, from);
    }
    close (fd);
    if (n <= 0)
        return;
    char *start = buf, *end = buf + n;
    char *nl = memchr (buf, '\n', (size_t) n);
    if (from > self->log_from && nl) /* a partial first line */
        start = nl + 1;
    while (end > start && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    char *first = end; /* back to the start of the last TAIL_LINES lines */
    for (int lines = 0; first > start && !(first[-1] == '\n' && ++lines == TAIL_LINES); first--)
        ;
    size_t len = 0;
    for (char *c = first; c < end && len + 4 < size; c++) {
        if (*c == '\n') {
            memcpy (out + len, " | ", 3);
            len += 3;
        }
        else
            out[len++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
    }
    out[len] = 0;
}

/* The status line: {"status":"confined","pid":N,"layers":{...}} or
   {"status":"error","stage":..,"errno":..,"message":..}. */
static void
status_parse (gw_launch_t *self)
{
    json_error_t jerr;
    char *nl = memchr (self->status_buf, '\n', self->status_len);
    size_t len = nl ? (size_t) (nl - self->status_buf) : self->status_len;
    json_t *obj = len ? json_loadb (self->status_buf, len, 0, &jerr) : NULL;
    const char *status = json_string_value (json_object_get (obj, LAUNCH_STATUS));
    if (status && streq (status, LAUNCH_STATUS_CONFINED) && json_integer_value (json_object_get (obj, LAUNCH_STATUS_PID)) > 0) {
        self->status = obj;
        self->kernel_pid = (pid_t) json_integer_value (json_object_get (obj, LAUNCH_STATUS_PID));
        self->state = GW_LAUNCH_CONFINED;
        return;
    }
    self->state = GW_LAUNCH_FAILED;
    if (status && streq (status, LAUNCH_STATUS_ERROR)) {
        const char *stage = json_string_value (json_object_get (obj, LAUNCH_STATUS_STAGE));
        const char *message = json_string_value (json_object_get (obj, LAUNCH_STATUS_MESSAGE));
        /* a layer the operator may let degrade: the refusal names that
           setting too, in the config's words */
        int layer = stage ? confine_layer_from_name (stage) : -1;
        char *fix = layer >= 0 && confine_layer_degradable ((confine_layer_t) layer) ? gw_config_degrade_fix (stage)
                                                                                     : NULL;
        self->error = wire_xasprintf ("confinement failed at %s: %s%s%s", stage ? stage : "?", message ? message : "?",
                                      fix ? "; " : "", fix ? fix : "");
        free (fix);
    }
    else if (!len || (status && streq (status, LAUNCH_STATUS_ENDED))) {
        char c[sizeof self->cause], tail[GW_LAUNCH_TAIL_SIZE];
        end_parse (self); /* the kernel died before its status line */
        if (self->exited || self->ended)
            describe_exit (self, c, sizeof c);
        else
            snprintf (c, sizeof c, "closed its status pipe");
        gw_launch_output_tail (self, tail, sizeof tail);
        self->error = wire_xasprintf ("the launcher ended without a status line (%s)%s%s", c,
                                      tail[0] ? "; its last output: " : "", tail);
    }
    else
        self->error = wire_xasprintf ("the launcher's status line is not understood: %.*s",
                                      (int) (len > 200 ? 200 : len), self->status_buf);
    self->status = obj;
}

static void
status_done (gw_launch_t *self)
{
    status_read_rest (self);
    status_parse (self);
    if (self->state == GW_LAUNCH_CONFINED && !self->exited && self->status_item.fd >= 0)
        unwatch (self, &self->status_item); /* kept for the "ended" line */
    else
        status_close (self);
    if (self->on_status && !self->abandoned) {
        self->in_callback++;
        self->on_status (self, self->arg);
        self->in_callback--;
    }
}

static void abandon_finish (gw_launch_t *self);

static int
on_status_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_launch_t *self = arg;
    char buf[4096];
    ssize_t n = read (item->fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n > 0) {
        if (self->status_len + (size_t) n > STATUS_MAX)
            n = (ssize_t) (STATUS_MAX - self->status_len);
        memcpy (self->status_buf + self->status_len, buf, (size_t) n);
        self->status_len += (size_t) n;
        if (!memchr (buf, '\n', (size_t) n) && self->status_len < STATUS_MAX)
            return 0;
    }
    else if (!self->status_len && !self->exited) {
        status_close (self); /* nothing said: its exit (pidfd) is the reason */
        return 0;
    }
    status_done (self);
    if (self->abandoned)
        abandon_finish (self);
    return 0;
}

static int
on_pidfd_readable (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_launch_t *self = arg;
    int status = 0;
    pid_t rc = waitpid (self->pid, &status, WNOHANG);
    if (rc == 0)
        return 0;
    unwatch (self, &self->pid_item);
    close (self->pid_item.fd);
    self->pid_item.fd = -1;
    self->exited = true;
    self->wait_status = status;
    if (self->abandoned) {
        void *handle = zlistx_find (abandoned_list, self);
        if (handle)
            zlistx_delete (abandoned_list, handle);
        launch_free (self);
        return 0;
    }
    /* a launcher that dies before writing its status line: the pipe's EOF
       may not have been seen yet, so settle the status first */
    if (self->state == GW_LAUNCH_WAITING)
        status_done (self);
    else if (self->status_item.fd >= 0) {
        status_read_rest (self);
        status_close (self);
    }
    end_parse (self);
    describe_exit (self, self->cause, sizeof self->cause);
    if (!self->abandoned) {
        self->state = GW_LAUNCH_EXITED;
        if (self->on_exit) {
            self->in_callback++;
            self->on_exit (self, self->arg);
            self->in_callback--;
        }
    }
    if (self->abandoned)
        abandon_finish (self);
    return 0;
}

/* A launch logs at most the launcher's LAUNCH_LOG_MAX of kernel
   output, but a conversation whose kernel is restarted again and again
   would still grow its log without end. Past LOG_ROTATE_BYTES, a launch
   first moves the log to log_path.1 (replacing an older one): one
   conversation's logs stay under 2 x (LOG_ROTATE_BYTES + 8 MiB + the
   launcher's own lines). */
#define LOG_ROTATE_BYTES LAUNCH_LOG_MAX

static char *
log_older (const char *log_path)
{
    return wire_xasprintf ("%s.1", log_path);
}

static void
log_rotate (const char *log_path)
{
    struct stat st;
    char *older = log_older (log_path);
    if (older && stat (log_path, &st) == 0 && st.st_size >= LOG_ROTATE_BYTES)
        rename (log_path, older);
    free (older);
}

void
gw_launch_log_remove (const char *log_path)
{
    char *older = log_older (log_path);
    unlink (log_path);
    if (older)
        unlink (older);
    free (older);
}

static void
child_exec (const char *launcher, int spec_r, int status_w, const char *log_path)
{
    /* move the pipe ends above the target numbers first so dup2 never
       clobbers one with the other */
    int spec = fcntl (spec_r, F_DUPFD, 10), st = fcntl (status_w, F_DUPFD, 10);
    if (spec < 0 || st < 0 || dup2 (spec, LAUNCH_SPEC_FD) < 0 || dup2 (st, LAUNCH_STATUS_FD) < 0)
        _exit (LAUNCH_EXIT_NOFDS);
    int devnull = open ("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2 (devnull, 0);
    int logfd = log_path ? open (log_path, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
    if (logfd >= 0) {
        dup2 (logfd, 1);
        dup2 (logfd, 2);
    }
    closefrom (LAUNCH_STATUS_FD + 1);
    char fdarg[8];
    snprintf (fdarg, sizeof fdarg, "%d", LAUNCH_SPEC_FD);
    const char *argv[] = {launcher, LAUNCH_ARG_SPEC_FD, fdarg, NULL};
    gw_launch_exec (launcher, argv);
}

/* The gateway's pid as its children see it at fork: a gateway that died
   before the child's PR_SET_PDEATHSIG leaves it a reaper for parent, which
   is not always 1 (a subreaper), and a gateway that is PID 1 (a
   container's entrypoint) is 1 all along. */
static pid_t launch_parent;

pid_t
gw_launch_fork (void)
{
    launch_parent = getpid ();
    return fork ();
}

/* The last steps of every child that runs kennel-launch (a kernel's launcher
   here, the zygote in gw_zygote.c), once its fds are in place. */
_Noreturn void
gw_launch_exec (const char *launcher, const char *const argv[])
{
    setsid ();
    /* a gateway killed with SIGKILL must not leave launchers behind;
       SIGTERM lets the launcher stop its kernel and remove its cgroup */
    prctl (PR_SET_PDEATHSIG, SIGTERM);
    if (getppid () != launch_parent)
        _exit (LAUNCH_EXIT_ORPHANED);
    /* the gateway's signal dispositions must not leak into the kernel */
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    signal (SIGINT, SIG_DFL);
    signal (SIGTERM, SIG_DFL);
    signal (SIGPIPE, SIG_DFL);
    /* a clean environment: nothing of the gateway's (tokens, keys) reaches
       even the launcher; only a sanitizer build's own settings pass */
    char *envp[8];
    int n = 0;
    envp[n++] = "PATH=/usr/local/bin:/usr/bin:/bin";
    const char *keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", NULL};
    static char kept[3][1024];
    for (int i = 0; keep[i]; i++) {
        const char *v = getenv (keep[i]);
        if (v && snprintf (kept[i], sizeof kept[i], "%s=%s", keep[i], v) < (int) sizeof kept[i])
            envp[n++] = kept[i];
    }
    envp[n] = NULL;
    if (strchr (launcher, '/'))
        execve (launcher, (char *const *) argv, envp);
    else
        execvpe (launcher, (char *const *) argv, envp);
    dprintf (2, "kennel: exec %s: %s\n", launcher, strerror (errno));
    _exit (LAUNCH_EXIT_NOEXEC);
}

gw_launch_t *
gw_launch_start (zloop_t *loop, const char *launcher, json_t *spec, const char *log_path, gw_launch_fn *on_status,
                 gw_launch_fn *on_exit, void *arg, char **errmsg)
{
    int spec_pipe[2], status_pipe[2];
    if (pipe2 (spec_pipe, O_CLOEXEC) < 0) {
        *errmsg = wire_xstrdup ("launch: pipe for the spec failed");
        return NULL;
    }
    if (pipe2 (status_pipe, O_CLOEXEC) < 0) {
        close (spec_pipe[0]);
        close (spec_pipe[1]);
        *errmsg = wire_xstrdup ("launch: pipe for the status failed");
        return NULL;
    }
    json_object_set_new (spec, LAUNCH_SPEC_STATUS_FD, json_integer (LAUNCH_STATUS_FD));
    char *text = json_dumps (spec, JSON_COMPACT);
    struct stat st;
    if (log_path)
        log_rotate (log_path);
    off_t log_from = log_path && stat (log_path, &st) == 0 ? st.st_size : 0;
    pid_t pid = gw_launch_fork ();
    if (pid < 0) {
        free (text);
        close (spec_pipe[0]), close (spec_pipe[1]), close (status_pipe[0]), close (status_pipe[1]);
        *errmsg = wire_xstrdup ("launch: fork failed");
        return NULL;
    }
    if (pid == 0)
        child_exec (launcher, spec_pipe[0], status_pipe[1], log_path);
    close (spec_pipe[0]);
    close (status_pipe[1]);
    /* the spec is a few KB, below the pipe's buffer: this write cannot block
       on a well-behaved launcher; a dead one gives EPIPE (SIGPIPE is ignored) */
    size_t len = strlen (text), off = 0;
    while (off < len) {
        ssize_t n = write (spec_pipe[1], text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t) n;
    }
    free (text);
    close (spec_pipe[1]);

    gw_launch_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->pid = pid;
    self->state = GW_LAUNCH_WAITING;
    self->on_status = on_status;
    self->on_exit = on_exit;
    self->arg = arg;
    self->status_buf = wire_xmalloc (STATUS_MAX);
    self->log_path = log_path ? wire_xstrdup (log_path) : NULL;
    self->log_from = log_from;
    fcntl (status_pipe[0], F_SETFL, O_NONBLOCK);
    self->status_item = (zmq_pollitem_t){NULL, status_pipe[0], ZMQ_POLLIN, 0};
    watch (self, &self->status_item, on_status_readable);
    self->pid_item = (zmq_pollitem_t){NULL, pidfd_open_ (pid), ZMQ_POLLIN, 0};
    if (self->pid_item.fd < 0) {
        /* cannot watch it: kill it rather than leave an unwatched kernel */
        kill (pid, SIGKILL);
        waitpid (pid, NULL, 0);
        status_close (self);
        launch_free (self);
        *errmsg = wire_xstrdup ("launch: pidfd_open failed (Linux >= 5.3 is required)");
        return NULL;
    }
    watch (self, &self->pid_item, on_pidfd_readable);
    return self;
}

static void
launch_free (gw_launch_t *self)
{
    if (self->kill_timer)
        gw_timer_end (self->loop, self->kill_timer);
    status_close (self);
    if (self->pid_item.fd >= 0) {
        unwatch (self, &self->pid_item);
        close (self->pid_item.fd);
    }
    json_decref (self->status);
    free (self->status_buf);
    free (self->error);
    free (self->log_path);
    free (self);
}

static int
on_kill_timer (zloop_t *loop, int timer_id, void *arg)
{
    gw_launch_t *self = arg;
    self->kill_timer = 0;
    if (!self->exited) {
        kill (-self->pid, SIGKILL);
        kill (self->pid, SIGKILL);
    }
    return 0;
}

/* SIGKILL to the kernel only: the launcher outside sees it die, removes its
   cgroup and exits by itself. Its whole session is killed only if it is
   still there after KILL_GRACE_MS (or when there is no kernel pid yet). A
   kernel already gone gets the same grace: its waiter is about to say why
   it ended (the memory limit, a signal), which killing the waiter now
   would lose. */
#define KILL_GRACE_MS 2000
void
gw_launch_kill (gw_launch_t *self)
{
    if (self->exited)
        return;
    if (self->kernel_pid > 0) {
        if (kill (self->kernel_pid, SIGKILL) == 0)
            self->kernel_killed = true;
        else if (errno == ESRCH && !self->kernel_killed)
            self->found_dead = true;
        if (self->kernel_killed || self->found_dead) {
            if (!self->kill_timer)
                self->kill_timer = gw_timer_start (self->loop, KILL_GRACE_MS, 1, on_kill_timer, self);
            return;
        }
    }
    kill (-self->pid, SIGKILL);
    kill (self->pid, SIGKILL);
}

int
gw_launch_signal (gw_launch_t *self, int sig)
{
    if (self->exited)
        return -1;
    if (self->kernel_pid > 0 && kill (self->kernel_pid, sig) == 0)
        return 0;
    return kill (self->pid, sig);
}

void
gw_launch_abandon (gw_launch_t **self_p)
{
    gw_launch_t *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    self->on_status = NULL;
    self->on_exit = NULL;
    status_close (self);
    if (self->exited) {
        self->abandoned = true;
        if (!self->in_callback)
            launch_free (self);
        return;
    }
    gw_launch_kill (self);
    self->abandoned = true;
    if (!self->in_callback)
        abandon_finish (self);
}

/* Frees an abandoned launcher once reaped, or lists it for the loop to reap. */
static void
abandon_finish (gw_launch_t *self)
{
    if (self->exited) {
        launch_free (self);
        return;
    }
    if (!abandoned_list)
        abandoned_list = zlistx_new ();
    if (!zlistx_find (abandoned_list, self))
        zlistx_add_end (abandoned_list, self);
}

void
gw_launch_reap_all (double timeout_s)
{
    if (!abandoned_list)
        return;
    double start = gw_clock_mono ();
    gw_launch_t *self;
    while ((self = zlistx_first (abandoned_list))) {
        int status;
        bool escalated = false;
        while (waitpid (self->pid, &status, WNOHANG) == 0 && gw_clock_mono () < start + timeout_s) {
            /* the loop is gone: escalate here what its timer would have */
            if (!escalated && gw_clock_mono () > start + KILL_GRACE_MS / 1000.0) {
                kill (-self->pid, SIGKILL);
                kill (self->pid, SIGKILL);
                escalated = true;
            }
            usleep (2000);
        }
        self->exited = true;
        zlistx_delete (abandoned_list, zlistx_cursor (abandoned_list));
        launch_free (self);
    }
    zlistx_destroy (&abandoned_list);
}

void
gw_launch_rebind (gw_launch_t *self, gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg)
{
    self->on_status = on_status;
    self->on_exit = on_exit;
    self->arg = arg;
}
