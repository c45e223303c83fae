"""`hub exec ab tensorrt A.trt B.trt` on a real NVIDIA GPU, through the real `hub` entry point:
both engines deserialised once in one agent (the full tensorrt image), timed in alternating
blocks. An engine against a copy of itself is no regression; one with twice the MatMuls is
flagged with the documented exit code; the children are TensorRTProfiler PROFILE runs under the
AB run. Skipped (with the reason) where no GPU is visible, which is every machine of this
project's CI; the no-GPU refusal is tested in tests/unit/test_ab_cli.py and the agent's part
around a stand-in for the GPU in tests/unit/test_agent_trt_ab.py.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from ab_cli import EXIT_REGRESSION, hub, show
from agent_models import matmul_chain

from edgehub.toolchains.tensorrt.gpu import detect_gpu

GPU = detect_gpu()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.gpu,
    pytest.mark.skipif(not GPU.visible, reason=f"needs an NVIDIA GPU: {GPU.describe()}"),
]


def _engine(project: Path, onnx_name: str, target: str) -> None:
    done = hub("exec", "compile", "tensorrt", onnx_name, "--set", "target=current", "--json",
               cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shutil.copy(json.loads(done.stdout)["artifacts"]["path"], project / target)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from edgehub import images

    for runtime in ("tensorrt", "tensorrt-rtx"):
        if not images.image_status(runtime).built:
            pytest.skip(f"needs the {runtime} image (hub images build {runtime})")
    folder = tmp_path_factory.mktemp("ab-trt")
    (folder / "hub.toml").write_text('[project]\nname = "ab-trt"\n')
    matmul_chain(folder / "base.onnx", 16, size=512)
    matmul_chain(folder / "double.onnx", 32, size=512)
    _engine(folder, "base.onnx", "base.trt")
    _engine(folder, "double.onnx", "double.trt")
    shutil.copy(folder / "base.trt", folder / "same.trt")
    return folder


def _ab(project: Path, b: str) -> tuple[int, dict[str, Any], str]:
    done = hub("exec", "ab", "tensorrt", "base.trt", b, "--rounds", "16", "--json",
               "--max-regression", "5%", cwd=project)  # fmt: skip
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


def test_an_engine_against_itself_is_not_significant(project: Path) -> None:
    code, report, stderr = _ab(project, "same.trt")
    assert code == 0, stderr
    verdict = report["verdict"]
    assert verdict["regressed"] is False and 0.9 <= verdict["median_ratio"] <= 1.1, verdict
    assert "execution contexts per engine" in stderr
    child = show(project, report["run_b"])
    assert child["component"] == "TensorRTProfiler" and child["parent_run_id"] == report["run_id"]


def test_twice_the_work_on_the_gpu_is_flagged(project: Path) -> None:
    code, report, stderr = _ab(project, "double.trt")
    assert code == EXIT_REGRESSION, stderr
    assert report["verdict"]["regressed"] is True and report["verdict"]["median_ratio"] > 1.3
