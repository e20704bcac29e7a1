/*  pykernel.h - the built-in Python kernel (embedded CPython, Jupyter 5.3).
    See README.md in this folder for the split between C and kernel.py. */
#ifndef PYKERNEL_H_INCLUDED
#define PYKERNEL_H_INCLUDED

#include <jansson.h>
#include <sys/types.h>

typedef struct {
    /* Settings handed to kernel.py's configure(): builtins profile ("agent",
       "notebook", "none"), imports policy, tools. NULL = defaults. Borrowed. */
    const json_t *settings;
    /* Called once the five sockets are bound, before CPython is started or
       configured (NULL: none). kennel-launch writes its status line here,
       so the gateway connects to sockets that exist and its handshake
       overlaps the kernel's own start. */
    void (*on_bound) (void *arg);
    void *on_bound_arg;
} pykernel_options_t;

/* Serves the kernel described by connection_file until shutdown_request.
   Returns the process exit status to use (0 after a clean shutdown). Prints
   one clear line on stderr on failure. When pykernel_prepare() was not
   called, starts CPython and kernel.py itself but leaves IPython's shell
   to be built when something needs it. Once per process. */
int pykernel_run (const char *connection_file, const pykernel_options_t *options);

/* Starts CPython, loads kernel.py and builds IPython's shell, with no
   socket, no thread and no settings yet: what a fork server or a warm pool
   does ahead of need (and before confinement, if it wants), so that the
   kernels it forks share the shell. Single-threaded afterwards. 0, or -1
   with one line on stderr. */
int pykernel_prepare (void);

/* fork() for a prepared process, keeping the embedded interpreter sound in
   both (as os.fork() does). The child then calls pykernel_run(), which
   logs to the fd 2 it has then (a fork server may replace it). -1 with
   errno when not prepared or fork fails. */
pid_t pykernel_fork (void);

#endif
