"""A warm `hub exec invoke` does not ping the Docker daemon before its first request (issue 39:
one API round trip less per job): through the real CLI, a socket nobody answers on is still
the one-line "cannot reach the Docker daemon" error, exit 3."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _hub(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    hub = [sys.executable, "-m", "edgehub.cli.main"]
    env = dict(os.environ, EDGEHUB_KEEP_WARM="60", **(env or {}))
    return subprocess.run(hub + list(args), cwd=project, env=env, capture_output=True, text=True)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "hub.toml").write_text('[project]\nname = "warm-lean"\n')
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", project / "model.onnx")
    return project


@pytest.mark.docker
def test_a_socket_nobody_answers_on_is_one_line_exit_3(tmp_path: Path, ort_image: str) -> None:
    project = _project(tmp_path)
    dead = tmp_path / "dead.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(dead))
    listener.close()  # the socket file stays; nobody listens on it
    run = _hub(
        project, "-q", "exec", "invoke", "onnxruntime", "model.onnx",
        env={"DOCKER_HOST": f"unix://{dead}"},
    )  # fmt: skip
    assert run.returncode == 3, run.stderr
    assert run.stderr.splitlines()[-1].startswith(
        f"hub: error: cannot reach the Docker daemon at unix://{dead}"
    )
    assert "Traceback" not in run.stderr
