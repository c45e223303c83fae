#!/bin/sh
# Install the client's public key for `edge` (owned by edge, 0600, or sshd ignores it) and run
# sshd in the foreground, logging to stderr (`docker logs`).
set -eu
if [ -z "${AUTHORIZED_KEY:-}" ]; then
    echo "edgehub-device: set AUTHORIZED_KEY to the client's public key" >&2
    exit 2
fi
printf '%s\n' "$AUTHORIZED_KEY" >/home/edge/.ssh/authorized_keys
chown edge:edge /home/edge/.ssh/authorized_keys
chmod 0600 /home/edge/.ssh/authorized_keys
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e
