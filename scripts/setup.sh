#!/usr/bin/env bash
# Set up edgehub on a fresh machine: a venv with edgehub, a reachable Docker daemon (started
# here if none is), a local base image (for hosts that cannot pull from a registry) and the
# pinned toolchain image(s). Idempotent: a second run only checks.
#   bash scripts/setup.sh            # then: . .venv/bin/activate
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${EDGEHUB_VENV:-.venv}
BASE=${EDGEHUB_BASE_IMAGE:-edgehub-base:bookworm}

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV" >&2
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import edgehub, onnx, pytest" 2>/dev/null; then
  echo "setup: installing edgehub with its dev extras into $VENV" >&2
  "$VENV/bin/pip" install -q --upgrade pip >&2
  "$VENV/bin/pip" install -q -e '.[dev]' >&2
fi
"$VENV/bin/python" -c "import edgehub_backend_tensorrt, edgehub_backend_tflite" 2>/dev/null \
  || "$VENV/bin/pip" install -q -e backends/tensorrt -e backends/tflite >&2

bash scripts/ci-docker.sh start >&2
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  if ! command -v debootstrap >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing debootstrap" >&2
    apt-get update -qq </dev/null >&2 && apt-get install -y -qq debootstrap </dev/null >&2
  fi
  echo "setup: making the base image $BASE with debootstrap" >&2
  bash scripts/make-base-image.sh "$BASE" >&2
fi
"$VENV/bin/hub" images build onnxruntime --base "$BASE" >&2
echo "setup: ready. Activate with: . $VENV/bin/activate" >&2
