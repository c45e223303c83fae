"""`hub exec ab onnxruntime A B` through the real `hub` entry point against the real ONNX Runtime
image: both models in one agent process, timed in alternating blocks.

What holds on a loaded machine is asserted, not what a quiet one would show: a model against a
copy of itself is not a regression and its median ratio stays within 0.9-1.1; a model with twice
the MatMuls is flagged with exit code 5. The comparison run and its two PROFILE children (their
``parent_run_id``) are in the store, and the children compare with `hub runs compare`. Each
measurement records the conditions it ran under (``conditions.*`` in the run's environment).
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

pytestmark = pytest.mark.docker


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    (tmp_path / "hub.toml").write_text('[project]\nname = "ab"\n')
    matmul_chain(tmp_path / "base.onnx", 16)
    shutil.copy(tmp_path / "base.onnx", tmp_path / "same.onnx")
    matmul_chain(tmp_path / "double.onnx", 32)
    return tmp_path


def _ab(project: Path, b: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    result = hub(
        "exec",
        "ab",
        "onnxruntime",
        "base.onnx",
        b,
        "--rounds",
        "20",
        "--json",
        *extra,
        cwd=project,
    )
    report = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, report, result.stderr


def test_a_model_against_itself_is_no_regression(project: Path) -> None:
    # two sessions of one model can differ by a few percent for as long as they live (where
    # their memory landed), and a busy machine widens that: the gate is 10 %, the promise
    # being that the same model is never called a real regression
    code, report, stderr = _ab(project, "same.onnx", "--max-regression", "10%")
    assert code == 0, stderr
    verdict = report["verdict"]
    assert verdict["regressed"] is False, verdict["verdict"]
    assert 0.9 <= verdict["median_ratio"] <= 1.1, verdict["verdict"]
    assert verdict["rounds"] == 20 and len(report["rounds"]) == 20
    assert {r["order"] for r in report["rounds"]} <= {"AB", "BA"}

    parent = show(project, report["run_id"])
    assert parent["run_type"] == "AB" and parent["status"] == "FINISHED"
    assert parent["params"]["seed"] == report["seed"]
    assert parent["params"]["run_a"] == report["run_a"]
    for side in ("run_a", "run_b"):
        child = show(project, report[side])
        assert child["run_type"] == "PROFILE" and child["status"] == "FINISHED"
        assert child["parent_run_id"] == report["run_id"]
        assert child["metrics"]["runs"] == 20 * report["runs_per_block"][side[-1]]
        assert {"conditions.loop_s", "conditions.other_cpu_share"} <= set(child["environment"])
    # what the rounds ran under, read in the container from /proc and /sys
    conditions = {k: v for k, v in parent["environment"].items() if k.startswith("conditions.")}
    assert float(conditions["conditions.loop_s"]) > 0
    assert 0 <= float(conditions["conditions.other_cpu_share"]) <= 1
    assert int(conditions["conditions.usable_cpus"]) >= 1


def test_a_profile_records_its_conditions(project: Path) -> None:
    result = hub(
        "exec", "profile", "onnxruntime", "base.onnx", "--set", "runs=50", "--json", cwd=project
    )
    assert result.returncode == 0, result.stderr
    assert "conditions: other processes" in result.stderr
    environment = show(project, json.loads(result.stdout)["run_id"])["environment"]
    assert 0 <= float(environment["conditions.other_cpu_share"]) <= 1
    assert float(environment["conditions.loop_s"]) > 0
    shown = hub("runs", "show", "latest", cwd=project).stdout
    assert "conditions.other_cpu_share" in shown


def test_a_model_with_twice_the_work_is_flagged(project: Path) -> None:
    code, report, stderr = _ab(project, "double.onnx", "--max-regression", "5%")
    assert code == EXIT_REGRESSION, stderr
    verdict = report["verdict"]
    assert verdict["significant"] is True and verdict["regressed"] is True
    assert verdict["median_ratio"] > 1.3 and verdict["slower"] > verdict["faster"]
    assert "REGRESSION" in stderr  # the verdict is logged as well
    assert "(or `hub exec ab`)" in hub("--help", cwd=project).stdout

    # the children are profile runs (runs compare reads their samples), and their comparison
    # is decided by the A/B's paired rounds, in either order
    children = (report["run_a"], report["run_b"])
    compared = hub("runs", "compare", *children, "--max-regression", "5%", "--json", cwd=project)
    assert compared.returncode == EXIT_REGRESSION, compared.stderr
    both = json.loads(compared.stdout)
    assert both["latency"]["median"]["delta_pct"] > 30
    assert both["paired"]["regressed"] is True and both["paired"]["rounds"] == 20
    assert both["paired"]["median_ratio"] == pytest.approx(verdict["median_ratio"])
    swapped = hub("runs", "compare", *children[::-1], "--max-regression", "5%", cwd=project)
    assert swapped.returncode == 0, swapped.stderr
    assert "faster than A" in swapped.stdout and "paired rounds" in swapped.stdout

    # without --max-regression the same difference is reported, exit 0
    code, plain, stderr = _ab(project, "double.onnx", "--set", "seed=5")
    assert code == 0, stderr
    assert plain["seed"] == 5 and plain["verdict"]["significant"] is True
    assert plain["verdict"]["regressed"] is False


@pytest.mark.ssh
def test_ab_on_an_ssh_device(device: Any, tmp_path: Path) -> None:
    """The same comparison on the SSH test device: its own Python and onnxruntime, one agent."""
    folder = tmp_path / "ssh"
    folder.mkdir()
    (folder / "hub.toml").write_text(
        '[project]\nname = "ab-ssh"\n\n[devices.board]\nprovider = "ssh"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n\n'
        '[devices.board.agent]\npython = "/opt/device/bin/python3"\n'
    )
    matmul_chain(folder / "base.onnx", 16)
    matmul_chain(folder / "double.onnx", 32)
    result = hub(
        "exec", "ab", "onnxruntime", "base.onnx", "double.onnx", "--device", "board",
        "--rounds", "12", "--max-regression", "5%", "--json", cwd=folder,
    )  # fmt: skip
    assert result.returncode == EXIT_REGRESSION, result.stderr
    report = json.loads(result.stdout)
    assert report["device"] == "board" and report["verdict"]["median_ratio"] > 1.3
    parent = show(folder, report["run_id"])
    assert parent["device"] == "board" and "conditions.loop_s" in parent["environment"]
    assert show(folder, report["run_b"])["parent_run_id"] == report["run_id"]
