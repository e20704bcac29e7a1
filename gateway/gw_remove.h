/*  gw_remove.h - workspace removal off the event loop (gw_remove.c).
*/
#ifndef GW_REMOVE_H_INCLUDED
#define GW_REMOVE_H_INCLUDED

typedef struct gw_io gw_io_t; /* gw_io.h */

typedef struct gw_remover gw_remover_t;
/* The worker thread that empties graveyard (starting with what an earlier
   run left there), reporting to the loop of io. NULL with *errmsg. */
gw_remover_t *gw_remover_new (gw_io_t *io, const char *graveyard, char **errmsg);
/* Renames path into the graveyard (its id is free at once) for the worker
   to remove: 0 (also when path is gone), or -1 with errno, path in place. */
int gw_remover_bury (gw_remover_t *self, const char *path);
/* One last pass of the worker (everything removable is removed), then ends it. */
void gw_remover_destroy (gw_remover_t **self_p);

#endif
