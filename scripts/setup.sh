#!/usr/bin/env bash
# Set up edgehub on a fresh machine: a venv with edgehub, a reachable Docker daemon (started
# here if none is), a local base image (for hosts that cannot pull from a registry) and the
# pinned toolchain image(s). Idempotent: a second run only checks.
#   bash scripts/setup.sh            # then: . .venv/bin/activate
# One line per step on stderr; the tools' own output (pip, apt, debootstrap, docker) goes to
# $EDGEHUB_LOG_DIR/setup.log (default ~/.cache/edgehub/logs), whose end is shown if a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${EDGEHUB_VENV:-.venv}
BASE=${EDGEHUB_BASE_IMAGE:-edgehub-base:bookworm}
LOG_DIR=${EDGEHUB_LOG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/edgehub/logs}
mkdir -p "$LOG_DIR"
LOG="$LOG_DIR/setup.log"
: >"$LOG"

step() {
    # step TITLE COMMAND...: run COMMAND with its output in $LOG, print one line about it.
    local title=$1 started=$SECONDS code=0
    shift
    printf 'setup: %s ... ' "$title" >&2
    echo "== $title: $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 </dev/null || code=$?
    if [ "$code" -eq 0 ]; then
        echo "ok ($((SECONDS - started)) s)" >&2
        return 0
    fi
    echo "FAILED (exit $code)" >&2
    echo "setup: the last lines of $LOG:" >&2
    tail -n 30 "$LOG" | sed 's/^/  | /' >&2
    exit "$code"
}

install_edgehub() {
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -e '.[dev,labgrid]' -e backends/tensorrt -e backends/tflite
}

install_debootstrap() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
}

[ -x "$VENV/bin/python" ] || step "creating $VENV" python3 -m venv "$VENV"
ready="import edgehub, onnx, pytest, importlinter, edgehub_backend_tensorrt, edgehub_backend_tflite, labgrid"
if ! "$VENV/bin/python" -c "$ready" 2>/dev/null; then
    step "installing edgehub with its dev extras into $VENV" install_edgehub
fi
step "reaching a Docker daemon (starting one if needed)" bash scripts/ci-docker.sh start
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if ! command -v debootstrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
        step "installing debootstrap" install_debootstrap
    fi
    step "making the base image $BASE with debootstrap" bash scripts/make-base-image.sh "$BASE"
fi
step "building the ONNX Runtime image" "$VENV/bin/hub" images build onnxruntime --base "$BASE"
echo "setup: ready. Activate with: . $VENV/bin/activate" >&2
