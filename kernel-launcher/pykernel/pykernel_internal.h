/*  pykernel_internal.h - the classes behind pykernel_run(), private to
    libpykernel. One class per file:

    pykernel_log      a log line on the kernel's own stderr (never the client's)
    pykernel_utf8     cuts captured bytes into valid UTF-8 text
    pykernel_iopub    the iopub PUB socket shared by threads behind a mutex
    pykernel_output   fd 1 and 2 captured through pipes, published as streams
    pykernel_thread   a worker thread stopped through a pipe (beat, control, output)
    pykernel_beat     the heartbeat thread
    pykernel_control  the control thread (interrupt, shutdown, kernel_info)
    pykernel_python   embedded CPython, the _kennel module, the kernel/ package
    pykernel_shell    the shell loop on the main thread
    pykernel          pykernel_run(): sets everything up and tears it down
*/
#ifndef PYKERNEL_INTERNAL_H_INCLUDED
#define PYKERNEL_INTERNAL_H_INCLUDED

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "wire.h"
#include "pykernel.h"

/* ---- log ---------------------------------------------------------------- */

/* Keeps a private copy of the current fd 2 for log lines, before fd 2 is
   replaced by the capture pipe. Idempotent. */
void pykernel_log_init (void);
/* Closes the private copy. */
void pykernel_log_close (void);
/* One line "kennel-pykernel: ..." on the original stderr. */
void pykernel_log (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
/* The fd the log writes to (the original fd 2). */
int pykernel_log_fd (void);

/* For the self-tests: when cond is false, logs "PART self-test failed:
   COND (line N)" and counts it in the caller's int failures. */
#define PYKERNEL_CHECK(part, cond)                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            pykernel_log ("%s self-test failed: %s (line %d)", part, #cond, __LINE__);             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- utf8 --------------------------------------------------------------- */

/* Length of the longest prefix of data[0..len) that does not end inside an
   incomplete (but so far valid) UTF-8 sequence. Bytes after it should wait
   for more input. */
size_t pykernel_utf8_complete_prefix (const char *data, size_t len);
/* A new NUL-terminated copy of data[0..len) where every invalid byte became
   U+FFFD, so that the text is valid UTF-8 for JSON. Caller frees. */
char *pykernel_utf8_sanitize (const char *data, size_t len, size_t *out_len);
int pykernel_utf8_test (bool verbose);

/* ---- iopub -------------------------------------------------------------- */

/* Binary buffers one published message may carry: a quarter of the frames
   the gateway's ZMTP guard lets through a message (GW_ZMTP_FRAMES_MAX,
   4,096), over which it would kill the kernel; ipywidgets sends one per
   binary trait. */
#define PYKERNEL_BUFFERS_MAX 1000

typedef struct pykernel_iopub pykernel_iopub_t;

/* Takes ownership of the bound PUB socket. The key and session are copied. */
pykernel_iopub_t *pykernel_iopub_new (zsock_t *sock, const wire_key_t *key, const char *session);
void pykernel_iopub_destroy (pykernel_iopub_t **self_p);
/* The request that output without an explicit parent belongs to (a copy of
   its header is kept; NULL clears). */
void pykernel_iopub_set_parent (pykernel_iopub_t *self, const json_t *parent_header);
/* Publishes msg_type with content and metadata (both stolen; metadata may be
   NULL). parent_header NULL = the current parent. Thread-safe. 0 or -1. */
int pykernel_iopub_send (pykernel_iopub_t *self, const char *msg_type, json_t *content, json_t *metadata,
                         const json_t *parent_header);
/* pykernel_iopub_send with binary buffers after the content (*buffers_p
   stolen and set to NULL; buffers_p or *buffers_p may be NULL). */
int pykernel_iopub_send_buffers (pykernel_iopub_t *self, const char *msg_type, json_t *content, json_t *metadata,
                                 const json_t *parent_header, zmsg_t **buffers_p);
/* status message: state is "busy" or "idle". */
int pykernel_iopub_status (pykernel_iopub_t *self, const char *state, const json_t *parent_header);
/* Bytes sent so far (for tests and metrics). */
size_t pykernel_iopub_sent_bytes (pykernel_iopub_t *self);
int pykernel_iopub_test (bool verbose);

/* ---- output ------------------------------------------------------------- */

typedef struct pykernel_output pykernel_output_t;

/* Replaces fd 1 and 2 by pipes and starts the thread that publishes what is
   written to them as stream messages on iopub (borrowed). */
pykernel_output_t *pykernel_output_new (pykernel_iopub_t *iopub);
/* Publishes everything written to fd 1 and 2 so far (and flushes C stdio).
   Thread-safe; called before any other output to keep order. */
void pykernel_output_flush (pykernel_output_t *self);
/* Queues Python-level text for stream `which` (0 stdout, 1 stderr) after
   whatever the fds received so far; published by the thread within a few
   ms, by a flush, or at once when the queue is large. Thread-safe. */
void pykernel_output_write (pykernel_output_t *self, int which, const char *text, size_t len);
/* Flushes, stops the thread and puts the original fd 1 and 2 back. */
void pykernel_output_destroy (pykernel_output_t **self_p);
int pykernel_output_test (bool verbose);

/* ---- worker thread ------------------------------------------------------ */

/* A thread whose loop polls stop_pipe[0] with its own fds and returns once
   that is readable. Embedded in its owner; zeroed means not running. */
typedef struct {
    pthread_t id;
    int stop_pipe[2];
    bool running;
} pykernel_thread_t;

/* Opens the stop pipe and starts run (arg). 0, or -1 (errno) with nothing
   left open. */
int pykernel_thread_start (pykernel_thread_t *self, void *(*run) (void *), void *arg);
/* Tells the thread to stop, joins it and closes the pipe; does nothing when
   it is not running. */
void pykernel_thread_stop (pykernel_thread_t *self);

/* ---- heartbeat ---------------------------------------------------------- */

typedef struct pykernel_beat pykernel_beat_t;

/* Starts a thread echoing every message on sock (a bound ROUTER; owned). */
pykernel_beat_t *pykernel_beat_new (zsock_t *sock);
void pykernel_beat_destroy (pykernel_beat_t **self_p);
int pykernel_beat_test (bool verbose);

/* ---- kernel state shared by the main and control threads ---------------- */

typedef struct {
    wire_key_t *key;
    char session[33];
    pykernel_iopub_t *iopub;
    pykernel_output_t *output;
    pthread_t main_thread;
    /* the kernel's own pid: code in a child forked by user code (os.fork,
       multiprocessing) must never use the parent's sockets */
    pid_t pid;
    /* The main thread is running a request in Python: an interrupt is
       delivered as SIGINT only then, so an idle interrupt is harmless. */
    atomic_bool busy;
    /* shutdown_request received: the main loop ends after its request. */
    atomic_bool stopping;
    /* written once by pykernel_shell_stop(): wakes the shell loop */
    int wake_fd[2];
    /* kernel_info_reply content, prepared once at start (read-only after) */
    char *kernel_info;
} pykernel_shared_t;

/* ---- control ------------------------------------------------------------ */

typedef struct pykernel_control pykernel_control_t;

/* Starts the control thread on sock (a bound ROUTER; owned). */
pykernel_control_t *pykernel_control_new (zsock_t *sock, pykernel_shared_t *shared);
void pykernel_control_destroy (pykernel_control_t **self_p);

/* ---- python ------------------------------------------------------------- */

/* Starts CPython (isolated, system site) and runs the kernel/ package as a private
   module; with preload, also builds IPython's shell (kernel/kernel.py preload(),
   for a fork server: a kernel started on its own builds it on first need).
   Does nothing when done before. Returns with the GIL released. 0 or -1
   (logged). */
int pykernel_python_start (bool preload);
/* Gives the _kennel functions the kernel's state and stdin socket
   (borrowed until pykernel_python_stop). */
void pykernel_python_attach (pykernel_shared_t *shared, zsock_t *stdin_sock);
/* fork() with the interpreter's locks handled as os.fork() does. */
pid_t pykernel_python_fork (void);
/* Calls kernel/kernel.py's configure(settings_json). */
int pykernel_python_configure (const json_t *settings);
/* Calls kernel/kernel.py's dispatch for a request. Sets *reply_type, *reply_content,
   *reply_metadata (caller owns; NULL when there is no reply) and *abort.
   A Python exception becomes an error reply and is logged. */
void pykernel_python_dispatch (const wire_msg_t *request, char **reply_type, json_t **reply_content,
                               json_t **reply_metadata, bool *abort_queue);
/* The request that _kennel.publish and stdin_request refer to. Borrowed. */
void pykernel_python_set_request (const wire_msg_t *request);
/* kernel_info_reply content from kernel/kernel.py as JSON text (caller frees), or
   NULL. */
char *pykernel_python_kernel_info (void);
/* Consumes a SIGINT that arrived while idle. */
void pykernel_python_forget_interrupt (void);
/* Py_FinalizeEx. */
void pykernel_python_stop (void);

/* ---- shell -------------------------------------------------------------- */

/* Serves shell requests on the main thread until shutdown. */
int pykernel_shell_run (pykernel_shared_t *shared, zsock_t *shell);
/* Asks the shell loop to end (after the running request): a shutdown
   request on either channel, or a failed poll. Thread-safe. */
void pykernel_shell_stop (pykernel_shared_t *shared);

/* ---- self-tests --------------------------------------------------------- */

/* Runs the self-tests of the classes that work without a client; the number
   of failures. */
int pykernel_selftest (bool verbose);

#endif
