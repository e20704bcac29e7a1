/*  gw_notebook.h - kernelspec mode for a person at a notebook (gw_notebook.c).
*/
#ifndef GW_NOTEBOOK_H_INCLUDED
#define GW_NOTEBOOK_H_INCLUDED

#include "gw_config.h"

/* The front end's working directory (malloc'd), the kernel's workspace;
   config's confine settings let the quota layer degrade there and, for a
   root gateway, make the sandbox its owner; HOME goes to the sandbox's
   /tmp. NULL + *errmsg (a directory of root's, started by root, is
   refused). */
char *gw_notebook_dir (gw_config_t *config, char **errmsg);

#endif
