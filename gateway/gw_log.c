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

/* One write of prefix + the fields' object with its '{' turned into ','. */
static void
s_write_line (const char *prefix, size_t plen, const char *fields, size_t flen)
{
    char *buf = malloc (plen + flen + 2);
    if (!buf)
        return;
    memcpy (buf, prefix, plen);
    size_t n = plen;
    if (flen > 2) {
        buf[n++] = ',';
        memcpy (buf + n, fields + 1, flen - 1);
        n += flen - 1;
    }
    else
        buf[n++] = '}';
    buf[n++] = '\n';
    ssize_t rc = write (log_fd, buf, n);
    (void) rc; /* nothing sensible to do when the log itself fails */
    free (buf);
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
    /* {"ts":...,"event":...} then the fields, written straight into one
       buffer (a line per execution is on the relay's hot path: no second
       object, no copy); event names are plain identifiers */
    char ts[40], buf[4096];
    gw_iso_time (gw_clock_wall (), ts);
    int plen = snprintf (buf, sizeof buf, "{\"ts\":\"%s\",\"event\":\"%s\"", ts, event);
    if (plen < 0 || (size_t) plen >= sizeof buf - 2) {
        json_decref (line);
        return;
    }
    size_t room = sizeof buf - (size_t) plen - 2;
    size_t flen = line ? json_dumpb (line, buf + plen, room, JSON_COMPACT | JSON_PRESERVE_ORDER) : 0;
    if (flen <= room) {
        size_t n = (size_t) plen;
        if (flen > 2)
            buf[n] = ','; /* the fields' own '{' */
        n += flen > 2 ? flen : 0;
        if (flen <= 2)
            buf[n++] = '}';
        buf[n++] = '\n';
        ssize_t rc = write (log_fd, buf, n);
        (void) rc; /* nothing sensible to do when the log itself fails */
    }
    else {
        char *fields = json_dumps (line, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (fields)
            s_write_line (buf, (size_t) plen, fields, strlen (fields));
        free (fields);
    }
    json_decref (line);
}
