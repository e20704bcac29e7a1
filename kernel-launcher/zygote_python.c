/*  zygote_python.c - the zygote's calls into the interpreter that
    pykernel_prepare() started: preload modules and gc.freeze() in the
    zygote; in each child, after confinement, the environment and random
    state the kernel must not share with its siblings. */
#include <Python.h>

#include "launch.h"
#include "zygote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
log_python_error (const char *step)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch (&type, &value, &tb);
    PyObject *text = value ? PyObject_Str (value) : NULL;
    const char *utf8 = text ? PyUnicode_AsUTF8 (text) : NULL;
    fprintf (stderr, "kennel-launch: zygote: %s: %s\n", step, utf8 ? utf8 : "unknown Python error");
    Py_XDECREF (text);
    Py_XDECREF (type);
    Py_XDECREF (value);
    Py_XDECREF (tb);
    PyErr_Clear ();
}

static int
import_each (const char *modules)
{
    char *copy = confine_xstrdup (modules), *save = NULL;
    int rc = 0;
    for (char *name = strtok_r (copy, ",", &save); name && rc == 0; name = strtok_r (NULL, ",", &save)) {
        PyObject *module = PyImport_ImportModule (name);
        if (!module) {
            char step[256];
            snprintf (step, sizeof step, "--preload: import %s", name);
            log_python_error (step);
            rc = -1;
        }
        Py_XDECREF (module);
    }
    free (copy);
    return rc;
}

/* Everything allocated so far moves to the permanent generation: the
   collector never touches (and so never writes) those objects' headers in
   the children. Refcount changes still unshare the pages they land on. */
static int
freeze (void)
{
    PyObject *gc = PyImport_ImportModule ("gc");
    PyObject *done = gc ? PyObject_CallMethod (gc, "collect", NULL) : NULL;
    Py_XDECREF (done);
    done = done ? PyObject_CallMethod (gc, "freeze", NULL) : NULL;
    Py_XDECREF (gc);
    if (!done) {
        log_python_error ("gc.freeze()");
        return -1;
    }
    Py_DECREF (done);
    return 0;
}

int
launch_zygote_preload (const char *modules)
{
    PyGILState_STATE gil = PyGILState_Ensure ();
    int rc = modules && *modules ? import_each (modules) : 0;
    if (rc == 0)
        rc = freeze ();
    if (rc == 0)
        zygote_heap_fill ();
    PyGILState_Release (gil);
    return rc;
}

/* os.environ was read in the zygote: it becomes this process's environment
   (the confined one). numpy's global RandomState was seeded once in the
   zygote: every kernel would draw the same numbers; `random` reseeds itself
   at fork. */
static const char FIXUP[] =
    "import os, sys\n"
    "os.environ.clear()\n"
    "os.environ.update(pairs)\n"
    "_r = sys.modules.get('numpy.random')\n"
    "if _r is not None:\n"
    "    _r.seed()\n";

int
launch_zygote_child_fixup (void)
{
    extern char **environ;
    PyGILState_STATE gil = PyGILState_Ensure ();
    /* a snapshot first: clear() unsets names in the C environment too */
    PyObject *pairs = PyDict_New ();
    for (char **entry = environ; pairs && *entry; entry++) {
        const char *eq = strchr (*entry, '=');
        if (!eq)
            continue;
        PyObject *name = PyUnicode_DecodeFSDefaultAndSize (*entry, eq - *entry);
        PyObject *value = PyUnicode_DecodeFSDefault (eq + 1);
        if (!name || !value || PyDict_SetItem (pairs, name, value) != 0)
            Py_CLEAR (pairs);
        Py_XDECREF (name);
        Py_XDECREF (value);
    }
    PyObject *globals = pairs ? Py_BuildValue ("{s:O,s:O}", "pairs", pairs, "__builtins__",
                                               PyEval_GetBuiltins ()) : NULL;
    PyObject *result = globals ? PyRun_String (FIXUP, Py_file_input, globals, globals) : NULL;
    int rc = result ? 0 : -1;
    if (!result)
        log_python_error ("the kernel's environment after fork");
    Py_XDECREF (result);
    Py_XDECREF (globals);
    Py_XDECREF (pairs);
    PyGILState_Release (gil);
    return rc;
}
