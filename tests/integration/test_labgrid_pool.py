"""Shared board pools on a real labgrid coordinator and exporter, started here on loopback.

The exporter exports two ``NetworkService`` resources, made places ``p1`` and ``p2`` (tag
``pool=test``). Stand-in: the SSH providers are not merged yet, so the hub.toml device that
names the pool runs its cells with the ``local`` provider (Docker containers); what the tests
check is the pool: each cell holds a place of its own, a second sweep waits for the places
instead of sharing them, and places are released after success, failure and cancellation.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgehub.acquire.labgrid_pool import device_places, hold_place, open_pool
from edgehub.core.device.configs import LabgridConfig
from edgehub.errors import OperationCancelled
from edgehub.events import LogEvent
from edgehub.ops.cancel import Cancellation
from edgehub.ops.project import open_project
from edgehub.ops.sweep import CellResult, run_sweep
from edgehub.ops.sweep_grid import SweepGrid
from edgehub.tracking import RunRecord, RunStore
from labgrid_lab import free_port, labgrid_commands_present, labgrid_lab

pytest.importorskip("labgrid", reason="needs labgrid: pip install 'edgehub[labgrid]'")
pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
EXPORTS = """
board1:
  NetworkService:
    address: 127.0.0.1
    username: root
    port: 2201
board2:
  NetworkService:
    address: 127.0.0.1
    username: root
    port: 2202
"""


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A coordinator on 127.0.0.1 and an exporter of two places; yields HOST:PORT."""
    if not labgrid_commands_present():
        pytest.skip("needs the labgrid-coordinator command (pip install 'edgehub[labgrid]')")
    folder = tmp_path_factory.mktemp("labgrid")
    with labgrid_lab(folder, EXPORTS, {"p1": "board1", "p2": "board2"}) as address:
        yield address


def _held(address: str) -> set[str]:
    pool = open_pool(LabgridConfig(coordinator=address))
    try:
        return {p.name for p in pool.places() if p.acquired_by}
    finally:
        pool.close()


@pytest.fixture
def project(
    tmp_path: Path, coordinator: str, ort_image: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(
        '[project]\nname = "pool-tests"\n\n[devices.pool]\nprovider = "local"\n'
        f'[devices.pool.labgrid]\ncoordinator = "{coordinator}"\nplace = "p*"\n'
        'tags = ["pool=test"]\n'
    )
    for name in ("a.onnx", "b.onnx"):
        shutil.copy(REPO / "examples" / "tiny_cnn.onnx", folder / name)
    (folder / "broken.onnx").write_bytes(b"not a model")
    monkeypatch.setenv("EDGEHUB_LEASE_DIR", str(tmp_path / "leases"))
    return folder


def _profiles(project: Path) -> list[RunRecord]:
    """The measurements (a cell's run also spans its wait for a place; these do not)."""
    store = RunStore(project / ".hub")
    try:
        return [r for r in store.list_runs(limit=None) if r.run_type == "PROFILE"]
    finally:
        store.close()


def _most_at_once(runs: list[RunRecord]) -> int:
    edges = sorted(
        [(r.started_at, 1) for r in runs] + [(r.ended_at or r.started_at, -1) for r in runs],
        key=lambda edge: (edge[0], edge[1]),
    )
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def _grid(project: Path, *models: str, runs: str = "30000") -> SweepGrid:
    return SweepGrid(
        models=[project / m for m in models],
        devices=["pool"],
        step="profile",
        vary={"runs": [runs]},
    )


def test_sweep_spreads_cells_over_free_places(project: Path, coordinator: str) -> None:
    messages: list[str] = []

    def listen(event: LogEvent) -> None:
        messages.append(event.message)

    report = run_sweep(
        open_project(project / "hub.toml"), _grid(project, "a.onnx", "b.onnx"), subscriber=listen
    )
    assert [c.status for c in report.cells] == ["FINISHED", "FINISHED"]
    held = {m.split("place ")[1].split()[0] for m in messages if "holding labgrid place" in m}
    assert held == {"p1", "p2"}, messages
    assert any("root@127.0.0.1:220" in m for m in messages), "the place's SSH address"
    assert _most_at_once(_profiles(project)) == 2, "the two cells did not run at the same time"
    assert _held(coordinator) == set()
    places = device_places(open_project(project / "hub.toml").config, "pool")
    assert places is not None and [(p.name, p.acquired_by) for p in places] == [
        ("p1", None),
        ("p2", None),
    ]


def test_a_second_sweep_waits_for_the_places(project: Path, coordinator: str) -> None:
    hub_project = open_project(project / "hub.toml")
    waits: list[str] = []
    reports = []

    def sweep(models: tuple[str, ...]) -> None:
        def listen(event: LogEvent) -> None:
            if "all held" in event.message:
                waits.append(event.message)

        reports.append(run_sweep(hub_project, _grid(project, *models), subscriber=listen))

    threads = [
        threading.Thread(target=sweep, args=(("a.onnx", "b.onnx"),)),
        threading.Thread(target=sweep, args=(("b.onnx", "a.onnx"),)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert [c.status for r in reports for c in r.cells] == ["FINISHED"] * 4
    assert waits, "no sweep waited although four cells wanted two places"
    assert _most_at_once(_profiles(project)) <= 2, "more cells ran than there are places"
    assert _held(coordinator) == set()


def test_places_are_released_after_failure_and_cancel(project: Path, coordinator: str) -> None:
    hub_project = open_project(project / "hub.toml")
    report = run_sweep(hub_project, _grid(project, "broken.onnx", "a.onnx"))
    assert sorted(c.status for c in report.cells) == ["FAILED", "FINISHED"]
    assert _held(coordinator) == set()

    cancel = Cancellation()

    def on_cell(cell: CellResult) -> None:
        if cell.status == "RUNNING":
            threading.Timer(0.5, cancel.cancel).start()

    with pytest.raises(OperationCancelled):
        run_sweep(
            hub_project,
            _grid(project, "a.onnx", "b.onnx", runs="500000"),
            cancel=cancel,
            on_cell=on_cell,
        )
    assert _held(coordinator) == set()


def test_hold_place_waits_then_times_out_naming_the_holder(coordinator: str) -> None:
    from edgehub.errors import DeviceBusyError

    config = LabgridConfig(coordinator=coordinator, place="p1")
    first, second = open_pool(config), open_pool(config)
    try:
        with hold_place(first, config) as place:
            assert place.name == "p1" and place.port == 2201
            told: list[str] = []
            with (
                pytest.raises(DeviceBusyError, match=r"p1 by \S+/\S+"),
                hold_place(second, config, timeout=1.0, on_wait=told.append),
            ):
                pass
            assert told and "waiting" in told[0]
        assert _held(coordinator) == set()
    finally:
        first.close()
        second.close()


def test_unreachable_coordinator_is_a_one_line_error(tmp_path: Path, ort_image: str) -> None:
    (tmp_path / "hub.toml").write_text(
        '[devices.pool]\nprovider = "local"\n[devices.pool.labgrid]\n'
        f'coordinator = "127.0.0.1:{free_port()}"\n'
    )
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", tmp_path / "a.onnx")
    done = subprocess.run(
        [str(BIN / "hub"), "exec", "profile", "onnxruntime", "a.onnx", "--device", "pool"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3 and "Traceback" not in done.stderr
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("hub: error:")]
    assert "cannot reach the labgrid coordinator" in line


def test_hub_devices_shows_the_pools_places_and_their_holders(
    project: Path, coordinator: str
) -> None:
    from edgehub.ops.device_check import check_device
    from edgehub.ops.devices import list_devices

    hub = open_project(project / "hub.toml")
    (row,) = [r for r in list_devices(hub) if r.name == "pool"]
    assert row.places == "p1 free, p2 free"
    config = LabgridConfig(coordinator=coordinator, place="p1")
    pool = open_pool(config)
    try:
        with hold_place(pool, config):
            (row,) = [r for r in list_devices(hub) if r.name == "pool"]
            assert row.places is not None and row.places.startswith("p1 held by ")
            assert row.places.endswith("p2 free")
            check = check_device(hub, "pool")
            assert check.state == "ok" and "p1 held by" in check.detail
    finally:
        pool.close()
