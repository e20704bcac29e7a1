/*  gw_notebook.c - what kernelspec mode (`kennel kernel`) adds for a person
    at a notebook: the front end's directory as the kernel's workspace (its
    private state dir's reaper is gw_reaper.c's).

    The directory Jupyter starts the kernel in (the notebook's) is bound at
    /workspace, the sandbox's working directory: notebooks open the files
    beside them by relative path and what they write stays there. It is
    the person's own directory, so nothing mounts over it (no tmpfs quota:
    the quota layer is allowed to degrade, as only their disk bounds
    ipykernel) and nothing removes it. Started by root, the sandbox runs as
    the directory's owner so the files it writes are theirs; a directory of
    root's is refused, because the sandbox never runs as host root. HOME
    is the sandbox's /tmp (unless the config's env says otherwise), so
    caches written under ~ do not land beside the notebooks.
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
    if (geteuid () == 0) {
        if (st.st_uid == 0) {
            *errmsg = wire_xasprintf ("the notebook directory %s belongs to root, and the sandbox never runs as "
                                      "host root: run Jupyter as the user whose files these are, or give them the "
                                      "directory (chown)",
                                      path);
            return NULL;
        }
        json_object_set_new (config->confine, "host_uid", json_integer (st.st_uid));
        json_object_set_new (config->confine, "host_gid", json_integer (st.st_gid));
    }
    /* caches (matplotlib's ~/.cache) belong in the sandbox's /tmp, not
       beside the person's notebooks */
    if (!json_object_get (config->defaults.env, "HOME"))
        json_object_set_new (config->defaults.env, "HOME", json_string ("/tmp"));
    json_t *degraded = json_object_get (config->confine, "allow_degraded");
    if (json_is_array (degraded))
        json_array_append_new (degraded, json_string ("quota"));
    return wire_xstrdup (path);
}
