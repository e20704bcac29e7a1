/*  gw_server_access.c - what the rest of the gateway reads of the server
    (its fields are private: gw_server_private.h), and gateway_info's
    content, which is made of them. Apart from gw_server.c so that a test
    can link it with a server built by hand (tests/fuzz/gw_control_fuzz.c).
*/
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_core.h"
#include "gw_ops.h"
#include "gw_pool.h"
#include "gw_server.h"
#include "gw_server_private.h"
#include "gw_util.h"
#include "gw_zygote.h"
#include "wire.h"
#include "config.h"

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

zhashx_t *
gw_server_table (const gw_server_t *self)
{
    return self->conversations;
}

zhashx_t *
gw_server_kernel_table (const gw_server_t *self)
{
    return self->kernel_ids;
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
gw_server_info (gw_server_t *self)
{
    json_t *kernels = json_pack ("[s]", "python");
    const char *name;
    json_t *k;
    json_object_foreach (self->config->kernels, name, k)
        json_array_append_new (kernels, json_string (name));
    /* answered only once the start-up probe has ended: a report, or the
       probe's failure, is always there */
    json_t *layers = self->last_layers ? json_deep_copy (self->last_layers) : json_object ();
    json_t *pool = self->pool ? gw_pool_info (self->pool)
                              : json_pack ("{s:i, s:i, s:i, s:i}", "size", 0, "ready", 0, "starting", 0, "claimed", 0);
    json_t *content = json_pack (
        "{s:s, s:s, s:s, s:s, s:o, s:b, s:o, s:O?, s:o, s:i, s:s, s:b, s:o, s:o, s:o}", "status", "ok", "implementation",
        "kennel", "version", PACKAGE_VERSION, "protocol_version", WIRE_PROTOCOL_VERSION, "kernels", kernels, "ready",
        self->startup_error == NULL, "confinement", layers, "confinement_taken", self->layers_taken, "limits",
        gw_config_limits_json (self->config), "conversations", gw_core_count (self), "transport", self->transport,
        "curve", self->curve, "warm_pool", pool, "capacity", gw_capacity_json (&self->capacity), "fork_server",
        gw_zygote_info (self->zygote, self->config));
    json_object_set_new (content, "draining", json_boolean (self->drain_started > 0));
    if (self->startup_error)
        json_object_set_new (content, "startup_error",
                             json_pack ("{s:s, s:s}", "layer", self->startup_layer, "reason", self->startup_error));
    return content;
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
