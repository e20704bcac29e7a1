/*  status.c - the JSON status line the launcher writes before the
    kernel runs: {"status": "confined", "pid", "layers"} or
    {"status": "error", "stage", "errno", "message"}; and, from a launch
    spec, the waiter's {"status": "ended", ...} once the sandbox ended. */
#include "launch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Closes fd after the line, unless it is stdin/stdout/stderr (which the
   command still needs: --report-fd 1 prints the line before its output). */
static void
done (int fd)
{
    if (fd > 2)
        close (fd);
}

void
launch_write_all (int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write (fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        data += n;
        len -= (size_t) n;
    }
}

static void
write_line (int fd, json_t *json)
{
    char *text = json_dumps (json, JSON_COMPACT);
    json_decref (json);
    if (!text) {
        done (fd);
        return;
    }
    size_t len = strlen (text);
    text[len] = '\n';   /* json_dumps's NUL becomes the newline */
    launch_write_all (fd, text, len + 1);
    free (text);
    done (fd);
}

json_t *
launch_status_confined_json (const confine_report_t *report)
{
    return json_pack ("{s:s, s:i, s:o}", LAUNCH_STATUS, LAUNCH_STATUS_CONFINED, LAUNCH_STATUS_PID, (int) report->pid,
                      LAUNCH_STATUS_LAYERS,
                      confine_report_json (report));
}

void
launch_status_write (int fd, json_t *line)
{
    if (fd < 0 || !line) {
        json_decref (line);
        return;
    }
    write_line (fd, line);
}

void
launch_status_confined (int fd, const confine_report_t *report)
{
    if (fd < 0)
        return;
    write_line (fd, launch_status_confined_json (report));
}

void
launch_status_error (int fd, const char *stage, int err, const char *message)
{
    if (fd < 0)
        return;
    write_line (fd, json_pack ("{s:s, s:s, s:i, s:s}", LAUNCH_STATUS, LAUNCH_STATUS_ERROR, LAUNCH_STATUS_STAGE, stage,
                               LAUNCH_STATUS_ERRNO, err, LAUNCH_STATUS_MESSAGE, message));
}

void
launch_status_ended (int fd, int wait_status, long oom_kills, unsigned long long memory_bytes)
{
    if (fd < 0)
        return;
    write_line (fd, json_pack ("{s:s, s:i, s:I, s:I}", LAUNCH_STATUS, LAUNCH_STATUS_ENDED, LAUNCH_STATUS_WAIT_STATUS,
                               wait_status, LAUNCH_STATUS_OOM_KILLS, (json_int_t) oom_kills,
                               LAUNCH_STATUS_MEMORY_BYTES, (json_int_t) memory_bytes));
}
