"""`hub runs rerun SWEEP_RUN` reruns a sweep as a whole, through the real `hub` and the real
ONNX Runtime image: a two-cell profile sweep, rerun after its model file is gone (the store's
copy by content is what reruns), linked to the original; a damaged stored model is refused in
one line with nothing run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
MODEL = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"


def hub(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=dict(os.environ)
    )


def shown(root: Path, run_id: str) -> dict[str, Any]:
    done = hub(root, "runs", "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.fixture
def swept(tmp_path: Path, ort_image: str) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hub.toml").write_text('[project]\nname = "sw"\nstore = ".hub"\n')
    shutil.copy(MODEL, root / "m.onnx")
    done = hub(root, "-q", "exec", "sweep", "--models", "m.onnx", "--runtimes", "onnxruntime",
               "--sweep-step", "profile", "--vary", "profile.runs=5,7", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert [c["status"] for c in report["cells"]] == ["FINISHED", "FINISHED"]
    return root, report


def test_a_sweep_reruns_as_a_whole_from_the_store(swept: tuple[Path, dict[str, Any]]) -> None:
    root, first = swept
    (root / "m.onnx").unlink()  # the rerun takes the model from the store, by content
    done = hub(root, "-q", "runs", "rerun", first["run_id"], "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    again = result["sweep"]
    assert result["original"] == first["run_id"] and again["run_id"] != first["run_id"]
    assert [c["label"] for c in again["cells"]] == [c["label"] for c in first["cells"]]
    assert [c["status"] for c in again["cells"]] == ["FINISHED", "FINISHED"]
    assert "on the recorded image" in result["image"]
    assert len(result["summary"]) == 2 and all("-> median" in s for s in result["summary"])
    record = shown(root, again["run_id"])
    assert record["run_type"] == "SWEEP" and record["tags"]["rerun_of"] == first["run_id"]
    cells = [c["run_id"] for c in again["cells"]]
    assert all(shown(root, cell)["parent_run_id"] == again["run_id"] for cell in cells)


def test_a_sweep_with_a_damaged_stored_model_is_refused(swept: tuple[Path, dict[str, Any]]) -> None:
    root, first = swept
    for stored in (root / ".hub" / "artifacts").glob("*/m.onnx"):
        stored.chmod(0o644)
        stored.write_bytes(b"damaged")
    before = hub(root, "runs", "list", "--json").stdout
    done = hub(root, "runs", "rerun", first["run_id"])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "has no stored copy of m.onnx" in done.stderr.strip().splitlines()[-1]
    assert hub(root, "runs", "list", "--json").stdout == before  # nothing ran
