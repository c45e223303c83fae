#!/usr/bin/env bash
# Run the test suite on this machine: set up what it needs (scripts/setup.sh --tests: the venv
# with the dev and test extras, Chromium and tmux, the Docker daemon, the images), then pytest.
# Only checks when everything is there. Extra arguments go to pytest, e.g.
# `bash scripts/test.sh tests/unit -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${EDGEHUB_VENV:-.venv}
bash scripts/setup.sh --tests
export EDGEHUB_BASE_IMAGE=${EDGEHUB_BASE_IMAGE:-edgehub-base:bookworm}
# every image the tests use, built once here (a cache hit when nothing changed)
"$VENV/bin/hub" -q images build --base "$EDGEHUB_BASE_IMAGE" >&2
set +e
"$VENV/bin/python" -m pytest "$@"
code=$?
set -e
if [ "$code" -eq 5 ]; then
  echo "test: pytest collected no tests" >&2
fi
exit "$code"
