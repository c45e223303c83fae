"""The tests' own Docker detection (tests/conftest.py): no daemon is a skip that says so (and
the left-over container check says it did not run); an error in our Docker client fails the
run. Each case runs pytest in a subprocess on a one-test file with the real conftest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
NEEDS_DOCKER = "def test_needs_docker(docker_daemon):\n    assert docker_daemon is not None\n"
# a plugin standing for a bug in our client code (not a missing daemon)
BROKEN = (
    "import edgehub.runners.docker.sdk\n\n"
    "def _broken(timeout=120):\n    raise TypeError('a bug in our Docker client')\n\n"
    "edgehub.runners.docker.sdk.docker_client = _broken\n"
)


def _pytest(tmp_path: Path, *plugins: str, docker_host: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_one.py").write_text(NEEDS_DOCKER)
    (tmp_path / "broken_client.py").write_text(BROKEN)
    env = {**os.environ, "DOCKER_HOST": docker_host}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(tmp_path)])
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "conftest"]
    for plugin in plugins:
        argv += ["-p", plugin]
    return subprocess.run(
        [*argv, "--rootdir", str(tmp_path), str(tmp_path / "test_one.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_no_daemon_is_a_skip_that_says_so(tmp_path: Path) -> None:
    result = _pytest(tmp_path, docker_host=f"unix://{tmp_path}/no-docker.sock")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "needs a running Docker daemon (" in result.stdout
    assert "left-over container check skipped: no Docker daemon" in result.stdout


def test_an_error_in_our_client_fails(tmp_path: Path) -> None:
    result = _pytest(tmp_path, "broken_client", docker_host=f"unix://{tmp_path}/no-docker.sock")
    assert result.returncode != 0
    assert "1 error" in result.stdout and "skipped" not in result.stdout
    assert "TypeError: a bug in our Docker client" in result.stdout
    assert "ERROR: the Docker client failed: TypeError" in result.stdout
