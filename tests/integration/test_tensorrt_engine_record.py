"""Engines record the TensorRT that built them, and one used on another is refused before load,
through the real `hub` and the real tensorrt-rtx image (TensorRT for RTX builds ahead of time
without a GPU; reading an engine's inputs happens in that image, where the check runs before the
engine is opened). The build records ``timing_cache: unsupported`` (RTX has none)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
TINY = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, docker_daemon: Any) -> tuple[Path, dict]:
    from edgehub import images

    if not images.image_status("tensorrt-rtx").built:
        pytest.skip("needs the tensorrt-rtx image (hub images build tensorrt-rtx)")
    root = tmp_path_factory.mktemp("trt-record")
    (root / "hub.toml").write_text('[project]\nname = "rec"\nstore = ".hub"\n')
    shutil.copy(TINY, root / TINY.name)
    done = hub(root, "exec", "compile", "tensorrt", TINY.name, "--set", "target=sm86", "--json")
    assert done.returncode == 0, done.stderr
    run: dict[str, Any] = json.loads(done.stdout)
    return root, run


def test_the_build_records_its_tensorrt_and_the_timing_cache_state(built: tuple) -> None:
    _, run = built
    info = json.loads(Path(run["artifacts"]["engine_info"]).read_text())
    assert info == {"tensorrt_flavor": "rtx", "tensorrt_version": "1.7.1.116", "targets": ["sm86"]}
    assert run["params"]["timing_cache"] == "unsupported"


def _engine_copy(root: Path, run: dict[str, Any], name: str) -> str:
    shutil.copy(run["artifacts"]["path"], root / name)
    return name


def test_a_matching_engine_passes_the_check(built: tuple) -> None:
    root, run = built
    done = hub(root, "exec", "invoke", "tensorrt", _engine_copy(root, run, "same.trt"))
    assert done.returncode != 0  # no GPU here: the next refusal, after the check passed
    assert "needs an NVIDIA GPU" in done.stderr and "cannot load here" not in done.stderr


@pytest.mark.parametrize(
    ("sidecar", "words"),
    [
        ({"tensorrt_version": "1.6.0.0"}, "(version 1.6.0.0 vs 1.7.1.116 here)"),
        ({"tensorrt_flavor": "full", "tensorrt_version": "10.4.0"}, "(flavor TensorRT vs"),
    ],
)
def test_an_engine_whose_sidecar_names_another_tensorrt_is_refused(
    built: tuple, sidecar: dict[str, str], words: str
) -> None:
    root, run = built
    name = _engine_copy(root, run, "other.trt")
    record = {"tensorrt_flavor": "rtx", "targets": ["sm86"], **sidecar}
    (root / f"{name}.json").write_text(json.dumps(record))
    done = hub(root, "exec", "invoke", "tensorrt", name)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("hub: error: the engine was built with") and words in line


def _set_version(root: Path, run_id: str, version: str) -> None:
    with sqlite3.connect(root / ".hub" / "runs.db") as db:
        db.execute(
            "UPDATE params SET value = ? WHERE run_id = ? AND name = 'tensorrt_version'",
            (json.dumps(version), run_id),
        )


def test_an_engine_whose_store_record_names_another_version_is_refused(built: tuple) -> None:
    """No sidecar: the store's compile with the same engine content is the record."""
    root, run = built
    name = _engine_copy(root, run, "stored.trt")
    _set_version(root, run["run_id"], "1.7.0.9")
    try:
        done = hub(root, "exec", "invoke", "tensorrt", name)
    finally:
        _set_version(root, run["run_id"], "1.7.1.116")
    assert done.returncode == 2
    assert "(version 1.7.0.9 vs 1.7.1.116 here)" in done.stderr.strip().splitlines()[-1]
