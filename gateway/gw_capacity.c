/*  gw_capacity.c - how many conversations this process's file descriptors
    and ZeroMQ sockets allow, so that conversation_open refuses (ename
    CapacityError) instead of czmq aborting in zsock_new when a socket or its
    fds cannot be made (seen by the bench at ~1,050 conversations with
    RLIMIT_NOFILE 20000).

    The static figure (from the limits at start) bounds the table; near the
    fd limit the open fds are counted for real (/proc/self/fd), because
    client connections and kernel restarts also take fds.
*/
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_linger.h"
#include "wire.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>

/* Measured on an idle conversation (five of them opened, /proc/PID/fd
   counted): its five client listeners and its kernel-facing ipc sockets
   with their mailboxes, the monitors of the four kernel sockets (two
   ZeroMQ sockets and two fds each: a dropped kernel connection is acted
   on, gw_kernel_link.c), the ZMTP guard of each kernel connection (two fds:
   its connection to the kernel and ZeroMQ's to it, gw_zmtp_guard.c), the
   launcher's pipes and pidfd. A client that connects adds one fd per
   channel, which the slack below and the live count absorb. */
#define FDS_PER_CONV     35
#define SOCKETS_PER_CONV 20
/* the control socket, the log, the epoll set and its eventfd, ZeroMQ's own
   threads, launches in flight, and the /proc files of at most 64 running
   executions (gw_proc.c) */
#define FD_RESERVE       (64 + 2 * 64)
#define SOCKET_RESERVE   16
/* the client sockets of closed conversations still answering
   (gw_linger.h): room kept from conversations, not needed to start */
#define LINGER_FDS       (GW_LINGER_MAX * GW_LINGER_FDS)
#define LINGER_SOCKETS   (GW_LINGER_MAX * GW_LINGER_SOCKETS)
/* the host tool commands of this process (gateway/mcp/mcp_hosttools.c):
   each holds its stdout and stderr pipes and its pidfd while it runs, at
   most mcp.max_commands at once, and one being started holds three more
   (the arguments' memfd, the pipes' other ends) until it is forked. Kept
   whether or not tools are configured: `kennel mcp --tools` serves them
   from its own gateway, and a reload may add them to a daemon's /mcp. */
#define COMMAND_FDS      3
#define COMMAND_START_FDS 3
/* a new conversation needs this many free fds when counted for real */
#define FD_SLACK         (2 * FDS_PER_CONV + 8)

static int
count_open_fds (void)
{
    DIR *d = opendir ("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir (d)))
        if (e->d_name[0] != '.')
            n++;
    closedir (d);
    return n - 1; /* the directory's own fd */
}

/* Re-read at each check: an operator may change the limit of a running
   daemon (prlimit), and getrlimit costs one syscall. */
static void
capacity_compute (gw_capacity_t *self)
{
    struct rlimit nofile = {0};
    getrlimit (RLIMIT_NOFILE, &nofile);
    self->nofile = nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur > INT32_MAX ? INT32_MAX : (int64_t) nofile.rlim_cur;
    int64_t fds = self->nofile - FD_RESERVE - LINGER_FDS - 4 * self->launches
                  - (int64_t) COMMAND_FDS * self->commands - COMMAND_START_FDS;
    int64_t sockets = (int64_t) self->max_sockets - SOCKET_RESERVE - LINGER_SOCKETS;
    int64_t by_fds = fds / FDS_PER_CONV - self->pool;
    int64_t by_sockets = sockets / SOCKETS_PER_CONV - self->pool;
    self->by_fds = by_fds < 0 ? 0 : (int) (by_fds > INT32_MAX ? INT32_MAX : by_fds);
    self->by_sockets = by_sockets < 0 ? 0 : (int) by_sockets;
    self->conversations = self->max_conversations;
    if (self->by_fds < self->conversations)
        self->conversations = self->by_fds;
    if (self->by_sockets < self->conversations)
        self->conversations = self->by_sockets;
}

int
gw_capacity_start_check (char **errmsg)
{
    struct rlimit nofile = {0};
    if (getrlimit (RLIMIT_NOFILE, &nofile) < 0 || nofile.rlim_cur == RLIM_INFINITY || nofile.rlim_cur >= FD_RESERVE)
        return 0;
    *errmsg = wire_xasprintf ("RLIMIT_NOFILE is %llu (hard limit %llu): the gateway needs at least %d open files for "
                              "itself (ZeroMQ's threads, its sockets and pipes, launches, /proc reads) before any "
                              "conversation; raise the hard limit (ulimit -Hn, or LimitNOFILE= in its systemd unit)",
                              (unsigned long long) nofile.rlim_cur, (unsigned long long) nofile.rlim_max, FD_RESERVE);
    return -1;
}

void
gw_capacity_init (gw_capacity_t *self, const gw_config_t *config)
{
    self->max_sockets = zmq_ctx_get (zsys_init (), ZMQ_MAX_SOCKETS);
    self->max_conversations = config->max_conversations;
    self->pool = config->warm_pool;
    self->launches = config->max_parallel_launches;
    self->commands = config->mcp_max_commands;
    capacity_compute (self);
}

json_t *
gw_capacity_json (gw_capacity_t *self)
{
    capacity_compute (self);
    return json_pack ("{s:i, s:I, s:i, s:i, s:i}", "conversations", self->conversations, "rlimit_nofile",
                      (json_int_t) self->nofile, "zmq_max_sockets", self->max_sockets, "by_fds", self->by_fds,
                      "by_sockets", self->by_sockets);
}

/* Whether a kernel's sockets (a new conversation, a pooled kernel) fit in
   the fds left; counted only once the table is past half the estimate. */
bool
gw_capacity_fds_room (const gw_capacity_t *self, int open_conversations)
{
    if ((int64_t) open_conversations * FDS_PER_CONV * 2 < self->nofile - FD_RESERVE)
        return true;
    int used = count_open_fds ();
    return used < 0 || self->nofile - used >= FD_SLACK;
}

int
gw_capacity_check (gw_capacity_t *self, int open_conversations, char **evalue)
{
    capacity_compute (self);
    if (open_conversations >= self->by_fds)
        *evalue = wire_xasprintf ("RLIMIT_NOFILE %lld allows %d conversations (about %d fds each)",
                                  (long long) self->nofile, self->by_fds, FDS_PER_CONV);
    else if (open_conversations >= self->by_sockets)
        *evalue = wire_xasprintf ("ZMQ_MAX_SOCKETS %d allows %d conversations (about %d sockets each)",
                                  self->max_sockets, self->by_sockets, SOCKETS_PER_CONV);
    else if (!gw_capacity_fds_room (self, open_conversations))
        *evalue = wire_xasprintf ("RLIMIT_NOFILE %lld: fewer than %d file descriptors left for a new conversation",
                                  (long long) self->nofile, FD_SLACK);
    else
        return 0;
    return -1;
}
