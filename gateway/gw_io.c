/*  gw_io.c - one epoll set for every conversation's sockets and fds, seen
    by zloop as a single fd: a wake-up costs O(ready), not O(open).

    zloop zmq_polls its whole poll set on each wake-up, and zmq_poll asks
    every ZeroMQ socket for ZMQ_EVENTS (a getpid and a poll of its mailbox
    each): with a conversation's 9 sockets and 2 fds in zloop, one relayed
    message cost ~160 system calls with one conversation open and grew with
    every idle one (gateway/README.md, "Hot path"). Here each socket's ZMQ_FD
    and each plain fd (pidfds, launch status pipes, the ZMTP guards'
    connections: POLLIN, POLLOUT too on request) is in one epoll set; zloop
    polls only the epoll fd (plus the few sockets left to it).

    ZMQ_FD is not a plain readiness fd: it signals that the socket's mailbox
    has commands, and any operation on the socket (a send too) may consume
    that signal while leaving messages to read. So:
    - a readable ZMQ_FD is followed by ZMQ_EVENTS, and the handler is called
      while ZMQ_EVENTS says POLLIN (at most DRAIN_MAX messages per turn; the
      rest on the next turn, so one busy socket cannot starve the others);
    - after a send on a registered socket the owner calls gw_io_sent: the
      socket is re-checked with ZMQ_EVENTS at the end of this dispatch, or,
      when the send happened outside it (a timer, a pidfd), an eventfd in the
      set wakes the loop for that re-check;
    - a newly registered socket is re-checked at once (messages may have
      arrived before it was in the set).
    Entries ended during a dispatch are only marked dead and freed after it,
    so an event already returned by epoll_wait never touches freed memory.
*/
#include "gw_io.h"
#include "wire.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define EVENTS_MAX 64
#define DRAIN_MAX 64

typedef struct io_entry io_entry_t;
struct io_entry {
    zsock_t *sock;   /* a ZeroMQ socket, or NULL */
    int fd;          /* a plain fd (sock NULL), or the socket's ZMQ_FD */
    zloop_reader_fn *reader;
    zloop_fn *poller;
    zmq_pollitem_t *item; /* the caller's, for a poller */
    void *arg;
    bool dead;
    bool dirty;       /* in the re-check list */
    io_entry_t *next; /* re-check list, then the dead list */
};

struct gw_io {
    zloop_t *loop;
    int epfd;
    int wakefd;       /* eventfd: a re-check is pending outside a dispatch */
    bool wake_pending;
    bool dispatching;
    zmq_pollitem_t item; /* the epoll fd, in zloop */
    zhashx_t *entries;   /* key -> io_entry_t* (socket pointer, or an odd number for an fd) */
    io_entry_t *dirty;   /* sockets to re-check */
    io_entry_t *dead;    /* ended, freed after the dispatch */
    int count;
};

/* The one set of this process, found from its loop (gw_launch gets only the loop). */
static gw_io_t *s_io;

static const void *
s_fd_key (int fd)
{
    return (const void *) (uintptr_t) ((uintptr_t) fd * 2 + 1); /* never an aligned pointer */
}

static size_t
s_ptr_hash (const void *key)
{
    uintptr_t x = (uintptr_t) key;
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= x >> 11;
    return (size_t) x;
}

static int
s_ptr_cmp (const void *a, const void *b)
{
    return (a > b) - (a < b);
}

static void
s_wake (gw_io_t *self)
{
    if (self->wake_pending || self->dispatching)
        return;
    uint64_t one = 1;
    if (write (self->wakefd, &one, sizeof one) == sizeof one)
        self->wake_pending = true;
}

static void
s_mark (gw_io_t *self, io_entry_t *e)
{
    if (e->dirty || e->dead)
        return;
    e->dirty = true;
    e->next = self->dirty;
    self->dirty = e;
    s_wake (self);
}

/* Calls the reader while its socket has a message; -1 when the loop must end. */
static int
s_drain (gw_io_t *self, io_entry_t *e)
{
    for (int i = 0; i < DRAIN_MAX; i++) {
        if (e->dead || !(zsock_events (e->sock) & ZMQ_POLLIN))
            return 0;
        if (e->reader (self->loop, e->sock, e->arg) < 0)
            return -1;
    }
    s_mark (self, e); /* more may be waiting: next turn */
    return 0;
}

static void
s_free_dead (gw_io_t *self)
{
    while (self->dead) {
        io_entry_t *e = self->dead;
        self->dead = e->next;
        free (e);
    }
}

/* The re-checks asked for so far; those asked for meanwhile wait for the
   next turn (through the eventfd), so the loop's timers still run. */
static int
s_recheck (gw_io_t *self)
{
    io_entry_t *list = self->dirty;
    self->dirty = NULL;
    int rc = 0;
    while (list) {
        io_entry_t *e = list;
        list = e->next;
        e->dirty = false;
        if (e->dead) {
            e->next = self->dead;
            self->dead = e;
        }
        else if (rc == 0)
            rc = s_drain (self, e);
        else
            s_mark (self, e); /* the loop ends: left for a next turn, if any */
    }
    return rc;
}

static int
s_on_ready (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_io_t *self = arg;
    struct epoll_event events[EVENTS_MAX];
    int n = epoll_wait (self->epfd, events, EVENTS_MAX, 0);
    self->dispatching = true;
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        io_entry_t *e = events[i].data.ptr;
        if (!e) { /* the eventfd */
            uint64_t count;
            ssize_t rd = read (self->wakefd, &count, sizeof count);
            (void) rd; /* EAGAIN: already read; the flag is what matters */
            self->wake_pending = false;
        }
        else if (e->dead)
            ;
        else if (e->sock)
            rc = s_drain (self, e);
        else {
            e->item->revents = (short) ((events[i].events & EPOLLIN ? ZMQ_POLLIN : 0)
                                        | (events[i].events & EPOLLOUT ? ZMQ_POLLOUT : 0)
                                        | (events[i].events & (EPOLLERR | EPOLLHUP) ? ZMQ_POLLERR : 0));
            rc = e->poller (self->loop, e->item, e->arg);
        }
    }
    if (rc == 0)
        rc = s_recheck (self);
    self->dispatching = false;
    if (self->dirty)
        s_wake (self);
    s_free_dead (self);
    return rc;
}

gw_io_t *
gw_io_new (zloop_t *loop)
{
    gw_io_t *self = wire_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->epfd = epoll_create1 (EPOLL_CLOEXEC);
    self->wakefd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (self->epfd < 0 || self->wakefd < 0 || epoll_ctl (self->epfd, EPOLL_CTL_ADD, self->wakefd, &ev) < 0) {
        int saved = errno;
        gw_io_destroy (&self);
        errno = saved;
        return NULL;
    }
    self->entries = zhashx_new ();
    zhashx_set_key_hasher (self->entries, s_ptr_hash);
    zhashx_set_key_comparator (self->entries, s_ptr_cmp);
    zhashx_set_key_duplicator (self->entries, NULL);
    zhashx_set_key_destructor (self->entries, NULL);
    self->item = (zmq_pollitem_t){NULL, self->epfd, ZMQ_POLLIN, 0};
    zloop_poller (loop, &self->item, s_on_ready, self);
    s_io = self;
    return self;
}

void
gw_io_destroy (gw_io_t **self_p)
{
    gw_io_t *self = *self_p;
    if (!self)
        return;
    while (self->dirty) { /* dead ones are only here; live ones are in the table */
        io_entry_t *e = self->dirty;
        self->dirty = e->next;
        if (e->dead)
            free (e);
    }
    if (self->entries) {
        zloop_poller_end (self->loop, &self->item);
        for (io_entry_t *e = zhashx_first (self->entries); e; e = zhashx_next (self->entries))
            free (e);
        zhashx_destroy (&self->entries);
    }
    s_free_dead (self);
    if (self->epfd >= 0)
        close (self->epfd);
    if (self->wakefd >= 0)
        close (self->wakefd);
    if (s_io == self)
        s_io = NULL;
    free (self);
    *self_p = NULL;
}

gw_io_t *
gw_io_of (zloop_t *loop)
{
    return s_io && s_io->loop == loop ? s_io : NULL;
}

static int
s_add (gw_io_t *self, const void *key, io_entry_t *e)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = e};
    if (zhashx_lookup (self->entries, key)) {
        free (e);
        errno = EEXIST;
        return -1;
    }
    if (epoll_ctl (self->epfd, EPOLL_CTL_ADD, e->fd, &ev) < 0) {
        free (e);
        return -1;
    }
    zhashx_insert (self->entries, key, e);
    self->count++;
    return 0;
}

int
gw_io_reader (gw_io_t *self, zsock_t *sock, zloop_reader_fn *handler, void *arg)
{
    io_entry_t *e = wire_xcalloc (1, sizeof *e);
    *e = (io_entry_t){.sock = sock, .fd = zsock_fd (sock), .reader = handler, .arg = arg};
    if (s_add (self, sock, e) < 0)
        return -1;
    s_mark (self, e); /* what arrived before it was in the set */
    return 0;
}

int
gw_io_poller (gw_io_t *self, zmq_pollitem_t *item, zloop_fn *handler, void *arg)
{
    io_entry_t *e = wire_xcalloc (1, sizeof *e);
    *e = (io_entry_t){.fd = item->fd, .poller = handler, .item = item, .arg = arg};
    return s_add (self, s_fd_key (item->fd), e);
}

static void
s_end (gw_io_t *self, const void *key)
{
    io_entry_t *e = zhashx_lookup (self->entries, key);
    if (!e)
        return;
    zhashx_delete (self->entries, key);
    epoll_ctl (self->epfd, EPOLL_CTL_DEL, e->fd, NULL);
    e->dead = true;
    self->count--;
    if (e->dirty)
        return; /* the re-check list still points at it: freed after the dispatch */
    e->next = self->dead;
    self->dead = e;
    if (!self->dispatching)
        s_free_dead (self);
}

void
gw_io_reader_end (gw_io_t *self, zsock_t *sock)
{
    s_end (self, sock);
}

void
gw_io_poller_end (gw_io_t *self, int fd)
{
    s_end (self, s_fd_key (fd));
}

int
gw_io_poller_events (gw_io_t *self, int fd, short events)
{
    io_entry_t *e = zhashx_lookup (self->entries, s_fd_key (fd));
    if (!e) {
        errno = ENOENT;
        return -1;
    }
    struct epoll_event ev = {.events = (events & ZMQ_POLLIN ? EPOLLIN : 0u) | (events & ZMQ_POLLOUT ? EPOLLOUT : 0u),
                             .data.ptr = e};
    return epoll_ctl (self->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void
gw_io_sent (gw_io_t *self, zsock_t *sock)
{
    io_entry_t *e = sock ? zhashx_lookup (self->entries, sock) : NULL;
    if (e)
        s_mark (self, e);
}

int
gw_io_size (const gw_io_t *self)
{
    return self->count;
}

/* ZeroMQ checks a frame's size from its header, before it allocates the
   frame, and drops the connection of a peer that announces more; a frame
   between the limit and twice it still reaches the wire check and is
   logged as oversize. The high-water marks count messages per peer. */
void
gw_io_bound (zsock_t *sock, size_t max_message_bytes, int queue_messages)
{
    if (max_message_bytes > 0 && max_message_bytes <= INT64_MAX / 2) {
        int64_t max = (int64_t) (2 * max_message_bytes);
        zmq_setsockopt (zsock_resolve (sock), ZMQ_MAXMSGSIZE, &max, sizeof max);
    }
    zsock_set_rcvhwm (sock, queue_messages);
    zsock_set_sndhwm (sock, queue_messages);
}
