/*  pykernel.h - the built-in Python kernel (embedded CPython, Jupyter 5.3).
    See README.md in this folder for the split between C and kernel.py. */
#ifndef PYKERNEL_H_INCLUDED
#define PYKERNEL_H_INCLUDED

#include <jansson.h>

typedef struct {
    /* Settings handed to kernel.py's configure(): builtins profile ("agent",
       "notebook", "none"), imports policy, tools. NULL = defaults. Borrowed. */
    const json_t *settings;
} pykernel_options_t;

/* Serves the kernel described by connection_file until shutdown_request.
   Returns the process exit status to use (0 after a clean shutdown). Prints
   one clear line on stderr on failure. */
int pykernel_run (const char *connection_file, const pykernel_options_t *options);

#endif
