/*  landlock.c - Landlock, with raw syscalls (no library): writes only under
    /workspace, /tmp, /dev/shm and /run/kennel (plus the /dev nodes);
    everything else is read/execute only. ABI 4+: TCP bind/connect denied
    when the network is "none". ABI 6+: no abstract unix sockets or signals
    beyond the sandbox. Applied after pivot_root (a landlocked process
    cannot mount) and before seccomp. Every right the running kernel knows
    is handled, so new rights are denied by default. */
#include "private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The uapi of Linux 6.12 (Debian 12's headers stop at ABI 3). */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__ ((packed));

static uint64_t
fs_rights (int abi)
{
    uint64_t all = (1ULL << 13) - 1;    /* ABI 1: bits 0..12 */
    if (abi >= 2)
        all |= LL_FS_REFER;
    if (abi >= 3)
        all |= LL_FS_TRUNCATE;
    if (abi >= 5)
        all |= LL_FS_IOCTL_DEV;
    return all;
}

static int
allow_path (int ruleset, const char *path, uint64_t access)
{
    int fd = open (path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct ll_path_beneath rule = { .allowed_access = access, .parent_fd = fd };
    long rc = syscall (SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    int err = errno;
    close (fd);
    errno = err;
    return rc < 0 ? -1 : 0;
}

int
landlock_only_below (int dir_fd)
{
    long abi = syscall (SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    if (abi < 0)
        return -1;
    uint64_t all = fs_rights ((int) abi);
    struct ll_ruleset_attr attr = { .handled_access_fs = all };
    int ruleset = (int) syscall (SYS_landlock_create_ruleset, &attr, 8, 0);
    if (ruleset < 0)
        return -1;
    struct ll_path_beneath rule = { .allowed_access = all, .parent_fd = dir_fd };
    long rc = syscall (SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    if (rc == 0)
        rc = prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? syscall (SYS_landlock_restrict_self, ruleset, 0) : -1;
    int err = errno;
    close (ruleset);
    errno = err;
    return rc < 0 ? -1 : 0;
}

static int
unavailable (confine_ctx_t *ctx, int err)
{
    const char *hint = err == EOPNOTSUPP ? "Landlock is built but disabled: add landlock to the lsm= boot parameter"
                                         : "the kernel lacks Landlock (CONFIG_SECURITY_LANDLOCK, Linux 5.13+)";
    return confine_layer_fail (ctx, CONFINE_LAYER_LANDLOCK, CONFINE_UNSUPPORTED, err,
                               "landlock_create_ruleset(VERSION): %s; %s", strerror (err), hint);
}

int
landlock_setup (confine_ctx_t *ctx)
{
    long abi = syscall (SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    if (abi < 0)
        return unavailable (ctx, errno);
    ctx->report->landlock_abi = (int) abi;
    /* Partial Landlock is a degraded layer: only with the policy's consent. */
    if (abi < 6 && confine_layer_fail (ctx, CONFINE_LAYER_LANDLOCK, CONFINE_DEGRADED, 0,
                                       "ABI %ld: filesystem rules only, %s", abi,
                                       abi < 4 ? "no TCP rules before ABI 4 (Linux 6.7) and no scoping before ABI 6 (Linux 6.12)"
                                               : "no abstract-socket/signal scoping before ABI 6 (Linux 6.12)") < 0)
        return -1;
    uint64_t all = fs_rights ((int) abi);
    struct ll_ruleset_attr attr = { .handled_access_fs = all };
    size_t attr_size = 8;
    if (abi >= 4 && ctx->policy->network == CONFINE_NET_NONE)
        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
    if (abi >= 4)
        attr_size = 16;
    if (abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        attr_size = 24;
    }
    int ruleset = (int) syscall (SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0) {
        int err = errno;
        return confine_layer_fail (ctx, CONFINE_LAYER_LANDLOCK, CONFINE_UNSUPPORTED, err,
                                   "landlock_create_ruleset(ABI %ld): %s", abi, strerror (err));
    }
    const uint64_t read_exec = LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR;
    const uint64_t dev = read_exec | LL_FS_WRITE_FILE | (all & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
    /* a person's directory gets no symlinks or special files, whether its
       guard serves it or it is bound as is (guard.c) */
    const uint64_t special = LL_FS_MAKE_CHAR | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
    struct { const char *path; uint64_t access; } rules[] = {
        { "/", read_exec },
        { "/dev", dev },
        { CONFINE_WORKSPACE_DIR, ctx->policy->workspace_guard ? all & ~special : all },
        { "/tmp", all },
        { "/dev/shm", all },
        { CONFINE_RUN_DIR, all },
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        if (allow_path (ruleset, rules[i].path, rules[i].access) < 0) {
            int err = errno;
            close (ruleset);
            confine_error_set (ctx->error, "landlock", err, "landlock_add_rule(%s): %s", rules[i].path, strerror (err));
            return -1;
        }
    }
    long rc = prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? syscall (SYS_landlock_restrict_self, ruleset, 0) : -1;
    int err = errno;
    close (ruleset);
    if (rc < 0) {
        confine_error_set (ctx->error, "landlock", err, "landlock_restrict_self: %s", strerror (err));
        return -1;
    }
    if (abi < 6)
        return 0;   /* recorded as degraded above */
    confine_report_set (ctx->report, CONFINE_LAYER_LANDLOCK, CONFINE_ACTIVE,
                        "ABI %ld: writes only under " CONFINE_WORKSPACE_DIR ", /tmp, /dev/shm, " CONFINE_RUN_DIR "%s; abstract unix "
                        "sockets and signals scoped to the sandbox", abi,
                        attr.handled_access_net ? "; TCP bind/connect denied" : "");
    return 0;
}
