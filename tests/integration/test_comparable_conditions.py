"""`hub runs compare` of two real ONNX Runtime profiles whose recorded conditions differ, and
`--set until_stable=true`, through the real `hub` entry point and the real ONNX Runtime image.

Test hook: the machine's governor and other processes' load cannot be changed from a test, so
after profiling, the test rewrites some `conditions.*` entries of the runs' stored environment
through the run store's own API (`RunStore.log_environment`): the judged per-run figures are set
to calm values on both runs, then one run is given another governor, or a busy machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgehub.ops.project import open_project

pytestmark = pytest.mark.docker

HUB = str(Path(sys.executable).with_name("hub"))
EXIT_INCOMPARABLE = 7
CALM = {
    "conditions.other_cpu_share": "0.01",
    "conditions.temp_max_c": "40.0",
    "conditions.temp_max_c_end": "40.0",
}


def conv_model(path: Path) -> None:
    """image float32[1,3,64,64] -> Conv 3x3 (16 channels) -> Relu."""
    weight = np.random.default_rng(0).standard_normal((16, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["image", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["out"]),
        ],
        "conv",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16, 64, 64])],
        initializer=[numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )


def set_conditions(project: Path, run_id: str, values: dict[str, str]) -> None:
    """The test hook: rewrite entries of a run's stored environment."""
    store = open_project(str(project / "hub.toml")).store()
    try:
        store.log_environment(run_id, values)
    finally:
        store.close()


def test_profiles_under_different_conditions_are_not_comparable(
    tmp_path: Path, ort_image: str
) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "conditions"\n')
    conv_model(tmp_path / "model.onnx")
    ids = []
    for _ in range(2):
        done = hub("exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=100", "--json",
                   cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["run_id"])
    a, b = ids
    shown = json.loads(hub("runs", "show", a, "--json", cwd=tmp_path).stdout)
    assert "conditions.cpu_model" in shown["environment"]  # the real probe recorded them
    for run_id in ids:
        set_conditions(tmp_path, run_id, {**CALM, "conditions.governor": "performance"})
    gate = ("--max-regression", "300%", "--json")

    same = hub("runs", "compare", a, b, *gate, cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert json.loads(same.stdout)["comparability"]["comparable"] is True

    set_conditions(tmp_path, b, {"conditions.governor": "powersave"})
    other = hub("runs", "compare", a, b, *gate, cwd=tmp_path)
    assert other.returncode == EXIT_INCOMPARABLE, other.stdout + other.stderr
    found = json.loads(other.stdout)["comparability"]
    assert found["comparable"] is False
    assert found["reasons"] == ["different frequency governor: 'performance' vs 'powersave'"]
    text = hub("runs", "compare", a, b, "--max-regression", "300%", cwd=tmp_path)
    assert text.returncode == EXIT_INCOMPARABLE and "Traceback" not in text.stderr
    assert "NOT COMPARABLE" in text.stdout and "--allow-incomparable" in text.stdout
    allowed = hub("runs", "compare", a, b, *gate, "--allow-incomparable", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert json.loads(allowed.stdout)["latency"]["regressed"] is False
    plain = hub("runs", "compare", a, b, cwd=tmp_path)  # no gate: numbers and the warning
    assert plain.returncode == 0 and "NOT COMPARABLE" in plain.stdout

    set_conditions(tmp_path, b, {"conditions.governor": "performance",
                                 "conditions.other_cpu_share": "0.6"})  # fmt: skip
    busy = hub("runs", "compare", a, b, *gate, cwd=tmp_path)
    assert busy.returncode == EXIT_INCOMPARABLE, busy.stdout + busy.stderr
    reasons = json.loads(busy.stdout)["comparability"]["reasons"]
    assert reasons == ["other processes took 60% of the CPUs during run B (more than 25%)"]

    assert "7  `hub runs compare --max-regression`" in hub("--help", cwd=tmp_path).stdout

    # a hostile device's value (terminal escapes, a newline) is shown escaped, never raw
    set_conditions(tmp_path, b, {"conditions.governor": "\x1b[2J\nperformance"})
    for argv in (("runs", "compare", a, b), ("runs", "show", b)):
        shown = hub(*argv, cwd=tmp_path)
        assert shown.returncode == 0 and "\x1b" not in shown.stdout
        assert "\\x1b[2J\\nperformance" in shown.stdout


def test_until_stable_records_whether_it_converged(tmp_path: Path, ort_image: str) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "stable"\n')
    conv_model(tmp_path / "model.onnx")
    base = ("exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=20",
            "--set", "until_stable=true", "--json")  # fmt: skip
    # 900 %: agrees within a few windows, however busy the shared machine is (how many is the
    # machine's; no limit on others' share)
    loose = hub(*base, "--set", "stable_tolerance=9", "--set", "stable_max_other_share=1",
                cwd=tmp_path)  # fmt: skip
    assert loose.returncode == 0, loose.stderr
    report = json.loads(loose.stdout)
    metrics = report["metrics"]
    assert metrics["stable_converged"] == 1 and metrics["stable_windows"] >= 3, metrics
    assert metrics["stable_spread_pct"] <= 900, metrics
    assert report["params"]["until_stable"] is True
    strict = hub(*base, "--set", "stable_tolerance=0", "--set", "stable_max_s=0.5", cwd=tmp_path)
    assert strict.returncode == 0, strict.stderr  # not converging does not fail the run
    report = json.loads(strict.stdout)
    assert report["status"] == "FINISHED" and report["metrics"]["stable_converged"] == 0
    assert "not stable within 0.5 s" in strict.stderr
    bad = hub(*base, "--set", "stable_tolerance=-1", cwd=tmp_path)
    assert bad.returncode == 2 and "stable_tolerance" in bad.stderr
    assert "Traceback" not in bad.stderr
