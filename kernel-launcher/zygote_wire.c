/*  zygote_wire.c - one SOCK_SEQPACKET message with fds (SCM_RIGHTS), the
    only framing the zygote and its proxies use. */
#include "zygote.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
zygote_send (int sock, const char *text, const int *fds, size_t nfds)
{
    struct iovec iov = { .iov_base = (void *) text, .iov_len = strlen (text) };
    union {
        char buf[CMSG_SPACE (ZYGOTE_MAX_FDS * sizeof (int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds > ZYGOTE_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    if (nfds > 0) {
        memset (&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE (nfds * sizeof (int));
        struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN (nfds * sizeof (int));
        memcpy (CMSG_DATA (cmsg), fds, nfds * sizeof (int));
    }
    ssize_t n;
    do
        n = sendmsg (sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : 0;
}

ssize_t
zygote_recv (int sock, char *buf, size_t cap, int *fds, size_t *nfds)
{
    struct iovec iov = { .iov_base = buf, .iov_len = cap };
    union {
        char buf[CMSG_SPACE (ZYGOTE_RECV_FDS * sizeof (int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof control.buf };
    *nfds = 0;
    ssize_t n;
    do
        n = recvmsg (sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR (&msg); cmsg; cmsg = CMSG_NXTHDR (&msg, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
            continue;
        size_t count = (cmsg->cmsg_len - CMSG_LEN (0)) / sizeof (int);
        int got[ZYGOTE_RECV_FDS];
        memcpy (got, CMSG_DATA (cmsg), count * sizeof (int));
        for (size_t i = 0; i < count; i++) {
            if (*nfds < ZYGOTE_MAX_FDS)
                fds[(*nfds)++] = got[i];
            else
                close (got[i]);
        }
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (size_t i = 0; i < *nfds; i++)
            close (fds[i]);
        *nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    return n;
}
