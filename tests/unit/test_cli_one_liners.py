"""One-line errors of the real `hub` entry point (a subprocess) for cases found by hand:
`hub runs list -n` with a huge, zero or negative count, and Qualcomm AI Hub with no network.

Qualcomm AI Hub is NOT reachable from our machines. The no-network test runs the real qai-hub
client (no test double) against an address where nothing listens, which is what the client
meets without a network: its requests fail to connect."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "examples" / "tiny_cnn.onnx"
HUB = str(Path(sys.executable).with_name("hub"))


def hub(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HUB, *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})},
        timeout=120,
    )  # fmt: skip


def one_error_line(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("hub: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "hub.toml").write_text(
        '[project]\nname = "one-liners"\n\n[devices.s24]\nprovider = "qai_hub"\n'
        'spec = "Samsung Galaxy S24"\n'
    )
    shutil.copy(MODEL, folder / "model.onnx")
    return folder


def _recorded_runs(project: Path, count: int) -> None:
    from edgehub.core import HubContext

    with HubContext("one-liners", artifact_base_dir=project / ".hub") as ctx:
        for index in range(count):
            with ctx.open_run("PROFILE", f"run-{index}"):
                pass


def test_runs_list_count_is_bounded_zero_means_all_and_negative_is_refused(
    project: Path,
) -> None:
    _recorded_runs(project, 3)
    huge = hub("runs", "list", "-n", "99999999999999999999", "--json", cwd=project)
    assert huge.returncode == 0, huge.stderr
    assert huge.stdout.count('"run_id"') == 3
    every = hub("runs", "list", "-n", "0", "--json", cwd=project)
    assert every.returncode == 0 and every.stdout.count('"run_id"') == 3, every.stderr
    two = hub("runs", "list", "-n", "2", "--json", cwd=project)
    assert two.stdout.count('"run_id"') == 2
    line = one_error_line(hub("runs", "list", "-n", "-1", cwd=project), 2)
    assert "-1 is negative" in line and "0 for all" in line


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends: nothing listens


def test_qai_hub_without_network_is_exit_3_in_seconds(project: Path, tmp_path: Path) -> None:
    pytest.importorskip("qai_hub", reason="needs the qai-hub client (pip install edgehub[qai-hub])")
    url = f"http://127.0.0.1:{_closed_port()}"
    ini = tmp_path / "client.ini"
    ini.write_text(f"[api]\napi_token = not-a-real-token\napi_url = {url}\nweb_url = {url}\n")
    env = {"QAIHUB_CLIENT_INI": str(ini), "NO_PROXY": "*", "no_proxy": "*"}
    started = time.monotonic()
    result = hub("exec", "compile", "onnxruntime", "model.onnx", "--device", "s24", cwd=project,
                 env=env)  # fmt: skip
    took = time.monotonic() - started
    line = one_error_line(result, 3)
    assert "cannot reach Qualcomm AI Hub" in line and "Connection refused" in line, line
    assert took < 30, f"took {took:.0f} s (the client's own retries take ~47 s)"


def test_a_connection_error_under_the_client_error_is_unreachable() -> None:
    """The mapping itself, on the real client's error classes: `InternalError` raised from a
    `requests` ConnectionError is an environment problem (exit 3); without one it stays a
    toolchain failure (exit 4)."""
    qai_hub = pytest.importorskip("qai_hub", reason="needs the qai-hub client")
    import requests

    from edgehub.errors import ToolchainError
    from edgehub.toolchains.qai_hub.client import QAIHubUnreachable, hub_call

    def unreachable() -> None:
        try:
            raise requests.exceptions.ConnectionError("Max retries exceeded")
        except requests.exceptions.ConnectionError as cause:
            raise qai_hub.InternalError("Internal API failure. Could not connect") from cause

    def broken() -> None:
        raise qai_hub.InternalError("Internal API failure. Something else")

    with pytest.raises(QAIHubUnreachable) as caught:
        hub_call(qai_hub, ToolchainError, "listing devices", unreachable)
    assert caught.value.exit_code == 3
    with pytest.raises(ToolchainError) as failed:
        hub_call(qai_hub, ToolchainError, "listing devices", broken)
    assert failed.value.exit_code == 4
