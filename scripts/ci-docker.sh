#!/usr/bin/env bash
# Make sure a Docker daemon is reachable for the integration tests, and stop it again.
#
#   scripts/ci-docker.sh start   reach a daemon; if none answers, install Debian's docker.io (and
#                                debootstrap) when dockerd is missing, and start dockerd detached
#   scripts/ci-docker.sh stop    stop the daemon, but only one that `start` started
#
# The started dockerd keeps none of the caller's file descriptors: stdin is /dev/null and its
# output goes to $TMPDIR/edgehub-dockerd.log, so `$(scripts/ci-docker.sh start)` or a CI step
# that waits for its pipes to close does not hang. Its pid is kept in $TMPDIR/edgehub-dockerd.pid,
# which is how `stop` knows the daemon is ours. Starting and installing need root.
# EDGEHUB_DOCKERD_ARGS adds options to dockerd (e.g. "--storage-driver vfs" where overlay fails).
set -euo pipefail

state_dir="${TMPDIR:-/tmp}"
pid_file="$state_dir/edgehub-dockerd.pid"
log_file="$state_dir/edgehub-dockerd.log"
wait_s=60

say() { echo "ci-docker: $*" >&2; }
die() {
    say "$*"
    exit 1
}

reachable() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

our_pid() {
    # The pid from our pid file, if that process is still a dockerd.
    local pid
    [ -f "$pid_file" ] || return 1
    pid="$(cat "$pid_file" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = "dockerd" ] || return 1
    echo "$pid"
}

install_docker() {
    [ "$(id -u)" -eq 0 ] || die "dockerd is not installed and installing it needs root; run: sudo $0 start"
    command -v apt-get >/dev/null 2>&1 || die "dockerd is not installed and there is no apt-get; install Docker yourself"
    say "installing docker.io and debootstrap with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq </dev/null
    apt-get install -y -qq --no-install-recommends docker.io debootstrap </dev/null
}

start() {
    if reachable; then
        say "a Docker daemon is already reachable; nothing to start"
        return 0
    fi
    if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
        install_docker
        if reachable; then # the package may have started the service itself
            say "the docker.io package started a daemon"
            return 0
        fi
    fi
    if pid="$(our_pid)"; then
        say "dockerd $pid (started earlier by this script) is not answering yet; waiting"
    else
        [ "$(id -u)" -eq 0 ] || die "starting dockerd needs root; run: sudo $0 start"
        mkdir -p "$state_dir"
        : >"$log_file"
        # A background job of a non-interactive shell is no process group leader, so setsid
        # makes dockerd its own session without forking: $! is dockerd's pid.
        # shellcheck disable=SC2086 # EDGEHUB_DOCKERD_ARGS is a list of words
        setsid dockerd ${EDGEHUB_DOCKERD_ARGS:-} </dev/null >>"$log_file" 2>&1 &
        pid=$!
        echo "$pid" >"$pid_file"
        disown "$pid" 2>/dev/null || true
        say "started dockerd (pid $pid, log $log_file)"
    fi
    for _ in $(seq "$wait_s"); do
        if reachable; then
            say "Docker daemon is ready"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$pid_file"
            tail -n 20 "$log_file" >&2 || true
            die "dockerd exited during start-up; see $log_file"
        fi
        sleep 1
    done
    tail -n 20 "$log_file" >&2 || true
    die "dockerd did not answer within $wait_s s; see $log_file"
}

stop() {
    local pid
    if ! pid="$(our_pid)"; then
        rm -f "$pid_file"
        say "no dockerd started by this script is running; leaving any other daemon alone"
        return 0
    fi
    say "stopping dockerd $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "dockerd $pid did not stop within 20 s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pid_file"
    say "stopped"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
