"""`hub exec ab` refuses bad input in one line with exit 2, before anything runs (real `hub`
entry point; no Docker needed, nothing here reaches a container)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.toolchains.tensorrt.gpu import detect_gpu

HUB = str(Path(sys.executable).with_name("hub"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hub.toml").write_text('[project]\nname = "ab-cli"\n')
    (tmp_path / "a.onnx").write_bytes(b"not really a model")
    (tmp_path / "b.onnx").write_bytes(b"not really a model")
    (tmp_path / "a.trt").write_bytes(b"not really an engine")
    (tmp_path / "b.trt").write_bytes(b"not really an engine")
    (tmp_path / "x.npz").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ab", "onnxruntime", "a.onnx"], "needs RUNTIME A B"),
        (["ab", "onnxruntime", "a.onnx", "gone.onnx"], "gone.onnx not found"),
        (["ab", "onnxruntime", "a.onnx", "."], "is a directory"),
        (["ab", "tflite", "a.onnx", "b.onnx"], "tflite runs .tflite models"),
        (["ab", "tensorrt", "a.onnx", "b.onnx"], "not a TensorRT engine"),
        (["ab", "tensorrt", "a.trt", "b.trt", "--input", "x.npz"], "tensorrt uses random inputs"),
        (["ab", "tensorrt", "a.trt", "gone.trt"], "gone.trt not found"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "3"], "at least 6"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "10001"], "at most 10000"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "runs=5"], "not an option"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "block_ms=x"], "whole number"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "seed=-1"], "at least 0"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "min_effect=150%"], "below 100%"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--max-regression", "x"], "percentage"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--from-run", "latest"], "--from-run is for"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--input", "no.npz"], "no.npz not found"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--device", "nope"], "'nope' not in"),
        (["profile", "onnxruntime", "a.onnx", "b.onnx"], "unrecognized argument: b.onnx"),
        (["profile", "onnxruntime", "a.onnx", "--rounds", "9"], "--rounds is for hub exec ab;"),
        (["invoke", "onnxruntime", "a.onnx", "--max-regression", "5%"], "is for hub exec ab;"),
    ],
)
def test_bad_input_is_one_line_exit_2(project: Path, args: list[str], message: str) -> None:
    result = subprocess.run(
        [HUB, "exec", *args], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hub: error:"), result.stderr
    assert message in lines[0]
    assert result.stdout == ""
    assert not (project / ".hub" / "runs").exists() or not any((project / ".hub/runs").iterdir())


@pytest.mark.skipif(detect_gpu().visible, reason="checks the no-GPU path; this host has a GPU")
def test_tensorrt_ab_without_a_gpu_is_one_line_exit_3(project: Path) -> None:
    """As `hub exec profile tensorrt` without a GPU: GpuUnavailableError's exit code 3, one
    line, and nothing recorded or started."""
    result = subprocess.run(
        [HUB, "exec", "ab", "tensorrt", "a.trt", "b.trt"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hub: error:"), result.stderr
    assert "NVIDIA GPU" in lines[0] and "nothing was started" in lines[0]
    assert not (project / ".hub" / "runs").exists() or not any((project / ".hub/runs").iterdir())
