"""Profiles on the inputs users run, and the regression gate, through the real `hub` entry
point against the real ONNX Runtime image.

- `--input` feeds the profiler: a dynamic-shape model profiled at two sizes records both shapes,
  and the larger one is slower; a model whose graph fails on 1-sized dynamic dimensions (a
  reflect Pad) profiles with `--input` (and fails on random inputs).
- `hub runs compare A B --max-regression 100% --min-effect 10%`: two profiles of the same model
  are not flagged; a profile of a model with 4x the layers (~6x the work) is significant and
  flagged, with exit code 5. The limits are wide because two profiles of one model minutes
  apart on a loaded 2-core machine were seen up to 23 % apart here (and a ~25 us model 48 %
  apart in CI): machine drift between runs, which the samples of one run cannot show. Where
  the recorded conditions show the machine was busy, the gate answers "not comparable" (exit
  7) instead, and the slower model is judged with `--allow-incomparable`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
EXIT_REGRESSION = 5
EXIT_INCOMPARABLE = 7


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def conv_stack(path: Path, layers: int, dynamic: bool = False) -> Path:
    """image float32[1,3,H,W] -> `layers` x (Conv 3x3, 16 channels + Relu) -> GlobalAveragePool."""
    rng = np.random.default_rng(layers)
    nodes, inits, source, channels = [], [], "image", 3
    for i in range(layers):
        weight = rng.standard_normal((16, channels, 3, 3)).astype(np.float32) * 0.1
        inits.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("Conv", [source, f"w{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        source, channels = f"r{i}", 16
    nodes.append(helper.make_node("GlobalAveragePool", [source], ["pooled"]))
    dims: list[Any] = [1, 3, "H", "W"] if dynamic else [1, 3, 64, 64]
    graph = helper.make_graph(
        nodes,
        "conv_stack",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, 16, 1, 1])],
        initializer=inits,
    )
    return _save(graph, path)


def reflect_pad(path: Path) -> Path:
    """audio float32[1,T] -> reflect Pad of 4 on T -> ReduceMean: fails when T <= 4."""
    pads = numpy_helper.from_array(np.array([0, 4, 0, 4], dtype=np.int64), "pads")
    nodes = [
        helper.make_node("Pad", ["audio", "pads"], ["padded"], mode="reflect"),
        helper.make_node("ReduceMean", ["padded"], ["level"], axes=[1]),
    ]
    graph = helper.make_graph(
        nodes,
        "reflect_pad",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "T"])],
        [helper.make_tensor_value_info("level", TensorProto.FLOAT, [1, 1])],
        initializer=[pads],
    )
    return _save(graph, path)


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )


def profile(cwd: Path, *args: str) -> dict[str, Any]:
    result = hub("exec", "profile", "onnxruntime", *args, "--json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    (tmp_path / "hub.toml").write_text('[project]\nname = "profile-inputs"\n')
    return tmp_path


def test_input_shapes_reach_the_profiler(project: Path) -> None:
    conv_stack(project / "dyn.onnx", layers=2, dynamic=True)
    rng = np.random.default_rng(0)
    for name, side in (("small", 32), ("large", 192)):
        image = rng.standard_normal((1, 3, side, side)).astype(np.float32)
        np.savez(project / f"{name}.npz", image=image)
    small = profile(project, "dyn.onnx", "--input", "small.npz", "--set", "runs=200")
    large = profile(project, "dyn.onnx", "--input", "large.npz", "--set", "runs=200")
    assert small["shapes"]["image"]["shape"] == [1, 3, 32, 32]
    assert large["shapes"]["image"]["shape"] == [1, 3, 192, 192]
    assert small["shapes"]["image"]["dtype"] == "float32"
    # 36x the pixels: far slower, whatever the machine's noise
    assert large["latency_ms"]["median"] > 4 * small["latency_ms"]["median"]


def test_a_model_that_fails_on_one_sized_dims_profiles_with_input(project: Path) -> None:
    reflect_pad(project / "pad.onnx")
    random = hub("exec", "profile", "onnxruntime", "pad.onnx", cwd=project)
    assert random.returncode != 0  # T = 1 cannot be reflect-padded by 4
    assert "Traceback" not in random.stderr
    np.savez(project / "audio.npz", audio=np.linspace(-1, 1, 16000, dtype=np.float32)[None])
    report = profile(project, "pad.onnx", "--input", "audio.npz", "--set", "runs=50")
    assert report["status"] == "FINISHED"
    assert report["shapes"]["audio"]["shape"] == [1, 16000]


def test_the_regression_gate(project: Path) -> None:
    conv_stack(project / "base.onnx", layers=2)
    conv_stack(project / "slower.onnx", layers=8)
    runs = ("--set", "runs=300")
    first = profile(project, "base.onnx", *runs)["run_id"]
    again = profile(project, "base.onnx", *runs)["run_id"]
    slower = profile(project, "slower.onnx", *runs)["run_id"]

    gate = ("--max-regression", "100%", "--min-effect", "10%", "--json")
    same = hub("runs", "compare", first, again, *gate, cwd=project)
    # On a loaded machine (other processes above 25 % of the CPUs while either profile ran) the
    # gate says "not comparable" (exit 7) rather than judging the drift between the two runs.
    assert same.returncode in (0, EXIT_INCOMPARABLE), same.stdout + same.stderr
    compared = json.loads(same.stdout)
    verdict = compared["latency"]
    if same.returncode == EXIT_INCOMPARABLE:
        assert compared["comparability"]["reasons"], compared["comparability"]
    else:  # two sequential runs of one model may drift past 10 % (what `hub exec ab` is for),
        # never past the 2x gate
        assert verdict["regressed"] is False, verdict
    assert verdict["min_effect"] == 0.1

    worse = hub("runs", "compare", first, slower, *gate, "--allow-incomparable", cwd=project)
    assert worse.returncode == EXIT_REGRESSION, worse.stderr
    latency = json.loads(worse.stdout)["latency"]
    assert latency["regressed"] is True and latency["significant"] is True
    assert latency["median"]["delta_pct"] > 100

    help_text = hub("--help", cwd=project).stdout
    assert f"{EXIT_REGRESSION}  `hub runs compare --max-regression`" in help_text
