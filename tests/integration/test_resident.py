"""`hub exec` served by the resident host process (``EDGEHUB_RESIDENT=on``, issue 39), through
the real `hub` entry point, a real Docker daemon and the real ONNX Runtime image.

The command runs in a child the resident process forked (its container's owner is that child,
whose parent is the resident process), records the same run as `hub` run on its own, says the
same one-line errors with the same exit codes, and stops as `hub` stops: Ctrl-C through the
client ends the run KILLED with its container gone, and so does a client killed outright
(the child sees its connection close).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
HUB = str(Path(sys.executable).with_name("hub"))
OWNER_PID = "org.edgehub.owner-pid"


@pytest.fixture
def project(tmp_path: Path, ort_image: str) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text('[project]\nname = "resident"\n')
    shutil.copy(REPO / "examples" / "tiny_cnn.onnx", folder / "model.onnx")
    np.savez(folder / "x.npz", image=np.random.default_rng(0).random((1, 3, 32, 32), np.float32))
    return folder


@pytest.fixture
def cache() -> Iterator[Path]:
    """A cache folder of a short path (a Unix socket's path is limited to about 100 bytes);
    the resident process started in it is stopped at the end."""
    folder = Path(tempfile.mkdtemp(prefix="ehr-"))
    yield folder
    for pid_file in (folder / "resident").glob("*.pid"):
        try:
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    shutil.rmtree(folder, ignore_errors=True)


def _env(cache: Path, resident: str = "on") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    return {**env, "EDGEHUB_CACHE_DIR": str(cache), "EDGEHUB_RESIDENT": resident}


def _hub(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def _resident_pid(project: Path, cache: Path, env: dict[str, str]) -> int:
    """Start the resident process (the first `hub exec` does) and wait for it."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pids = list((cache / "resident").glob("*.pid"))
        if pids and pids[0].with_suffix(".sock").exists():
            return int(pids[0].read_text())
        done = _hub(project, env, "-q", "exec", "invoke", "onnxruntime", "model.onnx")
        assert done.returncode == 0, done.stderr
        time.sleep(0.5)
    raise AssertionError(f"no resident process came up; {cache}/resident/server.log says: "
                         f"{(cache / 'resident' / 'server.log').read_text()[-2000:]}")  # fmt: skip


def _parent_of(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


def _owned_containers() -> dict[str, int]:
    """Running containers of edgehub: id -> the pid of the process that owns them."""
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label={OWNER_PID}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    owners = {}
    for container in out:
        label = subprocess.run(
            ["docker", "inspect", "-f", f'{{{{index .Config.Labels "{OWNER_PID}"}}}}', container],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        if label.isdigit():
            owners[container] = int(label)
    return owners


def _statuses(project: Path, env: dict[str, str]) -> list[str]:
    listed = _hub(project, {**env, "EDGEHUB_RESIDENT": "off"}, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [str(run["status"]) for run in json.loads(listed.stdout)]


def _record(project: Path, env: dict[str, str], run_id: str) -> dict[str, Any]:
    shown = _hub(project, env, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    record: dict[str, Any] = json.loads(shown.stdout)
    return record


def test_a_served_invoke_records_what_hub_records_alone(project: Path, cache: Path) -> None:
    alone = _hub(project, _env(cache, "off"), "-q", "exec", "invoke", "onnxruntime",
                 "model.onnx", "--input", "x.npz", "--json")  # fmt: skip
    assert alone.returncode == 0, alone.stderr
    env = _env(cache)
    _resident_pid(project, cache, env)
    served = _hub(project, env, "-q", "exec", "invoke", "onnxruntime", "model.onnx",
                  "--input", "x.npz", "--json")  # fmt: skip
    assert served.returncode == 0, served.stderr
    a, b = json.loads(alone.stdout), json.loads(served.stdout)
    assert a["run_id"] != b["run_id"] and a.keys() == b.keys()
    ra, rb = _record(project, env, a["run_id"]), _record(project, env, b["run_id"])
    for part in ("params", "environment"):
        assert set(ra[part]) == set(rb[part]), part
    assert set(ra["metrics"]) == set(rb["metrics"])
    assert ra["status"] == rb["status"] == "FINISHED"
    kept = [{x["name"]: x.get("sha256") for x in r["artifacts"]} for r in (ra, rb)]
    assert kept[0].keys() == kept[1].keys() and "output_file" in kept[0]
    for name in set(kept[0]) - {"log"}:  # the log names its run; the rest byte for byte
        assert kept[0][name] == kept[1][name], name
    assert ra["environment"]["image_digest"] == rb["environment"]["image_digest"]


def test_a_served_command_says_the_same_one_line_errors(project: Path, cache: Path) -> None:
    env = _env(cache)
    _resident_pid(project, cache, env)
    for args in (
        ("exec", "invoke", "onnxruntime", "missing.onnx"),
        ("exec", "invoke", "onnxruntime", "model.onnx", "--set", "nonsense=1"),
        ("exec", "invoke", "onnxruntime", "model.onnx", "--no-such-flag"),
    ):
        alone = _hub(project, _env(cache, "off"), *args)
        served = _hub(project, env, *args)
        assert alone.returncode == served.returncode != 0, (alone.stderr, served.stderr)
        assert served.stderr == alone.stderr and len(served.stderr.splitlines()) == 1


def test_an_unknown_setting_is_one_line_exit_2(project: Path, cache: Path) -> None:
    done = _hub(project, _env(cache, "sometimes"), "exec", "invoke", "onnxruntime", "model.onnx")
    assert done.returncode == 2
    assert done.stderr == (
        "hub: error: EDGEHUB_RESIDENT='sometimes' is not on or off; set EDGEHUB_RESIDENT=on\n"
    )


def _long_profile(project: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [HUB, "exec", "profile", "onnxruntime", "model.onnx", "--set", "runs=400000"],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _child_container(server: int, before: dict[str, int]) -> tuple[str, int]:
    """The container the served command started: owned by a child of the resident process."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for container, owner in _owned_containers().items():
            if container not in before:
                try:
                    if _parent_of(owner) == server:
                        return container, owner
                except OSError:
                    pass
        time.sleep(0.2)
    raise AssertionError("no container of a child of the resident process appeared")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_a_stopped_client_stops_its_served_run(project: Path, cache: Path, signum: int) -> None:
    env = _env(cache)
    server = _resident_pid(project, cache, env)
    before = _owned_containers()
    client = _long_profile(project, env)
    try:
        container, child = _child_container(server, before)
        assert child != client.pid  # the run is in the resident process's child
        time.sleep(1.0)  # the profile under way
        client.send_signal(signum)
        code = client.wait(60)
        assert code == (130 if signum == signal.SIGINT else -signal.SIGKILL)
        if signum == signal.SIGINT:
            assert client.stderr is not None
            said = client.stderr.read()
            assert "hub: error: interrupted" in said and "Traceback" not in said, said
        deadline = time.monotonic() + 90  # the child cancels, records and removes
        while time.monotonic() < deadline and (
            container in _owned_containers() or "RUNNING" in _statuses(project, env)
        ):
            time.sleep(0.5)
        assert container not in _owned_containers()
        statuses = _statuses(project, env)
        assert statuses[0] == "KILLED", statuses  # newest first
        deadline = time.monotonic() + 30  # the child ended: the resident process reaps it
        while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not Path(f"/proc/{child}").exists()
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def _command_line(pid: int) -> bytes:
    """The command line of process ``pid``; empty once it ended (a zombie has none)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _resident_rows(project: Path, env: dict[str, str]) -> list[dict[str, str]]:
    done = _hub(project, {**env, "EDGEHUB_RESIDENT": "off"}, "doctor", "--json")
    rows: list[dict[str, str]] = json.loads(done.stdout)
    return [row for row in rows if row["name"] == "resident"]


def test_doctor_lists_the_resident_process_and_clears_one_killed_outright(
    project: Path, cache: Path
) -> None:
    env = _env(cache)
    server = _resident_pid(project, cache, env)
    rows = _resident_rows(project, env)
    assert [(row["state"], f"process {server} serves" in row["detail"]) for row in rows] == [
        ("ok", True)
    ], rows
    os.kill(server, signal.SIGKILL)  # no chance to remove its socket
    deadline = time.monotonic() + 30
    while _command_line(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = _resident_rows(project, env)
    assert [(row["state"], "removed the socket of 1" in row["detail"]) for row in rows] == [
        ("warn", True)
    ], rows
    assert not list((cache / "resident").glob("*.sock"))
    assert not list((cache / "resident").glob("*.pid"))
    assert _resident_rows(project, env) == []  # nothing left to say
    again = _resident_pid(project, cache, env)  # and the next `hub exec` starts a new one
    assert again != server
