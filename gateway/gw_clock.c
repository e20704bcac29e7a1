/*  gw_clock.c - the gateway's two clocks.

    Every interval (timeouts, idle culling, pool ages, durations, deadlines)
    is measured on CLOCK_MONOTONIC, which no clock step (NTP, an operator's
    `date -s`, a suspended VM) moves: a step of the wall clock must never
    cull or time out every conversation at once. The wall clock is read only
    for dates that are shown (log lines, "created" in replies).
*/
#include "gw_util.h"

#include <time.h>

static double
clock_read (clockid_t id)
{
    struct timespec ts;
    clock_gettime (id, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

double
gw_clock_mono (void)
{
    return clock_read (CLOCK_MONOTONIC);
}

double
gw_clock_wall (void)
{
    return clock_read (CLOCK_REALTIME);
}

double
gw_clock_wall_of (double mono)
{
    return gw_clock_wall () - (gw_clock_mono () - mono);
}

void
gw_iso_time (double t, char out[40])
{
    time_t secs = (time_t) t;
    struct tm tm;
    gmtime_r (&secs, &tm);
    int usec = (int) ((t - (double) secs) * 1e6);
    if (usec < 0)
        usec = 0;
    if (usec > 999999)
        usec = 999999;
    char base[24];
    strftime (base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf (out, 40, "%s.%06dZ", base, usec);
}
