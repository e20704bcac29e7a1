/*  pykernel_python.c - the embedded CPython: start-up, the `_kennel` builtin
    module (Python → C) and calls into kernel.py (C → Python).

    The kernel package (the kernel/ folder) is compiled into the binary
    (kernel_py.h, generated at build time) and runs as module objects that
    are in sys.modules only while it loads. The `_kennel` functions reach the
    kernel's state through C statics only, so no key, socket or message
    object is ever a Python object. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include "config.h"
#include "pykernel_internal.h"
#include "kernel_py.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* how often a wait for a stdin reply looks at pending signals (ms) */
#define STDIN_POLL_MS 100

static struct {
    pykernel_shared_t *shared;
    zsock_t *stdin_sock;
    wire_replay_t *stdin_replay;
    const wire_msg_t *request; /* the shell request being served */
    PyObject *modules;         /* the kernel package's modules (not in sys.modules) */
    PyObject *module;          /* its entry module, kernel.py */
    PyObject *dispatch;
    PyObject *configure;
    PyThreadState *main_state; /* saved while the GIL is released */
} s_py;

/* ---- _kennel ------------------------------------------------------------ */

/* True (with RuntimeError set) in a child forked by user code: the sockets
   and threads are the parent's, and ZeroMQ does not survive fork. */
static bool
s_forked_child (const char *function)
{
    if (!s_py.shared) {
        PyErr_Format (PyExc_RuntimeError, "_kennel.%s: the kernel is not serving yet", function);
        return true;
    }
    if (getpid () == s_py.shared->pid)
        return false;
    PyErr_Format (PyExc_RuntimeError, "_kennel.%s: not available in a forked child process", function);
    return true;
}

static json_t *
s_parse_json_arg (const char *what, const char *text)
{
    json_error_t jerr;
    json_t *value = json_loads (text, 0, &jerr);
    if (!value || !json_is_object (value)) {
        json_decref (value);
        PyErr_Format (PyExc_ValueError, "_kennel: %s is not a JSON object: %s", what,
                      value ? "not an object" : jerr.text);
        return NULL;
    }
    return value;
}

/* A copy of each bytes-like object of seq (None: no buffers) as frames,
   copied while the GIL is held so the send can run without it. NULL with
   an exception set. */
static zmsg_t *
s_buffers_from_py (const char *msg_type, PyObject *seq)
{
    zmsg_t *frames = zmsg_new ();
    if (seq == Py_None)
        return frames;
    PyObject *items = PySequence_Fast (seq, "_kennel.publish: buffers must be a list or tuple");
    if (!items) {
        zmsg_destroy (&frames);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE (items);
    if (n > PYKERNEL_BUFFERS_MAX) {
        /* the gateway cuts a kernel connection at GW_ZMTP_FRAMES_MAX frames
           a message and kills the kernel: refused here, as the caller's error */
        PyErr_Format (PyExc_ValueError, "%s with %zd binary buffers: at most %d buffers a message", msg_type, n,
                      PYKERNEL_BUFFERS_MAX);
        n = -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer (PySequence_Fast_GET_ITEM (items, i), &view, PyBUF_SIMPLE) != 0) {
            PyErr_Format (PyExc_TypeError, "%s: buffer %zd is not a contiguous bytes-like object", msg_type, i);
            n = -1;
            break;
        }
        zmsg_addmem (frames, view.buf, (size_t) view.len);
        PyBuffer_Release (&view);
    }
    Py_DECREF (items);
    if (n < 0)
        zmsg_destroy (&frames);
    return frames;
}

static PyObject *
s_kennel_publish (PyObject *self, PyObject *args)
{
    const char *msg_type, *content_json, *metadata_json = NULL;
    PyObject *buffers_py = Py_None;
    if (!PyArg_ParseTuple (args, "ss|zO:publish", &msg_type, &content_json, &metadata_json, &buffers_py))
        return NULL;
    if (s_forked_child ("publish"))
        return NULL;
    zmsg_t *buffers = s_buffers_from_py (msg_type, buffers_py);
    if (!buffers)
        return NULL;
    json_t *content = s_parse_json_arg ("content", content_json);
    json_t *metadata = NULL;
    if (!content || (metadata_json && !(metadata = s_parse_json_arg ("metadata", metadata_json)))) {
        json_decref (content);
        zmsg_destroy (&buffers);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    /* bytes already written to fd 1 and 2 come first */
    pykernel_output_flush (s_py.shared->output);
    rc = pykernel_iopub_send_buffers (s_py.shared->iopub, msg_type, content, metadata, NULL, &buffers);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_SetString (PyExc_OSError, "_kennel.publish: sending on iopub failed");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Writes all of data to fd, as a forked child's output goes. */
static void
s_write_fd (int fd, const char *data, size_t len)
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

static PyObject *
s_kennel_write_stream (PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *text;
    if (!PyArg_ParseTuple (args, "sU:write_stream", &name, &text))
        return NULL;
    int which = strcmp (name, "stdout") == 0 ? 0 : strcmp (name, "stderr") == 0 ? 1 : -1;
    if (which < 0) {
        PyErr_Format (PyExc_ValueError, "_kennel.write_stream: no stream named %s", name);
        return NULL;
    }
    /* lone surrogates cannot travel as UTF-8: replaced, as print would */
    PyObject *bytes = PyUnicode_AsEncodedString (text, "utf-8", "replace");
    if (!bytes)
        return NULL;
    const char *data = PyBytes_AS_STRING (bytes);
    size_t len = (size_t) PyBytes_GET_SIZE (bytes);
    if (!s_py.shared || getpid () != s_py.shared->pid)
        /* not serving, or a forked child: the fd is the capture pipe,
           which the kernel's output thread reads */
        s_write_fd (which + 1, data, len);
    else
        pykernel_output_write (s_py.shared->output, which, data, len);
    Py_DECREF (bytes);
    Py_RETURN_NONE;
}

static PyObject *
s_kennel_flush_output (PyObject *self, PyObject *unused)
{
    if (!s_py.shared || getpid () != s_py.shared->pid) {
        /* not serving yet, or a forked child: the kernel's output thread
           reads what is written to the fds */
        fflush (stdout);
        fflush (stderr);
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    pykernel_output_flush (s_py.shared->output);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* Drops replies nobody waits for any more (a previous input() that was
   interrupted), so they are not taken for the answer to the next request. */
static void
s_stdin_purge (void)
{
    zmsg_t *stale;
    while (zsock_events (s_py.stdin_sock) & ZMQ_POLLIN && (stale = zmsg_recv (s_py.stdin_sock)))
        zmsg_destroy (&stale);
}

/* Waits up to ms for a readable stdin socket with the GIL released.
   1 readable, 0 not yet, -1 interrupted by a signal. */
static int
s_stdin_wait (long ms)
{
    zmq_pollitem_t item = { .socket = zsock_resolve (s_py.stdin_sock), .events = ZMQ_POLLIN };
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = zmq_poll (&item, 1, ms);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return errno == EINTR ? -1 : 0;
    return rc > 0 ? 1 : 0;
}

/* One stdin_request at a time: the socket is not thread-safe, and user
   threads may ask (input(), tool calls) while the main thread does. Waits
   with the GIL released so that the holder can go on; the main thread's
   wait stays interruptible. 0, or -1 with KeyboardInterrupt set. */
static pthread_mutex_t s_stdin_lock = PTHREAD_MUTEX_INITIALIZER;
/* guards s_py.request, which the main thread changes without the GIL */
static pthread_mutex_t s_request_lock = PTHREAD_MUTEX_INITIALIZER;

static int
s_stdin_acquire (void)
{
    while (pthread_mutex_trylock (&s_stdin_lock) != 0) {
        Py_BEGIN_ALLOW_THREADS
        zclock_sleep (10);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals () != 0)
            return -1;
    }
    return 0;
}

static PyObject *s_stdin_exchange (const char *msg_type, json_t *content, double timeout);

static PyObject *
s_kennel_stdin_request (PyObject *self, PyObject *args)
{
    const char *msg_type, *content_json;
    double timeout = -1;
    if (!PyArg_ParseTuple (args, "ss|d:stdin_request", &msg_type, &content_json, &timeout))
        return NULL;
    if (s_forked_child ("stdin_request"))
        return NULL;
    json_t *content = s_parse_json_arg ("content", content_json);
    if (!content)
        return NULL;
    if (s_stdin_acquire () != 0) {
        json_decref (content);
        return NULL;
    }
    PyObject *result = s_stdin_exchange (msg_type, content, timeout);
    pthread_mutex_unlock (&s_stdin_lock);
    return result;
}

/* Sends content (stolen) on stdin and waits for the answer. Lock held. */
static PyObject *
s_stdin_exchange (const char *msg_type, json_t *content, double timeout)
{
    Py_BEGIN_ALLOW_THREADS
    pykernel_output_flush (s_py.shared->output);
    Py_END_ALLOW_THREADS
    s_stdin_purge ();
    /* to the identities of the shell request: the client's stdin socket
       has the same identity as its shell socket. The main thread may be
       ending that request right now (a user thread asks): copy under the
       request lock. */
    pthread_mutex_lock (&s_request_lock);
    wire_msg_t *request = s_py.request ? wire_msg_new (s_py.shared->session, msg_type, s_py.request) : NULL;
    pthread_mutex_unlock (&s_request_lock);
    if (!request) {
        json_decref (content);
        PyErr_SetString (PyExc_RuntimeError, "_kennel.stdin_request: no request is running");
        return NULL;
    }
    wire_msg_set_content (request, content);
    char sent_id[128];
    snprintf (sent_id, sizeof sent_id, "%s", wire_msg_id (request));
    int rc = wire_msg_send (request, s_py.stdin_sock, s_py.shared->key);
    wire_msg_destroy (&request);
    if (rc != 0) {
        PyErr_SetString (PyExc_OSError, "_kennel.stdin_request: sending on stdin failed");
        return NULL;
    }
    int64_t deadline = timeout < 0 ? -1 : zclock_mono () + (int64_t) (timeout * 1000);
    for (;;) {
        long slice = STDIN_POLL_MS;
        if (deadline >= 0) {
            int64_t left = deadline - zclock_mono ();
            if (left <= 0) {
                PyErr_Format (PyExc_TimeoutError, "no %s reply on stdin within %.3g s",
                              msg_type, timeout);
                return NULL;
            }
            if (left < slice)
                slice = (long) left;
        }
        int ready = s_stdin_wait (slice);
        if (PyErr_CheckSignals () != 0)
            return NULL; /* KeyboardInterrupt: the user gave up waiting */
        if (ready <= 0)
            continue;
        zmsg_t *frames = zmsg_recv (s_py.stdin_sock);
        if (!frames)
            continue;
        wire_error_t err;
        wire_msg_t *reply = wire_msg_decode (&frames, s_py.shared->key, s_py.stdin_replay,
                                             &wire_limits_default, &err);
        if (!reply) {
            pykernel_log ("stdin: message dropped: %s", wire_strerror (err));
            continue;
        }
        /* jupyter_client sends input_reply without a parent; a reply that
           names a parent must name this request (a late answer to an
           earlier, abandoned one is not this one's answer) */
        const char *parent_id = json_string_value (json_object_get (reply->parent_header, "msg_id"));
        if (parent_id && *parent_id && strcmp (parent_id, sent_id) != 0) {
            pykernel_log ("stdin: %s for another request dropped", wire_msg_type (reply));
            wire_msg_destroy (&reply);
            continue;
        }
        char *text = json_dumps (reply->content, JSON_COMPACT);
        PyObject *result = Py_BuildValue ("(ss)", wire_msg_type (reply), text ? text : "{}");
        free (text);
        wire_msg_destroy (&reply);
        return result;
    }
}

static PyMethodDef s_kennel_methods[] = {
    { "publish", s_kennel_publish, METH_VARARGS,
      "publish(msg_type, content_json, metadata_json=None, buffers=None): an iopub message for the "
      "current request, with binary buffers (bytes-like objects) after its content" },
    { "stdin_request", s_kennel_stdin_request, METH_VARARGS,
      "stdin_request(msg_type, content_json, timeout=-1) -> (msg_type, content_json)" },
    { "write_stream", s_kennel_write_stream, METH_VARARGS,
      "write_stream(name, text): text for stream name (stdout, stderr), in order with fd 1 and 2 output" },
    { "flush_output", s_kennel_flush_output, METH_NOARGS,
      "flush_output(): publish what was written to fd 1 and 2 and write_stream so far" },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef s_kennel_module = {
    PyModuleDef_HEAD_INIT, "_kennel", "kennel's kernel internals (C side)", -1, s_kennel_methods,
    NULL, NULL, NULL, NULL,
};

static PyObject *
s_kennel_init (void)
{
    return PyModule_Create (&s_kennel_module);
}

/* ---- start -------------------------------------------------------------- */

static int
s_config_fail (PyConfig *config, PyStatus status, const char *step)
{
    pykernel_log ("starting Python: %s: %s%s%s", step, status.func ? status.func : "",
                  status.func ? ": " : "", status.err_msg ? status.err_msg : "failed");
    PyConfig_Clear (config);
    return -1;
}

/* Logs the pending Python exception on the log fd (never the client's fd 2). */
static void
s_log_exception (const char *step)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch (&type, &value, &tb);
    PyErr_NormalizeException (&type, &value, &tb);
    PyObject *text = value ? PyObject_Repr (value) : NULL;
    const char *utf8 = text ? PyUnicode_AsUTF8 (text) : NULL;
    pykernel_log ("%s: %s", step, utf8 ? utf8 : "unknown Python error");
    Py_XDECREF (text);
    Py_XDECREF (type);
    Py_XDECREF (value);
    Py_XDECREF (tb);
    PyErr_Clear ();
}

static int
s_initialize (void)
{
    if (PyImport_AppendInittab ("_kennel", s_kennel_init) != 0) {
        pykernel_log ("starting Python: registering _kennel failed");
        return -1;
    }
    /* The isolated pre-configuration leaves the locale "C" and its encoding
       ASCII: files, names and pipes with non-ASCII text would raise. UTF-8
       mode makes them UTF-8 whatever the locale (as `python3` and
       ipykernel do in the sandbox's C.UTF-8), and LC_CTYPE follows LANG
       for C libraries. */
    PyPreConfig preconfig;
    PyPreConfig_InitIsolatedConfig (&preconfig);
    preconfig.utf8_mode = 1;
    preconfig.configure_locale = 1;
    PyStatus status = Py_PreInitialize (&preconfig);
    if (PyStatus_Exception (status)) {
        pykernel_log ("starting Python: Py_PreInitialize (UTF-8 mode): %s", status.err_msg ? status.err_msg : "failed");
        return -1;
    }
    PyConfig config;
    /* isolated: no PYTHON* environment, no user site, no script dir on path;
       Debian's site module still adds dist-packages (numpy, pandas, ...) */
    PyConfig_InitIsolatedConfig (&config);
    config.install_signal_handlers = 1; /* SIGINT → KeyboardInterrupt */
    config.user_site_directory = 0;
    config.write_bytecode = 0;          /* the sandbox's /usr is read-only */
    config.site_import = 1;
    /* prefixes resolve from the interpreter's own path */
    status = PyConfig_SetBytesString (&config, &config.program_name, KENNEL_PYTHON);
    if (PyStatus_Exception (status))
        return s_config_fail (&config, status, "program name");
    char *argv[] = { (char *) "" };
    status = PyConfig_SetBytesArgv (&config, 1, argv);
    if (PyStatus_Exception (status))
        return s_config_fail (&config, status, "argv");
    status = Py_InitializeFromConfig (&config);
    if (PyStatus_Exception (status))
        return s_config_fail (&config, status, "Py_InitializeFromConfig");
    PyConfig_Clear (&config);
    /* as in a notebook (and `python -c`): modules next to the user's files,
       in the current directory, import; isolation left it out */
    PyObject *path = PySys_GetObject ("path"); /* borrowed */
    PyObject *cwd = PyUnicode_FromString ("");
    if (!path || !cwd || PyList_Insert (path, 0, cwd) != 0) {
        Py_XDECREF (cwd);
        s_log_exception ("putting the current directory on sys.path");
        return -1;
    }
    Py_DECREF (cwd);
    return 0;
}

/* The kernel package's code objects, one per module in the order of
   pykernel_kernel_modules: the bytecode compiled at build time when this
   interpreter reads that bytecode format (same magic number), else the
   sources compiled now. */
static PyObject *
s_kernel_codes (void)
{
    const size_t count = sizeof pykernel_kernel_modules / sizeof pykernel_kernel_modules[0];
    const unsigned char *pyc = pykernel_kernel_pyc;
    size_t len = sizeof pykernel_kernel_pyc - 1; /* the generator's final 0 */
    long magic = PyImport_GetMagicNumber ();
    if (len > 4 && magic != -1
        && (long) (pyc[0] | pyc[1] << 8 | (unsigned long) pyc[2] << 16 | (unsigned long) pyc[3] << 24) == magic) {
        PyObject *codes = PyMarshal_ReadObjectFromString ((const char *) pyc + 4, (Py_ssize_t) (len - 4));
        bool whole = codes && PyTuple_Check (codes) && (size_t) PyTuple_GET_SIZE (codes) == count;
        for (size_t i = 0; whole && i < count; i++)
            whole = PyCode_Check (PyTuple_GET_ITEM (codes, (Py_ssize_t) i));
        if (whole)
            return codes;
        Py_XDECREF (codes);
        PyErr_Clear ();
    }
    else
        PyErr_Clear ();
    pykernel_log ("the kernel package's bytecode is not for this Python; compiling the sources");
    PyObject *codes = PyTuple_New ((Py_ssize_t) count);
    for (size_t i = 0; codes && i < count; i++) {
        PyObject *code = Py_CompileStringExFlags ((const char *) pykernel_kernel_modules[i].source, "<kennel>",
                                                  Py_file_input, NULL, -1);
        if (!code) {
            s_log_exception (pykernel_kernel_modules[i].name);
            Py_CLEAR (codes);
            break;
        }
        PyTuple_SET_ITEM (codes, (Py_ssize_t) i, code);
    }
    return codes;
}

/* Runs one module of the package. Every module is named "kennel_kernel"
   (what its classes' reprs show, whichever file defines them) and is in
   sys.modules, as "kennel_kernel.NAME", only while the package loads: the
   modules after it import from it (`from .base import ...`). */
static PyObject *
s_run_module (const char *name, PyObject *code, PyObject *sys_modules)
{
    PyObject *module = PyModule_New ("kennel_kernel");
    PyObject *globals = module ? PyModule_GetDict (module) : NULL;
    PyObject *package = PyUnicode_FromString ("kennel_kernel");
    if (!globals || !package || PyDict_SetItemString (globals, "__builtins__", PyEval_GetBuiltins ()) != 0
        || PyDict_SetItemString (globals, "__package__", package) != 0) {
        Py_XDECREF (package);
        Py_XDECREF (module);
        return NULL;
    }
    Py_DECREF (package);
    PyObject *key = PyUnicode_FromFormat ("kennel_kernel.%s", name);
    if (!key || PyDict_SetItem (sys_modules, key, module) != 0) {
        Py_XDECREF (key);
        Py_DECREF (module);
        return NULL;
    }
    Py_DECREF (key);
    PyObject *result = PyEval_EvalCode (code, globals, globals);
    if (!result) {
        Py_DECREF (module);
        return NULL;
    }
    Py_DECREF (result);
    return module;
}

/* Takes every module of the package out of sys.modules again: user code
   can neither find nor import them (no finder knows the names). */
static void
s_unregister_modules (PyObject *sys_modules)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch (&type, &value, &tb);
    for (size_t i = 0; i < sizeof pykernel_kernel_modules / sizeof pykernel_kernel_modules[0]; i++) {
        PyObject *key = PyUnicode_FromFormat ("kennel_kernel.%s", pykernel_kernel_modules[i].name);
        if (key && PyDict_DelItem (sys_modules, key) != 0)
            PyErr_Clear ();
        Py_XDECREF (key);
    }
    PyErr_Restore (type, value, tb);
}

/* Loads the kernel package (kernel/, module by module in the order each
   imports only from those before it) and takes the C side's entry points
   from its last module, kernel.py. */
static int
s_load_kernel (void)
{
    PyObject *codes = s_kernel_codes ();
    PyObject *sys_modules = PySys_GetObject ("modules"); /* borrowed */
    s_py.modules = codes && sys_modules ? PyList_New (0) : NULL;
    if (!s_py.modules) {
        Py_XDECREF (codes);
        s_log_exception ("loading the kernel package");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE (codes); i++) {
        const char *name = pykernel_kernel_modules[i].name;
        PyObject *module = s_run_module (name, PyTuple_GET_ITEM (codes, i), sys_modules);
        if (!module || PyList_Append (s_py.modules, module) != 0) {
            Py_XDECREF (module);
            s_unregister_modules (sys_modules);
            Py_DECREF (codes);
            s_log_exception (name);
            return -1;
        }
        Py_DECREF (module);
    }
    s_unregister_modules (sys_modules);
    Py_DECREF (codes);
    if (PyList_GET_SIZE (s_py.modules) == 0) {
        pykernel_log ("the kernel package has no modules");
        return -1;
    }
    s_py.module = PyList_GET_ITEM (s_py.modules, PyList_GET_SIZE (s_py.modules) - 1);
    Py_INCREF (s_py.module);
    PyObject *globals = PyModule_GetDict (s_py.module);
    s_py.dispatch = PyDict_GetItemString (globals, "dispatch");
    s_py.configure = PyDict_GetItemString (globals, "configure");
    if (!s_py.dispatch || !s_py.configure) {
        pykernel_log ("kernel.py defines no dispatch() or configure()");
        return -1;
    }
    Py_INCREF (s_py.dispatch);
    Py_INCREF (s_py.configure);
    return 0;
}

/* kernel.py's preload(): IPython's shell, built once for every kernel a
   fork server forks. */
static int
s_preload (void)
{
    PyObject *preload = PyDict_GetItemString (PyModule_GetDict (s_py.module), "preload");
    PyObject *result = preload ? PyObject_CallNoArgs (preload) : NULL;
    if (!result) {
        if (PyErr_Occurred ())
            s_log_exception ("kernel.py preload()");
        else
            pykernel_log ("kernel.py defines no preload()");
        return -1;
    }
    Py_DECREF (result);
    return 0;
}

int
pykernel_python_start (bool preload)
{
    if (s_py.main_state)
        return 0; /* prepared before (a fork server) */
    if (s_initialize () != 0)
        return -1;
    int rc = s_load_kernel ();
    if (rc == 0 && preload)
        rc = s_preload ();
    s_py.main_state = PyEval_SaveThread ();
    return rc;
}

void
pykernel_python_attach (pykernel_shared_t *shared, zsock_t *stdin_sock)
{
    s_py.shared = shared;
    s_py.stdin_sock = stdin_sock;
    if (!s_py.stdin_replay)
        s_py.stdin_replay = wire_replay_new (4096);
}

pid_t
pykernel_python_fork (void)
{
    if (!s_py.main_state) {
        errno = EINVAL;
        return -1;
    }
    /* what os.fork() does around fork(): no lock of the interpreter's is
       left held by a thread that does not exist in the child */
    PyEval_RestoreThread (s_py.main_state);
    PyOS_BeforeFork ();
    pid_t pid = fork ();
    int saved = errno;
    if (pid == 0)
        PyOS_AfterFork_Child ();
    else
        PyOS_AfterFork_Parent ();
    s_py.main_state = PyEval_SaveThread ();
    errno = saved;
    return pid;
}

/* ---- calls into kernel.py ----------------------------------------------- */

int
pykernel_python_configure (const json_t *settings)
{
    char *text = settings ? json_dumps (settings, JSON_COMPACT) : wire_xstrdup ("{}");
    PyEval_RestoreThread (s_py.main_state);
    PyObject *result = PyObject_CallFunction (s_py.configure, "s", text ? text : "{}");
    int rc = 0;
    if (!result) {
        s_log_exception ("kernel.py configure()");
        rc = -1;
    }
    Py_XDECREF (result);
    s_py.main_state = PyEval_SaveThread ();
    free (text);
    return rc;
}

void
pykernel_python_set_request (const wire_msg_t *request)
{
    pthread_mutex_lock (&s_request_lock);
    s_py.request = request;
    pthread_mutex_unlock (&s_request_lock);
}

void
pykernel_python_forget_interrupt (void)
{
    PyEval_RestoreThread (s_py.main_state);
    if (PyErr_CheckSignals () != 0)
        PyErr_Clear ();
    s_py.main_state = PyEval_SaveThread ();
}

/* "execute_request" → "execute_reply" */
static char *
s_reply_type (const char *request_type)
{
    size_t len = strlen (request_type);
    const char *suffix = "_request";
    size_t slen = strlen (suffix);
    if (len > slen && strcmp (request_type + len - slen, suffix) == 0)
        len -= slen;
    char *type = wire_xmalloc (len + sizeof "_reply");
    memcpy (type, request_type, len);
    strcpy (type + len, "_reply");
    return type;
}

/* The pending exception as an error reply (kernel.py is expected to turn
   every failure of user code into a reply itself: this is for its bugs and
   for an interrupt that lands between user code and the reply). */
static void
s_error_reply (const char *request_type, char **reply_type, json_t **reply_content)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch (&type, &value, &tb);
    PyErr_NormalizeException (&type, &value, &tb);
    const char *ename = type ? ((PyTypeObject *) type)->tp_name : "Error";
    PyObject *text = value ? PyObject_Str (value) : NULL;
    const char *evalue = text ? PyUnicode_AsUTF8 (text) : NULL;
    if (!evalue)
        PyErr_Clear ();
    pykernel_log ("kernel.py dispatch(%s) raised %s: %s", request_type, ename, evalue ? evalue : "");
    *reply_type = s_reply_type (request_type);
    *reply_content = json_pack ("{ss ss ss s[s++]}", "status", "error", "ename", ename, "evalue",
                                evalue ? evalue : "", "traceback", ename, ": ", evalue ? evalue : "");
    Py_XDECREF (text);
    Py_XDECREF (type);
    Py_XDECREF (value);
    Py_XDECREF (tb);
}

static json_t *
s_json_from_py (PyObject *text, const char *what)
{
    if (text == Py_None)
        return NULL;
    const char *utf8 = PyUnicode_Check (text) ? PyUnicode_AsUTF8 (text) : NULL;
    if (!utf8) {
        PyErr_Clear ();
        pykernel_log ("kernel.py dispatch: %s is not a str", what);
        return NULL;
    }
    json_error_t jerr;
    json_t *value = json_loads (utf8, 0, &jerr);
    if (!json_is_object (value)) {
        pykernel_log ("kernel.py dispatch: %s is not a JSON object: %s", what, jerr.text);
        json_decref (value);
        return NULL;
    }
    return value;
}

/* The request's binary buffers as ipykernel hands them to comm callbacks:
   a list of read-only memoryviews. NULL with an exception set. */
static PyObject *
s_buffers_to_py (zmsg_t *frames)
{
    PyObject *list = PyList_New (0);
    for (zframe_t *f = zmsg_first (frames); list && f; f = zmsg_next (frames)) {
        PyObject *bytes = PyBytes_FromStringAndSize ((const char *) zframe_data (f), (Py_ssize_t) zframe_size (f));
        PyObject *view = bytes ? PyMemoryView_FromObject (bytes) : NULL;
        Py_XDECREF (bytes);
        if (!view || PyList_Append (list, view) != 0)
            Py_CLEAR (list);
        Py_XDECREF (view);
    }
    return list;
}

void
pykernel_python_dispatch (const wire_msg_t *request, char **reply_type, json_t **reply_content,
                          json_t **reply_metadata, bool *abort_queue)
{
    *reply_type = NULL;
    *reply_content = NULL;
    *reply_metadata = NULL;
    *abort_queue = false;
    char *content = json_dumps (request->content, JSON_COMPACT);
    char *header = json_dumps (request->header, JSON_COMPACT);
    PyEval_RestoreThread (s_py.main_state);
    PyObject *buffers = s_buffers_to_py (request->buffers);
    PyObject *result = buffers ? PyObject_CallFunction (s_py.dispatch, "sssO", wire_msg_type (request),
                                                        content ? content : "{}", header ? header : "{}", buffers)
                               : NULL;
    Py_XDECREF (buffers);
    free (content);
    free (header);
    if (!result)
        s_error_reply (wire_msg_type (request), reply_type, reply_content);
    else if (result != Py_None) {
        PyObject *type = NULL, *body = NULL, *metadata = NULL, *abort = NULL;
        if (PyTuple_Check (result) && PyArg_ParseTuple (result, "UO|OO", &type, &body, &metadata, &abort)) {
            *reply_type = wire_xstrdup (PyUnicode_AsUTF8 (type));
            *reply_content = s_json_from_py (body, "reply content");
            *reply_metadata = metadata ? s_json_from_py (metadata, "reply metadata") : NULL;
            *abort_queue = abort && PyObject_IsTrue (abort) == 1;
            if (!*reply_content)
                *reply_content = json_pack ("{ss}", "status", "ok");
        }
        else {
            PyErr_Clear ();
            pykernel_log ("kernel.py dispatch(%s) returned neither None nor a reply tuple",
                          wire_msg_type (request));
        }
    }
    Py_XDECREF (result);
    s_py.main_state = PyEval_SaveThread ();
}

/* kernel_info_reply content, computed once through kernel.py. */
char *
pykernel_python_kernel_info (void)
{
    wire_msg_t *request = wire_msg_new (NULL, "kernel_info_request", NULL);
    char *type, *text = NULL;
    json_t *content, *metadata;
    bool abort;
    pykernel_python_dispatch (request, &type, &content, &metadata, &abort);
    if (content)
        text = json_dumps (content, JSON_COMPACT);
    free (type);
    json_decref (content);
    json_decref (metadata);
    wire_msg_destroy (&request);
    return text;
}

void
pykernel_python_stop (void)
{
    if (!s_py.main_state && !Py_IsInitialized ())
        return;
    if (s_py.main_state)
        PyEval_RestoreThread (s_py.main_state);
    s_py.main_state = NULL;
    Py_CLEAR (s_py.dispatch);
    Py_CLEAR (s_py.configure);
    Py_CLEAR (s_py.module);
    Py_CLEAR (s_py.modules);
    if (Py_IsInitialized () && Py_FinalizeEx () != 0)
        pykernel_log ("Python finalization reported an error (buffered output lost?)");
    wire_replay_destroy (&s_py.stdin_replay);
    s_py.request = NULL;
    s_py.shared = NULL;
    s_py.stdin_sock = NULL;
}
