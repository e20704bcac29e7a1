/*  gw_remove.c - directories a kernel could write, removed off the event
    loop.

    A kernel chooses how much a removal costs: 200,000 files take seconds to
    walk, and the last unmount of a tmpfs holding them frees every inode in
    the caller (about 0.9 s here). On the loop that delayed every other
    conversation. So the loop only renames the directory into
    state/graveyard (one rename: the conversation's id is free at once, and
    a workspace's tmpfs mounted below moves with it), and one worker thread
    empties the graveyard: it unmounts each entry's workspace, then removes
    what is left through gw_fs (directory fds, never following a symlink).
    What it cannot remove stays in the graveyard and is retried at every
    later pass; the count left reaches the loop through a pipe and is
    logged there (gw_log is the loop's).

    The worker touches no loop state: it reads the graveyard's path (fixed
    at creation) and a pending flag under the mutex. At destroy it makes one
    last pass, so a gateway that stops leaves no graveyard it could empty.
*/
#include "gw_remove.h"
#include "gw_io.h"
#include "gw_log.h"
#include "gw_quota.h"
#include "gw_util.h"
#include "wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BURY_TRIES 3 /* the worker may remove an empty graveyard meanwhile */

struct gw_remover {
    char *graveyard;
    gw_io_t *io;
    zmq_pollitem_t item; /* the pipe's read end, in the loop */
    int report_fd;       /* the worker's end */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool pending;  /* something was buried since the last pass began */
    bool stopping; /* destroy: one last pass, then end */
};

/* Unmounts the workspace tmpfs of every entry (a buried conversation dir
   holds one at workspace/; a planted symlink there is not a mount root and
   is left to the removal, which never follows it). */
static void
graveyard_unmount (const char *graveyard)
{
    DIR *dir = opendir (graveyard);
    if (!dir)
        return;
    struct dirent *de;
    while ((de = readdir (dir))) {
        if (streq (de->d_name, ".") || streq (de->d_name, ".."))
            continue;
        char *workspace = wire_xasprintf ("%s/%s/workspace", graveyard, de->d_name);
        gw_quota_unmount (workspace);
        free (workspace);
    }
    closedir (dir);
}

static void *
remover_run (void *arg)
{
    gw_remover_t *self = arg;
    pthread_mutex_lock (&self->lock);
    while (true) {
        while (!self->pending && !self->stopping)
            pthread_cond_wait (&self->wake, &self->lock);
        if (!self->pending)
            break;
        self->pending = false;
        pthread_mutex_unlock (&self->lock);
        graveyard_unmount (self->graveyard);
        int left = gw_fs_graveyard_empty (self->graveyard);
        if (write (self->report_fd, &left, sizeof left) < 0) {
            /* the loop is behind by a pipe's worth of reports: this one is not needed */
        }
        pthread_mutex_lock (&self->lock);
    }
    pthread_mutex_unlock (&self->lock);
    return NULL;
}

static int
on_report (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    gw_remover_t *self = arg;
    int left;
    while (read (item->fd, &left, sizeof left) == (ssize_t) sizeof left)
        if (left > 0)
            gw_log ("graveyard", "{s:s, s:i}", "path", self->graveyard, "left", left);
    return 0;
}

static void
remover_wake (gw_remover_t *self, bool stopping)
{
    pthread_mutex_lock (&self->lock);
    self->pending = true;
    self->stopping = self->stopping || stopping;
    pthread_cond_signal (&self->wake);
    pthread_mutex_unlock (&self->lock);
}

gw_remover_t *
gw_remover_new (gw_io_t *io, const char *graveyard, char **errmsg)
{
    gw_remover_t *self = wire_xcalloc (1, sizeof *self);
    int fds[2];
    if (pipe2 (fds, O_CLOEXEC | O_NONBLOCK) < 0) {
        *errmsg = wire_xasprintf ("cannot make the remover's pipe: %s", strerror (errno));
        free (self);
        return NULL;
    }
    self->graveyard = wire_xstrdup (graveyard);
    self->io = io;
    self->item = (zmq_pollitem_t){.fd = fds[0], .events = ZMQ_POLLIN};
    self->report_fd = fds[1];
    self->pending = true; /* a graveyard left by an earlier run */
    pthread_mutex_init (&self->lock, NULL);
    pthread_cond_init (&self->wake, NULL);
    int rc = pthread_create (&self->thread, NULL, remover_run, self);
    if (rc != 0) {
        *errmsg = wire_xasprintf ("cannot start the remover's thread: %s", strerror (rc));
        close (fds[0]), close (fds[1]);
        pthread_mutex_destroy (&self->lock);
        pthread_cond_destroy (&self->wake);
        free (self->graveyard);
        free (self);
        return NULL;
    }
    gw_io_poller (io, &self->item, on_report, self);
    return self;
}

int
gw_remover_bury (gw_remover_t *self, const char *path)
{
    int rc = -1;
    for (int i = 0; rc < 0 && i < BURY_TRIES; i++) {
        if (mkdir (self->graveyard, 0700) < 0 && errno != EEXIST)
            return -1;
        char rnd[WIRE_ID_SIZE];
        wire_id_new (rnd);
        char *grave = wire_xasprintf ("%s/%s", self->graveyard, rnd);
        rc = rename (path, grave);
        free (grave);
        if (rc < 0 && errno == ENOENT && access (path, F_OK) < 0)
            return 0; /* nothing there to remove */
    }
    if (rc == 0)
        remover_wake (self, false);
    return rc;
}

void
gw_remover_destroy (gw_remover_t **self_p)
{
    gw_remover_t *self = *self_p;
    if (!self)
        return;
    remover_wake (self, true);
    pthread_join (self->thread, NULL);
    gw_io_poller_end (self->io, self->item.fd);
    on_report (NULL, &self->item, self);
    close (self->item.fd);
    close (self->report_fd);
    pthread_mutex_destroy (&self->lock);
    pthread_cond_destroy (&self->wake);
    free (self->graveyard);
    free (self);
    *self_p = NULL;
}
