/*  gw_log.c - one JSON line per event, on stderr or a file.

    Each line is {"ts": ISO-8601 UTC, "event": name, ...fields}. Lines are
    written with a single write() so that concurrent writers to the same file
    (several daemons, the kernels' own stderr) never interleave inside a line.
*/
#include "gw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static int log_fd = 2;

int
gw_log_open (const char *path)
{
    if (!path)
        return 0;
    int fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    log_fd = fd;
    return 0;
}

void
gw_log_close (void)
{
    if (log_fd > 2)
        close (log_fd);
    log_fd = 2;
}

void
gw_log (const char *event, const char *fmt, ...)
{
    json_t *line = NULL;
    if (fmt) {
        va_list ap;
        va_start (ap, fmt);
        json_error_t error;
        line = json_vpack_ex (&error, 0, fmt, ap);
        va_end (ap);
        if (!line)
            line = json_pack ("{s:s}", "log_error", error.text);
    }
    char ts[40];
    gw_iso_time (gw_now (), ts);
    json_t *out = json_pack ("{s:s, s:s}", "ts", ts, "event", event);
    if (line)
        json_object_update (out, line);
    json_decref (line);
    char *text = json_dumps (out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref (out);
    if (!text)
        return;
    size_t len = strlen (text);
    char *buf = malloc (len + 2);
    if (buf) {
        memcpy (buf, text, len);
        buf[len] = '\n';
        ssize_t rc = write (log_fd, buf, len + 1);
        (void) rc; /* nothing sensible to do when the log itself fails */
        free (buf);
    }
    free (text);
}
