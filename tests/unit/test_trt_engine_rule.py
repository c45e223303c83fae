"""The TensorRT engine rule, held once (`edgehub.agent.trt.engine_file`): the host providers and
the agent's ``trt.profile`` / ``trt.invoke`` refuse the same files with the same words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from edgehub.agent.trt.engine_file import engine_problem


@pytest.mark.parametrize("name", ["m.trt", "dir/M.ENGINE", "m.plan"])
def test_engines_pass(name: str) -> None:
    assert engine_problem(name) is None


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("dir/m.onnx", "m.onnx is an ONNX model, not a TensorRT engine"),
        ("m.bin", "m.bin is not a TensorRT engine (.engine, .plan, .trt)"),
        ("noext", "noext is not a TensorRT engine"),
    ],
)
def test_other_files_are_refused_in_one_line(name: str, words: str) -> None:
    problem = engine_problem(name)
    assert problem is not None and problem.startswith(words) and "\n" not in problem


@pytest.mark.parametrize("command", ["trt.profile", "trt.invoke"])
def test_the_agent_applies_the_same_rule_before_needing_a_gpu(tmp_path: Path, command: str) -> None:
    """The real agent entry point (no GPU here: the rule comes first, exit 2, no traceback)."""
    (tmp_path / "m.onnx").write_bytes(b"onnx")
    request = {"engine": "m.onnx", "log": "log.txt", "times_json": "t.json"}
    if command == "trt.invoke":
        request = {"engine": "m.onnx", "input": "i.npz", "output_json": "o.json", "log": "l"}
    (tmp_path / "request.json").write_text(json.dumps(request))
    result = subprocess.run(
        [sys.executable, "-m", "edgehub.agent", command, "--request", "request.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    payload = json.loads(result.stdout)
    assert payload["error"]["message"] == engine_problem("m.onnx")
    assert "Traceback" not in result.stderr
