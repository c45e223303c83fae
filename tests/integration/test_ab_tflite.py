"""`hub exec ab tflite A.tflite B.tflite` through the real `hub` entry point and the real tflite
image: both models in one agent process (two LiteRT interpreters each), alternating blocks, the
same verdict code as ONNX Runtime's A/B.

The models are a MatMul chain and one with twice the MatMuls, compiled here with `hub exec
compile tflite`. Asserted is what holds on a loaded machine: a model against a copy of itself
is no regression (ratio within 0.9-1.1); twice the work is flagged with exit code 5. The
children are TFLiteProfiler PROFILE runs under the AB run. An ONNX model is refused in one line.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from ab_cli import EXIT_REGRESSION, hub
from agent_models import matmul_chain

pytestmark = pytest.mark.docker


def _compiled(project: Path, onnx_name: str, target: str) -> None:
    done = hub("exec", "compile", "tflite", onnx_name, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    shutil.copy(json.loads(done.stdout)["artifacts"]["path"], project / target)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from edgehub import images

    if not images.image_status("tflite").built:
        pytest.skip("needs the tflite image (hub images build tflite)")
    folder = tmp_path_factory.mktemp("ab-tflite")
    (folder / "hub.toml").write_text('[project]\nname = "ab-tflite"\n')
    matmul_chain(folder / "base.onnx", 16)
    matmul_chain(folder / "double.onnx", 32)
    _compiled(folder, "base.onnx", "base.tflite")
    _compiled(folder, "double.onnx", "double.tflite")
    shutil.copy(folder / "base.tflite", folder / "same.tflite")
    return folder


def _ab(project: Path, b: str) -> tuple[int, dict[str, Any], str]:
    done = hub("exec", "ab", "tflite", "base.tflite", b, "--rounds", "16", "--json",
               "--max-regression", "5%", cwd=project)  # fmt: skip
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def test_a_tflite_model_against_itself_is_no_regression(project: Path) -> None:
    code, report, stderr = _ab(project, "same.tflite")
    assert code == 0, stderr
    verdict = report["verdict"]
    assert verdict["regressed"] is False and 0.9 <= verdict["median_ratio"] <= 1.1, verdict
    assert "interpreters per model" in stderr
    shown = hub("runs", "show", report["run_b"], "--json", cwd=project)
    child = json.loads(shown.stdout)
    assert child["component"] == "TFLiteProfiler" and child["parent_run_id"] == report["run_id"]


def test_twice_the_work_in_tflite_is_flagged(project: Path) -> None:
    code, report, stderr = _ab(project, "double.tflite")
    assert code == EXIT_REGRESSION, stderr
    assert report["verdict"]["regressed"] is True and report["verdict"]["median_ratio"] > 1.3


def test_an_onnx_model_is_refused_in_one_line(project: Path) -> None:
    done = hub("exec", "ab", "tflite", "base.onnx", "base.tflite", cwd=project)
    assert done.returncode == 2 and "tflite runs .tflite models" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1  # refused before anything ran
    (project / "x.npz").write_bytes(b"")
    given = hub("exec", "ab", "tflite", "base.tflite", "same.tflite", "--input", "x.npz",
                cwd=project)  # fmt: skip
    assert given.returncode == 2 and "tflite uses random inputs" in given.stderr
