#!/bin/sh
# Runs "$@" in the calling process's private mount namespace (unshare -m --propagation private)
# with its own /dev: a tmpfs holding the few device nodes .NET needs (bind-mounted from the real
# /dev) and /dev/log a symbolic link to the datagram socket "$1", so the syslog lines pwsh writes
# (its module and script block logging on Linux) reach the test's listener and nothing else.
set -e
sock="$1"; shift
stage="$(dirname "$sock")/dev-stage"; mkdir -p "$stage"
mount --bind /dev "$stage"
mount -t tmpfs -o mode=755 csi-dev /dev
for n in null zero random urandom full tty; do touch /dev/$n; mount --bind "$stage/$n" /dev/$n; done
ln -s /proc/self/fd /dev/fd; ln -s "$sock" /dev/log

exec "$@"
