/*  caps.c - every capability dropped: the bounding set first (that needs
    CAP_SETPCAP, which we still hold), then effective, permitted,
    inheritable and ambient. no_new_privs already stops exec from granting
    any back; the bounding set makes it hold even without it. */
#include "private.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int
last_cap (void)
{
    int last = CAP_LAST_CAP;
    FILE *f = fopen ("/proc/sys/kernel/cap_last_cap", "re");
    if (f) {
        if (fscanf (f, "%d", &last) != 1)
            last = CAP_LAST_CAP;
        fclose (f);
    }
    return last;
}

int
caps_drop_bounding (confine_ctx_t *ctx)
{
    int last = last_cap ();
    for (int cap = 0; cap <= last; cap++) {
        if (prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) {
            int err = errno;
            confine_error_set (ctx->error, "caps", err, "prctl(PR_CAPBSET_DROP, %d): %s", cap, strerror (err));
            return -1;
        }
    }
    return 0;
}

int
caps_drop_all (confine_ctx_t *ctx)
{
    struct __user_cap_header_struct header = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    memset (data, 0, sizeof data);
    if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        int err = errno;
        confine_error_set (ctx->error, "caps", err, "prctl(PR_CAP_AMBIENT_CLEAR_ALL): %s", strerror (err));
        return -1;
    }
    if (syscall (SYS_capset, &header, data) < 0) {
        int err = errno;
        confine_error_set (ctx->error, "caps", err, "capset(0): %s", strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_CAPS, CONFINE_ACTIVE,
                        "no capabilities: effective, permitted, inheritable, ambient and bounding sets empty");
    return 0;
}
