/*  net.c - the network namespace: loopback up, nothing else.

    A fresh network namespace has only "lo", down. Bringing it up (one
    SIOCSIFFLAGS ioctl, no external tool) also gives it 127.0.0.1/8 and ::1.
    With network "none" the seccomp filter additionally refuses every socket
    family but AF_UNIX, so even loopback TCP is closed; "loopback" allows
    AF_INET/AF_INET6 inside the namespace (a server and a client in the same
    sandbox), which still reaches nothing outside it. */
#include "private.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int
net_setup (confine_ctx_t *ctx)
{
    int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset (&ifr, 0, sizeof ifr);
    strcpy (ifr.ifr_name, "lo");
    int rc = fd < 0 ? -1 : ioctl (fd, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl (fd, SIOCSIFFLAGS, &ifr);
    }
    int err = errno;
    if (fd >= 0)
        close (fd);
    if (rc < 0) {
        confine_error_set (ctx->error, "net", err, "bring up lo (SIOCSIFFLAGS): %s", strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_NET, CONFINE_ACTIVE,
                        ctx->policy->network == CONFINE_NET_NONE
                            ? "own network namespace with only lo; sockets limited to AF_UNIX"
                            : "own network namespace with only lo (loopback TCP/UDP inside the sandbox)");
    return 0;
}
