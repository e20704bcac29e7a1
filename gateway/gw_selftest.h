/*  gw_selftest.h - `kennel selftest` (gw_selftest.c).
*/
#ifndef GW_SELFTEST_H_INCLUDED
#define GW_SELFTEST_H_INCLUDED

/* 0 when a confined kernel started and passed every check from inside. */
int gw_selftest_run (const char *config_path);

#endif
