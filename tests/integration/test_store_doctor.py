"""The run store under stress, through the real `hub` entry point: `hub doctor --repair` while a
large run stores its model, missing artifacts, a read-only store, a damaged database and a
full disk. Read-only and full-disk cases need root (a bind mount, a small tmpfs)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from edgehub.core import HubContext, hub_run
from edgehub.tracking import RunStore
from edgehub.tracking.artifacts import hash_path

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))
IS_ROOT = os.geteuid() == 0
TOML = '[project]\nname = "store-tests"\n\n[devices.local]\nprovider = "local"\n'


def hub(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def store_rows(result: subprocess.CompletedProcess[str]) -> dict[str, list[dict[str, str]]]:
    rows: dict[str, list[dict[str, str]]] = {}
    for check in json.loads(result.stdout):
        if check["name"] == "run store" or check["name"].startswith("artifact"):
            rows.setdefault(check["name"], []).append(check)
    return rows


def sparse_model(path: Path, mib: int) -> None:
    """tiny_cnn with an unused all-zero initializer of ``mib`` MiB, written as a hole."""
    import onnx

    model = onnx.load(str(MODEL))
    padding = onnx.TensorProto(name="unused_padding", data_type=onnx.TensorProto.UINT8)
    padding.dims.append(mib << 20)
    padding.raw_data = b"\0" * (mib << 20)
    model.graph.initializer.append(padding)
    data = model.SerializeToString()
    start = data.find(b"\0" * (mib << 20))
    with path.open("wb") as out:
        out.write(data[:start])
        out.seek(start + (mib << 20))
        out.write(data[start + (mib << 20) :])


def used_weights_model(path: Path, mib: int) -> None:
    """y = x + w with ``w`` all zeros (a hole in the file): its compiled copy is ``mib`` MiB."""
    from onnx import TensorProto, helper

    count = mib << 18
    weights = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[count])
    weights.raw_data = b"\0" * (4 * count)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [count])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [count])],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    data = model.SerializeToString()
    start = data.find(b"\0" * (4 * count))
    with path.open("wb") as out:
        out.write(data[:start])
        out.seek(start + 4 * count)
        out.write(data[start + 4 * count :])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(TOML)
    return folder


@hub_run("CUSTOM", name="keeps")
def keep_files(ctx: HubContext, *paths: Path) -> None:
    for path in paths:
        ctx.client.log_artifact(path, name=path.stem)


def _runs_with_files(project: Path, count: int) -> list[Path]:
    files = []
    with HubContext(project_name="p", artifact_base_dir=project / ".hub") as ctx:
        for i in range(count):
            made = project / f"out{i}.bin"
            made.write_bytes(f"output {i}".encode())
            keep_files(ctx, made)
        for run in ctx.store.list_runs(limit=None):
            files.extend(a.local() for a in run.all_artifacts if a.is_stored and a.name != "log")
    return sorted(files, key=lambda path: path.name)


@pytest.mark.docker
def test_doctor_repair_during_a_large_run_loses_nothing(project: Path, ort_image: str) -> None:
    sparse_model(project / "big.onnx", 256)
    run = subprocess.Popen(
        [HUB, "exec", "compile", "onnxruntime", "big.onnx", "--set", "quantization=none"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    artifacts = project / ".hub" / "artifacts"
    stopped = None
    deadline = time.monotonic() + 240
    try:
        while stopped is None and run.poll() is None and time.monotonic() < deadline:
            for entry in os.scandir(artifacts) if artifacts.is_dir() else []:
                if entry.name.startswith(".incoming-") and Path(entry.path, "big.onnx").exists():
                    run.send_signal(signal.SIGSTOP)
                    stopped = Path(entry.path)
                    break
            time.sleep(0.001)
        assert stopped is not None, "never saw the model being copied into the store"
        assert stopped.name.startswith(f".incoming-{socket.gethostname()}:{run.pid}:")
        repair = hub("doctor", "--repair", "--json", cwd=project)
        rows = store_rows(repair)
        assert stopped.exists(), repair.stdout
        (copy,) = rows["artifact copy"]
        assert copy["state"] == "ok" and "running process" in copy["detail"]
        assert rows["run store"][0]["state"] == "ok"
    finally:
        run.send_signal(signal.SIGCONT)
        _, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    (record,) = RunStore(project / ".hub").list_runs(limit=None)
    assert record.status == "FINISHED"
    stored = record.artifacts["input"].local()
    assert hash_path(stored) == stored.parent.name == hash_path(project / "big.onnx")
    after = store_rows(hub("doctor", "--json", cwd=project))
    assert after["run store"][0]["state"] == "ok" and set(after) == {"run store"}


def test_doctor_names_each_missing_artifact_and_what_it_repaired(project: Path) -> None:
    gone, edited, fine = _runs_with_files(project, 3)
    gone.unlink()
    edited.write_bytes(b"edited in place")
    dead = project / ".hub" / "artifacts" / f".incoming-{socket.gethostname()}:{os.getpid()}:1-x"
    (dead / "sub").mkdir(parents=True)
    check = hub("doctor", "--json", cwd=project)
    rows = store_rows(check)
    (summary,) = rows["run store"]
    assert summary["state"] == "FAIL" and "hub doctor --repair" in summary["detail"]
    (missing,) = rows["artifact missing"]
    record = RunStore(project / ".hub").list_runs(limit=None)
    gone_run = next(r for r in record if any(a.local() == gone for a in r.all_artifacts))
    assert f"run {gone_run.run_id[:8]}" in missing["detail"] and gone.name in missing["detail"]
    assert missing["state"] == "warn"
    repair = hub("doctor", "--repair", cwd=project)
    summary_line = next(line for line in repair.stdout.splitlines() if line.startswith("run store"))
    assert "repaired 2" in summary_line and "unfinished copies removed: 1" in summary_line
    assert (
        "edited, moved to quarantine: 1" in summary_line
        and "cannot be brought back" in summary_line
    )
    assert not dead.exists() and fine.read_bytes() == b"output 2"
    again = store_rows(hub("doctor", "--json", cwd=project))
    assert again["run store"][0]["state"] == "warn"  # only what repair cannot do: no advice
    assert "--repair" not in again["run store"][0]["detail"]
    assert len(again["artifact missing"]) == 2


@pytest.fixture
def read_only_store(project: Path) -> Iterator[Path]:
    if not IS_ROOT:
        pytest.skip("needs root for a read-only bind mount of the store")
    _runs_with_files(project, 1)
    store = project / ".hub"
    if subprocess.run(["mount", "--bind", str(store), str(store)], check=False).returncode:
        pytest.skip("cannot bind-mount here (needs CAP_SYS_ADMIN)")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(store)], check=True)
        yield store
    finally:
        subprocess.run(["umount", "--lazy", str(store)], check=False)


def test_a_read_only_store_is_reported_as_such(project: Path, read_only_store: Path) -> None:
    rows = store_rows(hub("doctor", "--json", cwd=project))
    (summary,) = rows["run store"]
    assert summary["state"] == "FAIL" and summary["detail"].startswith("read-only:")
    assert "read-only file system" in summary["detail"]
    repair = hub("doctor", "--repair", cwd=project)
    assert repair.returncode == 3 and "nothing repaired" in repair.stdout
    model = project / "model.onnx"
    shutil.copy(MODEL, model)
    run = hub("exec", "compile", "onnxruntime", "model.onnx", cwd=project)
    line = one_error_line(run)
    assert run.returncode == 3 and "read-only file system" in line and str(read_only_store) in line


def test_a_damaged_database_is_a_run_store_problem(project: Path) -> None:
    _runs_with_files(project, 30)
    database = project / ".hub" / "runs.db"
    with database.open("r+b") as handle:  # garbage over pages 3 to 7
        handle.seek(3 * 4096)
        handle.write(os.urandom(5 * 4096))
    result = hub("doctor", "--json", cwd=project)
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["hub.toml"]["state"] == "ok"
    store = checks["run store"]
    assert store["state"] == "FAIL" and str(database) in store["detail"]
    assert "damaged" in store["detail"] and ".recover" in store["detail"]
    assert "\n" not in store["detail"]
    listing = hub("runs", "list", cwd=project)
    assert listing.returncode == 3 and "damaged" in one_error_line(listing)


@pytest.fixture
def tiny_disk(tmpfs: Callable[[str], Path]) -> Path:
    """A 48 MiB tmpfs, so the disk really fills up (needs root and mount)."""
    return tmpfs("48m")


@pytest.mark.docker
def test_a_full_disk_fails_the_run_in_one_line(tiny_disk: Path, ort_image: str) -> None:
    project = tiny_disk / "proj"
    project.mkdir()
    (project / "hub.toml").write_text(TOML)
    used_weights_model(project / "big.onnx", 64)  # a hole here; 64 MiB once compiled
    result = hub("exec", "compile", "onnxruntime", "big.onnx", "--set", "quantization=none",
                 cwd=project)  # fmt: skip
    line = one_error_line(result)
    assert result.returncode == 3, result.stderr
    # refused before the copy (free space checked) or stopped by ENOSPC during it: either way
    # one line that names the disk and how to make room
    assert "no space left on" in line or "not enough free space in" in line, line
    assert str(tiny_disk) in line and ("move the store" in line or "EDGEHUB_STORE" in line)
    (record,) = RunStore(project / ".hub").list_runs(limit=None)
    assert record.status == "FAILED"
    assert "no space left" in (record.error or "") or "free space" in (record.error or "")
    assert [p.name for p in record.artifact_dir.iterdir()] == ["run.log"]
    leftovers = [p for p in (project / ".hub" / "artifacts").iterdir()
                 if p.name.startswith(".incoming-")]  # fmt: skip
    assert leftovers == []
