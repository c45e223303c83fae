"""`hub exec profile ... --pin-cpus CPUS` through the real `hub` entry point: the local ONNX
Runtime container gets that Docker cpuset, the SSH test device's agent runs under `taskset -c`,
and the conditions record of each run shows what the agent got (``cpuset``, ``cpu_affinity``).
A provider that cannot pin (Qualcomm AI Hub: a device in hub.toml, never contacted: the check
comes first) and a malformed or absent CPU list are one-line errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from agent_models import make_cnn

HUB = str(Path(sys.executable).with_name("hub"))


def hub(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EDGEHUB_KEEP_WARM"}
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=env
    )


def _environment(cwd: Path, done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    shown = hub("runs", "show", run_id, "--json", cwd=cwd)
    assert shown.returncode == 0, shown.stderr
    environment: dict[str, Any] = json.loads(shown.stdout)["environment"]
    return environment


@pytest.mark.docker
def test_local_docker_runs_in_the_pinned_cpuset(tmp_path: Path, ort_image: str) -> None:
    (tmp_path / "hub.toml").write_text('[project]\nname = "pin"\n')
    make_cnn(tmp_path / "cnn.onnx")
    base = ("exec", "profile", "onnxruntime", "cnn.onnx", "--set", "runs=10", "--json")
    environment = _environment(tmp_path, hub(*base, "--pin-cpus", "0", cwd=tmp_path))
    assert environment["conditions.cpuset"] == "0", environment
    assert environment["conditions.cpu_affinity"] == "0"
    assert environment["conditions.usable_cpus"] == "1"
    missing = hub(*base, "--pin-cpus", "4095", cwd=tmp_path)  # no such CPU here
    assert missing.returncode == 3 and "Requested CPUs are not available" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) <= 2


def test_bad_cpu_lists_and_unpinnable_providers_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "pin"\n\n[devices.s24]\nprovider = "qai_hub"\n'
        'spec = "Samsung Galaxy S24"\n'
    )
    make_cnn(tmp_path / "cnn.onnx")
    cases = [
        (("--pin-cpus", "0;touch /tmp/x"), "give a CPU list such as 0, 0-1 or 0,2-3"),
        (("--pin-cpus", "3-1"), "the range 3-1 runs backwards"),
        (("--pin-cpus", "0", "--device", "s24"), "provider 'qai_hub', which cannot pin CPUs"),
    ]
    for extra, message in cases:
        done = hub("exec", "profile", "onnxruntime", "cnn.onnx", *extra, cwd=tmp_path)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr
    ab = hub("exec", "ab", "onnxruntime", "cnn.onnx", "cnn.onnx", "--pin-cpus", "0", cwd=tmp_path)
    assert ab.returncode == 2 and "--pin-cpus is for hub exec compile, profile" in ab.stderr


@pytest.mark.ssh
def test_ssh_device_agent_runs_under_taskset(device: Any, tmp_path: Path) -> None:
    (tmp_path / "hub.toml").write_text(
        '[project]\nname = "pin-ssh"\n\n[devices.board]\nprovider = "ssh"\n\n'
        f'[devices.board.ssh]\nhost = "{device.host}"\nuser = "{device.username}"\n'
        f'port = {device.port}\nkey = "{device.private_key}"\n'
        f'known_hosts = "{device.known_hosts}"\n\n'
        '[devices.board.agent]\npython = "/opt/device/bin/python3"\n'
    )
    make_cnn(tmp_path / "cnn.onnx")
    base = ("exec", "profile", "onnxruntime", "cnn.onnx", "--device", "board", "--set", "runs=10",
            "--json")  # fmt: skip
    environment = _environment(tmp_path, hub(*base, "--pin-cpus", "0", cwd=tmp_path))
    assert environment["conditions.cpu_affinity"] == "0", environment
    assert environment["conditions.usable_cpus"] == "1"
    unpinned = _environment(tmp_path, hub(*base, cwd=tmp_path))
    assert unpinned["conditions.usable_cpus"] == unpinned["conditions.online_cpus"]
