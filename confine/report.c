/*  report.c - the layer report and the error of a refused confinement. */
#include "private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *state_names[] = { "active", "degraded", "unsupported" };

const char *
confine_state_name (confine_state_t state)
{
    return (unsigned) state <= CONFINE_UNSUPPORTED ? state_names[state] : "unknown";
}

confine_report_t *
confine_report_new (void)
{
    confine_report_t *self = confine_xcalloc (1, sizeof *self);
    return self;
}

void
confine_report_set (confine_report_t *self, confine_layer_t layer, confine_state_t state, const char *fmt, ...)
{
    if ((unsigned) layer >= CONFINE_LAYER_COUNT_)
        return;
    confine_layer_report_t *entry = &self->layers[layer];
    entry->set = true;
    entry->state = state;
    va_list args;
    va_start (args, fmt);
    vsnprintf (entry->reason, sizeof entry->reason, fmt, args);
    va_end (args);
}

json_t *
confine_report_json (const confine_report_t *self)
{
    json_t *layers = json_object ();
    for (int i = 0; i < CONFINE_LAYER_COUNT_; i++) {
        const confine_layer_report_t *entry = &self->layers[i];
        /* A layer never reached (setup stopped before it) is not claimed. */
        if (!entry->set)
            continue;
        json_object_set_new (layers, confine_layer_name ((confine_layer_t) i),
                             json_pack ("{s:s, s:s}", "state", confine_state_name (entry->state),
                                        "reason", entry->reason));
    }
    return layers;
}

void
confine_report_destroy (confine_report_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free (*self_p);
    *self_p = NULL;
}

void
confine_error_set (confine_error_t *self, const char *stage, int err, const char *fmt, ...)
{
    snprintf (self->stage, sizeof self->stage, "%s", stage);
    self->err = err;
    va_list args;
    va_start (args, fmt);
    vsnprintf (self->message, sizeof self->message, fmt, args);
    va_end (args);
}

json_t *
confine_error_json (const confine_error_t *self)
{
    return json_pack ("{s:s, s:i, s:s}", "stage", self->stage, "errno", self->err, "message", self->message);
}

int
confine_layer_fail (confine_ctx_t *ctx, confine_layer_t layer, confine_state_t state, int err, const char *fmt, ...)
{
    char reason[sizeof ctx->error->message];
    va_list args;
    va_start (args, fmt);
    vsnprintf (reason, sizeof reason, fmt, args);
    va_end (args);
    if (confine_layer_degradable (layer) && (ctx->policy->allow_degraded & (1u << layer))) {
        confine_report_set (ctx->report, layer, state, "%s", reason);
        return 0;
    }
    confine_error_set (ctx->error, confine_layer_name (layer), err, "%s", reason);
    return -1;
}

int
confine_write_file (const char *path, const char *text)
{
    int fd = open (path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen (text);
    ssize_t n = write (fd, text, len);
    int saved = errno;
    close (fd);
    if (n != (ssize_t) len) {
        errno = n < 0 ? saved : EIO;
        return -1;
    }
    return 0;
}
