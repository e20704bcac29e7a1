#!/bin/sh
# The image's entry: `kennel serve --http` on 8888 as root in the container
# (the sandbox needs it: README.md here), its log on stderr.
#   KENNEL_AUTH_TOKEN or KG_AUTH_TOKEN: the token (kennel reads them);
#     TOKEN, what AutoGen's DockerJupyterServer sets, is taken as well
#   KENNEL_SHARD: this gateway's shard; KENNEL_SHARD_FROM_HOSTNAME=1 takes
#     it from a StatefulSet pod's name, NAME-N -> N in hex
#   KENNEL_HTTP: the listening address, default 0.0.0.0:8888
#   KENNEL_SELFTEST=0: skip the start-up check below
# Arguments are passed on to kennel serve.
#
# First `kennel selftest` confines one kernel: a container not given what
# the sandbox needs (a capability, the seccomp profile, an unmasked /proc,
# a writable cgroup tree) stops here with the layer that failed, instead of
# serving a gateway that refuses every kernel.
set -eu
if [ -z "${KENNEL_AUTH_TOKEN:-}${KG_AUTH_TOKEN:-}" ] && [ -n "${TOKEN:-}" ]; then
    KENNEL_AUTH_TOKEN=$TOKEN
    export KENNEL_AUTH_TOKEN
fi
if [ -z "${KENNEL_SHARD:-}" ] && [ -n "${KENNEL_SHARD_FROM_HOSTNAME:-}" ]; then
    ordinal=${HOSTNAME##*-}
    case $ordinal in
        '' | *[!0-9]*) echo "entrypoint: hostname $HOSTNAME has no -N ordinal for KENNEL_SHARD" >&2; exit 2 ;;
    esac
    KENNEL_SHARD=$(printf %x "$ordinal")
    export KENNEL_SHARD
fi
if [ "${KENNEL_SELFTEST:-1}" != 0 ]; then
    out=$(/usr/bin/kennel selftest --config /etc/kennel/kennel.conf 2>&1) || {
        printf '%s\n' "$out" | grep -E '^(FAIL|selftest)' >&2
        echo "kennel: this container cannot confine kernels (the FAIL line names the layer); what it needs: gateway/deploy/container/README.md" >&2
        exit 1
    }
fi
exec /usr/bin/kennel serve --config /etc/kennel/kennel.conf --state-dir /var/lib/kennel \
    --http "${KENNEL_HTTP:-0.0.0.0:8888}" "$@"
