"""Numbers that enter a verdict are finite and positive, through the real `hub` entry point.

- Profile runs whose stored latency samples hold NaN, inf, zero, negative or text values (as a
  hostile device or an edited store leaves them; recorded here through the Python API the
  way the tracking tests record profiles) are refused by `hub runs compare` and its
  regression gate in one line naming the run and what is wrong, on either side; so are the
  stored round ratios of an A/B run, and the TUI's comparison says the same.
- A recorded condition that should be a number and is NaN makes the runs not comparable.
- On the SSH test device whose Python rewrites the agent's samples to NaN or text (a hostile
  board), the profile fails in one line and its run is recorded FAILED.
- `hub exec ab ... --timeout 5` stops the whole comparison near 5 s: exit 3, the A/B run
  FAILED "timed out", the device's lease free again and the container gone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgehub.core import HubContext, hub_run
from edgehub.errors import EXIT_INCOMPARABLE
from edgehub.tracking import RunRecord, RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
NAN = float("nan")


def hub(*args: str, cwd: Path, **env: str | None) -> subprocess.CompletedProcess[str]:
    """`hub` ARGS in ``cwd``; ``env`` entries change the environment (None: removed)."""
    full = {**os.environ, **env}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in full.items() if v is not None},
    )  # fmt: skip


def one_error_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    lines = [x for x in result.stderr.splitlines() if x.startswith("hub: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def runs(project: Path) -> list[RunRecord]:
    store = RunStore(project / ".hub")
    try:
        return store.list_runs(limit=None)
    finally:
        store.close()


@hub_run("PROFILE", name="stored-profile")
def stored_profile(ctx: HubContext, samples_us: list[Any], conditions: dict[str, str]) -> None:
    ctx.client.log_param("$runtime", "onnxruntime")
    ctx.client.log_environment({f"conditions.{k}": v for k, v in conditions.items()})
    path = ctx.artifact_dir / "profile.json"
    path.write_text(json.dumps({"samples_us": samples_us}))  # NaN and Infinity as JSON writes
    ctx.client.log_artifact(path, name="output_file")


def _samples(scale: float = 1.0, seed: int = 3) -> list[Any]:
    rng = np.random.default_rng(seed)
    values: list[Any] = (scale * (800 + rng.gamma(2.0, 20.0, size=200))).round(3).tolist()
    return values


def _record(project: Path, samples: list[Any], conditions: dict[str, str] | None = None) -> str:
    with HubContext(project_name="p", artifact_base_dir=project / ".hub") as ctx:
        stored_profile(ctx, samples, conditions or {})
        return ctx.store.list_runs(limit=1)[0].run_id


@pytest.fixture
def project(_isolated_cwd: Path) -> Path:
    (_isolated_cwd / "hub.toml").write_text('[project]\nname = "p"\nstore = ".hub"\n')
    return _isolated_cwd


def _with(value: Any, count: int = 1) -> list[Any]:
    samples = _samples(seed=4)
    samples[5 : 5 + count] = [value] * count
    return samples


BAD = {
    "NaN": (_with(NAN), "non-finite latency samples (NaN; 1 of 200)"),
    "all NaN": ([NAN] * 200, "non-finite latency samples (NaN; 200 of 200)"),
    "inf": (_with(float("inf"), 3), "non-finite latency samples (inf; 3 of 200)"),
    "-inf": (_with(float("-inf")), "non-finite latency samples (-inf; 1 of 200)"),
    "zero": ([0.0] * 200, "non-positive latency samples (0; 200 of 200)"),
    "negative": ([-s for s in _samples()], "non-positive latency samples (-"),
    "text": (_with("abc"), "non-numeric latency samples ('abc'; 1 of 200)"),
    "null": (_with(None), "non-numeric latency samples (a NoneType; 1 of 200)"),
    "bool": (_with(True), "non-numeric latency samples (True; 1 of 200)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_compare_refuses_a_run_whose_samples_cannot_enter_a_verdict(
    project: Path, case: str
) -> None:
    samples, problem = BAD[case]
    good = _record(project, _samples())
    bad = _record(project, samples)
    for a, b in ((good, bad), (bad, good)):
        for gate in ((), ("--max-regression", "5%"), ("--json",)):
            line = one_error_line(hub("runs", "compare", a, b, *gate, cwd=project), 2)
            assert f"run {bad[:8]} (PROFILE stored-profile) has {problem}" in line, line
            assert line.endswith("it cannot be compared"), line
    # the good runs still compare, and `runs show` of the bad one still works
    again = _record(project, _samples(seed=5))
    result = hub("runs", "compare", good, again, "--max-regression", "5%", cwd=project)
    assert result.returncode == 0 and "within 5%" in result.stdout, result.stderr
    shown = hub("runs", "show", bad, cwd=project)
    assert shown.returncode == 0 and "latency percentiles" not in shown.stdout, shown.stderr


def test_stored_round_ratios_of_an_ab_run_must_be_finite_and_positive(project: Path) -> None:
    with (
        HubContext(project_name="p", artifact_base_dir=project / ".hub") as ctx,
        ctx.open_run("AB", "ab a vs b") as parent,
    ):
        ids = {}
        for side in ("a", "b"):
            with ctx.open_run("PROFILE", f"ab {side}", parent_run_id=parent.run_id) as run:
                path = ctx.artifact_dir / "profile.json"
                path.write_text(json.dumps({"samples_us": _samples(seed=len(side))}))
                ctx.client.log_artifact(path, name="output_file")
                ids[side] = run.run_id
        ctx.client.log_params({"run_a": ids["a"], "run_b": ids["b"], "seed": 1})
        rounds = [{"ratio": r} for r in [1.01, 0.99, NAN, 1.0, 1.02, 0.98, 1.0, -1.0]]
        summary = ctx.artifact_dir / "ab.json"
        summary.write_text(json.dumps({"rounds": rounds}))
        ctx.client.log_artifact(summary, name="ab")
    for a, b in ((ids["a"], ids["b"]), (ids["b"], ids["a"])):
        result = hub("runs", "compare", a, b, "--max-regression", "5%", cwd=project)
        line = one_error_line(result, 2)
        expected = f"A/B run {parent.run_id[:8]} has non-finite round ratios B/A (NaN; 1 of 8)"
        assert expected in line, line


def test_a_condition_recorded_as_nan_makes_the_runs_not_comparable(project: Path) -> None:
    a = _record(project, _samples(), {"other_cpu_share": "0.01", "cpu_model": "x"})
    b = _record(project, _samples(seed=5), {"other_cpu_share": "nan", "cpu_model": "x"})
    result = hub("runs", "compare", a, b, "--max-regression", "5%", cwd=project)
    assert result.returncode == EXIT_INCOMPARABLE, result.stdout + result.stderr
    assert "run B recorded other_cpu_share = 'nan', not a finite number" in result.stdout


def test_the_tui_comparison_refuses_the_same_runs_in_the_same_words(project: Path) -> None:
    from edgehub.ops.project import open_project
    from edgehub.ops.runs import compare_runs
    from edgehub.tui.runs_data import comparison_sections, run_detail, verdict_lines

    good = _record(project, _samples())
    bad = _record(project, _with("abc"))
    hub_project = open_project(project / "hub.toml")
    found = compare_runs(hub_project, good, bad, strict=False)  # as the TUI's Compare asks
    assert "latency" not in comparison_sections(found)
    verdict = verdict_lines(found)[0]  # what decides first
    assert verdict.startswith(f"run {bad[:8]} (PROFILE stored-profile) has non-numeric")
    assert verdict.endswith("it cannot be compared")
    assert run_detail(hub_project, bad).samples_us == []  # no histogram of text


# -- a hostile board: its Python rewrites the samples the agent wrote -------------------------
DEVICE_PYTHON = "/opt/device/bin/python3"
REWRITE = """
import json, sys
path, value = sys.argv[1], json.loads(sys.argv[2])
document = json.load(open(path))
document["samples_us"][3] = value
open(path, "w").write(json.dumps(document))
"""


def _hostile_board(device: Any, name: str, value: str) -> str:
    python = f"/home/edge/{name}"
    script = (
        f'#!/bin/sh\n{DEVICE_PYTHON} "$@"\nstatus=$?\n'
        f"if [ -f out/profile.json ]; then {DEVICE_PYTHON} /home/edge/rewrite.py "
        f"out/profile.json '{value}'; fi\nexit $status\n"
    )
    device.exec("sh", "-c", "cat > /home/edge/rewrite.py", stdin=REWRITE)
    device.exec("sh", "-c", f"cat > {python}; chmod +x {python}", stdin=script)
    return python


@pytest.mark.ssh
@pytest.mark.parametrize(
    ("value", "problem"),
    [("NaN", "non-finite latency samples (samples_us) (NaN; 1 of 20)"),
     ('"fast"', "non-numeric latency samples (samples_us) ('fast'; 1 of 20)")],
)  # fmt: skip
def test_a_board_that_writes_bad_samples_fails_its_profile(
    device: Any, tmp_path: Path, value: str, problem: str
) -> None:
    python = _hostile_board(device, "bad-samples-python", value)
    folder = tmp_path / "proj"
    (folder / "home").mkdir(parents=True)
    (folder / "hub.toml").write_text(
        '[project]\nname = "answers"\n\n[devices.board]\nprovider = "ssh"\n'
        f'[devices.board.agent]\npython = "{python}"\nresident = false\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    env = {"HOME": str(folder / "home"), "SSH_AUTH_SOCK": None}
    args = ("exec", "profile", "onnxruntime", "model.onnx", "--device", "board")
    done = hub(*args, "--set", "runs=20", cwd=folder, **env)
    line = one_error_line(done, 4)
    assert f"ort.profile on device 'board' returned {problem} in out/profile.json" in line, line
    assert "the measurement is invalid" in line
    (run,) = runs(folder)
    assert run.status == "FAILED" and problem in (run.error or "")


# -- `hub exec ab --timeout` --------------------------------------------------------------------
def _containers_of(pid: int) -> list[str]:
    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return listed.stdout.split()


@pytest.mark.docker
def test_ab_timeout_stops_the_comparison_and_lets_the_device_go(
    project: Path, ort_image: str
) -> None:
    from edgehub.acquire.boards import board_key
    from edgehub.acquire.leases import lease_holder
    from edgehub.config.devices import to_device
    from edgehub.ops.project import open_project

    shutil.copy(MODEL, project / "a.onnx")
    shutil.copy(MODEL, project / "b.onnx")
    lease_dir = Path(os.environ["EDGEHUB_LEASE_DIR"])
    board = board_key(to_device(open_project(project / "hub.toml").config, "local"))
    started = time.monotonic()
    process = subprocess.Popen(
        [HUB, "exec", "ab", "onnxruntime", "a.onnx", "b.onnx", "--rounds", "10000",
         "--timeout", "5"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    held = containers = False
    while process.poll() is None and time.monotonic() - started < 120:
        holder = lease_holder(board, lease_dir)
        held = held or (holder is not None and holder.pid == process.pid)
        containers = containers or bool(_containers_of(process.pid))
        time.sleep(0.2)
    out, err = process.communicate(timeout=60)
    took = time.monotonic() - started
    line = one_error_line(
        subprocess.CompletedProcess(process.args, process.returncode, out, err), 3
    )
    assert "timed out after 5 s" in line, line
    assert took < 60, f"--timeout 5 took {took:.0f} s"  # 10000 rounds take over 10 minutes
    assert held and containers, "the comparison never held the device or ran its container"
    assert lease_holder(board, lease_dir) is None
    deadline = time.monotonic() + 30
    while _containers_of(process.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _containers_of(process.pid) == []
    (run,) = runs(project)
    assert run.run_type == "AB" and run.status == "FAILED", run
    assert "timed out after 5 s" in (run.error or "")
