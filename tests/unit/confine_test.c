/*  confine_test.c - the policy JSON loader, the layer report, the error
    JSON, the allocation policy of libconfine, and confine_cgroup_new with
    real processes where this host gives a cgroup (as root on v1, or a
    delegated v2 subtree). The sandbox itself is tested with real processes
    in tests/security. */
#include "confine.h"
#include "oom_check.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf (stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                           \
        }                                                                         \
    } while (0)

static int
load (confine_policy_t *policy, const char *text, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *json = json_loads (text, 0, &jerr);
    if (!json) {
        fprintf (stderr, "bad test JSON: %s\n", jerr.text);
        abort ();
    }
    int rc = confine_policy_load_json (policy, json, err, errlen);
    json_decref (json);
    return rc;
}

static void
test_defaults (void)
{
    confine_policy_t *p = confine_policy_new ();
    CHECK (p->workspace == NULL && p->run_dir == NULL);
    CHECK (strcmp (p->hostname, "kennel") == 0);
    CHECK (p->network == CONFINE_NET_NONE);
    CHECK (p->uid == 1000 && p->gid == 1000 && p->host_uid == 2000000000u && p->host_gid == 2000000000u);
    CHECK (p->memory_bytes == 2ULL << 30 && p->pids == 256 && p->cpus == 1.0);
    CHECK (p->rlimit_core == 1 && p->rlimit_nofile == 1024 && p->rlimit_data == 2ULL << 30);
    CHECK (p->allow_degraded == 0);
    CHECK (p->env_count == 0 && p->keep_fd_count == 0);
    confine_policy_destroy (&p);
}

static void
test_load_all_fields (void)
{
    confine_policy_t *p = confine_policy_new ();
    char err[256] = "";
    int rc = load (p, "{\"workspace\": \"/w\", \"run_dir\": \"/r\", \"hostname\": \"box\","
                      " \"network\": \"loopback\", \"uid\": 2000, \"gid\": 2001, \"host_uid\": 300000,"
                      " \"host_gid\": 300001, \"memory_bytes\": 1e9, \"pids\": 32, \"cpus\": 0.5,"
                      " \"workspace_bytes\": 1048576, \"workspace_files\": 300, \"tmp_bytes\": 4096, \"shm_bytes\": 8192,"
                      " \"rlimits\": {\"nofile\": 64, \"fsize\": 100, \"nproc\": 10, \"stack\": 1048576,"
                      "  \"data\": 5000000, \"core\": 0, \"cpu\": 60},"
                      " \"env\": {\"A\": \"1\", \"B\": \"x=y\"}, \"allow_degraded\": [\"cgroup\", \"landlock\"]}",
                   err, sizeof err);
    CHECK (rc == 0);
    if (rc)
        fprintf (stderr, "  error: %s\n", err);
    CHECK (strcmp (p->workspace, "/w") == 0 && strcmp (p->run_dir, "/r") == 0);
    CHECK (strcmp (p->hostname, "box") == 0 && p->network == CONFINE_NET_LOOPBACK);
    CHECK (p->uid == 2000 && p->gid == 2001 && p->host_uid == 300000 && p->host_gid == 300001);
    CHECK (p->memory_bytes == 1000000000ULL && p->pids == 32 && p->cpus == 0.5);
    CHECK (p->workspace_bytes == 1048576 && p->workspace_files == 300 && p->tmp_bytes == 4096 && p->shm_bytes == 8192);
    CHECK (p->rlimit_nofile == 64 && p->rlimit_fsize == 100 && p->rlimit_nproc == 10);
    CHECK (p->rlimit_stack == 1048576 && p->rlimit_data == 5000000 && p->rlimit_core == 0 && p->rlimit_cpu == 60);
    CHECK (p->env_count == 2 && strcmp (p->env[0], "A=1") == 0 && strcmp (p->env[1], "B=x=y") == 0);
    CHECK (p->allow_degraded == ((1u << CONFINE_LAYER_CGROUP) | (1u << CONFINE_LAYER_LANDLOCK)));
    /* null resets the workspace to a fresh tmpfs */
    CHECK (load (p, "{\"workspace\": null}", err, sizeof err) == 0 && p->workspace == NULL);
    confine_policy_destroy (&p);
    CHECK (p == NULL);
}

/* Every bad input is refused with a message naming the field. */
static void
test_load_errors (void)
{
    static const struct { const char *json, *needle; } cases[] = {
        { "[]", "JSON object" },
        { "{\"netwrok\": \"none\"}", "netwrok" },
        { "{\"network\": \"host\"}", "network" },
        { "{\"uid\": 0}", "uid" },
        { "{\"host_uid\": -5}", "host_uid" },
        { "{\"pids\": \"many\"}", "pids" },
        { "{\"memory_bytes\": 1.5}", "memory_bytes" },
        { "{\"rlimits\": {\"as\": 1}}", "as" },
        { "{\"rlimits\": []}", "rlimits" },
        { "{\"env\": {\"A=B\": \"x\"}}", "A=B" },
        { "{\"env\": {\"A\": 1}}", "env" },
        { "{\"allow_degraded\": [\"seccomp\"]}", "seccomp" },
        { "{\"allow_degraded\": [\"nosuch\"]}", "allow_degraded" },
        { "{\"allow_degraded\": \"cgroup\"}", "allow_degraded" },
        { "{\"hostname\": \"\"}", "hostname" },
        { "{\"cpus\": -1}", "cpus" },
        /* no number switches a limit off: only "unlimited", where allowed */
        { "{\"memory_bytes\": 0}", "memory_bytes" },
        { "{\"pids\": 0}", "pids" },
        { "{\"cpus\": 0}", "cpus" },
        { "{\"workspace_bytes\": 0}", "workspace_bytes" },
        { "{\"workspace_files\": 0}", "workspace_files" },
        { "{\"workspace_files\": \"unlimited\"}", "workspace_files" },
        { "{\"tmp_bytes\": 0}", "tmp_bytes" },
        { "{\"shm_bytes\": 0}", "shm_bytes" },
        { "{\"workspace_bytes\": \"unlimited\"}", "workspace_bytes" },
        { "{\"pids\": \"Unlimited\"}", "pids" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        confine_policy_t *p = confine_policy_new ();
        char err[256] = "";
        int rc = load (p, cases[i].json, err, sizeof err);
        CHECK (rc < 0);
        if (rc == 0 || !strstr (err, cases[i].needle)) {
            fprintf (stderr, "  case %s -> \"%s\"\n", cases[i].json, err);
            failures += rc < 0;
        }
        confine_policy_destroy (&p);
    }
}

/* "unlimited" lifts memory_bytes, pids and cpus (stored as 0: no cgroup
   file written). */
static void
test_load_unlimited (void)
{
    confine_policy_t *p = confine_policy_new ();
    char err[256] = "";
    CHECK (load (p, "{\"memory_bytes\": \"unlimited\", \"pids\": \"unlimited\", \"cpus\": \"unlimited\"}", err,
                 sizeof err) == 0);
    CHECK (p->memory_bytes == 0 && p->pids == 0 && p->cpus == 0);
    confine_policy_destroy (&p);
}

static void
test_load_file (void)
{
    char path[] = "/tmp/confine_test_XXXXXX";
    int fd = mkstemp (path);
    CHECK (fd >= 0);
    const char *text = "{\"pids\": 7}\n";
    CHECK (write (fd, text, strlen (text)) == (ssize_t) strlen (text));
    close (fd);
    confine_policy_t *p = confine_policy_new ();
    char err[256] = "";
    CHECK (confine_policy_load_file (p, path, err, sizeof err) == 0 && p->pids == 7);
    unlink (path);
    CHECK (confine_policy_load_file (p, path, err, sizeof err) < 0 && strstr (err, path));
    confine_policy_destroy (&p);
}

static void
test_layers (void)
{
    for (int i = 0; i < CONFINE_LAYER_COUNT_; i++) {
        const char *name = confine_layer_name ((confine_layer_t) i);
        CHECK (name && confine_layer_from_name (name) == i);
    }
    CHECK (confine_layer_name (CONFINE_LAYER_COUNT_) == NULL);
    CHECK (confine_layer_from_name ("nope") == -1);
    CHECK (confine_layer_degradable (CONFINE_LAYER_CGROUP) && !confine_layer_degradable (CONFINE_LAYER_USERNS));
    CHECK (!confine_layer_degradable (CONFINE_LAYER_SECCOMP));
}

static void
test_report (void)
{
    confine_report_t *r = confine_report_new ();
    json_t *json = confine_report_json (r);
    CHECK (json_object_size (json) == 0);   /* nothing claimed before it is set up */
    json_decref (json);
    confine_report_set (r, CONFINE_LAYER_USERNS, CONFINE_ACTIVE, "uid %d", 1000);
    confine_report_set (r, CONFINE_LAYER_CGROUP, CONFINE_UNSUPPORTED, "cgroup v1 needs root");
    confine_report_set (r, CONFINE_LAYER_LANDLOCK, CONFINE_DEGRADED, "ABI 3");
    confine_report_set (r, CONFINE_LAYER_COUNT_, CONFINE_ACTIVE, "ignored");
    json = confine_report_json (r);
    CHECK (json_object_size (json) == 3);
    json_t *userns = json_object_get (json, "userns");
    CHECK (strcmp (json_string_value (json_object_get (userns, "state")), "active") == 0);
    CHECK (strcmp (json_string_value (json_object_get (userns, "reason")), "uid 1000") == 0);
    CHECK (strcmp (json_string_value (json_object_get (json_object_get (json, "cgroup"), "state")), "unsupported") == 0);
    CHECK (strcmp (json_string_value (json_object_get (json_object_get (json, "landlock"), "state")), "degraded") == 0);
    json_decref (json);
    confine_report_destroy (&r);
    CHECK (r == NULL);
    CHECK (strcmp (confine_state_name (CONFINE_DEGRADED), "degraded") == 0);
}

static void
test_error_json (void)
{
    confine_error_t e;
    confine_error_set (&e, "userns", 1, "clone: %s", "Operation not permitted");
    json_t *json = confine_error_json (&e);
    CHECK (strcmp (json_string_value (json_object_get (json, "stage")), "userns") == 0);
    CHECK (json_integer_value (json_object_get (json, "errno")) == 1);
    CHECK (strcmp (json_string_value (json_object_get (json, "message")), "clone: Operation not permitted") == 0);
    json_decref (json);
}

static void
test_env_and_fds (void)
{
    confine_policy_t *p = confine_policy_new ();
    confine_policy_setenv (p, "X", "1");
    CHECK (p->env_count == 1 && strcmp (p->env[0], "X=1") == 0);
    for (int i = 0; i < 16; i++)
        CHECK (confine_policy_keep_fd (p, 10 + i) == 0);
    CHECK (confine_policy_keep_fd (p, 99) < 0);
    confine_policy_destroy (&p);
}

/* The child of oom_check: allocate what cannot be had, in confine_xmalloc
   or inside jansson once confine_alloc_json ran. Returns only when the
   allocation was survived, which is the failure. */
static int
oom_child (const char *what)
{
    confine_alloc_json ();
    if (strcmp (what, "malloc") == 0)
        printf ("%p\n", confine_xmalloc (OOM_SIZE));
    else
        printf ("%p\n", (void *) json_stringn_nocheck ("x", OOM_SIZE));
    return 0;
}

/* Whether pid's /proc/PID/cgroup names dir's path below the hierarchy. */
static bool
in_cgroup (pid_t pid, const char *procs)
{
    char path[64], line[1024];
    snprintf (path, sizeof path, "/proc/%d/cgroup", (int) pid);
    const char *name = strstr (procs, "/kennel-");
    size_t len = name ? strcspn (name + 1, "/") + 1 : 0;
    FILE *f = fopen (path, "re");
    bool found = false;
    while (f && name && fgets (line, sizeof line, f))
        found |= strstr (line, "/kennel-") && strncmp (strstr (line, "/kennel-"), name, len) == 0;
    if (f)
        fclose (f);
    return found;
}

/* A child that joins (as a host tool command does between fork and exec),
   then forks up to `forks` children that sleep; it exits with how many
   forks succeeded (each fork a pid of the cgroup's pids.max). */
static pid_t
join_child (const confine_cgroup_t *cg, int forks, int ready_fd)
{
    pid_t pid = fork ();
    if (pid != 0)
        return pid;
    for (const char *const *p = confine_cgroup_procs (cg); *p; p++) {
        int fd = open (*p, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write (fd, "0", 1) != 1)
            _exit (100);
        close (fd);
    }
    int made = 0;
    for (int i = 0; i < forks; i++) {
        pid_t c = fork ();
        if (c == 0) {
            pause ();
            _exit (0);
        }
        made += c > 0;
    }
    if (write (ready_fd, &made, sizeof made) != sizeof made)
        _exit (101);
    pause ();
    _exit (0);
}

static void
test_own_cgroup (void)
{
    struct statfs fs;
    bool v2 = statfs ("/sys/fs/cgroup", &fs) == 0 && fs.f_type == 0x63677270;
    confine_error_t err = { 0 };
    confine_cgroup_t *cg = confine_cgroup_new (64ULL << 20, 3, &err);
    if (!v2 && geteuid () != 0) {
        /* cgroup v1 as a user: refused, naming the fix */
        CHECK (cg == NULL && strcmp (err.stage, "cgroup") == 0 && strstr (err.message, "start as root"));
        printf ("confine_test: cgroup v1 as uid %d: confine_cgroup_new refused (%s)\n", (int) geteuid (), err.message);
        return;
    }
    if (!cg) {
        /* v2 without a delegated subtree: the refusal names the setting */
        CHECK (v2 && strcmp (err.stage, "cgroup") == 0 && strstr (err.message, "Delegate=yes"));
        printf ("confine_test: no cgroup here: %s\n", err.message);
        return;
    }
    CHECK (strstr (confine_cgroup_describe (cg), "pids 3"));
    int pipefd[2];
    CHECK (pipe (pipefd) == 0);
    pid_t child = join_child (cg, 4, pipefd[1]);
    int made = -1;
    CHECK (read (pipefd[0], &made, sizeof made) == sizeof made);
    /* pids.max 3: the child and two of its four forks */
    CHECK (made == 2);
    CHECK (in_cgroup (child, confine_cgroup_procs (cg)[0]));
    CHECK (confine_cgroup_remove (cg) < 0 && errno == EBUSY);
    CHECK (confine_cgroup_kill (cg) >= 1);
    int status = 0;
    CHECK (waitpid (child, &status, 0) == child && WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
    /* the grandchildren were killed too (reaped by init): the cgroup empties */
    int rc = -1;
    for (int i = 0; i < 500 && (rc = confine_cgroup_remove (cg)) < 0; i++)
        nanosleep (&(struct timespec) { 0, 10 * 1000 * 1000 }, NULL);
    CHECK (rc == 0);
    CHECK (confine_cgroup_kill (cg) == 0);
    confine_cgroup_destroy (&cg);
    CHECK (cg == NULL);
    close (pipefd[0]);
    close (pipefd[1]);
}

int
main (int argc, char *argv[])
{
    if (argc == 3 && strcmp (argv[1], "--oom-child") == 0)
        return oom_child (argv[2]);
    test_defaults ();
    test_load_all_fields ();
    test_load_errors ();
    test_load_unlimited ();
    test_load_file ();
    test_layers ();
    test_report ();
    test_error_json ();
    test_env_and_fds ();
    test_own_cgroup ();
    CHECK (confine_selftest (false) == 0);
    CHECK (oom_check ("malloc") == 0);
    CHECK (oom_check ("jansson") == 0);
    printf ("confine_test: %s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
