/*  pykernel_output.c - fd 1 and fd 2 captured and published as streams.

    C extensions, os.write(1, ...) and child processes write to the file
    descriptors. Both are replaced by pipes; a thread publishes what arrives,
    and pykernel_output_flush() drains them synchronously so that fd output
    written before any other message is published before it.

    Python-level text can join the same ordered queue through
    pykernel_output_write(): the pipes are drained into the queue first, so
    `print("a"); os.system("echo b")` and `os.write(1, b"a"); print("b")`
    both arrive as written, and stdout/stderr runs keep their interleaving.
    One mutex covers the queue and the draining. */
#include "pykernel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A stream message carries at most this much text; more becomes several,
   and a queue this large is published at once. */
#define OUTPUT_CHUNK (1024 * 1024)
/* The thread waits this long after the first byte so that many small writes
   become one message instead of one each. */
#define OUTPUT_BATCH_MS 5

static const char *s_names[2] = { "stdout", "stderr" };

/* consecutive text of one stream, valid UTF-8 */
typedef struct {
    int which;
    char *data;
    size_t len, cap;
} run_t;

struct pykernel_output {
    pykernel_iopub_t *iopub;
    pthread_mutex_t lock;
    int saved_fd[2]; /* the original fd 1 and 2 */
    int read_fd[2];  /* read ends of the capture pipes, non-blocking */
    char held[2][4]; /* an incomplete UTF-8 character waiting for its tail */
    size_t held_len[2];
    char *buffer;    /* OUTPUT_CHUNK + 4 bytes */
    run_t *runs;     /* the queue, oldest first */
    size_t run_count, run_cap, queued;
    int kick_pipe[2]; /* Python text queued: the thread publishes it soon */
    pykernel_thread_t worker;
};

/* Appends valid UTF-8 text to the queue. Lock held. */
static void
s_queue (pykernel_output_t *self, int which, const char *text, size_t len)
{
    if (len == 0)
        return;
    run_t *run = self->run_count ? &self->runs[self->run_count - 1] : NULL;
    if (!run || run->which != which) {
        if (self->run_count == self->run_cap) {
            size_t cap = self->run_cap ? self->run_cap * 2 : 8;
            run_t *runs = realloc (self->runs, cap * sizeof *runs);
            if (!runs)
                return;
            self->runs = runs;
            self->run_cap = cap;
        }
        run = &self->runs[self->run_count++];
        *run = (run_t) { .which = which };
    }
    if (run->len + len > run->cap) {
        size_t cap = run->cap ? run->cap : 256;
        while (cap < run->len + len)
            cap *= 2;
        char *data = realloc (run->data, cap);
        if (!data)
            return;
        run->data = data;
        run->cap = cap;
    }
    memcpy (run->data + run->len, text, len);
    run->len += len;
    self->queued += len;
}

/* Publishes the queue, one stream message per run (cut at OUTPUT_CHUNK, on
   a character boundary). Lock held. */
static void
s_publish_queue (pykernel_output_t *self)
{
    for (size_t i = 0; i < self->run_count; i++) {
        run_t *run = &self->runs[i];
        for (size_t start = 0; start < run->len;) {
            size_t piece = run->len - start;
            if (piece > OUTPUT_CHUNK) {
                piece = pykernel_utf8_complete_prefix (run->data + start, OUTPUT_CHUNK);
                if (piece == 0)
                    piece = OUTPUT_CHUNK;
            }
            json_t *content = json_pack ("{ss s:s%}", "name", s_names[run->which], "text",
                                         run->data + start, piece);
            if (content)
                pykernel_iopub_send (self->iopub, "stream", content, NULL, NULL);
            start += piece;
        }
        free (run->data);
    }
    self->run_count = 0;
    self->queued = 0;
}

/* Reads everything available on pipe `which` into the queue. Lock held. */
static void
s_read_pipe (pykernel_output_t *self, int which, bool final)
{
    for (;;) {
        size_t len = self->held_len[which];
        memcpy (self->buffer, self->held[which], len);
        self->held_len[which] = 0;
        bool more = true;
        while (len < OUTPUT_CHUNK) {
            ssize_t n = read (self->read_fd[which], self->buffer + len, OUTPUT_CHUNK - len);
            if (n > 0)
                len += n;
            else if (n < 0 && errno == EINTR)
                continue;
            else {
                more = false; /* EAGAIN: empty for now; 0: no writer left */
                break;
            }
        }
        size_t complete = final ? len : pykernel_utf8_complete_prefix (self->buffer, len);
        memcpy (self->held[which], self->buffer + complete, len - complete);
        self->held_len[which] = len - complete;
        if (complete > 0) {
            size_t text_len;
            char *text = pykernel_utf8_sanitize (self->buffer, complete, &text_len);
            if (text)
                s_queue (self, which, text, text_len);
            free (text);
            if (self->queued >= OUTPUT_CHUNK)
                s_publish_queue (self);
        }
        if (!more)
            return;
    }
}

static void
s_drain_all (pykernel_output_t *self, bool final)
{
    pthread_mutex_lock (&self->lock);
    s_read_pipe (self, 0, final);
    s_read_pipe (self, 1, final);
    s_publish_queue (self);
    pthread_mutex_unlock (&self->lock);
}

static void
s_empty_pipe (int fd)
{
    char sink[64];
    while (read (fd, sink, sizeof sink) > 0)
        ;
}

static void *
s_thread (void *arg)
{
    pykernel_output_t *self = arg;
    /* a pipe whose writers are all gone (user code closed fd 1) polls as
       hung up forever: leave it out instead of spinning */
    bool hung_up[2] = { false, false };
    for (;;) {
        struct pollfd fds[4] = {
            { .fd = hung_up[0] ? -1 : self->read_fd[0], .events = POLLIN },
            { .fd = hung_up[1] ? -1 : self->read_fd[1], .events = POLLIN },
            { .fd = self->worker.stop_pipe[0], .events = POLLIN },
            { .fd = self->kick_pipe[0], .events = POLLIN },
        };
        int rc = poll (fds, 4, -1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0 || fds[2].revents)
            break;
        poll (NULL, 0, OUTPUT_BATCH_MS);
        if (fds[3].revents)
            s_empty_pipe (self->kick_pipe[0]);
        s_drain_all (self, false);
        for (int i = 0; i < 2; i++)
            if (fds[i].revents & (POLLHUP | POLLERR) && !(fds[i].revents & POLLIN))
                hung_up[i] = true;
    }
    return NULL;
}

void
pykernel_output_write (pykernel_output_t *self, int which, const char *text, size_t len)
{
    if (!self || (which != 0 && which != 1))
        return;
    pthread_mutex_lock (&self->lock);
    /* what C code already wrote to the fds comes first */
    s_read_pipe (self, 0, false);
    s_read_pipe (self, 1, false);
    bool was_empty = self->queued == 0;
    size_t text_len;
    char *valid = pykernel_utf8_sanitize (text, len, &text_len);
    if (valid)
        s_queue (self, which, valid, text_len);
    free (valid);
    if (self->queued >= OUTPUT_CHUNK)
        s_publish_queue (self);
    else if (was_empty && self->queued) {
        ssize_t rc = write (self->kick_pipe[1], "k", 1);
        (void) rc; /* a full kick pipe already wakes the thread */
    }
    pthread_mutex_unlock (&self->lock);
}

/* Makes a pipe and puts its write end on fd `target`. */
static int
s_capture (pykernel_output_t *self, int which)
{
    int target = which + 1;
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC) != 0)
        return -1;
    /* a large pipe: a burst of output does not block the writer at once */
    fcntl (fds[0], F_SETPIPE_SZ, 1024 * 1024);
    fcntl (fds[0], F_SETFL, O_NONBLOCK);
    self->saved_fd[which] = fcntl (target, F_DUPFD_CLOEXEC, 3);
    if (self->saved_fd[which] < 0 || dup2 (fds[1], target) < 0) {
        close (fds[0]);
        close (fds[1]);
        return -1;
    }
    close (fds[1]);
    self->read_fd[which] = fds[0];
    return 0;
}

pykernel_output_t *
pykernel_output_new (pykernel_iopub_t *iopub)
{
    pykernel_output_t *self = wire_xcalloc (1, sizeof *self);
    self->iopub = iopub;
    pthread_mutex_init (&self->lock, NULL);
    self->saved_fd[0] = self->saved_fd[1] = -1;
    self->read_fd[0] = self->read_fd[1] = -1;
    self->kick_pipe[0] = self->kick_pipe[1] = -1;
    self->buffer = wire_xmalloc (OUTPUT_CHUNK + 4);
    fflush (stdout);
    fflush (stderr);
    if (pipe2 (self->kick_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || s_capture (self, 0) != 0
        || s_capture (self, 1) != 0) {
        pykernel_log ("capturing fd 1 and 2: %s", strerror (errno));
        pykernel_output_destroy (&self);
        return NULL;
    }
    if (pykernel_thread_start (&self->worker, s_thread, self) != 0) {
        pykernel_log ("starting the output thread failed");
        pykernel_output_destroy (&self);
        return NULL;
    }
    return self;
}

void
pykernel_output_flush (pykernel_output_t *self)
{
    if (!self)
        return;
    fflush (stdout);
    fflush (stderr);
    s_drain_all (self, false);
}

void
pykernel_output_destroy (pykernel_output_t **self_p)
{
    pykernel_output_t *self = *self_p;
    if (!self)
        return;
    fflush (stdout);
    fflush (stderr);
    /* putting the original fds back closes the pipes' last write ends */
    for (int i = 0; i < 2; i++)
        if (self->saved_fd[i] >= 0) {
            dup2 (self->saved_fd[i], i + 1);
            close (self->saved_fd[i]);
        }
    pykernel_thread_stop (&self->worker);
    if (self->read_fd[0] >= 0 && self->read_fd[1] >= 0)
        s_drain_all (self, true);
    for (int i = 0; i < 2; i++) {
        if (self->read_fd[i] >= 0)
            close (self->read_fd[i]);
        if (self->kick_pipe[i] >= 0)
            close (self->kick_pipe[i]);
    }
    for (size_t i = 0; i < self->run_count; i++)
        free (self->runs[i].data);
    free (self->runs);
    pthread_mutex_destroy (&self->lock);
    free (self->buffer);
    free (self);
    *self_p = NULL;
}

int
pykernel_output_test (bool verbose)
{
    int failures = 0;
#define CHECK(cond) PYKERNEL_CHECK ("output", cond)
    pykernel_log_init ();
    wire_error_t err;
    wire_key_t *key = wire_key_new (NULL, "k", 1, &err);
    zsock_t *pub = zsock_new_pub ("inproc://pykernel-output-test");
    zsock_t *sub = zsock_new_sub ("inproc://pykernel-output-test", "");
    zsock_set_rcvtimeo (sub, 2000);
    pykernel_iopub_t *iopub = pykernel_iopub_new (pub, key, "s");
    zclock_sleep (50);
    pykernel_output_t *output = pykernel_output_new (iopub);
    CHECK (output);
    /* a character cut between two writes arrives whole */
    ssize_t rc = write (1, "caf\xC3", 4);
    rc = write (2, "err", 3);
    rc = write (1, "\xA9!", 2);
    (void) rc;
    pykernel_output_flush (output);
    /* Python-level text keeps its place among fd writes and between streams */
    rc = write (1, "A", 1);
    pykernel_output_write (output, 0, "B", 1);
    rc = write (1, "C", 1);
    pykernel_output_write (output, 1, "E", 1);
    pykernel_output_write (output, 0, "D\xFF", 2);
    pykernel_output_flush (output);
    pykernel_output_destroy (&output);
    /* collect: stdout text joined, stderr text joined, and the sequence of
       runs (consecutive messages of one stream merged) */
    char out[64] = "", errtext[64] = "", runs[128] = "";
    const char *last = NULL;
    zmsg_t *frames;
    wire_replay_t *replay = wire_replay_new (16);
    while ((frames = zmsg_recv (sub))) {
        wire_msg_t *msg = wire_msg_decode (&frames, key, replay, &wire_limits_default, &err);
        CHECK (msg);
        if (!msg)
            break;
        const char *name = json_string_value (json_object_get (msg->content, "name"));
        const char *text = json_string_value (json_object_get (msg->content, "text"));
        CHECK (name && text);
        if (name && text) {
            strncat (strcmp (name, "stdout") == 0 ? out : errtext, text, 20);
            if (!last || strcmp (last, name) != 0)
                strncat (runs, strcmp (name, "stdout") == 0 ? "|o:" : "|e:", 4);
            strncat (runs, text, 20);
            last = strcmp (name, "stdout") == 0 ? "stdout" : "stderr";
        }
        wire_msg_destroy (&msg);
        zsock_set_rcvtimeo (sub, 200);
    }
    CHECK (strcmp (out, "caf\xC3\xA9!ABCD\xEF\xBF\xBD") == 0);
    CHECK (strcmp (errtext, "errE") == 0);
    CHECK (strstr (runs, "ABC|e:E|o:D\xEF\xBF\xBD") != NULL);
    wire_replay_destroy (&replay);
    pykernel_iopub_destroy (&iopub);
    zsock_destroy (&sub);
    wire_key_destroy (&key);
#undef CHECK
    if (verbose)
        pykernel_log ("output self-test: %s", failures ? "FAILED" : "ok");
    return failures;
}
