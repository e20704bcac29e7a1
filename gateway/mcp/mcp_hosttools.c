/*  mcp_hosttools.c - tools served by a host command (`kennel mcp --tools FILE`).

    MCP has no call from server to client, so the MCP client cannot serve a
    tool that kernel code calls. The operator names a command per tool
    instead: it runs on the host (outside the sandbox, as the operator's
    own program), gets the arguments as JSON on stdin, answers with JSON on
    stdout and exit status 0. Anything else is a ToolError in the kernel:

      exit status N (stderr's first line)   ToolFailed
      stdout not one JSON value            BadToolResult
      stdout over 8 MiB                    BadToolResult (the command's group is killed then)
      no exit within "timeout" s           ToolTimeout (the command's group is killed)

    Arguments come in through a memfd, so a command that writes before it
    reads cannot deadlock against us; stdout and stderr are pipes read in
    the loop, bounded.

    Kernel code decides how many calls it makes, and each is a process on
    the host outside the sandbox, often as root: at most mcp.max_commands
    run at once in this process (ToolBusy beyond; the gateway bounds each
    conversation's waiting calls too), each in a cgroup of its own
    (confine_cgroup_new: pids.max and the memory limit from the config,
    the sandbox's cgroup code), which the command joins itself between
    fork and exec (joining waits ~10 ms on cgroup v1: the child's wait, not
    the loop's). A host that gives no cgroup refuses every call, naming
    the host setting, unless confine.allow_degraded has "cgroup". When a
    call ends early (the gateway's tool_cancel: its execution ended, its
    tool timeout; the conversation closed) or times out, every process of
    its cgroup is killed, its session's too; a run counts against the
    bound until its cgroup is empty and removed.
*/
#include "mcp.h"
#include "confine/confine.h"
#include "gateway/gw_error.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MCP_HOSTTOOL_OUT_MAX (8 * 1024 * 1024)
#define MCP_HOSTTOOL_ERR_MAX 4096
#define MCP_HOSTTOOL_TIMEOUT_DEFAULT 30.0
/* Reads of a pipe per loop event: a writer without end must not keep the
   loop in one callback (the rest is read at the next turn). */
#define MCP_HOSTTOOL_READS 16
/* A cgroup that still holds processes after its command exited is killed
   and tried again this often, this many times (then left for the sweep of
   a later start, logged). */
#define MCP_HOSTTOOL_LEAVE_MS 20
#define MCP_HOSTTOOL_LEAVE_TRIES 250

/* A pipe read into a bounded buffer. */
typedef struct {
    zmq_pollitem_t item;
    char *data;
    size_t len, max;
    bool overflow;
    pid_t group; /* killed when stdout passes its cap; 0 for stderr */
} sink_t;

typedef struct {
    mcp_hosttools_t *owner;
    char *name;
    pid_t pid;
    zmq_pollitem_t exit_item;
    sink_t out, err;
    int timer;
    bool timed_out;
    bool cancelled;
    double started;
    confine_cgroup_t *cgroup; /* NULL: this host gives none and the config lets it degrade */
    int64_t memory_bytes;     /* its cgroup's limit, for an out-of-memory answer */
    int leave_timer;          /* exited; its cgroup still emptying */
    int leave_tries;
    mcp_tool_done_fn *done;   /* NULL once answered */
    void *arg;
} run_t;

struct mcp_hosttools {
    zloop_t *loop;
    json_t *tools;       /* the file's declarations, checked */
    zlistx_t *runs;      /* running, or leaving: each counts against mcp.max_commands */
    gw_server_t *core;   /* whose config bounds the commands, or NULL */
    gw_config_t *config; /* else this one (held, or the built-in defaults) */
};

/* ---- the file --------------------------------------------------------------- */

static char *
s_check_entry (const json_t *tool, size_t index)
{
    const char *name = gw_text (json_object_get (tool, "name"));
    json_t *argv = json_object_get (tool, "command");
    json_t *timeout = json_object_get (tool, "timeout");
    if (!json_is_array (argv) || json_array_size (argv) == 0)
        return wire_xasprintf ("tool %s: command must be a non-empty list of strings", name ?: "?");
    size_t i;
    json_t *arg;
    json_array_foreach (argv, i, arg)
        if (!gw_text (arg))
            return wire_xasprintf ("tool %s: command[%zu] must be a string", name, i);
    if (timeout && !(json_is_number (timeout) && json_number_value (timeout) > 0 && json_number_value (timeout) <= 3600))
        return wire_xasprintf ("tool %s: timeout must be seconds, above 0 and at most 3600", name);
    (void) index;
    return NULL;
}

/* Who may change the file may run commands as this process's user (in a
   daemon, often root): only that user or root may own it, and no one else
   may write it. Checked on the open file, then read from it. NULL + *why. */
static json_t *
s_file_read (const char *path, char **why)
{
    int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat (fd, &st) < 0) {
        *why = wire_xasprintf ("cannot read it: %s", strerror (errno));
        if (fd >= 0)
            close (fd);
        return NULL;
    }
    json_t *list = NULL;
    json_error_t jerr;
    if (!S_ISREG (st.st_mode))
        *why = wire_xstrdup ("not a regular file");
    else if (st.st_uid != 0 && st.st_uid != geteuid ())
        *why = wire_xasprintf ("owned by uid %u: only uid %u (this process) or root may own a file that names "
                               "commands it runs", (unsigned) st.st_uid, (unsigned) geteuid ());
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        *why = wire_xasprintf ("writable by its group or others (mode %04o): it names commands this process runs "
                               "(chmod go-w)", (unsigned) (st.st_mode & 07777));
    else if (!(list = json_loadfd (fd, JSON_REJECT_DUPLICATES, &jerr)))
        *why = wire_xstrdup (jerr.text);
    close (fd);
    return list;
}

/* The bounds in force now: a reload replaces the core's config. */
static const gw_config_t *
s_config (const mcp_hosttools_t *self)
{
    return self->core ? gw_server_config (self->core) : self->config;
}

/* At load: whether this host gives commands a cgroup, said once. */
static void
s_cgroup_report (const mcp_hosttools_t *self, const char *path, size_t tools)
{
    const gw_config_t *config = s_config (self);
    confine_error_t err = {0};
    confine_cgroup_t *probe
        = confine_cgroup_new ((uint64_t) config->mcp_command_memory_bytes, (uint64_t) config->mcp_command_pids, &err);
    bool degrade = gw_config_allows_degraded (config, "cgroup");
    char *fix = gw_config_degrade_fix ("cgroup");
    char *refused = wire_xasprintf ("every call of a host command is refused (ToolUnavailable); %s", fix);
    if (probe)
        gw_log ("mcp_host_tools", "{s:s, s:i, s:i, s:s, s:s}", "file", path, "tools", (int) tools, "max_commands",
                config->mcp_max_commands, "cgroup", "active", "reason", confine_cgroup_describe (probe));
    else
        gw_log ("mcp_host_tools", "{s:s, s:i, s:i, s:s, s:s, s:s}", "file", path, "tools", (int) tools,
                "max_commands", config->mcp_max_commands, "cgroup", degrade ? "degraded" : "unsupported", "reason",
                err.message, "consequence", degrade ? "commands run without a cgroup (confine.allow_degraded)" : refused);
    free (refused);
    free (fix);
    confine_cgroup_destroy (&probe);
}

mcp_hosttools_t *
mcp_hosttools_load (zloop_t *loop, const char *path, gw_server_t *core, const gw_config_t *config, char **errmsg)
{
    char *why = NULL;
    json_t *list = s_file_read (path, &why);
    if (!list) {
        *errmsg = wire_xasprintf ("tools file %s: %s", path, why);
        free (why);
        return NULL;
    }
    char *problem = NULL;
    json_t *checked = gw_tools_validate (list, &problem);
    size_t i;
    json_t *tool;
    json_array_foreach (checked, i, tool)
        if (!problem)
            problem = s_check_entry (tool, i);
    json_decref (list);
    if (problem) {
        *errmsg = wire_xasprintf ("tools file %s: %s", path, problem);
        free (problem);
        json_decref (checked);
        return NULL;
    }
    gw_config_t *own = core ? NULL : config ? gw_config_ref (config) : gw_config_load (NULL, errmsg);
    if (!core && !own) {
        json_decref (checked);
        return NULL;
    }
    mcp_hosttools_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->tools = checked;
    self->runs = zlistx_new ();
    self->core = core;
    self->config = own;
    s_cgroup_report (self, path, json_array_size (checked));
    return self;
}

void
mcp_hosttools_declare (mcp_hosttools_t *self, json_t *list)
{
    size_t i;
    json_t *tool;
    json_array_foreach (self->tools, i, tool) {
        json_t *decl = json_deep_copy (tool);
        json_object_del (decl, "command"); /* the kernel needs no host paths */
        json_object_del (decl, "timeout");
        json_array_append_new (list, decl);
    }
}

/* ---- one run ------------------------------------------------------------------ */

static void
s_sink_read (sink_t *sink)
{
    char buf[65536];
    ssize_t n;
    for (int i = 0; i < MCP_HOSTTOOL_READS && (n = read (sink->item.fd, buf, sizeof buf)) > 0; i++) {
        size_t room = sink->max - sink->len;
        size_t take = (size_t) n < room ? (size_t) n : room;
        if (take < (size_t) n && !sink->overflow && sink->group > 0)
            kill (-sink->group, SIGKILL); /* its answer is BadToolResult whatever it writes next */
        if (take < (size_t) n)
            sink->overflow = true;
        if (take) {
            sink->data = wire_xreallocarray (sink->data, sink->len + take + 1, 1);
            memcpy (sink->data + sink->len, buf, take);
            sink->len += take;
            sink->data[sink->len] = 0;
        }
    }
}

static void
s_sink_close (zloop_t *loop, sink_t *sink)
{
    if (sink->item.fd >= 0) {
        zloop_poller_end (loop, &sink->item);
        close (sink->item.fd);
        sink->item.fd = -1;
    }
}

static void
s_run_free (run_t *run)
{
    zloop_t *loop = run->owner->loop;
    s_sink_close (loop, &run->out);
    s_sink_close (loop, &run->err);
    if (run->exit_item.fd >= 0) {
        zloop_poller_end (loop, &run->exit_item);
        close (run->exit_item.fd);
    }
    gw_timer_end (loop, run->timer);
    gw_timer_end (loop, run->leave_timer);
    confine_cgroup_destroy (&run->cgroup);
    free (run->out.data);
    free (run->err.data);
    free (run->name);
    free (run);
}

/* The answer of a command that ended with wait status. */
static void
s_run_answer (run_t *run, int status)
{
    double seconds = (zclock_mono () - run->started) / 1000.0;
    json_error_t jerr;
    json_t *result = NULL;
    char *evalue = NULL;
    const char *ename = NULL;
    const char *err = run->err.data ?: "";
    long oom = run->cgroup ? confine_cgroup_oom_kills (run->cgroup) : -1;
    if (run->cancelled) {
        ename = gw_error_name (GW_E_TOOL_CANCELLED);
        evalue = wire_xasprintf ("the call of tool '%s' ended before its host command did; it was killed", run->name);
    }
    else if (run->timed_out) {
        ename = gw_error_name (GW_E_TOOL_TIMEOUT);
        evalue = wire_xasprintf ("the host command of tool '%s' did not finish within its timeout; it was killed",
                                 run->name);
    }
    else if (run->out.overflow) {
        /* before the exit status: passing the cap is what killed it */
        ename = gw_error_name (GW_E_BAD_TOOL_RESULT);
        evalue = wire_xasprintf ("the host command of tool '%s' wrote over %d bytes", run->name, MCP_HOSTTOOL_OUT_MAX);
    }
    else if (WIFEXITED (status) && WEXITSTATUS (status) == 126 && strncmp (err, MCP_JOIN_FAILED, strlen (MCP_JOIN_FAILED)) == 0) {
        ename = gw_error_name (GW_E_TOOL_UNAVAILABLE);
        evalue = wire_xasprintf ("the host command of tool '%s' was not started: it could not join its cgroup "
                                 "(errno %s)", run->name, err + strlen (MCP_JOIN_FAILED) + 1);
        evalue[strcspn (evalue, "\n")] = 0;
    }
    else if (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL && oom > 0) {
        ename = gw_error_name (GW_E_TOOL_FAILED);
        evalue = wire_xasprintf ("the host command of tool '%s' was killed: out of memory (mcp.command_memory_bytes "
                                 "%lld)", run->name, (long long) run->memory_bytes);
    }
    else if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        int line = (int) strcspn (err, "\n");
        ename = gw_error_name (GW_E_TOOL_FAILED);
        evalue = WIFEXITED (status) ? wire_xasprintf ("the host command of tool '%s' exited with status %d%s%.*s",
                                                      run->name, WEXITSTATUS (status), line ? ": " : "",
                                                      gw_text_fit (err, line), err)
                                    : wire_xasprintf ("the host command of tool '%s' was killed by signal %d",
                                                      run->name, WTERMSIG (status));
    }
    else if (!(result = json_loadb (run->out.data ?: "", run->out.len, JSON_DECODE_ANY, &jerr))) {
        ename = gw_error_name (GW_E_BAD_TOOL_RESULT);
        evalue = wire_xasprintf ("the host command of tool '%s' did not write one JSON value on stdout: %s",
                                 run->name, jerr.text);
    }
    mcp_tool_log ("command", run->name, ename ? ename : "ok", seconds, run->out.len);
    run->done (run->arg, result, ename, evalue);
    run->done = NULL;
    free (evalue);
}

/* Every process of the run: its cgroup's (a child that left the session
   too), and its session's. */
static void
s_run_kill (run_t *run)
{
    if (run->cgroup)
        confine_cgroup_kill (run->cgroup);
    if (run->pid > 0)
        kill (-run->pid, SIGKILL);
}

static void
s_run_forget (run_t *run)
{
    void *handle = zlistx_find (run->owner->runs, run);
    if (handle)
        zlistx_detach (run->owner->runs, handle);
    s_run_free (run);
}

/* After the command's exit: what it left in its cgroup is killed and the
   cgroup removed, again every MCP_HOSTTOOL_LEAVE_MS while it empties. */
static int
s_on_leave (zloop_t *loop, int timer_id, void *arg)
{
    run_t *run = arg;
    if (run->cgroup) {
        confine_cgroup_kill (run->cgroup);
        if (confine_cgroup_remove (run->cgroup) < 0 && ++run->leave_tries < MCP_HOSTTOOL_LEAVE_TRIES)
            return 0;
        if (run->leave_tries >= MCP_HOSTTOOL_LEAVE_TRIES)
            gw_log_limited ("mcp/tool_cgroup", "mcp_tool_cgroup_left", "{s:s, s:s}", "tool", run->name, "reason",
                            "its processes did not leave within 5 s of SIGKILL; a later start removes it");
    }
    gw_timer_end (loop, run->leave_timer);
    run->leave_timer = 0;
    s_run_forget (run);
    return 0;
}

static int
s_on_exit (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    run_t *run = arg;
    int status = 0;
    waitpid (run->pid, &status, 0);
    /* what the command wrote before it ended is in the pipes: take it */
    s_sink_read (&run->out);
    s_sink_read (&run->err);
    s_run_answer (run, status); /* before the cgroup goes: it holds the out-of-memory count */
    zloop_t *l = run->owner->loop;
    s_sink_close (l, &run->out);
    s_sink_close (l, &run->err);
    zloop_poller_end (l, &run->exit_item);
    close (run->exit_item.fd);
    run->exit_item.fd = -1;
    gw_timer_end (l, run->timer);
    run->timer = 0;
    run->pid = 0; /* reaped: its number may be another's now */
    if (run->cgroup && confine_cgroup_kill (run->cgroup) == 0 && confine_cgroup_remove (run->cgroup) == 0)
        confine_cgroup_destroy (&run->cgroup);
    if (!run->cgroup)
        s_run_forget (run);
    else
        run->leave_timer = gw_timer_start (l, MCP_HOSTTOOL_LEAVE_MS, 0, s_on_leave, run);
    return 0;
}

static int
s_on_sink (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    sink_t *sink = arg;
    s_sink_read (sink);
    return 0;
}

static int
s_on_timeout (zloop_t *loop, int timer_id, void *arg)
{
    run_t *run = arg;
    run->timer = 0;
    run->timed_out = true;
    s_run_kill (run);
    return 0;
}

static int
s_sink_open (zloop_t *loop, sink_t *sink, size_t max, int *child_end)
{
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) < 0)
        return -1;
    fcntl (fds[0], F_SETFL, O_NONBLOCK);
    sink->item = (zmq_pollitem_t) {.fd = fds[0], .events = ZMQ_POLLIN};
    sink->max = max;
    *child_end = fds[1];
    zloop_poller (loop, &sink->item, s_on_sink, sink);
    return 0;
}

/* The arguments as a file the command reads from offset 0. */
static int
s_input (const json_t *arguments)
{
    int fd = memfd_create ("kennel-tool-arguments", MFD_CLOEXEC);
    char *text = json_dumps (arguments, JSON_COMPACT);
    size_t len = text ? strlen (text) : 0;
    bool ok = fd >= 0 && text && write (fd, text, len) == (ssize_t) len && lseek (fd, 0, SEEK_SET) == 0;
    free (text);
    if (!ok && fd >= 0) {
        close (fd);
        fd = -1;
    }
    return fd;
}

static int
s_run_start (mcp_hosttools_t *self, run_t *run, const json_t *tool, const json_t *arguments)
{
    json_t *command = json_object_get (tool, "command");
    size_t argc = json_array_size (command);
    char **argv = wire_xcalloc (argc + 1, sizeof *argv);
    for (size_t i = 0; i < argc; i++)
        argv[i] = (char *) json_string_value (json_array_get (command, i));
    int in = s_input (arguments), out_w = -1, err_w = -1;
    int rc = -1;
    if (in >= 0 && s_sink_open (self->loop, &run->out, MCP_HOSTTOOL_OUT_MAX, &out_w) == 0
        && s_sink_open (self->loop, &run->err, MCP_HOSTTOOL_ERR_MAX, &err_w) == 0) {
        run->pid = mcp_spawn (argv, in, out_w, err_w, run->cgroup ? confine_cgroup_procs (run->cgroup) : NULL);
        run->out.group = run->pid;
        run->exit_item = (zmq_pollitem_t) {.fd = run->pid > 0 ? mcp_pidfd_open (run->pid) : -1, .events = ZMQ_POLLIN};
        if (run->exit_item.fd >= 0) {
            zloop_poller (self->loop, &run->exit_item, s_on_exit, run);
            rc = 0;
        }
    }
    for (int *fd = (int[]) {in, out_w, err_w}, i = 0; i < 3; i++)
        if (fd[i] >= 0)
            close (fd[i]);
    free (argv);
    return rc;
}

/* A call answered before any command starts: logged as a command's. */
static void
s_refuse (const char *name, mcp_tool_done_fn *done, void *arg, const char *ename, const char *evalue)
{
    mcp_tool_log ("command", name, ename, 0, 0);
    done (arg, NULL, ename, evalue);
}

bool
mcp_hosttools_call (mcp_hosttools_t *self, const char *name, json_t *arguments, mcp_tool_done_fn *done, void *arg)
{
    const json_t *tool = gw_tools_find (self->tools, name);
    if (!tool)
        return false;
    const gw_config_t *config = s_config (self);
    if ((int) zlistx_size (self->runs) >= config->mcp_max_commands) {
        char *evalue = wire_xasprintf ("%d host commands already run, the limit (mcp.max_commands); call again once "
                                       "one has returned", config->mcp_max_commands);
        s_refuse (name, done, arg, gw_error_name (GW_E_TOOL_BUSY), evalue);
        free (evalue);
        return true;
    }
    confine_error_t err = {0};
    confine_cgroup_t *cgroup
        = confine_cgroup_new ((uint64_t) config->mcp_command_memory_bytes, (uint64_t) config->mcp_command_pids, &err);
    if (!cgroup && !gw_config_allows_degraded (config, "cgroup")) {
        char *fix = gw_config_degrade_fix ("cgroup");
        char *evalue = wire_xasprintf ("the host command of tool '%s' was not started: it runs in a cgroup of its own "
                                       "(mcp.command_memory_bytes, mcp.command_pids) and this host gives none: %s; %s",
                                       name, err.message, fix);
        s_refuse (name, done, arg, gw_error_name (GW_E_TOOL_UNAVAILABLE), evalue);
        free (evalue);
        free (fix);
        return true;
    }
    run_t *run = wire_xcalloc (1, sizeof *run);
    run->owner = self;
    run->name = wire_xstrdup (name);
    run->done = done;
    run->arg = arg;
    run->cgroup = cgroup;
    run->memory_bytes = config->mcp_command_memory_bytes;
    run->out.item.fd = run->err.item.fd = run->exit_item.fd = -1;
    run->started = (double) zclock_mono ();
    if (s_run_start (self, run, tool, arguments ? arguments : json_object ()) < 0) {
        char *evalue = wire_xasprintf ("the host command of tool '%s' could not be started: %s", name, strerror (errno));
        s_refuse (name, done, arg, gw_error_name (GW_E_TOOL_UNAVAILABLE), evalue);
        free (evalue);
        if (run->pid > 0) {
            s_run_kill (run);
            waitpid (run->pid, NULL, 0);
        }
        s_run_free (run);
        return true;
    }
    json_t *timeout = json_object_get (tool, "timeout");
    double seconds = timeout ? json_number_value (timeout) : MCP_HOSTTOOL_TIMEOUT_DEFAULT;
    run->timer = gw_timer_start (self->loop, (size_t) (seconds * 1000), 1, s_on_timeout, run);
    zlistx_add_end (self->runs, run);
    return true;
}

bool
mcp_hosttools_cancel (mcp_hosttools_t *self, void *arg)
{
    for (run_t *run = zlistx_first (self->runs); run; run = zlistx_next (self->runs))
        if (run->arg == arg && run->done && !run->cancelled) {
            run->cancelled = true;
            s_run_kill (run);
            return true;
        }
    return false;
}

void
mcp_hosttools_destroy (mcp_hosttools_t **self_p)
{
    mcp_hosttools_t *self = *self_p;
    if (!self)
        return;
    run_t *run;
    while ((run = zlistx_detach (self->runs, NULL))) {
        if (run->pid > 0) {
            s_run_kill (run);
            waitpid (run->pid, NULL, 0);
        }
        if (run->done)
            run->done (run->arg, NULL, gw_error_name (GW_E_TOOL_UNAVAILABLE),
                       "the MCP server that serves this tool is stopping");
        /* its last processes leave within moments of SIGKILL: the front is stopping, it may wait */
        for (int i = 0; run->cgroup && i < 100 && confine_cgroup_remove (run->cgroup) < 0; i++) {
            confine_cgroup_kill (run->cgroup);
            zclock_sleep (10);
        }
        s_run_free (run);
    }
    zlistx_destroy (&self->runs);
    json_decref (self->tools);
    gw_config_destroy (&self->config);
    free (self);
    *self_p = NULL;
}

void
mcp_hosttools_take (mcp_hosttools_t *self, mcp_hosttools_t **fresh_p)
{
    /* a run holds its own name, pid and timer: none reads the list again */
    json_t *old = self->tools;
    self->tools = (*fresh_p)->tools;
    (*fresh_p)->tools = old;
    mcp_hosttools_destroy (fresh_p);
}
