/*  wire_header.c - header fields: message ids and dates. */
#include "wire_private.h"
#include <sodium.h>
#include <string.h>

void
wire_id_new (char out[WIRE_ID_SIZE])
{
    unsigned char raw[16];
    if (sodium_init () < 0)
        abort (); /* no random source: ids would collide; nothing sane to do */
    randombytes_buf (raw, sizeof raw);
    sodium_bin2hex (out, 33, raw, sizeof raw);
}

void
wire_date_now (char out[32])
{
    struct timespec now;
    struct tm tm;
    clock_gettime (CLOCK_REALTIME, &now);
    gmtime_r (&now.tv_sec, &tm);
    char base[24];
    strftime (base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    /* Always six digits: xeus prints 42 us as ".42" (= 420 ms). */
    unsigned usec = (unsigned) (now.tv_nsec / 1000) % 1000000u;
    snprintf (out, 32, "%.19s.%06uZ", base, usec);
}

/* Reads exactly n ASCII digits at *p into *value and advances *p. */
static bool
s_digits (const char **p, int n, int *value)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *value = v;
    return true;
}

static bool
s_is_leap (int year)
{
    return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

static int
s_days_in_month (int year, int month)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && s_is_leap (year) ? 29 : days[month - 1];
}

/* Reads "+HH:MM", "+HHMM" or "Z" into an offset east of UTC in seconds. */
static bool
s_zone (const char **p, long *offset)
{
    if (**p == 'Z') {
        (*p)++;
        *offset = 0;
        return true;
    }
    int sign = **p == '+' ? 1 : **p == '-' ? -1 : 0;
    int hh, mm;
    if (!sign)
        return false;
    (*p)++;
    if (!s_digits (p, 2, &hh))
        return false;
    if (**p == ':')
        (*p)++;
    if (!s_digits (p, 2, &mm))
        return false;
    /* No range check: dateutil takes any digits (+0060 is one hour, +99:99
       a datetime Python cannot even convert), so jupyter_client does too. */
    *offset = sign * (hh * 3600L + mm * 60L);
    return true;
}

bool
wire_date_parse (const char *text, struct timespec *out)
{
    /* The shape of jsonutil.ISO8601_PAT, then the range checks that its
       dateutil parse applies (a real calendar date and time of day). */
    const char *p = text;
    int year, month, day, hour, minute, second;
    if (!text || !s_digits (&p, 4, &year) || *p++ != '-' || !s_digits (&p, 2, &month) || *p++ != '-'
        || !s_digits (&p, 2, &day) || *p++ != 'T' || !s_digits (&p, 2, &hour) || *p++ != ':'
        || !s_digits (&p, 2, &minute) || *p++ != ':' || !s_digits (&p, 2, &second))
        return false;
    long nsec = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        long scale = 100000000;
        for (; n < 6 && *p >= '0' && *p <= '9'; n++, p++, scale /= 10)
            nsec += (*p - '0') * scale;
        if (n == 0)
            return false;
    }
    long offset = 0;
    bool local = true;
    if (*p && *p != '\n') {
        if (!s_zone (&p, &offset))
            return false;
        local = false;
    }
    /* Python's "$" also matches just before a final newline. */
    if (*p == '\n')
        p++;
    if (*p)
        return false;
    if (year < 1 || month < 1 || month > 12 || day < 1 || day > s_days_in_month (year, month) || hour > 23
        || minute > 59 || second > 59)
        return false;
    struct tm tm = {.tm_year = year - 1900, .tm_mon = month - 1, .tm_mday = day,
                    .tm_hour = hour, .tm_min = minute, .tm_sec = second, .tm_isdst = -1};
    /* No zone means local time, as jupyter_client assumes (with a warning). */
    time_t secs = local ? mktime (&tm) : timegm (&tm);
    if (out) {
        out->tv_sec = secs - offset;
        out->tv_nsec = nsec;
    }
    return true;
}

/* Parses text and compares with an expected UTC time. */
static bool
s_date_is (const char *text, time_t sec, long nsec)
{
    struct timespec ts;
    return wire_date_parse (text, &ts) && ts.tv_sec == sec && ts.tv_nsec == nsec;
}

int
wire_header_test (bool verbose)
{
    int failures = 0;
    if (verbose)
        printf (" * wire_header: ");
    char id1[WIRE_ID_SIZE], id2[WIRE_ID_SIZE];
    wire_id_new (id1);
    wire_id_new (id2);
    WIRE_CHECK (strlen (id1) == 32 && strspn (id1, "0123456789abcdef") == 32);
    WIRE_CHECK (!streq (id1, id2));

    char date[32];
    wire_date_now (date);
    WIRE_CHECK (strlen (date) == 27 && date[19] == '.' && date[26] == 'Z');
    WIRE_CHECK (strspn (date + 20, "0123456789") == 6);
    struct timespec ts;
    WIRE_CHECK (wire_date_parse (date, &ts));
    WIRE_CHECK (labs ((long) (ts.tv_sec - time (NULL))) <= 2);

    /* 2026-01-01T12:00:00Z is 1767268800. */
    const time_t t = 1767268800;
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00.000042Z", t, 42000));
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00Z", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00.5Z", t, 500000000));
    /* xeus writes 42 us unpadded as ".42": it means 420 ms, as in Python. */
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00.42Z", t, 420000000));
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00.123456Z", t, 123456000));
    WIRE_CHECK (s_date_is ("2026-01-01T13:30:00+01:30", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-01T13:30:00+0130", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-01T10:00:00-0200", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-01T13:00:00+0060", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-02T12:00:00+24:00", t, 0));
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00.1+00:00", t, 100000000));
    WIRE_CHECK (s_date_is ("2026-01-01T12:00:00Z\n", t, 0));
    WIRE_CHECK (wire_date_parse ("2024-02-29T23:59:59", NULL)); /* local time */
    WIRE_CHECK (wire_date_parse ("2026-01-01T12:00:00.000001", &ts) && ts.tv_nsec == 1000);

    const char *bad[] = {
        "", "2026", "2026-01-01", "2026-01-01 12:00:00Z", "2026-01-01T12:00Z",
        "2026-01-01T12:00:00.Z", "2026-01-01T12:00:00.1234567Z", "2026-01-01T12:00:00z",
        "2026-01-01T12:00:00+1", "2026-01-01T12:00:00+01:0", "2026-01-01T12:00:00+01:000",
        "2026-01-01T12:00:00ZZ", "2026-01-01T12:00:00Z\n\n", "2026-13-01T12:00:00Z",
        "2026-00-01T12:00:00Z", "2026-02-29T12:00:00Z", "2026-04-31T12:00:00Z",
        "2026-01-01T24:00:00Z", "2026-01-01T12:60:00Z", "2026-01-01T12:00:60Z",
        "0000-01-01T00:00:00Z", "+2026-01-01T12:00:00Z",
        "2026-1-01T12:00:00Z", "2026-01-01T12:00:00 Z", "2026-01-01T12:00:00.12a",
        " 2026-01-01T12:00:00Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (wire_date_parse (bad[i], &ts)) {
            fprintf (stderr, "accepted bad date '%s'\n", bad[i]);
            failures++;
        }
    }
    WIRE_CHECK (!wire_date_parse (NULL, &ts));
    if (verbose)
        printf ("%s\n", failures ? "FAILED" : "OK");
    return failures;
}
