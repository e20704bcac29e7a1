/*  gw_notebook.h - kernelspec mode for a person at a notebook (gw_notebook.c).
*/
#ifndef GW_NOTEBOOK_H_INCLUDED
#define GW_NOTEBOOK_H_INCLUDED

#include "gw_config.h"

/* The front end's working directory (malloc'd), the kernel's workspace;
   config's confine settings guard it (confine/guard.c) and let the quota
   layer degrade there; HOME goes to the sandbox's /tmp. NULL + *errmsg. */
char *gw_notebook_dir (gw_config_t *config, char **errmsg);

#endif
