"""`hub exec sweep --cluster` on a real two-node Ray cluster on this machine.

The head and a second node are `ray start` processes bound to 127.0.0.1, each with one CPU, one
``docker`` resource and a temp dir of its own; both reach this machine's Docker daemon. The
second node's raylet is killed while it runs a cell: Ray runs that cell again on the head, and
the driver's store must hold every cell FINISHED once and the lost attempt FAILED once. Every
process the fixture started (and their children: the Ray workers) is killed by its pid at the
end, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_sweep import HUB_TOML  # two local devices of one CPU each

from edgehub.tracking import RunRecord, RunStore

pytest.importorskip("ray", reason="needs Ray (the [ray] extra: pip install 'edgehub[ray]')")

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
BIN = Path(sys.executable).parent
HUB, RAY = str(BIN / "hub"), str(BIN / "ray")
GRID = """[sweep]
step = "profile"
models = ["a.onnx", "b.onnx"]
devices = ["cpu1", "cpu2"]
[sweep.vary]
"profile.runs" = [10, 20]
"""
# a dead node is noticed in about 2 s (the default is over 10 s)
HEALTH = '{"health_check_period_ms": 500, "health_check_failure_threshold": 4}'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pids_under(root: str | int) -> list[int]:
    """The processes whose command line names ``root`` (or process ``root``), and their
    descendants."""
    parents: dict[int, int] = {}
    found: set[int] = {root} if isinstance(root, int) else set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
        if isinstance(root, str) and root.encode() in cmdline:
            found.add(int(entry))
    grew = True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return sorted(found)


def _kill_all(root: str | int) -> None:
    for _ in range(20):
        pids = _pids_under(root)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.3)


@dataclass
class Cluster:
    address: str
    root: str  # every node's temp dir lies below it
    second: str  # the second node's temp dir
    env: dict[str, str]

    def raylet_of_second(self) -> int:
        (pid,) = [
            p
            for p in _pids_under(self.second)
            if Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].endswith(b"/raylet")
        ]
        return pid


@pytest.fixture
def cluster(tmp_path: Path, ort_image: str) -> Iterator[Cluster]:
    # short: Ray's socket paths below it must stay within the 107 bytes of a Unix socket
    root = tempfile.mkdtemp(prefix="ehray", dir="/tmp")
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "disabled",  # nodes and driver on 127.0.0.1 only
        "RAY_USAGE_STATS_ENABLED": "0",
        "EDGEHUB_LEASE_DIR": str(tmp_path / "leases"),
    }
    port = _free_port()
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", '--resources={"docker": 1}']
    second = f"{root}/w"
    head = ["--include-dashboard=false", "--disable-usage-stats", f"--system-config={HEALTH}"]
    try:
        subprocess.run(
            [RAY, "start", "--head", f"--port={port}", *common, f"--temp-dir={root}/h", *head],
            env=env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        subprocess.run(
            [RAY, "start", f"--address=127.0.0.1:{port}", *common, f"--temp-dir={second}"],
            env=env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        yield Cluster(f"127.0.0.1:{port}", root, second, env)
    finally:
        _kill_all(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(HUB_TOML)
    (folder / "grid.toml").write_text(GRID)
    shutil.copy(MODEL, folder / "a.onnx")
    shutil.copy(MODEL, folder / "b.onnx")
    return folder


def _cells(project: Path) -> list[RunRecord]:
    store = RunStore(project / ".hub")
    try:
        return [r for r in store.list_runs(limit=None) if r.run_type == "SWEEP_CELL"]
    finally:
        store.close()


def _containers_of(pid: str) -> list[str]:
    found = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=org.edgehub.owner-pid={pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return found.stdout.split()


def test_sweep_survives_a_dead_node(cluster: Cluster, project: Path) -> None:
    sweep = subprocess.Popen(
        [HUB, "exec", "sweep", "grid.toml", "--cluster", cluster.address, "--json"],
        cwd=project, env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    second_node = None
    try:
        assert sweep.stderr is not None
        lines = []
        for line in sweep.stderr:  # "cell LABEL: RUNNING on HOST/NODE"
            lines.append(line)
            nodes = {ln.rsplit(" on ", 1)[1].strip() for ln in lines if ": RUNNING on " in ln}
            if len(nodes) == 2:  # both nodes hold a cell: kill the second's raylet now
                os.kill(cluster.raylet_of_second(), signal.SIGKILL)
                break
        out, err = sweep.communicate(timeout=240)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    err = "".join(lines) + err
    assert sweep.returncode == 0, err[-3000:]
    report = json.loads(out)
    assert report["status"] == "FINISHED" and len(report["cells"]) == 8
    assert {c["status"] for c in report["cells"]} == {"FINISHED"}, err[-3000:]

    cells = _cells(project)
    finished = [r for r in cells if r.status == "FINISHED"]
    assert sorted(r.name for r in finished) == sorted({c["label"] for c in report["cells"]})
    assert {r.run_id for r in finished} == {c["run_id"] for c in report["cells"]}
    assert all(r.tags.get("imported_from") for r in finished)  # came back as bundles
    assert {r.parent_run_id for r in cells} == {report["run_id"]}
    failed = [r for r in cells if r.status == "FAILED"]
    assert len(failed) == 1, [(r.name, r.params.get("error")) for r in failed]
    (lost,) = failed
    second_node = lost.params["cluster.node"]
    assert "lost with its node" in lost.params["error"]
    assert lost.params["cluster.attempt"] == "1"
    (again,) = [r for r in finished if r.name == lost.name]
    assert again.params["cluster.attempt"] == "2" and again.params["cluster.node"] != second_node
    assert second_node in err  # the live lines name the node

    pids = {r.params["cluster.worker_pid"] for r in cells}
    deadline = time.monotonic() + 30  # the dead node's containers: reaped by the driver's end
    while any(_containers_of(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(1)
    assert not [c for pid in pids for c in _containers_of(pid)]

    again_run = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--cluster", cluster.address, "--resume", "--json"],
        cwd=project, env=cluster.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again_run.returncode == 0, again_run.stderr[-2000:]
    resumed = json.loads(again_run.stdout)["cells"]
    assert all(c["reused_from"] for c in resumed) and len(resumed) == 8
    assert len(_cells(project)) == len(cells)  # nothing ran again


def test_sigterm_cancels_the_remote_cells(project: Path, ort_image: str, tmp_path: Path) -> None:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env["EDGEHUB_LEASE_DIR"] = str(tmp_path / "leases")
    sweep = subprocess.Popen(
        [HUB, "exec", "sweep", "grid.toml", "--cluster", "local:2"],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    started: list[int] = []
    try:
        assert sweep.stderr is not None
        for line in sweep.stderr:
            if ": RUNNING on " in line:
                time.sleep(0.5)  # the cell is in its container by now, or about to be
                started = _pids_under(sweep.pid)
                sweep.send_signal(signal.SIGTERM)
                break
        _, err = sweep.communicate(timeout=120)
    finally:
        _kill_all(sweep.pid)
        for pid in started:  # the local Ray instance's processes, if any outlived hub
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert started, "no cell started"
    assert sweep.returncode == 143, err[-2000:]  # 128 + SIGTERM, however Ray passed it on
    assert "stopped by SIGTERM" in err
    cells = _cells(project)
    store = RunStore(project / ".hub")
    try:
        (parent,) = [r for r in store.list_runs(limit=None) if r.run_type == "SWEEP"]
    finally:
        store.close()
    assert parent.status == "KILLED"
    killed = [r for r in cells if r.status == "KILLED"]
    assert killed and all(r.params["error"].startswith("cancelled on node") for r in killed)
    assert len(cells) < 8
    pids = {r.params["cluster.worker_pid"] for r in cells}
    assert not [c for pid in pids for c in _containers_of(pid)]


def test_cluster_out_of_reach_is_exit_3(project: Path) -> None:
    port = _free_port()  # nothing listens there
    (project / "hub.toml").write_text(
        HUB_TOML + f'\n[cluster]\naddress = "ray://127.0.0.1:{port}"\n'
    )
    started = time.monotonic()
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--cluster"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port} is out of reach" in lines[0], done.stderr
    assert time.monotonic() - started < 30


def test_a_cell_no_node_can_take_is_refused(project: Path) -> None:
    (project / "hub.toml").write_text(HUB_TOML.replace("cpus = 1", "cpus = 4", 1))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--cluster", "local:1"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "device 'cpu1' asks for (CPU 4, docker 1)" in done.stderr.strip().splitlines()[-1]


def test_cluster_needs_an_address(project: Path) -> None:
    done = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--cluster"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--cluster needs an address" in done.stderr, done.stderr
    bad = subprocess.run(
        [HUB, "exec", "sweep", "grid.toml", "--cluster", "local:x"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "local:N" in bad.stderr, bad.stderr


def test_cli_start_does_not_import_ray() -> None:
    code = (
        "import sys\n"
        "from edgehub.cli.main import main\n"
        "try:\n    main(['exec', 'sweep', '--help'])\nexcept SystemExit:\n    pass\n"
        "assert 'ray' not in sys.modules, 'ray imported at start-up'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_node_whose_image_differs_from_the_drivers_refuses_the_cell(ort_image: str) -> None:
    from types import SimpleNamespace
    from typing import Any

    from edgehub import __version__
    from edgehub.cluster.worker import _refusal, image_id

    here = image_id("onnxruntime", {})
    assert here is not None and here.startswith("sha256:")
    job: Any = SimpleNamespace(
        version=__version__, needs_docker=True, image_id="sha256:" + "0" * 64, image_tags={},
        cell=SimpleNamespace(runtime="onnxruntime"), result=SimpleNamespace(label="a.onnx cpu1"),
    )  # fmt: skip
    line = _refusal(job, "nodeX/abcd1234")
    assert line is not None and line.startswith("node nodeX/abcd1234 refused cell 'a.onnx cpu1'")
    assert "sha256:000000000000" in line and here[:19] in line and "\n" not in line
    job.image_id = here
    assert _refusal(job, "nodeX/abcd1234") is None


def _refused_job(**fields: object) -> object:
    from types import SimpleNamespace

    from edgehub import __version__

    values: dict[str, object] = {
        "version": __version__, "needs_docker": True, "image_id": None, "image_tags": {},
        "cell": SimpleNamespace(runtime="onnxruntime"),
        "result": SimpleNamespace(label="a.onnx cpu1"),
    }  # fmt: skip
    values.update(fields)
    return SimpleNamespace(**values)


def test_a_node_with_another_edgehub_version_refuses_the_cell() -> None:
    from typing import Any

    from edgehub import __version__
    from edgehub.cluster.worker import _refusal

    job: Any = _refused_job(version="0.0.1+elsewhere")
    line = _refusal(job, "nodeY/0f0f0f0f")
    assert line is not None and line.startswith("node nodeY/0f0f0f0f refused cell 'a.onnx cpu1'")
    assert f"edgehub {__version__}, the driver 0.0.1+elsewhere" in line and "\n" not in line


def test_a_node_without_the_image_builds_it_offline_or_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node lacking the cell's image builds it from the locks, offline: with no wheels in its
    cache the build cannot run, and the cell is refused naming the node and what is missing."""
    from typing import Any

    from edgehub.cluster.worker import _refusal, image_id
    from edgehub.images import images_dir

    changed = tmp_path / "images"
    shutil.copytree(images_dir() / "onnxruntime", changed / "onnxruntime")
    with (changed / "onnxruntime" / "Dockerfile").open("a") as dockerfile:
        dockerfile.write("# another revision of the image: a tag no daemon has\n")
    monkeypatch.setenv("EDGEHUB_IMAGES_DIR", str(changed))
    monkeypatch.setenv("EDGEHUB_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert image_id("onnxruntime", {}) is None
    job: Any = _refused_job()
    line = _refusal(job, "nodeZ/12345678")
    assert line is not None and line.startswith("node nodeZ/12345678 refused cell 'a.onnx cpu1'")
    assert "image is not built and cannot be built here" in line, line
    assert "wheels missing" in line and "offline" in line and "\n" not in line, line


def test_a_board_is_leased_across_the_nodes_until_its_holder_gives_it_back() -> None:
    code = (
        "import ray\n"
        "from edgehub.cluster.worker import Boards\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "boards = ray.remote(num_cpus=0)(Boards).remote()\n"
        "node = ray.get_runtime_context().get_node_id()\n"
        "take = lambda slot: ray.get(boards.take.remote('ssh:10.0.0.9:22', slot, node))\n"
        "assert take('1') is None and take('1') is None\n"
        "assert take('2') == '1', 'a second cell took a held board'\n"
        "ray.get(boards.give.remote('ssh:10.0.0.9:22', '2'))  # not its holder: no effect\n"
        "assert take('2') == '1'\n"
        "ray.get(boards.give.remote('ssh:10.0.0.9:22', '1'))\n"
        "assert take('2') is None\n"
        "print('ok')\n"
    )
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
