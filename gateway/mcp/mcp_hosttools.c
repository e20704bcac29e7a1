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
*/
#include "mcp.h"

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
    double started;
    mcp_tool_done_fn *done;
    void *arg;
} run_t;

struct mcp_hosttools {
    zloop_t *loop;
    json_t *tools; /* the file's declarations, checked */
    zlistx_t *runs;
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

mcp_hosttools_t *
mcp_hosttools_load (zloop_t *loop, const char *path, char **errmsg)
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
    mcp_hosttools_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->tools = checked;
    self->runs = zlistx_new ();
    gw_log ("mcp_host_tools", "{s:s, s:i}", "file", path, "tools", (int) json_array_size (checked));
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
    if (run->timed_out) {
        ename = "ToolTimeout";
        evalue = wire_xasprintf ("the host command of tool '%s' did not finish within its timeout; it was killed",
                                 run->name);
    }
    else if (run->out.overflow) {
        /* before the exit status: passing the cap is what killed it */
        ename = "BadToolResult";
        evalue = wire_xasprintf ("the host command of tool '%s' wrote over %d bytes", run->name, MCP_HOSTTOOL_OUT_MAX);
    }
    else if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
        const char *err = run->err.data ?: "";
        int line = (int) strcspn (err, "\n");
        ename = "ToolFailed";
        evalue = WIFEXITED (status) ? wire_xasprintf ("the host command of tool '%s' exited with status %d%s%.*s",
                                                      run->name, WEXITSTATUS (status), line ? ": " : "",
                                                      gw_text_fit (err, line), err)
                                    : wire_xasprintf ("the host command of tool '%s' was killed by signal %d",
                                                      run->name, WTERMSIG (status));
    }
    else if (!(result = json_loadb (run->out.data ?: "", run->out.len, JSON_DECODE_ANY, &jerr))) {
        ename = "BadToolResult";
        evalue = wire_xasprintf ("the host command of tool '%s' did not write one JSON value on stdout: %s",
                                 run->name, jerr.text);
    }
    mcp_tool_log ("command", run->name, ename ? ename : "ok", seconds, run->out.len);
    run->done (run->arg, result, ename, evalue);
    free (evalue);
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
    void *handle = zlistx_find (run->owner->runs, run);
    if (handle)
        zlistx_detach (run->owner->runs, handle);
    s_run_answer (run, status);
    s_run_free (run);
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
    kill (-run->pid, SIGKILL);
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
        run->pid = mcp_spawn (argv, in, out_w, err_w);
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

bool
mcp_hosttools_call (mcp_hosttools_t *self, const char *name, json_t *arguments, mcp_tool_done_fn *done, void *arg)
{
    const json_t *tool = gw_tools_find (self->tools, name);
    if (!tool)
        return false;
    run_t *run = wire_xcalloc (1, sizeof *run);
    run->owner = self;
    run->name = wire_xstrdup (name);
    run->done = done;
    run->arg = arg;
    run->out.item.fd = run->err.item.fd = run->exit_item.fd = -1;
    run->started = (double) zclock_mono ();
    if (s_run_start (self, run, tool, arguments ? arguments : json_object ()) < 0) {
        char *evalue = wire_xasprintf ("the host command of tool '%s' could not be started: %s", name, strerror (errno));
        mcp_tool_log ("command", name, "ToolUnavailable", 0, 0);
        done (arg, NULL, "ToolUnavailable", evalue);
        free (evalue);
        if (run->pid > 0)
            kill (-run->pid, SIGKILL);
        s_run_free (run);
        return true;
    }
    json_t *timeout = json_object_get (tool, "timeout");
    double seconds = timeout ? json_number_value (timeout) : MCP_HOSTTOOL_TIMEOUT_DEFAULT;
    run->timer = gw_timer_start (self->loop, (size_t) (seconds * 1000), 1, s_on_timeout, run);
    zlistx_add_end (self->runs, run);
    return true;
}

void
mcp_hosttools_destroy (mcp_hosttools_t **self_p)
{
    mcp_hosttools_t *self = *self_p;
    if (!self)
        return;
    run_t *run;
    while ((run = zlistx_detach (self->runs, NULL))) {
        kill (-run->pid, SIGKILL);
        waitpid (run->pid, NULL, 0);
        run->done (run->arg, NULL, "ToolUnavailable", "the MCP server that serves this tool is stopping");
        s_run_free (run);
    }
    zlistx_destroy (&self->runs);
    json_decref (self->tools);
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
