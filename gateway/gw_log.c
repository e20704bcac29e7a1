/*  gw_log.c - one JSON line per event, on stderr or a file.

    Each line is {"ts": ISO-8601 UTC, "event": name, ...fields}. Lines are
    written with a single write() so that concurrent writers to the same file
    (several daemons, the kernels' own stderr) never interleave inside a line.
    Lines about bad input go through gw_log_limited (rate-limited per
    source). The file is opened O_APPEND and never rotated here: rotation
    is the system's (logrotate copytruncate, or stderr into journald).

    Fields often hold what a kernel or a client chose (a tool name, an id,
    arguments), so every line is bounded here, whatever its call site: a
    string (value or key) at LOG_STRING_MAX bytes, cut between characters
    and marked with its size; an object or array at LOG_MEMBERS_MAX
    members, LOG_DEPTH_MAX levels; all the strings of a line at
    LOG_LINE_BUDGET bytes. A line within them, the common case, is written
    as packed (one walk, no copy).
*/
#include "gw_log.h"
#include "gw_util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static int log_fd = 2;

#define LOG_STRING_MAX 2048
#define LOG_MEMBERS_MAX 64
#define LOG_DEPTH_MAX 8
#define LOG_LINE_BUDGET 16384
/* what a number, true, false or null costs in the line's budget */
#define LOG_SCALAR_COST 24

static void s_summary_due (double now);
static void s_log_raw (const char *event, const char *fmt, ...);

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

/* One write of prefix + the fields' object with its '{' turned into ','. */
static void
s_write_line (const char *prefix, size_t plen, const char *fields, size_t flen)
{
    char *buf = wire_xmalloc (plen + flen + 2);
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


/* Whether v is within the bounds, its strings taken from *budget. */
static bool
s_within (const json_t *v, int depth, size_t *budget)
{
    if (json_is_string (v)) {
        size_t n = json_string_length (v);
        if (n > LOG_STRING_MAX || n > *budget)
            return false;
        *budget -= n;
        return true;
    }
    if (!json_is_object (v) && !json_is_array (v)) {
        if (*budget < LOG_SCALAR_COST)
            return false;
        *budget -= LOG_SCALAR_COST;
        return true;
    }
    size_t size = json_is_object (v) ? json_object_size (v) : json_array_size (v);
    if (depth >= LOG_DEPTH_MAX || size > LOG_MEMBERS_MAX)
        return false;
    if (json_is_array (v)) {
        size_t i;
        const json_t *item;
        json_array_foreach (v, i, item)
            if (!s_within (item, depth + 1, budget))
                return false;
        return true;
    }
    const char *key;
    const json_t *item;
    json_object_foreach ((json_t *) v, key, item) {
        size_t n = strlen (key);
        if (n > LOG_STRING_MAX || n > *budget)
            return false;
        *budget -= n;
        if (!s_within (item, depth + 1, budget))
            return false;
    }
    return true;
}

/* text cut to at most max bytes (between characters), marked with its size. */
static json_t *
s_cut (const char *text, size_t len, size_t max)
{
    if (len <= max)
        return json_stringn (text, len);
    char mark[64];
    int mlen = snprintf (mark, sizeof mark, "...[cut: %zu bytes]", len);
    size_t keep = max > (size_t) mlen ? max - (size_t) mlen : 0;
    keep = (size_t) gw_text_fit (text, (int) keep);
    char *buf = wire_xmalloc (keep + (size_t) mlen + 1);
    memcpy (buf, text, keep);
    memcpy (buf + keep, mark, (size_t) mlen + 1);
    json_t *cut = json_stringn (buf, keep + (size_t) mlen);
    free (buf);
    return cut;
}

/* A copy of v within the bounds (new reference). */
static json_t *
s_bounded (const json_t *v, int depth, size_t *budget)
{
    if (json_is_string (v)) {
        size_t max = *budget < LOG_STRING_MAX ? *budget : LOG_STRING_MAX;
        json_t *cut = s_cut (json_string_value (v), json_string_length (v), max);
        size_t used = json_string_length (cut);
        *budget -= used < *budget ? used : *budget;
        return cut;
    }
    if (!json_is_object (v) && !json_is_array (v)) {
        *budget -= LOG_SCALAR_COST < *budget ? LOG_SCALAR_COST : *budget;
        return json_deep_copy (v);
    }
    size_t size = json_is_object (v) ? json_object_size (v) : json_array_size (v);
    if (depth >= LOG_DEPTH_MAX || *budget < LOG_SCALAR_COST) {
        char mark[64];
        snprintf (mark, sizeof mark, "...[cut: %s of %zu]", json_is_object (v) ? "object" : "array", size);
        return json_string (mark);
    }
    size_t taken = 0;
    json_t *out;
    if (json_is_array (v)) {
        out = json_array ();
        size_t i;
        const json_t *item;
        json_array_foreach (v, i, item) {
            if (taken == LOG_MEMBERS_MAX || *budget < LOG_SCALAR_COST)
                break;
            json_array_append_new (out, s_bounded (item, depth + 1, budget));
            taken++;
        }
    }
    else {
        out = json_object ();
        const char *key;
        const json_t *item;
        json_object_foreach ((json_t *) v, key, item) {
            if (taken == LOG_MEMBERS_MAX || *budget < LOG_SCALAR_COST)
                break;
            json_t *k = s_cut (key, strlen (key), *budget < 128 ? *budget : 128);
            *budget -= json_string_length (k) < *budget ? json_string_length (k) : *budget;
            json_object_set_new (out, json_string_value (k), s_bounded (item, depth + 1, budget));
            json_decref (k);
            taken++;
        }
    }
    if (taken < size) {
        char mark[64];
        snprintf (mark, sizeof mark, "...[cut: %zu more]", size - taken);
        if (json_is_array (out))
            json_array_append_new (out, json_string (mark));
        else
            json_object_set_new (out, "...", json_string (mark));
    }
    return out;
}

static void
s_vlog (const char *event, const char *fmt, va_list ap)
{
    json_t *line = NULL;
    if (fmt) {
        json_error_t error;
        line = json_vpack_ex (&error, 0, fmt, ap);
        if (!line)
            line = json_pack ("{s:s}", "log_error", error.text);
    }
    size_t budget = LOG_LINE_BUDGET;
    if (line && !s_within (line, 0, &budget)) {
        budget = LOG_LINE_BUDGET;
        json_t *bounded = s_bounded (line, 0, &budget);
        json_decref (line);
        line = bounded;
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

void
gw_log (const char *event, const char *fmt, ...)
{
    s_summary_due (gw_clock_mono ());
    va_list ap;
    va_start (ap, fmt);
    s_vlog (event, fmt, ap);
    va_end (ap);
}

/* ---- lines about bad input: rate-limited per source ----------------------

   A peer that sends bad messages must not fill the host's disk (a flood
   wrote 9-14 MB/s of these lines). Each source (a conversation's socket and
   side, a control peer) may write LIMIT_BURST lines at once, then
   LIMIT_RATE a second; all sources together at most LIMIT_TOTAL a second,
   so that opening many connections is no way round it. What is held back is
   counted and reported once a second in one log_dropped line (with the
   next line logged after that second, and at close). The table holds
   LIMIT_SOURCES sources; beyond that, new ones share the source "other". */
#define LIMIT_BURST 10
#define LIMIT_RATE 1.0
#define LIMIT_TOTAL 20.0
#define LIMIT_SOURCES 1024
#define LIMIT_IDLE_S 60.0

typedef struct {
    double tokens;
    double last;
    uint64_t dropped;
} limit_t;

static zhashx_t *s_sources; /* source -> limit_t* */
static limit_t s_total = {LIMIT_TOTAL, 0, 0};
static double s_next_summary;

static void
s_refill (limit_t *l, double now, double rate, double burst)
{
    l->tokens += (now - l->last) * rate;
    if (l->tokens > burst)
        l->tokens = burst;
    l->last = now;
}

static limit_t *
s_source (const char *source, double now)
{
    if (!s_sources) {
        s_sources = zhashx_new ();
        zhashx_set_destructor (s_sources, (zhashx_destructor_fn *) zstr_free);
    }
    limit_t *l = zhashx_lookup (s_sources, source);
    if (l)
        return l;
    if (zhashx_size (s_sources) >= LIMIT_SOURCES && !(l = zhashx_lookup (s_sources, "other")))
        source = "other";
    if (l)
        return l;
    l = wire_xcalloc (1, sizeof *l);
    *l = (limit_t){LIMIT_BURST, now, 0};
    zhashx_insert (s_sources, source, l);
    return l;
}

/* Once a second: one line for what was held back, idle sources forgotten. */
static void
s_summary_due (double now)
{
    if (!s_sources || now < s_next_summary)
        return;
    s_next_summary = now + 1.0;
    uint64_t dropped = 0;
    int sources = 0;
    json_t *top = json_object ();
    zlistx_t *idle = zlistx_new ();
    for (limit_t *l = zhashx_first (s_sources); l; l = zhashx_next (s_sources)) {
        const char *key = zhashx_cursor (s_sources);
        if (l->dropped) {
            dropped += l->dropped;
            sources++;
            if (json_object_size (top) < 5)
                json_object_set_new (top, key, json_integer ((json_int_t) l->dropped));
            l->dropped = 0;
        }
        else if (now - l->last > LIMIT_IDLE_S)
            zlistx_add_end (idle, (void *) key);
    }
    for (const char *key = zlistx_first (idle); key; key = zlistx_next (idle))
        zhashx_delete (s_sources, key);
    zlistx_destroy (&idle);
    if (dropped)
        s_log_raw ("log_dropped", "{s:I, s:i, s:o}", "dropped", (json_int_t) dropped, "sources", sources, "top", top);
    else
        json_decref (top);
}

void
gw_log_limited (const char *source, const char *event, const char *fmt, ...)
{
    double now = gw_clock_mono ();
    s_summary_due (now);
    limit_t *l = s_source (source, now);
    if (!l)
        return;
    s_refill (l, now, LIMIT_RATE, LIMIT_BURST);
    s_refill (&s_total, now, LIMIT_TOTAL, LIMIT_TOTAL);
    if (l->tokens < 1 || s_total.tokens < 1) {
        l->dropped++;
        return;
    }
    l->tokens--;
    s_total.tokens--;
    va_list ap;
    va_start (ap, fmt);
    s_vlog (event, fmt, ap);
    va_end (ap);
}

static void
s_log_raw (const char *event, const char *fmt, ...)
{
    va_list ap;
    va_start (ap, fmt);
    s_vlog (event, fmt, ap);
    va_end (ap);
}

void
gw_log_close (void)
{
    s_next_summary = 0;
    s_summary_due (gw_clock_mono ());
    zhashx_destroy (&s_sources);
    if (log_fd > 2)
        close (log_fd);
    log_fd = 2;
}

void
gw_log_bad_message (const char *conversation, const char *channel, wire_error_t err, const char *from)
{
    char source[200];
    snprintf (source, sizeof source, "conversation/%s/%s/%s", conversation, channel, from);
    gw_log_limited (source, "bad_message", "{s:s, s:s, s:s, s:s, s:s}", "conversation", conversation, "channel",
                    channel, "from", from, "reason", wire_error_name (err), "detail", wire_strerror (err));
}

void
gw_log_dropped (const char *conversation, const char *channel)
{
    char source[200];
    snprintf (source, sizeof source, "conversation/%s/%s/dropped", conversation, channel);
    gw_log_limited (source, "dropped", "{s:s, s:s, s:s}", "conversation", conversation, "channel", channel, "reason",
                    "the receiver's queue is full");
}
