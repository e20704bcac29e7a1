/*  gw_io.h - one epoll set for the conversations' sockets and fds (gw_io.c).
*/
#ifndef GW_IO_H_INCLUDED
#define GW_IO_H_INCLUDED

#include <czmq.h>
#include <stddef.h>

/* zloop polls its whole set on every wake-up; sockets and fds registered
   here sit in one epoll set that zloop sees as a single fd, so a wake-up
   costs O(ready) (gw_io.c). Handlers have zloop's signatures. */
typedef struct gw_io gw_io_t;
/* NULL with errno when the epoll set cannot be made. */
gw_io_t *gw_io_new (zloop_t *loop);
void gw_io_destroy (gw_io_t **self_p);
/* The set registered on loop, or NULL (then use zloop directly). */
gw_io_t *gw_io_of (zloop_t *loop);
/* 0, or -1 with errno (EEXIST: registered already; epoll_ctl's). */
int gw_io_reader (gw_io_t *self, zsock_t *sock, zloop_reader_fn *handler, void *arg);
void gw_io_reader_end (gw_io_t *self, zsock_t *sock);
/* A plain fd (item->fd, POLLIN); item stays the caller's. */
int gw_io_poller (gw_io_t *self, zmq_pollitem_t *item, zloop_fn *handler, void *arg);
void gw_io_poller_end (gw_io_t *self, int fd);
/* Call after sending on a registered socket: a send may consume the
   wake-up of messages waiting to be read, so the socket is re-checked. */
void gw_io_sent (gw_io_t *self, zsock_t *sock);
int gw_io_size (const gw_io_t *self); /* registered sockets and fds */
/* A plain fd's events from now on: ZMQ_POLLIN, ZMQ_POLLOUT or both (0:
   only errors and hang-ups); the handler's item->revents says which. */
int gw_io_poller_events (gw_io_t *self, int fd, short events);
/* Before bind or connect: frames above twice max_message_bytes end the
   peer's connection before they are buffered (ZMQ_MAXMSGSIZE, per frame),
   and at most queue_messages messages wait per peer and direction. */
void gw_io_bound (zsock_t *sock, size_t max_message_bytes, int queue_messages);
/* Messages queued per peer and direction (gateway/README.md, "Memory"):
   the control socket's peers, and each conversation's sockets. */
#define GW_QUEUE_CONTROL 16
#define GW_QUEUE_CONVERSATION 64

#endif
