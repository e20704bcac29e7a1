/*  gw_kernel.c - one kernel instance (gw_kernel.h): run dir, key, launch,
    and the launch spec that describes it.
*/
#include "gw_kernel.h"
#include "gw_config.h"
#include "gw_launch.h"
#include "gw_quota.h"
#include "gw_util.h"
#include "wire.h"
#include "kernel-launcher/kennel_launch.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

struct gw_kernel {
    char *run_dir;
    wire_connection_t *conn;
    gw_launch_t *launch;
    double started;
};

json_t *
gw_kernel_spec (const gw_config_t *config, const char *kernel_name, const gw_policy_t *p, json_t *tools,
                const char *workspace, const char *run_dir)
{
    json_t *policy = gw_confine_policy_json (config, p);
    json_t *kernel;
    json_t *configured = json_object_get (config->kernels, kernel_name);
    if (configured)
        kernel = json_pack ("{s:O}", LAUNCH_KERNEL_ARGV, json_object_get (configured, "argv"));
    else {
        json_t *settings = json_pack ("{s:s, s:f, s:O}", "builtins", p->builtins, "tool_timeout", p->tool_timeout,
                                      "tools", tools);
        if (p->imports)
            json_object_set (settings, "imports", p->imports);
        kernel
            = json_pack ("{s:s, s:o}", LAUNCH_KERNEL_BUILTIN, LAUNCH_BUILTIN_PYTHON, LAUNCH_KERNEL_SETTINGS, settings);
    }
    return json_pack ("{s:o, s:s, s:s, s:o, s:O}", LAUNCH_SPEC_POLICY, policy, LAUNCH_SPEC_WORKSPACE, workspace,
                      LAUNCH_SPEC_RUN_DIR, run_dir, LAUNCH_SPEC_KERNEL, kernel, LAUNCH_SPEC_ENV, p->env);
}

static int
kernel_files_new (const gw_config_t *config, const char *runs, const char *kernel_name, char **run_dir,
                  wire_connection_t **kconn, char **errmsg)
{
    char rnd[WIRE_ID_SIZE];
    wire_id_new (rnd);
    rnd[GW_SHORT_ID_LEN] = 0;
    *run_dir = wire_xasprintf ("%s/%s", runs, rnd);
    *kconn = NULL;
    if ((int) (strlen (*run_dir) + strlen ("/" LAUNCH_KERNEL_IP_NAME "-65535")) > GW_SUN_PATH_MAX) {
        *errmsg = wire_xasprintf ("the state dir of %s is too long for ipc socket paths (%d bytes)", runs,
                                  GW_SUN_PATH_MAX);
        return -1;
    }
    if (mkdir (*run_dir, 0700) < 0) {
        *errmsg = wire_xasprintf ("cannot create %s: %s", *run_dir, strerror (errno));
        return -1;
    }
    if (gw_quota_apply (config, *run_dir, GW_RUN_DIR_BYTES, GW_RUN_DIR_FILES, errmsg) < 0)
        return -1;
    wire_key_t *key = wire_key_new_random ();
    wire_connection_t *kc = wire_connection_new ();
    gw_set_string (&kc->transport, "ipc");
    gw_set_string (&kc->ip, LAUNCH_KERNEL_IP);
    kc->shell_port = 1, kc->iopub_port = 2, kc->stdin_port = 3, kc->control_port = 4, kc->hb_port = 5;
    gw_set_string (&kc->key, wire_key_text (key));
    gw_set_string (&kc->kernel_name, kernel_name);
    wire_key_destroy (&key);
    char *kpath = wire_xasprintf ("%s/%s", *run_dir, LAUNCH_CONNECTION_NAME);
    int rc = wire_connection_save (kc, kpath);
    free (kpath);
    *kconn = kc;
    if (rc < 0) {
        *errmsg = wire_xstrdup ("cannot write the kernel's connection file");
        return -1;
    }
    return 0;
}

gw_kernel_t *
gw_kernel_new (const gw_config_t *config, const char *runs, const char *kernel_name, char **errmsg)
{
    gw_kernel_t *self = wire_xcalloc (1, sizeof *self);
    if (kernel_files_new (config, runs, kernel_name, &self->run_dir, &self->conn, errmsg) < 0) {
        gw_quota_unmount (self->run_dir);
        gw_fs_remove_tree (self->run_dir);
        gw_kernel_destroy (&self);
    }
    return self;
}

void
gw_kernel_destroy (gw_kernel_t **self_p)
{
    gw_kernel_t *self = *self_p;
    if (!self)
        return;
    gw_launch_abandon (&self->launch);
    free (self->run_dir);
    wire_connection_destroy (&self->conn);
    free (self);
    *self_p = NULL;
}

int
gw_kernel_launch (gw_kernel_t *self, zloop_t *loop, const char *launcher, json_t *spec, const char *log_path,
                  gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg, char **errmsg)
{
    self->launch = gw_launch_start (loop, launcher, spec, log_path, on_status, on_exit, arg, errmsg);
    self->started = gw_clock_mono ();
    return self->launch ? 0 : -1;
}

void
gw_kernel_adopt (gw_kernel_t *self, gw_launch_fn *on_status, gw_launch_fn *on_exit, void *arg)
{
    gw_launch_rebind (self->launch, on_status, on_exit, arg);
}

void
gw_kernel_end (gw_kernel_t *self)
{
    if (self)
        gw_launch_abandon (&self->launch);
}

const char *
gw_kernel_run_dir (const gw_kernel_t *self)
{
    return self->run_dir;
}

const wire_connection_t *
gw_kernel_conn (const gw_kernel_t *self)
{
    return self->conn;
}

gw_launch_t *
gw_kernel_launch_of (const gw_kernel_t *self)
{
    return self ? self->launch : NULL;
}

double
gw_kernel_started (const gw_kernel_t *self)
{
    return self->started;
}
