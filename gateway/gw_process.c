/*  gw_process.c - a gateway process's set-up (gw_process.h): what every
    command that runs a gateway in this process does first.
*/
#include "gw_capacity.h"
#include "gw_config.h"
#include "gw_log.h"
#include "gw_process.h"
#include "gw_quota.h"

#include <czmq.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

void
gw_process_setup (const char *log_file)
{
    /* a kernel that dies mid-write must not kill the gateway */
    signal (SIGPIPE, SIG_IGN);
    /* about ten sockets per conversation, each with its fds: lift the
       soft fd limit to the hard one and ZeroMQ's socket cap to its maximum */
    struct rlimit nofile;
    if (getrlimit (RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit (RLIMIT_NOFILE, &nofile);
    }
    char *errmsg = NULL;
    if (gw_capacity_start_check (&errmsg) < 0) {
        fprintf (stderr, "kennel: %s\n", errmsg);
        free (errmsg);
        exit (2);
    }
    /* the launcher beside this binary, while /proc/self/exe still names
       it (gw_config_default_launcher), then the mount namespace of its
       workspaces: before zsys_init starts ZeroMQ's threads (unshare needs
       one thread) */
    (void) gw_config_default_launcher ();
    gw_quota_prepare ();
    zsys_set_max_sockets (0);
    zsys_init ();
    zsys_set_logstream (NULL);
    if (gw_log_open (log_file) < 0) {
        fprintf (stderr, "kennel: cannot open the log file %s: %s\n", log_file, strerror (errno));
        exit (2);
    }
}
