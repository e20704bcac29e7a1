/*  seccomp.c - the syscall filter, installed last (after Landlock).

    A deny list (README.md, "seccomp"): the default is ALLOW so that
    arbitrary Python packages keep working, and the known kernel attack
    surface answers EPERM (the persistent kernel survives a probe) or ENOSYS
    where libraries feature-detect and fall back (clone3: glibc starts
    threads with clone only after ENOSYS; io_uring; the new mount API).
    Only the native architecture passes: any other (i386 int 0x80) and x32
    numbers kill the process. A second, tiny filter answers ENOSYS for any
    syscall number newer than the ones this build knows, so a future
    syscall is denied until someone reviews it, and lets personality set
    only PER_LINUX. */
#include "private.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>

#if !defined(__x86_64__)
#error "libconfine's seccomp filter is written for x86-64 (add the aarch64 arch and syscall bound)"
#endif

/* The highest syscall number this build was reviewed against (Linux 6.1
   headers: set_mempolicy_home_node). */
#define CONFINE_LAST_KNOWN_SYSCALL 450

static const char *deny_eperm[] = {
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd",
    "lookup_dcookie", "settimeofday", "clock_settime",
    "open_by_handle_at", "name_to_handle_at", "memfd_secret", "iopl", "ioperm", "modify_ldt", "uselib", "ustat",
    "sysfs", "_sysctl", "vhangup", "fanotify_init", "move_pages", "migrate_pages", "nfsservctl",
};

static const char *deny_enosys[] = {
    "clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
};

/* CLONE_NEW* flags: clone may not make namespaces (Docker's 0x7E020000). */
static const unsigned long clone_ns_flags[] = {
    0x00020000 /* NEWNS */, 0x02000000 /* NEWCGROUP */, 0x04000000 /* NEWUTS */,
    0x08000000 /* NEWIPC */, 0x10000000 /* NEWUSER */, 0x20000000 /* NEWPID */, 0x40000000 /* NEWNET */,
};

static int
rule_errno (scmp_filter_ctx filter, const char *name, int err)
{
    int nr = seccomp_syscall_resolve_name (name);
    if (nr == __NR_SCMP_ERROR)
        return 0;   /* unknown to this libseccomp: nothing to deny */
    return seccomp_rule_add (filter, SCMP_ACT_ERRNO (err), nr, 0);
}

static int
add_socket_rules (scmp_filter_ctx filter, confine_net_t network)
{
    /* The family is an int: compare only its low 32 bits (CVE-2019-10063). */
    for (int family = 0; family < AF_MAX; family++) {
        bool allowed = family == AF_UNIX
                       || (network == CONFINE_NET_LOOPBACK && (family == AF_INET || family == AF_INET6 || family == AF_NETLINK));
        if (allowed)
            continue;
        int rc = seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (socket), 1,
                                   SCMP_A0 (SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t) family));
        if (rc < 0)
            return rc;
    }
    if (network == CONFINE_NET_LOOPBACK) {
        /* Netlink only for routing (getaddrinfo, ifaddrs): no netfilter, xfrm, audit. */
        int rc = seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (socket), 2,
                                   SCMP_A0 (SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_NETLINK),
                                   SCMP_A2 (SCMP_CMP_NE, 0 /* NETLINK_ROUTE */));
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int
build_rules (scmp_filter_ctx filter, confine_net_t network)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof deny_eperm / sizeof *deny_eperm; i++)
        rc = rule_errno (filter, deny_eperm[i], EPERM);
    for (size_t i = 0; rc == 0 && i < sizeof deny_enosys / sizeof *deny_enosys; i++)
        rc = rule_errno (filter, deny_enosys[i], ENOSYS);
    for (size_t i = 0; rc == 0 && i < sizeof clone_ns_flags / sizeof *clone_ns_flags; i++)
        rc = seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (clone), 1,
                               SCMP_A0 (SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));
    /* tty injection into a terminal outside (CVE-2017-5226, CVE-2023-28100). */
    if (rc == 0)
        rc = seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (ioctl), 1,
                               SCMP_A1 (SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
    if (rc == 0)
        rc = seccomp_rule_add (filter, SCMP_ACT_ERRNO (EPERM), SCMP_SYS (ioctl), 1,
                               SCMP_A1 (SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
    if (rc == 0)
        rc = add_socket_rules (filter, network);
    return rc;
}

/* What libseccomp cannot say (it takes one comparison per argument per
   rule). Filters stack; the strictest answer wins.
   - personality: only PER_LINUX (0) and the query (0xffffffff), on all 64
     bits; READ_IMPLIES_EXEC would make every mapping executable,
     ADDR_NO_RANDOMIZE end ASLR for the next exec: EPERM.
   - nr > CONFINE_LAST_KNOWN_SYSCALL (and not x32, which the first filter
     kills): ENOSYS. */
#define ARG0_LO offsetof (struct seccomp_data, args[0])
#define ARG0_HI (offsetof (struct seccomp_data, args[0]) + 4)    /* x86-64 is little-endian */

static int
install_raw_filter (void)
{
    struct sock_filter code[] = {
        /* 0 */ BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        /* 2 */ BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        /* 3 */ BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
        /* 4 */ BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 0, 6),       /* else 11 */
        /* 5 */ BPF_STMT (BPF_LD | BPF_W | BPF_ABS, ARG0_HI),
        /* 6 */ BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3),                      /* else 10 */
        /* 7 */ BPF_STMT (BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
        /* 8 */ BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, 0 /* PER_LINUX */, 5, 0),     /* 14 */
        /* 9 */ BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu /* query */, 4, 0), /* 14 */
        /* 10 */ BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        /* 11 */ BPF_JUMP (BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 2, 0),             /* 14 */
        /* 12 */ BPF_JUMP (BPF_JMP | BPF_JGT | BPF_K, CONFINE_LAST_KNOWN_SYSCALL, 0, 1),
        /* 13 */ BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        /* 14 */ BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { .len = sizeof code / sizeof *code, .filter = code };
    return prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int
seccomp_setup (confine_ctx_t *ctx)
{
    scmp_filter_ctx filter = seccomp_init (SCMP_ACT_ALLOW);
    if (!filter) {
        confine_error_set (ctx->error, "seccomp", ENOMEM, "seccomp_init failed");
        return -1;
    }
    int rc = seccomp_attr_set (filter, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0)
        rc = build_rules (filter, ctx->policy->network);
    if (rc < 0) {
        seccomp_release (filter);
        confine_error_set (ctx->error, "seccomp", -rc, "building the filter: %s", strerror (-rc));
        return -1;
    }
    rc = seccomp_load (filter);
    seccomp_release (filter);
    if (rc < 0) {
        confine_error_set (ctx->error, "seccomp", -rc, "seccomp_load: %s; the kernel needs CONFIG_SECCOMP_FILTER",
                           strerror (-rc));
        return -1;
    }
    if (install_raw_filter () < 0) {
        int err = errno;
        confine_error_set (ctx->error, "seccomp", err, "prctl(PR_SET_SECCOMP) for personality and unknown syscalls: %s",
                           strerror (err));
        return -1;
    }
    confine_report_set (ctx->report, CONFINE_LAYER_SECCOMP, CONFINE_ACTIVE,
                        "deny list (EPERM; ENOSYS for clone3, io_uring, new mount API, syscalls > %d), "
                        "personality PER_LINUX only, "
                        "x86-64 only, x32 and other ABIs killed; sockets: %s",
                        CONFINE_LAST_KNOWN_SYSCALL,
                        ctx->policy->network == CONFINE_NET_NONE ? "AF_UNIX only" : "AF_UNIX, AF_INET(6), NETLINK_ROUTE");
    return 0;
}
