/*  gw_server_access.c - the server as the other classes see it
    (gw_server_access.h, gw_ops.h's server side): what they read of it (its
    fields are private: gw_server_private.h), the layer report and config
    they hand it, the end of its loop. Apart from gw_server.c so that the
    classes below the server do not depend on it, and so that a test can
    link it with a server built by hand (tests/fuzz/gw_control_fuzz.c).
*/
#include "gw_server_access.h"
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_ops.h"
#include "gw_server_private.h"
#include "gw_timer.h"
#include "gw_util.h"
#include "wire.h"

zloop_t *
gw_server_loop (const gw_server_t *self)
{
    return self->loop;
}

const gw_config_t *
gw_server_config (const gw_server_t *self)
{
    return self->config;
}

const char *
gw_server_state_dir (const gw_server_t *self)
{
    return self->state_dir;
}

gw_io_t *
gw_server_io (const gw_server_t *self)
{
    return self->io;
}

gw_lingers_t *
gw_server_lingers (const gw_server_t *self)
{
    return self->lingers;
}

const wire_limits_t *
gw_server_limits (const gw_server_t *self)
{
    return &self->limits;
}

bool
gw_server_kernel_mode (const gw_server_t *self)
{
    return self->kernel_mode;
}

void
gw_server_set_kernel_mode (gw_server_t *self)
{
    self->kernel_mode = true;
    self->curve = false;
}

void
gw_server_leave_signals (gw_server_t *self)
{
    self->front_signals = true;
}

void
gw_server_set_kernel_workspace (gw_server_t *self, const char *dir)
{
    gw_set_string (&self->kernel_workspace, dir);
}

const char *
gw_server_kernel_workspace (const gw_server_t *self)
{
    return self->kernel_workspace;
}

bool
gw_server_stopping (const gw_server_t *self)
{
    return self->stopping;
}

void
gw_server_exit (gw_server_t *self, int code)
{
    self->exit_code = code;
    gw_server_stop (self);
}

gw_zygote_t *
gw_server_zygote (const gw_server_t *self)
{
    return self->zygote;
}

gw_pool_t *
gw_server_pool (const gw_server_t *self)
{
    return self->pool;
}

gw_capacity_t *
gw_server_capacity (gw_server_t *self)
{
    return &self->capacity;
}

gw_remover_t *
gw_server_remover (const gw_server_t *self)
{
    return self->remover;
}

gw_slots_t *
gw_server_slots (const gw_server_t *self)
{
    return self->slots;
}

gw_core_t *
gw_server_core (const gw_server_t *self)
{
    return self->core;
}

bool
gw_server_ready (const gw_server_t *self)
{
    return self->ready;
}

const char *
gw_server_startup_error (const gw_server_t *self, const char **layer)
{
    *layer = self->startup_layer;
    return self->startup_error;
}

const char *
gw_server_transport (const gw_server_t *self)
{
    return self->transport;
}

const char *
gw_server_ip (const gw_server_t *self)
{
    return self->ip;
}

bool
gw_server_curve (const gw_server_t *self)
{
    return self->curve;
}

void
gw_server_set_insecure (gw_server_t *self)
{
    self->curve = false;
}

gw_zap_t *
gw_server_zap (const gw_server_t *self)
{
    return self->zap;
}

const char *
gw_server_connection_file (const gw_server_t *self)
{
    return self->connection_file;
}

int
gw_server_control_port (const gw_server_t *self)
{
    return self->control_port;
}

json_t *
gw_server_last_layers (const gw_server_t *self)
{
    return self->last_layers;
}

json_t *
gw_server_connection_info (gw_server_t *self)
{
    return self->connection_info;
}

json_t *
gw_server_layers_taken (const gw_server_t *self)
{
    return self->layers_taken;
}

zsock_t *
gw_server_control (const gw_server_t *self)
{
    return self->control;
}

const wire_key_t *
gw_server_key (const gw_server_t *self)
{
    return self->key;
}

wire_replay_t *
gw_server_replay (const gw_server_t *self)
{
    return self->replay;
}

const char *
gw_server_session (const gw_server_t *self)
{
    return self->session;
}

bool
gw_server_authenticates (const gw_server_t *self)
{
    return self->curve || streq (self->transport, "ipc");
}

void
gw_server_set_layers (gw_server_t *self, json_t *layers, const char *by, pid_t pid, double started)
{
    char taken[40];
    gw_iso_time (gw_clock_wall (), taken);
    json_decref (self->last_layers);
    json_decref (self->layers_taken);
    self->last_layers = json_deep_copy (layers);
    self->layers_taken = json_pack ("{s:s, s:s, s:i}", "taken", taken, "by", by, "pid", (int) pid);
    if (started >= 0)
        json_object_set_new (self->layers_taken, "seconds", json_real (gw_clock_mono () - started));
}

static int
on_stop (zloop_t *loop, int timer_id, void *arg)
{
    return -1;
}

void
gw_server_stop (gw_server_t *self)
{
    if (self->stopping)
        return;
    self->stopping = true;
    gw_timer_start (self->loop, 1, 1, on_stop, self);
}

void
gw_server_set_config_path (gw_server_t *self, const char *path)
{
    gw_set_string (&self->config_path, path);
}

const char *
gw_server_config_path (const gw_server_t *self)
{
    return self->config_path;
}

void
gw_server_set_reload_check (gw_server_t *self, gw_reload_check_fn *fn, void *arg)
{
    self->reload_check = fn;
    self->reload_check_arg = arg;
}

int
gw_server_reload_check (gw_server_t *self, const gw_config_t *fresh, char **errmsg)
{
    return self->reload_check ? self->reload_check (fresh, errmsg, self->reload_check_arg) : 0;
}

void
gw_server_replace_config (gw_server_t *self, gw_config_t **config_p)
{
    gw_config_destroy (&self->config);
    self->config = *config_p;
    *config_p = NULL;
}

bool
gw_drain_active (const gw_server_t *server)
{
    return server->drain_started > 0;
}

double
gw_server_drain_started (const gw_server_t *self)
{
    return self->drain_started;
}

void
gw_server_set_drain_started (gw_server_t *self, double started)
{
    self->drain_started = started;
}
