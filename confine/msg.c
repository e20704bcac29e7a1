/*  msg.c - the messages between the waiter and the sandbox's init, on
    their SOCK_SEQPACKET pair (private.h: confine_msg_t): one message a
    packet, the sender's pid from SCM_CREDENTIALS, and the guard's /dev/fuse
    fd passed with SCM_RIGHTS. confine.c, pid.c and mounts.c all speak it. */
#include "private.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
confine_msg_send (int fd, confine_msg_type_t type, int value, const confine_error_t *error)
{
    confine_msg_t msg;
    memset (&msg, 0, sizeof msg);
    msg.type = type;
    msg.value = value;
    if (error)
        msg.error = *error;
    /* The receiver's SO_PASSCRED makes the kernel attach our pid, translated
       into the receiver's pid namespace; nothing to add here. */
    ssize_t n;
    do
        n = send (fd, &msg, sizeof msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t) sizeof msg ? 0 : -1;
}

int
confine_msg_send_fd (int fd, confine_msg_type_t type, int passed)
{
    confine_msg_t msg;
    memset (&msg, 0, sizeof msg);
    msg.type = type;
    union {
        char buf[CMSG_SPACE (sizeof (int))];
        struct cmsghdr align;
    } control;
    memset (&control, 0, sizeof control);
    struct iovec iov = { .iov_base = &msg, .iov_len = sizeof msg };
    struct msghdr hdr = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof control.buf };
    struct cmsghdr *c = CMSG_FIRSTHDR (&hdr);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN (sizeof (int));
    memcpy (CMSG_DATA (c), &passed, sizeof passed);
    ssize_t n;
    do
        n = sendmsg (fd, &hdr, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t) sizeof msg ? 0 : -1;
}

/* recvmsg, again after EINTR, and once after ECONNRESET: a peer that exits
   with a message of ours unread leaves ECONNRESET pending on our end, which
   the kernel reports (and clears) before the messages the peer queued for
   us, such as the error it sent just before it exited. */
static ssize_t
recv_queued (int fd, struct msghdr *hdr, int flags)
{
    bool reset_seen = false;
    for (;;) {
        ssize_t n = recvmsg (fd, hdr, flags);
        if (n >= 0 || !(errno == EINTR || (errno == ECONNRESET && !reset_seen)))
            return n;
        reset_seen = reset_seen || errno == ECONNRESET;
    }
}

int
confine_msg_recv (int fd, confine_msg_t *msg, pid_t *pid, bool nonblock)
{
    union {
        char buf[CMSG_SPACE (sizeof (struct ucred)) + CMSG_SPACE (sizeof (int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = msg, .iov_len = sizeof *msg };
    struct msghdr hdr = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                          .msg_controllen = sizeof control.buf };
    ssize_t n = recv_queued (fd, &hdr, MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0));
    int passed = -1;
    for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR (&hdr) : NULL; c; c = CMSG_NXTHDR (&hdr, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && pid) {
            struct ucred cred;
            memcpy (&cred, CMSG_DATA (c), sizeof cred);
            *pid = cred.pid;
        }
        else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN (sizeof (int)))
            memcpy (&passed, CMSG_DATA (c), sizeof passed);
    if (n == (ssize_t) sizeof *msg && msg->type == CONFINE_MSG_GUARD && passed >= 0) {
        msg->value = passed;
        return 0;
    }
    if (passed >= 0)
        close (passed);
    return n == (ssize_t) sizeof *msg && msg->type != CONFINE_MSG_GUARD ? 0 : -1;
}
