"""Sweeps and device leases against the real Docker daemon and ONNX Runtime image.

Two hub.toml devices with the ``local`` provider and ``cpus = 1`` are two containers on one
Docker daemon: one board for the leases (`acquire.boards`), so their measurements take turns.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from edgehub.acquire.boards import board_key
from edgehub.acquire.leases import lease_holder
from edgehub.config.devices import to_device
from edgehub.errors import OperationCancelled
from edgehub.ops.cancel import Cancellation
from edgehub.ops.project import open_project
from edgehub.ops.sweep import CellResult, run_sweep
from edgehub.ops.sweep_grid import SweepGrid
from edgehub.tracking import RunRecord, RunStore

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
HUB_TOML = """[project]
name = "sweep-tests"

[devices.cpu1]
provider = "local"
[devices.cpu1.docker]
cpus = 1

[devices.cpu2]
provider = "local"
[devices.cpu2.docker]
cpus = 1
"""


@pytest.fixture
def project(tmp_path: Path, ort_image: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(HUB_TOML)
    shutil.copy(MODEL, folder / "a.onnx")
    shutil.copy(MODEL, folder / "b.onnx")
    (folder / "broken.onnx").write_bytes(b"this is not an ONNX model")
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    monkeypatch.chdir(folder)
    return folder


def _runs(project: Path) -> list[RunRecord]:
    store = RunStore(project / ".hub")
    try:
        return store.list_runs(limit=None)
    finally:
        store.close()


def _overlap(a: RunRecord, b: RunRecord) -> bool:
    assert a.ended_at is not None and b.ended_at is not None
    return a.started_at < b.ended_at and b.started_at < a.ended_at


def test_sweep_records_cells_one_board_at_a_time(project: Path) -> None:
    grid = SweepGrid(
        models=[project / "a.onnx", project / "broken.onnx"],
        devices=["cpu1", "cpu2"],
        vary={"profile.runs": ["20", "30"]},
    )
    seen: list[tuple[str, str]] = []
    report = run_sweep(
        open_project(project / "hub.toml"),
        grid,
        on_cell=lambda c: seen.append((c.label, c.status)),
    )
    assert report.status == "FINISHED" and len(report.cells) == 8
    good = [c for c in report.cells if c.model.endswith("a.onnx")]
    assert {c.status for c in good} == {"FINISHED"}
    for cell in good:
        assert cell.median_ms is not None and cell.p99_ms is not None
        assert cell.median_ms <= cell.p99_ms
        assert cell.cosine_similarity is not None and cell.cosine_similarity > 0.95
    bad = [c for c in report.cells if c.model.endswith("broken.onnx")]
    assert {c.status for c in bad} == {"FAILED"} and all(c.error for c in bad)
    assert ("a.onnx cpu1 onnxruntime profile.runs=20", "RUNNING") in seen

    runs = _runs(project)
    (parent,) = [r for r in runs if r.run_type == "SWEEP"]
    assert parent.status == "FINISHED" and parent.metrics["cells_failed"] == 4
    cells = {r.run_id: r for r in runs if r.run_type == "SWEEP_CELL"}
    assert len(cells) == 8 and {r.parent_run_id for r in cells.values()} == {parent.run_id}
    assert sorted(r.status for r in cells.values()) == ["FAILED"] * 4 + ["FINISHED"] * 4
    profiles = [r for r in runs if r.run_type == "PROFILE"]
    assert len(profiles) == 4 and {r.tags["sweep.cell"] for r in profiles} <= set(cells)
    assert {r.tags["sweep"] for r in profiles} == {parent.run_id}
    by_device: dict[str, list[RunRecord]] = {}
    for run in cells.values():
        by_device.setdefault(run.params["device"], []).append(run)
    for same in by_device.values():
        for i, a in enumerate(same):
            assert not any(_overlap(a, b) for b in same[i + 1 :]), "two cells on one device"
    for i, a in enumerate(profiles):  # cpu1 and cpu2 are one board (one Docker daemon)
        assert not any(_overlap(a, b) for b in profiles[i + 1 :]), "two measurements at once"


def test_resume_skips_finished_cells(project: Path) -> None:
    hub_project = open_project(project / "hub.toml")
    grid = SweepGrid(models=[project / "a.onnx"], devices=["cpu1"], step="profile")
    first = run_sweep(hub_project, grid)
    grid.models.append(project / "b.onnx")
    second = run_sweep(hub_project, grid, resume=True)
    reused, fresh = second.cells
    assert reused.reused_from == first.cells[0].run_id and reused.status == "FINISHED"
    assert fresh.reused_from is None and fresh.status == "FINISHED"
    assert sum(r.run_type == "PROFILE" for r in _runs(project)) == 2


def test_cancel_kills_running_cells_and_leaves_the_rest_not_started(project: Path) -> None:
    cancel = Cancellation()

    def on_cell(cell: CellResult) -> None:
        if cell.status == "RUNNING":
            threading.Timer(0.3, cancel.cancel).start()

    grid = SweepGrid(
        models=[project / "a.onnx", project / "b.onnx"],
        devices=["cpu1"],
        vary={"profile.runs": ["200000"]},
    )
    with pytest.raises(OperationCancelled):
        run_sweep(open_project(project / "hub.toml"), grid, cancel=cancel, on_cell=on_cell)
    runs = _runs(project)
    (parent,) = [r for r in runs if r.run_type == "SWEEP"]
    assert parent.status == "KILLED"
    assert "RUNNING" not in {r.status for r in runs}
    (cell,) = [r for r in runs if r.run_type == "SWEEP_CELL"]
    assert cell.status == "KILLED"
    saved = json.loads((parent.artifacts["sweep"].file_path).read_text())
    assert [c["status"] for c in saved["cells"]] == ["KILLED", "NOT_STARTED"]


def _hub(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [HUB, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_cli_sweep_json_and_failed_cell_exit_code(project: Path) -> None:
    (project / "grid.toml").write_text(
        '[sweep]\nstep = "profile"\nmodels = ["a.onnx", "broken.onnx"]\n'
        'devices = ["cpu1", "cpu2"]\n'
    )
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--json"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    statuses = {(Path(c["model"]).name, c["device"]): c["status"] for c in report["cells"]}
    assert statuses == {
        ("a.onnx", "cpu1"): "FINISHED",
        ("a.onnx", "cpu2"): "FINISHED",
        ("broken.onnx", "cpu1"): "FAILED",
        ("broken.onnx", "cpu2"): "FAILED",
    }
    table = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--resume"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "FINISHED (earlier)" in table.stdout and "median ms" in table.stdout


def test_cli_sweep_bad_grid_is_one_line(project: Path) -> None:
    (project / "grid.toml").write_text('[sweep]\nmodels = ["nope.onnx"]\n')
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml"], cwd=project, capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "nope.onnx not found" in done.stderr
    bad_option = subprocess.run(
        [HUB, "exec", "sweep", "--models", "a.onnx", "--devices", "cpu1", "--vary", "runz=1,2"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert bad_option.returncode == 2 and "sweep option runz: unknown option" in bad_option.stderr
    assert not (project / ".hub").exists() or not _runs(project), "a cell ran"


def test_sigint_stops_a_cli_sweep_cleanly(project: Path) -> None:
    process = _hub(
        "exec", "sweep", "--models", "a.onnx,b.onnx", "--devices", "cpu1,cpu2",
        "--vary", "profile.runs=300000", "--sweep-step", "profile", cwd=project,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(r.run_type == "PROFILE" for r in _runs(project)):
        time.sleep(0.2)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    runs = _runs(project)
    assert "RUNNING" not in {r.status for r in runs}
    assert {r.status for r in runs if r.run_type in ("SWEEP", "PROFILE")} == {"KILLED"}


def _profile(device: str, cwd: Path) -> subprocess.Popen[str]:
    return _hub(
        "exec", "profile", "onnxruntime", "a.onnx", "--device", device,
        "--set", "runs=40000", cwd=cwd,
    )  # fmt: skip


def _board(project: Path, device: str) -> str:
    return board_key(to_device(open_project(project / "hub.toml").config, device))


def _wait_for_holder(board: str, pid: int, lease_dir: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        holder = lease_holder(board, lease_dir)
        if holder is not None and holder.pid == pid:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} never took the lease of {board}")


def test_two_profiles_on_one_device_take_turns(project: Path) -> None:
    lease_dir = Path(os.environ["EDGEHUB_LEASE_DIR"])
    first = _profile("cpu1", project)
    _wait_for_holder(_board(project, "cpu1"), first.pid, lease_dir)
    second = _profile("cpu1", project)
    _, first_err = first.communicate(timeout=300)
    _, second_err = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, first_err + second_err
    assert "device 'cpu1' is held by" in second_err and f"pid {first.pid}" in second_err
    a, b = [r for r in _runs(project) if r.run_type == "PROFILE"]
    assert not _overlap(a, b)


def test_two_local_devices_share_the_docker_daemon_and_take_turns(project: Path) -> None:
    lease_dir = Path(os.environ["EDGEHUB_LEASE_DIR"])
    assert _board(project, "cpu1") == _board(project, "cpu2")
    first = _profile("cpu1", project)
    _wait_for_holder(_board(project, "cpu1"), first.pid, lease_dir)
    second = _profile("cpu2", project)
    _, first_err = first.communicate(timeout=300)
    _, second_err = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, first_err + second_err
    assert "device 'cpu2' is held by" in second_err and "for device 'cpu1'" in second_err
    a, b = [r for r in _runs(project) if r.run_type == "PROFILE"]
    assert not _overlap(a, b)


def test_waiting_profile_times_out_or_stops_on_ctrl_c(project: Path) -> None:
    from edgehub.acquire.leases import device_lease

    lease_dir = Path(os.environ["EDGEHUB_LEASE_DIR"])
    with device_lease(
        _board(project, "cpu1"), device="cpu1", lease_dir=lease_dir, command="held-by-the-test"
    ):
        timed_out = subprocess.run(
            [HUB, "exec", "profile", "onnxruntime", "a.onnx", "--device", "cpu1",
             "--lease-timeout", "1"],
            cwd=project, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert timed_out.returncode == 3, timed_out.stderr
        (line,) = [x for x in timed_out.stderr.splitlines() if x.startswith("hub: error:")]
        assert "still held by" in line and "held-by-the-test" in line
        waiting = _profile("cpu1", project)
        assert waiting.stderr is not None
        first = waiting.stderr.readline()
        while "is held by" not in first:
            first = waiting.stderr.readline()
            assert first, "the profile never said it was waiting"
        waiting.send_signal(signal.SIGINT)
        waiting.communicate(timeout=60)
        assert waiting.returncode == 130
    assert "RUNNING" not in {r.status for r in _runs(project)}


def _profile_shapes(project: Path) -> list[tuple[str, object]]:
    """(model file name, recorded input shapes) of each PROFILE run."""
    found = []
    for run in _runs(project):
        if run.run_type == "PROFILE":
            cell = next(r for r in _runs(project) if r.run_id == run.tags["sweep.cell"])
            shapes = {k: v["shape"] for k, v in run.params["shapes"].items()}
            found.append((Path(cell.params["model"]).name, shapes))
    return sorted(found, key=str)


def test_each_model_its_own_shape_from_the_grid_and_set_fixes_every_cell(project: Path) -> None:
    """Two models with different dynamic inputs (``x: [-1, 3, "?", "?"]``, ``a: ["?", "?"]``),
    each shape (or a third model's inputs) given in the grid; then ``--set input_shape`` for
    every cell of a sweep."""
    sys.path.insert(0, str(REPO / "tests"))
    from integration.test_unnamed_dims import conv_model, mat_model

    conv_model(project / "c.onnx")
    mat_model(project / "m.onnx")
    shutil.copy(project / "m.onnx", project / "m2.onnx")
    np.savez(project / "m2_in.npz", a=np.ones((3, 7), np.float32))
    (project / "grid.toml").write_text(
        '[sweep]\nstep = "profile"\ndevices = ["cpu1"]\n'
        '[sweep.models."c.onnx"]\ninput_shape = "1x3x48x192"\n'
        '[sweep.models."m.onnx"]\ninput_shape = [2, 5]\n'
        '[sweep.models."m2.onnx"]\ninputs = "m2_in.npz"\n'
    )
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--json", "--set", "runs=3"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert [(Path(c["model"]).name, c["status"]) for c in cells] == [
        ("c.onnx", "FINISHED"),
        ("m.onnx", "FINISHED"),
        ("m2.onnx", "FINISHED"),
    ]
    assert cells[0]["settings"] == {"runs": "3", "input_shape": "1x3x48x192"}
    assert _profile_shapes(project) == [
        ("c.onnx", {"x": [1, 3, 48, 192]}),
        ("m.onnx", {"a": [2, 5]}),
        ("m2.onnx", {"a": [3, 7]}),
    ]

    shutil.copy(project / "c.onnx", project / "c2.onnx")
    done = subprocess.run(
        [HUB, "exec", "sweep", "--models", "c.onnx,c2.onnx", "--devices", "cpu1",
         "--sweep-step", "profile", "--set", "input_shape=1,3,32,64", "--vary", "runs=2;3",
         "--json"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert [c["status"] for c in cells] == ["FINISHED"] * 4
    assert {c["settings"]["input_shape"] for c in cells} == {"1,3,32,64"}
    assert [c["settings"]["runs"] for c in cells] == ["2", "3", "2", "3"]
    later = [s for s in _profile_shapes(project) if s[1] != {"x": [1, 3, 48, 192]}]
    assert later.count(("c.onnx", {"x": [1, 3, 32, 64]})) == 2
    assert later.count(("c2.onnx", {"x": [1, 3, 32, 64]})) == 2
