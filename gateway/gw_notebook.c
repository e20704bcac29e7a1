/*  gw_notebook.c - what kernelspec mode (`kennel kernel`) adds for a person
    at a notebook: the front end's directory as the kernel's workspace (its
    private state dir's reaper is gw_reaper.c's).

    The directory Jupyter starts the kernel in (the notebook's) is the
    kernel's /workspace, its working directory: notebooks open the files
    beside them by relative path and what they write stays there. It is
    the person's own directory, so nothing mounts over it on the host (no
    tmpfs quota: the quota layer is allowed to degrade, as only their disk
    bounds ipykernel) and nothing removes it. It reaches the sandbox
    through confine's guard (confine/guard.c): a server outside the sandbox
    does each file operation there, as the directory's owner, and refuses
    what the host could later run or load (symlinks, hardlinks, special
    files, exec and set-id bits, dot-entries, directory modes). Started by
    root, the sandbox keeps its own host uid, and the server sees the
    directory through an idmapped mount that shows its owner, root too, as
    that uid. HOME is the sandbox's /tmp (unless the config's env says
    otherwise), so caches written under ~ do not land beside the notebooks.
*/
#include "gw_notebook.h"
#include "gw_util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *
gw_notebook_dir (gw_config_t *config, char **errmsg)
{
    char path[PATH_MAX];
    struct stat st;
    if (!getcwd (path, sizeof path) || stat (path, &st) < 0) {
        *errmsg = wire_xasprintf ("the working directory the front end gave: %s", strerror (errno));
        return NULL;
    }
    json_object_set_new (config->confine, "workspace_guard", json_true ());
    /* caches (matplotlib's ~/.cache) belong in the sandbox's /tmp, not
       beside the person's notebooks */
    if (!json_object_get (config->defaults.env, "HOME"))
        json_object_set_new (config->defaults.env, "HOME", json_string ("/tmp"));
    json_t *degraded = json_object_get (config->confine, "allow_degraded");
    if (json_is_array (degraded))
        json_array_append_new (degraded, json_string ("quota"));
    return wire_xstrdup (path);
}
