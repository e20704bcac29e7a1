/*  gw_reaper.h - a private state dir removed however its process ends
    (gw_reaper.c): `kennel kernel` and `kennel mcp`.
*/
#ifndef GW_REAPER_H_INCLUDED
#define GW_REAPER_H_INCLUDED

/* Forks the process that removes dir once this one has ended, SIGKILL
   included. Before any thread; 0, or -1 with errno. */
int gw_reaper_start (const char *dir);

#endif
