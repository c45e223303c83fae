#!/usr/bin/env bash
# Set up edgehub on a fresh machine: a venv with edgehub, a reachable Docker daemon (started
# here if none is), a local base image (for hosts that cannot pull from a registry) and the
# pinned toolchain image(s). Idempotent: a second run only checks.
#   bash scripts/setup.sh            # then: . .venv/bin/activate
#   bash scripts/setup.sh --tests    # also what the tests need (scripts/test.sh runs this)
# --tests adds the [browser], [mlflow], [zstd], [report] and [ray] extras to the venv and Debian's
# chromium and tmux where missing (apt-get, as root). Those are optional: one that cannot be installed is
# said in one line and the tests that need it skip, naming it.
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

try() {
    # try TITLE CONSEQUENCE COMMAND...: like step, but a failure is one line saying CONSEQUENCE
    # (what happens without it), and the script goes on.
    local title=$1 consequence=$2 started=$SECONDS code=0
    shift 2
    printf 'setup: %s ... ' "$title" >&2
    echo "== $title: $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1 </dev/null || code=$?
    if [ "$code" -eq 0 ]; then
        echo "ok ($((SECONDS - started)) s)" >&2
    else
        echo "failed (exit $code, see $LOG); $consequence" >&2
    fi
    return "$code"
}

install_edgehub() {
    # install_edgehub EXTRA...: edgehub with these extras, and the two built-in backends
    local IFS=,
    "$VENV/bin/pip" install -q -e ".[$*]" -e backends/tensorrt -e backends/tflite
}

install_debian() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

missing_modules() {
    # missing_modules MODULE...: those the venv cannot import (all of them if its python fails)
    "$VENV/bin/python" -c 'import importlib.util as u, sys
print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' "$@" 2>/dev/null || echo "$*"
}

tests=0
case "${1:-}" in
--tests) tests=1 ;;
"") ;;
*)
    echo "usage: bash scripts/setup.sh [--tests]" >&2
    exit 2
    ;;
esac

if [ "$tests" -eq 1 ]; then
    # tmux drives the real hub-tui entry point, Chromium loads `hub-tui --serve` (about 20 s for
    # Chromium on a fresh machine)
    debs=()
    command -v tmux >/dev/null 2>&1 || debs+=(tmux)
    command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || debs+=(chromium)
    if [ "${#debs[@]}" -gt 0 ]; then
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            try "installing ${debs[*]} from Debian" "the tests needing them will skip" \
                install_debian "${debs[@]}" || true
        else
            echo "setup: ${debs[*]} missing (needs root and apt-get: apt-get install ${debs[*]}); the tests needing them will skip" >&2
        fi
    fi
fi

[ -x "$VENV/bin/python" ] || step "creating $VENV" python3 -m venv "$VENV"
# the test extras, each with the module that tells it is installed
declare -A provides=([browser]=playwright [mlflow]=mlflow [zstd]=zstandard [report]=bokeh [ray]=ray)
wanted=()
if [ "$tests" -eq 1 ]; then
    for extra in browser mlflow zstd report ray; do
        [ -z "$(missing_modules "${provides[$extra]}")" ] || wanted+=("$extra")
    done
fi
required="edgehub onnx pytest importlinter edgehub_backend_tensorrt edgehub_backend_tflite labgrid"
# shellcheck disable=SC2086 # a list of module names
if [ -n "$(missing_modules $required)" ]; then
    step "upgrading pip in $VENV" "$VENV/bin/pip" install -q --upgrade pip
    # one resolve for everything when it works (the [mlflow] extra takes ~70 s on 2 loaded cores)
    if [ "${#wanted[@]}" -eq 0 ]; then
        step "installing edgehub with its dev extras into $VENV" install_edgehub dev labgrid
    elif try "installing edgehub with its dev and test extras into $VENV" \
        "installing the test extras one at a time" install_edgehub dev labgrid "${wanted[@]}"; then
        wanted=()
    else
        step "installing edgehub with its dev extras into $VENV" install_edgehub dev labgrid
        one_at_a_time=1
    fi
fi
if [ "${#wanted[@]}" -gt 1 ] && [ -z "${one_at_a_time:-}" ] &&
    try "installing the test extras ${wanted[*]} into $VENV" "installing them one at a time" \
        install_edgehub "${wanted[@]}"; then
    wanted=()
fi
for extra in "${wanted[@]}"; do
    try "installing the [$extra] extra into $VENV" "the tests needing ${provides[$extra]} will skip" \
        install_edgehub "$extra" || true
done
step "reaching a Docker daemon (starting one if needed)" bash scripts/ci-docker.sh start
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if ! command -v debootstrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
        step "installing debootstrap" install_debian debootstrap
    fi
    step "making the base image $BASE with debootstrap" bash scripts/make-base-image.sh "$BASE"
fi
step "building the ONNX Runtime image" "$VENV/bin/hub" images build onnxruntime --base "$BASE"
echo "setup: ready. Activate with: . $VENV/bin/activate" >&2
