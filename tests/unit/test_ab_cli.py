"""`hub exec ab` refuses bad input in one line with exit 2, before anything runs (real `hub`
entry point; no Docker needed, nothing here reaches a container)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HUB = str(Path(sys.executable).with_name("hub"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "hub.toml").write_text('[project]\nname = "ab-cli"\n')
    (tmp_path / "a.onnx").write_bytes(b"not really a model")
    (tmp_path / "b.onnx").write_bytes(b"not really a model")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ab", "onnxruntime", "a.onnx"], "needs RUNTIME A B"),
        (["ab", "onnxruntime", "a.onnx", "gone.onnx"], "gone.onnx not found"),
        (["ab", "onnxruntime", "a.onnx", "."], "is a directory"),
        (["ab", "tflite", "a.onnx", "b.onnx"], "compares .tflite models"),
        (["ab", "tensorrt", "a.onnx", "b.onnx"], "supports onnxruntime, tflite"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "3"], "at least 6"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "10001"], "at most 10000"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "runs=5"], "not an option"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "block_ms=x"], "whole number"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "seed=-1"], "at least 0"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--set", "min_effect=150%"], "below 100%"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--max-regression", "x"], "percentage"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--from-run", "latest"], "not apply to ab"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--input", "no.npz"], "no.npz not found"),
        (["ab", "onnxruntime", "a.onnx", "b.onnx", "--device", "nope"], "'nope' not in"),
        (["profile", "onnxruntime", "a.onnx", "b.onnx"], "takes one MODEL"),
        (["profile", "onnxruntime", "a.onnx", "--rounds", "9"], "hub exec ab only"),
        (["invoke", "onnxruntime", "a.onnx", "--max-regression", "5%"], "hub exec ab only"),
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
