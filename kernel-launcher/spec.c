/*  spec.c - the launch spec the gateway writes on --spec-fd (docs/PROTOCOL.md section 10):
    {"policy", "workspace", "run_dir", "kernel", "env", "status_fd", "zygote"}. */
#include "launch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPEC_FIRST_CAP 4096 /* the buffer doubles from here up to LAUNCH_SPEC_MAX */

static int
fail (char *err, size_t errlen, const char *fmt, ...)
{
    va_list args;
    va_start (args, fmt);
    vsnprintf (err, errlen, fmt, args);
    va_end (args);
    return -1;
}

void
launch_kernel_free (launch_kernel_t *kernel)
{
    json_decref (kernel->settings);
    if (kernel->argv)
        for (char **arg = kernel->argv; *arg; arg++)
            free (*arg);
    free (kernel->argv);
    free (kernel->connection_file);
    free (kernel->zygote);
    memset (kernel, 0, sizeof *kernel);
}

/* "{connection_file}" inside an argument becomes the path inside. */
static char *
expand_arg (const char *arg)
{
    const char *key = LAUNCH_ARGV_CONNECTION_FILE;
    const char *at = strstr (arg, key);
    if (!at)
        return confine_xstrdup (arg);
    size_t len = strlen (arg) - strlen (key) + strlen (LAUNCH_CONNECTION_FILE) + 1;
    char *out = confine_xmalloc (len);
    snprintf (out, len, "%.*s%s%s", (int) (at - arg), arg, LAUNCH_CONNECTION_FILE, at + strlen (key));
    return out;
}

static int
read_kernel (const json_t *json, launch_kernel_t *kernel, char *err, size_t errlen)
{
    json_t *builtin = json_object_get (json, LAUNCH_KERNEL_BUILTIN);
    json_t *argv = json_object_get (json, LAUNCH_KERNEL_ARGV);
    if (!json_is_object (json) || (!builtin == !argv))
        return fail (err, errlen, "spec field \"kernel\" must have either \"builtin\" or \"argv\"");
    if (builtin) {
        if (!json_is_string (builtin) || strcmp (json_string_value (builtin), LAUNCH_BUILTIN_PYTHON) != 0)
            return fail (err, errlen, "spec field \"kernel.builtin\": only \"python\" exists");
        json_t *settings = json_object_get (json, LAUNCH_KERNEL_SETTINGS);
        if (settings && !json_is_object (settings))
            return fail (err, errlen, "spec field \"kernel.settings\" must be an object");
        kernel->builtin_python = true;
        kernel->settings = json_incref (settings);
        kernel->connection_file = confine_xstrdup (LAUNCH_CONNECTION_FILE);
        return 0;
    }
    if (!json_is_array (argv) || json_array_size (argv) == 0)
        return fail (err, errlen, "spec field \"kernel.argv\" must be a non-empty array of strings");
    kernel->argv = confine_xcalloc (json_array_size (argv) + 1, sizeof (char *));
    size_t i;
    json_t *item;
    json_array_foreach (argv, i, item) {
        if (!json_is_string (item))
            return fail (err, errlen, "spec field \"kernel.argv\"[%zu] must be a string", i);
        kernel->argv[i] = expand_arg (json_string_value (item));
    }
    return 0;
}

char *
launch_spec_read_text (int fd, char *err, size_t errlen)
{
    size_t cap = SPEC_FIRST_CAP, len = 0;
    char *buf = confine_xmalloc (cap);
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= LAUNCH_SPEC_MAX) {
                free (buf);
                fail (err, errlen, "launch spec larger than %d bytes", LAUNCH_SPEC_MAX);
                return NULL;
            }
            cap *= 2;
            buf = confine_xreallocarray (buf, cap, 1);
        }
        ssize_t n = read (fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fail (err, errlen, "read launch spec from fd %d: %s", fd, strerror (errno));
            free (buf);
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t) n;
    }
    buf[len] = 0;
    return buf;
}

static int
read_fields (const json_t *spec, confine_policy_t *policy, launch_kernel_t *kernel, int *status_fd,
             char *err, size_t errlen)
{
    const char *key;
    json_t *value;
    json_object_foreach ((json_t *) spec, key, value) {
        if (strcmp (key, LAUNCH_SPEC_POLICY) == 0) {
            if (confine_policy_load_json (policy, value, err, errlen) < 0)
                return -1;
        } else if (strcmp (key, LAUNCH_SPEC_WORKSPACE) == 0 || strcmp (key, LAUNCH_SPEC_RUN_DIR) == 0) {
            if (!json_is_string (value) || json_string_value (value)[0] != '/')
                return fail (err, errlen, "spec field \"%s\" must be an absolute path", key);
            char **slot = strcmp (key, LAUNCH_SPEC_WORKSPACE) == 0 ? &policy->workspace : &policy->run_dir;
            free (*slot);
            *slot = confine_xstrdup (json_string_value (value));
        } else if (strcmp (key, LAUNCH_SPEC_KERNEL) == 0) {
            if (read_kernel (value, kernel, err, errlen) < 0)
                return -1;
        } else if (strcmp (key, LAUNCH_SPEC_ENV) == 0) {
            json_t *wrapped = json_pack ("{s:O}", LAUNCH_SPEC_ENV, value);
            int rc = confine_policy_load_json (policy, wrapped, err, errlen);
            json_decref (wrapped);
            if (rc < 0)
                return -1;
        } else if (strcmp (key, LAUNCH_SPEC_STATUS_FD) == 0) {
            if (!json_is_integer (value) || json_integer_value (value) < 0 || json_integer_value (value) > 1 << 20)
                return fail (err, errlen, "spec field \"status_fd\" must be a file descriptor number");
            *status_fd = (int) json_integer_value (value);
        } else if (strcmp (key, LAUNCH_SPEC_ZYGOTE) == 0) {
            if (!json_is_string (value) || json_string_value (value)[0] != '/')
                return fail (err, errlen, "spec field \"zygote\" must be an absolute path (a unix socket)");
            free (kernel->zygote);
            kernel->zygote = confine_xstrdup (json_string_value (value));
        } else
            return fail (err, errlen, "launch spec: unknown field \"%s\"", key);
    }
    if (!kernel->builtin_python && !kernel->argv)
        return fail (err, errlen, "launch spec: \"kernel\" is missing");
    if (kernel->builtin_python && !policy->run_dir)
        return fail (err, errlen, "launch spec: the builtin kernel needs \"run_dir\" (its connection file)");
    return 0;
}

int
launch_spec_parse (const char *text, confine_policy_t *policy, launch_kernel_t *kernel, int *status_fd,
                   char *err, size_t errlen)
{
    *status_fd = -1;
    json_error_t jerr;
    json_t *spec = json_loads (text, JSON_REJECT_DUPLICATES, &jerr);
    if (!spec)
        return fail (err, errlen, "launch spec: line %d: %s", jerr.line, jerr.text);
    int rc = json_is_object (spec) ? read_fields (spec, policy, kernel, status_fd, err, errlen)
                                   : fail (err, errlen, "launch spec must be a JSON object");
    kernel->from_spec = true;
    /* status_fd is also known on error, so the caller can report there. */
    json_t *sfd = json_object_get (spec, LAUNCH_SPEC_STATUS_FD);
    if (rc < 0 && json_is_integer (sfd))
        *status_fd = (int) json_integer_value (sfd);
    json_decref (spec);
    return rc;
}
