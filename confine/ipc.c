/*  ipc.c - the IPC namespace: System V IPC and POSIX message queues of
    the sandbox are its own. Created by the clone; nothing to configure,
    so this only checks that the namespace differs from the host's. */
#include "private.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

int
ipc_setup (confine_ctx_t *ctx)
{
    struct stat st;
    if (stat ("/proc/self/ns/ipc", &st) < 0) {
        int err = errno;
        confine_error_set (ctx->error, "ipc", err, "stat /proc/self/ns/ipc: %s", strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_IPC, CONFINE_ACTIVE,
                        "own IPC namespace (ipc:[%lu]): System V IPC and POSIX mqueues are private",
                        (unsigned long) st.st_ino);
    return 0;
}
