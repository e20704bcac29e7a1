/*  zygote.h - the zygote's internals shared by zygote.c (server),
    zygote_client.c (the proxy in kennel-launch --spec-fd), zygote_wire.c
    (messages with fds) and zygote_python.c (the interpreter's side). */
#ifndef ZYGOTE_H_INCLUDED
#define ZYGOTE_H_INCLUDED

#include <stddef.h>
#include <sys/types.h>

/* One SOCK_SEQPACKET message carries a whole request: the spec text (at
   most this long: a seqpacket message must fit the socket buffer) and
   fds 0, 1, 2 and the status fd. */
#define ZYGOTE_REQUEST_MAX (192 * 1024)
#define ZYGOTE_MAX_FDS 4
/* fds one received message may carry: a peer that sends more than
   ZYGOTE_MAX_FDS (up to this) has the rest closed, not left open. */
#define ZYGOTE_RECV_FDS 16

/* Sends one message with nfds fds (SCM_RIGHTS). 0, or -1 with errno. */
int zygote_send (int sock, const char *text, const int *fds, size_t nfds);

/* Receives one message (at most cap bytes) and its fds (close-on-exec,
   at most ZYGOTE_MAX_FDS; more are closed). Returns its length (0 at EOF),
   or -1 with errno (EMSGSIZE when truncated). */
ssize_t zygote_recv (int sock, char *buf, size_t cap, int *fds, size_t *nfds);

/* In the zygote after pykernel_prepare: imports the comma-separated
   modules (NULL: none), collects and gc.freeze()s. 0, or -1 with one line
   on stderr naming the module. */
int launch_zygote_preload (const char *modules);

/* In the zygote, last before it serves (GIL held): takes every free block
   of pymalloc's partly used pools and glibc's heap, so children allocate in
   fresh pages instead of copying shared ones (zygote_heap.c). Nothing under
   AddressSanitizer (its own allocator). */
void zygote_heap_fill (void);

#endif
