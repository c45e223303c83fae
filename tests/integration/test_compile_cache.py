"""The compile cache through the real `hub` entry point and the real ONNX Runtime image.

A second identical `hub exec compile` reuses the first (a new run tagged `cached_from`, the same
stored artifact, listed by `hub runs list --cached`); a changed option, a changed calibration
file (same path, other content) or a stored compile whose image is no longer today's is a miss;
`--no-cache` builds. How much faster a hit is, is a benchmark figure
(benchmarks/bench_compile_cache.py), not asserted here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )


def compile_run(root: Path, *extra: str) -> dict[str, Any]:
    """Compile the example; the stored run as `runs show --json` gives it."""
    done = hub(root, "exec", "compile", "onnxruntime", "tiny_cnn.onnx", "--json", *extra)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    shown: dict[str, Any] = json.loads(hub(root, "runs", "show", run_id, "--json").stdout)
    return shown


def compiled_sha(run: dict[str, Any]) -> str:
    (sha,) = [a["sha256"] for a in run["artifacts"] if a["name"] == "path"]
    return str(sha)


@pytest.fixture()
def root(ort_image: str, tmp_path: Path) -> Path:
    import numpy as np

    (tmp_path / "hub.toml").write_text('[project]\nname = "cache"\nstore = ".hub"\n')
    (tmp_path / "tiny_cnn.onnx").write_bytes(EXAMPLE.read_bytes())
    data = np.random.default_rng(3).random((4, 3, 32, 32), dtype=np.float32)
    np.savez(tmp_path / "calib.npz", image=data)
    return tmp_path


def test_an_identical_compile_is_a_hit_and_no_cache_builds(root: Path) -> None:
    first = compile_run(root)
    second = compile_run(root)
    assert "cached_from" not in first["tags"]
    assert second["tags"]["cached_from"] == first["run_id"]
    assert second["run_id"] != first["run_id"] and second["status"] == "FINISHED"
    assert compiled_sha(second) == compiled_sha(first)
    assert second["params"]["option.per_channel"] == first["params"]["option.per_channel"]
    cached = json.loads(hub(root, "runs", "list", "--cached", "--json").stdout)
    assert [r["run_id"] for r in cached] == [second["run_id"]]
    built = compile_run(root, "--no-cache")
    assert "cached_from" not in built["tags"]
    assert compiled_sha(built) == compiled_sha(first)  # ONNX Runtime builds it bit for bit


def test_a_changed_option_or_calibration_file_is_a_miss(root: Path) -> None:
    calibrated = ["--set", "calibration_data=calib.npz"]
    first = compile_run(root, *calibrated)
    assert "cached_from" not in compile_run(root, *calibrated, "--set", "per_channel=true")["tags"]
    assert compile_run(root, *calibrated)["tags"]["cached_from"] == first["run_id"]
    import numpy as np

    np.savez(root / "calib.npz", image=np.ones((4, 3, 32, 32), dtype=np.float32))
    changed = compile_run(root, *calibrated)  # the same path, other content
    assert "cached_from" not in changed["tags"]
    assert compile_run(root, *calibrated)["tags"]["cached_from"] == changed["run_id"]


def test_a_compile_on_another_image_is_a_miss(root: Path) -> None:
    first = compile_run(root)
    with sqlite3.connect(root / ".hub" / "runs.db") as conn:
        conn.execute(
            "UPDATE environment SET value = ? WHERE run_id = ? AND key = 'image_digest'",
            ("sha256:" + "1" * 64, first["run_id"]),
        )
    again = compile_run(root)
    assert "cached_from" not in again["tags"]
